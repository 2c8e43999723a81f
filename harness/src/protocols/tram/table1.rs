//! `harness figure tram-table1`: TRAM's failover, measured as in the paper's Table 1. The breadth
//! tree, 8 groups of 3 replicas, 100 clients multicasting 64 B messages to all 8 groups; a leader
//! change is triggered in all 8 groups at the same instant, three times, each after the previous
//! one completed. The statistics are over the messages the leader change delayed.
//!
//! How a change is triggered: the current leader of every group is paused for twice the
//! suspicion timeout, so its followers suspect it and the next rank runs the whole failover
//! (Algorithms 3-5); the paused leader resumes deposed, has its writes refused, reconnects its
//! queue pairs and follows. Event k pauses rank k-1, so leadership goes 0 -> 1 -> 2 -> 0.
//!
//! A message is *delayed* by event k when it was in flight at some time of the event's window
//! (from the trigger to 5 ms after it) and its latency exceeds the largest latency of the
//! fault-free interval before the first event. The whole run's delivery log is checked against
//! the five properties: no message is lost or duplicated across the three changes.

use crate::experiment::write_rows;
use crate::figure::{panel, write};
use crate::plot::{self, Series};
use crate::protocols::{Making, Progress};
use crate::verdict::{self, Claim, Measure};
use multicast::{check, collect_log, DestPolicy, GroupId, LoadSpec, Membership, Node, Tree};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig, Software};
use transport::Nanos;

/// The published Table 1 (us): per event, average, standard deviation, min, max.
const PUBLISHED: [(&str, [f64; 4]); 4] = [
    ("#1", [22544.0, 17424.0, 4420.0, 50730.0]),
    ("#2", [39344.0, 9397.0, 29879.0, 48806.0]),
    ("#3", [28151.0, 7038.0, 21925.0, 41777.0]),
    ("Total", [28251.0, 13430.0, 4420.0, 50730.0]),
];

/// A row of `table1.csv`: an event's delayed messages, measured beside published (us).
#[derive(serde::Serialize)]
struct Table1Row<'a> {
    event: &'a str,
    delayed_messages: usize,
    #[serde(serialize_with = "crate::stats::precision::fixed::<1, _>")]
    avg_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<1, _>")]
    sd_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<1, _>")]
    min_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<1, _>")]
    max_us: f64,
    #[serde(serialize_with = "crate::stats::precision::display")]
    published_avg_us: f64,
    #[serde(serialize_with = "crate::stats::precision::display")]
    published_sd_us: f64,
    #[serde(serialize_with = "crate::stats::precision::display")]
    published_min_us: f64,
    #[serde(serialize_with = "crate::stats::precision::display")]
    published_max_us: f64,
}

/// A row of `delayed.csv`: one delayed message.
#[derive(serde::Serialize)]
struct DelayedRow {
    event: usize,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    sent_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    latency_us: f64,
}

/// A row of `latency_over_time.csv`: one 250 us bucket of send times.
#[derive(serde::Serialize)]
struct OverTimeRow {
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    sent_us: f64,
    messages: usize,
    #[serde(serialize_with = "crate::stats::precision::fixed::<2, _>")]
    median_latency_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<2, _>")]
    max_latency_us: f64,
}

/// A row of `permission_bounds.csv`: an event's average at one end of a documented range.
#[derive(serde::Serialize)]
struct BoundRow<'a> {
    varied: &'a str,
    ns: u64,
    event: &'a str,
    #[serde(serialize_with = "crate::stats::precision::fixed::<1, _>")]
    avg_us: f64,
    #[serde(serialize_with = "crate::stats::precision::display")]
    published_avg_us: f64,
    violations: usize,
}

/// Average, standard deviation, min, max of `xs` (us), and the count.
fn stats(xs: &[f64]) -> (usize, [f64; 4]) {
    if xs.is_empty() {
        return (0, [0.0; 4]);
    }
    let n = xs.len() as f64;
    let avg = xs.iter().sum::<f64>() / n;
    let sd = (xs.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / n).sqrt();
    let min = xs.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = xs.iter().cloned().fold(0.0, f64::max);
    (xs.len(), [avg, sd, min, max])
}

/// The access-change costs tried between the ends of the profile's range, nanoseconds.
const PERMISSION_STEPS: [u64; 4] = [30_000, 100_000, 300_000, 1_000_000];

/// `n` milliseconds.
fn ms(n: u64) -> Nanos {
    Nanos(n * 1_000_000)
}

/// The failover experiment: the deployment and its load, the three leader changes (every
/// group's leader paused at each event) and the window after each trigger that a delayed
/// message overlaps.
struct Failover {
    cfg: tram::Config,
    clients: usize,
    load: LoadSpec,
    faults: Vec<Fault>,
    events: [Nanos; 3],
    window: Nanos,
    stop_at: Nanos,
}

impl Failover {
    /// The breadth tree, 8 groups of 3 replicas, `clients` to all groups; event k pauses every
    /// group's rank k-1 for twice the suspicion timeout.
    fn new(clients: usize) -> Failover {
        let tree = Tree::preset("breadth").expect("preset");
        let mut cfg = tram::Config::new(tree.clone(), 3, clients);
        cfg.slot_bytes = tram::layout::Layout::slot_bytes_for(64);
        let events = [ms(10), ms(30), ms(50)];
        let stop_at = ms(65);
        let pause = Nanos(cfg.timing.suspect.as_nanos() * 2);
        let mut faults = Vec::new();
        for (k, &at) in events.iter().enumerate() {
            for g in 0..cfg.group_count() {
                faults.push(Fault::Pause {
                    at,
                    process: cfg.server(GroupId(g as u8), k),
                    duration: pause,
                });
            }
        }
        let load = LoadSpec {
            dest: DestPolicy::All,
            groups: cfg.group_count(),
            tree: Some(Arc::new(tree)),
            size: 64,
            warmup_end: ms(2),
            stop_at,
        };
        Failover {
            cfg,
            clients,
            load,
            faults,
            events,
            window: ms(5),
            stop_at,
        }
    }

    /// The suspicion timeout of the deployment.
    fn suspect(&self) -> Nanos {
        self.cfg.timing.suspect
    }

    /// The event times, in ms, joined by commas.
    fn event_ms(&self) -> String {
        self.events
            .map(|e| (e.as_nanos() / 1_000_000).to_string())
            .join(", ")
    }

    /// Runs the experiment on `profile` and says what it measured, as `label`.
    fn run(
        &self,
        label: &str,
        profile: &Profile,
        software: &Software,
        progress: Progress<'_>,
    ) -> Measured {
        let m = self.measure(profile, software);
        progress(&format!(
            "  {label}: {} multicasts completed; fault-free max latency {:.1} us; delayed per event {:?}; {} violations{}",
            m.done.len(),
            m.baseline_max,
            m.per_event.iter().map(Vec::len).collect::<Vec<_>>(),
            m.violations.len(),
            m.violations
                .first()
                .map_or(String::new(), |v| format!(" (first: {v})"))
        ));
        m
    }
}

/// The profile at both ends of its documented ranges: the reconnect of a queue pair in error,
/// and an access change (also at [`PERMISSION_STEPS`] between its ends, to see where the
/// failover stops keeping up).
fn variants(profile: &Profile) -> Vec<(&'static str, u64, Profile)> {
    let mut variants = Vec::new();
    if let Some(r) = &profile.nic.reconnect_range {
        for ns in [r.low_ns, r.high_ns] {
            let mut p = profile.clone();
            p.nic.reconnect_ns = ns;
            variants.push(("reconnect", ns, p));
        }
    }
    if let Some(c) = &profile.nic.permission_change {
        let between = PERMISSION_STEPS
            .iter()
            .copied()
            .filter(|&ns| c.low_ns < ns && ns < c.high_ns);
        let ladder: Vec<u64> = std::iter::once(c.low_ns)
            .chain(between)
            .chain(std::iter::once(c.high_ns))
            .collect();
        for ns in ladder {
            let mut p = profile.clone();
            p.nic.permission_change.as_mut().expect("declared").ns = ns;
            variants.push(("permission change", ns, p));
        }
    }
    variants
}

/// The run at one end of a documented range: what was varied, its value, the average latency
/// of the delayed messages per event and in total, the violations (and the first), and the
/// multicasts completed.
struct Bound {
    varied: &'static str,
    ns: u64,
    avgs: Vec<f64>,
    violations: usize,
    first: Option<String>,
    completed: usize,
}

impl Bound {
    /// What run `m` of the profile with `varied` at `ns` measured.
    fn of(varied: &'static str, ns: u64, m: &Measured) -> Bound {
        let avg = |lats: Vec<f64>| stats(&lats).1[0];
        let mut avgs: Vec<f64> = m
            .per_event
            .iter()
            .map(|e| avg(e.iter().map(|d| d.1).collect()))
            .collect();
        avgs.push(avg(m.per_event.iter().flatten().map(|d| d.1).collect()));
        Bound {
            varied,
            ns,
            avgs,
            violations: m.violations.len(),
            first: m.violations.first().map(|v| v.to_string()),
            completed: m.done.len(),
        }
    }
}

/// A row of Table 1: the event's name, its delayed messages, their statistics (us) and the
/// published ones.
type Row = (&'static str, usize, [f64; 4], [f64; 4]);

/// Runs the experiment and writes `table1.csv`, `delayed.csv`, `latency_over_time.csv`,
/// `table1.png` and `summary.md`.
pub(crate) fn table1(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, quick, software, progress) = m.parts();
    let profile = Profile::load(crate::testbed::TRAM).map_err(|e| e.to_string())?;
    let f = Failover::new(if quick { 20 } else { 100 });
    progress(&format!(
        "tram-table1: breadth tree, 8 groups x 3 replicas, {} clients to all groups; leader changes at {} ms",
        f.clients,
        f.event_ms()
    ));
    let measured = f.run("the profile", &profile, software, progress);
    let bounds: Vec<Bound> = variants(&profile)
        .iter()
        .map(|(what, ns, p)| {
            let label = format!("{what} {}", Nanos(*ns));
            Bound::of(what, *ns, &f.run(&label, p, software, progress))
        })
        .collect();
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let rows = write_table(out, &measured.per_event)?;
    write_delayed(out, &measured.per_event)?;
    write_over_time(out, &measured.done)?;
    let mut md = summary_head(&profile, commit, &f, measured.baseline_max);
    md += &table_md(&rows);
    md += &correctness_md(&measured.log, &measured.violations, &measured.reigns);
    if !bounds.is_empty() {
        md += &bounds_md(&profile, &bounds, f.suspect());
        write_bounds(out, &bounds)?;
    }
    md.push_str("## Claims\n\n");
    let averages: Vec<(&str, f64)> = rows.iter().map(|(name, _, s, _)| (*name, s[0])).collect();
    let claims = claims(&averages, measured.violations.len(), measured.deliveries());
    md.push_str(&verdict::table(&claims));
    let suspect = f.suspect();
    md.push_str(&crate::protocols::tram::figure_notes::table1(
        &profile,
        &crate::protocols::tram::figure_notes::Table1 {
            suspect_us: suspect.as_us_f64(),
            pause_us: 2.0 * suspect.as_us_f64(),
            baseline_max_us: measured.baseline_max,
            delayed_max_us: measured.delayed_max_us(),
            events: f.events.len(),
            groups: f.cfg.tree.groups(),
        },
    ));
    write(&out.join("summary.md"), &md)?;
    verdict::write(out, &claims)?;
    if let Some(first) = measured.violations.first() {
        return Err(format!(
            "the failover run violated atomic multicast: {first}"
        ));
    }
    Ok(())
}

/// Writes `table1.csv`: each event's delayed messages (and all of them together) beside the
/// published statistics; returns its rows.
fn write_table(out: &Path, per_event: &[Vec<(f64, f64)>]) -> Result<Vec<Row>, String> {
    let all: Vec<f64> = per_event.iter().flatten().map(|d| d.1).collect();
    let rows: Vec<Row> = PUBLISHED
        .iter()
        .enumerate()
        .map(|(k, &(name, published))| {
            let lats: Vec<f64> = if k < 3 {
                per_event[k].iter().map(|d| d.1).collect()
            } else {
                all.clone()
            };
            let (n, s) = stats(&lats);
            (name, n, s, published)
        })
        .collect();
    let csv: Vec<Table1Row<'_>> = rows
        .iter()
        .map(|&(event, n, s, p)| Table1Row {
            event,
            delayed_messages: n,
            avg_us: s[0],
            sd_us: s[1],
            min_us: s[2],
            max_us: s[3],
            published_avg_us: p[0],
            published_sd_us: p[1],
            published_min_us: p[2],
            published_max_us: p[3],
        })
        .collect();
    write_rows(&out.join("table1.csv"), &csv)?;
    Ok(rows)
}

/// Writes `delayed.csv`: every delayed message, by event.
fn write_delayed(out: &Path, per_event: &[Vec<(f64, f64)>]) -> Result<(), String> {
    let delayed: Vec<DelayedRow> = per_event
        .iter()
        .enumerate()
        .flat_map(|(k, v)| {
            v.iter().map(move |&(sent_us, latency_us)| DelayedRow {
                event: k + 1,
                sent_us,
                latency_us,
            })
        })
        .collect();
    write_rows(&out.join("delayed.csv"), &delayed)
}

/// Writes `latency_over_time.csv` and plots it in `table1.png`: the median and the largest
/// latency of the messages sent in each 250 us bucket.
fn write_over_time(out: &Path, done: &[(f64, f64)]) -> Result<(), String> {
    let bucket = 250.0;
    let mut over_time = Vec::new();
    let (mut med, mut max) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < done.len() {
        let b = (done[i].0 / bucket).floor();
        let mut lats = Vec::new();
        while i < done.len() && (done[i].0 / bucket).floor() == b {
            lats.push(done[i].1);
            i += 1;
        }
        lats.sort_by(f64::total_cmp);
        let t = b * bucket / 1000.0;
        let (m, x) = (lats[lats.len() / 2], *lats.last().expect("non-empty"));
        over_time.push(OverTimeRow {
            sent_us: b * bucket,
            messages: lats.len(),
            median_latency_us: m,
            max_latency_us: x,
        });
        med.push((t, m));
        max.push((t, x));
    }
    write_rows(&out.join("latency_over_time.csv"), &over_time)?;
    let mut p = panel(
        "latency of messages by send time (250 us buckets)",
        "send time (ms)",
        "latency (us, log scale)",
        vec![Series::new("median", med), Series::new("max", max)],
    );
    p.log_y = true;
    plot::draw_png(
        &out.join("table1.png"),
        "TRAM Table 1 on sim: 8 leader changes at 10, 30, 50 ms",
        &[p],
    )
}

/// The summary's title and its account of the experiment.
fn summary_head(profile: &Profile, commit: &str, f: &Failover, baseline_max: f64) -> String {
    let suspect = f.suspect();
    format!(
        "# TRAM Table 1 (failover), reproduced on the simulator\n\n\
         Profile `{}` (simulator, seed 1), calibrated on ib_write_lat {} us and ib_write_bw {} \
         Gb/s only. Command: `harness figure tram-table1` (commit {commit}). Breadth tree, 8 \
         groups x 3 replicas, {} closed-loop clients multicasting 64 B to all 8 groups \
         from 2 ms to {} ms. Leader changes in all 8 groups at once at {} ms: each pauses every \
         group's current leader for {} (twice the suspicion timeout of {}), so the next rank \
         runs the failover (Algorithms 3-5). A message is *delayed* by an event when it was in \
         flight during the 5 ms after the trigger and took longer than the largest latency of \
         the fault-free interval before the first event ({baseline_max:.1} us). Files: \
         `table1.csv`, `delayed.csv` (every delayed message), `latency_over_time.csv`, \
         `table1.png`.\n\n",
        profile.name,
        profile.calibration.write_lat_us,
        profile.calibration.write_bw_gbps,
        f.clients,
        f.stop_at.as_nanos() / 1_000_000,
        f.event_ms(),
        Nanos(suspect.as_nanos() * 2),
        suspect
    )
}

/// The measured table beside the published one.
fn table_md(rows: &[Row]) -> String {
    let mut md = String::from("| event | delayed messages | avg (us) | sd (us) | min (us) | max (us) | published avg / sd / min / max (us) | measured avg / published avg |\n|---|---|---|---|---|---|---|---|\n");
    for (name, n, s, p) in rows {
        let _ = writeln!(
            md,
            "| {name} | {n} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} / {:.0} / {:.0} / {:.0} | {:.3} |",
            s[0], s[1], s[2], s[3], p[0], p[1], p[2], p[3], s[0] / p[0]
        );
    }
    md
}

/// What the check of the run's delivery log found, and the leaderships each replica took.
fn correctness_md(
    log: &multicast::DeliveryLog,
    violations: &[multicast::Violation],
    reigns: &[u64],
) -> String {
    let mut md = format!(
        "\nCorrectness across the three changes: the run's delivery log ({} processes, {} \
         multicasts, {} deliveries) checked against the five properties: {} violations. \
         Leaderships taken per replica (rank order, group by group): {:?}.\n\n",
        log.processes.len(),
        log.multicasts.len(),
        log.deliveries.values().map(Vec::len).sum::<usize>(),
        violations.len(),
        reigns
    );
    for v in violations.iter().take(10) {
        let _ = writeln!(md, "- violation: {v}");
    }
    md
}

/// The profile's documented ranges, a bullet each.
fn ranges_md(profile: &Profile) -> String {
    let range = |what: &str, low: u64, high: u64, point: u64, source: &str| {
        format!(
            "- {what}: {} to {}, {} in the profile ({source})\n",
            Nanos(low),
            Nanos(high),
            Nanos(point)
        )
    };
    let mut ranges = String::new();
    if let Some(r) = &profile.nic.reconnect_range {
        ranges += &range(
            "reconnect of a queue pair in error (`reconnect_ns`)",
            r.low_ns,
            r.high_ns,
            profile.nic.reconnect_ns,
            &r.source,
        );
    }
    if let Some(c) = &profile.nic.permission_change {
        ranges += &range(
            "one access change, charged to the process making it",
            c.low_ns,
            c.high_ns,
            c.ns,
            &c.source,
        );
    }
    ranges
}

/// The summary's section on the runs at the ends of the documented ranges.
fn bounds_md(profile: &Profile, bounds: &[Bound], suspect: Nanos) -> String {
    let mut md = format!(
        "## What a permission change costs: the table at both ends of its range\n\n\
         A leader change moves write permissions: followers revoke the old leader and grant \
         the new one, and the old leader's next write is refused and puts its queue pair in \
         error until a reconnect. `{}` declares both costs as documented ranges:\n\n{}\n\
         The same run with one of them at an end of its range (the access change also at \
         steps between), the rest as in the profile (average latency of the delayed \
         messages, us; multicasts completed in the whole run):\n\n\
         | varied | value | completed | #1 | #2 | #3 | Total | Total / published | violations |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        profile.name,
        ranges_md(profile),
    );
    for b in bounds {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.3} | {}{} |",
            b.varied,
            Nanos(b.ns),
            b.completed,
            b.avgs[0],
            b.avgs[1],
            b.avgs[2],
            b.avgs[3],
            b.avgs[3] / PUBLISHED[3].1[0],
            b.violations,
            b.first
                .as_ref()
                .map_or(String::new(), |v| format!(" (first: {v})"))
        );
    }
    let _ = writeln!(
        md,
        "\nThe verdicts below are at the profile's values. File: `permission_bounds.csv`. \
         A process changing access is busy meanwhile: it neither polls nor beats its \
         heartbeat, so once a grant outlasts the suspicion timeout ({}) the other replicas \
         suspect the granting ones, candidacies follow one another, and multicasts stop \
         completing (the violations are then liveness: validity and agreement at the end of \
         the run, not order). A deployment with such permission changes needs a longer \
         timeout, and its failover takes at least that long.\n",
        suspect
    );
    md
}

/// Writes `permission_bounds.csv`: each bound's average per event beside the published one.
fn write_bounds(out: &Path, bounds: &[Bound]) -> Result<(), String> {
    let csv: Vec<BoundRow<'_>> = bounds
        .iter()
        .flat_map(|b| {
            PUBLISHED
                .iter()
                .zip(&b.avgs)
                .map(move |((name, published), avg)| BoundRow {
                    varied: b.varied,
                    ns: b.ns,
                    event: name,
                    avg_us: *avg,
                    published_avg_us: published[0],
                    violations: b.violations,
                })
        })
        .collect();
    write_rows(&out.join("permission_bounds.csv"), &csv)
}

/// Table 1's claims: each event's published average, a quoted number, against the measured
/// average of the messages it delayed (`averages`, by the names of [`PUBLISHED`]); and the
/// correctness the paper argues, as a bound of no violation in the run's `deliveries`.
fn claims(averages: &[(&str, f64)], violations: usize, deliveries: usize) -> Vec<Claim> {
    let mut claims: Vec<Claim> = PUBLISHED
        .iter()
        .zip(averages)
        .map(|((name, published), &(_, avg))| {
            let what = match *name {
                "Total" => "the three leader changes together".to_string(),
                e => format!("leader change {e}"),
            };
            Claim::number(
                &format!("messages delayed by {what}: average {:.0} us", published[0]),
                published[0],
                "us",
                Measure::point(avg),
            )
        })
        .collect();
    claims.push(Claim::at_most(
        "TRAM's failover preserves the atomic multicast properties (the paper's correctness \
         argument), here with all 8 groups changing leader at once, three times, under load",
        0.0,
        "violations",
        Measure::point(violations as f64).detail(format!(
            "of the five properties, in {deliveries} deliveries"
        )),
    ));
    claims
}

/// What one run of the experiment measured.
struct Measured {
    /// Every completion, as (sent, latency) in us, by send time.
    done: Vec<(f64, f64)>,
    /// Per event, the messages it delayed, as (sent, latency) in us.
    per_event: Vec<Vec<(f64, f64)>>,
    /// The largest latency of the fault-free interval before the first event, us.
    baseline_max: f64,
    log: multicast::DeliveryLog,
    violations: Vec<multicast::Violation>,
    reigns: Vec<u64>,
}

impl Measured {
    /// Deliveries in the run's log, over every process.
    fn deliveries(&self) -> usize {
        self.log.deliveries.values().map(Vec::len).sum()
    }

    /// The largest latency of a message an event delayed, us.
    fn delayed_max_us(&self) -> f64 {
        self.per_event
            .iter()
            .flatten()
            .map(|d| d.1)
            .fold(0.0, f64::max)
    }
}

impl Failover {
    /// Runs the experiment on `profile` and sorts the delayed messages by event.
    fn measure(&self, profile: &Profile, software: &Software) -> Measured {
        let (cfg, load, events, window) = (&self.cfg, &self.load, &self.events, self.window);
        let mut sc = SimConfig::new(1, profile.clone());
        sc.software = software.for_protocol(<super::Tram as crate::protocols::Multicast>::NAME);
        sc.faults = self.faults.clone();
        let mut sim = Sim::new(sc, tram::nodes(cfg, load.clone(), 1, true));
        sim.run(Some(self.stop_at.saturating_add(ms(20))));
        // Every completion, as (sent, latency) in us.
        let mut done: Vec<(f64, f64)> = Vec::new();
        let mut reigns = Vec::new();
        for n in sim.processes() {
            match n {
                Node::Client(c) => done.extend(
                    c.completions
                        .iter()
                        .flatten()
                        .map(|d| (d.sent_at.as_us_f64(), d.latency.as_us_f64())),
                ),
                Node::Server(s) => reigns.push(s.server.reigns()),
                Node::Auxiliary(_) => unreachable!("TRAM has no auxiliary process"),
            }
        }
        done.sort_by(|a, b| a.0.total_cmp(&b.0));
        let first = events[0].as_us_f64();
        let baseline_max = done
            .iter()
            .filter(|d| d.0 >= ms(2).as_us_f64() && d.0 + d.1 < first)
            .map(|d| d.1)
            .fold(0.0, f64::max);
        let mut per_event: Vec<Vec<(f64, f64)>> = vec![Vec::new(); events.len()];
        for &(sent, lat) in &done {
            if lat <= baseline_max {
                continue;
            }
            for (k, e) in events.iter().enumerate() {
                let (from, to) = (e.as_us_f64(), e.saturating_add(window).as_us_f64());
                if sent < to && sent + lat > from {
                    per_event[k].push((sent, lat));
                    break;
                }
            }
        }
        let log = collect_log(sim.processes(), |p| sim.crashed(p));
        let violations = check(&log);
        Measured {
            done,
            per_event,
            baseline_max,
            log,
            violations,
            reigns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Rule, Verdict};

    /// The published averages are quoted numbers, judged within 25%; correctness is a bound
    /// of no violation.
    #[test]
    fn the_failover_averages_are_numbers_and_correctness_a_bound() {
        let averages = [
            ("#1", 1000.0),
            ("#2", 39344.0 * 1.2),
            ("#3", 28151.0 * 0.7),
            ("Total", 28251.0),
        ];
        let c = claims(&averages, 0, 1000);
        assert_eq!(c.len(), 5);
        assert_eq!(
            c[0].rule,
            Rule::Number {
                published: 22544.0,
                unit: "us".into(),
                tolerance: crate::verdict::TOLERANCE
            }
        );
        assert_eq!(
            c[0].words,
            "messages delayed by leader change #1: average 22544 us"
        );
        assert_eq!(
            c.iter().map(|c| c.verdict).collect::<Vec<_>>(),
            [
                Verdict::NotReproduced,
                Verdict::Reproduced,
                Verdict::NotReproduced,
                Verdict::Reproduced,
                Verdict::Reproduced
            ]
        );
        assert!(c[3].words.contains("the three leader changes together"));
        assert!(matches!(c[4].rule, Rule::AtMost { bound, .. } if bound == 0.0));
        assert_eq!(
            c[4].measured,
            "0 violations (of the five properties, in 1000 deliveries)"
        );
        assert_eq!(
            claims(&averages, 2, 1000)[4].verdict,
            Verdict::NotReproduced
        );
    }
}
