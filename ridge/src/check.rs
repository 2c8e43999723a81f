//! `harness check --protocol ridge`: seeded runs of Ridge on the simulator under the shared
//! fault schedule ([`sweep::draw_schedule`]). Every parameter comes from the seed:
//! groups (1-4), replicas (3 or 5; of 5, 3 acceptors in half the runs, the other two servers
//! learners only), clients, destinations, sizes, Delta, clock skew (offsets up to 2 ms, drift
//! up to 200 ppm in half the runs), ring (4-16 slots) and outbox (1-64 packets) sizes, small,
//! so that packets to paused peers overflow, are dropped and recovered, how many decisions
//! learners keep, the tie-break policy, Phase 2's dissemination (Ridge's in half the runs,
//! the ring and direct baselines in a quarter each), optimistic deliveries (a quarter of the
//! runs), and, in a quarter of the runs, acceptors as processes of their own (3 per ensemble,
//! 2 or 3 servers per group, pure learners). Colocated, `e_all`'s acceptors are group 0's
//! servers (see [`crate::config::AllAcceptors`]: the schedule keeps f faults per group, which
//! spread acceptors do not tolerate).
//!
//! In Ridge's vocabulary the schedule's crashes are, colocated: a group's rank 0, its
//! ensemble's initial coordinator (group 0's rank 0 coordinates `e_all` too); every server, an
//! acceptor of its group's ensemble (the tally's "acceptor crash"; a learner only, where it
//! ranks past the acceptors); ranks beyond f, the learners outside the quorum, its
//! distributors. With dedicated acceptors the shared schedule crashes servers, all of them
//! distributors, and `acceptor_faults` adds the acceptors' own crashes and false
//! suspicions. The phases and the verdict are the other protocols': faults, a liveness phase,
//! convergence; halts judged, the five properties checked.
//!
//! Drawn apart from all that (a stream of its own, issue 44), so that the sweep reaches what
//! its first draws never did: in a third of the runs with several groups, single- and
//! multi-group messages mixed in one run (`random:1..groups`); in half the runs a `retain` of
//! 16-255 decisions, small against the run's instances, so learners trim, acceptors answer a
//! Phase 1b with a `low` mark and a learner that falls behind finds its gap trimmed and halts;
//! in half the colocated runs `e_all`'s acceptors spread over the groups
//! ([`crate::config::AllAcceptors::Spread`], the default), the schedule then keeping at most f of them crashed
//! or impaired; and in a quarter of the runs a group ensemble's coordinator cut off from its
//! acceptors by links slowed past three suspicion timeouts (`cut_off_coordinator`).

use crate::clock::Skew;
use crate::config::AllAcceptors;
use crate::paxos::Dissemination;
use crate::{Config, EnsembleId, Placement, RidgeClient, RidgeNode, RidgeServer};
use multicast::{DestPolicy, LoadSpec, Membership};
use sweep::spec::{Spec, SpecWriter};
use sweep::{
    crashes, draw, draw_schedule, impairs, kinds, Checkable, Kinds, MulticastRun, Phases, Schedule,
    Tally,
};
use transport::rng::{Purpose, Rng};
use transport::runtime::sim::Fault;
use transport::Nanos;
use transport::ProcessId;

/// The `Purpose::Workload` stream a run's parameters are drawn from ([`sweep::params_stream`]).
const PARAMS: u64 = u64::MAX - 4;
/// The `Purpose::Faults` stream of the faults of dedicated acceptors.
const ACCEPTORS: u64 = u64::MAX - 5;
/// The stream of mixed destinations, small `retain`, spread `e_all` acceptors and the
/// coordinator cut off (issue 44), apart from the earlier draws.
const REACH: u64 = u64::MAX - 7;

/// A seeded checking run of Ridge.
pub type RidgeRun = MulticastRun<Config>;

/// Whether the schedule crashes or impairs at most f servers of each group.
fn within_f(cfg: &Config, faults: &[Fault]) -> bool {
    (0..cfg.group_count()).all(|g| {
        cfg.members(multicast::GroupId(g as u8))
            .filter(|&p| faults.iter().any(|x| impairs(x, p) || crashes(x, p)))
            .count()
            <= cfg.f()
    })
}

/// A group ensemble's coordinator cut off from its acceptors: the shared `cut_off_leader`
/// never fires on Ridge, whose suspicion timeout is long against the eviction times it is
/// scaled to. In a quarter of the runs, the links from one group ensemble's coordinator to its
/// other acceptors slow down by three to six suspicion timeouts, for up to as long again, so
/// the acceptors replace it while it still believes it coordinates and its proposals land
/// after the new round's. Only where the ensemble has a coordinator to spare (3 acceptors or
/// more) and the schedule crashes or impairs none of its acceptors (the cut-off impairs them
/// all).
fn cut_off_coordinator(rng: &mut Rng, cfg: &Config, phase: Nanos, faults: &[Fault]) -> Vec<Fault> {
    if !rng.chance(0.25) {
        return Vec::new();
    }
    let e = EnsembleId(rng.below(cfg.groups as u64) as u16);
    let acceptors = cfg.ensemble(e).acceptors;
    let hit = |p: ProcessId| faults.iter().any(|x| impairs(x, p) || crashes(x, p));
    if acceptors.len() < 3 || acceptors.iter().any(|&p| hit(p)) {
        return Vec::new();
    }
    let timeout = cfg.timing.suspect.as_nanos();
    let delay = 3 * timeout + rng.below(3 * timeout);
    let (at, duration) = (
        Nanos(rng.below(phase.as_nanos())),
        Nanos(delay + rng.below(delay)),
    );
    acceptors[1..]
        .iter()
        .map(|&to| Fault::LinkDelay {
            at,
            from: acceptors[0],
            to,
            duration,
            delay: Nanos(delay),
            jitter: Nanos(rng.below(10_000)),
        })
        .collect()
}

/// Spread `e_all` acceptors tolerate f faulty acceptors in all, not f per group (see
/// [`AllAcceptors`]): keeps the schedule's faults, in time order, while at most f of them are
/// crashed or impaired, and drops the others.
fn spare_all_acceptors(cfg: &Config, faults: Vec<Fault>) -> Vec<Fault> {
    let all = cfg.ensemble(EnsembleId(cfg.groups as u16)).acceptors;
    let f = (all.len() - 1) / 2;
    let mut hit: Vec<ProcessId> = Vec::new();
    faults
        .into_iter()
        .filter(|x| {
            let mut more = hit.clone();
            for &p in &all {
                if (impairs(x, p) || crashes(x, p)) && !more.contains(&p) {
                    more.push(p);
                }
            }
            let keep = more.len() <= f;
            if keep {
                hit = more;
            }
            keep
        })
        .collect()
}

/// The dedicated acceptors' faults, which the shared schedule (servers and clients only) does
/// not draw, from a stream of their own. Each ensemble keeps at most f acceptors crashed or
/// impaired, counting those the shared schedule's delayed links reach: in half the ensembles,
/// up to f crashes (the initial coordinator a candidate, half of them in the middle of
/// posting); in a third of the others, the coordinator paused past the suspicion timeout (a
/// false suspicion). In a fifth of the runs with several ensembles, their coordinators all
/// crash at one instant (if each ensemble's f allows).
fn acceptor_faults(seed: u64, cfg: &Config, fault_phase: Nanos, shared: &[Fault]) -> Vec<Fault> {
    let mut rng = Rng::derive(seed, Purpose::Faults, ACCEPTORS);
    let h = fault_phase.as_nanos();
    let (n, f) = (cfg.acceptors, cfg.acceptors / 2);
    let ensembles = cfg.auxiliary_count() / n;
    let together = (ensembles > 1 && rng.chance(0.2)).then(|| Nanos(rng.below(h)));
    let mut faults = Vec::new();
    for e in 0..ensembles {
        let members: Vec<ProcessId> = (0..n).map(|r| cfg.auxiliary(e * n + r)).collect();
        let impaired = members
            .iter()
            .filter(|&&p| shared.iter().any(|x| impairs(x, p)))
            .count();
        let room = f.saturating_sub(impaired);
        if room == 0 {
            continue;
        }
        if let Some(at) = together {
            faults.push(Fault::Crash {
                at,
                process: members[0],
            });
            continue;
        }
        if rng.chance(0.5) {
            let crashes = 1 + rng.below(room as u64) as usize;
            let mut ranks: Vec<usize> = (0..n).collect();
            for i in 0..crashes {
                let j = i + rng.below((n - i) as u64) as usize;
                ranks.swap(i, j);
                let (at, process) = (Nanos(rng.below(h)), members[ranks[i]]);
                faults.push(if rng.chance(0.5) {
                    Fault::CrashMidPost { at, process }
                } else {
                    Fault::Crash { at, process }
                });
            }
        } else if rng.chance(1.0 / 3.0) {
            let suspect = cfg.timing.suspect.as_nanos();
            faults.push(Fault::Pause {
                at: Nanos(rng.below(h)),
                process: members[0],
                duration: Nanos(suspect + rng.below(suspect)),
            });
        }
    }
    faults
}

/// Ridge's own kinds of run ([`Kinds::own`]): single- and multi-group messages mixed in one
/// run; learners keeping few decisions, so they trim within the run; `e_all`'s acceptors
/// spread over the groups; acceptors as processes of their own; a learner outside its
/// ensemble's initial quorum (a distributor) crashing; clocks that disagree.
const MIXED_DEST: &str = "mixed_dest";
const SMALL_RETAIN: &str = "small_retain";
const SPREAD: &str = "spread";
const DEDICATED: &str = "dedicated";
const DISTRIBUTOR_CRASH: &str = "distributor_crash";
const CLOCK_SKEW: &str = "clock_skew";

/// The fewest decisions a learner keeps on real threads (`check --runtime local`). Threads
/// decide about ten thousand instances a second here while the stretched suspicion timeout
/// is 100 ms, and a learner with a gap waits that long before it asks: with 1024 (the sweep's
/// smallest draw without small-retain runs) the decision it lacked was nearly trimmed at its
/// first fetch, and a learner that also waited for a paused acceptor halted (seed 2002).
/// 16384 decisions are over a second and a half of history, sixteen suspicion timeouts.
const LOCAL_RETAIN: usize = 16384;

impl Checkable for Config {
    type Server = RidgeServer;
    type Client = RidgeClient;
    const PROTOCOL: &'static str = "ridge";
    const ABOUT: &'static str =
        "Ridge under coordinator, acceptor, distributor and client crashes, pauses and clock skew";
    const TESTBED: &'static str = crate::TESTBED;
    const EXTRA: Option<&'static str> = Some("learner filled a gap from an acceptor");

    fn derive(seed: u64) -> RidgeRun {
        let mut rng = Rng::derive(seed, Purpose::Workload, PARAMS);
        let groups = 1 + rng.below(4) as usize;
        let replicas = draw::replicas(&mut rng);
        let clients = draw::clients(&mut rng);
        let mut cfg = Config::new(groups, replicas, clients);
        cfg.all_acceptors = AllAcceptors::FirstGroup;
        cfg.delta = Nanos(100_000 + rng.below(900_000));
        if rng.chance(0.5) {
            cfg.skew = Skew {
                max_offset: Nanos(rng.below(2_000_000)),
                max_drift_ppm: rng.unit_f64() * 200.0,
            };
        }
        // At least 4 slots: a 2-slot ring on `lan-1g` (66 us one way) carries about 15 packets
        // a millisecond, less than the decisions of the null messages of two ensembles at the
        // smallest Delta drawn fanned out to 20 learners; Ridge promises nothing under
        // overload (seeds 51, 588, 790 at 2 slots stalled behind their own backlog).
        cfg.ring_slots = 4 + rng.below(13) as u32;
        cfg.outbox = 1 + rng.below(64) as usize;
        cfg.slot_bytes = 2048;
        cfg.retain = 1024 + rng.below(3072) as usize;
        let dest = draw::dest_k_first(&mut rng, groups, false);
        let size = draw::size(&mut rng);
        let fault_phase = Nanos(5_000_000 + rng.below(10_000_000));
        let tie_break = draw::tie_break(&mut rng);
        // The baselines share everything but Phase 2's dissemination: checked alike. Drawn
        // last, so the parameters above are those earlier sweeps drew for each seed.
        cfg.dissemination = match rng.below(4) {
            0 => Dissemination::Ring,
            1 => Dissemination::Direct,
            _ => Dissemination::Ridge,
        };
        // Optimistic deliveries in a quarter of the runs (coordinators then hold requests
        // until their timestamp plus the wait, across failovers too), with waits of 0-2 ms.
        if rng.chance(0.25) {
            cfg.optimistic = Some(Nanos(rng.below(2_000_000)));
        }
        // Groups of 5 with 3 acceptors in half their runs: two servers learn only.
        if replicas == 5 && rng.chance(0.5) {
            cfg.acceptors = 3;
        }
        // The paper's deployment in a quarter of the runs: 3 acceptors of their own per
        // ensemble, groups of 2 or 3 pure learners.
        if rng.chance(0.25) {
            cfg.placement = Placement::Dedicated;
            cfg.acceptors = 3;
            cfg.replicas = 2 + rng.below(2) as usize;
        }
        let suspect = cfg.timing.suspect;
        // A correct learner may wait out a suspicion, a new round and a client's retry; after
        // the last fault a client may wait for a takeover and then a retry: two evictions'
        // worth of liveness phase.
        let stall = Nanos(suspect.as_nanos() * 3 + cfg.timing.retry.as_nanos());
        let schedule = draw_schedule(seed, &cfg, suspect, stall, fault_phase, 2);
        let mut faults = schedule.faults;
        if cfg.placement == Placement::Dedicated {
            faults.extend(acceptor_faults(seed, &cfg, fault_phase, &faults));
            faults.sort_by_key(|f| f.at());
        }
        let mut dest = dest;
        let mut reach = Rng::derive(seed, Purpose::Workload, REACH);
        if groups > 1 && reach.chance(1.0 / 3.0) {
            dest = DestPolicy::Between(1, groups as u8);
        }
        let retain = reach.chance(0.5).then(|| 16 + reach.below(240) as usize);
        let spread = cfg.placement == Placement::Colocated && reach.chance(0.5);
        let cut_off = cut_off_coordinator(&mut reach, &cfg, fault_phase, &faults);
        faults.extend(cut_off);
        faults.sort_by_key(|f| f.at());
        if spread {
            cfg.all_acceptors = AllAcceptors::Spread;
            faults = spare_all_acceptors(&cfg, faults);
        }
        // A learner that falls further behind than the acceptors retain halts (it cannot fill
        // its gap): with few decisions kept, every server the schedule crashes or slows may be
        // lost, so only where that stays within each group's f.
        if let Some(retain) = retain.filter(|_| within_f(&cfg, &faults)) {
            cfg.retain = retain;
        }
        // The schedule as amended: its phases follow the faults added and dropped.
        let phases = Phases::of(fault_phase, &faults, schedule.evict, 2);
        let schedule = Schedule {
            evict: schedule.evict,
            faults,
            phases,
        };
        MulticastRun::scheduled(seed, cfg, dest, size, fault_phase, tie_break, schedule)
    }

    fn write(&self, line: SpecWriter) -> SpecWriter {
        line.put("dissemination", self.dissemination.name())
            .put(
                "optimistic",
                self.optimistic
                    .map_or("off".into(), |w| w.exact().to_string()),
            )
            .put("groups", self.groups)
            .put("replicas", self.replicas)
            .put("acceptors", self.acceptors)
            .put("placement", self.placement.name())
            .put("all_acceptors", self.all_acceptors.name())
            .put("clients", self.clients)
            .time("delta", self.delta)
            .time("skew_offset", self.skew.max_offset)
            .put("skew_ppm", self.skew.max_drift_ppm)
            .put("ring_slots", self.ring_slots)
            .put("outbox", self.outbox)
            .put("slot_bytes", self.slot_bytes)
            .put("retain", self.retain)
    }

    fn read(line: &mut Spec<'_>) -> Result<Config, String> {
        let mut cfg = Config::new(
            line.get("groups")?,
            line.get("replicas")?,
            line.get("clients")?,
        );
        cfg.dissemination = line.get("dissemination")?;
        cfg.optimistic = match line.get::<String>("optimistic")?.as_str() {
            "off" => None,
            wait => Some(wait.parse()?),
        };
        cfg.acceptors = line.get("acceptors")?;
        cfg.placement = line.get("placement")?;
        cfg.all_acceptors = line.get("all_acceptors")?;
        cfg.delta = line.get("delta")?;
        cfg.skew = Skew {
            max_offset: line.get("skew_offset")?,
            max_drift_ppm: line.get("skew_ppm")?,
        };
        cfg.ring_slots = line.get("ring_slots")?;
        cfg.outbox = line.get("outbox")?;
        cfg.slot_bytes = line.get("slot_bytes")?;
        cfg.retain = line.get("retain")?;
        Ok(cfg)
    }

    fn nodes(&self, load: LoadSpec, seed: u64) -> Vec<RidgeNode> {
        crate::nodes(self, load, seed, true)
    }

    fn suspect(&self) -> Nanos {
        self.timing.suspect
    }

    fn stretched(&self, k: u64) -> Config {
        let mut cfg = self.clone();
        // Every duration of the protocol stretches with the schedule. Delta too: unstretched,
        // each ensemble decided a null every 0.1-1 ms of wall time, tens of thousands in a
        // run, and a learner descheduled for a few milliseconds fell further behind than its
        // peers retain and halted.
        let t = &mut cfg.timing;
        let (delta, skew) = (&mut cfg.delta, &mut cfg.skew.max_offset);
        sweep::stretch(
            k,
            [&mut t.heartbeat, &mut t.suspect, &mut t.retry, delta, skew],
        );
        if let Some(wait) = cfg.optimistic.as_mut() {
            sweep::stretch(k, [wait]);
        }
        // A thread the OS deschedules is paused without the schedule knowing: with a small
        // retain its learner falls behind what every peer keeps and halts, correctly, and the
        // judge would call that a correct server stopped. Trimming halts are the simulator's
        // to check (the sweep's small-retain runs); here every learner can catch up.
        cfg.retain = cfg.retain.max(LOCAL_RETAIN);
        cfg
    }

    fn kinds(run: &RidgeRun) -> Kinds {
        let mut k = kinds(&run.faults, &run.cfg, run.cfg.timing.suspect);
        if run.cfg.placement == Placement::Dedicated {
            dedicated_kinds(run, &mut k);
        }
        k.mark(DISTRIBUTOR_CRASH, distributor_crash(run));
        k.mark(CLOCK_SKEW, run.cfg.skew != Skew::NONE);
        k.mark(MIXED_DEST, matches!(run.dest, DestPolicy::Between(..)));
        k.mark(SMALL_RETAIN, run.cfg.retain < 256);
        k.mark(
            SPREAD,
            run.cfg.placement == Placement::Colocated
                && run.cfg.all_acceptors == AllAcceptors::Spread,
        );
        k
    }

    /// The "runs with" line in Ridge's vocabulary: an ensemble's rank 0 is its initial
    /// coordinator; colocated, a group's rank 0 is its ensemble's, every server an acceptor,
    /// ranks beyond f distributors; dedicated, every server a distributor; a leader change is
    /// a coordinator's round after the first.
    fn tally_line(t: &Tally) -> String {
        let (median, least) = t.post_fault();
        format!(
            "runs with: mixed single- and multi-group traffic {}, retain under 256 decisions (trimming) {}, e_all acceptors spread over the groups {}, dedicated acceptors {}, coordinator crash {} (in several ensembles at the same instant {}), acceptor crash {}, distributor crash {}, client crash {}, crash in the middle of posting {}, false suspicion (initial coordinator paused past the timeout) {}, pause/slow {}, link delay {} (coordinator cut off from its acceptors {}), clock skew {}; new round after the first (takeover or fallback) {}, learner filled a gap from an acceptor {}, server halted {} ({} halts); multicasts ordered after the last fault: median {median} per run (least {least}){}",
            t.own(MIXED_DEST),
            t.own(SMALL_RETAIN),
            t.own(SPREAD),
            t.own(DEDICATED),
            t.leader_crash,
            t.leaders_at_once,
            t.follower_crash,
            t.own(DISTRIBUTOR_CRASH),
            t.client_crash,
            t.mid_post,
            t.false_suspicion,
            t.slow,
            t.link_delay,
            t.cut_off,
            t.own(CLOCK_SKEW),
            t.leader_change,
            t.extra,
            t.halted_runs,
            t.halted_servers,
            t.describe_torn(),
        )
    }
}

/// Whether the schedule crashes a learner outside its group ensemble's initial quorum (a
/// distributor): with dedicated acceptors, any server.
fn distributor_crash(run: &RidgeRun) -> bool {
    let f = run.cfg.f();
    let dedicated = run.cfg.placement == Placement::Dedicated;
    run.faults.iter().any(|x| match *x {
        Fault::Crash { process, .. } | Fault::CrashMidPost { process, .. } => {
            run.cfg.group_of(process).is_some() && (dedicated || run.cfg.rank_of(process) > f)
        }
        _ => false,
    })
}

/// The kinds of the dedicated acceptors' faults: the coordinators are acceptors of rank 0,
/// not servers (a server's crash or pause is a distributor's).
fn dedicated_kinds(run: &RidgeRun, k: &mut Kinds) {
    let cfg = &run.cfg;
    let acceptor = |p: ProcessId| {
        (p.index() >= cfg.servers() + cfg.clients)
            .then(|| cfg.dedicated(p.index() - cfg.servers() - cfg.clients))
    };
    k.mark(DEDICATED, true);
    (k.leader_crash, k.leaders_at_once, k.follower_crash) = (false, false, false);
    (k.false_suspicion, k.cut_off) = (false, false);
    let mut coordinators: Vec<(Nanos, EnsembleId)> = Vec::new();
    for f in &run.faults {
        match *f {
            Fault::Crash { process, at } | Fault::CrashMidPost { process, at } => {
                if let Some((e, rank)) = acceptor(process) {
                    k.follower_crash = true;
                    if rank == 0 {
                        k.leader_crash = true;
                        coordinators.push((at, e));
                    }
                }
            }
            Fault::Pause {
                process, duration, ..
            } if duration > cfg.timing.suspect
                && acceptor(process).is_some_and(|(_, rank)| rank == 0) =>
            {
                k.false_suspicion = true;
            }
            _ => {}
        }
    }
    k.leaders_at_once = coordinators
        .iter()
        .any(|&(t, e)| coordinators.iter().any(|&(u, d)| u == t && d != e));
    // A coordinator cut off from its acceptors ([`cut_off_coordinator`]).
    k.cut_off = run.faults.iter().any(|f| {
        matches!(*f, Fault::LinkDelay { from, delay, .. }
            if delay >= Nanos(cfg.timing.suspect.as_nanos() * 3)
                && acceptor(from).is_some_and(|(_, rank)| rank == 0))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use sweep::{Model, SeedRun};

    /// A run's line ([`SeedRun::spec`]) reads back to the same run, for every kind of run the
    /// seeds derive.
    #[test]
    fn runs_read_back_from_their_lines() {
        sweep::assert_specs_read_back::<RidgeRun>(300);
    }

    /// The sweep reaches what issue 44 found it never did: mixed single- and multi-group
    /// traffic, retain small enough to trim, spread `e_all` acceptors, a coordinator cut off
    /// from its acceptors (on either placement), each in a fair share of the seeds; spread
    /// runs keep at most f of `e_all`'s acceptors faulty, small-retain runs f per group.
    #[test]
    fn seeds_reach_mixed_traffic_trimming_spread_acceptors_and_cut_off_coordinators() {
        let (mut mixed, mut small, mut spread, mut cut_off, mut dedicated_cut_off) =
            (0, 0, 0, 0, 0);
        for seed in 0..600 {
            let run = RidgeRun::derive(seed);
            let k = run.kinds();
            mixed += k.has(MIXED_DEST) as u32;
            small += k.has(SMALL_RETAIN) as u32;
            spread += k.has(SPREAD) as u32;
            cut_off += k.cut_off as u32;
            dedicated_cut_off += (k.cut_off && k.has(DEDICATED)) as u32;
            if k.has(SPREAD) {
                let all = run
                    .cfg
                    .ensemble(EnsembleId(run.cfg.groups as u16))
                    .acceptors;
                let faulty = all
                    .iter()
                    .filter(|&&p| run.faults.iter().any(|x| impairs(x, p) || crashes(x, p)))
                    .count();
                assert!(
                    faulty <= (all.len() - 1) / 2,
                    "seed {seed}: {faulty} faulty"
                );
            }
            if k.has(SMALL_RETAIN) {
                assert!(within_f(&run.cfg, &run.faults), "seed {seed}");
            }
        }
        assert!(
            mixed > 60 && small > 60 && spread > 60,
            "{mixed} {small} {spread}"
        );
        assert!(
            cut_off > 20 && dedicated_cut_off > 0,
            "{cut_off} {dedicated_cut_off}"
        );
    }
    use sweep::{assert_passes_on, ci_sweep, pinned};

    /// Schedules that once failed, with their postmortems.
    ///
    /// - 29 (liveness): a coordinator's Phase 2 to itself went through its own ring, whose
    ///   outbox overflowed when a new round proposed many instances at once; the dropped
    ///   messages stalled the round, the fallback proposed them again and overflowed again.
    ///   Fixed: a process hands messages to itself directly, and a full outbox to a peer not
    ///   suspected waits in an overflow queue (dropped only once the peer is suspected).
    /// - 380 (liveness, validity): p5 trusted p3 because of a deposed coordinator's late
    ///   message, p3 trusted p5 after its own coordinator crashed: both alive, neither leading,
    ///   each waiting for the other. Fixed: the oracle counts signs of leading (the newest
    ///   round's `Lead`, Phase 1a and Phase 2), not any packet, and late rounds are ignored.
    /// - 441 (liveness): the `Lead` heartbeats, one per ensemble every heartbeat period, were
    ///   more than two-slot rings carry, and a client's retry went to one acceptor (crashed)
    ///   at a time. Fixed: one `Lead` per peer every quarter suspicion timeout; a retry goes to
    ///   every acceptor, and a client asks first the acceptor that answered last (since
    ///   seed 595's change: the coordinator an answering acceptor trusts).
    /// - 887 (liveness): a coordinator whose Phase 1a was dropped (its peers suspected behind
    ///   a slow link) counted its own catching up on decisions as progress, so it never ran
    ///   another round. Fixed: only decisions of its own proposals count.
    /// - 51 (liveness; direct dissemination, optimistic deliveries): a coordinator paused and
    ///   cut off by slow links dropped its Phase 2a to the peers it suspected, and its rounds
    ///   failed while the links crawled; each failure doubled the wait before the next round,
    ///   up to 32 suspicion timeouts, longer than the liveness phase after the links
    ///   recovered. Fixed: the wait doubles up to 4 times.
    /// - 595 (validity, agreement; ring dissemination): once clients sent to the coordinator
    ///   rather than to the last server that answered (a throughput fix), p1, an acceptor,
    ///   crashed; the new round's quorum left p1 in the ring of learners, so the ring stopped
    ///   at p1's predecessor and p4 learned only by filling its gap, one batch of six values
    ///   per suspicion timeout: at the end of the run it was 245 instances behind. Fixed twice
    ///   over (each alone passes): the ring passes over learners the relayer suspects, and a
    ///   learner catching up asks for the next batch as soon as one arrives.
    #[test]
    fn formerly_failing_schedules_pass() {
        for line in [
            // A learner whose only acceptor left untrimmed had crashed waited for it for good
            // instead of halting (review of the gap-filling change for seed 2002).
            "seed=5 dissemination=ridge optimistic=off groups=1 replicas=5 acceptors=5 \
             placement=colocated all_acceptors=first-group clients=3 delta=100us skew_offset=0ns \
             skew_ppm=0 ring_slots=10 outbox=63 slot_bytes=2048 retain=16 dest=all size=41 \
             fault_phase=12ms tie_break=fifo load_end=25ms fault=kill:1@1ms fault=pause:4@2ms+8ms",
            "seed=29 dissemination=ridge optimistic=off groups=1 replicas=5 acceptors=5 \
             placement=colocated all_acceptors=first-group clients=6 delta=168.283us \
             skew_offset=0ns skew_ppm=0 ring_slots=10 outbox=4 slot_bytes=2048 retain=3942 \
             dest=all size=133 fault_phase=9.665888ms tie_break=fifo load_end=26.971998ms \
             fault=pause:0@672.473us+3.284159ms \
             fault=delay:1>0@672.473us+9.852477ms=3.284159ms~473ns \
             fault=delay:2>0@672.473us+9.852477ms=3.284159ms~8.275us \
             fault=delay:3>0@672.473us+9.852477ms=3.284159ms~7.333us \
             fault=delay:4>0@672.473us+9.852477ms=3.284159ms~1.523us fault=kill:7@1.377509ms \
             fault=delay:0>1@3.902868ms+2.746217ms=666.585us~9.009us \
             fault=slow:3@4.707671ms+2.502302ms=2.687050828043165 fault=kill-posting:5@6.553076ms \
             fault=delay:4>8@7.993384ms+2.279234ms=1.237094ms~5.123us",
            "seed=380 dissemination=ridge optimistic=off groups=2 replicas=3 acceptors=3 \
             placement=colocated all_acceptors=first-group clients=4 delta=189.173us \
             skew_offset=543.013us skew_ppm=122 ring_slots=11 outbox=58 slot_bytes=2048 \
             retain=2442 dest=single size=128 fault_phase=5.869906ms tie_break=fifo \
             load_end=25.67214ms fault=kill:8@525.557us fault=pause:3@1.737574ms+2.256102ms \
             fault=kill-posting:4@3.92359ms fault=slow:5@3.929204ms+1.181852ms=3.4213249902761906",
            "seed=441 dissemination=ridge optimistic=off groups=4 replicas=5 acceptors=5 \
             placement=colocated all_acceptors=first-group clients=4 delta=794.123us \
             skew_offset=0ns skew_ppm=0 ring_slots=2 outbox=30 slot_bytes=2048 retain=3445 \
             dest=single size=153 fault_phase=8.030955ms tie_break=random load_end=28.125872ms \
             fault=pause:2@2.276783ms+2.46196ms fault=kill:22@2.332559ms \
             fault=slow:0@3.274161ms+1.989008ms=9.27816932337339 fault=kill:6@3.422166ms \
             fault=kill:19@3.932603ms fault=kill-posting:11@4.751373ms \
             fault=pause:6@4.843798ms+1.208796ms fault=kill:16@5.32752ms fault=kill:10@5.62762ms \
             fault=kill-posting:21@7.126409ms fault=pause:5@7.497346ms+3.457806ms \
             fault=delay:6>5@7.497346ms+10.373418ms=3.457806ms~1.276us \
             fault=delay:7>5@7.497346ms+10.373418ms=3.457806ms~2.461us \
             fault=delay:8>5@7.497346ms+10.373418ms=3.457806ms~3.677us \
             fault=delay:9>5@7.497346ms+10.373418ms=3.457806ms~662ns",
            "seed=51 dissemination=direct optimistic=1.135746ms groups=4 replicas=3 acceptors=3 \
             placement=colocated all_acceptors=first-group clients=3 delta=515.284us \
             skew_offset=765.609us skew_ppm=154 ring_slots=4 outbox=55 slot_bytes=2048 \
             retain=3400 dest=random:2 size=133 fault_phase=9.563756ms tie_break=fifo \
             load_end=31.703128ms fault=kill-posting:10@1.702605ms \
             fault=slow:4@2.040152ms+408.63us=4.438043182084746 \
             fault=delay:3>5@2.856371ms+1.778486ms=4.664us~1.414us fault=kill:7@6.606965ms \
             fault=pause:0@9.261237ms+3.770165ms \
             fault=delay:1>0@9.261237ms+11.310495ms=3.770165ms~6.605us \
             fault=delay:2>0@9.261237ms+11.310495ms=3.770165ms~5.056us",
            "seed=887 dissemination=ridge optimistic=off groups=1 replicas=3 acceptors=3 \
             placement=colocated all_acceptors=first-group clients=6 delta=167.602us \
             skew_offset=0ns skew_ppm=0 ring_slots=9 outbox=15 slot_bytes=2048 retain=1127 \
             dest=all size=73 fault_phase=9.595688ms tie_break=fifo load_end=23.041941ms \
             fault=kill:6@689.472us fault=pause:0@3.82872ms+2.988899ms \
             fault=delay:1>0@3.82872ms+8.966697ms=2.988899ms~3.999us \
             fault=delay:2>0@3.82872ms+8.966697ms=2.988899ms~6.158us",
            "seed=595 dissemination=ring optimistic=off groups=1 replicas=5 acceptors=5 \
             placement=colocated all_acceptors=first-group clients=5 delta=301.835us \
             skew_offset=0ns skew_ppm=0 ring_slots=11 outbox=52 slot_bytes=2048 retain=2352 \
             dest=random:1 size=132 fault_phase=9.445292ms tie_break=random load_end=29.787316ms \
             fault=kill:1@8.23966ms",
        ] {
            let out = assert_passes_on(&pinned::<RidgeRun>(line), crate::TESTBED);
            assert!(out.leader_changes, "{line}: no new round");
        }
    }

    /// CI's sweep: 50 seeds with faults, 0 violations (the long sweep is `harness check`).
    /// `RIDGE_SEEDS=N` runs a longer sweep.
    #[test]
    fn fifty_seeds_under_faults_hold_every_property() {
        let model = Model::hardware(crate::TESTBED);
        let mut seen = Kinds::default();
        let mut filled = false;
        ci_sweep("RIDGE_SEEDS", 50, &model, |run: &RidgeRun, out| {
            let k = run.kinds();
            seen.leader_crash |= k.leader_crash;
            seen.follower_crash |= k.follower_crash;
            seen.mark(DISTRIBUTOR_CRASH, k.has(DISTRIBUTOR_CRASH));
            seen.client_crash |= k.client_crash;
            seen.mid_post |= k.mid_post;
            seen.false_suspicion |= k.false_suspicion;
            seen.slow |= k.slow;
            seen.mark(CLOCK_SKEW, k.has(CLOCK_SKEW));
            filled |= out.extra > 0;
        });
        // The sweep really injects each fault kind, and learners really fill gaps.
        assert!(
            seen.leader_crash
                && seen.follower_crash
                && seen.has(DISTRIBUTOR_CRASH)
                && seen.client_crash
                && seen.mid_post
                && seen.false_suspicion
                && seen.slow
                && seen.has(CLOCK_SKEW),
            "{seen:?}"
        );
        assert!(filled, "no learner filled a gap");
    }
}
