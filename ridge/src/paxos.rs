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
//!
//! The messages, rounds and what the roles share live here; each role has a module of its own:
//! `acceptor`, `coordinator`, and the learners' side in `learning`.

use crate::value::{Key, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use transport::ProcessId;

mod acceptor;
mod coordinator;
mod learning;

pub use acceptor::Acceptor;
pub use coordinator::Coordinator;
pub use learning::{distribute, relay, Learning};

/// A consensus instance of an ensemble.
pub type Instance = u64;

/// A round number: a counter in the high bits and the coordinator's process id in the low 16,
/// so two coordinators never pick the same round (Task 1, line 6: "unique value higher than
/// current c-rnd"). `Round::ZERO` is no round at all (the paper's 0).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// Bytes a vote adds to a Phase 1b packet besides its payload (instance, round, id,
/// timestamp, destinations, lengths), with room.
const VOTE_BYTES: usize = 96;

#[cfg(test)]
mod tests;
