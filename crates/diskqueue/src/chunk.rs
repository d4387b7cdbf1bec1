//! Reading many records at once. A consumer draining a backlog from disk pays, per record, a
//! buffered `read_exact` for the length, a zeroed allocation and a copy for the payload, and the
//! free later on; [`DiskQueue::read_chunk`] instead reads whole records in one positioned read
//! into one buffer, in the file's own layout (`[u32 BE length][payload]` back to back), so the
//! owner can keep the buffer and point its messages into it. Every length in a chunk is checked
//! by the same rule as the single-record reader: a chunk ends before the first record that
//! record reader would refuse, and the next read meets that record alone (and quarantines the
//! file as [`DiskQueue::read_next`] would).

use std::ops::Range;
use std::os::unix::fs::FileExt;

use crate::error::Result;
use crate::options::LENGTH_PREFIX_LEN;
use crate::queue::DiskQueue;
use crate::read::{Step, Window};
use crate::record::{check_len, read_failure, record_len, too_short, ReadFailure};

/// Whole records read in one go, in the file's layout: each payload after its big-endian u32
/// length. Every length was validated, so walking the chunk stays in bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    data: Vec<u8>,
    count: usize,
}

impl Chunk {
    /// A chunk of `data` if it is exactly whole records (`[u32 BE length][payload]` back to
    /// back; lengths are not checked against any queue's bounds). For owners' tests.
    pub fn from_layout(data: Vec<u8>) -> Option<Chunk> {
        let mut walk = PayloadRanges::new(&data);
        let count = walk.by_ref().count();
        (walk.offset() == data.len()).then_some(Chunk { data, count })
    }

    /// How many records.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Never true for a chunk returned by [`DiskQueue::read_chunk`].
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The records, length prefixes included.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Where each payload is in [`Chunk::data`], in order.
    pub fn payload_ranges(&self) -> PayloadRanges<'_> {
        PayloadRanges::new(&self.data)
    }

    /// The payloads, in order.
    pub fn payloads(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.payload_ranges().filter_map(move |r| self.data.get(r))
    }

    /// The buffer, to keep (payloads at [`Chunk::payload_ranges`]).
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    fn single(payload: Vec<u8>) -> Chunk {
        let mut data = Vec::with_capacity(payload.len() + LENGTH_PREFIX_LEN as usize);
        crate::record::encode_into(&mut data, &payload);
        Chunk { data, count: 1 }
    }
}

/// Iterator over the payload ranges of a record layout (see [`Chunk::payload_ranges`]); stops
/// at the first length that does not fit the data.
#[derive(Debug, Clone)]
pub struct PayloadRanges<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> PayloadRanges<'a> {
    /// The payloads of `data`, a record layout, from its start.
    pub fn new(data: &'a [u8]) -> PayloadRanges<'a> {
        PayloadRanges { data, at: 0 }
    }

    /// Offset of the next record's length prefix.
    pub fn offset(&self) -> usize {
        self.at
    }
}

impl Iterator for PayloadRanges<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let start = self.at.checked_add(LENGTH_PREFIX_LEN as usize)?;
        let prefix: [u8; 4] = self.data.get(self.at..start)?.try_into().ok()?;
        let end = start.checked_add(u32::from_be_bytes(prefix) as usize)?;
        if end > self.data.len() {
            return None;
        }
        self.at = end;
        Some(start..end)
    }
}

impl DiskQueue {
    /// Consumes and returns up to `max_records` records, as many as fit in about `max_bytes`
    /// (at least one, however large), all from the current read file. `None` when the queue
    /// has nothing to read; an `Err` leaves the read position unchanged. Read position,
    /// depth, syncing and explicit acknowledgements are as for that many
    /// [`DiskQueue::read_next`] calls.
    pub fn read_chunk(&mut self, max_records: usize, max_bytes: usize) -> Result<Option<Chunk>> {
        self.read_chunk_in(Vec::new(), max_records, max_bytes)
    }

    /// [`DiskQueue::read_chunk`] into `buf` (its contents discarded): a caller that recycles the
    /// buffers of chunks it is done with reads into memory the process already has.
    pub fn read_chunk_in(
        &mut self,
        buf: Vec<u8>,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<Option<Chunk>> {
        let mut buf = Some(buf);
        if max_records == 0 {
            return Ok(None);
        }
        if let Some(p) = self.peeked.take() {
            self.consume(p.next);
            return Ok(Some(Chunk::single(p.payload)));
        }
        let Some((chunk, end, complete)) =
            self.fetch_with(|q| q.step_chunk(&mut buf, max_records, max_bytes))?
        else {
            return Ok(None);
        };
        let start = self.read.pos;
        for r in chunk.payload_ranges() {
            let next = self.position_after(start + r.end as u64, end, complete);
            self.consume(next);
        }
        Ok(Some(chunk))
    }

    /// Reads whole records from the read position, validating each length as `read_record`
    /// does. A record the single-record reader would refuse ends the chunk; if it is the
    /// first, that is the chunk's failure.
    fn step_chunk(
        &mut self,
        buf: &mut Option<Vec<u8>>,
        max_records: usize,
        max_bytes: usize,
    ) -> std::result::Result<Step<(Chunk, u64, bool)>, ReadFailure> {
        let (end, complete) = match self.window()? {
            Window::Open { end, complete } => (end, complete),
            Window::EndOfFile => return Ok(Step::EndOfFile),
            Window::Missing => return Ok(Step::Missing),
        };
        let pos = self.read.pos;
        let available = end - pos;
        let Some(handle) = self.reader.as_ref() else {
            return Ok(Step::Missing);
        };
        let file = handle.reader.get_ref();
        let want = available.min(max_bytes.max(LENGTH_PREFIX_LEN as usize) as u64) as usize;
        let mut data = buf.take().unwrap_or_default();
        data.clear();
        data.resize(want, 0);
        if let Err(e) = read_exact_at(file, &mut data, pos) {
            *buf = Some(data);
            return Err(e);
        }
        let mut at = 0usize;
        let mut count = 0usize;
        while count < max_records {
            let left = available - at as u64;
            if left == 0 {
                break;
            }
            if at + LENGTH_PREFIX_LEN as usize > data.len() && left >= LENGTH_PREFIX_LEN {
                // The next length prefix is past `max_bytes` (never so for the first record).
                break;
            }
            match self.check_record(&data, at, left) {
                Ok(len) => {
                    let record = record_len(len) as usize;
                    if at + record > data.len() {
                        if count > 0 {
                            break;
                        }
                        // The first record is larger than `max_bytes`: read the rest of it.
                        let have = data.len();
                        data.resize(record, 0);
                        read_exact_at(file, &mut data[have..], pos + have as u64)?;
                    }
                    at += record;
                    count += 1;
                }
                Err(e) if count == 0 => return Err(e),
                Err(_) => break,
            }
        }
        data.truncate(at);
        Ok(Step::Record((Chunk { data, count }, end, complete)))
    }

    /// Validates the record at `at` of `data` (which holds its length prefix, or less if
    /// `left`, the valid bytes from there, is too short for one); returns its payload length.
    fn check_record(
        &self,
        data: &[u8],
        at: usize,
        left: u64,
    ) -> std::result::Result<usize, ReadFailure> {
        let prefix: Option<[u8; 4]> = data
            .get(at..at + LENGTH_PREFIX_LEN as usize)
            .and_then(|p| p.try_into().ok());
        match prefix.filter(|_| left >= LENGTH_PREFIX_LEN) {
            Some(prefix) => Ok(check_len(prefix, left, &self.opts)? as usize),
            None => Err(too_short(left)),
        }
    }
}

fn read_exact_at(
    file: &std::fs::File,
    buf: &mut [u8],
    offset: u64,
) -> std::result::Result<(), ReadFailure> {
    file.read_exact_at(buf, offset).map_err(read_failure)
}
