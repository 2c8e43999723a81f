//! Algorithm 2: Paxos in one ensemble, with Ridge's Phase 2 (a vote chain through a quorum,
//! then a distributing learner). Task numbers are the paper's.
//!
//! The roles are pure state machines: each handler takes a message and returns the messages
//! to send as `(destination, message)`. A process may play several roles; delivering a message
//! to itself is the runtime's business.
//!
//! Phase 1 runs once for every instance from a given one on (the optimisation of section 3:
//! "the coordinator can execute Phase 1 before values are received"), so an acceptor keeps a
//! single promise `rnd` for all instances, and a coordinator that completed Phase 1 proposes
//! each new value with Phase 2 alone.

use crate::value::Value;
use multicast::MsgId;
use std::collections::BTreeMap;
use transport::ProcessId;

/// A consensus instance of an ensemble.
pub type Instance = u64;

/// A round number: a counter in the high bits and the coordinator's process id in the low 16,
/// so two coordinators never pick the same round (Task 1, line 6: "unique value higher than
/// current c-rnd"). `Round::ZERO` is no round at all (the paper's 0).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Round(pub u64);

impl Round {
    /// No round (nothing promised, nothing voted).
    pub const ZERO: Round = Round(0);

    /// The smallest round of coordinator `me` above `than`.
    pub fn above(than: Round, me: ProcessId) -> Round {
        Round(((than.0 >> 16) + 1) << 16 | u64::from(me.0 & 0xffff))
    }
}

/// A message of Algorithm 2 (it travels inside a [`crate::wire::Packet`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Msg {
    /// Task 1, line 9: Phase 1 of round `rnd` for every instance from `from` on.
    Phase1a {
        /// The coordinator's round.
        rnd: Round,
        /// The first instance the round covers.
        from: Instance,
    },
    /// Task 2, line 14: the promise, with the votes cast in instances from `from` on.
    Phase1b {
        /// The round promised.
        rnd: Round,
        /// The first instance the promise covers.
        from: Instance,
        /// `(instance, v-rnd, v-val)` of every vote from `from` on.
        votes: Vec<(Instance, Round, Value)>,
    },
    /// Task 3, line 21 and Task 4, line 28: Phase 2 along the quorum chain.
    Phase2 {
        /// The instance.
        k: Instance,
        /// The round.
        rnd: Round,
        /// The value proposed.
        value: Value,
        /// The quorum as an acceptor sequence `a1 .. a(f+1)`.
        quorum: Vec<ProcessId>,
        /// Votes cast so far.
        count: usize,
    },
    /// Task 4, line 30: instance `k` decided the value with id `id`.
    Decision {
        /// The instance.
        k: Instance,
        /// The decided value's id.
        id: MsgId,
    },
    /// Task 4, line 32: distribute `value` to the learners outside `quorum`.
    Distribute {
        /// The instance.
        k: Instance,
        /// The decided value.
        value: Value,
        /// The quorum that decided it (its learners have the value already).
        quorum: Vec<ProcessId>,
    },
    /// Task 5, line 35: the decided value of instance `k`.
    Value {
        /// The instance.
        k: Instance,
        /// The decided value.
        value: Value,
    },
}

/// The sequence range of gap-filling null values' ids (a client's own sequence numbers count
/// from 0 and never reach it).
pub const GAP_FILLER: u64 = 1 << 63;

/// Messages to send: `(destination, message)`.
pub type Out = Vec<(ProcessId, Msg)>;

/// An ensemble's membership: its acceptors (`2f + 1`) and learners.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ensemble {
    /// The acceptors `A`, `2f + 1` of them.
    pub acceptors: Vec<ProcessId>,
    /// The learners `L` (the ensemble-group).
    pub learners: Vec<ProcessId>,
}

impl Ensemble {
    /// `f`, the failures tolerated.
    pub fn f(&self) -> usize {
        (self.acceptors.len() - 1) / 2
    }

    /// `|Q| = f + 1`.
    pub fn quorum_size(&self) -> usize {
        self.f() + 1
    }
}

/// The last acceptor's load balancer (section 4.3: "the last acceptor keeps track of how much
/// data each learner has distributed so far"): the distributor of the next value is the
/// learner outside `Q` that distributed the fewest bytes, the lowest id on a tie.
#[derive(Clone, Debug, Default)]
pub struct Balancer {
    bytes: BTreeMap<ProcessId, u64>,
}

impl Balancer {
    /// Picks the distributor of `value` among `learners` not in `quorum` and counts its bytes;
    /// `None` when every learner is in the quorum (they all have the value already).
    pub fn pick(
        &mut self,
        learners: &[ProcessId],
        quorum: &[ProcessId],
        value: &Value,
    ) -> Option<ProcessId> {
        let l = learners
            .iter()
            .filter(|l| !quorum.contains(l))
            .min_by_key(|l| (self.bytes.get(l).copied().unwrap_or(0), **l))
            .copied()?;
        *self.bytes.entry(l).or_default() += value.size() as u64;
        Some(l)
    }
}

/// An acceptor (Tasks 2 and 4).
#[derive(Clone, Debug)]
pub struct Acceptor {
    me: ProcessId,
    /// The highest round promised, for every instance (see the module docs).
    rnd: Round,
    /// `(v-rnd, v-val)` per instance voted in.
    votes: BTreeMap<Instance, (Round, Value)>,
    balancer: Balancer,
}

impl Acceptor {
    /// Acceptor `me`, nothing promised or voted (line 2).
    pub fn new(me: ProcessId) -> Acceptor {
        Acceptor {
            me,
            rnd: Round::ZERO,
            votes: BTreeMap::new(),
            balancer: Balancer::default(),
        }
    }

    /// The highest round promised.
    pub fn rnd(&self) -> Round {
        self.rnd
    }

    /// This acceptor's vote in instance `k`, if any.
    pub fn vote(&self, k: Instance) -> Option<&(Round, Value)> {
        self.votes.get(&k)
    }

    /// Task 2: a Phase 1a of round `rnd` from coordinator `from_coord`, for instances `from`
    /// on. Lines 12-14: promise if `rnd` is above every round promised.
    pub fn on_phase1a(&mut self, coord: ProcessId, rnd: Round, from: Instance) -> Out {
        if rnd <= self.rnd {
            return Vec::new();
        }
        self.rnd = rnd;
        let votes = self
            .votes
            .range(from..)
            .map(|(&k, (r, v))| (k, *r, v.clone()))
            .collect();
        vec![(coord, Msg::Phase1b { rnd, from, votes })]
    }

    /// Task 4: a Phase 2 message, with the ensemble's learners. Lines 24-32: vote if `rnd` is
    /// not below the promise; then forward along the quorum, or, as the last acceptor, send
    /// the decision to every learner and the value to a distributor.
    pub fn on_phase2(
        &mut self,
        learners: &[ProcessId],
        k: Instance,
        rnd: Round,
        value: Value,
        quorum: Vec<ProcessId>,
        count: usize,
    ) -> Out {
        if rnd < self.rnd {
            return Vec::new();
        }
        self.rnd = rnd;
        self.votes.insert(k, (rnd, value.clone()));
        if count + 1 < quorum.len() {
            // Line 28: the next acceptor in Q after this one.
            let next = quorum
                .iter()
                .position(|&a| a == self.me)
                .and_then(|i| quorum.get(i + 1))
                .copied();
            return match next {
                Some(a) => vec![(
                    a,
                    Msg::Phase2 {
                        k,
                        rnd,
                        value,
                        quorum,
                        count: count + 1,
                    },
                )],
                // Not in the chain it was sent along: a malformed message decides nothing.
                None => Vec::new(),
            };
        }
        // Lines 30-32.
        let mut out: Out = learners
            .iter()
            .map(|&l| (l, Msg::Decision { k, id: value.id }))
            .collect();
        if let Some(ld) = self.balancer.pick(learners, &quorum, &value) {
            out.push((ld, Msg::Distribute { k, value, quorum }));
        }
        out
    }
}

/// Phase 1 of a coordinator's round.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase1 {
    /// Waiting for the promises of the quorum, with the votes they reported.
    Waiting {
        promised: Vec<ProcessId>,
        votes: BTreeMap<Instance, (Round, Value)>,
    },
    /// Done: Phase 2 alone for every new value.
    Done,
}

/// A coordinator (Tasks 1 and 3; proposing is Task 3's line 21 for each value).
#[derive(Clone, Debug)]
pub struct Coordinator {
    me: ProcessId,
    ensemble: Ensemble,
    c_rnd: Round,
    quorum: Vec<ProcessId>,
    phase1: Phase1,
    /// The next instance to propose in.
    next: Instance,
}

impl Coordinator {
    /// Coordinator `me` of `ensemble`, no round started.
    pub fn new(me: ProcessId, ensemble: Ensemble) -> Coordinator {
        Coordinator {
            me,
            ensemble,
            c_rnd: Round::ZERO,
            quorum: Vec::new(),
            phase1: Phase1::Done,
            next: 0,
        }
    }

    /// The round started last.
    pub fn c_rnd(&self) -> Round {
        self.c_rnd
    }

    /// The quorum of the current round, as a chain.
    pub fn quorum(&self) -> &[ProcessId] {
        &self.quorum
    }

    /// Whether Phase 1 completed: values are proposed with Phase 2 alone.
    pub fn ready(&self) -> bool {
        self.phase1 == Phase1::Done && self.c_rnd != Round::ZERO
    }

    /// Task 1: starts a round above `above` (and above its own last one) for every instance
    /// from `from` on, with `quorum` as the chain `a1 .. a(f+1)` (lines 6-9).
    pub fn start(&mut self, above: Round, from: Instance, quorum: Vec<ProcessId>) -> Out {
        assert_eq!(
            quorum.len(),
            self.ensemble.quorum_size(),
            "a quorum is f + 1 acceptors"
        );
        self.c_rnd = Round::above(above.max(self.c_rnd), self.me);
        self.quorum = quorum;
        self.next = from;
        self.phase1 = Phase1::Waiting {
            promised: Vec::new(),
            votes: BTreeMap::new(),
        };
        let rnd = self.c_rnd;
        self.ensemble
            .acceptors
            .iter()
            .map(|&a| (a, Msg::Phase1a { rnd, from }))
            .collect()
    }

    /// Task 3: a promise from acceptor `from`. Once every acceptor of the quorum promised
    /// (line 16), each instance in which some of them voted is proposed again with the value of
    /// the highest-round vote (lines 17-20; Paxos keeps a possibly chosen value), and new values
    /// take the instances after them.
    pub fn on_phase1b(
        &mut self,
        from: ProcessId,
        rnd: Round,
        votes: Vec<(Instance, Round, Value)>,
    ) -> Out {
        let Phase1::Waiting {
            promised,
            votes: seen,
        } = &mut self.phase1
        else {
            return Vec::new();
        };
        if rnd != self.c_rnd || !self.quorum.contains(&from) || promised.contains(&from) {
            return Vec::new();
        }
        promised.push(from);
        for (k, r, v) in votes {
            if seen.get(&k).is_none_or(|(h, _)| r > *h) {
                seen.insert(k, (r, v));
            }
        }
        if promised.len() < self.quorum.len() {
            return Vec::new();
        }
        let mut seen = std::mem::take(seen);
        self.phase1 = Phase1::Done;
        // Instances below the highest one voted in that nobody in the quorum voted in get a
        // null value: learners take decisions gap-free, so a hole would stall them (a choice
        // the paper leaves to Paxos; multi-Paxos fills such holes with no-ops).
        let from = self.next;
        let end = seen.keys().next_back().map_or(from, |&k| k + 1);
        let mut out = Vec::new();
        for k in from..end {
            let v = match seen.remove(&k) {
                Some((_, v)) => v,
                None => self.gap_filler(k),
            };
            out.extend(self.phase2(k, v));
        }
        self.next = end;
        out
    }

    /// The null value proposed in a hole at instance `k` (its id is unique: the coordinator's
    /// process and the instance, in a sequence range clients never use).
    fn gap_filler(&self, k: Instance) -> Value {
        let id = MsgId {
            client: self.me.0,
            seq: GAP_FILLER | k,
        };
        Value::null(id, crate::value::Timestamp::default())
    }

    /// Proposes `value` in the next instance (Task 3, line 21, once Phase 1 is done); `None`
    /// before that (the caller keeps the value until [`Self::ready`]).
    pub fn propose(&mut self, value: Value) -> Option<(Instance, Out)> {
        if !self.ready() {
            return None;
        }
        let k = self.next;
        self.next += 1;
        Some((k, self.phase2(k, value)))
    }

    fn phase2(&self, k: Instance, value: Value) -> Out {
        vec![(
            self.quorum[0],
            Msg::Phase2 {
                k,
                rnd: self.c_rnd,
                value,
                quorum: self.quorum.clone(),
                count: 0,
            },
        )]
    }
}

/// Task 5 for a distributing learner `me`: the value goes to every learner outside the
/// quorum but itself (line 35; it has the value already).
pub fn distribute(
    me: ProcessId,
    learners: &[ProcessId],
    k: Instance,
    value: &Value,
    quorum: &[ProcessId],
) -> Out {
    learners
        .iter()
        .filter(|l| **l != me && !quorum.contains(l))
        .map(|&l| {
            (
                l,
                Msg::Value {
                    k,
                    value: value.clone(),
                },
            )
        })
        .collect()
}

/// A learner's view of one ensemble's decisions: an instance is decided once the learner has
/// both its DECISION (the id) and its value (from VALUE, from DISTRIBUTE, or, in the quorum,
/// from the Phase 2 it voted on). Decisions come out in instance order, gap-free.
#[derive(Clone, Debug, Default)]
pub struct Learning {
    ids: BTreeMap<Instance, MsgId>,
    values: BTreeMap<Instance, Value>,
    /// The next instance to hand out.
    next: Instance,
}

impl Learning {
    /// Instance `k` was decided with id `id` (Msg::Decision).
    pub fn decided(&mut self, k: Instance, id: MsgId) {
        if k >= self.next {
            self.ids.insert(k, id);
        }
    }

    /// A value for instance `k` arrived (VALUE, DISTRIBUTE, or a Phase 2 voted on). Only the
    /// decided id counts: a value of a superseded round is replaced by a later one.
    pub fn value(&mut self, k: Instance, value: Value) {
        if k >= self.next {
            self.values.insert(k, value);
        }
    }

    /// The next decided instance and its value, in instance order.
    pub fn next_decided(&mut self) -> Option<(Instance, Value)> {
        let k = self.next;
        let id = *self.ids.get(&k)?;
        if self.values.get(&k)?.id != id {
            return None;
        }
        self.ids.remove(&k);
        let v = self.values.remove(&k).expect("checked");
        self.next += 1;
        Some((k, v))
    }
}

#[cfg(test)]
mod tests;
