//! The one table of nsqd's 57 flags (plus nsqr's own, marked `[nsqr]` in their help), and the
//! `Options` struct generated from it.
//!
//! Each row names the struct field, its Rust type and default, the flag, the config key (also the
//! `/config/:opt` name), how the value is read, and the help text. One macro expands the rows into
//! the struct, its `Default` and the static `FLAGS` table, so argv parsing, the config file,
//! `/config/:opt` and the usage text cannot drift apart. Defaults the libraries also need
//! (protocol limits, the engine's queue sizes) are their constants (`nsq_wire::defaults`,
//! `nsqr_broker::defaults`), read here rather than written again; the TCP, HTTP, IDENTIFY and
//! broker views are derived from `Options`.

use std::sync::OnceLock;
use std::time::Duration;

use nsq_wire::defaults as wire;
use nsqr_broker::defaults as broker;

use super::types::{Kind, LogLevel, OptType, TlsRequired, Value, TLS_1_0};

/// One flag: how it is named, read, documented, and how its `Options` field is reached.
pub struct FlagSpec {
    /// Flag name without dashes (`tcp-address`).
    pub name: &'static str,
    /// Config-file key and `/config/:opt` name; `None` for `config`, `version`, `verbose`,
    /// `worker-id`.
    pub cfg: Option<&'static str>,
    pub kind: Kind,
    pub help: &'static str,
    pub get: fn(&Options) -> Value,
    /// Stores `v`; a value of the wrong variant is ignored (the table tests rule that out).
    pub set: fn(&mut Options, Value),
}

impl FlagSpec {
    /// The spec of a flag by name (without dashes).
    pub fn by_name(name: &str) -> Option<&'static FlagSpec> {
        FLAGS.iter().find(|f| f.name == name)
    }

    /// The spec of an option by config key.
    pub fn by_cfg(key: &str) -> Option<&'static FlagSpec> {
        FLAGS.iter().find(|f| f.cfg == Some(key))
    }
}

/// The OS hostname, read once (the default `--broadcast-address` and node-id seed).
pub fn hostname() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| gethostname::gethostname().to_string_lossy().into_owned())
}

/// nsqd's default node id: crc32(md5(hostname)) mod 1024.
pub fn node_id_for(host: &str) -> i64 {
    let digest = md5::compute(host.as_bytes());
    i64::from(crc32fast::hash(&digest.0) % 1024)
}

macro_rules! option_table {
    ($( $field:ident : $ty:ty = $default:expr ; $flag:literal, $cfg:expr, $kind:ident, $help:literal ; )*) => {
        /// Every nsqd option, typed. Built by `Options::parse`; `Default` gives nsqd's defaults.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Options {
            $( #[doc = $help] pub $field: $ty, )*
        }

        impl Default for Options {
            fn default() -> Self {
                Options { $( $field: $default, )* }
            }
        }

        /// All flags, in the order of the reference's flag list.
        pub static FLAGS: &[FlagSpec] = &[ $( FlagSpec {
            name: $flag,
            cfg: $cfg,
            kind: Kind::$kind,
            help: $help,
            get: |o: &Options| o.$field.to_value(),
            set: |o: &mut Options, v: Value| {
                if let Some(x) = <$ty as OptType>::from_value(v) {
                    o.$field = x;
                }
            },
        }, )* ];
    };
}

fn s(v: &str) -> String {
    v.to_string()
}

/// The HTTP connection limits both daemons default to.
const HTTP_TIMEOUTS: nsq_common::http::server::Timeouts =
    nsq_common::http::server::Timeouts::DEFAULT;

const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

option_table! {
    // 1.1 basic / process
    version_requested: bool = false;
        "version", None, Bool, "print version string and exit";
    config: String = String::new();
        "config", None, Str, "path to a TOML config file";
    log_level: LogLevel = LogLevel::Info;
        "log-level", Some("log_level"), LogLevel, "log verbosity: debug, info, warn, error, or fatal";
    log_prefix: String = s("[nsqd] ");
        "log-prefix", Some("log_prefix"), Str, "prefix for every log line";
    verbose: bool = false;
        "verbose", None, Bool, "[deprecated] has no effect, use --log-level";
    node_id: i64 = node_id_for(hostname());
        "node-id", Some("id"), Int, "node part of message IDs, in [0,1024) (default is a hash of the hostname)";
    worker_id: bool = false;
        "worker-id", None, Bool, "[deprecated] has no effect, use --node-id";

    // 1.2 listeners / addresses
    tcp_address: String = s("0.0.0.0:4150");
        "tcp-address", Some("tcp_address"), Str, "<addr>:<port> (or unix socket path) to listen on for TCP clients";
    http_address: String = s("0.0.0.0:4151");
        "http-address", Some("http_address"), Str, "<addr>:<port> (or unix socket path) to listen on for HTTP clients; empty disables HTTP";
    https_address: String = s("0.0.0.0:4152");
        "https-address", Some("https_address"), Str, "<addr>:<port> to listen on for HTTPS clients (needs a TLS cert and key); empty disables HTTPS";
    broadcast_address: String = s(hostname());
        "broadcast-address", Some("broadcast_address"), Str, "address registered with lookupd and reported by /info (default is the OS hostname)";
    broadcast_tcp_port: u16 = 0;
        "broadcast-tcp-port", Some("broadcast_tcp_port"), Port, "TCP port registered with lookupd (default is the TCP port listened on)";
    broadcast_http_port: u16 = 0;
        "broadcast-http-port", Some("broadcast_http_port"), Port, "HTTP port registered with lookupd (default is the HTTP port listened on)";
    nsqlookupd_tcp_addresses: Vec<String> = Vec::new();
        "lookupd-tcp-address", Some("nsqlookupd_tcp_addresses"), StrList, "nsqlookupd TCP address (may be given multiple times)";
    auth_http_addresses: Vec<String> = Vec::new();
        "auth-http-address", Some("auth_http_addresses"), StrList, "<addr>:<port> or full URL of an auth server (may be given multiple times)";
    auth_http_request_method: String = s("get");
        "auth-http-request-method", Some("auth_http_request_method"), Str, "HTTP method for auth server requests: get or post";
    http_client_connect_timeout: Duration = secs(2);
        "http-client-connect-timeout", Some("http_client_connect_timeout"), Duration, "connect timeout for outbound HTTP requests";
    http_client_request_timeout: Duration = secs(5);
        "http-client-request-timeout", Some("http_client_request_timeout"), Duration, "total timeout for outbound HTTP requests";
    http_idle_timeout: Duration = HTTP_TIMEOUTS.idle;
        "http-idle-timeout", Some("http_idle_timeout"), Duration, "[nsqr] close an HTTP(S) connection idle this long between requests (0 = never)";
    http_read_timeout: Duration = HTTP_TIMEOUTS.read;
        "http-read-timeout", Some("http_read_timeout"), Duration, "[nsqr] time an HTTP(S) request may take to arrive, headers and body, from its first byte (0 = unlimited)";
    http_write_timeout: Duration = HTTP_TIMEOUTS.write;
        "http-write-timeout", Some("http_write_timeout"), Duration, "[nsqr] close an HTTP(S) connection whose client accepts no response bytes for this long (0 = never)";
    http_threads: i64 = 0;
        "http-threads", Some("http_threads"), Int, "[nsqr] threads serving HTTP(S) clients, each with its own single-threaded runtime (0 = half the cores, at least one)";
    http_max_connections: i64 = 0;
        "http-max-connections", Some("http_max_connections"), Int, "[nsqr] open connections per HTTP(S) listener; more wait to be accepted (0 = half the open-file limit)";
    topology_region: String = String::new();
        "topology-region", Some("topology_region"), Str, "region this node is in (for topology-aware delivery)";
    topology_zone: String = String::new();
        "topology-zone", Some("topology_zone"), Str, "zone this node is in (for topology-aware delivery)";

    // 1.3 disk queue
    data_path: String = String::new();
        "data-path", Some("data_path"), Str, "directory for disk-backed messages and metadata (default is the working directory)";
    mem_queue_size: i64 = broker::MEM_QUEUE_SIZE as i64;
        "mem-queue-size", Some("mem_queue_size"), Int, "messages kept in memory per topic and per channel before spilling to disk";
    max_bytes_per_file: i64 = broker::MAX_BYTES_PER_FILE as i64;
        "max-bytes-per-file", Some("max_bytes_per_file"), Int, "bytes per disk queue file before rolling to a new one";
    sync_every: i64 = broker::SYNC_EVERY as i64;
        "sync-every", Some("sync_every"), Int, "messages read or written per disk queue fsync";
    sync_timeout: Duration = broker::SYNC_TIMEOUT;
        "sync-timeout", Some("sync_timeout"), Duration, "longest time between disk queue fsyncs while active";
    queue_scan_worker_pool_max: i64 = 4;
        "queue-scan-worker-pool-max", Some("queue_scan_worker_pool_max"), Int, "max workers checking in-flight and deferred message timeouts";
    queue_scan_selection_count: i64 = 20;
        "queue-scan-selection-count", Some("queue_scan_selection_count"), Int, "channels checked per 100ms cycle for in-flight and deferred timeouts";
    durability: String = s("default");
        "durability", Some("durability"), Str, "[nsqr] 'default' (nsqd: memory first, disk past --mem-queue-size) or 'strict' (PUB/MPUB/DPUB acknowledged once fsynced; unfinished messages survive a crash)";
    max_disk_bytes: i64 = broker::MAX_DISK_BYTES as i64;
        "max-disk-bytes", Some("max_disk_bytes"), Int, "[nsqr] max bytes of disk queue files per topic and per channel; a publish beyond it fails (0 = unlimited)";

    // 1.4 message and command limits
    msg_timeout: Duration = wire::MSG_TIMEOUT;
        "msg-timeout", Some("msg_timeout"), Duration, "default time before an unfinished message is requeued";
    max_msg_timeout: Duration = wire::MAX_MSG_TIMEOUT;
        "max-msg-timeout", Some("max_msg_timeout"), Duration, "longest time a message may stay in flight";
    max_msg_size: i64 = wire::MAX_MSG_SIZE;
        "max-msg-size", Some("max_msg_size"), Int, "max size of one message body in bytes";
    max_req_timeout: Duration = wire::MAX_REQ_TIMEOUT;
        "max-req-timeout", Some("max_req_timeout"), Duration, "max requeue and deferred publish delay";
    max_body_size: i64 = wire::MAX_BODY_SIZE;
        "max-body-size", Some("max_body_size"), Int, "max size of one command body in bytes";

    // 1.5 client-overridable limits
    max_heartbeat_interval: Duration = wire::MAX_HEARTBEAT_INTERVAL;
        "max-heartbeat-interval", Some("max_heartbeat_interval"), Duration, "max heartbeat interval a client may ask for";
    max_rdy_count: i64 = wire::MAX_RDY_COUNT;
        "max-rdy-count", Some("max_rdy_count"), Int, "max RDY count of a client";
    max_output_buffer_size: i64 = wire::MAX_OUTPUT_BUFFER_SIZE;
        "max-output-buffer-size", Some("max_output_buffer_size"), Int, "max output buffer size (bytes) a client may ask for";
    max_output_buffer_timeout: Duration = wire::MAX_OUTPUT_BUFFER_TIMEOUT;
        "max-output-buffer-timeout", Some("max_output_buffer_timeout"), Duration, "max output flush interval a client may ask for";
    min_output_buffer_timeout: Duration = wire::MIN_OUTPUT_BUFFER_TIMEOUT;
        "min-output-buffer-timeout", Some("min_output_buffer_timeout"), Duration, "min output flush interval a client may ask for";
    output_buffer_timeout: Duration = wire::OUTPUT_BUFFER_TIMEOUT;
        "output-buffer-timeout", Some("output_buffer_timeout"), Duration, "default output flush interval for clients";
    max_channel_consumers: i64 = broker::MAX_CHANNEL_CONSUMERS as i64;
        "max-channel-consumers", Some("max_channel_consumers"), Int, "max consumers per channel on this node (0 = unlimited)";

    // 1.6 statsd
    statsd_address: String = String::new();
        "statsd-address", Some("statsd_address"), Str, "UDP <addr>:<port> of a statsd daemon to push stats to";
    statsd_interval: Duration = secs(60);
        "statsd-interval", Some("statsd_interval"), Duration, "time between statsd pushes";
    statsd_mem_stats: bool = true;
        "statsd-mem-stats", Some("statsd_mem_stats"), Bool, "include memory stats in statsd pushes";
    statsd_prefix: String = s("nsq.%s");
        "statsd-prefix", Some("statsd_prefix"), Str, "prefix of statsd keys (%s is replaced by the host)";
    statsd_udp_packet_size: i64 = 508;
        "statsd-udp-packet-size", Some("statsd_udp_packet_size"), Int, "max size in bytes of a statsd UDP packet";
    statsd_exclude_ephemeral: bool = false;
        "statsd-exclude-ephemeral", Some("statsd_exclude_ephemeral"), Bool, "leave ephemeral topics and channels out of statsd pushes";

    // 1.7 end-to-end latency
    e2e_processing_latency_percentiles: Vec<f64> = Vec::new();
        "e2e-processing-latency-percentile", Some("e2e_processing_latency_percentiles"), FloatList, "message processing time percentile to track, in (0,1] (may be given multiple times or comma separated '1.0,0.99,0.95')";
    e2e_processing_latency_window_time: Duration = broker::E2E_WINDOW;
        "e2e-processing-latency-window-time", Some("e2e_processing_latency_window_time"), Duration, "time window of the end-to-end latency percentiles";

    // 1.8 TLS
    tls_cert: String = String::new();
        "tls-cert", Some("tls_cert"), Str, "path to the server certificate (PEM)";
    tls_key: String = String::new();
        "tls-key", Some("tls_key"), Str, "path to the server key (PEM)";
    tls_client_auth_policy: String = String::new();
        "tls-client-auth-policy", Some("tls_client_auth_policy"), Str, "client certificate policy: 'require' or 'require-verify'";
    tls_root_ca_file: String = String::new();
        "tls-root-ca-file", Some("tls_root_ca_file"), Str, "path to a CA bundle (PEM) for client and auth server certificates";
    tls_required: TlsRequired = TlsRequired::False;
        "tls-required", Some("tls_required"), TlsRequired, "require TLS for client connections (true, false, tcp-https)";
    tls_min_version: u16 = TLS_1_0;
        "tls-min-version", Some("tls_min_version"), TlsMinVersion, "minimum TLS version: 'tls1.0', 'tls1.1', 'tls1.2' or 'tls1.3'";

    // 1.9 compression
    deflate: bool = wire::DEFLATE;
        "deflate", Some("deflate"), Bool, "allow clients to negotiate deflate compression";
    max_deflate_level: i64 = wire::MAX_DEFLATE_LEVEL;
        "max-deflate-level", Some("max_deflate_level"), Int, "highest deflate level a client may negotiate, in [1,9]";
    snappy: bool = wire::SNAPPY;
        "snappy", Some("snappy"), Bool, "allow clients to negotiate snappy compression";

    // [nsqr] the keyspace: a Redis-protocol key-value store (docs/keyspace.md)
    kv_address: String = String::new();
        "kv-address", Some("kv_address"), Str, "[nsqr] <addr>:<port> to serve the Redis-protocol keyspace on (RESP2/RESP3); empty disables it";
    kv_password: String = String::new();
        "kv-password", Some("kv_password"), Str, "[nsqr] password keyspace clients must give with AUTH or HELLO (empty: none)";
    kv_data_dir: String = s("kv");
        "kv-data-dir", Some("kv_data_dir"), Str, "[nsqr] directory of the keyspace's snapshot, log and revision files, relative to --data-path";
    kv_maxmemory: String = s("0");
        "kv-maxmemory", Some("kv_maxmemory"), Str, "[nsqr] memory the keyspace may use before evicting: bytes, or with a unit as Redis (100mb, 2gb); 0 = no limit";
    kv_maxmemory_policy: String = s("noeviction");
        "kv-maxmemory-policy", Some("kv_maxmemory_policy"), Str, "[nsqr] eviction at --kv-maxmemory: noeviction, allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random or volatile-ttl";
    kv_notify_keyspace_events: String = String::new();
        "kv-notify-keyspace-events", Some("kv_notify_keyspace_events"), Str, "[nsqr] keyspace notifications, as Redis's notify-keyspace-events (e.g. KEA, Ex); empty = off";
    kv_events_topic: String = String::new();
        "kv-events-topic", Some("kv_events_topic"), Str, "[nsqr] NSQ topic that receives every keyspace change and expiry (the change feed); empty = off";
    kv_events_prefixes: Vec<String> = Vec::new();
        "kv-events-prefix", Some("kv_events_prefix"), StrList, "[nsqr] only keys starting with this go to the change feed (may be given multiple times; default all keys)";
    kv_events_value: bool = false;
        "kv-events-value", Some("kv_events_value"), Bool, "[nsqr] include values in change-feed messages";
    kv_protected_mode: String = s("yes");
        "kv-protected-mode", Some("kv_protected_mode"), Str, "[nsqr] yes: while the default user has no password, refuse keyspace clients that are not on the loopback interface (as Redis's protected-mode); no: serve them";
    kv_databases: i64 = nsqr_kv::db::DEFAULT_DATABASES as i64;
        "kv-databases", Some("kv_databases"), Int, "[nsqr] number of keyspace databases SELECT reaches (as Redis's databases), in [1,256]";
    kv_threads: i64 = 0;
        "kv-threads", Some("kv_threads"), Int, "[nsqr] threads serving keyspace clients (0 = half the cores, at least one)";

    // [nsqr] replicated topics: the cluster (docs/replication.md)
    cluster_node_id: String = String::new();
        "cluster-node-id", Some("cluster_node_id"), Str, "[nsqr] this node's id in the cluster (an integer, unique among --cluster-peers); empty: no cluster";
    cluster_address: String = String::new();
        "cluster-address", Some("cluster_address"), Str, "[nsqr] <addr>:<port> of this node's replication listener; empty: no cluster, no cluster port";
    cluster_peers: String = String::new();
        "cluster-peers", Some("cluster_peers"), Str, "[nsqr] every member of the cluster, this node included: <node-id>@<host>:<port>,...";
    cluster_secret_file: String = String::new();
        "cluster-secret-file", Some("cluster_secret_file"), Str, "[nsqr] file holding the secret every member of the cluster shares (connections that cannot prove it are refused)";
    cluster_snapshot_every: i64 = 10_000;
        "cluster-snapshot-every", Some("cluster_snapshot_every"), Int, "[nsqr] entries a replicated topic's log applies between snapshots (the log behind a snapshot is purged)";

    // 1.10 experiments
    enable_experiment: Vec<String> = Vec::new();
        "enable-experiment", Some("enable_experiment"), StrList, "enable an experimental feature (may be given multiple times): topology-aware-consumption";
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn table_has_the_57_master_flags_plus_nsqrs_with_unique_names_and_keys() {
        let nsqr_only = FLAGS
            .iter()
            .filter(|f| f.help.starts_with("[nsqr]"))
            .count();
        assert_eq!((FLAGS.len() - nsqr_only, nsqr_only), (57, 24));
        for (i, f) in FLAGS.iter().enumerate() {
            assert!(
                FLAGS[..i].iter().all(|g| g.name != f.name),
                "dup {}",
                f.name
            );
            if let Some(k) = f.cfg {
                assert!(FLAGS[..i].iter().all(|g| g.cfg != Some(k)), "dup {k}");
            }
        }
    }

    #[test]
    fn cfg_keys_follow_the_flag_names_except_documented_ones() {
        let special = [
            ("node-id", Some("id")),
            ("lookupd-tcp-address", Some("nsqlookupd_tcp_addresses")),
            ("auth-http-address", Some("auth_http_addresses")),
            (
                "e2e-processing-latency-percentile",
                Some("e2e_processing_latency_percentiles"),
            ),
            ("config", None),
            ("version", None),
            ("verbose", None),
            ("worker-id", None),
        ];
        for f in FLAGS {
            let want = match special.iter().find(|(n, _)| *n == f.name) {
                Some((_, k)) => k.map(str::to_string),
                None => Some(f.name.replace('-', "_")),
            };
            assert_eq!(f.cfg.map(str::to_string), want, "{}", f.name);
        }
    }

    #[test]
    fn every_getter_and_setter_agree_on_the_variant() {
        let defaults = Options::default();
        for f in FLAGS {
            let v = (f.get)(&defaults);
            let mut o = defaults.clone();
            (f.set)(&mut o, v.clone());
            assert_eq!((f.get)(&o), v, "{}", f.name);
            // A value typed from the flag's kind must land in the field.
            let sample = match f.kind {
                Kind::Str => "x",
                Kind::Int | Kind::Port => "7",
                Kind::Bool => "false",
                Kind::Duration => "3s",
                Kind::StrList => "a",
                Kind::FloatList => "0.5",
                Kind::LogLevel => "warn",
                Kind::TlsRequired => "tcp-https",
                Kind::TlsMinVersion => "tls1.2",
            };
            let typed = f.kind.parse_text(sample).unwrap();
            (f.set)(&mut o, typed.clone());
            assert_eq!((f.get)(&o), typed, "{}", f.name);
        }
    }

    #[test]
    fn defaults_match_the_reference() {
        let o = Options::default();
        assert_eq!(o.tcp_address, "0.0.0.0:4150");
        assert_eq!(o.http_address, "0.0.0.0:4151");
        assert_eq!(o.https_address, "0.0.0.0:4152");
        assert_eq!(o.broadcast_address, hostname());
        assert_eq!(o.node_id, node_id_for(hostname()));
        assert!((0..1024).contains(&o.node_id));
        assert_eq!(o.log_level, LogLevel::Info);
        assert_eq!(o.log_prefix, "[nsqd] ");
        assert_eq!(o.auth_http_request_method, "get");
        assert_eq!(o.mem_queue_size, 10_000);
        assert_eq!(o.max_bytes_per_file, 100 * 1024 * 1024);
        assert_eq!(o.msg_timeout, Duration::from_secs(60));
        assert_eq!(o.max_msg_timeout, Duration::from_secs(900));
        assert_eq!(o.max_body_size, 5 * 1024 * 1024);
        assert_eq!(o.min_output_buffer_timeout, Duration::from_millis(25));
        assert_eq!(o.statsd_prefix, "nsq.%s");
        assert_eq!(o.statsd_udp_packet_size, 508);
        assert!(o.statsd_mem_stats && o.deflate && o.snappy);
        assert_eq!(o.max_deflate_level, 6);
        assert_eq!(o.tls_min_version, 0x0301);
        assert_eq!(o.tls_required, TlsRequired::False);
        assert_eq!(
            o.e2e_processing_latency_window_time,
            Duration::from_secs(600)
        );
    }

    #[test]
    fn node_id_is_crc32_of_md5_of_hostname() {
        // Values computed independently: zlib.crc32(hashlib.md5(host).digest()) % 1024.
        assert_eq!(node_id_for(""), 812);
        assert_eq!(node_id_for("localhost"), 16);
        assert_eq!(node_id_for("nsq-host.example.com"), 786);
    }
}
