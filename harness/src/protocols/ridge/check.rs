//! `harness check --protocol ridge`: seeded runs of Ridge on the simulator under the shared
//! fault schedule ([`crate::sweep::draw_schedule`]). Every parameter comes from the seed:
//! groups (1-4), replicas (3 or 5), clients, destinations, sizes, Delta, clock skew (offsets
//! up to 2 ms, drift up to 200 ppm in half the runs), ring and outbox sizes (small, so that
//! packets to paused peers are dropped and recovered), how many decisions learners keep, and
//! the tie-break policy. `e_all`'s acceptors are group 0's servers (see
//! [`ridge::config::AllAcceptors`]: the schedule keeps f faults per group, which spread
//! acceptors do not tolerate).
//!
//! In Ridge's vocabulary the schedule's crashes are: a group's rank 0, its ensemble's initial
//! coordinator (group 0's rank 0 coordinates `e_all` too); every server, an acceptor of its
//! group's ensemble; ranks beyond f, the learners outside the quorum, its distributors. The
//! phases and the verdict are the other protocols': faults, a liveness phase, convergence;
//! halts judged, the five properties checked.

use crate::sweep::{
    check_multicast, draw_schedule, kinds, seeded_sim, Kinds, Model, Outcome, Phases, SeedRun,
    Tally,
};
use multicast::{DestPolicy, LoadSpec, Membership};
use ridge::clock::Skew;
use ridge::config::AllAcceptors;
use ridge::{Config, RidgeNode};
use transport::rng::{Purpose, Rng};
use transport::runtime::sim::{Fault, Sim, TieBreak};
use transport::Nanos;

/// Everything one checking run is made of.
#[derive(Clone, Debug)]
pub(crate) struct RidgeRun {
    pub(crate) seed: u64,
    pub(crate) cfg: Config,
    pub(crate) dest: DestPolicy,
    pub(crate) size: usize,
    pub(crate) fault_phase: Nanos,
    pub(crate) tie_break: TieBreak,
    pub(crate) faults: Vec<Fault>,
    pub(crate) phases: Phases,
}

impl RidgeRun {
    /// Derives a run from `seed`.
    pub(crate) fn derive(seed: u64) -> RidgeRun {
        let mut rng = Rng::derive(seed, Purpose::Workload, crate::sweep::params_stream::RIDGE);
        let groups = 1 + rng.below(4) as usize;
        let replicas = if rng.chance(0.7) { 3 } else { 5 };
        let clients = 1 + rng.below(6) as usize;
        let mut cfg = Config::new(groups, replicas, clients);
        cfg.all_acceptors = AllAcceptors::FirstGroup;
        cfg.delta = Nanos(100_000 + rng.below(900_000));
        if rng.chance(0.5) {
            cfg.skew = Skew {
                max_offset: Nanos(rng.below(2_000_000)),
                max_drift_ppm: rng.unit_f64() * 200.0,
            };
        }
        cfg.ring_slots = 2 + rng.below(15) as u32;
        cfg.outbox = 1 + rng.below(64) as usize;
        cfg.slot_bytes = 2048;
        cfg.retain = 1024 + rng.below(3072) as usize;
        let k = 1 + rng.below(groups as u64) as usize;
        let dest = match rng.below(3) {
            0 => DestPolicy::Single,
            1 => DestPolicy::All,
            _ => DestPolicy::Random(k),
        };
        let size = 8 + rng.below(150) as usize;
        let fault_phase = Nanos(5_000_000 + rng.below(10_000_000));
        let tie_break = if rng.chance(0.5) {
            TieBreak::Random
        } else {
            TieBreak::Fifo
        };
        let suspect = cfg.timing.suspect;
        // A correct learner may wait out a suspicion, a new round and a client's retry.
        let stall = Nanos(suspect.as_nanos() * 3 + cfg.timing.retry.as_nanos());
        let schedule = draw_schedule(seed, &cfg, suspect, stall, fault_phase, 1);
        RidgeRun {
            seed,
            cfg,
            dest,
            size,
            fault_phase,
            tie_break,
            faults: schedule.faults,
            phases: schedule.phases,
        }
    }

    fn build(&self, model: &Model) -> Sim<RidgeNode> {
        let load = LoadSpec {
            dest: self.dest,
            groups: self.cfg.group_count(),
            tree: None,
            size: self.size,
            warmup_end: Nanos::ZERO,
            stop_at: self.phases.load_end,
        };
        let nodes = ridge::nodes(&self.cfg, load, self.seed, true);
        seeded_sim(self.seed, model, self.tie_break, &self.faults, nodes)
    }

    /// Whether the schedule crashes a learner outside its group ensemble's initial quorum (a
    /// distributor).
    fn distributor_crash(&self) -> bool {
        let f = self.cfg.f();
        self.faults.iter().any(|x| match *x {
            Fault::Crash { process, .. } | Fault::CrashMidPost { process, .. } => {
                self.cfg.group_of(process).is_some() && self.cfg.rank_of(process) > f
            }
            _ => false,
        })
    }
}

impl SeedRun for RidgeRun {
    const PROTOCOL: &'static str = "ridge";
    const ABOUT: &'static str =
        "Ridge under coordinator, acceptor, distributor and client crashes, pauses and clock skew";
    const TESTBED: &'static str = crate::testbed::RIDGE;
    const EXTRA: Option<&'static str> = Some("learner filled a gap from an acceptor");

    fn derive(seed: u64) -> Self {
        RidgeRun::derive(seed)
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "SEED={} groups={} replicas={} clients={} delta={} skew={}/{:.0}ppm ring_slots={} outbox={} retain={} dest={} size={} fault_phase={} load_end={} end={} tie_break={:?} faults={}",
            self.seed,
            self.cfg.groups,
            self.cfg.replicas,
            self.cfg.clients,
            self.cfg.delta,
            self.cfg.skew.max_offset,
            self.cfg.skew.max_drift_ppm,
            self.cfg.ring_slots,
            self.cfg.outbox,
            self.cfg.retain,
            self.dest,
            self.size,
            self.fault_phase,
            self.phases.load_end,
            self.phases.limit,
            self.tie_break,
            self.faults.len()
        );
        for f in &self.faults {
            s.push_str(&format!("\n  fault: {f}"));
        }
        s
    }

    fn kinds(&self) -> Kinds {
        let mut k = kinds(&self.faults, &self.cfg, self.cfg.timing.suspect);
        k.distributor_crash = self.distributor_crash();
        k.clock_skew = self.cfg.skew != Skew::NONE;
        k
    }

    fn check(&self, model: &Model, determinism: bool) -> Outcome {
        check_multicast(
            || self.build(model),
            self.phases.limit,
            &self.faults,
            &self.phases,
            &self.cfg,
            determinism,
        )
    }

    fn tally_line(t: &Tally) -> String {
        t.describe_ridge()
    }
}
