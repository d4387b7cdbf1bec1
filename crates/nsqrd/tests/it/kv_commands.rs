//! Keyspace commands over the wire, RESP2 and RESP3: replies frame by frame, AUTH, TTLs.

use std::time::Duration;

use crate::kv_common::*;

#[test]
fn hello_switches_protocols_and_types_degrade_in_resp2() {
    let srv = KvServer::start(&[]);
    let mut c = srv.client();
    let Frame::Array(v) = c.cmd(&["HELLO"]) else {
        panic!("HELLO in RESP2 is an array");
    };
    assert_eq!((v.len(), &v[4], &v[5]), (14, &bulk("proto"), &int(2)));
    let Frame::Map(m) = c.cmd(&["HELLO", "3"]) else {
        panic!("HELLO 3 is a map");
    };
    assert!(m.contains(&(bulk("proto"), int(3))));
    assert_eq!(c.cmd(&["GET", "missing"]), Frame::Null);
    assert!(matches!(
        c.cmd(&["CONFIG", "GET", "maxmemory"]),
        Frame::Map(_)
    ));
    assert!(matches!(c.cmd(&["INFO", "keyspace"]), Frame::Verbatim(..)));
    assert_eq!(c.cmd(&["HELLO", "2"]).to_resp2(), c.cmd(&["HELLO", "2"]));
    assert_eq!(c.cmd(&["GET", "missing"]), Frame::Null);
    assert_eq!(
        c.cmd(&["HELLO", "4"]),
        err("NOPROTO unsupported protocol version")
    );
}

#[test]
fn auth_gates_everything_but_auth_hello_and_quit() {
    let srv = KvServer::start(&["--kv-password=s3cret"]);
    let mut c = srv.client();
    assert_eq!(c.cmd(&["GET", "k"]), err("NOAUTH Authentication required."));
    assert_eq!(
        c.cmd(&["AUTH", "wrong"]),
        err("WRONGPASS invalid username-password pair or user is disabled.")
    );
    // Before AUTH, requests are held to Redis's unauthenticated limits.
    let mut big = srv.client();
    let value = "x".repeat(20_000);
    big.send(&[b"AUTH", value.as_bytes()]);
    assert_eq!(
        big.read_to_close(),
        vec![err("ERR Protocol error: unauthenticated bulk length")]
    );
    assert_eq!(c.cmd(&["AUTH", "s3cret"]), simple("OK"));
    assert_eq!(c.cmd(&["SET", "k", &value]), simple("OK"));
    let mut h = srv.client();
    assert!(matches!(
        h.cmd(&["HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "me"]),
        Frame::Map(_)
    ));
    assert_eq!(h.cmd(&["CLIENT", "GETNAME"]), bulk("me"));
    assert_eq!(h.cmd(&["STRLEN", "k"]), int(20_000));
}

#[test]
fn set_options_and_ttls() {
    let srv = KvServer::start(&[]);
    let mut c = srv.client();
    assert_eq!(c.cmd(&["SET", "k", "v", "EX", "100"]), simple("OK"));
    assert!(matches!(c.cmd(&["TTL", "k"]), Frame::Integer(90..=100)));
    assert_eq!(c.cmd(&["SET", "k", "w", "KEEPTTL", "GET"]), bulk("v"));
    assert!(matches!(c.cmd(&["TTL", "k"]), Frame::Integer(90..=100)));
    assert_eq!(c.cmd(&["SET", "k", "x", "NX"]), Frame::Null);
    assert_eq!(c.cmd(&["SET", "k", "x", "XX", "PX", "50000"]), simple("OK"));
    let Frame::Integer(ms) = c.cmd(&["PTTL", "k"]) else {
        panic!()
    };
    assert!((40_000..=50_000).contains(&ms), "{ms}");
    assert_eq!(c.cmd(&["PERSIST", "k"]), int(1));
    assert_eq!(c.cmd(&["TTL", "k"]), int(-1));
    assert_eq!(c.cmd(&["TTL", "nope"]), int(-2));
    assert_eq!(
        c.cmd(&["SET", "k", "v", "EX", "10", "PX", "10"]),
        err("ERR syntax error")
    );
    // A millisecond TTL: gone when its time comes, never served after.
    assert_eq!(c.cmd(&["SET", "brief", "v", "PX", "30"]), simple("OK"));
    assert!(nsqr_testkit::wait_until(Duration::from_secs(10), || {
        c.cmd(&["GET", "brief"]) == Frame::Null
    }));
    assert_eq!(c.cmd(&["EXISTS", "brief"]), int(0));
    assert_eq!(c.cmd(&["EXPIRE", "k", "-1"]), int(1));
    assert_eq!(c.cmd(&["EXISTS", "k"]), int(0));
}

#[test]
fn scan_walks_every_key() {
    let srv = KvServer::start(&[]);
    let mut c = srv.client();
    let mut mset = vec!["MSET".to_string()];
    for i in 0..500 {
        mset.push(format!("key:{i}"));
        mset.push("v".into());
    }
    let args: Vec<&str> = mset.iter().map(String::as_str).collect();
    assert_eq!(c.cmd(&args), simple("OK"));
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    loop {
        let Frame::Array(v) = c.cmd(&["SCAN", &cursor, "MATCH", "key:1*", "COUNT", "50"]) else {
            panic!()
        };
        cursor = String::from_utf8(v[0].as_bytes().unwrap().to_vec()).unwrap();
        let Frame::Array(keys) = &v[1] else { panic!() };
        seen.extend(keys.iter().map(|k| k.as_bytes().unwrap().to_vec()));
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 111); // key:1, key:10..19, key:100..199
    let Frame::Array(all) = c.cmd(&["KEYS", "key:4?"]) else {
        panic!()
    };
    assert_eq!(all.len(), 10);
}

#[test]
fn maxmemory_with_noeviction_refuses_writes_but_not_reads_or_deletes() {
    let srv = KvServer::start(&["--kv-maxmemory=200kb"]);
    let mut c = srv.client();
    let value = "x".repeat(1000);
    let mut refused = None;
    for i in 0..1000 {
        match c.cmd(&["SET", &format!("k{i}"), &value]) {
            f if f == simple("OK") => {}
            f => {
                refused = Some((i, f));
                break;
            }
        }
    }
    let (n, f) = refused.expect("writes refused past maxmemory");
    assert_eq!(
        f,
        err("OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert_eq!(c.cmd(&["GET", "k0"]), bulk(&value));
    assert_eq!(c.cmd(&["DEL", "k0", "k1"]), int(2));
    assert!(n > 50);
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        simple("OK")
    );
    for i in 0..300 {
        assert_eq!(c.cmd(&["SET", &format!("more{i}"), &value]), simple("OK"));
    }
    let Frame::Integer(left) = c.cmd(&["DBSIZE"]) else {
        panic!()
    };
    assert!(left < 300, "{left}");
}
