//! Faults the simulator injects, scheduled explicitly or drawn from the seed, and how the
//! simulator applies each when its time comes.

use super::{qp_of, ActiveLink, Event, Sim, SimNic};
use crate::process::{Process, ProcessId};
use crate::region::{Access, RegionId};
use crate::rng::{mix64, Purpose, Rng};
use crate::runtime::fault_text::FaultText;
use crate::time::Nanos;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// One fault.
///
/// Its text form ([`fmt::Display`], [`FromStr`]) is the harness's `--fault` form for real
/// runtimes, exact to the nanosecond, with process ids as numbers: `kill:P@T` ([`Fault::Crash`]),
/// `kill-posting:P@T` ([`Fault::CrashMidPost`]), `pause:P@T+D`, `slow:P@T+D=FACTOR`,
/// `delay:FROM>TO@T+D=DELAY~JITTER` ([`Fault::LinkDelay`]; `~JITTER` may be left out) and
/// `revoke:PEER>OWNER@T+D=REGION` (the peer's ops into the owner's region are refused). A
/// schedule a sweep drew is printed in it and replays from it.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// The process stops for good at `at`: it is never polled again, ops to it fail with
    /// `PeerUnreachable`, and of the ops it had posted that are still in flight, each of its
    /// queue pairs delivers a prefix (its length drawn from the seed, possibly empty) and loses
    /// the rest, as a NIC whose host died mid-transmission.
    Crash {
        /// When.
        at: Nanos,
        /// Who.
        process: ProcessId,
    },
    /// The process crashes while posting: right after its first poll at or after `at` that
    /// posts ops, it stops as [`Fault::Crash`], so of those ops each queue pair delivers a
    /// prefix and loses the rest. A client crashing in the middle of a multicast leaves its
    /// message at any subset of its destinations; a leader crashing mid-proposal, its proposal
    /// at any subset of its followers and the other groups' leaders.
    CrashMidPost {
        /// From when.
        at: Nanos,
        /// Who.
        process: ProcessId,
    },
    /// The process is not polled during `[at, at + duration)` (a GC pause, a descheduled thread).
    Pause {
        /// When.
        at: Nanos,
        /// Who.
        process: ProcessId,
        /// How long.
        duration: Nanos,
    },
    /// Every CPU cost of the process is multiplied by `factor` during `[at, at + duration)`
    /// (a laggard).
    Slow {
        /// When.
        at: Nanos,
        /// Who.
        process: ProcessId,
        /// How long.
        duration: Nanos,
        /// CPU slowdown, > 1.
        factor: f64,
    },
    /// Ops from `from` to `to` take `delay` plus up to `jitter` (uniform) longer during
    /// `[at, at + duration)`. Per-pair order is still kept, as on an RC queue pair.
    LinkDelay {
        /// When.
        at: Nanos,
        /// Sender.
        from: ProcessId,
        /// Receiver.
        to: ProcessId,
        /// How long.
        duration: Nanos,
        /// Fixed extra delay.
        delay: Nanos,
        /// Maximum random extra delay.
        jitter: Nanos,
    },
    /// `owner` revokes `peer`'s access to `region` at `at`, whatever is in flight, and restores
    /// the declared access after `duration`. In-flight writes of `peer` that land in between
    /// fail with `AccessDenied` and break its queue pair.
    Revoke {
        /// When.
        at: Nanos,
        /// The region's owner.
        owner: ProcessId,
        /// The region.
        region: RegionId,
        /// The peer losing access.
        peer: ProcessId,
        /// How long until the declared access is restored.
        duration: Nanos,
    },
}

impl Fault {
    /// When the fault starts.
    pub fn at(&self) -> Nanos {
        match self {
            Fault::Crash { at, .. }
            | Fault::CrashMidPost { at, .. }
            | Fault::Pause { at, .. }
            | Fault::Slow { at, .. }
            | Fault::LinkDelay { at, .. }
            | Fault::Revoke { at, .. } => *at,
        }
    }

    /// When the fault stops acting: a crash at once, a pause, slowdown, delay or revoke at
    /// its end.
    pub fn end(&self) -> Nanos {
        match *self {
            Fault::Crash { at, .. } | Fault::CrashMidPost { at, .. } => at,
            Fault::Pause { at, duration, .. }
            | Fault::Slow { at, duration, .. }
            | Fault::LinkDelay { at, duration, .. }
            | Fault::Revoke { at, duration, .. } => at.saturating_add(duration),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let span = |at: &Nanos, d: &Nanos| format!("{}+{}", at.exact(), d.exact());
        match self {
            Fault::Crash { at, process } => write!(f, "kill:{}@{}", process.0, at.exact()),
            Fault::CrashMidPost { at, process } => {
                write!(f, "kill-posting:{}@{}", process.0, at.exact())
            }
            Fault::Pause {
                at,
                process,
                duration,
            } => write!(f, "pause:{}@{}", process.0, span(at, duration)),
            Fault::Slow {
                at,
                process,
                duration,
                factor,
            } => write!(f, "slow:{}@{}={factor}", process.0, span(at, duration)),
            Fault::LinkDelay {
                at,
                from,
                to,
                duration,
                delay,
                jitter,
            } => write!(
                f,
                "delay:{}>{}@{}={}~{}",
                from.0,
                to.0,
                span(at, duration),
                delay.exact(),
                jitter.exact()
            ),
            Fault::Revoke {
                at,
                owner,
                region,
                peer,
                duration,
            } => write!(
                f,
                "revoke:{}>{}@{}={}",
                peer.0,
                owner.0,
                span(at, duration),
                region.0
            ),
        }
    }
}

/// What [`Fault`]'s text form may be, for errors.
const FAULT_USAGE: &str = "a simulated fault is kill:P@T, kill-posting:P@T, pause:P@T+D, slow:P@T+D=FACTOR, delay:FROM>TO@T+D=DELAY~JITTER or revoke:PEER>OWNER@T+D=REGION (processes by number, times with units), e.g. kill:3@1.5ms, slow:2@1ms+500us=2.5, delay:0>4@2ms+1ms=20us~5us";

impl FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Fault, String> {
        let usage = |why: String| format!("{why}: {FAULT_USAGE}");
        let t = FaultText::parse(s).map_err(usage)?;
        let bad = |what: &str| usage(format!("`{s}`: {what}"));
        let process = |p: &str| {
            p.parse::<u32>()
                .map(ProcessId)
                .map_err(|_| bad(&format!("`{p}` is not a process number")))
        };
        let link = || match t.who.split_once('>') {
            Some((a, b)) => Ok((process(a)?, process(b)?)),
            None => Err(bad("a link is FROM>TO")),
        };
        let at = t.at;
        Ok(match (t.kind, t.span, t.value) {
            ("kill", None, None) => Fault::Crash {
                at,
                process: process(t.who)?,
            },
            ("kill-posting", None, None) => Fault::CrashMidPost {
                at,
                process: process(t.who)?,
            },
            ("pause", Some(duration), None) => Fault::Pause {
                at,
                process: process(t.who)?,
                duration,
            },
            ("slow", Some(duration), Some(v)) => Fault::Slow {
                at,
                process: process(t.who)?,
                duration,
                factor: match v.parse::<f64>() {
                    Ok(x) if x.is_finite() && x >= 1.0 => x,
                    _ => return Err(bad("a slowdown factor is a number of at least 1")),
                },
            },
            ("delay", Some(duration), Some(v)) => {
                let (from, to) = link()?;
                let (delay, jitter) = v.split_once('~').unwrap_or((v, "0ns"));
                Fault::LinkDelay {
                    at,
                    from,
                    to,
                    duration,
                    delay: delay.parse()?,
                    jitter: jitter.parse()?,
                }
            }
            ("revoke", Some(duration), Some(v)) => {
                let (peer, owner) = link()?;
                Fault::Revoke {
                    at,
                    owner,
                    region: RegionId(
                        v.parse()
                            .map_err(|_| bad(&format!("`{v}` is not a region number")))?,
                    ),
                    peer,
                    duration,
                }
            }
            _ => return Err(bad("unknown kind, or a duration or value missing or extra")),
        })
    }
}

/// Bounds on the faults [`random_faults`] draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FaultBudget {
    /// Faults happen in `[0, horizon)`.
    pub horizon: Nanos,
    /// Most processes that may crash (keep within the protocol's `f`).
    pub max_crashes: usize,
    /// Number of non-crash faults to draw.
    pub transient: usize,
    /// Regions per process that revokes may target (`0` disables revokes).
    pub revocable_regions: u16,
}

/// Draws a fault schedule from the run's seed (stream [`Purpose::Faults`]), so the same seed
/// always injects the same faults and fault settings never perturb protocol randomness.
pub fn random_faults(seed: u64, processes: usize, budget: FaultBudget) -> Vec<Fault> {
    let mut rng = Rng::derive(seed, Purpose::Faults, 0);
    let n = processes as u64;
    let h = budget.horizon.as_nanos().max(1);
    let mut faults = Vec::new();
    if n == 0 {
        return faults;
    }
    let crashes = rng.below(budget.max_crashes as u64 + 1) as usize;
    let mut crashed: Vec<u32> = Vec::new();
    while crashed.len() < crashes.min(processes) {
        let p = rng.below(n) as u32;
        if !crashed.contains(&p) {
            crashed.push(p);
            faults.push(Fault::Crash {
                at: Nanos(rng.below(h)),
                process: ProcessId(p),
            });
        }
    }
    for _ in 0..budget.transient {
        let at = Nanos(rng.below(h));
        let p = ProcessId(rng.below(n) as u32);
        let q = ProcessId(rng.below(n) as u32);
        let duration = Nanos(rng.range_inclusive(h / 100 + 1, h / 5 + 1));
        let kinds = if budget.revocable_regions > 0 { 4 } else { 3 };
        faults.push(match rng.below(kinds) {
            0 => Fault::Pause {
                at,
                process: p,
                duration,
            },
            1 => Fault::Slow {
                at,
                process: p,
                duration,
                factor: 1.0 + rng.unit_f64() * 9.0,
            },
            2 => Fault::LinkDelay {
                at,
                from: p,
                to: q,
                duration,
                delay: Nanos(rng.below(20_000)),
                jitter: Nanos(rng.below(5_000)),
            },
            _ => Fault::Revoke {
                at,
                owner: p,
                region: RegionId(rng.below(budget.revocable_regions as u64) as u16),
                peer: q,
                duration,
            },
        });
    }
    faults.sort_by_key(|f| f.at());
    faults
}

/// Applying a fault when its time comes.
impl<P: Process<SimNic>> Sim<P> {
    /// Process `p` stops for good ([`Fault::Crash`]).
    pub(super) fn crash(&mut self, p: usize) {
        let cpu = &mut self.cpus[p];
        if cpu.crashed {
            return;
        }
        cpu.crashed = true;
        if !cpu.done {
            cpu.done = true;
            self.not_done -= 1;
        }
        self.lose_in_flight(p as u32);
    }

    /// A crashed process's NIC stops mid-transmission: each of its queue pairs still delivers a
    /// prefix of its in-flight ops (RC order holds within a queue pair), of a length drawn from
    /// the seed; the rest is lost. Across queue pairs nothing is ordered, so a multicast or a
    /// proposal cut short reaches any subset of its destinations.
    fn lose_in_flight(&mut self, p: u32) {
        let mut per_qp: BTreeMap<usize, Vec<(u64, u32)>> = BTreeMap::new();
        for (slot, f) in self.inflight.iter().enumerate() {
            if let Some(f) = f.as_ref().filter(|f| f.src == p && !f.landing) {
                let k = qp_of(f.posted.op.peer().0, &f.posted.op);
                per_qp
                    .entry(k)
                    .or_default()
                    .push((f.posted.wr.0, slot as u32));
            }
        }
        for (k, mut ops) in per_qp {
            ops.sort_unstable();
            let draw = mix64(self.cfg.seed ^ (p as u64) << 40 ^ (k as u64) << 8 ^ self.now.0);
            let keep = (draw % (ops.len() as u64 + 1)) as usize;
            self.digest.fold(0xC4A5 ^ (k as u64) << 16 ^ keep as u64);
            for &(_, slot) in &ops[keep..] {
                if let Some(f) = self.inflight[slot as usize].as_mut() {
                    f.lost = true;
                }
            }
        }
    }

    pub(super) fn fault(&mut self, index: usize) -> u32 {
        let now = self.now;
        let fault = self.cfg.faults[index].clone();
        self.digest.fold(0xFA17 ^ index as u64);
        match fault {
            Fault::Crash { process, .. } => {
                self.crash(process.index());
                process.0
            }
            Fault::CrashMidPost { process, .. } => {
                self.cpus[process.index()].crash_on_post = true;
                process.0
            }
            Fault::Pause {
                process, duration, ..
            } => {
                let cpu = &mut self.cpus[process.index()];
                cpu.paused_until = cpu.paused_until.max(now + duration);
                if cpu.scheduled.is_some() {
                    // Move the pending poll past the pause.
                    cpu.scheduled = None;
                    self.wake(process.0, now);
                }
                process.0
            }
            Fault::Slow {
                process,
                duration,
                factor,
                at,
            } => {
                // A fault with a duration starts a slowdown; its zero-duration follow-up ends it.
                if now == at && duration > Nanos::ZERO {
                    self.nics[process.index()].slow = factor.max(1.0);
                    // Schedule the end of the slowdown as a follow-up fault event.
                    self.cfg.faults.push(Fault::Slow {
                        at: now + duration,
                        process,
                        duration: Nanos::ZERO,
                        factor: 1.0,
                    });
                    let i = self.cfg.faults.len() - 1;
                    self.schedule(now + duration, Event::Fault { index: i as u32 });
                } else {
                    self.nics[process.index()].slow = 1.0;
                }
                process.0
            }
            Fault::LinkDelay {
                from,
                to,
                duration,
                delay,
                jitter,
                ..
            } => {
                self.links.push(ActiveLink {
                    from,
                    to,
                    until: now + duration,
                    delay,
                    jitter,
                    last_land: Nanos::ZERO,
                });
                from.0
            }
            Fault::Revoke {
                owner,
                region,
                peer,
                duration,
                at,
            } => {
                let mem = &mut self.nics[owner.index()].memory;
                if region.index() < mem.region_count() {
                    if now == at && duration > Nanos::ZERO {
                        self.nics[owner.index()].settle(region, peer);
                        let mem = &mut self.nics[owner.index()].memory;
                        let _ = mem.set_access(region, peer, Access::None);
                        self.cfg.faults.push(Fault::Revoke {
                            at: now + duration,
                            owner,
                            region,
                            peer,
                            duration: Nanos::ZERO,
                        });
                        let i = self.cfg.faults.len() - 1;
                        self.schedule(now + duration, Event::Fault { index: i as u32 });
                    } else {
                        mem.restore_access(region, peer);
                    }
                }
                owner.0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fault the seed draws, of every kind, reads back from its text to the same fault.
    #[test]
    fn drawn_faults_read_back_from_their_text() {
        let budget = FaultBudget {
            horizon: Nanos::from_ms(50),
            max_crashes: 3,
            transient: 12,
            revocable_regions: 3,
        };
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..200 {
            for f in random_faults(seed, 9, budget) {
                let text = f.to_string();
                kinds.insert(text.split(':').next().unwrap().to_string());
                assert_eq!(text.parse::<Fault>().as_ref(), Ok(&f), "{text}");
            }
        }
        assert_eq!(kinds.len(), 5, "{kinds:?}");
        let mid = Fault::CrashMidPost {
            at: Nanos(1_500),
            process: ProcessId(4),
        };
        assert_eq!(mid.to_string(), "kill-posting:4@1.5us");
        assert_eq!("kill-posting:4@1.5us".parse(), Ok(mid));
        let no_jitter: Fault = "delay:0>4@2ms+1ms=20us".parse().unwrap();
        assert_eq!(no_jitter.to_string(), "delay:0>4@2ms+1ms=20us~0ns");
    }

    /// A fault that does not read says what is wrong and what a fault looks like.
    #[test]
    fn a_bad_fault_says_what_is_wrong() {
        for (bad, says) in [
            ("crash:1@1ms", "unknown kind"),
            ("kill:1@1ms+1ms", "unknown kind"),
            ("pause:x@1ms+1ms", "`x` is not a process number"),
            ("delay:1@1ms+1ms=5us", "a link is FROM>TO"),
            ("slow:1@1ms+1ms=0.5", "at least 1"),
            ("revoke:1>2@1ms+1ms=r0", "not a region number"),
            ("kill:1", "no `@TIME`"),
        ] {
            let err = bad.parse::<Fault>().unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(err.contains("kill:P@T"), "{bad}: {err}");
        }
    }
}
