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

use crate::value::{Key, Value};
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

    /// The coordinator that picked this round.
    pub fn owner(self) -> ProcessId {
        ProcessId((self.0 & 0xffff) as u32)
    }
}

/// A message of Algorithm 2 (it travels inside a [`crate::wire::Packet`]), with what section
/// 4.4 adds for failures: refusals, and learners filling gaps from the acceptors.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Msg {
    /// Task 1, line 9: Phase 1 of round `rnd` for every instance from `from` on.
    Phase1a {
        /// The coordinator's round.
        rnd: Round,
        /// The first instance the round covers.
        from: Instance,
    },
    /// Task 2, line 14: the promise, with the votes cast in instances from `from` on. Votes
    /// that would not fit one packet come in several; `last` marks the promise's final one.
    Phase1b {
        /// The round promised.
        rnd: Round,
        /// The first instance the promise covers.
        from: Instance,
        /// Instances below this are decided and their votes dropped ([`Acceptor::trim`]): a
        /// coordinator proposes nothing below it.
        low: Instance,
        /// `(instance, v-rnd, v-val)` of votes from `from` on.
        votes: Vec<(Instance, Round, Value)>,
        /// Whether this is the promise's last packet.
        last: bool,
    },
    /// An acceptor refused round `rnd` (of a Phase 1a or Phase 2): it promised `promised`,
    /// which is higher. Paxos lets the acceptor stay silent; saying so tells a coordinator that
    /// another one took over (section 4.4.1), or which round to outbid.
    Reject {
        /// The round refused.
        rnd: Round,
        /// The acceptor's promise.
        promised: Round,
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
    /// Task 4, line 30: instance `k` decided the value `key` names (its id, timestamp and
    /// destinations: with optimistic deliveries the learner pairs it with a copy of that
    /// content, never with another message under the same id).
    Decision {
        /// The instance.
        k: Instance,
        /// What the decided value is.
        key: Key,
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
    /// The ring baseline: the decided `value` of instance `k` passed along the learners
    /// outside `quorum`, each to the next (Ring Paxos style).
    Relay {
        /// The instance.
        k: Instance,
        /// The decided value.
        value: Value,
        /// The quorum that decided it.
        quorum: Vec<ProcessId>,
    },
    /// The direct baseline, Algorithm 1's Phase 2a: the coordinator to every acceptor.
    Phase2a {
        /// The instance.
        k: Instance,
        /// The round.
        rnd: Round,
        /// The value proposed.
        value: Value,
    },
    /// The direct baseline, Algorithm 1's Phase 2b: an acceptor's vote, with the value, to
    /// every learner (LibPaxos style); a learner decides on a majority of them.
    Accepted {
        /// The instance.
        k: Instance,
        /// The round voted in.
        rnd: Round,
        /// The value voted for.
        value: Value,
    },
    /// Section 4.4.3: a learner missing decisions asks what was decided from `from` on.
    Fetch {
        /// The first instance the learner lacks.
        from: Instance,
    },
    /// The answer to a [`Msg::Fetch`]: instances `k`, `k + 1`, ... decided `values`.
    Decided {
        /// The first instance.
        k: Instance,
        /// The decided values, in instance order.
        values: Vec<Value>,
    },
    /// The answer to a [`Msg::Fetch`] for instances the answerer no longer holds: it keeps
    /// decisions from `low` on only.
    Trimmed {
        /// The lowest instance still held.
        low: Instance,
    },
}

/// How Phase 2 takes a value to the acceptors and the decision to the learners. Ridge's is the
/// paper's; the other two are the baselines of its evaluation (section 6), sharing everything
/// else (Phase 1, failures, the merge) so that a comparison measures dissemination alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Dissemination {
    /// Algorithm 2: the value along the quorum chain, then a distributing learner chosen by
    /// load sends it to the learners outside the quorum.
    #[default]
    Ridge,
    /// Ring Paxos: the value along the quorum chain, then along the learners outside the
    /// quorum, each passing it to the next.
    Ring,
    /// LibPaxos: the coordinator sends the value to every acceptor (2a), every acceptor sends
    /// its vote with the value to every learner (2b).
    Direct,
}

impl Dissemination {
    /// Every dissemination, by name.
    pub const ALL: [(&'static str, Dissemination); 3] = [
        ("ridge", Dissemination::Ridge),
        ("ring", Dissemination::Ring),
        ("direct", Dissemination::Direct),
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        crate::named::name_of(&Self::ALL, self)
    }
}

impl std::str::FromStr for Dissemination {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        crate::named::by_name(&Self::ALL, s)
            .ok_or_else(|| format!("unknown dissemination `{s}`: ridge, ring or direct"))
    }
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
/// learner outside `Q` that distributed the fewest bytes, the lowest id on a tie. A learner the
/// last acceptor suspects is passed over while another is left (section 4.4.3), and so is a
/// learner it spares ([`Balancer::sparing`]: dedicated acceptors).
#[derive(Clone, Debug, Default)]
pub struct Balancer {
    bytes: BTreeMap<ProcessId, u64>,
    spared: Vec<ProcessId>,
}

impl Balancer {
    /// Picks the distributor of `value` among `learners` not in `quorum` and counts its bytes,
    /// preferring those `suspected` does not name; `None` when every learner is in the quorum
    /// (they all have the value already).
    pub fn pick(
        &mut self,
        learners: &[ProcessId],
        quorum: &[ProcessId],
        value: &Value,
        suspected: impl Fn(ProcessId) -> bool,
    ) -> Option<ProcessId> {
        let l = learners
            .iter()
            .filter(|l| !quorum.contains(l))
            .min_by_key(|l| {
                (
                    suspected(**l),
                    self.spared.contains(l),
                    self.bytes.get(l).copied().unwrap_or(0),
                    **l,
                )
            })
            .copied()?;
        *self.bytes.entry(l).or_default() += value.size() as u64;
        Some(l)
    }

    /// A balancer that picks a learner of `spared` only when every other learner outside the
    /// quorum is suspected.
    pub fn sparing(spared: Vec<ProcessId>) -> Balancer {
        Balancer {
            bytes: BTreeMap::new(),
            spared,
        }
    }
}

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

/// Bytes a vote adds to a Phase 1b packet besides its payload (instance, round, id,
/// timestamp, destinations, lengths), with room.
const VOTE_BYTES: usize = 96;

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

/// The ring baseline for learner `me`: the value goes on to the next learner outside the
/// quorum, in the ensemble's learner order, passing over those `me` suspects (Ring Paxos
/// rebuilds its ring around a failed process; a learner passed over fills its gap from the
/// acceptors); the last one keeps it.
pub fn relay(
    me: ProcessId,
    learners: &[ProcessId],
    k: Instance,
    value: Value,
    quorum: Vec<ProcessId>,
    suspected: impl Fn(ProcessId) -> bool,
) -> Out {
    let next = learners
        .iter()
        .filter(|l| !quorum.contains(l))
        .skip_while(|&&l| l != me)
        .skip(1)
        .find(|&&l| !suspected(l))
        .copied();
    next.map(|l| (l, Msg::Relay { k, value, quorum }))
        .into_iter()
        .collect()
}

/// The most values of different keys a learner keeps for one undecided instance (rounds
/// superseded by failures each may bring one; the oldest goes first).
const CANDIDATES: usize = 4;

/// A learner's view of one ensemble's decisions: an instance is decided once the learner has
/// both its DECISION (the value's [`Key`]) and a value with that key (from VALUE, from
/// DISTRIBUTE, in the quorum from the Phase 2 it voted on, or a multicaster's copy), or a
/// [`Msg::Decided`] answer. A value under the decided id but of other content is never taken
/// for the instance: the learner waits for, or fetches, the right one ([`crate::optimistic`]).
/// Decisions come out in instance order, gap-free. The last `retain` decisions are kept to
/// answer other learners' [`Msg::Fetch`] (section 4.4.3).
#[derive(Clone, Debug)]
pub struct Learning {
    keys: BTreeMap<Instance, Key>,
    values: BTreeMap<Instance, Vec<Value>>,
    /// The next instance to hand out.
    next: Instance,
    /// The latest decisions, ending at `next - 1`.
    recent: std::collections::VecDeque<Value>,
    retain: usize,
    /// The direct baseline: per instance, the highest round voted in and who voted for what.
    accepts: BTreeMap<Instance, (Round, Vec<(ProcessId, Key)>)>,
}

impl Learning {
    /// A learner that keeps its last `retain` decisions for others.
    pub fn new(retain: usize) -> Learning {
        Learning {
            keys: BTreeMap::new(),
            values: BTreeMap::new(),
            next: 0,
            recent: std::collections::VecDeque::new(),
            retain,
            accepts: BTreeMap::new(),
        }
    }

    /// The direct baseline: acceptor `from` voted for `value` in instance `k`, round `rnd`.
    /// Votes of one round for one value from `majority` acceptors decide it (Algorithm 1,
    /// Task 5's learner).
    pub fn accepted(
        &mut self,
        from: ProcessId,
        k: Instance,
        rnd: Round,
        value: Value,
        majority: usize,
    ) {
        if k < self.next {
            return;
        }
        let (r, votes) = self.accepts.entry(k).or_insert((rnd, Vec::new()));
        if rnd < *r {
            return;
        }
        if rnd > *r {
            *r = rnd;
            votes.clear();
        }
        if votes.iter().any(|(a, _)| *a == from) {
            return;
        }
        let key = value.key();
        votes.push((from, key));
        let n = votes.iter().filter(|(_, v)| *v == key).count();
        self.value(k, value);
        if n >= majority {
            self.decided(k, key);
        }
    }

    /// The first instance not yet handed out.
    pub fn next(&self) -> Instance {
        self.next
    }

    /// Whether something is known of an instance after the next one to hand out: a gap (the
    /// next one's DECISION or value went missing).
    pub fn gap(&self) -> bool {
        let ahead = |k: Option<&Instance>| k.is_some_and(|&k| k > self.next);
        ahead(self.keys.keys().next_back()) || ahead(self.values.keys().next_back())
    }

    /// The first instance from `from` (or from the next one to hand out, if later) whose
    /// decision this learner cannot hand out yet although it knows of a later instance: where
    /// a gap starts. `None` when nothing is missing before the last instance it knows of.
    pub fn first_gap_from(&self, from: Instance) -> Option<Instance> {
        let last = self
            .keys
            .keys()
            .next_back()
            .max(self.values.keys().next_back())
            .copied()?;
        (from.max(self.next)..last).find(|k| {
            let Some(key) = self.keys.get(k) else {
                return true;
            };
            self.values
                .get(k)
                .is_none_or(|vs| vs.iter().all(|v| v.key() != *key))
        })
    }

    /// The undecided instance whose DECISION named `key`, if any: the one a message seen
    /// late completes.
    pub fn awaiting(&self, key: Key) -> Option<Instance> {
        self.keys.iter().find(|(_, &d)| d == key).map(|(&k, _)| k)
    }

    /// Instance `k` decided the value `key` names (Msg::Decision): values of other content
    /// held for it can no longer be decided there and go.
    pub fn decided(&mut self, k: Instance, key: Key) {
        if k >= self.next {
            self.keys.insert(k, key);
            if let Some(vs) = self.values.get_mut(&k) {
                vs.retain(|v| v.key() == key);
            }
        }
    }

    /// A value for instance `k` arrived (VALUE, DISTRIBUTE, a Phase 2 voted on, a copy).
    /// Values of several rounds may arrive; the decided key picks among them, and once it is
    /// known a value it does not name is not kept.
    pub fn value(&mut self, k: Instance, value: Value) {
        let key = value.key();
        if k < self.next || self.keys.get(&k).is_some_and(|d| *d != key) {
            return;
        }
        let vs = self.values.entry(k).or_default();
        if vs.iter().all(|v| v.key() != key) {
            if vs.len() == CANDIDATES {
                vs.remove(0);
            }
            vs.push(value);
        }
    }

    /// Instance `k` decided `value` (a [`Msg::Decided`] answer).
    pub fn fill(&mut self, k: Instance, value: Value) {
        self.decided(k, value.key());
        self.value(k, value);
    }

    /// The next decided instance and its value, in instance order.
    pub fn next_decided(&mut self) -> Option<(Instance, Value)> {
        let k = self.next;
        let key = *self.keys.get(&k)?;
        let i = self.values.get(&k)?.iter().position(|v| v.key() == key)?;
        self.keys.remove(&k);
        self.accepts.remove(&k);
        let v = self.values.remove(&k).expect("checked").swap_remove(i);
        self.next += 1;
        if self.retain > 0 {
            if self.recent.len() == self.retain {
                self.recent.pop_front();
            }
            self.recent.push_back(v.clone());
        }
        Some((k, v))
    }

    /// The lowest instance whose decision this learner still holds for others.
    pub fn low(&self) -> Instance {
        self.next - self.recent.len() as Instance
    }

    /// Answers a [`Msg::Fetch`] from instance `from`: the decisions held from there on that
    /// fit one packet of about `budget` bytes, none if there are none, or [`Msg::Trimmed`]
    /// when `from` is no longer held.
    pub fn answer(&self, from: Instance, budget: usize) -> Option<Msg> {
        if from < self.low() {
            return Some(Msg::Trimmed { low: self.low() });
        }
        let skip = (from - self.low()) as usize;
        let mut bytes = 0;
        let values: Vec<Value> = self
            .recent
            .iter()
            .skip(skip)
            .take_while(|v| {
                bytes += v.size() + VOTE_BYTES;
                bytes <= budget
            })
            .cloned()
            .collect();
        (!values.is_empty()).then_some(Msg::Decided { k: from, values })
    }
}

#[cfg(test)]
mod tests;
