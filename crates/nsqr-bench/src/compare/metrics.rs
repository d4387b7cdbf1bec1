//! The rows of the compare table. Most rows are fixed, but the latency rows repeat for each of
//! `--latency-rates` and the matrix rows for each of `--sizes` (with `--matrix`), so the row
//! list is built from the flags. That one list drives the medians, the ratios, the JSON keys
//! and the table, so a phase only has to insert values under the keys built here.

use crate::cli::CompareArgs;
use crate::report::{size_label, LatencyStats, MatrixRow};

/// How a metric is shown and which direction is better.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub key: String,
    pub label: String,
    pub higher_is_better: bool,
    pub decimals: usize,
}

fn m(key: impl Into<String>, label: impl Into<String>, higher: bool, decimals: usize) -> Metric {
    Metric {
        key: key.into(),
        label: label.into(),
        higher_is_better: higher,
        decimals,
    }
}

/// Latency percentiles: (key part, label part).
pub const PERCENTILES: [(&str, &str); 4] = [
    ("p50", "p50"),
    ("p99", "p99"),
    ("p999", "p99.9"),
    ("max", "max"),
];

/// `latency_p99_us_at_10000`: one latency figure at one publish rate.
pub fn latency_key(percentile: &str, rate: u64) -> String {
    format!("latency_{percentile}_us_at_{rate}")
}

/// `matrix_65536_sub_msgs_per_sec`: `side` is pub or sub, `unit` msgs_per_sec or mb_per_sec.
pub fn matrix_key(size: usize, side: &str, unit: &str) -> String {
    format!("matrix_{size}_{side}_{unit}")
}

/// The values of one latency run at `rate`, under their keys.
pub fn latency_values(rate: u64, l: &LatencyStats) -> Vec<(String, f64)> {
    PERCENTILES
        .iter()
        .map(|&(p, _)| {
            let v = match p {
                "p50" => l.p50_us,
                "p99" => l.p99_us,
                "p999" => l.p999_us,
                _ => l.max_us,
            };
            (latency_key(p, rate), v)
        })
        .collect()
}

/// The values of one matrix size, under their keys.
pub fn matrix_values(r: &MatrixRow) -> Vec<(String, f64)> {
    let (p, s) = (&r.publish, &r.consume);
    vec![
        (matrix_key(r.size, "pub", "msgs_per_sec"), p.msgs_per_sec),
        (matrix_key(r.size, "pub", "mb_per_sec"), p.mb_per_sec),
        (matrix_key(r.size, "sub", "msgs_per_sec"), s.msgs_per_sec),
        (matrix_key(r.size, "sub", "mb_per_sec"), s.mb_per_sec),
    ]
}

/// Every row for these flags, in table order.
pub fn rows_for(a: &CompareArgs) -> Vec<Metric> {
    let sizes: &[usize] = if a.matrix { &a.sizes } else { &[] };
    let mut v = rows(&a.latency_rates, sizes);
    if a.nsq_bench.is_some() {
        // After pubsub, beside the project's own pub and sub rows.
        let at = v
            .iter()
            .position(|m| m.key == "pubsub_cpu_us_per_msg")
            .map_or(0, |i| i + 1);
        v.splice(at..at, nsq_bench_rows());
    }
    v
}

/// nsq's bench_writer and bench_reader (`--nsq-bench`), as bench.sh runs them.
pub fn nsq_bench_rows() -> Vec<Metric> {
    let mut v = Vec::new();
    for (side, tool) in [("pub", "bench_writer"), ("sub", "bench_reader")] {
        v.extend([
            m(
                format!("nsq_bench_{side}_msgs_per_sec"),
                format!("{tool} msgs/s"),
                true,
                0,
            ),
            m(
                format!("nsq_bench_{side}_mb_per_sec"),
                format!("{tool} MB/s"),
                true,
                1,
            ),
            m(
                format!("nsq_bench_{side}_cpu_us_per_msg"),
                format!("{tool} CPU µs/msg"),
                false,
                3,
            ),
        ]);
    }
    v
}

/// The fixed rows, one block of latency rows per rate and one block of matrix rows per size.
pub fn rows(latency_rates: &[u64], matrix_sizes: &[usize]) -> Vec<Metric> {
    let mut v = vec![
        m("pub_msgs_per_sec", "pub msgs/s", true, 0),
        m("pub_mb_per_sec", "pub MB/s", true, 1),
        m("pub_cpu_us_per_msg", "pub server CPU µs/msg", false, 3),
        m("sub_msgs_per_sec", "sub msgs/s", true, 0),
        m("sub_mb_per_sec", "sub MB/s", true, 1),
        m("sub_cpu_us_per_msg", "sub server CPU µs/msg", false, 3),
        m("pubsub_msgs_per_sec", "pubsub msgs/s (received)", true, 0),
        m("pubsub_mb_per_sec", "pubsub MB/s (received)", true, 1),
        m(
            "pubsub_cpu_us_per_msg",
            "pubsub server CPU µs/msg",
            false,
            3,
        ),
    ];
    for &rate in latency_rates {
        for (p, label) in PERCENTILES {
            v.push(m(
                latency_key(p, rate),
                format!("latency {label} µs @{}/s", rate_label(rate)),
                false,
                0,
            ));
        }
    }
    v.extend([
        m("peak_rss_mb", "peak RSS MB", false, 1),
        m("rss_bytes_per_queued_msg", "RSS B per queued msg", false, 0),
        m(
            "rss_after_drain_ratio",
            "RSS after drain / before",
            false,
            2,
        ),
        m("fanout_pub_msgs_per_sec", "fan-out pub msgs/s", true, 0),
        m(
            "fanout_pub_cpu_us_per_msg",
            "fan-out pub CPU µs/msg",
            false,
            3,
        ),
        m("idle_pub_msgs_per_sec", "pub msgs/s, idle conns", true, 0),
        m("idle_sub_msgs_per_sec", "sub msgs/s, idle conns", true, 0),
    ]);
    for &size in matrix_sizes {
        let s = size_label(size);
        for side in ["pub", "sub"] {
            v.push(m(
                matrix_key(size, side, "msgs_per_sec"),
                format!("matrix {s} {side} msgs/s"),
                true,
                0,
            ));
            v.push(m(
                matrix_key(size, side, "mb_per_sec"),
                format!("matrix {s} {side} MB/s"),
                true,
                1,
            ));
        }
    }
    v.extend([
        m("lost", "lost messages", false, 0),
        m("duplicates", "duplicate deliveries", false, 0),
    ]);
    v
}

/// 1000 -> 1k, 10000 -> 10k, 2500 -> 2.5k, 1500000 -> 1.5M; anything that would need more
/// than one decimal stays as it is (1234).
pub fn rate_label(r: u64) -> String {
    for (unit, suffix) in [(1_000_000, "M"), (1_000, "k")] {
        if r >= unit && r.is_multiple_of(unit / 10) {
            let (whole, tenth) = (r / unit, r % unit / (unit / 10));
            return if tenth == 0 {
                format!("{whole}{suffix}")
            } else {
                format!("{whole}.{tenth}{suffix}")
            };
        }
    }
    r.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys compare had before rows depended on the flags (the latency rows aside).
    const FIXED: &[&str] = &[
        "pub_msgs_per_sec",
        "pub_mb_per_sec",
        "pub_cpu_us_per_msg",
        "sub_msgs_per_sec",
        "sub_mb_per_sec",
        "sub_cpu_us_per_msg",
        "pubsub_msgs_per_sec",
        "pubsub_mb_per_sec",
        "pubsub_cpu_us_per_msg",
        "peak_rss_mb",
        "rss_bytes_per_queued_msg",
        "rss_after_drain_ratio",
        "fanout_pub_msgs_per_sec",
        "fanout_pub_cpu_us_per_msg",
        "idle_pub_msgs_per_sec",
        "idle_sub_msgs_per_sec",
        "lost",
        "duplicates",
    ];

    fn keys(rows: &[Metric]) -> Vec<&str> {
        rows.iter().map(|m| m.key.as_str()).collect()
    }

    fn label<'a>(rows: &'a [Metric], key: &str) -> &'a str {
        rows.iter()
            .find(|m| m.key == key)
            .map(|m| m.label.as_str())
            .unwrap_or("(missing)")
    }

    #[test]
    fn rate_labels() {
        assert_eq!(rate_label(1000), "1k");
        assert_eq!(rate_label(10_000), "10k");
        assert_eq!(rate_label(2500), "2.5k");
        assert_eq!(rate_label(1_000_000), "1M");
        assert_eq!(rate_label(1_500_000), "1.5M");
        assert_eq!(rate_label(1_230_000), "1230k");
        assert_eq!(rate_label(1234), "1234");
        assert_eq!(rate_label(999), "999");
        assert_eq!(rate_label(1), "1");
    }

    #[test]
    fn size_labels() {
        assert_eq!(size_label(64), "64 B");
        assert_eq!(size_label(1024), "1 KB");
        assert_eq!(size_label(8192), "8 KB");
        assert_eq!(size_label(65536), "64 KB");
        assert_eq!(size_label(1024 * 1024), "1024 KB");
        assert_eq!(size_label(1000), "1000 B");
        assert_eq!(size_label(1536), "1536 B");
    }

    #[test]
    fn fixed_rows_keep_their_keys_and_order() {
        let r = rows(&[], &[]);
        assert_eq!(keys(&r), FIXED);
        assert_eq!(label(&r, "pub_msgs_per_sec"), "pub msgs/s");
        assert_eq!(label(&r, "lost"), "lost messages");
    }

    #[test]
    fn latency_rows_per_rate_after_pubsub() {
        let r = rows(&[1000, 10_000], &[]);
        assert_eq!(r.len(), FIXED.len() + 8);
        let k = keys(&r);
        assert_eq!(k[9], "latency_p50_us_at_1000");
        assert_eq!(k[12], "latency_max_us_at_1000");
        assert_eq!(k[13], "latency_p50_us_at_10000");
        assert_eq!(k[17], "peak_rss_mb");
        assert_eq!(label(&r, "latency_p99_us_at_1000"), "latency p99 µs @1k/s");
        assert_eq!(
            label(&r, "latency_p999_us_at_10000"),
            "latency p99.9 µs @10k/s"
        );
        assert_eq!(
            label(&r, "latency_max_us_at_10000"),
            "latency max µs @10k/s"
        );
        assert!(r
            .iter()
            .filter(|m| m.key.starts_with("latency_"))
            .all(|m| !m.higher_is_better && m.decimals == 0));
    }

    #[test]
    fn matrix_rows_per_size_before_loss() {
        let r = rows(&[1000], &[64, 65536]);
        assert_eq!(r.len(), FIXED.len() + 4 + 8);
        let k = keys(&r);
        assert_eq!(
            &k[k.len() - 10..],
            &[
                "matrix_64_pub_msgs_per_sec",
                "matrix_64_pub_mb_per_sec",
                "matrix_64_sub_msgs_per_sec",
                "matrix_64_sub_mb_per_sec",
                "matrix_65536_pub_msgs_per_sec",
                "matrix_65536_pub_mb_per_sec",
                "matrix_65536_sub_msgs_per_sec",
                "matrix_65536_sub_mb_per_sec",
                "lost",
                "duplicates",
            ]
        );
        assert_eq!(
            label(&r, "matrix_64_pub_msgs_per_sec"),
            "matrix 64 B pub msgs/s"
        );
        assert_eq!(
            label(&r, "matrix_65536_sub_mb_per_sec"),
            "matrix 64 KB sub MB/s"
        );
        assert!(r
            .iter()
            .filter(|m| m.key.starts_with("matrix_"))
            .all(|m| m.higher_is_better));
    }

    #[test]
    fn every_value_a_phase_stores_has_a_row() {
        let r = rows(&[2500], &[8192]);
        let lat = LatencyStats {
            p50_us: 1.0,
            p99_us: 2.0,
            p999_us: 3.0,
            max_us: 4.0,
            ..Default::default()
        };
        let mut row = MatrixRow {
            size: 8192,
            ..Default::default()
        };
        row.publish.msgs_per_sec = 10.0;
        row.publish.mb_per_sec = 11.0;
        row.consume.msgs_per_sec = 12.0;
        row.consume.mb_per_sec = 13.0;
        let vals: Vec<_> = latency_values(2500, &lat)
            .into_iter()
            .chain(matrix_values(&row))
            .collect();
        for (k, _) in &vals {
            assert!(r.iter().any(|m| &m.key == k), "no row for {k}");
        }
        let get = |k: &str| vals.iter().find(|(x, _)| x == k).map(|(_, v)| *v);
        assert_eq!(get("latency_p50_us_at_2500"), Some(1.0));
        assert_eq!(get("latency_p99_us_at_2500"), Some(2.0));
        assert_eq!(get("latency_p999_us_at_2500"), Some(3.0));
        assert_eq!(get("latency_max_us_at_2500"), Some(4.0));
        assert_eq!(get("matrix_8192_pub_msgs_per_sec"), Some(10.0));
        assert_eq!(get("matrix_8192_pub_mb_per_sec"), Some(11.0));
        assert_eq!(get("matrix_8192_sub_msgs_per_sec"), Some(12.0));
        assert_eq!(get("matrix_8192_sub_mb_per_sec"), Some(13.0));
    }

    #[test]
    fn nsq_bench_rows_follow_pubsub() {
        use clap::Parser;
        let parse = |extra: &[&str]| {
            let mut v = vec!["nsqr-bench", "compare", "--reference", "/bin/true"];
            v.extend_from_slice(extra);
            match crate::cli::Cli::try_parse_from(v).unwrap().command {
                crate::cli::Command::Compare(b) => rows_for(&b),
                other => panic!("{other:?}"),
            }
        };
        let plain = parse(&[]);
        assert!(plain.iter().all(|m| !m.key.starts_with("nsq_bench")));
        let with = parse(&["--nsq-bench", "/tmp"]);
        assert_eq!(with.len(), plain.len() + 6);
        let k = keys(&with);
        assert_eq!(k[8], "pubsub_cpu_us_per_msg");
        assert_eq!(
            &k[9..15],
            &[
                "nsq_bench_pub_msgs_per_sec",
                "nsq_bench_pub_mb_per_sec",
                "nsq_bench_pub_cpu_us_per_msg",
                "nsq_bench_sub_msgs_per_sec",
                "nsq_bench_sub_mb_per_sec",
                "nsq_bench_sub_cpu_us_per_msg",
            ]
        );
        assert_eq!(
            label(&with, "nsq_bench_sub_cpu_us_per_msg"),
            "bench_reader CPU µs/msg"
        );
        assert_eq!(k[15], "latency_p50_us_at_1000");
    }

    #[test]
    fn keys_are_unique_and_labels_fit_the_table() {
        let mut r = rows(
            &[1000, 2500, 10_000, 1_500_000],
            &[64, 1024, 8192, 65536, 1 << 20],
        );
        r.extend(nsq_bench_rows());
        let mut k = keys(&r);
        k.sort();
        k.dedup();
        assert_eq!(k.len(), r.len());
        for m in &r {
            assert!(m.label.chars().count() <= 26, "{:?}", m.label);
        }
    }
}
