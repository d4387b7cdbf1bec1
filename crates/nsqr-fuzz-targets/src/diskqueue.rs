//! The disk queue's readers on files that may hold anything: a data directory left by a
//! crash, a disk that flipped bits, or a hand-edited metadata file.
//!
//! Input: `[mode][meta_len][meta...][split][data...]`. The data bytes become the queue's data
//! file 0, or files 0 and 1 cut at `split * 16` (mode bit 3); the metadata file holds the
//! `meta_len` bytes after it (mode bit 2; without it the queue rebuilds its metadata). Mode
//! bit 0: payloads of 1 byte and up (else nsqd's 26); bit 1: at most 64 bytes (else 1 MiB);
//! bit 4: explicit acknowledgements, and then bit 5: read everything, rewind, and read it
//! all again instead of acknowledging.
//!
//! Checks: every record read has a valid length and came from the bytes given; reading ends;
//! after a rewind the same records come back in the same order; once drained, a record put
//! into the queue is the next one read (whatever damage came before, the queue works).
//! `diskqueue_chunks` reads with `read_chunk` (record and byte bounds from the mode byte) and
//! also checks `Chunk::from_layout` on the raw bytes.

use diskqueue::{Chunk, DiskQueue, DiskQueueOptions};

use crate::scratch::ScratchDir;

const NAME: &str = "fuzz";
/// Reads per pass: far more than the records the input can hold, so reading must end first.
const MAX_READS: usize = 10_000;

pub fn diskqueue_records(data: &[u8]) {
    run(data, Reader::Records);
}

pub fn diskqueue_chunks(data: &[u8]) {
    if let Some(chunk) = Chunk::from_layout(data.to_vec()) {
        let framing = 4 * chunk.len();
        let payload: usize = chunk.payloads().map(<[u8]>::len).sum();
        assert_eq!(payload + framing, data.len());
        assert_eq!(chunk.payload_ranges().count(), chunk.len());
    }
    let records = data.first().map_or(1, |m| usize::from(m >> 6) * 3 + 1);
    let bytes = data.get(1).map_or(64, |b| usize::from(*b) * 8);
    run(data, Reader::Chunks { records, bytes });
}

#[derive(Clone, Copy)]
enum Reader {
    Records,
    Chunks { records: usize, bytes: usize },
}

struct Input<'a> {
    opts: DiskQueueOptions,
    meta: Option<&'a [u8]>,
    files: Vec<&'a [u8]>,
    explicit_ack: bool,
    rewind: bool,
}

impl<'a> Input<'a> {
    fn parse(data: &'a [u8]) -> Option<Input<'a>> {
        let [mode, meta_len, rest @ ..] = data else {
            return None;
        };
        let (meta, rest) = rest.split_at(usize::from(*meta_len).min(rest.len()));
        let (split, bytes) = rest.split_first()?;
        let files = if mode & 8 != 0 {
            let (a, b) = bytes.split_at((usize::from(*split) * 16).min(bytes.len()));
            vec![a, b]
        } else {
            vec![bytes]
        };
        Some(Input {
            opts: DiskQueueOptions {
                max_bytes_per_file: 1024,
                min_msg_size: if mode & 1 != 0 { 1 } else { 26 },
                max_msg_size: if mode & 2 != 0 { 64 } else { 1 << 20 },
                sync_every: 1,
                max_bytes: 0,
            },
            meta: (mode & 4 != 0).then_some(meta),
            files,
            explicit_ack: mode & 16 != 0,
            rewind: mode & 16 != 0 && mode & 32 != 0,
        })
    }
}

fn run(data: &[u8], reader: Reader) {
    let Some(input) = Input::parse(data) else {
        return;
    };
    let Some(dir) = ScratchDir::new() else {
        return;
    };
    let write = |file: String, bytes: &[u8]| std::fs::write(dir.path().join(file), bytes).is_ok();
    if let Some(meta) = input.meta {
        if !write(format!("{NAME}.diskqueue.meta.dat"), meta) {
            return;
        }
    }
    for (n, bytes) in input.files.iter().enumerate() {
        if !write(format!("{NAME}.diskqueue.{n:06}.dat"), bytes) {
            return;
        }
    }
    let Ok(mut q) = DiskQueue::open(dir.path(), NAME, input.opts) else {
        return;
    };
    q.set_explicit_ack(input.explicit_ack);
    let given: usize = input.files.iter().map(|f| f.len()).sum();
    let Some(first) = read_all(&mut q, reader, &input, given) else {
        return;
    };
    if input.rewind {
        q.rewind();
        let again = read_all(&mut q, reader, &input, given);
        assert_eq!(
            again.as_ref(),
            Some(&first),
            "a rewind read different records"
        );
    }
    q.ack_all_read();
    // Whatever came before, the queue works: a new record is the next one read.
    let record = vec![7u8; input.opts.min_msg_size as usize];
    if q.put(&record).is_err() {
        return;
    }
    let next = match reader {
        Reader::Records => q.read_next().ok().flatten(),
        Reader::Chunks { .. } => q
            .read_chunk(1, 64)
            .ok()
            .flatten()
            .and_then(|c| c.payloads().next().map(<[u8]>::to_vec)),
    };
    assert_eq!(
        next,
        Some(record),
        "a record put after draining was not read back"
    );
    let _ = q.close();
}

/// Every record the queue yields until it has none; None if the filesystem failed (not the
/// bytes' fault). Acknowledges as it goes in explicit-ack mode unless a rewind follows.
fn read_all(
    q: &mut DiskQueue,
    reader: Reader,
    input: &Input<'_>,
    given: usize,
) -> Option<Vec<Vec<u8>>> {
    let mut records: Vec<Vec<u8>> = Vec::new();
    for _ in 0..MAX_READS {
        let batch = match reader {
            Reader::Records => q.read_next().ok()?.map(|r| vec![r]),
            Reader::Chunks { records, bytes } => q.read_chunk(records, bytes).ok()?.map(|c| {
                assert!(!c.is_empty(), "an empty chunk");
                assert!(
                    c.len() <= records,
                    "{} records for at most {records}",
                    c.len()
                );
                c.payloads().map(<[u8]>::to_vec).collect()
            }),
        };
        let Some(batch) = batch else {
            let read: usize = records.iter().map(|r| 4 + r.len()).sum();
            assert!(
                read <= given,
                "read {read} bytes of records from {given} bytes"
            );
            return Some(records);
        };
        for r in &batch {
            let len = r.len() as u32;
            assert!(
                (input.opts.min_msg_size..=input.opts.max_msg_size).contains(&len),
                "a record of {len} bytes"
            );
        }
        if input.explicit_ack && !input.rewind {
            q.ack(batch.len());
        }
        records.extend(batch);
    }
    panic!("the queue still yields records after {MAX_READS} reads");
}
