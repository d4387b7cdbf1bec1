//! `nsqr to-file`: write topics' messages to rolling files, as NSQ's `nsq_to_file`: one
//! message per line, files named by `--filename-format` and rotated by date, interval or
//! size (`rolling.rs`); messages are finished only once the file holding them is synced
//! (every `--sync-interval`, when max-in-flight are waiting, or when the consumer is
//! starved), so an acknowledged message is on disk.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use nsqr_client::{Consumer, Message};

use super::rolling::{Rolling, Rules};
use super::{config, connect_consumer, signalled, usage, Outcome};
use crate::fail::{err, Result};

const TOOL: &str = "to-file";

#[derive(Debug, Clone, Args)]
pub struct ToFileArgs {
    /// NSQ topic (may be given multiple times).
    #[arg(long, required = true)]
    pub topic: Vec<String>,

    /// NSQ channel.
    #[arg(long, default_value = "nsq_to_file")]
    pub channel: String,

    /// nsqd TCP address (may be given multiple times): `host:port` or a unix socket's path.
    #[arg(long = "nsqd-tcp-address")]
    pub nsqd_tcp_address: Vec<String>,

    /// nsqlookupd HTTP address (may be given multiple times).
    #[arg(long = "lookupd-http-address")]
    pub lookupd_http_address: Vec<String>,

    /// Max number of messages to allow in flight (and to write before a sync).
    #[arg(long, default_value_t = 200)]
    pub max_in_flight: u32,

    /// Directory to write output files to.
    #[arg(long, default_value = "/tmp")]
    pub output_dir: PathBuf,

    /// Directory for in-progress files before moving to --output-dir (default: the output
    /// directory itself).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,

    /// strftime format for <DATETIME> in the file name (UTC).
    #[arg(long, default_value = "%Y-%m-%d_%H")]
    pub datetime_format: String,

    /// Output file name: <TOPIC>, <HOST>, <PID>, <DATETIME>, <REV> are replaced; <REV>
    /// counts files of one name and is required with gzip, rotation or a work dir.
    #[arg(long, default_value = "<TOPIC>.<HOST><REV>.<DATETIME>.log")]
    pub filename_format: String,

    /// Value for <HOST> instead of the short hostname (<SHORT_HOST> and <HOSTNAME> are
    /// replaced).
    #[arg(long, default_value = "")]
    pub host_identifier: String,

    /// gzip output files.
    #[arg(long)]
    pub gzip: bool,

    /// gzip compression level (1-9, 1=BestSpeed, 9=BestCompression).
    #[arg(long, default_value_t = 6)]
    pub gzip_level: u32,

    /// Skip writing empty files.
    #[arg(long)]
    pub skip_empty_files: bool,

    /// Rotate the file when it grows bigger than this many bytes (0: never).
    #[arg(long, default_value_t = 0)]
    pub rotate_size: u64,

    /// Rotate the file every duration (Go-style; 0: never).
    #[arg(long, default_value = "0s", value_parser = crate::cli::parse_duration)]
    pub rotate_interval: Duration,

    /// Sync the file to disk (and finish its messages) every duration.
    #[arg(long, default_value = "30s", value_parser = crate::cli::parse_duration)]
    pub sync_interval: Duration,
}

pub async fn run(a: ToFileArgs) -> Result<Outcome> {
    if a.nsqd_tcp_address.is_empty() == a.lookupd_http_address.is_empty() {
        usage(
            TOOL,
            "give --nsqd-tcp-address or --lookupd-http-address, not both or neither",
        );
    }
    if !(1..=9).contains(&a.gzip_level) {
        usage(
            TOOL,
            &format!(
                "invalid --gzip-level value ({}), should be 1-9",
                a.gzip_level
            ),
        );
    }
    if a.sync_interval.is_zero() {
        usage(TOOL, "--sync-interval should be positive");
    }
    let work_dir = a.work_dir.clone().unwrap_or_else(|| a.output_dir.clone());
    let rules = Rules {
        output_dir: a.output_dir.clone(),
        work_dir: work_dir.clone(),
        datetime_format: a.datetime_format.clone(),
        rotate_size: a.rotate_size,
        rotate_interval: (!a.rotate_interval.is_zero()).then_some(a.rotate_interval),
        gzip_level: a.gzip.then_some(a.gzip_level),
    };
    let mut loggers = Vec::new();
    for topic in &a.topic {
        let format = filename_format(&a, topic, work_dir != a.output_dir)
            .unwrap_or_else(|e| usage(TOOL, &e));
        let mut cfg = config("to-file");
        cfg.max_in_flight = a.max_in_flight;
        let mut c = Consumer::new(topic, &a.channel, cfg).map_err(|e| err(e.to_string()))?;
        connect_consumer(&mut c, &a.nsqd_tcp_address, &a.lookupd_http_address).await?;
        loggers.push((c, Rolling::new(rules.clone(), format)));
    }
    let stoppers: Vec<_> = loggers.iter().map(|(c, _)| c.stopper()).collect();
    let tasks: Vec<_> = loggers
        .into_iter()
        .map(|(c, r)| {
            let a = a.clone();
            tokio::spawn(async move { log_topic(c, r, &a).await })
        })
        .collect();
    let mut all = Box::pin(async {
        let mut first = Ok(());
        for t in tasks {
            let r = t.await.map_err(|e| err(e.to_string())).and_then(|r| r);
            if first.is_ok() {
                first = r;
            }
        }
        first
    });
    tokio::select! {
        r = &mut all => return r.map(|()| Outcome::Done),
        _ = signalled() => {}
    }
    for s in &stoppers {
        s.stop();
    }
    all.await.map(|()| Outcome::Done)
}

/// The file name format of `topic` with all but <DATETIME> and <REV> filled in (as
/// nsq_to_file's `computeFilenameFormat`), or why the flags do not fit together.
pub fn filename_format(
    a: &ToFileArgs,
    topic: &str,
    work_dir: bool,
) -> std::result::Result<String, String> {
    let hostname = gethostname::gethostname().to_string_lossy().into_owned();
    let short = hostname.split('.').next().unwrap_or("").to_string();
    let host = if a.host_identifier.is_empty() {
        short.clone()
    } else {
        a.host_identifier
            .replace("<SHORT_HOST>", &short)
            .replace("<HOSTNAME>", &hostname)
    };
    let mut f = a.filename_format.clone();
    if a.gzip || a.rotate_size > 0 || !a.rotate_interval.is_zero() || work_dir {
        if !f.contains("<REV>") {
            return Err(
                "missing <REV> in --filename-format when gzip, rotation, or work dir enabled"
                    .into(),
            );
        }
    } else {
        f = f.replace("<REV>", "");
    }
    f = f
        .replace("<TOPIC>", topic)
        .replace("<HOST>", &host)
        .replace("<PID>", &std::process::id().to_string());
    if a.gzip && !f.ends_with(".gz") {
        f.push_str(".gz");
    }
    Ok(f)
}

/// Write one topic until its consumer stops; finish messages once they are synced.
async fn log_topic(mut c: Consumer, mut out: Rolling, a: &ToFileArgs) -> Result<()> {
    let mut pending: Vec<Message> = Vec::new();
    let mut tick = tokio::time::interval(a.sync_interval);
    tick.tick().await;
    loop {
        let sync = tokio::select! {
            m = c.next() => match m {
                Some(m) => {
                    out.write(m.body())?;
                    pending.push(m);
                    pending.len() >= a.max_in_flight as usize
                }
                None => break,
            },
            _ = tick.tick() => {
                if out.needs_rotation() {
                    if a.skip_empty_files {
                        out.close()?;
                    } else {
                        out.rotate_now()?;
                    }
                }
                true
            }
        };
        if (sync || c.is_starved()) && !pending.is_empty() {
            out.sync()?;
            for m in pending.drain(..) {
                let _ = m.finish();
            }
        }
    }
    if !pending.is_empty() {
        out.sync()?;
        for m in pending.drain(..) {
            let _ = m.finish();
        }
    }
    out.close()?;
    c.stop().await;
    Ok(())
}
