use openraft::{CommittedLeaderId, EntryPayload};

use super::*;
use crate::command::Command;

fn entry(index: u64) -> Entry {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Command::Channels(Vec::new())),
    }
}

fn append(store: &LogStore, entries: Vec<Entry>) -> Result<(), StoreError> {
    store.lock().append(entries).map(drop).map_err(|(e, _)| e)
}

fn indexes(store: &LogStore) -> Vec<u64> {
    store.lock().index.keys().copied().collect()
}

fn segment_files(dir: &Path) -> usize {
    fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| segment::first_index(&e.path()).is_some())
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn entries_survive_a_reopen_and_a_torn_tail_is_cut() -> Result<(), StoreError> {
    let dir = tempfile::tempdir().map_err(|e| io_error(Path::new("tmp"), e))?;
    let store = LogStore::open(dir.path(), true, 1 << 20)?;
    append(&store, (0..=5).map(entry).collect())?;
    drop(store);

    let seg = dir.path().join(segment::file_name(0));
    let mut file = OpenOptions::new()
        .append(true)
        .open(&seg)
        .map_err(|e| io_error(&seg, e))?;
    file.write_all(&[9, 0, 0, 0, 1, 2])
        .map_err(|e| io_error(&seg, e))?;

    let store = LogStore::open(dir.path(), true, 1 << 20)?;
    assert_eq!(
        indexes(&store),
        vec![0, 1, 2, 3, 4, 5],
        "index 0 is openraft's first"
    );
    let inner = store.lock();
    let third = inner.index.get(&3).copied();
    let read = third.map(|l| inner.read(&l)).transpose()?;
    assert_eq!(read.map(|e| e.log_id.index), Some(3));
    Ok(())
}

#[test]
fn truncate_and_purge_across_segments() -> Result<(), StoreError> {
    let dir = tempfile::tempdir().map_err(|e| io_error(Path::new("tmp"), e))?;
    // A tiny segment size: every append starts a new segment.
    let store = LogStore::open(dir.path(), false, 1)?;
    for i in 1..=6 {
        append(&store, vec![entry(i)])?;
    }
    assert_eq!(segment_files(dir.path()), 6);
    store.lock().truncate(4)?;
    assert_eq!(indexes(&store), vec![1, 2, 3]);
    assert_eq!(segment_files(dir.path()), 4, "segment 4 is kept, emptied");
    append(&store, vec![entry(4)])?;
    store
        .lock()
        .purge(LogId::new(CommittedLeaderId::new(1, 1), 2))?;
    assert_eq!(indexes(&store), vec![3, 4]);
    drop(store);

    let store = LogStore::open(dir.path(), false, 1)?;
    assert_eq!(indexes(&store), vec![3, 4]);
    assert_eq!(store.lock().purged.map(|p| p.index), Some(2));
    Ok(())
}

#[test]
fn corruption_before_the_last_segment_refuses_to_open() -> Result<(), StoreError> {
    let dir = tempfile::tempdir().map_err(|e| io_error(Path::new("tmp"), e))?;
    let store = LogStore::open(dir.path(), false, 1)?;
    append(&store, vec![entry(1)])?;
    append(&store, vec![entry(2)])?;
    drop(store);
    let seg = dir.path().join(segment::file_name(1));
    let mut bytes = fs::read(&seg).map_err(|e| io_error(&seg, e))?;
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&seg, bytes).map_err(|e| io_error(&seg, e))?;
    let err = LogStore::open(dir.path(), false, 1).err();
    assert!(matches!(err, Some(StoreError::Corrupt { .. })), "{err:?}");
    Ok(())
}

#[test]
fn the_committed_mark_round_trips() -> Result<(), StoreError> {
    let dir = tempfile::tempdir().map_err(|e| io_error(Path::new("tmp"), e))?;
    let store = LogStore::open(dir.path(), false, 1 << 20)?;
    assert_eq!(store.lock().read_committed(), None);
    let id = LogId::new(CommittedLeaderId::new(3, 2), 17);
    store.lock().save_committed(Some(id))?;
    drop(store);
    let store = LogStore::open(dir.path(), false, 1 << 20)?;
    assert_eq!(store.lock().read_committed(), Some(id));
    Ok(())
}

/// A tmpfs of `mib` MiB on `dir`, unmounted on drop; None where the test may not mount (not
/// root), unless `NSQR_TEST_REQUIRE_MOUNT` is set, which fails the test.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, mib: u32) -> Option<Tmpfs> {
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            mounted || std::env::var_os("NSQR_TEST_REQUIRE_MOUNT").is_none(),
            "NSQR_TEST_REQUIRE_MOUNT is set but a tmpfs cannot be mounted"
        );
        mounted.then(|| Tmpfs(dir.to_owned()))
    }

    /// Fills it up with a ballast file: not even 512 bytes left.
    fn fill(&self) -> PathBuf {
        let path = self.0.join("ballast");
        let mut file = File::create(&path).unwrap();
        let mut chunk = 1 << 16;
        while chunk >= 512 {
            if file.write_all(&vec![0; chunk]).is_err() {
                chunk /= 2;
            }
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn an_append_refused_by_a_full_disk_leaves_the_files_as_they_were() -> Result<(), StoreError> {
    let dir = tempfile::tempdir().map_err(|e| io_error(Path::new("tmp"), e))?;
    let Some(fs) = Tmpfs::mount(dir.path(), 1) else {
        println!("SKIPPED: a tmpfs cannot be mounted here (not root)");
        return Ok(());
    };
    let store = LogStore::open(dir.path(), false, 1 << 20)?;
    append(&store, (1..=3).map(entry).collect())?;
    let seg = dir.path().join(segment::file_name(1));
    let len = fs::metadata(&seg).map_err(|e| io_error(&seg, e))?.len();
    let ballast = fs.fill();

    // More than the space left: the write is cut short, then cut off the file.
    let refused = store.lock().append((4..=2000).map(entry).collect());
    let Err((e, back)) = refused else {
        panic!("an append on a full disk went through");
    };
    assert!(crate::space::is_full(&e), "{e}");
    assert_eq!(back.len(), 1997, "the entries come back to be tried again");
    assert_eq!(
        fs::metadata(&seg).map_err(|e| io_error(&seg, e))?.len(),
        len
    );
    assert_eq!(indexes(&store), vec![1, 2, 3]);

    fs::remove_file(&ballast).map_err(|e| io_error(&ballast, e))?;
    append(&store, back)?;
    drop(store);
    let store = LogStore::open(dir.path(), false, 1 << 20)?;
    assert_eq!(indexes(&store), (1..=2000).collect::<Vec<_>>());
    let inner = store.lock();
    for index in [3, 4, 2000] {
        let location = inner.index.get(&index).copied();
        let read = location.map(|l| inner.read(&l)).transpose()?;
        assert_eq!(read.map(|e| e.log_id.index), Some(index));
    }
    drop(inner);
    drop(fs);
    Ok(())
}

// Reversed ranges are what this test hands the store.
#[allow(clippy::reversed_empty_ranges)]
#[tokio::test]
async fn a_range_that_ends_before_it_starts_reads_nothing() -> Result<(), StoreError> {
    let dir = tempfile::tempdir().map_err(|e| io_error(Path::new("tmp"), e))?;
    let mut store = LogStore::open(dir.path(), false, 1 << 20)?;
    assert!(store.is_pristine());
    append(&store, (0..=5).map(entry).collect())?;
    assert!(!store.is_pristine());
    let read = |r: Result<Vec<Entry>, StorageError>| r.map(|e| e.len()).ok();
    assert_eq!(read(store.try_get_log_entries(2..5).await), Some(3));
    assert_eq!(read(store.try_get_log_entries(5..3).await), Some(0));
    assert_eq!(read(store.try_get_log_entries(4..=3).await), Some(0));
    assert_eq!(read(store.try_get_log_entries(4..4).await), Some(0));
    assert_eq!(read(store.try_get_log_entries(3..).await), Some(3));
    Ok(())
}
