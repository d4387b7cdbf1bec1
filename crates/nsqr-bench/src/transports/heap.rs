//! One heap policy for both sides of the matrix. nsqr's side and libzmq's both allocate from
//! glibc's malloc in this process, and glibc adapts its thresholds to what was freed before:
//! after a large buffer is freed it stops returning freed memory to the kernel, until then it
//! trims it and every message of the next repetition faults its pages in again. Left alone,
//! one side's frees would decide how fast the other's allocations are (libzmq's large cells
//! change with whether nsqr's sender pools its buffers). Fixing the thresholds once, before the
//! first cell, keeps freed memory for reuse on both sides, as a long-running program's heap
//! would be.

/// Keep freed memory in the heap (no trimming) and serve allocations up to 32 MiB from it.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes glibc's malloc parameters, under glibc's own arena lock
        // (other threads may be allocating meanwhile); both values are within the ranges glibc
        // documents (M_MMAP_THRESHOLD at most 32 MiB on 64-bit), and a rejected value leaves
        // the parameter as it was (returns 0), which only costs speed. Called by every run of
        // the matrix, so `bench_transports`' tests exercise it.
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        }
    }
}
