//! What machine a comparison ran on: CPUs, model, memory, load.

use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub model: String,
    pub mem_total_gib: f64,
    /// /proc/loadavg's 1, 5 and 15 minute averages.
    pub load_before: String,
    pub load_after: String,
}

impl Machine {
    pub fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        Machine {
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            model: field(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into()),
            mem_total_gib: field(&meminfo, "MemTotal")
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
                .map(|kb| kb / (1024.0 * 1024.0))
                .unwrap_or(0.0),
            load_before: load(),
            load_after: String::new(),
        }
    }
}

/// The 1, 5 and 15 minute load averages.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields() {
        let t = "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\n";
        assert_eq!(field(t, "model name").as_deref(), Some("Some CPU @ 2.0GHz"));
        assert!(Machine::probe().cpus > 0);
    }
}
