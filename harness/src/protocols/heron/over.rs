//! Heron over several atomic multicast protocols, side by side: `harness compare --protocols
//! heron:ramcast,heron:ridge` and the figure `heron-over`. The same TPC-C (seed, partitions,
//! replicas, clients bound to the same warehouses, the same request streams), profile and
//! software profile over each multicast; for each, one client's latency, then the clients
//! doubled until two doublings in a row raise throughput by less than 5%. Nobody has
//! published Heron over anything but RamCast, so the figure has no claims to judge: it is the
//! comparison issue 15 asks for, with the thesis's own setup.
//!
//! TRAM is absent: Heron tags object versions and coordination words with the multicast's
//! order timestamp, and TRAM orders along its tree without one (the `heron` crate's docs,
//! "Over which multicast").

use super::experiment::{Setup, Workload};
use super::figures::{measure, saturate, Point};
use super::Over;
use crate::compare::cdf_rows;
use crate::experiment::write_rows;
use crate::figure::{cdf_points, panel, us, write, NO_CLAIMS};
use crate::plot::{self, Series};
use crate::protocols::Making;
use crate::runtime::Runtime;
use hdrhistogram::Histogram;
use heron::tpcc::Scale;
use heron::{Tpcc, Window};
use std::fmt::Write as _;
use std::path::Path;
use transport::runtime::sim::{Profile, SimConfig, Software};
use transport::Nanos;

/// What every multicast gets.
#[derive(Clone, Debug)]
pub(crate) struct Comparison {
    /// Partitions (one warehouse each).
    pub(crate) partitions: usize,
    /// Replicas per partition.
    pub(crate) replicas: usize,
    /// Measured time per throughput point, after a 10% warm-up (the 1-client run gets twice
    /// as long).
    pub(crate) duration: Nanos,
    /// Seed of every run: the clients' request streams and the database.
    pub(crate) seed: u64,
    /// The saturation sweep stops here even if throughput still grows.
    pub(crate) max_clients: usize,
    /// TPC-C's size: 1/`scale` of the specification's cardinalities, `capacity` order rows per
    /// district (doubled for a point whose districts run out).
    pub(crate) scale: Scale,
    /// The simulator's profile.
    pub(crate) profile: Profile,
    /// The software profile.
    pub(crate) software: Software,
}

/// A multicast's measurements.
struct Measured {
    over: Over,
    /// The 1-client run.
    one: Point,
    /// The saturation sweep.
    points: Vec<Point>,
    /// Whether the sweep saturated before the client cap.
    saturated: bool,
}

impl Measured {
    /// The sweep's point of highest throughput.
    fn peak(&self) -> &Point {
        self.points
            .iter()
            .max_by(|a, b| a.s.throughput(&a.o).total_cmp(&b.s.throughput(&b.o)))
            .expect("a sweep has a point")
    }
}

/// Every request's latency of a point.
fn all(p: &Point) -> Histogram<u64> {
    p.o.latencies(None)
}

/// TPC-C at 1/`SCALE` of the specification's cardinalities, as in the thesis's figures here.
pub(crate) const SCALE: u64 = 100;
/// Order rows per district (doubled for a point whose districts run out).
pub(crate) const CAPACITY: u64 = 400;
/// Measured time per point when `--duration` is not given: 20 ms, twenty of Ridge's Delta.
pub(crate) const DEFAULT_DURATION: Nanos = Nanos(20_000_000);

/// What every summary of a Heron comparison says after its table.
pub(crate) const NOTES: &str = "Every point's database passed TPC-C's consistency conditions \
     3.3.2.1-3.3.2.12 (a point that failed them would have stopped the comparison). A maximum \
     marked \"still growing\" stopped at the client cap: a lower bound. Over Ridge, `e_all`'s \
     acceptors sit in partition 0 (so a minority of each partition may fail, as Heron \
     allows), Delta is the paper's 1 ms, and an idle ensemble's null messages pace \
     deliveries: a learner merges its partition's ensemble with `e_all` and delivers a message \
     once both have shown a later timestamp. TRAM is absent: Heron tags object versions with \
     the multicast's order timestamp, and TRAM has none.\n";

impl Comparison {
    /// The paragraph that says what every multicast ran.
    pub(crate) fn describe(&self) -> String {
        format!(
            "Heron with TPC-C (the specification's mix, dealt per client; clients bound to \
             warehouses round robin; 1/{} of the cardinalities, {} order rows per district) \
             over each multicast, the same seed {}, {} partitions of {} replicas, profile `{}` \
             and software `{}` on the simulator. Latency at 1 client: {} of simulated time. \
             Throughput: clients doubled from 1 until two doublings in a row raised it by less \
             than 5% (at most {}), {} per point after a 10% warm-up; \"at max\" is the point of \
             highest throughput. Files: `runs.csv` (every run, per kind of transaction, \
             single- and multi-partition apart), `latency_cdf.csv`, and the PNG.\n",
            SCALE,
            self.scale.capacity,
            self.seed,
            self.partitions,
            self.replicas,
            self.profile.name,
            self.software.name,
            Nanos(self.duration.as_nanos() * 2),
            self.max_clients,
            self.duration
        )
    }

    /// One run over `over` with `clients` clients for `duration`.
    fn setup(&self, over: Over, clients: usize, duration: Nanos) -> Setup {
        let mut sim = SimConfig::new(self.seed, self.profile.clone());
        sim.software = self.software.clone();
        let warmup = Nanos(duration.as_nanos() / 10);
        Setup {
            cfg: heron::Config::new(self.partitions, self.replicas, clients),
            over,
            slots: 16,
            slot_bytes: None,
            workload: Workload::Tpcc(Tpcc::new(self.partitions, self.scale, self.seed)),
            window: Window {
                warmup_end: warmup,
                stop_at: warmup.saturating_add(duration),
            },
            runtime: Runtime::Sim,
            sim,
        }
    }

    /// Checks that every multicast can run it, before anything runs.
    fn validate(&self, overs: &[Over]) -> Result<(), String> {
        if overs.is_empty() {
            return Err("--protocols names no multicast for Heron".into());
        }
        for (i, o) in overs.iter().enumerate() {
            if overs[..i].contains(o) {
                return Err(format!("--protocols names heron:{} twice", o.name()));
            }
            self.setup(*o, 1, self.duration)
                .validate()
                .map_err(|e| format!("heron:{}: {e}", o.name()))?;
        }
        if self.max_clients == 0 {
            return Err("--max-clients must be at least 1".into());
        }
        Ok(())
    }
}

/// The multicast's column of `latency_cdf.csv`, before the points of its CDFs
/// ([`crate::compare::cdf_rows`]).
#[derive(Clone, Copy, serde::Serialize)]
struct MulticastColumn {
    multicast: &'static str,
}

/// Runs the comparison and writes `runs.csv`, `latency_cdf.csv`, `png` and `summary.md` into
/// `out`; returns the summary's table, the part every caller prints.
pub(crate) fn compare(
    c: &Comparison,
    overs: &[Over],
    out: &Path,
    png: &str,
    commit: &str,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<String, String> {
    c.validate(overs)?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let measured = crate::figure::in_parallel(overs, |&over| {
        let (s, o) = measure(c.setup(over, 1, Nanos(c.duration.as_nanos() * 2)))?;
        let sweep = saturate(|n| c.setup(over, n, c.duration), 1, c.max_clients, progress)?;
        progress(&format!("heron over {} done", over.name()));
        Ok(Measured {
            over,
            one: Point { s, o },
            points: sweep.points,
            saturated: sweep.saturated,
        })
    })?;
    let mut rows = Vec::new();
    let mut cdf_csv = Vec::new();
    for m in &measured {
        for p in std::iter::once(&m.one).chain(&m.points) {
            rows.extend(p.s.rows(&p.o, "tpcc", commit));
        }
        let peak = m.peak();
        cdf_csv.extend(cdf_rows(
            MulticastColumn {
                multicast: m.over.name(),
            },
            (m.one.s.cfg.clients, &all(&m.one)),
            (peak.s.cfg.clients, &all(peak)),
        ));
    }
    write_rows(&out.join("runs.csv"), &rows)?;
    write_rows(&out.join("latency_cdf.csv"), &cdf_csv)?;
    let series = |m: &Measured, points: Vec<(f64, f64)>| Series::new(m.over.name(), points);
    // Log latency: Ridge at low load waits about Delta (1 ms), RamCast tens of microseconds.
    let mut curves = panel(
        "throughput-latency (clients doubled to saturation)",
        "throughput (k requests/s)",
        "median latency (us, log)",
        measured
            .iter()
            .map(|m| {
                let pts = m
                    .points
                    .iter()
                    .map(|p| (p.s.throughput(&p.o) / 1e3, us(&all(p), 0.5)))
                    .collect();
                series(m, pts)
            })
            .collect(),
    );
    curves.log_y = true;
    plot::draw_png(
        &out.join(png),
        &format!(
            "Heron TPC-C over {} on sim ({}, software {}): {} partitions x {}",
            measured
                .iter()
                .map(|m| m.over.name())
                .collect::<Vec<_>>()
                .join(" vs "),
            c.profile.name,
            c.software.name,
            c.partitions,
            c.replicas
        ),
        &[
            curves,
            panel(
                "latency CDF, 1 client",
                "latency (us)",
                "fraction",
                measured
                    .iter()
                    .map(|m| series(m, cdf_points(&all(&m.one))))
                    .collect(),
            ),
            panel(
                "latency CDF at saturation",
                "latency (us)",
                "fraction",
                measured
                    .iter()
                    .map(|m| series(m, cdf_points(&all(m.peak()))))
                    .collect(),
            ),
        ],
    )?;
    let table = table(&measured);
    Ok(table)
}

/// The comparison's table: per multicast, 1-client latency, maximum throughput and latency
/// there, and each over the first multicast's.
fn table(measured: &[Measured]) -> String {
    let mut md = String::from(
        "| multicast | 1 client mean / p50 / p99 (us) | max throughput (k requests/s) | clients at max | p50 / p99 at max (us) | multi-partition mean at max (us) | throughput / first | 1-client mean / first |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let first = &measured[0];
    let max = |m: &Measured| m.peak().s.throughput(&m.peak().o);
    for m in measured {
        let (one, peak) = (all(&m.one), m.peak());
        let at = all(peak);
        let multi = peak.o.latencies(Some(1));
        let _ = writeln!(
            md,
            "| {} | {:.1} / {:.1} / {:.1} | {:.1}{} | {} | {:.1} / {:.1} | {} | {:.2} | {:.2} |",
            m.over.name(),
            one.mean() / 1e3,
            us(&one, 0.5),
            us(&one, 0.99),
            max(m) / 1e3,
            if m.saturated { "" } else { " (still growing)" },
            peak.s.cfg.clients,
            us(&at, 0.5),
            us(&at, 0.99),
            if multi.is_empty() {
                "-".to_string()
            } else {
                format!("{:.1}", multi.mean() / 1e3)
            },
            max(m) / max(first),
            one.mean() / all(&first.one).mean(),
        );
    }
    md
}

/// `heron`, `heron:ramcast` or `heron:ridge` as `compare --protocols` names it.
pub(crate) fn parse(name: &str) -> Result<Over, String> {
    match name.split_once(':').map_or("ramcast", |(_, v)| v) {
        "ramcast" => Ok(Over::Ramcast),
        "ridge" => Ok(Over::Ridge),
        "tram" => Err("heron:tram: Heron needs an order timestamp per delivery to tag object versions, and TRAM orders along its tree without one; compare heron:ramcast,heron:ridge".into()),
        v => Err(format!("heron:{v}: Heron runs over ramcast or ridge (heron:ramcast, heron:ridge)")),
    }
}

/// `harness compare --protocols heron:...` as the registry calls it: refuses the flags of a
/// multicast comparison, then compares Heron's TPC-C over each multicast named.
pub(super) fn compare_command(
    a: &crate::CompareArgs,
    contenders: &[String],
) -> Result<std::process::ExitCode, String> {
    if a.delta.is_some() {
        return Err(
            "--delta sets Ridge's Delta in a multicast comparison; Heron over Ridge keeps \
             Ridge's default, as `harness run --protocol heron` does"
                .into(),
        );
    }
    if a.dest.is_some() || a.size.is_some() {
        return Err(
            "--dest and --size are not for heron: TPC-C decides where its requests go \
             and what they carry"
                .into(),
        );
    }
    let overs = contenders
        .iter()
        .map(|p| parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    command(a, &overs, crate::COMMIT)
}

/// Heron's TPC-C over each multicast in `overs`, side by side.
pub(crate) fn command(
    a: &crate::CompareArgs,
    overs: &[Over],
    commit: &str,
) -> Result<std::process::ExitCode, String> {
    let c = Comparison {
        partitions: a.groups,
        replicas: a.replicas,
        duration: a.duration.unwrap_or(DEFAULT_DURATION),
        seed: a.seed,
        max_clients: a.max_clients,
        scale: Scale::scaled(SCALE, CAPACITY),
        profile: Profile::load(a.profile.as_deref().unwrap_or(crate::testbed::HERON))
            .map_err(|e| e.to_string())?,
        software: Software::load(&a.software).map_err(|e| e.to_string())?,
    };
    let labels: Vec<String> = overs
        .iter()
        .map(|o| format!("heron:{}", o.name()))
        .collect();
    let name = a.name.clone().unwrap_or_else(|| {
        format!(
            "heron-tpcc-{}x{}{}",
            c.partitions,
            c.replicas,
            if c.software.name == transport::runtime::sim::DEFAULT_SOFTWARE {
                String::new()
            } else {
                format!("-{}", c.software.name)
            }
        )
    });
    let out = a.out.join(name);
    println!(
        "harness compare: protocols={} app=tpcc partitions={} replicas={} duration={} runtime=sim profile={} software={} seed={} commit={commit} out={}",
        labels.join(","),
        c.partitions,
        c.replicas,
        c.duration,
        c.profile.name,
        c.software.name,
        c.seed,
        out.display()
    );
    let table = compare(&c, overs, &out, "compare.png", commit, &|l: &str| {
        println!("{l}")
    })?;
    let md = format!(
        "# Comparison: {}\n\nCommand: `harness compare --protocols {} --groups {} --replicas {} \
         --duration {} --seed {} --profile {} --software {} --max-clients {}` (commit \
         {commit}).\n\n{}\n{table}\n{}",
        labels.join(" vs "),
        labels.join(","),
        c.partitions,
        c.replicas,
        c.duration,
        c.seed,
        c.profile.name,
        c.software.name,
        c.max_clients,
        c.describe(),
        NOTES
    );
    write(&out.join("summary.md"), &md)?;
    print!("{md}");
    println!("wrote {}/summary.md", out.display());
    Ok(std::process::ExitCode::SUCCESS)
}

/// The figure `heron-over`: the thesis's TPC-C setup (4 partitions of 3 replicas,
/// `xl170-cx4`) over RamCast and over Ridge.
pub(crate) fn figure(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, quick, software, progress) = m.parts();
    let c = Comparison {
        partitions: 4,
        replicas: 3,
        duration: if quick {
            Nanos(5_000_000)
        } else {
            DEFAULT_DURATION
        },
        seed: 1,
        max_clients: if quick { 8 } else { 256 },
        scale: Scale::scaled(SCALE, CAPACITY),
        profile: Profile::load(crate::testbed::HERON).map_err(|e| e.to_string())?,
        software: software.clone(),
    };
    let overs = [Over::Ramcast, Over::Ridge];
    let table = compare(&c, &overs, out, "heron-over.png", commit, progress)?;
    let md = format!(
        "# Heron over RamCast and over Ridge, on the simulator\n\n\
         Command: `harness figure heron-over` (commit {commit}); the same as `harness compare \
         --protocols heron:ramcast,heron:ridge --groups {} --software {}`.\n\n{}\n{table}\n{NOTES}\n\
         ## Claims\n\n\
         {NO_CLAIMS}: there is no such figure at all, nobody has published Heron over another \
         multicast (the thesis runs it over RamCast only). The RamCast row is the thesis's \
         setup; `heron-table5.1` holds it against the thesis's throughput.\n\n\
         ## Discussion\n\n\
         - **Why Ridge pays Delta at low load.** A Ridge learner delivers a message once every \
         ensemble it merges (its partition's and `e_all`) has shown a later timestamp; an idle \
         ensemble shows one only with the null message its coordinator proposes Delta after its \
         last proposal. One client's requests leave the other ensembles idle, so each waits \
         about Delta. Under load every ensemble proposes often and the wait shrinks. The Ridge paper \
         says as much (its latency analysis: \"it may be necessary to wait for Delta ... more \
         rounds\") and runs Delta = 1 ms, which this figure keeps; a smaller Delta trades \
         null messages for latency.\n\
         - **Where the two spend their time.** RamCast orders a multi-partition message with \
         one round of timestamp exchange among the destination groups' leaders, written \
         directly into the followers' memory; Ridge runs Paxos in the ensembles and a \
         deterministic merge, with its messages over the same RDMA writes (Ridge's mesh). \
         Heron's own work (coordination, execution, remote reads) is the same over both.\n",
        c.partitions,
        c.software.name,
        c.describe(),
    );
    // No claims: an empty `claims.csv` says so to the results index.
    crate::verdict::write(out, &[])?;
    write(&out.join("summary.md"), &md)
}
