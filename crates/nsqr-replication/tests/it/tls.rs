//! The cluster in mutual TLS, with certificates made here: it replicates, and a caller with a
//! certificate of another CA, or without TLS, is refused and logged.

use std::collections::BTreeMap;

use nsqr_replication::{probe, ClusterConfig, ClusterTls, NodeId, Peers};
use rcgen::{BasicConstraints, Certificate, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::harness::{batch, eventually, logs, Cluster, GROUP, SECRET};

/// A certificate authority of the test.
struct Ca {
    cert: Certificate,
    key: KeyPair,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("CA certificate");
        Ca { cert, key }
    }

    /// A node's certificate for 127.0.0.1, signed by this CA, and its key.
    fn issue(&self, node: NodeId) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, format!("node {node}"));
        let key = KeyPair::generate().expect("key");
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("node certificate");
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (cert.der().clone(), key)
    }

    /// A node's TLS settings: a certificate of `self`, trusting `trusted`.
    fn tls(&self, node: NodeId, trusted: &Ca) -> ClusterTls {
        let (cert, key) = self.issue(node);
        ClusterTls::new(vec![cert], key, vec![trusted.cert.der().clone()]).expect("TLS settings")
    }
}

/// Node `id`'s settings (known to the cluster, knowing the secret) for a probe of node 1.
fn member(cluster: &Cluster, id: NodeId) -> ClusterConfig {
    let peers: BTreeMap<NodeId, String> = cluster
        .peers
        .iter()
        .map(|(i, a)| (i, a.to_owned()))
        .collect();
    let peers = Peers::new(peers).expect("peers");
    let address = cluster.node(id).address.to_string();
    ClusterConfig::new(id, address, peers, SECRET.to_vec()).expect("config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_in_mutual_tls_replicates_and_refuses_other_certificates() {
    let logs = logs();
    let ca = Ca::new("cluster CA");
    let cluster = Cluster::start_with(3, 3, |_| {}, |id| Some(ca.tls(id, &ca))).await;
    let index = cluster.propose(batch(0, 8)).await;
    eventually("the batch applied on every node", || {
        cluster.nodes.iter().all(|n| n.last_applied() >= index)
    })
    .await;
    let node1 = cluster.node(1).address.to_string();

    let with_ca = member(&cluster, 2).with_tls(ca.tls(2, &ca));
    probe(&with_ca, 1, &node1, GROUP)
        .await
        .expect("a member with the cluster's certificate is accepted");

    // A certificate of another CA, from a caller that trusts the cluster's CA: node 1
    // refuses it during the TLS handshake.
    let rogue = Ca::new("another CA");
    let other_ca = member(&cluster, 2).with_tls(rogue.tls(2, &ca));
    let refused = probe(&other_ca, 1, &node1, GROUP).await;
    assert!(refused.is_err(), "another CA's certificate: {refused:?}");
    let refusal = "cluster: refused a connection: TLS: invalid peer certificate";
    eventually(refusal, || logs.contains(refusal)).await;

    // A caller without TLS never gets the listener's hello, gives up, and is logged.
    let plain = member(&cluster, 2);
    let refused = probe(&plain, 1, &node1, GROUP).await;
    assert!(refused.is_err(), "plain TCP: {refused:?}");
    let refusal = "cluster: refused a connection: TLS: tls handshake eof";
    eventually(refusal, || logs.contains(refusal)).await;

    // The cluster is untouched: the same voters, and it still commits.
    let voters = cluster.node(1).log().map(|l| l.status().voters);
    assert_eq!(voters, Some([1, 2, 3].into_iter().collect()));
    let index = cluster.propose(batch(8, 8)).await;
    eventually("the second batch applied on every node", || {
        cluster.nodes.iter().all(|n| n.last_applied() >= index)
    })
    .await;
    cluster.shutdown().await;
}
