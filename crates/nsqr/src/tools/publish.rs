//! `nsqr pub`: publish what comes on stdin (or from files), one message per line, as NSQ's
//! `to_nsq` does: to every `--nsqd-tcp-address`, at most `--rate` messages per second.
//! Publishes are pipelined (and batched into MPUBs by the client when they queue up); the
//! tool exits once every message has been acknowledged by every nsqd.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use nsqr_client::{Producer, Publish};

use super::{config, nsqd_address, signalled, Outcome};
use crate::fail::{err, Result};

const TOOL: &str = "pub";

#[derive(Debug, Clone, Args)]
pub struct PubArgs {
    /// NSQ topic to publish to.
    #[arg(long)]
    pub topic: String,

    /// Destination nsqd TCP address (may be given multiple times; every message goes to
    /// each). `host:port`, or a unix socket's path.
    #[arg(long = "nsqd-tcp-address", required = true)]
    pub nsqd_tcp_address: Vec<String>,

    /// Character to split input at.
    #[arg(long, default_value = "\n")]
    pub delimiter: String,

    /// Throttle messages to n/second; 0 to disable.
    #[arg(long, default_value_t = 0)]
    pub rate: u64,

    /// Publish each input file (or stdin) whole, as one message, instead of splitting it.
    #[arg(long)]
    pub whole: bool,

    /// Files to read in turn (`-` is stdin); stdin when none.
    pub files: Vec<PathBuf>,
}

/// Most publishes in flight per nsqd before waiting for answers.
const WINDOW: usize = 1024;

pub async fn run(a: PubArgs) -> Result<Outcome> {
    let delimiter = match a.delimiter.as_bytes() {
        [b] => *b,
        _ => super::usage(TOOL, "--delimiter must be a single byte"),
    };
    if !valid_topic(&a.topic) {
        super::usage(
            TOOL,
            &format!("--topic {:?} is not a valid topic name", a.topic),
        );
    }
    let mut producers = Vec::new();
    for addr in &a.nsqd_tcp_address {
        let p = Producer::connect(&nsqd_address(addr), config("pub"))
            .await
            .map_err(|e| err(e.to_string()))?;
        producers.push(p);
    }
    let sources: Vec<PathBuf> = if a.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        a.files.clone()
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(WINDOW);
    let whole = a.whole;
    let reader = tokio::task::spawn_blocking(move || read_inputs(&sources, delimiter, whole, &tx));
    let mut sender = Sender::new(producers, a.topic.clone(), a.rate);
    let outcome = tokio::select! {
        r = async {
            while let Some(body) = rx.recv().await {
                sender.send(body).await?;
            }
            Ok::<_, crate::fail::Error>(())
        } => { r?; Outcome::Done }
        _ = signalled() => Outcome::Interrupted,
    };
    drop(rx);
    sender.finish().await?;
    if let Outcome::Done = outcome {
        reader
            .await
            .map_err(|e| err(format!("reading input: {e}")))??;
    }
    Ok(outcome)
}

fn valid_topic(t: &str) -> bool {
    nsq_wire::names::is_valid_name(t.as_bytes())
}

/// Read every source, sending each message (a delimited piece, or a whole source) on `tx`.
fn read_inputs(
    sources: &[PathBuf],
    delimiter: u8,
    whole: bool,
    tx: &tokio::sync::mpsc::Sender<Vec<u8>>,
) -> Result<()> {
    for src in sources {
        let input: Box<dyn Read> = if src.as_os_str() == "-" {
            Box::new(std::io::stdin())
        } else {
            Box::new(
                std::fs::File::open(src)
                    .map_err(|e| err(format!("opening {}: {e}", src.display())))?,
            )
        };
        let mut input = BufReader::with_capacity(256 << 10, input);
        let what = || format!("reading {}", src.display());
        if whole {
            let mut all = Vec::new();
            input
                .read_to_end(&mut all)
                .map_err(|e| err(format!("{}: {e}", what())))?;
            if !all.is_empty() && tx.blocking_send(all).is_err() {
                return Ok(());
            }
            continue;
        }
        loop {
            let mut line = Vec::new();
            let n = input
                .read_until(delimiter, &mut line)
                .map_err(|e| err(format!("{}: {e}", what())))?;
            if n == 0 {
                break;
            }
            if line.last() == Some(&delimiter) {
                line.pop();
            }
            // to_nsq skips empty messages (nsqd refuses them).
            if line.is_empty() {
                continue;
            }
            if tx.blocking_send(line).is_err() {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Publishing to every nsqd, pipelined, at the rate asked.
struct Sender {
    producers: Vec<Producer>,
    topic: String,
    in_flight: VecDeque<Publish>,
    interval: Option<Duration>,
    next_at: Instant,
}

impl Sender {
    fn new(producers: Vec<Producer>, topic: String, rate: u64) -> Sender {
        Sender {
            producers,
            topic,
            in_flight: VecDeque::new(),
            interval: (rate > 0).then(|| Duration::from_secs(1) / rate.min(1_000_000_000) as u32),
            next_at: Instant::now(),
        }
    }

    async fn send(&mut self, body: Vec<u8>) -> Result<()> {
        if let Some(every) = self.interval {
            let now = Instant::now();
            if self.next_at > now {
                tokio::time::sleep_until(self.next_at.into()).await;
            }
            self.next_at = self.next_at.max(now) + every;
        }
        let body = bytes::Bytes::from(body);
        for p in &self.producers {
            self.in_flight
                .push_back(p.publish_async(&self.topic, body.clone()));
        }
        while self.in_flight.len() > WINDOW * self.producers.len() {
            self.answer().await?;
        }
        Ok(())
    }

    async fn answer(&mut self) -> Result<()> {
        if let Some(p) = self.in_flight.pop_front() {
            p.await
                .map_err(|e| err(format!("publishing to {}: {e}", self.topic)))?;
        }
        Ok(())
    }

    /// Wait for every answer, then close the connections.
    async fn finish(mut self) -> Result<()> {
        while !self.in_flight.is_empty() {
            self.answer().await?;
        }
        for p in &self.producers {
            p.stop().await;
        }
        Ok(())
    }
}
