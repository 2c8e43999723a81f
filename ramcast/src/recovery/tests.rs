//! Acknowledging a new leader's proposal for a slot already delivered, on a scripted NIC.
//!
//! One group of three, four clients with 1024 slots each. Follower p2 delivers client 0's first
//! message in the first round, ordered by acknowledgements the next leader never sees (p0's
//! own went down with it). p1 takes over in round `<1,1>`: its Task 9 proposes the message
//! again by write, and it needs p2's acknowledgement of the new round for a quorum. p2 has
//! nothing pending, so only `sweep_delivered` acknowledges, and a poll that finds nothing to do
//! parks p2 until something lands (in a run, the leader's heartbeat, every 20 us). Going four
//! slots per poll round the 4 x 1024 slots, the sweep reached the slot up to 1024 polls later:
//! in harness seed 299 of `check --protocol heron`, the new leader held two messages, and
//! every request behind them, for 8 ms and 17 ms. The announcement that
//! the round is complete follows the proposals on the same queue pair, so p2 acknowledges on
//! the poll that receives it.

use crate::layout::{ack_word, local, M, T};
use crate::server::RamcastServer;
use crate::stamp::Stamp;
use crate::wire::Wire;
use crate::{Config, RamcastClient};
use bytes::Bytes;
use multicast::{Client, DestSet, GroupId, Membership, Server};
use std::sync::Arc;
use transport::recording::RecordingNic;
use transport::{Nic, Op, Process, ProcessId, Recv};

#[test]
fn a_delivered_slot_is_acknowledged_in_a_new_round_once_it_is_announced_complete() {
    let mut cfg = Config::new(1, 3, 4);
    cfg.slots = 1024;
    let cfg = Arc::new(cfg);
    let g = GroupId(0);
    let (p1, me) = (ProcessId(1), ProcessId(2));
    let mut specs: Vec<_> = (0..cfg.replicas)
        .map(|r| Process::<RecordingNic>::regions(&RamcastServer::new(cfg.clone(), g, r)))
        .collect();
    let mut client = RamcastClient::new(cfg.clone(), 0);
    for _ in 0..cfg.clients {
        specs.push(Process::<RecordingNic>::regions(&client));
    }
    let mut nic = RecordingNic::new(me, specs.clone(), 1);
    let mut server = RamcastServer::new(cfg.clone(), g, 2);
    let layout = server.layout.clone();

    // Client 0's first message lands at p2.
    let mut cnic = RecordingNic::new(cfg.client(0), specs, 1);
    let id = client
        .try_multicast(&mut cnic, DestSet::of([g]).unwrap(), b"x")
        .unwrap();
    for (_, op) in cnic.take_ops() {
        if let Op::Write { dst, data, .. } = op {
            if dst.process == me {
                nic.write_local(local(dst.region, dst.offset), &data.to_bytes())
                    .unwrap();
            }
        }
    }
    server.poll(&mut nic);

    // Round <0,0>: p0 proposes 5 and p0 and p1 acknowledge it; p2 acknowledges and delivers.
    let (seq, tmp, first) = (0, Stamp::new(5, 0), server.current_round());
    let propose = |nic: &mut RecordingNic, s: &RamcastServer, rnd: Stamp| {
        let t = s.t_bytes(seq, tmp, rnd);
        nic.write_local(local(T, layout.t_entry(0, seq, g)), &t)
            .unwrap();
    };
    propose(&mut nic, &server, first);
    for rank in [0, 1] {
        let at = local(M, layout.ack(0, seq, g, rank));
        nic.store_u64(at, ack_word(seq, first)).unwrap();
    }
    server.poll(&mut nic);
    assert_eq!(server.poll_delivery().map(|d| d.msg), Some(id));

    // p1 runs for leader in round <1,1>; p2 promises it.
    let round = Stamp::new(1, 1);
    let catch_up = Wire::CatchUp {
        round: round.0,
        fus: vec![0; cfg.clients],
    };
    nic.push_recv(Recv::Message {
        from: p1,
        data: Bytes::from(catch_up.encode()),
    });
    server.poll(&mut nic);
    assert_eq!(server.current_round(), round);
    nic.take_ops();

    // p1's Task 9 proposes 5 again in its round (it holds only its own acknowledgement of
    // <0,0>), then announces the round complete.
    propose(&mut nic, &server, round);
    let complete = Wire::Complete { round: round.0 };
    nic.push_recv(Recv::Message {
        from: p1,
        data: Bytes::from(complete.encode()),
    });
    server.poll(&mut nic);

    // p2's acknowledgement of the new round went to p1.
    let at = layout.ack(0, seq, g, 2);
    let want = ack_word(seq, round).to_le_bytes();
    let acked = nic.take_ops().into_iter().any(|(_, op)| {
        matches!(op, Op::Write { dst, data, .. }
            if dst.process == p1 && dst.region == M && dst.offset == at && data.to_bytes()[..] == want)
    });
    assert!(
        acked,
        "p2 did not acknowledge round {round} of a slot it delivered on the poll that received the announcement"
    );
}
