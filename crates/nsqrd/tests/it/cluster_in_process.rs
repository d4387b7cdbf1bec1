//! A replicated topic on three nsqrd servers started in this process (`nsqrd::Server`): the
//! embedded broker's `Publisher` and nsqr-client's `Producer` on a follower get their publishes
//! acknowledged through the leader, whose in-process subscriber receives them.
use std::net::SocketAddr;
use std::time::Duration;

use nsqr_broker::SubscribeOptions;
use nsqr_client::{Config, Producer};

use crate::cluster_replicated::PATIENCE;

fn options(data: &std::path::Path, cluster: &[String]) -> nsqrd::Options {
    let mut args = vec![
        "--tcp-address=127.0.0.1:0".to_string(),
        "--http-address=127.0.0.1:0".to_string(),
        format!("--data-path={}", data.display()),
    ];
    args.extend(cluster.iter().cloned());
    nsqrd::Options::parse(args).unwrap()
}

async fn http(
    addr: SocketAddr,
    method: &'static str,
    path: String,
    body: &'static [u8],
) -> serde_json::Value {
    tokio::task::spawn_blocking(move || {
        let r = nsqr_testkit::http_request(addr, method, &path, &[], body);
        assert_eq!(r.status, 200, "{method} {path}: {}", r.text());
        if method == "GET" {
            r.json()
        } else {
            serde_json::Value::Null
        }
    })
    .await
    .unwrap()
}

/// The server whose `/stats` says it leads `topic`.
async fn leader(servers: &[nsqrd::Server], topic: &str) -> usize {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        for (i, s) in servers.iter().enumerate() {
            let stats = http(
                s.http_addr().unwrap(),
                "GET",
                format!("/stats?format=json&topic={topic}"),
                b"",
            )
            .await;
            if stats["topics"][0]["replication"]["role"] == "leader" {
                return i;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no leader of {topic}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_publisher_and_nsqr_client_on_a_follower_publish_through_the_leader() {
    let ports: Vec<u16> = (0..3).map(|_| nsqr_testkit::free_port()).collect();
    let dirs: Vec<_> = (0..3)
        .map(|i| nsqr_testkit::temp_dir(&format!("nsqrd-cluster-inproc-{i}")))
        .collect();
    let secret = dirs[0].join("secret");
    std::fs::write(&secret, "in-process cluster secret").unwrap();
    let peers: Vec<String> = (0..3)
        .map(|i| format!("{}@127.0.0.1:{}", i + 1, ports[i]))
        .collect();
    let mut servers = Vec::new();
    for i in 0..3 {
        let cluster = [
            format!("--cluster-node-id={}", i + 1),
            format!("--cluster-address=127.0.0.1:{}", ports[i]),
            format!("--cluster-peers={}", peers.join(",")),
            format!("--cluster-secret-file={}", secret.display()),
        ];
        servers.push(
            nsqrd::Server::start(options(&dirs[i], &cluster))
                .await
                .unwrap(),
        );
    }
    for s in &servers {
        let path = "/topic/config?topic=orders".to_string();
        http(s.http_addr().unwrap(), "POST", path, br#"{"replicas":3}"#).await;
    }
    let l = leader(&servers, "orders").await;
    let f = (l + 1) % 3;
    // Subscribing as soon as the node says it leads, perhaps while it is still taking over:
    // the channel stays and gets what is published from then on.
    let mut sub = servers[l]
        .broker()
        .subscribe("orders", "local", SubscribeOptions::default())
        .await
        .unwrap();

    let publisher = servers[f].broker().publisher("orders").unwrap();
    publisher.publish("embedded").unwrap().wait().await.unwrap();
    let addr = format!("tcp://{}", servers[f].tcp_addr().unwrap());
    let producer = Producer::connect(&addr, Config::default()).await.unwrap();
    producer.publish("orders", "nsqr-client").await.unwrap();

    let mut got = Vec::new();
    while got.len() < 2 {
        let d = tokio::time::timeout(PATIENCE, sub.next())
            .await
            .expect("a delivery from the leader")
            .expect("the subscription is open");
        got.push(String::from_utf8_lossy(d.body()).into_owned());
        d.fin().unwrap();
    }
    got.sort();
    assert_eq!(got, ["embedded", "nsqr-client"]);

    drop(sub);
    producer.stop().await;
    for s in servers {
        s.shutdown().await.unwrap();
    }
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}
