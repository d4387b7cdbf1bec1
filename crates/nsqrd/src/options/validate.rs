//! Startup checks nsqd makes on its options before listening, and the list of options nsqrd
//! does not honour (`--enable-experiment`).
//!
//! The checks and their `FATAL:` texts are nsqd 1.3's, in nsqd's order; the TLS
//! files named by flags are read so a missing or non-PEM file fails at startup, as in nsqd.
//! `unsupported_flags` lets `main` refuse, loudly, a configuration that would otherwise be
//! silently ignored.

use super::error::OptionsError;
use super::table::Options;
use super::types::{go_format_float, TlsRequired};

/// Reads a PEM file named by a TLS flag; `what` names the input in Go's words.
fn read_pem(path: &str, what: &str) -> Result<String, OptionsError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| OptionsError::TlsConfig(format!("open {path}: {e}")))?;
    if !text.contains("-----BEGIN ") {
        return Err(OptionsError::TlsConfig(format!(
            "tls: failed to find any PEM data in {what} input"
        )));
    }
    Ok(text)
}

impl Options {
    /// Startup validation, in nsqd's order. May set `tls_required` to `True` when a
    /// client auth policy is given. Returns the `FATAL:` message as the error.
    pub fn validate(&mut self) -> Result<(), OptionsError> {
        if !(1..=9).contains(&self.max_deflate_level) {
            return Err(OptionsError::MaxDeflateLevel);
        }
        if !(0..1024).contains(&self.node_id) {
            return Err(OptionsError::NodeId);
        }
        if !self.tls_client_auth_policy.is_empty() && self.tls_required == TlsRequired::False {
            self.tls_required = TlsRequired::True;
        }
        let has_tls = self.check_tls_files()?;
        if !has_tls && self.tls_required != TlsRequired::False {
            return Err(OptionsError::TlsRequiredWithoutCert);
        }
        if let Some(p) = self
            .e2e_processing_latency_percentiles
            .iter()
            .find(|&&p| !(p > 0.0 && p <= 1.0))
        {
            return Err(OptionsError::E2ePercentile(go_format_float(*p)));
        }
        if self.auth_http_request_method != "post" && self.auth_http_request_method != "get" {
            return Err(OptionsError::AuthHttpRequestMethod);
        }
        if nsqr_broker::Durability::parse(&self.durability).is_none() {
            return Err(OptionsError::Durability);
        }
        if self.max_disk_bytes < 0 {
            return Err(OptionsError::MaxDiskBytes);
        }
        if self.http_max_connections < 0 {
            return Err(OptionsError::HttpMaxConnections);
        }
        self.validate_kv()?;
        self.cluster_snapshot_every()?;
        self.cluster().map(drop)
    }

    /// The keyspace's flags (checked even while `--kv-address` is empty, so a typo in a
    /// config file fails at once rather than when the keyspace is turned on).
    fn validate_kv(&self) -> Result<(), OptionsError> {
        if nsqr_kv::config::parse_memory(&self.kv_maxmemory).is_none() {
            return Err(OptionsError::KvMaxmemory(self.kv_maxmemory.clone()));
        }
        if nsqr_kv::Policy::parse(&self.kv_maxmemory_policy).is_none() {
            return Err(OptionsError::KvPolicy(self.kv_maxmemory_policy.clone()));
        }
        if !(1..=256).contains(&self.kv_databases) {
            return Err(OptionsError::KvDatabases(self.kv_databases));
        }
        if !matches!(self.kv_protected_mode.as_str(), "yes" | "no") {
            return Err(OptionsError::KvProtectedMode(
                self.kv_protected_mode.clone(),
            ));
        }
        nsqr_kv::NotifyFlags::parse(&self.kv_notify_keyspace_events)
            .map_err(|e| OptionsError::KvNotify(e.to_string()))?;
        if !self.kv_events_topic.is_empty()
            && !nsq_wire::names::is_valid_name(self.kv_events_topic.as_bytes())
        {
            return Err(OptionsError::KvEventsTopic(self.kv_events_topic.clone()));
        }
        Ok(())
    }

    /// Whether a TLS server config can be built: false when neither cert nor key is given;
    /// otherwise both files (and the CA file, if any) must be readable PEM.
    fn check_tls_files(&self) -> Result<bool, OptionsError> {
        if self.tls_cert.is_empty() && self.tls_key.is_empty() {
            return Ok(false);
        }
        if self.tls_cert.is_empty() || self.tls_key.is_empty() {
            return Err(OptionsError::TlsConfig(
                "--tls-cert and --tls-key must be given together".to_string(),
            ));
        }
        read_pem(&self.tls_cert, "certificate")?;
        read_pem(&self.tls_key, "key")?;
        if !self.tls_root_ca_file.is_empty()
            && !read_pem(&self.tls_root_ca_file, "CA certificate")?
                .contains("-----BEGIN CERTIFICATE-----")
        {
            return Err(OptionsError::TlsConfig(
                "failed to append certificate to pool".to_string(),
            ));
        }
        Ok(true)
    }

    /// Options set (by flag or config file) to values that turn on a feature this build does not
    /// implement yet, as `--flag` names in flag-table order. `main` refuses to start with any.
    pub fn unsupported_flags(&self) -> Vec<&'static str> {
        [("--enable-experiment", !self.enable_experiment.is_empty())]
            .into_iter()
            .filter_map(|(flag, on)| on.then_some(flag))
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fatal(o: Options) -> String {
        let mut o = o;
        o.validate().unwrap_err().to_string()
    }

    fn temp_file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nsqr-options-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const PEM_CERT: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    const PEM_KEY: &str = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";

    #[test]
    fn defaults_are_valid() {
        let mut o = Options::default();
        assert_eq!(o.validate(), Ok(()));
        assert_eq!(o, Options::default());
    }

    #[test]
    fn deflate_level_and_node_id_ranges() {
        for bad in [0, 10, -1] {
            let o = Options {
                max_deflate_level: bad,
                ..Options::default()
            };
            assert_eq!(fatal(o), "--max-deflate-level must be [1,9]");
        }
        for good in [1, 9] {
            let mut o = Options {
                max_deflate_level: good,
                ..Options::default()
            };
            assert_eq!(o.validate(), Ok(()));
        }
        for bad in [-1, 1024] {
            let o = Options {
                node_id: bad,
                ..Options::default()
            };
            assert_eq!(fatal(o), "--node-id must be [0,1024)");
        }
        let mut o = Options {
            node_id: 1023,
            ..Options::default()
        };
        assert_eq!(o.validate(), Ok(()));
    }

    #[test]
    fn auth_method_is_exactly_get_or_post() {
        for good in ["get", "post"] {
            let mut o = Options {
                auth_http_request_method: good.into(),
                ..Options::default()
            };
            assert_eq!(o.validate(), Ok(()));
        }
        for bad in ["GET", "put", ""] {
            let o = Options {
                auth_http_request_method: bad.into(),
                ..Options::default()
            };
            assert_eq!(fatal(o), "--auth-http-request-method must be post or get");
        }
    }

    #[test]
    fn e2e_percentiles_in_zero_one() {
        let mut o = Options {
            e2e_processing_latency_percentiles: vec![1.0, 0.5, 0.0001],
            ..Options::default()
        };
        assert_eq!(o.validate(), Ok(()));
        for (bad, text) in [(1.5, "1.5"), (0.0, "0"), (-0.5, "-0.5"), (f64::NAN, "NaN")] {
            let o = Options {
                e2e_processing_latency_percentiles: vec![0.5, bad],
                ..Options::default()
            };
            assert_eq!(
                fatal(o),
                format!("invalid E2E processing latency percentile: {text}")
            );
        }
    }

    #[test]
    fn tls_required_needs_cert_and_key() {
        for mode in [TlsRequired::True, TlsRequired::TcpHttps] {
            let o = Options {
                tls_required: mode,
                ..Options::default()
            };
            assert_eq!(
                fatal(o),
                "cannot require TLS client connections without TLS key and cert"
            );
        }
        // A client auth policy forces tls_required, hence the same error without cert/key.
        let mut o = Options {
            tls_client_auth_policy: "require".into(),
            ..Options::default()
        };
        assert_eq!(o.validate(), Err(OptionsError::TlsRequiredWithoutCert));
        assert_eq!(o.tls_required, TlsRequired::True);
    }

    #[test]
    fn tls_files_are_read() {
        let cert = temp_file("cert.pem", PEM_CERT);
        let key = temp_file("key.pem", PEM_KEY);
        let junk = temp_file("junk.pem", "not pem");
        let path = |p: &PathBuf| p.to_string_lossy().into_owned();

        let mut o = Options {
            tls_cert: path(&cert),
            tls_key: path(&key),
            tls_client_auth_policy: "require-verify".into(),
            tls_root_ca_file: path(&cert),
            ..Options::default()
        };
        assert_eq!(o.validate(), Ok(()));
        assert_eq!(o.tls_required, TlsRequired::True);

        let o = Options {
            tls_cert: path(&cert),
            ..Options::default()
        };
        assert!(fatal(o).starts_with("failed to build TLS config - "));
        let o = Options {
            tls_cert: path(&junk),
            tls_key: path(&key),
            ..Options::default()
        };
        assert_eq!(
            fatal(o),
            "failed to build TLS config - tls: failed to find any PEM data in certificate input"
        );
        let o = Options {
            tls_cert: path(&cert),
            tls_key: "/nonexistent/key.pem".into(),
            ..Options::default()
        };
        assert!(fatal(o).starts_with("failed to build TLS config - open /nonexistent/key.pem: "));
        let o = Options {
            tls_cert: path(&cert),
            tls_key: path(&key),
            tls_root_ca_file: path(&key),
            ..Options::default()
        };
        assert_eq!(
            fatal(o),
            "failed to build TLS config - failed to append certificate to pool"
        );
    }

    /// Everything but the topology experiment is implemented.
    #[test]
    fn keyspace_flags_are_checked() {
        let bad = [
            (Options { kv_maxmemory: "lots".into(), ..Options::default() }, "--kv-maxmemory must be a memory size (bytes, or with a unit: 100mb, 2gb): \"lots\""),
            (Options { kv_protected_mode: "maybe".into(), ..Options::default() }, "--kv-protected-mode must be yes or no: \"maybe\""),
            (Options { kv_maxmemory_policy: "lru".into(), ..Options::default() }, "--kv-maxmemory-policy must be one of noeviction, allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random, volatile-ttl: \"lru\""),
            (Options { kv_notify_keyspace_events: "Z".into(), ..Options::default() }, "--kv-notify-keyspace-events: Invalid event class character. Use 'Ag$lshzxeKEtmdn'."),
            (Options { kv_events_topic: "bad topic".into(), ..Options::default() }, "--kv-events-topic is not a valid topic name: \"bad topic\""),
        ];
        for (o, want) in bad {
            assert_eq!(fatal(o), want);
        }
        let mut ok = Options {
            kv_maxmemory: "100mb".into(),
            kv_maxmemory_policy: "allkeys-lru".into(),
            kv_notify_keyspace_events: "KEA".into(),
            kv_events_topic: "changes".into(),
            ..Options::default()
        };
        assert_eq!(ok.validate(), Ok(()));
    }

    #[test]
    fn unsupported_flags_are_listed() {
        assert!(Options::default().unsupported_flags().is_empty());
        let o = Options {
            tcp_address: "/tmp/nsqd.sock".into(),
            http_address: "nsqd-http.sock".into(),
            nsqlookupd_tcp_addresses: vec!["a:4160".into()],
            statsd_address: "127.0.0.1:8125".into(),
            auth_http_addresses: vec!["auth:80".into()],
            e2e_processing_latency_percentiles: vec![0.99],
            tls_cert: "c".into(),
            tls_key: "k".into(),
            tls_client_auth_policy: "require".into(),
            tls_root_ca_file: "ca".into(),
            tls_required: TlsRequired::TcpHttps,
            ..Options::default()
        };
        assert!(o.unsupported_flags().is_empty());
        let o = Options {
            enable_experiment: vec!["topology-aware-consumption".into()],
            ..Options::default()
        };
        assert_eq!(o.unsupported_flags(), ["--enable-experiment"]);
    }
}
