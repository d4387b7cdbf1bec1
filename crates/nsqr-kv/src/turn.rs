//! Whose turn it is to run commands: any number of clients at once, or one transaction alone.
//!
//! Commands of different clients run in parallel on different shards; a transaction (`EXEC`)
//! must see no other client's command between its own. Every client takes a *shared* turn
//! for each batch of requests it runs (one read lock per batch, not per command), the expiry
//! thread one for each pass, and a transaction takes the *exclusive* turn for its whole run.
//! The lock is writer-fair: once a transaction waits, new batches wait behind it, so it waits
//! at most for the batches already running.
//!
//! A turn is an owned guard (no lifetime), so a connection can hold it while it parses and
//! runs a batch and give it up inside `EXEC`. It must never be held across an `.await`.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::lock_api::{ArcRwLockReadGuard, ArcRwLockWriteGuard};
use parking_lot::{RawRwLock, RwLock};

/// The lock behind every turn (one per keyspace).
#[derive(Debug, Default)]
pub(crate) struct Turns(Arc<RwLock<()>>);

/// A shared turn: this client's commands run alongside other clients' (not a transaction's).
#[must_use = "a turn protects nothing once dropped"]
pub struct SharedTurn {
    _guard: ArcRwLockReadGuard<RawRwLock, ()>,
}

/// The exclusive turn: no other command runs until it is dropped.
#[must_use = "a turn protects nothing once dropped"]
pub struct ExclusiveTurn {
    _guard: ArcRwLockWriteGuard<RawRwLock, ()>,
}

impl std::fmt::Debug for SharedTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedTurn")
    }
}

impl std::fmt::Debug for ExclusiveTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExclusiveTurn")
    }
}

impl Turns {
    pub fn shared(&self) -> SharedTurn {
        SharedTurn {
            _guard: self.0.read_arc(),
        }
    }

    pub fn exclusive(&self) -> ExclusiveTurn {
        ExclusiveTurn {
            _guard: self.0.write_arc(),
        }
    }

    /// A shared turn if one comes within `wait` (a caller that must not block for long: a
    /// script may hold the exclusive turn for seconds).
    pub fn try_shared_for(&self, wait: Duration) -> Option<SharedTurn> {
        let guard = self.0.try_read_arc_for(wait)?;
        Some(SharedTurn { _guard: guard })
    }

    /// The exclusive turn if it comes within `wait`.
    pub fn try_exclusive_for(&self, wait: Duration) -> Option<ExclusiveTurn> {
        let guard = self.0.try_write_arc_for(wait)?;
        Some(ExclusiveTurn { _guard: guard })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn shared_turns_overlap_and_the_exclusive_one_waits_for_them() {
        let turns = Arc::new(Turns::default());
        let a = turns.shared();
        let b = turns.shared();
        let done = Arc::new(AtomicBool::new(false));
        let t = {
            let (turns, done) = (Arc::clone(&turns), Arc::clone(&done));
            std::thread::spawn(move || {
                let _alone = turns.exclusive();
                done.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !done.load(Ordering::SeqCst),
            "exclusive while shared turns are held"
        );
        drop(a);
        drop(b);
        t.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
    }

    #[test]
    fn tries_give_up_while_the_other_kind_is_held() {
        let turns = Turns::default();
        let alone = turns.exclusive();
        assert!(turns.try_shared_for(Duration::from_millis(5)).is_none());
        assert!(turns.try_exclusive_for(Duration::from_millis(5)).is_none());
        drop(alone);
        let shared = turns.try_shared_for(Duration::from_millis(5));
        assert!(shared.is_some());
        assert!(turns.try_exclusive_for(Duration::from_millis(5)).is_none());
        drop(shared);
        assert!(turns.try_exclusive_for(Duration::from_millis(5)).is_some());
    }
}
