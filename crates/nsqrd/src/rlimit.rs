//! The limit on open files (`RLIMIT_NOFILE`). Every disk queue and every client holds a file
//! descriptor, and Go programs (nsqd among them) raise their soft limit to the hard limit at
//! startup, so nsqrd does the same (from `main`, not as a library: the limit is the process's).

/// The soft limit; None if unlimited or unknown.
pub fn open_files_limit() -> Option<u64> {
    let (soft, _) = limits()?;
    (soft != libc::RLIM_INFINITY).then_some(soft)
}

/// Raise the soft limit to the hard limit, as Go's runtime does; returns the new soft limit.
pub fn raise_open_files_limit() -> Option<u64> {
    let (soft, hard) = limits()?;
    if soft < hard {
        let lim = libc::rlimit {
            rlim_cur: hard,
            rlim_max: hard,
        };
        // SAFETY: setrlimit only reads the `rlimit` we pass by a valid pointer for the
        // duration of the call.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
        if rc != 0 {
            return Some(soft);
        }
    }
    open_files_limit()
}

fn limits() -> Option<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes one `rlimit` into the struct we own, passed by a valid
    // pointer for the duration of the call.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    (rc == 0).then_some((lim.rlim_cur, lim.rlim_max))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The soft limit as /proc reports it.
    fn proc_soft_limit() -> Option<String> {
        let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
        let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3).map(str::to_string)
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let (_, hard) = limits().expect("getrlimit");
        let raised = raise_open_files_limit();
        let (soft, _) = limits().expect("getrlimit");
        assert_eq!(soft, hard, "soft limit now the hard limit");
        if hard != libc::RLIM_INFINITY {
            assert_eq!(raised, Some(hard));
        }
        if let Some(proc) = proc_soft_limit() {
            let ours = open_files_limit().map_or("unlimited".to_string(), |n| n.to_string());
            assert_eq!(ours, proc);
        }
    }
}
