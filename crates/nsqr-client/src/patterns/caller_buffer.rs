//! Requests the caller lays out in a buffer of its own: nothing of a payload is copied.
//!
//! A request is one NSQ body with its envelope in front of the payload (`envelope.rs`), so
//! [`Requester::send_with`] has the payload written into room of the requester's; a caller
//! whose payloads already lie in a buffer (or are produced into one it recycles) leaves
//! [`Requester::header_len`] bytes in front of each instead, the requester writes the
//! envelopes there, and the whole buffer is published as it is: in process the broker and
//! the responders share it (one reference for the batch), over a socket it is written from
//! where it lies. The buffer is dropped when the last of its requests is done with, so an
//! owner that goes back to a pool when dropped recycles it.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::envelope;
use super::request_reply::{PendingReply, Requester, Sent};
use crate::error::Error;
use crate::producer::Publish;

/// The publish of a batch of requests, shared by their [`PendingReply`]s: the first to wait
/// drives it, the others read its outcome.
pub(crate) struct BatchSent {
    publish: tokio::sync::Mutex<Option<Publish>>,
    outcome: std::sync::OnceLock<Result<(), Error>>,
}

impl BatchSent {
    /// The batch's publish outcome (every request of it fails alike).
    pub(crate) async fn wait(&self) -> Result<(), Error> {
        let mut publish = self.publish.lock().await;
        if let Some(p) = publish.as_mut() {
            // Left in place until it is done, so a waiter dropped meanwhile loses nothing.
            let r = p.await;
            let _ = self.outcome.set(r);
            *publish = None;
        }
        match self.outcome.get() {
            Some(Err(e)) => Err(e.duplicate()),
            _ => Ok(()),
        }
    }
}

impl Requester {
    /// Bytes a request needs in front of its payload for [`Requester::send_batch`]: its
    /// envelope (a correlation id and this requester's reply topic).
    pub fn header_len(&self) -> usize {
        envelope::request_header(&self.reply_topic)
    }

    /// Send the requests laid out in `buf` without copying their payloads, and wait for their
    /// replies with [`PendingReply::wait`] (in the order of `requests`).
    ///
    /// Each range of `requests` is one request: its first [`Requester::header_len`] bytes are
    /// room for the envelope (written here), the rest its payload. The ranges must lie in
    /// `buf`, in order, without overlapping. `buf` is shared with the broker (in process) or
    /// written to the socket from where it lies, then dropped once every request is done with.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use nsqr_broker::{Broker, BrokerConfig};
    /// # use nsqr_client::patterns::{Requester, Responder};
    /// # use nsqr_client::Config;
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let broker = Broker::start(BrokerConfig::default()).await?;
    /// # let config = Config::inproc(broker.clone());
    /// # let mut server = Responder::connect("inproc://", "len", "s", config.clone()).await?;
    /// # let stop = server.stopper();
    /// # let serving = tokio::spawn(async move {
    /// #     server.serve(|p: bytes::Bytes| async move {
    /// #         Ok::<_, String>(bytes::Bytes::from(p.len().to_string()))
    /// #     }).await
    /// # });
    /// let client = Requester::connect("inproc://", config).await?;
    /// let head = client.header_len();
    /// // Two requests, "ab" and "cde", each after room for its envelope.
    /// let mut buf = vec![0; 2 * head + 5];
    /// buf[head..head + 2].copy_from_slice(b"ab");
    /// buf[2 * head + 2..].copy_from_slice(b"cde");
    /// let pending = client.send_batch("len", buf, [0..head + 2, head + 2..2 * head + 5])?;
    /// let mut replies = Vec::new();
    /// for p in pending {
    ///     replies.push(p.wait(Duration::from_secs(5)).await?);
    /// }
    /// assert_eq!(replies, [&b"2"[..], &b"3"[..]]);
    /// # stop.stop();
    /// # serving.await??;
    /// # client.close().await;
    /// # broker.shutdown().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn send_batch<B, R>(
        &self,
        topic: &str,
        buf: B,
        requests: R,
    ) -> Result<Vec<PendingReply>, Error>
    where
        B: AsRef<[u8]> + AsMut<[u8]> + Send + 'static,
        R: IntoIterator<Item = Range<usize>>,
    {
        let requests: Vec<Range<usize>> = requests.into_iter().collect();
        check_layout(buf.as_ref().len(), &requests, self.header_len())?;
        let first = self.reserve_ids(requests.len());
        // Waited for before they are sent: a reply may come back before this returns.
        let mut replies = Vec::with_capacity(requests.len());
        {
            let mut waiting = self.waiting.lock();
            for id in first..first + requests.len() as u64 {
                let (tx, rx) = oneshot::channel();
                waiting.insert(id, tx);
                replies.push((id, rx));
            }
        }
        let sent = Arc::new(BatchSent {
            publish: tokio::sync::Mutex::new(Some(
                self.publish_laid_out(topic, buf, requests, first),
            )),
            outcome: std::sync::OnceLock::new(),
        });
        let topic: Arc<str> = topic.into();
        Ok(replies
            .into_iter()
            .map(|(id, reply)| PendingReply {
                sent: Sent::Batch(Arc::clone(&sent)),
                reply,
                id,
                waiting: Arc::clone(&self.waiting),
                topic: Arc::clone(&topic),
            })
            .collect())
    }

    /// [`Requester::send_batch`] for requests that expect no reply (ZeroMQ's ROUTER sending to
    /// peers by their routing ids), as [`Requester::send_one_way_with`]: the future resolves
    /// with the server's answer to the publish.
    pub fn send_batch_one_way<B, R>(&self, topic: &str, buf: B, requests: R) -> Publish
    where
        B: AsRef<[u8]> + AsMut<[u8]> + Send + 'static,
        R: IntoIterator<Item = Range<usize>>,
    {
        let requests: Vec<Range<usize>> = requests.into_iter().collect();
        if let Err(e) = check_layout(buf.as_ref().len(), &requests, self.header_len()) {
            return Publish::failed(e);
        }
        let first = self.reserve_ids(requests.len());
        self.publish_laid_out(topic, buf, requests, first)
    }

    /// `n` consecutive correlation ids; the first.
    fn reserve_ids(&self, n: usize) -> u64 {
        self.next_id.fetch_add(n as u64, Ordering::Relaxed)
    }

    /// Write the envelopes (ids from `first`) and publish the requests as slices of `buf`.
    fn publish_laid_out<B>(
        &self,
        topic: &str,
        mut buf: B,
        requests: Vec<Range<usize>>,
        first: u64,
    ) -> Publish
    where
        B: AsRef<[u8]> + AsMut<[u8]> + Send + 'static,
    {
        let head = self.header_len();
        let bytes = buf.as_mut();
        for (id, r) in (first..).zip(&requests) {
            // `check_layout` made sure each range is in the buffer and holds the header.
            if let Some(room) = bytes.get_mut(r.start..r.start + head) {
                envelope::write_request(room, id, &self.reply_topic);
            }
        }
        self.producer
            .multi_publish_slices_async(topic, Bytes::from_owner(Owned(buf)), requests)
    }
}

/// The caller's buffer as the owner of a `Bytes` (which wants `AsRef` only).
struct Owned<B>(B);

impl<B: AsRef<[u8]>> AsRef<[u8]> for Owned<B> {
    fn as_ref(&self) -> &[u8] {
        self.0.as_ref()
    }
}

/// Each request in the buffer, after the one before, with room for its `head`-byte envelope.
fn check_layout(len: usize, requests: &[Range<usize>], head: usize) -> Result<(), Error> {
    if requests.is_empty() {
        return Err(Error::EmptyBody);
    }
    let mut end = 0;
    for r in requests {
        let why = if r.start < end || r.start > r.end {
            "overlaps the request before it, or ends before it starts"
        } else if r.end > len {
            "lies outside the buffer"
        } else if r.len() < head {
            "has no room for its envelope"
        } else {
            end = r.end;
            continue;
        };
        return Err(Error::RequestLayout {
            range: r.clone(),
            why: format!("{why} (buffer of {len} bytes, envelope of {head})"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_must_keep_each_request_in_the_buffer_after_the_one_before() {
        assert!(check_layout(30, &[0..10, 10..30], 10).is_ok());
        assert!(
            check_layout(30, &[0..10, 15..25], 10).is_ok(),
            "gaps are fine"
        );
        for (bad, why) in [
            (vec![0..10, 5..20], "overlaps"),
            (vec![0..10, 20..31], "outside"),
            (vec![0..10, 10..19], "no room"),
            (vec![0..10, Range { start: 25, end: 20 }], "ends before"),
        ] {
            let e = check_layout(30, &bad, 10).expect_err("a bad layout");
            assert!(e.to_string().contains(why), "{bad:?}: {e}");
        }
        assert!(matches!(check_layout(30, &[], 10), Err(Error::EmptyBody)));
    }
}
