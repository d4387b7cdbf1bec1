//! The Redis 7.0 parameters CONFIG GET shows that this server has no switch for: their value
//! here, which is what this server does (the encodings' limits it reports in `OBJECT
//! ENCODING`, no replication, no cluster, no TLS port of its own). CONFIG SET of one of them
//! is refused with a clear error rather than accepted and ignored.

/// (name, value), as CONFIG GET lists them.
pub const FIXED: &[(&str, &str)] = &[
    ("hash-max-listpack-entries", "512"),
    ("hash-max-listpack-value", "64"),
    ("hash-max-ziplist-entries", "512"),
    ("hash-max-ziplist-value", "64"),
    ("set-max-intset-entries", "512"),
    ("zset-max-listpack-entries", "128"),
    ("zset-max-listpack-value", "64"),
    ("zset-max-ziplist-entries", "128"),
    ("zset-max-ziplist-value", "64"),
    ("list-max-listpack-size", "-2"),
    ("list-max-ziplist-size", "-2"),
    ("list-compress-depth", "0"),
    ("stream-node-max-bytes", "4096"),
    ("stream-node-max-entries", "100"),
    ("hll-sparse-max-bytes", "3000"),
    ("activerehashing", "yes"),
    ("maxclients", "10000"),
    ("maxmemory-clients", "0"),
    ("maxmemory-eviction-tenacity", "10"),
    ("lfu-log-factor", "10"),
    ("lfu-decay-time", "1"),
    ("latency-monitor-threshold", "0"),
    ("latency-tracking", "no"),
    ("tcp-keepalive", "300"),
    ("hz", "10"),
    ("cluster-enabled", "no"),
    ("replica-read-only", "yes"),
    ("slave-read-only", "yes"),
    ("replicaof", ""),
    ("slaveof", ""),
    ("masterauth", ""),
    ("masteruser", ""),
    ("min-replicas-to-write", "0"),
    ("repl-backlog-size", "1048576"),
    ("lazyfree-lazy-eviction", "no"),
    ("lazyfree-lazy-expire", "no"),
    ("lazyfree-lazy-server-del", "no"),
    ("lazyfree-lazy-user-del", "no"),
    ("lazyfree-lazy-user-flush", "no"),
    ("io-threads", "1"),
    ("tls-port", "0"),
    ("acllog-max-len", "128"),
    ("tracking-table-max-keys", "1000000"),
    ("enable-debug-command", "no"),
    ("enable-module-command", "no"),
];

/// The value of a fixed parameter.
pub fn fixed(name: &str) -> Option<&'static str> {
    FIXED.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}
