//! A replicated topic's channels in the engine, with a stand-in for the daemon's hook: a new
//! channel receives nothing until the daemon admits it (its creation committed), the first one
//! admitted takes the topic's backlog, a later one starts empty, even while the first still
//! reads its backlog back from disk; a topic that is not (or no longer) replicated is served
//! as nsqd's.
use std::sync::Arc;
use std::time::Duration;

use nsqr_broker::{
    Broker, BrokerConfig, BrokerError, MessageId, ReplicaMessage, ReplicaOp, Replicate,
    Replication, Ticket, Topic,
};
use parking_lot::Mutex;

/// Records the channel operations reported; never proposes a publish.
#[derive(Default)]
struct Hook {
    ops: Mutex<Vec<(Option<String>, ReplicaOp)>>,
}

impl Replicate for Hook {
    fn cluster_size(&self) -> usize {
        3
    }

    fn topic_replicated(&self, _topic: &str, _replicas: u8) {}

    fn publish(&self, _topic: &str, _batch: Vec<ReplicaMessage>) -> Result<Ticket, BrokerError> {
        Err(BrokerError::Exiting)
    }

    fn channel_op(&self, _topic: &str, channel: Option<&str>, op: ReplicaOp) {
        self.ops.lock().push((channel.map(str::to_owned), op));
    }

    fn may_deliver(&self, _topic: &str) -> bool {
        true
    }
}

/// A broker with `hook` (and `data_path`, `--mem-queue-size=2`), its topic `t` at
/// `replicas = 3` holding committed messages 1 to `backlog`, and its channels `x` and `y`.
async fn replicated_topic(
    hook: &Arc<Hook>,
    data_path: Option<&std::path::Path>,
    backlog: u64,
) -> (Broker, Arc<Topic>) {
    let b = Broker::start(BrokerConfig {
        replication: Some(Replication(Arc::clone(hook) as Arc<dyn Replicate>)),
        data_path: data_path.map(std::path::Path::to_path_buf),
        mem_queue_size: 2,
        ..BrokerConfig::default()
    })
    .await
    .unwrap();
    b.configure_topic("t", &serde_json::json!({"replicas": 3}))
        .unwrap();
    let t = b.topic("t").unwrap();
    put(&t, &committed(1, backlog)).await;
    b.open_channel("t", "x").await.unwrap();
    b.open_channel("t", "y").await.unwrap();
    (b, t)
}

/// Committed messages `first..first + n`, as the leader's log hands them back.
fn committed(first: u64, n: u64) -> Vec<ReplicaMessage> {
    (first..first + n)
        .map(|i| ReplicaMessage {
            id: MessageId(i),
            timestamp_ns: 1,
            deliver_at_ms: None,
            body: format!("m{i}").into(),
        })
        .collect()
}

async fn put(topic: &Topic, batch: &[ReplicaMessage]) {
    let mut ticket = topic.put_committed(batch).unwrap();
    ticket.ready().await;
}

fn depth(topic: &Topic, channel: &str) -> usize {
    topic.channel(channel).unwrap().depth()
}

#[tokio::test]
async fn a_channel_receives_once_admitted_and_only_the_first_takes_the_backlog() {
    let hook = Arc::new(Hook::default());
    let (b, t) = replicated_topic(&hook, None, 3).await;
    assert!(!t.is_receiving("x") && !t.is_receiving("y"));
    put(&t, &committed(4, 1)).await;
    assert_eq!((depth(&t, "x"), depth(&t, "y")), (0, 0), "not admitted yet");

    assert!(t.set_receiving("x", true));
    assert!(t.set_receiving("y", true));
    assert_eq!(
        (depth(&t, "x"), depth(&t, "y")),
        (4, 0),
        "the first takes the backlog"
    );
    put(&t, &committed(5, 1)).await;
    assert_eq!((depth(&t, "x"), depth(&t, "y")), (5, 1));

    assert!(t.set_receiving("y", false));
    put(&t, &committed(6, 1)).await;
    assert_eq!((depth(&t, "x"), depth(&t, "y")), (6, 1), "withdrawn");
    assert!(!t.set_receiving("z", true), "no such channel");
    b.configure_topic("t", &serde_json::json!({"replicas": 1}))
        .unwrap();
    assert!(
        t.is_receiving("y"),
        "a topic no longer replicated serves every channel"
    );
    let created: Vec<Option<String>> = hook
        .ops
        .lock()
        .iter()
        .filter(|(_, op)| *op == ReplicaOp::Created)
        .map(|(c, _)| c.clone())
        .collect();
    assert_eq!(created, vec![Some("x".into()), Some("y".into())]);
}

#[tokio::test]
async fn a_backlog_read_back_from_disk_goes_to_the_first_channel_alone() {
    let dir = nsqr_testkit::temp_dir("replicated");
    let hook = Arc::new(Hook::default());
    let (_b, t) = replicated_topic(&hook, Some(&dir), 200).await;
    t.set_receiving("x", true);
    t.set_receiving("y", true);
    put(&t, &committed(201, 1)).await;
    for _ in 0..600 {
        if depth(&t, "x") == 201 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!((depth(&t, "x"), depth(&t, "y")), (201, 1));
}

#[tokio::test]
async fn a_topic_that_is_not_replicated_serves_a_new_channel_at_once() {
    let b = Broker::start(BrokerConfig::default()).await.unwrap();
    let t = b.get_or_create_topic("plain").unwrap();
    let body = nsq_wire::Bodies::one(bytes::Bytes::from_static(b"m")).unwrap();
    t.put(&[body], Duration::ZERO).unwrap();
    b.open_channel("plain", "x").await.unwrap();
    b.open_channel("plain", "y").await.unwrap();
    assert!(t.is_receiving("x") && t.is_receiving("y"));
    assert_eq!((depth(&t, "x"), depth(&t, "y")), (1, 0));
}
