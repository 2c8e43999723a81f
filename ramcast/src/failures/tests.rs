//! Task 9 with completed rounds, on a scripted NIC.
//!
//! One group of three. Member p1 runs for leader after promising p2's round `<3,2>`. p2 reports
//! that round complete, a proposal of it for client 0's message (9) and an older round's
//! proposal for client 1's (4); nobody proposed for client 2's. The new leader must adopt 9,
//! propose fresh timestamps (above 9) for the other two, and post, to each follower: the
//! adopted proposal, then the announcement that its round is complete, then the fresh ones.

use crate::layout::T;
use crate::server::{RamcastServer, Role};
use crate::stamp::Stamp;
use crate::wire::{Pend, Wire};
use crate::{Config, RamcastClient};
use multicast::{Client, DestSet, GroupId, Membership};
use std::sync::Arc;
use transport::recording::RecordingNic;
use transport::{LocalAddr, Nic, Op, Process, ProcessId};

#[test]
fn a_value_older_than_a_completed_round_is_replaced_and_the_announcement_precedes_fresh_ones() {
    let cfg = Arc::new(Config::new(1, 3, 3));
    let g = GroupId(0);
    let (me, p2) = (ProcessId(1), ProcessId(2));
    let mut specs: Vec<_> = (0..cfg.replicas)
        .map(|r| Process::<RecordingNic>::regions(&RamcastServer::new(cfg.clone(), g, r)))
        .collect();
    let mut clients: Vec<RamcastClient> = (0..cfg.clients)
        .map(|i| RamcastClient::new(cfg.clone(), i))
        .collect();
    specs.extend(clients.iter().map(Process::<RecordingNic>::regions));
    let mut nic = RecordingNic::new(me, specs.clone(), 1);
    let mut server = RamcastServer::new(cfg.clone(), g, 1);

    // Each client multicasts one message to group 0; its writes land at p1.
    let only: DestSet = "0".parse().unwrap();
    for (i, c) in clients.iter_mut().enumerate() {
        let mut cnic = RecordingNic::new(cfg.client(i), specs.clone(), 1);
        c.try_multicast(&mut cnic, only, b"x").unwrap();
        for (_, op) in cnic.take_ops() {
            if let Op::Write { dst, data, .. } = op {
                if dst.process == me {
                    let at = LocalAddr::new(dst.region, dst.offset);
                    nic.write_local(at, &data.to_bytes()).unwrap();
                }
            }
        }
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
