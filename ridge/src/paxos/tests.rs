//! Algorithm 2 on hand-built ensembles: messages are handed from role to role in FIFO order by
//! a small driver, so each test states exactly who sends what.

use super::*;
use crate::value::Timestamp;
use bytes::Bytes;
use multicast::{DestSet, MsgId};
use std::collections::VecDeque;

fn p(i: u32) -> ProcessId {
    ProcessId(i)
}

fn value(client: u32, seq: u64, bytes: usize) -> Value {
    Value {
        id: MsgId { client, seq },
        ts: Timestamp::new(seq + 1, client),
        dests: DestSet::EMPTY,
        payload: Some(Bytes::from(vec![7u8; bytes])),
    }
}

/// Acceptors p1, p2, p3 (f = 1) and one learner, p4.
fn small_ensemble() -> Ensemble {
    Ensemble {
        acceptors: vec![p(1), p(2), p(3)],
        learners: vec![p(4)],
    }
}

/// p0 coordinating [`small_ensemble`] as `dissemination` says, its first round started with
/// p1 and p2 as its quorum (no promise in yet).
fn started(dissemination: Dissemination) -> Coordinator {
    let mut c = Coordinator::with(p(0), small_ensemble(), dissemination);
    c.start(Round::ZERO, 0, vec![p(1), p(2)]);
    c
}

/// Coordinator p0; acceptors p1, p2, p3 (f = 1); learners p1 .. p5 (p1-p3 also accept).
struct Net {
    ensemble: Ensemble,
    coordinator: Coordinator,
    acceptors: BTreeMap<ProcessId, Acceptor>,
    learners: BTreeMap<ProcessId, Learning>,
    queue: VecDeque<(ProcessId, Msg)>,
    /// Every message sent, for the assertions.
    sent: Vec<(ProcessId, Msg)>,
}

impl Net {
    fn new() -> Net {
        let ensemble = Ensemble {
            acceptors: vec![p(1), p(2), p(3)],
            learners: (1..=5).map(p).collect(),
        };
        Net {
            coordinator: Coordinator::new(p(0), ensemble.clone()),
            acceptors: ensemble
                .acceptors
                .iter()
                .map(|&a| (a, Acceptor::new(a)))
                .collect(),
            learners: ensemble
                .learners
                .iter()
                .map(|&l| (l, Learning::new(16)))
                .collect(),
            ensemble,
            queue: VecDeque::new(),
            sent: Vec::new(),
        }
    }

    fn send(&mut self, out: Out) {
        self.sent.extend(out.iter().cloned());
        self.queue.extend(out);
    }

    /// Delivers queued messages until none is left; `drop` loses those it matches.
    fn run(&mut self, drop: impl Fn(&ProcessId, &Msg) -> bool) {
        while let Some((to, msg)) = self.queue.pop_front() {
            if drop(&to, &msg) {
                continue;
            }
            let learners = self.ensemble.learners.clone();
            let out = match msg {
                Msg::Phase1a { rnd, from } => self
                    .acceptors
                    .get_mut(&to)
                    .map_or(Vec::new(), |a| a.on_phase1a(p(0), rnd, from, 4096)),
                Msg::Phase1b { .. } => unreachable!("promises are routed by `phase1`"),
                Msg::Phase2 {
                    k,
                    rnd,
                    value,
                    quorum,
                    count,
                } => {
                    if let Some(l) = self.learners.get_mut(&to) {
                        l.value(k, value.clone());
                    }
                    self.acceptors.get_mut(&to).map_or(Vec::new(), |a| {
                        a.on_phase2(&learners, k, rnd, value, quorum, count, |_| false)
                    })
                }
                Msg::Decision { k, key } => {
                    self.learners.get_mut(&to).expect("learner").decided(k, key);
                    Vec::new()
                }
                Msg::Distribute { k, value, quorum } => {
                    self.learners
                        .get_mut(&to)
                        .expect("learner")
                        .value(k, value.clone());
                    distribute(to, &learners, k, &value, &quorum)
                }
                Msg::Value { k, value } => {
                    self.learners.get_mut(&to).expect("learner").value(k, value);
                    Vec::new()
                }
                m => unreachable!("the normal case sends no {m:?}"),
            };
            self.send(out);
        }
    }

    /// Task 1 then Task 3 with every acceptor's promise routed to the coordinator.
    fn phase1(&mut self, above: Round, from: Instance, quorum: Vec<ProcessId>) -> Out {
        let asks = self.coordinator.start(above, from, quorum);
        self.sent.extend(asks.iter().cloned());
        let mut out = Vec::new();
        for (a, msg) in asks {
            let Msg::Phase1a { rnd, from } = msg else {
                unreachable!()
            };
            for (_, reply) in self
                .acceptors
                .get_mut(&a)
                .unwrap()
                .on_phase1a(p(0), rnd, from, 4096)
            {
                let Msg::Phase1b {
                    rnd,
                    low,
                    votes,
                    last,
                    ..
                } = reply
                else {
                    unreachable!()
                };
                let (o, displaced) = self.coordinator.on_phase1b(a, rnd, low, votes, last);
                assert!(displaced.is_empty(), "{displaced:?}");
                out.extend(o);
            }
        }
        out
    }

    fn decided(&mut self, l: u32) -> Vec<(Instance, MsgId)> {
        let learning = self.learners.get_mut(&p(l)).unwrap();
        std::iter::from_fn(|| learning.next_decided())
            .map(|(k, v)| (k, v.id))
            .collect()
    }
}

#[test]
fn a_value_travels_the_quorum_chain_and_one_distributor_hands_it_to_the_rest() {
    let mut net = Net::new();
    let none = net.phase1(Round::ZERO, 0, vec![p(1), p(2)]);
    assert!(none.is_empty(), "nothing voted: nothing to propose again");
    assert!(net.coordinator.ready());
    let v = value(50, 0, 100);
    let (k, out) = net.coordinator.propose(v.clone()).unwrap();
    assert_eq!(k, 0);
    net.send(out);
    net.run(|_, _| false);
    // The chain: coordinator -> a1 (count 0) -> a2 (count 1), then the decision from a2.
    let phase2: Vec<(ProcessId, usize)> = net
        .sent
        .iter()
        .filter_map(|(to, m)| match m {
            Msg::Phase2 { count, .. } => Some((*to, *count)),
            _ => None,
        })
        .collect();
    assert_eq!(phase2, vec![(p(1), 0), (p(2), 1)]);
    // One distributor outside Q (the least loaded, lowest id: p3), VALUE to p4 and p5 only.
    let distribute: Vec<ProcessId> = net
        .sent
        .iter()
        .filter(|(_, m)| matches!(m, Msg::Distribute { .. }))
        .map(|(to, _)| *to)
        .collect();
    assert_eq!(distribute, vec![p(3)]);
    let values: Vec<ProcessId> = net
        .sent
        .iter()
        .filter(|(_, m)| matches!(m, Msg::Value { .. }))
        .map(|(to, _)| *to)
        .collect();
    assert_eq!(values, vec![p(4), p(5)]);
    for l in 1..=5 {
        assert_eq!(net.decided(l), vec![(0, v.id)], "learner p{l}");
    }
}

#[test]
fn distributors_take_turns_by_bytes_distributed() {
    let mut net = Net::new();
    net.phase1(Round::ZERO, 0, vec![p(1), p(2)]);
    for (seq, bytes) in [(0, 1000), (1, 10), (2, 10), (3, 500)] {
        let (_, out) = net.coordinator.propose(value(50, seq, bytes)).unwrap();
        net.send(out);
        net.run(|_, _| false);
    }
    let distributors: Vec<u32> = net
        .sent
        .iter()
        .filter(|(_, m)| matches!(m, Msg::Distribute { .. }))
        .map(|(to, _)| to.0)
        .collect();
    // p3 takes 1000 B; p4 then p5 take 10 B each; p4 (10 B, lower id than p5) takes the next.
    assert_eq!(distributors, vec![3, 4, 5, 4]);
    for l in 1..=5 {
        assert_eq!(net.decided(l).len(), 4);
    }
}

#[test]
fn a_new_coordinator_proposes_again_what_a_quorum_member_voted() {
    // Round 1 gets a vote from a1 only (the forward to a2 is lost): nothing decided.
    let mut net = Net::new();
    net.phase1(Round::ZERO, 0, vec![p(1), p(2)]);
    let v = value(50, 0, 8);
    let (_, out) = net.coordinator.propose(v.clone()).unwrap();
    net.send(out);
    net.run(|to, m| *to == p(2) && matches!(m, Msg::Phase2 { .. }));
    assert!(net.decided(4).is_empty());
    let first = net.coordinator.c_rnd();
    // A new coordinator (same process here, higher round) with quorum a1, a3: a1 reports its
    // vote, and Paxos proposes that value again in instance 0, not a new one.
    let again = net.phase1(first, 0, vec![p(1), p(3)]);
    assert!(net.coordinator.c_rnd() > first);
    assert_eq!(again.len(), 1);
    let Msg::Phase2 { k, value: w, .. } = &again[0].1 else {
        panic!("{again:?}")
    };
    assert_eq!((*k, w.id), (0, v.id));
    net.send(again);
    net.run(|_, _| false);
    let (k, out) = net.coordinator.propose(value(50, 1, 8)).unwrap();
    assert_eq!(k, 1, "new values come after the instance proposed again");
    net.send(out);
    net.run(|_, _| false);
    for l in 1..=5 {
        let ids: Vec<u64> = net.decided(l).iter().map(|(_, id)| id.seq).collect();
        assert_eq!(ids, vec![0, 1], "learner p{l}");
    }
}

#[test]
fn an_acceptor_ignores_rounds_below_its_promise_and_holes_are_filled_with_null() {
    let mut a = Acceptor::new(p(1));
    let high = Round::above(Round::ZERO, p(7));
    let low = Round(high.0 - 1);
    assert_eq!(a.on_phase1a(p(7), high, 0, 4096).len(), 1);
    assert_eq!(
        a.on_phase1a(p(0), low, 0, 4096),
        vec![(
            p(0),
            Msg::Reject {
                rnd: low,
                promised: high
            }
        )],
        "no promise below the last, and the coordinator is told"
    );
    let low7 = Round(7); // counter 0, owner p7: below `high`
    let out = a.on_phase2(
        &[p(1)],
        0,
        low7,
        value(50, 0, 8),
        vec![p(1), p(2)],
        0,
        |_| false,
    );
    assert!(
        matches!(&out[..], [(to, Msg::Reject { .. })] if *to == p(7)) && a.vote(0).is_none(),
        "no vote below the promise: {out:?}"
    );

    // A coordinator that hears of a vote in instance 2 only proposes null in 0 and 1.
    let mut c = started(Dissemination::Ridge);
    let rnd = c.c_rnd();
    let voted = value(50, 3, 8);
    assert!(c
        .on_phase1b(p(1), rnd, 0, vec![(2, Round(5), voted.clone())], true)
        .0
        .is_empty());
    let (out, _) = c.on_phase1b(p(2), rnd, 0, Vec::new(), true);
    let proposed: Vec<(Instance, bool)> = out
        .iter()
        .map(|(_, m)| match m {
            Msg::Phase2 { k, value, .. } => (*k, value.is_null()),
            m => panic!("{m:?}"),
        })
        .collect();
    assert_eq!(proposed, vec![(0, true), (1, true), (2, false)]);
    assert_eq!(c.propose(value(50, 4, 8)).unwrap().0, 3);
}

#[test]
fn a_promise_too_large_for_one_packet_comes_in_several_and_counts_once_complete() {
    let mut a = Acceptor::new(p(1));
    let rnd = Round::above(Round::ZERO, p(0));
    for k in 0..10 {
        a.on_phase2(&[p(1)], k, rnd, value(50, k, 300), vec![p(1)], 0, |_| false);
    }
    let higher = Round::above(rnd, p(0));
    let out = a.on_phase1a(p(0), higher, 2, 1000);
    let chunks: Vec<(usize, bool)> = out
        .iter()
        .map(|(_, m)| match m {
            Msg::Phase1b { votes, last, .. } => (votes.len(), *last),
            m => panic!("{m:?}"),
        })
        .collect();
    assert!(chunks.len() > 1, "{chunks:?}");
    assert_eq!(
        chunks.iter().map(|c| c.0).sum::<usize>(),
        8,
        "votes from 2 on"
    );
    assert!(chunks.iter().rev().skip(1).all(|c| !c.1) && chunks.last().unwrap().1);

    // Trimmed votes are not reported, and the promise says below what nothing is proposed.
    a.trim(5);
    let out = a.on_phase1a(p(0), Round::above(higher, p(0)), 0, 100_000);
    let Msg::Phase1b { low, votes, .. } = &out[0].1 else {
        panic!("{out:?}")
    };
    assert_eq!((*low, votes.first().map(|v| v.0)), (5, Some(5)));
    assert_eq!(a.votes(), 5);
}

#[test]
fn a_new_round_proposes_its_own_unvoted_values_again_and_returns_displaced_ones() {
    let mut c = started(Dissemination::Ridge);
    let r1 = c.c_rnd();
    c.on_phase1b(p(1), r1, 0, Vec::new(), true);
    c.on_phase1b(p(2), r1, 0, Vec::new(), true);
    let mine: Vec<Value> = (0..3).map(|s| value(50, s, 8)).collect();
    for v in &mine {
        c.propose(v.clone()).unwrap();
    }
    assert_eq!(c.undecided(), 3);
    // A fallback round: instance 1 holds another coordinator's value with a higher vote.
    c.start(r1, 0, vec![p(1), p(3)]);
    let r2 = c.c_rnd();
    let theirs = value(60, 0, 8);
    c.on_phase1b(
        p(1),
        r2,
        0,
        vec![(1, Round(r1.0 + 1), theirs.clone())],
        true,
    );
    let (out, displaced) = c.on_phase1b(p(3), r2, 0, Vec::new(), true);
    let proposed: Vec<(Instance, MsgId)> = out
        .iter()
        .map(|(_, m)| match m {
            Msg::Phase2 { k, value, .. } => (*k, value.id),
            m => panic!("{m:?}"),
        })
        .collect();
    assert_eq!(
        proposed,
        vec![(0, mine[0].id), (1, theirs.id), (2, mine[2].id)]
    );
    assert_eq!(displaced, vec![mine[1].clone()], "to be proposed again");
    // Learning a decision of its own proposal is progress; another value there displaces it.
    assert_eq!(c.learned(0, mine[0].key()), (true, None));
    assert_eq!(c.learned(2, theirs.key()), (true, Some(mine[2].clone())));
    assert_eq!(c.learned(7, theirs.key()), (false, None));
}

#[test]
fn learners_pick_the_decided_value_among_rounds_and_answer_gaps_from_what_they_keep() {
    let mut l = Learning::new(3);
    let (a, b) = (value(50, 0, 8), value(51, 0, 8));
    l.value(0, a.clone());
    l.value(0, b.clone());
    l.decided(0, b.key());
    assert_eq!(l.next_decided().map(|(k, v)| (k, v.id)), Some((0, b.id)));
    // Instance 2's decision arrived, instance 1's did not: a gap.
    l.fill(2, value(50, 2, 8));
    assert!(l.gap() && l.next_decided().is_none());
    l.fill(1, value(50, 1, 8));
    for _ in 0..2 {
        l.next_decided().unwrap();
    }
    for k in 3..6 {
        l.fill(k, value(50, k, 8));
        l.next_decided().unwrap();
    }
    // Keeps the last 3 (instances 3, 4, 5).
    assert_eq!(l.low(), 3);
    assert_eq!(l.answer(2, 10_000), Some(Msg::Trimmed { low: 3 }));
    let Some(Msg::Decided { k, values }) = l.answer(4, 10_000) else {
        panic!()
    };
    assert_eq!((k, values.len()), (4, 2));
    assert_eq!(l.answer(6, 10_000), None, "nothing decided from 6 on");
}

#[test]
fn a_learner_finds_where_its_gap_starts_past_a_batch_not_yet_handed_out() {
    let mut l = Learning::new(8);
    // The live stream reached instance 9; instances 0..9 are missing.
    l.fill(9, value(50, 9, 8));
    assert_eq!(l.first_gap_from(0), Some(0));
    // A batch fills 0..4: nothing is handed out yet, and the gap starts at 4.
    for k in 0..4 {
        l.fill(k, value(50, k, 8));
    }
    assert_eq!(l.next(), 0, "filled, not handed out");
    assert_eq!(l.first_gap_from(4), Some(4));
    // A value without its decision is still missing; one with it is not.
    l.value(4, value(50, 4, 8));
    assert_eq!(l.first_gap_from(4), Some(4));
    l.decided(4, value(50, 4, 8).key());
    assert_eq!(l.first_gap_from(4), Some(5));
    for k in 5..9 {
        l.fill(k, value(50, k, 8));
    }
    assert_eq!(l.first_gap_from(5), None, "0..=9 all known");
    while l.next_decided().is_some() {}
    assert_eq!((l.next(), l.first_gap_from(0)), (10, None));
}

#[test]
fn the_last_acceptor_passes_over_a_suspected_distributor() {
    let mut b = Balancer::default();
    let learners = [p(1), p(2), p(3), p(4)];
    let v = value(50, 0, 8);
    assert_eq!(b.pick(&learners, &[p(1), p(2)], &v, |_| false), Some(p(3)));
    // p4 has distributed less, but is suspected: p3 again.
    assert_eq!(
        b.pick(&learners, &[p(1), p(2)], &v, |l| l == p(4)),
        Some(p(3))
    );
    // Everyone outside Q suspected: still someone (the least loaded).
    assert_eq!(b.pick(&learners, &[p(1), p(2)], &v, |_| true), Some(p(4)));
}

#[test]
fn dedicated_acceptors_distribute_only_when_every_server_is_suspected() {
    // Servers p1, p2; acceptors p5, p6, p7 (learners after the servers); Q = {p5, p6}.
    let mut b = Balancer::sparing(vec![p(5), p(6), p(7)]);
    let learners = [p(1), p(2), p(5), p(6), p(7)];
    let q = [p(5), p(6)];
    let v = value(50, 0, 8);
    // p7 has distributed nothing, yet the servers take turns.
    assert_eq!(b.pick(&learners, &q, &v, |_| false), Some(p(1)));
    assert_eq!(b.pick(&learners, &q, &v, |_| false), Some(p(2)));
    assert_eq!(b.pick(&learners, &q, &v, |_| false), Some(p(1)));
    // Both servers suspected: the spared acceptor outside Q.
    assert_eq!(b.pick(&learners, &q, &v, |l| l < p(5)), Some(p(7)));
}

#[test]
fn with_optimistic_deliveries_the_last_acceptor_sends_ids_only() {
    let learners: Vec<ProcessId> = (1..=5).map(p).collect();
    let rnd = Round::above(Round::ZERO, p(0));
    let v = value(50, 0, 8);
    let mut a = Acceptor::with(p(2), Dissemination::Ridge).ids_only();
    let out = a.on_phase2(&learners, 0, rnd, v.clone(), vec![p(1), p(2)], 1, |_| false);
    assert_eq!(out.len(), 5, "{out:?}");
    assert!(out
        .iter()
        .all(|(_, m)| matches!(m, Msg::Decision { key, .. } if *key == v.key())));
    // A null message has no copy anywhere: distributed as usual.
    let null = Value::null(MsgId { client: 0, seq: 9 }, v.ts);
    let out = a.on_phase2(&learners, 1, rnd, null, vec![p(1), p(2)], 1, |_| false);
    assert!(out.iter().any(|(_, m)| matches!(m, Msg::Distribute { .. })));
    // The baselines keep carrying values.
    let mut ring = Acceptor::with(p(2), Dissemination::Ring).ids_only();
    let out = ring.on_phase2(&learners, 0, rnd, v, vec![p(1), p(2)], 1, |_| false);
    assert!(out.iter().any(|(_, m)| matches!(m, Msg::Relay { .. })));
}

#[test]
fn the_ring_baseline_passes_the_value_along_the_learners_outside_the_quorum() {
    let mut a = Acceptor::with(p(2), Dissemination::Ring);
    let learners: Vec<ProcessId> = (1..=5).map(p).collect();
    let rnd = Round::above(Round::ZERO, p(0));
    let v = value(50, 0, 8);
    let out = a.on_phase2(&learners, 0, rnd, v.clone(), vec![p(1), p(2)], 1, |_| false);
    let relays: Vec<ProcessId> = out
        .iter()
        .filter(|(_, m)| matches!(m, Msg::Relay { .. }))
        .map(|(to, _)| *to)
        .collect();
    assert_eq!(relays, vec![p(3)], "to the first learner outside Q only");
    assert_eq!(out.len(), 6, "and the decision to every learner");
    let hop = |me: u32| relay(p(me), &learners, 0, v.clone(), vec![p(1), p(2)], |_| false);
    assert_eq!(hop(3)[0].0, p(4));
    assert_eq!(hop(4)[0].0, p(5));
    assert!(hop(5).is_empty(), "the last learner keeps it");
    // A suspected learner is passed over, by the last acceptor and along the ring.
    let out = a.on_phase2(
        &learners,
        1,
        rnd,
        value(51, 1, 8),
        vec![p(1), p(2)],
        1,
        |l| l == p(3),
    );
    assert!(out
        .iter()
        .any(|(to, m)| *to == p(4) && matches!(m, Msg::Relay { .. })));
    let skip = relay(p(3), &learners, 0, v.clone(), vec![p(1), p(2)], |l| {
        l == p(4)
    });
    assert_eq!(skip[0].0, p(5));
}

#[test]
fn the_direct_baseline_decides_on_a_majority_of_votes_of_one_round() {
    let ensemble = small_ensemble();
    let mut c = started(Dissemination::Direct);
    let rnd = c.c_rnd();
    c.on_phase1b(p(1), rnd, 0, Vec::new(), true);
    c.on_phase1b(p(2), rnd, 0, Vec::new(), true);
    let v = value(50, 0, 8);
    let (_, out) = c.propose(v.clone()).unwrap();
    assert_eq!(
        out.iter().map(|(to, _)| *to).collect::<Vec<_>>(),
        ensemble.acceptors,
        "2a to every acceptor"
    );
    let mut a = Acceptor::with(p(1), Dissemination::Direct);
    let votes = a.on_phase2a(&ensemble.learners, 0, rnd, v.clone());
    assert!(matches!(&votes[..], [(to, Msg::Accepted { .. })] if *to == p(4)));
    let mut l = Learning::new(4);
    // A vote of an older round for another value does not count with the newer ones.
    l.accepted(p(3), 0, Round(1), value(60, 0, 8), 2);
    l.accepted(p(1), 0, rnd, v.clone(), 2);
    assert!(
        l.next_decided().is_none(),
        "one vote of the round is not a majority"
    );
    l.accepted(p(1), 0, rnd, v.clone(), 2);
    assert!(
        l.next_decided().is_none(),
        "the same acceptor twice is one vote"
    );
    l.accepted(p(2), 0, rnd, v.clone(), 2);
    assert_eq!(l.next_decided().map(|(k, w)| (k, w.id)), Some((0, v.id)));
}

/// Pins R1 (review): with optimistic deliveries a DECISION named an id only, and a learner
/// paired it with the first value it held under that id. Ids did not name one content (a
/// multicast refused for backpressure came back under its id with a new timestamp and new
/// destinations, after its copies had gone out), so replicas delivered one message with
/// different timestamps. The DECISION now carries the value's key: a value of other content
/// under the decided id is never handed out, and does not keep the right one out.
#[test]
fn decision_never_pairs_with_a_different_copy() {
    let mut l = Learning::new(4);
    let right = value(50, 0, 8);
    let wrong = Value {
        ts: Timestamp::new(99, 50),
        dests: DestSet::of([multicast::GroupId(1)]).unwrap(),
        ..right.clone()
    };
    // The stale copy first, then the decision: nothing to hand out yet.
    l.value(0, wrong.clone());
    l.decided(0, right.key());
    assert_eq!(
        l.next_decided(),
        None,
        "paired with a copy of other content"
    );
    assert_eq!(l.awaiting(right.key()), Some(0));
    // A stale copy after the decision is not kept; the right value completes the instance.
    l.value(0, wrong);
    l.value(0, right.clone());
    assert_eq!(l.next_decided(), Some((0, right)));
}
