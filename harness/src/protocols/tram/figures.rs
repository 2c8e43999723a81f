//! `harness figure tram-fig5 | tram-fig6 | tram-fig7 | tram-fig8`: TRAM's paper figures on the
//! simulator (profile `r320-cx3`, the paper's testbed), with CSV, PNG and a summary that checks
//! the paper's claims against the measured numbers. `tram-table1` lives in
//! [`crate::protocols::tram::table1`].
//!
//! Latency is a single client's (median and p95), throughput the saturated one (clients doubled
//! until throughput grows by less than 5%), as in the paper.

use crate::experiment::{Experiment, Where};
use crate::figure::{
    claim, in_parallel, max_throughput, measure, panel, saturate, size_label, us, write, Point,
    CLAIM_HEAD,
};
use crate::plot::{self, Panel, Series};
use crate::protocols::PaperFigure;
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
    p95: f64,
    tput: f64,
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
        let tput = if throughput {
            let points: Vec<Point> = saturate(
                |c| experiment(profile, software, v, k, c, duration),
                256,
                progress,
            )?;
            rows.extend(points.iter().map(|p| p.e.summary_row(&p.m, commit)));
            max_throughput(&points)
        } else {
            0.0
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
            p95: us(&one.latency, 0.95),
            tput,
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

fn series(cells: &[Cell], variant: &str, f: impl Fn(&Cell) -> f64) -> Series {
    Series {
        label: variant.into(),
        points: cells
            .iter()
            .filter(|c| c.variant == variant)
            .map(|c| (c.x, f(c)))
            .collect(),
    }
}

/// The cells as `points.csv`.
fn points_csv(cells: &[Cell], x_name: &str) -> String {
    let mut s = format!("{x_name},variant,lat_p50_us,lat_p95_us,max_throughput_msgs_per_s\n");
    for c in cells {
        let _ = writeln!(
            s,
            "{},{},{:.2},{:.2},{:.0}",
            c.x, c.variant, c.p50, c.p95, c.tput
        );
    }
    s
}

/// A markdown table: one row per x, latency and throughput per variant, and each TRAM
/// variant's throughput over that of the RamCast run it is compared with (`reference`).
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
                    let _ = write!(s, " {:.1} / {:.1} | {:.0} |", c.p50, c.p95, c.tput / 1000.0);
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
        .map(|l| Series {
            label: l.clone(),
            points: xs
                .iter()
                .filter_map(|&x| {
                    let t = get(&all_cells, l, x)?;
                    let r = get(&all_cells, &ramcast_for(l), x)?;
                    Some((x, t.tput / r.tput))
                })
                .collect(),
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
                labels
                    .iter()
                    .map(|l| series(&all_cells, l, |c| c.p50))
                    .collect(),
            ),
            Panel {
                log_y: true,
                ..panel(
                    "throughput at saturation",
                    "destinations",
                    "max throughput (k msg/s, log scale)",
                    labels
                        .iter()
                        .map(|l| series(&all_cells, l, |c| c.tput / 1000.0))
                        .collect(),
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
    md.push_str(CLAIM_HEAD);
    let last = *xs.last().expect("points");
    if adjacent {
        let ratios: Vec<f64> = xs
            .iter()
            .filter_map(|&x| {
                Some(
                    get(&all_cells, "TRAM depth", x)?.tput
                        / get(&all_cells, "RamCast (depth draws)", x)?.tput,
                )
            })
            .collect();
        let min = ratios.iter().cloned().fold(f64::INFINITY, f64::min);
        claim(
            &mut md,
            "depth tree throughput always above RamCast's",
            format!("depth / RamCast lowest {min:.2} over 1..{last} destinations"),
            min > 1.0,
        );
    } else {
        let breadth: Vec<f64> = xs
            .iter()
            .filter(|&&x| x >= 2.0)
            .filter_map(|&x| get(&all_cells, "TRAM breadth", x).map(|c| c.p50))
            .collect();
        let (lo, hi) = (
            breadth.iter().cloned().fold(f64::INFINITY, f64::min),
            breadth.iter().cloned().fold(0.0, f64::max),
        );
        claim(
            &mut md,
            "breadth: near-constant latency for 2..8 destinations",
            format!("median {lo:.1} .. {hi:.1} us (max / min {:.2})", hi / lo),
            hi / lo < 1.25,
        );
        let best_at = |x: f64| {
            ["TRAM base", "TRAM breadth", "TRAM depth"]
                .iter()
                .filter_map(|v| get(&all_cells, v, x).map(|c| (c.tput, *v)))
                .fold((0.0, ""), |a, b| if b.0 > a.0 { b } else { a })
                .1
        };
        let depth_best = xs.iter().filter(|&&x| best_at(x) == "TRAM depth").count();
        claim(
            &mut md,
            "depth has the best throughput (base close)",
            format!(
                "depth best at {depth_best} of {} destination counts",
                xs.len()
            ),
            depth_best * 2 > xs.len(),
        );
        let ram_better_few = get(&all_cells, "RamCast", 1.0).is_some_and(|r| {
            ["TRAM base", "TRAM breadth", "TRAM depth"]
                .iter()
                .all(|v| get(&all_cells, v, 1.0).is_some_and(|t| r.tput > t.tput))
        });
        claim(
            &mut md,
            "RamCast better with few destinations",
            format!(
                "at 1 destination RamCast {:.0} k msg/s, best TRAM {:.0} k msg/s",
                get(&all_cells, "RamCast", 1.0).map_or(0.0, |c| c.tput / 1000.0),
                ["TRAM base", "TRAM breadth", "TRAM depth"]
                    .iter()
                    .filter_map(|v| get(&all_cells, v, 1.0).map(|c| c.tput / 1000.0))
                    .fold(0.0, f64::max)
            ),
            ram_better_few,
        );
        let trams = ["TRAM base", "TRAM breadth", "TRAM depth"];
        let lat_from = xs.iter().copied().find(|&x| {
            xs.iter().filter(|&&y| y >= x).all(|&y| {
                let best = trams
                    .iter()
                    .filter_map(|v| get(&all_cells, v, y).map(|c| c.p50))
                    .fold(f64::INFINITY, f64::min);
                get(&all_cells, "RamCast", y).is_some_and(|r| best < r.p50)
            })
        });
        let tput_from = xs.iter().copied().find(|&x| {
            xs.iter().filter(|&&y| y >= x).all(|&y| {
                let best = trams
                    .iter()
                    .filter_map(|v| get(&all_cells, v, y).map(|c| c.tput))
                    .fold(0.0, f64::max);
                get(&all_cells, "RamCast", y).is_some_and(|r| best > r.tput)
            })
        });
        let show = |x: Option<f64>| x.map_or("never".to_string(), |x| format!("from {x}"));
        claim(
            &mut md,
            "TRAM (best tree) lower latency for more than 2 destinations",
            format!("best TRAM median below RamCast's {}", show(lat_from)),
            lat_from.is_some_and(|x| x <= 3.0),
        );
        claim(
            &mut md,
            "TRAM (best tree) higher throughput for more than 3 destinations",
            format!("best TRAM above RamCast {}", show(tput_from)),
            tput_from.is_some_and(|x| x <= 4.0),
        );
        if let (Some(t), Some(r)) = (
            trams
                .iter()
                .filter_map(|v| get(&all_cells, v, last))
                .map(|c| c.tput)
                .reduce(f64::max),
            get(&all_cells, "RamCast", last),
        ) {
            claim(
                &mut md,
                "headline: more than 3x RamCast's throughput",
                format!(
                    "at {last} destinations best TRAM / RamCast = {:.2}",
                    t / r.tput
                ),
                t / r.tput > 3.0,
            );
        }
        if let (Some(t), Some(r)) = (
            trams
                .iter()
                .filter_map(|v| get(&all_cells, v, last))
                .map(|c| c.p50)
                .reduce(f64::min),
            get(&all_cells, "RamCast", last),
        ) {
            claim(
                &mut md,
                "headline: more than 2.3x lower latency than RamCast",
                format!(
                    "at {last} destinations RamCast / best TRAM median = {:.2}",
                    r.p50 / t
                ),
                r.p50 / t > 2.3,
            );
        }
    }
    let tput_at = |v: &str, x: f64| get(&all_cells, v, x).map_or(0.0, |c| c.tput);
    md.push_str(&if adjacent {
        crate::protocols::tram::figure_notes::fig6(
            &profile,
            software,
            tput_at("RamCast (depth draws)", 1.0),
            tput_at("TRAM depth", 1.0),
        )
    } else {
        let breadth: Vec<f64> = xs
            .iter()
            .filter(|&&x| x >= 2.0)
            .filter_map(|&x| get(&all_cells, "TRAM breadth", x).map(|c| c.p50))
            .collect();
        crate::protocols::tram::figure_notes::fig5(
            &profile,
            software,
            tput_at("TRAM depth", last),
            (
                breadth.iter().cloned().fold(f64::INFINITY, f64::min),
                breadth.iter().cloned().fold(0.0, f64::max),
            ),
        )
    });
    write(&out.join("summary.md"), &md)?;
    Ok(())
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
        c.tput = get(&tput, from, c.x).map_or(0.0, |t| t.tput);
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
        labels
            .iter()
            .map(|l| series(&cells, l, |c| c.p50))
            .collect(),
    );
    lat.x = plot::XScale::Bytes;
    let mut tp = panel(
        "throughput at saturation (TRAM: depth)",
        "payload",
        "max throughput (k msg/s)",
        labels
            .iter()
            .map(|l| series(&cells, l, |c| c.tput / 1000.0))
            .collect(),
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
    md.push_str(CLAIM_HEAD);
    let ratio = |x: f64| {
        let t = get(&cells, &labels[0], x)?;
        let r = get(&cells, "RamCast", x)?;
        Some(t.tput / r.tput)
    };
    let (first, last) = (sizes[0], *sizes.last().expect("sizes"));
    if let (Some(a), Some(b)) = (ratio(first), ratio(last)) {
        claim(
            &mut md,
            "TRAM ahead at small payloads",
            format!(
                "TRAM / RamCast throughput at {}: {a:.2}",
                size_label(first as usize)
            ),
            a > 1.0,
        );
        claim(
            &mut md,
            "the gap closes, converging around 16 KB",
            format!(
                "TRAM / RamCast throughput at {}: {b:.2} (from {a:.2})",
                size_label(last as usize)
            ),
            (b - 1.0).abs() < (a - 1.0).abs() && (b - 1.0).abs() < 0.25,
        );
    }
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
    Ok(())
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
            labels
                .iter()
                .map(|l| series(&cells, l, |c| c.p50))
                .collect(),
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
    md.push_str(CLAIM_HEAD);
    // One replica has no followers and no quorum round trip: replication starts at 3.
    for l in labels {
        let v: Vec<f64> = replicas
            .iter()
            .filter(|&&x| x >= 3.0)
            .filter_map(|&x| get(&cells, l, x).map(|c| c.p50))
            .collect();
        let (lo, hi) = (
            v.iter().cloned().fold(f64::INFINITY, f64::min),
            v.iter().cloned().fold(0.0, f64::max),
        );
        claim(
            &mut md,
            &format!("latency nearly constant as replicas grow, 3 to 7 ({l})"),
            format!("median {lo:.2} .. {hi:.2} us (max / min {:.2})", hi / lo),
            hi / lo < 1.25,
        );
    }
    if let (Some(one), Some(three)) = (get(&cells, labels[0], 1.0), get(&cells, labels[0], 3.0)) {
        md.push_str(&crate::protocols::tram::figure_notes::fig8(
            &profile, one.p50, three.p50,
        ));
    }
    write(&out.join("summary.md"), &md)?;
    Ok(())
}
