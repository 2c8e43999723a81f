//! `harness figure tram-fig5 | tram-fig6 | tram-fig7 | tram-fig8`: TRAM's paper figures on the
//! simulator (profile `r320-cx3`, the paper's testbed), with CSV, PNG and a summary that checks
//! the paper's claims against the measured numbers. `tram-table1` lives in
//! [`crate::protocols::tram::table1`].
//!
//! Latency is a single client's (median and p95), throughput the saturated one (clients doubled
//! until throughput grows by less than 5%), as in the paper.

use crate::experiment::{Experiment, Where};
use crate::figure::{
    in_parallel, max_measure, measure, panel, saturate, saturated, size_label, us, write, Point,
};
use crate::plot::{self, Panel, Series};
use crate::protocols::PaperFigure;
use crate::verdict::{self, Claim, Measure};
use multicast::{DestPolicy, Tree};
use std::fmt::Write as _;
use std::path::Path;
use transport::runtime::sim::{Profile, Software};
use transport::Nanos;

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
        runtime: Where::Sim,
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
        make: |out, commit, quick, software, progress| {
            fig5_6(out, commit, false, quick, software, progress)
        },
    },
    PaperFigure {
        name: "tram-fig6",
        about: "TRAM Fig. 6: destinations adjacent in the tree (\"genuine\" workload)",
        profile: crate::testbed::TRAM,
        software: "tram-cpp",
        make: |out, commit, quick, software, progress| {
            fig5_6(out, commit, true, quick, software, progress)
        },
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

/// TRAM Fig. 5 (uniform random destinations) and Fig. 6 (adjacent destinations).
pub(crate) fn fig5_6(
    out: &Path,
    commit: &str,
    adjacent: bool,
    quick: bool,
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    let profile = Profile::load(crate::testbed::TRAM).map_err(|e| e.to_string())?;
    let name = if adjacent { "tram-fig6" } else { "tram-fig5" };
    let xs: Vec<f64> = if quick {
        vec![1.0, 4.0, 8.0]
    } else {
        (1..=8).map(f64::from).collect()
    };
    let duration = Nanos(if quick { 500_000 } else { 2_000_000 });
    let ctx = Ctx {
        profile: &profile,
        software,
        duration,
        commit,
        progress,
    };
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let trees = ["base", "breadth", "depth"];
    let mut all_cells = Vec::new();
    let mut rows = Vec::new();
    if adjacent {
        // Adjacency depends on the tree: each tree's TRAM is compared with RamCast on the same
        // destination draws. The trees' sweeps run side by side.
        let per_tree = in_parallel(&trees, |&t| {
            let variants = [
                Variant::tram(t),
                Variant::Ramcast {
                    dest_tree: Tree::preset(t),
                },
            ];
            sweep(
                &ctx,
                &xs,
                &variants,
                |x| Knobs {
                    replicas: 3,
                    size: 64,
                    dest: DestPolicy::Adjacent(x as usize),
                },
                true,
            )
        })?;
        for (t, (mut cells, r)) in trees.iter().zip(per_tree) {
            for c in &mut cells {
                if c.variant == "RamCast" {
                    c.variant = format!("RamCast ({t} draws)");
                }
            }
            all_cells.extend(cells);
            rows.extend(r);
        }
    } else {
        let mut variants: Vec<Variant> = trees.iter().map(|t| Variant::tram(t)).collect();
        variants.push(Variant::Ramcast { dest_tree: None });
        let (cells, r) = sweep(
            &ctx,
            &xs,
            &variants,
            |x| Knobs {
                replicas: 3,
                size: 64,
                dest: DestPolicy::Random(x as usize),
            },
            true,
        )?;
        all_cells = cells;
        rows = r;
    }
    crate::experiment::write_summary(&out.join("runs.csv"), &rows)?;
    write(
        &out.join("points.csv"),
        &points_csv(&all_cells, "destinations"),
    )?;
    let labels: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for c in &all_cells {
            if !v.contains(&c.variant) {
                v.push(c.variant.clone());
            }
        }
        v
    };
    // Normalised throughput: each TRAM tree over the RamCast run on the same draws.
    let ramcast_for = |tree_label: &str| -> String {
        if adjacent {
            format!("RamCast ({} draws)", tree_label.trim_start_matches("TRAM "))
        } else {
            "RamCast".into()
        }
    };
    let normalised: Vec<Series> = labels
        .iter()
        .filter(|l| l.starts_with("TRAM"))
        .map(|l| {
            Series::new(
                l.clone(),
                xs.iter()
                    .filter_map(|&x| {
                        let t = get(&all_cells, l, x)?;
                        let r = get(&all_cells, &ramcast_for(l), x)?;
                        Some((x, t.tput / r.tput))
                    })
                    .collect(),
            )
        })
        .collect();
    let what = if adjacent {
        "adjacent destinations (\"genuine\" workload)"
    } else {
        "uniform random destinations"
    };
    plot::draw_png(
        &out.join(format!("{}.png", &name[5..])),
        &format!(
            "TRAM {} on sim (r320-cx3): 8 groups x 3 replicas, 64 B, {what}",
            if adjacent { "Fig. 6" } else { "Fig. 5" }
        ),
        &[
            panel(
                "latency, 1 client",
                "destinations",
                "median latency (us)",
                labels.iter().map(|l| p50_series(&all_cells, l)).collect(),
            ),
            Panel {
                log_y: true,
                ..panel(
                    "throughput at saturation",
                    "destinations",
                    "max throughput (k msg/s, log scale)",
                    labels.iter().map(|l| tput_series(&all_cells, l)).collect(),
                )
            },
            panel(
                "throughput normalised by RamCast's",
                "destinations",
                "TRAM / RamCast",
                normalised,
            ),
        ],
    )?;
    let mut md = format!(
        "# TRAM {} ({what}), reproduced on the simulator\n\n",
        if adjacent { "Fig. 6" } else { "Fig. 5" }
    );
    md.push_str(&note(&profile, commit, name, duration));
    md.push('\n');
    md.push_str(&table(
        &all_cells,
        &xs,
        &labels,
        "destinations",
        &ramcast_for,
    ));
    md.push_str("\n## The paper's claims\n\n");
    let claims = if adjacent {
        fig6_claims(&all_cells, &xs)
    } else {
        fig5_claims(&all_cells, &xs)
    };
    md.push_str(&verdict::table(&claims));
    let last = *xs.last().expect("points");
    let tput_at = |v: &str, x: f64| get(&all_cells, v, x).map_or(0.0, |c| c.tput);
    md.push_str(&if adjacent {
        crate::protocols::tram::figure_notes::fig6(
            &profile,
            software,
            tput_at("RamCast (depth draws)", 1.0),
            tput_at("TRAM depth", 1.0),
        )
    } else {
        crate::protocols::tram::figure_notes::fig5(
            &profile,
            software,
            tput_at("TRAM depth", last),
            breadth_spread(&all_cells, &xs),
        )
    });
    write(&out.join("summary.md"), &md)?;
    verdict::write(out, &claims)
}

/// TRAM's trees in Fig. 5, as their cells are labelled.
const TREES: [&str; 3] = ["TRAM base", "TRAM breadth", "TRAM depth"];

/// Breadth's lowest and highest single-client median over 2 or more destinations (us): the
/// paper's "almost constant time, excluding the faster case of a single destination".
fn breadth_spread(cells: &[Cell], xs: &[f64]) -> (f64, f64) {
    spread(
        xs.iter()
            .filter(|&&x| x >= 2.0)
            .filter_map(|&x| get(cells, "TRAM breadth", x).map(|c| c.p50)),
    )
}

/// Fig. 5's claims (section 8.2 and the abstract's headline against RamCast), judged on the
/// cells. The paper states no number for the figure but the headline's two bounds, so the
/// rest are orderings and a trend; every throughput comparison treats a maximum still growing
/// at the client cap as the lower bound it is.
fn fig5_claims(cells: &[Cell], xs: &[f64]) -> Vec<Claim> {
    let mut claims = Vec::new();
    let last = *xs.last().expect("points");
    let (lo, hi) = breadth_spread(cells, xs);
    claims.push(Claim::trend(
        "breadth: near-constant latency for 2..8 destinations",
        "breadth's highest / lowest median over 2..8 destinations < 1.25",
        format!("median {lo:.1} .. {hi:.1} us (max / min {:.2})", hi / lo),
        hi / lo < 1.25,
    ));
    let best_of = |trees: &[&str], x: f64| {
        Max::best(trees.iter().filter_map(|v| get(cells, v, x)).map(Cell::max))
    };
    // At each count: depth above the better of base and breadth.
    let depth_best: Vec<Outcome> = xs
        .iter()
        .filter_map(|&x| {
            Some(Outcome::above(
                get(cells, "TRAM depth", x)?.max(),
                best_of(&TREES[..2], x)?,
            ))
        })
        .collect();
    let count = |f: fn(&Outcome) -> bool| depth_best.iter().filter(|o| f(o)).count();
    let best = count(|o| o.holds);
    let majority = |n: usize| n * 2 > xs.len();
    claims.push(
        Outcome {
            holds: majority(best),
            // The counts the lower bounds allow, at least and at most, agree on the majority.
            decided: majority(count(|o| o.holds && o.decided))
                == majority(count(|o| o.holds || !o.decided)),
        }
        .ordering(
            "depth has the best throughput (base close)",
            "depth's maximum above base's and breadth's at more than half the destination \
             counts (base's closeness is not tested)",
            format!("depth best at {best} of {} destination counts", xs.len()),
        ),
    );
    if let (Some(r), Some(t)) = (get(cells, "RamCast", 1.0), best_of(&TREES, 1.0)) {
        claims.push(Outcome::above(r.max(), t).ordering(
            "RamCast better with few destinations",
            "RamCast's maximum above every tree's at 1 destination",
            format!(
                "at 1 destination RamCast {:.0} k msg/s, best TRAM {:.0} k msg/s",
                r.tput / 1000.0,
                t.tput / 1000.0
            ),
        ));
    }
    // The first count from which the best tree stays ahead of RamCast, for the measured text.
    let from = |ahead: &dyn Fn(f64) -> bool| {
        let x = xs
            .iter()
            .copied()
            .find(|&x| xs.iter().filter(|&&y| y >= x).all(|&y| ahead(y)));
        x.map_or("never".to_string(), |x| format!("from {x}"))
    };
    let best_p50 = |x: f64| {
        TREES
            .iter()
            .filter_map(|v| get(cells, v, x).map(|c| c.p50))
            .reduce(f64::min)
    };
    let p50_ahead = |x: f64| {
        best_p50(x)
            .zip(get(cells, "RamCast", x))
            .is_some_and(|(t, r)| t < r.p50)
    };
    claims.push(Claim::ordering(
        "TRAM (best tree) lower latency for more than 2 destinations",
        "the best tree's median below RamCast's at every destination count above 2",
        format!("best TRAM median below RamCast's {}", from(&p50_ahead)),
        xs.iter().filter(|&&x| x > 2.0).all(|&x| p50_ahead(x)),
    ));
    let tput_ahead = |x: f64| {
        best_of(&TREES, x)
            .zip(get(cells, "RamCast", x))
            .map(|(t, r)| Outcome::above(t, r.max()))
    };
    claims.push(
        Outcome::all(xs.iter().filter(|&&x| x > 3.0).map(|&x| {
            tput_ahead(x).unwrap_or(Outcome {
                holds: false,
                decided: true,
            })
        }))
        .ordering(
            "TRAM (best tree) higher throughput for more than 3 destinations",
            "the best tree's maximum above RamCast's at every destination count above 3",
            format!(
                "best TRAM above RamCast {}",
                from(&|x| tput_ahead(x).is_some_and(|o| o.holds))
            ),
        ),
    );
    // The tree that is best at the last count, by throughput or by median, for the headlines'
    // ratios with their intervals ([`Measure::ratio`]).
    let best_cell = |key: fn(&Cell) -> f64, most: bool| {
        TREES
            .iter()
            .filter_map(|v| get(cells, v, last))
            .max_by(|a, b| {
                let o = key(a).total_cmp(&key(b));
                if most {
                    o
                } else {
                    o.reverse()
                }
            })
    };
    let tput = |c: &Cell| Measure::within(c.tput, c.tput_ci);
    let p50 = |c: &Cell| Measure::within(c.p50, c.p50_ci);
    if let (Some(t), Some(r)) = (best_cell(|c| c.tput, true), get(cells, "RamCast", last)) {
        let ratio = t.tput / r.tput;
        claims.push(
            Claim::at_least(
                "headline: more than 3x RamCast's throughput",
                3.0,
                "",
                // Any tree still growing at the cap may be the best: a lower bound then.
                Measure::ratio(&tput(t), &tput(r))
                    .capped(best_of(&TREES, last).is_some_and(|m| m.capped))
                    .detail(format!(
                        "best TRAM / RamCast maximum at {last} destinations"
                    )),
            )
            // A capped RamCast makes the ratio an upper bound: it cannot confirm the bound.
            .undecided_if(
                r.capped && ratio >= 3.0,
                "RamCast's maximum was still growing at the client cap: the ratio is an upper \
                 bound",
            ),
        );
    }
    if let (Some(t), Some(r)) = (best_cell(|c| c.p50, false), get(cells, "RamCast", last)) {
        claims.push(Claim::at_least(
            "headline: more than 2.3x lower latency than RamCast",
            2.3,
            "",
            Measure::ratio(&p50(r), &p50(t)).detail(format!(
                "RamCast / best TRAM median, 1 client, at {last} destinations"
            )),
        ));
    }
    claims
}

/// Fig. 6's claim (section 8.3): depth's maximum above RamCast's on the same draws at every
/// destination count, maxima still growing at the client cap taken as lower bounds.
fn fig6_claims(cells: &[Cell], xs: &[f64]) -> Vec<Claim> {
    let last = *xs.last().expect("points");
    let pairs: Vec<(&Cell, &Cell)> = xs
        .iter()
        .filter_map(|&x| {
            Some((
                get(cells, "TRAM depth", x)?,
                get(cells, "RamCast (depth draws)", x)?,
            ))
        })
        .collect();
    let min = pairs
        .iter()
        .map(|(t, r)| t.tput / r.tput)
        .fold(f64::INFINITY, f64::min);
    vec![
        Outcome::all(pairs.iter().map(|(t, r)| Outcome::above(t.max(), r.max()))).ordering(
            "depth tree throughput always above RamCast's",
            "depth's maximum above RamCast's (on the same draws) at every destination count",
            format!("depth / RamCast lowest {min:.2} over 1..{last} destinations"),
        ),
    ]
}

/// TRAM Fig. 7: payload size, 8 destinations; breadth for latency, depth for throughput.
pub(crate) fn fig7(
    out: &Path,
    commit: &str,
    quick: bool,
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    let profile = Profile::load(crate::testbed::TRAM).map_err(|e| e.to_string())?;
    let sizes: Vec<f64> = if quick {
        vec![64.0, 16384.0]
    } else {
        vec![64.0, 256.0, 1024.0, 4096.0, 16384.0]
    };
    let duration = Nanos(if quick { 500_000 } else { 2_000_000 });
    let ctx = Ctx {
        profile: &profile,
        software,
        duration,
        commit,
        progress,
    };
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let knobs = |x: f64| Knobs {
        replicas: 3,
        size: x as usize,
        dest: DestPolicy::All,
    };
    let (mut cells, mut rows) = sweep(
        &ctx,
        &sizes,
        &[
            Variant::tram("breadth"),
            Variant::Ramcast { dest_tree: None },
        ],
        knobs,
        false,
    )?;
    let (tput, r) = sweep(
        &ctx,
        &sizes,
        &[Variant::tram("depth"), Variant::Ramcast { dest_tree: None }],
        knobs,
        true,
    )?;
    rows.extend(r);
    // Latency from the breadth runs, throughput from the depth runs (the paper's choice).
    for c in &mut cells {
        let from = if c.variant == "RamCast" {
            "RamCast"
        } else {
            "TRAM depth"
        };
        if let Some(t) = get(&tput, from, c.x) {
            (c.tput, c.capped) = (t.tput, t.capped);
        }
        if c.variant != "RamCast" {
            c.variant = "TRAM (breadth latency, depth throughput)".into();
        }
    }
    crate::experiment::write_summary(&out.join("runs.csv"), &rows)?;
    write(&out.join("points.csv"), &points_csv(&cells, "size_bytes"))?;
    let labels = [
        "TRAM (breadth latency, depth throughput)".to_string(),
        "RamCast".to_string(),
    ];
    let mut lat = panel(
        "latency, 1 client (TRAM: breadth)",
        "payload",
        "median latency (us)",
        labels.iter().map(|l| p50_series(&cells, l)).collect(),
    );
    lat.x = plot::XScale::Bytes;
    let mut tp = panel(
        "throughput at saturation (TRAM: depth)",
        "payload",
        "max throughput (k msg/s)",
        labels.iter().map(|l| tput_series(&cells, l)).collect(),
    );
    tp.x = plot::XScale::Bytes;
    plot::draw_png(
        &out.join("fig7.png"),
        "TRAM Fig. 7 on sim (r320-cx3): 8 groups x 3 replicas, messages to all 8 groups",
        &[lat, tp],
    )?;
    let mut md = String::from("# TRAM Fig. 7 (payload size), reproduced on the simulator\n\n");
    md.push_str(&note(&profile, commit, "tram-fig7", duration));
    md.push_str("\nMessages to all 8 groups. TRAM latency uses the breadth tree, TRAM throughput the depth tree, as in the paper.\n\n");
    md.push_str(&table(&cells, &sizes, &labels, "payload (B)", &|_| {
        "RamCast".to_string()
    }));
    md.push_str("\n## The paper's claims\n\n");
    let claims = fig7_claims(&cells, &labels[0], &sizes);
    md.push_str(&verdict::table(&claims));
    let (first, last) = (sizes[0], *sizes.last().expect("sizes"));
    let cell = |v: &str, x: f64| get(&cells, v, x);
    if let (Some(tl), Some(rl), Some(ts), Some(rs)) = (
        cell(&labels[0], last),
        cell("RamCast", last),
        cell(&labels[0], first),
        cell("RamCast", first),
    ) {
        md.push_str(&crate::protocols::tram::figure_notes::fig7(
            &profile,
            software,
            &crate::protocols::tram::figure_notes::Fig7 {
                large: last as usize,
                tput_large: (tl.tput, rl.tput),
                p50_small: (ts.p50, rs.p50),
                p50_large: (tl.p50, rl.p50),
            },
        ));
    }
    write(&out.join("summary.md"), &md)?;
    verdict::write(out, &claims)
}

/// Fig. 7's claims (section 8.4): TRAM's maximum (`tram`, the depth tree's) against RamCast's
/// at the smallest and the largest payload. The paper quotes no number, so an ordering and a
/// trend; a maximum still growing at the client cap leaves the trend undecided.
fn fig7_claims(cells: &[Cell], tram: &str, sizes: &[f64]) -> Vec<Claim> {
    let (first, last) = (sizes[0], *sizes.last().expect("sizes"));
    let pair = |x: f64| Some((get(cells, tram, x)?, get(cells, "RamCast", x)?));
    let (Some((ts, rs)), Some((tl, rl))) = (pair(first), pair(last)) else {
        return Vec::new();
    };
    let (a, b) = (ts.tput / rs.tput, tl.tput / rl.tput);
    vec![
        Outcome::above(ts.max(), rs.max()).ordering(
            "TRAM ahead at small payloads",
            &format!(
                "TRAM's maximum above RamCast's at {}",
                size_label(first as usize)
            ),
            format!(
                "TRAM / RamCast throughput at {}: {a:.2}",
                size_label(first as usize)
            ),
        ),
        Claim::trend(
            "the gap closes, converging around 16 KB",
            &format!(
                "TRAM / RamCast maximum closer to 1 at {} than at {}, and within 25% of 1 there",
                size_label(last as usize),
                size_label(first as usize)
            ),
            format!(
                "TRAM / RamCast throughput at {}: {b:.2} (from {a:.2})",
                size_label(last as usize)
            ),
            (b - 1.0).abs() < (a - 1.0).abs() && (b - 1.0).abs() < 0.25,
        )
        .undecided_if([ts, rs, tl, rl].iter().any(|c| c.capped), UNDECIDED),
    ]
}

/// TRAM Fig. 8: the simple tree, 1..7 replicas per group, single-client latency.
pub(crate) fn fig8(
    out: &Path,
    commit: &str,
    quick: bool,
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    let profile = Profile::load(crate::testbed::TRAM).map_err(|e| e.to_string())?;
    let replicas: Vec<f64> = if quick {
        vec![1.0, 7.0]
    } else {
        vec![1.0, 3.0, 5.0, 7.0]
    };
    let duration = Nanos(if quick { 500_000 } else { 2_000_000 });
    let ctx = Ctx {
        profile: &profile,
        software,
        duration,
        commit,
        progress,
    };
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let simple = Variant::tram("simple");
    let mut cells = Vec::new();
    let mut rows = Vec::new();
    for (dest, label) in [
        (DestPolicy::Random(1), "1 destination"),
        (DestPolicy::Random(2), "2 destinations"),
        (DestPolicy::All, "3 destinations"),
    ] {
        let (mut c, r) = sweep(
            &ctx,
            &replicas,
            std::slice::from_ref(&simple),
            |x| Knobs {
                replicas: x as usize,
                size: 64,
                dest,
            },
            false,
        )?;
        for cell in &mut c {
            cell.variant = label.into();
        }
        cells.extend(c);
        rows.extend(r);
    }
    crate::experiment::write_summary(&out.join("runs.csv"), &rows)?;
    write(&out.join("points.csv"), &points_csv(&cells, "replicas"))?;
    let labels = ["1 destination", "2 destinations", "3 destinations"];
    plot::draw_png(
        &out.join("fig8.png"),
        "TRAM Fig. 8 on sim (r320-cx3): simple tree (3 groups), 1 client, 64 B",
        &[panel(
            "latency vs replicas per group",
            "replicas per group",
            "median latency (us)",
            labels.iter().map(|l| p50_series(&cells, l)).collect(),
        )],
    )?;
    let mut md =
        String::from("# TRAM Fig. 8 (replicas per group), reproduced on the simulator\n\n");
    md.push_str(&note(&profile, commit, "tram-fig8", duration));
    md.push_str("\nThe simple tree (a root with two children); destinations drawn uniformly among the 3 groups. Latency only, as in the paper.\n\n| replicas | ");
    md.push_str(&labels.map(|l| format!("{l} p50 / p95 (us)")).join(" | "));
    md.push_str(" |\n|---|---|---|---|\n");
    for &x in &replicas {
        let _ = write!(md, "| {x} |");
        for l in labels {
            if let Some(c) = get(&cells, l, x) {
                let _ = write!(md, " {:.2} / {:.2} |", c.p50, c.p95);
            }
        }
        md.push('\n');
    }
    md.push_str("\n## The paper's claims\n\n");
    let claims = fig8_claims(&cells, &labels, &replicas);
    md.push_str(&verdict::table(&claims));
    if let (Some(one), Some(three)) = (get(&cells, labels[0], 1.0), get(&cells, labels[0], 3.0)) {
        md.push_str(&crate::protocols::tram::figure_notes::fig8(
            &profile, one.p50, three.p50,
        ));
    }
    write(&out.join("summary.md"), &md)?;
    verdict::write(out, &claims)
}

/// Fig. 8's claims (section 8.5): latency almost constant in the replicas, for each number of
/// destinations; a trend, as the paper quotes no number. One replica has no followers and no
/// quorum round trip: replication starts at 3. With a single replica count from 3 (`--quick`)
/// there is no trend to judge.
fn fig8_claims(cells: &[Cell], labels: &[&str], replicas: &[f64]) -> Vec<Claim> {
    labels
        .iter()
        .map(|l| {
            let p50s: Vec<f64> = replicas
                .iter()
                .filter(|&&x| x >= 3.0)
                .filter_map(|&x| get(cells, l, x).map(|c| c.p50))
                .collect();
            let (lo, hi) = spread(p50s.iter().copied());
            Claim::trend(
                &format!("latency nearly constant as replicas grow, 3 to 7 ({l})"),
                "highest / lowest median over 3..7 replicas < 1.25",
                format!("median {lo:.2} .. {hi:.2} us (max / min {:.2})", hi / lo),
                hi / lo < 1.25,
            )
            .undecided_if(p50s.len() < 2, "fewer than two replica counts from 3 up")
        })
        .collect()
}

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
