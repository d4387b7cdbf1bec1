//! Faulting fresh memory in with one call instead of one page fault per 4 KiB.
//!
//! A server that keeps what it is sent (nsqrd's publish slabs, `nsqr-bench floor`) touches new memory
//! for every message, and on a virtual machine each first touch of a 4 KiB page is a trap into
//! the kernel and often into the host. `MADV_POPULATE_WRITE` (Linux 5.14) faults a whole range
//! in, as writes would, in one system call, and leaves its contents as they are.

use std::mem::MaybeUninit;

/// The page size `populate` rounds to (only whole pages inside the range are faulted in).
pub const PAGE: usize = 4096;

/// Fault in the whole pages of `spare`. Best effort: kernels before 5.14 and other systems
/// refuse (false) and the pages fault in as usual when first written.
pub fn populate(spare: &mut [MaybeUninit<u8>]) -> bool {
    #[cfg(not(target_os = "linux"))]
    {
        let _ = spare;
        false
    }
    #[cfg(target_os = "linux")]
    {
        let start = spare.as_mut_ptr() as usize;
        let (a, b) = (
            start.next_multiple_of(PAGE),
            (start + spare.len()) & !(PAGE - 1),
        );
        if a >= b {
            return false;
        }
        #[allow(unsafe_code)]
        // SAFETY: [a, b) lies inside `spare`, which is borrowed mutably for the call, so nothing
        // else uses it. MADV_POPULATE_WRITE faults those pages in as a write would, without
        // changing their contents, and touches no other memory.
        unsafe {
            libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_POPULATE_WRITE) == 0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populating_keeps_the_contents_and_makes_the_pages_resident() {
        let mut v: Vec<u8> = Vec::with_capacity(8 << 20);
        v.extend_from_slice(b"kept");
        let rss = || {
            std::fs::read_to_string("/proc/self/statm")
                .ok()
                .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let before = rss();
        let populated = populate(v.spare_capacity_mut());
        let grown_kib = rss().saturating_sub(before) * 4;
        assert_eq!(&v[..], b"kept");
        v.extend_from_slice(&[1u8; 1 << 20]);
        assert_eq!(&v[..4], b"kept");
        // Other test threads allocate and free too, so only a lower bound is certain.
        if populated {
            assert!(
                grown_kib >= 7 << 10,
                "{grown_kib} KiB resident after populating 8 MiB"
            );
        }
    }

    #[test]
    fn a_range_without_a_whole_page_is_left_alone() {
        let mut v: Vec<u8> = Vec::with_capacity(PAGE);
        // 100 bytes cannot hold a whole page, wherever they start.
        assert!(!populate(&mut v.spare_capacity_mut()[..100]));
        assert!(!populate(&mut []));
    }
}
