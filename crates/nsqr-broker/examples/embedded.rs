//! The broker embedded in a program: publish and consume in one process, no sockets.
//!
//! Two channels of one topic each get every message (publish-subscribe); the two consumers of
//! one channel share its messages (a work queue); a requeued message comes back with its
//! attempt counted; a deferred one waits its delay. The program checks what it receives and
//! exits non-zero if anything is off (`make test` runs it):
//!
//! ```sh
//! cargo run -p nsqr-broker --example embedded
//! ```

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use nsqr_broker::{Broker, BrokerConfig, SubscribeOptions};

type Error = Box<dyn std::error::Error>;

fn check(ok: bool, what: &str) -> Result<(), Error> {
    if ok {
        println!("ok: {what}");
        Ok(())
    } else {
        Err(format!("FAILED: {what}").into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let broker = Broker::start(BrokerConfig::default()).await?;
    let opts = SubscribeOptions::default().max_in_flight(64);

    // Subscribe first: a channel gets the messages published after it exists.
    let mut audit = broker.subscribe("orders", "audit", opts.clone()).await?;
    let mut worker_a = broker.subscribe("orders", "billing", opts.clone()).await?;
    let mut worker_b = broker.subscribe("orders", "billing", opts).await?;

    let orders = broker.publisher("orders")?;
    let bodies: Vec<String> = (1..=100).map(|i| format!("order {i}")).collect();
    orders.publish_batch(bodies.iter().cloned())?.wait().await?;

    // publish-subscribe: the audit channel sees all 100, in order.
    let mut seen = Vec::new();
    while seen.len() < bodies.len() {
        let d = audit.next().await.ok_or("audit closed")?;
        seen.push(String::from_utf8(d.body().to_vec())?);
        d.fin()?;
    }
    check(seen == bodies, "audit received every order, in order")?;

    // work queue: the billing channel's 100 are shared by its two consumers, each once.
    let mut billed = BTreeSet::new();
    let (mut by_a, mut by_b) = (0, 0);
    while billed.len() < bodies.len() {
        let d = tokio::select! {
            d = worker_a.next() => { by_a += 1; d }
            d = worker_b.next() => { by_b += 1; d }
        }
        .ok_or("billing closed")?;
        billed.insert(String::from_utf8(d.body().to_vec())?);
        d.fin()?;
    }
    check(
        billed.len() == 100 && by_a + by_b == 100,
        &format!("billing shared the orders between its consumers ({by_a} + {by_b})"),
    )?;

    // A requeued message comes back, attempt counted.
    orders.publish("retry me")?;
    let first = audit.next().await.ok_or("audit closed")?;
    first.req(Duration::ZERO)?;
    let again = audit.next().await.ok_or("audit closed")?;
    check(
        again.body().as_ref() == b"retry me" && again.attempts() == 2,
        "a requeued message came back with attempts 2",
    )?;
    again.fin()?;
    // Billing got its own copy of it, once.
    let copy = tokio::select! {
        d = worker_a.next() => d,
        d = worker_b.next() => d,
    }
    .ok_or("billing closed")?;
    check(
        copy.body().as_ref() == b"retry me" && copy.attempts() == 1,
        "billing's copy is its own (attempts 1)",
    )?;
    copy.fin()?;

    // A deferred message waits its delay.
    let start = Instant::now();
    orders.publish_deferred("later", Duration::from_millis(200))?;
    let later = audit.next().await.ok_or("audit closed")?;
    check(
        later.body().as_ref() == b"later" && start.elapsed() >= Duration::from_millis(200),
        "a deferred message arrived after its delay",
    )?;
    later.fin()?;

    broker.shutdown().await?;
    println!("embedded: all checks passed");
    Ok(())
}
