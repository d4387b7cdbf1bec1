//! Give freed memory back to the OS after a backlog drains.
//!
//! Message bodies live in one allocation per publish batch. When a backlog of millions of
//! messages is consumed, glibc keeps the freed memory in its arenas, so RSS would stay at the
//! backlog's peak forever. Once a second this task looks at how many messages the broker holds;
//! when that has fallen well below its recent peak, it asks glibc to release free pages
//! (`malloc_trim`). (mimalloc was measured too: it kept more memory, see docs/benchmarks.md.)

use std::sync::Arc;
use std::time::Duration;

use nsqr_broker::Broker;

/// Trim once this many fewer messages are held than at the last peak.
const TRIM_AFTER_FREED: usize = 50_000;

pub async fn run(broker: Arc<Broker>) {
    let mut peak = 0usize;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let held = broker.held_messages();
        peak = peak.max(held);
        if peak - held >= TRIM_AFTER_FREED {
            peak = held;
            let _ = tokio::task::spawn_blocking(release_free_memory).await;
        }
    }
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
