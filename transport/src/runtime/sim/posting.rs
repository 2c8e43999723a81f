//! The write discipline of a software profile: how a process posts ops to several targets and
//! when it waits for their completions.
//!
//! Hardware lets a process post many ops back to back and reap their completions whenever it
//! likes; prototypes differ in what they do. TRAM's Fig. 2 is the contrast: a process that waits
//! for each write's completion before posting the next pays one round trip per target, one that
//! posts them all and awaits their completions collectively pays about one in total (TRAM
//! section 3, "TRAM leverages this batched completion strategy"). RamCast section 4 polls a
//! completion "after pushing a number of writes" (selective signalling): a window. Which of these
//! a prototype does is part of its software profile ([`super::Software::posting`]), declared from
//! its paper's text, not fitted.
//!
//! # Model
//! Under [`Discipline::Window`] and [`Discipline::Batch`] (a window without bound) the simulator keeps, per poll, the requests a process still
//! awaits. A request is a run of consecutive ops to one peer: selective signalling (RamCast
//! section 4: "with requests of size n, up to n - 1 consecutive operations can be unsignaled")
//! signals its last op only, so the process awaits one completion per request. Before starting a
//! request while `n` are outstanding, the process spins until the earliest of them completes,
//! and every later step of the poll moves back by the wait; at the end of the poll it spins until
//! every request it posted has completed (a blocking prototype returns from its "send to these
//! targets" call only then). Unsignalled ops are awaited all the same: such a prototype signals
//! the ops it waits for. [`Discipline::Collective`] never waits: completions arrive as events and
//! are drained by a later poll, as the protocols here are written.
//!
//! A completion's time is estimated when the op is issued: its landing plus the calibrated
//! one-way latency back (the median where the profile declares a distribution), plus the
//! response's serialisation for a read. Declared limit: an op to a crashed process is awaited for
//! one round trip, not for the `unreachable_timeout_ns` its real completion takes, so a blocking
//! prototype's stall after a crash is shorter here than on hardware. And the wait is applied
//! when the poll's posts are issued, after the poll: the clock the process reads during the poll
//! ([`crate::Nic::now`]) does not include it, so a time a protocol stamps after a post, in the
//! same poll, is earlier than the post went out; timers set in that poll fire that much early.
//! Waits only ever move posts later, in post order, so every queue pair keeps its order.

use crate::process::ProcessId;
use crate::time::Nanos;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroU32;

/// How a process posts ops to several targets and when it waits for their completions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum Discipline {
    /// Posted back to back; completions are reaped as they arrive, among the process's other
    /// work, and the CPU never waits for one (selective signalling, no blocking). TOML
    /// `"collective"`.
    #[default]
    Collective,
    /// Posted back to back, then the CPU spins until every one has completed: "all write
    /// operations are issued concurrently, and completions are awaited collectively" (TRAM
    /// Fig. 2's optimised configuration). TOML `"batch"`.
    Batch,
    /// At most this many ops outstanding: the CPU spins until one completes before posting
    /// more, and at the end of its poll until all have. A window of 1 (TOML `"each"`) awaits
    /// every op before posting the next, the baseline of TRAM Fig. 2; TOML `"window:N"`.
    Window(NonZeroU32),
}

impl Discipline {
    /// Every op awaited before the next is posted.
    pub const EACH: Discipline = Discipline::Window(NonZeroU32::MIN);

    /// The most ops outstanding at once, if the process waits at all.
    pub fn window(self) -> Option<usize> {
        match self {
            Discipline::Collective => None,
            Discipline::Batch => Some(usize::MAX),
            Discipline::Window(n) => Some(n.get() as usize),
        }
    }
}

impl fmt::Display for Discipline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Discipline::Collective => f.write_str("collective"),
            Discipline::Batch => f.write_str("batch"),
            Discipline::Window(n) if n.get() == 1 => f.write_str("each"),
            Discipline::Window(n) => write!(f, "window:{n}"),
        }
    }
}

impl std::str::FromStr for Discipline {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "unknown write discipline `{s}`: use collective (post back to back, never wait), \
                 batch (post back to back, then await them all), each (await every completion before the next post) or window:N (at most N \
                 outstanding, N >= 1)"
            )
        };
        match s {
            "collective" => Ok(Discipline::Collective),
            "batch" => Ok(Discipline::Batch),
            "each" => Ok(Discipline::EACH),
            _ => s
                .strip_prefix("window:")
                .and_then(|n| n.parse::<NonZeroU32>().ok())
                .map(Discipline::Window)
                .ok_or_else(bad),
        }
    }
}

impl TryFrom<String> for Discipline {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// A software profile's write discipline: one for every process of a run, and where the profile
/// models several prototypes (TRAM's C++ code also ran the paper's RamCast), one per protocol.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Posting {
    /// The discipline of every protocol not listed in `protocols`.
    #[serde(default)]
    pub discipline: Discipline,
    /// Per protocol (its `--protocol` name), where it differs.
    #[serde(default)]
    pub protocols: BTreeMap<String, Discipline>,
    /// The paper's words the choice rests on.
    #[serde(default)]
    pub source: Option<String>,
}

impl Posting {
    /// The discipline `protocol` runs with.
    pub fn of(&self, protocol: &str) -> Discipline {
        self.protocols
            .get(protocol)
            .copied()
            .unwrap_or(self.discipline)
    }

    /// Whether every protocol posts collectively (the model of every result before disciplines).
    pub fn is_collective(&self) -> bool {
        self.discipline == Discipline::Collective
            && self
                .protocols
                .values()
                .all(|d| *d == Discipline::Collective)
    }
}

/// The posts of one poll under a discipline: when each op's doorbell rings, and when the CPU is
/// free again (see the module docs).
#[derive(Debug)]
pub(crate) struct Gate {
    window: Option<usize>,
    /// How far the waits so far moved the rest of the poll.
    shift: Nanos,
    /// Estimated completions of the requests still awaited.
    outstanding: Vec<Nanos>,
    /// The peer of the request being posted, while it is the last one in `outstanding`.
    request: Option<ProcessId>,
}

impl Gate {
    pub(crate) fn new(discipline: Discipline) -> Gate {
        Gate {
            window: discipline.window(),
            shift: Nanos::ZERO,
            outstanding: Vec::new(),
            request: None,
        }
    }

    /// The doorbell of an op the poll stamped `at`: moved back by the waits before it and, if
    /// it starts a request (a network op to `peer`, not the peer of the op before), until the
    /// window has room.
    pub(crate) fn doorbell(&mut self, at: Nanos, peer: Option<ProcessId>) -> Nanos {
        let mut t = at + self.shift;
        let Some(n) = self.window else {
            return t;
        };
        if peer.is_none() || peer != self.request {
            self.request = None;
        }
        if peer.is_some() && self.request.is_none() {
            while self.outstanding.len() >= n {
                let (k, &first) = self
                    .outstanding
                    .iter()
                    .enumerate()
                    .min_by_key(|&(_, c)| *c)
                    .expect("a full window is not empty");
                self.outstanding.swap_remove(k);
                t = t.max(first);
            }
            self.shift = t - at;
        }
        t
    }

    /// A network op to `peer` was issued and completes at about `completes`: the op that ends
    /// its request so far, whose completion the process awaits.
    pub(crate) fn issued(&mut self, peer: ProcessId, completes: Nanos) {
        if self.window.is_none() {
            return;
        }
        if self.request == Some(peer) {
            let last = self
                .outstanding
                .last_mut()
                .expect("a request is outstanding");
            *last = (*last).max(completes);
        } else {
            self.outstanding.push(completes);
            self.request = Some(peer);
        }
    }

    /// When the CPU is free, given that the poll's own work ends at `end`: later by the waits,
    /// and not before every awaited op has completed.
    pub(crate) fn free_at(&self, end: Nanos) -> Nanos {
        self.outstanding
            .iter()
            .fold(end + self.shift, |t, &c| t.max(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disciplines_read_and_print_as_declared() {
        for text in ["collective", "batch", "each", "window:4"] {
            let d: Discipline = text.parse().unwrap();
            assert_eq!(d.to_string(), text);
        }
        assert_eq!("window:1".parse::<Discipline>(), Ok(Discipline::EACH));
        for bad in ["window:0", "window:", "serial", "window:-2"] {
            let e = bad.parse::<Discipline>().unwrap_err();
            assert!(e.contains(bad) && e.contains("window:N"), "{e}");
        }
    }

    #[test]
    fn a_protocol_listed_apart_gets_its_own_discipline() {
        let p: Posting = toml::from_str(
            "discipline = \"collective\"\nprotocols = { ramcast = \"each\" }\nsource = \"TRAM 3\"",
        )
        .unwrap();
        assert_eq!(p.of("ramcast"), Discipline::EACH);
        assert_eq!(p.of("tram"), Discipline::Collective);
        assert!(!p.is_collective() && Posting::default().is_collective());
        let e = toml::from_str::<Posting>("discipline = \"serial\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown write discipline `serial`"), "{e}");
    }

    #[test]
    fn collective_posts_never_wait() {
        let mut g = Gate::new(Discipline::Collective);
        assert_eq!(g.doorbell(Nanos(10), Some(P1)), Nanos(10));
        g.issued(P1, Nanos(5_000));
        assert_eq!(g.doorbell(Nanos(20), Some(P2)), Nanos(20));
        assert_eq!(g.free_at(Nanos(30)), Nanos(30));
    }

    #[test]
    fn a_batch_posts_back_to_back_and_awaits_every_completion_at_the_end() {
        let mut g = Gate::new(Discipline::Batch);
        for (at, p, done) in [(10, P1, 3_000), (20, P2, 1_000), (30, P1, 2_000)] {
            assert_eq!(g.doorbell(Nanos(at), Some(p)), Nanos(at));
            g.issued(p, Nanos(done));
        }
        assert_eq!(g.free_at(Nanos(50)), Nanos(3_000));
    }

    const P1: ProcessId = ProcessId(1);
    const P2: ProcessId = ProcessId(2);

    #[test]
    fn each_request_waits_for_the_previous_completion_and_moves_the_poll_back() {
        let mut g = Gate::new(Discipline::EACH);
        assert_eq!(g.doorbell(Nanos(10), Some(P1)), Nanos(10));
        g.issued(P1, Nanos(1_000));
        // Stamped 20, posted once the first completed; the 10 ns of work between them follow.
        assert_eq!(g.doorbell(Nanos(20), Some(P2)), Nanos(1_000));
        g.issued(P2, Nanos(2_500));
        // The next op to the same peer joins its request (selectively unsignalled): no wait,
        // and the request completes with it.
        assert_eq!(g.doorbell(Nanos(22), Some(P2)), Nanos(1_002));
        g.issued(P2, Nanos(2_600));
        // A local op waits for nothing but keeps its place after the waits, and ends the
        // request: the next op to the same peer is a request of its own.
        assert_eq!(g.doorbell(Nanos(25), None), Nanos(1_005));
        assert_eq!(g.doorbell(Nanos(30), Some(P2)), Nanos(2_600));
        g.issued(P2, Nanos(4_000));
        // The poll's own work ended at 40: now 2610, but the last completion is later.
        assert_eq!(g.free_at(Nanos(40)), Nanos(4_000));
    }

    #[test]
    fn a_window_waits_for_the_earliest_outstanding_completion() {
        let mut g = Gate::new("window:2".parse().unwrap());
        for (at, p, done) in [(10, P1, 3_000), (20, P2, 1_000)] {
            assert_eq!(g.doorbell(Nanos(at), Some(p)), Nanos(at));
            g.issued(p, Nanos(done));
        }
        assert_eq!(g.doorbell(Nanos(30), Some(P1)), Nanos(1_000));
        g.issued(P1, Nanos(2_000));
        assert_eq!(g.doorbell(Nanos(40), Some(P2)), Nanos(2_000));
        g.issued(P2, Nanos(2_900));
        assert_eq!(g.free_at(Nanos(50)), Nanos(3_000));
    }
}
