//! The script cache: every script EVAL ran or SCRIPT LOAD loaded, by its SHA1 digest, until
//! SCRIPT FLUSH.
//!
//! Keyed by the 20-byte digest, so an EVALSHA turns its 40 hex characters into a key on the
//! stack and looks it up without allocating; each serving thread's Lua state keeps the scripts
//! it compiled by the same key (`vm.rs`), so a call looks its script up once
//! (docs/decisions/0031-evalsha-at-redis-rate.md). The map hashes with foldhash, randomly
//! seeded: the digests come from clients' scripts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use sha1::{Digest as _, Sha1};

/// Scripts kept that came by EVAL (SCRIPT LOAD's are always kept).
pub const MAX_EVAL_SCRIPTS: usize = 10_000;

/// A script's SHA1 digest.
pub type Digest = [u8; 20];

/// The map of scripts by digest.
pub type ByDigest<V> = HashMap<Digest, V, foldhash::quality::RandomState>;

/// A script as the cache holds it.
#[derive(Debug)]
pub struct Script {
    pub digest: Digest,
    /// The digest in lower-case hex, as Redis names the script.
    pub sha: String,
    pub body: Box<str>,
    /// Its `#!lua` line: whether it says `flags=no-writes`, or Redis's error for it.
    pub no_writes: Result<bool, String>,
    /// Whether the cache keeps it (one loaded by EVAL past [`MAX_EVAL_SCRIPTS`] is not).
    pub kept: bool,
}

#[derive(Default)]
pub struct Cache {
    scripts: Mutex<Scripts>,
    /// Bumped by SCRIPT FLUSH: the Lua states drop what they compiled.
    generation: AtomicU64,
}

#[derive(Default)]
struct Scripts {
    by_digest: ByDigest<Arc<Script>>,
    from_eval: usize,
}

impl Cache {
    pub fn get(&self, digest: &Digest) -> Option<Arc<Script>> {
        self.scripts.lock().by_digest.get(digest).map(Arc::clone)
    }

    /// Caches `body` unless it is (or, from EVAL past the cache's bound, unless it cannot
    /// be); the script either way.
    pub fn add(&self, body: &str, from_eval: bool) -> Arc<Script> {
        let digest: Digest = Sha1::digest(body.as_bytes()).into();
        let mut s = self.scripts.lock();
        if let Some(cached) = s.by_digest.get(&digest) {
            return Arc::clone(cached);
        }
        let kept = !(from_eval && s.from_eval >= MAX_EVAL_SCRIPTS);
        let script = Arc::new(Script {
            digest,
            sha: hex(&digest),
            body: body.into(),
            no_writes: super::shebang(body),
            kept,
        });
        if kept {
            s.by_digest.insert(digest, Arc::clone(&script));
            s.from_eval += usize::from(from_eval);
        }
        script
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn flush(&self) {
        let mut s = self.scripts.lock();
        s.by_digest.clear();
        s.from_eval = 0;
        self.generation.fetch_add(1, Ordering::Release);
    }
}

/// The digest 40 hex characters (either case) name; `None` if they name none.
pub fn parse_sha(text: &[u8]) -> Option<Digest> {
    let mut digest = Digest::default();
    if text.len() != 2 * digest.len() {
        return None;
    }
    for (d, pair) in digest.iter_mut().zip(text.chunks_exact(2)) {
        let (high, low) = (NIBBLES[usize::from(pair[0])], NIBBLES[usize::from(pair[1])]);
        if (high | low) > 15 {
            return None;
        }
        *d = high << 4 | low;
    }
    Some(digest)
}

/// Each byte's value as a hex digit (either case); 255 for a byte that is none.
static NIBBLES: [u8; 256] = {
    let mut table = [255u8; 256];
    let mut i = 0;
    while i < 16 {
        table[b"0123456789abcdef"[i] as usize] = i as u8;
        table[b"0123456789ABCDEF"[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// `bytes` in lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(2 * bytes.len());
    for &b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 15)] as char);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha_text_in_either_case_names_the_digest() {
        let script = Cache::default().add("return 1", false);
        assert_eq!(script.sha, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
        assert_eq!(parse_sha(script.sha.as_bytes()), Some(script.digest));
        let upper = script.sha.to_ascii_uppercase();
        assert_eq!(parse_sha(upper.as_bytes()), Some(script.digest));
        assert_eq!(parse_sha(&script.sha.as_bytes()[..39]), None);
        assert_eq!(parse_sha(b"g0e1f9fabfc9d4800c877a703b823ac0578ff8db"), None);
        assert_eq!(parse_sha("é".repeat(20).as_bytes()), None);
    }

    #[test]
    fn eval_scripts_past_the_bound_are_not_kept() {
        let cache = Cache::default();
        let loaded = cache.add("return 0", false);
        for i in 0..MAX_EVAL_SCRIPTS {
            assert!(cache.add(&format!("return {}", i + 1), true).kept);
        }
        let extra = cache.add("return 'extra'", true);
        assert!(!extra.kept);
        assert!(cache.get(&extra.digest).is_none());
        assert!(cache.add("return 'loaded'", false).kept);
        assert!(cache.get(&loaded.digest).is_some());
        let generation = cache.generation();
        cache.flush();
        assert!(cache.get(&loaded.digest).is_none());
        assert_eq!(cache.generation(), generation + 1);
        assert!(cache.add("return 'extra'", true).kept);
    }
}
