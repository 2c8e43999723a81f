//! Learners (Task 5): how a decided value reaches them (Ridge's distributing learner, the
//! ring baseline's relay) and a learner's view of an ensemble's decisions, handed out in
//! instance order and kept to answer other learners' fetches (section 4.4.3).

use super::{Instance, Msg, Out, Round, VOTE_BYTES};
use crate::value::{Key, Value};
use std::collections::BTreeMap;
use transport::ProcessId;

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
