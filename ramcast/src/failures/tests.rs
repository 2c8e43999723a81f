//! Task 9 with completed rounds, and stale queue-pair failures, on a scripted NIC.
//!
//! Task 9: one group of three. Member p1 runs for leader after promising p2's round `<3,2>`. p2 reports
//! that round complete, a proposal of it for client 0's message (9) and an older round's
//! proposal for client 1's (4); nobody proposed for client 2's. The new leader must adopt 9,
//! propose fresh timestamps (above 9) for the other two, and post, to each follower: the
//! adopted proposal, then the announcement that its round is complete, then the fresh ones. With
//! two groups, the other group's leader gets the announcement too, after the proposals.

use crate::layout::T;
use crate::scripted::*;
use crate::server::{RamcastServer, Role};
use crate::stamp::Stamp;
use crate::wire::{Pend, Wire};
use crate::{Config, RamcastClient};
use multicast::{Client, DestSet, GroupId, Membership};
use std::sync::Arc;
use transport::recording::RecordingNic;
use transport::{Completion, LocalAddr, Nic, Op, OpKind, Process, ProcessId, Status, WrId};

/// Member p1 of group 0 on a recording NIC, in a run of `groups` groups of three and `clients`
/// clients: the server each test here makes run for leader or fail a queue pair.
fn p1_of_group_0(groups: usize, clients: usize) -> (Arc<Config>, RecordingNic, RamcastServer) {
    let cfg = Arc::new(Config::new(groups, 3, clients));
    let nic = RecordingNic::new(ProcessId(1), specs(&cfg), 1);
    let server = RamcastServer::new(cfg.clone(), GroupId(0), 1);
    (cfg, nic, server)
}

#[test]
fn a_value_older_than_a_completed_round_is_replaced_and_the_announcement_precedes_fresh_ones() {
    let (cfg, mut nic, mut server) = p1_of_group_0(1, 3);
    let g = GroupId(0);
    let (me, p2) = (ProcessId(1), ProcessId(2));
    let specs = specs(&cfg);
    let mut clients: Vec<RamcastClient> = (0..cfg.clients)
        .map(|i| RamcastClient::new(cfg.clone(), i))
        .collect();

    // Each client multicasts one message to group 0; its writes land at p1.
    let only: DestSet = "0".parse().unwrap();
    for (i, c) in clients.iter_mut().enumerate() {
        let mut cnic = RecordingNic::new(cfg.client(i), specs.clone(), 1);
        c.try_multicast(&mut cnic, only, b"x").unwrap();
        land_writes(cnic.take_ops(), me, &mut nic);
    }
    server.poll(&mut nic);
    let entry = |s: &RamcastServer, c: u32| s.slot(c, 0).unwrap().entry.clone().unwrap();

    // p1 promised p2's round <3,2>, then runs for leader; its own reply goes at once.
    let complete = Stamp::new(3, 2);
    server.rounds[0] = complete;
    server.start_candidacy(&mut nic);
    server.answer_catch_ups(&mut nic);
    let Role::Candidate(cand) = &server.role else {
        panic!("not a candidate");
    };
    let round = cand.round;
    let pend = |c: u32, ts: Option<(u64, Stamp)>| Pend {
        client: c,
        seq: 0,
        entry: entry(&server, c).raw.to_vec(),
        ts: ts.map(|(t, r)| (Stamp::new(t, 0).0, r.0)),
    };
    let reply = vec![
        pend(0, Some((9, complete))),
        pend(1, Some((4, Stamp::new(2, 0)))),
        pend(2, None),
    ];
    server.on_my_state(&mut nic, p2, round, reply, true, complete);
    assert!(server.is_leader(), "a quorum of replies makes p1 lead");
    nic.take_ops();
    server.poll(&mut nic);

    // What p1 posted to p2, in order: proposals (landed in a copy of p2's memory, read back
    // after each) and the announcement.
    let mut at_p2 = RecordingNic::new(p2, specs, 1);
    let mut reader = RamcastServer::new(cfg.clone(), g, 2);
    let mut seen: Vec<String> = Vec::new();
    for (_, op) in nic.take_ops() {
        match op {
            Op::Write { dst, data, .. } if dst.process == p2 && dst.region == T => {
                let at = LocalAddr::new(dst.region, dst.offset);
                at_p2.write_local(at, &data.to_bytes()).unwrap();
                let c = (0..cfg.clients as u32)
                    .find(|&c| reader.layout.t_entry(c as usize, 0, g) == dst.offset)
                    .expect("a T entry of slot 0");
                let (tmp, rnd) = reader.read_t(&at_p2, c, 0, g).unwrap();
                assert_eq!(rnd, round, "proposed in the new round");
                seen.push(format!("c{c}={}", tmp.time()));
            }
            Op::Send { to, data, .. } if to == p2 => {
                if let Ok(Wire::Complete { round: r }) = Wire::decode(&data) {
                    assert_eq!(Stamp(r), round);
                    seen.push("complete".into());
                }
            }
            _ => {}
        }
    }
    assert_eq!(seen, ["c0=9", "complete", "c1=10", "c2=11"]);
    assert_eq!(server.completed, round);
}

/// A message flushed after the reconnect that replaced its queue pair is sent again, and the
/// queue pair is not reconnected again: the resync after the reconnect covers the rest. Before
/// this, each late flush reconnected, which flushed the resync's own writes, which reconnected
/// again: a livelock on real threads (`check --runtime local` ramcast seeds 4 and 33).
#[test]
fn a_flush_from_before_the_latest_reconnect_resends_and_does_not_reconnect_again() {
    let (_, mut nic, mut server) = p1_of_group_0(1, 1);
    let p2 = ProcessId(2);
    server.poll(&mut nic);
    nic.take_ops();
    let (first, second) = (b"first".to_vec(), b"second".to_vec());
    server.send_bytes(&mut nic, p2, first.clone());
    server.send_bytes(&mut nic, p2, second.clone());
    let sent: Vec<WrId> = nic.take_ops().into_iter().map(|(wr, _)| wr).collect();
    // One step of the test: the op `wr` to p2 completes with `status`; the server polls once,
    // and what it posted is returned.
    let mut complete = |wr: WrId, kind: OpKind, status: Status| {
        nic.push_completion(Completion {
            wr,
            kind,
            peer: p2,
            status,
            value: None,
        });
        server.poll(&mut nic);
        nic.take_ops()
    };
    let reconnects = |ops: &[(WrId, Op)]| -> Vec<WrId> {
        ops.iter()
            .filter(|(_, op)| matches!(op, Op::Reconnect { peer } if *peer == p2))
            .map(|&(wr, _)| wr)
            .collect()
    };
    let sends_of = |ops: &[(WrId, Op)], bytes: &[u8]| {
        ops.iter()
            .filter(|(_, op)| matches!(op, Op::Send { to, data, .. } if *to == p2 && data[..] == *bytes))
            .count()
    };

    // The first message's flush breaks the queue pair: one reconnect.
    let ops = complete(sent[0], OpKind::Send, Status::Flushed);
    let r = reconnects(&ops);
    assert_eq!(r.len(), 1, "one reconnect for the broken queue pair");

    // The reconnect completes first; the first message goes again.
    let ops = complete(r[0], OpKind::Reconnect, Status::Success);
    assert_eq!(
        sends_of(&ops, &first),
        1,
        "the flushed message is sent again"
    );

    // Then the old queue pair's second message is flushed: sent again, no reconnect.
    let ops = complete(sent[1], OpKind::Send, Status::Flushed);
    assert_eq!(
        sends_of(&ops, &second),
        1,
        "the late-flushed message is sent again"
    );
    assert_eq!(reconnects(&ops), [], "a stale flush does not reconnect");
    assert!(!server.broken.contains_key(&p2));
}

/// Task 9 proposes to the other destination groups' leaders too, and a leader there that
/// already delivered the message forwards the new round's proposal to its followers only when
/// it sweeps its delivered slots (`crate::recovery`): the new leader announces its round
/// complete to them as well, after its proposals on the same queue pair (harness seed 1388 of
/// `check --protocol heron`; the receiving side is pinned in `recovery::tests` by
/// `another_groups_new_proposal_of_a_delivered_slot_is_forwarded_once_it_is_announced_complete`).
#[test]
fn the_announcement_goes_to_the_other_groups_leaders_after_the_proposals() {
    let (cfg, mut nic, mut server) = p1_of_group_0(2, 1);
    let (g0, g1) = (GroupId(0), GroupId(1));
    let (me, p2, p3, p4) = (ProcessId(1), ProcessId(2), ProcessId(3), ProcessId(4));
    let mut client = RamcastClient::new(cfg.clone(), 0);

    // Client 0 multicasts to both groups; its writes land at p1.
    let mut cnic = RecordingNic::new(cfg.client(0), specs(&cfg), 1);
    client
        .try_multicast(&mut cnic, DestSet::of([g0, g1]).unwrap(), b"x")
        .unwrap();
    land_writes(cnic.take_ops(), me, &mut nic);
    server.poll(&mut nic);
    let entry = server.slot(0, 0).and_then(|x| x.entry.clone()).unwrap();

    // p0 crashed; p1 runs for leader. p2 reports p0's proposal 5 of round <0,0>; p3 and p4
    // (group 1, which delivered the message) report nothing for group 0 to adopt.
    server.start_candidacy(&mut nic);
    server.answer_catch_ups(&mut nic);
    let Role::Candidate(cand) = &server.role else {
        panic!("not a candidate");
    };
    let round = cand.round;
    let first = Stamp::new(0, 0);
    let reply = vec![Pend {
        client: 0,
        seq: 0,
        entry: entry.raw.to_vec(),
        ts: Some((Stamp::new(5, 0).0, first.0)),
    }];
    server.on_my_state(&mut nic, p2, round, reply, true, first);
    for p in [p3, p4] {
        server.on_my_state(&mut nic, p, round, Vec::new(), true, Stamp::new(0, 3));
    }
    assert!(server.is_leader(), "a quorum of every group makes p1 lead");
    nic.take_ops();
    server.poll(&mut nic);

    // What p1 posted to group 1's leader p3, in order.
    let t_at = server.layout.t_entry(0, 0, g0);
    let mut seen: Vec<&str> = Vec::new();
    for (_, op) in nic.take_ops() {
        match op {
            Op::Write { dst, .. } if dst.process == p3 && dst.region == T && dst.offset == t_at => {
                seen.push("proposal")
            }
            Op::Send { to, data, .. } if to == p3 => {
                if let Ok(Wire::Complete { round: r }) = Wire::decode(&data) {
                    assert_eq!(Stamp(r), round);
                    seen.push("complete");
                }
            }
            _ => {}
        }
    }
    assert_eq!(seen, ["proposal", "complete"]);
}
