//! Ridge's evaluation (section 6) on the simulator, profile `lan-1g` (the paper's 1 Gb/s LAN):
//! Fig. 1 (one group: throughput and latency against destinations, Ridge beside the ring and
//! direct baselines), Fig. 2 (throughput scaling with groups of four servers) and Fig. 3
//! (optimistic deliveries: latency, throughput and mistakes against load).
//!
//! As in section 6.2, a curve raises the load (closed-loop clients, doubled) as long as
//! throughput grows by 5% or more; throughput is the maximum, latency is read at the load of
//! maximum *power* (throughput over mean latency). The deployment is the paper's (section
//! 6.1): 3 acceptors per ensemble as processes of their own, the first the coordinator, and
//! the servers (the destinations) pure learners ([`ridge::Placement::Dedicated`]).

use crate::experiment::{Experiment, Measured};
use crate::figure::{
    in_parallel, in_parallel_longest_first, max_label, max_measure, max_throughput, measure, panel,
    saturate, saturated, size_label, software_bullet, us, write, Point,
};
use crate::plot::{self, Series, XScale};
use crate::protocols::Making;
use crate::runtime::Runtime;
use crate::verdict::{self, Claim, Measure};
use multicast::DestPolicy;
use ridge::paxos::Dissemination;
use ridge::Config;
use std::fmt::Write as _;
use std::path::Path;
use transport::runtime::sim::{Profile, Software};
use transport::Nanos;

mod fig1;
mod fig2;
mod fig3;
pub(crate) use fig1::*;
pub(crate) use fig2::*;
pub(crate) use fig3::*;

/// Acceptors per ensemble in every run of the evaluation (section 6.1).
const ACCEPTORS: usize = 3;

/// What one curve of a figure deploys.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Setup {
    groups: usize,
    /// Servers per group: the destinations of a single-group message.
    servers: usize,
    size: usize,
    dissemination: Dissemination,
    dest: DestPolicy,
}

/// How `compare` and the plots name a dissemination (`ridge`, `ridge:ring`, ...), so each
/// has its colour there.
fn label(d: Dissemination) -> String {
    match d {
        Dissemination::Ridge => "ridge".into(),
        other => format!("ridge:{}", other.name()),
    }
}

/// What the paper calls each dissemination.
fn paper_name(d: Dissemination) -> &'static str {
    match d {
        Dissemination::Ridge => "Ridge",
        Dissemination::Ring => "ring (Ring Paxos)",
        Dissemination::Direct => "direct (LibPaxos)",
    }
}

/// The simulated window of a run: long enough for a few hundred of the largest messages.
fn duration(size: usize, quick: bool) -> Nanos {
    let ms = match size {
        0..=1024 => 40,
        1025..=16384 => 80,
        _ => 200,
    };
    Nanos(ms * 1_000_000 / if quick { 2 } else { 1 })
}

/// One run of `setup` with `clients` closed-loop clients; `optimistic` turns on section 4.5's
/// deliveries with that wait, `skew` sets the clocks.
fn experiment(
    profile: &Profile,
    software: &Software,
    setup: &Setup,
    clients: usize,
    optimistic: Option<(Nanos, ridge::clock::Skew)>,
    window: Nanos,
) -> Experiment {
    let mut cfg = Config::new(setup.groups, setup.servers, clients);
    cfg.placement = ridge::Placement::Dedicated;
    cfg.acceptors = ACCEPTORS;
    cfg.dissemination = setup.dissemination;
    cfg.slot_bytes = super::slot_bytes_for(setup.size);
    let mut cfg = cfg.retain_within_budget();
    if let Some((wait, skew)) = optimistic {
        cfg.optimistic = Some(wait);
        cfg.skew = skew;
    }
    Experiment {
        deploy: crate::protocols::deployment::<super::Ridge>(cfg),
        dest: setup.dest,
        size: setup.size,
        // Phase 1 and the first null messages settle within a few milliseconds.
        warmup: Nanos((window.as_nanos() / 10).max(5_000_000)),
        duration: window,
        runtime: Runtime::Sim,
        profile: profile.clone(),
        software: software.clone(),
        seed: 1,
        log: false,
        dest_tree: None,
    }
}

/// The most clients a curve tries in all: a run of 1024 clients (each a process with a ring
/// to every other) takes 3 GB, and two side by side exhausted a 24 GB machine.
const MAX_CLIENTS: usize = 512;

/// The most clients a curve tries: enough to saturate a group (200 B messages wait up to
/// Delta for the idle `e_all`, so a group needs about a hundred clients; with one group, large
/// messages too: a learner delivers a value only after the previous one, which reaches it
/// anywhere in its distributor's burst to every other learner, so latency, and the clients it
/// takes to fill the pipeline, grow with the destinations), at most [`MAX_CLIENTS`]; a curve
/// stopped there still growing says so.
fn max_clients(setup: &Setup) -> usize {
    let per_group = if setup.size <= 1024 || setup.groups == 1 {
        128
    } else {
        32
    };
    (per_group * setup.groups).min(MAX_CLIENTS)
}

/// A measured curve: its points, the maximum throughput, and the point of maximum power.
pub(crate) struct Curve {
    setup: Setup,
    points: Vec<Point>,
}

impl Curve {
    fn measure(
        profile: &Profile,
        software: &Software,
        setup: Setup,
        quick: bool,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<Curve, String> {
        let window = duration(setup.size, quick);
        let points = saturate(
            |c| experiment(profile, software, &setup, c, None, window),
            max_clients(&setup),
            progress,
        )?;
        Ok(Curve { setup, points })
    }

    fn max_msgs(&self) -> f64 {
        max_throughput(&self.points)
    }

    /// Payload bits delivered per second, in Gb/s.
    fn max_gbps(&self) -> f64 {
        gbps(self.max_msgs(), self.setup.size)
    }

    /// The 95% interval of [`Curve::max_gbps`]: the best point's throughput interval.
    fn max_gbps_ci(&self) -> Option<(f64, f64)> {
        let size = self.setup.size;
        max_measure(&self.points)
            .ci95
            .map(|(lo, hi)| (gbps(lo, size), gbps(hi, size)))
    }

    /// Whether the sweep stopped at its client cap still growing (the maximum a lower bound).
    fn capped(&self) -> bool {
        !saturated(&self.points)
    }

    /// The point of maximum power: throughput over mean latency.
    fn power(&self) -> &Point {
        power_point(&self.points)
    }

    /// Its cells under [`CURVE_COLUMNS`].
    fn csv_cells(&self) -> [String; 6] {
        let p = self.power();
        [
            format!("{:.1}", self.max_msgs()),
            format!("{:.4}", self.max_gbps()),
            crate::figure::saturated(&self.points).to_string(),
            p.e.deploy.shape().2.to_string(),
            format!("{:.1}", mean_us(&p.m)),
            format!("{:.1}", us(&p.m.latency, 0.95)),
        ]
    }

    /// Its cells in a summary's table: maximum throughput, and clients, mean and p95 latency
    /// at maximum power.
    fn table_cells(&self) -> String {
        let p = self.power();
        format!(
            "{:.3} Gb/s ({:.0} msg/s){} | {}, {:.0} us, {:.0} us",
            self.max_gbps(),
            self.max_msgs(),
            max_label(&self.points),
            p.e.deploy.shape().2,
            mean_us(&p.m),
            us(&p.m.latency, 0.95)
        )
    }
}

fn gbps(msgs: f64, size: usize) -> f64 {
    msgs * size as f64 * 8.0 / 1e9
}

fn mean_us(m: &Measured) -> f64 {
    m.latency.mean() / 1000.0
}

/// The point whose throughput over mean latency is highest.
fn power_point(points: &[Point]) -> &Point {
    points
        .iter()
        .max_by(|a, b| {
            let p = |x: &Point| x.m.throughput / mean_us(&x.m).max(1e-9);
            p(a).total_cmp(&p(b))
        })
        .expect("a curve has a point")
}

/// Ridge Fig. 1's maximum throughput of 64 KB messages to 8 destinations, in Gb/s, run as
/// `harness figure ridge-fig1` runs it: the published number `ridge-java` is fitted to.
pub(crate) fn fig1_ridge_64kb_gbps(
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<f64, String> {
    let profile = Profile::load(crate::testbed::RIDGE).map_err(|e| e.to_string())?;
    let setup = Setup {
        groups: 1,
        servers: 8,
        size: 64 << 10,
        dissemination: Dissemination::Ridge,
        dest: DestPolicy::Single,
    };
    Ok(Curve::measure(&profile, software, setup, false, progress)?.max_gbps())
}

const SIZES: [usize; 3] = [200, 8 << 10, 64 << 10];

fn sizes(quick: bool) -> &'static [usize] {
    if quick {
        &[200, 64 << 10]
    } else {
        &SIZES
    }
}

fn profile_line(profile: &Profile, software: &Software) -> String {
    let c = &profile.calibration;
    format!(
        "Profile `{}` (simulator, seed 1): one-way {} us and {} Gb/s, calibrated on {}; software \
         `{}` v{} ({}). Every Ridge number below is a validation target{}.\n",
        profile.name,
        c.write_lat_us,
        c.write_bw_gbps,
        c.source,
        software.name,
        software.version,
        software.describe(),
        match &software.calibration.fit {
            Some(f) => format!(
                ", except the one `{}` is fitted to: {} {}",
                software.name, f.published, f.unit
            ),
            None => String::new(),
        }
    )
}

/// Writes every run of a figure as a `summary.csv` row to `throughput.csv`.
fn write_points<'a>(
    out: &Path,
    commit: &str,
    points: impl IntoIterator<Item = &'a Point>,
) -> Result<(), String> {
    let rows: Vec<_> = points
        .into_iter()
        .map(|p| p.e.summary_row(&p.m, commit))
        .collect();
    crate::experiment::write_summary(&out.join("throughput.csv"), &rows)
}

/// The columns of a curve's row in a figure's CSV, after the figure's own.
const CURVE_COLUMNS: [&str; 6] = [
    "max_msgs_per_s",
    "max_gbps",
    "saturated",
    "power_clients",
    "power_mean_us",
    "power_p95_us",
];

/// Figs. 1 and 2's curve tables: commit, software, size and dissemination, then the figure's
/// own columns (`head`, filled by `cells`), then every curve's [`CURVE_COLUMNS`].
fn curves_csv(
    commit: &str,
    software: &Software,
    curves: &[Curve],
    head: &[&str],
    cells: impl Fn(&Curve) -> Vec<String>,
) -> String {
    let common = ["commit", "software", "size", "dissemination"];
    crate::experiment::csv_table(
        &[&common[..], head, &CURVE_COLUMNS].concat(),
        curves.iter().map(|c| {
            [
                commit.to_string(),
                software.name.to_string(),
                c.setup.size.to_string(),
                c.setup.dissemination.name().to_string(),
            ]
            .into_iter()
            .chain(cells(c))
            .chain(c.csv_cells())
        }),
    )
}

/// Figs. 1 and 2's summary tables: size and dissemination, then the figure's own columns
/// (`head`, filled by `cells`), then each curve's [`Curve::table_cells`].
fn curves_table(curves: &[Curve], head: &[&str], cells: impl Fn(&Curve) -> Vec<String>) -> String {
    let columns = [
        &["size", "dissemination"][..],
        head,
        &["max throughput", "at power: clients, mean latency, p95"],
    ]
    .concat();
    let mut md = format!(
        "| {} |\n|{}\n",
        columns.join(" | "),
        "---|".repeat(columns.len())
    );
    for c in curves {
        let row = [
            size_label(c.setup.size),
            paper_name(c.setup.dissemination).to_string(),
        ]
        .into_iter()
        .chain(cells(c))
        .chain([c.table_cells()]);
        let _ = writeln!(md, "| {} |", row.collect::<Vec<_>>().join(" | "));
    }
    md
}

/// Every curve of Figs. 1 and 2: each message size, each dissemination, each `x` of the
/// figure's axis, deployed on `place(x)` = (groups, servers per group); messages to one group.
fn setups(
    quick: bool,
    disseminations: &[Dissemination],
    xs: &[usize],
    place: fn(usize) -> (usize, usize),
) -> Vec<Setup> {
    sizes(quick)
        .iter()
        .flat_map(|&size| {
            disseminations.iter().flat_map(move |&dissemination| {
                xs.iter().map(move |&x| {
                    let (groups, servers) = place(x);
                    Setup {
                        groups,
                        servers,
                        size,
                        dissemination,
                        dest: DestPolicy::Single,
                    }
                })
            })
        })
        .collect()
}

/// The caption of `figure`'s plots on `profile` and `software`: what each shows, then
/// `deployment`.
fn caption<'a>(
    figure: &'a str,
    profile: &'a Profile,
    software: &'a Software,
    deployment: &'a str,
) -> Box<dyn Fn(&str) -> String + 'a> {
    Box::new(move |what| {
        format!(
            "{figure} on sim ({}, software {}): {what}, {deployment}",
            profile.name, software.name
        )
    })
}

/// How Figs. 1 and 2 draw their curves: a panel per message size, a series per
/// dissemination, each curve at its setup's x.
struct Plots<'a> {
    /// Every caption, given what its plot shows ([`caption`]).
    caption: Box<dyn Fn(&str) -> String + 'a>,
    curves: &'a [Curve],
    disseminations: &'a [Dissemination],
    axis: Axis,
}

impl Plots<'_> {
    /// `file` under `out`: `y` of every curve (with its 95% interval, drawn as an error bar,
    /// where one is estimated), captioned as showing `what`.
    fn draw(
        &self,
        out: &Path,
        file: &str,
        what: &str,
        y_label: &str,
        y: &dyn Fn(&Curve) -> (f64, Option<Interval>),
    ) -> Result<(), String> {
        plot::draw_png(
            &out.join(file),
            &(self.caption)(what),
            &panels(self.curves, self.disseminations, &self.axis, y_label, y),
        )
    }

    /// `latency.png`: each curve's mean latency at maximum power.
    fn draw_latency(&self, out: &Path) -> Result<(), String> {
        self.draw(
            out,
            "latency.png",
            "latency at maximum power",
            "mean latency at max power (us)",
            // A mean: sectioning estimates quantiles' intervals only.
            &|c| (mean_us(&c.power().m), None),
        )
    }
}

/// Measures every curve of `setups` on all cores (profile `lan-1g`) and writes their runs to
/// `throughput.csv` under `out`.
fn measure_all(
    out: &Path,
    commit: &str,
    software: &Software,
    quick: bool,
    setups: &[Setup],
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(Profile, Vec<Curve>), String> {
    let profile = Profile::load(crate::testbed::RIDGE).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    // The curves with the most processes and the longest windows start first, so that no
    // core idles behind one of them at the end.
    let cost =
        |s: &Setup| (max_clients(s) + s.groups * s.servers) as u64 * duration(s.size, quick).0;
    let curves = in_parallel_longest_first(setups, cost, |s| {
        Curve::measure(&profile, software, *s, quick, progress)
    })?;
    write_points(out, commit, curves.iter().flat_map(|c| &c.points))?;
    Ok((profile, curves))
}

/// What a figure's panels put along x: `label`, on `scale`, is `x` of each curve's setup.
struct Axis {
    label: &'static str,
    scale: XScale,
    x: fn(&Setup) -> usize,
}

/// A 95% interval, `(lo, hi)`.
type Interval = (f64, f64);

/// One panel per message size, one series per dissemination, `y` of each curve against
/// `axis` (with its 95% interval, drawn as an error bar, where one is estimated).
fn panels(
    curves: &[Curve],
    disseminations: &[Dissemination],
    axis: &Axis,
    y_label: &str,
    y: &dyn Fn(&Curve) -> (f64, Option<Interval>),
) -> Vec<crate::plot::Panel> {
    let mut sizes: Vec<usize> = curves.iter().map(|c| c.setup.size).collect();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|size| {
            let series = disseminations
                .iter()
                .map(|&d| {
                    Series::with_errors(
                        label(d),
                        curves
                            .iter()
                            .filter(|c| c.setup.size == size && c.setup.dissemination == d)
                            .map(|c| {
                                let (v, ci) = y(c);
                                ((axis.x)(&c.setup) as f64, v, ci)
                            }),
                    )
                })
                .collect();
            let mut p = panel(
                &format!("{} messages", size_label(size)),
                axis.label,
                y_label,
                series,
            );
            p.x = axis.scale;
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the Ridge testbed, a second 64 KB message lands after the first's wait ran out on
    /// any clock, so the discussion says why mistakes are rare; with a wait longer than two
    /// wire times it has nothing to say.
    #[test]
    fn fig3_says_why_mistakes_are_rare_only_where_its_argument_holds() {
        let profile = Profile::load(crate::testbed::RIDGE).expect("the Ridge testbed");
        let size = 64 << 10;
        let text = few_mistakes(&profile, size, optimistic_wait(&profile, size));
        assert!(text.contains("Why so few mistakes"), "{text}");
        assert_eq!(few_mistakes(&profile, size, Nanos(10_000_000)), "");
    }
}
