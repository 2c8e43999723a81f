//! Ridge's figures on the simulator: `ridge-model`, section 5's round model measured on a
//! unit-delay profile ([`ridge::model`]) beside the paper's latency formulas and its worked
//! example; and the evaluation's Figs. 1-3 ([`super::evaluation`]).

use super::evaluation;
use crate::experiment::write_rows;
use crate::figure::{panel, write};
use crate::plot::{self, Series};
use crate::protocols::PaperFigure;
use crate::protocols::{Making, Progress};
use crate::verdict::{self, Claim, Measure};
use ridge::model::{self, Point};
use ridge::paxos::Dissemination;
use std::fmt::Write as _;
use std::path::Path;

/// Ridge's figures.
pub(crate) const FIGURES: &[PaperFigure] = &[
    PaperFigure {
        name: "ridge-model",
        about: "Ridge section 5: latency in rounds against the paper's formulas and throughput in values per round on a unit-delay profile (Ridge, ring, direct), and the worked example",
        profile: "unit-delay",
        software: "none",
        make: ridge_model,
    },
    PaperFigure {
        name: "ridge-fig1",
        about: "Ridge Fig. 1: broadcast throughput and latency against destinations (200 B, 8 KB, 64 KB), Ridge beside the ring and direct baselines",
        profile: crate::testbed::RIDGE,
        software: "ridge-java",
        make: evaluation::fig1,
    },
    PaperFigure {
        name: "ridge-fig2",
        about: "Ridge Fig. 2: throughput scaling with 1-8 groups of 4 servers, single-group messages, Ridge beside the ring",
        profile: crate::testbed::RIDGE,
        software: "ridge-java",
        make: evaluation::fig2,
    },
    PaperFigure {
        name: "ridge-fig3",
        about: "Ridge Fig. 3: optimistic deliveries of 64 KB messages against load: latency, throughput, mistakes",
        profile: crate::testbed::RIDGE,
        software: "ridge-java",
        make: evaluation::fig3,
    },
];

/// Groups of 3 servers measured (n = 6 .. 15 learners), and the deltas.
const GROUPS: [usize; 4] = [2, 3, 4, 5];
const DELTAS: [u64; 2] = [2, 5];
/// Learners of the one group whose throughput is measured (section 5.2), at delta 2.
const THROUGHPUT_N: [usize; 3] = [6, 9, 12];

/// A row of `rounds.csv`: the model's rounds to learn, measured and by the formula.
#[derive(serde::Serialize)]
struct RoundsRow<'a> {
    commit: &'a str,
    dissemination: &'a str,
    n: u64,
    q: u64,
    delta: u64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    measured_rounds: f64,
    /// Empty where the dissemination has no formula.
    formula_rounds: Option<u64>,
}

/// A row of the model's `throughput.csv`.
#[derive(serde::Serialize)]
struct RateRow<'a> {
    commit: &'a str,
    dissemination: &'a str,
    n: u64,
    delta: u64,
    clients: usize,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    values_per_round: f64,
}

/// `harness figure ridge-model`: section 5's round model on the unit-delay profile: latency in
/// rounds beside the paper's formulas, throughput in values per round, and the worked example.
fn ridge_model(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, _quick, _software, progress) = m.parts();
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let points = measure_latency(progress);
    write_rounds(out, commit, &points)?;
    let rates = measure_throughput(progress);
    write_rates(out, commit, &rates)?;
    let mut panels: Vec<plot::Panel> = DELTAS
        .iter()
        .map(|&delta| latency_panel(&points, delta))
        .collect();
    panels.push(throughput_panel(&rates));
    plot::draw_png(
        &out.join("model.png"),
        &format!("Ridge section 5 on sim (unit-delay), commit {commit}"),
        &panels,
    )?;
    let (md, claims) = summary(&points, &rates, commit);
    verdict::write(out, &claims)?;
    write(&out.join("summary.md"), &md)
}

/// `rounds.csv`: each latency point, measured and by the paper's formula.
fn write_rounds(out: &Path, commit: &str, points: &[Point]) -> Result<(), String> {
    let csv: Vec<RoundsRow<'_>> = points
        .iter()
        .map(|p| RoundsRow {
            commit,
            dissemination: p.dissemination.name(),
            n: p.n,
            q: p.q,
            delta: p.delta,
            measured_rounds: p.rounds,
            formula_rounds: p.formula(),
        })
        .collect();
    write_rows(&out.join("rounds.csv"), &csv)
}

/// The model's `throughput.csv`: each throughput point in values per round.
fn write_rates(out: &Path, commit: &str, rates: &[model::Rate]) -> Result<(), String> {
    // Every field of a rate is a column: the pattern names them all.
    let csv: Vec<RateRow<'_>> = rates
        .iter()
        .map(
            |&model::Rate {
                 dissemination,
                 n,
                 delta,
                 clients,
                 per_round,
             }| RateRow {
                commit,
                dissemination: dissemination.name(),
                n,
                delta,
                clients,
                values_per_round: per_round,
            },
        )
        .collect();
    write_rows(&out.join("throughput.csv"), &csv)
}

/// Section 5.3's latency: rounds from the coordinator's proposal to the last learner's decision,
/// for each delta, group count and dissemination.
fn measure_latency(progress: Progress<'_>) -> Vec<Point> {
    let mut points: Vec<Point> = Vec::new();
    for delta in DELTAS {
        for groups in GROUPS {
            for (_, d) in Dissemination::ALL {
                let p = model::measure(groups, delta, d);
                progress(&format!(
                    "  {} n={} delta={}: {:.3} rounds (formula {})",
                    d.name(),
                    p.n,
                    delta,
                    p.rounds,
                    p.formula().map_or("none".into(), |f| f.to_string())
                ));
                points.push(p);
            }
        }
    }
    points
}

/// Section 5.2's throughput: values per round of one group at delta 2, Ridge and the ring, for
/// each number of learners of [`THROUGHPUT_N`].
fn measure_throughput(progress: Progress<'_>) -> Vec<model::Rate> {
    THROUGHPUT_N
        .iter()
        .flat_map(|&n| {
            [Dissemination::Ridge, Dissemination::Ring].map(|d| {
                let r = model::throughput(n, 2, d);
                progress(&format!(
                    "  throughput {} n={n} delta=2: {:.3} values per round ({} clients)",
                    d.name(),
                    r.per_round,
                    r.clients
                ));
                r
            })
        })
        .collect()
}

/// The latency panel of `model.png` at `delta`: each dissemination's rounds against learners,
/// measured and (where the paper gives one) by its formula.
fn latency_panel(points: &[Point], delta: u64) -> plot::Panel {
    let mut series = Vec::new();
    for (name, d) in Dissemination::ALL {
        let of = |p: &&Point| p.dissemination == d && p.delta == delta;
        series.push(Series::new(
            format!("{name}, measured"),
            points
                .iter()
                .filter(of)
                .map(|p| (p.n as f64, p.rounds))
                .collect(),
        ));
        if d != Dissemination::Direct {
            series.push(Series::new(
                format!("{name}, paper's formula"),
                points
                    .iter()
                    .filter(of)
                    .filter_map(|p| Some((p.n as f64, p.formula()? as f64)))
                    .collect(),
            ));
        }
    }
    panel(
        &format!("latency of one value, delta = {delta} rounds"),
        "learners n",
        "rounds",
        series,
    )
}

/// The throughput panel of `model.png`: Ridge's and the ring's values per round against
/// learners, beside the model's one per round.
fn throughput_panel(rates: &[model::Rate]) -> plot::Panel {
    let measured = |d: Dissemination| {
        Series::new(
            format!("{}, measured", d.name()),
            rates
                .iter()
                .filter(|r| r.dissemination == d)
                .map(|r| (r.n as f64, r.per_round))
                .collect(),
        )
    };
    // In the latency panels' order, so each series keeps its colour: a panel colours its
    // series by position.
    let series = vec![
        measured(Dissemination::Ridge),
        Series::new(
            "ridge and ring, the model (section 5.2)",
            THROUGHPUT_N.iter().map(|&n| (n as f64, 1.0)).collect(),
        ),
        measured(Dissemination::Ring),
    ];
    panel(
        "throughput, one group, delta = 2 rounds",
        "learners n",
        "values per round",
        series,
    )
}

/// The summary and its claims. Section 5's formulas and its "one message decided per round"
/// give exact numbers (of rounds, of values per round), so they are judged as numbers, one
/// claim per point; the worked example is arithmetic on those formulas (by construction), and
/// "the same maximum throughput" names no number, so it stays a trend.
fn summary(points: &[Point], rates: &[model::Rate], commit: &str) -> (String, Vec<Claim>) {
    let profile = model::unit_delay(2);
    let mut md =
        String::from("# Ridge section 5 (performance model), reproduced on the simulator\n\n");
    let _ = writeln!(
        md,
        "Commit {commit}. Profile `{}` (built by `ridge::model::unit_delay`, one per delta): {}. \
         A round is {} ns. In a round a process sends one message and receives at most one; a \
         message sent in round k arrives in round k + delta. A value of {} bytes plus its \
         packet's own bytes takes just under a round on the wire; ids, posting and polling \
         cost a few percent of one (the paper neglects them, footnote 2). One value is \
         multicast to every group, so `e_all` decides it and all n servers learn it; `e_all` \
         has 3 acceptors in group 0, #Q = 2 (#X: the size of X). Measured: rounds from the \
         coordinator's proposal to the last learner's decision (`rounds.csv`, `model.png`). \
         The model has no software cost: every software profile gives these same numbers.\n",
        profile.name,
        profile.description,
        model::ROUND.as_nanos(),
        model::PAYLOAD
    );
    md.push_str(
        "| dissemination | n | delta | measured (rounds) | paper's formula (rounds) |\n|---|---|---|---|---|\n",
    );
    for p in points {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.3} | {} |",
            p.dissemination.name(),
            p.n,
            p.delta,
            p.rounds,
            p.formula().map_or("none given".into(), |f| f.to_string())
        );
    }
    let (n, delta, distributors, ring, ridge) = model::worked_example();
    md.push_str("\n## Claims\n\n");
    let mut claims = latency_claims(points);
    claims.push(Claim::by_construction(
        "worked example: 100 processes, 1 MB/s, 100 ms, 1 KB messages: 198 ms with distributors, 9900 ms with a ring",
        format!(
            "n = {n}, delta = {delta} rounds of 1 ms: delta + n - 2 = {distributors} ms, delta (n - 1) = {ring} ms; Ridge with 3 acceptors, (#Q + 1) delta + #(L \\ Q) - 2 = {ridge} ms"
        ),
        "arithmetic on the formulas measured above",
    ));
    let of = |d: Dissemination| rates.iter().filter(move |r| r.dissemination == d);
    let list = |d: Dissemination| {
        of(d)
            .map(|r| format!("n = {}: {:.3}", r.n, r.per_round))
            .collect::<Vec<_>>()
            .join(", ")
    };
    claims.extend(of(Dissemination::Ridge).map(|r| {
        Claim::number(
            &format!(
                "Ridge decides one message per round when the coordinator proposes one per round (section 5.2): n = {}",
                r.n
            ),
            1.0,
            "values per round",
            Measure::point(r.per_round).detail(format!(
                "at the slowest learner, delta = {}, best of {} clients (`throughput.csv`)",
                r.delta, r.clients
            )),
        )
    }));
    let close = of(Dissemination::Ridge).all(|r| {
        of(Dissemination::Ring)
            .find(|o| o.n == r.n)
            .is_some_and(|o| (r.per_round / o.per_round - 1.0).abs() <= 0.1)
    });
    claims.push(Claim::trend(
        "distributors and a ring reach the same maximum throughput (section 5.3)",
        "the ring's values per round within 10% of Ridge's at each n",
        format!("ring {}", list(Dissemination::Ring)),
        close,
    ));
    md.push_str(&verdict::table(&claims));
    md.push_str(
        "\nWhy the throughput falls short of one value per round, and more so as n grows: the \
         last acceptor sends each value once and a DECISION to each of the n learners, ids the \
         paper neglects (footnote 2) but the wire does not (30 bytes and a ring slot's header \
         each, against the value's 4000-byte round: at n = 12, about a sixth of a round more \
         per value on its link, so about 1 / 1.15 values per round); the ring baseline's last \
         acceptor sends the same DECISIONs. Clients' requests and every learner's response \
         also share the links, which the model leaves out. Not measured: section 5.2's n / (n - 1) for processes that each \
         broadcast their own message, a scheme that is neither Ridge nor a baseline here. The \
         direct baseline has no formula in the paper; its latency grows by about one round per \
         learner, since every acceptor sends the value to every learner in turn.\n",
    );
    (md, claims)
}

/// Section 5.3's latency formulas, one claim per measured point: a formula gives an exact
/// number of rounds for its `n` and `delta`, so each point is judged as the number it quotes
/// (the direct baseline has no formula, so no claim).
fn latency_claims(points: &[Point]) -> Vec<Claim> {
    let formula_words = |d: Dissemination| match d {
        Dissemination::Ridge => {
            Some("Ridge's latency is (#Q + 1) delta + #(L \\ Q) - 2 rounds (section 5.3)")
        }
        Dissemination::Ring => Some("a ring's latency is delta (n - 1) rounds (section 5.3)"),
        Dissemination::Direct => None,
    };
    points
        .iter()
        .filter_map(|p| {
            let (words, rounds) = (formula_words(p.dissemination)?, p.formula()?);
            Some(Claim::number(
                &format!("{words}: {rounds} at n = {}, delta = {}", p.n, p.delta),
                rounds as f64,
                "rounds",
                Measure::point(p.rounds)
                    .detail("from the coordinator's proposal to the last learner's decision"),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Rule, Verdict};

    fn point(dissemination: Dissemination, n: u64, delta: u64, rounds: f64) -> Point {
        Point {
            dissemination,
            n,
            q: 2,
            delta,
            rounds,
        }
    }

    fn rate(dissemination: Dissemination, n: u64, per_round: f64) -> model::Rate {
        model::Rate {
            dissemination,
            n,
            delta: 2,
            clients: 16,
            per_round,
        }
    }

    /// Each formula point is a number of rounds; the direct baseline, with no formula, has
    /// no claim; "one message per round" is the number 1 at each n.
    #[test]
    fn the_formulas_and_one_value_per_round_are_judged_as_numbers() {
        let points = [
            point(Dissemination::Ridge, 6, 2, 7.93),
            point(Dissemination::Ring, 6, 2, 9.94),
            point(Dissemination::Direct, 6, 2, 8.76),
            point(Dissemination::Ring, 9, 5, 25.0),
        ];
        let rates = [
            rate(Dissemination::Ridge, 6, 0.94),
            rate(Dissemination::Ring, 6, 0.94),
            rate(Dissemination::Ridge, 12, 0.6),
            rate(Dissemination::Ring, 12, 0.86),
        ];
        let (md, claims) = summary(&points, &rates, "c");
        let numbers: Vec<(f64, &str, Verdict)> = claims
            .iter()
            .filter_map(|c| match &c.rule {
                Rule::Number {
                    published, unit, ..
                } => Some((*published, unit.as_str(), c.verdict)),
                _ => None,
            })
            .collect();
        assert_eq!(
            numbers,
            [
                (8.0, "rounds", Verdict::Reproduced),
                (10.0, "rounds", Verdict::Reproduced),
                // delta (n - 1) = 40 rounds, measured 25: more than 25% off.
                (40.0, "rounds", Verdict::NotReproduced),
                (1.0, "values per round", Verdict::Reproduced),
                (1.0, "values per round", Verdict::NotReproduced),
            ]
        );
        assert!(
            claims[0].words.contains("8 at n = 6, delta = 2"),
            "{}",
            claims[0].words
        );
        assert_eq!(claims[3].verdict, Verdict::ByConstruction);
        let same = claims.last().expect("claims");
        assert!(matches!(same.rule, Rule::Trend(_)));
        assert_eq!(same.verdict, Verdict::NotReproduced);
        assert!(md.contains(&verdict::table(&claims)));
    }
}
