//! `harness check`: seeded sweeps under faults of the transport model (chaos) and of every
//! protocol with a [`SeedRun`], sharded, merged, reported.

use crate::protocols::{self, Checked};
use crate::{check_chaos, CheckArgs, RuntimeKind, COMMIT};
use std::path::PathBuf;
use std::process::ExitCode;
use sweep::{Model, SeedRun};
use transport::runtime::sim::{Profile, Software, DEFAULT_PROFILE, DEFAULT_SOFTWARE};

/// What `--protocol` names besides the protocols of [`protocols::checked`]: the transport
/// model's own check.
pub(crate) const CHAOS: &str = "chaos";

/// `check --protocol`: the chaos check and every protocol with a seeded sweep.
pub(crate) fn targets() -> clap::builder::PossibleValuesParser {
    let chaos = clap::builder::PossibleValue::new(CHAOS).help(
        "The transport model itself: random ops under random faults, checked against the model",
    );
    clap::builder::PossibleValuesParser::new(std::iter::once(chaos).chain(
        protocols::checked().map(|c| clap::builder::PossibleValue::new(c.name).help(c.about)),
    ))
}

/// The checked protocol called `name`, if it is one (else it is the chaos check).
fn checked(name: &str) -> Option<&'static Checked> {
    protocols::checked().find(|c| c.name == name)
}

/// The profile a `check` runs on: `--profile`, else the protocol's testbed.
fn check_profile(a: &CheckArgs) -> String {
    a.profile.clone().unwrap_or_else(|| {
        checked(&a.protocol)
            .map_or(DEFAULT_PROFILE, |c| c.testbed)
            .into()
    })
}

/// A seeded sweep as `check` runs it: plain parameters, whatever flags gave them.
#[derive(Debug)]
pub(crate) struct Plan {
    /// What every seed runs on: profiles, torn landings, or the local runtime's threads.
    pub(crate) model: Model,
    /// The seeds this run covers (its shard's share of the sweep).
    pub(crate) seeds: Vec<u64>,
    /// The sweep's first seed, for the report.
    pub(crate) first: u64,
    /// The sweep's number of seeds, for the report.
    pub(crate) count: u64,
    /// This run's shard of the sweep (`K/N`), for the report.
    pub(crate) shard: (u64, u64),
    /// Whether every run's parameters are printed (one seed, or `--verbose`).
    pub(crate) verbose: bool,
    /// Whether every seed runs twice and must repeat itself.
    pub(crate) determinism: bool,
    /// Seeds run at once.
    pub(crate) jobs: usize,
    /// A run's whole line to run instead of the one its seed derives.
    pub(crate) replay: Option<String>,
    /// Where the delivery logs of failed seeds go.
    pub(crate) log: Option<PathBuf>,
    /// Where the report goes.
    pub(crate) report: Option<PathBuf>,
    /// The software profile as given (a replay line repeats it).
    pub(crate) software: String,
}

/// The sweep `a` asks for, its header printed.
fn check_preamble(a: &CheckArgs, protocol: &str) -> Result<Plan, String> {
    if matches!(a.runtime, RuntimeKind::Tcp | RuntimeKind::Verbs) {
        let logged = protocols::find(protocol).is_ok().then(|| {
            format!(
                "; check a {0} run of {protocol} with `harness run --protocol {protocol} --runtime {0} --log D` and `harness verify --log D`",
                a.runtime.name()
            )
        });
        return Err(format!(
            "--runtime {}: check runs its seeds on sim (faults and torn landings injected, every failure replayable) or local (real threads){}",
            a.runtime.name(),
            logged.unwrap_or_default()
        ));
    }
    let model = Model {
        profile: Profile::load(&check_profile(a)).map_err(|e| e.to_string())?,
        software: Software::load(&a.software).map_err(|e| e.to_string())?,
        torn: a.torn,
        local: (a.runtime == RuntimeKind::Local).then_some(sweep::LocalCheck {
            stretch: a.stretch,
            nic_thread: true,
            yield_words: true,
        }),
    };
    let (k, n) = a.shard.unwrap_or((0, 1));
    let replayed = match &a.replay {
        Some(line) => Some(
            sweep::spec::Spec::parse(line)?
                .get::<u64>("seed")
                .map_err(|e| format!("--replay: {e}"))?,
        ),
        None => None,
    };
    let (seeds, verbose): (Vec<u64>, bool) = match a.seed.or(replayed) {
        Some(s) => (vec![s], true),
        None => (
            (a.first_seed..a.first_seed.saturating_add(a.seeds))
                .skip(k as usize)
                .step_by(n as usize)
                .collect(),
            a.verbose,
        ),
    };
    let shard = a
        .shard
        .map_or(String::new(), |(k, n)| format!(" shard={k}/{n}"));
    println!(
        "harness check: protocol={protocol} seeds={} first={}{shard} determinism={} torn={} runtime={} commit={COMMIT}",
        seeds.len(),
        seeds.first().copied().unwrap_or(0),
        a.check_determinism,
        a.torn,
        if a.runtime == RuntimeKind::Local {
            format!(
                "local (stretch {}x, NIC thread reordering queue pairs, multi-word ops yielding between words; of each seed's faults only crashes and pauses apply, and the tally counts the schedules as drawn: link delays, slowdowns, revokes and torn landings are the simulator's)",
                a.stretch
            )
        } else {
            "sim".to_string()
        }
    );
    println!("{}", model.profile.describe());
    println!("{}", model.software.describe());
    // A local run takes every core itself: its seeds go one at a time.
    let jobs = if model.local.is_some() {
        1
    } else {
        a.jobs.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |j| j as usize,
        )
    };
    Ok(Plan {
        model,
        seeds,
        first: a.first_seed,
        count: a.seeds,
        shard: (k, n),
        verbose,
        determinism: a.check_determinism,
        jobs,
        replay: a.replay.clone(),
        log: a.log.clone(),
        report: a.report.clone(),
        software: a.software.clone(),
    })
}

/// `--replay 'LINE'` for `run`.
fn replay_flag<R: SeedRun>(run: &R) -> String {
    format!("--replay '{}'", run.spec())
}

/// The run a `--replay` line describes, or why it describes none.
pub(crate) fn replayed<R: SeedRun>(line: &str) -> Result<R, String> {
    R::from_spec(line).map_err(|e| {
        format!(
            "--replay: {e} (`harness check --protocol {} --seed N` prints a whole line)",
            R::PROTOCOL
        )
    })
}

/// A seeded sweep of one protocol under faults, each run checked against its properties.
pub(crate) fn sweep<R: SeedRun>(plan: &Plan) -> Result<ExitCode, String> {
    let replay = plan.replay.as_deref().map(replayed::<R>).transpose()?;
    let Plan {
        model,
        seeds,
        verbose,
        ..
    } = plan;
    let local = model.local.as_ref();
    // A report file that cannot be written fails now, not after the sweep.
    if let Some(path) = &plan.report {
        std::fs::write(path, "").map_err(|e| format!("--report {}: {e}", path.display()))?;
    }
    let bar = crate::progress::bar(seeds.len() as u64);
    let start = std::time::Instant::now();
    let mut failed = Vec::new();
    let mut tally = sweep::Tally::default();
    let mut error = None;
    // The line that runs a seed's run again: a replay on the simulator; threads do not replay
    // (the same seed is the same workload and schedule, and another interleaving).
    let again = |run: &R| match local {
        None => format!(
            "  replay: harness check --protocol {} --profile {} --software {} --torn {} {}",
            R::PROTOCOL,
            model.profile.name,
            plan.software,
            model.torn,
            replay_flag(run)
        ),
        Some(local) => format!(
            "  rerun (threads do not replay: the same workload and schedule, another \
             interleaving): harness check --protocol {} --runtime local --stretch {} {}",
            R::PROTOCOL,
            local.stretch,
            replay_flag(run)
        ),
    };
    sweep::run_seeds(
        seeds,
        |seed| replay.clone().unwrap_or_else(|| R::derive(seed)),
        model,
        plan.determinism,
        plan.jobs,
        |seed, run, out| {
            let tearing = if local.is_some() {
                "real threads (the NIC thread yields between words)".into()
            } else {
                model
                    .tearing(seed)
                    .map_or("none".to_string(), |t| t.to_string())
            };
            if *verbose {
                bar.suspend(|| {
                    println!("{}\n  torn landings: {tearing}", run.spec());
                    if local.is_none() {
                        println!("{}", again(run));
                    }
                });
            }
            tally.add(run.kinds(), out);
            if !out.violations.is_empty() || out.divergence.is_some() {
                failed.push(seed);
                bar.suspend(|| {
                    println!("FAILED seed {seed}: {}", run.spec());
                    println!("  torn landings: {tearing}");
                    for v in out.violations.iter().take(10) {
                        println!("  violation: {v}");
                    }
                    if let Some(d) = &out.divergence {
                        println!("  nondeterminism: {d}");
                    }
                    // A local failure cannot be replayed: print everything it left.
                    if *verbose || local.is_some() {
                        for s in &out.states {
                            println!("  state: {s}");
                        }
                    }
                    println!("{}", again(run));
                });
                if let (Some(dir), Some(log)) = (&plan.log, &out.log) {
                    let d = dir.join(format!("seed-{seed}"));
                    match log.write_csv(&d) {
                        Ok(()) => bar.suspend(|| println!("  log: {}", d.display())),
                        Err(e) => error = error.take().or(Some(e.to_string())),
                    }
                }
            }
            bar.inc(1);
        },
    )?;
    bar.finish_and_clear();
    let report = sweep::Report {
        protocol: R::PROTOCOL.to_string(),
        profile: model.profile.name.clone(),
        software: model.software.name.clone(),
        torn: model.torn,
        commit: COMMIT.to_string(),
        first: plan.first,
        seeds: plan.count,
        shard: plan.shard,
        runs: seeds.len() as u64,
        wall_s: start.elapsed().as_secs_f64(),
        failed,
        tally,
    };
    // The verdict is printed first: a failed write below must not lose the sweep's result.
    let code = print_report::<R>(&report);
    if let Some(path) = &plan.report {
        let text = toml::to_string(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("--report {}: {e}", path.display()))?;
    }
    match error {
        Some(e) => Err(format!("a delivery log could not be written: {e}")),
        None => Ok(code),
    }
}

/// A sweep's last lines: runs, the tally, the verdict.
pub(crate) fn print_report<R: SeedRun>(r: &sweep::Report) -> ExitCode {
    println!(
        "{} runs in {:.1} s: {} failed; {} events, {} server deliveries",
        r.runs,
        r.wall_s,
        r.failed.len(),
        r.tally.events,
        r.tally.delivered
    );
    println!("{}", R::tally_line(&r.tally));
    if r.failed.is_empty() {
        println!("0 violations");
        ExitCode::SUCCESS
    } else {
        println!("failing seeds: {:?}", r.failed);
        ExitCode::FAILURE
    }
}

/// `check --merge`: the report of a sweep run in shards, from the shards' `--report` files.
fn merge_reports(paths: &[PathBuf]) -> Result<ExitCode, String> {
    let mut reports = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let r: sweep::Report = toml::from_str(&text).map_err(|e| {
            format!(
                "{}: not a report written by `harness check --report`: {e}",
                path.display()
            )
        })?;
        reports.push(r);
    }
    let (all, missing) = sweep::Report::merge(reports)?;
    println!(
        "harness check --merge: {} reports, protocol={} profile={} seeds={} first={} torn={} commit={} (run times summed over shards)",
        paths.len(),
        all.protocol,
        all.profile,
        all.seeds,
        all.first,
        all.torn,
        all.commit
    );
    if !missing.is_empty() {
        println!(
            "warning: shards {missing:?} of {} are missing: this covers {} of the sweep's {} seeds",
            all.shard.1, all.runs, all.seeds
        );
    }
    match checked(&all.protocol) {
        Some(c) => Ok((c.report)(&all)),
        None => {
            let names: Vec<&str> = protocols::checked().map(|c| c.name).collect();
            Err(format!(
                "cannot merge reports of `{}`: only the sweeps of {} write them",
                all.protocol,
                names.join(", ")
            ))
        }
    }
}

/// `harness check`.
pub(crate) fn command(a: CheckArgs) -> Result<ExitCode, String> {
    if !a.merge.is_empty() {
        return merge_reports(&a.merge);
    }
    if let Some(c) = checked(&a.protocol) {
        // A line that is not this protocol's run fails before anything is printed.
        if let Some(line) = &a.replay {
            (c.replay)(line)?;
        }
        return (c.sweep)(&check_preamble(&a, c.name)?);
    }
    if a.report.is_some() {
        return Err("--report is for the protocols' sweeps; chaos prints its report".into());
    }
    if a.replay.is_some() {
        return Err("--replay runs a protocol's run from its line; a chaos run replays from its seed alone (--seed N)".into());
    }
    if a.runtime != RuntimeKind::Sim {
        return Err(format!(
            "--runtime {}: chaos checks the simulator's own model, on sim only (leave --runtime out); the protocols' checks run on sim or local",
            a.runtime.name()
        ));
    }
    if a.software != DEFAULT_SOFTWARE {
        return Err(
            "--software prices the work protocols report; chaos runs none (leave it out)".into(),
        );
    }
    let Plan {
        model: Model { profile, .. },
        seeds,
        verbose,
        ..
    } = check_preamble(&a, CHAOS)?;
    let processes = a.processes.map(|n| n as usize);
    let bar = crate::progress::bar(seeds.len() as u64);
    let s = check_chaos::sweep(
        seeds.into_iter(),
        processes,
        &profile,
        a.check_determinism,
        verbose,
        |_| bar.inc(1),
    );
    bar.finish_and_clear();
    println!(
        "{} runs in {:.1} s: {} failed; {} events; runs with crash {}, revoke {}, pause/slow {}, link delay {}",
        s.runs,
        s.wall_s,
        s.failed.len(),
        s.events,
        s.with_crash,
        s.with_revoke,
        s.with_pause_or_slow,
        s.with_link_delay
    );
    println!(
        "completions: success {}, access denied {}, peer unreachable {}, flushed {}",
        s.statuses[0], s.statuses[1], s.statuses[2], s.statuses[3]
    );
    if s.failed.is_empty() {
        println!("0 violations");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("failing seeds: {:?}", s.failed);
        Ok(ExitCode::FAILURE)
    }
}
