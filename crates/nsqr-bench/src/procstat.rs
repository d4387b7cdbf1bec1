//! A process's CPU time and memory from /proc (Linux).

use std::sync::OnceLock;
use std::time::Duration;

/// Clock ticks per second for /proc/PID/stat times (`getconf CLK_TCK`, 100 on Linux).
fn clk_tck() -> u64 {
    static TCK: OnceLock<u64> = OnceLock::new();
    *TCK.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .filter(|&t| t > 0)
            .unwrap_or(100)
    })
}

/// User + system CPU time the process has used so far (utime + stime from /proc/PID/stat).
pub fn cpu_time(pid: u32) -> Result<Duration, String> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    parse_stat_ticks(&stat)
        .map(|t| Duration::from_nanos(t.saturating_mul(1_000_000_000) / clk_tck()))
        .ok_or_else(|| format!("{path}: unexpected format"))
}

/// User + system CPU time of this process, to the microsecond, threads that have exited
/// included (getrusage(RUSAGE_SELF); /proc's ticks are 10 ms).
pub fn own_cpu_time() -> Result<Duration, String> {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    #[allow(unsafe_code)]
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes one `rusage` into the struct we own, passed by a valid
    // pointer for the duration of the call.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return Err(format!("getrusage: {}", std::io::Error::last_os_error()));
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok(Duration::from_micros(us(ru.ru_utime) + us(ru.ru_stime)))
}

/// CPU time of another process to the nanosecond: the sum of its threads' run time in
/// /proc/PID/task/*/schedstat (threads that have exited are not counted: meant for a server
/// whose threads live as long as it does); falls back to [`cpu_time`]'s ticks.
pub fn precise_cpu_time(pid: u32) -> Result<Duration, String> {
    let dir = format!("/proc/{pid}/task");
    let Ok(tasks) = std::fs::read_dir(&dir) else {
        return cpu_time(pid);
    };
    let mut ns = 0u64;
    for t in tasks.flatten() {
        let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        match stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
        {
            Some(v) => ns += v,
            None => return cpu_time(pid),
        }
    }
    Ok(Duration::from_nanos(ns))
}

/// utime + stime in ticks. The command name (field 2) may contain spaces and parentheses, so
/// fields are counted from the last `)`: after it come field 3 (state) onwards.
fn parse_stat_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// A `Vm*` field of /proc/PID/status (e.g. "VmRSS", "VmHWM"), in bytes.
pub fn status_bytes(pid: u32, field: &str) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    parse_status_kb(&status, field)
        .map(|kb| kb * 1024)
        .ok_or_else(|| format!("{path}: no {field}"))
}

fn parse_status_kb(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let v = l.strip_prefix(field)?.strip_prefix(':')?;
        v.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_names() {
        let s = "1234 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 8 0 100 0 0";
        assert_eq!(parse_stat_ticks(s), Some(300));
    }

    #[test]
    fn parses_status() {
        let s = "Name:\tnsqd\nVmHWM:\t   12345 kB\nVmRSS:\t    2000 kB\n";
        assert_eq!(parse_status_kb(s, "VmHWM"), Some(12345));
        assert_eq!(parse_status_kb(s, "VmRSS"), Some(2000));
        assert_eq!(parse_status_kb(s, "VmSwap"), None);
    }

    #[test]
    fn reads_own_process() {
        let pid = std::process::id();
        assert!(cpu_time(pid).is_ok());
        assert!(own_cpu_time().is_ok());
        assert!(precise_cpu_time(pid).is_ok());
        assert!(status_bytes(pid, "VmRSS").unwrap() > 0);
    }
}
