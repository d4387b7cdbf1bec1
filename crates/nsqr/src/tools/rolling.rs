//! One topic's output file for `nsqr to-file`, rotated as nsq_to_file's `FileLogger` does:
//! a new file when the `<DATETIME>` in its name changes, after `--rotate-interval`, or past
//! `--rotate-size`; `<REV>` (`-000001`, ...) numbers the files of one name; a file written in
//! `--work-dir` moves to `--output-dir` when closed (never over an existing one); with
//! `--gzip` each file is a gzip stream whose members end at every sync.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flate2::write::GzEncoder;
use nsq_common::utc_date::Civil;

use super::strftime::strftime;
use crate::fail::{err, Result};

/// How files are named and rotated (from the flags).
#[derive(Debug, Clone)]
pub struct Rules {
    pub output_dir: PathBuf,
    pub work_dir: PathBuf,
    pub datetime_format: String,
    pub rotate_size: u64,
    pub rotate_interval: Option<Duration>,
    pub gzip_level: Option<u32>,
}

/// The file being written.
struct Open {
    file: File,
    /// The gzip member being written (`--gzip`), until the next sync ends it.
    gzip: Option<GzEncoder<File>>,
    /// The name without `<REV>` resolved (to compare for rotation).
    name: String,
    path: PathBuf,
    opened: Instant,
    size: u64,
}

/// One topic's rolling output.
pub struct Rolling {
    rules: Rules,
    /// `--filename-format` with everything but `<DATETIME>` and `<REV>` filled in.
    format: String,
    open: Option<Open>,
    rev: u32,
}

impl Rolling {
    pub fn new(rules: Rules, format: String) -> Rolling {
        Rolling {
            rules,
            format,
            open: None,
            rev: 0,
        }
    }

    fn current_name(&self) -> String {
        let datetime = strftime(&self.rules.datetime_format, &Civil::now());
        self.format.replace("<DATETIME>", &datetime)
    }

    /// The file must change before the next write.
    pub fn needs_rotation(&self) -> bool {
        let Some(o) = &self.open else {
            return true;
        };
        o.name != self.current_name()
            || self
                .rules
                .rotate_interval
                .is_some_and(|i| o.opened.elapsed() > i)
            || (self.rules.rotate_size > 0 && o.size > self.rules.rotate_size)
    }

    /// Append one message and its newline.
    pub fn write(&mut self, body: &[u8]) -> Result<()> {
        if self.needs_rotation() {
            self.rotate()?;
        }
        let Some(o) = self.open.as_mut() else {
            return Err(err("no output file"));
        };
        if let (Some(level), None) = (self.rules.gzip_level, o.gzip.as_ref()) {
            let f = o
                .file
                .try_clone()
                .map_err(|e| err(format!("writing to {}: {e}", o.path.display())))?;
            o.gzip = Some(GzEncoder::new(f, flate2::Compression::new(level)));
        }
        let w: &mut dyn Write = match o.gzip.as_mut() {
            Some(g) => g,
            None => &mut o.file,
        };
        w.write_all(body)
            .and_then(|()| w.write_all(b"\n"))
            .map_err(|e| err(format!("writing message to {}: {e}", o.path.display())))?;
        o.size += body.len() as u64 + 1;
        Ok(())
    }

    /// Everything written so far reaches the disk (a gzip member is completed).
    pub fn sync(&mut self) -> Result<()> {
        let Some(o) = self.open.as_mut() else {
            return Ok(());
        };
        let failed = |e: std::io::Error| err(format!("syncing {}: {e}", o.path.display()));
        if let Some(g) = o.gzip.take() {
            g.finish().map_err(failed)?;
        }
        o.file.sync_all().map_err(failed)
    }

    /// Close the file (synced), and move it to the output directory.
    pub fn close(&mut self) -> Result<()> {
        self.sync()?;
        let Some(o) = self.open.take() else {
            return Ok(());
        };
        let Open {
            file, path, name, ..
        } = o;
        drop(file);
        if self.rules.work_dir != self.rules.output_dir {
            let rel = path.strip_prefix(&self.rules.work_dir).unwrap_or(&path);
            let mut dst = self.rules.output_dir.join(rel);
            let mut rev = self.rev;
            // Never over an existing file: the next revision instead.
            while let Err(e) = exclusive_rename(&path, &dst) {
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(err(format!(
                        "moving {} to {}: {e}",
                        path.display(),
                        dst.display()
                    )));
                }
                rev += 1;
                dst = self
                    .rules
                    .output_dir
                    .join(name.replace("<REV>", &format!("-{rev:06}")));
            }
        }
        Ok(())
    }

    /// Close the current file and open the next one now (an empty one, if nothing comes).
    pub fn rotate_now(&mut self) -> Result<()> {
        self.rotate()
    }

    /// Close the current file and open the next one.
    fn rotate(&mut self) -> Result<()> {
        let old = self.open.as_ref().map(|o| o.name.clone());
        self.close()?;
        let name = self.current_name();
        self.rev = if old.as_deref() == Some(name.as_str()) {
            self.rev + 1
        } else {
            0
        };
        loop {
            let file_name = name.replace("<REV>", &format!("-{:06}", self.rev));
            let path = self.rules.work_dir.join(&file_name);
            let out = self.rules.output_dir.join(&file_name);
            make_parent(&path)?;
            if self.rules.work_dir != self.rules.output_dir {
                make_parent(&out)?;
                if out.exists() {
                    self.rev += 1;
                    continue;
                }
            }
            let exclusive = self.rules.gzip_level.is_some() || self.rules.rotate_interval.is_some();
            let mut opts = OpenOptions::new();
            opts.write(true);
            if exclusive {
                opts.create_new(true);
            } else {
                opts.create(true).append(true);
            }
            let file = match opts.open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    self.rev += 1;
                    continue;
                }
                Err(e) => return Err(err(format!("opening {}: {e}", path.display()))),
            };
            let size = file
                .metadata()
                .map_err(|e| err(format!("stat {}: {e}", path.display())))?
                .len();
            if self.rules.rotate_size > 0 && size > self.rules.rotate_size {
                self.rev += 1;
                continue;
            }
            self.open = Some(Open {
                file,
                gzip: None,
                name: name.clone(),
                path,
                opened: Instant::now(),
                size,
            });
            return Ok(());
        }
    }
}

fn make_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir)
            .map_err(|e| err(format!("creating {}: {e}", dir.display()))),
        _ => Ok(()),
    }
}

/// Rename without replacing: link, then unlink the source (as nsq_to_file).
fn exclusive_rename(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::hard_link(src, dst)?;
    std::fs::remove_file(src)
}
