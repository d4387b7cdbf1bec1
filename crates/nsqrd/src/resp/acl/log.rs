//! `ACL LOG`: the most recent refusals (a command, key or channel the user may not use, or a
//! failed AUTH), at most 128 entries as Redis's `acllog-max-len`; the same refusal again
//! within a minute counts on its entry instead of adding one.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Redis's `acllog-max-len` default.
const MAX_ENTRIES: usize = 128;
/// Refusals this close together share an entry.
const GROUPING: Duration = Duration::from_secs(60);
/// How many recent entries a new refusal is compared with.
const SCAN: usize = 10;

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command, key or channel refused (`AUTH` for a failed login).
    pub object: String,
    pub username: String,
    pub at: Instant,
    /// The client's `CLIENT LIST` line when it was refused.
    pub client_info: String,
}

#[derive(Debug, Default)]
pub struct Log {
    entries: Mutex<VecDeque<Entry>>,
}

impl Log {
    /// Records a refusal (newest first).
    pub fn add(&self, e: Entry) {
        let mut entries = self.entries.lock();
        let same = entries.iter().take(SCAN).position(|o| {
            o.reason == e.reason
                && o.context == e.context
                && o.object == e.object
                && o.username == e.username
                && e.at.saturating_duration_since(o.at) < GROUPING
        });
        let e = match same.and_then(|i| entries.remove(i)) {
            Some(old) => Entry {
                count: old.count + 1,
                ..e
            },
            None => e,
        };
        entries.push_front(e);
        entries.truncate(MAX_ENTRIES);
    }

    /// The newest `n` entries.
    pub fn newest(&self, n: usize) -> Vec<Entry> {
        self.entries.lock().iter().take(n).cloned().collect()
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(object: &str) -> Entry {
        Entry {
            count: 1,
            reason: Reason::Key,
            context: Context::Toplevel,
            object: object.into(),
            username: "bob".into(),
            at: Instant::now(),
            client_info: String::new(),
        }
    }

    #[test]
    fn groups_repeats_and_stays_bounded() {
        let log = Log::default();
        log.add(entry("a"));
        log.add(entry("b"));
        log.add(entry("a"));
        let e = log.newest(10);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].object.as_str(), e[0].count), ("a", 2));
        for i in 0..1000 {
            log.add(entry(&i.to_string()));
        }
        assert_eq!(log.newest(usize::MAX).len(), MAX_ENTRIES);
        log.reset();
        assert!(log.newest(10).is_empty());
    }
}
