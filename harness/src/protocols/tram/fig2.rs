//! `harness figure tram-fig2`: TRAM Fig. 2, the latency of one write to each of k targets
//! when the initiator awaits each completion before the next post (the paper's baseline)
//! against posting them all and awaiting the completions together (TRAM's), on TRAM's testbed.
//! The two are the write disciplines of software profiles ([`Discipline`]); the figure checks
//! the mechanism, then probes what each discipline does to RamCast Fig. 5 and to the one
//! number every RamCast profile is fitted on, so the discipline a paper profile declares is
//! checked against the papers before figures rest on it.

use crate::experiment::Measured;
use crate::figure::{panel, write, write_records};
use crate::plot::{self, Panel, Series};
use crate::protocols::Making;
use crate::stats::{linear_fit, mean_ci};
use crate::verdict::{self, Claim};
use multicast::DestPolicy;
use std::fmt::Write as _;
use std::path::Path;
use transport::runtime::sim::{Discipline, Posting, Profile, Sim, SimConfig, Software};
use transport::*;

/// Targets of the fan-out: 1 to 16 (TRAM's runs have up to 8 groups of 3).
const TARGETS: std::ops::RangeInclusive<u32> = 1..=16;
/// Writes of 64 B, inline on every testbed (TRAM's messages in Figs. 5-6).
const BYTES: usize = 64;

/// The disciplines of Fig. 2: its baseline and TRAM's optimisation.
const FIG2: [(Discipline, &str); 2] = [
    (Discipline::EACH, "each completion awaited (baseline)"),
    (Discipline::Batch, "awaited together (TRAM)"),
];

/// RamCast Fig. 5's all-groups single-client p95 latencies (us) for 1, 2, 4, 8 groups.
const RAMCAST_FIG5_P95: [(usize, f64); 4] = [(1, 8.0), (2, 46.0), (4, 78.0), (8, 150.0)];
/// RamCast Fig. 4's maximum throughput, one group, 64 B (msg/s): what every RamCast software
/// profile is fitted on.
const RAMCAST_MAX: f64 = 250_000.0;

/// Process 0 writes [`BYTES`] to each of processes `1..=k`, signalled, and times each round
/// from its first post to the poll that drains the last completion; the others only register
/// their memory.
#[derive(Debug)]
struct Fanout {
    targets: u32,
    rounds: u32,
    warmup: u32,
    round: u32,
    started: Option<Nanos>,
    completed: u32,
    samples: Vec<f64>,
    error: Option<String>,
}

impl Fanout {
    fn new(targets: u32, rounds: u32, warmup: u32) -> Fanout {
        Fanout {
            targets,
            rounds,
            warmup,
            round: 0,
            started: None,
            completed: 0,
            samples: Vec::new(),
            error: None,
        }
    }

    fn initiator(&self) -> bool {
        self.targets > 0
    }
}

impl<N: Nic> Process<N> for Fanout {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(BYTES).with_default(Access::Write)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if !self.initiator() || self.error.is_some() {
            return Progress::IDLE;
        }
        let mut worked = false;
        while let Some(c) = nic.poll_completion() {
            worked = true;
            if c.status != Status::Success {
                self.error = Some(format!("a fan-out write failed: {c:?}"));
                return Progress::IDLE;
            }
            self.completed += 1;
        }
        if let Some(t0) = self.started.filter(|_| self.completed == self.targets) {
            if self.round >= self.warmup {
                self.samples.push((nic.now() - t0).as_us_f64());
            }
            self.round += 1;
            self.started = None;
        }
        if self.started.is_none() && self.round < self.rounds {
            self.started = Some(nic.now());
            self.completed = 0;
            let flags = WriteFlags::SIGNALED.inline();
            for t in 1..=self.targets {
                let dst = RemoteAddr::new(ProcessId(t), RegionId(0), 0);
                if let Err(e) = nic.post_write(dst, &[7; BYTES], flags) {
                    self.error = Some(e.to_string());
                    return Progress::IDLE;
                }
            }
            worked = true;
        }
        Progress::worked(worked)
    }

    fn done(&self) -> bool {
        !self.initiator() || self.round >= self.rounds || self.error.is_some()
    }
}

/// One point of the fan-out: latency samples (us) of writing to `targets` under `discipline`.
fn fanout(
    profile: &Profile,
    discipline: Discipline,
    targets: u32,
    rounds: u32,
) -> Result<Vec<f64>, String> {
    let mut cfg = SimConfig::new(1, profile.clone());
    cfg.software.posting = Posting {
        discipline,
        ..Posting::default()
    };
    let procs: Vec<Fanout> = std::iter::once(Fanout::new(targets, rounds, rounds / 10))
        .chain((0..targets).map(|_| Fanout::new(0, 0, 0)))
        .collect();
    let mut sim = Sim::new(cfg, procs);
    sim.run(None);
    let p = sim.into_processes().swap_remove(0);
    match p.error {
        Some(e) => Err(e),
        None if p.samples.is_empty() => Err(format!(
            "the fan-out to {targets} under {discipline} completed no round"
        )),
        None => Ok(p.samples),
    }
}

/// One RamCast run of the probe: RamCast Fig. 5's experiment under `software` with every
/// process posting under `discipline`.
fn ramcast(
    profile: &Profile,
    software: &Software,
    discipline: Discipline,
    groups: usize,
    clients: usize,
    duration: Nanos,
) -> Measured {
    let mut s = software.clone();
    s.posting = Posting {
        discipline,
        ..Posting::default()
    };
    crate::protocols::ramcast::figures::experiment(
        profile,
        &s,
        groups,
        clients,
        64,
        DestPolicy::All,
        1,
        duration,
    )
    .run()
}

/// TRAM Fig. 2, and the probe of what each discipline does to RamCast.
pub(crate) fn fig2(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, quick, software, progress) = m.parts();
    let profile = Profile::load(crate::testbed::TRAM).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let rounds = if quick { 50 } else { 500 };
    let targets: Vec<u32> = if quick {
        vec![1, 2, 4, 8, 16]
    } else {
        TARGETS.collect()
    };
    let cells: Vec<Cell> = crate::figure::in_parallel(
        &FIG2
            .iter()
            .flat_map(|&(d, _)| targets.iter().map(move |&k| (d, k)))
            .collect::<Vec<_>>(),
        |&(d, k)| fanout(&profile, d, k, rounds).map(|s| (d, k, mean_ci(&s))),
    )?;
    progress(&format!("fan-out measured: {} points", cells.len()));
    write_records(
        &out.join("fig2.csv"),
        [
            "discipline",
            "targets",
            "bytes",
            "rounds",
            "mean_us",
            "mean_us_ci95_lo",
            "mean_us_ci95_hi",
        ],
        cells.iter().map(|&(d, k, (m, lo, hi))| {
            [
                d.to_string(),
                k.to_string(),
                BYTES.to_string(),
                (rounds - rounds / 10).to_string(),
                format!("{m:.4}"),
                format!("{lo:.4}"),
                format!("{hi:.4}"),
            ]
        }),
    )?;
    let probe = Probe::measure(software, quick)?;
    progress("RamCast probe measured");
    probe.write(&out.join("ramcast-probe.csv"))?;
    plot::draw_png(
        &out.join("fig2.png"),
        &format!(
            "TRAM Fig. 2 on sim ({}): one {BYTES} B write to each target",
            profile.name
        ),
        &[fanout_panel(&cells), probe.panel()],
    )?;
    let mut md = summary_head(&profile, commit, rounds);
    md += &fanout_table(&cells, &targets);
    md.push_str(CLAIMS_HEAD);
    let claims = claims(&cells);
    md.push_str(&verdict::table(&claims));
    md += &probe.summary(software);
    write(&out.join("summary.md"), &md)?;
    verdict::write(out, &claims)
}

/// Fig. 2's panel: the mean latency of each discipline against the targets, with its 95%
/// interval.
fn fanout_panel(cells: &[Cell]) -> Panel {
    panel(
        "write latency vs targets",
        "targets",
        "mean latency, first post to last completion (us)",
        FIG2.iter()
            .map(|&(d, label)| {
                Series::with_errors(
                    label,
                    curve(cells, d)
                        .iter()
                        .map(|c| (f64::from(c.1), c.2 .0, Some((c.2 .1, c.2 .2)))),
                )
            })
            .collect(),
    )
}

/// The summary's title and its account of the fan-out.
fn summary_head(profile: &Profile, commit: &str, rounds: u32) -> String {
    format!(
        "# TRAM Fig. 2 (write latency against targets), reproduced on the simulator\n\n\
         Commit {commit}. Profile `{}` (TRAM's testbed; calibrated on ib_write_lat {} us and \
         ib_write_bw {} Gb/s only). One initiator writes {BYTES} B, inline and signalled, to each \
         of k targets and times each round from its first post to the poll that drains the last \
         completion; {} rounds per point after {} of warm-up. The 95% interval of each mean is \
         over the rounds (each draws its own latencies; normal approximation). The two curves are \
         the write disciplines of software profiles (`each`, `batch`; see \
         `transport::runtime::sim::Discipline`); software prices play no part in this panel. \
         Every row is in `fig2.csv`.\n\n",
        profile.name,
        profile.calibration.write_lat_us,
        profile.calibration.write_bw_gbps,
        rounds - rounds / 10,
        rounds / 10
    )
}

/// Fig. 2's measured table: each discipline's mean and interval, by targets.
fn fanout_table(cells: &[Cell], targets: &[u32]) -> String {
    let mut md = String::from("| targets | ");
    md.push_str(
        &FIG2
            .map(|(_, l)| format!("{l}: mean [95% CI] (us)"))
            .join(" | "),
    );
    md.push_str(" |\n|---|---|---|\n");
    for &k in targets {
        let _ = write!(md, "| {k} |");
        for (d, _) in FIG2 {
            if let Some((_, _, (m, lo, hi))) = cells.iter().find(|c| c.0 == d && c.1 == k) {
                let _ = write!(md, " {m:.2} [{lo:.2}, {hi:.2}] |");
            }
        }
        md.push('\n');
    }
    md
}

/// The head of the summary's claims: how the caption's claims are judged.
const CLAIMS_HEAD: &str = "\n## The paper's claims\n\nFig. 2 is a plot without numbers in the \
     text; its caption's two claims are trends, judged by the tests in the rule column.\n\n";

/// The probe: RamCast Fig. 5 (all groups, one client) and Fig. 4's one-group maximum under
/// each discipline, with this lens's prices, on RamCast's testbed.
struct Probe {
    /// RamCast's testbed.
    profile: Profile,
    /// The window of each latency run.
    duration: Nanos,
    /// Per discipline and groups: the p95 latency (us) and the leader changes.
    p95s: Vec<(Discipline, usize, f64, usize)>,
    /// Per discipline and clients: the throughput of one group (msg/s).
    tputs: Vec<(Discipline, usize, f64)>,
}

/// The disciplines the probe runs RamCast under.
const PROBED: [Discipline; 3] = [Discipline::Collective, Discipline::Batch, Discipline::EACH];

impl Probe {
    /// Runs the probe under `software`'s prices.
    fn measure(software: &Software, quick: bool) -> Result<Probe, String> {
        let profile = Profile::load(crate::testbed::RAMCAST).map_err(|e| e.to_string())?;
        let duration = Nanos(if quick { 2_000_000 } else { 20_000_000 });
        let groups: Vec<usize> = RAMCAST_FIG5_P95.iter().map(|g| g.0).collect();
        let latency_runs: Vec<(Discipline, usize)> = PROBED
            .iter()
            .flat_map(|&d| groups.iter().map(move |&g| (d, g)))
            .collect();
        let p95s = crate::figure::in_parallel(&latency_runs, |&(d, g)| {
            let m = ramcast(&profile, software, d, g, 1, duration);
            Ok((
                d,
                g,
                m.latency.value_at_quantile(0.95) as f64 / 1000.0,
                m.leader_changes,
            ))
        })?;
        let client_counts = [1usize, 4, 16, 64];
        let tput_runs: Vec<(Discipline, usize)> = PROBED
            .iter()
            .flat_map(|&d| client_counts.iter().map(move |&c| (d, c)))
            .collect();
        let tputs = crate::figure::in_parallel(&tput_runs, |&(d, c)| {
            let m = ramcast(&profile, software, d, 1, c, Nanos(2_000_000));
            Ok((d, c, m.throughput))
        })?;
        Ok(Probe {
            profile,
            duration,
            p95s,
            tputs,
        })
    }

    /// The one-group maximum under `d` (msg/s).
    fn max_of(&self, d: Discipline) -> f64 {
        self.tputs
            .iter()
            .filter(|t| t.0 == d)
            .map(|t| t.2)
            .fold(0.0, f64::max)
    }

    /// The latency run under `d` to `g` groups.
    fn p95_of(&self, d: Discipline, g: usize) -> &(Discipline, usize, f64, usize) {
        self.p95s
            .iter()
            .find(|p| p.0 == d && p.1 == g)
            .expect("measured")
    }

    /// Writes the probe's rows: the latency runs, then the throughput runs.
    fn write(&self, path: &Path) -> Result<(), String> {
        let latency = self.p95s.iter().map(|&(d, g, p95, changes)| {
            [
                d.to_string(),
                g.to_string(),
                "1".into(),
                format!("{p95:.3}"),
                String::new(),
                changes.to_string(),
            ]
        });
        let throughput = self.tputs.iter().map(|&(d, c, t)| {
            [
                d.to_string(),
                "1".into(),
                c.to_string(),
                String::new(),
                format!("{t:.0}"),
                String::new(),
            ]
        });
        write_records(
            path,
            [
                "discipline",
                "groups",
                "clients",
                "lat_p95_us",
                "throughput_msgs_per_s",
                "leader_changes",
            ],
            latency.chain(throughput),
        )
    }

    /// RamCast Fig. 5's p95 latencies under each discipline, beside the paper's.
    fn panel(&self) -> Panel {
        let measured = PROBED.iter().map(|&d| {
            Series::new(
                d.to_string(),
                RAMCAST_FIG5_P95
                    .iter()
                    .map(|&(g, _)| (g as f64, self.p95_of(d, g).2))
                    .collect(),
            )
        });
        let paper = Series::new(
            "RamCast paper",
            RAMCAST_FIG5_P95
                .iter()
                .map(|&(g, v)| (g as f64, v))
                .collect(),
        );
        Panel {
            // Awaiting every write collapses RamCast at 8 groups: only a log axis shows
            // the other curves beside it.
            log_y: true,
            ..panel(
                "RamCast Fig. 5 under each discipline (probe)",
                "destination groups",
                "p95 latency, 1 client (us)",
                measured.chain(std::iter::once(paper)).collect(),
            )
        }
    }

    /// The summary's section on the probe: what it runs, its table, and what it shows.
    fn summary(&self, software: &Software) -> String {
        let mut md = format!(
            "\n## Probe: what each discipline does to RamCast\n\n\
             RamCast's paper and TRAM's describe its prototype differently: RamCast section 4 polls a \
             completion 'after pushing a number of writes' (selective signalling, one request per \
             peer), TRAM section 3 names awaiting each write before the next as the baseline TRAM \
             improves on. Before a paper profile declares a discipline, this probe runs RamCast Fig. 5's \
             all-groups experiment (1 client, 64 B, {} ms, seed 1) and Fig. 4's one-group maximum (the \
             most of 1, 4, 16, 64 clients, 2 ms each) on `{}` with this lens's prices (`{}`) under \
             each discipline. No verdict: the rows say which reading the published numbers allow. \
             Rows in `ramcast-probe.csv`.\n\n",
            self.duration.as_us_f64() / 1000.0,
            self.profile.name,
            software.describe()
        );
        md.push_str("| discipline | ");
        md.push_str(
            &RAMCAST_FIG5_P95
                .iter()
                .map(|(g, p)| format!("p95, {g} group(s) (paper {p} us)"))
                .collect::<Vec<_>>()
                .join(" | "),
        );
        md.push_str(" | one-group maximum (paper 250 k msg/s) |\n|---|---|---|---|---|---|\n");
        for d in PROBED {
            let _ = write!(md, "| {d} |");
            for &(g, _) in &RAMCAST_FIG5_P95 {
                let (_, _, p95, changes) = *self.p95_of(d, g);
                let _ = write!(md, " {p95:.1} us");
                if changes > 0 {
                    let _ = write!(md, " ({changes} leader changes)");
                }
                md.push_str(" |");
            }
            let _ = writeln!(md, " {:.0} k msg/s |", self.max_of(d) / 1000.0);
        }
        md + &each_caps(self.max_of(Discipline::EACH))
    }
}

/// What the probe shows: awaiting every write caps RamCast's one-group throughput at
/// `each_max` (msg/s), against the number every RamCast profile is fitted on.
fn each_caps(each_max: f64) -> String {
    let below = each_max < RAMCAST_MAX;
    format!(
        "\nAwaiting every write caps RamCast's one-group throughput at {:.0} k msg/s under these \
         prices, {} the published {:.0} k msg/s that every RamCast profile is fitted on{}. \
         Awaiting each poll's writes together (`batch`) keeps RamCast's latency nearly flat in the \
         groups, as posting collectively does.\n\n",
        each_max / 1000.0,
        if below { "below" } else { "above" },
        RAMCAST_MAX / 1000.0,
        if below {
            ": a profile that awaits every write cannot be fitted on that number"
        } else {
            ""
        }
    )
}

/// A measured point of Fig. 2: the discipline, the targets, and the mean latency (us) with
/// its 95% interval.
type Cell = (Discipline, u32, (f64, f64, f64));

/// The points of `d`, by targets.
fn curve(cells: &[Cell], d: Discipline) -> Vec<&Cell> {
    cells.iter().filter(|c| c.0 == d).collect()
}

/// The mean latency against the targets, as the plot and the fit take them.
fn means(curve: &[&Cell]) -> Vec<(f64, f64)> {
    curve.iter().map(|c| (f64::from(c.1), c.2 .0)).collect()
}

/// Fig. 2's caption, as two trends (it quotes no number). The baseline's growth is judged on
/// the least-squares fit and on the largest fan-out against one target; that ratio is of two
/// means with 95% intervals, so it is inconclusive when the ratio of their ends straddles the
/// threshold. The optimised curve's flatness is judged on its slope, which has no interval.
fn claims(cells: &[Cell]) -> Vec<Claim> {
    let (each, batch) = (
        curve(cells, Discipline::EACH),
        curve(cells, Discipline::Batch),
    );
    let (Some(e1), Some(ek), Some(b1), Some(bk)) =
        (each.first(), each.last(), batch.first(), batch.last())
    else {
        return Vec::new();
    };
    let (slope, r2) = linear_fit(&means(&each));
    let (batch_slope, _) = linear_fit(&means(&batch));
    let kmax = f64::from(ek.1);
    let ((m1, lo1, hi1), (mk, lok, hik)) = (e1.2, ek.2);
    let (ratio, ratio_lo, ratio_hi) = (mk / m1, lok / hi1, hik / lo1);
    let threshold = kmax / 2.0;
    vec![
        Claim::trend(
            "baseline (each completion awaited before the next post): latency grows linearly \
             with the targets",
            "least-squares R² >= 0.98 and the largest fan-out at least half as many times the \
             one-target latency as it has targets (inconclusive when the ratio of the two means' \
             95% intervals straddles that)",
            format!(
                "slope {slope:.2} us per target, R² {r2:.4}; {kmax:.0} targets {mk:.2} us = \
                 {ratio:.1}x one target ({ratio_lo:.1} .. {ratio_hi:.1} from the 95% intervals)"
            ),
            r2 >= 0.98 && ratio >= threshold,
        )
        .undecided_if(
            r2 >= 0.98 && ratio_lo < threshold && threshold <= ratio_hi,
            "the 95% interval of the ratio straddles the threshold",
        ),
        Claim::trend(
            "optimised (all issued, completions awaited together): latency near flat, \
             'significantly reducing latency'",
            "its least-squares slope at most a tenth of the baseline's",
            format!(
                "slope {batch_slope:.3} us per target ({:.1}% of the baseline's); {:.2} us at \
                 {} target, {:.2} us at {}",
                100.0 * batch_slope / slope,
                b1.2 .0,
                b1.1,
                bk.2 .0,
                bk.1
            ),
            batch_slope <= slope / 10.0,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Rule, Verdict};

    /// Cells for targets 1..=16: the baseline `step` us per target above one round trip of
    /// 3 us, with intervals of `half` us either side; the optimised curve flat at 3 us.
    fn cells(step: f64, half: f64) -> Vec<Cell> {
        let mut v = Vec::new();
        for k in 1..=16u32 {
            let each = 3.0 + step * f64::from(k - 1);
            v.push((Discipline::EACH, k, (each, each - half, each + half)));
            v.push((Discipline::Batch, k, (3.0, 2.9, 3.1)));
        }
        v
    }

    /// The caption's two claims are trends with their tests in the rule, not in the words; the
    /// baseline's ratio of means is inconclusive when its interval straddles the threshold.
    #[test]
    fn the_captions_claims_are_trends_and_the_interval_of_the_ratio_decides() {
        let c = claims(&cells(3.0, 0.1));
        assert_eq!(c.len(), 2);
        for claim in &c {
            assert!(matches!(claim.rule, Rule::Trend(_)), "{claim:?}");
            assert!(!claim.words.contains("rule:"), "{}", claim.words);
            assert_eq!(claim.verdict, Verdict::Reproduced, "{claim:?}");
        }
        assert!(c[0].rule.describe().starts_with("trend: least-squares R²"));
        // 16 targets at 3 + 15 * 1.4 = 24 us, 8x one target: the threshold, but the intervals
        // allow 7.7x to 8.3x.
        let straddle = claims(&cells(1.4, 0.1));
        assert_eq!(
            straddle[0].verdict,
            Verdict::Inconclusive,
            "{:?}",
            straddle[0]
        );
        // Well below (3.5x, at most 3.7x): decided.
        let slow = claims(&cells(0.5, 0.1));
        assert_eq!(slow[0].verdict, Verdict::NotReproduced);
        assert_eq!(slow[1].verdict, Verdict::Reproduced);
    }

    /// On a profile without latency variance the fan-out is exact: awaiting each completion
    /// costs a round trip per target, awaiting them together about one in all.
    #[test]
    fn the_baseline_pays_a_round_trip_per_target_and_the_batch_about_one() {
        let mut p = Profile::load(crate::testbed::TRAM).unwrap();
        p.nic.write_latency_dist = None;
        let one = |d, k| mean_ci(&fanout(&p, d, k, 20).unwrap()).0;
        let rtt = one(Discipline::EACH, 1);
        // Each further target adds one round trip (and its post), the same every time.
        let step = (one(Discipline::EACH, 8) - rtt) / 7.0;
        assert!(step > 0.9 * rtt && step < 1.1 * rtt, "{step} vs {rtt}");
        for k in [2, 4] {
            let each = one(Discipline::EACH, k);
            let line = rtt + step * (k - 1) as f64;
            assert!((each - line).abs() < 0.01 * line, "{k}: {each} vs {line}");
            let batch = one(Discipline::Batch, k);
            assert!(batch < 1.2 * rtt, "{k}: {batch} vs {rtt}");
        }
    }
}
