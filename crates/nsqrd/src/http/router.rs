//! nsqd's route table. The router semantics (exact match, trailing-slash and fixed-path
//! redirects, `OPTIONS`, 405 with `Allow`, 404) are httprouter's as both nsqd and nsqlookupd
//! configure it, in `nsq_common::http::router`.

use nsq_common::http::router::{self, route, Route};

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
    /// Not in nsqd: topic and channel settings (`queue_settings.rs`).
    TopicSettingsGet,
    TopicSettingsSet,
    ChannelSettingsGet,
    ChannelSettingsSet,
    /// Not in nsqd: consuming over HTTP (`consume.rs`, `stream.rs`, `settle.rs`).
    ChannelReceive,
    ChannelStream,
    MessageFin,
    MessageReq,
    MessageTouch,
    MessageTerm,
}

/// nsqd's 17 API routes, `/metrics`, and nsqr's HTTP queue routes (settings, consuming). The Go-only debug routes (`/debug/pprof/*`, `/debug/setblockrate`,
/// `/debug/freememory`) are not served.
const ROUTES: &[Route<Endpoint>] = &[
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
    route("GET", "/topic/config", Endpoint::TopicSettingsGet),
    route("POST", "/topic/config", Endpoint::TopicSettingsSet),
    route("GET", "/channel/config", Endpoint::ChannelSettingsGet),
    route("POST", "/channel/config", Endpoint::ChannelSettingsSet),
    route("POST", "/channel/receive", Endpoint::ChannelReceive),
    route("GET", "/channel/stream", Endpoint::ChannelStream),
    route("POST", "/message/fin", Endpoint::MessageFin),
    route("POST", "/message/req", Endpoint::MessageReq),
    route("POST", "/message/touch", Endpoint::MessageTouch),
    route("POST", "/message/term", Endpoint::MessageTerm),
];

/// What the router decided for a request.
pub type Routed = router::Routed<Endpoint>;

/// Route a request. `path` is the decoded path, `raw_query` the query as sent (it is carried
/// over unchanged into a redirect's `Location`).
pub fn route_request(method: &str, path: &str, raw_query: Option<&str>) -> Routed {
    router::route_request(ROUTES, method, path, raw_query)
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
