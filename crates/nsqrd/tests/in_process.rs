//! nsqrd as a library: the whole server started in this process (`nsqrd::Server`), an NSQ
//! TCP publisher on one side and an in-process subscription on the other, through one engine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use nsqr_broker::SubscribeOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

/// Read one NSQ frame: (type, body).
async fn read_frame(s: &mut TcpStream) -> (u32, Vec<u8>) {
    let mut head = [0u8; 8];
    s.read_exact(&mut head).await.unwrap();
    let size = u32::from_be_bytes(head[..4].try_into().unwrap()) as usize;
    let kind = u32::from_be_bytes(head[4..].try_into().unwrap());
    let mut body = vec![0u8; size - 4];
    s.read_exact(&mut body).await.unwrap();
    (kind, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_publish_reaches_an_in_process_subscriber() {
    let dir = std::env::temp_dir().join(format!("nsqrd-inproc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let server = nsqrd::Server::start(options(&dir)).await.unwrap();
    let mut sub = server
        .broker()
        .subscribe("events", "local", SubscribeOptions::default())
        .await
        .unwrap();

    let mut tcp = TcpStream::connect(server.tcp_addr().unwrap())
        .await
        .unwrap();
    tcp.write_all(b"  V2PUB events\n\x00\x00\x00\x05hello")
        .await
        .unwrap();
    assert_eq!(read_frame(&mut tcp).await, (0, b"OK".to_vec()));

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
    drop(tcp);
    server.shutdown().await.unwrap();
    assert!(dir.join("nsqd.dat").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
