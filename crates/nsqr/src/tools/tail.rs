//! `nsqr tail`: print a topic's messages to stdout, one per line, as NSQ's `nsq_tail`: from
//! nsqd addresses or through lookupd, on an `#ephemeral` channel of its own unless
//! `--channel` names one, stopping after `-n` messages (the rest go back to the channel at
//! once) or on SIGINT / SIGTERM. A closed stdout (`nsqr tail ... | head`) ends it quietly.

use std::io::Write;

use clap::Args;
use nsqr_client::{Consumer, Message};

use super::{config, connect_consumer, signalled, usage, Outcome};
use crate::fail::{err, Result};

const TOOL: &str = "tail";

#[derive(Debug, Clone, Args)]
pub struct TailArgs {
    /// NSQ topic (may be given multiple times).
    #[arg(long, required = true)]
    pub topic: Vec<String>,

    /// NSQ channel (default: `tail<6 digits>#ephemeral`).
    #[arg(long)]
    pub channel: Option<String>,

    /// nsqd TCP address (may be given multiple times): `host:port` or a unix socket's path.
    #[arg(long = "nsqd-tcp-address")]
    pub nsqd_tcp_address: Vec<String>,

    /// nsqlookupd HTTP address (may be given multiple times).
    #[arg(long = "lookupd-http-address")]
    pub lookupd_http_address: Vec<String>,

    /// Total messages to show (waits if starved); 0 for no limit.
    #[arg(short = 'n', default_value_t = 0)]
    pub n: u64,

    /// Max number of messages to allow in flight.
    #[arg(long, default_value_t = 200)]
    pub max_in_flight: u32,

    /// Print the topic name where each message was received (`topic | body`).
    #[arg(long)]
    pub print_topic: bool,
}

pub async fn run(a: TailArgs) -> Result<Outcome> {
    if a.nsqd_tcp_address.is_empty() == a.lookupd_http_address.is_empty() {
        usage(
            TOOL,
            "give --nsqd-tcp-address or --lookupd-http-address, not both or neither",
        );
    }
    let channel = a.channel.clone().unwrap_or_else(|| {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            % 999_999;
        format!("tail{n:06}#ephemeral")
    });
    let mut cfg = config("tail");
    // Don't ask for more messages than wanted.
    cfg.max_in_flight = if a.n > 0 && a.n < u64::from(a.max_in_flight) {
        a.n as u32
    } else {
        a.max_in_flight
    };
    let mut consumers = Vec::new();
    for topic in &a.topic {
        let mut c = Consumer::new(topic, &channel, cfg.clone()).map_err(|e| err(e.to_string()))?;
        connect_consumer(&mut c, &a.nsqd_tcp_address, &a.lookupd_http_address).await?;
        consumers.push(c);
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(usize, Message)>(256);
    let stoppers: Vec<_> = consumers.iter().map(Consumer::stopper).collect();
    let mut tasks = Vec::new();
    for (i, mut c) in consumers.into_iter().enumerate() {
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(m) = c.next().await {
                if tx.send((i, m)).await.is_err() {
                    break;
                }
            }
            c.stop().await;
        }));
    }
    drop(tx);
    let printed = tokio::select! {
        r = print(&mut rx, &a) => r,
        _ = signalled() => Ok(()),
    };
    for s in &stoppers {
        s.stop();
    }
    // Messages taken but not printed go back to the channel.
    rx.close();
    while rx.recv().await.is_some() {}
    for t in tasks {
        let _ = t.await;
    }
    printed.map(|()| Outcome::Done)
}

/// Print messages as they come until `-n` were printed, the consumers end, or stdout closes.
async fn print(rx: &mut tokio::sync::mpsc::Receiver<(usize, Message)>, a: &TailArgs) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
    let mut shown = 0u64;
    while let Some((i, m)) = rx.recv().await {
        let mut write = || -> std::io::Result<()> {
            if a.print_topic {
                out.write_all(a.topic[i].as_bytes())?;
                out.write_all(b" | ")?;
            }
            out.write_all(m.body())?;
            out.write_all(b"\n")?;
            if rx.is_empty() {
                out.flush()?;
            }
            Ok(())
        };
        match write() {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(err(format!("writing to stdout: {e}"))),
        }
        let _ = m.finish();
        shown += 1;
        if a.n > 0 && shown >= a.n {
            break;
        }
    }
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(err(format!("writing to stdout: {e}")))
        }
        _ => Ok(()),
    }
}
