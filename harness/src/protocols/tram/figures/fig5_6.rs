//! TRAM Figs. 5 and 6: uniform random and adjacent destinations, the trees against RamCast.

use super::*;

/// TRAM Fig. 5 (uniform random destinations) and Fig. 6 (adjacent destinations).
pub(crate) fn fig5_6(m: &Making<'_>, adjacent: bool) -> Result<(), String> {
    let (out, commit, quick, software, _) = m.parts();
    let profile = Profile::load(crate::testbed::TRAM).map_err(|e| e.to_string())?;
    let name = if adjacent { "tram-fig6" } else { "tram-fig5" };
    let xs: Vec<f64> = if quick {
        vec![1.0, 4.0, 8.0]
    } else {
        (1..=8).map(f64::from).collect()
    };
    let ctx = Ctx::start(m, &profile)?;
    let duration = ctx.duration;
    let (all_cells, rows) = measure_fig5_6(&ctx, &xs, adjacent)?;
    crate::experiment::write_summary(&out.join("runs.csv"), &rows)?;
    write(
        &out.join("points.csv"),
        &points_csv(&all_cells, "destinations"),
    )?;
    let labels = variants(&all_cells);
    let ramcast_for = |tree_label: &str| ramcast_for(adjacent, tree_label);
    let what = what(adjacent);
    plot_fig5_6(out, name, adjacent, &all_cells, &xs, &labels)?;
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

/// Fig. 5's or (`adjacent`) Fig. 6's cells at destinations `xs`, and every run's
/// `summary.csv` row.
fn measure_fig5_6(
    ctx: &Ctx<'_>,
    xs: &[f64],
    adjacent: bool,
) -> Result<(Vec<Cell>, Vec<crate::experiment::SummaryRow>), String> {
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
            sweep(ctx, xs, &variants, to(DestPolicy::Adjacent), true)
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
        let (cells, r) = sweep(ctx, xs, &variants, to(DestPolicy::Random), true)?;
        all_cells = cells;
        rows = r;
    }
    Ok((all_cells, rows))
}

/// The RamCast run TRAM's `tree_label` is normalised by: the one on the same draws.
fn ramcast_for(adjacent: bool, tree_label: &str) -> String {
    if adjacent {
        format!("RamCast ({} draws)", tree_label.trim_start_matches("TRAM "))
    } else {
        "RamCast".into()
    }
}

/// What Fig. 5's or (`adjacent`) Fig. 6's destinations are.
fn what(adjacent: bool) -> &'static str {
    if adjacent {
        "adjacent destinations (\"genuine\" workload)"
    } else {
        "uniform random destinations"
    }
}

/// Figs. 5 and 6's knobs: 64 B messages to groups of 3, `dest` of x destinations.
fn to(dest: fn(usize) -> DestPolicy) -> impl Fn(f64) -> Knobs + Sync {
    move |x| Knobs {
        replicas: 3,
        size: 64,
        dest: dest(x as usize),
    }
}

/// The variants of `cells`, in the order they first appear.
fn variants(cells: &[Cell]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for c in cells {
        if !v.contains(&c.variant) {
            v.push(c.variant.clone());
        }
    }
    v
}

/// Fig. 5's or (`adjacent`) Fig. 6's plot: single-client latency, throughput at saturation,
/// and each TRAM tree's throughput over RamCast's on the same draws.
fn plot_fig5_6(
    out: &std::path::Path,
    name: &str,
    adjacent: bool,
    all_cells: &[Cell],
    xs: &[f64],
    labels: &[String],
) -> Result<(), String> {
    let what = what(adjacent);
    let normalised: Vec<Series> = labels
        .iter()
        .filter(|l| l.starts_with("TRAM"))
        .map(|l| {
            Series::new(
                l.clone(),
                xs.iter()
                    .filter_map(|&x| {
                        let t = get(all_cells, l, x)?;
                        let r = get(all_cells, &ramcast_for(adjacent, l), x)?;
                        Some((x, t.tput / r.tput))
                    })
                    .collect(),
            )
        })
        .collect();
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
                labels.iter().map(|l| p50_series(all_cells, l)).collect(),
            ),
            Panel {
                log_y: true,
                ..panel(
                    "throughput at saturation",
                    "destinations",
                    "max throughput (k msg/s, log scale)",
                    labels.iter().map(|l| tput_series(all_cells, l)).collect(),
                )
            },
            panel(
                "throughput normalised by RamCast's",
                "destinations",
                "TRAM / RamCast",
                normalised,
            ),
        ],
    )
}

/// TRAM's trees in Fig. 5, as their cells are labelled.
pub(super) const TREES: [&str; 3] = ["TRAM base", "TRAM breadth", "TRAM depth"];

/// Breadth's lowest and highest single-client median over 2 or more destinations (us): the
/// paper's "almost constant time, excluding the faster case of a single destination".
pub(super) fn breadth_spread(cells: &[Cell], xs: &[f64]) -> (f64, f64) {
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
pub(super) fn fig5_claims(cells: &[Cell], xs: &[f64]) -> Vec<Claim> {
    let last = *xs.last().expect("points");
    let mut claims = vec![breadth_claim(cells, xs), depth_best_claim(cells, xs)];
    claims.extend(few_destinations_claim(cells));
    claims.extend(crossover_claims(cells, xs));
    claims.extend(headline_claims(cells, last));
    claims
}

/// The best maximum throughput among `trees` at `x` destinations.
fn best_of(cells: &[Cell], trees: &[&str], x: f64) -> Option<Max> {
    Max::best(trees.iter().filter_map(|v| get(cells, v, x)).map(Cell::max))
}

/// Section 8.2: the breadth tree's latency is near-constant over 2..8 destinations.
fn breadth_claim(cells: &[Cell], xs: &[f64]) -> Claim {
    let (lo, hi) = breadth_spread(cells, xs);
    Claim::trend(
        "breadth: near-constant latency for 2..8 destinations",
        "breadth's highest / lowest median over 2..8 destinations < 1.25",
        format!("median {lo:.1} .. {hi:.1} us (max / min {:.2})", hi / lo),
        hi / lo < 1.25,
    )
}

/// Section 8.2: the depth tree has the best throughput, judged by the majority of destination
/// counts.
fn depth_best_claim(cells: &[Cell], xs: &[f64]) -> Claim {
    // At each count: depth above the better of base and breadth.
    let depth_best: Vec<Outcome> = xs
        .iter()
        .filter_map(|&x| {
            Some(Outcome::above(
                get(cells, "TRAM depth", x)?.max(),
                best_of(cells, &TREES[..2], x)?,
            ))
        })
        .collect();
    let count = |f: fn(&Outcome) -> bool| depth_best.iter().filter(|o| f(o)).count();
    let best = count(|o| o.holds);
    let majority = |n: usize| n * 2 > xs.len();
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
    )
}

/// Section 8.2: RamCast's throughput beats every tree's at 1 destination (when both were
/// measured there).
fn few_destinations_claim(cells: &[Cell]) -> Option<Claim> {
    let (r, t) = (get(cells, "RamCast", 1.0)?, best_of(cells, &TREES, 1.0)?);
    Some(Outcome::above(r.max(), t).ordering(
        "RamCast better with few destinations",
        "RamCast's maximum above every tree's at 1 destination",
        format!(
            "at 1 destination RamCast {:.0} k msg/s, best TRAM {:.0} k msg/s",
            r.tput / 1000.0,
            t.tput / 1000.0
        ),
    ))
}

/// Section 8.2's crossovers: the best tree's latency below RamCast's above 2 destinations, and
/// its throughput above RamCast's above 3.
fn crossover_claims(cells: &[Cell], xs: &[f64]) -> [Claim; 2] {
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
    let tput_ahead = |x: f64| {
        best_of(cells, &TREES, x)
            .zip(get(cells, "RamCast", x))
            .map(|(t, r)| Outcome::above(t, r.max()))
    };
    [
        Claim::ordering(
            "TRAM (best tree) lower latency for more than 2 destinations",
            "the best tree's median below RamCast's at every destination count above 2",
            format!("best TRAM median below RamCast's {}", from(&p50_ahead)),
            xs.iter().filter(|&&x| x > 2.0).all(|&x| p50_ahead(x)),
        ),
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
    ]
}

/// The abstract's headline bounds at the `last` destination count: more than 3x RamCast's
/// throughput and more than 2.3x lower latency, each with the ratio's interval.
fn headline_claims(cells: &[Cell], last: f64) -> Vec<Claim> {
    let mut claims = Vec::new();
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
                    .capped(best_of(cells, &TREES, last).is_some_and(|m| m.capped))
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
pub(super) fn fig6_claims(cells: &[Cell], xs: &[f64]) -> Vec<Claim> {
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
