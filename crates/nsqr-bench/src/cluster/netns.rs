//! `cluster --netns`: each node in a network namespace of its own, so its traffic crosses a
//! link that can be given real hosts' bandwidth and delay (`tc netem`), where loopback has
//! neither. Node k's namespace `nsqr-<pid>-<k>` is joined to this one by a veth pair,
//! `10.A.k.1/24` on this side and `10.A.k.2/24` inside (A picked so no address of this machine
//! is in 10.A.0.0/16); inside, the default route points back here, so every node reaches the
//! lookupd, which listens on `10.A.0.1` (this side of node 0's link). The bench's clients stay
//! in this namespace and reach the nodes at their `10.A.k.2` addresses, as lookupd lists them.
//!
//! `--netns-rate` alone shapes each link with `tbf`; `--netns-delay` needs `netem` (the
//! kernel's `sch_netem`, which some kernels lack), which then also applies the rate.
//!
//! Everything is created with `ip` and `tc` (iproute2, as root) and removed when [`Netns`] is
//! dropped, on success, error or Ctrl-C; the nodes must be stopped first (they are, in
//! [`super::nodes::Cluster`]'s field order). A run killed with SIGKILL leaves its namespaces:
//! `ip netns list | grep nsqr-` shows them and `ip netns del NAME` removes each.

use std::process::Command;

use crate::fail::{err, Result};

/// One node's link.
#[derive(Debug, Clone)]
pub struct Link {
    pub namespace: String,
    /// The veth end in this namespace, and its address.
    pub host_if: String,
    pub host_ip: String,
    /// The veth end inside the node's namespace, and the node's address.
    pub node_if: String,
    pub node_ip: String,
}

/// The namespaces and links of one run.
#[derive(Debug)]
pub struct Netns {
    pub links: Vec<Link>,
    /// Shaping applied to each link, each way (for the report), e.g. "rate 1gbit delay 100us".
    pub shaping: String,
}

/// A tc rate in bits per second: a number with `bit`, `kbit`, `mbit`, `gbit` or `tbit`.
pub fn rate_bits(s: &str) -> Option<u64> {
    let units = [
        ("tbit", 1e12),
        ("gbit", 1e9),
        ("mbit", 1e6),
        ("kbit", 1e3),
        ("bit", 1.0),
    ];
    let (num, mult) = units
        .iter()
        .find_map(|(u, m)| s.strip_suffix(u).map(|n| (n, *m)))?;
    let v = num.parse::<f64>().ok()? * mult;
    (v.is_finite() && v >= 8000.0).then_some(v as u64)
}

/// The qdisc for a link's egress: `netem` when there is a delay (with netem's own rate
/// limit), else `tbf` for the rate alone (tbf is in every kernel; netem, `sch_netem`, is not).
/// None when there is nothing to shape.
fn qdisc_args(rate: Option<&str>, delay: Option<&str>) -> Option<Vec<String>> {
    let mut v: Vec<String> = vec!["root".into()];
    match (rate, delay) {
        (None, None) => return None,
        (rate, Some(d)) => {
            v.extend(["netem".into(), "delay".into(), d.to_string()]);
            if let Some(r) = rate {
                v.extend(["rate".into(), r.to_string()]);
            }
            // netem's default queue of 1000 packets would drop at these rates (TCP would
            // recover, but the run would measure retransmissions).
            v.extend(["limit".into(), "100000".into()]);
        }
        (Some(r), None) => {
            // A bucket of 1 ms of traffic, and at least a few 64 KiB (GSO) packets.
            let burst = (rate_bits(r).unwrap_or(0) / 8 / 1000).max(256 << 10);
            v.extend(
                [
                    "tbf",
                    "rate",
                    r,
                    "burst",
                    &burst.to_string(),
                    "latency",
                    "50ms",
                ]
                .map(String::from),
            );
        }
    }
    Some(v)
}

/// The second octet of 10.A.0.0/16: the first from `start` (wrapping in 200..=249) that no
/// address in `ip -o addr` output uses.
fn free_octet(addrs: &str, start: u32) -> Option<u8> {
    (0..50).map(|i| 200 + (start + i) % 50).find_map(|a| {
        let prefix = format!("inet 10.{a}.");
        (!addrs.contains(&prefix)).then_some(a as u8)
    })
}

fn run(args: &[&str]) -> Result<String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| err(format!("--netns: cannot run {}: {e}", args[0])))?;
    if !out.status.success() {
        return Err(err(format!(
            "--netns: `{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Netns {
    /// Create `nodes` namespaces and links, shaped with `rate` / `delay` when given.
    pub fn create(nodes: usize, rate: Option<&str>, delay: Option<&str>) -> Result<Netns> {
        let pid = std::process::id();
        let addrs = run(&["ip", "-o", "addr"])?;
        let a = free_octet(&addrs, pid).ok_or_else(|| err("--netns: no free 10.A.0.0/16"))?;
        let qdisc = qdisc_args(rate, delay);
        let mut shaping = Vec::new();
        if let Some(d) = delay {
            shaping.push(format!("delay {d}"));
        }
        if let Some(r) = rate {
            shaping.push(format!("rate {r}"));
        }
        let mut ns = Netns {
            links: Vec::new(),
            shaping: shaping.join(" "),
        };
        for k in 0..nodes {
            let link = Link {
                namespace: format!("nsqr-{pid}-{k}"),
                host_if: format!("nqh{pid}-{k}"),
                host_ip: format!("10.{a}.{k}.1"),
                node_if: format!("nqn{pid}-{k}"),
                node_ip: format!("10.{a}.{k}.2"),
            };
            run(&["ip", "netns", "add", &link.namespace])?;
            // Recorded before it is configured, so a failure below still removes it.
            ns.links.push(link.clone());
            setup_link(&link, qdisc.as_deref())?;
        }
        Ok(ns)
    }

    /// The words that run a program in node `k`'s namespace (`ip netns exec` execs it, so
    /// the process keeps the pid it was started with).
    pub fn wrapper(&self, k: usize) -> Vec<String> {
        vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            self.links[k].namespace.clone(),
        ]
    }

    /// Where the lookupd listens: this side of node 0's link.
    pub fn lookupd_ip(&self) -> &str {
        &self.links[0].host_ip
    }
}

fn setup_link(l: &Link, qdisc: Option<&[String]>) -> Result<()> {
    let ns = l.namespace.as_str();
    run(&[
        "ip", "link", "add", &l.host_if, "type", "veth", "peer", "name", &l.node_if,
    ])?;
    run(&["ip", "link", "set", &l.node_if, "netns", ns])?;
    run(&[
        "ip",
        "addr",
        "add",
        &format!("{}/24", l.host_ip),
        "dev",
        &l.host_if,
    ])?;
    run(&["ip", "link", "set", &l.host_if, "up"])?;
    run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
    run(&[
        "ip",
        "-n",
        ns,
        "addr",
        "add",
        &format!("{}/24", l.node_ip),
        "dev",
        &l.node_if,
    ])?;
    run(&["ip", "-n", ns, "link", "set", &l.node_if, "up"])?;
    run(&["ip", "-n", ns, "route", "add", "default", "via", &l.host_ip])?;
    if let Some(qdisc) = qdisc {
        let mut host = vec!["tc", "qdisc", "add", "dev", &l.host_if];
        host.extend(qdisc.iter().map(String::as_str));
        run(&host).map_err(|e| {
            let msg = e.to_string();
            if qdisc.iter().any(|a| a == "netem") && msg.contains("kind is unknown") {
                err(format!("{msg} (this kernel has no netem qdisc, so --netns-delay cannot be used; --netns-rate alone shapes with tbf)"))
            } else {
                e
            }
        })?;
        let mut node = vec![
            "ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", &l.node_if,
        ];
        node.extend(qdisc.iter().map(String::as_str));
        run(&node)?;
    }
    Ok(())
}

impl Drop for Netns {
    fn drop(&mut self) {
        for l in &self.links {
            // Deleting the namespace destroys its veth end and so the pair; the explicit
            // delete covers a pair whose node end never moved into the namespace.
            let _ = run(&["ip", "netns", "del", &l.namespace]);
            let _ = Command::new("ip")
                .args(["link", "del", &l.host_if])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_an_unused_range() {
        let addrs = "1: lo    inet 127.0.0.1/8 scope host lo\n2: eth0    inet 10.200.3.4/24\n";
        assert_eq!(free_octet(addrs, 0), Some(201));
        assert_eq!(free_octet(addrs, 7), Some(207));
        assert_eq!(free_octet(addrs, 50), Some(201));
        let all: String = (200..250)
            .map(|a| format!("inet 10.{a}.0.1/24\n"))
            .collect();
        assert_eq!(free_octet(&all, 0), None);
    }

    #[test]
    fn qdisc_only_when_shaping() {
        assert_eq!(qdisc_args(None, None), None);
        assert_eq!(
            qdisc_args(Some("1gbit"), Some("100us")).unwrap().join(" "),
            "root netem delay 100us rate 1gbit limit 100000"
        );
        assert_eq!(
            qdisc_args(None, Some("1ms")).unwrap().join(" "),
            "root netem delay 1ms limit 100000"
        );
        assert_eq!(
            qdisc_args(Some("10gbit"), None).unwrap().join(" "),
            "root tbf rate 10gbit burst 1250000 latency 50ms"
        );
        assert_eq!(
            qdisc_args(Some("100mbit"), None).unwrap().join(" "),
            "root tbf rate 100mbit burst 262144 latency 50ms"
        );
    }

    #[test]
    fn rates() {
        assert_eq!(rate_bits("1gbit"), Some(1_000_000_000));
        assert_eq!(rate_bits("2.5mbit"), Some(2_500_000));
        assert_eq!(rate_bits("8kbit"), Some(8000));
        for bad in ["", "1", "gbit", "1gbps", "1kbit", "-1gbit", "1 gbit"] {
            assert_eq!(rate_bits(bad), None, "{bad:?}");
        }
    }
}
