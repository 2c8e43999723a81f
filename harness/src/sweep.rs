//! What every protocol's `harness check` sweep shares: the fault schedule drawn from a seed,
//! the kinds of fault a run holds, a run's outcome, and the sweep's tally.

use crate::experiment::Observed;
use multicast::{
    check, collect_log, DeliveryLog, DestPolicy, GroupId, LoadSpec, Membership, Node, Server,
};
use std::collections::BTreeSet;
use transport::rng::{Purpose, Rng};
use transport::runtime::local::{LocalConfig, LocalNic, LocalRun, LocalRuntime};
use transport::runtime::sim::{
    check_determinism, Determinism, Fault, Profile, Sim, SimConfig, SimNic, Software, Tearing,
    TieBreak,
};
use transport::{Nanos, Process, ProcessId};

/// The convergence phase after the liveness phase: no new multicasts, faults over, every
/// correct process must catch up.
pub(crate) const CONVERGE: Nanos = Nanos(60_000_000);

/// How long clients keep multicasting after the last fault ended and the eviction time passed:
/// the liveness phase, so ordering after failures is exercised, not only recovery.
pub(crate) const LIVE: Nanos = Nanos(3_000_000);

/// The phases of a checking run: faults until `last_fault` (when the last one stopped acting),
/// multicasts until `load_end`, then convergence until `limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Phases {
    pub(crate) last_fault: Nanos,
    pub(crate) load_end: Nanos,
    pub(crate) limit: Nanos,
}

impl Phases {
    /// The phases of a run whose faults start within `fault_phase`, with eviction time `evict`
    /// that the protocol may have to wait out `stages` times in a row after the last fault (a
    /// TRAM message crosses the groups of a tree path, each of whose leaders may still wait for
    /// a crashed member).
    pub(crate) fn of(fault_phase: Nanos, faults: &[Fault], evict: Nanos, stages: u64) -> Phases {
        let last_fault = faults.iter().map(Fault::end).max().unwrap_or(Nanos::ZERO);
        let load_end = fault_phase
            .max(last_fault)
            .saturating_add(Nanos(evict.as_nanos() * stages))
            .saturating_add(LIVE);
        Phases {
            last_fault,
            load_end,
            limit: load_end.saturating_add(CONVERGE),
        }
    }
}

/// A run's eviction time, fault schedule and phases, all drawn from its seed.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    pub(crate) evict: Nanos,
    pub(crate) faults: Vec<Fault>,
    pub(crate) phases: Phases,
}

/// Draws a run's [`Schedule`]: the eviction time ([`draw_evict`], `stall` being how long a
/// correct member may wait through a failover), the faults of `fault_phase` ([`draw_faults`]),
/// and the phases, with `stages` evictions in a row allowed after the last fault.
pub(crate) fn draw_schedule(
    seed: u64,
    m: &impl Membership,
    suspect: Nanos,
    stall: Nanos,
    fault_phase: Nanos,
    stages: u64,
) -> Schedule {
    let evict = draw_evict(seed, stall, suspect);
    let faults = draw_faults(seed, m, suspect, fault_phase, evict);
    let phases = Phases::of(fault_phase, &faults, evict, stages);
    Schedule {
        evict,
        faults,
        phases,
    }
}

/// The eviction time of a run (how long a blocked client or leader waits for a silent member
/// before recycling without it), drawn from the seed. In a third of runs it is short: `stall`
/// (the longest a correct member may go without delivering, as the protocol's failure
/// detectors allow: a leader change, a suspected client's relay) plus one to three suspicion
/// timeouts, so a crashed member stops blocking recycling about as soon as the failure
/// detectors could act, and a paused one is evicted and halts. Otherwise 3 to 10 ms.
fn draw_evict(seed: u64, stall: Nanos, suspect: Nanos) -> Nanos {
    let mut rng = Rng::derive(seed, Purpose::Faults, 1);
    if rng.chance(1.0 / 3.0) {
        Nanos(stall.as_nanos() + suspect.as_nanos() + rng.below(suspect.as_nanos() * 2))
    } else {
        Nanos(EVICT_LONG.as_nanos() + rng.below(7_000_000))
    }
}

/// The shortest of the long eviction times: above every pause and delay the schedule draws.
const EVICT_LONG: Nanos = Nanos(3_000_000);

/// Whether a run's eviction time is within reach of its pauses and delays (see [`draw_faults`]).
fn evict_is_short(evict: Nanos) -> bool {
    evict < EVICT_LONG
}

/// Whether the schedule makes server `p` unresponsive, so that it may fall behind, be excluded
/// from recycling and halt: a pause or slowdown of its own, or a delayed link at either end of
/// it. A link out of `p` counts whatever its other end: to a client, `p`'s reports arrive late;
/// to a member of its group, `p` looks silent to it (TRAM seed 4475: a leader whose heartbeats
/// crawled to its follower was deposed, fell a log behind and halted).
pub(crate) fn impairs(f: &Fault, p: ProcessId) -> bool {
    match *f {
        Fault::Pause { process, .. } | Fault::Slow { process, .. } => process == p,
        Fault::LinkDelay { from, to, .. } => to == p || from == p,
        Fault::Crash { .. } | Fault::CrashMidPost { .. } | Fault::Revoke { .. } => false,
    }
}

/// The time span over which an impairing fault (see [`impairs`]) acts on a server, its end
/// taken late: a delayed link's last message lands `delay` after the window closes.
fn impaired_span(f: &Fault) -> (Nanos, Nanos) {
    match *f {
        Fault::Pause { at, duration, .. } | Fault::Slow { at, duration, .. } => {
            (at, at.saturating_add(duration))
        }
        Fault::LinkDelay {
            at,
            duration,
            delay,
            ..
        } => (at, at.saturating_add(duration).saturating_add(delay)),
        Fault::Crash { at, .. } | Fault::CrashMidPost { at, .. } | Fault::Revoke { at, .. } => {
            (at, at)
        }
    }
}

/// The longest time a server stays impaired without a break, given the spans of the faults
/// that impair it (overlapping spans join): several faults, each shorter than an eviction time,
/// may together keep it silent for longer (RamCast seed 4707).
fn longest_impairment(spans: &[(Nanos, Nanos)]) -> Nanos {
    let mut spans = spans.to_vec();
    spans.sort();
    let mut longest = Nanos::ZERO;
    let mut current: Option<(Nanos, Nanos)> = None;
    for (start, end) in spans {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            _ => Some((start, end)),
        };
        let (s, e) = current.expect("just set");
        longest = longest.max(e.saturating_sub(s));
    }
    longest
}

/// The `Purpose::Workload` entity each protocol's sweep derives its run parameters from (groups,
/// replicas, clients, destinations, ...), in one place so the three stay distinct and clear of
/// the clients' workload streams, whose entities are process ids.
pub(crate) mod params_stream {
    /// `harness check --protocol ramcast`.
    pub(crate) const RAMCAST: u64 = u64::MAX - 1;
    /// `harness check --protocol tram`.
    pub(crate) const TRAM: u64 = u64::MAX - 2;
    /// `harness check --protocol rdmc`.
    pub(crate) const RDMC: u64 = u64::MAX - 3;
    /// `harness check --protocol ridge`.
    pub(crate) const RIDGE: u64 = u64::MAX - 4;
    /// `harness check --protocol ridge`: faults of dedicated acceptors.
    pub(crate) const RIDGE_ACCEPTORS: u64 = u64::MAX - 5;
    /// Every protocol: whether and how the simulator tears the run's multi-word accesses
    /// (drawn apart from the run's other parameters, so adding it changed none of them).
    pub(crate) const TEARING: u64 = u64::MAX - 6;
    /// `harness check --protocol ridge`: mixed destinations, small `retain`, spread `e_all`
    /// acceptors and the coordinator cut off (issue 44), apart from the earlier draws.
    pub(crate) const RIDGE_REACH: u64 = u64::MAX - 7;
    /// `harness check --protocol heron`: five replicas, late faults, link delays, crashes in
    /// the middle of posting, pauses past the suspicion timeout, queue pairs broken during a
    /// state transfer (issue 44).
    pub(crate) const HERON_REACH: u64 = u64::MAX - 8;
    /// `harness check --protocol ramcast`: one run in eight with large buffers (many clients of
    /// kilobytes, so a leader change's replies span several messages), apart from the earlier
    /// draws.
    pub(crate) const RAMCAST_LARGE: u64 = u64::MAX - 9;
}

/// Kinds of fault a run contains, for the sweep's counts.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Kinds {
    pub(crate) leader_crash: bool,
    /// Initial leaders of two or more groups crash at the same instant.
    pub(crate) leaders_at_once: bool,
    pub(crate) follower_crash: bool,
    pub(crate) client_crash: bool,
    /// A crash in the middle of posting (a client's multicast reaching some destinations only,
    /// a leader's proposal reaching some followers only).
    pub(crate) mid_post: bool,
    pub(crate) false_suspicion: bool,
    pub(crate) slow: bool,
    pub(crate) link_delay: bool,
    /// A group's initial leader cut off from its followers by slow links (`cut_off_leader`).
    pub(crate) cut_off: bool,
    /// Ridge: a learner outside its ensemble's initial quorum (a distributor) crashes.
    pub(crate) distributor_crash: bool,
    /// Ridge: the processes' clocks disagree.
    pub(crate) clock_skew: bool,
    /// Ridge: the acceptors are processes of their own.
    pub(crate) dedicated: bool,
    /// Heron: the run is TPC-C (else the key-value store).
    pub(crate) tpcc: bool,
    /// Heron: the run is over Ridge (else over RamCast).
    pub(crate) over_ridge: bool,
    /// Ridge: single- and multi-group messages mixed in one run.
    pub(crate) mixed_dest: bool,
    /// Ridge: learners keep few decisions, so they trim within the run.
    pub(crate) small_retain: bool,
    /// Ridge: `e_all`'s acceptors spread over the groups.
    pub(crate) spread: bool,
    /// Heron: partitions of five replicas.
    pub(crate) five_replicas: bool,
    /// Heron: a laggard's staging area refuses its responder for a moment once the laggard
    /// resumes, breaking the queue pair a state transfer is being served on.
    pub(crate) serve_broken: bool,
    /// Heron: a fault starts after the first 900 us (the crate's own sweep starts none later).
    pub(crate) late_fault: bool,
}

/// The kinds of fault in `faults`; a pause of a group's initial leader longer than `suspect`
/// is a false suspicion (a paused follower is suspected by nobody: it is a pause).
pub(crate) fn kinds(faults: &[Fault], m: &impl Membership, suspect: Nanos) -> Kinds {
    let mut k = Kinds::default();
    let mut leader_crashes: Vec<(Nanos, GroupId)> = Vec::new();
    for f in faults {
        match *f {
            Fault::Crash { process, at } | Fault::CrashMidPost { process, at } => {
                match m.group_of(process) {
                    None if m.client_index(process).is_some() => k.client_crash = true,
                    // An auxiliary process: the protocol names its kind.
                    None => {}
                    Some(g) if m.rank_of(process) == 0 => {
                        k.leader_crash = true;
                        leader_crashes.push((at, g));
                    }
                    Some(_) => k.follower_crash = true,
                }
                if matches!(f, Fault::CrashMidPost { .. }) {
                    k.mid_post = true;
                }
            }
            Fault::Pause {
                process, duration, ..
            } if duration > suspect && m.group_of(process).is_some() && m.rank_of(process) == 0 => {
                k.false_suspicion = true
            }
            Fault::Pause { .. } | Fault::Slow { .. } => k.slow = true,
            Fault::LinkDelay {
                from, to, delay, ..
            } => {
                k.link_delay = true;
                // Only `cut_off_leader` delays a leader's links by three timeouts or more.
                k.cut_off |= delay >= Nanos(suspect.as_nanos() * 3)
                    && m.group_of(from).is_some()
                    && m.rank_of(from) == 0
                    && m.group_of(to) == m.group_of(from);
            }
            Fault::Revoke { .. } => {}
        }
    }
    k.leaders_at_once = leader_crashes
        .iter()
        .any(|&(t, g)| leader_crashes.iter().any(|&(u, h)| u == t && h != g));
    k
}

/// Draws the fault schedule: at most f crashes per group (the initial leader among the
/// candidates), any number of client crashes but one, half of all crashes in the middle of
/// posting (a partial multicast or proposal reaching any subset), pauses of servers long
/// enough to be suspected (false suspicions), slow processes and delayed links (half of them
/// by up to three suspicion timeouts), all within the fault phase. Some runs also crash the
/// initial leaders of several groups at one instant, and some pause a group's initial leader
/// while its group's messages to it are slowed down, so it resumes before it learns it was
/// replaced and writes with a revoked permission; some cut a group's initial leader off from its
/// followers by slow links ([`cut_off_leader`]).
///
/// A server the schedule makes unresponsive for about an eviction time may be excluded and
/// halt, so it counts against its group's f like a crash, and no group gets more than f crashed
/// or impaired members. With a short `evict` (within reach of a single pause or delay) every
/// impaired server counts; with a long one, a server counts once the faults that impair it,
/// joined where they overlap ([`longest_impairment`]), keep it impaired for longer than `evict`
/// less a suspicion timeout (the time a peer needs to notice it went silent).
fn draw_faults(
    seed: u64,
    m: &impl Membership,
    suspect: Nanos,
    phase: Nanos,
    evict: Nanos,
) -> Vec<Fault> {
    let mut rng = Rng::derive(seed, Purpose::Faults, 0);
    let h = phase.as_nanos();
    let mut faults = Vec::new();
    // Groups whose initial leader crashes together with others', if this run has such an event.
    let mut together = 0u64;
    let mut together_at = Nanos::ZERO;
    if m.group_count() > 1 && m.f() > 0 && rng.chance(0.4) {
        let k = 2 + rng.below(m.group_count() as u64 - 1);
        while (together.count_ones() as u64) < k {
            together |= 1 << rng.below(m.group_count() as u64);
        }
        together_at = Nanos(rng.below(h));
    }
    for g in 0..m.group_count() {
        let mut crashes = rng.below(m.f() as u64 + 1) as usize;
        let mut ranks: Vec<usize> = (0..m.replica_count()).collect();
        if together & 1 << g != 0 {
            let p = m.server(GroupId(g as u8), 0);
            faults.push(if rng.chance(0.5) {
                Fault::CrashMidPost {
                    at: together_at,
                    process: p,
                }
            } else {
                Fault::Crash {
                    at: together_at,
                    process: p,
                }
            });
            // The other crashes of this group come from the remaining ranks.
            ranks.remove(0);
            crashes = crashes.min(m.f() - 1);
        }
        for i in 0..crashes {
            let j = i + rng.below((ranks.len() - i) as u64) as usize;
            ranks.swap(i, j);
            faults.push(crash(&mut rng, h, m.server(GroupId(g as u8), ranks[i])));
        }
    }
    for c in 0..m.client_count().saturating_sub(1) {
        if rng.chance(0.3) {
            faults.push(crash(&mut rng, h, m.client(c)));
        }
    }
    let mut impaired = Impairments::new(m, &faults, evict, suspect);
    let servers = m.servers() as u64;
    for _ in 0..rng.below(5) {
        let at = Nanos(rng.below(h));
        let p = ProcessId(rng.below(servers) as u32);
        let f = match rng.below(3) {
            // Longer than the suspicion timeout, shorter than eviction: a false suspicion.
            0 => Fault::Pause {
                at,
                process: p,
                duration: Nanos(suspect.as_nanos() + rng.below(1_500_000)),
            },
            1 => Fault::Slow {
                at,
                process: p,
                duration: Nanos(rng.below(h / 2) + 1),
                factor: 1.0 + rng.unit_f64() * 9.0,
            },
            _ => Fault::LinkDelay {
                at,
                from: p,
                to: ProcessId(rng.below(m.processes() as u64) as u32),
                duration: Nanos(rng.below(h / 2) + 1),
                // Half of the delays reach several suspicion timeouts: a leader whose writes
                // crawl is suspected while alive, and its late writes land after the change.
                delay: Nanos(if rng.chance(0.5) {
                    rng.below(50_000)
                } else {
                    rng.below(suspect.as_nanos() * 3)
                }),
                jitter: Nanos(rng.below(10_000)),
            },
        };
        if impaired.admit(std::slice::from_ref(&f), |_| true, m) {
            faults.push(f);
        }
    }
    if m.f() > 0 && rng.chance(0.3) {
        let g = GroupId(rng.below(m.group_count() as u64) as u8);
        let leader = m.server(g, 0);
        let at = Nanos(rng.below(h));
        let pause = Nanos(suspect.as_nanos() * 2 + rng.below(suspect.as_nanos() * 2));
        let mut revoke_race = vec![Fault::Pause {
            at,
            process: leader,
            duration: pause,
        }];
        for r in 1..m.replica_count() {
            revoke_race.push(Fault::LinkDelay {
                at,
                from: m.server(g, r),
                to: leader,
                duration: Nanos(pause.as_nanos() * 3),
                delay: pause,
                jitter: Nanos(rng.below(10_000)),
            });
        }
        // The followers' slowed links reach only the paused leader, so only it may fall
        // behind: the followers do not count against f for them.
        if impaired.admit(&revoke_race, |p| p == leader, m) {
            faults.extend(revoke_race);
        }
    }
    if !evict_is_short(evict) {
        let cut_off = cut_off_leader(seed, m, suspect, phase, evict, &faults);
        if impaired.admit(&cut_off, |_| true, m) {
            faults.extend(cut_off);
        }
    }
    faults.sort_by_key(|f| f.at());
    faults
}

/// The members of each group a schedule may take out: crashed, or impaired for long enough to
/// be excluded and halt (see [`draw_faults`]). The drawer admits a fault only while every
/// group keeps at most f of them.
struct Impairments {
    /// Whether every impairment counts (a short eviction time).
    evict_short: bool,
    /// The longest a server may stay impaired without counting (long eviction times).
    tolerated: Nanos,
    /// Per group, the members counted against f.
    faulty: Vec<Vec<ProcessId>>,
    /// Per server, the spans over which admitted faults impair it.
    spans: Vec<Vec<(Nanos, Nanos)>>,
}

impl Impairments {
    /// The crashes in `crashes` counted, no impairment yet.
    fn new(m: &impl Membership, crashes: &[Fault], evict: Nanos, suspect: Nanos) -> Self {
        let mut faulty = vec![Vec::new(); m.group_count()];
        for f in crashes {
            if let Fault::Crash { process, .. } | Fault::CrashMidPost { process, .. } = *f {
                if let Some(g) = m.group_of(process) {
                    faulty[g.0 as usize].push(process);
                }
            }
        }
        Impairments {
            evict_short: evict_is_short(evict),
            tolerated: evict.saturating_sub(suspect),
            faulty,
            spans: vec![Vec::new(); m.servers()],
        }
    }

    /// Whether `faults` may join the schedule together, judging impairments only of the servers
    /// `counted` selects; if so, what they crash or impair counts from now on.
    fn admit(
        &mut self,
        faults: &[Fault],
        counted: impl Fn(ProcessId) -> bool,
        m: &impl Membership,
    ) -> bool {
        let mut add: Vec<ProcessId> = Vec::new();
        for p in (0..m.servers() as u32).map(ProcessId) {
            let g = m.group_of(p).expect("server").0 as usize;
            if self.faulty[g].contains(&p) {
                continue;
            }
            let crashed = faults.iter().any(|f| {
                matches!(*f, Fault::Crash { process, .. } | Fault::CrashMidPost { process, .. } if process == p)
            });
            let mut joined = self.spans[p.0 as usize].clone();
            joined.extend(faults.iter().filter(|f| impairs(f, p)).map(impaired_span));
            let impaired = counted(p)
                && joined.len() > self.spans[p.0 as usize].len()
                && (self.evict_short || longest_impairment(&joined) > self.tolerated);
            if crashed || impaired {
                add.push(p);
            }
        }
        let fits = (0..m.group_count()).all(|g| {
            let new = add
                .iter()
                .filter(|&&p| m.group_of(p) == Some(GroupId(g as u8)))
                .count();
            self.faulty[g].len() + new <= m.f()
        });
        if fits {
            for p in add {
                self.faulty[m.group_of(p).expect("server").0 as usize].push(p);
            }
            for p in (0..m.servers() as u32).map(ProcessId) {
                let spans = faults.iter().filter(|f| impairs(f, p)).map(impaired_span);
                self.spans[p.0 as usize].extend(spans);
            }
        }
        fits
    }
}

/// Some runs cut a group's initial leader off from its followers for several suspicion
/// timeouts (3 to 10): its writes to them, and one client's, crawl. The followers elect a
/// leader that never saw what the old one proposed to itself, and the old one's writes land
/// after the change. The cut-off leader holds the slow client's undecided messages, which
/// block its deliveries until the links recover and a new leader orders them: the cut-off and
/// that last delay stay within `evict` (with a margin of a few timeouts), so no correct member
/// is excluded from recycling for it. Half of these runs also crash the follower that takes over (rank 1) while
/// the links crawl, if the group's f allows: the class of RamCast's stale-round bug
/// (`ramcast/tests/sim.rs`), where the round after it adopted a value the crashed leader's
/// quorum never saw. Drawn from a stream of its own, so the rest of a seed's schedule (`drawn`)
/// is the one earlier sweeps drew; never with a short eviction time, since it impairs every
/// follower of the group.
fn cut_off_leader(
    seed: u64,
    m: &impl Membership,
    suspect: Nanos,
    phase: Nanos,
    evict: Nanos,
    drawn: &[Fault],
) -> Vec<Fault> {
    // Stream 0 draws the schedule, 1 the eviction time (`draw_evict`).
    let mut rng = Rng::derive(seed, Purpose::Faults, 2);
    if m.f() == 0 || !rng.chance(0.25) {
        return Vec::new();
    }
    let g = GroupId(rng.below(m.group_count() as u64) as u8);
    let leader = m.server(g, 0);
    let client = m.client(rng.below(m.client_count() as u64) as usize);
    let at = Nanos(rng.below(phase.as_nanos()));
    let timeout = suspect.as_nanos();
    // duration + delay <= 3 * delay <= evict - 4 timeouts.
    let most = (10 * timeout).min(evict.as_nanos().saturating_sub(4 * timeout) / 3);
    if most < 3 * timeout {
        return Vec::new();
    }
    let delay = 3 * timeout + rng.below(most - 3 * timeout + 1);
    let duration = Nanos(delay + rng.below(delay));
    let mut faults = Vec::new();
    let crashed: BTreeSet<ProcessId> = drawn
        .iter()
        .filter_map(|f| match *f {
            Fault::Crash { process, .. } | Fault::CrashMidPost { process, .. }
                if m.group_of(process) == Some(g) =>
            {
                Some(process)
            }
            _ => None,
        })
        .collect();
    let next = m.server(g, 1);
    if rng.chance(0.5) && crashed.len() < m.f() && !crashed.contains(&next) {
        // After it took over (a suspicion timeout and a candidacy), before the links recover.
        let after = suspect.as_nanos() * 2;
        faults.push(Fault::Crash {
            at: Nanos(at.as_nanos() + after + rng.below(duration.as_nanos() - after)),
            process: next,
        });
    }
    for r in 1..m.replica_count() {
        for from in [leader, client] {
            faults.push(Fault::LinkDelay {
                at,
                from,
                to: m.server(g, r),
                duration,
                delay: Nanos(delay),
                jitter: Nanos(rng.below(10_000)),
            });
        }
    }
    faults
}

/// A crash at a random time of the fault phase; half of them in the middle of posting.
fn crash(rng: &mut Rng, horizon: u64, process: ProcessId) -> Fault {
    let at = Nanos(rng.below(horizon));
    if rng.chance(0.5) {
        Fault::CrashMidPost { at, process }
    } else {
        Fault::Crash { at, process }
    }
}

/// The outcome of one run.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) violations: Vec<String>,
    pub(crate) events: u64,
    pub(crate) delivered: u64,
    pub(crate) leader_changes: bool,
    pub(crate) refused_writes: u64,
    /// Servers that stopped themselves (a halt is an outcome, judged by [`judge`]).
    pub(crate) halted: u64,
    /// Completed multicasts started after the last fault stopped acting.
    pub(crate) post_fault: u64,
    /// Per fault of the schedule (in its order), completed multicasts started after it stopped
    /// acting.
    pub(crate) after_each: Vec<u64>,
    /// A protocol-specific event count (RamCast: messages relayed for suspected clients).
    pub(crate) extra: u64,
    pub(crate) divergence: Option<String>,
    pub(crate) log: Option<DeliveryLog>,
    /// Each server's final state, for failure reports.
    pub(crate) states: Vec<String>,
    /// Ops the simulator carried out in pieces (torn landings).
    pub(crate) torn_ops: u64,
}

/// Counts over a sweep: how many runs had each fault kind and each protocol event.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Tally {
    pub(crate) events: u64,
    pub(crate) delivered: u64,
    pub(crate) leader_crash: u64,
    leaders_at_once: u64,
    pub(crate) follower_crash: u64,
    client_crash: u64,
    pub(crate) mid_post: u64,
    false_suspicion: u64,
    pub(crate) slow: u64,
    pub(crate) link_delay: u64,
    cut_off: u64,
    leader_change: u64,
    revoke_race: u64,
    halted_runs: u64,
    halted_servers: u64,
    /// Per run, completed multicasts started after its last fault.
    post_fault: Vec<u64>,
    pub(crate) extra: u64,
    /// Ridge's own kinds (absent from earlier reports).
    #[serde(default)]
    distributor_crash: u64,
    #[serde(default)]
    clock_skew: u64,
    #[serde(default)]
    dedicated: u64,
    #[serde(default)]
    tpcc: u64,
    #[serde(default)]
    over_ridge: u64,
    #[serde(default)]
    mixed_dest: u64,
    #[serde(default)]
    small_retain: u64,
    #[serde(default)]
    spread: u64,
    #[serde(default)]
    five_replicas: u64,
    #[serde(default)]
    serve_broken: u64,
    #[serde(default)]
    late_fault: u64,
    /// Runs with torn landings, and the ops they carried out in pieces.
    #[serde(default)]
    torn: u64,
    #[serde(default)]
    torn_ops: u64,
}

impl Tally {
    /// Adds another sweep's counts (a shard of the same sweep).
    pub(crate) fn merge(&mut self, o: &Tally) {
        let Tally {
            events,
            delivered,
            leader_crash,
            leaders_at_once,
            follower_crash,
            client_crash,
            mid_post,
            false_suspicion,
            slow,
            link_delay,
            cut_off,
            leader_change,
            revoke_race,
            halted_runs,
            halted_servers,
            post_fault,
            extra,
            distributor_crash,
            clock_skew,
            dedicated,
            tpcc,
            over_ridge,
            mixed_dest,
            small_retain,
            spread,
            five_replicas,
            serve_broken,
            late_fault,
            torn,
            torn_ops,
        } = o;
        self.events += events;
        self.delivered += delivered;
        self.leader_crash += leader_crash;
        self.leaders_at_once += leaders_at_once;
        self.follower_crash += follower_crash;
        self.client_crash += client_crash;
        self.mid_post += mid_post;
        self.false_suspicion += false_suspicion;
        self.slow += slow;
        self.link_delay += link_delay;
        self.cut_off += cut_off;
        self.leader_change += leader_change;
        self.revoke_race += revoke_race;
        self.halted_runs += halted_runs;
        self.halted_servers += halted_servers;
        self.post_fault.extend(post_fault);
        self.extra += extra;
        self.distributor_crash += distributor_crash;
        self.clock_skew += clock_skew;
        self.dedicated += dedicated;
        self.tpcc += tpcc;
        self.over_ridge += over_ridge;
        self.mixed_dest += mixed_dest;
        self.small_retain += small_retain;
        self.spread += spread;
        self.five_replicas += five_replicas;
        self.serve_broken += serve_broken;
        self.late_fault += late_fault;
        self.torn += torn;
        self.torn_ops += torn_ops;
    }

    /// The median over runs of the multicasts completed after the run's last fault, and the
    /// smallest.
    pub(crate) fn post_fault(&self) -> (u64, u64) {
        let mut v = self.post_fault.clone();
        v.sort_unstable();
        (
            v.get(v.len() / 2).copied().unwrap_or(0),
            v.first().copied().unwrap_or(0),
        )
    }

    /// Adds one run.
    pub(crate) fn add(&mut self, k: Kinds, out: &Outcome) {
        let n = |b: bool| b as u64;
        self.events += out.events;
        self.delivered += out.delivered;
        self.leader_crash += n(k.leader_crash);
        self.leaders_at_once += n(k.leaders_at_once);
        self.follower_crash += n(k.follower_crash);
        self.client_crash += n(k.client_crash);
        self.mid_post += n(k.mid_post);
        self.false_suspicion += n(k.false_suspicion);
        self.slow += n(k.slow);
        self.link_delay += n(k.link_delay);
        self.cut_off += n(k.cut_off);
        self.leader_change += n(out.leader_changes);
        self.revoke_race += n(out.refused_writes > 0);
        self.halted_runs += n(out.halted > 0);
        self.halted_servers += out.halted;
        self.post_fault.push(out.post_fault);
        self.extra += n(out.extra > 0);
        self.distributor_crash += n(k.distributor_crash);
        self.clock_skew += n(k.clock_skew);
        self.dedicated += n(k.dedicated);
        self.tpcc += n(k.tpcc);
        self.over_ridge += n(k.over_ridge);
        self.mixed_dest += n(k.mixed_dest);
        self.small_retain += n(k.small_retain);
        self.spread += n(k.spread);
        self.five_replicas += n(k.five_replicas);
        self.serve_broken += n(k.serve_broken);
        self.late_fault += n(k.late_fault);
        self.torn += n(out.torn_ops > 0);
        self.torn_ops += out.torn_ops;
    }

    /// The clause on torn landings every sweep's line ends with.
    pub(crate) fn describe_torn(&self) -> String {
        format!(
            "; torn landings (writes and reads in pieces) in {} runs, {} ops",
            self.torn, self.torn_ops
        )
    }

    /// The "runs with" line in Ridge's vocabulary: an ensemble's rank 0 is its initial
    /// coordinator; colocated, a group's rank 0 is its ensemble's, every server an acceptor,
    /// ranks beyond f distributors; dedicated, every server a distributor; a leader change is
    /// a coordinator's round after the first.
    pub(crate) fn describe_ridge(&self) -> String {
        let (median, least) = self.post_fault();
        format!(
            "runs with: mixed single- and multi-group traffic {}, retain under 256 decisions (trimming) {}, e_all acceptors spread over the groups {}, dedicated acceptors {}, coordinator crash {} (in several ensembles at the same instant {}), acceptor crash {}, distributor crash {}, client crash {}, crash in the middle of posting {}, false suspicion (initial coordinator paused past the timeout) {}, pause/slow {}, link delay {} (coordinator cut off from its acceptors {}), clock skew {}; new round after the first (takeover or fallback) {}, learner filled a gap from an acceptor {}, server halted {} ({} halts); multicasts ordered after the last fault: median {median} per run (least {least}){}",
            self.mixed_dest,
            self.small_retain,
            self.spread,
            self.dedicated,
            self.leader_crash,
            self.leaders_at_once,
            self.follower_crash,
            self.distributor_crash,
            self.client_crash,
            self.mid_post,
            self.false_suspicion,
            self.slow,
            self.link_delay,
            self.cut_off,
            self.clock_skew,
            self.leader_change,
            self.extra,
            self.halted_runs,
            self.halted_servers,
            self.describe_torn(),
        )
    }

    /// Heron's "runs with" line: the faults in the vocabulary of Heron over RamCast.
    pub(crate) fn describe_heron(&self) -> String {
        let (median, least) = self.post_fault();
        format!(
            "runs with: over Ridge {} (the others over RamCast), TPC-C {} (the others the key-value store), five replicas per partition {}, multicast leader crash (RamCast leader, Ridge coordinator) {}, other replica crash {}, crash in the middle of posting {}, client crash {}, false suspicion (leader paused past the timeout) {}, pause (laggard) {}, link delay {}, a fault after the first 900 us {}, queue pair broken while a laggard is served (transfer interrupted) {}; leader change happened {}, state transfers installed {}; requests completed that were issued after the last fault: median {median} per run (least {least}){}",
            self.over_ridge,
            self.tpcc,
            self.five_replicas,
            self.leader_crash,
            self.follower_crash,
            self.mid_post,
            self.client_crash,
            self.false_suspicion,
            self.slow,
            self.link_delay,
            self.late_fault,
            self.serve_broken,
            self.leader_change,
            self.extra,
            self.describe_torn(),
        )
    }

    /// The "runs with" line of a sweep's report; `extra` names the protocol-specific event.
    pub(crate) fn describe(&self, extra: Option<&str>) -> String {
        let mut s = format!(
            "runs with: leader crash {} (in several groups at the same instant {}), follower crash {}, client crash {}, crash in the middle of posting (partial multicast or proposal) {}, false suspicion (initial leader paused past the timeout) {}, pause/slow {}, link delay {} (leader cut off from its followers {}); leader change happened {}, deposed leader's write refused (revoke race) {}, server halted {} ({} halts)",
            self.leader_crash,
            self.leaders_at_once,
            self.follower_crash,
            self.client_crash,
            self.mid_post,
            self.false_suspicion,
            self.slow,
            self.link_delay,
            self.cut_off,
            self.leader_change,
            self.revoke_race,
            self.halted_runs,
            self.halted_servers,
        );
        if let Some(label) = extra {
            s.push_str(&format!(", {label} {}", self.extra));
        }
        let (median, least) = self.post_fault();
        s.push_str(&format!(
            "; multicasts ordered after the last fault: median {median} per run (least {least})"
        ));
        s.push_str(&self.describe_torn());
        s
    }
}

/// The shared verdict of a multicast run: halts judged, progress after the faults judged, then
/// the delivery log against the five properties. `nodes` are the run's processes (node `i` is
/// process `i`), `crashed` says who crashed, `faults` is the schedule.
pub(crate) fn judge<S: Server, C>(
    nodes: &[Node<S, C>],
    crashed: impl Fn(ProcessId) -> bool,
    faults: &[Fault],
    phases: &Phases,
    m: &impl Membership,
    out: &mut Outcome,
) {
    judge_progress(nodes, &crashed, faults, phases, out);
    let halted: Vec<ProcessId> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| match n {
            Node::Server(s) | Node::Auxiliary(s) if s.server.halted() => Some(ProcessId(i as u32)),
            _ => None,
        })
        .collect();
    out.halted = halted.len() as u64;
    out.violations
        .extend(judge_halts(&halted, &crashed, faults, m));
    let log = collect_log(nodes, &crashed);
    out.violations
        .extend(check(&log).into_iter().map(|v| v.to_string()));
    out.log = Some(log);
}

/// Liveness after failures: every correct client keeps multicasting through the liveness phase,
/// and must complete at least one multicast it started after the last fault stopped acting
/// (validity then requires every correct destination to deliver each of them). Counts, per
/// fault, the completed multicasts started after it.
fn judge_progress<S, C>(
    nodes: &[Node<S, C>],
    crashed: &impl Fn(ProcessId) -> bool,
    faults: &[Fault],
    phases: &Phases,
    out: &mut Outcome,
) {
    let ends: Vec<Nanos> = faults.iter().map(Fault::end).collect();
    out.after_each = vec![0; faults.len()];
    for n in nodes {
        let Node::Client(c) = n else { continue };
        let done = c.completions.as_deref().unwrap_or_default();
        for (k, &end) in ends.iter().enumerate() {
            out.after_each[k] += done.iter().filter(|d| d.sent_at >= end).count() as u64;
        }
        let after = done
            .iter()
            .filter(|d| d.sent_at >= phases.last_fault)
            .count() as u64;
        out.post_fault += after;
        if after == 0 && !crashed(c.id) && c.error.is_none() {
            out.violations.push(format!(
                "liveness after faults: correct client {} completed no multicast started after the last fault ended at {} (it multicast until {})",
                c.id, phases.last_fault, phases.load_end
            ));
        }
    }
}

/// Halts are outcomes, not crashes. A server halts when it was excluded while unresponsive and
/// finds its buffers recycled; only the schedule can make a correct server unresponsive (see
/// `impairs`), so a halt without such a fault is a failure. And a
/// group tolerates f faulty members: crashed and halted together must not exceed f.
pub(crate) fn judge_halts(
    halted: &[ProcessId],
    crashed: &impl Fn(ProcessId) -> bool,
    faults: &[Fault],
    m: &impl Membership,
) -> Vec<String> {
    let mut violations = Vec::new();
    for &p in halted {
        if !faults.iter().any(|f| impairs(f, p)) {
            violations.push(format!(
                "{p} halted, yet the schedule never paused, slowed or delayed it: a correct server stopped"
            ));
        }
    }
    for g in 0..m.group_count() {
        let g = GroupId(g as u8);
        let out: Vec<ProcessId> = (0..m.replica_count())
            .map(|r| m.server(g, r))
            .filter(|&p| crashed(p) || halted.contains(&p))
            .collect();
        if out.len() > m.f() {
            violations.push(format!(
                "group {g}: {} of its {} members crashed or halted ({}), more than f = {}",
                out.len(),
                m.replica_count(),
                out.iter()
                    .map(|p| format!(
                        "{p}{}",
                        if halted.contains(p) {
                            " halted"
                        } else {
                            " crashed"
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                m.f()
            ));
        }
    }
    violations
}

/// What a sweep's runs are simulated on: the hardware profile, the software profile, and
/// which runs tear their multi-word accesses.
#[derive(Clone, Debug)]
pub(crate) struct Model {
    pub(crate) profile: Profile,
    pub(crate) software: Software,
    pub(crate) torn: Torn,
    /// Run the seeds on the local runtime's threads instead (`check --runtime local`).
    pub(crate) local: Option<LocalCheck>,
}

/// Which runs of a sweep the simulator carries multi-word writes and reads out in pieces
/// (`harness check --torn`; see `transport::runtime::sim::Tearing`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Torn {
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
    #[cfg(test)]
    pub(crate) fn hardware(name: &str) -> Model {
        Model {
            profile: Profile::load(name).expect("built-in"),
            software: Software::none(),
            torn: Torn::Never,
            local: None,
        }
    }

    /// The built-in hardware profile `hardware` with the built-in software profile `software`.
    #[cfg(test)]
    pub(crate) fn priced(hardware: &str, software: &str) -> Model {
        Model {
            profile: Profile::load(hardware).expect("built-in"),
            software: Software::load(software).expect("built-in"),
            torn: Torn::Never,
            local: None,
        }
    }

    /// A simulation of `nodes` on this model from `seed`.
    pub(crate) fn config(&self, seed: u64) -> SimConfig {
        let mut sc = SimConfig::new(seed, self.profile.clone());
        sc.software = self.software.clone();
        sc.tearing = self.tearing(seed);
        sc
    }

    /// Whether and how `seed`'s run tears its multi-word accesses.
    pub(crate) fn tearing(&self, seed: u64) -> Option<Tearing> {
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
pub(crate) fn checking_load(
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
pub(crate) fn seeded_sim<P: Process<SimNic>>(
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
pub(crate) fn check_multicast<S, C>(
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
    let mut out = Outcome {
        events: sim.stats().events,
        torn_ops: sim.stats().torn_ops,
        ..Outcome::default()
    };
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
        if let Determinism::Diverged { first, second } = check_determinism(&build, Some(limit)) {
            out.divergence = Some(format!("first divergence: {first:?} / {second:?}"));
        }
    }
    out
}

/// The verdict on a multicast run's processes, on any runtime: every server's counters and
/// state (`state` describes a server), the clients' errors, then [`judge`].
fn judge_run<S: Server + Observed, C>(
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

/// The longest convergence phase of a local run: the simulator's [`CONVERGE`] stretched would
/// keep every seed running for seconds after its load, though threads catch up in far less
/// (the longest wait a stretched schedule holds, an eviction, stays under a second at 100x).
pub(crate) const LOCAL_CONVERGE: Nanos = Nanos(2_000_000_000);

/// How `harness check --runtime local` runs a seed on real threads: the seed's schedule, its
/// timeouts and its phases stretched from simulated to wall time, the faults a concurrent
/// runtime can apply, the NIC thread's interleaving.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LocalCheck {
    /// Wall nanoseconds per simulated nanosecond: real threads on shared cores are slower and
    /// noisier than the simulated hardware, and a descheduled thread must not look dead.
    pub(crate) stretch: u64,
    /// Remote ops on the NIC thread, completed asynchronously and in a random order across
    /// queue pairs.
    pub(crate) nic_thread: bool,
    /// Multi-word ops in pieces, the thread yielded between them (torn accesses likely).
    pub(crate) yield_words: bool,
}

impl Phases {
    /// The phases `k` times as long (a local run's wall-time phases), convergence cut to
    /// [`LOCAL_CONVERGE`] at most.
    pub(crate) fn stretched(&self, k: u64) -> Phases {
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
pub(crate) fn local_faults(faults: &[Fault], k: u64) -> Vec<Fault> {
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
pub(crate) fn check_multicast_local<S, C>(
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
    let lc = LocalConfig {
        seed,
        nic_thread: local.nic_thread,
        yield_words: local.yield_words,
        ..LocalConfig::default()
    };
    let run = run_local(lc, nodes, faults, phases.limit);
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
pub(crate) fn run_local<P: Process<LocalNic> + Send>(
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
pub(crate) trait SeedRun: Sized + Send {
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
    /// The derived parameters, printed for replay.
    fn describe(&self) -> String;
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
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Report {
    pub(crate) protocol: String,
    pub(crate) profile: String,
    /// The software profile (reports written before software profiles existed ran on none).
    #[serde(default = "no_software")]
    pub(crate) software: String,
    pub(crate) commit: String,
    /// Which seeds tore their accesses (reports written before tearing existed ran none).
    #[serde(default = "untorn")]
    pub(crate) torn: Torn,
    /// The sweep's `--first-seed` and `--seeds`, and the shard `(K, N)` this report covers.
    pub(crate) first: u64,
    pub(crate) seeds: u64,
    pub(crate) shard: (u64, u64),
    pub(crate) runs: u64,
    pub(crate) wall_s: f64,
    pub(crate) failed: Vec<u64>,
    pub(crate) tally: Tally,
}

/// [`Report::torn`] of a report that names none.
fn untorn() -> Torn {
    Torn::Never
}

/// [`Report::software`] of a report that names none.
fn no_software() -> String {
    transport::runtime::sim::DEFAULT_SOFTWARE.to_string()
}

impl Report {
    /// Sums shard reports of one sweep. Refuses reports of different protocols, profiles,
    /// commits or sweeps, and a shard given twice; says which shards are missing.
    pub(crate) fn merge(reports: Vec<Report>) -> Result<(Report, Vec<u64>), String> {
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

/// Runs the seeds on `jobs` threads and hands each run and its outcome to `each` in seed order,
/// so a sweep's report is the same on any number of threads (runs share nothing: each is
/// deterministic from its seed). Seeds go in batches of a few per thread; a passing run's
/// delivery log is dropped at once.
pub(crate) fn run_seeds<R: SeedRun>(
    seeds: &[u64],
    model: &Model,
    determinism: bool,
    jobs: usize,
    mut each: impl FnMut(u64, &R, &Outcome),
) -> Result<(), String> {
    use rayon::prelude::*;
    let pool = crate::figure::worker_pool(Some(jobs))?;
    for batch in seeds.chunks(jobs * 8) {
        let done: Vec<(R, Outcome)> = pool.install(|| {
            batch
                .par_iter()
                .map(|&seed| {
                    let run = R::derive(seed);
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

/// The message a panic carried (`panic!` with a literal or with a format).
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The run a sweep derived from `seed`, checked to be the one it derived then: its eviction
/// time (`evict_of`), drawn from the seed, is still `evict` nanoseconds. Pinned seeds use it, so
/// a change to how runs derive fails loudly instead of silently testing another schedule.
#[cfg(test)]
pub(crate) fn derived<R: SeedRun>(seed: u64, evict_of: fn(&R) -> Nanos, evict: u64) -> R {
    let run = R::derive(seed);
    assert_eq!(
        evict_of(&run),
        Nanos(evict),
        "seed {seed}: the derivation drifted"
    );
    run
}

/// Checks `run` on r320-cx3, the profile of the sweeps the pinned seeds came from, and asserts
/// it holds every property (for pinned regression tests); returns its outcome.
#[cfg(test)]
pub(crate) fn assert_passes<R: SeedRun>(run: &R) -> Outcome {
    assert_passes_on(run, "r320-cx3")
}

/// CI's lean sweep of `R`: seeds `0..N` on `model`, `N` from the environment variable `var`
/// (a longer sweep on demand) or `default`; a run with a violation or no delivery fails the
/// test, and `each` sees every run and its outcome for the caller's own assertions.
#[cfg(test)]
pub(crate) fn ci_sweep<R: SeedRun>(
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

/// [`assert_passes`] on the built-in profile `profile`.
#[cfg(test)]
pub(crate) fn assert_passes_on<R: SeedRun>(run: &R, profile: &str) -> Outcome {
    assert_passes_under(run, &Model::hardware(profile))
}

/// [`assert_passes`] on `model` (hardware and software profile); a failure prints the run,
/// its violations and every server's final state.
#[cfg(test)]
pub(crate) fn assert_passes_under<R: SeedRun>(run: &R, model: &Model) -> Outcome {
    let out = run.check(model, false);
    assert!(
        out.violations.is_empty(),
        "{}\n{:?}\n{}",
        run.describe(),
        out.violations,
        out.states.join("\n")
    );
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `--torn drawn` tears about half the seeds, with every piece size and order among them;
    /// `always` every seed with the same draw; `never` none.
    #[test]
    fn torn_policies_choose_the_seeds_that_tear() {
        let model = |torn| Model {
            torn,
            ..Model::hardware("r320-cx3")
        };
        let (drawn, always, never) = (model(Torn::Drawn), model(Torn::Always), model(Torn::Never));
        let mut kinds = std::collections::BTreeSet::new();
        let mut torn = 0;
        for seed in 0..400 {
            let t = always.tearing(seed).expect("always");
            kinds.insert(
                t.to_string()
                    .split('/')
                    .take(2)
                    .collect::<Vec<_>>()
                    .join("/"),
            );
            if let Some(d) = drawn.tearing(seed) {
                assert_eq!(d, t, "seed {seed}: drawn and always tear alike");
                torn += 1;
            }
            assert!(never.tearing(seed).is_none());
        }
        assert!((150..250).contains(&torn), "{torn} of 400 seeds torn");
        assert_eq!(kinds.len(), 4, "{kinds:?}");
    }

    /// The stretched phases keep their order and cap the convergence of a local run.
    #[test]
    fn a_local_run_stretches_the_schedule_and_keeps_crashes_and_pauses() {
        let p = Phases {
            last_fault: Nanos(1_000),
            load_end: Nanos(5_000),
            limit: Nanos(100_000_000),
        };
        let s = p.stretched(100);
        assert_eq!((s.last_fault, s.load_end), (Nanos(100_000), Nanos(500_000)));
        assert_eq!(s.limit, Nanos(500_000) + LOCAL_CONVERGE);
        let faults = [
            Fault::CrashMidPost {
                at: Nanos(7),
                process: ProcessId(1),
            },
            Fault::Pause {
                at: Nanos(3),
                process: ProcessId(2),
                duration: Nanos(5),
            },
            Fault::Slow {
                at: Nanos(1),
                process: ProcessId(0),
                duration: Nanos(5),
                factor: 2.0,
            },
        ];
        assert_eq!(
            local_faults(&faults, 10),
            vec![
                Fault::Crash {
                    at: Nanos(70),
                    process: ProcessId(1)
                },
                Fault::Pause {
                    at: Nanos(30),
                    process: ProcessId(2),
                    duration: Nanos(50)
                },
            ]
        );
    }

    /// A sweep's report on one thread and on two: every run's outcome, in seed order, and the
    /// tally line. TRAM runs are the longest-lived, so a batch finishes out of order.
    #[test]
    fn a_sweep_reports_the_same_on_one_thread_and_on_two() {
        let model = Model::hardware("r320-cx3");
        let seeds: Vec<u64> = (40..52).collect();
        let report = |jobs: usize| {
            let mut lines = Vec::new();
            let mut tally = Tally::default();
            run_seeds::<crate::protocols::tram::check::TramRun>(
                &seeds,
                &model,
                false,
                jobs,
                |s, r, o| {
                    tally.add(r.kinds(), o);
                    lines.push(format!(
                        "{s} {} {} {} {} {:?} {:?}",
                        o.events, o.delivered, o.post_fault, o.halted, o.after_each, o.violations
                    ));
                },
            )
            .expect("threads start");
            lines.push(tally.describe(None));
            lines
        };
        let one = report(1);
        assert_eq!(one.len(), seeds.len() + 1);
        assert_eq!(one, report(2));
    }

    /// The simulator's change hint only saves wall time: run again without it, seeds with
    /// faults of every kind go event for event the same (`check_determinism` withholds the hint
    /// on its second run).
    #[test]
    fn the_change_hint_changes_no_event_of_a_run() {
        let free = Model::hardware("r320-cx3");
        // Priced work too: what a protocol reports must not depend on what the hint skips.
        let priced = Model {
            software: priced_software(),
            ..free.clone()
        };
        for (seed, model) in (0..4)
            .map(|s| (s, &free))
            .chain((4..6).map(|s| (s, &priced)))
        {
            let runs = [
                crate::protocols::ramcast::check::RamcastRun::derive(seed).check(model, true),
                crate::protocols::tram::check::TramRun::derive(seed).check(model, true),
            ];
            for out in runs {
                assert_eq!(out.divergence, None, "seed {seed}");
                assert!(out.delivered > 0, "seed {seed} delivered nothing");
            }
        }
    }

    /// Two shards' reports, written as TOML, read back and merged, say what the whole sweep
    /// says; a shard given twice and a report of another sweep are refused.
    #[test]
    fn merged_shard_reports_are_the_whole_sweeps_report() {
        use crate::protocols::rdmc::check::RdmcRun;
        let model = Model::hardware("r320-cx3");
        let report = |shard: (u64, u64)| {
            let seeds: Vec<u64> = (0..10)
                .skip(shard.0 as usize)
                .step_by(shard.1 as usize)
                .collect();
            let mut r = Report {
                protocol: RdmcRun::PROTOCOL.into(),
                seeds: 10,
                shard,
                runs: seeds.len() as u64,
                ..Report::default()
            };
            run_seeds::<RdmcRun>(&seeds, &model, false, 1, |s, run, o| {
                r.tally.add(run.kinds(), o);
                if !o.violations.is_empty() {
                    r.failed.push(s);
                }
            })
            .expect("threads start");
            let text = toml::to_string(&r).expect("serialises");
            toml::from_str::<Report>(&text).expect("reads back")
        };
        let whole = report((0, 1));
        let (merged, missing) = Report::merge(vec![report((1, 2)), report((0, 2))]).unwrap();
        assert!(missing.is_empty());
        assert_eq!(
            (merged.runs, &merged.failed, merged.tally.describe(None)),
            (whole.runs, &whole.failed, whole.tally.describe(None))
        );
        assert_eq!(merged.tally.events, whole.tally.events);
        assert!(Report::merge(vec![report((0, 2)), report((0, 2))]).is_err());
        assert!(Report::merge(vec![report((0, 2)), whole]).is_err());
    }

    /// The halt verdict on hand-made outcomes: one group of three (f = 1), process 1 halted.
    #[test]
    fn halts_are_judged_against_the_schedule_and_f() {
        let m = ramcast::Config::new(1, 3, 1);
        let none = |_: ProcessId| false;
        let halted = [ProcessId(1)];
        let paused = Fault::Pause {
            at: Nanos(10),
            process: ProcessId(1),
            duration: Nanos(1_000_000),
        };
        // Paused by the schedule, alone in its group: an outcome, not a failure.
        assert!(judge_halts(&halted, &none, std::slice::from_ref(&paused), &m).is_empty());
        // Nothing in the schedule touched it: a correct server stopped.
        let other = Fault::Pause {
            at: Nanos(10),
            process: ProcessId(2),
            duration: Nanos(1_000_000),
        };
        let v = judge_halts(&halted, &none, &[other], &m);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("never paused"), "{v:?}");
        // A crash beside the halt: two of three members gone, more than f = 1.
        let crashed = |p: ProcessId| p == ProcessId(0);
        let v = judge_halts(&halted, &crashed, &[paused], &m);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("more than f = 1"), "{v:?}");
    }

    fn us(x: u64) -> Nanos {
        Nanos(x * 1_000)
    }

    /// Overlapping spans join; a gap between two splits them.
    #[test]
    fn impairments_join_where_they_overlap() {
        let span = |a, b| (us(a), us(b));
        assert_eq!(longest_impairment(&[]), Nanos::ZERO);
        assert_eq!(
            longest_impairment(&[span(3810, 5531), span(1064, 2255), span(1064, 5828)]),
            us(5531 - 1064).max(us(5828 - 1064))
        );
        assert_eq!(
            longest_impairment(&[span(0, 1000), span(1500, 2000)]),
            us(1000)
        );
    }

    /// RamCast seed 4707 as the drawer once drew it: one group of three (f = 1), p2 crashed,
    /// and p0 paused with its inbound links slowed (the revoke race) and paused again. Each
    /// fault is shorter than the eviction time (3400 us), their union is not, so p0 counts
    /// against f once it joins: with p2 down the group has no room, and the drawer refuses it.
    #[test]
    fn impairments_that_together_outlast_eviction_count_against_f() {
        let m = ramcast::Config::new(1, 3, 3);
        let (p0, p1, p2) = (ProcessId(0), ProcessId(1), ProcessId(2));
        let evict = Nanos(3_399_508);
        let suspect = us(300);
        let crash = [Fault::Crash {
            at: us(2971),
            process: p2,
        }];
        let pause = |at, d| Fault::Pause {
            at: us(at),
            process: p0,
            duration: us(d),
        };
        let slowed_into_p0 = |from| Fault::LinkDelay {
            at: us(1064),
            from,
            to: p0,
            duration: us(3573),
            delay: us(1191),
            jitter: Nanos::ZERO,
        };
        let revoke_race = [pause(1064, 1191), slowed_into_p0(p1), slowed_into_p0(p2)];
        let mut drawn = Impairments::new(&m, &crash, evict, suspect);
        // The second pause alone is shorter than the eviction time: it fits beside the crash.
        assert!(drawn.admit(&[pause(3810, 1721)], |_| true, &m));
        // The revoke race joins it into 4.7 ms: p0 would be a second faulty member.
        assert!(!drawn.admit(&revoke_race, |p| p == p0, &m));
        // Without the crash the group has room for p0.
        let mut roomy = Impairments::new(&m, &[], evict, suspect);
        assert!(roomy.admit(&[pause(3810, 1721)], |_| true, &m));
        assert!(roomy.admit(&revoke_race, |p| p == p0, &m));
        assert_eq!(roomy.faulty[0], vec![p0]);
    }

    /// TRAM seed 4475 as the drawer once drew it: with a short eviction time, a slowed link
    /// between two members of a group (f = 1) impairs both ends, so it does not fit; and the
    /// halt of the sender behind it is an outcome, not a correct server stopped.
    #[test]
    fn a_slowed_link_impairs_both_of_its_ends() {
        let m = ramcast::Config::new(1, 3, 6);
        let (p0, p1) = (ProcessId(0), ProcessId(1));
        let link = Fault::LinkDelay {
            at: us(962),
            from: p0,
            to: p1,
            duration: us(1849),
            delay: us(783),
            jitter: Nanos::ZERO,
        };
        assert!(impairs(&link, p0) && impairs(&link, p1) && !impairs(&link, ProcessId(2)));
        let mut short = Impairments::new(&m, &[], Nanos(980_965), us(300));
        assert!(!short.admit(std::slice::from_ref(&link), |_| true, &m));
        let mut long = Impairments::new(&m, &[], Nanos(5_000_000), us(300));
        assert!(long.admit(std::slice::from_ref(&link), |_| true, &m));
        assert!(long.faulty[0].is_empty());
        let none = |_: ProcessId| false;
        assert!(judge_halts(&[p0], &none, &[link], &m).is_empty());
    }

    /// A software profile with every kind of work priced (round numbers, not a calibration).
    pub(crate) fn priced_software() -> Software {
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
}
