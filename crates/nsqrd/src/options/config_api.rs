//! `GET` / `PUT /config/:opt`: reading every option and changing the two live ones.
//!
//! nsqd answers a GET with the option's value as the Go type marshals: strings as raw text,
//! everything else as JSON (durations in nanoseconds, log level 1..5, `tls_required` 0/1/2,
//! `tls_min_version` as the TLS constant). `statsd_prefix` is reported resolved, as nsqd stores it.
//! A PUT may only change `log_level` and `nsqlookupd_tcp_addresses`.

use serde_json::json;

use super::addr::{join_host_port, split_host_port};
use super::table::{FlagSpec, Options};
use super::types::Value;
use nsq_common::duration::as_go_nanos;

/// The body of a successful `GET /config/:opt`.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
    /// A string option, sent as raw text.
    Text(String),
    /// Any other option, sent as JSON.
    Json(serde_json::Value),
}

#[cfg(test)]
impl ConfigValue {
    /// The HTTP response body (what the tests compare against nsqd's).
    pub fn body(&self) -> String {
        match self {
            ConfigValue::Text(s) => s.clone(),
            ConfigValue::Json(v) => v.to_string(),
        }
    }
}

/// Why a `PUT /config/:opt` was refused. `Display` is nsqd's error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConfigPutError {
    /// Not a settable option (400).
    #[error("INVALID_OPTION")]
    InvalidOption,
    /// The body is not a valid value for the option (400).
    #[error("INVALID_VALUE")]
    InvalidValue,
    /// Empty body, or longer than `--max-msg-size` (413).
    #[error("INVALID_VALUE")]
    BodySize,
}

impl ConfigPutError {
    /// The HTTP status nsqd answers with.
    pub fn status(self) -> u16 {
        match self {
            ConfigPutError::BodySize => 413,
            _ => 400,
        }
    }
}

/// A float as Go's JSON encoder writes it: integral values without a fraction (`1`, not `1.0`).
fn json_float(f: f64) -> serde_json::Value {
    match nsq_common::float::integral(f, nsq_common::float::EXACT_LIMIT) {
        Some(n) => json!(n),
        None => json!(f),
    }
}

fn render(v: Value) -> ConfigValue {
    ConfigValue::Json(match v {
        Value::Str(s) => return ConfigValue::Text(s),
        Value::Int(n) => json!(n),
        Value::U16(n) => json!(n),
        Value::Bool(b) => json!(b),
        Value::Duration(d) => json!(as_go_nanos(d)),
        Value::StrList(l) => json!(l),
        Value::FloatList(l) => serde_json::Value::Array(l.into_iter().map(json_float).collect()),
        Value::LogLevel(l) => json!(l.as_int()),
        Value::TlsRequired(t) => json!(t.as_int()),
    })
}

impl Options {
    /// `GET /config/:opt`: the value of the option with config key `key`, or `None` (400
    /// `INVALID_OPTION`) for names that are not config keys (`node_id`, `verbose`, `config`…).
    pub fn config_get(&self, key: &str) -> Option<ConfigValue> {
        let spec = FlagSpec::by_cfg(key)?;
        if key == "statsd_prefix" {
            return Some(ConfigValue::Text(
                self.resolved_statsd_prefix(self.statsd_host_port()),
            ));
        }
        Some(render((spec.get)(self)))
    }

    /// `PUT /config/:opt` with `body`: sets `log_level` (level name, any case) or
    /// `nsqlookupd_tcp_addresses` (JSON array of strings). Nothing changes on error.
    pub fn config_put(&mut self, key: &str, body: &[u8]) -> Result<(), ConfigPutError> {
        if body.is_empty() || i64::try_from(body.len()).map_or(true, |n| n > self.max_msg_size) {
            return Err(ConfigPutError::BodySize);
        }
        match key {
            "nsqlookupd_tcp_addresses" => {
                let addrs: Option<Vec<String>> =
                    serde_json::from_slice(body).map_err(|_| ConfigPutError::InvalidValue)?;
                self.nsqlookupd_tcp_addresses = addrs.unwrap_or_default();
            }
            "log_level" => {
                let text = std::str::from_utf8(body).map_err(|_| ConfigPutError::InvalidValue)?;
                self.log_level = text.parse().map_err(|_| ConfigPutError::InvalidValue)?;
            }
            _ => return Err(ConfigPutError::InvalidOption),
        }
        Ok(())
    }

    /// The statsd key prefix with every `%s` replaced by the host key
    /// (`<broadcast_address>:<http_port>` with `.` and `:` turned into `_`) and a trailing `.`
    /// ensured; empty stays empty (no prefix). Pass the HTTP port actually listened on when
    /// `broadcast_http_port` is 0.
    pub fn resolved_statsd_prefix(&self, http_port: u16) -> String {
        if self.statsd_prefix.is_empty() {
            return String::new();
        }
        let host_key = join_host_port(&self.broadcast_address, &http_port.to_string())
            .replace(['.', ':'], "_");
        let mut prefix = self.statsd_prefix.replace("%s", &host_key);
        if !prefix.ends_with('.') {
            prefix.push('.');
        }
        prefix
    }

    /// The port nsqd puts in the statsd host key: `--broadcast-http-port`, or else the port of
    /// `--http-address` as configured (0 when it has none).
    fn statsd_host_port(&self) -> u16 {
        if self.broadcast_http_port != 0 {
            return self.broadcast_http_port;
        }
        split_host_port(&self.http_address)
            .and_then(|(_, port)| port.parse().ok())
            .unwrap_or(0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::options::types::{LogLevel, TlsRequired};
    use std::time::Duration;

    fn json(o: &Options, key: &str) -> serde_json::Value {
        match o.config_get(key) {
            Some(ConfigValue::Json(v)) => v,
            other => panic!("{key}: {other:?}"),
        }
    }

    #[test]
    fn get_strings_as_raw_text() {
        let o = Options::default();
        assert_eq!(
            o.config_get("tcp_address"),
            Some(ConfigValue::Text("0.0.0.0:4150".to_string()))
        );
        assert_eq!(o.config_get("log_prefix").unwrap().body(), "[nsqd] ");
        assert_eq!(o.config_get("data_path").unwrap().body(), "");
    }

    #[test]
    fn get_typed_values_as_json() {
        let mut o = Options::default();
        assert_eq!(json(&o, "mem_queue_size"), json!(10000));
        assert_eq!(json(&o, "snappy"), json!(true));
        assert_eq!(json(&o, "statsd_exclude_ephemeral"), json!(false));
        assert_eq!(json(&o, "msg_timeout"), json!(60_000_000_000i64));
        assert_eq!(json(&o, "min_output_buffer_timeout"), json!(25_000_000));
        assert_eq!(json(&o, "log_level"), json!(2));
        assert_eq!(json(&o, "tls_min_version"), json!(769));
        assert_eq!(json(&o, "tls_required"), json!(0));
        assert_eq!(json(&o, "nsqlookupd_tcp_addresses"), json!([]));
        assert_eq!(json(&o, "e2e_processing_latency_percentiles"), json!([]));
        assert_eq!(json(&o, "broadcast_tcp_port"), json!(0));
        assert_eq!(json(&o, "id"), json!(o.node_id));

        o.log_level = LogLevel::Fatal;
        o.tls_required = TlsRequired::TcpHttps;
        o.tls_min_version = 0x0304;
        o.nsqlookupd_tcp_addresses = vec!["a:4160".into(), "b:4160".into()];
        o.e2e_processing_latency_percentiles = vec![1.0, 0.99];
        o.sync_timeout = Duration::from_millis(1500);
        assert_eq!(json(&o, "log_level"), json!(5));
        assert_eq!(json(&o, "tls_required"), json!(1));
        assert_eq!(json(&o, "tls_min_version"), json!(772));
        assert_eq!(
            o.config_get("nsqlookupd_tcp_addresses").unwrap().body(),
            r#"["a:4160","b:4160"]"#
        );
        assert_eq!(
            o.config_get("e2e_processing_latency_percentiles")
                .unwrap()
                .body(),
            "[1,0.99]"
        );
        assert_eq!(json(&o, "sync_timeout"), json!(1_500_000_000));
    }

    #[test]
    fn unknown_keys_are_invalid_options() {
        let o = Options::default();
        for k in [
            "node_id",
            "verbose",
            "config",
            "version",
            "worker_id",
            "tcp-address",
            "",
        ] {
            assert_eq!(o.config_get(k), None, "{k}");
        }
    }

    #[test]
    fn statsd_prefix_is_resolved() {
        let mut o = Options {
            broadcast_address: "127.0.0.1".into(),
            http_address: "127.0.0.1:14151".into(),
            ..Options::default()
        };
        assert_eq!(
            o.config_get("statsd_prefix"),
            Some(ConfigValue::Text("nsq.127_0_0_1_14151.".to_string()))
        );
        o.broadcast_address = "my.host".into();
        o.broadcast_http_port = 14651;
        assert_eq!(
            o.config_get("statsd_prefix").unwrap().body(),
            "nsq.my_host_14651."
        );
        assert_eq!(o.resolved_statsd_prefix(4151), "nsq.my_host_4151.");
        o.statsd_prefix = "stats.%s.nsq.".into();
        assert_eq!(o.resolved_statsd_prefix(1), "stats.my_host_1.nsq.");
        o.statsd_prefix = "plain".into();
        assert_eq!(o.resolved_statsd_prefix(1), "plain.");
        o.statsd_prefix = String::new();
        assert_eq!(o.resolved_statsd_prefix(1), "");
        o.statsd_prefix = "%s".into();
        o.broadcast_address = "::1".into();
        assert_eq!(o.resolved_statsd_prefix(80), "[__1]_80.");
    }

    #[test]
    fn put_log_level() {
        let mut o = Options::default();
        assert_eq!(o.config_put("log_level", b"DeBuG"), Ok(()));
        assert_eq!(o.log_level, LogLevel::Debug);
        assert_eq!(json(&o, "log_level"), json!(1));
        assert_eq!(
            o.config_put("log_level", b"loud"),
            Err(ConfigPutError::InvalidValue)
        );
        assert_eq!(
            o.config_put("log_level", b"warn\n"),
            Err(ConfigPutError::InvalidValue)
        );
        assert_eq!(
            o.config_put("log_level", b"\xff"),
            Err(ConfigPutError::InvalidValue)
        );
        assert_eq!(o.log_level, LogLevel::Debug);
    }

    #[test]
    fn put_lookupd_addresses() {
        let mut o = Options::default();
        let key = "nsqlookupd_tcp_addresses";
        assert_eq!(o.config_put(key, br#"["127.0.0.1:4160","h:4160"]"#), Ok(()));
        assert_eq!(o.nsqlookupd_tcp_addresses, ["127.0.0.1:4160", "h:4160"]);
        assert_eq!(o.config_put(key, b"[1]"), Err(ConfigPutError::InvalidValue));
        assert_eq!(o.config_put(key, b"a:1"), Err(ConfigPutError::InvalidValue));
        assert_eq!(o.nsqlookupd_tcp_addresses.len(), 2);
        assert_eq!(o.config_put(key, b"[]"), Ok(()));
        assert!(o.nsqlookupd_tcp_addresses.is_empty());
    }

    #[test]
    fn put_rejects_other_options_and_bad_bodies() {
        let mut o = Options::default();
        let e = o.config_put("mem_queue_size", b"5").unwrap_err();
        assert_eq!(
            (e, e.status(), e.to_string().as_str()),
            (ConfigPutError::InvalidOption, 400, "INVALID_OPTION")
        );
        assert_eq!(
            o.config_put("nope", b"5"),
            Err(ConfigPutError::InvalidOption)
        );
        assert_eq!(o.mem_queue_size, 10_000);
        let e = o.config_put("log_level", b"").unwrap_err();
        assert_eq!(
            (e, e.status(), e.to_string().as_str()),
            (ConfigPutError::BodySize, 413, "INVALID_VALUE")
        );
        o.max_msg_size = 4;
        assert_eq!(
            o.config_put("log_level", b"debug"),
            Err(ConfigPutError::BodySize)
        );
        assert_eq!(o.config_put("log_level", b"warn"), Ok(()));
        assert_eq!(ConfigPutError::InvalidValue.status(), 400);
    }
}
