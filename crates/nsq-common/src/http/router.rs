//! The router semantics nsqd and nsqlookupd share (julienschmidt/httprouter as both configure
//! it), hand-written so each rule is exact and visible; each daemon supplies its route table:
//! 1. a route of the request's method matching the path exactly runs its handler;
//! 2. otherwise, for a path other than `/`, a trailing slash is dropped, or the cleaned path is
//!    matched case-insensitively, against the routes *of that method*; a hit is a redirect
//!    (301 for GET, 307 for everything else, so the method and body are kept);
//! 3. `OPTIONS` on a path some method serves is 200 with `Allow`;
//! 4. any other method on such a path is 405 with `Allow` (so `HEAD` is 405, never routed);
//! 5. everything else is 404.
//!
//! `Allow` lists the methods sorted, `OPTIONS` included (`GET, OPTIONS, PUT`).

use super::path;

/// One route: method, pattern and what it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<E> {
    pub method: &'static str,
    /// Literal segments, or `:name` for one non-empty parameter segment.
    pub pattern: &'static str,
    pub endpoint: E,
}

/// A route, for writing tables as `const ROUTES: &[Route<E>] = &[route("GET", "/ping", …)]`.
pub const fn route<E>(method: &'static str, pattern: &'static str, endpoint: E) -> Route<E> {
    Route {
        method,
        pattern,
        endpoint,
    }
}

/// What the router decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed<E> {
    /// Run the endpoint; `param` is the `:name` segment of a parameter route.
    Handle {
        endpoint: E,
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

/// Route a request against `routes`. `path` is the decoded path, `raw_query` the query as sent
/// (it is carried over unchanged into a redirect's `Location`).
pub fn route_request<E: Copy>(
    routes: &[Route<E>],
    method: &str,
    path: &str,
    raw_query: Option<&str>,
) -> Routed<E> {
    let for_method = || routes.iter().filter(move |r| r.method == method);
    if let Some((r, param)) = for_method().find_map(|r| match_exact(r, path).map(|p| (r, p))) {
        return Routed::Handle {
            endpoint: r.endpoint,
            param,
        };
    }
    let has_routes = for_method().next().is_some();
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
    let mut methods = allowed_methods(routes, path, method);
    if methods.is_empty() {
        return Routed::NotFound;
    }
    methods.push("OPTIONS");
    methods.sort_unstable();
    let allow = methods.join(", ");
    if method == "OPTIONS" {
        Routed::Options { allow }
    } else {
        Routed::MethodNotAllowed { allow }
    }
}

/// The other methods with a route matching `path` exactly (each once).
fn allowed_methods<E>(routes: &[Route<E>], path: &str, method: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in routes {
        if r.method != method && !out.contains(&r.method) && match_exact(r, path).is_some() {
            out.push(r.method);
        }
    }
    out
}

/// `Some(param)` if `path` matches the route exactly.
fn match_exact<E>(r: &Route<E>, path: &str) -> Option<Option<String>> {
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
fn match_case_insensitive<E>(r: &Route<E>, path: &str) -> Option<String> {
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

    const ROUTES: &[Route<u8>] = &[
        route("GET", "/ping", 1),
        route("POST", "/topic/create", 2),
        route("GET", "/config/:opt", 3),
        route("PUT", "/config/:opt", 4),
    ];

    fn r(method: &str, path: &str, query: Option<&str>) -> Routed<u8> {
        route_request(ROUTES, method, path, query)
    }

    fn redirect(status: u16, location: &str) -> Routed<u8> {
        Routed::Redirect {
            status,
            location: location.to_string(),
        }
    }

    #[test]
    fn exact_and_parameters() {
        assert_eq!(
            r("GET", "/ping", None),
            Routed::Handle {
                endpoint: 1,
                param: None
            }
        );
        assert_eq!(
            r("PUT", "/config/Log_Level", None),
            Routed::Handle {
                endpoint: 4,
                param: Some("Log_Level".into())
            }
        );
        for (m, p) in [
            ("GET", "/"),
            ("GET", "/nosuch"),
            ("GET", "/config/"),
            ("GET", "/config/a/b"),
            ("POST", "/topic"),
            ("DELETE", "/nosuch"),
            ("OPTIONS", "/nosuch"),
            ("CONNECT", "/ping/"),
        ] {
            assert_eq!(r(m, p, None), Routed::NotFound, "{m} {p}");
        }
    }

    #[test]
    fn allow_is_sorted_with_options() {
        let na = |allow: &str| Routed::MethodNotAllowed {
            allow: allow.into(),
        };
        assert_eq!(r("HEAD", "/ping", None), na("GET, OPTIONS"));
        assert_eq!(r("GET", "/topic/create", None), na("OPTIONS, POST"));
        assert_eq!(r("POST", "/config/x", None), na("GET, OPTIONS, PUT"));
        assert_eq!(
            r("OPTIONS", "/config/x", None),
            Routed::Options {
                allow: "GET, OPTIONS, PUT".into()
            }
        );
    }

    #[test]
    fn redirects() {
        assert_eq!(r("GET", "/ping/", None), redirect(301, "/ping"));
        assert_eq!(r("GET", "/PING", Some("a=1")), redirect(301, "/ping?a=1"));
        assert_eq!(r("GET", "//ping", None), redirect(301, "/ping"));
        assert_eq!(r("GET", "/x/../Ping/", None), redirect(301, "/ping"));
        assert_eq!(
            r("POST", "/Topic/Create/", Some("")),
            redirect(307, "/topic/create?")
        );
        assert_eq!(r("GET", "/CONFIG/Foo", None), redirect(301, "/config/Foo"));
        assert_eq!(
            r("GET", "/config/a b/", None),
            redirect(301, "/config/a%20b")
        );
        // Only the method's own routes are candidates.
        assert_eq!(r("GET", "/Topic/Create", None), Routed::NotFound);
    }
}
