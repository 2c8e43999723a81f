//! A new leader's Task 9 proposal for a slot already delivered, on a scripted NIC: acknowledged
//! by a follower, and forwarded by another group's leader, once the round is announced complete.
//!
//! The first test (the second is described at it): one group of three, four clients with 1024 slots
//! each. Follower p2 delivers client 0's first message in the first round, ordered by
//! acknowledgements the next leader never sees (p0's own went down with it). p1 takes over in round
//! `<1,1>`: its Task 9 proposes the message again by write, and it needs p2's acknowledgement of
//! the new round for a quorum. p2 has nothing pending, so only `sweep_delivered` acknowledges, and
//! a poll that finds nothing to do parks p2 until something lands (in a run, the leader's
//! heartbeat, every 20 us). Going four slots per poll round the 4 x 1024 slots, the sweep reached
//! the slot up to 1024 polls later: in harness seed 299 of `check --protocol heron`, the new leader
//! held two messages, and every request behind them, for 8 ms and 17 ms. The announcement that the
//! round is complete follows the proposals on the same queue pair, so p2 acknowledges on the poll
//! that receives it.

use crate::layout::{ack_word, local, M, T};
use crate::scripted::*;
use crate::server::RamcastServer;
use crate::stamp::Stamp;
use crate::wire::Wire;
use crate::{Config, RamcastClient};
use multicast::{Client, DestSet, GroupId, Membership, Server};
use std::sync::Arc;
use transport::recording::RecordingNic;
use transport::{Nic, Op, Process, ProcessId};

#[test]
fn a_delivered_slot_is_acknowledged_in_a_new_round_once_it_is_announced_complete() {
    let mut cfg = Config::new(1, 3, 4);
    cfg.slots = 1024;
    let cfg = Arc::new(cfg);
    let g = GroupId(0);
    let (p1, me) = (ProcessId(1), ProcessId(2));
    let specs = specs(&cfg);
    let mut client = RamcastClient::new(cfg.clone(), 0);
    let mut nic = RecordingNic::new(me, specs.clone(), 1);
    let mut server = RamcastServer::new(cfg.clone(), g, 2);
    let layout = server.layout.clone();

    // Client 0's first message lands at p2.
    let mut cnic = RecordingNic::new(cfg.client(0), specs, 1);
    let id = client
        .try_multicast(&mut cnic, DestSet::of([g]).unwrap(), b"x")
        .unwrap();
    land_writes(cnic.take_ops(), me, &mut nic);
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
    receive_catch_up(&mut nic, &cfg, p1, round);
    server.poll(&mut nic);
    assert_eq!(server.current_round(), round);
    nic.take_ops();

    // p1's Task 9 proposes 5 again in its round (it holds only its own acknowledgement of
    // <0,0>), then announces the round complete.
    propose(&mut nic, &server, round);
    receive(&mut nic, p1, &Wire::Complete { round: round.0 });
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

/// Another group's new leader re-proposes, in Task 9, a message this leader already delivered;
/// this leader forwards the new round's proposal to its followers on the announcement.
///
/// Two groups of three, one client with 1024 slots. Client 0 multicasts to both groups. Group
/// 1's leader p3 proposes, its followers acknowledge, and it holds group 0's proposal of round
/// `<0,0>` with acknowledgements from p0 and p2, so it delivers. p0 crashed right after its
/// acknowledgement, which reached p3 only: p3's followers hold the same proposal with p2's
/// acknowledgement alone. p1 takes group 0 over in round `<1,1>`: Task 9 proposes the message
/// again, by write into p3's `T`, and p1 and p2 acknowledge round `<1,1>` to every destination.
/// Group 1's followers cannot order the message (nor anything behind it) until they hold group
/// 0's proposal of round `<1,1>`, which only p3 forwards (Task 4). p3 has delivered the slot,
/// so it forwarded only when its sweep of delivered slots, four per poll, came round to it:
/// 1024 polls later. In harness seed 1388 of `check --protocol heron`, p4 and p5 waited 6.8 ms
/// and every client stalled. p1 now announces its round complete to the other groups' leaders
/// too, after its proposals on the same queue pair, and p3 forwards on the poll that receives
/// the announcement.
#[test]
fn another_groups_new_proposal_of_a_delivered_slot_is_forwarded_once_it_is_announced_complete() {
    let mut cfg = Config::new(2, 3, 1);
    cfg.slots = 1024;
    let cfg = Arc::new(cfg);
    let (g0, g1) = (GroupId(0), GroupId(1));
    let (p1, me) = (ProcessId(1), ProcessId(3));
    let specs = specs(&cfg);
    let mut client = RamcastClient::new(cfg.clone(), 0);
    let mut nic = RecordingNic::new(me, specs.clone(), 1);
    let mut server = RamcastServer::new(cfg.clone(), g1, 0);
    assert!(server.is_leader());
    let layout = server.layout.clone();

    // Client 0's first message, to both groups (slot 0 in each), lands at p3.
    let mut cnic = RecordingNic::new(cfg.client(0), specs, 1);
    let id = client
        .try_multicast(&mut cnic, DestSet::of([g0, g1]).unwrap(), b"x")
        .unwrap();
    land_writes(cnic.take_ops(), me, &mut nic);
    // p3 takes it and proposes group 1's timestamp.
    server.poll(&mut nic);

    // Group 0's leader p0 proposed 5 in round <0,0>; p0 and p2 acknowledged it, p4 and p5
    // acknowledged p3's proposal. p3 acknowledges its own, orders and delivers.
    let (seq, tmp) = (0, Stamp::new(5, 0));
    let propose = |nic: &mut RecordingNic, s: &RamcastServer, rnd: Stamp| {
        let t = s.t_bytes(seq, tmp, rnd);
        nic.write_local(local(T, layout.t_entry(0, seq, g0)), &t)
            .unwrap();
    };
    let first = Stamp::new(0, 0);
    propose(&mut nic, &server, first);
    for rank in [0, 2] {
        let at = local(M, layout.ack(0, seq, g0, rank));
        nic.store_u64(at, ack_word(seq, first)).unwrap();
    }
    for rank in [1, 2] {
        let at = local(M, layout.ack(0, seq, g1, rank));
        nic.store_u64(at, ack_word(seq, server.current_round()))
            .unwrap();
    }
    server.poll(&mut nic);
    server.poll(&mut nic);
    assert_eq!(server.poll_delivery().map(|d| d.msg), Some(id));

    // p1 runs for leader of group 0 in round <1,1>; p3 promises it.
    let round = Stamp::new(1, 1);
    receive_catch_up(&mut nic, &cfg, p1, round);
    server.poll(&mut nic);
    assert_eq!(server.rounds[0], round);
    nic.take_ops();

    // p1's Task 9 proposes 5 again in its round, into p3's T, then announces the round
    // complete (on the same queue pair).
    propose(&mut nic, &server, round);
    receive(&mut nic, p1, &Wire::Complete { round: round.0 });
    server.poll(&mut nic);

    // p3 forwarded group 0's proposal of round <1,1> to both of its followers.
    let want = (g0.0, tmp.0, round.0);
    let ops = nic.take_ops();
    for q in [ProcessId(4), ProcessId(5)] {
        let forwarded = ops.iter().any(|(_, op)| match op {
            Op::Send { to, data, .. } if *to == q => matches!(
                Wire::decode(data),
                Ok(Wire::Catch { items }) if items.iter().any(|x| {
                    (x.client, x.seq) == (0, seq) && x.props.contains(&want)
                })
            ),
            _ => false,
        });
        assert!(
            forwarded,
            "p3 did not forward group 0's proposal of round {round} for a slot it delivered to {q} on the poll that received the announcement"
        );
    }
}
