//! Errors of option handling, with the texts and exit codes nsqd uses.
//!
//! nsqd reports three families differently: flag errors print the message and the usage and
//! exit 2 (Go's `flag.ExitOnError`), `-h` prints the usage and exits 0, and config-file or
//! startup-validation errors are logged as `FATAL:` and exit 1. `exit_code` and `shows_usage`
//! let `main` do the same without matching on every variant.

/// Why options could not be built. The `Display` text is what nsqd prints.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionsError {
    /// A command-line error (`-h` included): Go's texts, usage, exit 0 or 2.
    #[error(transparent)]
    Flag(#[from] nsq_common::goflag::FlagError),

    /// The config file could not be read or is not TOML.
    #[error("failed to load config file {path} - {reason}")]
    ConfigFile { path: String, reason: String },
    /// A config-file key holds a value of the wrong type or an unreadable text.
    #[error("failed to load config file {path} - invalid value for {key}: {reason}")]
    ConfigValue {
        path: String,
        key: String,
        reason: String,
    },

    #[error("--max-deflate-level must be [1,9]")]
    MaxDeflateLevel,
    #[error("--node-id must be [0,1024)")]
    NodeId,
    #[error("--auth-http-request-method must be post or get")]
    AuthHttpRequestMethod,
    /// The percentile as Go's `%v` prints it.
    #[error("invalid E2E processing latency percentile: {0}")]
    E2ePercentile(String),
    #[error("cannot require TLS client connections without TLS key and cert")]
    TlsRequiredWithoutCert,
    #[error("failed to build TLS config - {0}")]
    TlsConfig(String),
    #[error("--durability must be 'default' or 'strict'")]
    Durability,
    #[error("--max-disk-bytes must be >= 0")]
    MaxDiskBytes,
    #[error("--kv-maxmemory must be a memory size (bytes, or with a unit: 100mb, 2gb): {0:?}")]
    KvMaxmemory(String),
    #[error("--kv-maxmemory-policy must be one of noeviction, allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random, volatile-ttl: {0:?}")]
    KvPolicy(String),
    #[error("--kv-databases must be in [1,256]: {0}")]
    KvDatabases(i64),
    #[error("--kv-protected-mode must be yes or no: {0:?}")]
    KvProtectedMode(String),
    #[error("--kv-notify-keyspace-events: {0}")]
    KvNotify(String),
    #[error("--kv-events-topic is not a valid topic name: {0:?}")]
    KvEventsTopic(String),
    #[error("--http-max-connections must be >= 0")]
    HttpMaxConnections,
    /// One of the cluster flags is set and this one (named without dashes) is not.
    #[error("--cluster-node-id, --cluster-address, --cluster-peers and --cluster-secret-file go together: --{0} is missing")]
    ClusterIncomplete(&'static str),
    #[error("--cluster-node-id must be a non-negative integer: {0:?}")]
    ClusterNodeId(String),
    #[error("--cluster-address must be <addr>:<port>: {0:?}")]
    ClusterAddress(String),
    /// `--cluster-peers` unreadable, or without this node.
    #[error("{0}")]
    ClusterPeers(String),
    #[error("--cluster-secret-file {path}: {reason}")]
    ClusterSecretFile { path: String, reason: String },
    #[error("--cluster-snapshot-every must be >= 1: {0}")]
    ClusterSnapshotEvery(i64),
}

impl From<nsq_common::goflag::SyntaxError> for OptionsError {
    fn from(e: nsq_common::goflag::SyntaxError) -> OptionsError {
        OptionsError::Flag(e.into())
    }
}

impl OptionsError {
    /// True for errors of the command line itself, after which nsqd prints its usage.
    pub fn shows_usage(&self) -> bool {
        matches!(self, OptionsError::Flag(_))
    }

    /// Process exit status: 0 for help, 2 for other command-line errors, 1 for fatal errors.
    pub fn exit_code(&self) -> i32 {
        match self {
            OptionsError::Flag(f) => i32::from(f.exit_code()),
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_nsqd() {
        use nsq_common::goflag::{FlagError, SyntaxError};
        let help = OptionsError::from(SyntaxError::Help);
        assert_eq!(help.exit_code(), 0);
        assert!(help.shows_usage());
        assert_eq!(
            OptionsError::Flag(FlagError::unknown("x".into())).exit_code(),
            2
        );
        assert_eq!(
            OptionsError::from(SyntaxError::BadSyntax("---x".into())).exit_code(),
            2
        );
        assert_eq!(OptionsError::NodeId.exit_code(), 1);
        assert!(!OptionsError::NodeId.shows_usage());
        let e = OptionsError::ConfigFile {
            path: "a.toml".into(),
            reason: "nope".into(),
        };
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "failed to load config file a.toml - nope");
    }
}
