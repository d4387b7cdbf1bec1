//! The checks over the history beyond "nothing acknowledged is lost":
//!
//! - **Order**: on the ordered channel (`"ordered": true`, keyless publishes: first in, first
//!   out), the first deliveries of each publisher's acknowledged messages must come in the
//!   order it published them. A publisher sends its next message only once the last one was
//!   acknowledged, so each acknowledged message is in the log before everything the publisher
//!   sent after it; redeliveries after a failover are not first deliveries.
//! - **Split brain**: a node delivering the channel while another node demonstrably leads it
//!   (says, in `/metrics`, that it leads in a later term than the delivering node last did,
//!   just before and just after the delivery) is a stale leader. An
//!   old leader that cannot commit its FINs stops delivering once its pass of channel
//!   operations is at its cap (`docs/replication.md`, "The bound on redelivering finished
//!   messages"), so such an episode may not exceed two passes plus what its consumers hold.

use std::collections::HashMap;
use std::time::Duration;

use crate::history::NodeNum;

/// Operations in one pass of channel operations (nsqrd's `cluster/ops.rs`).
const PASS_CAP: u64 = 8_192;
/// How close to a delivery another node's claims to lead must be to prove it led then.
pub const LEAD_WINDOW: Duration = Duration::from_millis(500);

/// A publisher's id and sequence number, from a body `p<id>-<seq>`.
fn publisher_seq(body: &str) -> Option<(u64, u64)> {
    let (id, seq) = body.strip_prefix('p')?.split_once('-')?;
    Some((id.parse().ok()?, seq.parse().ok()?))
}

/// What the order check found.
#[derive(Debug, Default)]
pub struct Order {
    /// Acknowledged messages first delivered on the ordered channel, checked.
    pub checked: u64,
    /// Bodies first delivered after a later message of the same publisher.
    pub out_of_order: Vec<String>,
}

/// The order check over the ordered channel's deliveries (in time order, by body): only
/// messages acknowledged at or after `since` (once the channel was ordered) count.
pub fn order(
    deliveries: &[String],
    acked_at: impl Fn(&str) -> Option<Duration>,
    since: Duration,
) -> Order {
    let mut result = Order::default();
    let mut first = std::collections::HashSet::new();
    let mut latest: HashMap<u64, u64> = HashMap::new();
    for body in deliveries {
        let checked = matches!(acked_at(body), Some(at) if at >= since);
        if !first.insert(body.as_str()) || !checked {
            continue;
        }
        let Some((publisher, seq)) = publisher_seq(body) else {
            continue;
        };
        result.checked += 1;
        let last = latest.entry(publisher).or_insert(seq);
        if seq < *last {
            result.out_of_order.push(body.clone());
        } else {
            *last = seq;
        }
    }
    result
}

/// What the split-brain check found.
#[derive(Debug, Default)]
pub struct SplitBrain {
    /// Deliveries by a node while another one acknowledged publishes around them.
    pub stale: u64,
    /// The most stale deliveries in one episode (a node's stale deliveries, each within
    /// [`LEAD_WINDOW`] of the last).
    pub most: u64,
    /// The longest episode.
    pub longest: Duration,
    /// The most an episode may hold: two passes of operations and every consumer's RDY.
    pub bound: u64,
}

impl SplitBrain {
    pub fn within_bound(&self) -> bool {
        self.most <= self.bound
    }
}

/// The split-brain check over the leadership claims (when a node said it led, in which
/// term) and the deliveries (each in time order) of `nodes` nodes whose consumers hold at
/// most `rdy` messages each.
pub fn split_brain(
    leads: &[(Duration, NodeNum, u64)],
    deliveries: &[(Duration, NodeNum)],
    nodes: usize,
    rdy: u64,
) -> SplitBrain {
    // The term `node` last said it led in, at or before `t`.
    let term_of = |node: NodeNum, t: Duration| {
        let i = leads.partition_point(|(at, _, _)| *at <= t);
        leads[..i]
            .iter()
            .rev()
            .find(|(_, n, _)| *n == node)
            .map(|(_, _, term)| *term)
    };
    // Another node said it led, in a later term than `than`, between `from` and `to`.
    let other_led = |from: Duration, to: Duration, not: NodeNum, than: Option<u64>| {
        let i = leads.partition_point(|(t, _, _)| *t < from);
        leads[i..]
            .iter()
            .take_while(|(t, _, _)| *t <= to)
            .any(|(_, n, term)| *n != not && than.is_none_or(|than| *term > than))
    };
    let mut result = SplitBrain {
        bound: 2 * PASS_CAP + rdy * nodes as u64,
        ..SplitBrain::default()
    };
    // Per node: its current episode's start, last stale delivery and count.
    let mut episodes: HashMap<NodeNum, (Duration, Duration, u64)> = HashMap::new();
    for &(t, node) in deliveries {
        let term = term_of(node, t);
        let before = other_led(t.saturating_sub(LEAD_WINDOW), t, node, term);
        if !(before && other_led(t, t + LEAD_WINDOW, node, term)) {
            continue;
        }
        result.stale += 1;
        let episode = episodes.entry(node).or_insert((t, t, 0));
        if t.saturating_sub(episode.1) > LEAD_WINDOW {
            *episode = (t, t, 0);
        }
        episode.1 = t;
        episode.2 += 1;
        result.most = result.most.max(episode.2);
        result.longest = result.longest.max(episode.1 - episode.0);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn a_later_message_first_delivered_before_an_earlier_one_is_out_of_order() {
        let bodies: Vec<String> = ["p0-1", "p1-1", "p0-3", "p0-2", "p1-2", "p0-3", "p0-4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let acked = |b: &str| (b != "p1-2").then_some(ms(10));
        let result = order(&bodies, acked, ms(0));
        // p0-3 again is a redelivery; p1-2 was not acknowledged.
        assert_eq!(result.out_of_order, vec!["p0-2".to_string()]);
        assert_eq!(result.checked, 5);
        // Messages acknowledged before the channel was ordered are not checked.
        assert_eq!(order(&bodies, acked, ms(20)).checked, 0);
    }

    #[test]
    fn a_node_delivering_while_another_leads_in_a_later_term_is_a_stale_leader() {
        // Node 1 leads in term 1 until 1 s (and still says so at 4 s: it does not know), node
        // 2 in term 2 from 3 s; node 1 delivers twice more at 4 s while node 2 leads.
        let acks: Vec<(Duration, NodeNum, u64)> = vec![
            (ms(900), 1, 1),
            (ms(3_000), 2, 2),
            (ms(3_900), 2, 2),
            (ms(3_950), 1, 1),
            (ms(4_100), 2, 2),
            (ms(4_150), 1, 1),
            (ms(4_200), 2, 2),
        ];
        let deliveries: Vec<(Duration, NodeNum)> = vec![
            (ms(950), 1),
            (ms(3_100), 2),
            (ms(4_000), 1),
            (ms(4_050), 1),
            (ms(4_100), 2),
        ];
        let result = split_brain(&acks, &deliveries, 3, 200);
        assert_eq!(result.stale, 2);
        assert_eq!(result.most, 2);
        assert_eq!(result.longest, ms(50));
        assert_eq!(result.bound, 2 * 8_192 + 600);
        assert!(result.within_bound());
        // The stale leader's claims around node 2's delivery at 4.1 s do not make it stale:
        // its term is earlier.
        assert_eq!(split_brain(&acks, &deliveries[4..], 3, 200).stale, 0);
        // A handover (the old leader's last delivery before the new one acknowledges) is not.
        assert_eq!(split_brain(&acks, &deliveries[..2], 3, 200).stale, 0);
    }
}
