//! The channel-operation pass of one replicated topic (`docs/replication.md`, "Channel
//! state"). The leader's broker reports every change to the topic's channels as it makes it
//! (`nsqr_broker::ReplicaOp`, under a channel's lock, so reporting only appends to a queue);
//! one task per group proposes what gathered as one `Command::Pass` entry, waits for it to
//! commit, then proposes what gathered meanwhile. So one such proposal is in flight per group,
//! and the operations a lost leader takes with it are those of the pass in flight and the one
//! being gathered. Consecutive FINs (requeues, dead letters) of one channel share one operation.
//! While the pass being gathered is at its cap, the topic's channels deliver nothing
//! (`Replicate::may_deliver`); they are woken when it is taken for proposing.
//!
//! A channel made on the leader receives publishes only from its `Create`'s commit on
//! (`follow.rs` admits it then), so the broker and the replicated state agree on what it starts
//! with. A publish on the leader is proposed only once the `Create` of every channel made so
//! far is settled (committed, or dropped with a lost lead), and, on a node taking over, once
//! its copy is rebuilt (the channels made before it led are gathered then), so it lands after
//! them in the log and they get it, as nsqd's channels do.
//!
//! A pass unanswered for a while is proposed again, under the same identity (`PassId`): the
//! state applies it once however many of its copies commit. A pass is dropped once this node
//! stops leading, even if it leads again meanwhile: the next takeover starts from the state.
//! Why a proposal can go unanswered: `docs/decisions/0029-unanswered-proposals.md`.
//!
//! A node that does not lead the group gathers nothing: its broker's changes are its own
//! (loading a takeover's state, emptying its copy after losing the lead). Its channels deliver
//! nothing either, from the node's start until its copy is rebuilt from the state on taking
//! over: whatever the broker holds before that (its disk queues from an earlier run, a channel
//! opened on queue files left behind) is not the group's, and delivering it would hand out
//! later messages before earlier ones the next leader still holds.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use nsqr_broker::{ReplicaOp, Topic};
use nsqr_replication::{
    ChannelOp, Command, MessageId, NodeId, PassId, ProposeError, ReplicatedLog,
};
use parking_lot::Mutex;
use tokio::sync::{watch, Notify};

/// Message ids (or operations) one entry carries at most; more wait for the next pass.
pub(super) const PASS_CAP: usize = 8192;
/// How often a publish waiting for a takeover to finish looks again if not woken.
const SERVE_POLL: Duration = Duration::from_millis(20);
/// Wait before proposing a pass again after the group refused it for a reason other than
/// leadership (no majority within openraft's timeouts).
const RETRY_AFTER: Duration = Duration::from_millis(100);
/// How long a pass's proposal may go unanswered before it is proposed again: a safety net
/// (`docs/decisions/0029-unanswered-proposals.md`). The pass at its cap would otherwise keep
/// the topic's channels from delivering for good; proposing it again is safe, since the state
/// applies a pass once.
const UNANSWERED: Duration = Duration::from_secs(5);

/// Where a pass is proposed: the group's log (tests put one there that withholds answers).
pub(super) trait PassLog: Send + Sync + 'static {
    fn propose(&self, command: Command) -> impl Future<Output = Result<u64, ProposeError>> + Send;
}

impl PassLog for ReplicatedLog {
    fn propose(&self, command: Command) -> impl Future<Output = Result<u64, ProposeError>> + Send {
        ReplicatedLog::propose(self, command)
    }
}

/// One group's gathered operations.
pub(super) struct Pass {
    /// This node, and a number drawn for this run: the first two parts of a pass's identity.
    node: NodeId,
    run: u64,
    /// The number of the next pass taken.
    next: AtomicU64,
    /// True while this node leads the group (its broker's changes are gathered).
    leading: AtomicBool,
    /// Counts the times this node started leading: a pass is proposed only in the lead it was
    /// taken in.
    tenure: AtomicU64,
    /// True once the broker's copy is rebuilt from the state, until the lead is lost: only
    /// then do the topic's channels deliver.
    serving: AtomicBool,
    /// Woken when `serving` changes.
    served: Notify,
    queue: Mutex<Vec<ChannelOp>>,
    /// The `Create`s gathered and not yet settled, what a publish waits for.
    creates: Creates,
    /// Message ids (or operations) in `queue`.
    gathered: AtomicUsize,
    wake: Notify,
    /// The broker's topic whose consumers wait while the pass is at its cap (set while
    /// leading).
    topic: Mutex<Option<Arc<Topic>>>,
}

/// The channel creations this leader gathered: how many per channel are not committed yet (a
/// channel is admitted once its last one is, not at the commit of an earlier incarnation's),
/// and their count, gathered and settled, in gathering order.
#[derive(Default)]
struct Creates {
    open: Mutex<HashMap<String, u32>>,
    /// How many `Create`s were gathered (under the queue's lock).
    gathered: std::sync::atomic::AtomicU64,
    /// How many of the first ones gathered are settled: committed, or dropped.
    settled: watch::Sender<u64>,
}

impl Creates {
    fn settle(&self, upto: u64) {
        self.settled.send_if_modified(|s| {
            let raise = upto > *s;
            if raise {
                *s = upto;
            }
            raise
        });
    }
}

/// A pass taken for proposing.
struct Taken {
    command: Command,
    /// How many `Create`s were gathered up to its last one: settled once the pass is.
    creates: u64,
    /// The lead it was taken in.
    tenure: u64,
}

impl Pass {
    /// The pass of a group on node `node`, which does not lead it yet.
    pub(super) fn new(node: NodeId) -> Self {
        Pass {
            node,
            run: run_number(),
            next: AtomicU64::new(0),
            leading: AtomicBool::new(false),
            tenure: AtomicU64::new(0),
            serving: AtomicBool::new(false),
            served: Notify::new(),
            queue: Mutex::default(),
            creates: Creates::default(),
            gathered: AtomicUsize::new(0),
            wake: Notify::new(),
            topic: Mutex::default(),
        }
    }

    /// Gather `op` if this node leads the group.
    pub(super) fn push(&self, channel: Option<&str>, op: ReplicaOp) {
        if !self.leading.load(Ordering::Acquire) {
            return;
        }
        let mut queue = self.queue.lock();
        if !self.leading.load(Ordering::Acquire) {
            return;
        }
        if let (ReplicaOp::Created, Some(name)) = (&op, channel) {
            *self.creates.open.lock().entry(name.to_owned()).or_default() += 1;
            self.creates.gathered.fetch_add(1, Ordering::AcqRel);
        }
        add(&mut queue, channel, op);
        self.gathered.fetch_add(1, Ordering::AcqRel);
        drop(queue);
        self.wake.notify_one();
    }

    /// Start gathering (this node leads the group); `topic`'s consumers are the ones that
    /// wait while the pass is at its cap.
    pub(super) fn lead(&self, topic: Option<Arc<Topic>>) {
        *self.topic.lock() = topic;
        self.tenure.fetch_add(1, Ordering::AcqRel);
        self.leading.store(true, Ordering::Release);
    }

    /// The broker's copy is rebuilt: the topic's channels deliver from now on, and consumers
    /// that subscribed meanwhile are woken.
    pub(super) fn serve(&self) {
        self.serving.store(true, Ordering::Release);
        self.served.notify_waiters();
        self.wake_consumers();
    }

    /// Stop delivering and gathering and drop what was gathered: the group's next leader
    /// decides.
    pub(super) fn follow(&self) {
        self.serving.store(false, Ordering::Release);
        let mut queue = self.queue.lock();
        self.leading.store(false, Ordering::Release);
        queue.clear();
        self.gathered.store(0, Ordering::Release);
        self.creates.open.lock().clear();
        self.creates
            .settle(self.creates.gathered.load(Ordering::Acquire));
        drop(queue);
        self.served.notify_waiters();
        self.wake_consumers();
    }

    /// A `Create` of `channel` this leader gathered is committed: true once none is left
    /// (the broker's channel receives from now on).
    pub(super) fn created(&self, channel: &str) -> bool {
        let mut open = self.creates.open.lock();
        match open.get_mut(channel) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            _ => {
                open.remove(channel);
                true
            }
        }
    }

    /// How many channel creations were gathered so far.
    pub(super) fn creates_gathered(&self) -> u64 {
        self.creates.gathered.load(Ordering::Acquire)
    }

    /// Returns once a publish proposed now lands after the `Create` of every channel made on
    /// this node so far: the group's leader here has rebuilt its copy (channels made before it
    /// led are gathered by then) or lost the lead, and the creations gathered are settled.
    pub(super) async fn ready_to_publish(&self, log: &ReplicatedLog) {
        while log.status().is_leader && !self.serving.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(SERVE_POLL, self.served.notified()).await;
        }
        self.creates_settled(self.creates_gathered()).await;
    }

    /// Returns once the first `n` channel creations gathered are settled (committed, or
    /// dropped with the lead).
    pub(super) async fn creates_settled(&self, n: u64) {
        let mut settled = self.creates.settled.subscribe();
        let _ = settled.wait_for(|s| *s >= n).await;
    }

    /// True while this node serves the topic (it leads and its copy is rebuilt) and the pass
    /// being gathered is below its cap.
    pub(super) fn may_deliver(&self) -> bool {
        self.serving.load(Ordering::Acquire) && self.gathered.load(Ordering::Acquire) < PASS_CAP
    }

    fn wake_consumers(&self) {
        let topic = self.topic.lock().clone();
        if let Some(topic) = topic {
            topic.channels().iter().for_each(|ch| ch.wake_consumers());
        }
    }

    /// True while this node leads in the lead `tenure` counts.
    fn leads_in(&self, tenure: u64) -> bool {
        self.leading.load(Ordering::Acquire) && self.tenure.load(Ordering::Acquire) == tenure
    }

    /// At most [`PASS_CAP`] ids' worth of the gathered operations, oldest first; consumers
    /// that waited for room are woken.
    fn take(&self) -> Vec<ChannelOp> {
        let was_full = !self.may_deliver();
        let taken = self.take_capped();
        if was_full {
            self.wake_consumers();
        }
        taken
    }

    /// Takes the gathered operations as [`Pass::take`] and numbers them as the next pass; None
    /// if nothing gathered.
    fn take_pass(&self) -> Option<Taken> {
        let tenure = self.tenure.load(Ordering::Acquire);
        let ops = self.take();
        if ops.is_empty() {
            return None;
        }
        let queue = self.queue.lock();
        let left = queue
            .iter()
            .filter(|op| matches!(op, ChannelOp::Create { .. }))
            .count() as u64;
        let creates = self.creates.gathered.load(Ordering::Acquire) - left;
        drop(queue);
        let id = PassId {
            node: self.node,
            run: self.run,
            seq: self.next.fetch_add(1, Ordering::AcqRel),
        };
        Some(Taken {
            command: Command::Pass { id, ops },
            creates,
            tenure,
        })
    }

    fn take_capped(&self) -> Vec<ChannelOp> {
        let mut queue = self.queue.lock();
        let mut weight = 0;
        let mut n = 0;
        for op in queue.iter() {
            if n > 0 && weight + ids_in(op) > PASS_CAP {
                break;
            }
            weight += ids_in(op);
            n += 1;
        }
        self.gathered.fetch_sub(weight, Ordering::AcqRel);
        queue.drain(..n).collect()
    }
}

/// Proposes the gathered operations of `pass`, one entry at a time, until the group is gone.
pub(super) async fn run<L: PassLog>(topic: String, pass: Arc<Pass>, log: Weak<L>) {
    loop {
        pass.wake.notified().await;
        while let Some(taken) = pass.take_pass() {
            let Some(log) = log.upgrade() else { return };
            propose(&topic, &pass, &*log, &taken).await;
            pass.creates.settle(taken.creates);
        }
    }
}

/// Proposes one pass, again while this node leads in the lead it was taken in and the group
/// refuses it for another reason or leaves it unanswered; a pass a lost lead leaves
/// uncommitted is dropped (its FINs may be redelivered).
async fn propose(topic: &str, pass: &Pass, log: &impl PassLog, taken: &Taken) {
    loop {
        let answer = tokio::time::timeout(UNANSWERED, log.propose(taken.command.clone())).await;
        match answer {
            Ok(Ok(_) | Err(ProposeError::NotLeader { .. })) => return,
            _ if !pass.leads_in(taken.tenure) => return,
            Err(_) => tracing::warn!(
                "cluster: topic {topic}: channel operations unanswered for {UNANSWERED:?}; proposed again"
            ),
            Ok(Err(e)) => {
                tracing::warn!("cluster: topic {topic}: channel operations not committed: {e}");
                tokio::time::sleep(RETRY_AFTER).await;
                if !pass.leads_in(taken.tenure) {
                    return;
                }
            }
        }
    }
}

/// A number for this run of the node's passes: random, or the clock's nanoseconds if the
/// system has no randomness to give.
fn run_number() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::getrandom(&mut bytes).is_ok() {
        return u64::from_le_bytes(bytes);
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_nanos() as u64)
}

fn ids_in(op: &ChannelOp) -> usize {
    match op {
        ChannelOp::Finish { ids, .. } | ChannelOp::DeadLetter { ids, .. } => ids.len(),
        ChannelOp::Requeue { requeued, .. } => requeued.len(),
        _ => 1,
    }
}

/// Appends `op` to `queue`, into the last operation when it is of the same kind and channel.
fn add(queue: &mut Vec<ChannelOp>, channel: Option<&str>, op: ReplicaOp) {
    let last = queue.last_mut().filter(|last| ids_in(last) < PASS_CAP);
    match (op, last) {
        (ReplicaOp::Finished(id), Some(ChannelOp::Finish { channel: c, ids }))
        | (ReplicaOp::DeadLettered(id), Some(ChannelOp::DeadLetter { channel: c, ids }))
            if channel == Some(c.as_str()) =>
        {
            ids.push(to_log(id));
        }
        (
            ReplicaOp::Requeued(id, due),
            Some(ChannelOp::Requeue {
                channel: c,
                requeued,
            }),
        ) if channel == Some(c.as_str()) => {
            requeued.push((to_log(id), due));
        }
        (op, _) => {
            if let Some(op) = channel_op(channel.map(str::to_owned), op) {
                queue.push(op);
            }
        }
    }
}

/// The log's form of a broker's operation; None for a message operation without a channel.
fn channel_op(channel: Option<String>, op: ReplicaOp) -> Option<ChannelOp> {
    Some(match op {
        ReplicaOp::Created => ChannelOp::Create { channel: channel? },
        ReplicaOp::Deleted => ChannelOp::Delete { channel: channel? },
        ReplicaOp::Paused(paused) => ChannelOp::Pause { channel, paused },
        ReplicaOp::Configured(settings_json) => ChannelOp::Configure {
            channel,
            settings_json,
        },
        ReplicaOp::Finished(id) => ChannelOp::Finish {
            channel: channel?,
            ids: vec![to_log(id)],
        },
        ReplicaOp::Requeued(id, due) => ChannelOp::Requeue {
            channel: channel?,
            requeued: vec![(to_log(id), due)],
        },
        ReplicaOp::DeadLettered(id) => ChannelOp::DeadLetter {
            channel: channel?,
            ids: vec![to_log(id)],
        },
    })
}

/// The log's id of a broker's message id (its 16 hex digits).
pub(super) fn to_log(id: nsqr_broker::MessageId) -> MessageId {
    MessageId(id.to_hex())
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use nsqr_replication::{Message, TopicState};

    use super::*;

    fn id(n: u64) -> nsqr_broker::MessageId {
        nsqr_broker::MessageId(n)
    }

    /// A log that commits every proposal at once (applies it to its state, as every copy of a
    /// pass that commits is applied) and answers all but the first `withheld` of them.
    struct Withholding {
        withheld: usize,
        proposed: Mutex<Vec<Command>>,
        calls: watch::Sender<usize>,
        state: Mutex<TopicState>,
    }

    impl Withholding {
        fn new(withheld: usize) -> Arc<Self> {
            Arc::new(Withholding {
                withheld,
                proposed: Mutex::default(),
                calls: watch::channel(0).0,
                state: Mutex::default(),
            })
        }

        /// Waits (on the paused clock: proposals again included) until `n` proposals came.
        async fn proposed(&self, n: usize) -> Vec<Command> {
            let mut calls = self.calls.subscribe();
            let came = calls.wait_for(|c| *c >= n);
            let came = tokio::time::timeout(Duration::from_secs(3600), came).await;
            assert!(came.is_ok(), "{n} proposals");
            self.proposed.lock().clone()
        }

        fn publish(&self, n: u64) {
            let message = Message {
                id: to_log(id(n)),
                timestamp_ns: 0,
                deliver_at_ms: None,
                body: Bytes::from_static(b"m"),
            };
            self.state
                .lock()
                .apply(&Command::Publish(vec![message].into()));
        }

        fn pending(&self, channel: &str) -> Option<usize> {
            self.state.lock().pending(channel).map(|p| p.len())
        }
    }

    impl PassLog for Withholding {
        fn propose(
            &self,
            command: Command,
        ) -> impl Future<Output = Result<u64, ProposeError>> + Send {
            self.state.lock().apply(&command);
            let n = {
                let mut proposed = self.proposed.lock();
                proposed.push(command);
                proposed.len()
            };
            self.calls.send_replace(n);
            let answer = n > self.withheld;
            async move {
                if !answer {
                    std::future::pending::<()>().await;
                }
                Ok(n as u64)
            }
        }
    }

    fn leading() -> Arc<Pass> {
        let pass = Arc::new(Pass::new(1));
        pass.lead(None);
        pass.serve();
        pass
    }

    #[tokio::test(start_paused = true)]
    async fn a_pass_left_unanswered_is_proposed_again_and_applied_once() {
        let log = Withholding::new(1);
        log.state
            .lock()
            .apply(&Command::Channels(vec![ChannelOp::Create {
                channel: "c".into(),
            }]));
        log.publish(1);
        let pass = leading();
        let task = tokio::spawn(run("t".into(), Arc::clone(&pass), Arc::downgrade(&log)));
        pass.push(Some("c"), ReplicaOp::Deleted);
        pass.push(Some("c"), ReplicaOp::Created);
        let first = log.proposed(1).await;
        assert_eq!(log.pending("c"), Some(0), "recreated empty");
        // A publish commits between the unanswered proposal and the next.
        log.publish(2);

        let again = log.proposed(2).await;
        assert_eq!(again[1], first[0], "the same pass, under the same identity");
        assert_eq!(
            log.pending("c"),
            Some(1),
            "applied once: the publish in between stays"
        );
        pass.creates_settled(1).await;

        pass.push(Some("c"), ReplicaOp::Finished(id(2)));
        let next = log.proposed(3).await;
        let Command::Pass { id: next_id, .. } = &next[2] else {
            panic!("a pass: {:?}", next[2]);
        };
        let Command::Pass { id: first_id, .. } = &first[0] else {
            panic!("a pass: {:?}", first[0]);
        };
        assert_eq!(
            (next_id.node, next_id.run, next_id.seq),
            (1, first_id.run, first_id.seq + 1)
        );
        assert_eq!(log.pending("c"), Some(0), "the next pass applied");
        task.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_pass_whose_node_stopped_leading_is_dropped() {
        let log = Withholding::new(1);
        let pass = leading();
        let task = tokio::spawn(run("t".into(), Arc::clone(&pass), Arc::downgrade(&log)));
        pass.push(None, ReplicaOp::Paused(true));
        log.proposed(1).await;
        // The lead lost and won again before the proposal was given up on: a new lead, whose
        // state the pass of the old one must not change any more.
        pass.follow();
        pass.lead(None);
        tokio::time::sleep(UNANSWERED * 3).await;
        assert_eq!(log.proposed(1).await.len(), 1, "not proposed again");

        pass.push(None, ReplicaOp::Paused(false));
        let proposed = log.proposed(2).await;
        assert_ne!(proposed[1], proposed[0], "the new lead's own pass");
        assert!(!log.state.lock().paused);
        task.abort();
    }

    #[test]
    fn fins_of_one_channel_share_an_operation() {
        let pass = Pass::new(1);
        pass.push(Some("c"), ReplicaOp::Finished(id(1)));
        assert!(pass.take().is_empty(), "a follower gathers nothing");
        pass.lead(None);
        pass.push(Some("c"), ReplicaOp::Finished(id(1)));
        pass.push(Some("c"), ReplicaOp::Finished(id(2)));
        pass.push(Some("d"), ReplicaOp::Finished(id(3)));
        pass.push(None, ReplicaOp::Paused(true));
        pass.push(Some("c"), ReplicaOp::Requeued(id(4), 99));
        pass.push(Some("c"), ReplicaOp::Requeued(id(5), 100));
        let ops = pass.take();
        assert_eq!(ops.len(), 4, "{ops:?}");
        assert_eq!(
            ops[0],
            ChannelOp::Finish {
                channel: "c".into(),
                ids: vec![to_log(id(1)), to_log(id(2))]
            }
        );
        assert_eq!(
            ops[3],
            ChannelOp::Requeue {
                channel: "c".into(),
                requeued: vec![(to_log(id(4)), 99), (to_log(id(5)), 100)]
            }
        );
        assert!(pass.take().is_empty());
    }

    #[test]
    fn channels_deliver_only_once_the_copy_is_rebuilt_and_until_the_lead_is_lost() {
        let pass = Pass::new(1);
        assert!(
            !pass.may_deliver(),
            "a node that does not lead delivers nothing"
        );
        pass.lead(None);
        assert!(!pass.may_deliver(), "leading, the copy not rebuilt yet");
        pass.serve();
        assert!(pass.may_deliver());
        pass.follow();
        assert!(!pass.may_deliver(), "the lead lost");
    }

    #[tokio::test]
    async fn creations_admit_at_the_last_one_and_settle_for_publishes() {
        let pass = Pass::new(1);
        pass.push(Some("c"), ReplicaOp::Created);
        assert_eq!(pass.creates_gathered(), 0, "a follower gathers nothing");
        pass.lead(None);
        pass.push(Some("c"), ReplicaOp::Created);
        pass.push(Some("c"), ReplicaOp::Deleted);
        pass.push(Some("c"), ReplicaOp::Created);
        pass.push(Some("d"), ReplicaOp::Created);
        assert_eq!(pass.creates_gathered(), 3);
        assert!(!pass.created("c"), "an earlier incarnation's creation");
        assert!(pass.created("c"), "the last one");
        assert!(pass.created("d"));

        let taken = pass.take_pass().expect("a pass");
        assert_eq!((taken.command.len(), taken.creates), (4, 3));
        let waiting = tokio::time::timeout(Duration::from_millis(50), pass.creates_settled(1));
        assert!(waiting.await.is_err(), "not settled before its pass is");
        pass.creates.settle(taken.creates);
        pass.creates_settled(3).await;

        pass.push(Some("e"), ReplicaOp::Created);
        pass.follow();
        pass.creates_settled(4).await;
        assert!(
            pass.created("e"),
            "dropped with the lead: nothing left to wait for"
        );
    }

    #[test]
    fn a_pass_is_capped_and_following_drops_what_gathered() {
        let pass = Pass::new(1);
        pass.lead(None);
        pass.serve();
        for n in 0..(PASS_CAP as u64 + 10) {
            pass.push(Some("c"), ReplicaOp::Finished(id(n)));
        }
        assert!(!pass.may_deliver(), "at the cap, consumers wait");
        let first = pass.take();
        assert_eq!(first.iter().map(ids_in).sum::<usize>(), PASS_CAP);
        assert!(pass.may_deliver(), "taken: room again");
        pass.follow();
        assert!(pass.take().is_empty());
        pass.push(Some("c"), ReplicaOp::Finished(id(1)));
        assert!(pass.take().is_empty());
    }
}
