//! The cluster port in mutual TLS (`docs/replication.md`, "TLS"): three nsqrd processes with
//! `--tls-cert`, `--tls-key` and `--tls-root-ca-file` (made here) replicate a topic; a caller
//! with a certificate of another CA, and one without TLS, are refused and logged.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use nsqr_replication::{probe, ClusterConfig, ClusterTls, Peers};
use rcgen::{BasicConstraints, Certificate, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::cluster_replicated::{configure, start_cluster_with, Cluster, PATIENCE};

/// A certificate authority and a certificate for 127.0.0.1 it signed.
struct Issued {
    ca: Certificate,
    cert: Certificate,
    key: KeyPair,
}

fn issue(ca_name: &str) -> Issued {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, ca_name);
    let ca_key = KeyPair::generate().expect("key");
    let ca = params.self_signed(&ca_key).expect("CA");
    let params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &ca, &ca_key).expect("certificate");
    Issued { ca, cert, key }
}

/// Writes the PEM files of `issued` into `dir`; returns nsqrd's TLS flags for them.
fn tls_flags(issued: &Issued, dir: &Path) -> Vec<String> {
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).expect("write PEM");
        path.display().to_string()
    };
    vec![
        format!("--tls-cert={}", write("node.pem", issued.cert.pem())),
        format!(
            "--tls-key={}",
            write("node.key", issued.key.serialize_pem())
        ),
        format!("--tls-root-ca-file={}", write("ca.pem", issued.ca.pem())),
    ]
}

/// Waits until node `n` logged a line containing `text`.
fn logged(cluster: &Cluster, n: usize, text: &str) {
    let node = cluster.nodes[n - 1].as_ref().expect("running");
    let deadline = Instant::now() + PATIENCE;
    while !node.log_lines().iter().any(|l| l.contains(text)) {
        assert!(Instant::now() < deadline, "node {n} never logged {text:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_cluster_in_mutual_tls_replicates_and_refuses_strangers() {
    let dir = crate::common::temp_dir();
    let issued = issue("cluster CA");
    let flags = tls_flags(&issued, &dir);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let cluster = start_cluster_with(&flags);
    for (n, s) in cluster.live() {
        let r = configure(s, "orders", r#"{"replicas":3}"#);
        assert_eq!(r.status, 200, "node {n}: {}", r.text());
    }
    let leader = cluster.publish_to_leader("orders", "first");
    let mut acked: HashSet<String> = HashSet::from(["first".to_string()]);
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let mut p = s.connect();
    for i in 0..20 {
        let body = format!("pub-{i}");
        p.publish("orders", body.as_bytes());
        acked.insert(body);
    }
    cluster.consume("orders", &acked);

    // A member's id and secret with a certificate of another CA: refused in the TLS
    // handshake, before the secret is asked for.
    let target = if leader == 1 { 2 } else { 1 };
    let address = cluster.cluster_address(target).to_string();
    let peers: Peers = (1..=3)
        .map(|n| format!("{n}@{}", cluster.cluster_address(n)))
        .collect::<Vec<_>>()
        .join(",")
        .parse()
        .expect("peers");
    let member = ClusterConfig::new(
        leader as u64,
        cluster.cluster_address(leader).to_string(),
        peers,
        b"replication test secret".to_vec(),
    )
    .expect("config");
    let rogue = issue("another CA");
    let der = |c: &Certificate| c.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(rogue.key.serialize_der()));
    let roots: Vec<CertificateDer<'static>> = vec![der(&issued.ca)];
    let tls = ClusterTls::new(vec![der(&rogue.cert)], key, roots).expect("TLS settings");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let refused = runtime.block_on(probe(
        &member.clone().with_tls(tls),
        target as u64,
        &address,
        "orders",
    ));
    assert!(refused.is_err(), "another CA's certificate: {refused:?}");
    logged(
        &cluster,
        target,
        "cluster: refused a connection: TLS: invalid peer certificate",
    );

    // Plain TCP: whatever it sends is not a TLS handshake.
    let mut plain = std::net::TcpStream::connect(&address).expect("connect");
    plain.write_all(b"NSQRRAFT plain text").expect("write");
    drop(plain);
    logged(
        &cluster,
        target,
        "cluster: refused a connection: TLS: received corrupt message",
    );

    // Still replicating.
    cluster.publish_to_leader("orders", "after");
    cluster.consume("orders", &HashSet::from(["after".to_string()]));
}
