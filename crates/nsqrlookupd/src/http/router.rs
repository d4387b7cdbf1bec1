//! nsqlookupd's route table with the semantics of its router (julienschmidt/httprouter v1.3 as
//! nsqlookupd configures it), written out so each rule is visible and tested:
//! 1. a route of the request's method matching the path exactly runs;
//! 2. otherwise (path not `/`, method not CONNECT, and the method has routes), a trailing slash
//!    is dropped, or the cleaned path is matched case-insensitively; a hit is a redirect, 301
//!    for GET and 307 for other methods (so they keep their body);
//! 3. `OPTIONS` on a path another method serves: 200 with `Allow`;
//! 4. any other method on such a path: 405 with `Allow` (so `HEAD` is 405);
//! 5. everything else: 404.
//!
//! `Allow` lists the methods sorted, `OPTIONS` included (`GET, OPTIONS`; `OPTIONS, POST`).
//! The Go-runtime routes `/debug/pprof/*` are not served (404).

/// One API endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Ping,
    Info,
    Debug,
    Lookup,
    Topics,
    Channels,
    Nodes,
    TopicCreate,
    TopicDelete,
    ChannelCreate,
    ChannelDelete,
    TopicTombstone,
}

impl Endpoint {
    /// Whether nsqlookupd parses arguments for it, which reads the whole request body (and
    /// fails with `INVALID_REQUEST` if the body cannot be read).
    pub fn reads_arguments(self) -> bool {
        !matches!(
            self,
            Endpoint::Ping | Endpoint::Info | Endpoint::Debug | Endpoint::Topics | Endpoint::Nodes
        )
    }
}

/// nsqlookupd's 12 API routes.
const ROUTES: &[(&str, &str, Endpoint)] = &[
    ("GET", "/ping", Endpoint::Ping),
    ("GET", "/info", Endpoint::Info),
    ("GET", "/debug", Endpoint::Debug),
    ("GET", "/lookup", Endpoint::Lookup),
    ("GET", "/topics", Endpoint::Topics),
    ("GET", "/channels", Endpoint::Channels),
    ("GET", "/nodes", Endpoint::Nodes),
    ("POST", "/topic/create", Endpoint::TopicCreate),
    ("POST", "/topic/delete", Endpoint::TopicDelete),
    ("POST", "/channel/create", Endpoint::ChannelCreate),
    ("POST", "/channel/delete", Endpoint::ChannelDelete),
    ("POST", "/topic/tombstone", Endpoint::TopicTombstone),
];

/// The methods that have routes, sorted.
const METHODS: &[&str] = &["GET", "POST"];

/// What the router decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    Handle(Endpoint),
    /// Redirect to `location` (escaped path, plus the query as sent).
    Redirect {
        status: u16,
        location: String,
    },
    Options {
        allow: String,
    },
    MethodNotAllowed {
        allow: String,
    },
    NotFound,
}

fn find(method: &str, path: &str) -> Option<Endpoint> {
    ROUTES
        .iter()
        .find(|(m, p, _)| *m == method && *p == path)
        .map(|r| r.2)
}

/// Routes a request. `path` is the decoded path, `raw_query` the query as sent.
pub fn route(method: &str, path: &str, raw_query: Option<&str>) -> Routed {
    if let Some(e) = find(method, path) {
        return Routed::Handle(e);
    }
    if METHODS.contains(&method) && path != "/" {
        let status = if method == "GET" { 301 } else { 307 };
        let redirect = |to: &str| Routed::Redirect {
            status,
            location: match raw_query {
                Some(q) => format!("{}?{q}", escape(to)),
                None => escape(to),
            },
        };
        if let Some(stripped) = path.strip_suffix('/').filter(|s| !s.is_empty()) {
            if find(method, stripped).is_some() {
                return redirect(stripped);
            }
        }
        let cleaned = clean(path);
        let candidates = [Some(cleaned.as_str()), cleaned.strip_suffix('/')];
        for c in candidates.into_iter().flatten().filter(|c| !c.is_empty()) {
            let fixed = ROUTES
                .iter()
                .find(|(m, p, _)| *m == method && p.eq_ignore_ascii_case(c));
            if let Some((_, p, _)) = fixed {
                return redirect(p);
            }
        }
    }
    let mut allowed: Vec<&str> = METHODS
        .iter()
        .copied()
        .filter(|m| *m != method && find(m, path).is_some())
        .collect();
    if allowed.is_empty() {
        return Routed::NotFound;
    }
    allowed.push("OPTIONS");
    allowed.sort_unstable();
    let allow = allowed.join(", ");
    if method == "OPTIONS" {
        Routed::Options { allow }
    } else {
        Routed::MethodNotAllowed { allow }
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// The path with `%XX` decoded (Go's `URL.Path`); `None` for a bad escape (Go's server answers
/// a bare 400 before routing).
pub fn decode_path(raw: &str) -> Option<String> {
    if !raw.contains('%') {
        return Some(raw.to_string());
    }
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(hex(*b.get(i + 1)?)? << 4 | hex(*b.get(i + 2)?)?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Go's path escaping for a redirect's `Location`: unreserved and `$&+,/:;=@` stay.
fn escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &c in path.as_bytes() {
        if c.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&c) {
            out.push(char::from(c));
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

/// httprouter's `CleanPath`: no `.`, `..` or repeated slashes, trailing slash kept.
fn clean(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out: String = parts.iter().map(|s| format!("/{s}")).collect();
    let trailing = (p.len() > 1 && p.ends_with('/')) || p.ends_with("/.") || p == ".";
    if out.is_empty() || trailing {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redirect(status: u16, location: &str) -> Routed {
        Routed::Redirect {
            status,
            location: location.into(),
        }
    }

    #[test]
    fn exact_and_not_found() {
        assert_eq!(
            route("GET", "/lookup", Some("topic=t")),
            Routed::Handle(Endpoint::Lookup)
        );
        assert_eq!(
            route("POST", "/topic/tombstone", None),
            Routed::Handle(Endpoint::TopicTombstone)
        );
        for (m, p) in [
            ("GET", "/"),
            ("GET", "/nosuch"),
            ("POST", "/topic"),
            ("POST", "/topic/"),
            ("GET", "/debug/pprof"),
            ("GET", "/debug/pprof/"),
            ("DELETE", "/nosuch"),
            ("OPTIONS", "/nosuch"),
            ("GET", "/pingx"),
        ] {
            assert_eq!(route(m, p, None), Routed::NotFound, "{m} {p}");
        }
    }

    #[test]
    fn allow_is_sorted() {
        let na = |allow: &str| Routed::MethodNotAllowed {
            allow: allow.into(),
        };
        assert_eq!(route("GET", "/topic/create", None), na("OPTIONS, POST"));
        assert_eq!(route("HEAD", "/ping", None), na("GET, OPTIONS"));
        assert_eq!(route("DELETE", "/topics", None), na("GET, OPTIONS"));
        assert_eq!(route("POST", "/lookup", None), na("GET, OPTIONS"));
        assert_eq!(
            route("OPTIONS", "/debug", None),
            Routed::Options {
                allow: "GET, OPTIONS".into()
            }
        );
    }

    #[test]
    fn redirects() {
        assert_eq!(route("GET", "/debug/", None), redirect(301, "/debug"));
        assert_eq!(route("GET", "/Topics", None), redirect(301, "/topics"));
        assert_eq!(
            route("GET", "/lookup/", Some("topic=a")),
            redirect(301, "/lookup?topic=a")
        );
        assert_eq!(
            route("POST", "/topic/create/", Some("topic=y")),
            redirect(307, "/topic/create?topic=y")
        );
        assert_eq!(
            route("POST", "/Topic/Create", Some("")),
            redirect(307, "/topic/create?")
        );
        assert_eq!(route("GET", "//nodes", None), redirect(301, "/nodes"));
        assert_eq!(route("GET", "/x/../PING/", None), redirect(301, "/ping"));
        // Only the method's own routes are candidates.
        assert_eq!(route("GET", "/Topic/Create", None), Routed::NotFound);
    }

    #[test]
    fn paths() {
        assert_eq!(decode_path("/look%75p").as_deref(), Some("/lookup"));
        assert_eq!(decode_path("/a%zz"), None);
        assert_eq!(decode_path("/a%2"), None);
        assert_eq!(escape("/a b#?"), "/a%20b%23%3F");
        for (i, o) in [
            ("", "/"),
            ("//", "/"),
            ("/a/../b", "/b"),
            ("/a/b/.", "/a/b/"),
            ("/a//", "/a/"),
        ] {
            assert_eq!(clean(i), o, "{i:?}");
        }
    }
}
