//! Dead letters on their way from a channel to the dead-letter topic.
//!
//! A channel decides under its lock that a message is dead (delivery limit, given up on,
//! expired) but must not publish from there: publishing takes the dead-letter topic's lock and
//! its channels' locks, and may even create the topic (disk IO). So the channel collects its
//! dead letters, releases its lock and drops them in this box; one task of the broker publishes
//! them (creating the topic on the blocking pool when needed) with their body unchanged and a
//! [`DeadLetterInfo`] attribute saying why and from where. Once the dead-letter topic holds a
//! message (its ticket completed: fsynced, in strict mode), the source channel is told, so a
//! strict channel acknowledges its record only then: a crash in between delivers it again
//! rather than losing it.

use std::sync::{Arc, Weak};

use nsq_wire::{Bodies, MessageId};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::attrs::{Attributes, DeadLetterInfo};
use crate::channel::Channel;
use crate::message::Message;
use crate::registry::Registry;
use crate::topic::PutOptions;

/// One message leaving its channel for the dead-letter topic.
#[derive(Debug)]
pub(crate) struct DeadLetter {
    /// The dead-letter topic.
    pub target: String,
    pub msg: Message,
    pub info: DeadLetterInfo,
    /// The channel it left, told once the dead-letter topic has it.
    pub source: Weak<Channel>,
}

/// Dead letters waiting for the broker's task.
#[derive(Debug, Default)]
pub(crate) struct DeadLetterBox {
    queue: Mutex<Vec<DeadLetter>>,
    notify: Notify,
}

impl DeadLetterBox {
    /// Hand dead letters over (call with no channel or topic lock held).
    pub(crate) fn send(&self, letters: Vec<DeadLetter>) {
        if letters.is_empty() {
            return;
        }
        self.queue.lock().extend(letters);
        self.notify.notify_one();
    }

    fn take(&self) -> Vec<DeadLetter> {
        std::mem::take(&mut *self.queue.lock())
    }
}

/// The broker's task: publish dead letters as they come (until the handle aborts it).
pub(crate) async fn run(reg: Arc<Registry>) {
    loop {
        reg.shared.dead_letters.notify.notified().await;
        let r = Arc::clone(&reg);
        let _ = tokio::task::spawn_blocking(move || publish_pending(&r)).await;
    }
}

/// Publish everything in the box now (blocking: may create topics). Shutdown calls it before
/// the queues close.
pub(crate) fn publish_pending(reg: &Registry) {
    loop {
        let letters = reg.shared.dead_letters.take();
        if letters.is_empty() {
            return;
        }
        // Publish all, then wait: in strict mode they share fsyncs.
        let pending: Vec<Pending> = letters
            .into_iter()
            .filter_map(|l| publish(reg, l))
            .collect();
        for p in pending {
            match p.ticket.wait_blocking() {
                Ok(()) => {
                    if let Some(ch) = p.source.upgrade() {
                        ch.dead_letter_delivered(p.id);
                    }
                }
                Err(e) => tracing::error!(
                    "DEAD-LETTER: message {} ({}) could not be written to its dead-letter topic - {e}",
                    hex(MessageId(p.id)),
                    p.what
                ),
            }
        }
    }
}

/// A dead letter published, its ticket not yet waited for.
struct Pending {
    ticket: crate::durability::Ticket,
    id: u64,
    source: Weak<Channel>,
    what: String,
}

fn publish(reg: &Registry, l: DeadLetter) -> Option<Pending> {
    let DeadLetter {
        target,
        msg,
        info,
        source,
    } = l;
    let id = msg.id.0;
    let lost = |e: &dyn std::fmt::Display| -> Option<Pending> {
        tracing::error!(
            "DEAD-LETTER: message {} of {}:{} ({}) could not be published to {target} - {e}",
            hex(info.id),
            info.topic,
            info.channel,
            info.reason
        );
        None
    };
    let topic = match reg.get_or_create_topic_internal(&target) {
        Ok(t) => t,
        Err(e) => return lost(&e),
    };
    let Ok(bodies) = Bodies::one(msg.body_bytes()) else {
        return lost(&"body too large");
    };
    let attrs = Attributes {
        expires_at: 0,
        ordering_key: msg.attributes().and_then(|a| a.ordering_key.clone()),
        dead_letter: Some(info.clone()),
    };
    let opts = PutOptions::with_attributes(attrs.into_shared());
    let ticket = match topic.put_with(std::slice::from_ref(&bodies), &opts) {
        Ok(t) => t,
        Err(e) => return lost(&e),
    };
    Some(Pending {
        ticket,
        id,
        source,
        what: format!("{}:{} -> {target}", info.topic, info.channel),
    })
}

fn hex(id: MessageId) -> String {
    String::from_utf8_lossy(&id.to_hex()).into_owned()
}
