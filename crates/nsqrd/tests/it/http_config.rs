//! `/config/:opt`: GET of every kind of option (raw-text strings, JSON ints / bools / nanosecond
//! durations / lists, log_level and TLS enums), unknown names, PUT of `log_level` and
//! `nsqlookupd_tcp_addresses`, PUT errors and their order.
use crate::common::*;
use crate::http_common::*;

/// GET /config/<opt>: (status, body, content type).
fn get_opt(s: &Server, opt: &str) -> (u16, String, Option<String>) {
    let r = s.get(&format!("/config/{opt}"));
    if r.status == 200 {
        assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1_HEADER), "{opt}");
    }
    (
        r.status,
        r.text(),
        r.header("Content-Type").map(str::to_string),
    )
}

/// Assert a JSON-valued option (compared as text).
#[track_caller]
fn assert_json_opt(s: &Server, opt: &str, want: &str) {
    let (st, body, ct) = get_opt(s, opt);
    assert_eq!((st, body.as_str()), (200, want), "{opt}");
    assert_eq!(ct.as_deref(), Some(JSON_CT), "{opt}");
}

/// Assert a string option (raw text, not JSON-quoted).
#[track_caller]
fn assert_text_opt(s: &Server, opt: &str, want: &str) {
    let (st, body, ct) = get_opt(s, opt);
    assert_eq!((st, body.as_str()), (200, want), "{opt}");
    let want_ct = if want.is_empty() { None } else { Some(TEXT_CT) };
    assert_eq!(ct.as_deref(), want_ct, "{opt}");
}

fn put(s: &Server, opt: &str, body: &[u8]) -> HttpResponse {
    s.http("PUT", &format!("/config/{opt}"), body)
}

#[test]
fn string_options_are_raw_text() {
    let s = Server::start(&[]);
    // The configured listener addresses, as given (not the resolved ports).
    assert_text_opt(&s, "tcp_address", "127.0.0.1:0");
    assert_text_opt(&s, "http_address", "127.0.0.1:0");
    assert_text_opt(&s, "https_address", "");
    assert_text_opt(&s, "broadcast_address", "127.0.0.1");
    assert_text_opt(&s, "data_path", &s.data_path.display().to_string());
    assert_text_opt(&s, "log_prefix", "[nsqd] ");
    assert_text_opt(&s, "statsd_address", "");
    assert_text_opt(&s, "tls_cert", "");
    assert_text_opt(&s, "tls_key", "");
    assert_text_opt(&s, "tls_client_auth_policy", "");
    assert_text_opt(&s, "tls_root_ca_file", "");
}

#[test]
fn statsd_prefix_is_resolved() {
    let s = Server::start(&[]);
    let want = format!("nsq.127_0_0_1_{}.", s.http.port());
    assert_text_opt(&s, "statsd_prefix", &want);
}

#[test]
fn integer_options() {
    let s = Server::start(&["--node-id=7", "--max-rdy-count=100"]);
    assert_json_opt(&s, "max_rdy_count", "100");
    assert_json_opt(&s, "id", "7");
    assert_json_opt(&s, "mem_queue_size", "10000");
    assert_json_opt(&s, "max_bytes_per_file", "104857600");
    assert_json_opt(&s, "sync_every", "2500");
    assert_json_opt(&s, "queue_scan_worker_pool_max", "4");
    assert_json_opt(&s, "queue_scan_selection_count", "20");
    assert_json_opt(&s, "max_msg_size", "1048576");
    assert_json_opt(&s, "max_body_size", "5242880");
    assert_json_opt(&s, "max_output_buffer_size", "65536");
    assert_json_opt(&s, "max_channel_consumers", "0");
    assert_json_opt(&s, "statsd_udp_packet_size", "508");
    assert_json_opt(&s, "max_deflate_level", "6");
}

#[test]
fn broadcast_ports_resolve_to_listen_ports() {
    let s = Server::start(&[]);
    assert_json_opt(&s, "broadcast_tcp_port", &s.tcp.port().to_string());
    assert_json_opt(&s, "broadcast_http_port", &s.http.port().to_string());
    let s2 = Server::start(&["--broadcast-tcp-port=4000", "--broadcast-http-port=4001"]);
    assert_json_opt(&s2, "broadcast_tcp_port", "4000");
    assert_json_opt(&s2, "broadcast_http_port", "4001");
    assert_text_opt(&s2, "statsd_prefix", "nsq.127_0_0_1_4001.");
}

#[test]
fn bool_options() {
    let s = Server::start(&[]);
    assert_json_opt(&s, "deflate", "true");
    assert_json_opt(&s, "snappy", "true");
    assert_json_opt(&s, "statsd_mem_stats", "true");
    assert_json_opt(&s, "statsd_exclude_ephemeral", "false");
    let s = Server::start(&[
        "--deflate=false",
        "--snappy=false",
        "--statsd-exclude-ephemeral",
    ]);
    assert_json_opt(&s, "deflate", "false");
    assert_json_opt(&s, "snappy", "false");
    assert_json_opt(&s, "statsd_exclude_ephemeral", "true");
}

#[test]
fn duration_options_are_nanoseconds() {
    let s = Server::start(&[]);
    for (opt, ns) in [
        ("msg_timeout", "60000000000"),
        ("max_msg_timeout", "900000000000"),
        ("max_req_timeout", "3600000000000"),
        ("sync_timeout", "2000000000"),
        ("max_heartbeat_interval", "60000000000"),
        ("max_output_buffer_timeout", "30000000000"),
        ("min_output_buffer_timeout", "25000000"),
        ("output_buffer_timeout", "250000000"),
        ("statsd_interval", "60000000000"),
        ("e2e_processing_latency_window_time", "600000000000"),
        ("http_client_connect_timeout", "2000000000"),
        ("http_client_request_timeout", "5000000000"),
    ] {
        assert_json_opt(&s, opt, ns);
    }
    let s = Server::start(&["--msg-timeout=1m30s", "--max-req-timeout=1500ms"]);
    assert_json_opt(&s, "msg_timeout", "90000000000");
    assert_json_opt(&s, "max_req_timeout", "1500000000");
}

#[test]
fn list_options() {
    let s = Server::start(&[]);
    assert_json_opt(&s, "nsqlookupd_tcp_addresses", "[]");
    assert_json_opt(&s, "auth_http_addresses", "[]");
    assert_json_opt(&s, "e2e_processing_latency_percentiles", "[]");
    // Percentiles: repeatable and comma-separated, stored sorted descending.
    let s = Server::start(&[
        "--e2e-processing-latency-percentile=0.5",
        "--e2e-processing-latency-percentile=0.99,1.0",
    ]);
    let r = s.get("/config/e2e_processing_latency_percentiles");
    assert_eq!(r.status, 200);
    let v: Vec<f64> = r
        .json()
        .as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("f64"))
        .collect();
    assert_eq!(v, [1.0, 0.99, 0.5]);
}

#[test]
fn log_level_and_tls_enums_are_ints() {
    let s = Server::start(&[]);
    assert_json_opt(&s, "log_level", "2");
    assert_json_opt(&s, "tls_min_version", "769");
    assert_json_opt(&s, "tls_required", "0");
    // (Levels above info would hide the listener lines the harness waits for.)
    let s = Server::start(&["--log-level=DEBUG"]);
    assert_json_opt(&s, "log_level", "1");
}

#[test]
fn unknown_options_are_invalid_option() {
    let s = Server::start(&[]);
    for opt in [
        "nosuch",
        "node_id",
        "verbose",
        "config",
        "version",
        "worker_id",
        "msg-timeout",
        "MSG_TIMEOUT",
        "lookupd_tcp_address",
        "client_timeout",
        "queue_scan_interval",
        "logger",
    ] {
        let r = s.get(&format!("/config/{opt}"));
        assert_err(&r, 400, "INVALID_OPTION");
    }
}

#[test]
fn put_log_level() {
    let s = Server::start(&[]);
    let r = put(&s, "log_level", b"debug");
    assert_eq!((r.status, r.text()), (200, "1".to_string()));
    assert_eq!(r.header("Content-Type"), Some(JSON_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1_HEADER));
    assert_json_opt(&s, "log_level", "1");
    // Case-insensitive.
    let r = put(&s, "log_level", b"ERROR");
    assert_eq!((r.status, r.text()), (200, "4".to_string()));
    let r = put(&s, "log_level", b"Info");
    assert_eq!((r.status, r.text()), (200, "2".to_string()));
    assert_json_opt(&s, "log_level", "2");
}

#[test]
fn put_log_level_bad_values() {
    let s = Server::start(&[]);
    for v in [&b"warning"[..], b"debug\n", b" info", b"2", b"\"debug\""] {
        assert_err(&put(&s, "log_level", v), 400, "INVALID_VALUE");
    }
    assert_err(&put(&s, "log_level", b""), 413, "INVALID_VALUE");
    assert_json_opt(&s, "log_level", "2");
}

#[test]
fn put_body_limit_is_max_msg_size() {
    let s = Server::start(&["--max-msg-size=10"]);
    assert_err(&put(&s, "log_level", b"xxxxxxxxxxx"), 413, "INVALID_VALUE");
    assert_err(&put(&s, "log_level", b"xxxxxxxxxx"), 400, "INVALID_VALUE");
    // The body is checked before the option name.
    assert_err(&put(&s, "nosuch", b"xxxxxxxxxxx"), 413, "INVALID_VALUE");
}

#[test]
fn put_other_options_is_invalid_option() {
    let s = Server::start(&[]);
    for (opt, body) in [
        ("msg_timeout", &b"5s"[..]),
        ("max_rdy_count", b"5"),
        ("broadcast_address", b"x"),
        ("nosuch", b"x"),
        ("node_id", b"1"),
    ] {
        assert_err(&put(&s, opt, body), 400, "INVALID_OPTION");
    }
    // Empty body is rejected first, whatever the option.
    assert_err(&put(&s, "nosuch", b""), 413, "INVALID_VALUE");
    assert_err(&put(&s, "msg_timeout", b""), 413, "INVALID_VALUE");
    assert_json_opt(&s, "msg_timeout", "60000000000");
    assert_json_opt(&s, "max_rdy_count", "2500");
}

#[test]
fn put_nsqlookupd_addresses_validation() {
    let s = Server::start(&[]);
    for body in [&b"notjson"[..], b"\"a:1\"", b"[1]", b"{}", b"[\"a\""] {
        let r = put(&s, "nsqlookupd_tcp_addresses", body);
        assert_err(&r, 400, "INVALID_VALUE");
    }
    let r = put(&s, "nsqlookupd_tcp_addresses", b"[]");
    assert_eq!((r.status, r.text()), (200, "[]".to_string()));
    assert_eq!(r.header("Content-Type"), Some(JSON_CT));
    assert_json_opt(&s, "nsqlookupd_tcp_addresses", "[]");
}

#[test]
fn other_methods_are_not_allowed() {
    let s = Server::start(&[]);
    for m in ["POST", "DELETE", "PATCH"] {
        let r = s.http(m, "/config/log_level", b"debug");
        assert_err(&r, 405, "METHOD_NOT_ALLOWED");
    }
    assert_json_opt(&s, "log_level", "2");
}
