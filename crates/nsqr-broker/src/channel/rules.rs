//! How a channel applies its settings (`queue_settings.rs`) to the messages that pass through it:
//! the delivery limit, time to live and order checked as a message is taken for delivery,
//! requeued or times out; dead letters collected under the lock and handed to the broker's
//! dead-letter task once it is released (`dead_letter.rs`); and a sweep of the queue's head
//! that takes expired messages off a queue nobody consumes.
//!
//! Expiry is checked without scanning queues: on the way out (delivery), and by the sweep,
//! which looks only at the head of the queue once a second and stops at the first message
//! that has not expired. Messages leave a queue in the order they entered it, and with one
//! time to live per channel they expire in that order too, so the sweep finds every expired
//! message of a channel TTL as soon as it expires, at the cost of the expired ones only. A
//! message published with a longer TTL than the ones behind it holds them until it expires
//! (or is delivered); they are never delivered once expired either way.

use super::*;
use crate::attrs::DeadLetterInfo;
use crate::ReplicaOp;

/// How often the head of a queue that may hold expiring messages is checked.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// At most this many messages leave per sweep (the lock is held meanwhile); more go on at
/// once, in the next turn of the timer.
const SWEEP_MAX: usize = 10_000;
/// An ordered channel looks at least this many messages ahead for keys that are not busy.
const MIN_LOOKAHEAD: usize = 1024;
/// ... and at most this many (else `mem_queue_size`): messages held per key are out of the
/// ready queue's compact runs, and a lookahead of a whole large memory queue (a million
/// messages) spreads them over memory the caches do not hold, for no gain once every key has
/// a message or two waiting.
pub(super) const MAX_LOOKAHEAD: usize = 16_384;

impl Channel {
    /// The settings set on this channel.
    pub fn settings(&self) -> QueueSettings {
        self.state.lock().own.clone()
    }

    /// The settings it runs with (its own, its topic's, the broker's).
    pub fn effective_settings(&self) -> EffectiveSettings {
        self.state.lock().eff.clone()
    }

    /// Replace the channel's own settings (`topic_settings`: its topic's, which fill the gaps).
    pub(crate) fn set_settings(&self, own: QueueSettings, topic_settings: &QueueSettings) {
        let mut st = self.state.lock();
        st.own = own;
        self.resolve(&mut st, topic_settings);
    }

    /// Its topic's settings changed.
    pub(crate) fn inherit(&self, topic_settings: &QueueSettings) {
        let mut st = self.state.lock();
        self.resolve(&mut st, topic_settings);
    }

    fn resolve(&self, st: &mut ChannelState, topic_settings: &QueueSettings) {
        st.eff = EffectiveSettings::resolve(&self.topic_name, &st.own, topic_settings, self.cfg());
        st.replica = replica_of(topic_settings, self.cfg());
        self.apply_rules(st);
        // Order turned off, a limit lifted: what waited may be deliverable now.
        for c in st.consumers.iter_mut() {
            c.waiting = false;
            c.consumer.wake();
        }
    }

    /// Bring the state in line with `st.eff`.
    pub(super) fn apply_rules(&self, st: &mut ChannelState) {
        st.checks = st.eff.checks_messages() || st.attrs_seen;
        st.ready.set_cap(st.eff.mem_queue_size);
        let lookahead = st.eff.mem_queue_size.clamp(MIN_LOOKAHEAD, MAX_LOOKAHEAD);
        match (st.eff.ordered, st.ordered.as_mut()) {
            (true, Some(o)) => o.set_lookahead(lookahead),
            (true, None) => st.ordered = Some(Box::new(Ordered::new(lookahead))),
            (false, Some(o)) => {
                // Back to the front of the queue, oldest (lowest id) first.
                let mut held = o.drain();
                held.sort_by_key(|m| m.id.0);
                for m in held.into_iter().rev() {
                    st.ready.push_front(m);
                }
                st.ordered = None;
            }
            (false, None) => {}
        }
        self.ensure_sweep(st);
    }

    /// Messages arrived; `attrs`: some carry attributes.
    pub(super) fn arrived(&self, st: &mut ChannelState, attrs: bool) {
        if attrs && !st.attrs_seen {
            st.attrs_seen = true;
            st.checks = true;
        }
        self.ensure_sweep(st);
    }

    /// Schedule a sweep of the queue's head if messages may expire and none is scheduled.
    fn ensure_sweep(&self, st: &mut ChannelState) {
        let may_expire = !st.eff.message_ttl.is_zero() || st.attrs_seen;
        if may_expire && st.sweep_at.is_none() && !st.ready.is_empty() {
            let at = Instant::now() + SWEEP_EVERY;
            st.sweep_at = Some(at);
            self.schedule(st, at);
        }
    }

    /// The next message to deliver when messages must be checked: expired ones and those that
    /// had their last delivery leave for the dead letters; on an ordered channel, only the
    /// head of a key that is not busy.
    pub(super) fn pop_checked(
        &self,
        st: &mut ChannelState,
        now_ns: i64,
        dead: &mut Vec<DeadLetter>,
    ) -> Option<Message> {
        loop {
            // An ordered channel noted the expiry when it took the message from the queue.
            let (m, expires_at) = match st.ordered.as_deref_mut() {
                Some(o) => o.next(&mut st.ready).map(|h| (h.msg, h.expires_at))?,
                None => {
                    let m = st.ready.pop_front()?;
                    let expires_at = m.attributes().map_or(0, |a| a.expires_at);
                    (m, expires_at)
                }
            };
            match verdict(&st.eff, &m, expires_at, now_ns) {
                None => return Some(m),
                Some(reason) => self.leave(st, m, reason, true, dead),
            }
        }
    }

    /// A message the channel is done with (finished, or skipped by sampling): its record may
    /// be acknowledged (strict mode), and its key's next message may go (ordered).
    #[inline(always)]
    pub(super) fn done_with(&self, st: &mut ChannelState, m: &Message) {
        st.ready.finished(m.id.0);
        if st.replica.is_some() {
            self.replicate(st, ReplicaOp::Finished(m.id));
        }
        if let Some(o) = st.ordered.as_mut() {
            if o.settled(m) {
                st.wake_waiting(1);
            }
        }
    }

    /// A message leaves the channel for the dead letters (or, expired with
    /// `"expired": "drop"`, for good). `keyed`: its key was busy with it (ordered channels).
    pub(super) fn leave(
        &self,
        st: &mut ChannelState,
        m: Message,
        reason: DeadLetterReason,
        keyed: bool,
        dead: &mut Vec<DeadLetter>,
    ) {
        if keyed {
            if let Some(o) = st.ordered.as_mut() {
                if o.settled(&m) {
                    st.wake_waiting(1);
                }
            }
        }
        if reason == DeadLetterReason::Expired && st.eff.expired == ExpiredAction::Drop {
            self.expired_dropped.fetch_add(1, Relaxed);
            st.ready.finished(m.id.0);
            self.replicate(st, ReplicaOp::Finished(m.id));
            return;
        }
        self.dead_letter_counts[reason.index()].fetch_add(1, Relaxed);
        let info = DeadLetterInfo {
            reason,
            topic: Arc::clone(&self.topic_name),
            channel: Arc::clone(&self.name),
            id: m.id,
            attempts: m.attempts,
            timestamp: m.timestamp(),
            at: crate::now_unix_nanos(),
        };
        dead.push(DeadLetter {
            target: st.eff.dead_letter_topic.clone(),
            msg: m,
            info,
            source: self.me.clone(),
        });
    }

    /// A message in flight comes back (REQ, or its timeout passed): to the dead letters if it
    /// had its last delivery, else to the queue (the head of its key, on an ordered channel),
    /// at once or after `delay`. The caller wakes consumers.
    pub(super) fn put_back(
        &self,
        st: &mut ChannelState,
        m: Message,
        delay: Duration,
        dead: &mut Vec<DeadLetter>,
    ) {
        if st.eff.max_attempts > 0 && m.attempts >= st.eff.max_attempts {
            self.leave(st, m, DeadLetterReason::DeliveryLimit, true, dead);
            return;
        }
        if delay.is_zero() {
            match st.ordered.as_mut() {
                Some(o) => o.put_back(m),
                None => st.ready.push_back(m),
            }
            self.ensure_sweep(st);
        } else {
            if let Some(o) = st.ordered.as_mut() {
                o.hold(&m);
            }
            let due = Instant::now() + delay;
            if st.replica.is_some() {
                let due_ms = crate::replication::unix_ms(due);
                self.replicate(st, ReplicaOp::Requeued(m.id, due_ms));
            }
            st.deferred.push(due, m.detached());
            self.schedule(st, due);
        }
    }

    /// A deferred message is due: a requeued message of an ordered channel is its key's next
    /// one again; anything else joins the queue.
    pub(super) fn release_deferred(&self, st: &mut ChannelState, m: Message) {
        match st.ordered.as_mut() {
            Some(o) if m.attempts > 0 => o.put_back(m),
            _ => st.ready.push_back(m),
        }
    }

    /// Take expired messages off the head of the queue (see the module documentation).
    pub(super) fn sweep(&self, st: &mut ChannelState, now: Instant, dead: &mut Vec<DeadLetter>) {
        let now_ns = crate::now_unix_nanos();
        let mut left = SWEEP_MAX;
        while left > 0 {
            let Some(m) = st.ready.pop_front() else {
                break;
            };
            if expired(&st.eff, &m, now_ns) {
                self.leave(st, m, DeadLetterReason::Expired, false, dead);
                left -= 1;
            } else {
                st.ready.push_front(m);
                break;
            }
        }
        st.sweep_at = None;
        if left == 0 {
            st.sweep_at = Some(now + Duration::from_millis(1));
        } else {
            self.ensure_sweep(st);
        }
    }

    /// Report a change to the replication hook, if the topic is replicated.
    pub(super) fn replicate(&self, st: &ChannelState, op: ReplicaOp) {
        if let Some(r) = &st.replica {
            r.0.channel_op(&self.topic_name, Some(&self.name), op);
        }
    }

    /// False while the replicated topic's channel operations are at their cap.
    pub(super) fn may_deliver(&self, st: &ChannelState) -> bool {
        st.replica
            .as_ref()
            .is_none_or(|r| r.0.may_deliver(&self.topic_name))
    }

    /// Hand collected dead letters to the broker's task (call with no lock held).
    pub(super) fn send_dead(&self, dead: Vec<DeadLetter>) {
        self.shared.dead_letters.send(dead);
    }

    /// The dead-letter topic has message `id` of this channel: a strict channel may
    /// acknowledge its record now, and a replicated one report it gone (only now, so a
    /// failover before the dead-letter topic has it delivers it again rather than losing it).
    pub(crate) fn dead_letter_delivered(&self, id: u64) {
        let mut st = self.state.lock();
        st.ready.finished(id);
        self.replicate(&st, ReplicaOp::DeadLettered(nsq_wire::MessageId(id)));
    }

    /// Messages a graceful shutdown of an ordered channel kept for the head of the queue
    /// (`head_store.rs`), placed before anything read from disk: deferred ones (with their due
    /// time) wait again, holding their key.
    pub(super) fn place_head(&self, st: &mut ChannelState, head: Vec<(Message, Option<i64>)>) {
        if head.is_empty() {
            return;
        }
        let attrs = head.iter().any(|(m, _)| m.attributes().is_some());
        let (now_ns, now) = (crate::now_unix_nanos(), Instant::now());
        let mut ready = Vec::new();
        for (m, due) in head {
            match due.and_then(|d| instant_of(d, now_ns, now)) {
                Some(at) => {
                    if let Some(o) = st.ordered.as_mut().filter(|_| m.attempts > 0) {
                        o.hold(&m);
                    }
                    st.deferred.push(at, m);
                    self.schedule(st, at);
                }
                None => ready.push(m),
            }
        }
        for m in ready.into_iter().rev() {
            st.ready.push_front(m);
        }
        self.arrived(st, attrs);
    }
}

use crate::queue_settings::ExpiredAction;

/// Why a message about to be delivered must leave instead, if it must.
/// The replication hook a channel of a topic with these settings reports to, if replicated.
pub(super) fn replica_of(
    topic_settings: &QueueSettings,
    cfg: &BrokerConfig,
) -> Option<crate::Replication> {
    if topic_settings.replicas.unwrap_or(1) > 1 {
        cfg.replication.clone()
    } else {
        None
    }
}

fn verdict(
    eff: &EffectiveSettings,
    m: &Message,
    expires_at: i64,
    now_ns: i64,
) -> Option<DeadLetterReason> {
    if expired_at(eff, m, expires_at, now_ns) {
        return Some(DeadLetterReason::Expired);
    }
    if eff.max_attempts > 0 && m.attempts >= eff.max_attempts {
        return Some(DeadLetterReason::DeliveryLimit);
    }
    None
}

/// Past its own expiry time, or older than the channel's time to live.
fn expired(eff: &EffectiveSettings, m: &Message, now_ns: i64) -> bool {
    expired_at(eff, m, m.attributes().map_or(0, |a| a.expires_at), now_ns)
}

/// [`expired`] with the message's own expiry time given (`expires_at`, 0: none).
fn expired_at(eff: &EffectiveSettings, m: &Message, expires_at: i64, now_ns: i64) -> bool {
    if expires_at != 0 && now_ns >= expires_at {
        return true;
    }
    // A zero time to live is none: messages live until delivered.
    let ttl = &eff.message_ttl;
    !ttl.is_zero() && {
        let ttl = i64::try_from(ttl.as_nanos()).unwrap_or(i64::MAX);
        now_ns >= m.timestamp().saturating_add(ttl)
    }
}
