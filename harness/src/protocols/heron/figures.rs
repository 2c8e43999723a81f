//! `harness figure heron-fig5.4 | heron-fig5.5 | heron-table5.1 | heron-table5.2`: the Heron
//! thesis's evaluation (section 5.3) on the simulator, profile `xl170-cx4` (the thesis's
//! testbed), Heron over RamCast, with CSV, PNG and a summary beside the thesis's numbers.
//!
//! Choices the thesis leaves open, said once here and in every summary:
//! - **Database size.** TPC-C at 1/100 of the specification's cardinalities (1,000 items, 30
//!   customers per district) with room for 400 orders per district in the throughput tables
//!   and 2,000 in the 1-client figures. The simulator prices work per row read or written, not
//!   per row stored, so a smaller table changes no latency; it keeps a 16-partition run's
//!   start-up (every row of every replica written) to seconds. A point whose districts ran out
//!   of order rows (`Status::Full` answers are cheaper New-Orders) runs again with twice the
//!   rows; `summary.csv` gives each point's capacity.
//! - **Partitions of Figure 5.5** (not stated): 4, each transaction type alone, 1 client.
//! - **Figure 5.4's 35.4 us** is read as New-Orders that all span two partitions (the thesis's
//!   "about 35 us" for multi-partition transactions); the figure also shows 1 and 4
//!   partitions and the unmodified TPC-C New-Order on 4.
//! - **Ordering** in the breakdowns is what is left of a request's latency after the replica's
//!   coordination (phases 2 and 4) and execution (phase 3): the multicast, and the response's
//!   write back to the client.
//! - **Table 5.2** waits for every replica in phase 4 (an extra wait of 1 ms, which no healthy
//!   run reaches) and counts a multi-partition request as delayed at a replica when a majority
//!   of every involved partition had executed it and not every replica yet; the share is of
//!   all the transactions the partition's replicas executed, as the thesis's "percentage of
//!   delayed transactions" (only multi-partition ones can be delayed; their share is detail).
//! - **Maximum throughput** is the highest of a sweep that doubles the clients until two
//!   doublings in a row raise it by less than 5%; the latency reported beside it is that of the knee, the
//!   sweep's first point within 5% of the maximum (the maximum itself may have doubled the
//!   clients for a last 4% and queued them all).

use super::experiment::{Outcome, Setup, Workload};
use super::Over;
use crate::experiment::write_rows;
use crate::experiment::Where;
use crate::figure::{panel, write, TABLE_HEAD};
use crate::plot::{self, Series};
use crate::protocols::PaperFigure;
use crate::verdict::{self, Claim, Measure, Verdict};
use heron::tpcc::{self, Kind, Mix, Scale};
use heron::{Tpcc, Window};
use std::fmt::Write as _;
use std::path::Path;
use transport::runtime::sim::{Profile, SimConfig, Software};
use transport::Nanos;

/// Heron's figures.
pub(crate) const FIGURES: &[PaperFigure] = &[
    PaperFigure {
        name: "heron-table5.1",
        about: "Heron Table 5.1 (Fig. 5.2): maximum throughput with 1-16 partitions for null requests, TPC-C and local-only TPC-C, and the scaling factors",
        profile: crate::testbed::HERON,
        software: "heron-java",
        make: table5_1,
    },
    PaperFigure {
        name: "heron-fig5.4",
        about: "Heron Fig. 5.4: New-Order latency with 1 client, broken into ordering, coordination and execution, over 1, 2 and 4 partitions",
        profile: crate::testbed::HERON,
        software: "heron-java",
        make: fig5_4,
    },
    PaperFigure {
        name: "heron-fig5.5",
        about: "Heron Fig. 5.5: latency of each TPC-C transaction type with 1 client, single- and multi-partition apart",
        profile: crate::testbed::HERON,
        software: "heron-java",
        make: fig5_5,
    },
    PaperFigure {
        name: "heron-table5.2",
        about: "Heron Table 5.2: delayed transactions and delays when coordination waits for every replica, 2 and 4 partitions, 3 and 5 replicas",
        profile: crate::testbed::HERON,
        software: "heron-java",
        make: table5_2,
    },
    PaperFigure {
        name: "heron-fig5.6",
        about: "Heron Fig. 5.6: state transfer latency against size, from the protocol alone (no data) to a warehouse's serialized data (105.3 MB)",
        profile: crate::testbed::HERON,
        software: "heron-java",
        make: super::transfer::fig5_6,
    },
    PaperFigure {
        name: "heron-over",
        about: "Heron's TPC-C over RamCast and over Ridge, side by side (4 partitions x 3): 1-client latency, throughput to saturation, latency CDFs; no published numbers",
        profile: crate::testbed::HERON,
        software: "heron-java",
        make: super::over::figure,
    },
];

/// The seed of every point.
const SEED: u64 = 1;
/// TPC-C at 1/`SCALE` of the specification's cardinalities (see the module docs).
const SCALE: u64 = 100;
/// Order rows per district in the throughput tables (short runs spread over many districts).
const CAPACITY: u64 = 400;
/// Order rows per district in the 1-client figures (a 1-partition New-Order loop makes about
/// 350 orders per district in 20 ms without software cost).
const CAPACITY_ONE_CLIENT: u64 = 2_000;
/// RamCast's slots per client buffer (`harness run`'s default).
const SLOTS: usize = 16;
/// Figure 5.5's partitions (see the module docs).
const FIG5_5_PARTITIONS: usize = 4;
/// An extra wait no healthy run reaches: coordination waits for every replica (Table 5.2).
const WAIT_FOR_ALL: Nanos = Nanos(1_000_000);

/// TPC-C over `partitions` warehouses at the figures' scale, `capacity` order rows per district.
fn tpcc(partitions: usize, capacity: u64) -> Tpcc {
    Tpcc::new(partitions, Scale::scaled(SCALE, capacity), SEED)
}

/// The thesis's testbed profile, once `out` exists.
fn start(out: &Path) -> Result<Profile, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    testbed()
}

/// The thesis's testbed profile.
fn testbed() -> Result<Profile, String> {
    Profile::load(crate::testbed::HERON).map_err(|e| e.to_string())
}

/// A run of `workload` on the simulator: `duration` measured after a warm-up of a tenth of it.
fn setup(
    profile: &Profile,
    software: &Software,
    cfg: heron::Config,
    workload: Workload,
    duration: Nanos,
) -> Setup {
    let mut sim = SimConfig::new(SEED, profile.clone());
    sim.software = software.clone();
    let warmup = Nanos(duration.as_nanos() / 10);
    Setup {
        cfg,
        over: Over::Ramcast,
        slots: SLOTS,
        slot_bytes: None,
        workload,
        window: Window {
            warmup_end: warmup,
            stop_at: warmup.saturating_add(duration),
        },
        runtime: Where::Sim,
        sim,
    }
}

/// Runs one point: refused if nothing completed or if TPC-C's consistency conditions fail on
/// the database the replicas end with. A point whose districts ran out of order rows (their
/// New-Orders answered `Status::Full`, cheaper than real ones) runs again with twice the rows,
/// so the rows a run needs are paid for only where it needs them; the setup returned says
/// which capacity counted.
pub(super) fn measure(mut s: Setup) -> Result<(Setup, Outcome), String> {
    loop {
        let o = s.run()?;
        let what = || {
            format!(
                "{} partitions x {} replicas, {} clients, software {}",
                s.cfg.partitions, s.cfg.replicas, s.cfg.clients, s.sim.software.name
            )
        };
        if o.latencies(None).is_empty() {
            return Err(format!(
                "a figure point completed no request in its window ({}); replay it with `harness run --protocol heron`",
                what()
            ));
        }
        let Workload::Tpcc(t) = &s.workload else {
            return Ok((s, o));
        };
        let bad = tpcc::consistency::check(t, &o.database);
        if !bad.is_empty() {
            return Err(format!(
                "TPC-C consistency conditions violated ({}): {}",
                what(),
                bad.join("; ")
            ));
        }
        if tpcc::full_districts(t, &o.database) == 0 {
            return Ok((s, o));
        }
        let scale = t.scale();
        let more = Scale {
            capacity: scale.capacity * 2,
            ..scale
        };
        s.workload = Workload::Tpcc(t.clone().with_scale(more));
    }
}

/// A measured point.
pub(super) struct Point {
    pub(super) s: Setup,
    pub(super) o: Outcome,
}

/// A sweep's points, and whether it saturated (rather than stopping at its client cap).
pub(super) struct Sweep {
    pub(super) points: Vec<Point>,
    pub(super) saturated: bool,
}

/// Doubles the clients from `first` until two doublings in a row raise the best throughput by
/// less than 5% (a single one can sit on a plateau that more clients leave: RamCast handles
/// more messages per poll under more load), or until `cap`; returns every point.
pub(super) fn saturate(
    mk: impl Fn(usize) -> Setup + Sync,
    first: usize,
    cap: usize,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Sweep, String> {
    // Saturated once two doublings in a row add no more than 5% to the best so far.
    let flat = |points: &[Point]| {
        let mut best = 0.0;
        let mut flat = 0;
        for p in points {
            let t = p.s.throughput(&p.o);
            flat = if t > best * 1.05 { 0 } else { flat + 1 };
            best = f64::max(best, t);
        }
        flat
    };
    let points = crate::figure::doubling(
        crate::figure::measures_ahead(),
        first,
        cap,
        |clients| measure(mk(clients)).map(|(s, o)| Point { s, o }),
        |points| flat(points) < 2,
        |clients, Point { s, o }| {
            progress(&format!(
                "  partitions={} replicas={} clients={clients}: {:.0} requests/s, mean {:.1} us",
                s.cfg.partitions,
                s.cfg.replicas,
                s.throughput(o),
                o.latencies(None).mean() / 1e3
            ))
        },
    )?;
    let saturated = flat(&points) == 2;
    Ok(Sweep { points, saturated })
}

/// The highest throughput of a sweep, and its knee: the first point within 5% of it.
fn best(points: &[Point]) -> (f64, &Point) {
    let max = points
        .iter()
        .map(|p| p.s.throughput(&p.o))
        .fold(0.0, f64::max);
    let knee = points
        .iter()
        .find(|p| p.s.throughput(&p.o) >= 0.95 * max)
        .expect("a sweep has a point");
    (max, knee)
}

/// A 95% confidence interval, where one was measured.
type Interval = Option<(f64, f64)>;

/// The highest throughput of a sweep with the 95% interval of its knee band
/// ([`crate::stats::plateau`]).
fn peak(points: &[Point]) -> Measure {
    let v: Vec<_> = points
        .iter()
        .map(|p| (p.s.throughput(&p.o), p.s.throughput_ci(&p.o)))
        .collect();
    let (max, ci) = crate::stats::plateau(&v);
    Measure::within(max, ci)
}

/// Whether `software` is a rows-only fit (`heron-java`): its row price was fitted to Figure
/// 5.4's execution stage.
fn fitted(software: &Software) -> bool {
    software
        .calibration
        .fit
        .as_ref()
        .is_some_and(|f| f.rows_only)
}

/// The head every Heron summary starts with: profile, software and the choices of the module
/// docs.
fn preamble(md: &mut String, title: &str, name: &str, commit: &str, software: &Software) {
    let _ = writeln!(
        md,
        "# {title}, reproduced on the simulator\n\n\
         Command: `harness figure {name}` (commit {commit}). Heron over RamCast on `sim`, \
         profile `{}` (calibrated on ib_write_lat and ib_write_bw only), software `{}` v{} \
         ({}), seed {SEED}. TPC-C at 1/{SCALE} of the specification's cardinalities with \
         {CAPACITY} (throughput tables) or {CAPACITY_ONE_CLIENT} (1-client figures) order rows \
         per district, doubled for a point whose districts ran out (see each row of \
         `summary.csv`): the simulator prices work per row touched, not per row stored, so \
         table sizes move no latency here. Every TPC-C point's database passed the consistency \
         conditions 3.3.2.1-3.3.2.12, with no district out of order rows.\n",
        crate::testbed::HERON,
        software.name,
        software.version,
        software.describe(),
    );
}

/// Mean of the request latencies of `o` in microseconds.
fn mean_us(o: &Outcome, span: Option<usize>) -> f64 {
    o.latencies(span).mean() / 1e3
}

/// Figure 5.4's four workloads: label (no commas: it is a CSV field), partitions, partitions
/// every New-Order spans (`None`: TPC-C's own 1% remote order lines).
const FIG5_4: [(&str, usize, Option<usize>); 4] = [
    ("1 WH", 1, Some(1)),
    ("2 WH (New-Orders over 2)", 2, Some(2)),
    ("4 WH (New-Orders over 4)", 4, Some(4)),
    ("TPC-C New-Order (4 WH)", 4, None),
];

/// Average latency broken into ordering, coordination and execution (us).
#[derive(Clone, Copy, Debug)]
struct Breakdown {
    total: f64,
    ordering: f64,
    coordination: f64,
    execution: f64,
}

fn breakdown(o: &Outcome) -> Breakdown {
    let c = o.counters();
    let per = |ns: u64| ns as f64 / c.executed.max(1) as f64 / 1e3;
    let (coordination, execution) = (per(c.coordinating_ns), per(c.executing_ns));
    let total = mean_us(o, None);
    Breakdown {
        total,
        ordering: total - coordination - execution,
        coordination,
        execution,
    }
}

/// One workload of Figure 5.4, 1 client, measured.
fn fig5_4_point(
    profile: &Profile,
    software: &Software,
    (partitions, spanning): (usize, Option<usize>),
    duration: Nanos,
) -> Result<(Setup, Outcome, Breakdown), String> {
    let mut t = tpcc(partitions, CAPACITY_ONE_CLIENT).with_mix(Mix::only(Kind::NewOrder));
    if let Some(k) = spanning {
        t = t.spanning(k);
    }
    let s = setup(
        profile,
        software,
        heron::Config::new(partitions, 3, 1),
        Workload::Tpcc(t),
        duration,
    );
    let (s, o) = measure(s)?;
    let b = breakdown(&o);
    Ok((s, o, b))
}

/// Figure 5.4's execution stage of a New-Order over 2 partitions (us): the number `heron-java`
/// is fitted to.
pub(crate) fn new_order_execution(
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<f64, String> {
    let profile = testbed()?;
    let (_, _, b) = fig5_4_point(&profile, software, (2, Some(2)), Nanos(20_000_000))?;
    progress(&format!(
        "  New-Order over 2 partitions, 1 client: execution {:.2} us of {:.2} us",
        b.execution, b.total
    ));
    Ok(b.execution)
}

/// A row of Figure 5.4's `breakdown.csv`: a workload's mean latency and its stages.
#[derive(serde::Serialize)]
struct BreakdownRow<'a> {
    workload: &'a str,
    partitions: usize,
    spanning: String,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    mean_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    ordering_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    coordination_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    execution_us: f64,
    software: &'a str,
    commit: &'a str,
}

/// A row of Figure 5.4's `latency_cdf.csv`.
#[derive(serde::Serialize)]
struct CdfRow<'a> {
    workload: &'a str,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    latency_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<6, _>")]
    fraction: f64,
}

/// A row of Figure 5.5's `latency_cdf.csv`.
#[derive(serde::Serialize)]
struct KindCdfRow<'a> {
    kind: &'a str,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    latency_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<6, _>")]
    fraction: f64,
}

/// A row of Table 5.1's `throughput.csv`: a workload's maximum at a partition count.
#[derive(serde::Serialize)]
struct MaxRow<'a> {
    workload: &'a str,
    partitions: usize,
    #[serde(serialize_with = "crate::stats::precision::fixed::<0, _>")]
    max_per_s: f64,
    saturated: bool,
    knee_clients: usize,
    #[serde(serialize_with = "crate::stats::precision::fixed::<0, _>")]
    knee_per_s: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    knee_mean_us: f64,
    software: &'a str,
    commit: &'a str,
}

/// A row of Table 5.2's `delays.csv`: one partition at a configuration's maximum.
#[derive(serde::Serialize)]
struct DelaysRow<'a> {
    partitions: usize,
    replicas: usize,
    knee_clients: usize,
    #[serde(serialize_with = "crate::stats::precision::fixed::<0, _>")]
    max_per_s: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    knee_mean_us: f64,
    partition: usize,
    executed: u64,
    multi: u64,
    delayed: u64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    delayed_pct: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    delayed_multi_pct: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    avg_delay_us: f64,
    software: &'a str,
    commit: &'a str,
}

/// Figure 5.4.
fn fig5_4(
    out: &Path,
    commit: &str,
    quick: bool,
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    let profile = start(out)?;
    let duration = Nanos(if quick { 5_000_000 } else { 20_000_000 });
    let measured = crate::figure::in_parallel(&FIG5_4, |&(label, partitions, spanning)| {
        let (s, o, b) = fig5_4_point(&profile, software, (partitions, spanning), duration)?;
        progress(&format!(
            "  {label}: {:.1} us = ordering {:.1} + coordination {:.1} + execution {:.1}",
            b.total, b.ordering, b.coordination, b.execution
        ));
        Ok((s, o, b))
    })?;
    let mut rows = Vec::new();
    let mut csv = Vec::new();
    let mut cdf_csv = Vec::new();
    let mut cdfs = Vec::new();
    for ((label, partitions, spanning), (s, o, b)) in FIG5_4.iter().zip(&measured) {
        rows.extend(s.rows(o, label, commit));
        csv.push(BreakdownRow {
            workload: label,
            partitions: *partitions,
            spanning: spanning.map_or("tpcc".into(), |k| k.to_string()),
            mean_us: b.total,
            ordering_us: b.ordering,
            coordination_us: b.coordination,
            execution_us: b.execution,
            software: &software.name,
            commit,
        });
        let h = o.latencies(None);
        let points = crate::figure::cdf_points(&h);
        cdf_csv.extend(points.iter().map(|&(latency_us, fraction)| CdfRow {
            workload: label,
            latency_us,
            fraction,
        }));
        cdfs.push(Series::new(*label, points));
    }
    crate::experiment::write_rows(&out.join("summary.csv"), &rows)?;
    write_rows(&out.join("breakdown.csv"), &csv)?;
    write_rows(&out.join("latency_cdf.csv"), &cdf_csv)?;
    // The stages against partitions, for the three workloads spanning every partition.
    let spanning: Vec<(f64, Breakdown)> = FIG5_4
        .iter()
        .zip(&measured)
        .filter(|(w, _)| w.2.is_some())
        .map(|(w, m)| (w.1 as f64, m.2))
        .collect();
    let stage = |name: &str, f: fn(&Breakdown) -> f64| {
        Series::new(name, spanning.iter().map(|(p, b)| (*p, f(b))).collect())
    };
    plot::draw_png(
        &out.join("fig5.4.png"),
        "Heron Fig. 5.4 on sim (xl170-cx4): New-Order, 1 client, 3 replicas per partition",
        &[
            panel(
                "average latency by stage, New-Orders over every partition",
                "partitions",
                "latency (us)",
                vec![
                    stage("total", |b| b.total),
                    stage("ordering", |b| b.ordering),
                    stage("execution", |b| b.execution),
                    stage("coordination", |b| b.coordination),
                ],
            ),
            panel("latency CDF", "latency (us)", "fraction", cdfs),
        ],
    )?;
    let b = |i: usize| measured[i].2;
    let mut md = String::new();
    preamble(
        &mut md,
        "Heron Fig. 5.4 (New-Order latency breakdown)",
        "heron-fig5.4",
        commit,
        software,
    );
    let _ = writeln!(
        md,
        "One client issues New-Orders in a closed loop for {duration} after a 10% warm-up. \
         Ordering is the latency left after the replica's coordination and execution (the \
         multicast and the response's write). Files: `summary.csv`, `breakdown.csv`, \
         `latency_cdf.csv`, `fig5.4.png`.\n"
    );
    md.push_str(
        "| workload | mean | ordering | coordination | execution |\n|---|---|---|---|---|\n",
    );
    for ((label, ..), (_, _, b)) in FIG5_4.iter().zip(&measured) {
        let _ = writeln!(
            md,
            "| {label} | {:.1} us | {:.1} us | {:.1} us | {:.1} us |",
            b.total, b.ordering, b.coordination, b.execution
        );
    }
    md.push('\n');
    md.push_str(TABLE_HEAD);
    let two = b(1);
    for (what, published, measured) in [
        ("New-Order latency (2 WH, over both)", 35.4, two.total),
        ("ordering", 18.0, two.ordering),
        ("execution", 16.0, two.execution),
        ("coordination", 2.0, two.coordination),
    ] {
        crate::figure::row(&mut md, what, published, measured, "us");
    }
    let tpcc_multi = {
        let o = &measured[3].1;
        let (s, m) = (o.latencies(Some(0)).len(), o.latencies(Some(1)).len());
        100.0 * m as f64 / (s + m).max(1) as f64
    };
    let breakdowns: Vec<Breakdown> = measured.iter().map(|m| m.2).collect();
    let claims = fig5_4_claims(&breakdowns, tpcc_multi, fitted(software));
    md.push_str("\n## Claims\n\n");
    md.push_str(&verdict::table(&claims));
    let lat = profile.calibration.write_lat_us;
    let _ = writeln!(
        md,
        "\n## Discussion\n\n\
         - **Coordination is where the model and the thesis part.** A phase of Algorithm 9 ends \
         when a majority of every involved partition has written its entry; replicas that reach \
         a phase together wait one one-way RDMA write for each other ({lat} us, ib_write_lat of \
         `{}`), so two phases cost at least {:.1} us unless a replica finds the others' entries \
         already there when it checks. Measured: {:.1} us at 2 partitions. The thesis's ~2 us is \
         below that floor: its replicas must mostly find the entries already there, or its \
         breakdown counts only part of the wait (it does not say how the stages were timed). \
         Under a priced profile a replica's checks also share its one simulated core with \
         RamCast's own polling and message handling (every check is charged as a scan of the \
         entries it reads), where the prototype runs Heron's and RamCast's threads on a \
         ten-core machine. Without the gap (coordination at the thesis's 2 us) the 2-partition \
         New-Order would take {:.1} us against the published 35.4.\n\
         - **Ordering** is the latency left after the replica's coordination and execution, \
         averaged over every replica; the client takes the first response of each partition, \
         so a replica slower than the first one moves time from ordering into the other \
         stages. The one-client multicast itself is RamCast's, under RamCast's fitted prices.\n\
         - **Execution** prices every row read or written (the Java prototype deserialises \
         Stock and Customer rows and serialises them back); remote rows also cost a one-sided \
         read. At 1 partition every row is local.\n",
        profile.name,
        2.0 * lat,
        two.coordination,
        two.total - two.coordination + 2.0
    );
    md.push_str(&crate::figure::software_bullet(
        software,
        "- **Software cost.** Under `none` no CPU time is charged: ordering and execution are \
         RDMA round trips and waits only, so both fall short of the Java prototype's.\n"
            .into(),
    ));
    verdict::write(out, &claims)?;
    write(&out.join("summary.md"), &md)
}

/// Figure 5.4's claims, from the breakdowns of [`FIG5_4`]'s workloads (in its order), the
/// share (%) of TPC-C's New-Orders that were multi-partition, and whether the software
/// profile's row price was fitted to the execution stage. The quoted stages are judged as
/// numbers on the 2-partition workload the module docs read the 35.4 us as; the execution
/// stage holds by construction under a profile fitted to it.
fn fig5_4_claims(b: &[Breakdown], tpcc_multi: f64, fitted: bool) -> Vec<Claim> {
    let (one, two, four) = (b[0], b[1], b[2]);
    let us = |v: f64| Measure::point(v).detail("2 WH, every New-Order over both");
    let mut claims = vec![
        Claim::number(
            "New-Order with 1 client: 35.4 us on average",
            35.4,
            "us",
            us(two.total),
        ),
        Claim::number("of which ordering ~18 us", 18.0, "us", us(two.ordering)),
        if fitted {
            Claim::by_construction(
                "and execution ~16 us",
                format!("{:.1} us", two.execution),
                "this software profile's row price is fitted to it",
            )
        } else {
            Claim::number("and execution ~16 us", 16.0, "us", us(two.execution))
        },
        Claim::number(
            "coordination is about 2 us",
            2.0,
            "us",
            us(two.coordination),
        ),
    ];
    let worst = b.iter().map(|b| b.coordination).fold(0.0, f64::max);
    claims.push(Claim::at_most(
        "coordination is never above 3 us in any workload",
        3.0,
        "us",
        Measure::point(worst).detail("the most of the four workloads"),
    ));
    claims.push(Claim::ordering(
        "from 1 WH to 4 WH every stage becomes more expensive (ordering: more destinations; execution: more remote reads)",
        "each stage's mean at 4 WH above its mean at 1 WH",
        format!(
            "ordering {:.1} -> {:.1} us, execution {:.1} -> {:.1} us, coordination {:.1} -> {:.1} us",
            one.ordering, four.ordering, one.execution, four.execution, one.coordination, four.coordination
        ),
        four.ordering > one.ordering
            && four.execution > one.execution
            && four.coordination > one.coordination,
    ));
    claims.push(Claim::by_construction(
        "in TPC-C about 10% of New-Orders are multi-partition",
        format!("{tpcc_multi:.1}% (4 WH)"),
        "clause 2.4.1.5's 1% remote order lines over 5-15 lines, drawn by the generator",
    ));
    claims
}

/// Figure 5.5's transaction types, in the thesis's order.
const KINDS: [Kind; 5] = [
    Kind::NewOrder,
    Kind::Payment,
    Kind::OrderStatus,
    Kind::Delivery,
    Kind::StockLevel,
];

/// One transaction type alone, 1 client, on Figure 5.5's partitions.
fn one_kind(
    profile: &Profile,
    software: &Software,
    kind: Kind,
    duration: Nanos,
) -> Result<(Setup, Outcome), String> {
    let s = setup(
        profile,
        software,
        heron::Config::new(FIG5_5_PARTITIONS, 3, 1),
        Workload::Tpcc(tpcc(FIG5_5_PARTITIONS, CAPACITY_ONE_CLIENT).with_mix(Mix::only(kind))),
        duration,
    );
    measure(s)
}

/// Figure 5.5.
fn fig5_5(
    out: &Path,
    commit: &str,
    quick: bool,
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    let profile = start(out)?;
    let duration = Nanos(if quick { 5_000_000 } else { 20_000_000 });
    let measured = crate::figure::in_parallel(&KINDS, |&kind| {
        let (s, o) = one_kind(&profile, software, kind, duration)?;
        progress(&format!(
            "  {}: single-partition {:.1} us, multi-partition {}",
            o.kinds[kind as usize],
            mean_us(&o, Some(0)),
            if o.latencies(Some(1)).is_empty() {
                "none".to_string()
            } else {
                format!("{:.1} us", mean_us(&o, Some(1)))
            }
        ));
        Ok((s, o))
    })?;
    let mut rows = Vec::new();
    let mut cdf_csv = Vec::new();
    let (mut single, mut multi, mut cdfs) = (Vec::new(), Vec::new(), Vec::new());
    // (name, single mean, multi mean or NaN)
    let mut means: Vec<(&str, f64, Option<f64>)> = Vec::new();
    // Their 95% intervals, single then multi-partition.
    let mut intervals: Vec<[Interval; 2]> = Vec::new();
    for (i, (kind, (s, o))) in KINDS.iter().zip(&measured).enumerate() {
        let name = o.kinds[*kind as usize];
        rows.extend(s.rows(o, name, commit));
        let points = crate::figure::cdf_points(&o.latencies(None));
        cdf_csv.extend(points.iter().map(|&(latency_us, fraction)| KindCdfRow {
            kind: name,
            latency_us,
            fraction,
        }));
        cdfs.push(Series::new(name, points));
        let x = (i + 1) as f64;
        let one = mean_us(o, Some(0));
        let m = (!o.latencies(Some(1)).is_empty()).then(|| mean_us(o, Some(1)));
        let ci = [
            o.mean_ci(one, Some(*kind as usize), Some(0)),
            m.and_then(|m| o.mean_ci(m, Some(*kind as usize), Some(1))),
        ];
        single.push((x, one, ci[0]));
        if let Some(m) = m {
            multi.push((x, m, ci[1]));
        }
        intervals.push(ci);
        means.push((name, one, m));
    }
    crate::experiment::write_rows(&out.join("summary.csv"), &rows)?;
    write_rows(&out.join("latency_cdf.csv"), &cdf_csv)?;
    plot::draw_png(
        &out.join("fig5.5.png"),
        &format!(
            "Heron Fig. 5.5 on sim (xl170-cx4): each TPC-C transaction alone, 1 client, {FIG5_5_PARTITIONS} partitions x 3 replicas"
        ),
        &[
            panel(
                "average latency: 1 new-order, 2 payment, 3 order-status, 4 delivery, 5 stock-level",
                "transaction type",
                "latency (us)",
                vec![
                    Series::with_errors("single-partition", single),
                    Series::with_errors("multi-partition", multi),
                ],
            ),
            panel("latency CDF", "latency (us)", "fraction", cdfs),
        ],
    )?;
    let mut md = String::new();
    preamble(
        &mut md,
        "Heron Fig. 5.5 (latency per TPC-C transaction)",
        "heron-fig5.5",
        commit,
        software,
    );
    let _ = writeln!(
        md,
        "Each transaction type alone: one client in a closed loop for {duration} after a 10% \
         warm-up, {FIG5_5_PARTITIONS} partitions (the thesis does not say how many), TPC-C's own \
         remote order lines (1%) and remote payments (15%). Files: `summary.csv`, \
         `latency_cdf.csv`, `fig5.5.png`.\n"
    );
    md.push_str("| transaction | single-partition | multi-partition |\n|---|---|---|\n");
    for (name, one, m) in &means {
        let _ = writeln!(
            md,
            "| {name} | {one:.1} us | {} |",
            m.map_or("-".into(), |m| format!("{m:.1} us"))
        );
    }
    let get = |k: Kind| means[k as usize];
    md.push('\n');
    md.push_str(TABLE_HEAD);
    crate::figure::row(
        &mut md,
        "Order-Status",
        16.5,
        get(Kind::OrderStatus).1,
        "us",
    );
    crate::figure::row(&mut md, "Delivery", 17.6, get(Kind::Delivery).1, "us");
    crate::figure::row(
        &mut md,
        "single-partition New-Order (read off the figure)",
        19.0,
        get(Kind::NewOrder).1,
        "us",
    );
    if let Some(m) = get(Kind::NewOrder).2 {
        crate::figure::row(
            &mut md,
            "multi-partition New-Order (read off the figure)",
            35.0,
            m,
            "us",
        );
    }
    let claims = fig5_5_claims(&means, &intervals);
    md.push_str("\n## Claims\n\n");
    md.push_str(&verdict::table(&claims));
    let undelivered = tpcc(FIG5_5_PARTITIONS, CAPACITY_ONE_CLIENT)
        .scale()
        .new_orders;
    md.push_str(&format!(
        "\n## Discussion\n\n\
         - **One price per row.** The profile charges every row read or written alike, fitted on \
         Figure 5.4's New-Order execution; a transaction's cost follows its row count. \
         Stock-Level reads up to 20 orders' lines and their stock rows, hence its cost.\n\
         - **Delivery alone drains its queue.** A client is bound to one warehouse, and a \
         Delivery delivers the oldest undelivered order of each of its ten districts (clause \
         2.7.4). The database starts with {undelivered} undelivered orders per district (the \
         specification's 900 of 3,000, scaled), and no New-Order adds any in this run, so after \
         {undelivered} Deliveries, within the warm-up, every Delivery finds none and reads the \
         district rows only. The thesis's one-client-per-type runs drain the queue too (after \
         900 Deliveries at full scale), which may be why it calls Delivery light-weight; the \
         thesis does not say.\n\
         - **Multi-partition transactions** add the coordination the `heron-fig5.4` summary \
         discusses, and one-sided reads of the other partition's rows.\n",
    ));
    md.push_str(&crate::figure::software_bullet(
        software,
        "- **Software cost.** Under `none` no CPU time is charged: every transaction costs its \
         RDMA operations only, and the light ones sit at RamCast's single-group latency.\n"
            .into(),
    ));
    verdict::write(out, &claims)?;
    write(&out.join("summary.md"), &md)
}

/// Figure 5.5's claims, from each transaction type's mean latency alone (us), single-partition
/// and multi-partition when any ran, in [`KINDS`]'s order. The quoted latencies are judged as
/// numbers, each on its own (the ~19 and ~35 us read off the figure too); the comparisons as
/// orderings, undecided where a multi-partition mean is missing.
fn fig5_5_claims(means: &[(&str, f64, Option<f64>)], ci: &[[Interval; 2]]) -> Vec<Claim> {
    let get = |k: Kind| means[k as usize];
    // A mean with its interval where known (`span` 0 single-, 1 multi-partition).
    let at =
        |k: Kind, span: usize, v: f64| Measure::within(v, ci.get(k as usize).and_then(|c| c[span]));
    let (os, d, sl) = (
        get(Kind::OrderStatus).1,
        get(Kind::Delivery).1,
        get(Kind::StockLevel).1,
    );
    let mut claims = vec![
        Claim::number(
            "Order-Status: 16.5 us",
            16.5,
            "us",
            at(Kind::OrderStatus, 0, os),
        ),
        Claim::number("Delivery: 17.6 us", 17.6, "us", at(Kind::Delivery, 0, d)),
        Claim::ordering(
            "Stock-Level is a heavy local transaction: slower than Order-Status and Delivery",
            "Stock-Level's mean above Order-Status's and Delivery's",
            format!("{sl:.1} us against {os:.1} and {d:.1} us"),
            sl > os && sl > d,
        )
        .undecided_if(
            at(Kind::StockLevel, 0, sl).overlaps(&at(Kind::OrderStatus, 0, os))
                || at(Kind::StockLevel, 0, sl).overlaps(&at(Kind::Delivery, 0, d)),
            "the means' intervals overlap",
        ),
    ];
    let split = [Kind::NewOrder, Kind::Payment].map(get);
    let missing = split.iter().any(|(_, _, m)| m.is_none());
    claims.push(
        Claim::ordering(
            "multi-partition New-Orders and Payments take longer than single-partition ones",
            "each type's multi-partition mean above its single-partition mean",
            split
                .iter()
                .map(|(name, one, m)| {
                    m.map_or(format!("{name}: no multi-partition one"), |m| {
                        format!("{name} {one:.1} -> {m:.1} us")
                    })
                })
                .collect::<Vec<_>>()
                .join("; "),
            split.iter().all(|(_, one, m)| m.is_some_and(|m| m > *one)),
        )
        .undecided_if(missing, "a type ran no multi-partition transaction")
        .undecided_if(
            [Kind::NewOrder, Kind::Payment].iter().any(|&k| {
                let (_, one, m) = get(k);
                m.is_some_and(|m| at(k, 0, one).overlaps(&at(k, 1, m)))
            }),
            "a type's single- and multi-partition means' intervals overlap",
        ),
    );
    let (_, one, multi) = get(Kind::NewOrder);
    claims.push(Claim::number(
        "single-partition transactions ~19 us (New-Order, read off the figure)",
        19.0,
        "us",
        at(Kind::NewOrder, 0, one),
    ));
    claims.push(match multi {
        Some(m) => Claim::number(
            "multi-partition transactions ~35 us (New-Order, read off the figure)",
            35.0,
            "us",
            at(Kind::NewOrder, 1, m),
        ),
        None => Claim::trend(
            "multi-partition transactions ~35 us (New-Order, read off the figure)",
            "a multi-partition New-Order's mean, within 25% of 35 us",
            "none measured".into(),
            false,
        )
        .undecided_if(true, "the run had no multi-partition New-Order"),
    });
    claims
}

/// A workload over `p` partitions.
type MakeWorkload = fn(usize) -> Workload;

/// Table 5.1's workloads: label, the workload over `p` partitions, and whether Heron only
/// orders (RamCast alone: every request answered on delivery, [`heron::Config::order_only`]).
const TABLE5_1: [(&str, MakeWorkload, bool); 4] = [
    (
        "RamCast (ordering only)",
        |p| Workload::Null(tpcc(p, CAPACITY)),
        true,
    ),
    (
        "Heron (null requests)",
        |p| Workload::Null(tpcc(p, CAPACITY)),
        false,
    ),
    ("TPC-C", |p| Workload::Tpcc(tpcc(p, CAPACITY)), false),
    (
        "local TPC-C",
        |p| Workload::Tpcc(tpcc(p, CAPACITY).local_only()),
        false,
    ),
];

/// The thesis's scaling factors 1->2, 2->4, 4->8, 8->16, per workload of [`TABLE5_1`].
const FACTORS: [[f64; 4]; 4] = [
    [1.37, 1.70, 2.22, 1.83],
    [1.05, 1.49, 1.88, 1.61],
    [0.98, 1.54, 1.74, 1.50],
    [1.90, 1.98, 2.09, 2.01],
];

/// Table 5.1.
fn table5_1(
    out: &Path,
    commit: &str,
    quick: bool,
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    let profile = start(out)?;
    let partitions: &[usize] = if quick { &[1, 2, 4] } else { &[1, 2, 4, 8, 16] };
    let duration = Nanos(if quick { 2_000_000 } else { 5_000_000 });
    let items: Vec<(usize, usize)> = (0..TABLE5_1.len())
        .flat_map(|w| partitions.iter().map(move |&p| (w, p)))
        .collect();
    // The sweeps over the most partitions run longest (the most processes, the most clients):
    // they start first.
    let sweeps = crate::figure::in_parallel_longest_first(
        &items,
        |&(_, p)| p as u64,
        |&(w, p)| {
            saturate(
                |c| {
                    setup(
                        &profile,
                        software,
                        heron::Config {
                            order_only: TABLE5_1[w].2,
                            ..heron::Config::new(p, 3, c)
                        },
                        (TABLE5_1[w].1)(p),
                        duration,
                    )
                },
                p,
                64 * p,
                progress,
            )
        },
    )?;
    let mut rows = Vec::new();
    let mut csv = Vec::new();
    // max[w][i]: workload w's maximum at partitions[i].
    let mut max = vec![Vec::new(); TABLE5_1.len()];
    // max_ci[w][i]: its 95% interval.
    let mut max_ci = vec![Vec::new(); TABLE5_1.len()];
    // still_growing[w][i]: whether that maximum stopped at the client cap (a lower bound).
    let mut still_growing = vec![Vec::new(); TABLE5_1.len()];
    let mut capped = Vec::new();
    for (&(w, p), sweep) in items.iter().zip(&sweeps) {
        let points = &sweep.points;
        for pt in points {
            rows.extend(pt.s.rows(&pt.o, TABLE5_1[w].0, commit));
        }
        let (t, knee) = best(points);
        let saturated = sweep.saturated;
        csv.push(MaxRow {
            workload: TABLE5_1[w].0,
            partitions: p,
            max_per_s: t,
            saturated,
            knee_clients: knee.s.cfg.clients,
            knee_per_s: knee.s.throughput(&knee.o),
            knee_mean_us: mean_us(&knee.o, None),
            software: &software.name,
            commit,
        });
        if !saturated {
            capped.push(format!("{} at {p} WH", TABLE5_1[w].0));
        }
        max[w].push(t);
        max_ci[w].push(peak(points).ci95);
        still_growing[w].push(!saturated);
    }
    crate::experiment::write_rows(&out.join("summary.csv"), &rows)?;
    write_rows(&out.join("throughput.csv"), &csv)?;
    let series: Vec<Series> = TABLE5_1
        .iter()
        .zip(max.iter().zip(&max_ci))
        .map(|((label, _, _), (m, ci))| {
            Series::with_errors(
                *label,
                partitions.iter().zip(m).zip(ci).map(|((&p, &t), ci)| {
                    let k = |(lo, hi): (f64, f64)| (lo / 1000.0, hi / 1000.0);
                    (p as f64, t / 1000.0, ci.map(k))
                }),
            )
        })
        .collect();
    plot::draw_png(
        &out.join("table5.1.png"),
        "Heron Fig. 5.2 / Table 5.1 on sim (xl170-cx4): maximum throughput, 3 replicas per partition",
        &[panel(
            "maximum throughput",
            "partitions (warehouses)",
            "throughput (k requests/s)",
            series,
        )],
    )?;
    let mut md = String::new();
    preamble(
        &mut md,
        "Heron Table 5.1 (scaling factors, Fig. 5.2)",
        "heron-table5.1",
        commit,
        software,
    );
    let _ = writeln!(
        md,
        "Each maximum: clients doubled from 1 per partition until two doublings in a row raised \
         the best throughput by less than 5% (at most 64 per partition), each point {duration} after a 10% warm-up. Null \
         requests go where TPC-C's would and do nothing. RamCast alone (\"without \
         coordination and execution\") is Heron ordering only: the same null requests \
         multicast by the same clients, each replica answering on delivery. Files: \
         `summary.csv` (every point), `throughput.csv` (maxima), `table5.1.png`.\n"
    );
    if !capped.is_empty() {
        let _ = writeln!(
            md,
            "Still growing at the client cap (the maximum is a lower bound): {}.\n",
            capped.join(", ")
        );
    }
    md.push_str("| workload |");
    for &p in partitions {
        let _ = write!(md, " {p} WH |");
    }
    md.push_str("\n|---|");
    for _ in partitions {
        md.push_str("---|");
    }
    md.push('\n');
    for ((label, _, _), m) in TABLE5_1.iter().zip(&max) {
        let _ = write!(md, "| {label} |");
        for t in m {
            let _ = write!(md, " {:.0} k/s |", t / 1000.0);
        }
        md.push('\n');
    }
    md.push_str("\nScaling factors (measured, thesis in parentheses):\n\n| workload |");
    let steps = partitions.len() - 1;
    for i in 0..steps {
        let _ = write!(md, " {} -> {} |", partitions[i], partitions[i + 1]);
    }
    md.push_str("\n|---|");
    for _ in 0..steps {
        md.push_str("---|");
    }
    md.push('\n');
    let factor = |w: usize, i: usize| max[w][i + 1] / max[w][i];
    for (w, (label, _, _)) in TABLE5_1.iter().enumerate() {
        let _ = write!(md, "| {label} |");
        for (i, published) in FACTORS[w].iter().enumerate().take(steps) {
            let _ = write!(md, " {:.2} ({published:.2}) |", factor(w, i));
        }
        md.push('\n');
    }
    let claims = table5_1_claims(partitions, &max, &max_ci, &still_growing);
    md.push_str("\n## Claims\n\n");
    md.push_str(&verdict::table(&claims));
    let last = partitions.len() - 1;
    let per_partition = |w: usize| max[w][last] / partitions[last] as f64 / max[w][0];
    let _ = writeln!(
        md,
        "\n## Discussion\n\n\
         - **From 1 to 2 partitions** null requests go from {:.0} to {:.0} k/s: at 1 partition no \
         request coordinates, from 2 on a replica waits through both coordination phases of \
         every multi-partition request (about one in nine under TPC-C's mix) and executes \
         nothing meanwhile, as in the prototype (the thesis: 1.05).\n\
         - **Local-only TPC-C** shares nothing between partitions but the clients' and \
         replicas' NICs: at {} partitions each partition runs {:.0}% of the 1-partition \
         throughput. Clients are terminals bound to a warehouse, so every partition gets the \
         same number of clients.\n\
         - **TPC-C** keeps {:.0}% per partition at {} partitions: the multi-partition \
         requests' coordination holds each replica involved for their whole length.\n",
        max[1][0] / 1000.0,
        max[1][1.min(last)] / 1000.0,
        partitions[last],
        100.0 * per_partition(3),
        100.0 * per_partition(2),
        partitions[last]
    );
    let _ = writeln!(
        md,
        "- **RamCast alone** keeps {:.0}% per partition at {} partitions: ordering without \
         coordination or execution, the bound Heron's null requests approach. A replica \
         answers on delivery, so a multi-partition request costs its destination leaders' \
         timestamp exchange and nothing more.{}\n",
        100.0 * per_partition(0),
        partitions[last],
        if software.costs.scan_ns > 0 {
            format!(
                " Every poll of a RamCast server looks at every client's buffer, at {} ns \
                 each under this profile: the clients a sweep adds to load more partitions \
                 make every server's poll longer, which caps ordering alone where the \
                 free-scanning `none` lens keeps scaling (`none/summary.md`).",
                software.costs.scan_ns
            )
        } else {
            String::new()
        }
    );
    md.push_str(&crate::figure::software_bullet(
        software,
        "- **Software cost.** Under `none` no CPU time is charged: throughput is bounded by the \
         NICs and the clients' round trips only.\n"
            .into(),
    ));
    verdict::write(out, &claims)?;
    write(&out.join("summary.md"), &md)
}

/// A scaling factor between two maxima of a sweep over partitions, and which way the truth may
/// lie from it: a maximum still growing at its client cap is only a lower bound.
#[derive(Clone, Copy, Debug)]
struct Scaling {
    value: f64,
    /// Its 95% interval, the widest the two maxima's intervals allow ([`Measure::ratio`]).
    ci95: Option<(f64, f64)>,
    /// The larger configuration's maximum is a lower bound: the factor may be higher.
    may_be_higher: bool,
    /// The smaller configuration's maximum is a lower bound: the factor may be lower.
    may_be_lower: bool,
}

impl Scaling {
    /// The factor from `max[i]` to `max[i + 1]`, `ci` their intervals where known, `capped`
    /// saying which maxima are lower bounds.
    fn of(max: &[f64], ci: &[Option<(f64, f64)>], capped: &[bool], i: usize) -> Scaling {
        let m = |j: usize| Measure::within(max[j], ci.get(j).copied().flatten());
        Scaling {
            value: max[i + 1] / max[i],
            ci95: Measure::ratio(&m(i + 1), &m(i)).ci95,
            may_be_higher: capped[i + 1],
            may_be_lower: capped[i],
        }
    }

    /// Whether the factor is at most `x`: `None` when a lower bound leaves it open.
    fn at_most(self, x: f64) -> Option<bool> {
        if self.value <= x {
            (!self.may_be_higher).then_some(true)
        } else {
            (!self.may_be_lower).then_some(false)
        }
    }

    /// Whether the factor is at least `x`: `None` when a lower bound leaves it open.
    fn at_least(self, x: f64) -> Option<bool> {
        if self.value >= x {
            (!self.may_be_lower).then_some(true)
        } else {
            (!self.may_be_higher).then_some(false)
        }
    }

    /// The thesis's factor `published`, judged on the exponent ([`Claim::factor`]). A factor
    /// over a capped maximum is a lower bound ([`Measure::capped`]); one under a capped maximum
    /// is an upper bound, which decides only a factor already below the band.
    fn claim(self, words: &str, published: f64, detail: String) -> Claim {
        let m = Measure::within(self.value, self.ci95)
            .capped(self.may_be_higher && !self.may_be_lower)
            .detail(detail);
        let c = Claim::factor(words, published, m);
        // The band holds `published`: a factor outside it and below `published` is below it.
        let below = c.verdict == Verdict::NotReproduced && self.value < published;
        let decided = !self.may_be_lower || (below && !self.may_be_higher);
        c.undecided_if(
            !decided,
            "the smaller configuration's maximum was still growing at the client cap",
        )
    }
}

/// Whether every test holds: `Some(false)` when one decidedly fails, `None` when none fails
/// but one is left open.
fn all_of(tests: impl IntoIterator<Item = Option<bool>>) -> Option<bool> {
    let mut open = false;
    for t in tests {
        match t {
            Some(false) => return Some(false),
            None => open = true,
            Some(true) => {}
        }
    }
    (!open).then_some(true)
}

/// Why an ordering or trend over maxima is left open.
const CAPPED: &str = "it rests on a maximum still growing at the client cap";

/// Table 5.1's claims, from each workload's maxima (`max[w][i]`: [`TABLE5_1`]'s workload `w`
/// at `partitions[i]`) and which of them stopped at the client cap still growing. Each quoted
/// scaling factor is judged as a factor on its exponent; the thesis's summaries of them
/// ("little, if anything", "at least 1.49x", "nearly linearly") as a trend, a bound and a
/// trend over the measured factors, left open where a capped maximum could change them.
fn table5_1_claims(
    partitions: &[usize],
    max: &[Vec<f64>],
    ci: &[Vec<Option<(f64, f64)>>],
    capped: &[Vec<bool>],
) -> Vec<Claim> {
    let steps = partitions.len() - 1;
    let scaling = |w: usize, i: usize| {
        Scaling::of(&max[w], ci.get(w).map_or(&[], Vec::as_slice), &capped[w], i)
    };
    let mut claims = Vec::new();
    for (w, (label, _, _)) in TABLE5_1.iter().enumerate() {
        for i in 0..steps {
            claims.push(scaling(w, i).claim(
                &format!(
                    "{label}: {} -> {} partitions scales by {:.2}",
                    partitions[i],
                    partitions[i + 1],
                    FACTORS[w][i]
                ),
                FACTORS[w][i],
                format!(
                    "{:.0} -> {:.0} k/s",
                    max[w][i] / 1000.0,
                    max[w][i + 1] / 1000.0
                ),
            ));
        }
    }
    let flat = [1, 2].map(|w| scaling(w, 0));
    let decided = all_of(flat.map(|s| s.at_most(1.2)));
    claims.push(
        Claim::trend(
            "from 1 to 2 partitions null requests and TPC-C gain little, if anything (coordination starts)",
            "both 1 -> 2 factors at most 1.2",
            format!("{:.2} and {:.2}", flat[0].value, flat[1].value),
            flat.iter().all(|s| s.value <= 1.2),
        )
        .undecided_if(decided.is_none(), CAPPED),
    );
    let later: Vec<Scaling> = (0..3)
        .flat_map(|w| (1..steps).map(move |i| (w, i)))
        .map(|(w, i)| scaling(w, i))
        .collect();
    let least = later.iter().map(|s| s.value).fold(f64::INFINITY, f64::min);
    let decided = all_of(later.iter().map(|s| s.at_least(1.49)));
    claims.push(
        Claim::at_least(
            "in all other cases throughput grows by at least 1.49x per doubling",
            1.49,
            "",
            Measure::point(least)
                .detail("the least factor from 2 partitions on, RamCast, null requests and TPC-C"),
        )
        .undecided_if(decided.is_none(), CAPPED),
    );
    let local: Vec<Scaling> = (0..steps).map(|i| scaling(3, i)).collect();
    let local_least = local.iter().map(|s| s.value).fold(f64::INFINITY, f64::min);
    let decided = all_of(local.iter().map(|s| s.at_least(1.8)));
    claims.push(
        Claim::trend(
            "local-only TPC-C scales nearly linearly (about 2x per doubling)",
            "every local-only factor at least 1.8",
            format!("least {local_least:.2}"),
            local_least >= 1.8,
        )
        .undecided_if(decided.is_none(), CAPPED),
    );
    claims
}

/// Table 5.2's configurations: partitions and replicas, with the thesis's maximum throughput
/// (tps), average latency (us), and per partition the delayed share (%) and average delay (us).
type Published = (usize, usize, f64, f64, &'static [(f64, f64)]);
const TABLE5_2: [Published; 4] = [
    (2, 3, 53_340.0, 35.7, &[(1.0, 5.3), (8.0, 4.0)]),
    (2, 5, 42_658.0, 45.0, &[(2.0, 18.6), (4.0, 9.3)]),
    (
        4,
        3,
        92_808.0,
        41.3,
        &[(1.0, 29.6), (3.0, 11.8), (3.0, 6.9), (4.0, 2.1)],
    ),
    (
        4,
        5,
        73_724.0,
        52.2,
        &[(3.0, 16.0), (3.0, 11.1), (3.0, 5.4), (4.0, 8.8)],
    ),
];

/// One partition's delays in a Table 5.2 run, summed over its replicas.
#[derive(Clone, Copy, Debug, Default)]
struct Delays {
    /// Requests its replicas executed.
    executed: u64,
    /// Multi-partition ones among them: only these coordinate, so only these can be delayed.
    multi: u64,
    /// Requests its replicas delayed.
    delayed: u64,
    /// Nanoseconds the delayed ones waited past the majority.
    delay_ns: u64,
}

impl Delays {
    /// The delays of partition `g` of `o`.
    fn of(o: &Outcome, g: usize) -> Delays {
        let mut c = heron::Counters::default();
        for (_, r) in o.replicas.iter().filter(|(h, _)| h.0 as usize == g) {
            c.add(r);
        }
        Delays {
            executed: c.executed,
            multi: c.multi,
            delayed: c.delayed,
            delay_ns: c.delay_ns,
        }
    }

    /// The share (%) of every request executed that was delayed: the thesis's "percentage of
    /// delayed transactions", which counts single-partition transactions too.
    fn all_pct(&self) -> f64 {
        100.0 * self.delayed as f64 / self.executed.max(1) as f64
    }

    /// The share (%) of the multi-partition requests executed that was delayed.
    fn multi_pct(&self) -> f64 {
        100.0 * self.delayed as f64 / self.multi.max(1) as f64
    }

    /// The average delay (us) of a delayed request.
    fn delay_us(&self) -> f64 {
        self.delay_ns as f64 / self.delayed.max(1) as f64 / 1e3
    }
}

/// One configuration of Table 5.2, measured: its maximum throughput (tps), whether the sweep
/// stopped at its client cap still growing, the mean latency at its knee (us) and the delays
/// of each partition at the knee.
struct Waited {
    max: f64,
    /// The maximum's 95% interval.
    max_ci: Option<(f64, f64)>,
    capped: bool,
    latency_us: f64,
    /// The mean latency's 95% interval.
    latency_ci: Option<(f64, f64)>,
    delays: Vec<Delays>,
}

/// The least and the most of `f` over every partition of every configuration.
fn range(found: &[Waited], f: fn(&Delays) -> f64) -> (f64, f64) {
    found
        .iter()
        .flat_map(|w| w.delays.iter().map(f))
        .fold((f64::INFINITY, 0.0), |(lo, hi), x| (lo.min(x), hi.max(x)))
}

/// Whether, in every configuration, the last partition delays a larger share of its
/// transactions than the first, for a shorter average delay: the thesis's trend over
/// partition ids, tested on its first and last partitions (its own 4 x 5 delays are not
/// monotonic in between).
fn grows_with_partition_id(found: &[Waited]) -> bool {
    found.iter().all(|w| {
        let (first, last) = (w.delays[0], w.delays[w.delays.len() - 1]);
        last.all_pct() > first.all_pct() && last.delay_us() < first.delay_us()
    })
}

/// Table 5.2's claims, from its configurations measured in [`TABLE5_2`]'s order. The maxima
/// and latencies are judged as numbers, a maximum still growing at the client cap as a lower
/// bound. The share of delayed transactions is the thesis's, of all transactions (the share
/// of multi-partition ones is detail); its "8% in the worst case" is a bound on the most of
/// any partition.
fn table5_2_claims(found: &[Waited]) -> Vec<Claim> {
    let mut claims = Vec::new();
    for (&(p, r, tps, lat, _), w) in TABLE5_2.iter().zip(found) {
        claims.push(Claim::number(
            &format!("{p} partitions x {r} replicas: max throughput {tps:.0} tps"),
            tps,
            "tps",
            Measure::within(w.max, w.max_ci).capped(w.capped),
        ));
        claims.push(Claim::number(
            &format!(
                "{p} partitions x {r} replicas: {lat} us average latency (at maximum throughput)"
            ),
            lat,
            "us",
            Measure::within(w.latency_us, w.latency_ci).detail("at the knee"),
        ));
    }
    let (_, worst) = range(found, Delays::all_pct);
    let (_, worst_multi) = range(found, Delays::multi_pct);
    claims.push(Claim::at_most(
        "very few transactions are delayed: 8% in the worst case",
        8.0,
        "%",
        Measure::point(worst).detail(format!(
            "the most of any partition, of all its transactions; of its multi-partition ones, \
             the most is {worst_multi:.1}%"
        )),
    ));
    let (_, longest) = range(found, Delays::delay_us);
    let shortest = found
        .iter()
        .map(|w| w.latency_us)
        .fold(f64::INFINITY, f64::min);
    claims.push(Claim::ordering(
        "a delay is a fraction of a transaction's average latency",
        "every partition's average delay below its configuration's mean latency",
        format!("longest average delay {longest:.1} us; shortest mean latency {shortest:.1} us"),
        found
            .iter()
            .all(|w| w.delays.iter().all(|d| d.delay_us() < w.latency_us)),
    ));
    claims.push(Claim::trend(
        "the share of delayed transactions grows with the partition id and the average delay falls",
        "in every configuration, the last partition's share of delayed transactions above the first's and its average delay below",
        found
            .iter()
            .map(|w| {
                let (a, b) = (w.delays[0], w.delays[w.delays.len() - 1]);
                format!(
                    "{:.1}% / {:.1} us -> {:.1}% / {:.1} us",
                    a.all_pct(),
                    a.delay_us(),
                    b.all_pct(),
                    b.delay_us()
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        grows_with_partition_id(found),
    ));
    // 3 replicas at `i`, 5 at `i + 1`: a lower 5-replica maximum is decided unless it is a
    // lower bound, a higher one unless the 3-replica maximum is.
    let lower = [0, 2].map(|i| {
        let (three, five) = (&found[i], &found[i + 1]);
        if five.max < three.max {
            (!five.capped).then_some(true)
        } else {
            (!three.capped).then_some(false)
        }
    });
    claims.push(
        Claim::ordering(
            "5 replicas per partition give a lower maximum throughput than 3",
            "the 5-replica maximum below the 3-replica one, at 2 and at 4 partitions",
            format!(
                "2 partitions: {:.0} -> {:.0} k/s; 4 partitions: {:.0} -> {:.0} k/s",
                found[0].max / 1000.0,
                found[1].max / 1000.0,
                found[2].max / 1000.0,
                found[3].max / 1000.0
            ),
            [0, 2].iter().all(|&i| found[i + 1].max < found[i].max),
        )
        .undecided_if(all_of(lower).is_none(), CAPPED),
    );
    claims
}

/// Table 5.2.
fn table5_2(
    out: &Path,
    commit: &str,
    quick: bool,
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    let profile = start(out)?;
    let duration = Nanos(if quick { 2_000_000 } else { 5_000_000 });
    let sweeps = crate::figure::in_parallel(&TABLE5_2, |&(p, r, ..)| {
        saturate(
            |c| {
                let mut cfg = heron::Config::new(p, r, c);
                cfg.extra_wait = WAIT_FOR_ALL;
                setup(
                    &profile,
                    software,
                    cfg,
                    Workload::Tpcc(tpcc(p, CAPACITY)),
                    duration,
                )
            },
            p,
            if quick { 8 * p } else { 64 * p },
            progress,
        )
    })?;
    let mut rows = Vec::new();
    let mut csv = Vec::new();
    let mut found = Vec::new();
    let mut waited_out = 0;
    for (&(p, r, ..), sweep) in TABLE5_2.iter().zip(&sweeps) {
        let points = &sweep.points;
        for pt in points {
            rows.extend(pt.s.rows(&pt.o, "tpcc", commit));
        }
        let (t, top) = best(points);
        let lat = mean_us(&top.o, None);
        waited_out += points
            .iter()
            .map(|pt| pt.o.counters().waited_out)
            .sum::<u64>();
        let d: Vec<Delays> = (0..p).map(|g| Delays::of(&top.o, g)).collect();
        for (g, d) in d.iter().enumerate() {
            csv.push(DelaysRow {
                partitions: p,
                replicas: r,
                knee_clients: top.s.cfg.clients,
                max_per_s: t,
                knee_mean_us: lat,
                partition: g + 1,
                executed: d.executed,
                multi: d.multi,
                delayed: d.delayed,
                delayed_pct: d.all_pct(),
                delayed_multi_pct: d.multi_pct(),
                avg_delay_us: d.delay_us(),
                software: &software.name,
                commit,
            });
        }
        found.push(Waited {
            max: t,
            max_ci: peak(points).ci95,
            capped: !sweep.saturated,
            latency_us: lat,
            latency_ci: top.o.mean_ci(lat, None, None),
            delays: d,
        });
    }
    crate::experiment::write_rows(&out.join("summary.csv"), &rows)?;
    write_rows(&out.join("delays.csv"), &csv)?;
    let series = |f: fn(&Delays) -> f64| -> Vec<Series> {
        TABLE5_2
            .iter()
            .zip(&found)
            .map(|(&(p, r, ..), w)| {
                Series::new(
                    format!("{p} partitions x {r} replicas"),
                    w.delays
                        .iter()
                        .enumerate()
                        .map(|(g, d)| ((g + 1) as f64, f(d)))
                        .collect(),
                )
            })
            .collect()
    };
    plot::draw_png(
        &out.join("table5.2.png"),
        "Heron Table 5.2 on sim (xl170-cx4): waiting for every replica, TPC-C at maximum throughput",
        &[
            panel(
                "delayed transactions, of all a partition executed",
                "partition id",
                "delayed (%)",
                series(Delays::all_pct),
            ),
            panel(
                "average delay of a delayed request",
                "partition id",
                "delay (us)",
                series(Delays::delay_us),
            ),
        ],
    )?;
    let mut md = String::new();
    preamble(
        &mut md,
        "Heron Table 5.2 (waiting for every replica)",
        "heron-table5.2",
        commit,
        software,
    );
    let _ = writeln!(
        md,
        "TPC-C with the thesis's mix; phase 4 waits for every replica (extra wait \
         {WAIT_FOR_ALL}; it ran out {waited_out} times over every point). Each configuration at \
         its maximum throughput: clients doubled from 1 per partition until two doublings in a \
         row raised the best throughput by less than 5%, each point {duration} after a 10% warm-up; delays and latency are those of \
         the knee (the first point within 5% of the maximum). A request is delayed at a replica \
         when, in phase 4, a majority of every involved partition had executed it and not every \
         replica yet; the share is of all the transactions the partition's replicas executed, \
         as the thesis's \"percentage of delayed transactions\" (only multi-partition ones \
         coordinate: their share, in parentheses, is detail). Files: `summary.csv` (every \
         point), `delays.csv`, `table5.2.png`.\n"
    );
    md.push_str("| configuration | max throughput | mean latency | per partition: delayed (of multi-partition), avg delay (thesis) |\n|---|---|---|---|\n");
    for (&(p, r, tps, lat, pubd), w) in TABLE5_2.iter().zip(&found) {
        let per: Vec<String> = w
            .delays
            .iter()
            .zip(pubd)
            .enumerate()
            .map(|(g, (d, (ps, px)))| {
                format!(
                    "#{}: {:.1}% ({:.1}%), {:.1} us ({ps:.0}%, {px:.1} us)",
                    g + 1,
                    d.all_pct(),
                    d.multi_pct(),
                    d.delay_us()
                )
            })
            .collect();
        let _ = writeln!(
            md,
            "| {p} partitions x {r} replicas | {:.0} k/s{} ({:.1} k) | {:.1} us ({lat:.1}) | {} |",
            w.max / 1000.0,
            if w.capped { ", still growing" } else { "" },
            tps / 1000.0,
            w.latency_us,
            per.join("; ")
        );
    }
    let claims = table5_2_claims(&found);
    md.push_str("\n## Claims\n\n");
    md.push_str(&verdict::table(&claims));
    let (tps, lat) = (TABLE5_2[0].2, TABLE5_2[0].3);
    let (least, most) = range(&found, Delays::all_pct);
    let (least_multi, most_multi) = range(&found, Delays::multi_pct);
    let multi_share = {
        let (m, e) = found
            .iter()
            .flat_map(|w| &w.delays)
            .fold((0, 0), |(m, e), d| (m + d.multi, e + d.executed));
        100.0 * m as f64 / e.max(1) as f64
    };
    let _ = writeln!(
        md,
        "\n## Discussion\n\n\
         - **Throughput and latency together.** By Little's law a closed loop keeps throughput x \
         latency requests in flight: the thesis's {tps:.0} tps at {lat} us is {:.1} requests at \
         a time, for 2 partitions. Here {:.1} requests in flight reach the knee; a replica \
         executes its partition's requests one at a time and spends each multi-partition \
         one's coordination waiting, so throughput saturates with a few clients per partition \
         and further clients queue. The thesis's pairs are not one closed-loop point of this \
         model; its maxima are matched, its latencies are those of a nearly idle system.\n\
         - **Delayed transactions.** The thesis's percentage is of all transactions, though only \
         the multi-partition ones ({multi_share:.0}% of those executed here) coordinate and can \
         be delayed. Here {least:.0}-{most:.0}% of all transactions are delayed, \
         {least_multi:.0}-{most_multi:.0}% of the multi-partition ones. A replica is delayed \
         when it is not the last of the involved replicas to execute the request: if replicas \
         finished in random order, all but the last would be. The replicas of a partition \
         execute the same requests but not in lockstep (one-way latencies are drawn from the \
         profile's distribution, remote reads queue at the replicas they read from, each \
         replica's CPU is busy with RamCast's work as well), and only the last of them finds \
         every entry there. The thesis explains its trend over partition ids by the order in \
         which a replica writes its coordination entries (partition by partition); this \
         implementation writes them in that order too, and {}.\n",
        tps * lat / 1e6,
        found[0].max * found[0].latency_us / 1e6,
        if grows_with_partition_id(&found) {
            "the trend appears here as well"
        } else {
            "the trend does not appear"
        }
    );
    md.push_str(&crate::figure::software_bullet(
        software,
        "- **Software cost.** Under `none` no CPU time is charged: replicas reach their \
         coordination entries in a few RDMA writes, so delays are short.\n"
            .into(),
    ));
    verdict::write(out, &claims)?;
    write(&out.join("summary.md"), &md)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Rule;

    fn stages(total: f64, ordering: f64, coordination: f64, execution: f64) -> Breakdown {
        Breakdown {
            total,
            ordering,
            coordination,
            execution,
        }
    }

    /// The quoted stages are numbers on the 2-partition workload, "never above 3 us" a bound
    /// over every workload, and the execution stage holds by construction under a profile
    /// fitted to it.
    #[test]
    fn fig5_4_judges_stages_as_numbers_and_the_coordination_cap_as_a_bound() {
        let b = [
            stages(20.0, 10.0, 0.0, 10.0),
            stages(36.0, 17.0, 3.0, 16.0),
            stages(45.0, 20.0, 3.5, 21.5),
            stages(25.0, 12.0, 1.0, 12.0),
        ];
        let c = fig5_4_claims(&b, 10.2, false);
        let verdicts: Vec<Verdict> = c.iter().map(|c| c.verdict).collect();
        use Verdict::*;
        assert_eq!(
            verdicts,
            [
                Reproduced,     // 36 us against 35.4
                Reproduced,     // ordering 17 against 18
                Reproduced,     // execution 16
                NotReproduced,  // coordination 3 us against about 2
                NotReproduced,  // 3.5 us at 4 WH: above 3
                Reproduced,     // every stage grows from 1 to 4 WH
                ByConstruction  // TPC-C's share of multi-partition New-Orders
            ]
        );
        assert!(matches!(c[4].rule, Rule::AtMost { bound, .. } if bound == 3.0));
        assert!(matches!(c[5].rule, Rule::Ordering(_)));
        let fitted = fig5_4_claims(&b, 10.2, true);
        assert_eq!(fitted[2].verdict, ByConstruction);
    }

    /// The ~19 and ~35 us are two numbers, each judged on its own; an ordering over a type
    /// without a multi-partition run is left open.
    #[test]
    fn fig5_5_splits_single_and_multi_partition_latencies() {
        let means = [
            ("new-order", 20.0, Some(50.0)),
            ("payment", 15.0, Some(30.0)),
            ("order-status", 16.0, None),
            ("delivery", 17.0, None),
            ("stock-level", 60.0, None),
        ];
        let c = fig5_5_claims(&means, &[]);
        let verdicts: Vec<Verdict> = c.iter().map(|c| c.verdict).collect();
        use Verdict::*;
        assert_eq!(
            verdicts,
            [
                Reproduced,
                Reproduced,
                Reproduced,
                Reproduced,
                Reproduced,
                NotReproduced
            ]
        );
        assert!(matches!(c[5].rule, Rule::Number { published, .. } if published == 35.0));
        let mut none = means;
        none[1].2 = None;
        none[0].2 = None;
        let c = fig5_5_claims(&none, &[]);
        assert_eq!(c[3].verdict, Inconclusive);
        assert_eq!(c[5].verdict, Inconclusive);
    }

    /// Scaling factors are judged on their exponent (1.13 does not reproduce 1.37); a factor
    /// over a capped maximum is a lower bound, one under it an upper bound that decides only a
    /// factor already below the band, and the summaries over them are left open by a cap that
    /// could change them.
    #[test]
    fn table5_1_judges_factors_on_their_exponent_and_respects_capped_maxima() {
        let partitions = [1, 2, 4];
        let max = vec![
            vec![100.0, 113.0, 192.0],
            vec![100.0, 105.0, 160.0],
            vec![100.0, 98.0, 150.0],
            vec![100.0, 190.0, 376.0],
        ];
        let open = vec![vec![false; 3]; 4];
        let c = table5_1_claims(&partitions, &max, &[], &open);
        assert_eq!(c.len(), 4 * 2 + 3);
        assert!(matches!(c[0].rule, Rule::Factor { published, .. } if published == 1.37));
        assert_eq!(c[0].verdict, Verdict::NotReproduced, "1.13 against 1.37");
        assert_eq!(c[1].verdict, Verdict::Reproduced, "1.70 against 1.70");
        assert_eq!(
            c[8].verdict,
            Verdict::Reproduced,
            "1.05 and 0.98 gain little"
        );
        assert_eq!(c[9].verdict, Verdict::Reproduced, "least 1.52 >= 1.49");
        assert!(matches!(c[9].rule, Rule::AtLeast { bound, .. } if bound == 1.49));
        assert_eq!(c[10].verdict, Verdict::Reproduced, "local least 1.90");

        // RamCast's 2-partition maximum still growing: 1 -> 2 is a lower bound (below the
        // band, so open), 2 -> 4 an upper bound (1.70 in the band, so open).
        let mut capped = open.clone();
        capped[0][1] = true;
        let c = table5_1_claims(&partitions, &max, &[], &capped);
        assert_eq!(c[0].verdict, Verdict::LowerBound);
        assert_eq!(c[1].verdict, Verdict::Inconclusive);
        assert_eq!(c[9].verdict, Verdict::Inconclusive, "2 -> 4 may be lower");
        // An upper bound below the band decides.
        let mut low = max.clone();
        low[0][2] = 120.0;
        let c = table5_1_claims(&partitions, &low, &[], &capped);
        assert_eq!(c[1].verdict, Verdict::NotReproduced);
        assert_eq!(
            c[9].verdict,
            Verdict::NotReproduced,
            "1.06 at most, under 1.49"
        );
    }

    #[test]
    fn scaling_bounds_decide_only_what_a_lower_bound_cannot_change() {
        let s = |value, may_be_higher, may_be_lower| Scaling {
            value,
            ci95: None,
            may_be_higher,
            may_be_lower,
        };
        assert_eq!(s(1.1, false, false).at_most(1.2), Some(true));
        assert_eq!(s(1.1, true, false).at_most(1.2), None);
        assert_eq!(s(1.3, true, false).at_most(1.2), Some(false));
        assert_eq!(s(1.3, false, true).at_most(1.2), None);
        assert_eq!(s(1.5, true, false).at_least(1.49), Some(true));
        assert_eq!(s(1.5, false, true).at_least(1.49), None);
        assert_eq!(s(1.4, false, true).at_least(1.49), Some(false));
        assert_eq!(all_of([Some(true), None, Some(false)]), Some(false));
        assert_eq!(all_of([Some(true), None]), None);
        assert_eq!(all_of([Some(true), Some(true)]), Some(true));
    }

    fn waited(max: f64, capped: bool, latency_us: f64, shares: &[(u64, f64)]) -> Waited {
        Waited {
            max,
            max_ci: None,
            capped,
            latency_us,
            latency_ci: None,
            delays: shares
                .iter()
                .map(|&(delayed, delay_us)| Delays {
                    executed: 1_000,
                    multi: 110,
                    delayed,
                    delay_ns: (delay_us * 1e3) as u64 * delayed,
                })
                .collect(),
        }
    }

    /// The share of delayed transactions is of all transactions, as the thesis's: 50 of 1,000
    /// is 5% (under its 8%) though it is 45% of the 110 multi-partition ones, which the
    /// measured text gives as detail.
    #[test]
    fn table5_2_judges_the_delayed_share_over_all_transactions() {
        let found = [
            waited(53_000.0, false, 40.0, &[(10, 6.0), (50, 4.0)]),
            waited(42_000.0, false, 45.0, &[(20, 18.0), (40, 9.0)]),
            waited(
                90_000.0,
                false,
                41.0,
                &[(10, 29.0), (30, 12.0), (30, 7.0), (40, 2.0)],
            ),
            waited(
                74_000.0,
                false,
                52.0,
                &[(30, 16.0), (30, 11.0), (30, 5.0), (40, 8.0)],
            ),
        ];
        let c = table5_2_claims(&found);
        assert_eq!(c.len(), 4 * 2 + 4);
        assert!(c[..8].iter().all(|c| c.verdict == Verdict::Reproduced));
        let share = &c[8];
        assert!(matches!(share.rule, Rule::AtMost { bound, .. } if bound == 8.0));
        assert_eq!(share.value.as_ref().map(|m| m.value), Some(5.0));
        assert_eq!(share.verdict, Verdict::Reproduced);
        assert!(share.measured.contains("45.5%"), "{}", share.measured);
        assert_eq!(c[9].verdict, Verdict::Reproduced, "delays under latencies");
        assert_eq!(c[10].verdict, Verdict::Reproduced, "share up, delay down");
        assert_eq!(c[11].verdict, Verdict::Reproduced, "5 replicas below 3");
    }

    /// A maximum still growing at the cap is a lower bound, and an ordering it could overturn
    /// is left open.
    #[test]
    fn table5_2_capped_maxima_are_lower_bounds() {
        let found = [
            waited(53_000.0, false, 40.0, &[(10, 6.0), (50, 4.0)]),
            waited(30_000.0, true, 45.0, &[(20, 18.0), (40, 9.0)]),
            waited(90_000.0, false, 41.0, &[(10, 29.0), (40, 2.0)]),
            waited(74_000.0, false, 52.0, &[(30, 16.0), (40, 8.0)]),
        ];
        let c = table5_2_claims(&found);
        assert_eq!(c[2].verdict, Verdict::LowerBound);
        assert_eq!(c[2].measured, "at least 30000 tps");
        assert_eq!(c[11].verdict, Verdict::Inconclusive);
    }
}

#[cfg(test)]
mod sections {
    use super::*;

    /// Heron's clients tally each section of the window: every request issued in the window
    /// that completed is in one, the intervals hold the whole window's estimates, and
    /// `summary.csv` carries them.
    #[test]
    fn heron_points_get_intervals_by_sectioning() {
        let none = Software::load("none").unwrap();
        let (s, o) = one_kind(&testbed().unwrap(), &none, Kind::Payment, Nanos(2_000_000)).unwrap();
        assert_eq!(o.sections.len(), multicast::workload::SECTIONS);
        let in_sections: u64 = o
            .sections
            .iter()
            .flatten()
            .flatten()
            .map(|t| t.completed)
            .sum();
        let completed = o.latencies(None).len();
        // Requests issued in the warm-up but answered after it count in the window, not in a
        // section.
        assert!(
            in_sections > 0 && in_sections <= completed,
            "{in_sections} {completed}"
        );
        let t = s.throughput(&o);
        let (lo, hi) = s.throughput_ci(&o).expect("ten sections");
        assert!(lo <= t && t <= hi, "{lo} {t} {hi}");
        let mean = mean_us(&o, None);
        let (lo, hi) = o
            .mean_ci(mean, None, None)
            .expect("every section completed some");
        assert!(
            lo <= mean && mean <= hi && hi - lo > 0.0,
            "{lo} {mean} {hi}"
        );
        let rows = s.rows(&o, "payment", "c");
        assert!(rows
            .iter()
            .all(|r| r.per_s_ci95_lo.is_some() && r.mean_us_ci95_hi.is_some()));
    }
}
