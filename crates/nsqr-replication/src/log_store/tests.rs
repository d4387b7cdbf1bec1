use openraft::{CommittedLeaderId, EntryPayload};

use super::*;
use crate::command::Command;

fn entry(index: u64) -> Entry {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Command::Channels(Vec::new())),
    }
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
    store.lock().append((0..=5).map(entry).collect())?;
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
        store.lock().append(vec![entry(i)])?;
    }
    assert_eq!(segment_files(dir.path()), 6);
    store.lock().truncate(4)?;
    assert_eq!(indexes(&store), vec![1, 2, 3]);
    assert_eq!(segment_files(dir.path()), 4, "segment 4 is kept, emptied");
    store.lock().append(vec![entry(4)])?;
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
    store.lock().append(vec![entry(1)])?;
    store.lock().append(vec![entry(2)])?;
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
