//! `nsqd.dat`: the list of topics and channels with their paused flags, in nsqd's JSON, so a
//! data directory moves between nsqd and nsqrd. Written atomically (tmp file, fsync, rename)
//! after non-ephemeral creates and deletes (by a background writer), immediately on pause and
//! unpause, and at shutdown; read once at startup.
//!
//! Topic and channel settings (`queue_settings.rs`) ride along as an extra `nsqr_config` object on
//! their entry, written only when something is set: nsqd's reader ignores fields it does not
//! know (Go's `encoding/json`), so it still reads the file (and drops the settings when it
//! writes it again).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(crate) const METADATA_FILE: &str = "nsqd.dat";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Metadata {
    #[serde(default)]
    pub topics: Vec<TopicMeta>,
    #[serde(default)]
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TopicMeta {
    pub name: String,
    #[serde(default)]
    pub paused: bool,
    /// `null` for a topic without channels, as nsqd writes it.
    #[serde(default)]
    pub channels: Option<Vec<ChannelMeta>>,
    /// nsqr's settings of the topic, when any are set.
    #[serde(
        default,
        rename = "nsqr_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub settings: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChannelMeta {
    pub name: String,
    #[serde(default)]
    pub paused: bool,
    /// nsqr's settings of the channel, when any are set.
    #[serde(
        default,
        rename = "nsqr_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub settings: Option<serde_json::Value>,
}

/// Why `nsqd.dat` could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// Reading it failed.
    #[error("failed to read metadata from {path} - {source}")]
    Read {
        /// The file.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
    /// It is not nsqd's JSON.
    #[error("failed to parse metadata in {path} - {source}")]
    Parse {
        /// The file.
        path: String,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// Writing it (temporary file, fsync, rename) failed.
    #[error("failed to write metadata {path} - {source}")]
    Write {
        /// The file.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
}

pub(crate) fn metadata_path(dir: &Path) -> PathBuf {
    dir.join(METADATA_FILE)
}

/// Read `nsqd.dat`; None when there is none yet.
pub(crate) fn load(dir: &Path) -> Result<Option<Metadata>, MetadataError> {
    let path = metadata_path(dir);
    let raw = match std::fs::read(&path) {
        Ok(raw) => raw,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(MetadataError::Read {
                path: path.display().to_string(),
                source,
            })
        }
    };
    serde_json::from_slice(&raw)
        .map(Some)
        .map_err(|source| MetadataError::Parse {
            path: path.display().to_string(),
            source,
        })
}

/// Write `nsqd.dat` atomically: `nsqd.dat.<random>.tmp`, fsync, rename, fsync the directory.
pub(crate) fn save(dir: &Path, md: &Metadata) -> Result<(), MetadataError> {
    let path = metadata_path(dir);
    let err = |source| MetadataError::Write {
        path: path.display().to_string(),
        source,
    };
    let json = serde_json::to_vec(md).map_err(|e| err(std::io::Error::other(e)))?;
    let tmp = dir.join(format!(
        "{METADATA_FILE}.{}.tmp",
        crate::now_unix_nanos() as u64 ^ (std::process::id() as u64) << 32
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&json)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    };
    write()
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
        .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_nsqd_shape() {
        let dir = std::env::temp_dir().join(format!("nsqr-md-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        assert_eq!(load(&dir).expect("load"), None);
        let md = Metadata {
            topics: vec![
                TopicMeta {
                    name: "a".into(),
                    paused: true,
                    channels: None,
                    settings: None,
                },
                TopicMeta {
                    name: "b".into(),
                    paused: false,
                    channels: Some(vec![ChannelMeta {
                        name: "c".into(),
                        paused: true,
                        settings: Some(serde_json::json!({"max_attempts": 3})),
                    }]),
                    settings: None,
                },
            ],
            version: "1.3.0".into(),
        };
        save(&dir, &md).expect("save");
        let raw = std::fs::read_to_string(metadata_path(&dir)).expect("read");
        assert_eq!(
            raw,
            r#"{"topics":[{"name":"a","paused":true,"channels":null},{"name":"b","paused":false,"channels":[{"name":"c","paused":true,"nsqr_config":{"max_attempts":3}}]}],"version":"1.3.0"}"#
        );
        assert_eq!(load(&dir).expect("load"), Some(md));
        std::fs::write(metadata_path(&dir), b"{nope").expect("write");
        assert!(matches!(load(&dir), Err(MetadataError::Parse { .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
