//! Start-up warnings: settings nsqd accepts in silence although they are most likely mistakes
//! (a misspelt config key, a negative queue size, a mistyped address that nsqd's rules turn
//! into a unix-socket path). nsqrd accepts them exactly as nsqd does and logs one warning each
//! at start, so that the mistake shows.

use nsq_common::config_file::UnknownKeys;

use super::addr::is_unix_socket_addr;
use super::table::Options;

/// One start-up warning; its text is the log line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsWarning {
    #[error(transparent)]
    UnknownConfigKeys(#[from] UnknownKeys),
    #[error("--mem-queue-size={0} is negative: it counts as 0, every message goes to disk")]
    NegativeMemQueueSize(i64),
    /// An address option that names a unix socket although it looks like a port or a host.
    #[error(
        "--{flag}={addr} is not <host>:<port>, so it is a unix socket path; for TCP write {hint}"
    )]
    UnixSocketLooksMistyped {
        flag: &'static str,
        addr: String,
        hint: String,
    },
}

impl Options {
    /// The warnings the option values call for (those of the config file come from parsing).
    pub fn value_warnings(&self) -> Vec<OptionsWarning> {
        let mut out = Vec::new();
        if self.mem_queue_size < 0 {
            out.push(OptionsWarning::NegativeMemQueueSize(self.mem_queue_size));
        }
        for (flag, addr) in [
            ("tcp-address", &self.tcp_address),
            ("http-address", &self.http_address),
            ("https-address", &self.https_address),
        ] {
            if let Some(hint) = mistyped_socket_hint(addr) {
                out.push(OptionsWarning::UnixSocketLooksMistyped {
                    flag,
                    addr: addr.clone(),
                    hint,
                });
            }
        }
        out
    }
}

/// For a unix-socket address that looks like a mistyped TCP address (no `/` and no `.sock`
/// ending: a bare port, a host name, a host and port with a typo), what was probably meant.
fn mistyped_socket_hint(addr: &str) -> Option<String> {
    if !is_unix_socket_addr(addr) || addr.contains('/') || addr.ends_with(".sock") {
        return None;
    }
    Some(if addr.bytes().all(|b| b.is_ascii_digit()) {
        format!("127.0.0.1:{addr} or 0.0.0.0:{addr}")
    } else {
        "<host>:<port>, e.g. 127.0.0.1:4150".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mistyped_sockets_are_recognised() {
        assert_eq!(
            mistyped_socket_hint("4150").as_deref(),
            Some("127.0.0.1:4150 or 0.0.0.0:4150")
        );
        assert!(mistyped_socket_hint("nonsense").is_some());
        assert!(mistyped_socket_hint("localhost").is_some());
        assert_eq!(mistyped_socket_hint("/run/nsqd.sock"), None);
        assert_eq!(mistyped_socket_hint("nsqd.sock"), None);
        assert_eq!(mistyped_socket_hint("./sock"), None);
        assert_eq!(mistyped_socket_hint("127.0.0.1:4150"), None);
        assert_eq!(mistyped_socket_hint(""), None);
    }

    #[test]
    fn negative_queue_size_and_socket_warnings() {
        let o = Options {
            mem_queue_size: -5,
            tcp_address: "4150".into(),
            ..Options::default()
        };
        let w: Vec<String> = o.value_warnings().iter().map(|w| w.to_string()).collect();
        assert_eq!(
            w,
            [
                "--mem-queue-size=-5 is negative: it counts as 0, every message goes to disk",
                "--tcp-address=4150 is not <host>:<port>, so it is a unix socket path; for TCP \
                 write 127.0.0.1:4150 or 0.0.0.0:4150",
            ]
        );
        assert!(Options::default().value_warnings().is_empty());
    }
}
