//! An acceptor (Tasks 2 and 4): one promise for every instance, its votes, and Ridge's
//! Phase 2 as a vote chain through the quorum, whose last acceptor decides.

use super::{Balancer, Dissemination, Instance, Msg, Out, Round, VOTE_BYTES};
use crate::value::Value;
use std::collections::BTreeMap;
use transport::ProcessId;

/// An acceptor (Tasks 2 and 4).
#[derive(Clone, Debug)]
pub struct Acceptor {
    me: ProcessId,
    /// The highest round promised, for every instance (see the module docs).
    rnd: Round,
    /// `(v-rnd, v-val)` per instance voted in, from `low` on.
    votes: BTreeMap<Instance, (Round, Value)>,
    /// Instances below are decided and forgotten ([`Acceptor::trim`]).
    low: Instance,
    balancer: Balancer,
    dissemination: Dissemination,
    /// Section 4.5: learners have the multicasters' copies, so the last acceptor sends the
    /// decision's id only (no DISTRIBUTE), except for null messages, which nobody multicast.
    ids_only: bool,
}

impl Acceptor {
    /// Acceptor `me` disseminating Ridge's way, nothing promised or voted (line 2).
    pub fn new(me: ProcessId) -> Acceptor {
        Acceptor::with(me, Dissemination::Ridge)
    }

    /// Acceptor `me` disseminating as `dissemination` says.
    pub fn with(me: ProcessId, dissemination: Dissemination) -> Acceptor {
        Acceptor {
            me,
            rnd: Round::ZERO,
            votes: BTreeMap::new(),
            low: 0,
            balancer: Balancer::default(),
            dissemination,
            ids_only: false,
        }
    }

    /// With optimistic deliveries (section 4.5), Ridge's dissemination sends decided ids
    /// only: learners pair them with the multicasters' copies (and fill from the acceptors
    /// what they lack). The baselines keep carrying values.
    pub fn ids_only(mut self) -> Acceptor {
        self.ids_only = self.dissemination == Dissemination::Ridge;
        self
    }

    /// As the last acceptor, picks a learner of `spared` as distributor only when every other
    /// learner outside the quorum is suspected: dedicated acceptors, which learn only to
    /// answer gap fills ([`crate::config::Placement::Dedicated`]).
    pub fn sparing(mut self, spared: Vec<ProcessId>) -> Acceptor {
        self.balancer = Balancer::sparing(spared);
        self
    }

    /// Votes for `value` in instance `k` of round `rnd` unless a higher round was promised;
    /// otherwise the refusal to send the round's coordinator.
    fn cast_vote(&mut self, k: Instance, rnd: Round, value: &Value) -> Result<bool, Out> {
        if rnd < self.rnd {
            let promised = self.rnd;
            return Err(vec![(rnd.owner(), Msg::Reject { rnd, promised })]);
        }
        if k < self.low {
            // Decided and forgotten: another vote decides nothing new.
            return Ok(false);
        }
        self.rnd = rnd;
        self.votes.insert(k, (rnd, value.clone()));
        Ok(true)
    }

    /// The direct baseline's Phase 2a: vote, and send the vote with the value to every
    /// learner (Algorithm 1, Task 4).
    pub fn on_phase2a(
        &mut self,
        learners: &[ProcessId],
        k: Instance,
        rnd: Round,
        value: Value,
    ) -> Out {
        match self.cast_vote(k, rnd, &value) {
            Err(refusal) => refusal,
            Ok(false) => Vec::new(),
            Ok(true) => learners
                .iter()
                .map(|&l| {
                    (
                        l,
                        Msg::Accepted {
                            k,
                            rnd,
                            value: value.clone(),
                        },
                    )
                })
                .collect(),
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

    /// Votes held (bounded by [`Acceptor::trim`]).
    pub fn votes(&self) -> usize {
        self.votes.len()
    }

    /// Forgets the votes of instances below `below`, which are decided (its owner learned
    /// them): no coordinator needs them again, since a promise tells it to propose nothing
    /// below. What keeps an acceptor's memory bounded.
    pub fn trim(&mut self, below: Instance) {
        if below > self.low {
            self.low = below;
            self.votes = self.votes.split_off(&below);
        }
    }

    /// Task 2: a Phase 1a of round `rnd` from coordinator `coord`, for instances `from` on.
    /// Lines 12-14: promise if `rnd` is above every round promised, with the votes in packets
    /// of at most about `budget` bytes; otherwise say which round was promised.
    pub fn on_phase1a(
        &mut self,
        coord: ProcessId,
        rnd: Round,
        from: Instance,
        budget: usize,
    ) -> Out {
        if rnd <= self.rnd {
            return vec![(
                coord,
                Msg::Reject {
                    rnd,
                    promised: self.rnd,
                },
            )];
        }
        self.rnd = rnd;
        let low = self.low;
        let promise = |votes, last| {
            let msg = Msg::Phase1b {
                rnd,
                from,
                low,
                votes,
                last,
            };
            (coord, msg)
        };
        let mut out = Vec::new();
        let mut votes = Vec::new();
        let mut bytes = 0;
        for (&k, (r, v)) in self.votes.range(from.max(low)..) {
            let size = v.size() + VOTE_BYTES;
            if !votes.is_empty() && bytes + size > budget {
                out.push(promise(std::mem::take(&mut votes), false));
                bytes = 0;
            }
            bytes += size;
            votes.push((k, *r, v.clone()));
        }
        out.push(promise(votes, true));
        out
    }

    /// Task 4: a Phase 2 message, with the ensemble's learners and the learners this acceptor
    /// suspects. Lines 24-32: vote if `rnd` is not below the promise; then forward along the
    /// quorum, or, as the last acceptor, send the decision to every learner and the value to a
    /// distributor. A round below the promise is refused to its coordinator.
    #[allow(clippy::too_many_arguments)]
    pub fn on_phase2(
        &mut self,
        learners: &[ProcessId],
        k: Instance,
        rnd: Round,
        value: Value,
        quorum: Vec<ProcessId>,
        count: usize,
        suspected: impl Fn(ProcessId) -> bool,
    ) -> Out {
        match self.cast_vote(k, rnd, &value) {
            Err(refusal) => return refusal,
            Ok(false) => return Vec::new(),
            Ok(true) => {}
        }
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
            .map(|&l| {
                (
                    l,
                    Msg::Decision {
                        k,
                        key: value.key(),
                    },
                )
            })
            .collect();
        match self.dissemination {
            Dissemination::Ring => {
                let first = learners
                    .iter()
                    .find(|&&l| !quorum.contains(&l) && !suspected(l))
                    .copied();
                out.extend(first.map(|l| (l, Msg::Relay { k, value, quorum })));
            }
            // A null message has no multicaster to send a copy: it is distributed.
            _ if self.ids_only && !value.is_null() => {}
            _ => {
                if let Some(ld) = self.balancer.pick(learners, &quorum, &value, suspected) {
                    out.push((ld, Msg::Distribute { k, value, quorum }));
                }
            }
        }
        out
    }
}
