//! `harness figure tram-fig5 | tram-fig6 | tram-fig7 | tram-fig8`: TRAM's paper figures on the
//! simulator (profile `r320-cx3`, the paper's testbed), with CSV, PNG and a summary that checks
//! the paper's claims against the measured numbers. `tram-table1` lives in
//! [`crate::protocols::tram::table1`].
//!
//! Latency is a single client's (median and p95), throughput the saturated one (clients doubled
//! until throughput grows by less than 5%), as in the paper.

use crate::experiment::Experiment;
use crate::figure::{
    in_parallel, max_measure, measure, panel, saturate, saturated, size_label, us, write, Point,
};
use crate::plot::{self, Panel, Series};
use crate::protocols::Making;
use crate::protocols::PaperFigure;
use crate::runtime::Runtime;
use crate::verdict::{self, Claim, Measure};
use multicast::{DestPolicy, Tree};
use std::fmt::Write as _;
use transport::runtime::sim::{Profile, Software};
use transport::Nanos;

mod fig5_6;
mod fig7;
mod fig8;
pub(crate) use fig5_6::*;
pub(crate) use fig7::*;
pub(crate) use fig8::*;

/// A protocol configuration of a figure: TRAM on a tree, or RamCast.
#[derive(Clone, Debug)]
pub(crate) enum Variant {
    /// TRAM on this tree.
    Tram(Tree),
    /// RamCast; `dest_tree` draws adjacent destinations for Fig. 6.
    Ramcast { dest_tree: Option<Tree> },
}

impl Variant {
    fn tram(name: &str) -> Variant {
        Variant::Tram(Tree::preset(name).expect("preset"))
    }

    fn label(&self) -> String {
        match self {
            Variant::Tram(t) => format!("TRAM {t}"),
            Variant::Ramcast { .. } => "RamCast".into(),
        }
    }
}

/// What the figures vary along x.
#[derive(Clone, Copy, Debug)]
struct Knobs {
    replicas: usize,
    size: usize,
    dest: DestPolicy,
}

fn experiment(
    profile: &Profile,
    software: &Software,
    v: &Variant,
    k: Knobs,
    clients: usize,
    duration: Nanos,
) -> Experiment {
    let (deploy, dest_tree) = match v {
        Variant::Tram(tree) => {
            let mut cfg = tram::Config::new(tree.clone(), k.replicas, clients);
            cfg.slot_bytes = tram::layout::Layout::slot_bytes_for(k.size);
            (
                crate::protocols::deployment::<crate::protocols::tram::Tram>(cfg),
                None,
            )
        }
        Variant::Ramcast { dest_tree } => {
            let groups = 8;
            let dst_groups = k.dest.max_groups(groups);
            let mut cfg = ramcast::Config::new(groups, k.replicas, clients);
            cfg.slot_bytes = ramcast::layout::slot_bytes_for(k.size, dst_groups);
            (
                crate::protocols::deployment::<crate::protocols::ramcast::Ramcast>(cfg),
                dest_tree.clone(),
            )
        }
    };
    Experiment {
        deploy,
        dest: k.dest,
        size: k.size,
        warmup: Nanos(duration.as_nanos() / 10),
        duration,
        runtime: Runtime::Sim,
        profile: profile.clone(),
        software: software.clone(),
        seed: 1,
        log: false,
        dest_tree,
    }
}

/// One (x, variant) cell: single-client latency and saturated throughput.
struct Cell {
    x: f64,
    variant: String,
    p50: f64,
    /// The 95% interval of `p50`, when every section of the run completed a message.
    p50_ci: Option<(f64, f64)>,
    p95: f64,
    tput: f64,
    /// The 95% interval of `tput` (the best point's).
    tput_ci: Option<(f64, f64)>,
    /// `tput` is a lower bound: the sweep stopped at its client cap still growing.
    capped: bool,
}

impl Cell {
    fn max(&self) -> Max {
        Max {
            tput: self.tput,
            capped: self.capped,
        }
    }
}

/// A maximum throughput (msg/s), and whether it is only a lower bound.
#[derive(Clone, Copy, Debug)]
struct Max {
    tput: f64,
    capped: bool,
}

impl Max {
    /// The best of `maxima`: the highest, a lower bound when any of them is (a capped one
    /// below it could still overtake it).
    fn best(maxima: impl IntoIterator<Item = Max>) -> Option<Max> {
        maxima.into_iter().reduce(|a, b| Max {
            tput: a.tput.max(b.tput),
            capped: a.capped || b.capped,
        })
    }
}

/// The result of comparing measured maxima: whether the comparison holds, and whether the
/// maxima decide it (a lower bound decides only a comparison it already wins or loses).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Outcome {
    holds: bool,
    decided: bool,
}

impl Outcome {
    /// `a` above `b`. A capped `b` could still overtake `a`, and a capped `a` could still pass
    /// `b`: so "above" is undecided when `b` is capped, "not above" when `a` is.
    fn above(a: Max, b: Max) -> Outcome {
        let holds = a.tput > b.tput;
        Outcome {
            holds,
            decided: if holds { !b.capped } else { !a.capped },
        }
    }

    /// Every one of `outcomes` holds: decided when each is, or when one that fails is.
    fn all(outcomes: impl IntoIterator<Item = Outcome>) -> Outcome {
        let v: Vec<Outcome> = outcomes.into_iter().collect();
        let holds = v.iter().all(|o| o.holds);
        Outcome {
            holds,
            decided: if holds {
                v.iter().all(|o| o.decided)
            } else {
                v.iter().any(|o| !o.holds && o.decided)
            },
        }
    }

    /// An ordering claim judged by this outcome, inconclusive when the maxima do not decide it.
    fn ordering(self, words: &str, rule: &str, measured: String) -> Claim {
        Claim::ordering(words, rule, measured, self.holds).undecided_if(!self.decided, UNDECIDED)
    }
}

/// Why a comparison of maxima is inconclusive.
const UNDECIDED: &str =
    "it rests on a maximum still growing at the client cap, a lower bound that does not decide it";

/// The lowest and the highest of `values`.
fn spread(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .fold((f64::INFINITY, 0.0), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// What every run of a figure shares.
struct Ctx<'a> {
    profile: &'a Profile,
    software: &'a Software,
    duration: Nanos,
    commit: &'a str,
    progress: &'a (dyn Fn(&str) + Sync),
}

impl<'a> Ctx<'a> {
    /// The runs of a figure made as `m` says on `profile`, each window 2 ms (0.5 ms when
    /// quick); creates the figure's directory.
    fn start(m: &Making<'a>, profile: &'a Profile) -> Result<Ctx<'a>, String> {
        let (out, commit, quick, software, progress) = m.parts();
        std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
        Ok(Ctx {
            profile,
            software,
            duration: Nanos(if quick { 500_000 } else { 2_000_000 }),
            commit,
            progress,
        })
    }
}

/// Measures every variant at every x; `knobs(x)` sets the experiment; saturated throughput
/// only with `throughput`. Returns the cells and every run's `summary.csv` row.
fn sweep(
    ctx: &Ctx<'_>,
    xs: &[f64],
    variants: &[Variant],
    knobs: impl Fn(f64) -> Knobs + Sync,
    throughput: bool,
) -> Result<(Vec<Cell>, Vec<crate::experiment::SummaryRow>), String> {
    let (profile, software, duration, commit, progress) = (
        ctx.profile,
        ctx.software,
        ctx.duration,
        ctx.commit,
        ctx.progress,
    );
    // Every (x, variant) point on its own core; results in the order of the loops.
    let jobs: Vec<(f64, &Variant)> = xs
        .iter()
        .flat_map(|&x| variants.iter().map(move |v| (x, v)))
        .collect();
    let done = in_parallel(&jobs, |&(x, v)| {
        let mut rows = Vec::new();
        let k = knobs(x);
        let one_e = experiment(profile, software, v, k, 1, Nanos(duration.as_nanos() * 2));
        let one = measure(&one_e)?;
        rows.push(one_e.summary_row(&one, commit));
        let (tput, tput_ci, capped) = if throughput {
            let points: Vec<Point> = saturate(
                |c| experiment(profile, software, v, k, c, duration),
                256,
                progress,
            )?;
            rows.extend(points.iter().map(|p| p.e.summary_row(&p.m, commit)));
            let max = max_measure(&points);
            (max.value, max.ci95, !saturated(&points))
        } else {
            (0.0, None, false)
        };
        progress(&format!(
            "{} x={x}: p50 {:.2} us, p95 {:.2} us, max {:.0} msg/s",
            v.label(),
            us(&one.latency, 0.5),
            us(&one.latency, 0.95),
            tput
        ));
        let cell = Cell {
            x,
            variant: v.label(),
            p50: us(&one.latency, 0.5),
            p50_ci: one.latency_ci(0.5).1,
            p95: us(&one.latency, 0.95),
            tput,
            tput_ci,
            capped,
        };
        Ok((cell, rows))
    })?;
    let mut cells = Vec::new();
    let mut rows = Vec::new();
    for (cell, r) in done {
        cells.push(cell);
        rows.extend(r);
    }
    Ok((cells, rows))
}

fn get<'a>(cells: &'a [Cell], variant: &str, x: f64) -> Option<&'a Cell> {
    cells.iter().find(|c| c.variant == variant && c.x == x)
}

/// A variant's median latency (us) against x, its intervals as error bars.
fn p50_series(cells: &[Cell], variant: &str) -> Series {
    Series::with_errors(
        variant,
        cells
            .iter()
            .filter(|c| c.variant == variant)
            .map(|c| (c.x, c.p50, c.p50_ci)),
    )
}

/// A variant's maximum throughput (k msg/s) against x, its intervals as error bars.
fn tput_series(cells: &[Cell], variant: &str) -> Series {
    let k = |v: f64| v / 1000.0;
    Series::with_errors(
        variant,
        cells
            .iter()
            .filter(|c| c.variant == variant)
            .map(|c| (c.x, k(c.tput), c.tput_ci.map(|(lo, hi)| (k(lo), k(hi))))),
    )
}

/// The cells as `points.csv`, through the `csv` crate (a variant's label may hold a comma).
fn points_csv(cells: &[Cell], x_name: &str) -> String {
    let head = [
        x_name,
        "variant",
        "lat_p50_us",
        "lat_p95_us",
        "max_throughput_msgs_per_s",
        "max_is_lower_bound",
    ];
    crate::experiment::csv_table(
        &head,
        cells.iter().map(|c| {
            [
                c.x.to_string(),
                c.variant.clone(),
                format!("{:.2}", c.p50),
                format!("{:.2}", c.p95),
                format!("{:.0}", c.tput),
                c.capped.to_string(),
            ]
        }),
    )
}

/// A markdown table: one row per x, latency and throughput per variant, and each TRAM
/// variant's throughput over that of the RamCast run it is compared with (`reference`). A
/// maximum still growing at the client cap is marked `>=`: the claims treat it as a lower bound.
fn table(
    cells: &[Cell],
    xs: &[f64],
    variants: &[String],
    x_name: &str,
    reference: &dyn Fn(&str) -> String,
) -> String {
    let trams: Vec<&String> = variants.iter().filter(|v| v.starts_with("TRAM")).collect();
    let mut s = format!("| {x_name} |");
    for v in variants {
        let _ = write!(s, " {v} p50 / p95 (us) | {v} max (k msg/s) |");
    }
    for v in &trams {
        let _ = write!(s, " {v} / {} |", reference(v));
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "|---|{}",
        "---|".repeat(2 * variants.len() + trams.len())
    );
    for &x in xs {
        let _ = write!(s, "| {x} |");
        for v in variants {
            match get(cells, v, x) {
                Some(c) => {
                    let at_least = if c.capped { ">= " } else { "" };
                    let _ = write!(
                        s,
                        " {:.1} / {:.1} | {at_least}{:.0} |",
                        c.p50,
                        c.p95,
                        c.tput / 1000.0
                    );
                }
                None => s.push_str(" - | - |"),
            }
        }
        for v in &trams {
            match (get(cells, v, x), get(cells, &reference(v), x)) {
                (Some(c), Some(r)) if r.tput > 0.0 => {
                    let _ = write!(s, " {:.2} |", c.tput / r.tput);
                }
                _ => s.push_str(" - |"),
            }
        }
        s.push('\n');
    }
    if cells.iter().any(|c| c.capped) {
        s.push_str(
            "\n`>=`: the sweep stopped at its client cap with throughput still growing; the \
             maximum is a lower bound.\n",
        );
    }
    s
}

fn note(profile: &Profile, commit: &str, name: &str, duration: Nanos) -> String {
    format!(
        "Profile `{}` (simulator, seed 1), calibrated on two numbers only: ib_write_lat {} us \
         and ib_write_bw {} Gb/s (source: {}). Every TRAM and RamCast number below is a \
         validation target; nothing was tuned against it.\n\nCommand: `harness figure {name}` \
         (commit {commit}). Latency: one client, {} ms of simulated time. Throughput: clients \
         doubled from 1 until throughput grew by less than 5%, {} ms per point after a 10% \
         warm-up. 8 groups of 3 replicas unless said otherwise; 64 B messages. Every run is a \
         row of `runs.csv`; `points.csv` has one row per point of the figure.\n",
        profile.name,
        profile.calibration.write_lat_us,
        profile.calibration.write_bw_gbps,
        profile.calibration.source,
        2.0 * duration.as_us_f64() / 1000.0,
        duration.as_us_f64() / 1000.0
    )
}

/// TRAM's figures and its Table 1, on its testbed.
pub(crate) const FIGURES: &[PaperFigure] = &[
    PaperFigure {
        name: "tram-fig2",
        about: "TRAM Fig. 2: write latency against targets, each completion awaited or all together; what each discipline does to RamCast",
        profile: crate::testbed::TRAM,
        software: "tram-cpp",
        make: super::fig2::fig2,
    },
    PaperFigure {
        name: "tram-fig5",
        about: "TRAM Fig. 5: uniform random destinations, trees base/breadth/depth against RamCast",
        profile: crate::testbed::TRAM,
        software: "tram-cpp",
        make: |m| fig5_6(m, false),
    },
    PaperFigure {
        name: "tram-fig6",
        about: "TRAM Fig. 6: destinations adjacent in the tree (\"genuine\" workload)",
        profile: crate::testbed::TRAM,
        software: "tram-cpp",
        make: |m| fig5_6(m, true),
    },
    PaperFigure {
        name: "tram-fig7",
        about: "TRAM Fig. 7: payload 64 B .. 16 KB to all 8 groups",
        profile: crate::testbed::TRAM,
        software: "tram-cpp",
        make: fig7,
    },
    PaperFigure {
        name: "tram-fig8",
        about: "TRAM Fig. 8: the simple tree with 1..7 replicas per group",
        profile: crate::testbed::TRAM,
        software: "tram-cpp",
        make: fig8,
    },
    PaperFigure {
        name: "tram-table1",
        about: "TRAM Table 1: failover latency, leader change in all 8 groups at once, three times",
        profile: crate::testbed::TRAM,
        software: "tram-cpp",
        make: crate::protocols::tram::table1::table1,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Rule, Verdict};

    fn cell(x: f64, variant: &str, p50: f64, tput: f64, capped: bool) -> Cell {
        Cell {
            x,
            variant: variant.into(),
            p50,
            p50_ci: None,
            p95: p50 * 1.2,
            tput,
            tput_ci: None,
            capped,
        }
    }

    fn max(tput: f64, capped: bool) -> Max {
        Max { tput, capped }
    }

    /// A variant label with a comma (`RamCast (8 groups, all)`) stays one field.
    #[test]
    fn points_csv_quotes_labels_with_commas() {
        let text = points_csv(
            &[cell(64.0, "RamCast (tree, adjacent)", 10.0, 1e5, true)],
            "size",
        );
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let row = r.records().next().unwrap().unwrap();
        assert_eq!(row.len(), 6, "{text}");
        assert_eq!(&row[1], "RamCast (tree, adjacent)");
        assert_eq!((&row[2], &row[3], &row[5]), ("10.00", "12.00", "true"));
    }

    /// A maximum still growing at the cap is a lower bound: it decides a comparison it already
    /// wins (or, on the other side, loses), nothing else.
    #[test]
    fn a_capped_maximum_decides_only_what_its_lower_bound_decides() {
        let decided = |a, b| Outcome::above(a, b).decided;
        assert!(decided(max(2.0, true), max(1.0, false)));
        assert!(!decided(max(2.0, false), max(1.0, true)));
        assert!(decided(max(1.0, false), max(2.0, true)));
        assert!(!decided(max(1.0, true), max(2.0, false)));
        let best = Max::best([max(1.0, true), max(3.0, false)]).unwrap();
        assert_eq!((best.tput, best.capped), (3.0, true));
        // One decided failure decides "all"; an undecided success does not.
        let yes = Outcome {
            holds: true,
            decided: true,
        };
        let no = |decided| Outcome {
            holds: false,
            decided,
        };
        assert_eq!(Outcome::all([yes, no(true), no(false)]), no(true));
        assert_eq!(Outcome::all([yes, no(false)]), no(false));
        let undecided_yes = Outcome {
            holds: true,
            decided: false,
        };
        assert_eq!(Outcome::all([yes, undecided_yes]), undecided_yes);
    }

    /// Fig. 5 as the model gives it: RamCast far ahead with few destinations (capped at 1 to
    /// 3), TRAM slightly ahead at 8. The headlines are bounds on the ratios; the comparisons
    /// that rest on RamCast's capped maxima are inconclusive only where the bound does not
    /// decide them.
    #[test]
    fn fig5_judges_its_headlines_as_bounds_and_its_comparisons_on_lower_bounds() {
        let xs: Vec<f64> = (1..=8).map(f64::from).collect();
        let mut cells = Vec::new();
        for &x in &xs {
            cells.push(cell(x, "TRAM base", 12.0, 2.0e6 - x * 1e5, false));
            cells.push(cell(
                x,
                "TRAM breadth",
                if x < 2.0 { 5.0 } else { 10.0 },
                1.0e6,
                false,
            ));
            cells.push(cell(x, "TRAM depth", 14.0, 2.5e6 - x * 1e5, false));
            let ramcast = if x == 8.0 { 1.5e6 } else { 15.0e6 / x };
            cells.push(cell(x, "RamCast", 9.0, ramcast, x <= 3.0));
        }
        let claims = fig5_claims(&cells, &xs);
        let find = |w: &str| claims.iter().find(|c| c.words.contains(w)).expect(w);
        let breadth = find("breadth: near-constant");
        assert_eq!(breadth.verdict, Verdict::Reproduced);
        assert!(matches!(breadth.rule, Rule::Trend(_)));
        assert_eq!(find("depth has the best").verdict, Verdict::Reproduced);
        // RamCast ahead at 1 destination with a capped maximum: its lower bound decides it.
        assert_eq!(find("RamCast better").verdict, Verdict::Reproduced);
        assert_eq!(
            find("lower latency for more").verdict,
            Verdict::NotReproduced
        );
        // TRAM behind RamCast at 4..7 (uncapped there): decided, not reproduced.
        let tput = find("higher throughput for more");
        assert_eq!(tput.verdict, Verdict::NotReproduced);
        assert!(tput.measured.ends_with("from 8"), "{}", tput.measured);
        let three = find("more than 3x");
        assert_eq!(
            three.rule,
            Rule::AtLeast {
                bound: 3.0,
                unit: String::new()
            }
        );
        assert_eq!(three.verdict, Verdict::NotReproduced);
        assert!((three.value.as_ref().unwrap().value - 1.7e6 / 1.5e6).abs() < 1e-9);
        let lat = find("more than 2.3x");
        assert!(matches!(lat.rule, Rule::AtLeast { bound, .. } if bound == 2.3));
        assert_eq!(lat.verdict, Verdict::NotReproduced);
        // RamCast still growing at 4 destinations while TRAM is ahead there: undecided.
        for c in cells.iter_mut().filter(|c| c.variant == "RamCast") {
            (c.tput, c.capped) = (if c.x > 3.0 { 1.0e6 } else { c.tput }, c.x == 4.0);
        }
        let claims = fig5_claims(&cells, &xs);
        let tput = claims
            .iter()
            .find(|c| c.words.contains("higher throughput for more"))
            .unwrap();
        assert_eq!(tput.verdict, Verdict::Inconclusive, "{tput:?}");
    }

    #[test]
    fn fig6_is_undecided_where_a_capped_depth_trails_ramcast() {
        let xs = [1.0, 2.0];
        let cells = |capped| {
            vec![
                cell(1.0, "TRAM depth", 9.0, 1.0e6, capped),
                cell(1.0, "RamCast (depth draws)", 9.0, 2.0e6, false),
                cell(2.0, "TRAM depth", 9.0, 3.0e6, false),
                cell(2.0, "RamCast (depth draws)", 9.0, 2.0e6, false),
            ]
        };
        let c = &fig6_claims(&cells(false), &xs)[0];
        assert_eq!(c.verdict, Verdict::NotReproduced);
        assert!(matches!(c.rule, Rule::Ordering(_)));
        assert_eq!(
            c.measured,
            "depth / RamCast lowest 0.50 over 1..2 destinations"
        );
        assert_eq!(
            fig6_claims(&cells(true), &xs)[0].verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn fig7_orders_small_payloads_and_judges_the_convergence_as_a_trend() {
        let tram = "TRAM (breadth latency, depth throughput)";
        let sizes = [64.0, 16384.0];
        let cells = |capped| {
            vec![
                cell(64.0, tram, 9.0, 1.1e6, false),
                cell(64.0, "RamCast", 9.0, 1.0e6, false),
                cell(16384.0, tram, 30.0, 0.4e5, false),
                cell(16384.0, "RamCast", 30.0, 1.0e5, capped),
            ]
        };
        let claims = fig7_claims(&cells(false), tram, &sizes);
        assert_eq!(claims[0].verdict, Verdict::Reproduced);
        assert!(matches!(claims[0].rule, Rule::Ordering(_)));
        assert_eq!(claims[1].verdict, Verdict::NotReproduced);
        assert!(matches!(claims[1].rule, Rule::Trend(_)));
        let capped = fig7_claims(&cells(true), tram, &sizes);
        assert_eq!(capped[1].verdict, Verdict::Inconclusive);
    }

    #[test]
    fn fig8_judges_each_destination_count_as_a_trend_from_three_replicas() {
        let labels = ["1 destination", "2 destinations"];
        let replicas = [1.0, 3.0, 5.0, 7.0];
        let mut cells = Vec::new();
        for &x in &replicas {
            // One replica skips the quorum round trip: not part of the trend.
            cells.push(cell(
                x,
                labels[0],
                if x < 3.0 { 2.0 } else { 5.0 + x / 100.0 },
                0.0,
                false,
            ));
            cells.push(cell(x, labels[1], 9.0 + x, 0.0, false));
        }
        let claims = fig8_claims(&cells, &labels, &replicas);
        assert_eq!(claims.len(), 2);
        assert_eq!(claims[0].verdict, Verdict::Reproduced);
        assert_eq!(claims[1].verdict, Verdict::NotReproduced, "16 / 12 >= 1.25");
        assert!(claims.iter().all(|c| matches!(c.rule, Rule::Trend(_))));
        let quick = fig8_claims(&cells, &labels, &[1.0, 7.0]);
        assert_eq!(quick[0].verdict, Verdict::Inconclusive);
    }
}
