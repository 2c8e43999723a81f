//! Running seeds: the simulator model, seeded and local runs of a multicast protocol, the
//! seed driver and its report, and the helpers tests pin seeds with.

use super::judge::judge;
use super::schedule::{params_stream, Kinds, Phases};
use super::tally::{Outcome, Tally};
use multicast::Observed;
use multicast::{DestPolicy, LoadSpec, Membership, Node, Server};
use serde::{Deserialize, Serialize};
use transport::rng::{Purpose, Rng};
use transport::runtime::local::{LocalConfig, LocalNic, LocalRun, LocalRuntime};
use transport::runtime::sim::{
    check_determinism, Determinism, Fault, Profile, Sim, SimConfig, SimNic, Software, Tearing,
    TieBreak,
};
use transport::{Nanos, Process, ProcessId};

/// What a sweep's runs are simulated on: the hardware profile, the software profile, and
/// which runs tear their multi-word accesses.
#[derive(Clone, Debug)]
pub struct Model {
    /// The hardware profile.
    pub profile: Profile,
    /// The software profile (the price of each kind of work).
    pub software: Software,
    /// Which runs tear their multi-word accesses.
    pub torn: Torn,
    /// Run the seeds on the local runtime's threads instead (`check --runtime local`).
    pub local: Option<LocalCheck>,
}

/// Which runs of a sweep the simulator carries multi-word writes and reads out in pieces
/// (`harness check --torn`; see `transport::runtime::sim::Tearing`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Torn {
    /// Half the seeds, drawn from each seed, with the piece size, order and window drawn too.
    #[default]
    Drawn,
    /// Every seed (the piece size, order and window still drawn from it).
    Always,
    /// No seed: every op lands at one instant.
    Never,
}

impl std::fmt::Display for Torn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Torn::Drawn => "drawn",
            Torn::Always => "always",
            Torn::Never => "never",
        })
    }
}

impl Model {
    /// The built-in hardware profile `name`, no software cost.
    pub fn hardware(name: &str) -> Model {
        Model {
            profile: Profile::load(name).expect("built-in"),
            software: Software::none(),
            torn: Torn::Never,
            local: None,
        }
    }

    /// The built-in hardware profile `hardware` with the built-in software profile `software`.
    pub fn priced(hardware: &str, software: &str) -> Model {
        Model {
            profile: Profile::load(hardware).expect("built-in"),
            software: Software::load(software).expect("built-in"),
            torn: Torn::Never,
            local: None,
        }
    }

    /// A simulation of `nodes` on this model from `seed`.
    pub fn config(&self, seed: u64) -> SimConfig {
        let mut sc = SimConfig::new(seed, self.profile.clone());
        sc.software = self.software.clone();
        sc.tearing = self.tearing(seed);
        sc
    }

    /// Whether and how `seed`'s run tears its multi-word accesses.
    pub fn tearing(&self, seed: u64) -> Option<Tearing> {
        let mut rng = Rng::derive(seed, Purpose::Scheduler, params_stream::TEARING);
        let drawn = rng.chance(0.5);
        let tearing = Tearing::draw(&mut rng);
        match self.torn {
            Torn::Drawn => drawn.then_some(tearing),
            Torn::Always => Some(tearing),
            Torn::Never => None,
        }
    }
}

/// The clients' load of a checking run: `dest` and `size` from its start until the liveness
/// phase ends, no warm-up (every completion counts).
pub fn checking_load(
    dest: DestPolicy,
    groups: usize,
    tree: Option<std::sync::Arc<multicast::Tree>>,
    size: usize,
    phases: &Phases,
) -> LoadSpec {
    LoadSpec {
        dest,
        groups,
        tree,
        size,
        warmup_end: Nanos::ZERO,
        stop_at: phases.load_end,
    }
}

/// The simulation of one seed of a sweep: the seed's tie-break policy and fault schedule.
pub fn seeded_sim<P: Process<SimNic>>(
    seed: u64,
    model: &Model,
    tie_break: TieBreak,
    faults: &[Fault],
    nodes: Vec<P>,
) -> Sim<P> {
    let mut sc = model.config(seed);
    sc.tie_break = tie_break;
    sc.faults = faults.to_vec();
    Sim::new(sc, nodes)
}

/// Runs one seed of an atomic multicast protocol (`build` makes its simulation) until `limit`
/// and checks it: every server's deliveries and counters, the clients' errors, progress after
/// the faults, halts, the five properties ([`judge`]); with `determinism`, the seed again
/// without the simulator's change hint, event by event.
pub fn check_multicast<S, C>(
    build: impl Fn() -> Sim<Node<S, C>>,
    limit: Nanos,
    faults: &[Fault],
    phases: &Phases,
    m: &impl Membership,
    determinism: bool,
) -> Outcome
where
    S: Server + Observed,
    Node<S, C>: Process<SimNic>,
{
    let mut sim = build();
    sim.run(Some(limit));
    let mut out = Outcome::simulated(&sim.stats());
    judge_run(
        sim.processes(),
        |p| sim.crashed(p),
        |p, s| s.state(sim.nic(p)),
        faults,
        phases,
        m,
        &mut out,
    );
    if determinism {
        out.divergence = divergence(&build, limit);
    }
    out
}

/// Runs the simulation `build` makes twice until `limit`, the second time without the
/// simulator's change hint, and names the first event at which the two differ, if one does:
/// [`Outcome::divergence`] for a run checked with `determinism`.
pub fn divergence<P: Process<SimNic>>(
    build: impl FnMut() -> Sim<P>,
    limit: Nanos,
) -> Option<String> {
    match check_determinism(build, Some(limit)) {
        Determinism::Diverged { first, second } => {
            Some(format!("first divergence: {first:?} / {second:?}"))
        }
        Determinism::Identical(_) => None,
    }
}

/// The verdict on a multicast run's processes, on any runtime: every server's counters and
/// state (`state` describes a server), the clients' errors, then [`judge`].
pub(super) fn judge_run<S: Server + Observed, C>(
    nodes: &[Node<S, C>],
    crashed: impl Fn(ProcessId) -> bool,
    state: impl Fn(ProcessId, &S) -> String,
    faults: &[Fault],
    phases: &Phases,
    m: &impl Membership,
    out: &mut Outcome,
) {
    for (i, n) in nodes.iter().enumerate() {
        let p = ProcessId(i as u32);
        match n {
            Node::Server(s) | Node::Auxiliary(s) => {
                out.states.push(format!(
                    "p{i}{} {} delivered {}",
                    if crashed(p) { " (crashed)" } else { "" },
                    state(p, &s.server),
                    s.delivered
                ));
                out.delivered += s.delivered;
                out.leader_changes |= s.server.changed_leader();
                out.refused_writes += s.server.refused_writes();
                out.extra += s.server.extra();
            }
            Node::Client(c) => {
                if let Some(e) = &c.error {
                    out.violations.push(format!("client {}: {e}", c.id));
                }
            }
        }
    }
    judge(nodes, crashed, faults, phases, m, out);
}

/// The longest convergence phase of a local run: the simulator's [`super::CONVERGE`] stretched would
/// keep every seed running for seconds after its load, though threads catch up in far less
/// (the longest wait a stretched schedule holds, an eviction, stays under a second at 100x).
pub const LOCAL_CONVERGE: Nanos = Nanos(2_000_000_000);

/// How `harness check --runtime local` runs a seed on real threads: the seed's schedule, its
/// timeouts and its phases stretched from simulated to wall time, the faults a concurrent
/// runtime can apply, the NIC thread's interleaving.
#[derive(Clone, Copy, Debug)]
pub struct LocalCheck {
    /// Wall nanoseconds per simulated nanosecond: real threads on shared cores are slower and
    /// noisier than the simulated hardware, and a descheduled thread must not look dead.
    pub stretch: u64,
    /// Remote ops on the NIC thread, completed asynchronously and in a random order across
    /// queue pairs.
    pub nic_thread: bool,
    /// Multi-word ops in pieces, the thread yielded between them (torn accesses likely).
    pub yield_words: bool,
}

impl LocalCheck {
    /// The local runtime's configuration for seed `seed`'s run: this check's NIC thread and
    /// word-by-word yielding, the rest the runtime's defaults.
    pub fn config(&self, seed: u64) -> LocalConfig {
        LocalConfig {
            seed,
            nic_thread: self.nic_thread,
            yield_words: self.yield_words,
            ..LocalConfig::default()
        }
    }
}

impl Phases {
    /// The phases `k` times as long (a local run's wall-time phases), convergence cut to
    /// [`LOCAL_CONVERGE`] at most.
    pub fn stretched(&self, k: u64) -> Phases {
        let x = |t: Nanos| Nanos(t.as_nanos().saturating_mul(k));
        let converge = x(self.limit.saturating_sub(self.load_end)).min(LOCAL_CONVERGE);
        Phases {
            last_fault: x(self.last_fault),
            load_end: x(self.load_end),
            limit: x(self.load_end).saturating_add(converge),
        }
    }
}

/// The faults of a simulated schedule that the local runtime applies, at `k` times their
/// times: crashes (one in the middle of posting becomes a plain crash: a thread cannot be
/// stopped inside a poll) and pauses. Slowdowns, delayed links and revokes are the
/// simulator's alone.
pub fn local_faults(faults: &[Fault], k: u64) -> Vec<Fault> {
    let x = |t: Nanos| Nanos(t.as_nanos().saturating_mul(k));
    faults
        .iter()
        .filter_map(|f| match *f {
            Fault::Crash { at, process } | Fault::CrashMidPost { at, process } => {
                Some(Fault::Crash { at: x(at), process })
            }
            Fault::Pause {
                at,
                process,
                duration,
            } => Some(Fault::Pause {
                at: x(at),
                process,
                duration: x(duration),
            }),
            _ => None,
        })
        .collect()
}

/// Runs `nodes` on the local runtime under `faults` (wall times, from [`local_faults`]) until
/// `phases.limit`, a thread of its own applying the faults, and judges the run as
/// [`check_multicast`] does.
pub fn check_multicast_local<S, C>(
    nodes: Vec<Node<S, C>>,
    faults: &[Fault],
    phases: &Phases,
    m: &impl Membership,
    local: &LocalCheck,
    seed: u64,
) -> Outcome
where
    S: Server + Observed,
    Node<S, C>: Process<LocalNic> + Send,
{
    let run = run_local(local.config(seed), nodes, faults, phases.limit);
    let crashed = |p: ProcessId| {
        faults
            .iter()
            .any(|f| matches!(*f, Fault::Crash { process, .. } if process == p))
    };
    let mut out = Outcome::default();
    judge_run(
        &run.processes,
        crashed,
        |p, s| s.state(&run.nics[p.index()]),
        faults,
        phases,
        m,
        &mut out,
    );
    out
}

/// Runs `processes` on the local runtime for `limit` of wall time while another thread
/// applies `faults` (crashes and pauses) at their times.
#[allow(
    clippy::disallowed_methods,
    reason = "a local run is real threads: its faults are applied at wall-clock times"
)]
pub fn run_local<P: Process<LocalNic> + Send>(
    cfg: LocalConfig,
    processes: Vec<P>,
    faults: &[Fault],
    limit: Nanos,
) -> LocalRun<P> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let runtime = LocalRuntime::new(cfg, processes);
    let control = runtime.control();
    let over = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut schedule = faults.to_vec();
            schedule.sort_by_key(Fault::at);
            for f in schedule {
                let due = start + Duration::from_nanos(f.at().as_nanos());
                while Instant::now() < due {
                    if over.load(Ordering::SeqCst) {
                        return;
                    }
                    let left = due.saturating_duration_since(Instant::now());
                    std::thread::sleep(left.min(Duration::from_millis(5)));
                }
                match f {
                    Fault::Crash { process, .. } => control.crash(process),
                    Fault::Pause {
                        process, duration, ..
                    } => control.pause(process, Duration::from_nanos(duration.as_nanos())),
                    _ => unreachable!("local_faults keeps crashes and pauses only"),
                }
            }
        });
        let run = runtime.run(Duration::from_nanos(limit.as_nanos()));
        over.store(true, Ordering::SeqCst);
        run
    })
}

/// One seeded checking run of a protocol, as `harness check` drives it.
pub trait SeedRun: Sized + Send + Sync + Clone + std::fmt::Debug {
    /// The protocol's name on the command line.
    const PROTOCOL: &'static str;
    /// One line for `check --help`: what the sweep injects and checks.
    const ABOUT: &'static str;
    /// The profile the sweep runs on unless told otherwise (the protocol's testbed).
    const TESTBED: &'static str;
    /// The label of [`Outcome::extra`] in the report, if the protocol counts one.
    const EXTRA: Option<&'static str>;
    /// Derives every parameter of the run from `seed`.
    fn derive(seed: u64) -> Self;
    /// The run as one line ([`super::spec`]): every parameter and fault, printed for replay.
    fn spec(&self) -> String;
    /// The run a line of [`SeedRun::spec`] describes, exactly.
    fn from_spec(line: &str) -> Result<Self, String>;
    /// The kinds of fault the run injects.
    fn kinds(&self) -> Kinds;
    /// Runs it (twice with `determinism`) and checks the protocol's properties.
    fn check(&self, model: &Model, determinism: bool) -> Outcome;
    /// Runs it on the local runtime's threads instead and checks the same properties (not
    /// deterministic: the same workload and schedule, another interleaving each time).
    fn check_local(&self, local: &LocalCheck) -> Outcome;
    /// The sweep's "runs with" line.
    fn tally_line(t: &Tally) -> String {
        t.describe(Self::EXTRA)
    }
}

/// What a sweep, or one shard of it, found: what `check --report` writes and `check --merge`
/// reads back (TOML).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Report {
    /// The protocol's name on the command line.
    pub protocol: String,
    /// The hardware profile's name.
    pub profile: String,
    /// The software profile (reports written before software profiles existed ran on none).
    #[serde(default = "no_software")]
    pub software: String,
    /// The build's commit, so shards of different builds are not merged.
    pub commit: String,
    /// Which seeds tore their accesses (reports written before tearing existed ran none).
    #[serde(default = "untorn")]
    pub torn: Torn,
    /// The sweep's `--first-seed`.
    pub first: u64,
    /// The sweep's `--seeds`.
    pub seeds: u64,
    /// The shard `(K, N)` this report covers: seeds `first + K`, `first + K + N`, ...
    pub shard: (u64, u64),
    /// Runs this report covers.
    pub runs: u64,
    /// Wall time the runs took, in seconds.
    pub wall_s: f64,
    /// The seeds whose runs failed.
    pub failed: Vec<u64>,
    /// What the runs held.
    pub tally: Tally,
}

/// [`Report::torn`] of a report that names none.
pub(super) fn untorn() -> Torn {
    Torn::Never
}

/// [`Report::software`] of a report that names none.
pub(super) fn no_software() -> String {
    transport::runtime::sim::DEFAULT_SOFTWARE.to_string()
}

impl Report {
    /// Sums shard reports of one sweep. Refuses reports of different protocols, profiles,
    /// commits or sweeps, and a shard given twice; says which shards are missing.
    pub fn merge(reports: Vec<Report>) -> Result<(Report, Vec<u64>), String> {
        let mut it = reports.into_iter();
        let mut all = it.next().ok_or("nothing to merge")?;
        let mut seen = vec![all.shard.0];
        for r in it {
            let same = (
                &r.protocol,
                (&r.profile, &r.software, r.torn),
                &r.commit,
                r.first,
                r.seeds,
                r.shard.1,
            ) == (
                &all.protocol,
                (&all.profile, &all.software, all.torn),
                &all.commit,
                all.first,
                all.seeds,
                all.shard.1,
            );
            if !same {
                return Err(format!(
                    "cannot merge shard {}/{} of `{} {} at {} (seeds {}..+{})` with `{} {} at {} (seeds {}..+{}, shards of {})`: merge the shards of one sweep, run by one build",
                    r.shard.0, r.shard.1, r.protocol, r.profile, r.commit, r.first, r.seeds,
                    all.protocol, all.profile, all.commit, all.first, all.seeds, all.shard.1
                ));
            }
            if seen.contains(&r.shard.0) {
                return Err(format!("shard {}/{} is given twice", r.shard.0, r.shard.1));
            }
            seen.push(r.shard.0);
            all.runs += r.runs;
            all.wall_s += r.wall_s;
            all.failed.extend(r.failed);
            all.tally.merge(&r.tally);
        }
        all.failed.sort_unstable();
        let missing = (0..all.shard.1).filter(|k| !seen.contains(k)).collect();
        Ok((all, missing))
    }
}

/// Runs the seeds (each the run `run_of` makes of it: derived, or replayed from a line) on
/// `jobs` threads and hands each run and its outcome to `each` in seed order,
/// so a sweep's report is the same on any number of threads (runs share nothing: each is
/// deterministic from its seed). Seeds go in batches of a few per thread; a passing run's
/// delivery log is dropped at once.
pub fn run_seeds<R: SeedRun>(
    seeds: &[u64],
    run_of: impl Fn(u64) -> R + Sync,
    model: &Model,
    determinism: bool,
    jobs: usize,
    mut each: impl FnMut(u64, &R, &Outcome),
) -> Result<(), String> {
    use rayon::prelude::*;
    let pool = worker_pool(Some(jobs))?;
    for batch in seeds.chunks(jobs * 8) {
        let done: Vec<(R, Outcome)> = pool.install(|| {
            batch
                .par_iter()
                .map(|&seed| {
                    let run = run_of(seed);
                    // A run that panics (an assertion in a protocol, garbage it trusted) fails
                    // its seed, reported with the panic's message; the sweep goes on.
                    let mut out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        match &model.local {
                            None => run.check(model, determinism),
                            Some(local) => run.check_local(local),
                        }
                    }))
                    .unwrap_or_else(|panic| Outcome {
                        violations: vec![format!("the run panicked: {}", panic_message(&panic))],
                        ..Outcome::default()
                    });
                    if out.violations.is_empty() && out.divergence.is_none() {
                        out.log = None;
                    }
                    (run, out)
                })
                .collect()
        });
        for (&seed, (run, out)) in batch.iter().zip(&done) {
            each(seed, run, out);
        }
    }
    Ok(())
}

/// A pool of `jobs` worker threads for sweep seeds and figure points (`None`: every core).
pub fn worker_pool(jobs: Option<usize>) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(|e| format!("cannot start {} worker threads: {e}", jobs.unwrap_or(0)))
}

/// The message a panic carried (`panic!` with a literal or with a format).
pub fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The run a line pins ([`SeedRun::spec`], as a sweep printed it when the run failed): exactly
/// that run, whatever later changes do to how seeds derive runs.
pub fn pinned<R: SeedRun>(line: &str) -> R {
    R::from_spec(line).unwrap_or_else(|e| panic!("{line}\n{e}"))
}

/// Checks `run` on r320-cx3, the profile of the sweeps the pinned seeds came from, and asserts
/// it holds every property (for pinned regression tests); returns its outcome.
pub fn assert_passes<R: SeedRun>(run: &R) -> Outcome {
    assert_passes_on(run, "r320-cx3")
}

/// CI's lean sweep of `R`: seeds `0..N` on `model`, `N` from the environment variable `var`
/// (a longer sweep on demand) or `default`; a run with a violation or no delivery fails the
/// test, and `each` sees every run and its outcome for the caller's own assertions.
pub fn ci_sweep<R: SeedRun>(
    var: &str,
    default: u64,
    model: &Model,
    mut each: impl FnMut(&R, &Outcome),
) {
    let seeds: u64 = std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    // Half the seeds with torn landings, as `harness check` draws them.
    let model = &Model {
        torn: Torn::Drawn,
        ..model.clone()
    };
    for seed in 0..seeds {
        let run = R::derive(seed);
        let out = assert_passes_under(&run, model);
        assert!(out.delivered > 0, "seed {seed} delivered nothing");
        each(&run, &out);
    }
}

/// Every run derived from seeds `0..seeds` reads back from its line ([`SeedRun::spec`]) to the
/// same run, field for field: no parameter is left out of the line or read back otherwise.
pub fn assert_specs_read_back<R: SeedRun>(seeds: u64) {
    for seed in 0..seeds {
        let run = R::derive(seed);
        let line = run.spec();
        let back = R::from_spec(&line).unwrap_or_else(|e| panic!("{line}\n{e}"));
        assert_eq!(format!("{back:?}"), format!("{run:?}"), "{line}");
    }
}

/// [`assert_passes`] on the built-in profile `profile`.
pub fn assert_passes_on<R: SeedRun>(run: &R, profile: &str) -> Outcome {
    assert_passes_under(run, &Model::hardware(profile))
}

/// [`assert_passes`] on `model` (hardware and software profile); a failure prints the run,
/// its violations and every server's final state.
pub fn assert_passes_under<R: SeedRun>(run: &R, model: &Model) -> Outcome {
    let out = run.check(model, false);
    assert!(
        out.violations.is_empty(),
        "{}\n{:?}\n{}",
        run.spec(),
        out.violations,
        out.states.join("\n")
    );
    out
}

/// A software profile with every kind of work priced (round numbers, not a calibration), for
/// tests that a run's outcome does not depend on what the simulator's shortcuts skip.
pub fn priced_software() -> Software {
    Software::parse(
        "test.toml",
        r#"
        name = "test"
        version = 1
        description = "every kind of work priced"
        [calibration]
        source = "none: a test"
        [costs]
        scan_ns = 5
        decode_ns = 200
        copy_ps_per_byte = 100
        order_ns = 300
        deliver_ns = 200
        "#,
    )
    .expect("valid")
}

/// The simulator's change hint only saves wall time: run again without it, `R`'s seeds 0..6
/// (four on free work, two with every kind of work priced, since what a protocol reports must
/// not depend on what the hint skips) go event for event the same (`check_determinism`
/// withholds the hint on its second run) and deliver.
pub fn assert_hint_changes_no_event<R: SeedRun>(profile: &str) {
    let free = Model::hardware(profile);
    let priced = Model {
        software: priced_software(),
        ..free.clone()
    };
    for (seed, model) in (0..4)
        .map(|s| (s, &free))
        .chain((4..6).map(|s| (s, &priced)))
    {
        let out = R::derive(seed).check(model, true);
        assert_eq!(out.divergence, None, "seed {seed}");
        assert!(out.delivered > 0, "seed {seed} delivered nothing");
    }
}

/// A sweep of `seeds` reports the same on one thread and on two: every run's outcome, in seed
/// order, and the tally line (runs of different lengths finish out of order in a batch).
pub fn assert_same_report_on_one_thread_and_two<R: SeedRun>(seeds: &[u64], profile: &str) {
    let model = Model::hardware(profile);
    let report = |jobs: usize| {
        let mut lines = Vec::new();
        let mut tally = Tally::default();
        run_seeds(seeds, R::derive, &model, false, jobs, |s, r, o| {
            tally.add(r.kinds(), o);
            lines.push(format!(
                "{s} {} {} {} {} {:?} {:?}",
                o.events, o.delivered, o.post_fault, o.halted, o.after_each, o.violations
            ));
        })
        .expect("threads start");
        lines.push(tally.describe(None));
        lines
    };
    let one = report(1);
    assert_eq!(one.len(), seeds.len() + 1);
    assert_eq!(one, report(2));
}
