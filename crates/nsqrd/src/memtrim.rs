//! Give freed memory back to the OS after a backlog drains.
//!
//! Message bodies live in one allocation per publish batch. When a backlog of millions of
//! messages is consumed, glibc keeps the freed memory in its arenas, so RSS would stay at the
//! backlog's peak forever. Once a second this task compares the process's RSS with what the
//! messages the broker still holds could need; when RSS is well above that, most of it is free
//! heap, and glibc is asked to release it (`malloc_trim`). Comparing with RSS (rather than
//! sampling queue depths) also catches a backlog that came and went between two ticks.
//! Why glibc with a trim rather than another allocator: docs/decisions/0007-glibc-malloc-trim.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nsqr_broker::Broker;

/// A generous upper bound of the memory one held message needs (body, header, queue slot).
const BYTES_PER_HELD_MESSAGE: u64 = 1024;
/// Slack above the baseline before a trim is worth it. Small: a publisher's read buffer grows
/// by 1 MiB slabs, and the few that glibc keeps at the top of each arena after a backlog
/// drains would otherwise stay resident (docs/decisions/0007-glibc-malloc-trim.md).
const SLACK: u64 = 2 << 20;
/// After a trim that could not bring RSS down (fragmentation), wait this long to retry.
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// Whether to trim now: RSS exceeds the startup baseline, what the held messages could need
/// and some slack; and either no trim ran recently, or RSS grew a lot since the last one.
fn should_trim(rss: u64, baseline: u64, held: u64, last: Option<(Instant, u64)>) -> bool {
    let needed = baseline + held.saturating_mul(BYTES_PER_HELD_MESSAGE) + SLACK;
    if rss <= needed {
        return false;
    }
    match last {
        None => true,
        Some((at, rss_after)) => at.elapsed() >= RETRY_AFTER || rss > rss_after + 4 * SLACK,
    }
}

pub async fn run(broker: Arc<Broker>) {
    let baseline = rss_bytes().unwrap_or(0);
    let mut last: Option<(Instant, u64)> = None;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let Some(rss) = rss_bytes() else {
            continue;
        };
        let held = broker.messages_in_memory() as u64;
        if should_trim(rss, baseline, held, last) {
            let _ = tokio::task::spawn_blocking(release_free_memory).await;
            last = Some((Instant::now(), rss_bytes().unwrap_or(rss)));
        }
    }
}

/// The process's resident set size.
fn rss_bytes() -> Option<u64> {
    nsq_common::procfs::statm().map(|m| m.resident_bytes)
}

/// Return free heap pages to the OS. A no-op where the allocator is not glibc's.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim takes glibc's own arena locks and only releases pages that hold no
    // live allocation; it touches no Rust-owned memory and has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rss_kb() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(0)
    }

    #[test]
    fn trims_only_when_rss_exceeds_what_held_messages_need() {
        let mb = 1 << 20;
        // A backlog being built: RSS is what the messages need.
        assert!(!should_trim(300 * mb, 10 * mb, 1_000_000, None));
        // The same RSS after the backlog drained.
        assert!(should_trim(300 * mb, 10 * mb, 0, None));
        // Within the slack: nothing to gain.
        assert!(!should_trim(11 * mb, 10 * mb, 0, None));
        assert!(should_trim(13 * mb, 10 * mb, 0, None));
        // Just trimmed and RSS did not come down (fragmentation): wait before retrying...
        let just_now = Some((Instant::now(), 295 * mb));
        assert!(!should_trim(300 * mb, 10 * mb, 0, just_now));
        // ...unless RSS grew a lot since.
        assert!(should_trim(400 * mb, 10 * mb, 0, just_now));
    }

    /// Freed batch-sized allocations go back to the OS after a trim.
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn trim_returns_freed_heap_memory() {
        // 40 KB blocks (one MPUB batch of 200 x 200 B), below glibc's mmap threshold, so they
        // come from the heap; keep every 10th alive so the heap cannot simply shrink from the top.
        let mut blocks: Vec<Vec<u8>> = (0..4000).map(|i| vec![i as u8; 40 * 1024]).collect();
        let full = rss_kb();
        let mut kept = Vec::new();
        for (i, b) in blocks.drain(..).enumerate() {
            if i % 10 == 0 {
                kept.push(b);
            }
        }
        release_free_memory();
        let trimmed = rss_kb();
        assert!(
            trimmed + 100_000 < full,
            "RSS {full} kB with 160 MB allocated, {trimmed} kB after freeing 90% and trimming"
        );
        assert_eq!(kept.len(), 400);
    }
}
