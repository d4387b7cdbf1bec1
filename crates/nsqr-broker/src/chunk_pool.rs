//! Buffers for disk reads, recycled. A backlog drained from disk is read 64 KiB at a time and
//! the messages of a read point into its buffer until the last of them is finished. A fresh
//! buffer costs 16 page faults (and on a VM whose free memory was handed back to the host, a
//! host fault each: docs/decisions/0006-disk-read-chunks.md); a buffer whose messages are all
//! gone comes back here instead and the next read reuses its pages. The pool is small and
//! bounded: it only has to cover the reads in flight between a buffer's last FIN and the next
//! read.

use bytes::Bytes;
use parking_lot::Mutex;

/// Bytes read from disk at a time: one `pread` and one buffer for ~280 records of 200 B.
pub(crate) const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Buffers kept at most (2 MiB).
const POOL_MAX: usize = 32;

/// The pool the disk readers use.
pub(crate) static POOL: ChunkPool = ChunkPool::new();

pub(crate) struct ChunkPool {
    bufs: Mutex<Vec<Vec<u8>>>,
}

impl ChunkPool {
    const fn new() -> ChunkPool {
        ChunkPool {
            bufs: Mutex::new(Vec::new()),
        }
    }

    /// A buffer for the next read: a recycled one if there is one.
    pub(crate) fn take(&self) -> Vec<u8> {
        self.bufs.lock().pop().unwrap_or_default()
    }

    /// `data` as shared bytes that give their buffer back to the pool when the last
    /// reference goes. A buffer grown far past the chunk size (a single huge record) is not
    /// kept.
    pub(crate) fn share(&'static self, data: Vec<u8>) -> Bytes {
        Bytes::from_owner(Recycled { data, pool: self })
    }

    fn give_back(&self, data: Vec<u8>) {
        if data.capacity() < READ_CHUNK_BYTES || data.capacity() > 2 * READ_CHUNK_BYTES {
            return;
        }
        let mut bufs = self.bufs.lock();
        if bufs.len() < POOL_MAX {
            bufs.push(data);
        }
    }
}

struct Recycled {
    data: Vec<u8>,
    pool: &'static ChunkPool,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_comes_back_when_its_last_slice_goes() {
        let pool: &'static ChunkPool = Box::leak(Box::new(ChunkPool::new()));
        let mut buf = pool.take();
        buf.resize(READ_CHUNK_BYTES, 7);
        let ptr = buf.as_ptr();
        let bytes = pool.share(buf);
        let slice = bytes.slice(10..20);
        drop(bytes);
        assert_eq!(&slice[..], &[7u8; 10][..]);
        assert_eq!(pool.bufs.lock().len(), 0, "still in use");
        drop(slice);
        let again = pool.take();
        assert_eq!(
            (again.as_ptr(), again.capacity()),
            (ptr, READ_CHUNK_BYTES),
            "recycled"
        );
        // a huge buffer is let go, and the pool keeps at most POOL_MAX
        drop(pool.share(vec![0u8; 4 * READ_CHUNK_BYTES]));
        assert_eq!(pool.bufs.lock().len(), 0);
        let shared: Vec<Bytes> = (0..POOL_MAX + 3)
            .map(|_| pool.share(vec![0u8; READ_CHUNK_BYTES]))
            .collect();
        drop(shared);
        assert_eq!(pool.bufs.lock().len(), POOL_MAX);
    }
}
