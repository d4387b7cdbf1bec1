//! The append-only log of strict mode, with group commit.
//!
//! A write appends its record to a shared buffer under the key's shard lock (so records of one
//! key are in the order the changes happened) and notes the record's sequence number. One
//! writer thread takes the whole buffer, writes it with one `write`, fsyncs, and publishes the
//! highest sequence number now on disk; every client waiting for a number at or below it is
//! answered. However many clients write at once, a batch costs one fsync.
//!
//! Files are `kv.log.<generation>`; a new generation starts at each start and at each
//! compaction (`persist.rs`). A failed write or fsync is permanent for this run: the log would
//! miss records the memory has, so every later write is refused (`MISCONF`) until a restart
//! replays what did reach the disk.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

use crate::record::Record;

/// The file of one log generation.
pub fn log_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("kv.log.{generation}"))
}

/// What the writer has made durable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Synced {
    /// Every record up to this sequence number is on disk.
    pub upto: u64,
    /// Set once a write failed; nothing after `upto` will ever be durable in this run.
    pub failed: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    buf: Vec<u8>,
    /// Sequence number of the last record appended.
    appended: u64,
    /// A switch to a new generation, at this offset of `buf`.
    rotate: Option<(usize, u64)>,
    failed: Option<String>,
    stop: bool,
    /// Bytes in the current generation's file (written or buffered).
    generation_bytes: u64,
    generation: u64,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    work: Condvar,
    synced: watch::Sender<Synced>,
}

/// The log: appended to by writers, drained by its thread.
#[derive(Debug)]
pub struct Log {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Log {
    /// Starts a new generation in `dir` and the writer thread.
    pub fn open(dir: &Path, generation: u64) -> std::io::Result<Log> {
        let file = create(dir, generation)?;
        let (synced, _) = watch::channel(Synced::default());
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                generation,
                ..State::default()
            }),
            work: Condvar::new(),
            synced,
        });
        let writer = Writer {
            shared: Arc::clone(&shared),
            dir: dir.to_path_buf(),
            file,
            spare: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("kv-log".into())
            .spawn(move || writer.run())?;
        Ok(Log {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Appends a record; returns its sequence number.
    pub fn append(&self, record: &Record<'_>) -> u64 {
        let mut s = self.shared.state.lock();
        let before = s.buf.len();
        record.encode(&mut s.buf);
        s.generation_bytes += (s.buf.len() - before) as u64;
        s.appended += 1;
        let seq = s.appended;
        if before == 0 {
            self.shared.work.notify_one();
        }
        seq
    }

    /// The failure that stopped the log, if any.
    pub fn failed(&self) -> Option<String> {
        self.shared.state.lock().failed.clone()
    }

    /// Waits until record `seq` is on disk.
    pub async fn wait(&self, seq: u64) -> Result<(), String> {
        let mut rx = self.shared.synced.subscribe();
        let r = rx
            .wait_for(|s| s.upto >= seq || s.failed.is_some())
            .await
            .map(|s| s.clone());
        match r {
            Ok(s) if s.upto >= seq => Ok(()),
            Ok(s) => Err(s.failed.unwrap_or_default()),
            Err(_) => Err("the log was closed".to_string()),
        }
    }

    /// Waits (blocking) until everything appended so far is on disk.
    pub fn flush_blocking(&self) -> Result<(), String> {
        let seq = self.shared.state.lock().appended;
        let mut rx = self.shared.synced.subscribe();
        loop {
            let s = rx.borrow_and_update().clone();
            if s.upto >= seq {
                return Ok(());
            }
            if let Some(f) = s.failed {
                return Err(f);
            }
            // A blocking wait on a watch channel: poll with a short sleep (shutdown only).
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Bytes in the current generation.
    pub fn generation_bytes(&self) -> u64 {
        self.shared.state.lock().generation_bytes
    }

    /// Starts generation `current + 1` for everything appended from now on; returns it once
    /// the writer has switched files (records of the old generation are then on disk).
    pub fn rotate(&self) -> Result<u64, String> {
        let (next, seq) = {
            let mut s = self.shared.state.lock();
            let next = s.generation + 1;
            s.rotate = Some((s.buf.len(), next));
            s.generation = next;
            s.generation_bytes = 0;
            self.shared.work.notify_one();
            (next, s.appended)
        };
        let mut rx = self.shared.synced.subscribe();
        loop {
            let s = rx.borrow_and_update().clone();
            if let Some(f) = s.failed {
                return Err(f);
            }
            if s.upto >= seq && self.shared.state.lock().rotate.is_none() {
                return Ok(next);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Writes what is buffered, then stops the writer.
    pub fn close(&self) -> Result<(), String> {
        let r = self.flush_blocking();
        self.shared.state.lock().stop = true;
        self.shared.work.notify_one();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
        r
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.shared.state.lock().stop = true;
        self.shared.work.notify_one();
    }
}

fn create(dir: &Path, generation: u64) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path(dir, generation))?;
    File::open(dir)?.sync_all()?;
    Ok(f)
}

struct Writer {
    shared: Arc<Shared>,
    dir: PathBuf,
    file: File,
    spare: Vec<u8>,
}

impl Writer {
    fn run(mut self) {
        loop {
            let (batch, upto, rotate) = {
                let mut s = self.shared.state.lock();
                while s.buf.is_empty() && s.rotate.is_none() && !s.stop {
                    self.shared.work.wait(&mut s);
                }
                if s.buf.is_empty() && s.rotate.is_none() {
                    return; // stopping, nothing left
                }
                let mut batch = std::mem::take(&mut self.spare);
                std::mem::swap(&mut batch, &mut s.buf);
                (batch, s.appended, s.rotate)
            };
            let r = self.write(&batch, rotate);
            let mut s = self.shared.state.lock();
            if rotate.is_some() {
                s.rotate = None;
            }
            match r {
                Ok(()) => self.shared.synced.send_modify(|v| v.upto = upto),
                Err(e) => {
                    let msg = e.to_string();
                    tracing::error!("KV: append-only log write failed - {msg}");
                    s.failed = Some(msg.clone());
                    self.shared.synced.send_modify(|v| v.failed = Some(msg));
                }
            }
            drop(s);
            self.spare = batch;
            self.spare.clear();
        }
    }

    /// Writes `batch` (switching files at the rotation point, if any) and fsyncs.
    fn write(&mut self, batch: &[u8], rotate: Option<(usize, u64)>) -> std::io::Result<()> {
        let (old, new) = match rotate {
            Some((at, _)) => batch.split_at(at.min(batch.len())),
            None => (batch, &[][..]),
        };
        if !old.is_empty() {
            self.file.write_all(old)?;
        }
        self.file.sync_data()?;
        if let Some((_, generation)) = rotate {
            self.file = create(&self.dir, generation)?;
            if !new.is_empty() {
                self.file.write_all(new)?;
                self.file.sync_data()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::decode;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nsqr-kv-log-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn count(path: &Path) -> usize {
        let buf = std::fs::read(path).unwrap();
        let mut at = 0;
        let mut n = 0;
        while let Some((_, len)) = decode(&buf[at..], at as u64).unwrap() {
            at += len;
            n += 1;
        }
        n
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn acknowledged_records_are_on_disk() {
        let d = dir("ack");
        let log = Log::open(&d, 1).unwrap();
        let mut last = 0;
        for i in 0..100u32 {
            last = log.append(&Record::Put {
                key: &i.to_le_bytes(),
                value: b"v",
                deadline: None,
            });
        }
        log.wait(last).await.unwrap();
        assert_eq!(count(&log_path(&d, 1)), 100);
        log.close().unwrap();
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn rotation_splits_generations() {
        let d = dir("rotate");
        let log = Log::open(&d, 3).unwrap();
        log.append(&Record::Del { key: b"a" });
        log.append(&Record::Del { key: b"b" });
        assert_eq!(log.rotate().unwrap(), 4);
        log.append(&Record::Flush);
        log.close().unwrap();
        assert_eq!((count(&log_path(&d, 3)), count(&log_path(&d, 4))), (2, 1));
        std::fs::remove_dir_all(d).unwrap();
    }
}
