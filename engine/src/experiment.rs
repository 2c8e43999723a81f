//! `harness run`: one multicast experiment with closed-loop clients, on `sim`, `local` or
//! `verbs` (a tcp run is launched by [`crate::cluster::launch`]), and its outputs:
//! `summary.csv` (one row with every parameter), `latency_cdf.csv`, and the delivery log.

use crate::protocol::Deployment;
use crate::runtime::{Drivable, Drive, Runtime};
use hdrhistogram::Histogram;
use multicast::workload::latency_histogram;
use multicast::{collect_log, DeliveryLog, DestPolicy, LoadSpec, Node, Observed, Server};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use transport::runtime::sim::{Profile, Software};
use transport::{Nanos, ProcessId};

/// One experiment.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The protocol, configured.
    pub deploy: Deployment,
    /// Where the clients multicast.
    pub dest: DestPolicy,
    /// Payload bytes per multicast.
    pub size: usize,
    /// The warm-up before the measurement window.
    pub warmup: Nanos,
    /// The measurement window.
    pub duration: Nanos,
    /// Where it runs.
    pub runtime: Runtime,
    /// The hardware profile (the simulator's; the others report it).
    pub profile: Profile,
    /// What the protocol's reported work costs on the simulator (`--software`).
    pub software: Software,
    /// The seed of every random stream of the run.
    pub seed: u64,
    /// Whether the servers keep a delivery log.
    pub log: bool,
    /// The tree `--dest adjacent:K` draws from when the protocol has none (RamCast given
    /// TRAM's "genuine" workload).
    pub dest_tree: Option<multicast::Tree>,
}

/// What an experiment measured.
#[derive(Debug)]
pub struct Measured {
    /// Multicasts completed that started in the measurement window.
    pub delivered: u64,
    /// Those per second of the window.
    pub throughput: f64,
    /// The measurement window's length (a figure may stretch the experiment's: see
    /// [`crate::figure::measure`]).
    pub window: Nanos,
    /// Closed-loop clients in the run.
    pub clients: usize,
    /// Latency over all clients, nanoseconds.
    pub latency: Histogram<u64>,
    /// Completions and latencies (nanoseconds) over all clients per section of the window
    /// ([`multicast::workload::SECTIONS`] of them; none where the runtime does not report them):
    /// the spread that gives [`Measured::throughput_ci`] and [`Measured::latency_ci`].
    pub sections: Vec<(u64, Histogram<u64>)>,
    /// The delivery log, if the servers kept one.
    pub log: Option<DeliveryLog>,
    /// The run's wall-clock time.
    pub wall: Duration,
    /// CPU time of this process during the run (local runtime), if known.
    pub cpu: Option<Duration>,
    /// Messages delivered by all servers.
    pub server_deliveries: u64,
    /// Groups whose leadership changed during the run (false suspicions included), plus one
    /// if a leader changed among the auxiliary processes (Ridge's dedicated acceptors).
    pub leader_changes: usize,
    /// The protocol's own counters ([`Observed::counters`]), summed over the servers.
    pub counters: Counters,
    /// Each server's deliveries of the protocol's own kind in order, with `--log`, and the
    /// kind's name ([`Observed::own_log`]).
    pub own_log: Option<(&'static str, Vec<OwnLog>)>,
}

/// One server's deliveries of the protocol's own kind, in order ([`Observed::own_log`]).
pub type OwnLog = (ProcessId, Vec<multicast::MsgId>);

/// A protocol's own counters, by name ([`Observed::counters`]).
pub type Counters = std::collections::BTreeMap<&'static str, u64>;

impl Measured {
    /// The 95% interval of [`Measured::throughput`] ([`crate::stats::rate_ci`]).
    pub fn throughput_ci(&self) -> Option<(f64, f64)> {
        crate::stats::rate_ci(
            self.throughput,
            self.window.as_secs_f64(),
            self.clients,
            self.sections.iter().map(|s| s.0),
        )
    }

    /// The latency quantile `q` over the window, in microseconds, and its 95% interval by
    /// sectioning (`None` when a section completed nothing: its quantile does not exist).
    pub fn latency_ci(&self, q: f64) -> (f64, Option<(f64, f64)>) {
        let us = |h: &Histogram<u64>| h.value_at_quantile(q) as f64 / 1000.0;
        let point = us(&self.latency);
        if self.sections.iter().any(|s| s.1.is_empty()) {
            return (point, None);
        }
        let v: Vec<f64> = self.sections.iter().map(|s| us(&s.1)).collect();
        (point, crate::stats::sectioning(point, &v))
    }
}

impl Experiment {
    /// The runtime's name on the command line.
    pub fn runtime_name(&self) -> &'static str {
        self.runtime.name()
    }

    /// The clients' load.
    pub fn load(&self) -> LoadSpec {
        LoadSpec {
            dest: self.dest,
            groups: self.deploy.shape().0,
            tree: self
                .deploy
                .tree()
                .or_else(|| self.dest_tree.clone())
                .map(Arc::new),
            size: self.size,
            warmup_end: self.warmup,
            stop_at: self.warmup.saturating_add(self.duration),
        }
    }

    /// Runs it: warm-up, measurement window, then a drain so in-flight multicasts finish.
    pub fn run(&self) -> Measured {
        self.deploy.execute(self)
    }

    /// The tree column of `summary.csv` (`-` for genuine protocols).
    fn tree_name(&self) -> String {
        self.deploy
            .tree()
            .map_or("-".into(), |t| t.to_string().replace(',', ";"))
    }

    /// Runs `nodes`, the processes of this experiment's deployment, and measures them.
    pub fn execute<S, C>(&self, nodes: Vec<Node<S, C>>) -> Measured
    where
        S: Server + Observed,
        Node<S, C>: Drivable,
    {
        // A tcp run is one OS process per node, its faults applied by the nodes: the driver's
        // loopback threads would measure another experiment.
        assert_ne!(
            self.runtime,
            Runtime::Tcp,
            "tcp runs are launched by cluster::launch"
        );
        let stop_at = self.warmup.saturating_add(self.duration);
        let cpu0 = process_cpu();
        let software = self.software.for_protocol(self.deploy.protocol());
        let drive = Drive {
            runtime: self.runtime,
            seed: self.seed,
            profile: Some(&self.profile),
            software: &software,
            faults: &[],
            limits: self.profile.limits(),
            until: Some(stop_at.saturating_add(Nanos(5_000_000))),
            limit: Duration::from_nanos(stop_at.as_nanos()) + Duration::from_secs(1),
        };
        let run = drive
            .run(nodes)
            .unwrap_or_else(|e| panic!("--runtime {}: {e}", self.runtime.name()));
        let (nodes, faulty, wall) = (run.processes, run.crashed, run.wall);
        let cpu = cpu0.and_then(|a| process_cpu().map(|b| b.saturating_sub(a)));
        let mut delivered = 0;
        let mut server_deliveries = 0;
        let mut changed = std::collections::BTreeSet::new();
        let mut counters = Counters::new();
        let mut own_log: Option<(&'static str, Vec<_>)> = None;
        // Node `i` is process `i`.
        for (i, n) in nodes.iter().enumerate() {
            match n {
                Node::Client(c) => {
                    delivered += c.completed_in_window;
                }
                Node::Server(s) => {
                    server_deliveries += s.delivered;
                    if s.server.changed_leader() {
                        changed.insert(Some(s.server.group()));
                    }
                    if let Some((kind, log)) = s.server.own_log() {
                        let logs = &mut own_log.get_or_insert_with(|| (kind, Vec::new())).1;
                        logs.push((ProcessId(i as u32), log));
                    }
                    for (name, n) in s.server.counters() {
                        *counters.entry(name).or_default() += n;
                    }
                }
                // Auxiliary processes deliver nothing; a new leader among them (Ridge's
                // dedicated acceptors) counts as one change beside the groups'.
                Node::Auxiliary(s) => {
                    if s.server.changed_leader() {
                        changed.insert(None);
                    }
                }
            }
        }
        let log = self
            .log
            .then(|| collect_log(&nodes, |p: ProcessId| faulty[p.index()]));
        let clients = || {
            nodes.iter().filter_map(|n| match n {
                Node::Client(c) => Some(c),
                _ => None,
            })
        };
        let sections = (0..multicast::workload::SECTIONS)
            .map(|i| {
                let completed = clients().map(|c| c.sections[i].completed).sum();
                let h = latency_histogram(clients().map(|c| &c.sections[i].latencies));
                (completed, h)
            })
            .collect();
        Measured {
            delivered,
            throughput: delivered as f64 / self.duration.as_secs_f64(),
            window: self.duration,
            clients: clients().count(),
            latency: latency_histogram(clients().map(|c| &c.latencies)),
            sections,
            log,
            wall,
            cpu,
            server_deliveries,
            leader_changes: changed.len(),
            counters,
            own_log,
        }
    }

    /// One `summary.csv` row: the experiment's parameters and what it measured, with 95%
    /// intervals by sectioning where the runtime reports sections.
    pub fn summary_row(&self, m: &Measured, commit: &str) -> SummaryRow {
        let (groups, replicas, clients) = self.deploy.shape();
        let (slot_bytes, slots) = self.deploy.slots();
        let sim = |name: &str| {
            if self.runtime == Runtime::Sim {
                name.to_string()
            } else {
                "-".into()
            }
        };
        let (p50, p50_ci) = m.latency_ci(0.5);
        let (p95, p95_ci) = m.latency_ci(0.95);
        let tput_ci = m.throughput_ci();
        SummaryRow {
            protocol: self.deploy.protocol().into(),
            tree: self.tree_name(),
            runtime: self.runtime_name().into(),
            profile: sim(&self.profile.name),
            software: sim(&self.software.name),
            seed: self.seed,
            commit: commit.into(),
            groups,
            replicas,
            clients,
            size: self.size,
            dest: self.dest.to_string(),
            warmup_s: self.warmup.as_secs_f64(),
            duration_s: m.window.as_secs_f64(),
            slot_bytes,
            slots,
            delivered: m.delivered,
            throughput_msgs_per_s: m.throughput,
            throughput_ci95_lo: tput_ci.map(|c| c.0),
            throughput_ci95_hi: tput_ci.map(|c| c.1),
            lat_p50_us: p50,
            lat_p50_ci95_lo: p50_ci.map(|c| c.0),
            lat_p50_ci95_hi: p50_ci.map(|c| c.1),
            lat_p95_us: p95,
            lat_p95_ci95_lo: p95_ci.map(|c| c.0),
            lat_p95_ci95_hi: p95_ci.map(|c| c.1),
            lat_p99_us: m.latency.value_at_quantile(0.99) as f64 / 1000.0,
            leader_changes: m.leader_changes,
        }
    }
}

/// A row of `summary.csv` (`harness run --out`) and of the figures' run tables.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SummaryRow {
    protocol: String,
    /// The overlay tree (`-` for genuine protocols), its commas written as `;`.
    tree: String,
    runtime: String,
    profile: String,
    software: String,
    seed: u64,
    commit: String,
    groups: usize,
    replicas: usize,
    clients: usize,
    size: usize,
    dest: String,
    warmup_s: f64,
    duration_s: f64,
    slot_bytes: usize,
    slots: usize,
    delivered: u64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    throughput_msgs_per_s: f64,
    #[serde(serialize_with = "crate::stats::precision::opt_rate")]
    throughput_ci95_lo: Option<f64>,
    #[serde(serialize_with = "crate::stats::precision::opt_rate")]
    throughput_ci95_hi: Option<f64>,
    lat_p50_us: f64,
    #[serde(serialize_with = "crate::stats::precision::opt_us")]
    lat_p50_ci95_lo: Option<f64>,
    #[serde(serialize_with = "crate::stats::precision::opt_us")]
    lat_p50_ci95_hi: Option<f64>,
    lat_p95_us: f64,
    #[serde(serialize_with = "crate::stats::precision::opt_us")]
    lat_p95_ci95_lo: Option<f64>,
    #[serde(serialize_with = "crate::stats::precision::opt_us")]
    lat_p95_ci95_hi: Option<f64>,
    lat_p99_us: f64,
    leader_changes: usize,
}

impl std::fmt::Display for SummaryRow {
    /// The row as a reader wants it in an error message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} on {} (profile {}, software {}, seed {}): {} group(s) x {} replicas, {} client(s), \
             {} B to {}, {} s after {} s of warm-up: {} delivered, p50 {} us",
            self.protocol,
            self.runtime,
            self.profile,
            self.software,
            self.seed,
            self.groups,
            self.replicas,
            self.clients,
            self.size,
            self.dest,
            self.duration_s,
            self.warmup_s,
            self.delivered,
            self.lat_p50_us
        )
    }
}

/// Writes a latency CDF: `latency_us,fraction` at every recorded value.
pub fn write_cdf(path: &Path, h: &Histogram<u64>) -> Result<(), String> {
    #[derive(serde::Serialize)]
    struct Row {
        latency_us: f64,
        #[serde(serialize_with = "crate::stats::precision::fraction")]
        fraction: f64,
    }
    let total = h.len().max(1) as f64;
    let mut seen = 0u64;
    let rows: Vec<Row> = h
        .iter_recorded()
        .map(|v| {
            seen += v.count_at_value();
            Row {
                latency_us: v.value_iterated_to() as f64 / 1000.0,
                fraction: seen as f64 / total,
            }
        })
        .collect();
    write_rows(path, &rows)
}

/// Writes `summary.csv` (or a figure's run table) with its header and `rows`.
pub fn write_summary(path: &Path, rows: &[SummaryRow]) -> Result<(), String> {
    write_rows(path, rows)
}

/// `header` and `rows` as CSV text through the `csv` crate (a field holding a comma or a
/// quote is quoted): for a table whose columns are only known at run time; a table with fixed
/// columns is a `serde::Serialize` row written with [`write_rows`].
pub fn csv_table<R, F>(header: &[&str], rows: impl IntoIterator<Item = R>) -> String
where
    R: IntoIterator<Item = F>,
    F: AsRef<[u8]>,
{
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).expect("writing to memory");
    for r in rows {
        w.write_record(r).expect("writing to memory");
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("the fields are UTF-8")
}

/// Writes `rows` to the CSV file `path`, a header first.
pub fn write_rows<R: serde::Serialize>(path: &std::path::Path, rows: &[R]) -> Result<(), String> {
    let err = |e: csv::Error| format!("cannot write {}: {e}", path.display());
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    for r in rows {
        w.serialize(r).map_err(err)?;
    }
    w.flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// CPU time this process used so far (user + system), from /proc; `None` where unavailable.
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux configuration we target.
    Some(Duration::from_millis(ticks * 10))
}

/// Parses a byte count: a number with an optional unit B, KB, MB, GB (powers of 1024, as the
/// paper's MB; KiB, MiB, GiB are accepted too).
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "`{s}` is not a size: use a number with an optional unit B, KB, MB or GB (powers of 1024), like 256MB or 4096"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size: the number part `{num}` does not parse"))?;
    let bytes = v * mult as f64;
    if !(bytes >= 1.0 && bytes <= (16u64 << 30) as f64) || bytes.fract() != 0.0 {
        return Err(format!(
            "size `{s}` must be a whole number of bytes between 1 B and 16 GB"
        ));
    }
    Ok(bytes as usize)
}

/// Parses a duration flag (`10s`, `500ms`, `200us`, `1500ns`; see [`Nanos::from_str`]),
/// positive and at most an hour ([`bounded_duration`]).
///
/// [`Nanos::from_str`]: std::str::FromStr::from_str
pub fn parse_duration(s: &str) -> Result<Nanos, String> {
    bounded_duration(s.parse()?)
}

/// `d` if it is positive and at most an hour, as every duration a command takes must be.
pub fn bounded_duration(d: Nanos) -> Result<Nanos, String> {
    if d == Nanos::ZERO || d > Nanos::from_secs(3_600) {
        return Err(format!(
            "duration `{}` must be positive and at most one hour",
            d.exact()
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row keeps the digits `format!` gave it (`1.500`, `22544`) while a label with a comma
    /// stays one field.
    #[test]
    fn rows_keep_their_digits_and_quote_labels() {
        #[derive(serde::Serialize)]
        struct Row {
            label: &'static str,
            #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
            x: f64,
            #[serde(serialize_with = "crate::stats::precision::display")]
            published: f64,
            formula: Option<u64>,
        }
        let path = std::env::temp_dir().join(format!("rows-{}.csv", std::process::id()));
        let rows = [Row {
            label: "one protocol (8 groups, all)",
            x: 1.5,
            published: 22544.0,
            formula: None,
        }];
        write_rows(&path, &rows).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            text,
            "label,x,published,formula\n\"one protocol (8 groups, all)\",1.500,22544,\n"
        );
        assert_eq!(
            csv_table(&["x", "variant"], [["64", "a, b"]]),
            "x,variant\n64,\"a, b\"\n"
        );
    }

    #[test]
    fn byte_counts_parse_with_units_and_refuse_garbage() {
        assert_eq!(parse_bytes("256MB"), Ok(256 << 20));
        assert_eq!(parse_bytes("1 MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("64kb"), Ok(64 << 10));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("0.5KB"), Ok(512));
        for bad in ["", "0", "12 parsecs", "-3", "1.3", "20GB"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn this_process_cpu_time_grows_as_it_works() {
        let Some(before) = process_cpu() else {
            return; // a platform without /proc
        };
        // Spin until the clock ticks; the bound only keeps a broken reading from hanging.
        let wall = std::time::Instant::now();
        let mut x = 0u64;
        while process_cpu().is_some_and(|now| now <= before)
            && wall.elapsed() < Duration::from_secs(20)
        {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(process_cpu().unwrap() > before, "CPU time stood still");
    }
}
