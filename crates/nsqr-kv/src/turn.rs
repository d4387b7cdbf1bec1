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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

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
}
