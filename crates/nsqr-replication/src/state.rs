//! The replicated state of a topic: what a node taking over must deliver. Every node applies
//! the same committed entries to it in the same order, so every node holds the same unfinished
//! messages per channel, with their due times, and the same channels, pauses and settings.
//!
//! A message's body is kept once, under its place in publish order (its sequence number), with
//! a count of the channels (or the topic backlog) that still hold it, and dropped when the last
//! one finishes it. Channels keep their unfinished messages by sequence number, so a node
//! taking over delivers them in publish order (what an ordered channel needs); both are
//! [`SeqMap`]s, since sequence numbers come in order. The whole state is what a snapshot holds,
//! which is how log compaction stays possible: the log behind a snapshot is never needed again.
//! Applying an operation that names an unknown channel or message changes nothing (a FIN for a
//! message finished twice, a REQ racing a delete): the entry is still applied and counted.
//!
//! A pass of channel operations is applied once however often it is committed: its leader
//! proposes it again when the first proposal goes unanswered, and both may commit, with
//! publishes between them. Applied twice, `[Delete c, Create c]` would empty channel `c` of
//! what was published in between. A node proposes its next pass only once the last one is
//! answered, so every copy of a pass comes before its next pass in the log: remembering the
//! last pass applied of each node is enough to tell a copy.

use std::collections::{BTreeMap, HashMap};

use foldhash::fast::RandomState;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::command::{ChannelOp, Command, Message, MessageId, PassId};
use crate::seq_map::SeqMap;
use crate::types::NodeId;

/// A message's place in the topic's publish order, the same on every node.
pub type Seq = u64;

/// A message held by the topic, with how many holders (channels, or the backlog) still need it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMessage {
    pub id: MessageId,
    pub timestamp_ns: i64,
    pub body: Bytes,
    holders: u32,
}

/// An unfinished message of a channel: when it is due (None: now).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub deliver_at_ms: Option<u64>,
}

/// One channel's replicated state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelState {
    pub paused: bool,
    pub settings_json: Option<String>,
    /// Unfinished messages, in publish order.
    pub pending: SeqMap<Pending>,
    /// How many messages the channel dead-lettered.
    pub dead_lettered: u64,
}

/// The replicated state of one topic.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicState {
    pub paused: bool,
    pub settings_json: Option<String>,
    pub channels: BTreeMap<String, ChannelState>,
    /// Messages published while the topic had no channel, in order (nsqd gives them to the
    /// first channel created).
    pub backlog: Vec<(Seq, Option<u64>)>,
    pub messages: SeqMap<StoredMessage>,
    /// The sequence number of each held message, by id.
    pub ids: HashMap<MessageId, Seq, RandomState>,
    /// Messages published since the state began; the next message's sequence number.
    pub published: u64,
    /// The last pass applied of each node that proposed one. Outside this type's serde form:
    /// a snapshot carries it after the state, so a snapshot written without it still reads
    /// (`state_machine.rs`).
    #[serde(skip)]
    pub passes: BTreeMap<NodeId, PassId>,
}

impl TopicState {
    /// Applies one committed command. False for a copy of the last pass its node proposed,
    /// which changes nothing.
    pub fn apply(&mut self, command: &Command) -> bool {
        match command {
            Command::Publish(messages) => messages.iter().for_each(|m| self.publish(m)),
            Command::Channels(ops) => ops.iter().for_each(|op| self.channel_op(op)),
            Command::Pass { id, ops } => {
                if self.passes.insert(id.node, *id) == Some(*id) {
                    return false;
                }
                ops.iter().for_each(|op| self.channel_op(op));
            }
        }
        true
    }

    /// A channel's unfinished messages in publish order, or None if there is no such channel.
    pub fn pending(&self, channel: &str) -> Option<Vec<(MessageId, Pending)>> {
        let held = self.pending_messages(channel)?;
        Some(held.into_iter().map(|(m, p)| (m.id, p)).collect())
    }

    /// A channel's unfinished messages in publish order with their bodies, or None if there is
    /// no such channel: what a node taking over queues in its broker.
    pub fn pending_messages(&self, channel: &str) -> Option<Vec<(&StoredMessage, Pending)>> {
        let channel = self.channels.get(channel)?;
        let held = channel
            .pending
            .iter()
            .filter_map(|(seq, pending)| self.messages.get(seq).map(|m| (m, *pending)));
        Some(held.collect())
    }

    /// The messages published while the topic had no channel, in publish order.
    pub fn backlog_messages(&self) -> Vec<(&StoredMessage, Pending)> {
        self.backlog
            .iter()
            .filter_map(|(seq, due)| {
                let pending = Pending {
                    deliver_at_ms: *due,
                };
                self.messages.get(*seq).map(|m| (m, pending))
            })
            .collect()
    }

    fn publish(&mut self, message: &Message) {
        let seq = self.published;
        self.published += 1;
        if self.ids.contains_key(&message.id) {
            // An id already held: a publish retried after a failover. Keep the first.
            return;
        }
        let holders = if self.channels.is_empty() {
            self.backlog.push((seq, message.deliver_at_ms));
            1
        } else {
            let pending = Pending {
                deliver_at_ms: message.deliver_at_ms,
            };
            for channel in self.channels.values_mut() {
                channel.pending.insert(seq, pending);
            }
            u32::try_from(self.channels.len()).unwrap_or(u32::MAX)
        };
        self.ids.insert(message.id, seq);
        self.messages.insert(
            seq,
            StoredMessage {
                id: message.id,
                timestamp_ns: message.timestamp_ns,
                body: message.body.clone(),
                holders,
            },
        );
    }

    fn channel_op(&mut self, op: &ChannelOp) {
        match op {
            ChannelOp::Create { channel } => self.create(channel),
            ChannelOp::Delete { channel } => {
                if let Some(state) = self.channels.remove(channel) {
                    state.pending.keys().for_each(|seq| self.release(seq));
                }
            }
            ChannelOp::Pause { channel, paused } => match channel {
                None => self.paused = *paused,
                Some(name) => {
                    if let Some(state) = self.channels.get_mut(name) {
                        state.paused = *paused;
                    }
                }
            },
            ChannelOp::Configure {
                channel,
                settings_json,
            } => match channel {
                None => self.settings_json = Some(settings_json.clone()),
                Some(name) => {
                    if let Some(state) = self.channels.get_mut(name) {
                        state.settings_json = Some(settings_json.clone());
                    }
                }
            },
            ChannelOp::Finish { channel, ids } => self.remove_pending(channel, ids, false),
            ChannelOp::DeadLetter { channel, ids } => self.remove_pending(channel, ids, true),
            ChannelOp::Requeue { channel, requeued } => {
                if let Some(state) = self.channels.get_mut(channel) {
                    for (id, due) in requeued {
                        let Some(seq) = self.ids.get(id) else {
                            continue;
                        };
                        if let Some(pending) = state.pending.get_mut(*seq) {
                            pending.deliver_at_ms = Some(*due);
                        }
                    }
                }
            }
        }
    }

    fn create(&mut self, channel: &str) {
        if self.channels.contains_key(channel) {
            return;
        }
        let mut state = ChannelState::default();
        if self.channels.is_empty() {
            // The backlog's messages already count one holder each: this channel.
            for (seq, due) in self.backlog.drain(..) {
                state.pending.insert(seq, Pending { deliver_at_ms: due });
            }
        }
        self.channels.insert(channel.to_owned(), state);
    }

    fn remove_pending(&mut self, channel: &str, ids: &[MessageId], dead: bool) {
        let Some(state) = self.channels.get_mut(channel) else {
            return;
        };
        let mut removed = Vec::with_capacity(ids.len());
        for seq in ids.iter().filter_map(|id| self.ids.get(id)) {
            if state.pending.remove(*seq).is_some() {
                removed.push(*seq);
            }
        }
        if dead {
            state.dead_lettered += removed.len() as u64;
        }
        removed.into_iter().for_each(|seq| self.release(seq));
    }

    fn release(&mut self, seq: Seq) {
        if let Some(stored) = self.messages.get_mut(seq) {
            stored.holders = stored.holders.saturating_sub(1);
            if stored.holders == 0 {
                self.ids.remove(&stored.id);
                self.messages.remove(seq);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(n: u8) -> Message {
        Message {
            id: MessageId([n; 16]),
            timestamp_ns: i64::from(n),
            deliver_at_ms: None,
            body: Bytes::from(vec![n; 4]),
        }
    }

    fn ops(ops: Vec<ChannelOp>) -> Command {
        Command::Channels(ops)
    }

    #[test]
    fn backlog_goes_to_the_first_channel_only() {
        let mut state = TopicState::default();
        state.apply(&Command::Publish(vec![msg(1), msg(2)].into()));
        state.apply(&ops(vec![
            ChannelOp::Create {
                channel: "a".into(),
            },
            ChannelOp::Create {
                channel: "b".into(),
            },
        ]));
        assert_eq!(state.pending("a").map(|p| p.len()), Some(2));
        assert_eq!(state.pending("b").map(|p| p.len()), Some(0));
        state.apply(&Command::Publish(vec![msg(3)].into()));
        assert_eq!(state.pending("b").map(|p| p.len()), Some(1));
        assert_eq!(state.messages.len(), 3);
    }

    #[test]
    fn a_body_is_dropped_when_every_channel_finished_it() {
        let mut state = TopicState::default();
        state.apply(&ops(vec![
            ChannelOp::Create {
                channel: "a".into(),
            },
            ChannelOp::Create {
                channel: "b".into(),
            },
        ]));
        state.apply(&Command::Publish(vec![msg(1)].into()));
        let fin = |c: &str| ChannelOp::Finish {
            channel: c.into(),
            ids: vec![MessageId([1; 16])],
        };
        state.apply(&ops(vec![fin("a"), fin("a")]));
        assert_eq!(
            state.messages.len(),
            1,
            "b still holds it; a second FIN is a no-op"
        );
        state.apply(&ops(vec![ChannelOp::DeadLetter {
            channel: "b".into(),
            ids: vec![MessageId([1; 16])],
        }]));
        assert!(state.messages.is_empty());
        assert_eq!(state.channels.get("b").map(|c| c.dead_lettered), Some(1));
    }

    #[test]
    fn requeue_keeps_the_due_time_and_delete_releases() {
        let mut state = TopicState::default();
        state.apply(&ops(vec![ChannelOp::Create {
            channel: "a".into(),
        }]));
        state.apply(&Command::Publish(vec![msg(1)].into()));
        state.apply(&ops(vec![ChannelOp::Requeue {
            channel: "a".into(),
            requeued: vec![(MessageId([1; 16]), 99)],
        }]));
        let pending = state.pending("a").unwrap_or_default();
        assert_eq!(
            pending,
            vec![(
                MessageId([1; 16]),
                Pending {
                    deliver_at_ms: Some(99)
                }
            )]
        );
        state.apply(&ops(vec![ChannelOp::Delete {
            channel: "a".into(),
        }]));
        assert!(state.messages.is_empty());
        assert!(state.ids.is_empty());
        assert!(state.channels.is_empty());
    }

    #[test]
    fn pending_is_in_publish_order_and_a_repeated_id_is_kept_once() {
        let mut state = TopicState::default();
        state.apply(&ops(vec![ChannelOp::Create {
            channel: "a".into(),
        }]));
        state.apply(&Command::Publish(vec![msg(9), msg(3), msg(5)].into()));
        state.apply(&Command::Publish(vec![msg(3)].into()));
        let order: Vec<u8> = state
            .pending("a")
            .unwrap_or_default()
            .iter()
            .map(|(id, _)| id.0[0])
            .collect();
        assert_eq!(order, vec![9, 3, 5]);
        assert_eq!(state.published, 4);
        assert_eq!(state.messages.len(), 3);
    }

    fn pass(node: NodeId, seq: u64, ops: Vec<ChannelOp>) -> Command {
        let id = PassId { node, run: 7, seq };
        Command::Pass { id, ops }
    }

    #[test]
    fn a_pass_committed_twice_applies_once() {
        let mut state = TopicState::default();
        let recreate = vec![
            ChannelOp::Delete {
                channel: "a".into(),
            },
            ChannelOp::Create {
                channel: "a".into(),
            },
        ];
        assert!(state.apply(&pass(1, 0, recreate.clone())));
        state.apply(&Command::Publish(vec![msg(1)].into()));
        assert!(!state.apply(&pass(1, 0, recreate.clone())), "a copy");
        assert_eq!(
            state.pending("a").map(|p| p.len()),
            Some(1),
            "what was published between the copies stays"
        );

        // Another node's pass, or this node's next one, applies; so does a pass without
        // identity, each time.
        assert!(state.apply(&pass(2, 0, recreate.clone())));
        assert_eq!(state.pending("a").map(|p| p.len()), Some(0));
        state.apply(&Command::Publish(vec![msg(2)].into()));
        assert!(state.apply(&pass(1, 1, vec![])));
        assert!(state.apply(&Command::Channels(recreate.clone())));
        state.apply(&Command::Publish(vec![msg(3)].into()));
        assert!(state.apply(&Command::Channels(recreate)));
        assert_eq!(state.pending("a").map(|p| p.len()), Some(0));
        let mut restarted = PassId {
            node: 1,
            run: 8,
            seq: 1,
        };
        assert!(
            state.apply(&Command::Pass {
                id: restarted,
                ops: vec![]
            }),
            "a restarted node's pass of the same number"
        );
        restarted.seq = 2;
        assert!(state.apply(&Command::Pass {
            id: restarted,
            ops: vec![]
        }));
    }

    #[test]
    fn pending_messages_carry_bodies_and_the_backlog_its_due_times() {
        let mut state = TopicState::default();
        let mut deferred = msg(2);
        deferred.deliver_at_ms = Some(7);
        state.apply(&Command::Publish(vec![msg(1), deferred].into()));
        let backlog: Vec<(u8, Option<u64>)> = state
            .backlog_messages()
            .iter()
            .map(|(m, p)| (m.body[0], p.deliver_at_ms))
            .collect();
        assert_eq!(backlog, vec![(1, None), (2, Some(7))]);
        state.apply(&ops(vec![
            ChannelOp::Create {
                channel: "a".into(),
            },
            ChannelOp::Finish {
                channel: "a".into(),
                ids: vec![MessageId([1; 16])],
            },
        ]));
        assert!(state.backlog_messages().is_empty());
        let pending = state.pending_messages("a").unwrap_or_default();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].0.body, Bytes::from(vec![2; 4]));
        assert_eq!(pending[0].1.deliver_at_ms, Some(7));
        assert!(state.pending_messages("b").is_none());
    }
}
