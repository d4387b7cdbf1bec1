//! Waiting for nodes to register a topic with lookupd (`GET /lookup?topic=T`, through
//! nsqr-client's lookupd client): `cluster`'s consumers connect to every producer it lists, so
//! a run also exercises the lookupd and the nodes' registrations.

use std::time::{Duration, Instant};

use nsqr_client::lookupd::{lookup, Producer};

use crate::fail::{err, Result, IO_TIMEOUT};

/// Ask until lookupd lists at least `want` producers for `topic` (nodes register a topic
/// shortly after creating it), or `within` has passed.
pub async fn wait_for_producers(
    http_addr: &str,
    topic: &str,
    want: usize,
    within: Duration,
) -> Result<Vec<Producer>> {
    let deadline = Instant::now() + within;
    loop {
        let found = lookup(http_addr, topic, IO_TIMEOUT, None)
            .await
            .map_err(|e| err(e.to_string()))?;
        if found.len() >= want {
            return Ok(found);
        }
        if Instant::now() >= deadline {
            return Err(err(format!(
                "lookupd {http_addr} lists {} producers of {topic} after {within:?}, want {want}",
                found.len()
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
