//! nsqlookupd's route table. The router semantics are those of julienschmidt/httprouter v1.3 as
//! nsqlookupd (and nsqd) configure it, in `nsq_common::http::router`: exact match, then
//! trailing-slash and case-fixing redirects (301 for GET, 307 otherwise), `OPTIONS` and 405
//! with a sorted `Allow`, else 404. The Go-runtime routes `/debug/pprof/*` are not served (404).

use nsq_common::http::router::{self, route, Route};

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
const ROUTES: &[Route<Endpoint>] = &[
    route("GET", "/ping", Endpoint::Ping),
    route("GET", "/info", Endpoint::Info),
    route("GET", "/debug", Endpoint::Debug),
    route("GET", "/lookup", Endpoint::Lookup),
    route("GET", "/topics", Endpoint::Topics),
    route("GET", "/channels", Endpoint::Channels),
    route("GET", "/nodes", Endpoint::Nodes),
    route("POST", "/topic/create", Endpoint::TopicCreate),
    route("POST", "/topic/delete", Endpoint::TopicDelete),
    route("POST", "/channel/create", Endpoint::ChannelCreate),
    route("POST", "/channel/delete", Endpoint::ChannelDelete),
    route("POST", "/topic/tombstone", Endpoint::TopicTombstone),
];

/// What the router decided.
pub type Routed = router::Routed<Endpoint>;

/// Routes a request. `path` is the decoded path, `raw_query` the query as sent.
pub fn route_request(method: &str, path: &str, raw_query: Option<&str>) -> Routed {
    router::route_request(ROUTES, method, path, raw_query)
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

    fn handle(endpoint: Endpoint) -> Routed {
        Routed::Handle {
            endpoint,
            param: None,
        }
    }

    #[test]
    fn exact_and_not_found() {
        assert_eq!(
            route_request("GET", "/lookup", Some("topic=t")),
            handle(Endpoint::Lookup)
        );
        assert_eq!(
            route_request("POST", "/topic/tombstone", None),
            handle(Endpoint::TopicTombstone)
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
            assert_eq!(route_request(m, p, None), Routed::NotFound, "{m} {p}");
        }
    }

    #[test]
    fn allow_is_sorted() {
        let na = |allow: &str| Routed::MethodNotAllowed {
            allow: allow.into(),
        };
        assert_eq!(
            route_request("GET", "/topic/create", None),
            na("OPTIONS, POST")
        );
        assert_eq!(route_request("HEAD", "/ping", None), na("GET, OPTIONS"));
        assert_eq!(route_request("DELETE", "/topics", None), na("GET, OPTIONS"));
        assert_eq!(route_request("POST", "/lookup", None), na("GET, OPTIONS"));
        assert_eq!(
            route_request("OPTIONS", "/debug", None),
            Routed::Options {
                allow: "GET, OPTIONS".into()
            }
        );
    }

    #[test]
    fn redirects() {
        assert_eq!(
            route_request("GET", "/debug/", None),
            redirect(301, "/debug")
        );
        assert_eq!(
            route_request("GET", "/Topics", None),
            redirect(301, "/topics")
        );
        assert_eq!(
            route_request("GET", "/lookup/", Some("topic=a")),
            redirect(301, "/lookup?topic=a")
        );
        assert_eq!(
            route_request("POST", "/topic/create/", Some("topic=y")),
            redirect(307, "/topic/create?topic=y")
        );
        assert_eq!(
            route_request("POST", "/Topic/Create", Some("")),
            redirect(307, "/topic/create?")
        );
        assert_eq!(
            route_request("GET", "//nodes", None),
            redirect(301, "/nodes")
        );
        assert_eq!(
            route_request("GET", "/x/../PING/", None),
            redirect(301, "/ping")
        );
        // Only the method's own routes are candidates.
        assert_eq!(
            route_request("GET", "/Topic/Create", None),
            Routed::NotFound
        );
    }
}
