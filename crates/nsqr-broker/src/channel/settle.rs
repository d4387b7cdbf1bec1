//! Answers by delivery rather than by consumer: an HTTP consumer answers with a receipt, which
//! names a message and the number of the delivery it got (`Channel::deliver_numbered`). An
//! answer to an earlier delivery of a message that was delivered again since (after a timeout
//! or a requeue) is refused with [`BrokerError::Redelivered`], so a late or mistyped receipt
//! can never finish somebody else's delivery. Whoever holds a receipt may answer it; the
//! consumer that got the delivery is credited.

use super::*;

/// What to do with a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Done with it (FIN).
    Fin,
    /// Deliver it again, at once or after `delay` (REQ); `count_attempt: false` gives the
    /// attempt back, so the requeue does not count towards `max_attempts`.
    Req {
        /// How long before it is deliverable again (at most `max_req_timeout`).
        delay: Duration,
        /// Whether this delivery counts as an attempt.
        count_attempt: bool,
    },
    /// A fresh in-flight timeout (TOUCH).
    Touch,
    /// Give up on it: straight to the dead letters (reason `rejected`).
    Term,
}

impl Channel {
    /// Apply `action` to each (message id, delivery number); `on_result` gets each one's
    /// outcome by position: `NotInFlight` when the message is not in flight (finished, timed
    /// out and waiting, unknown), `Redelivered` when it is in flight as a later delivery.
    pub fn settle(
        &self,
        deliveries: &[(u64, u64)],
        action: Settle,
        mut on_result: impl FnMut(usize, Result<(), BrokerError>),
    ) {
        let mut dead = Vec::new();
        let mut owners: Vec<Arc<Consumer>> = Vec::new();
        {
            let mut st = self.state.lock();
            let mut e2e = self.e2e.as_ref().map(E2eStream::recorder);
            for (i, &(id, delivery)) in deliveries.iter().enumerate() {
                let r = if action == Settle::Touch {
                    self.touch_delivery(&mut st, id, delivery)
                } else {
                    st.in_flight.take_delivery(id, delivery).map(|f| {
                        if action == Settle::Fin {
                            if let Some(r) = &mut e2e {
                                r.record(f.msg.timestamp());
                            }
                        }
                        if let Some(o) = self.answer(&mut st, f, action, &mut dead) {
                            if !owners.iter().any(|c| c.id() == o.id()) {
                                owners.push(o);
                            }
                        }
                    })
                };
                on_result(i, r);
            }
        }
        // Room was made: a consumer waiting for it (a stream at its limit) may go on.
        for o in owners {
            o.wake();
        }
        self.send_dead(dead);
    }

    /// Apply a FIN, REQ or TERM to a delivery taken out of flight; returns the consumer that
    /// had it, if it is still a member.
    fn answer(
        &self,
        st: &mut ChannelState,
        f: InFlight,
        action: Settle,
        dead: &mut Vec<DeadLetter>,
    ) -> Option<Arc<Consumer>> {
        let owner = st.owner(f.consumer_id).cloned();
        match action {
            Settle::Fin => {
                if let Some(o) = &owner {
                    o.finished(1);
                }
                self.done_with(st, &f.msg);
            }
            Settle::Req {
                delay,
                count_attempt,
            } => {
                if let Some(o) = &owner {
                    o.requeued();
                }
                self.requeue_count.fetch_add(1, Relaxed);
                let mut msg = f.msg;
                if !count_attempt {
                    msg.attempts = msg.attempts.saturating_sub(1);
                }
                let delay = delay.min(self.cfg().max_req_timeout);
                self.put_back(st, msg, delay, dead);
                if delay.is_zero() {
                    st.wake_waiting(1);
                }
            }
            Settle::Term => {
                if let Some(o) = &owner {
                    o.finished(1);
                }
                self.leave(st, f.msg, DeadLetterReason::Rejected, true, dead);
            }
            Settle::Touch => {}
        }
        owner
    }

    /// TOUCH by receipt: the timeout of the consumer that has it, from now, never past
    /// delivery + `max_msg_timeout`.
    fn touch_delivery(
        &self,
        st: &mut ChannelState,
        id: u64,
        delivery: u64,
    ) -> Result<(), BrokerError> {
        // Not `ok_or`: the error would be built (and dropped) on every call.
        let Some(consumer_id) = st.in_flight.get(id).map(|f| f.consumer_id) else {
            return Err(BrokerError::NotInFlight);
        };
        let timeout = match st.owner(consumer_id) {
            Some(o) => Self::timeout_for(&st.eff, o),
            None => st.eff.msg_timeout,
        };
        let max = self.cfg().max_msg_timeout;
        let now = Instant::now();
        st.in_flight
            .set_deadline_of_delivery(id, delivery, |f| (now + timeout).min(f.delivered_at + max))
    }

    /// The in-flight timeout of `consumer`'s deliveries: its own if it asked for one, else the
    /// channel's setting (which defaults to the broker's).
    pub(super) fn timeout_for(eff: &EffectiveSettings, consumer: &Consumer) -> Duration {
        if consumer.has_own_msg_timeout() {
            consumer.msg_timeout()
        } else {
            eff.msg_timeout
        }
    }
}
