//! A channel: its ready queue, in-flight and deferred messages, and its consumers.
//!
//! All state sits behind one short lock, taken once per batch: a publish appends a whole batch,
//! a consumer takes up to its free RDY in one go. Consumers that found the queue empty are
//! marked `waiting`; a put wakes as many of them as it added messages (round robin), so an idle
//! consumer gets a message immediately and a busy channel does no wake-ups at all.
//!
//! A channel's settings (`queue_settings.rs`: delivery limit, dead letters, order, time to live) are
//! applied by `channel/rules.rs`; with none set and no message carrying attributes, a message's
//! path does not look at them (`ChannelState::checks` is false). Answers by receipt (HTTP
//! consumers) are in `channel/settle.rs`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::attrs::DeadLetterReason;
use crate::broker_config::BrokerConfig;
use crate::consumer::Consumer;
use crate::dead_letter::DeadLetter;
use crate::durability::Ticket;
use crate::e2e::E2eStream;
use crate::error::BrokerError;
use crate::inflight::{DeferredQueue, InFlight, InFlightTable};
use crate::message::{Message, Published};
use crate::ordered::Ordered;
use crate::queue_settings::{EffectiveSettings, QueueSettings};
use crate::registry::Shared;
use crate::spill_queue::{Put, SpillQueue};
use crate::stats::{ChannelCounts, ChannelStats, ConsumerStats, DeadLetterStats};

/// A consumer as its channel sees it.
struct Member {
    consumer: Arc<Consumer>,
    /// Found the queue empty with RDY to spare: wake it on the next put.
    waiting: bool,
}

struct ChannelState {
    /// Memory, then disk (`spill_queue.rs`).
    ready: SpillQueue,
    in_flight: InFlightTable,
    deferred: DeferredQueue,
    consumers: Vec<Member>,
    paused: bool,
    /// The earliest in-flight deadline, deferred due time or expiry sweep, which the broker's
    /// timer (`timers.rs`) will wake the channel for (None: nothing to wait for).
    timer_at: Option<Instant>,
    next_wake: usize,
    /// The settings set on this channel.
    own: QueueSettings,
    /// What it runs with: its own settings, else its topic's, else the broker's.
    eff: EffectiveSettings,
    /// Messages must be looked at before delivery (a limit, a time to live, order, or a
    /// message with attributes arrived). False: the plain path of nsqd.
    checks: bool,
    /// A message with attributes (a TTL, an ordering key) reached the channel.
    attrs_seen: bool,
    /// Per-key order, when `eff.ordered`.
    ordered: Option<Box<Ordered>>,
    /// Deliveries so far; each delivery is known by its number (receipts).
    deliveries: u64,
    /// When the head of the queue is next checked for expired messages (`rules.rs`).
    sweep_at: Option<Instant>,
    /// The hook changes are reported to, when the topic is replicated (`replication.rs`).
    replica: Option<crate::Replication>,
}

impl ChannelState {
    /// Wake up to `n` waiting consumers, starting after the last one woken.
    fn wake_waiting(&mut self, mut n: usize) {
        let len = self.consumers.len();
        for k in 0..len {
            if n == 0 {
                break;
            }
            let i = (self.next_wake + k) % len;
            let c = &mut self.consumers[i];
            if c.waiting {
                c.waiting = false;
                c.consumer.wake();
                n -= 1;
                self.next_wake = (i + 1) % len;
            }
        }
    }

    fn owner(&self, consumer_id: u64) -> Option<&Arc<Consumer>> {
        self.consumers
            .iter()
            .find(|c| c.consumer.id() == consumer_id)
            .map(|c| &c.consumer)
    }

    fn member(&mut self, consumer_id: u64) -> Option<&mut Member> {
        self.consumers
            .iter_mut()
            .find(|c| c.consumer.id() == consumer_id)
    }

    /// The next message to deliver on the plain path.
    fn pop_plain(&mut self) -> Option<Message> {
        self.ready.pop_front()
    }

    /// Messages waiting to be delivered, memory and disk, those held for order included, and
    /// the deferred ones: (`depth`, `deferred_count`). Deferred messages still on disk after a
    /// restart count as deferred, not in the depth.
    fn depth_and_deferred(&self) -> (i64, usize) {
        let on_disk = self.ready.deferred_on_disk(crate::now_unix_nanos());
        let depth = self.ready.depth() + self.ordered.as_ref().map_or(0, |o| o.held() as i64);
        (
            depth.saturating_sub(on_disk as i64).max(0),
            self.deferred.len() + on_disk,
        )
    }
}

/// One channel of a topic: its own copy of every message the topic gets, shared by the
/// consumers that join it (each message goes to one of them).
pub struct Channel {
    /// Shared with the channel's dead-letter records.
    name: Arc<str>,
    topic_name: Arc<str>,
    ephemeral: bool,
    /// End-to-end latency, when percentiles are configured.
    e2e: Option<E2eStream>,
    shared: Arc<Shared>,
    /// This channel, for the broker's timer.
    me: Weak<Channel>,
    state: Mutex<ChannelState>,
    deleted: AtomicBool,
    message_count: AtomicU64,
    requeue_count: AtomicU64,
    timeout_count: AtomicU64,
    /// Dead letters sent, by reason (`DeadLetterReason::index`).
    dead_letter_counts: [AtomicU64; 3],
    /// Expired messages dropped (`"expired": "drop"`).
    expired_dropped: AtomicU64,
}

impl Channel {
    /// A new channel of `topic_name` with its settings, its disk queue opened (and recovered):
    /// blocking IO, so callers hold no lock other publishers need.
    pub(crate) fn open(
        topic_name: &str,
        name: &str,
        shared: Arc<Shared>,
        own: QueueSettings,
        topic_settings: &QueueSettings,
    ) -> Arc<Channel> {
        let ephemeral = nsq_wire::names::is_ephemeral(name);
        let eff = EffectiveSettings::resolve(topic_name, &own, topic_settings, &shared.cfg);
        let replica = rules::replica_of(topic_settings, &shared.cfg);
        let (ready, head) = disk::ready_queue(&shared.cfg, topic_name, name, ephemeral, &eff);
        let ch = Arc::new_cyclic(|me| Channel {
            name: Arc::from(name),
            topic_name: Arc::from(topic_name),
            ephemeral,
            e2e: E2eStream::for_config(&shared.cfg),
            shared,
            me: me.clone(),
            state: Mutex::new(ChannelState {
                ready,
                in_flight: InFlightTable::default(),
                deferred: DeferredQueue::default(),
                consumers: Vec::new(),
                paused: false,
                timer_at: None,
                next_wake: 0,
                own,
                eff,
                checks: false,
                attrs_seen: false,
                ordered: None,
                deliveries: 0,
                sweep_at: None,
                replica,
            }),
            deleted: AtomicBool::new(false),
            message_count: AtomicU64::new(0),
            requeue_count: AtomicU64::new(0),
            timeout_count: AtomicU64::new(0),
            dead_letter_counts: Default::default(),
            expired_dropped: AtomicU64::new(0),
        });
        {
            let mut st = ch.state.lock();
            ch.apply_rules(&mut st);
            ch.place_head(&mut st, head);
        }
        disk::attach(&ch);
        ch
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name of its topic.
    pub fn topic_name(&self) -> &str {
        &self.topic_name
    }

    /// An `#ephemeral` channel: memory only, deleted with its last consumer.
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral
    }

    /// True once deleted (with its topic, or on its own).
    pub fn is_deleted(&self) -> bool {
        self.deleted.load(Relaxed)
    }

    fn cfg(&self) -> &BrokerConfig {
        &self.shared.cfg
    }

    /// Append messages to the ready queue (memory, or disk past `--mem-queue-size`) and wake
    /// waiting consumers. The ticket completes when they are durable (strict mode).
    pub fn put(&self, msgs: impl IntoIterator<Item = Message>) -> Result<Ticket, BrokerError> {
        let msgs: Vec<Message> = msgs.into_iter().collect();
        let attrs = msgs.iter().any(|m| m.attributes().is_some());
        self.put_marked(msgs, attrs)
    }

    /// [`Channel::put`] when the caller knows whether any message carries attributes.
    pub(crate) fn put_marked(
        &self,
        msgs: Vec<Message>,
        attrs: bool,
    ) -> Result<Ticket, BrokerError> {
        self.enqueue(attrs, |ready| ready.put(msgs, None))
    }

    /// Queue a whole publish (one run in memory).
    pub fn put_published(&self, p: &Published) -> Result<Ticket, BrokerError> {
        self.enqueue(p.attributes().is_some(), |ready| {
            ready.put_published(p, None)
        })
    }

    /// Messages `range` of `p`, kept as one run like [`Channel::put_published`] (a topic
    /// handing on a backlog that has already lost its first messages).
    pub fn put_run(
        &self,
        p: &Published,
        range: std::ops::Range<usize>,
    ) -> Result<Ticket, BrokerError> {
        self.enqueue(p.attributes().is_some(), |ready| {
            ready.put_run(p, range, None)
        })
    }

    /// Apply `put` to the ready queue, count what it took and wake as many waiting consumers.
    fn enqueue(
        &self,
        attrs: bool,
        put: impl FnOnce(&mut SpillQueue) -> Result<Put, BrokerError>,
    ) -> Result<Ticket, BrokerError> {
        let mut st = self.state.lock();
        let before = st.ready.len();
        let put = put(&mut st.ready)?;
        let added = st.ready.len() - before;
        self.message_count.fetch_add(put.accepted as u64, Relaxed);
        if attrs || st.checks {
            self.arrived(&mut st, attrs);
        }
        st.wake_waiting(added);
        Ok(put.ticket)
    }

    /// Hold messages until `due`, then make them ready. In strict mode they go through the
    /// disk queue first and are deferred once written.
    pub fn put_deferred(
        &self,
        msgs: impl IntoIterator<Item = Message>,
        due: Instant,
    ) -> Result<Ticket, BrokerError> {
        let msgs: Vec<Message> = msgs.into_iter().collect();
        let attrs = msgs.iter().any(|m| m.attributes().is_some());
        let mut st = self.state.lock();
        let n = msgs.len() as u64;
        if attrs {
            self.arrived(&mut st, true);
        }
        if st.ready.is_strict() {
            let put = st.ready.put(msgs, Some(disk::unix_due(due)))?;
            self.message_count.fetch_add(n, Relaxed);
            return Ok(put.ticket);
        }
        for m in msgs {
            st.deferred.push(due, m);
        }
        self.message_count.fetch_add(n, Relaxed);
        self.schedule(&mut st, due);
        Ok(Ticket::done())
    }

    /// Make sure the broker's timer wakes the channel by `at`.
    fn schedule(&self, st: &mut ChannelState, at: Instant) {
        if st.timer_at.is_none_or(|t| at < t) {
            st.timer_at = Some(at);
            self.shared.timers.wake_at(at, self.me.clone());
        }
    }

    /// The broker's timer reached `at`: expire in-flight messages, release due deferred ones
    /// and sweep expired messages off the queue's head, then ask to be woken at the next
    /// deadline. A wake-up that is no longer the channel's deadline (an earlier one was asked
    /// for since) is ignored.
    pub(crate) fn on_timer(&self, at: Instant, now: Instant, timers: &crate::timers::Timers) {
        if self.is_deleted() {
            return;
        }
        let mut dead = Vec::new();
        {
            let mut st = self.state.lock();
            if st.timer_at != Some(at) {
                return;
            }
            let next = self.process_timers(&mut st, now, &mut dead);
            st.timer_at = next;
            if let Some(next) = next {
                timers.wake_at(next, self.me.clone());
            }
        }
        self.send_dead(dead);
    }

    /// Take up to `max` ready messages for `consumer`, mark them in flight and pass each to
    /// `emit` (which encodes it). With a sample rate in 1..=99 a message is delivered with
    /// probability (rate+1)/100 and otherwise discarded for this channel, as nsqd does.
    pub fn deliver(
        &self,
        consumer: &Consumer,
        max: usize,
        sample_rate: i32,
        rng: &mut u64,
        mut emit: impl FnMut(&Message),
    ) -> usize {
        self.deliver_numbered(consumer, max, sample_rate, rng, |m, _| emit(m))
    }

    /// [`Channel::deliver`], passing each message's delivery number too (what a receipt
    /// names: [`Channel::settle`]).
    pub fn deliver_numbered(
        &self,
        consumer: &Consumer,
        max: usize,
        sample_rate: i32,
        rng: &mut u64,
        mut emit: impl FnMut(&Message, u64),
    ) -> usize {
        let mut dead = Vec::new();
        let sent = {
            let mut st = self.state.lock();
            if st.paused || self.is_deleted() || !self.may_deliver(&st) {
                return 0;
            }
            let timeout = Self::timeout_for(&st.eff, consumer);
            let checked = st.checks;
            let now = Instant::now();
            let now_ns = if checked { crate::now_unix_nanos() } else { 0 };
            let deadline = now + timeout;
            let mut sent = 0;
            while sent < max {
                let next = if checked {
                    self.pop_checked(&mut st, now_ns, &mut dead)
                } else {
                    st.pop_plain()
                };
                let Some(mut msg) = next else {
                    break;
                };
                if sample_rate > 0 && (xorshift(rng) % 100) as i32 > sample_rate {
                    self.done_with(&mut st, &msg);
                    continue;
                }
                msg.attempts = msg.attempts.wrapping_add(1);
                st.deliveries += 1;
                let delivery = st.deliveries;
                emit(&msg, delivery);
                st.in_flight.insert(InFlight {
                    msg,
                    consumer_id: consumer.id(),
                    deadline,
                    delivered_at: now,
                    delivery,
                });
                sent += 1;
            }
            if sent < max {
                if let Some(c) = st.member(consumer.id()) {
                    c.waiting = true;
                }
            }
            if sent > 0 {
                consumer.delivered(sent);
                self.schedule(&mut st, deadline);
            }
            sent
        };
        self.send_dead(dead);
        sent
    }

    /// The consumer can take nothing more for now (RDY 0, CLS): pass any pending wake-up on.
    pub fn set_not_ready(&self, consumer_id: u64) {
        let mut st = self.state.lock();
        let mut was_waiting = false;
        if let Some(c) = st.member(consumer_id) {
            was_waiting = c.waiting;
            c.waiting = false;
        }
        if !was_waiting && !st.ready.is_empty() {
            st.wake_waiting(1);
        }
    }

    /// FIN a batch of ids; `on_error` gets the index of each id that failed.
    pub fn finish(
        &self,
        consumer: &Consumer,
        ids: &[u64],
        mut on_error: impl FnMut(usize, BrokerError),
    ) {
        let mut ok = 0;
        {
            let mut st = self.state.lock();
            let mut e2e = self.e2e.as_ref().map(E2eStream::recorder);
            for (i, &id) in ids.iter().enumerate() {
                match st.in_flight.take(consumer.id(), id) {
                    Ok(f) => {
                        ok += 1;
                        if let Some(r) = &mut e2e {
                            r.record(f.msg.timestamp());
                        }
                        self.done_with(&mut st, &f.msg);
                    }
                    Err(e) => on_error(i, e),
                }
            }
        }
        consumer.finished(ok);
    }

    /// REQ: back to the queue now (delay 0) or after `delay`. A message that has had its
    /// `max_attempts` deliveries becomes a dead letter instead.
    pub fn requeue(
        &self,
        consumer: &Consumer,
        id: u64,
        delay: Duration,
    ) -> Result<(), BrokerError> {
        let mut dead = Vec::new();
        {
            let mut st = self.state.lock();
            let f = st.in_flight.take(consumer.id(), id)?;
            consumer.requeued();
            self.requeue_count.fetch_add(1, Relaxed);
            self.put_back(&mut st, f.msg, delay, &mut dead);
            if delay.is_zero() {
                st.wake_waiting(1);
            }
        }
        self.send_dead(dead);
        Ok(())
    }

    /// TOUCH: a fresh timeout, but never past delivery + max-msg-timeout.
    pub fn touch(&self, consumer: &Consumer, id: u64) -> Result<(), BrokerError> {
        let max = self.shared.cfg.max_msg_timeout;
        let now = Instant::now();
        let mut st = self.state.lock();
        let timeout = Self::timeout_for(&st.eff, consumer);
        st.in_flight.set_deadline(consumer.id(), id, |f| {
            (now + timeout).min(f.delivered_at + max)
        })
    }

    /// A consumer joins (nsqd's SUB). Fails when the channel is gone or has
    /// `--max-channel-consumers` already.
    pub fn add_consumer(&self, consumer: Arc<Consumer>) -> Result<(), BrokerError> {
        let mut st = self.state.lock();
        if self.is_deleted() {
            return Err(BrokerError::Exiting);
        }
        let limit = self.shared.cfg.max_channel_consumers;
        if limit > 0 && st.consumers.len() >= limit {
            return Err(BrokerError::TooManyConsumers {
                topic: self.topic_name.to_string(),
                channel: self.name.to_string(),
                limit,
            });
        }
        st.consumers.push(Member {
            consumer,
            waiting: false,
        });
        Ok(())
    }

    /// A consumer leaves: its in-flight messages go back to the front of the queue at once
    /// (nsqd waits for their timeout). Returns how many consumers remain. Use
    /// [`Broker::consumer_left`](crate::Broker::consumer_left) so that an ephemeral channel
    /// goes with its last consumer.
    pub(crate) fn remove_consumer(&self, consumer_id: u64) -> usize {
        let mut st = self.state.lock();
        // A member whose count is at 0 holds nothing here (a count falls only once its
        // message left the in-flight map, under this lock): no walk of the map. HTTP long
        // polls leave this way, once per poll.
        let mut holds = true;
        if let Some(i) = st
            .consumers
            .iter()
            .position(|c| c.consumer.id() == consumer_id)
        {
            holds = st.consumers.remove(i).consumer.in_flight() > 0;
        }
        if holds {
            Self::take_back(&mut st, consumer_id);
        }
        st.consumers.len()
    }

    /// A consumer's in-flight messages, back to the front of the queue (of their key, on an
    /// ordered channel) in their order.
    fn take_back(st: &mut ChannelState, consumer_id: u64) {
        let back = st.in_flight.take_consumer(consumer_id);
        let n = back.len();
        for f in back.into_iter().rev() {
            match st.ordered.as_mut() {
                Some(o) => o.put_back(f.msg),
                None => st.ready.push_front(f.msg),
            }
        }
        st.wake_waiting(n);
    }

    /// Shutdown: every consumer is told to go and its in-flight messages are taken back now,
    /// so the queue's shutdown flush writes them with the rest.
    pub(crate) fn kick_consumers(&self) {
        let mut st = self.state.lock();
        let members = std::mem::take(&mut st.consumers);
        for m in &members {
            Self::take_back(&mut st, m.consumer.id());
            m.consumer.reset_in_flight();
            m.consumer.kick();
        }
    }

    /// End-to-end latency windows (None when percentiles are not configured).
    pub fn e2e(&self) -> Option<&E2eStream> {
        self.e2e.as_ref()
    }

    /// How many consumers it has.
    pub fn consumer_count(&self) -> usize {
        self.state.lock().consumers.len()
    }

    /// Pause (deliver nothing, keep queueing) or unpause.
    pub fn set_paused(&self, paused: bool) {
        let mut st = self.state.lock();
        st.paused = paused;
        self.replicate(&st, crate::ReplicaOp::Paused(paused));
        if !paused {
            Self::wake_all(&mut st);
        }
    }

    /// Every consumer looks for messages again (a replicated topic whose channel operations
    /// were at their cap can deliver again).
    pub fn wake_consumers(&self) {
        Self::wake_all(&mut self.state.lock());
    }

    fn wake_all(st: &mut ChannelState) {
        for c in st.consumers.iter_mut() {
            c.waiting = false;
            c.consumer.wake();
        }
    }

    /// True while paused.
    pub fn is_paused(&self) -> bool {
        self.state.lock().paused
    }

    /// Drop every ready, in-flight and deferred message; consumers' in-flight counts reset.
    pub fn empty(&self) {
        let mut st = self.state.lock();
        st.ready.empty();
        st.in_flight.drain();
        st.deferred.drain();
        if let Some(o) = st.ordered.as_mut() {
            o.clear();
        }
        for c in st.consumers.iter_mut() {
            c.consumer.reset_in_flight();
            c.waiting = false;
            c.consumer.wake();
        }
    }

    /// Mark deleted, drop all messages and close every consumer.
    pub(crate) fn delete(&self) {
        self.deleted.store(true, Relaxed);
        let mut st = self.state.lock();
        let disk = st.ready.delete();
        st.in_flight.drain();
        st.deferred.drain();
        if let Some(o) = st.ordered.as_mut() {
            o.clear();
        }
        for c in st.consumers.drain(..) {
            c.consumer.kick();
        }
        drop(st);
        // Outside the lock (the writer may need it to finish its pass): the files are gone
        // before a channel of the same name can be created again.
        if let Some(backend) = disk {
            backend.delete_now();
        }
    }

    /// Every message the channel holds in memory: ready, in flight and deferred.
    pub fn messages_in_memory(&self) -> usize {
        let st = self.state.lock();
        st.ready.len()
            + st.in_flight.len()
            + st.deferred.len()
            + st.ordered.as_ref().map_or(0, |o| o.held())
    }

    /// Messages waiting to be delivered (not in flight, not deferred), memory and disk.
    pub fn depth(&self) -> usize {
        usize::try_from(self.state.lock().depth_and_deferred().0).unwrap_or(0)
    }

    /// Expire in-flight messages, release due deferred ones and sweep the head of the queue
    /// for expired messages; returns the next deadline.
    fn process_timers(
        &self,
        st: &mut ChannelState,
        now: Instant,
        dead: &mut Vec<DeadLetter>,
    ) -> Option<Instant> {
        let expired = st.in_flight.pop_expired(now);
        let mut moved = expired.len();
        self.timeout_count.fetch_add(moved as u64, Relaxed);
        for f in expired {
            if let Some(owner) = st.owner(f.consumer_id) {
                owner.lost_one();
                owner.wake();
            }
            self.put_back(st, f.msg, Duration::ZERO, dead);
        }
        let due = st.deferred.pop_due(now);
        moved += due.len();
        for m in due {
            self.release_deferred(st, m);
        }
        if st.sweep_at.is_some_and(|at| at <= now) {
            self.sweep(st, now, dead);
        }
        st.wake_waiting(moved);
        [
            st.in_flight.next_deadline(),
            st.deferred.next_due(),
            st.sweep_at,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// A snapshot of its counters; with `include_consumers`, each consumer's too.
    pub fn stats(&self, include_consumers: bool) -> ChannelStats {
        let st = self.state.lock();
        let dead = self.dead_letter_stats(&st);
        let (depth, deferred_count) = st.depth_and_deferred();
        ChannelStats {
            channel_name: self.name.to_string(),
            counts: ChannelCounts {
                depth,
                backend_depth: st.ready.backend_depth(),
                in_flight_count: st.in_flight.len(),
                deferred_count,
                message_count: self.message_count.load(Relaxed),
                requeue_count: self.requeue_count.load(Relaxed),
                timeout_count: self.timeout_count.load(Relaxed),
            },
            consumer_count: st.consumers.len(),
            consumers: include_consumers.then(|| {
                st.consumers
                    .iter()
                    .map(|c| ConsumerStats::of(&c.consumer))
                    .collect()
            }),
            paused: st.paused,
            e2e_processing_latency: self.e2e.as_ref().map(E2eStream::result).unwrap_or_default(),
            disk_queue: st.ready.disk_stats(),
            settings: (!st.own.is_empty()).then(|| st.own.clone()),
            dead_letters: dead,
        }
    }

    /// Dead-letter counters, when there is anything to show (settings or counts).
    fn dead_letter_stats(&self, st: &ChannelState) -> Option<DeadLetterStats> {
        let counts: [u64; 3] = std::array::from_fn(|i| self.dead_letter_counts[i].load(Relaxed));
        let dropped = self.expired_dropped.load(Relaxed);
        let any = counts.iter().any(|n| *n > 0) || dropped > 0;
        (any || st.eff.checks_messages()).then(|| DeadLetterStats {
            topic: st.eff.dead_letter_topic.clone(),
            delivery_limit: counts[DeadLetterReason::DeliveryLimit.index()],
            rejected: counts[DeadLetterReason::Rejected.index()],
            expired: counts[DeadLetterReason::Expired.index()],
            expired_dropped: dropped,
        })
    }
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("topic", &self.topic_name)
            .field("name", &self.name)
            .finish()
    }
}

fn xorshift(s: &mut u64) -> u64 {
    let mut x = *s | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    x
}

mod disk;
mod rules;
mod settle;
pub(crate) use disk::{instant_of, unix_due};
pub use settle::Settle;

#[cfg(test)]
mod tests;
