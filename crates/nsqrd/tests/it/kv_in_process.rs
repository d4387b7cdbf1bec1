//! The keyspace of nsqrd started as a library (`nsqrd::Server`): a RESP client writes, the
//! change feed reaches an in-process subscriber of its topic, and `shutdown` writes the
//! keyspace's snapshot.
use std::time::Duration;

use nsqr_broker::SubscribeOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyspace_in_process_with_its_change_feed() {
    let dir = nsqr_testkit::temp_dir("nsqrd-kv-inproc");
    let opts = nsqrd::Options::parse(
        [
            "--tcp-address=127.0.0.1:0",
            "--http-address=127.0.0.1:0",
            "--kv-address=127.0.0.1:0",
            "--kv-events-topic=changes",
            &format!("--data-path={}", dir.display()),
        ]
        .iter()
        .map(|s| s.to_string()),
    )
    .unwrap();
    let server = nsqrd::Server::start(opts).await.unwrap();
    let mut feed = server
        .broker()
        .subscribe("changes", "here", SubscribeOptions::default())
        .await
        .unwrap();

    let mut kv = TcpStream::connect(server.kv_addr().unwrap()).await.unwrap();
    kv.write_all(b"SET greeting hello\r\n").await.unwrap();
    let mut reply = [0u8; 5];
    kv.read_exact(&mut reply).await.unwrap();
    assert_eq!(&reply, b"+OK\r\n");

    let d = tokio::time::timeout(Duration::from_secs(30), feed.next())
        .await
        .unwrap()
        .unwrap();
    let change: serde_json::Value = serde_json::from_slice(d.body()).unwrap();
    assert_eq!(
        (change["op"].as_str(), change["key"].as_str()),
        (Some("set"), Some("greeting"))
    );
    d.fin().unwrap();
    drop(feed);
    drop(kv);

    server.shutdown().await.unwrap();
    assert!(dir.join("kv/kv.snapshot").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
