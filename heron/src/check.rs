//! `harness check --protocol heron`: seeded runs on the simulator, half of them over RamCast
//! and half over Ridge, half with the key-value store and half with TPC-C (each drawn from the
//! seed). The deployment and
//! faults come from [`crate::testing::chaos`], the sweep the crate's own tests run (2 or 3
//! partitions of 3 replicas, 4 clients; per partition a replica crashed, RamCast's initial
//! leader among them, and another paused long enough to lag, each with probability 1/2; a
//! client crashed in 30% of the runs; clients issue requests until 3 ms after the last fault,
//! over Ridge 4 ms more: a Ridge client whose request died with a coordinator asks again only
//! after its retry timeout).
//! On top of that schedule, from a stream of its own (`reach`, issue 44): partitions of five
//! replicas in a quarter of the runs, crashes in the middle of posting, faults late in the run,
//! pauses past the multicast's suspicion timeout, delayed links, and queue pairs broken while a
//! laggard's state transfer is being served.
//! Every run is judged by the sequential oracle (every response a replica computed or a client
//! received, every surviving replica's state, real-time order against the multicast order), by
//! whether every surviving replica finished its work, and by whether every surviving client
//! had a request it issued after the last fault answered. Key-value runs also go through an
//! external linearizability checker; TPC-C runs through the specification's consistency
//! conditions on the database the replicas end with.

use crate::layered::Layered;
use crate::over::{ridge_config, Multicast, MulticastClient, Over};
use crate::testing::{self, chaos, Chaos, Finished};
use crate::tpcc::{self, Scale};
use crate::{Application, HeronNode, KeyValue, Tpcc, Window};
use multicast::Observed;
use multicast::{Client, GroupId, Membership, Server};
use ramcast::{RamcastClient, RamcastServer};
use ridge::{RidgeClient, RidgeServer};
use std::sync::Arc;
use sweep::spec::{Spec, SpecWriter};
use sweep::{
    crashes, kinds, local_faults, run_local, stretch, Kinds, LocalCheck, Model, Outcome, SeedRun,
    Tally, LOCAL_CONVERGE,
};
use transport::runtime::local::LocalNic;
use transport::runtime::sim::{Digest, Fault, SimNic};
use transport::runtime::Ended;
use transport::{Nanos, Process, ProcessId, Purpose, RegionId, Rng};

/// The `Purpose::Workload` stream of five replicas, late faults, link delays, crashes in the
/// middle of posting, pauses past the suspicion timeout, queue pairs broken during a state
/// transfer (issue 44) ([`sweep::params_stream`]).
const REACH: u64 = u64::MAX - 8;

/// How long the run goes on after the clients stop: a few RDMA retry timeouts (10 ms on
/// `xl170-cx4`; a read of a crashed replica fails only then).
const CONVERGE: Nanos = Nanos(40_000_000);
/// The share of key-value requests that span two partitions.
const MULTI: f64 = 0.6;
/// TPC-C's size per warehouse: a hundredth of the specification's, 100 orders per district.
fn tpcc_scale() -> Scale {
    Scale::scaled(100, 100)
}

/// Heron's own kinds of run ([`Kinds::own`]): over Ridge (else RamCast); TPC-C (else the
/// key-value store); partitions of five replicas; a fault after the first 900 us (the crate's
/// own sweep starts none later); a laggard's staging area refusing its responder for a
/// moment once the laggard resumes, breaking the queue pair a state transfer is served on.
const OVER_RIDGE: &str = "over_ridge";
const TPCC: &str = "tpcc";
const FIVE_REPLICAS: &str = "five_replicas";
const LATE_FAULT: &str = "late_fault";
const SERVE_BROKEN: &str = "serve_broken";

/// Every fault of the crate's own sweep ([`chaos`]) starts before this.
const CHAOS_FAULTS_END: Nanos = Nanos(900_000);

/// Heron's regions at a server follow the multicast server's; the staging area (where state
/// transfers land) is the fifth of them (`heron::server::Regions`).
const STAGE_AFTER_MULTICAST: u16 = 4;

/// Adds to a [`chaos`] schedule what it never draws (issue 44), from a stream of its own:
/// - in a quarter of the runs, partitions of five replicas: the schedule's processes carried
///   over by partition and rank, and in half the partitions one more replica crashed;
/// - half of the replica crashes in the middle of posting (a partial multicast or write);
/// - in half the runs a replica not crashed paused 0.9-2.5 ms in, past the multicast's
///   suspicion timeout in half of them (a false suspicion of a leader, or a late laggard);
/// - in a third of the runs a link between two replicas of a partition delayed by 5-100 us for
///   up to a millisecond;
/// - over RamCast, where a replica is paused, in half the runs its staging area refuses each
///   other replica of its partition for 20-200 us just after it resumes: a responder's
///   state-transfer writes then fail and break its queue pair, the rest of the serve is
///   flushed. Not over Ridge: Heron shares its queue pairs with the multicast layer, and
///   RamCast reconnects a broken one, but Ridge, like its paper, assumes channels that never
///   break: its mesh leaves a flushed ring write lost and nothing reconnects, so the serve's
///   rewrites are flushed forever and Ridge's own messages to the laggard stop (seed 828:
///   190,000 rewrites, the laggard never finished). Repairing the mesh after a reconnect
///   (re-writing the slots not yet credited) would lift this.
///
/// The clients' stop and the liveness phase move past the new last fault.
fn reach(seed: u64, chaos: &mut Chaos, over: Over) {
    let mut rng = Rng::derive(seed, Purpose::Workload, REACH);
    let suspect = match over {
        Over::Ramcast => ramcast::Timing::SIM.suspect,
        Over::Ridge => ridge::config::Timing::SIM.suspect,
    };
    let old = chaos.cfg.clone();
    if rng.chance(0.25) {
        let mut cfg = old.clone();
        cfg.replicas = 5;
        let carry = |p: ProcessId| match old.group_of(p) {
            Some(g) => cfg.server(g, old.rank_of(p)),
            None => cfg.client(old.client_index(p).expect("a client")),
        };
        for f in &mut chaos.faults {
            *f = match *f {
                Fault::Crash { at, process } => Fault::Crash {
                    at,
                    process: carry(process),
                },
                Fault::Pause {
                    at,
                    process,
                    duration,
                } => Fault::Pause {
                    at,
                    process: carry(process),
                    duration,
                },
                ref other => other.clone(),
            };
        }
        for g in 0..cfg.partitions {
            if rng.chance(0.5) {
                // Ranks 3 and 4 are new: the crate's schedule touched ranks 0-2 only.
                let process = cfg.server(GroupId(g as u8), 3 + rng.below(2) as usize);
                let at = Nanos(100_000 + rng.below(2_400_000));
                chaos.faults.push(Fault::Crash { at, process });
            }
        }
        chaos.cfg = cfg;
    }
    let cfg = &chaos.cfg;
    for f in &mut chaos.faults {
        if let Fault::Crash { at, process } = *f {
            if cfg.group_of(process).is_some() && rng.chance(0.5) {
                *f = Fault::CrashMidPost { at, process };
            }
        }
    }
    let crashed = |faults: &[Fault], p: ProcessId| faults.iter().any(|f| crashes(f, p));
    let (partitions, replicas) = (cfg.partitions as u64, cfg.replicas as u64);
    if rng.chance(0.5) {
        let g = GroupId(rng.below(partitions) as u8);
        let process = cfg.server(g, rng.below(replicas) as usize);
        let duration = if rng.chance(0.5) {
            Nanos(suspect.as_nanos() + rng.below(suspect.as_nanos()))
        } else {
            Nanos(50_000 + rng.below(400_000))
        };
        if !crashed(&chaos.faults, process) {
            chaos.faults.push(Fault::Pause {
                at: Nanos(CHAOS_FAULTS_END.as_nanos() + rng.below(1_600_000)),
                process,
                duration,
            });
        }
    }
    if rng.chance(1.0 / 3.0) {
        let g = GroupId(rng.below(partitions) as u8);
        let from = rng.below(replicas) as usize;
        let to = (from + 1 + rng.below(replicas - 1) as usize) % replicas as usize;
        chaos.faults.push(Fault::LinkDelay {
            at: Nanos(100_000 + rng.below(2_400_000)),
            from: cfg.server(g, from),
            to: cfg.server(g, to),
            duration: Nanos(100_000 + rng.below(900_000)),
            delay: Nanos(5_000 + rng.below(95_000)),
            jitter: Nanos(rng.below(5_000)),
        });
    }
    if rng.chance(0.5) && over == Over::Ramcast {
        let paused: Vec<(ProcessId, Nanos)> = chaos
            .faults
            .iter()
            .filter_map(|f| match *f {
                Fault::Pause { process, .. } => Some((process, f.end())),
                _ => None,
            })
            .collect();
        if !paused.is_empty() {
            let (laggard, resumed) = paused[rng.below(paused.len() as u64) as usize];
            let region = RegionId(stage_region_base(cfg, over) + STAGE_AFTER_MULTICAST);
            let at = resumed + Nanos(rng.below(100_000));
            let duration = Nanos(20_000 + rng.below(180_000));
            let g = cfg.group_of(laggard).expect("a replica");
            for r in 0..cfg.replicas {
                let peer = cfg.server(g, r);
                if peer != laggard {
                    chaos.faults.push(Fault::Revoke {
                        at,
                        owner: laggard,
                        region,
                        peer,
                        duration,
                    });
                }
            }
        }
    }
    chaos.faults.sort_by_key(Fault::at);
    chaos.quiet = chaos
        .faults
        .iter()
        .map(Fault::end)
        .max()
        .unwrap_or(Nanos::ZERO);
    chaos.stop = (chaos.quiet + testing::LIVE).max(chaos.stop);
}

/// How many regions the multicast server under Heron declares (Heron's follow them).
fn stage_region_base(cfg: &crate::Config, over: Over) -> u16 {
    let g = GroupId(0);
    match over {
        Over::Ramcast => {
            let rc = Arc::new(ramcast::Config::new(
                cfg.partitions,
                cfg.replicas,
                cfg.clients,
            ));
            Process::<SimNic>::regions(&RamcastServer::new(rc, g, 0)).len() as u16
        }
        Over::Ridge => {
            let rc = Arc::new(ridge_config(cfg));
            Process::<SimNic>::regions(&RidgeServer::new(rc, g, 0, 0)).len() as u16
        }
    }
}

/// One checking run.
#[derive(Clone, Debug)]
pub struct HeronRun {
    seed: u64,
    /// The deployment.
    cfg: crate::Config,
    /// The schedule: [`chaos`]'s, and what [`reach`] adds.
    faults: Vec<Fault>,
    /// When the last fault stopped acting.
    quiet: Nanos,
    /// When the clients stop issuing requests.
    stop: Nanos,
    /// TPC-C, or the key-value store.
    tpcc: bool,
    /// The atomic multicast underneath.
    over: Over,
}

/// Where a checking run goes.
#[derive(Clone, Copy, Debug)]
enum On<'a> {
    /// The simulator, under this model.
    Sim(&'a Model),
    /// Real threads: the schedule, the timeouts and the phases stretched to wall time.
    Local(&'a LocalCheck),
}

impl On<'_> {
    /// Wall nanoseconds per simulated one (1 on the simulator).
    fn stretch(self) -> u64 {
        match self {
            On::Sim(_) => 1,
            On::Local(l) => l.stretch,
        }
    }
}

/// What a run of each application must pass besides the oracle: the key-value store an
/// external linearizability checker, TPC-C the specification's consistency conditions.
trait AppCheck: Application + Clone + Send + Sync + 'static {
    fn violations<R, S, C>(r: &Finished<R, Self>) -> Vec<String>
    where
        R: Ended<Process = HeronNode<S, C, Self>>,
        S: Server + for<'a> Process<Layered<'a, R::Nic>>,
        C: Client<R::Nic>;
}

impl AppCheck for KeyValue {
    fn violations<R, S, C>(r: &Finished<R, Self>) -> Vec<String>
    where
        R: Ended<Process = HeronNode<S, C, Self>>,
        S: Server + for<'a> Process<Layered<'a, R::Nic>>,
        C: Client<R::Nic>,
    {
        if r.externally_linearizable() {
            Vec::new()
        } else {
            vec!["the external checker finds no linearization of the clients' histories".into()]
        }
    }
}

impl AppCheck for Tpcc {
    fn violations<R, S, C>(r: &Finished<R, Self>) -> Vec<String>
    where
        R: Ended<Process = HeronNode<S, C, Self>>,
        S: Server + for<'a> Process<Layered<'a, R::Nic>>,
        C: Client<R::Nic>,
    {
        tpcc::consistency::check(&r.app, &r.database())
            .into_iter()
            .map(|v| format!("TPC-C consistency condition {v}"))
            .collect()
    }
}

impl HeronRun {
    /// Runs the seed's application over its multicast `on` the simulator or real threads and
    /// judges the run; returns the outcome and, on the simulator, the run's digest.
    fn run_and_judge(&self, on: On<'_>) -> (Outcome, Option<Digest>) {
        let cfg = &self.cfg;
        let k = on.stretch();
        match self.over {
            Over::Ramcast => {
                let mut rc = ramcast::Config::new(cfg.partitions, cfg.replicas, cfg.clients);
                // Enough slots that no client waits for a crashed replica's eviction (see
                // `ramcast_slots`): the late faults of `reach` make runs long enough for a
                // TPC-C terminal to lap a ring of 128.
                rc.slots = testing::ramcast_slots(self.stop);
                let t = &mut rc.timing;
                stretch(
                    k,
                    [&mut t.heartbeat, &mut t.suspect, &mut t.relay, &mut t.evict],
                );
                let rc = Arc::new(rc);
                self.judged(
                    on,
                    |g, r| RamcastServer::new(rc.clone(), g, r),
                    |i| RamcastClient::new(rc.clone(), i),
                )
            }
            Over::Ridge => {
                let mut rc = ridge_config(cfg);
                let t = &mut rc.timing;
                stretch(k, [&mut t.heartbeat, &mut t.suspect, &mut t.retry]);
                let rc = Arc::new(rc);
                self.judged(
                    on,
                    |g, r| RidgeServer::new(rc.clone(), g, r, self.seed),
                    |i| RidgeClient::new(rc.clone(), i, self.seed),
                )
            }
        }
    }

    /// Runs the seed's application over the multicast processes `server` and `client` build
    /// and judges the run.
    fn judged<S: Multicast, C: MulticastClient>(
        &self,
        on: On<'_>,
        server: impl Fn(GroupId, usize) -> S,
        client: impl Fn(usize) -> C,
    ) -> (Outcome, Option<Digest>) {
        let partitions = self.cfg.partitions;
        if self.tpcc {
            let app = Tpcc::new(partitions, tpcc_scale(), self.seed);
            self.execute(on, app, server, client)
        } else {
            let app = KeyValue::new(partitions, 48, MULTI);
            self.execute(on, app, server, client)
        }
    }

    /// Runs `app` over `server` and `client` `on` the simulator or real threads, and judges.
    fn execute<S: Multicast, C: MulticastClient, A: AppCheck>(
        &self,
        on: On<'_>,
        app: A,
        server: impl Fn(GroupId, usize) -> S,
        client: impl Fn(usize) -> C,
    ) -> (Outcome, Option<Digest>) {
        let k = on.stretch();
        let x = |t: Nanos| Nanos(t.as_nanos().saturating_mul(k));
        let mut cfg = self.cfg.clone();
        if self.tpcc {
            cfg.max_response = tpcc::MAX_RESPONSE;
        }
        let (quiet, stop) = (x(self.quiet), x(self.stop));
        match on {
            On::Sim(model) => {
                let mut sc = model.config(self.seed);
                sc.faults = self.faults.clone();
                let r = testing::run_sim(cfg, Arc::new(app), sc, stop, CONVERGE, server, client);
                let mut out = Outcome::simulated(&r.run.stats());
                self.judge(&r, quiet, stop, &mut out);
                out.violations.extend(A::violations(&r));
                (out, Some(r.run.digest()))
            }
            On::Local(local) => {
                let c = &mut cfg;
                stretch(
                    k,
                    [
                        &mut c.extra_wait,
                        &mut c.transfer_timeout,
                        &mut c.read_timeout,
                    ],
                );
                let app = Arc::new(app);
                let window = Window {
                    warmup_end: Nanos::ZERO,
                    stop_at: stop,
                };
                let nodes = crate::deploy::<LocalNic, _, _, _>(
                    cfg.clone(),
                    app.clone(),
                    self.seed,
                    window,
                    true,
                    server,
                    client,
                );
                let faults = local_faults(&self.faults, k);
                let limit = stop + x(CONVERGE).min(LOCAL_CONVERGE);
                let run = run_local(local.config(self.seed), nodes, &faults, limit);
                let r = Finished { run, cfg, app };
                let mut out = Outcome::default();
                self.judge(&r, quiet, stop, &mut out);
                out.violations.extend(A::violations(&r));
                (out, None)
            }
        }
    }

    /// The verdicts every run gets, whatever the application and the runtime: clients issued
    /// requests until `stop`, the last fault ended at `quiet`.
    fn judge<R, S, C, A>(&self, r: &Finished<R, A>, quiet: Nanos, stop: Nanos, out: &mut Outcome)
    where
        R: Ended<Process = HeronNode<S, C, A>>,
        S: Server + Observed + for<'a> Process<Layered<'a, R::Nic>>,
        C: Client<R::Nic>,
        A: Application,
    {
        let counters = r.counters();
        out.delivered = counters.executed;
        out.extra = counters.transfers_received;
        if let Err(v) = r.verdict() {
            out.violations.extend(v.iter().map(|v| v.to_string()));
        }
        for p in r.stuck() {
            out.violations.push(format!(
                "{p} never finished its work (a request still running)"
            ));
        }
        // Liveness: requests issued once every fault stopped acting, and answered.
        out.post_fault = r
            .histories()
            .iter()
            .flat_map(|(_, calls)| calls)
            .filter(|c| c.invoked >= quiet && c.returned.is_some())
            .count() as u64;
        for p in r.idle_clients(quiet) {
            out.violations.push(format!(
                "liveness after faults: correct client {p} left a request unanswered or had none answered that it issued after the last fault ended at {quiet} (it issued requests until {stop})"
            ));
        }
        for (i, n) in r.run.processes().iter().enumerate() {
            if let HeronNode::Server(s) = n {
                let p = ProcessId(i as u32);
                out.leader_changes |= s.multicast().changed_leader();
                out.states.push(format!(
                    "{p}{} applied {} {:?}",
                    if r.run.crashed(p) { " (crashed)" } else { "" },
                    s.applied(),
                    s.counters()
                ));
            }
        }
    }
}

impl SeedRun for HeronRun {
    const PROTOCOL: &'static str = "heron";
    const ABOUT: &'static str =
        "Heron over RamCast and over Ridge, key-value store and TPC-C: replica crashes (leaders too), laggards, client crashes; the sequential oracle, an external linearizability checker, TPC-C's consistency conditions, progress after the faults";
    const TESTBED: &'static str = crate::TESTBED;
    const EXTRA: Option<&'static str> = Some("state transfers installed");

    fn derive(seed: u64) -> HeronRun {
        let over = if Rng::derive(seed, Purpose::Workload, 2).chance(0.5) {
            Over::Ridge
        } else {
            Over::Ramcast
        };
        let mut chaos = chaos(seed);
        reach(seed, &mut chaos, over);
        if over == Over::Ridge {
            chaos.stop = chaos
                .stop
                .max(chaos.quiet + ridge::config::Timing::SIM.retry + testing::LIVE);
        }
        HeronRun {
            seed,
            cfg: chaos.cfg,
            faults: chaos.faults,
            quiet: chaos.quiet,
            stop: chaos.stop,
            tpcc: Rng::derive(seed, Purpose::Workload, 1).chance(0.5),
            over,
        }
    }

    /// The application's sizes are constants of the sweep (`tpcc_scale`, and 48 keys with
    /// a share `MULTI` of two-partition requests): a line names which application only.
    fn spec(&self) -> String {
        let c = &self.cfg;
        SpecWriter::new(self.seed)
            .put("over", self.over.name())
            .put("app", if self.tpcc { "tpcc" } else { "key-value" })
            .put("partitions", c.partitions)
            .put("replicas", c.replicas)
            .put("clients", c.clients)
            .time("extra_wait", c.extra_wait)
            .time("stop", self.stop)
            .faults(&self.faults)
    }

    /// The run [`SeedRun::spec`] wrote; the end of the last fault follows from the faults.
    fn from_spec(line: &str) -> Result<HeronRun, String> {
        let mut s = Spec::parse(line)?;
        let mut cfg =
            crate::Config::new(s.get("partitions")?, s.get("replicas")?, s.get("clients")?);
        cfg.extra_wait = s.get("extra_wait")?;
        let faults = s.faults()?;
        let run = HeronRun {
            seed: s.get("seed")?,
            over: match s.get::<String>("over")?.as_str() {
                "ramcast" => Over::Ramcast,
                "ridge" => Over::Ridge,
                other => return Err(format!("`over={other}`: ramcast or ridge")),
            },
            tpcc: match s.get::<String>("app")?.as_str() {
                "tpcc" => true,
                "key-value" => false,
                other => return Err(format!("`app={other}`: tpcc or key-value")),
            },
            cfg,
            quiet: faults.iter().map(Fault::end).max().unwrap_or(Nanos::ZERO),
            stop: s.get("stop")?,
            faults,
        };
        s.end("heron")?;
        Ok(run)
    }

    fn kinds(&self) -> Kinds {
        let suspect = match self.over {
            Over::Ramcast => ramcast::Timing::SIM.suspect,
            Over::Ridge => ridge::config::Timing::SIM.suspect,
        };
        let mut k = kinds(&self.faults, &self.cfg, suspect);
        k.mark(TPCC, self.tpcc);
        k.mark(OVER_RIDGE, self.over == Over::Ridge);
        k.mark(FIVE_REPLICAS, self.cfg.replicas == 5);
        k.mark(
            SERVE_BROKEN,
            self.faults
                .iter()
                .any(|f| matches!(f, Fault::Revoke { .. })),
        );
        k.mark(
            LATE_FAULT,
            self.faults.iter().any(|f| f.at() > CHAOS_FAULTS_END),
        );
        k
    }

    fn check(&self, model: &Model, determinism: bool) -> Outcome {
        let (mut out, digest) = self.run_and_judge(On::Sim(model));
        if determinism && self.run_and_judge(On::Sim(model)).1 != digest {
            out.divergence = Some("a second run of the seed ended with another digest".into());
        }
        out
    }

    /// The same deployment on real threads: the schedule, Heron's and the multicast's
    /// timeouts and the phases stretched to wall time, the crashes and pauses applied by a
    /// thread of their own (revokes and delayed links are the simulator's alone), judged by the
    /// same oracle, checkers and liveness rule.
    fn check_local(&self, local: &LocalCheck) -> Outcome {
        self.run_and_judge(On::Local(local)).0
    }

    /// Heron's "runs with" line: the faults in the vocabulary of Heron over RamCast.
    fn tally_line(t: &Tally) -> String {
        let (median, least) = t.post_fault();
        format!(
            "runs with: over Ridge {} (the others over RamCast), TPC-C {} (the others the key-value store), five replicas per partition {}, multicast leader crash (RamCast leader, Ridge coordinator) {}, other replica crash {}, crash in the middle of posting {}, client crash {}, false suspicion (leader paused past the timeout) {}, pause (laggard) {}, link delay {}, a fault after the first 900 us {}, queue pair broken while a laggard is served (transfer interrupted) {}; leader change happened {}, state transfers installed {}; requests completed that were issued after the last fault: median {median} per run (least {least}){}",
            t.own(OVER_RIDGE),
            t.own(TPCC),
            t.own(FIVE_REPLICAS),
            t.leader_crash,
            t.follower_crash,
            t.mid_post,
            t.client_crash,
            t.false_suspicion,
            t.slow,
            t.link_delay,
            t.own(LATE_FAULT),
            t.own(SERVE_BROKEN),
            t.leader_change,
            t.extra,
            t.describe_torn(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's line ([`SeedRun::spec`]) reads back to the same run, for every kind of run the
    /// seeds derive.
    #[test]
    fn runs_read_back_from_their_lines() {
        sweep::assert_specs_read_back::<HeronRun>(300);
    }

    /// The sweep reaches what the crate's own schedule never draws (issue 44), each in a fair
    /// share of the seeds, and a five-replica run keeps its crashes within f per partition.
    #[test]
    fn seeds_reach_five_replicas_late_faults_and_broken_serves() {
        let mut seen = [0u32; 6];
        for seed in 0..400 {
            let run = HeronRun::derive(seed);
            let k = run.kinds();
            for (i, b) in [
                k.has(FIVE_REPLICAS),
                k.has(LATE_FAULT),
                k.has(SERVE_BROKEN),
                k.mid_post,
                k.link_delay,
                k.false_suspicion,
            ]
            .into_iter()
            .enumerate()
            {
                seen[i] += b as u32;
            }
            let cfg = &run.cfg;
            for g in 0..cfg.partitions {
                let crashed = cfg
                    .members(GroupId(g as u8))
                    .filter(|&p| run.faults.iter().any(|f| crashes(f, p)))
                    .count();
                assert!(
                    crashed <= (cfg.replicas - 1) / 2,
                    "seed {seed}: {crashed} crashed in {g}"
                );
            }
        }
        assert!(seen.iter().all(|&n| n > 20), "{seen:?}");
    }
    /// The same deployment, faults and judges on real threads: a key-value seed over RamCast
    /// with a replica crash passes, its clients served after the faults. Stretched 1,000x so
    /// that a loaded machine does not look like a dead replica.
    #[test]
    fn a_seed_passes_on_real_threads() {
        let run = (0..100)
            .map(HeronRun::derive)
            .find(|r| {
                !r.tpcc
                    && r.over == Over::Ramcast
                    && r.faults
                        .iter()
                        .any(|f| matches!(f, Fault::Crash { .. } | Fault::CrashMidPost { .. }))
            })
            .expect("a key-value seed over RamCast with a crash");
        let local = LocalCheck {
            stretch: 1_000,
            nic_thread: true,
            yield_words: true,
        };
        let out = run.check_local(&local);
        assert!(
            out.violations.is_empty(),
            "seed {}: {:?}\n{}",
            run.seed,
            out.violations,
            out.states.join("\n")
        );
        assert!(out.delivered > 0 && out.post_fault > 0, "{:?}", out.states);
    }

    use sweep::ci_sweep;

    /// The harness's path through Heron's sweep (`HERON_CHECK_SEEDS`, default 5; the crate's
    /// own tests run 30 key-value seeds and 4 TPC-C ones).
    #[test]
    fn seeds_pass_through_the_harness() {
        let model = Model::hardware(crate::TESTBED);
        ci_sweep::<HeronRun>("HERON_CHECK_SEEDS", 5, &model, |_, _| {});
    }
}
