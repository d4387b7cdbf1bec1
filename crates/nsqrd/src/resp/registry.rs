//! Every connected client of the keyspace, for `CLIENT LIST / KILL / PAUSE / UNPAUSE`.
//!
//! A connection registers a [`Client`] when it starts and removes it when it ends. What
//! `CLIENT LIST` shows of a client lives here, not in the connection's task, so any client can
//! list any other: its name and library (changed by the rare commands that set them), its
//! protocol and transaction size, and when it last ran commands (stamped once per batch of
//! requests, not per command). A kill sets a flag and wakes the connection's task, which
//! closes the connection. A pause holds the commands it covers until its deadline or an
//! UNPAUSE: the connection stops before such a command and waits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{watch, Notify};

/// What `CLIENT SETNAME` / `SETINFO` / `HELLO ... SETNAME` set.
#[derive(Debug, Default, Clone)]
pub struct Names {
    pub name: Vec<u8>,
    pub lib_name: Vec<u8>,
    pub lib_ver: Vec<u8>,
}

/// One connected client, as every other client may see it.
#[derive(Debug)]
pub struct Client {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub created: Instant,
    pub names: Mutex<Names>,
    /// RESP version (2 or 3).
    pub resp: AtomicU8,
    /// Commands queued since MULTI, or -1.
    pub multi: AtomicI64,
    /// Milliseconds after `created` of the last batch of commands.
    last_ms: AtomicU64,
    /// The last command's name, for `cmd=`.
    last_cmd: Mutex<&'static str>,
    /// The ACL user it runs as.
    pub user: Mutex<String>,
    /// CLIENT NO-EVICT (there is no client eviction here: shown, never acted on).
    pub no_evict: AtomicBool,
    /// The selected database, for `db=`.
    db: AtomicU8,
    killed: AtomicBool,
    kill: Notify,
}

impl Client {
    pub fn set_db(&self, db: u8) {
        self.db.store(db, Ordering::Relaxed);
    }

    pub fn db(&self) -> u8 {
        self.db.load(Ordering::Relaxed)
    }

    /// Stamps a batch of commands: now, and the last command run.
    pub fn ran(&self, last: &'static str) {
        self.last_ms
            .store(self.created.elapsed().as_millis() as u64, Ordering::Relaxed);
        *self.last_cmd.lock() = last;
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Waits until the client is killed.
    pub async fn killed(&self) {
        loop {
            let notified = self.kill.notified();
            if self.is_killed() {
                return;
            }
            notified.await;
        }
    }

    fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.kill.notify_waiters();
    }

    /// Seconds since the last batch of commands.
    pub fn idle_seconds(&self) -> u64 {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.created.elapsed().saturating_sub(last).as_secs()
    }

    pub fn last_command(&self) -> &'static str {
        *self.last_cmd.lock()
    }
}

/// Which commands a pause holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseKind {
    /// Every command.
    All,
    /// Commands that write (reads go on).
    Write,
}

/// A pause in force: until when (tokio's clock, so tests can run it), and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    pub until: tokio::time::Instant,
    pub kind: PauseKind,
}

/// The registry.
#[derive(Debug)]
pub struct Clients {
    by_id: Mutex<HashMap<u64, Arc<Client>>>,
    /// Set while a pause may be in force: a relaxed load on every command otherwise.
    paused: AtomicBool,
    pause: watch::Sender<Option<Pause>>,
}

impl Default for Clients {
    fn default() -> Clients {
        Clients {
            by_id: Mutex::new(HashMap::new()),
            paused: AtomicBool::new(false),
            pause: watch::channel(None).0,
        }
    }
}

impl Clients {
    pub fn add(&self, id: u64, addr: String, laddr: String) -> Arc<Client> {
        let c = Arc::new(Client {
            id,
            addr,
            laddr,
            created: Instant::now(),
            names: Mutex::new(Names::default()),
            resp: AtomicU8::new(2),
            multi: AtomicI64::new(-1),
            last_ms: AtomicU64::new(0),
            last_cmd: Mutex::new("NULL"),
            user: Mutex::new("default".to_owned()),
            no_evict: AtomicBool::new(false),
            db: AtomicU8::new(0),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
        });
        self.by_id.lock().insert(id, Arc::clone(&c));
        c
    }

    pub fn remove(&self, id: u64) {
        self.by_id.lock().remove(&id);
    }

    /// Every client, by id.
    pub fn all(&self) -> Vec<Arc<Client>> {
        let mut v: Vec<Arc<Client>> = self.by_id.lock().values().cloned().collect();
        v.sort_by_key(|c| c.id);
        v
    }

    /// Kills the clients `select` picks; how many.
    pub fn kill_where(&self, select: impl Fn(&Client) -> bool) -> usize {
        let victims: Vec<Arc<Client>> = self
            .by_id
            .lock()
            .values()
            .filter(|c| select(c))
            .cloned()
            .collect();
        for c in &victims {
            c.kill();
        }
        victims.len()
    }

    /// CLIENT PAUSE: a longer or broader pause replaces the one in force, as in Redis.
    pub fn pause(&self, p: Pause) {
        self.pause.send_modify(|cur| {
            *cur = Some(match *cur {
                Some(old) if old.until > tokio::time::Instant::now() => Pause {
                    until: old.until.max(p.until),
                    kind: if old.kind == PauseKind::All || p.kind == PauseKind::All {
                        PauseKind::All
                    } else {
                        PauseKind::Write
                    },
                },
                _ => p,
            })
        });
        self.paused.store(true, Ordering::Release);
    }

    pub fn unpause(&self) {
        self.paused.store(false, Ordering::Release);
        self.pause.send_replace(None);
    }

    /// Whether a pause may be in force: one relaxed load, before anything else is looked at.
    pub fn may_be_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// Whether a command (writing or not) is held by a pause now.
    pub fn holds(&self, writes: bool) -> bool {
        if !self.paused.load(Ordering::Acquire) {
            return false;
        }
        match *self.pause.borrow() {
            Some(p) if p.until > tokio::time::Instant::now() => p.kind == PauseKind::All || writes,
            _ => false,
        }
    }

    /// Waits until the pause in force ends (its deadline, or an UNPAUSE).
    pub async fn wait_unpaused(&self) {
        let mut rx = self.pause.subscribe();
        loop {
            let until = match *rx.borrow_and_update() {
                Some(p) if p.until > tokio::time::Instant::now() => p.until,
                _ => return,
            };
            tokio::select! {
                _ = tokio::time::sleep_until(until) => {}
                r = rx.changed() => if r.is_err() { return },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_picks_and_wakes() {
        let clients = Clients::default();
        let a = clients.add(1, "127.0.0.1:1".into(), "127.0.0.1:9".into());
        let b = clients.add(2, "127.0.0.1:2".into(), "127.0.0.1:9".into());
        assert_eq!(
            clients.all().iter().map(|c| c.id).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(clients.kill_where(|c| c.addr == "127.0.0.1:2"), 1);
        assert!(!a.is_killed() && b.is_killed());
        clients.remove(2);
        assert_eq!(clients.all().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn pauses_hold_what_they_cover_until_their_end() {
        let clients = Clients::default();
        assert!(!clients.holds(true));
        clients.pause(Pause {
            until: tokio::time::Instant::now() + Duration::from_secs(10),
            kind: PauseKind::Write,
        });
        assert!(clients.holds(true) && !clients.holds(false));
        clients.pause(Pause {
            until: tokio::time::Instant::now() + Duration::from_secs(1),
            kind: PauseKind::All,
        });
        assert!(
            clients.holds(false),
            "a broader pause widens the one in force"
        );
        let waited = tokio::time::timeout(Duration::from_secs(60), clients.wait_unpaused()).await;
        assert!(waited.is_ok());
        assert!(!clients.holds(true));
        clients.pause(Pause {
            until: tokio::time::Instant::now() + Duration::from_secs(100),
            kind: PauseKind::All,
        });
        clients.unpause();
        assert!(!clients.holds(true));
    }
}
