//! What a test can learn about a running server from `/proc` (Linux): its memory (`VmRSS`,
//! `VmHWM`) and whether it still holds a given client's connection. The second is how a test
//! sees that the server closed a connection whose client is not reading (reading would let the
//! server finish its writes and hide the difference).
use std::net::SocketAddr;

/// A `Vm*` field of `/proc/<pid>/status`, in KiB.
pub fn vm_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Resident memory now, KiB.
pub fn rss_kib(pid: u32) -> u64 {
    vm_kib(pid, "VmRSS")
}

/// Peak resident memory, KiB.
pub fn hwm_kib(pid: u32) -> u64 {
    vm_kib(pid, "VmHWM")
}

/// `/proc/net/tcp`'s spelling of an IPv4 socket address (`0100007F:1F90`).
fn proc_addr(a: SocketAddr) -> String {
    match a {
        SocketAddr::V4(v4) => format!(
            "{:08X}:{:04X}",
            u32::from_le_bytes(v4.ip().octets()),
            v4.port()
        ),
        SocketAddr::V6(_) => panic!("IPv4 only"),
    }
}

/// Whether process `pid` still has the server side of the connection whose client end is
/// `client` open (a socket it closed is orphaned: inode 0, or gone).
pub fn holds_connection(pid: u32, client: SocketAddr) -> bool {
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    let want = proc_addr(client);
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&want.as_str())).then(|| f.get(9).map(|s| s.to_string()))?
        })
        .filter(|inode| inode != "0")
        .collect();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(Result::ok).any(|fd| {
        std::fs::read_link(fd.path())
            .map(|l| {
                let l = l.to_string_lossy().into_owned();
                inodes.iter().any(|i| l == format!("socket:[{i}]"))
            })
            .unwrap_or(false)
    })
}
