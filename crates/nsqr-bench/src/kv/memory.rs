//! The memory phases: resident memory per element of one data shape, loaded into a fresh
//! server the same way on either side (pipelined commands of [`PER_CMD`] elements each,
//! [`CMDS_PER_FLUSH`] commands per write), so nsqrd's figure and redis-server's compare.
//! Every member, field and value is 16 bytes, as the shapes ask; the scores of the
//! sorted set are the members' numbers. The element count is `--mem-elements`: the small
//! hashes are `--mem-elements / 10` keys of 10 fields, so every shape holds as many elements;
//! the stream is one `XADD big * f <value>` per entry, [`STREAM_CMDS_PER_FLUSH`] a write.

use std::time::Duration;

use resp_wire::Frame;

use super::conn::RespConn;
use super::phases::{Metrics, Target};
use crate::fail::{err, Result};
use crate::procstat;

/// Elements per command (field-value pairs for hashes).
const PER_CMD: usize = 100;
/// Commands per pipelined write.
const CMDS_PER_FLUSH: usize = 10;
/// XADDs per pipelined write (one entry each).
const STREAM_CMDS_PER_FLUSH: usize = 1000;
/// Fields of each small hash (below Redis's `hash-max-listpack-entries`).
const SMALL_FIELDS: usize = 10;

/// A data shape whose memory is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One hash of N fields with 16-byte values.
    Hash,
    /// One set of N members.
    Set,
    /// One sorted set of N members.
    Zset,
    /// One list of N elements.
    List,
    /// N / 10 hashes of 10 fields.
    SmallHashes,
    /// One stream of N entries of one field.
    Stream,
}

impl Shape {
    /// The metric this shape reports: RSS bytes per element.
    pub fn metric(self) -> &'static str {
        match self {
            Shape::Hash => "mem_hash",
            Shape::Set => "mem_set",
            Shape::Zset => "mem_zset",
            Shape::List => "mem_list",
            Shape::SmallHashes => "mem_small_hashes",
            Shape::Stream => "mem_stream",
        }
    }

    /// Commands per pipelined write.
    fn per_flush(self) -> usize {
        match self {
            Shape::Stream => STREAM_CMDS_PER_FLUSH,
            _ => CMDS_PER_FLUSH,
        }
    }
}

/// A 16-byte member, field or value: `tag`, `:`, and `i` in 14 digits.
fn item(tag: char, i: usize) -> Vec<u8> {
    format!("{tag}:{:014}", i % 100_000_000_000_000).into_bytes()
}

/// The commands that load `n` elements of `shape` (the big shapes under one key, `big`).
fn commands(shape: Shape, n: usize) -> impl Iterator<Item = Vec<Vec<u8>>> {
    let per = match shape {
        Shape::SmallHashes => SMALL_FIELDS,
        Shape::Stream => 1,
        _ => PER_CMD,
    };
    (0..n.div_ceil(per)).map(move |c| {
        let range = c * per..((c + 1) * per).min(n);
        let (verb, key): (&[u8], Vec<u8>) = match shape {
            Shape::Hash => (b"HSET", b"big".to_vec()),
            Shape::Set => (b"SADD", b"big".to_vec()),
            Shape::Zset => (b"ZADD", b"big".to_vec()),
            Shape::List => (b"RPUSH", b"big".to_vec()),
            Shape::SmallHashes => (b"HSET", item('h', c)),
            Shape::Stream => (b"XADD", b"big".to_vec()),
        };
        let mut args = vec![verb.to_vec(), key];
        if shape == Shape::Stream {
            args.extend([b"*".to_vec(), b"f".to_vec()]);
        }
        for i in range {
            match shape {
                Shape::Hash => args.extend([item('f', i), item('v', i)]),
                Shape::SmallHashes => {
                    let j = i % SMALL_FIELDS;
                    args.extend([item('f', j), item('v', i)]);
                }
                Shape::Zset => args.extend([i.to_string().into_bytes(), item('m', i)]),
                Shape::Set | Shape::List => args.push(item('m', i)),
                Shape::Stream => args.push(item('v', i)),
            }
        }
        args
    })
}

/// How many elements the server holds after the load (to check nothing was lost).
async fn count(c: &mut RespConn, shape: Shape) -> Result<usize> {
    let (args, factor): (&[&str], usize) = match shape {
        Shape::Hash => (&["HLEN", "big"], 1),
        Shape::Set => (&["SCARD", "big"], 1),
        Shape::Zset => (&["ZCARD", "big"], 1),
        Shape::List => (&["LLEN", "big"], 1),
        Shape::SmallHashes => (&["DBSIZE"], SMALL_FIELDS),
        Shape::Stream => (&["XLEN", "big"], 1),
    };
    match c.cmd(args).await? {
        Frame::Integer(n) => Ok(usize::try_from(n).unwrap_or(0) * factor),
        other => Err(err(format!("{} answered {other:?}", args[0]))),
    }
}

/// Loads `n` elements of `shape` into a fresh server; metric [`Shape::metric`]: the growth of
/// its RSS per element.
pub async fn measure(t: &Target, shape: Shape, n: usize, m: &mut Metrics) -> Result<()> {
    let Some(pid) = t.pid else {
        return Err(err(
            "the memory phases need the server's pid (--kv-pid, or a local server)",
        ));
    };
    let mut c = RespConn::connect(&t.addr).await?;
    let before = procstat::status_bytes(pid, "VmRSS")?;
    let mut queued = 0;
    for args in commands(shape, n) {
        c.queue(&args);
        queued += 1;
        if queued == shape.per_flush() {
            c.flush().await?;
            c.replies(queued).await?;
            queued = 0;
        }
    }
    c.flush().await?;
    c.replies(queued).await?;
    // Let the server settle (allocator, buffers) before reading.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = procstat::status_bytes(pid, "VmRSS")?;
    let held = count(&mut c, shape).await?;
    if held < n {
        return Err(err(format!("{shape:?}: {held} of {n} elements stored")));
    }
    m.insert(
        shape.metric().into(),
        after.saturating_sub(before) as f64 / n as f64,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_16_bytes_and_distinct() {
        assert_eq!(item('m', 42), b"m:00000000000042");
        assert_eq!(item('f', 0), b"f:00000000000000");
        assert_ne!(item('m', 1), item('m', 10));
    }

    #[test]
    fn commands_carry_every_element_once() {
        let all: Vec<_> = commands(Shape::Hash, 250).collect();
        assert_eq!(all.len(), 3);
        assert_eq!(all[2].len(), 2 + 2 * 50);
        let zadd: Vec<_> = commands(Shape::Zset, 5).collect();
        assert_eq!(zadd[0][2..4], [b"0".to_vec(), item('m', 0)]);
        let small: Vec<_> = commands(Shape::SmallHashes, 30).collect();
        assert_eq!(small.len(), 3);
        assert!(small.iter().all(|c| c.len() == 2 + 2 * SMALL_FIELDS));
        assert_ne!(small[0][1], small[1][1]);
        let list: Vec<_> = commands(Shape::List, 100).collect();
        assert_eq!((list.len(), list[0].len()), (1, 102));
        let stream: Vec<_> = commands(Shape::Stream, 3).collect();
        assert_eq!(stream.len(), 3);
        assert_eq!(
            stream[2][1..],
            [b"big".to_vec(), b"*".to_vec(), b"f".to_vec(), item('v', 2)]
        );
    }
}
