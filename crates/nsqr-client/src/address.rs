//! Where a producer or consumer connects: the one place the three transports are told apart.
//! `tcp://host:port` and a bare `host:port` (how NSQ's tools and go-nsq name an nsqd) are TCP,
//! `unix:///path` is nsqd's unix-socket listener (`--tcp-address=/path`), and `inproc://` is
//! the broker given in [`Config::inproc`](crate::Config::inproc), reached by plain calls.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::Error;

/// A parsed address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Address {
    /// `host:port` (IPv6 hosts in brackets).
    Tcp(String),
    /// A unix socket's path.
    Unix(PathBuf),
    /// The in-process broker of the config.
    Inproc,
}

impl Address {
    /// Parse `tcp://host:port`, `unix:///path`, `inproc://` or `host:port`.
    pub fn parse(s: &str) -> Result<Address, Error> {
        let bad = |why| Error::Address {
            addr: s.to_string(),
            why,
        };
        if let Some(rest) = s.strip_prefix("inproc://") {
            return match rest {
                "" => Ok(Address::Inproc),
                _ => Err(bad(
                    "inproc:// takes no name (the broker comes from the config)",
                )),
            };
        }
        if let Some(path) = s.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(bad("unix:// needs a socket path"));
            }
            return Ok(Address::Unix(PathBuf::from(path)));
        }
        let hostport = match s.split_once("://") {
            Some(("tcp", rest)) => rest,
            Some(_) => return Err(bad("the scheme must be tcp://, unix:// or inproc://")),
            None => s,
        };
        let Some((host, port)) = hostport.rsplit_once(':') else {
            return Err(bad("missing port"));
        };
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(bad("want host:port"));
        }
        Ok(Address::Tcp(hostport.to_string()))
    }

    /// The host to check a TLS certificate against (None for a unix socket or inproc).
    pub fn host(&self) -> Option<&str> {
        match self {
            Address::Tcp(hp) => {
                let host = hp.rsplit_once(':').map_or(hp.as_str(), |(h, _)| h);
                Some(host.trim_start_matches('[').trim_end_matches(']'))
            }
            _ => None,
        }
    }
}

impl FromStr for Address {
    type Err = Error;

    fn from_str(s: &str) -> Result<Address, Error> {
        Address::parse(s)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Tcp(hp) => write!(f, "{hp}"),
            Address::Unix(p) => write!(f, "unix://{}", p.display()),
            Address::Inproc => f.write_str("inproc://"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form() {
        assert_eq!(
            Address::parse("tcp://127.0.0.1:4150").unwrap(),
            Address::Tcp("127.0.0.1:4150".into())
        );
        assert_eq!(
            Address::parse("localhost:4150").unwrap(),
            Address::Tcp("localhost:4150".into())
        );
        assert_eq!(
            Address::parse("unix:///tmp/nsqd.sock").unwrap(),
            Address::Unix("/tmp/nsqd.sock".into())
        );
        assert_eq!(Address::parse("inproc://").unwrap(), Address::Inproc);
        let v6 = Address::parse("[::1]:4150").unwrap();
        assert_eq!(v6.host(), Some("::1"));
        assert_eq!(v6.to_string(), "[::1]:4150");
        assert_eq!(
            Address::parse("unix:///a").unwrap().to_string(),
            "unix:///a"
        );
        for bad in [
            "",
            "4150",
            "host",
            "host:",
            ":4150",
            "host:99999",
            "http://h:1",
            "unix://",
            "inproc://x",
        ] {
            assert!(Address::parse(bad).is_err(), "{bad:?}");
        }
    }
}
