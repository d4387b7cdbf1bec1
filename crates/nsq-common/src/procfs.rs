//! The process's own memory, from `/proc/self/statm`: what `/stats`, `/metrics` and the
//! memory trimmer of nsqrd report or act on. `None` where there is no procfs.

/// The page size `statm` counts in (4 KiB on the platforms nsqrd runs on).
const PAGE: u64 = 4096;

/// The process's memory in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statm {
    /// Virtual memory size.
    pub virtual_bytes: u64,
    /// Resident set size.
    pub resident_bytes: u64,
}

/// The current figures, or `None` where `/proc/self/statm` cannot be read.
pub fn statm() -> Option<Statm> {
    parse_statm(&std::fs::read_to_string("/proc/self/statm").ok()?)
}

/// The first two fields of a `statm` text (sizes in pages).
fn parse_statm(text: &str) -> Option<Statm> {
    let mut pages = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    Some(Statm {
        virtual_bytes: pages.next()?? * PAGE,
        resident_bytes: pages.next()?? * PAGE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statm_fields_in_bytes() {
        assert_eq!(
            parse_statm("2000 300 100 1 0 500 0\n"),
            Some(Statm {
                virtual_bytes: 2000 * 4096,
                resident_bytes: 300 * 4096
            })
        );
        assert_eq!(parse_statm("2000"), None);
        assert_eq!(parse_statm("x 1"), None);
        if std::path::Path::new("/proc/self/statm").exists() {
            assert!(statm().is_some_and(|s| s.resident_bytes > 0));
        }
    }
}
