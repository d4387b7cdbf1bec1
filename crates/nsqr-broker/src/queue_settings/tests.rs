//! Reading, checking, merging and showing queue settings.

use super::*;
use serde_json::json;

fn limits() -> Limits {
    Limits {
        max_msg_timeout: Duration::from_secs(900),
        topic: Some("t".into()),
        cluster_size: 0,
    }
}

#[test]
fn patch_sets_unsets_and_round_trips() {
    let p = QueueSettings::from_json(
        &json!({"max_attempts": 5, "dead_letter_topic": "t.dlq", "ordered": true,
                "message_ttl": "1h", "expired": "drop", "msg_timeout": 1500,
                "mem_queue_size": 0}),
        &limits(),
    )
    .expect("valid");
    assert_eq!(p.max_attempts, Some(5));
    assert_eq!(p.message_ttl, Some(Duration::from_secs(3600)));
    assert_eq!(p.msg_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(p.mem_queue_size, Some(0));
    let j = p.to_json();
    assert_eq!(
        j,
        json!({"max_attempts": 5, "dead_letter_topic": "t.dlq", "ordered": true,
               "message_ttl": "1h0m0s", "expired": "drop", "msg_timeout": "1.5s",
               "mem_queue_size": 0})
    );
    assert_eq!(QueueSettings::from_json(&j, &limits()).expect("again"), p);
    let q = p
        .patch(&json!({"ordered": null, "max_attempts": 2}), &limits())
        .expect("patch");
    assert_eq!((q.ordered, q.max_attempts), (None, Some(2)));
    assert!(QueueSettings::from_json(&json!({}), &limits())
        .expect("empty")
        .is_empty());
}

#[test]
fn bad_values_change_nothing() {
    let p = QueueSettings {
        max_attempts: Some(3),
        ..QueueSettings::default()
    };
    for bad in [
        json!({"max_attempts": -1}),
        json!({"max_attempts": 65536}),
        json!({"max_attempts": "5"}),
        json!({"max_attempts": 1.5}),
        json!({"dead_letter_topic": "no spaces"}),
        json!({"dead_letter_topic": "t"}),
        json!({"dead_letter_topic": 5}),
        json!({"ordered": "yes"}),
        json!({"message_ttl": "-1s"}),
        json!({"message_ttl": "soon"}),
        json!({"message_ttl": "8761h"}),
        json!({"expired": "keep"}),
        json!({"msg_timeout": "0s"}),
        json!({"msg_timeout": "16m"}),
        json!({"mem_queue_size": -5}),
        json!({"mem_queue_size": 1e12}),
        json!({"bogus": 1}),
        json!({"max_attempts": 4, "bogus": 1}),
        json!([1]),
        json!("x"),
    ] {
        assert!(p.patch(&bad, &limits()).is_err(), "{bad}");
    }
    let e = p
        .patch(&json!({"max_attempts": "x"}), &limits())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "max_attempts: expected an integer from 0 (no limit) to 65535, got \"x\""
    );
}

#[test]
fn effective_settings_inherit() {
    let cfg = BrokerConfig::default();
    let topic = QueueSettings {
        max_attempts: Some(5),
        message_ttl: Some(Duration::from_secs(60)),
        ..QueueSettings::default()
    };
    let own = QueueSettings {
        max_attempts: Some(2),
        ..QueueSettings::default()
    };
    let e = EffectiveSettings::resolve("orders", &own, &topic, &cfg);
    assert_eq!(e.max_attempts, 2);
    assert_eq!(e.message_ttl, Duration::from_secs(60));
    assert_eq!(e.dead_letter_topic, "orders.dead");
    assert_eq!(e.mem_queue_size, cfg.mem_queue_size);
    assert_eq!(e.msg_timeout, cfg.msg_timeout);
    assert!(e.checks_messages());
    let plain = EffectiveSettings::resolve(
        "t",
        &QueueSettings::default(),
        &QueueSettings::default(),
        &cfg,
    );
    assert!(!plain.checks_messages());
    assert_eq!(plain.to_settings().to_json()["msg_timeout"], json!("1m0s"));
    assert_eq!(
        serde_json::to_string(&e.to_settings()).expect("json"),
        r#"{"max_attempts":2,"dead_letter_topic":"orders.dead","ordered":false,"message_ttl":"1m0s","expired":"dead_letter","msg_timeout":"1m0s","mem_queue_size":10000,"replicas":1}"#
    );
}

#[test]
fn default_dead_letter_names_stay_valid() {
    assert_eq!(default_dead_letter_topic("a"), "a.dead");
    assert_eq!(default_dead_letter_topic("a#ephemeral"), "a.dead#ephemeral");
    let long = "x".repeat(64);
    let d = default_dead_letter_topic(&long);
    assert!(d.len() <= 64 && d.ends_with(".dead"), "{d}");
    let long_eph = format!("{}#ephemeral", "y".repeat(54));
    let d = default_dead_letter_topic(&long_eph);
    assert!(nsq_wire::names::is_valid_name(d.as_bytes()), "{d}");
}

#[test]
fn keys_are_the_fields_in_order() {
    assert_eq!(
        keys(),
        [
            "max_attempts",
            "dead_letter_topic",
            "ordered",
            "message_ttl",
            "expired",
            "msg_timeout",
            "mem_queue_size",
            "replicas"
        ]
    );
    let e = QueueSettings::from_json(&json!({"bogus": 1}), &limits()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown setting \"bogus\" (known: max_attempts, dead_letter_topic, ordered, \
         message_ttl, expired, msg_timeout, mem_queue_size, replicas)"
    );
    let e = QueueSettings::from_json(&json!({"msg_timeout": "0s"}), &limits()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "msg_timeout: expected a duration from 1ms to --max-msg-timeout (15m0s), got \"0s\""
    );
}

#[test]
fn replicas_need_a_cluster_that_large() {
    let with_cluster = |n| Limits {
        cluster_size: n,
        ..limits()
    };
    let err = |v: Value, l: &Limits| QueueSettings::from_json(&v, l).unwrap_err().to_string();
    assert_eq!(
        err(json!({"replicas": 3}), &limits()),
        "replicas: a replicated topic needs a cluster (--cluster-node-id, --cluster-address, --cluster-peers, --cluster-secret-file)"
    );
    assert_eq!(
        err(json!({"replicas": 5}), &with_cluster(3)),
        "replicas: 5 replicas need a cluster of at least 5 nodes (--cluster-peers names 3)"
    );
    for bad in [json!(2), json!(0), json!("3"), json!(7)] {
        assert_eq!(
            err(json!({ "replicas": bad }), &with_cluster(5)),
            format!("replicas: expected 1, 3 or 5, got {bad}")
        );
    }
    let p = QueueSettings::from_json(&json!({"replicas": 3}), &with_cluster(3)).expect("valid");
    assert_eq!(p.replicas, Some(3));
    let one = QueueSettings::from_json(&json!({"replicas": 1}), &limits()).expect("valid");
    assert_eq!(one.replicas, Some(1));
}
