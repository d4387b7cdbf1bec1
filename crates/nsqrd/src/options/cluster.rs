//! The cluster flags of replicated topics (`docs/replication.md`): `--cluster-node-id`,
//! `--cluster-address`, `--cluster-peers` and `--cluster-secret-file`. They go together: all
//! empty is no cluster (nsqd's behaviour: no cluster port, no replicated topic), all set is a
//! node of a cluster; anything between is refused at startup, as is a node missing from its
//! own peers or an empty secret. A node with `--tls-cert` speaks mutual TLS on the cluster
//! port too, which needs `--tls-root-ca-file`.

use nsqr_replication::{ClusterConfig, NodeId, Peers};

use super::addr::split_host_port;
use super::error::OptionsError;
use super::table::Options;

impl Options {
    /// The cluster this node belongs to, or None when no cluster flag is set. Reads the
    /// secret file.
    pub fn cluster(&self) -> Result<Option<ClusterConfig>, OptionsError> {
        let flags = [
            ("cluster-node-id", &self.cluster_node_id),
            ("cluster-address", &self.cluster_address),
            ("cluster-peers", &self.cluster_peers),
            ("cluster-secret-file", &self.cluster_secret_file),
        ];
        if flags.iter().all(|(_, v)| v.is_empty()) {
            return Ok(None);
        }
        if let Some((name, _)) = flags.iter().find(|(_, v)| v.is_empty()) {
            return Err(OptionsError::ClusterIncomplete(name));
        }
        let node_id: NodeId = self
            .cluster_node_id
            .trim()
            .parse()
            .map_err(|_| OptionsError::ClusterNodeId(self.cluster_node_id.clone()))?;
        match split_host_port(&self.cluster_address) {
            Some((_, port)) if port.parse::<u16>().is_ok() => {}
            _ => return Err(OptionsError::ClusterAddress(self.cluster_address.clone())),
        }
        let peers: Peers =
            self.cluster_peers
                .parse()
                .map_err(|e: nsqr_replication::MembershipError| {
                    OptionsError::ClusterPeers(e.to_string())
                })?;
        let secret = self.cluster_secret()?;
        let config = ClusterConfig::new(node_id, self.cluster_address.clone(), peers, secret)
            .map_err(|e| OptionsError::ClusterPeers(e.to_string()))?;
        match crate::tls::cluster_tls(self) {
            Ok(Some(tls)) => Ok(Some(config.with_tls(tls))),
            Ok(None) => Ok(Some(config)),
            Err(e) => Err(OptionsError::TlsConfig(e.to_string())),
        }
    }

    /// `--cluster-snapshot-every`: entries applied between a group's snapshots.
    pub fn cluster_snapshot_every(&self) -> Result<u64, OptionsError> {
        u64::try_from(self.cluster_snapshot_every)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(OptionsError::ClusterSnapshotEvery(
                self.cluster_snapshot_every,
            ))
    }

    /// The shared secret: the file's bytes, without a trailing newline.
    fn cluster_secret(&self) -> Result<Vec<u8>, OptionsError> {
        let path = &self.cluster_secret_file;
        let bad = |reason: String| OptionsError::ClusterSecretFile {
            path: path.clone(),
            reason,
        };
        let mut secret = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        while secret.last().is_some_and(|b| b.is_ascii_whitespace()) {
            secret.pop();
        }
        if secret.is_empty() {
            return Err(bad("the file is empty".to_string()));
        }
        Ok(secret)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn secret_file(text: &str) -> String {
        let dir = std::env::temp_dir().join(format!("nsqr-cluster-opts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("secret-{}", text.len()));
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn options(id: &str, address: &str, peers: &str, secret: &str) -> Options {
        Options {
            cluster_node_id: id.into(),
            cluster_address: address.into(),
            cluster_peers: peers.into(),
            cluster_secret_file: secret.into(),
            ..Options::default()
        }
    }

    fn fatal(o: Options) -> String {
        let mut o = o;
        o.validate().unwrap_err().to_string()
    }

    #[test]
    fn no_cluster_flag_is_no_cluster() {
        assert!(Options::default().cluster().unwrap().is_none());
        assert_eq!(Options::default().cluster_snapshot_every(), Ok(10_000));
    }

    #[test]
    fn snapshot_every_must_be_positive() {
        let o = Options {
            cluster_snapshot_every: 0,
            ..Options::default()
        };
        assert_eq!(fatal(o), "--cluster-snapshot-every must be >= 1: 0");
    }

    #[test]
    fn a_complete_set_is_a_cluster() {
        let s = secret_file("s3cret\n");
        let peers = "1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003";
        let mut o = options("2", "127.0.0.1:7002", peers, &s);
        assert_eq!(o.validate(), Ok(()));
        let c = o.cluster().unwrap().unwrap();
        assert_eq!((c.node_id, c.peers.len()), (2, 3));
        assert_eq!(c.secret, b"s3cret");
    }

    #[test]
    fn a_node_with_a_certificate_speaks_mutual_tls_with_the_root_ca() {
        let fixture = |f: &str| format!("{}/tests/fixtures/tls/{f}", env!("CARGO_MANIFEST_DIR"));
        let s = secret_file("s3cret");
        let peers = "1@127.0.0.1:7001,2@127.0.0.1:7002";
        let mut o = Options {
            tls_cert: fixture("server.pem"),
            tls_key: fixture("server.key"),
            ..options("1", "127.0.0.1:7001", peers, &s)
        };
        assert_eq!(
            fatal(o.clone()),
            "failed to build TLS config - a cluster node with --tls-cert needs \
             --tls-root-ca-file: the nodes verify each other's certificates against it"
        );
        o.tls_root_ca_file = fixture("ca.pem");
        assert_eq!(o.validate(), Ok(()));
        assert!(o.cluster().unwrap().unwrap().tls.is_some());
        assert!(options("1", "127.0.0.1:7001", peers, &s)
            .cluster()
            .unwrap()
            .unwrap()
            .tls
            .is_none());
    }

    #[test]
    fn bad_cluster_flags_are_refused_with_their_reason() {
        let s = secret_file("s3cret");
        let empty = secret_file("\n");
        let peers = "1@127.0.0.1:7001,2@127.0.0.1:7002";
        let cases = [
            (
                options("1", "", "", ""),
                "--cluster-node-id, --cluster-address, --cluster-peers and --cluster-secret-file go together: --cluster-address is missing",
            ),
            (
                options("x", "127.0.0.1:7001", peers, &s),
                "--cluster-node-id must be a non-negative integer: \"x\"",
            ),
            (
                options("1", "127.0.0.1", peers, &s),
                "--cluster-address must be <addr>:<port>: \"127.0.0.1\"",
            ),
            (
                options("1", "127.0.0.1:7001", "1@nowhere", &s),
                "invalid --cluster-peers entry \"1@nowhere\": want <node-id>@<host:port>",
            ),
            (
                options("9", "127.0.0.1:7001", peers, &s),
                "--cluster-node-id 9 is not in --cluster-peers",
            ),
            (
                options("1", "127.0.0.1:7001", peers, &empty),
                &format!("--cluster-secret-file {empty}: the file is empty"),
            ),
        ];
        for (o, want) in cases {
            assert_eq!(fatal(o), want);
        }
        let missing = fatal(options("1", "127.0.0.1:7001", peers, "/nonexistent/secret"));
        assert!(
            missing.starts_with("--cluster-secret-file /nonexistent/secret: "),
            "{missing}"
        );
    }
}
