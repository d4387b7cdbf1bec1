use std::sync::{Arc, Mutex};

use bytes::Bytes;
use nsqr_replication::{ForwardError, ForwardHandler, ForwardRefused, Forwarded, Unstamped};

use crate::harness::{retry, Cluster};

/// Records what it is forwarded and answers as told.
struct Recorder {
    got: Mutex<Vec<(String, Unstamped)>>,
    answer: Result<(), ForwardRefused>,
}

impl ForwardHandler for Recorder {
    fn publish(&self, group: &str, batch: Unstamped) -> Forwarded {
        self.got
            .lock()
            .expect("lock")
            .push((group.to_string(), batch));
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

fn recorder(answer: Result<(), ForwardRefused>) -> Arc<Recorder> {
    Arc::new(Recorder {
        got: Mutex::new(Vec::new()),
        answer,
    })
}

/// A batch forwarded from one node reaches the other's handler whole and its answer comes
/// back; a node with no handler refuses, a node not running is never reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_batch_reaches_the_peer_s_handler_and_its_answer_comes_back() {
    let mut cluster = Cluster::start(3, |_| {}).await;
    let batch = Unstamped {
        deliver_at_ms: Some(1_800_000_000_000),
        bodies: vec![Bytes::from_static(b"a"), Bytes::from_static(b"")],
    };
    let from = cluster.node(1).log().expect("node 1 runs");

    let refused = from.forward(2, batch.clone()).await;
    assert!(
        matches!(&refused, Err(ForwardError::Refused(ForwardRefused::Failed(why))) if why.contains("no forwarded publishes")),
        "{refused:?}"
    );

    let taker = recorder(Ok(()));
    cluster
        .node(2)
        .cluster_node()
        .expect("node 2 runs")
        .take_forwards(taker.clone());
    for _ in 0..3 {
        from.forward(2, batch.clone()).await.expect("taken");
    }
    let got = taker.got.lock().expect("lock").clone();
    assert_eq!(got.len(), 3);
    assert!(got
        .iter()
        .all(|(g, b)| g == crate::harness::GROUP && *b == batch));

    let not_leader = recorder(Err(ForwardRefused::NotLeader));
    cluster
        .node(3)
        .cluster_node()
        .expect("node 3 runs")
        .take_forwards(not_leader);
    let refused = from.forward(3, batch.clone()).await;
    assert!(
        matches!(
            refused,
            Err(ForwardError::Refused(ForwardRefused::NotLeader))
        ),
        "{refused:?}"
    );
    let unknown = from.forward(9, batch.clone()).await;
    assert!(
        matches!(unknown, Err(ForwardError::Unsent { node: 9, .. })),
        "{unknown:?}"
    );

    // Node 2 stopped: once its connections are closed (the idle one is not reused), it is
    // not reached at all.
    cluster.stop(2).await;
    let from = cluster.node(1).log().expect("node 1 runs");
    retry("node 2 unreachable", || async {
        match from.forward(2, batch.clone()).await {
            Err(ForwardError::Unsent { node: 2, .. }) => Some(()),
            Err(_) => None,
            Ok(()) => panic!("a stopped node took a batch"),
        }
    })
    .await;
    cluster.shutdown().await;
}
