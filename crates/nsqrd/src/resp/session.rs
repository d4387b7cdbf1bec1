//! One client's state, and what a command handler is given: the shared server, the client,
//! and the reply buffer.

use std::sync::Arc;
use std::time::Instant;

use nsqr_kv::{ExclusiveTurn, Pending, SharedTurn, Subscriber, Watch};
use resp_wire::{Args, Protocol, Reply};

use super::acl::User;
use super::blocking::Blocking;
use super::registry::Client;
use super::transaction::Transaction;
use super::Shared;

/// Whether replies are sent (`CLIENT REPLY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replies {
    #[default]
    On,
    Off,
    /// Not for the next command.
    SkipNext,
}

/// A client of the keyspace server: what only its own connection needs. What other clients
/// may see of it (`CLIENT LIST`) is its [`Client`] in the registry.
pub struct Session {
    pub client: Arc<Client>,
    pub authenticated: bool,
    /// The ACL user the connection runs as (`default` until AUTH).
    pub user: Arc<User>,
    /// The users' generation `user` was looked up at (see `acl/check.rs`).
    pub acl_generation: u64,
    /// The client's outbox once it subscribed to something (see `conn.rs`).
    pub sub: Option<Arc<Subscriber>>,
    /// Changes to wait for (strict mode) before the replies of this batch go out.
    pub pending: Pending,
    /// Close once the replies are written (QUIT, or a CLIENT KILL of itself).
    pub quit: bool,
    /// The last command's name (`CLIENT INFO`).
    pub last_command: &'static str,
    /// Commands queued since MULTI (`transaction.rs`).
    pub tx: Option<Transaction>,
    /// Keys WATCHed for the next EXEC.
    pub watch: Watch,
    pub replies: Replies,
    /// Blocked on lists (`blocking.rs`).
    pub blocked: Option<Blocking>,
    /// The command just run blocked: keep its request, wait, run it again (`conn.rs`).
    pub block_now: bool,
    /// Ran MONITOR: its outbox stays while it has no subscription (`monitor.rs`).
    pub monitoring: bool,
    /// CLIENT TRACKING ON (`tracking.rs`).
    pub tracker: Option<Arc<nsqr_kv::tracking::Tracker>>,
    /// The selected database (`databases.rs`).
    pub db: u8,
    /// When the command running now started: the end of the one before it in the batch, or
    /// when the batch got its turn (`slowlog.rs`).
    pub started: Instant,
}

impl Session {
    pub fn new(client: Arc<Client>, authenticated: bool, user: Arc<User>) -> Session {
        let id = client.id;
        Session {
            client,
            authenticated,
            user,
            acl_generation: 0,
            sub: None,
            pending: Pending::of_client(id),
            quit: false,
            last_command: "NULL",
            tx: None,
            watch: Watch::default(),
            replies: Replies::default(),
            blocked: None,
            block_now: false,
            monitoring: false,
            tracker: None,
            db: 0,
            started: Instant::now(),
        }
    }

    pub fn id(&self) -> u64 {
        self.client.id
    }

    /// Whether its outbox stays while it has no subscription (a monitor, a tracking client).
    pub fn keeps_outbox(&self) -> bool {
        self.monitoring || self.tracker.is_some()
    }

    /// Logs the connection in as `user`.
    pub fn log_in(&mut self, user: Arc<User>) {
        *self.client.user.lock() = user.name.clone();
        self.user = user;
        self.authenticated = true;
    }

    /// Back to the `default` user, logged in only if it needs no password (RESET).
    pub fn log_out(&mut self, default: Arc<User>) {
        self.authenticated = default.open();
        *self.client.user.lock() = default.name.clone();
        self.user = default;
    }

    /// The client's subscriptions of every kind (channels, patterns, shard channels).
    pub fn subscriptions(&self, shared: &Shared) -> usize {
        match &self.sub {
            Some(_) => shared.ks.hub().total(self.id()),
            None => 0,
        }
    }
}

/// Which turn of the keyspace (`nsqr_kv::Keyspace::enter`) the running commands hold.
#[derive(Debug)]
pub enum Turn {
    /// A batch's shared turn (EXEC trades it for the exclusive one).
    Shared { _held: SharedTurn },
    /// The exclusive turn, taken by whoever runs this (EXEC, a script).
    Alone,
    /// The exclusive turn an EXEC or a script of this batch took, kept for the batch's next
    /// requests while they are transactions or scripts too ([`Turn::before_request`]):
    /// trading turns for each of them was most of what a short one cost
    /// (docs/decisions/0027-scripts-and-transactions-cpu.md).
    Kept {
        held: ExclusiveTurn,
        /// Requests run since it was taken.
        requests: usize,
    },
    /// Given up mid-batch (a kept exclusive turn released): the next request takes a new one.
    Released,
    /// A script has run past `busy-reply-threshold`: only SCRIPT KILL and SHUTDOWN run.
    Busy,
}

/// The exclusive turn was not to be had: a script is running past its threshold.
#[derive(Debug, Clone, Copy)]
pub struct Busy;

/// Redis's reply to a command refused while a script runs.
pub const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// How long one wait for a turn lasts before checking whether a script has become busy.
const TURN_SLICE: std::time::Duration = std::time::Duration::from_millis(10);

/// Most requests of one batch run under an exclusive turn kept from an earlier EXEC or
/// script: other clients wait for at most this many.
const KEEP_ALONE: usize = 128;

/// Besides scripts and functions (`databases::SCRIPTS`), the commands that run alone or start
/// a transaction: an exclusive turn kept from an earlier one serves them too.
const TRANSACTION_COMMANDS: &[&str] = &["exec", "multi"];

impl Turn {
    /// Before each request of a batch: an exclusive turn kept from an earlier EXEC or script
    /// is kept for a request that is queued in MULTI (`in_multi`) or runs alone too, for at
    /// most [`KEEP_ALONE`] requests; otherwise it is released (the request takes a shared
    /// turn).
    pub fn before_request(&mut self, args: &Args<'_>, in_multi: bool) {
        if let Turn::Kept { requests, .. } = self {
            *requests += 1;
            let name = args.get(0);
            let alone = TRANSACTION_COMMANDS
                .iter()
                .chain(super::databases::SCRIPTS)
                .any(|c| name.eq_ignore_ascii_case(c.as_bytes()));
            if *requests > KEEP_ALONE || !(in_multi || alone) {
                *self = Turn::Released;
            }
        }
    }
}

/// A shared turn, waited for in slices; [`Turn::Busy`] once a script holding the exclusive
/// one has run past its threshold (then the client is answered BUSY rather than kept
/// waiting, and its thread is free to read a SCRIPT KILL).
pub fn take_turn(shared: &Shared) -> Turn {
    loop {
        if let Some(t) = shared.ks.try_enter_for(TURN_SLICE) {
            return Turn::Shared { _held: t };
        }
        if shared.scripts.busy() {
            return Turn::Busy;
        }
    }
}

/// What a command handler works with.
pub struct Ctx<'a> {
    pub shared: &'a Shared,
    pub s: &'a mut Session,
    pub out: &'a mut Reply,
    pub turn: &'a mut Turn,
}

impl Ctx<'_> {
    pub fn proto(&self) -> Protocol {
        self.out.protocol()
    }

    /// RESP2 and subscribed: only pub/sub commands, PING, QUIT and RESET may run.
    pub fn in_resp2_pubsub(&self) -> bool {
        self.proto() == Protocol::Resp2 && self.s.subscriptions(self.shared) != 0
    }

    /// The client's outbox, created on first use; replies written so far move into it first,
    /// so they stay ahead of what publishers add from now on.
    pub fn subscriber(&mut self) -> Arc<Subscriber> {
        let proto = self.proto();
        let (id, limit) = (self.s.id(), self.shared.pubsub_limit);
        let sub = self
            .s
            .sub
            .get_or_insert_with(|| Arc::new(Subscriber::new(id, proto, limit)));
        let sub = Arc::clone(sub);
        self.move_to_outbox();
        sub
    }

    /// Runs `f` with no other command running: the batch's shared turn is traded for the
    /// keyspace's exclusive one (waiting for it while holding the shared one would wait
    /// forever), which the batch keeps for its next requests while they run alone too
    /// ([`Turn::Kept`]). Inside EXEC or a script, which already run alone, `f` just runs.
    /// [`Busy`] if a script holds the keyspace past its threshold.
    pub fn run_alone<R>(&mut self, f: impl FnOnce(&mut Ctx<'_>) -> R) -> Result<R, Busy> {
        let kept = match std::mem::replace(self.turn, Turn::Released) {
            Turn::Alone => {
                *self.turn = Turn::Alone;
                return Ok(f(self));
            }
            Turn::Busy => {
                *self.turn = Turn::Busy;
                return Err(Busy);
            }
            Turn::Kept { held, requests } => Some((held, requests)),
            // The shared turn is given up here.
            Turn::Shared { .. } | Turn::Released => None,
        };
        let (alone, requests) = match kept {
            Some(kept) => kept,
            None => {
                let alone = self.wait_alone()?;
                // What runs alone starts once it has its turn.
                self.s.started = Instant::now();
                (alone, 0)
            }
        };
        *self.turn = Turn::Alone;
        let r = f(self);
        *self.turn = Turn::Kept {
            held: alone,
            requests,
        };
        Ok(r)
    }

    /// The exclusive turn, waited for in slices; [`Busy`] once a script holding it has run
    /// past its threshold.
    fn wait_alone(&self) -> Result<ExclusiveTurn, Busy> {
        loop {
            if let Some(a) = self.shared.ks.try_enter_alone_for(TURN_SLICE) {
                return Ok(a);
            }
            if self.shared.scripts.busy() {
                return Err(Busy);
            }
        }
    }

    /// Moves what is in the reply buffer into the outbox (when the client has one).
    pub fn move_to_outbox(&mut self) {
        if let Some(sub) = &self.s.sub {
            if !self.out.is_empty() {
                let out = &mut *self.out;
                sub.write(|r| r.raw(out.as_bytes()));
                out.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use nsqr_kv::{Keyspace, KvConfig};
    use resp_wire::{Parsed, RequestParser};

    use super::*;

    /// Runs `before_request` for the request `words`.
    fn before(turn: &mut Turn, words: &[&str], in_multi: bool) {
        let mut input = Vec::new();
        resp_wire::encode_request(words, &mut input);
        let mut p = RequestParser::default();
        assert!(matches!(p.parse(&input), Ok(Parsed::Request(_))));
        turn.before_request(&p.args(&input), in_multi);
    }

    fn kept(turn: &Turn) -> bool {
        matches!(turn, Turn::Kept { .. })
    }

    #[test]
    fn a_kept_exclusive_turn_serves_transactions_and_scripts_only() {
        let ks = Keyspace::open(KvConfig::default(), None).unwrap();
        let mut turn = Turn::Kept {
            held: ks.enter_alone(),
            requests: 0,
        };
        before(&mut turn, &["evalsha", "abc", "0"], false);
        before(&mut turn, &["MULTI"], false);
        before(&mut turn, &["INCR", "a"], true);
        before(&mut turn, &["EXEC"], true);
        assert!(kept(&turn));
        assert!(ks.try_enter_for(Duration::from_millis(1)).is_none());
        before(&mut turn, &["GET", "a"], false);
        assert!(matches!(turn, Turn::Released));
        assert!(ks.try_enter_for(Duration::from_millis(1)).is_some());
    }

    #[test]
    fn a_kept_exclusive_turn_serves_at_most_its_bound() {
        let ks = Keyspace::open(KvConfig::default(), None).unwrap();
        let mut turn = Turn::Kept {
            held: ks.enter_alone(),
            requests: 0,
        };
        for _ in 0..KEEP_ALONE {
            before(&mut turn, &["EVAL", "return 1", "0"], false);
        }
        assert!(kept(&turn));
        before(&mut turn, &["EVAL", "return 1", "0"], false);
        assert!(matches!(turn, Turn::Released));
        // Shared and released turns are left as they are.
        let mut shared = Turn::Shared { _held: ks.enter() };
        before(&mut shared, &["GET", "a"], false);
        assert!(matches!(shared, Turn::Shared { .. }));
    }
}
