//! Topic and channel lifecycle events, for whoever outside the engine must follow them: in
//! nsqrd, the nsqlookupd peers register and unregister as topics and channels come and go; an
//! embedding program can listen the same way.
//!
//! The engine knows none of them: it hands each [`Event`] to every [`EventListener`] that
//! joined with [`Broker::listen`](crate::Broker::listen). Listeners are called synchronously,
//! sometimes under the registry's or a topic's lock (that keeps a create and a delete of the
//! same name in order), so they must be quick and must not call back into the broker: hand
//! the event to a task and return.
//!
//! A listener that asks for it ([`EventListener::holds_new_topics`]) gets a [`TopicHold`] with
//! every [`Event::TopicCreated`]: the new topic keeps what is published in its own backlog, as
//! a paused topic does, until every such hold is dropped. That gives lookupd time to create the
//! channels it knows about before any message flows, so every one of them gets every message.
//! Dropping a hold always counts, so a listener that fails or is shut down can never leave a
//! topic held for good. Listeners that do not ask never hold anything.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::topic::Topic;

/// Something happened to a topic or a channel.
#[derive(Clone)]
#[non_exhaustive]
pub enum Event {
    /// A topic was created at runtime (not when `nsqd.dat` was loaded).
    TopicCreated {
        /// The new topic.
        topic: Arc<Topic>,
        /// Present for listeners that hold new topics: the topic keeps its messages until every
        /// hold is dropped.
        hold: Option<TopicHold>,
    },
    /// A topic was deleted, with the channels it still had.
    TopicDeleted {
        /// The topic's name.
        topic: String,
        /// Its channels at the time, by name.
        channels: Vec<String>,
    },
    /// A channel was created.
    ChannelCreated {
        /// The topic's name.
        topic: String,
        /// The channel's name.
        channel: String,
    },
    /// A channel was deleted.
    ChannelDeleted {
        /// The topic's name.
        topic: String,
        /// The channel's name.
        channel: String,
    },
    /// This node started or stopped serving a topic to consumers: a replicated topic is
    /// served by its group's leader only (`Topic::set_serving`).
    Serving {
        /// The topic's name.
        topic: String,
        /// Its channels at the time, by name.
        channels: Vec<String>,
        /// True when it is served from now on.
        serving: bool,
    },
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::TopicCreated { topic, .. } => write!(f, "TopicCreated({})", topic.name()),
            Event::TopicDeleted { topic, channels } => {
                write!(f, "TopicDeleted({topic}, {channels:?})")
            }
            Event::ChannelCreated { topic, channel } => {
                write!(f, "ChannelCreated({topic}, {channel})")
            }
            Event::ChannelDeleted { topic, channel } => {
                write!(f, "ChannelDeleted({topic}, {channel})")
            }
            Event::Serving {
                topic,
                channels,
                serving,
            } => write!(f, "Serving({topic}, {channels:?}, {serving})"),
        }
    }
}

/// Receives every [`Event`]; see the module docs for what it may do.
pub trait EventListener: Send + Sync {
    /// Called for each event, in order, possibly under a broker lock: return quickly.
    fn on_event(&self, event: Event);

    /// True to receive a [`TopicHold`] with each new topic (asked once, when joining).
    fn holds_new_topics(&self) -> bool {
        false
    }
}

/// A closure is a listener that holds nothing.
impl<F: Fn(Event) + Send + Sync> EventListener for F {
    fn on_event(&self, event: Event) {
        self(event)
    }
}

/// Keeps a new topic's messages in its backlog while any clone of it is alive; the last one
/// dropped starts the topic.
#[derive(Clone)]
pub struct TopicHold(Arc<StartOnDrop>);

struct StartOnDrop(Arc<Topic>);

impl Drop for StartOnDrop {
    fn drop(&mut self) {
        self.0.start();
    }
}

impl TopicHold {
    /// Release this hold now (the same as dropping it).
    pub fn release(self) {}
}

impl std::fmt::Debug for TopicHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TopicHold({})", self.0 .0.name())
    }
}

/// Stops delivering events to a listener when dropped (see [`Broker::listen`](crate::Broker::listen)).
#[must_use = "the listener is removed when this is dropped"]
pub struct Listening {
    bus: Arc<EventBus>,
    id: u64,
}

impl Listening {
    /// Keep the listener for the broker's lifetime.
    pub fn forever(self) {
        std::mem::forget(self);
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.bus.remove(self.id);
    }
}

impl std::fmt::Debug for Listening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Listening({})", self.id)
    }
}

struct Entry {
    id: u64,
    holds: bool,
    listener: Arc<dyn EventListener>,
}

/// The broker's listeners, shared with its topics.
#[derive(Default)]
pub(crate) struct EventBus {
    listeners: RwLock<Vec<Entry>>,
    /// How many listeners hold new topics (read on every topic creation).
    holders: AtomicUsize,
    next_id: AtomicU64,
}

impl EventBus {
    pub(crate) fn add(self: &Arc<Self>, listener: Arc<dyn EventListener>) -> Listening {
        let id = self.next_id.fetch_add(1, Relaxed);
        let holds = listener.holds_new_topics();
        if holds {
            self.holders.fetch_add(1, Relaxed);
        }
        self.listeners.write().push(Entry {
            id,
            holds,
            listener,
        });
        Listening {
            bus: Arc::clone(self),
            id,
        }
    }

    fn remove(&self, id: u64) {
        let mut ls = self.listeners.write();
        if let Some(i) = ls.iter().position(|e| e.id == id) {
            if ls.swap_remove(i).holds {
                self.holders.fetch_sub(1, Relaxed);
            }
        }
    }

    /// True when a new topic must start held.
    pub(crate) fn holds_new_topics(&self) -> bool {
        self.holders.load(Relaxed) > 0
    }

    /// Announce a new topic; holding listeners get a hold each. The topic starts once all of
    /// them (and the creator's own, dropped on return) are gone.
    pub(crate) fn topic_created(&self, topic: &Arc<Topic>) {
        let hold = TopicHold(Arc::new(StartOnDrop(Arc::clone(topic))));
        for e in self.listeners.read().iter() {
            e.listener.on_event(Event::TopicCreated {
                topic: Arc::clone(topic),
                hold: e.holds.then(|| hold.clone()),
            });
        }
    }

    /// Fire an event; the closure runs only when someone listens.
    pub(crate) fn emit(&self, event: impl FnOnce() -> Event) {
        let ls = self.listeners.read();
        if ls.is_empty() {
            return;
        }
        let event = event();
        for e in ls.iter() {
            e.listener.on_event(event.clone());
        }
    }
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("listeners", &self.listeners.read().len())
            .field("holders", &self.holders.load(Relaxed))
            .finish()
    }
}
