//! `nsqr-bench matrix`: publish and consume at once for each message size (64 B, 1 KB, 8 KB,
//! 64 KB by default), timed at the receiver. Batches shrink for large messages so one MPUB fits
//! nsqd's default 5 MiB body limit.

use super::{pubsub, Workload};
use crate::fail::Result;
use crate::report::MatrixRow;

pub async fn run(w: &Workload, topic: &str) -> Result<Vec<MatrixRow>> {
    let mut rows = Vec::new();
    for &size in &w.sizes {
        let t = format!("{topic}_{size}");
        let (publish, consume) = pubsub::run(w, &t, size).await?;
        rows.push(MatrixRow {
            size,
            publish,
            consume,
        });
    }
    Ok(rows)
}
