//! Topic and channel lifecycle events, for whoever outside the engine must follow them (the
//! daemon's nsqlookupd peers register and unregister as topics and channels come and go).
//!
//! The engine knows nothing about lookupd: it fires an [`Event`] into one [`EventSink`] set
//! once on the broker. The sink is called synchronously, sometimes under the registry's or a
//! topic's lock (that keeps a create and a delete of the same name in order), so it must be
//! quick and must not call back into the broker: hand the event to a task and return.
//!
//! A topic created while a sink is installed starts *held*: it keeps what is published in its
//! own backlog, as a paused topic does, until the [`TopicStart`] carried by
//! [`Event::TopicCreated`] is dropped. That gives the sink time to create the channels it
//! knows about (nsqd asks lookupd for them) before any message flows, so every one of those
//! channels gets every message. Dropping the guard always starts the topic, so a sink that
//! fails, panics or is shut down can never leave a topic held.

use std::sync::{Arc, OnceLock};

use crate::topic::Topic;

/// Something happened to a topic or a channel.
pub enum Event {
    /// A topic was created at runtime (not when `nsqd.dat` was loaded). It stays held until
    /// `start` is dropped.
    TopicCreated {
        topic: Arc<Topic>,
        start: TopicStart,
    },
    /// A topic was deleted, with the channels it still had.
    TopicDeleted {
        topic: String,
        channels: Vec<String>,
    },
    ChannelCreated {
        topic: String,
        channel: String,
    },
    ChannelDeleted {
        topic: String,
        channel: String,
    },
}

/// Receives every [`Event`]; see the module docs for what it may do.
pub type EventSink = Arc<dyn Fn(Event) + Send + Sync>;

/// Starts a held topic when dropped.
pub struct TopicStart(Option<Arc<Topic>>);

impl TopicStart {
    pub(crate) fn new(topic: Arc<Topic>) -> TopicStart {
        TopicStart(Some(topic))
    }

    /// Start the topic now (the same as dropping the guard).
    pub fn start(mut self) {
        if let Some(t) = self.0.take() {
            t.start();
        }
    }
}

impl Drop for TopicStart {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.start();
        }
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::TopicCreated { topic, .. } => write!(f, "TopicCreated({})", topic.name),
            Event::TopicDeleted { topic, channels } => {
                write!(f, "TopicDeleted({topic}, {channels:?})")
            }
            Event::ChannelCreated { topic, channel } => {
                write!(f, "ChannelCreated({topic}, {channel})")
            }
            Event::ChannelDeleted { topic, channel } => {
                write!(f, "ChannelDeleted({topic}, {channel})")
            }
        }
    }
}

/// The broker's event sink, shared with its topics; empty until the daemon installs one.
#[derive(Default)]
pub struct Events {
    sink: OnceLock<EventSink>,
}

impl Events {
    /// Install the sink; false (and no change) if one was already installed.
    pub fn set(&self, sink: EventSink) -> bool {
        self.sink.set(sink).is_ok()
    }

    pub fn is_set(&self) -> bool {
        self.sink.get().is_some()
    }

    /// Fire an event; the closure runs only when a sink is installed.
    pub fn emit(&self, event: impl FnOnce() -> Event) {
        if let Some(sink) = self.sink.get() {
            sink(event());
        }
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("sink", &self.is_set())
            .finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use nsq_wire::Bodies;
    use parking_lot::Mutex;

    use super::*;
    use crate::{Broker, BrokerConfig};

    type Shared<T> = Arc<Mutex<Vec<T>>>;

    /// A broker whose events are logged as text; TopicCreated guards are kept in `held`.
    fn broker() -> (Broker, Shared<String>, Shared<TopicStart>) {
        let b = Broker::new(BrokerConfig::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (l, h) = (Arc::clone(&log), Arc::clone(&held));
        assert!(b.set_event_sink(Arc::new(move |ev: Event| {
            l.lock().push(format!("{ev:?}"));
            if let Event::TopicCreated { start, .. } = ev {
                h.lock().push(start);
            }
        })));
        assert!(!b.set_event_sink(Arc::new(|_| {})));
        (b, log, held)
    }

    #[test]
    fn lifecycle_is_announced() {
        let (b, log, held) = broker();
        let t = b.get_or_create_topic("t").unwrap();
        b.get_or_create_topic("t").unwrap();
        t.get_or_create_channel("a").unwrap();
        t.get_or_create_channel("b").unwrap();
        b.delete_channel("t", "a").unwrap();
        b.delete_topic("t").unwrap();
        let e = b.get_or_create_topic("e#ephemeral").unwrap();
        e.get_or_create_channel("c").unwrap();
        b.delete_channel("e#ephemeral", "c").unwrap();
        held.lock().clear();
        assert_eq!(
            *log.lock(),
            [
                "TopicCreated(t)",
                "ChannelCreated(t, a)",
                "ChannelCreated(t, b)",
                "ChannelDeleted(t, a)",
                "TopicDeleted(t, [\"b\"])",
                "TopicCreated(e#ephemeral)",
                "ChannelCreated(e#ephemeral, c)",
                "ChannelDeleted(e#ephemeral, c)",
                "TopicDeleted(e#ephemeral, [])",
            ]
        );
    }

    #[tokio::test]
    async fn held_topic_keeps_messages_for_every_channel() {
        let (b, _log, held) = broker();
        let t = b.get_or_create_topic("t").unwrap();
        let a = t.get_or_create_channel("a").unwrap();
        t.put(
            &[Bodies::one(Bytes::from_static(b"m1")).expect("small")],
            Duration::ZERO,
        )
        .unwrap();
        // Held: the first channel does not take the backlog yet.
        assert_eq!((a.depth(), t.stats(None, false).depth), (0, 1));
        let c = t.get_or_create_channel("c").unwrap();
        // Pausing and unpausing does not release a held topic either.
        t.set_paused(true);
        t.set_paused(false);
        assert_eq!(a.depth(), 0);
        let start = held.lock().pop().unwrap();
        drop(start);
        assert_eq!(
            (a.depth(), c.depth(), t.stats(None, false).depth),
            (1, 1, 0)
        );
        t.put(
            &[Bodies::one(Bytes::from_static(b"m2")).expect("small")],
            Duration::ZERO,
        )
        .unwrap();
        assert_eq!((a.depth(), c.depth()), (2, 2));
    }

    #[test]
    fn no_sink_no_hold() {
        let b = Broker::new(BrokerConfig::default());
        let t = b.get_or_create_topic("t").unwrap();
        let a = t.get_or_create_channel("a").unwrap();
        t.put(
            &[Bodies::one(Bytes::from_static(b"m")).expect("small")],
            Duration::ZERO,
        )
        .unwrap();
        assert_eq!(a.depth(), 1);
    }
}
