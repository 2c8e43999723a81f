//! A coordinator (Tasks 1 and 3): Phase 1 once for every instance from a given one on, then
//! Phase 2 alone for each value it proposes; resigning, and proposing again what a new round
//! left undecided (section 4.4.2).

use super::{Dissemination, Ensemble, Instance, Msg, Out, Round, GAP_FILLER};
use crate::value::{Key, Value};
use multicast::MsgId;
use std::collections::BTreeMap;
use transport::ProcessId;

/// Phase 1 of a coordinator's round.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase1 {
    /// Waiting for the promises of the quorum (complete ones in `promised`), with the votes
    /// they reported and the highest instance below which one of them forgot its votes.
    Waiting {
        promised: Vec<ProcessId>,
        votes: BTreeMap<Instance, (Round, Value)>,
        low: Instance,
    },
    /// Done: Phase 2 alone for every new value.
    Done,
    /// No round: never started, or resigned.
    Idle,
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
    /// The values this coordinator proposed and has not yet learned decided, so that a new
    /// round proposes them again where no vote says otherwise (section 4.4.2).
    proposed: BTreeMap<Instance, Value>,
    dissemination: Dissemination,
}

impl Coordinator {
    /// Coordinator `me` of `ensemble` disseminating Ridge's way, no round started.
    pub fn new(me: ProcessId, ensemble: Ensemble) -> Coordinator {
        Coordinator::with(me, ensemble, Dissemination::Ridge)
    }

    /// Coordinator `me` of `ensemble` disseminating as `dissemination` says.
    pub fn with(me: ProcessId, ensemble: Ensemble, dissemination: Dissemination) -> Coordinator {
        Coordinator {
            me,
            ensemble,
            c_rnd: Round::ZERO,
            quorum: Vec::new(),
            phase1: Phase1::Idle,
            next: 0,
            proposed: BTreeMap::new(),
            dissemination,
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

    /// Whether a round is started (Phase 1 running or done).
    pub fn active(&self) -> bool {
        self.phase1 != Phase1::Idle
    }

    /// Whether Phase 1 completed: values are proposed with Phase 2 alone.
    pub fn ready(&self) -> bool {
        self.phase1 == Phase1::Done
    }

    /// Values proposed and not yet learned decided.
    pub fn undecided(&self) -> usize {
        self.proposed.len()
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
            low: from,
        };
        let rnd = self.c_rnd;
        self.ensemble
            .acceptors
            .iter()
            .map(|&a| (a, Msg::Phase1a { rnd, from }))
            .collect()
    }

    /// Task 3: a promise (one packet of it) from acceptor `from`. Once every acceptor of the
    /// quorum promised (line 16), each instance in which some of them voted is proposed again
    /// with the value of the highest-round vote (lines 17-20; Paxos keeps a possibly chosen
    /// value), an instance nobody voted in with the value this coordinator proposed there
    /// before, if any, else a null value; new values take the instances after them. Returns
    /// the messages and this coordinator's own earlier proposals no instance holds any more,
    /// to be proposed again as new values.
    pub fn on_phase1b(
        &mut self,
        from: ProcessId,
        rnd: Round,
        low: Instance,
        votes: Vec<(Instance, Round, Value)>,
        last: bool,
    ) -> (Out, Vec<Value>) {
        let Phase1::Waiting {
            promised,
            votes: seen,
            low: lowest,
        } = &mut self.phase1
        else {
            return (Vec::new(), Vec::new());
        };
        if rnd != self.c_rnd || !self.quorum.contains(&from) || promised.contains(&from) {
            return (Vec::new(), Vec::new());
        }
        *lowest = (*lowest).max(low);
        for (k, r, v) in votes {
            if seen.get(&k).is_none_or(|(h, _)| r > *h) {
                seen.insert(k, (r, v));
            }
        }
        if !last {
            return (Vec::new(), Vec::new());
        }
        promised.push(from);
        if promised.len() < self.quorum.len() {
            return (Vec::new(), Vec::new());
        }
        let mut seen = std::mem::take(seen);
        let from = *lowest;
        self.phase1 = Phase1::Done;
        // Below `from` everything is decided: what this coordinator proposed there and does not
        // know decided may have lost its instance.
        let mut displaced: Vec<Value> = Vec::new();
        let keep = self.proposed.split_off(&from);
        displaced.extend(std::mem::replace(&mut self.proposed, keep).into_values());
        // Instances below the highest one voted in or proposed that nobody in the quorum voted
        // in get the value proposed there before or a null value: learners take decisions
        // gap-free, so a hole would stall them (a choice the paper leaves to Paxos; multi-Paxos
        // fills such holes with no-ops).
        let end = seen
            .keys()
            .next_back()
            .map(|&k| k + 1)
            .into_iter()
            .chain(self.proposed.keys().next_back().map(|&k| k + 1))
            .chain([from, self.next])
            .max()
            .expect("not empty");
        let mut out = Vec::new();
        for k in from..end {
            let mine = self.proposed.remove(&k);
            let v = match (seen.remove(&k), mine) {
                (Some((_, v)), mine) => {
                    displaced.extend(mine.filter(|m| m.key() != v.key()));
                    v
                }
                (None, Some(mine)) => mine,
                (None, None) => self.gap_filler(k),
            };
            self.proposed.insert(k, v.clone());
            out.extend(self.phase2(k, v));
        }
        self.next = end;
        displaced.retain(|v| !v.is_null());
        (out, displaced)
    }

    /// A refusal of round `rnd`: whether it matters (it refuses this coordinator's current
    /// round), and then the round to outbid.
    pub fn on_reject(&self, rnd: Round, promised: Round) -> Option<Round> {
        (rnd == self.c_rnd && promised > self.c_rnd).then_some(promised)
    }

    /// Instance `k` was learned decided with the value `key` names. Returns whether this
    /// coordinator had proposed there (its round made progress), and its proposal if a
    /// different value took the instance (to be proposed again).
    pub fn learned(&mut self, k: Instance, key: Key) -> (bool, Option<Value>) {
        match self.proposed.remove(&k) {
            Some(v) => (true, Some(v).filter(|v| v.key() != key && !v.is_null())),
            None => (false, None),
        }
    }

    /// Gives up coordinating: the values proposed and not learned decided, to hand to the next
    /// coordinator.
    pub fn resign(&mut self) -> Vec<Value> {
        self.phase1 = Phase1::Idle;
        let mut out: Vec<Value> = std::mem::take(&mut self.proposed).into_values().collect();
        out.retain(|v| !v.is_null());
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
        self.proposed.insert(k, value.clone());
        Some((k, self.phase2(k, value)))
    }

    fn phase2(&self, k: Instance, value: Value) -> Out {
        if self.dissemination == Dissemination::Direct {
            let rnd = self.c_rnd;
            return self
                .ensemble
                .acceptors
                .iter()
                .map(|&a| {
                    (
                        a,
                        Msg::Phase2a {
                            k,
                            rnd,
                            value: value.clone(),
                        },
                    )
                })
                .collect();
        }
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
