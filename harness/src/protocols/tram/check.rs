//! `harness check --protocol tram`: VOPR-style runs of TRAM on the simulator. Every parameter
//! comes from the seed: the overlay tree (a random rooted tree over 1-6 groups, any root),
//! replicas, clients, destinations (single, all, random:K, adjacent:K), buffer sizes, the
//! tie-break policy and the fault schedule of [`crate::sweep::draw_schedule`], including runs
//! where the leaders of several groups crash at the same instant, and the eviction time. The
//! phases and the verdict are RamCast's ([`crate::protocols::ramcast::check`]): faults, a liveness phase
//! long enough for one eviction per group on the longest tree path, convergence; halts judged,
//! the five properties checked.

use crate::sweep::{
    check_multicast, check_multicast_local, checking_load, draw_schedule, kinds, local_faults,
    seeded_sim, Kinds, LocalCheck, Model, Outcome, Phases, SeedRun,
};
use multicast::{DestPolicy, GroupId, Membership, Tree};
use std::sync::Arc;
use tram::{Config, TramNode};
use transport::rng::{Purpose, Rng};
use transport::runtime::sim::{Fault, Sim, TieBreak};
use transport::Nanos;

/// Everything one checking run is made of.
#[derive(Clone, Debug)]
pub(crate) struct TramRun {
    pub(crate) seed: u64,
    pub(crate) cfg: Config,
    pub(crate) dest: DestPolicy,
    pub(crate) size: usize,
    pub(crate) fault_phase: Nanos,
    pub(crate) tie_break: TieBreak,
    pub(crate) faults: Vec<Fault>,
    /// Fault, liveness and convergence phases.
    pub(crate) phases: Phases,
}

/// A random rooted tree over `n` groups: each group but the first hangs under an earlier one,
/// then the groups are relabelled at random so any group may be the root.
/// How many evictions in a row a message may wait out after the last fault: one per group on
/// the longest root-to-leaf path (each leader on it may still wait for a crashed member when
/// the message reaches it), and one more for a leader replaced meanwhile, whose successor
/// starts its eviction clocks afresh.
fn stages(tree: &Tree) -> u64 {
    let depth = |mut g: GroupId| {
        let mut d = 1;
        while let Some(p) = tree.parent(g) {
            d += 1;
            g = p;
        }
        d
    };
    (0..tree.groups())
        .map(|g| depth(GroupId(g as u8)))
        .max()
        .unwrap_or(1)
        + 1
}

fn random_tree(n: usize, rng: &mut Rng) -> Tree {
    let mut label: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        label.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut parents = vec![-1i64; n];
    for i in 1..n {
        let p = rng.below(i as u64) as usize;
        parents[label[i]] = label[p] as i64;
    }
    Tree::from_parents(&parents).expect("a recursive tree is a tree")
}

impl TramRun {
    /// Derives a run from `seed`.
    pub(crate) fn derive(seed: u64) -> TramRun {
        let mut rng = Rng::derive(seed, Purpose::Workload, crate::sweep::params_stream::TRAM);
        let groups = 1 + rng.below(6) as usize;
        let tree = random_tree(groups, &mut rng);
        let replicas = if rng.chance(0.7) { 3 } else { 5 };
        let clients = 1 + rng.below(6) as usize;
        let mut cfg = Config::new(tree, replicas, clients);
        cfg.hm_slots = 2 + rng.below(7) as usize;
        cfg.log_slots = 4 + rng.below(13) as usize;
        cfg.slot_bytes = 256;
        let k = 1 + rng.below(groups as u64) as usize;
        let dest = match rng.below(4) {
            0 => DestPolicy::Single,
            1 => DestPolicy::All,
            2 => DestPolicy::Random(k),
            _ => DestPolicy::Adjacent(k),
        };
        let size = 8 + rng.below(150) as usize;
        let fault_phase = Nanos(2_000_000 + rng.below(4_000_000));
        let tie_break = if rng.chance(0.5) {
            TieBreak::Random
        } else {
            TieBreak::Fifo
        };
        // A correct member may wait a suspicion timeout, then a failover (Algorithms 3-5).
        let stall = Nanos(cfg.timing.suspect.as_nanos() * 2);
        let stages = stages(&cfg.tree);
        let schedule = draw_schedule(seed, &cfg, cfg.timing.suspect, stall, fault_phase, stages);
        cfg.timing.evict = schedule.evict;
        TramRun {
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

    fn build(&self, model: &Model) -> Sim<TramNode> {
        let tree = Some(Arc::new(self.cfg.tree.clone()));
        let groups = self.cfg.group_count();
        let load = checking_load(self.dest, groups, tree, self.size, &self.phases);
        let nodes = tram::nodes(&self.cfg, load, self.seed, true);
        seeded_sim(self.seed, model, self.tie_break, &self.faults, nodes)
    }
}

impl SeedRun for TramRun {
    fn check_local(&self, local: &LocalCheck) -> Outcome {
        let k = local.stretch;
        let mut cfg = self.cfg.clone();
        let t = &mut cfg.timing;
        for x in [&mut t.heartbeat, &mut t.suspect, &mut t.evict] {
            *x = Nanos(x.as_nanos() * k);
        }
        let phases = self.phases.stretched(k);
        let tree = Some(Arc::new(cfg.tree.clone()));
        let load = checking_load(self.dest, cfg.group_count(), tree, self.size, &phases);
        let nodes = tram::nodes(&cfg, load, self.seed, true);
        let faults = local_faults(&self.faults, k);
        check_multicast_local(nodes, &faults, &phases, &cfg, local, self.seed)
    }

    const PROTOCOL: &'static str = "tram";
    const ABOUT: &'static str =
        "TRAM on random trees under the same faults, leaders of several groups crashing at once";
    const TESTBED: &'static str = crate::testbed::TRAM;
    const EXTRA: Option<&'static str> = None;

    fn derive(seed: u64) -> Self {
        TramRun::derive(seed)
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "SEED={} tree={} replicas={} clients={} hm_slots={} log_slots={} slot_bytes={} dest={} size={} fault_phase={} evict={} load_end={} end={} tie_break={:?} faults={}",
            self.seed,
            self.cfg.tree,
            self.cfg.replicas,
            self.cfg.clients,
            self.cfg.hm_slots,
            self.cfg.log_slots,
            self.cfg.slot_bytes,
            self.dest,
            self.size,
            self.fault_phase,
            self.cfg.timing.evict,
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
        kinds(&self.faults, &self.cfg, self.cfg.timing.suspect)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use transport::ProcessId;

    #[test]
    fn random_trees_are_trees_with_any_root() {
        let mut rng = Rng::from_seed(4);
        let mut roots = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let t = random_tree(5, &mut rng);
            assert_eq!(t.groups(), 5);
            roots.insert(t.root().0);
        }
        assert_eq!(roots.len(), 5);
    }

    fn us(x: f64) -> Nanos {
        Nanos((x * 1000.0).round() as u64)
    }

    fn crash(at: f64, p: u32) -> Fault {
        Fault::Crash {
            at: us(at),
            process: ProcessId(p),
        }
    }

    fn mid(at: f64, p: u32) -> Fault {
        Fault::CrashMidPost {
            at: us(at),
            process: ProcessId(p),
        }
    }

    fn pause(at: f64, p: u32, duration: f64) -> Fault {
        Fault::Pause {
            at: us(at),
            process: ProcessId(p),
            duration: us(duration),
        }
    }

    fn slow(at: f64, p: u32, duration: f64, factor: f64) -> Fault {
        Fault::Slow {
            at: us(at),
            process: ProcessId(p),
            duration: us(duration),
            factor,
        }
    }

    fn link(at: f64, from: u32, to: u32, delay: f64, jitter: f64, duration: f64) -> Fault {
        Fault::LinkDelay {
            at: us(at),
            from: ProcessId(from),
            to: ProcessId(to),
            duration: us(duration),
            delay: us(delay),
            jitter: us(jitter),
        }
    }

    /// A run pinned to a schedule a sweep once printed (slow factors with one decimal), so
    /// later changes to how seeds derive runs do not lose the scenario.
    #[allow(clippy::too_many_arguments)]
    fn pinned(
        seed: u64,
        tree: &str,
        (replicas, clients, hm_slots, log_slots): (usize, usize, usize, usize),
        dest: DestPolicy,
        size: usize,
        fault_phase: f64,
        tie_break: TieBreak,
        faults: Vec<Fault>,
    ) -> TramRun {
        let mut cfg = Config::new(tree.parse().unwrap(), replicas, clients);
        cfg.hm_slots = hm_slots;
        cfg.log_slots = log_slots;
        cfg.slot_bytes = 256;
        let phases = Phases::of(
            us(fault_phase),
            &faults,
            cfg.timing.evict,
            stages(&cfg.tree),
        );
        TramRun {
            seed,
            cfg,
            dest,
            size,
            fault_phase: us(fault_phase),
            tie_break,
            faults,
            phases,
        }
    }

    /// Schedules that once failed, with their postmortems.
    ///
    /// - 129 (validity, agreement): a candidate that had its quorum of grants read the logs of
    ///   those replicas only; one of them crashed, its read failed 10 ms later, and a grant
    ///   that came in meanwhile was never read: the candidate waited forever. Fixed: late
    ///   grants are read too, and a candidacy that neither wins nor loses is retried.
    /// - 11 (validity, agreement): a deposed leader resumed, was refused, and granted the new
    ///   leader while its queue pair to it was being reconnected: the grant was dropped, the
    ///   new leader never streamed to it. Fixed: the grant is written again after a reconnect.
    /// - 252 (validity, agreement): a child's leader reported `slot_in` as its credit, which
    ///   counts a message it had taken but not decided when it was deposed; the parent's new
    ///   leader skipped re-forwarding it and the child never got it. Fixed: the credit is the
    ///   decided positions only.
    #[test]
    fn formerly_failing_schedules_pass() {
        let runs = [
            pinned(
                129,
                "[1,3,4,2,-1]",
                (5, 1, 7, 7),
                DestPolicy::All,
                150,
                2370.776,
                TieBreak::Random,
                vec![
                    crash(243.965, 23),
                    slow(407.221, 6, 801.995, 2.0),
                    crash(852.515, 1),
                    crash(994.962, 24),
                    slow(1299.460, 24, 517.719, 5.2),
                    mid(1434.487, 8),
                    slow(1945.039, 4, 650.814, 5.2),
                    mid(2064.591, 5),
                ],
            ),
            pinned(
                11,
                "[3,2,3,-1,2]",
                (3, 6, 7, 4),
                DestPolicy::Single,
                35,
                2856.422,
                TieBreak::Fifo,
                vec![
                    mid(155.337, 18),
                    pause(714.778, 9, 1039.044),
                    link(714.778, 10, 9, 1039.044, 4.177, 3117.132),
                    link(714.778, 11, 9, 1039.044, 1.839, 3117.132),
                    crash(1052.590, 0),
                    crash(1276.720, 19),
                    crash(2397.059, 15),
                    crash(2445.476, 16),
                    mid(2460.140, 5),
                ],
            ),
            pinned(
                252,
                "[1,-1]",
                (3, 6, 4, 5),
                DestPolicy::All,
                13,
                3513.076,
                TieBreak::Random,
                vec![
                    pause(288.107, 0, 714.912),
                    link(288.107, 1, 0, 714.912, 4.504, 2144.736),
                    link(288.107, 2, 0, 714.912, 8.110, 2144.736),
                    mid(1814.763, 9),
                    link(2006.292, 4, 4, 0.447, 1.193, 615.938),
                    mid(2065.484, 0),
                    mid(2065.484, 3),
                    link(3141.979, 3, 1, 36.888, 0.396, 57.208),
                ],
            ),
        ];
        for run in &runs {
            crate::sweep::assert_passes_on(run, "r320-cx3");
        }
    }

    /// The seed `seed` as a sweep derived it, with eviction time `evict` (see
    /// [`crate::sweep::derived`]).
    fn derived(seed: u64, evict: u64) -> TramRun {
        crate::sweep::derived(seed, |r: &TramRun| r.cfg.timing.evict, evict)
    }

    /// Seed 773 of the first 3,000-seed liveness-phase sweep (single group of 5, eviction 3.2
    /// ms), derived as that sweep derived it.
    ///
    /// postmortem: the leader crashed; its successor could order nothing for 3.2 ms (it waited
    /// for the crashed leader's report to recycle a log slot, as designed), during which the
    /// up-to-date followers had nothing to deliver, so their reports did not move either. When
    /// ordering resumed, the first slot to recycle found p2 (paused for 1.5 ms, well under the
    /// eviction time) silent "for" 3.2 ms and evicted it at once; p2 halted, and with two
    /// crashes the group lost its quorum: no multicast completed after the faults. Fixed: a
    /// member is evicted only after the leader has waited `evict` for it on that slot.
    #[test]
    fn an_up_to_date_follower_is_not_evicted_for_having_had_nothing_to_deliver() {
        let out = crate::sweep::assert_passes(&derived(773, 3_201_746));
        assert_eq!(out.halted, 0);
    }

    /// Seed 180 of the first 3,000-seed liveness-phase sweep (a chain of three groups, the
    /// leaders of all three crashing at once), derived as that sweep derived it.
    ///
    /// postmortem: each leader along the chain started waiting for its crashed members only
    /// when it needed their log slot, i.e. once the message reached it, so the evictions came
    /// one after another (a message waited 16 ms, beyond the liveness phase). Fixed: a member's
    /// eviction clock starts when the group first decides an entry without it; the liveness
    /// phase allows one eviction per group on the longest tree path, plus one.
    #[test]
    fn leaders_along_a_tree_path_evict_their_crashed_members_at_once() {
        crate::sweep::assert_passes(&derived(180, 6_495_456));
    }

    /// Seed 4475 of the 10,000-seed sweep at 02a9e8c (r320-cx3); it failed identically at
    /// b1f219e, so it predated that session's changes.
    ///
    /// postmortem ("a correct server stopped"): one group of three, six clients, eviction
    /// drawn short (981 us). The faults: the link p0 -> p1 slowed by 783 us for 1849 us from
    /// 962 us, and p1 paused 565 us at 2286 us. p0, the initial leader, was deposed (p1 stopped
    /// seeing its heartbeats), p2 took over with p1's grant only (`granted [false, true,
    /// true]`), recycled log slots without p0, and when p0's grant came, p2's log (6 slots) no
    /// longer held what p0 lacked, so `pump` wrote `halt` into p0's `CTL`, as designed after
    /// `evict`. The judge counted a slowed link out of p only when it went to a client, so p0,
    /// whose heartbeats and entries crawled to its follower, counted as correct; and the
    /// drawer, counting only p1 as impaired, had let the link and p1's pause share a group
    /// with f = 1. Fixed in the sweep: a slowed link impairs both of its ends
    /// (`sweep::impairs`), so the drawer refuses this pair (the seed now draws p1's pause
    /// alone) and p0's halt behind its own slowed link is an outcome. Not checked: whether p0
    /// granted as early as it could; the pinned schedule below runs the halt and checks that
    /// everything else holds.
    #[test]
    fn a_deposed_leader_behind_a_slow_link_is_not_lapped_into_a_halt() {
        crate::sweep::assert_passes(&derived(4475, 980_965));
        let mut run = pinned(
            4475,
            "[-1]",
            (3, 6, 6, 6),
            DestPolicy::Adjacent(1),
            53,
            4795.216,
            TieBreak::Fifo,
            vec![
                Fault::LinkDelay {
                    at: us(962.192),
                    from: ProcessId(0),
                    to: ProcessId(1),
                    duration: us(1849.356),
                    delay: us(783.358),
                    jitter: us(7.480),
                },
                Fault::Pause {
                    at: us(2286.223),
                    process: ProcessId(1),
                    duration: us(564.425),
                },
            ],
        );
        run.cfg.timing.evict = Nanos(980_965);
        run.phases = Phases::of(
            run.fault_phase,
            &run.faults,
            run.cfg.timing.evict,
            stages(&run.cfg.tree),
        );
        let out = crate::sweep::assert_passes(&run);
        assert_eq!(out.halted, 1, "the scenario needs p0's halt");
    }

    /// CI's sweep: 50 seeds with faults, 0 violations (the long sweep is `harness check`).
    /// `TRAM_SEEDS=N` runs a longer sweep.
    #[test]
    fn fifty_seeds_under_faults_hold_every_property() {
        let profile = Model::hardware("r320-cx3");
        let mut seen = Kinds::default();
        crate::sweep::ci_sweep("TRAM_SEEDS", 50, &profile, |run: &TramRun, _| {
            let k = run.kinds();
            seen.leader_crash |= k.leader_crash;
            seen.leaders_at_once |= k.leaders_at_once;
            seen.client_crash |= k.client_crash;
            seen.false_suspicion |= k.false_suspicion;
        });
        // The sweep really injects each fault kind.
        assert!(
            seen.leader_crash && seen.leaders_at_once && seen.client_crash && seen.false_suspicion,
            "{seen:?}"
        );
    }
}
