//! The macro behind the table of settings in `queue_settings.rs`. Each setting is written once,
//! as one entry (its doc comment, how it is read and shown, its type and its default), and
//! this expands the entries into everything that names the settings one by one:
//!
//! - [`QueueSettings`](super::QueueSettings), every field an `Option` ("not set here"), with
//!   the serde attributes every place settings travel as JSON reads and writes them by;
//! - [`EffectiveSettings`](super::EffectiveSettings), every field set, as a channel runs with;
//! - [`EffectiveSettings::resolve`](super::EffectiveSettings::resolve), a channel's own value,
//!   else its topic's, else the entry's default;
//! - [`EffectiveSettings::to_settings`](super::EffectiveSettings::to_settings), every value
//!   shown (`GET /channel/config`).
//!
//! An entry reads `#[read = "path"]` (a deserializer of the `read` module, which carries the
//! setting's bounds and the reason a bad value is refused), optionally `show = "path"` (a
//! serializer, when the value's own serde form is not what is shown), then `name: Type =
//! default`. The default may use the two names given by `defaults(topic, cfg)`: the topic's
//! name and the broker's [`BrokerConfig`](crate::broker_config::BrokerConfig).

macro_rules! queue_settings {
    (
        defaults($topic:ident, $cfg:ident);
        $(
            $(#[doc = $doc:literal])*
            #[read = $read:literal $(, show = $show:literal)?]
            $name:ident: $ty:ty = $default:expr;
        )*
    ) => {
        /// Settings of one topic or channel; `None` is "not set here". Serialized, only the
        /// keys that are set appear, in field order, durations as Go text (`"1m30s"`); read, a
        /// duration may also be integer milliseconds (as the config file takes them).
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct QueueSettings {
            $(
                $(#[doc = $doc])*
                #[serde(
                    skip_serializing_if = "Option::is_none",
                    deserialize_with = $read
                    $(, serialize_with = $show)?
                )]
                pub $name: Option<$ty>,
            )*
        }

        /// The settings a channel runs with (see the module documentation): its own, else its
        /// topic's, else the defaults of the table of settings.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct EffectiveSettings {
            $(
                $(#[doc = $doc])*
                pub $name: $ty,
            )*
        }

        impl EffectiveSettings {
            /// `own`, else `topic_settings`, else the defaults, for a channel of `topic`.
            pub fn resolve(
                $topic: &str,
                own: &QueueSettings,
                topic_settings: &QueueSettings,
                $cfg: &BrokerConfig,
            ) -> EffectiveSettings {
                EffectiveSettings {
                    $(
                        $name: own
                            .$name
                            .clone()
                            .or_else(|| topic_settings.$name.clone())
                            .unwrap_or_else(|| $default),
                    )*
                }
            }

            /// Every setting with its value (the answer to `GET /channel/config`).
            pub fn to_settings(&self) -> QueueSettings {
                QueueSettings {
                    $($name: Some(self.$name.clone()),)*
                }
            }
        }
    };
}
