//! One heap policy for both sides of the matrix. nsqr's side and libzmq's both allocate from
//! glibc's malloc in this process, and glibc adapts its thresholds to what was freed before:
//! after a large buffer is freed it stops returning freed memory to the kernel, until then it
//! trims it and every message of the next repetition faults its pages in again. Left alone,
//! one side's frees decided how fast the other's allocations were (libzmq's 64 KB cells moved
//! by 3x with nsqr's sender pooling its buffers). Fixing the thresholds once, before the
//! first cell, keeps freed memory for reuse on both sides, as a long-running program's heap
//! would be.
//!
//! One arena for every thread, too: glibc gives each new thread an arena of its own, and an
//! arena other than the main one unmaps each 64 MiB heap of it that becomes free, whatever
//! the trim threshold says. libzmq's sender thread (a new one each repetition) ran ahead of
//! its receiver through hundreds of MiB, had them unmapped as the receiver freed its messages
//! and faulted them in again the next time: on this VM a fault of fresh memory costs enough
//! that libzmq's 8 KB cells fell from about 1.6M to 0.4M msgs/s in some repetitions and not
//! others. The arena limit only counts when set before other threads allocate, so this runs
//! before the runtime starts.

/// Keep freed memory in the heap (no trimming), serve allocations up to 32 MiB from it, and
/// let every thread allocate from the main arena.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes glibc's malloc parameters, under glibc's own arena lock
        // (other threads may be allocating meanwhile); every value is within the ranges glibc
        // documents (M_MMAP_THRESHOLD at most 32 MiB on 64-bit, M_ARENA_MAX at least 1), and a
        // rejected value leaves the parameter as it was (returns 0), which only costs speed.
        // Called by every run of the matrix, so `bench_transports`' tests exercise it.
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}
