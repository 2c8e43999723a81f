//! Gap filling against trimmed acceptors, on a scripted NIC.

use super::RidgeServer;
use crate::mapping::EnsembleId;
use crate::paxos::Msg;
use crate::Config;
use multicast::{GroupId, Membership};
use std::sync::Arc;
use transport::recording::RecordingNic;
use transport::{Nanos, Op, Process, ProcessId};

/// One acceptor that trimmed the decision a learner needs next does not make the learner halt:
/// another acceptor may have learned less and still keep it, so the learner asks it at once,
/// and halts only once every acceptor it does not suspect has answered so. Halting on the
/// first answer lost learners on real threads whenever one acceptor ran ahead of the rest
/// (`check --runtime local --protocol ridge`, seeds 7 and 13 among 16 of 50).
#[test]
fn a_learner_halts_only_once_every_acceptor_has_trimmed_what_it_lacks() {
    let (mut server, mut nic, e) = learner_p2(Nanos(1_000));
    assert!(
        !trimmed_at(&mut server, &mut nic, e, 0),
        "halted on one answer"
    );
    assert!(
        !nic.take_ops().is_empty(),
        "the learner asks the next acceptor at once"
    );
    // The same acceptor again changes nothing: p1 has not answered yet.
    assert!(
        !trimmed_at(&mut server, &mut nic, e, 0),
        "halted though p1 never answered"
    );
    assert!(
        trimmed_at(&mut server, &mut nic, e, 1),
        "every other acceptor trimmed the decision: it cannot catch up"
    );
}

/// A learner asks an acceptor it does not suspect first: on real threads a learner whose gap
/// opened while p0 was paused asked p0 first and waited a suspicion timeout while p1 trimmed
/// past it (`check --runtime local --protocol ridge`, seed 2002). Told by p1 that the decision
/// is trimmed, with only suspected p0 left, it halts rather than wait for p0 for good: p0 may
/// have crashed, and a learner stuck without halting looks correct and delivers nothing
/// (`check --protocol ridge`, seed 5 with `retain=16`, `kill:1@1ms`, `pause:4@2ms+8ms`).
#[test]
fn a_learner_asks_live_acceptors_first_and_halts_when_only_suspected_ones_are_left() {
    let now = Nanos(10_000_000);
    let (mut server, mut nic, e) = learner_p2(now);
    // p1 was heard from just now; p0 never, past the suspicion timeout.
    server.detector.heard(ProcessId(1), now);
    assert!(server.detector.suspects(ProcessId(0), now));
    assert_eq!(
        server.fill_source(0, now),
        Some(ProcessId(1)),
        "p0 is suspected"
    );
    assert!(
        trimmed_at(&mut server, &mut nic, e, 1),
        "only suspected p0 is left to ask"
    );
    assert_eq!(written_to(&mut nic), [], "nobody is asked");
}

/// While no acceptor has said the decision is trimmed, a learner whose acceptors are all
/// suspected still asks them in turn (they may only be slow), rather than nobody.
#[test]
fn a_learner_whose_acceptors_are_all_suspected_still_asks_them() {
    let now = Nanos(10_000_000);
    let (server, _, _) = learner_p2(now);
    assert!(server.detector.suspects(ProcessId(0), now));
    assert!(server.detector.suspects(ProcessId(1), now));
    assert_eq!(server.fill_source(0, now), Some(ProcessId(0)));
}

/// A peer an outbox behind holds a coordinator's proposals while it is live, and no
/// longer once it is suspected (its queue is then dropped): the ensemble waits for a slow
/// acceptor rather than leave it behind without bound (seed 2002 on real threads: 5,000 Phase
/// 2a queued towards p1 and it never caught up).
#[test]
fn a_live_peer_an_outbox_behind_holds_back_proposals_a_suspected_one_does_not() {
    let now = Nanos(1_000);
    let (mut server, mut nic, _) = learner_p2_with(now, |cfg| cfg.outbox = 2);
    let slots = server.cfg.ring_slots;
    // Nothing is read at p0: its ring fills, then the outbox (2), then the overflow, which
    // holds proposals back once it is as long as the outbox.
    for sent in 0..slots + 4 {
        assert!(!server.backlogged(now), "after {sent} packets");
        server.post(&mut nic, ProcessId(0), b"phase 2a");
    }
    assert!(server.backlogged(now));
    let later = now
        .saturating_add(server.cfg.timing.suspect)
        .saturating_add(Nanos(1));
    assert!(!server.backlogged(later), "p0 is suspected by then");
}

/// Server p2 of one group of three (every server an acceptor of the group's ensemble), its
/// scripted NIC reading `now`, and that ensemble.
fn learner_p2(now: Nanos) -> (RidgeServer, RecordingNic, EnsembleId) {
    learner_p2_with(now, |_| {})
}

/// [`learner_p2`] with its configuration changed by `tune`.
fn learner_p2_with(
    now: Nanos,
    tune: impl FnOnce(&mut Config),
) -> (RidgeServer, RecordingNic, EnsembleId) {
    let mut cfg = Config::new(1, 3, 1);
    tune(&mut cfg);
    let cfg = Arc::new(cfg);
    let server = RidgeServer::new(cfg.clone(), GroupId(0), 2, 1);
    let specs: Vec<_> = (0..cfg.processes())
        .map(|_| Process::<RecordingNic>::regions(&server))
        .collect();
    let mut nic = RecordingNic::new(server.me, specs, 1);
    nic.set_now(now);
    let e = server.subs[0];
    let acceptors = cfg.ensemble(e).acceptors;
    assert_eq!(acceptors, [ProcessId(0), ProcessId(1), ProcessId(2)]);
    (server, nic, e)
}

/// Acceptor `p` answers the learner that it keeps decisions from 100 on only (the learner, new,
/// needs an earlier one); returns whether the learner halted.
fn trimmed_at(server: &mut RidgeServer, nic: &mut RecordingNic, e: EnsembleId, p: u32) -> bool {
    server.on_paxos(nic, ProcessId(p), e, Msg::Trimmed { low: 100 });
    server.halt.is_some()
}

/// The processes the ops posted since the last call write to.
fn written_to(nic: &mut RecordingNic) -> Vec<ProcessId> {
    let mut to: Vec<ProcessId> = nic
        .take_ops()
        .into_iter()
        .filter_map(|(_, op)| match op {
            Op::Write { dst, .. } => Some(dst.process),
            _ => None,
        })
        .collect();
    to.dedup();
    to
}
