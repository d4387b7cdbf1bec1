//! Queue settings (topic and channel settings) declared in the `--config` file (nsqr only):
//!
//! ```toml
//! [topics.orders]                      # the topic's settings, its channels' defaults
//! message_ttl = "1h"
//!
//! [topics.orders.channels.billing]     # one channel's own settings
//! max_attempts = 5
//! ordered = true
//! ```
//!
//! The keys and values are those of `POST /topic/config` and `/channel/config`
//! (`nsqr_broker::queue_settings`). At every start, after `nsqd.dat` is loaded, each declared topic and
//! channel is created if needed and the keys the file sets are applied over what `nsqd.dat`
//! holds (settings changed over HTTP since and not in the file stay). A bad name, key or value
//! stops the start with a message naming it, as any bad config value does. nsqd ignores the
//! `topics` table.

use nsqr_broker::queue_settings::{Limits, QueueSettings};
use nsqr_broker::Broker;
use serde_json::Value;

/// One declared topic (`channel` None) or channel, with the settings the file gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    pub topic: String,
    pub channel: Option<String>,
    pub settings: Value,
}

/// The declarations of the config file at `path` (none without a file).
/// `limits` are the broker's (its `--max-msg-timeout`, its cluster); their topic is ignored.
pub fn from_config_file(path: &str, limits: &Limits) -> Result<Vec<Declared>, String> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let text = nsq_common::config_file::read(path)
        .map_err(|e| format!("failed to load config file {path} - {e}"))?;
    parse(&text, limits).map_err(|e| format!("failed to load config file {path} - {e}"))
}

/// The declarations in TOML `text`, checked.
pub fn parse(text: &str, limits: &Limits) -> Result<Vec<Declared>, String> {
    let table = nsq_common::config_file::parse(text).map_err(|e| e.to_string())?;
    let Some(topics) = table.get("topics") else {
        return Ok(Vec::new());
    };
    let topics = topics
        .as_table()
        .ok_or("invalid value for topics: expected a table of topics")?;
    let mut out = Vec::new();
    for (topic, t) in topics {
        let here = format!("topics.{topic}");
        check_name(topic, &here)?;
        let mut t = t
            .as_table()
            .ok_or(format!("invalid value for {here}: expected a table"))?
            .clone();
        let channels = t.remove("channels");
        out.push(setting(topic, None, t, &here, limits)?);
        let Some(channels) = channels else { continue };
        let channels = channels.as_table().ok_or(format!(
            "invalid value for {here}.channels: expected a table"
        ))?;
        for (channel, c) in channels {
            let here = format!("{here}.channels.{channel}");
            check_name(channel, &here)?;
            let c = c
                .as_table()
                .ok_or(format!("invalid value for {here}: expected a table"))?
                .clone();
            out.push(setting(topic, Some(channel), c, &here, limits)?);
        }
    }
    Ok(out)
}

fn check_name(name: &str, here: &str) -> Result<(), String> {
    if nsq_wire::names::is_valid_name(name.as_bytes()) {
        Ok(())
    } else {
        Err(format!(
            "invalid name in {here}: {name:?} is not a valid topic or channel name"
        ))
    }
}

fn setting(
    topic: &str,
    channel: Option<&String>,
    table: toml::Table,
    here: &str,
    limits: &Limits,
) -> Result<Declared, String> {
    let settings = serde_json::to_value(toml::Value::Table(table))
        .map_err(|e| format!("invalid value for {here}: {e}"))?;
    let limits = Limits {
        topic: Some(topic.to_string()),
        ..limits.clone()
    };
    QueueSettings::from_json(&settings, &limits)
        .map_err(|e| format!("invalid setting in {here}: {e}"))?;
    Ok(Declared {
        topic: topic.to_string(),
        channel: channel.cloned(),
        settings,
    })
}

/// Apply the declarations (creating topics and channels: blocking, so on the blocking pool).
pub async fn apply(broker: &Broker, settings: Vec<Declared>) -> Result<(), String> {
    if settings.is_empty() {
        return Ok(());
    }
    let b = broker.clone();
    tokio::task::spawn_blocking(move || {
        for s in settings {
            let r = match &s.channel {
                None => b.configure_topic(&s.topic, &s.settings),
                Some(c) => b.configure_channel(&s.topic, c, &s.settings),
            };
            r.map_err(|e| {
                format!(
                    "failed to apply the settings of topic {}{} - {e}",
                    s.topic,
                    s.channel
                        .as_deref()
                        .map(|c| format!(" channel {c}"))
                        .unwrap_or_default()
                )
            })?;
        }
        b.persist_metadata().map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("applying queue settings failed - {e}"))?
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    const MAX: &Limits = &Limits {
        max_msg_timeout: Duration::from_secs(900),
        topic: None,
        cluster_size: 0,
    };

    #[test]
    fn topics_and_channels() {
        let got = parse(
            "mem_queue_size = 5\n\
             [topics.orders]\nmessage_ttl = \"1h\"\n\
             [topics.orders.channels.billing]\nmax_attempts = 5\nordered = true\n\
             [topics.other]\n",
            MAX,
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Declared {
                    topic: "orders".into(),
                    channel: None,
                    settings: json!({"message_ttl": "1h"})
                },
                Declared {
                    topic: "orders".into(),
                    channel: Some("billing".into()),
                    settings: json!({"max_attempts": 5, "ordered": true})
                },
                Declared {
                    topic: "other".into(),
                    channel: None,
                    settings: json!({})
                },
            ]
        );
        assert!(parse("log_level = \"info\"\n", MAX).unwrap().is_empty());
    }

    #[test]
    fn bad_declarations_name_the_key() {
        for (text, want) in [
            ("topics = 5\n", "invalid value for topics"),
            ("[topics.\"bad name\"]\n", "invalid name in topics.bad name"),
            (
                "[topics.t]\nmax_attempts = \"x\"\n",
                "invalid setting in topics.t: max_attempts: expected",
            ),
            (
                "[topics.t.channels.c]\nbogus = 1\n",
                "invalid setting in topics.t.channels.c: unknown setting \"bogus\"",
            ),
            (
                "[topics.t.channels.c]\nmsg_timeout = \"1h\"\n",
                "invalid setting in topics.t.channels.c: msg_timeout",
            ),
            (
                "[topics.t.channels.c]\ndead_letter_topic = \"t\"\n",
                "invalid setting in topics.t.channels.c: dead_letter_topic",
            ),
        ] {
            let e = parse(text, MAX).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }
}
