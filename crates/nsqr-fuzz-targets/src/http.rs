//! The URL handling both daemons' HTTP servers share (`nsq_common::http`): the query parser
//! (Go's `ParseQuery`), the path decoder, cleaner and escaper (Go's `net/url`, httprouter's
//! `CleanPath`) and the router, on whatever request target a client sends.
//!
//! Input: `[method][target...]`, the target as `path?query` (lossily UTF-8, as hyper only
//! hands over valid strings). Checks: a query parses iff each of its `&`-parts does, into
//! their pairs, and `get` answers a key's first value; escaping a decoded path decodes back
//! to it; cleaning is idempotent and yields an absolute path; a redirect leads to a path that
//! routes to a handler (no redirect loops).

use nsq_common::http::path;
use nsq_common::http::query::Query;
use nsq_common::http::router::{route, route_request, Route, Routed};

/// nsqd's route shapes: literal paths, a parameter segment, several methods on one path.
const ROUTES: &[Route<u8>] = &[
    route("GET", "/ping", 0),
    route("GET", "/info", 1),
    route("POST", "/pub", 2),
    route("POST", "/mpub", 3),
    route("GET", "/stats", 4),
    route("POST", "/topic/create", 5),
    route("POST", "/channel/pause", 6),
    route("GET", "/config/:opt", 7),
    route("PUT", "/config/:opt", 8),
    route("GET", "/metrics", 9),
];

const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "OPTIONS", "HEAD", "CONNECT"];

pub fn http_url(data: &[u8]) {
    let [method, target @ ..] = data else {
        return;
    };
    let method = METHODS[usize::from(*method) % METHODS.len()];
    let target = String::from_utf8_lossy(target);
    let (raw_path, raw_query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (&*target, None),
    };
    check_query(raw_query);
    let Some(decoded) = path::decode(raw_path) else {
        return; // Go's server answers a bare 400
    };
    assert_eq!(
        path::decode(&path::escape(&decoded)).as_deref(),
        Some(&*decoded)
    );
    let cleaned = path::clean(&decoded);
    assert!(cleaned.starts_with('/'), "{cleaned:?}");
    assert_eq!(path::clean(&cleaned), cleaned, "clean is not idempotent");
    let _ = path::html_escape(&decoded);
    if let Routed::Redirect { location, .. } = route_request(ROUTES, method, &decoded, raw_query) {
        let to = location.split_once('?').map_or(&*location, |(p, _)| p);
        let to = path::decode(to).unwrap_or_else(|| panic!("redirect to undecodable {to:?}"));
        let again = route_request(ROUTES, method, &to, raw_query);
        assert!(
            matches!(again, Routed::Handle { .. }),
            "{method} {decoded:?} redirects to {to:?}, which gives {again:?}"
        );
    }
}

fn check_query(raw: Option<&str>) {
    let parts: Vec<&str> = raw.unwrap_or("").split('&').collect();
    let alone: Vec<_> = parts.iter().map(|p| Query::parse(Some(p))).collect();
    let Ok(q) = Query::parse(raw) else {
        assert!(
            alone.iter().any(Result::is_err),
            "{raw:?} refused, yet each part parses"
        );
        return;
    };
    // Go's rules: a query parses iff each part does, and holds the non-empty parts' pairs.
    let mut pairs = Vec::new();
    for part in alone {
        let Ok(part) = part else {
            panic!("{raw:?} parsed, yet one of its parts does not");
        };
        pairs.extend(part.pairs().map(|(k, v)| (k.to_string(), v.to_string())));
    }
    assert!(q
        .pairs()
        .eq(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))));
    for (k, _) in q.pairs() {
        let first = pairs
            .iter()
            .find(|(pk, _)| pk == k)
            .map(|(_, v)| v.as_str());
        assert_eq!(q.get(k), first, "get({k:?}) is not the first value");
    }
}
