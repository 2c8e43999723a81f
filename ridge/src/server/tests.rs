//! Gap filling against trimmed acceptors, on a scripted NIC.

use super::RidgeServer;
use crate::paxos::Msg;
use crate::Config;
use multicast::{GroupId, Membership};
use std::sync::Arc;
use transport::recording::RecordingNic;
use transport::{Nanos, Process, ProcessId};

/// One acceptor that trimmed the decision a learner needs next does not make the learner halt:
/// another acceptor may have learned less and still keep it, so the learner asks it at once,
/// and halts only once every acceptor it does not suspect has answered so. Halting on the
/// first answer lost learners on real threads whenever one acceptor ran ahead of the rest
/// (`check --runtime local --protocol ridge`, seeds 7 and 13 among 16 of 50).
#[test]
fn a_learner_halts_only_once_every_acceptor_has_trimmed_what_it_lacks() {
    let cfg = Arc::new(Config::new(1, 3, 1));
    let g = GroupId(0);
    let mut server = RidgeServer::new(cfg.clone(), g, 2, 1);
    let specs: Vec<_> = (0..cfg.processes())
        .map(|_| Process::<RecordingNic>::regions(&server))
        .collect();
    let mut nic = RecordingNic::new(server.me, specs, 1);
    nic.set_now(Nanos(1_000));
    let e = server.subs[0];
    let acceptors = cfg.ensemble(e).acceptors;
    assert_eq!(acceptors, [ProcessId(0), ProcessId(1), ProcessId(2)]);
    let trimmed = Msg::Trimmed { low: 100 };

    server.on_paxos(&mut nic, ProcessId(0), e, trimmed.clone());
    assert!(server.halt.is_none(), "halted on one acceptor's answer");
    assert!(
        !nic.take_ops().is_empty(),
        "the learner asks the next acceptor at once"
    );
    // The same acceptor again changes nothing: p1 has not answered yet.
    server.on_paxos(&mut nic, ProcessId(0), e, trimmed.clone());
    assert!(server.halt.is_none(), "halted though p1 never answered");

    server.on_paxos(&mut nic, ProcessId(1), e, trimmed);
    assert!(
        server.halt.is_some(),
        "every other acceptor trimmed the decision: it cannot catch up"
    );
}
