//! Time. Deadlines are absolute Unix milliseconds (they survive restarts and mean the same in
//! a snapshot as in `PEXPIREAT`), so the clock is the wall clock, read precisely on every
//! command that needs it: a coarse clock could serve a key up to a tick after its deadline.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix time in microseconds.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    now_us() / 1000
}

/// Redis's LRU clock: seconds, 24 bits, wrapping every ~194 days.
pub fn lru_clock(now_ms: u64) -> u32 {
    ((now_ms / 1000) & 0x00ff_ffff) as u32
}

/// Seconds since an entry's LRU clock was set, allowing for the wrap.
pub fn idle_seconds(now_clock: u32, entry_clock: u32) -> u32 {
    now_clock.wrapping_sub(entry_clock) & 0x00ff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_time_wraps() {
        assert_eq!(idle_seconds(10, 4), 6);
        assert_eq!(idle_seconds(2, 0x00ff_fffe), 4);
        assert!(now_ms() > 1_600_000_000_000);
    }
}
