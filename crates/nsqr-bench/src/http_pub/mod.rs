//! `nsqr-bench http-pub`: MinMQ's HTTP publish load (wrk POSTing a small form to `/pub`)
//! against the HTTP floor (`nsqr-bench floor --http-address`), nsqrd, optionally a second
//! nsqrd (a baseline build) and a reference nsqd, in one command: each round starts every
//! server afresh in turn (A B A B ...) for every load, so a machine shared with other work
//! disturbs them alike. Per server and load it reports the medians over the rounds of the
//! request rate, the server's CPU per request (its threads' run time from /proc while wrk ran,
//! over the requests wrk counted) and wrk's latency percentiles, each beside the floor's.

mod wrk;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::cli::{at_least, parse_duration};
use crate::fail::{err, Result};
use crate::machine::Machine;
use crate::procstat::precise_cpu_time;
use crate::report::{fmt_ratio, Table};
use crate::server::{find_binary, find_nsqrd, nsqd_flags, temp_dir, Launch, Server};
use crate::stats::{median, sorted};

use wrk::{Load, Report};

#[derive(Debug, Clone, Args)]
pub struct HttpPubArgs {
    /// The nsqrd binary (default: nsqrd next to this executable, else target/release).
    #[arg(long)]
    pub nsqrd: Option<PathBuf>,
    /// Another nsqrd to measure beside it (e.g. a build of the base branch), as "baseline".
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// A reference nsqd binary (left out when absent).
    #[arg(long)]
    pub nsqd_bin: Option<PathBuf>,
    /// Extra flags for nsqrd and the baseline (repeat for more), e.g. --nsqrd-arg=--durability=strict.
    #[arg(long, allow_hyphen_values = true)]
    pub nsqrd_arg: Vec<String>,
    /// The wrk binary.
    #[arg(long, default_value = "wrk")]
    pub wrk: PathBuf,
    /// wrk loads, THREADSxCONNECTIONS: comma-separated or repeated.
    #[arg(long, value_delimiter = ',', default_value = "2x50,12x400", value_parser = wrk::parse_load)]
    pub loads: Vec<Load>,
    /// How long each wrk run lasts (whole seconds).
    #[arg(long, default_value = "8s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Rounds of A B ... (medians are reported).
    #[arg(long, default_value_t = 3, value_parser = at_least(1usize))]
    pub rounds: usize,
    /// The topic published to.
    #[arg(long, default_value = "http_pub")]
    pub topic: String,
}

/// One server under test.
struct Contender {
    name: &'static str,
    program: PathBuf,
    /// Words before nsqd's flags (`floor` for the floor).
    leading: Vec<String>,
    extra: Vec<String>,
}

/// Every run of one server under one load.
struct Runs {
    server: &'static str,
    load: Load,
    reports: Vec<Report>,
    cpu_us_per_req: Vec<f64>,
}

pub async fn run(a: &HttpPubArgs) -> Result<bool> {
    let contenders = contenders(a)?;
    let dir = temp_dir()?;
    let script = wrk::write_script(&dir);
    let result = measure_all(a, &contenders, &script?).await;
    let _ = std::fs::remove_dir_all(&dir);
    let (machine, runs) = result?;
    print_report(a, &machine, &runs);
    Ok(runs.iter().all(|r| r.reports.iter().all(|w| w.errors == 0)))
}

fn contenders(a: &HttpPubArgs) -> Result<Vec<Contender>> {
    let this =
        std::env::current_exe().map_err(|e| err(format!("cannot find this executable: {e}")))?;
    let mut v = vec![Contender {
        name: "floor",
        program: this,
        leading: vec!["floor".into()],
        extra: Vec::new(),
    }];
    v.push(Contender {
        name: "nsqrd",
        program: find_nsqrd(a.nsqrd.as_deref())?,
        leading: Vec::new(),
        extra: a.nsqrd_arg.clone(),
    });
    if let Some(p) = &a.baseline {
        v.push(Contender {
            name: "baseline",
            program: find_binary("nsqrd", "--baseline", Some(p))?,
            leading: Vec::new(),
            extra: a.nsqrd_arg.clone(),
        });
    }
    if let Some(p) = &a.nsqd_bin {
        v.push(Contender {
            name: "nsqd",
            program: p.clone(),
            leading: Vec::new(),
            extra: Vec::new(),
        });
    }
    Ok(v)
}

async fn measure_all(
    a: &HttpPubArgs,
    contenders: &[Contender],
    script: &std::path::Path,
) -> Result<(Machine, Vec<Runs>)> {
    let mut machine = Machine::probe();
    let mut runs: Vec<Runs> = a
        .loads
        .iter()
        .flat_map(|&load| {
            contenders.iter().map(move |c| Runs {
                server: c.name,
                load,
                reports: Vec::new(),
                cpu_us_per_req: Vec::new(),
            })
        })
        .collect();
    for round in 1..=a.rounds {
        for (i, load) in a.loads.iter().enumerate() {
            for (j, c) in contenders.iter().enumerate() {
                let (report, cpu) = measure_one(a, c, *load, script).await?;
                eprintln!(
                    "round {round}/{} {load} {:<8} {:>8} req/s  {:>7} CPU/req  p50 {}  p99 {}  load {}",
                    a.rounds,
                    c.name,
                    rate(report.rate()),
                    cpu_us(cpu),
                    latency(report.latency_us[0]),
                    latency(report.latency_us[3]),
                    crate::machine::load(),
                );
                let r = &mut runs[i * contenders.len() + j];
                r.reports.push(report);
                r.cpu_us_per_req.push(cpu);
            }
        }
    }
    machine.load_after = crate::machine::load();
    Ok((machine, runs))
}

/// Start `c` afresh, run wrk against its `/pub`, stop it: wrk's report and the server's CPU
/// per request in microseconds.
async fn measure_one(
    a: &HttpPubArgs,
    c: &Contender,
    load: Load,
    script: &std::path::Path,
) -> Result<(Report, f64)> {
    let data_dir = temp_dir()?;
    let mut args = c.leading.clone();
    args.extend(nsqd_flags("127.0.0.1", &data_dir));
    args.extend(c.extra.iter().cloned());
    let server = Server::launch(Launch {
        program: c.program.clone(),
        args,
        data_dir: Some(data_dir),
        http: true,
        ..Default::default()
    })
    .await?;
    let http = server
        .http
        .clone()
        .ok_or_else(|| err(format!("{} reported no HTTP listener", c.name)))?;
    let url = format!("http://{http}/pub?topic={}", a.topic);
    let before = precise_cpu_time(server.pid)?;
    let report = wrk::run(&a.wrk, script, load, a.duration, &url).await?;
    let cpu = precise_cpu_time(server.pid)?.saturating_sub(before);
    if report.requests == 0 {
        return Err(err(format!("{}: wrk completed no request", c.name)));
    }
    let per_request = cpu.as_secs_f64() * 1e6 / report.requests as f64;
    Ok((report, per_request))
}

/// 12.3 µs
fn cpu_us(us: f64) -> String {
    format!("{us:.1} µs")
}

/// 65.5k
fn rate(r: f64) -> String {
    format!("{:.1}k", r / 1000.0)
}

fn latency(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} us")
    }
}

fn print_report(a: &HttpPubArgs, m: &Machine, runs: &[Runs]) {
    println!(
        "http-pub: wrk POST /pub?topic={}, {} rounds of {:?} per server and load, medians",
        a.topic, a.rounds, a.duration
    );
    println!(
        "machine: {} CPUs ({}), load {} before, {} after",
        m.cpus, m.model, m.load_before, m.load_after
    );
    let mut t = Table::new([
        "load", "server", "req/s", "vs floor", "CPU/req", "vs floor", "p50", "p90", "p99", "errors",
    ])
    .left(2);
    for load in &a.loads {
        let of_load: Vec<&Runs> = runs.iter().filter(|r| r.load == *load).collect();
        let floor = of_load.first().map(|f| summary(f));
        for r in &of_load {
            let s = summary(r);
            let (rate_vs, cpu_vs) = floor.as_ref().map_or((String::new(), String::new()), |f| {
                (fmt_ratio(s.rate / f.rate), fmt_ratio(s.cpu / f.cpu))
            });
            t.row(vec![
                load.to_string(),
                r.server.to_string(),
                rate(s.rate),
                rate_vs,
                cpu_us(s.cpu),
                cpu_vs,
                latency(s.latency[0]),
                latency(s.latency[2]),
                latency(s.latency[3]),
                s.errors.to_string(),
            ]);
        }
    }
    t.print();
}

struct Summary {
    rate: f64,
    cpu: f64,
    latency: [f64; 4],
    errors: u64,
}

/// Medians over the rounds (errors summed).
fn summary(r: &Runs) -> Summary {
    let med = |v: Vec<f64>| median(&sorted(v));
    Summary {
        rate: med(r.reports.iter().map(Report::rate).collect()),
        cpu: med(r.cpu_us_per_req.clone()),
        latency: std::array::from_fn(|i| med(r.reports.iter().map(|w| w.latency_us[i]).collect())),
        errors: r.reports.iter().map(|w| w.errors).sum(),
    }
}
