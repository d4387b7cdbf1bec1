//! What the clients saw, recorded as it happens: every publish attempt and its outcome (the
//! node and time of each `OK`), every delivery and FIN, and the ordered channel's deliveries
//! (`checks.rs` reads them). One lock for the whole history: the
//! clients' rates are low (a publish waits for a majority commit) and the checker reads it
//! once, after the run.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::checks::{self, Order, SplitBrain};

/// A node's number, as in `--cluster-node-id` (1-based).
pub type NodeNum = usize;

/// How a publish attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `OK`: the message must be delivered.
    Acked { node: NodeNum, at: Duration },
    /// Refused before proposing (`not the leader`): it may never be delivered.
    Refused,
    /// Another error, a timeout or a closed connection: it may or may not be delivered.
    Indeterminate,
}

/// An `OK`: when it came, from which node, and when its publish was sent.
struct Ack {
    at: Duration,
    node: NodeNum,
    sent: Duration,
}

#[derive(Default)]
struct Inner {
    outcomes: HashMap<String, Outcome>,
    /// Times of the `OK`s, in the order they came, with the node that sent each.
    acks: Vec<Ack>,
    /// Per body, how many times it was delivered.
    deliveries: HashMap<String, u32>,
    /// Times of the deliveries, with the node that delivered.
    delivered_at: Vec<(Duration, NodeNum)>,
    /// When each node was seen saying (`/metrics`) it leads the topic, and in which term.
    leads: Vec<(Duration, NodeNum, u64)>,
    fins: u64,
    last_ack_node: Option<(NodeNum, Duration)>,
    /// Bodies delivered on the ordered channel, in time order.
    ordered: Vec<String>,
    /// Since when the ordered channel is ordered.
    ordered_since: Option<Duration>,
}

/// The run's history, shared by every client task.
pub struct History {
    start: Instant,
    inner: Mutex<Inner>,
}

impl History {
    pub fn new() -> History {
        History {
            start: Instant::now(),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Time since the run started.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// A publish attempt's outcome, other than an `OK` (`acked`).
    pub fn publish(&self, body: String, outcome: Outcome) {
        self.inner.lock().outcomes.insert(body, outcome);
    }

    /// An `OK` from `node`, timed under the lock so the times stay in order.
    /// The publish of `body`, sent at `sent`, acknowledged by `node`.
    pub fn acked(&self, body: String, node: NodeNum, sent: Duration) {
        let mut h = self.inner.lock();
        let at = self.now();
        h.acks.push(Ack { at, node, sent });
        h.last_ack_node = Some((node, at));
        h.outcomes.insert(body, Outcome::Acked { node, at });
    }

    /// A message delivered by `node`.
    pub fn delivered(&self, body: &[u8], node: NodeNum) {
        let mut h = self.inner.lock();
        let at = self.now();
        *h.deliveries
            .entry(String::from_utf8_lossy(body).into_owned())
            .or_insert(0) += 1;
        h.delivered_at.push((at, node));
    }

    /// A message delivered on the ordered channel.
    pub fn delivered_ordered(&self, body: &[u8]) {
        let body = String::from_utf8_lossy(body).into_owned();
        self.inner.lock().ordered.push(body);
    }

    /// The ordered channel is ordered from now on.
    pub fn ordered_from_now(&self) {
        let now = self.now();
        self.inner.lock().ordered_since = Some(now);
    }

    /// A FIN sent for a delivered message.
    pub fn finished(&self) {
        self.inner.lock().fins += 1;
    }

    /// The node of the latest `OK` and when it came.
    pub fn last_ack(&self) -> Option<(NodeNum, Duration)> {
        self.inner.lock().last_ack_node
    }

    /// The time of the first `OK` from a node other than `not` to a publish sent at or after
    /// `since`: a follower relays the leader's `OK` to a publish it forwarded, so an `OK` to
    /// one sent before a fault says nothing of the cluster after it.
    pub fn first_ack_since(&self, since: Duration, not: NodeNum) -> Option<Duration> {
        let h = self.inner.lock();
        let i = h.acks.partition_point(|a| a.at < since);
        h.acks[i..]
            .iter()
            .find(|a| a.node != not && a.sent >= since)
            .map(|a| a.at)
    }

    /// The time of the first delivery at or after `since` by a node other than `not`.
    pub fn first_delivery_since(&self, since: Duration, not: NodeNum) -> Option<Duration> {
        first_since(&self.inner.lock().delivered_at, since, not)
    }

    /// How many acknowledged messages were never delivered yet.
    pub fn undelivered(&self) -> usize {
        let h = self.inner.lock();
        h.outcomes
            .iter()
            .filter(|(b, o)| matches!(o, Outcome::Acked { .. }) && !h.deliveries.contains_key(*b))
            .count()
    }

    /// `node` says, now, that it leads the topic in `term`.
    pub fn leads(&self, node: NodeNum, term: u64) {
        let mut h = self.inner.lock();
        let at = self.now();
        h.leads.push((at, node, term));
    }

    /// How many deliveries so far.
    pub fn delivery_count(&self) -> usize {
        self.inner.lock().delivered_at.len()
    }

    /// The checker's figures over the whole history; `window` is the faults' span, over
    /// which the longest gaps are measured; `nodes` consumers hold at most `rdy` messages
    /// each.
    pub fn check(&self, window: (Duration, Duration), nodes: usize, rdy: u64) -> Verdict {
        let h = self.inner.lock();
        let mut v = Verdict::default();
        let acked_at = |body: &str| match h.outcomes.get(body) {
            Some(Outcome::Acked { at, .. }) => Some(*at),
            _ => None,
        };
        if let Some(since) = h.ordered_since {
            v.order = Some(checks::order(&h.ordered, acked_at, since));
        }
        v.split_brain = checks::split_brain(&h.leads, &h.delivered_at, nodes, rdy);
        for (body, outcome) in &h.outcomes {
            v.attempted += 1;
            let delivered = h.deliveries.contains_key(body);
            match outcome {
                Outcome::Acked { .. } => {
                    v.acked += 1;
                    if !delivered {
                        v.lost.push(body.clone());
                    }
                }
                Outcome::Refused if delivered => v.refused_but_delivered += 1,
                Outcome::Indeterminate if delivered => v.unacked_delivered += 1,
                _ => {}
            }
        }
        v.lost.sort();
        for (body, n) in &h.deliveries {
            v.delivered_distinct += 1;
            v.duplicates += u64::from(n.saturating_sub(1));
            if !h.outcomes.contains_key(body) {
                v.never_published.push(body.clone());
            }
        }
        v.deliveries = h.delivered_at.len() as u64;
        v.fins = h.fins;
        v.publish_gap = longest_gap(h.acks.iter().map(|a| a.at), window);
        v.consume_gap = longest_gap(h.delivered_at.iter().map(|(t, _)| *t), window);
        v
    }
}

/// The first of `events` (in time order) at or after `since` from a node other than `not`.
fn first_since(events: &[(Duration, NodeNum)], since: Duration, not: NodeNum) -> Option<Duration> {
    let i = events.partition_point(|(t, _)| *t < since);
    events[i..].iter().find(|(_, n)| *n != not).map(|(t, _)| *t)
}

/// The longest span within `window` without an event (`times` in order).
pub fn longest_gap(
    times: impl Iterator<Item = Duration>,
    window: (Duration, Duration),
) -> Duration {
    let (from, to) = window;
    let mut last = from;
    let mut gap = Duration::ZERO;
    for t in times.filter(|t| *t >= from && *t <= to) {
        gap = gap.max(t.saturating_sub(last));
        last = t;
    }
    gap.max(to.saturating_sub(last))
}

/// What the checker found.
#[derive(Debug, Default)]
pub struct Verdict {
    pub attempted: u64,
    pub acked: u64,
    /// Acknowledged and never delivered.
    pub lost: Vec<String>,
    pub deliveries: u64,
    pub delivered_distinct: u64,
    pub fins: u64,
    /// Deliveries beyond the first of each message.
    pub duplicates: u64,
    /// Not acknowledged (error, timeout, closed connection) but delivered.
    pub unacked_delivered: u64,
    /// Refused as not the leader, yet delivered.
    pub refused_but_delivered: u64,
    /// Delivered bodies no publisher sent.
    pub never_published: Vec<String>,
    pub publish_gap: Duration,
    pub consume_gap: Duration,
    /// The ordered channel's order (None when it could not be made ordered).
    pub order: Option<Order>,
    pub split_brain: SplitBrain,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(h: &History, body: &str, node: NodeNum) {
        h.acked(body.into(), node, h.now());
    }

    #[test]
    fn an_acknowledged_message_never_delivered_is_lost() {
        let h = History::new();
        ack(&h, "a", 1);
        ack(&h, "b", 1);
        h.publish("c".into(), Outcome::Indeterminate);
        h.publish("d".into(), Outcome::Refused);
        h.delivered(b"a", 1);
        h.delivered(b"a", 2);
        h.delivered(b"c", 2);
        h.delivered(b"d", 2);
        h.delivered(b"zz", 2);
        let v = h.check((Duration::ZERO, h.now()), 3, 200);
        assert_eq!(v.acked, 2);
        assert_eq!(v.lost, vec!["b".to_string()]);
        assert_eq!(v.duplicates, 1);
        assert_eq!(v.unacked_delivered, 1);
        assert_eq!(v.refused_but_delivered, 1);
        assert_eq!(v.never_published, vec!["zz".to_string()]);
        assert_eq!(v.deliveries, 5);
        assert_eq!(v.delivered_distinct, 4);
        assert_eq!(h.undelivered(), 1);
    }

    #[test]
    fn the_longest_gap_counts_the_window_edges() {
        let s = Duration::from_secs;
        let times = [s(2), s(3), s(9)];
        assert_eq!(longest_gap(times.into_iter(), (s(0), s(10))), s(6));
        assert_eq!(longest_gap(times.into_iter(), (s(4), s(20))), s(11));
        assert_eq!(longest_gap([].into_iter(), (s(1), s(4))), s(3));
    }

    #[test]
    fn the_first_ack_and_delivery_after_a_fault_are_found() {
        let h = History::new();
        ack(&h, "a", 1);
        let mark = h.now();
        std::thread::sleep(Duration::from_millis(5));
        ack(&h, "b", 2);
        h.delivered(b"a", 1);
        h.delivered(b"b", 2);
        assert!(h.first_ack_since(mark, 0).is_some_and(|t| t > mark));
        assert_eq!(h.first_ack_since(mark, 2), None);
        assert!(h.first_delivery_since(mark, 1).is_some_and(|t| t > mark));
        assert_eq!(h.first_delivery_since(h.now(), 1), None);
        assert_eq!(h.last_ack().map(|(n, _)| n), Some(2));
    }

    /// An `OK` after the fault to a publish sent before it (a follower relaying the leader's
    /// answer) is not a sign of recovery.
    #[test]
    fn an_ok_to_a_publish_sent_before_the_fault_does_not_count() {
        let h = History::new();
        let sent = h.now();
        std::thread::sleep(Duration::from_millis(5));
        let mark = h.now();
        h.acked("in flight".into(), 2, sent);
        assert_eq!(h.first_ack_since(mark, 1), None);
        std::thread::sleep(Duration::from_millis(5));
        ack(&h, "after", 3);
        assert!(h.first_ack_since(mark, 1).is_some_and(|t| t > mark));
    }
}
