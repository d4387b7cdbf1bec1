//! A node's own small file system, so the `full-disk-*` faults can fill a node's disk without
//! touching the machine's: a tmpfs mounted on the node's data directory (which needs root:
//! `mount -t tmpfs`), made full by a ballast file written until the file system refuses, and
//! freed by deleting it. The mount goes when the run ends (also on a failed run): `Drop`
//! unmounts, lazily if a process still holds a file there.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The ballast's name, in the data directory; nsqrd ignores files it does not know.
const BALLAST: &str = "nsqr-faults-ballast";

/// A tmpfs mounted on a node's data directory.
pub struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `mib` MiB on `dir` (an existing, empty directory). The error says why
    /// it could not (not root, no mount command, ...), for the run's summary.
    pub fn mount(dir: &Path, mib: u64) -> Result<Tmpfs, String> {
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mib}m,mode=0755"),
                "tmpfs",
            ])
            .arg(dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(format!("mount -t tmpfs: {} ({why})", out.status));
        }
        Ok(Tmpfs {
            dir: dir.to_path_buf(),
        })
    }

    fn ballast(&self) -> PathBuf {
        self.dir.join(BALLAST)
    }

    /// Fills the file system: a ballast file grown until a write fails with ENOSPC, in
    /// shrinking chunks so that not even a page is left. Returns the ballast's size.
    pub fn fill(&self) -> io::Result<u64> {
        let mut file = File::options()
            .create(true)
            .append(true)
            .open(self.ballast())?;
        let mut chunk = 1usize << 20;
        while chunk >= 512 {
            let buf = vec![0u8; chunk];
            match file.write_all(&buf) {
                Ok(()) => {}
                Err(e) if is_full(&e) => chunk /= 2,
                Err(e) => return Err(e),
            }
        }
        file.metadata().map(|m| m.len())
    }

    /// Deletes the ballast: the space is back.
    pub fn free(&self) -> io::Result<()> {
        match std::fs::remove_file(self.ballast()) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Empties the file system (a wiped node): every entry of the directory removed, the
    /// mount point kept.
    pub fn wipe(&self) -> io::Result<()> {
        for item in std::fs::read_dir(&self.dir)? {
            let path = item?.path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path)?;
            } else {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(())
    }
}

/// ENOSPC or EDQUOT.
fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(28 | 122))
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = self.free();
        let unmounted = Command::new("umount")
            .arg(&self.dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs where the test may mount (root); elsewhere it prints SKIPPED (the suite then names
    /// the disk faults as skipped), or fails with `NSQR_TEST_REQUIRE_MOUNT` set.
    #[test]
    fn a_tmpfs_fills_up_frees_and_unmounts() {
        let dir = std::env::temp_dir().join(format!("nsqr-faults-disk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fs = match Tmpfs::mount(&dir, 2) {
            Ok(fs) => fs,
            Err(why) => {
                assert!(
                    std::env::var_os("NSQR_TEST_REQUIRE_MOUNT").is_none(),
                    "NSQR_TEST_REQUIRE_MOUNT is set but {why}"
                );
                println!(
                    "SKIPPED: tmpfs not mounted here ({why}); the suite skips its disk faults"
                );
                std::fs::remove_dir(&dir).unwrap();
                return;
            }
        };
        let size = fs.fill().unwrap();
        assert!(
            size > (1 << 20) && size <= 2 << 20,
            "ballast of {size} bytes"
        );
        let e = std::fs::write(dir.join("more"), vec![0u8; 4096]).unwrap_err();
        assert!(is_full(&e), "{e}");
        fs.free().unwrap();
        std::fs::write(dir.join("more"), vec![0u8; 4096]).unwrap();
        fs.wipe().unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        drop(fs);
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        assert!(!mounts.contains(dir.to_str().unwrap()), "still mounted");
        std::fs::remove_dir(&dir).unwrap();
    }
}
