//! nsqrd as a library: the whole server started in this process (`nsqrd::Server`), an NSQ
//! TCP publisher (nsqr-client) on one side and an in-process subscription on the other,
//! through one engine.
use std::time::Duration;

use nsqr_broker::SubscribeOptions;
use nsqr_client::{Config, Producer};

fn options(data: &std::path::Path) -> nsqrd::Options {
    nsqrd::Options::parse(
        [
            "--tcp-address=127.0.0.1:0",
            "--http-address=127.0.0.1:0",
            &format!("--data-path={}", data.display()),
        ]
        .iter()
        .map(|s| s.to_string()),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_publish_reaches_an_in_process_subscriber() {
    let dir = nsqr_testkit::temp_dir("nsqrd-inproc");
    let server = nsqrd::Server::start(options(&dir)).await.unwrap();
    let mut sub = server
        .broker()
        .subscribe("events", "local", SubscribeOptions::default())
        .await
        .unwrap();

    let addr = format!("tcp://{}", server.tcp_addr().unwrap());
    let producer = Producer::connect(&addr, Config::default()).await.unwrap();
    producer.publish("events", "hello").await.unwrap();

    let d = tokio::time::timeout(Duration::from_secs(30), sub.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((d.body().as_ref(), d.attempts()), (&b"hello"[..], 1));
    d.fin().unwrap();

    // /stats shows the in-process consumer as a client of its channel.
    let http = server.http_addr().unwrap();
    let stats = tokio::task::spawn_blocking(move || {
        nsqr_testkit::http_request(http, "GET", "/stats?format=json", &[], b"").json()
    })
    .await
    .unwrap();
    let clients = &stats["topics"][0]["channels"][0]["clients"];
    assert_eq!(clients[0]["user_agent"], "nsqr in-process", "{stats}");
    assert_eq!(clients[0]["finish_count"], 1);

    drop(sub);
    producer.stop().await;
    server.shutdown().await.unwrap();
    assert!(dir.join("nsqd.dat").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
