//! The fault schedule a seed draws: the run's phases, its faults (crashes, pauses, slow
//! processes, link delays, revokes, cut-off leaders) and the kinds of fault a run holds.

use multicast::{GroupId, Membership};
use std::collections::BTreeSet;
use transport::rng::{Purpose, Rng};
use transport::runtime::sim::Fault;
use transport::{Nanos, ProcessId};

/// The convergence phase after the liveness phase: no new multicasts, faults over, every
/// correct process must catch up.
pub const CONVERGE: Nanos = Nanos(60_000_000);

/// How long clients keep multicasting after the last fault ended and the eviction time passed:
/// the liveness phase, so ordering after failures is exercised, not only recovery.
pub const LIVE: Nanos = Nanos(3_000_000);

/// The phases of a checking run: faults until `last_fault` (when the last one stopped acting),
/// multicasts until `load_end`, then convergence until `limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phases {
    /// When the last fault stopped acting.
    pub last_fault: Nanos,
    /// When the clients stop starting multicasts.
    pub load_end: Nanos,
    /// When the run ends (convergence over).
    pub limit: Nanos,
}

impl Phases {
    /// The phases of a run whose faults start within `fault_phase`, with eviction time `evict`
    /// that the protocol may have to wait out `stages` times in a row after the last fault (a
    /// TRAM message crosses the groups of a tree path, each of whose leaders may still wait for
    /// a crashed member).
    pub fn of(fault_phase: Nanos, faults: &[Fault], evict: Nanos, stages: u64) -> Phases {
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

    /// The phases of a run with `faults` whose multicasts stop at `load_end` (a run read back
    /// from its line, [`super::spec`]).
    pub fn until(faults: &[Fault], load_end: Nanos) -> Phases {
        Phases {
            last_fault: faults.iter().map(Fault::end).max().unwrap_or(Nanos::ZERO),
            load_end,
            limit: load_end.saturating_add(CONVERGE),
        }
    }
}

/// A run's eviction time, fault schedule and phases, all drawn from its seed.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The eviction time: how long a member may be unresponsive before it is removed.
    pub evict: Nanos,
    /// The faults, in the simulator's terms.
    pub faults: Vec<Fault>,
    /// The run's phases.
    pub phases: Phases,
}

/// Draws a run's [`Schedule`]: the eviction time (`draw_evict`, `stall` being how long a
/// correct member may wait through a failover), the faults of `fault_phase` (`draw_faults`),
/// and the phases, with `stages` evictions in a row allowed after the last fault.
pub fn draw_schedule(
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
pub(super) fn draw_evict(seed: u64, stall: Nanos, suspect: Nanos) -> Nanos {
    let mut rng = Rng::derive(seed, Purpose::Faults, 1);
    if rng.chance(1.0 / 3.0) {
        Nanos(stall.as_nanos() + suspect.as_nanos() + rng.below(suspect.as_nanos() * 2))
    } else {
        Nanos(EVICT_LONG.as_nanos() + rng.below(7_000_000))
    }
}

/// The shortest of the long eviction times: above every pause and delay the schedule draws.
pub(super) const EVICT_LONG: Nanos = Nanos(3_000_000);

/// Whether a run's eviction time is within reach of its pauses and delays (see [`draw_faults`]).
pub(super) fn evict_is_short(evict: Nanos) -> bool {
    evict < EVICT_LONG
}

/// Whether the schedule makes server `p` unresponsive, so that it may fall behind, be excluded
/// from recycling and halt: a pause or slowdown of its own, or a delayed link at either end of
/// it. A link out of `p` counts whatever its other end: to a client, `p`'s reports arrive late;
/// to a member of its group, `p` looks silent to it (TRAM seed 4475: a leader whose heartbeats
/// crawled to its follower was deposed, fell a log behind and halted).
pub fn impairs(f: &Fault, p: ProcessId) -> bool {
    match *f {
        Fault::Pause { process, .. } | Fault::Slow { process, .. } => process == p,
        Fault::LinkDelay { from, to, .. } => to == p || from == p,
        Fault::Crash { .. } | Fault::CrashMidPost { .. } | Fault::Revoke { .. } => false,
    }
}

/// Whether `f` crashes `p`, at once or in the middle of posting.
pub fn crashes(f: &Fault, p: ProcessId) -> bool {
    matches!(*f, Fault::Crash { process, .. } | Fault::CrashMidPost { process, .. } if process == p)
}

/// The time span over which an impairing fault (see [`impairs`]) acts on a server, its end
/// taken late: a delayed link's last message lands `delay` after the window closes.
pub(super) fn impaired_span(f: &Fault) -> (Nanos, Nanos) {
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
pub(super) fn longest_impairment(spans: &[(Nanos, Nanos)]) -> Nanos {
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

/// The streams a sweep derives from a seed apart from the protocols' own. A protocol's
/// `SeedRun::derive` draws its parameters from `Purpose::Workload` streams of its own, entities
/// counted down from `u64::MAX` (RamCast `MAX - 1` and `- 9`, TRAM `- 2`, RDMC `- 3`, Ridge
/// `- 4`, `- 5` and `- 7`, Heron `- 8`): clear of the clients' workload streams, whose entities
/// are process ids.
pub mod params_stream {
    /// Every protocol: whether and how the simulator tears the run's multi-word accesses
    /// (a `Purpose::Scheduler` stream, drawn apart from the run's other parameters, so adding
    /// it changed none of them).
    pub const TEARING: u64 = u64::MAX - 6;
}

/// Kinds of fault a run contains, for the sweep's counts.
#[derive(Clone, Debug, Default)]
pub struct Kinds {
    /// A group's leader crashes.
    pub leader_crash: bool,
    /// Initial leaders of two or more groups crash at the same instant.
    pub leaders_at_once: bool,
    /// A follower crashes.
    pub follower_crash: bool,
    /// A client crashes.
    pub client_crash: bool,
    /// A crash in the middle of posting (a client's multicast reaching some destinations only,
    /// a leader's proposal reaching some followers only).
    pub mid_post: bool,
    /// A pause long enough for a correct process to be suspected.
    pub false_suspicion: bool,
    /// A process runs slower for a while.
    pub slow: bool,
    /// A link delays what it carries for a while.
    pub link_delay: bool,
    /// A group's initial leader cut off from its followers by slow links (`cut_off_leader`).
    pub cut_off: bool,
    /// The protocol's own kinds the run has, by name (Ridge's `clock_skew`, Heron's `tpcc`):
    /// the sweep counts them and the protocol's tally line reads them back.
    pub own: Vec<&'static str>,
}

impl Kinds {
    /// Notes the protocol's own kind `name` if the run has it.
    pub fn mark(&mut self, name: &'static str, has: bool) {
        if has && !self.has(name) {
            self.own.push(name);
        }
    }

    /// Whether the run has the protocol's own kind `name`.
    pub fn has(&self, name: &str) -> bool {
        self.own.contains(&name)
    }
}

/// The kinds of fault in `faults`; a pause of a group's initial leader longer than `suspect`
/// is a false suspicion (a paused follower is suspected by nobody: it is a pause).
pub fn kinds(faults: &[Fault], m: &impl Membership, suspect: Nanos) -> Kinds {
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
                k.cut_off |= delay >= Nanos(suspect.as_nanos().saturating_mul(3))
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
pub(super) fn draw_faults(
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
pub(super) struct Impairments {
    /// Whether every impairment counts (a short eviction time).
    evict_short: bool,
    /// The longest a server may stay impaired without counting (long eviction times).
    tolerated: Nanos,
    /// Per group, the members counted against f.
    pub(super) faulty: Vec<Vec<ProcessId>>,
    /// Per server, the spans over which admitted faults impair it.
    spans: Vec<Vec<(Nanos, Nanos)>>,
}

impl Impairments {
    /// The crashes in `crashes` counted, no impairment yet.
    pub(super) fn new(
        m: &impl Membership,
        crashes: &[Fault],
        evict: Nanos,
        suspect: Nanos,
    ) -> Self {
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
    pub(super) fn admit(
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
            let crashed = faults.iter().any(|f| crashes(f, p));
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
pub(super) fn cut_off_leader(
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
pub(super) fn crash(rng: &mut Rng, horizon: u64, process: ProcessId) -> Fault {
    let at = Nanos(rng.below(horizon));
    if rng.chance(0.5) {
        Fault::CrashMidPost { at, process }
    } else {
        Fault::Crash { at, process }
    }
}
