//! Reading request bodies the way nsqd does (`io.ReadAll(io.LimitReader(body, max+1))`): read at
//! most `limit` bytes and leave the rest unread, so an oversized upload costs at most one limit's
//! worth of memory. The body is copied into an allocation of its own size: hyper hands it over
//! as a slice of the connection's read buffer (8 KiB and more), and queued messages sliced from
//! that would pin the whole buffer each, and the next request would need a fresh read buffer
//! (docs/decisions/0011-http-request-bodies-copied.md). Unlike nsqd, the whole request
//! must have arrived by its deadline (`--http-read-timeout`), so a body that stops coming does
//! not hold the connection.

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body, Incoming};
use hyper::StatusCode;
use nsq_common::http::response::ApiError;
use nsq_common::http::server::RequestDeadline;

/// At most `limit` bytes of a request's body, by its deadline: a body that stalls is
/// 408 `REQUEST_TIMEOUT` (the connection then closes), a failed read nsqd's 500.
pub async fn read_body(
    body: Incoming,
    deadline: Option<RequestDeadline>,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let read = read_limited(body, limit);
    let body = match deadline {
        Some(RequestDeadline(d)) => tokio::time::timeout_at(d, read)
            .await
            .map_err(|_| ApiError::new(StatusCode::REQUEST_TIMEOUT, "REQUEST_TIMEOUT"))?,
        None => read.await,
    };
    body.map_err(|_| ApiError::internal())
}

/// At most `limit` bytes of `body`, in an allocation of their own (sized by the declared
/// length when there is one).
async fn read_limited<B>(mut body: B, limit: usize) -> Result<Bytes, B::Error>
where
    B: Body<Data = Bytes> + Unpin,
{
    let declared = body.size_hint().exact().unwrap_or(0);
    let mut all = BytesMut::with_capacity(usize::try_from(declared).unwrap_or(limit).min(limit));
    while all.len() < limit {
        let Some(frame) = body.frame().await else {
            break;
        };
        let Ok(data) = frame?.into_data() else {
            continue; // trailers
        };
        let take = data.len().min(limit - all.len());
        all.extend_from_slice(&data[..take]);
    }
    Ok(all.freeze())
}

/// The declared `Content-Length`, if any (Go's `req.ContentLength`, -1 when chunked).
pub fn content_length<B: Body>(body: &B) -> Option<u64> {
    body.size_hint().exact()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;
    use hyper::body::Frame;
    use std::convert::Infallible;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A body delivered in the given frames.
    struct Chunks(std::vec::IntoIter<&'static [u8]>);

    impl Body for Chunks {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            Poll::Ready(
                self.0
                    .next()
                    .map(|c| Ok(Frame::data(Bytes::from_static(c)))),
            )
        }
    }

    fn chunks(parts: &[&'static [u8]]) -> Chunks {
        Chunks(Vec::from(parts).into_iter())
    }

    #[tokio::test]
    async fn limits_and_joins() {
        let b = read_limited(Full::new(Bytes::from_static(b"hello")), 10)
            .await
            .unwrap();
        assert_eq!(&b[..], b"hello");
        let b = read_limited(Full::new(Bytes::from_static(b"hello")), 3)
            .await
            .unwrap();
        assert_eq!(&b[..], b"hel");
        let b = read_limited(chunks(&[b"ab", b"cd", b"ef"]), 5)
            .await
            .unwrap();
        assert_eq!(&b[..], b"abcde");
        let b = read_limited(chunks(&[b"ab", b"cd"]), 100).await.unwrap();
        assert_eq!(&b[..], b"abcd");
        let b = read_limited(chunks(&[]), 100).await.unwrap();
        assert!(b.is_empty());
        // A body is never a slice of the buffer it arrived in (it would pin all of it).
        let big = Bytes::from(vec![7u8; 8192]);
        let b = read_limited(Full::new(big.slice(..16)), 100).await.unwrap();
        assert_eq!(&b[..], &[7u8; 16]);
        assert_ne!(b.as_ptr(), big.as_ptr());
        assert_eq!(
            content_length(&Full::new(Bytes::from_static(b"abc"))),
            Some(3)
        );
    }
}
