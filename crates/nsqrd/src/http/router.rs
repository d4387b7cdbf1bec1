//! The route table and nsqd's router semantics (julienschmidt/httprouter as nsqd configures
//! it), hand-written so each rule is exact and visible:
//! 1. a route of the request's method matching the path exactly runs its handler;
//! 2. otherwise, for a path other than `/`, a trailing slash is dropped, or the cleaned path is
//!    matched case-insensitively, against the routes *of that method*; a hit is a redirect
//!    (301 for GET, 307 for everything else, so the method and body are kept);
//! 3. `OPTIONS` on a path some method serves is 200 with `Allow`;
//! 4. any other method on such a path is 405 with `Allow` (so `HEAD` is 405, never routed);
//! 5. everything else is 404.

use super::path;

/// One API endpoint: what a matched route runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Ping,
    Info,
    Pub,
    Mpub,
    Stats,
    TopicCreate,
    TopicDelete,
    TopicEmpty,
    TopicPause,
    TopicUnpause,
    ChannelCreate,
    ChannelDelete,
    ChannelEmpty,
    ChannelPause,
    ChannelUnpause,
    ConfigGet,
    ConfigPut,
    /// Not in nsqd: Prometheus' text format (`metrics.rs`).
    Metrics,
}

struct Route {
    method: &'static str,
    /// Literal segments, or `:name` for one non-empty parameter segment.
    pattern: &'static str,
    endpoint: Endpoint,
}

const fn route(method: &'static str, pattern: &'static str, endpoint: Endpoint) -> Route {
    Route {
        method,
        pattern,
        endpoint,
    }
}

/// nsqd's 17 API routes, and `/metrics`. The Go-only debug routes (`/debug/pprof/*`, `/debug/setblockrate`,
/// `/debug/freememory`) are not served.
const ROUTES: &[Route] = &[
    route("GET", "/ping", Endpoint::Ping),
    route("GET", "/info", Endpoint::Info),
    route("POST", "/pub", Endpoint::Pub),
    route("POST", "/mpub", Endpoint::Mpub),
    route("GET", "/stats", Endpoint::Stats),
    route("POST", "/topic/create", Endpoint::TopicCreate),
    route("POST", "/topic/delete", Endpoint::TopicDelete),
    route("POST", "/topic/empty", Endpoint::TopicEmpty),
    route("POST", "/topic/pause", Endpoint::TopicPause),
    route("POST", "/topic/unpause", Endpoint::TopicUnpause),
    route("POST", "/channel/create", Endpoint::ChannelCreate),
    route("POST", "/channel/delete", Endpoint::ChannelDelete),
    route("POST", "/channel/empty", Endpoint::ChannelEmpty),
    route("POST", "/channel/pause", Endpoint::ChannelPause),
    route("POST", "/channel/unpause", Endpoint::ChannelUnpause),
    route("GET", "/config/:opt", Endpoint::ConfigGet),
    route("PUT", "/config/:opt", Endpoint::ConfigPut),
    route("GET", "/metrics", Endpoint::Metrics),
];

/// The methods with routes (`Allow` lists them sorted, with `OPTIONS`).
const METHODS: &[&str] = &["GET", "POST", "PUT"];

/// What the router decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// Run the endpoint; `param` is the `:opt` segment of `/config/:opt`.
    Handle {
        endpoint: Endpoint,
        param: Option<String>,
    },
    /// Redirect to `location` (path and query) with `status` 301 or 307.
    Redirect {
        status: u16,
        location: String,
    },
    /// `OPTIONS`: 200 with this `Allow` header.
    Options {
        allow: String,
    },
    /// 405 with this `Allow` header.
    MethodNotAllowed {
        allow: String,
    },
    NotFound,
}

/// Route a request. `path` is the decoded path, `raw_query` the query as sent (it is carried
/// over unchanged into a redirect's `Location`).
pub fn route_request(method: &str, path: &str, raw_query: Option<&str>) -> Routed {
    let for_method = || ROUTES.iter().filter(move |r| r.method == method);
    if let Some((r, param)) = for_method().find_map(|r| match_exact(r, path).map(|p| (r, p))) {
        return Routed::Handle {
            endpoint: r.endpoint,
            param,
        };
    }
    let has_routes = METHODS.contains(&method);
    if has_routes && method != "CONNECT" && path != "/" {
        let status = if method == "GET" { 301 } else { 307 };
        let redirect = |to: String| Routed::Redirect {
            status,
            location: match raw_query {
                Some(q) => format!("{}?{q}", path::escape(&to)),
                None => path::escape(&to),
            },
        };
        // Trailing-slash redirect.
        if let Some(stripped) = path.strip_suffix('/').filter(|s| !s.is_empty()) {
            if for_method().any(|r| match_exact(r, stripped).is_some()) {
                return redirect(stripped.to_string());
            }
        }
        // Fixed-path redirect: cleaned, case-insensitive, trailing slash dropped.
        let cleaned = path::clean(path);
        let mut candidates = vec![cleaned.as_str()];
        if let Some(s) = cleaned.strip_suffix('/').filter(|s| !s.is_empty()) {
            candidates.push(s);
        }
        for c in candidates {
            if let Some(fixed) = for_method().find_map(|r| match_case_insensitive(r, c)) {
                return redirect(fixed);
            }
        }
    }
    let allowed = allowed_methods(path, method);
    if allowed.is_empty() {
        return Routed::NotFound;
    }
    // httprouter lists the methods sorted, OPTIONS included (`GET, OPTIONS, PUT`).
    let mut methods = allowed;
    methods.push("OPTIONS");
    methods.sort_unstable();
    let allow = methods.join(", ");
    if method == "OPTIONS" {
        Routed::Options { allow }
    } else {
        Routed::MethodNotAllowed { allow }
    }
}

/// The other methods with a route matching `path` exactly.
fn allowed_methods(path: &str, method: &str) -> Vec<&'static str> {
    METHODS
        .iter()
        .copied()
        .filter(|m| *m != method)
        .filter(|m| {
            ROUTES
                .iter()
                .any(|r| r.method == *m && match_exact(r, path).is_some())
        })
        .collect()
}

/// `Some(param)` if `path` matches the route exactly.
fn match_exact(r: &Route, path: &str) -> Option<Option<String>> {
    let mut param = None;
    let mut pat = r.pattern.split('/');
    let mut segs = path.split('/');
    loop {
        match (pat.next(), segs.next()) {
            (None, None) => return Some(param),
            (Some(p), Some(s)) if p.starts_with(':') => {
                if s.is_empty() {
                    return None;
                }
                param = Some(s.to_string());
            }
            (Some(p), Some(s)) if p == s => {}
            _ => return None,
        }
    }
}

/// The canonical path if `path` matches the route ignoring the case of literal segments
/// (a parameter keeps the case it was sent in).
fn match_case_insensitive(r: &Route, path: &str) -> Option<String> {
    let mut out = Vec::new();
    let mut pat = r.pattern.split('/');
    let mut segs = path.split('/');
    loop {
        match (pat.next(), segs.next()) {
            (None, None) => return Some(out.join("/")),
            (Some(p), Some(s)) if p.starts_with(':') => {
                if s.is_empty() {
                    return None;
                }
                out.push(s);
            }
            (Some(p), Some(s)) if p.eq_ignore_ascii_case(s) => out.push(p),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(e: Endpoint) -> Routed {
        Routed::Handle {
            endpoint: e,
            param: None,
        }
    }

    fn redirect(status: u16, location: &str) -> Routed {
        Routed::Redirect {
            status,
            location: location.to_string(),
        }
    }

    fn not_allowed(allow: &str) -> Routed {
        Routed::MethodNotAllowed {
            allow: allow.to_string(),
        }
    }

    #[test]
    fn exact_routes() {
        assert_eq!(route_request("GET", "/ping", None), handle(Endpoint::Ping));
        assert_eq!(
            route_request("POST", "/pub", Some("topic=a")),
            handle(Endpoint::Pub)
        );
        assert_eq!(
            route_request("POST", "/channel/unpause", None),
            handle(Endpoint::ChannelUnpause)
        );
        assert_eq!(
            route_request("PUT", "/config/Log_Level", None),
            Routed::Handle {
                endpoint: Endpoint::ConfigPut,
                param: Some("Log_Level".into())
            }
        );
    }

    #[test]
    fn not_found() {
        for (m, p) in [
            ("GET", "/nosuch"),
            ("POST", "/nosuch"),
            ("GET", "/"),
            ("GET", "/topic"),
            ("POST", "/topic"),
            ("POST", "/topic/nosuch"),
            ("GET", "/config/"),
            ("PUT", "/config"),
            ("GET", "/config/a/b"),
            ("POST", "/stats/"),
            ("GET", "/pub/"),
            ("GET", "/PUB"),
            ("OPTIONS", "/nosuch"),
            ("DELETE", "/nosuch"),
        ] {
            assert_eq!(route_request(m, p, None), Routed::NotFound, "{m} {p}");
        }
    }

    #[test]
    fn method_not_allowed() {
        assert_eq!(
            route_request("GET", "/pub", None),
            not_allowed("OPTIONS, POST")
        );
        assert_eq!(
            route_request("HEAD", "/ping", None),
            not_allowed("GET, OPTIONS")
        );
        assert_eq!(
            route_request("POST", "/stats", None),
            not_allowed("GET, OPTIONS")
        );
        assert_eq!(
            route_request("POST", "/config/x", None),
            not_allowed("GET, OPTIONS, PUT")
        );
        assert_eq!(
            route_request("DELETE", "/config/x", None),
            not_allowed("GET, OPTIONS, PUT")
        );
        assert_eq!(
            route_request("OPTIONS", "/config/x", None),
            Routed::Options {
                allow: "GET, OPTIONS, PUT".into()
            }
        );
        assert_eq!(
            route_request("OPTIONS", "/pub", None),
            Routed::Options {
                allow: "OPTIONS, POST".into()
            }
        );
    }

    #[test]
    fn redirects() {
        assert_eq!(
            route_request("GET", "/stats/", None),
            redirect(301, "/stats")
        );
        assert_eq!(
            route_request("GET", "/stats/", Some("format=json")),
            redirect(301, "/stats?format=json")
        );
        assert_eq!(
            route_request("POST", "/pub/", Some("topic=a")),
            redirect(307, "/pub?topic=a")
        );
        assert_eq!(
            route_request("GET", "/STATS", None),
            redirect(301, "/stats")
        );
        assert_eq!(route_request("GET", "/Ping/", None), redirect(301, "/ping"));
        assert_eq!(
            route_request("POST", "/Pub", Some("")),
            redirect(307, "/pub?")
        );
        assert_eq!(route_request("GET", "//ping", None), redirect(301, "/ping"));
        assert_eq!(
            route_request("GET", "/x/../ping", None),
            redirect(301, "/ping")
        );
        assert_eq!(
            route_request("GET", "/CONFIG/Foo", None),
            redirect(301, "/config/Foo")
        );
        assert_eq!(
            route_request("PUT", "/config/foo/", None),
            redirect(307, "/config/foo")
        );
        assert_eq!(
            route_request("POST", "/Topic/Create/", None),
            redirect(307, "/topic/create")
        );
        assert_eq!(
            route_request("GET", "/config/a b/", None),
            redirect(301, "/config/a%20b")
        );
    }
}
