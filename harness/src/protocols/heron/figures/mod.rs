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
use crate::figure::{panel, table_head, write, TABLE_HEAD};
use crate::plot::{self, Series};
use crate::protocols::Making;
use crate::protocols::PaperFigure;
use crate::runtime::Runtime;
use crate::verdict::{self, Claim, Measure, Verdict};
use heron::tpcc::{self, Kind, Mix, Scale};
use heron::{Tpcc, Window};
use std::fmt::Write as _;
use std::path::Path;
use transport::runtime::sim::{Profile, SimConfig, Software};
use transport::Nanos;

mod fig5_4;
mod fig5_5;
mod table5_1;
mod table5_2;

pub(crate) use fig5_4::new_order_execution;
use fig5_4::*;
use fig5_5::*;
use table5_1::*;
use table5_2::*;

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
        runtime: Runtime::Sim,
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
