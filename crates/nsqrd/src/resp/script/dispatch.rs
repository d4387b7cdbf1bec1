//! How `redis.call` reaches the client of the script running now.
//!
//! `redis.call` and `redis.pcall` are made once per Lua state (`vm.rs`); each run points a
//! [`Dispatch`] at its client for as long as it lasts, and the functions find the client
//! there. A scoped Lua function per run (mlua's `Lua::scope`) does the same without a raw
//! pointer, but making two of them per run cost a third of a short script's CPU
//! (docs/decisions/0021-script-dispatch-without-scopes.md).

use std::cell::Cell;
use std::marker::PhantomData;

/// The value the running script's callbacks work with, while it runs.
#[derive(Debug)]
pub struct Dispatch {
    current: Cell<*const ()>,
}

impl Default for Dispatch {
    fn default() -> Dispatch {
        Dispatch {
            current: Cell::new(std::ptr::null()),
        }
    }
}

/// Keeps a [`Dispatch`] pointed at a value; dropping it (at the end of the run, or when a
/// panic unwinds through it) points the dispatch at nothing again.
#[must_use = "the dispatch points at the value only while this lives"]
pub struct Active<'d, T> {
    dispatch: &'d Dispatch,
    _value: PhantomData<&'d T>,
}

impl Dispatch {
    /// Points the dispatch at `value` until the returned guard drops: `value` is borrowed
    /// until then, so it can neither move nor drop while the dispatch points at it.
    pub fn activate<'d, T>(&'d self, value: &'d T) -> Active<'d, T> {
        self.current.set(value as *const T as *const ());
        Active {
            dispatch: self,
            _value: PhantomData,
        }
    }

    /// Runs `f` with the value the dispatch points at; `None` when it points at none.
    ///
    /// # Safety
    ///
    /// Every value this dispatch is ever pointed at must be a `T` (the same type, whatever
    /// its lifetimes).
    #[allow(unsafe_code)]
    pub unsafe fn with<T, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        let p = self.current.get();
        if p.is_null() {
            return None;
        }
        // SAFETY: a non-null pointer was set by `activate` from a `&T` (the caller's
        // contract) whose borrow the `Active` guard still holds, since the guard resets the
        // pointer to null when it drops; so the value is alive and not moved. `f` gets a
        // shared reference that cannot outlive this call (it is higher-ranked over the
        // closure's argument), and `Dispatch` is not `Sync` (a `Cell`), so no other thread
        // sees the pointer.
        Some(f(unsafe { &*(p as *const T) }))
    }
}

impl<T> Drop for Active<'_, T> {
    fn drop(&mut self) {
        self.dispatch.current.set(std::ptr::null());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(unsafe_code)]
    fn points_at_the_value_only_while_active() {
        let d = Dispatch::default();
        // SAFETY (all `with` calls below): this dispatch only ever points at `String`s.
        assert_eq!(unsafe { d.with(|s: &String| s.len()) }, None);
        let text = String::from("abc");
        {
            let _active = d.activate(&text);
            assert_eq!(
                unsafe { d.with(|s: &String| s.clone()) },
                Some("abc".into())
            );
        }
        assert_eq!(unsafe { d.with(|s: &String| s.len()) }, None);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _active = d.activate(&text);
            panic!("unwinds through the guard");
        }));
        assert!(caught.is_err());
        assert_eq!(unsafe { d.with(|s: &String| s.len()) }, None);
    }
}
