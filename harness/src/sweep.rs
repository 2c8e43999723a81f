//! What every protocol's `harness check` sweep shares: the fault schedule drawn from a seed,
//! the kinds of fault a run holds, a run's outcome, and the sweep's tally.

use multicast::{check, collect_log, DeliveryLog, GroupId, Membership, Node, Server};
use transport::rng::{Purpose, Rng};
use transport::runtime::sim::Fault;
use transport::{Nanos, ProcessId};

/// The convergence phase after the fault phase: no new multicasts, faults over, every correct
/// process must catch up.
pub(crate) const CONVERGE: Nanos = Nanos(60_000_000);

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
}

/// The kinds of fault in `faults`; a pause longer than `suspect` is a false suspicion.
pub(crate) fn kinds(faults: &[Fault], m: &impl Membership, suspect: Nanos) -> Kinds {
    let mut k = Kinds::default();
    let mut leader_crashes: Vec<(Nanos, GroupId)> = Vec::new();
    for f in faults {
        match *f {
            Fault::Crash { process, at } | Fault::CrashMidPost { process, at } => {
                match m.group_of(process) {
                    None => k.client_crash = true,
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
            } if duration > suspect && m.group_of(process).is_some() => k.false_suspicion = true,
            Fault::Pause { .. } | Fault::Slow { .. } => k.slow = true,
            Fault::LinkDelay { .. } => k.link_delay = true,
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
/// posting (a partial multicast or proposal), pauses of servers long enough to be suspected
/// (false suspicions), slow processes and delayed links, all within the fault phase. With
/// `at_once`, some runs also crash the initial leaders of several groups at one instant, and
/// some pause a group's initial leader while its group's messages to it are slowed down, so it
/// resumes before it learns it was replaced and writes with a revoked permission.
pub(crate) fn draw_faults(
    seed: u64,
    m: &impl Membership,
    suspect: Nanos,
    phase: Nanos,
    at_once: bool,
) -> Vec<Fault> {
    let mut rng = Rng::derive(seed, Purpose::Faults, 0);
    let h = phase.as_nanos();
    let mut faults = Vec::new();
    // Groups whose initial leader crashes together with others', if this run has such an event.
    let mut together = 0u64;
    let mut together_at = Nanos::ZERO;
    if at_once && m.group_count() > 1 && m.f() > 0 && rng.chance(0.4) {
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
    let servers = m.servers() as u64;
    for _ in 0..rng.below(5) {
        let at = Nanos(rng.below(h));
        let p = ProcessId(rng.below(servers) as u32);
        faults.push(match rng.below(3) {
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
                delay: Nanos(rng.below(50_000)),
                jitter: Nanos(rng.below(10_000)),
            },
        });
    }
    if at_once && m.f() > 0 && rng.chance(0.3) {
        let g = GroupId(rng.below(m.group_count() as u64) as u8);
        let leader = m.server(g, 0);
        let at = Nanos(rng.below(h));
        let pause = Nanos(suspect.as_nanos() * 2 + rng.below(suspect.as_nanos() * 2));
        faults.push(Fault::Pause {
            at,
            process: leader,
            duration: pause,
        });
        for r in 1..m.replica_count() {
            faults.push(Fault::LinkDelay {
                at,
                from: m.server(g, r),
                to: leader,
                duration: Nanos(pause.as_nanos() * 3),
                delay: pause,
                jitter: Nanos(rng.below(10_000)),
            });
        }
    }
    faults.sort_by_key(|f| f.at());
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
    /// A protocol-specific event count (RamCast: messages relayed for suspected clients).
    pub(crate) extra: u64,
    pub(crate) divergence: Option<String>,
    pub(crate) log: Option<DeliveryLog>,
    /// Each server's final state, for failure reports.
    pub(crate) states: Vec<String>,
}

/// Counts over a sweep: how many runs had each fault kind and each protocol event.
#[derive(Clone, Copy, Debug, Default)]
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
    leader_change: u64,
    revoke_race: u64,
    halted_runs: u64,
    halted_servers: u64,
    pub(crate) extra: u64,
}

impl Tally {
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
        self.leader_change += n(out.leader_changes);
        self.revoke_race += n(out.refused_writes > 0);
        self.halted_runs += n(out.halted > 0);
        self.halted_servers += out.halted;
        self.extra += n(out.extra > 0);
    }

    /// The "runs with" line of a sweep's report; `extra` names the protocol-specific event.
    pub(crate) fn describe(&self, extra: Option<&str>) -> String {
        let mut s = format!(
            "runs with: leader crash {} (in several groups at the same instant {}), follower crash {}, client crash {}, crash in the middle of posting (partial multicast or proposal) {}, false suspicion (server paused past the timeout) {}, pause/slow {}, link delay {}; leader change happened {}, deposed leader's write refused (revoke race) {}, server halted {} ({} halts)",
            self.leader_crash,
            self.leaders_at_once,
            self.follower_crash,
            self.client_crash,
            self.mid_post,
            self.false_suspicion,
            self.slow,
            self.link_delay,
            self.leader_change,
            self.revoke_race,
            self.halted_runs,
            self.halted_servers,
        );
        if let Some(label) = extra {
            s.push_str(&format!(", {label} {}", self.extra));
        }
        s
    }
}

/// The shared verdict of a multicast run: halts judged, then the delivery log against the five
/// properties. `nodes` are the run's processes (node `i` is process `i`), `crashed` says who
/// crashed, `faults` is the schedule.
pub(crate) fn judge<S: Server, C>(
    nodes: &[Node<S, C>],
    crashed: impl Fn(ProcessId) -> bool,
    faults: &[Fault],
    m: &impl Membership,
    out: &mut Outcome,
) {
    let halted: Vec<ProcessId> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| match n {
            Node::Server(s) if s.server.halted() => Some(ProcessId(i as u32)),
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

/// Halts are outcomes, not crashes. A server halts when it was excluded while unresponsive and
/// finds its buffers recycled; only the schedule can make a correct server unresponsive (a
/// pause, a slowdown, a delayed link of its own), so a halt without one is a failure. And a
/// group tolerates f faulty members: crashed and halted together must not exceed f.
pub(crate) fn judge_halts(
    halted: &[ProcessId],
    crashed: &impl Fn(ProcessId) -> bool,
    faults: &[Fault],
    m: &impl Membership,
) -> Vec<String> {
    let impairs = |f: &Fault, p: ProcessId| match *f {
        Fault::Pause { process, .. } | Fault::Slow { process, .. } => process == p,
        Fault::LinkDelay { from, to, .. } => from == p || to == p,
        Fault::Crash { .. } | Fault::CrashMidPost { .. } | Fault::Revoke { .. } => false,
    };
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
                    .map(|p| format!("{p}{}", if crashed(*p) { " crashed" } else { " halted" }))
                    .collect::<Vec<_>>()
                    .join(", "),
                m.f()
            ));
        }
    }
    violations
}

/// One seeded checking run of a protocol, as `harness check` drives it.
pub(crate) trait SeedRun: Sized {
    /// The protocol's name on the command line.
    const PROTOCOL: &'static str;
    /// The label of [`Outcome::extra`] in the report, if the protocol counts one.
    const EXTRA: Option<&'static str>;
    /// Derives every parameter of the run from `seed`.
    fn derive(seed: u64) -> Self;
    /// The derived parameters, printed for replay.
    fn describe(&self) -> String;
    /// The kinds of fault the run injects.
    fn kinds(&self) -> Kinds;
    /// Runs it (twice with `determinism`) and checks the protocol's properties.
    fn check(&self, profile: &transport::runtime::sim::Profile, determinism: bool) -> Outcome;
    /// The sweep's "runs with" line.
    fn tally_line(t: &Tally) -> String {
        t.describe(Self::EXTRA)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
