//! What survives: a graceful restart (snapshot, deadlines kept as absolute times), a SIGKILL in
//! strict mode (every acknowledged write), and the change feed across a restart.

use std::time::Duration;

use crate::kv_common::*;

#[test]
fn a_graceful_restart_keeps_keys_and_deadlines() {
    let srv = KvServer::start(&[]);
    let mut c = srv.client();
    c.cmd(&["SET", "plain", "1"]);
    c.cmd(&["SET", "volatile", "2", "EX", "120"]);
    c.cmd(&["SET", "brief", "3", "PX", "300"]);
    let dir = srv.terminate_keep();
    assert!(dir.join("kv/kv.snapshot").exists());
    std::thread::sleep(Duration::from_millis(400));
    let srv = KvServer::start_in(dir, &[]);
    let mut c = srv.client();
    assert_eq!(c.cmd(&["GET", "plain"]), bulk("1"));
    assert_eq!(c.cmd(&["GET", "volatile"]), bulk("2"));
    let Frame::Integer(ttl) = c.cmd(&["TTL", "volatile"]) else {
        panic!()
    };
    assert!((100..=120).contains(&ttl), "{ttl}");
    // Its deadline passed while the server was down: gone.
    assert_eq!(c.cmd(&["GET", "brief"]), Frame::Null);
    assert_eq!(c.cmd(&["DBSIZE"]), int(2));
}

#[test]
fn strict_mode_keeps_every_acknowledged_write_through_sigkill() {
    let srv = KvServer::start(&["--durability=strict"]);
    let addr = srv.kv;
    let writers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..250 {
                    assert_eq!(c.cmd(&["SET", &format!("w{t}:{i}"), "v"]), simple("OK"));
                }
                let n = c.cmd(&["INCRBY", "counter", "250"]);
                assert!(matches!(n, Frame::Integer(n) if n % 250 == 0), "{n:?}");
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let mut c = srv.client();
    assert_eq!(c.cmd(&["DEL", "w0:0"]), int(1));
    assert_eq!(c.cmd(&["EXPIRE", "w0:1", "1000"]), int(1));
    let dir = srv.kill_keep();
    let srv = KvServer::start_in(dir, &["--durability=strict"]);
    let mut c = srv.client();
    assert_eq!(c.cmd(&["DBSIZE"]), int(1000));
    assert_eq!(c.cmd(&["GET", "counter"]), bulk("1000"));
    assert_eq!(c.cmd(&["EXISTS", "w0:0"]), int(0));
    assert_eq!(c.cmd(&["GET", "w3:249"]), bulk("v"));
    let Frame::Integer(ttl) = c.cmd(&["TTL", "w0:1"]) else {
        panic!()
    };
    assert!(ttl > 900);
}

#[test]
fn the_change_feed_survives_a_restart_and_revisions_keep_growing() {
    let srv = KvServer::start(&["--kv-events-topic=feed"]);
    let mut c = srv.client();
    for i in 0..50 {
        c.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    let dir = srv.terminate_keep();
    let srv = KvServer::start_in(dir, &["--kv-events-topic=feed"]);
    srv.client().cmd(&["SET", "after", "restart"]);
    let mut consumer = NsqConsumer::subscribe(srv.tcp, "feed", "c");
    let bodies: Vec<serde_json::Value> = (0..51).map(|_| consumer.next()).collect();
    assert_eq!(bodies[50]["key"], "after");
    let revs: Vec<u64> = bodies.iter().map(|b| b["rev"].as_u64().unwrap()).collect();
    assert!(revs.windows(2).all(|w| w[0] < w[1]), "{revs:?}");
}
