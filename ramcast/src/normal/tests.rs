//! Task 5's final timestamp, on a scripted NIC: the audit's scenario D4.
//!
//! Two groups, message `m` to both. Group 0's first leader proposes 10 for `m` in its round
//! `R1`; the write reaches group 1 (whose members read it) but none of group 0's followers, and
//! the leader crashes. Group 0's next leader never saw 10: in round `R2` it proposes a fresh 5,
//! and a quorum of group 0 takes it. Group 1 chooses 3. The final timestamp of `m` is therefore
//! max(5, 3) = 5 at every process that follows the paper's Task 5, which folds in only chosen
//! (quorum-acknowledged) timestamps. A server that also folded in the superseded 10 would give
//! `m` the final timestamp 10, while group 0's members, which never saw 10, give it 5: a message
//! `m2` with final timestamp 7 would be delivered before `m` in group 1 and after it in group 0.
//!
//! The test drives one member of group 1 that read the superseded proposal, and checks that it
//! delivers `m` before `m2`, as group 0's members do.

use crate::layout::{ack_word, local, M, T};
use crate::scripted::*;
use crate::server::RamcastServer;
use crate::stamp::Stamp;
use crate::{Config, RamcastClient};
use multicast::{Client, DestSet, GroupId, Membership, Server};
use std::sync::Arc;
use transport::recording::RecordingNic;
use transport::{Nic, Process, ProcessId};

/// Applies the writes a client posted to process `to` as if they landed.
#[test]
fn a_superseded_proposal_never_raises_the_final_timestamp() {
    let cfg = Arc::new(Config::new(2, 3, 2));
    let both: DestSet = "0;1".parse().unwrap();
    // Process 4: rank 1 of group 1, a follower.
    let me = ProcessId(4);
    let mut server = RamcastServer::new(cfg.clone(), GroupId(1), 1);
    let specs = specs(&cfg);
    let mut clients: Vec<RamcastClient> = (0..cfg.clients)
        .map(|i| RamcastClient::new(cfg.clone(), i))
        .collect();
    let mut nic = RecordingNic::new(me, specs.clone(), 1);

    // Client 0 multicasts m, client 1 multicasts m2, both to groups 0 and 1.
    let mut ids = Vec::new();
    for (i, c) in clients.iter_mut().enumerate() {
        let mut cnic = RecordingNic::new(cfg.client(i), specs.clone(), 1);
        ids.push(c.try_multicast(&mut cnic, both, b"x").unwrap());
        land_writes(cnic.take_ops(), me, &mut nic);
    }
    server.poll(&mut nic);

    let layout = server.layout.clone();
    let r1 = server.rounds[0];
    let g1_round = server.rounds[1];
    let r2 = Stamp::new(r1.time() + 1, 1);
    // Each client's first message uses sequence number 0 at every destination.
    let seq = 0;
    let propose = |nic: &mut RecordingNic,
                   server: &RamcastServer,
                   c: usize,
                   g: u8,
                   tmp: u64,
                   rnd: Stamp,
                   ranks: &[usize]| {
        let t = server.t_bytes(seq, Stamp::new(tmp, 0), rnd);
        nic.write_local(local(T, layout.t_entry(c, seq, GroupId(g))), &t)
            .unwrap();
        for &r in ranks {
            let at = local(M, layout.ack(c, seq, GroupId(g), r));
            nic.store_u64(at, ack_word(seq, rnd)).unwrap();
        }
    };

    // Group 0's first leader proposes 10 for m in R1; group 1's leader forwards it here.
    propose(&mut nic, &server, 0, 0, 10, r1, &[]);
    server.poll(&mut nic);
    // Group 0's next leader proposes 5 for m and 7 for m2 in R2; ranks 1 and 2 (a quorum)
    // acknowledge. Group 1 chooses 3 for m and 6 for m2 with a quorum of its own.
    propose(&mut nic, &server, 0, 0, 5, r2, &[1, 2]);
    propose(&mut nic, &server, 1, 0, 7, r2, &[1, 2]);
    propose(&mut nic, &server, 0, 1, 3, g1_round, &[0, 1, 2]);
    propose(&mut nic, &server, 1, 1, 6, g1_round, &[0, 1, 2]);
    for _ in 0..4 {
        server.poll(&mut nic);
    }
    let order: Vec<_> = std::iter::from_fn(|| server.poll_delivery())
        .map(|d| d.msg)
        .collect();
    // Final timestamps: m = max(5, 3) = 5, m2 = max(7, 6) = 7, as at group 0's members.
    assert_eq!(
        order, ids,
        "delivered in another order than group 0 delivers"
    );
}

/// A peer holding the cluster secret writes a header no client writes into a follower's `M`: a
/// later lap of client p4's next slot. The follower halts, and its reason names the slot, the
/// client and what it found, so a run's report tells a forged write from a recycled buffer
/// (`harness/tests/forged_write.rs` does this to a tcp node).
#[test]
fn a_forged_lapped_header_halts_the_server_with_its_reason() {
    let cfg = Arc::new(Config::new(1, 3, 2));
    let mut server = RamcastServer::new(cfg.clone(), GroupId(0), 1);
    let specs = specs(&cfg);
    let mut nic = RecordingNic::new(ProcessId(1), specs.clone(), 1);
    // Client p3 multicasts once, as it should: taken, no halt.
    let mut client = RamcastClient::new(cfg.clone(), 0);
    let mut cnic = RecordingNic::new(cfg.client(0), specs, 1);
    client
        .try_multicast(&mut cnic, "0".parse().unwrap(), b"x")
        .unwrap();
    land_writes(cnic.take_ops(), ProcessId(1), &mut nic);
    server.poll(&mut nic);
    assert_eq!(server.halt_reason(), None);
    // Entry 2^30 where p4's first entry (1) is due.
    let at = local(M, server.layout.m_slot(1, 0));
    nic.store_u64(at, 1 << 30).unwrap();
    server.poll(&mut nic);
    assert_eq!(
        server.halt_reason(),
        Some(
            "slot 0 of client p4's buffer in M holds entry 1073741824, 1073741823 past entry 1 that this server waits for (a client runs at most 16 ahead): the client recycled the slot without this server, or a peer wrote what no client writes"
        )
    );
}
