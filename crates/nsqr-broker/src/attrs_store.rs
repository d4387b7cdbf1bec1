//! Attributes of the messages a disk queue holds (`attrs.rs`: expiry, ordering key, dead-letter
//! record) across a graceful restart: `<queue>.nsqr.attrs.dat` beside the queue's files.
//!
//! nsqd's record format has no room for them and must not change, so while nsqrd runs they
//! stay in memory beside the queue (`disk_link.rs`: by message id, attached again when the
//! record is read back) and a shutdown writes them here; the next start reads them back. nsqd
//! ignores the file (its messages simply lose their attributes there). A crash loses them too: the
//! messages are still delivered, without expiry or key (`docs/http-queues.md`).
//!
//! Format (a `side_file.rs` file): `nsqr-attrs 1\n`, then one JSON object per line:
//! `{"id":"<16 hex>", ...}` with the attribute fields of `attrs.rs`.

use std::path::Path;
use std::sync::Arc;

use nsq_wire::MessageId;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::attrs::Attributes;
use crate::side_file::SideFile;

pub(crate) const FILE: SideFile = SideFile {
    header: "nsqr-attrs 1",
    suffix: "nsqr.attrs.dat",
    tag: "ATTRS",
    loss: "its messages lose their expiry and ordering keys",
};

/// Attributes by message id.
pub(crate) type AttrMap = FxHashMap<u64, Arc<Attributes>>;

#[cfg(test)]
fn path(dir: &Path, queue: &str) -> std::path::PathBuf {
    FILE.path(dir, queue)
}

#[derive(Serialize, Deserialize)]
struct Line {
    id: String,
    #[serde(flatten)]
    attrs: Attributes,
}

/// The stored attributes (empty when there is no file).
pub(crate) fn load(dir: &Path, queue: &str) -> AttrMap {
    FILE.load(dir, queue, |line| {
        let l = serde_json::from_str::<Line>(line).ok()?;
        Some((MessageId::from_hex(l.id.as_bytes())?.0, l.attrs))
    })
    .into_iter()
    .filter_map(|(id, attrs)| Some((id, attrs.into_shared()?)))
    .collect()
}

/// Replace the file with `entries` (or remove it when there are none).
pub(crate) fn save(
    dir: &Path,
    queue: &str,
    entries: impl IntoIterator<Item = (u64, Arc<Attributes>)>,
) -> std::io::Result<()> {
    FILE.save(dir, queue, entries, |id, attrs, text| {
        let line = Line {
            id: String::from_utf8_lossy(&MessageId(id).to_hex()).into_owned(),
            attrs: (*attrs).clone(),
        };
        text.push_str(&serde_json::to_string(&line).map_err(std::io::Error::other)?);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bad_lines() {
        let dir = std::env::temp_dir().join(format!("nsqr-attrs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        assert!(load(&dir, "t:c").is_empty());
        let a = Arc::new(Attributes {
            expires_at: 7,
            ordering_key: Some("k".into()),
            dead_letter: None,
        });
        save(&dir, "t:c", [(0xabc, Arc::clone(&a))]).expect("save");
        assert_eq!(load(&dir, "t:c").get(&0xabc), Some(&a));
        let raw = std::fs::read_to_string(path(&dir, "t:c")).expect("read");
        assert_eq!(
            raw,
            "nsqr-attrs 1\n{\"id\":\"0000000000000abc\",\"expires_at\":7,\"ordering_key\":\"k\"}\n"
        );
        std::fs::write(
            path(&dir, "t:c"),
            "nsqr-attrs 1\nnot json\n{\"id\":\"zz\"}\n{\"id\":\"0000000000000001\",\"expires_at\":1}\n",
        )
        .expect("write");
        assert_eq!(load(&dir, "t:c").len(), 1);
        save(&dir, "t:c", []).expect("save empty");
        assert!(!path(&dir, "t:c").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
