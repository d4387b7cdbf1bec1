//! Go's `host:port` rules, which decide how nsqd reads an address option.
//!
//! nsqd treats a `--tcp-address` / `--http-address` that Go's `net.SplitHostPort` rejects as a
//! unix-socket path, and builds the statsd host key with `net.JoinHostPort`. Both rules are
//! reproduced here so that the same texts mean the same thing to nsqrd.

/// Go's `net.SplitHostPort`: `host:port`, `[v6]:port`; the port may be empty. `None` on error.
pub fn split_host_port(addr: &str) -> Option<(&str, &str)> {
    let colon = addr.rfind(':')?;
    let (host, open_end, close_start) = if addr.starts_with('[') {
        let end = addr.find(']')?;
        if end + 1 != colon {
            return None;
        }
        (&addr[1..end], 1, end + 1)
    } else {
        let host = &addr[..colon];
        if host.contains(':') {
            return None;
        }
        (host, 0, 0)
    };
    if addr[open_end..].contains('[') || addr[close_start..].contains(']') {
        return None;
    }
    Some((host, &addr[colon + 1..]))
}

/// Go's `net.JoinHostPort`: brackets a host that contains a colon.
pub fn join_host_port(host: &str, port: &str) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// True when nsqd would listen on `addr` as a unix socket: non-empty and not `host:port`.
pub fn is_unix_socket_addr(addr: &str) -> bool {
    !addr.is_empty() && split_host_port(addr).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_go() {
        assert_eq!(split_host_port("0.0.0.0:4150"), Some(("0.0.0.0", "4150")));
        assert_eq!(split_host_port(":4150"), Some(("", "4150")));
        assert_eq!(split_host_port("host:"), Some(("host", "")));
        assert_eq!(split_host_port("[::1]:4150"), Some(("::1", "4150")));
        assert_eq!(split_host_port("/tmp/nsqd.sock"), None);
        assert_eq!(split_host_port("::1:4150"), None);
        assert_eq!(split_host_port("[::1]"), None);
        assert_eq!(split_host_port("[::1]x:1"), None);
        assert_eq!(split_host_port("a]:1"), None);
        assert_eq!(split_host_port("[a:1"), None);
    }

    #[test]
    fn joins_like_go() {
        assert_eq!(join_host_port("my.host", "4151"), "my.host:4151");
        assert_eq!(join_host_port("::1", "4151"), "[::1]:4151");
    }

    #[test]
    fn unix_socket_detection() {
        assert!(is_unix_socket_addr("/var/run/nsqd.sock"));
        assert!(is_unix_socket_addr("nsqd.sock"));
        assert!(!is_unix_socket_addr("127.0.0.1:4150"));
        assert!(!is_unix_socket_addr("localhost:0"));
        assert!(!is_unix_socket_addr(""));
    }
}
