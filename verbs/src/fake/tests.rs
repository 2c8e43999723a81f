//! The fake against its specification (design 48, §3.2-3.6), row by row, on the manual clock.

use super::*;
use crate::completion::code;
use crate::provider::{Address, Src};

const MTU: u32 = 1024;

/// One node: a device instance, its CQ, one queue pair, one registered region. Fields drop in
/// order, so the registration goes before its memory.
struct Node {
    qp: FakeQp,
    cq: FakeCq,
    mr: FakeMr,
    mem: Words,
    ctx: FakeCtx,
}

impl Node {
    fn new(f: &Fabric, device: &str, len: usize, remote: Rights) -> Node {
        let ctx = f.open(device).expect("open");
        let cq = ctx.create_cq(64).expect("cq");
        let qp = ctx.create_qp(&cq, qp_caps(8)).expect("qp");
        let mem = Words::new(len);
        let mr = ctx.reg_mr(&mem, remote).expect("reg_mr");
        Node {
            qp,
            cq,
            mr,
            mem,
            ctx,
        }
    }

    fn addr(&self) -> u64 {
        self.mem.addr() as u64
    }

    fn gid(&self) -> [u8; 16] {
        self.ctx.query_gid(1, 0).expect("gid")
    }

    fn init(&mut self, access: Rights) {
        self.qp
            .modify(&Transition::Init { port: 1, access })
            .expect("init");
    }

    fn rtr(&mut self, peer_qpn: u32, dgid: [u8; 16]) {
        self.qp.modify(&rtr(peer_qpn, dgid)).expect("rtr");
    }

    fn rts(&mut self, retry_cnt: u8, rnr_retry: u8) {
        self.qp.modify(&rts(retry_cnt, rnr_retry)).expect("rts");
    }

    fn poll(&self) -> Vec<Wc> {
        let mut out = Vec::new();
        self.cq.poll(&mut out).expect("poll");
        out
    }

    fn bytes(&self, at: usize, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        self.mem.read(at, &mut out);
        out
    }

    fn write(&mut self, id: u64, peer: &Node, at: usize, src: Src<'_>) {
        let wr = Wr::Write {
            rkey: peer.mr.rkey(),
            raddr: peer.addr() + at as u64,
            src,
        };
        self.qp.post_send(id, true, wr).expect("post write");
    }

    fn sge(&self, at: usize, len: u32) -> Src<'static> {
        Src::Sge {
            lkey: self.mr.lkey(),
            addr: self.addr() + at as u64,
            len,
        }
    }
}

fn qp_caps(depth: u32) -> QpCaps {
    QpCaps {
        max_send_wr: depth,
        max_recv_wr: depth,
        max_inline: 64,
    }
}

fn rtr(dest_qpn: u32, dgid: [u8; 16]) -> Transition {
    Transition::Rtr {
        path_mtu: MTU,
        dest_qpn,
        rq_psn: 100,
        max_dest_rd_atomic: 4,
        min_rnr_timer: 12,
        address: Address {
            dest_lid: 0,
            port: 1,
            sgid_index: 0,
            dgid,
            hop_limit: 64,
        },
    }
}

fn rts(retry_cnt: u8, rnr_retry: u8) -> Transition {
    Transition::Rts {
        sq_psn: 100,
        timeout: 10,
        retry_cnt,
        rnr_retry,
        max_rd_atomic: 4,
    }
}

/// A manual-clock fabric with two devices and `tweak` applied.
fn fabric(tweak: impl FnOnce(&mut FakeConfig)) -> Fabric {
    let mut cfg = FakeConfig::manual();
    cfg.devices = vec![
        FakeDevice::new("fake0", caps::rxe()),
        FakeDevice::new("fake1", caps::rxe()),
    ];
    tweak(&mut cfg);
    Fabric::new(cfg)
}

/// Two nodes with connected queue pairs, each granting `remote` on its region of `len` bytes.
fn pair(f: &Fabric, len: usize, remote: Rights) -> (Node, Node) {
    let mut a = Node::new(f, "fake0", len, remote);
    let mut b = Node::new(f, "fake1", len, remote);
    let all = Rights::READ.union(Rights::WRITE).union(Rights::ATOMIC);
    a.init(all);
    b.init(all);
    a.rtr(b.qp.qp_num(), b.gid());
    b.rtr(a.qp.qp_num(), a.gid());
    a.rts(7, 7);
    b.rts(7, 7);
    (a, b)
}

fn rw() -> Rights {
    Rights::READ.union(Rights::WRITE).union(Rights::ATOMIC)
}

fn statuses(wcs: &[Wc]) -> Vec<(u64, u32)> {
    wcs.iter().map(|w| (w.id, w.status)).collect()
}

fn pattern(len: usize) -> Vec<u8> {
    // Never zero, so landed bytes can be counted; no period dividing a packet.
    (0..len).map(|i| (i % 255 + 1) as u8).collect()
}

// ---- §3.2: the state machine ----

/// Brings a fresh queue pair of `n` to `state` through legal transitions.
fn drive_to(n: &mut Node, state: QpState, peer: u32) {
    let gid = n.gid();
    let steps: &[QpState] = match state {
        QpState::Reset => &[],
        QpState::Init => &[QpState::Init],
        QpState::Rtr => &[QpState::Init, QpState::Rtr],
        QpState::Rts => &[QpState::Init, QpState::Rtr, QpState::Rts],
        QpState::Err => &[QpState::Err],
    };
    for s in steps {
        match s {
            QpState::Init => n.init(Rights::NONE),
            QpState::Rtr => n.rtr(peer, gid),
            QpState::Rts => n.rts(7, 7),
            _ => n.qp.modify(&Transition::Error).expect("error"),
        }
    }
}

#[test]
fn transitions_follow_the_rc_table() {
    use QpState::*;
    let f = fabric(|_| {});
    let gid = FakeDevice::new("fake0", caps::rxe()).gids[0].gid;
    let legal: [(QpState, &[TransitionKind]); 5] = {
        use TransitionKind as K;
        [
            (Reset, &[K::Init, K::Reset, K::Error]),
            (Init, &[K::Rtr, K::Access, K::Reset, K::Error]),
            (Rtr, &[K::Rts, K::Reset, K::Error]),
            (Rts, &[K::Access, K::Reset, K::Error]),
            (Err, &[K::Reset, K::Error]),
        ]
    };
    let all = [
        Transition::Init {
            port: 1,
            access: Rights::NONE,
        },
        rtr(7, gid),
        rts(7, 7),
        Transition::Access(Rights::READ),
        Transition::Error,
        Transition::Reset,
    ];
    for (from, ok) in legal {
        for t in &all {
            let mut n = Node::new(&f, "fake0", 64, Rights::NONE);
            drive_to(&mut n, from, 7);
            let kind = TransitionKind::of(t);
            let got = n.qp.modify(t);
            if ok.contains(&kind) {
                assert!(got.is_ok(), "{kind:?} from {from:?}: {got:?}");
                let to = qp::next_state(from, kind).expect("legal");
                assert_eq!(f.qp_state(n.qp.qp_num()), Some(to));
            } else {
                let e = got.expect_err("illegal");
                assert_eq!((e.verb, e.errno), ("ibv_modify_qp", Some(22)), "{kind:?}");
                assert!(e.detail.contains(&format!("{from:?}")), "{}", e.detail);
                assert_eq!(f.qp_state(n.qp.qp_num()), Some(from));
            }
        }
    }
}

#[test]
fn transition_values_are_checked_and_named() {
    let f = fabric(|c| c.devices[1].port.active_mtu = 1024);
    let mut n = Node::new(&f, "fake1", 64, Rights::NONE);
    let gid = n.gid();
    let bad_port = Transition::Init {
        port: 2,
        access: Rights::NONE,
    };
    let refused = |n: &mut Node, t: &Transition, field: &str| {
        let e = n.qp.modify(t).expect_err(field);
        assert_eq!(e.errno, Some(22));
        assert!(e.detail.contains(field), "{field}: {}", e.detail);
    };
    refused(&mut n, &bad_port, "port");
    n.init(Rights::NONE);
    let with = |edit: &dyn Fn(&mut Transition)| {
        let mut t = rtr(7, gid);
        edit(&mut t);
        t
    };
    let mtu = |m: u32| {
        with(&move |t| {
            if let Transition::Rtr { path_mtu, .. } = t {
                *path_mtu = m;
            }
        })
    };
    refused(&mut n, &mtu(3000), "path_mtu");
    refused(&mut n, &mtu(128), "path_mtu");
    refused(&mut n, &mtu(2048), "active_mtu");
    let rd = with(&|t| {
        if let Transition::Rtr {
            max_dest_rd_atomic, ..
        } = t
        {
            *max_dest_rd_atomic = 129;
        }
    });
    refused(&mut n, &rd, "max_dest_rd_atomic");
    let sgid = with(&|t| {
        if let Transition::Rtr { address, .. } = t {
            address.sgid_index = 5;
        }
    });
    refused(&mut n, &sgid, "sgid_index");
    n.rtr(7, gid);
    refused(&mut n, &rts(8, 7), "retry_cnt");
    refused(&mut n, &rts(7, 8), "rnr_retry");
    let rd = Transition::Rts {
        sq_psn: 0,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 200,
    };
    refused(&mut n, &rd, "max_rd_atomic");
    assert_eq!(f.qp_state(n.qp.qp_num()), Some(QpState::Rtr));
}

#[test]
fn posting_needs_the_right_state() {
    let f = fabric(|_| {});
    let mut n = Node::new(&f, "fake0", 64, Rights::NONE);
    let recv = RecvWr {
        id: 1,
        lkey: n.mr.lkey(),
        addr: n.addr(),
        len: 64,
    };
    let send = |n: &mut Node| n.qp.post_send(1, true, Wr::Send { src: n.sge(0, 8) });
    for state in [QpState::Reset, QpState::Init, QpState::Rtr] {
        let mut n = Node::new(&f, "fake0", 64, Rights::NONE);
        drive_to(&mut n, state, 7);
        let e = send(&mut n).expect_err("post_send before RTS");
        assert_eq!(e.errno, Some(22), "{state:?}");
        assert!(e.detail.contains(&format!("{state:?}")), "{}", e.detail);
    }
    assert_eq!(n.qp.post_recv(&[recv]).expect_err("RESET").errno, Some(22));
    n.init(Rights::NONE);
    n.qp.post_recv(&[recv])
        .expect("receives may be posted in INIT");
}

// ---- §3.3 and §3.7: the wire ----

#[test]
fn a_write_lands_packet_by_packet() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 4096, rw());
    a.mem.write(0, &pattern(4096));
    f.hold(a.qp.qp_num(), 2);
    a.write(1, &b, 0, a.sge(0, 4096));
    assert!(f.settle());
    // Two packets of 1024 bytes landed, in address order; no completion yet.
    assert_eq!(b.bytes(0, 2048), pattern(2048));
    assert_eq!(b.bytes(2048, 2048), vec![0; 2048]);
    assert!(a.poll().is_empty());
    f.release(a.qp.qp_num());
    assert!(f.settle());
    assert_eq!(b.bytes(0, 4096), pattern(4096));
    assert_eq!(statuses(&a.poll()), vec![(1, code::SUCCESS)]);
    assert_eq!(f.stats().retries, 0, "a hold costs no retries");
}

#[test]
fn an_empty_write_and_an_empty_read_are_one_packet_each() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    let before = f.stats().packets;
    a.write(1, &b, 64, a.sge(0, 0));
    let wr = Wr::Read {
        rkey: b.mr.rkey(),
        raddr: b.addr(),
        dst: a.sge(0, 0),
    };
    a.qp.post_send(2, true, wr).expect("read");
    f.settle();
    let want = vec![(1, code::SUCCESS), (2, code::SUCCESS)];
    assert_eq!(statuses(&a.poll()), want);
    // Two requests, an ACK and a read response.
    assert_eq!(f.stats().packets - before, 4);
}

#[test]
fn unaligned_bytes_merge_into_their_words() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    a.mem.write(5, &pattern(13));
    b.mem.write(0, &[0xff; 32]);
    a.write(1, &b, 3, a.sge(5, 13));
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::SUCCESS)]);
    assert_eq!(b.bytes(0, 3), vec![0xff; 3]);
    assert_eq!(b.bytes(3, 13), pattern(13));
    assert_eq!(b.bytes(16, 16), vec![0xff; 16]);
}

#[test]
fn a_poller_sees_a_growing_prefix_with_jitter() {
    let f = fabric(|c| c.jitter = Duration::from_micros(40));
    let (mut a, b) = pair(&f, 8192, rw());
    a.mem.write(0, &pattern(8192));
    a.write(1, &b, 0, a.sge(0, 8192));
    let mut seen = Vec::new();
    let mut done = false;
    while !done {
        f.advance(Duration::from_micros(1));
        let landed = b
            .bytes(0, 8192)
            .iter()
            .zip(pattern(8192))
            .take_while(|(x, y)| *x == y)
            .count();
        // Whole packets, in order: the rest is still zero.
        assert_eq!(landed % 1024, 0);
        assert!(b.bytes(landed, 8192 - landed).iter().all(|&x| x == 0));
        let polled = a.poll();
        // The responder sees the data no later than the requester sees its completion.
        if !polled.is_empty() {
            assert_eq!(landed, 8192);
            done = true;
        }
        if seen.last() != Some(&landed) {
            seen.push(landed);
        }
    }
    assert!(seen.len() > 2, "no torn state observed: {seen:?}");
}

#[test]
fn shuffled_tearing_lands_chunks_out_of_address_order() {
    let out_of_order = (0..16).any(|seed| {
        let f = fabric(|c| {
            c.tear = Tear::Shuffled;
            c.seed = seed;
        });
        let (mut a, b) = pair(&f, 4096, rw());
        a.mem.write(0, &pattern(4096));
        f.hold(a.qp.qp_num(), 1);
        a.write(1, &b, 0, a.sge(0, 4096));
        f.settle();
        let first_chunk =
            (0..4).find(|&c| b.bytes(c * 1024, 1024) == pattern(4096)[c * 1024..(c + 1) * 1024]);
        f.release(a.qp.qp_num());
        f.settle();
        assert_eq!(b.bytes(0, 4096), pattern(4096), "seed {seed}");
        first_chunk.expect("one chunk landed") != 0
    });
    assert!(out_of_order);
}

#[test]
fn source_bytes_are_read_at_transmission_and_inline_bytes_at_post() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    f.hold(a.qp.qp_num(), 0);
    a.mem.write(0, &[1; 8]);
    a.write(1, &b, 0, a.sge(0, 8));
    let mut inline = [5u8; 8];
    a.write(2, &b, 8, Src::Inline(&inline));
    inline[0] = 6;
    a.mem.write(0, &[2; 8]);
    f.release(a.qp.qp_num());
    assert!(f.settle());
    assert_eq!(b.bytes(0, 8), vec![2; 8]);
    assert_eq!(b.bytes(8, 8), vec![5; 8]);
    assert_eq!(inline[0], 6);
}

#[test]
fn packets_to_an_init_peer_are_dropped_until_retry_exc() {
    let f = fabric(|_| {});
    let mut a = Node::new(&f, "fake0", 64, rw());
    let mut b = Node::new(&f, "fake1", 64, rw());
    a.init(rw());
    b.init(rw());
    a.rtr(b.qp.qp_num(), b.gid());
    a.rts(3, 7);
    a.write(1, &b, 0, a.sge(0, 8));
    let start = f.now();
    assert!(f.settle());
    assert_eq!(statuses(&a.poll()), vec![(1, code::RETRY_EXC_ERR)]);
    assert_eq!(f.qp_state(a.qp.qp_num()), Some(QpState::Err));
    let s = f.stats();
    assert_eq!((s.retries, s.dropped), (3, 4));
    // retry_cnt + 1 tries, each waiting 4.096 us x 2^10.
    let timeout = Duration::from_nanos(4096 << 10);
    assert_eq!(f.now() - start, timeout * 4);
}

#[test]
fn time_scale_stretches_the_ack_timeout() {
    let f = fabric(|c| c.time_scale = 2.0);
    let mut a = Node::new(&f, "fake0", 64, rw());
    let b = Node::new(&f, "fake1", 64, rw());
    a.init(rw());
    a.rtr(b.qp.qp_num(), b.gid());
    a.rts(0, 7);
    a.write(1, &b, 0, a.sge(0, 8));
    let start = f.now();
    f.settle();
    assert_eq!(f.now() - start, Duration::from_nanos(2 * (4096 << 10)));
}

/// A peer that takes packets from `a` as it should, but for one `spoil`ed attribute.
fn spoiled_peer(spoil: impl FnOnce(&mut FakeConfig, &mut Transition)) -> u32 {
    let mut t = rtr(0, [0; 16]);
    let f = fabric(|c| spoil(c, &mut t));
    let mut a = Node::new(&f, "fake0", 8192, rw());
    let mut b = Node::new(&f, "fake1", 8192, rw());
    a.init(rw());
    b.init(rw());
    if let Transition::Rtr {
        dest_qpn, address, ..
    } = &mut t
    {
        if *dest_qpn == 0 {
            *dest_qpn = a.qp.qp_num();
        }
        if address.dgid == [0; 16] {
            address.dgid = a.gid();
        }
    }
    b.qp.modify(&t).expect("rtr");
    b.rts(7, 7);
    let mut to_b = rtr(b.qp.qp_num(), b.gid());
    if let Transition::Rtr { path_mtu, .. } = &mut to_b {
        *path_mtu = 4096;
    }
    a.qp.modify(&to_b).expect("rtr");
    a.rts(1, 7);
    a.write(1, &b, 0, a.sge(0, 4096));
    f.settle();
    a.poll()[0].status
}

#[test]
fn packets_that_do_not_match_the_responder_are_dropped() {
    assert_eq!(spoiled_peer(|_, _| {}), code::SUCCESS);
    // The responder expects another PSN (it reset and took a fresh one).
    let psn = spoiled_peer(|_, t| {
        if let Transition::Rtr { rq_psn, .. } = t {
            *rq_psn = 5;
        }
    });
    assert_eq!(psn, code::RETRY_EXC_ERR);
    // The responder is connected to another queue pair.
    let qpn = spoiled_peer(|_, t| {
        if let Transition::Rtr { dest_qpn, .. } = t {
            *dest_qpn = 0x999;
        }
    });
    assert_eq!(qpn, code::RETRY_EXC_ERR);
    // The sender's GID is RoCE v1, the responder's v2.
    let kind = spoiled_peer(|c, _| c.devices[0].gids[0].kind = GidKind::IbOrRoceV1);
    assert_eq!(kind, code::RETRY_EXC_ERR);
    // Packets of 4096 bytes into a port of 1024.
    let mtu = spoiled_peer(|c, _| {
        c.devices[1].port.active_mtu = 1024;
    });
    assert_eq!(mtu, code::RETRY_EXC_ERR);
}

#[test]
fn a_destroyed_peer_leaves_the_requester_with_retry_exc() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    let Node { qp, .. } = b;
    drop(qp);
    let b = Node::new(&f, "fake1", 64, rw());
    a.qp.post_send(1, true, Wr::Send { src: a.sge(0, 8) })
        .expect("post");
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::RETRY_EXC_ERR)]);
    drop(b);
}

// ---- §3.5: errors and flushes ----

#[test]
fn a_requester_error_flushes_later_requests_and_receives() {
    let f = fabric(|_| {});
    let mut a = Node::new(&f, "fake0", 64, rw());
    let b = Node::new(&f, "fake1", 64, rw());
    a.init(rw());
    a.rtr(b.qp.qp_num(), b.gid());
    a.rts(0, 7);
    let recv = RecvWr {
        id: 9,
        lkey: a.mr.lkey(),
        addr: a.addr(),
        len: 64,
    };
    a.qp.post_recv(&[recv]).expect("recv");
    a.write(1, &b, 0, a.sge(0, 8));
    let unsignalled = Wr::Send { src: a.sge(0, 8) };
    a.qp.post_send(2, false, unsignalled).expect("post");
    a.qp.post_send(3, true, unsignalled).expect("post");
    f.settle();
    let want = vec![
        (1, code::RETRY_EXC_ERR),
        (2, code::WR_FLUSH_ERR),
        (3, code::WR_FLUSH_ERR),
        (9, code::WR_FLUSH_ERR),
    ];
    assert_eq!(statuses(&a.poll()), want);
    // Posted in ERR: flushed at once, signalled or not.
    a.qp.post_send(4, false, unsignalled).expect("post in ERR");
    a.qp.post_recv(&[RecvWr { id: 10, ..recv }])
        .expect("recv in ERR");
    let want = vec![(4, code::WR_FLUSH_ERR), (10, code::WR_FLUSH_ERR)];
    assert_eq!(statuses(&a.poll()), want);
}

#[test]
fn a_responder_access_error_moves_both_ends_to_err() {
    let f = fabric(|_| {});
    let (mut a, mut b) = pair(&f, 64, Rights::READ);
    let recv = RecvWr {
        id: 7,
        lkey: b.mr.lkey(),
        addr: b.addr(),
        len: 64,
    };
    b.qp.post_recv(&[recv]).expect("recv");
    a.write(1, &b, 0, a.sge(0, 8));
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::REM_ACCESS_ERR)]);
    assert_eq!(statuses(&b.poll()), vec![(7, code::WR_FLUSH_ERR)]);
    assert_eq!(f.qp_state(a.qp.qp_num()), Some(QpState::Err));
    assert_eq!(f.qp_state(b.qp.qp_num()), Some(QpState::Err));
    assert_eq!(b.bytes(0, 8), vec![0; 8]);
}

#[test]
fn queue_pair_flags_are_checked_as_well_as_the_registration() {
    let f = fabric(|_| {});
    let (mut a, mut b) = pair(&f, 64, rw());
    b.qp.modify(&Transition::Access(Rights::READ))
        .expect("RTS -> RTS");
    a.write(1, &b, 0, a.sge(0, 8));
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::REM_ACCESS_ERR)]);
}

#[test]
fn a_request_outside_the_region_is_refused() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    a.write(1, &b, 60, a.sge(0, 8));
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::REM_ACCESS_ERR)]);
}

#[test]
fn a_bad_local_key_is_loc_prot_err() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    let bad = Src::Sge {
        lkey: 0xdead,
        addr: a.addr(),
        len: 8,
    };
    a.write(1, &b, 0, bad);
    let outside = a.sge(60, 8);
    a.write(2, &b, 0, outside);
    f.settle();
    let want = vec![(1, code::LOC_PROT_ERR), (2, code::WR_FLUSH_ERR)];
    assert_eq!(statuses(&a.poll()), want);
}

#[test]
fn deregistration_is_a_fence() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 4096, rw());
    a.mem.write(0, &pattern(4096));
    f.hold(a.qp.qp_num(), 1);
    a.write(1, &b, 0, a.sge(0, 4096));
    f.settle();
    let Node {
        qp: b_qp,
        cq: b_cq,
        mr: b_mr,
        mem: b_mem,
        ctx: b_ctx,
    } = b;
    let b_rkey = b_mr.rkey();
    drop(b_mr);
    f.release(a.qp.qp_num());
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::REM_ACCESS_ERR)]);
    let mut landed = vec![0; 4096];
    b_mem.read(0, &mut landed);
    assert_eq!(landed[..1024], pattern(1024)[..]);
    assert!(landed[1024..].iter().all(|&x| x == 0));
    assert_ne!(b_rkey, 0);
    drop((b_qp, b_cq, b_mem, b_ctx));
}

#[test]
fn nothing_lands_through_a_queue_pair_once_it_is_moved_to_err() {
    let f = fabric(|_| {});
    let (mut a, mut b) = pair(&f, 4096, rw());
    a.mem.write(0, &pattern(4096));
    f.hold(a.qp.qp_num(), 1);
    a.write(1, &b, 0, a.sge(0, 4096));
    f.settle();
    b.qp.modify(&Transition::Error).expect("to ERR");
    f.release(a.qp.qp_num());
    f.settle();
    assert_eq!(b.bytes(0, 1024), pattern(1024));
    assert_eq!(b.bytes(1024, 3072), vec![0; 3072]);
    assert_eq!(statuses(&a.poll()), vec![(1, code::RETRY_EXC_ERR)]);
}

/// A write held after its first packet while the responder's flags are revoked.
fn revoke_mid_write(check: AccessCheck) -> (u32, usize) {
    let f = fabric(|c| c.access_check = check);
    let (mut a, mut b) = pair(&f, 4096, rw());
    a.mem.write(0, &pattern(4096));
    f.hold(a.qp.qp_num(), 1);
    a.write(1, &b, 0, a.sge(0, 4096));
    f.settle();
    b.qp.modify(&Transition::Access(Rights::NONE))
        .expect("revoke");
    f.release(a.qp.qp_num());
    f.settle();
    let landed = b.bytes(0, 4096).iter().filter(|&&x| x != 0).count();
    (a.poll()[0].status, landed)
}

#[test]
fn access_flags_are_sampled_per_message_or_per_packet() {
    assert_eq!(
        revoke_mid_write(AccessCheck::FirstPacket),
        (code::SUCCESS, 4096)
    );
    assert_eq!(
        revoke_mid_write(AccessCheck::PerPacket),
        (code::REM_ACCESS_ERR, 1024)
    );
}

#[test]
fn reset_discards_queues_but_keeps_queued_completions() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    let recv = RecvWr {
        id: 9,
        lkey: a.mr.lkey(),
        addr: a.addr(),
        len: 64,
    };
    a.qp.post_recv(&[recv]).expect("recv");
    a.write(1, &b, 0, a.sge(0, 8));
    f.settle();
    f.hold(a.qp.qp_num(), 0);
    a.write(2, &b, 0, a.sge(0, 8));
    a.qp.modify(&Transition::Reset).expect("reset");
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::SUCCESS)]);
    assert_eq!(f.qp_state(a.qp.qp_num()), Some(QpState::Reset));
}

// ---- sends and RNR ----

fn send_without_receive(rnr_retry: u8) -> (Fabric, Node, Node) {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    a.qp.modify(&Transition::Error).expect("err");
    a.qp.modify(&Transition::Reset).expect("reset");
    a.init(rw());
    a.rtr(b.qp.qp_num(), b.gid());
    a.rts(7, rnr_retry);
    a.mem.write(0, &[3; 16]);
    a.qp.post_send(1, true, Wr::Send { src: a.sge(0, 16) })
        .expect("send");
    (f, a, b)
}

#[test]
fn rnr_retries_are_bounded_unless_seven() {
    let (f, a, _b) = send_without_receive(3);
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::RNR_RETRY_EXC_ERR)]);
    assert_eq!(f.stats().rnr_naks, 4);

    let (f, a, mut b) = send_without_receive(7);
    f.advance(Duration::from_secs(1));
    assert!(a.poll().is_empty());
    assert!(f.stats().rnr_naks > 1000, "{:?}", f.stats());
    assert_eq!(f.qp_state(a.qp.qp_num()), Some(QpState::Rts));
    let recv = RecvWr {
        id: 5,
        lkey: b.mr.lkey(),
        addr: b.addr() + 8,
        len: 32,
    };
    b.qp.post_recv(&[recv]).expect("recv");
    f.advance(Duration::from_millis(1));
    assert_eq!(statuses(&a.poll()), vec![(1, code::SUCCESS)]);
    let got = b.poll();
    assert_eq!(
        (got[0].id, got[0].status, got[0].byte_len),
        (5, code::SUCCESS, 16)
    );
    assert_eq!(b.bytes(8, 16), vec![3; 16]);
}

#[test]
fn a_frozen_receive_queue_answers_rnr() {
    let f = fabric(|_| {});
    f.freeze_rq(DeviceSel::Name("fake1".into()));
    let (mut a, mut b) = pair(&f, 64, rw());
    a.qp.modify(&Transition::Error).expect("err");
    a.qp.modify(&Transition::Reset).expect("reset");
    a.init(rw());
    a.rtr(b.qp.qp_num(), b.gid());
    a.rts(7, 2);
    let recv = RecvWr {
        id: 5,
        lkey: b.mr.lkey(),
        addr: b.addr(),
        len: 64,
    };
    b.qp.post_recv(&[recv]).expect("recv");
    a.qp.post_send(1, true, Wr::Send { src: a.sge(0, 8) })
        .expect("send");
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::RNR_RETRY_EXC_ERR)]);
    // The receiver's queue pair is untouched and keeps its receive.
    assert!(b.poll().is_empty());
    b.qp.modify(&Transition::Error).expect("err");
    assert_eq!(statuses(&b.poll()), vec![(5, code::WR_FLUSH_ERR)]);
}

#[test]
fn a_send_longer_than_the_receive_is_a_length_error_at_both_ends() {
    let f = fabric(|_| {});
    let (mut a, mut b) = pair(&f, 64, rw());
    let recv = RecvWr {
        id: 5,
        lkey: b.mr.lkey(),
        addr: b.addr(),
        len: 8,
    };
    b.qp.post_recv(&[recv, RecvWr { id: 6, ..recv }])
        .expect("recv");
    a.qp.post_send(1, true, Wr::Send { src: a.sge(0, 16) })
        .expect("send");
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::REM_INV_REQ_ERR)]);
    let want = vec![(5, code::LOC_LEN_ERR), (6, code::WR_FLUSH_ERR)];
    assert_eq!(statuses(&b.poll()), want);
}

#[test]
fn a_multi_packet_send_fills_one_receive() {
    let f = fabric(|_| {});
    let (mut a, mut b) = pair(&f, 4096, rw());
    a.mem.write(0, &pattern(3000));
    let recv = RecvWr {
        id: 5,
        lkey: b.mr.lkey(),
        addr: b.addr(),
        len: 4096,
    };
    b.qp.post_recv(&[recv]).expect("recv");
    a.qp.post_send(
        1,
        true,
        Wr::Send {
            src: a.sge(0, 3000),
        },
    )
    .expect("send");
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::SUCCESS)]);
    assert_eq!(b.poll()[0].byte_len, 3000);
    assert_eq!(b.bytes(0, 3000), pattern(3000));
}

// ---- reads and atomics ----

#[test]
fn reads_land_at_the_requester_and_stall_past_max_rd_atomic() {
    // Jitter keeps the packets in flight while the three reads are posted.
    let f = fabric(|c| c.jitter = Duration::from_micros(10));
    let (mut a, mut b) = pair(&f, 8192, rw());
    b.mem.write(0, &pattern(4096));
    a.qp.modify(&Transition::Error).expect("err");
    a.qp.modify(&Transition::Reset).expect("reset");
    b.qp.modify(&Transition::Error).expect("err");
    b.qp.modify(&Transition::Reset).expect("reset");
    a.init(rw());
    b.init(rw());
    a.rtr(b.qp.qp_num(), b.gid());
    b.rtr(a.qp.qp_num(), a.gid());
    let one = Transition::Rts {
        sq_psn: 100,
        timeout: 10,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
    };
    a.qp.modify(&one).expect("rts");
    let before = f.stats().packets;
    for i in 0..3u64 {
        let dst = a.sge(4096 + 1024 * i as usize, 1024);
        let wr = Wr::Read {
            rkey: b.mr.rkey(),
            raddr: b.addr() + 1024 * i,
            dst,
        };
        a.qp.post_send(i, true, wr).expect("read");
    }
    // One read request on the wire; the others wait for its response.
    assert_eq!(f.stats().packets - before, 1);
    f.settle();
    let want: Vec<_> = (0..3).map(|i| (i, code::SUCCESS)).collect();
    let got = a.poll();
    assert_eq!(statuses(&got), want);
    assert_eq!(got[0].byte_len, 1024);
    assert_eq!(a.bytes(4096, 3072), pattern(3072));
}

#[test]
fn a_multi_packet_read_is_answered_in_packets() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 8192, rw());
    b.mem.write(0, &pattern(4000));
    let wr = Wr::Read {
        rkey: b.mr.rkey(),
        raddr: b.addr(),
        dst: a.sge(4096, 4000),
    };
    a.qp.post_send(1, true, wr).expect("read");
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::SUCCESS)]);
    assert_eq!(a.bytes(4096, 4000), pattern(4000));
    // A write after the read still completes (the read used 4 PSNs).
    a.write(2, &b, 0, a.sge(0, 8));
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(2, code::SUCCESS)]);
}

fn atomics_on(caps: DeviceCaps) -> (u64, u64, u64) {
    let f = fabric(|c| c.devices[1].caps = caps);
    let (mut a, b) = pair(&f, 64, rw());
    b.mem
        .word(8)
        .store(40, std::sync::atomic::Ordering::Relaxed);
    let faa = Wr::Faa {
        rkey: b.mr.rkey(),
        raddr: b.addr() + 8,
        add: 2,
        dst: a.sge(0, 8),
    };
    a.qp.post_send(1, true, faa).expect("faa");
    let cas = Wr::Cas {
        rkey: b.mr.rkey(),
        raddr: b.addr() + 8,
        expect: 42,
        swap: 7,
        dst: a.sge(8, 8),
    };
    a.qp.post_send(2, true, cas).expect("cas");
    f.settle();
    assert_eq!(
        statuses(&a.poll()),
        vec![(1, code::SUCCESS), (2, code::SUCCESS)]
    );
    let load = |n: &Node, at| n.mem.word(at).load(std::sync::atomic::Ordering::Relaxed);
    (load(&a, 0), load(&a, 8), load(&b, 8))
}

#[test]
fn atomics_run_on_the_word_and_return_the_old_value() {
    assert_eq!(atomics_on(caps::rxe()), (40, 42, 7));
    // Without host-order atomics the word is right, the old values come back swapped.
    let swapped = atomics_on(caps::connectx5_atomic_none());
    assert_eq!(swapped, (40u64.swap_bytes(), 42u64.swap_bytes(), 7));
}

#[test]
fn an_unaligned_atomic_is_an_invalid_request() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    let faa = Wr::Faa {
        rkey: b.mr.rkey(),
        raddr: b.addr() + 4,
        add: 1,
        dst: a.sge(0, 8),
    };
    a.qp.post_send(1, true, faa).expect("faa");
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::REM_INV_REQ_ERR)]);
}

#[test]
fn more_reads_in_flight_than_the_responder_takes_is_an_invalid_request() {
    let f = fabric(|c| c.jitter = Duration::from_micros(10));
    let (mut a, mut b) = pair(&f, 64, rw());
    b.qp.modify(&Transition::Error).expect("err");
    b.qp.modify(&Transition::Reset).expect("reset");
    b.init(rw());
    let mut one = rtr(a.qp.qp_num(), a.gid());
    if let Transition::Rtr {
        max_dest_rd_atomic, ..
    } = &mut one
    {
        *max_dest_rd_atomic = 1;
    }
    b.qp.modify(&one).expect("rtr");
    for i in 0..2 {
        let wr = Wr::Read {
            rkey: b.mr.rkey(),
            raddr: b.addr(),
            dst: a.sge(8 * i, 8),
        };
        a.qp.post_send(i as u64, true, wr).expect("read");
    }
    f.settle();
    let want = vec![(0, code::SUCCESS), (1, code::REM_INV_REQ_ERR)];
    assert_eq!(statuses(&a.poll()), want);
}

#[test]
fn inline_rules_are_enforced_at_post() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 128, rw());
    let long = [0u8; 65];
    let wr = Wr::Write {
        rkey: b.mr.rkey(),
        raddr: b.addr(),
        src: Src::Inline(&long),
    };
    assert_eq!(
        a.qp.post_send(1, true, wr).expect_err("too long").errno,
        Some(22)
    );
    let wr = Wr::Read {
        rkey: b.mr.rkey(),
        raddr: b.addr(),
        dst: Src::Inline(&long[..8]),
    };
    assert_eq!(
        a.qp.post_send(1, true, wr).expect_err("inline read").errno,
        Some(22)
    );
}

// ---- §3.4: completions ----

#[test]
fn a_cq_overrun_breaks_the_cq_and_its_queue_pairs() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    let small = a.ctx.create_cq(2).expect("cq");
    a.qp = a.ctx.create_qp(&small, qp_caps(8)).expect("qp");
    a.init(rw());
    a.rtr(b.qp.qp_num(), b.gid());
    a.rts(7, 7);
    for id in 0..3 {
        a.write(id, &b, 0, a.sge(0, 8));
    }
    f.settle();
    let e = small.poll(&mut Vec::new()).expect_err("overrun");
    assert!(e.detail.contains("overrun"), "{e}");
    assert_eq!(f.qp_state(a.qp.qp_num()), Some(QpState::Err));
    assert!(small.poll(&mut Vec::new()).is_err());
}

#[test]
fn unsignalled_requests_hold_their_slots_until_a_later_signalled_cqe_is_polled() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    let wr = Wr::Write {
        rkey: b.mr.rkey(),
        raddr: b.addr(),
        src: a.sge(0, 8),
    };
    for id in 0..7 {
        a.qp.post_send(id, false, wr).expect("unsignalled");
    }
    a.qp.post_send(7, true, wr).expect("signalled");
    let full = a.qp.post_send(8, true, wr).expect_err("8 outstanding");
    assert_eq!(full.errno, Some(12));
    f.settle();
    // Completed, but not polled: the slots are still held.
    assert_eq!(
        a.qp.post_send(8, true, wr).expect_err("not polled").errno,
        Some(12)
    );
    assert_eq!(statuses(&a.poll()), vec![(7, code::SUCCESS)]);
    for id in 8..16 {
        a.qp.post_send(id, false, wr).expect("slots freed");
    }
}

// ---- §3.6: capabilities and memlock ----

#[test]
fn device_limits_are_refused() {
    let f = fabric(|c| c.devices[0].caps = caps::tiny());
    let ctx = f.open("fake0").expect("open");
    let e = ctx.create_cq(65).expect_err("max_cqe");
    assert_eq!((e.errno, e.detail.contains("max_cqe")), (Some(22), true));
    let cqs: Vec<_> = (0..4).map(|_| ctx.create_cq(8).expect("cq")).collect();
    assert_eq!(ctx.create_cq(8).expect_err("max_cq").errno, Some(12));
    let e = ctx.create_qp(&cqs[0], qp_caps(17)).expect_err("max_qp_wr");
    assert_eq!((e.errno, e.detail.contains("max_qp_wr")), (Some(22), true));
    let wide = QpCaps {
        max_inline: 65,
        ..qp_caps(4)
    };
    let e = ctx.create_qp(&cqs[0], wide).expect_err("max_inline");
    assert_eq!((e.errno, e.detail.contains("max_inline")), (Some(22), true));
    let qps: Vec<_> = (0..8)
        .map(|_| ctx.create_qp(&cqs[0], qp_caps(4)).expect("qp"))
        .collect();
    assert_eq!(
        ctx.create_qp(&cqs[0], qp_caps(4))
            .expect_err("max_qp")
            .errno,
        Some(12)
    );
    let big = Words::new((1 << 20) + 8);
    assert_eq!(
        ctx.reg_mr(&big, Rights::NONE)
            .expect_err("max_mr_size")
            .errno,
        Some(22)
    );
    let mem = Words::new(64);
    let mrs: Vec<_> = (0..16)
        .map(|_| ctx.reg_mr(&mem, Rights::NONE).expect("mr"))
        .collect();
    assert_eq!(
        ctx.reg_mr(&mem, Rights::NONE).expect_err("max_mr").errno,
        Some(12)
    );
    drop(mrs);
    ctx.reg_mr(&mem, Rights::NONE).expect("freed by dereg");
    drop(qps);
    // Limits count over every instance of a named device.
    let other = f.open("fake0").expect("open");
    assert_eq!(other.create_cq(8).expect_err("max_cq").errno, Some(12));
    assert_eq!(ctx.query_device().expect("caps"), caps::tiny());
}

#[test]
fn memlock_is_charged_per_host_in_pages() {
    let f = fabric(|c| {
        c.memlock = Some(3 * 4096);
        c.devices[1].host = 1;
    });
    let ctx = f.open("fake0").expect("open");
    let two_pages = Words::new(4097);
    let one_page = Words::new(100);
    let first = ctx.reg_mr(&two_pages, Rights::NONE).expect("2 pages");
    let _second = ctx.reg_mr(&one_page, Rights::NONE).expect("1 page");
    let e = ctx
        .reg_mr(&one_page, Rights::NONE)
        .expect_err("over memlock");
    assert_eq!(e.errno, Some(12));
    assert!(e.detail.contains("memlock"), "{}", e.detail);
    assert_eq!(f.pinned(0), 3 * 4096);
    assert_eq!(f.config().memlock, Some(3 * 4096));
    // Another host has its own limit.
    let elsewhere = f.open("fake1").expect("open");
    elsewhere.reg_mr(&two_pages, Rights::NONE).expect("host 1");
    drop(first);
    ctx.reg_mr(&one_page, Rights::NONE)
        .expect("unpinned by dereg");
    assert_eq!(f.stats().reg_mr, 4);
}

#[test]
fn presets_are_consistent() {
    for c in [caps::rxe(), caps::connectx5(), caps::tiny()] {
        assert!(c.max_qp_init_rd_atom <= c.max_qp_rd_atom);
        assert!(c.max_cqe > 0 && c.max_qp_wr > 0 && c.phys_port_cnt == 1);
    }
    assert_eq!(caps::rxe().max_cqe, 32767);
    assert_eq!(caps::connectx5_atomic_none().atomic_cap, AtomicCap::None);
}

// ---- §3.8: faults and queries ----

#[test]
fn faults_fire_once() {
    let mut cfg = FakeConfig::manual();
    let mut locked = FakeDevice::new("fake1", caps::rxe());
    locked.open_error = Some(EACCES);
    cfg.devices.push(locked);
    let f = Fabric::new(cfg);
    assert_eq!(f.devices().expect("list"), vec!["fake0", "fake1"]);
    let e = f.open("fake1").expect_err("will not open");
    assert_eq!((e.verb, e.errno), ("ibv_open_device", Some(EACCES)));
    f.fail_next("ibv_reg_mr", 12);
    let ctx = f.open("fake0").expect("open");
    let mem = Words::new(64);
    let e = ctx.reg_mr(&mem, Rights::NONE).expect_err("injected");
    assert_eq!(e.errno, Some(12));
    assert!(e.to_string().contains("os error 12"), "{e}");
    ctx.reg_mr(&mem, Rights::NONE).expect("once");
    let cq = ctx.create_cq(8).expect("cq");
    let mut qp = ctx.create_qp(&cq, qp_caps(4)).expect("qp");
    f.delay_modify(
        DeviceSel::NthOpen(0),
        TransitionKind::Init,
        Duration::from_millis(30),
    );
    let start = Instant::now();
    let init = Transition::Init {
        port: 1,
        access: Rights::NONE,
    };
    qp.modify(&init).expect("init");
    assert!(start.elapsed() >= Duration::from_millis(30));
    cq.poll(&mut Vec::new()).expect("poll");
    assert_eq!(f.device_stats(0).expect("instance 0").poll_cq_calls, 1);
}

#[test]
fn queries_answer_from_the_device() {
    let f = fabric(|_| {});
    let ctx = f.open("fake1").expect("open");
    assert_eq!(ctx.instance(), 0);
    let port = ctx.query_port(1).expect("port");
    assert_eq!((port.active, port.active_mtu), (true, 4096));
    assert_eq!(ctx.query_port(2).expect_err("no port 2").errno, Some(22));
    let table = ctx.gid_table().expect("gids");
    assert_eq!(table.len(), 1);
    assert_eq!(ctx.query_gid(1, 0).expect("gid"), table[0].gid);
    assert_ne!(
        table[0].gid,
        FakeDevice::new("fake0", caps::rxe()).gids[0].gid
    );
}

#[test]
fn the_real_clock_moves_by_itself() {
    let mut cfg = FakeConfig::default();
    cfg.devices.push(FakeDevice::new("fake1", caps::rxe()));
    let f = Fabric::new(cfg);
    let (mut a, b) = pair(&f, 64, rw());
    a.mem.write(0, &[9; 8]);
    a.write(1, &b, 0, a.sge(0, 8));
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = Vec::new();
    while got.is_empty() && Instant::now() < deadline {
        got = a.poll();
        std::thread::yield_now();
    }
    assert_eq!(statuses(&got), vec![(1, code::SUCCESS)]);
    assert_eq!(b.bytes(0, 8), vec![9; 8]);
}

// ---- scenarios the runtime's tests build on (design §4) ----

/// Finding 5: an atomic that ran at the responder keeps its success completion in the
/// requester's CQ although the peer resets before it is polled.
#[test]
fn an_executed_atomic_keeps_its_completion_when_the_peer_resets() {
    let f = fabric(|_| {});
    let (mut a, mut b) = pair(&f, 64, rw());
    let faa = Wr::Faa {
        rkey: b.mr.rkey(),
        raddr: b.addr(),
        add: 1,
        dst: a.sge(0, 8),
    };
    a.qp.post_send(1, true, faa).expect("faa");
    f.settle();
    b.qp.modify(&Transition::Error).expect("err");
    b.qp.modify(&Transition::Reset).expect("reset");
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(1, code::SUCCESS)]);
    assert_eq!(b.mem.word(0).load(std::sync::atomic::Ordering::Relaxed), 1);
}

/// Reconnect: both ends reset and connect again with fresh PSNs; a request of the old life
/// still in flight is dropped, a new one lands.
#[test]
fn queue_pairs_reconnect_after_a_reset_with_fresh_psns() {
    let f = fabric(|c| c.jitter = Duration::from_micros(10));
    let (mut a, mut b) = pair(&f, 64, rw());
    a.mem.write(0, &[1; 8]);
    a.write(1, &b, 0, a.sge(0, 8));
    // The write is on the wire when the responder resets and takes a fresh PSN.
    b.qp.modify(&Transition::Error).expect("err");
    b.qp.modify(&Transition::Reset).expect("reset");
    b.init(rw());
    let mut fresh = rtr(a.qp.qp_num(), a.gid());
    if let Transition::Rtr { rq_psn, .. } = &mut fresh {
        *rq_psn = 5000;
    }
    b.qp.modify(&fresh).expect("rtr");
    f.settle();
    assert_eq!(b.bytes(0, 8), vec![0; 8]);
    assert_eq!(statuses(&a.poll()), vec![(1, code::RETRY_EXC_ERR)]);
    a.qp.modify(&Transition::Reset).expect("reset");
    a.init(rw());
    a.rtr(b.qp.qp_num(), b.gid());
    let fresh = Transition::Rts {
        sq_psn: 5000,
        timeout: 10,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 4,
    };
    a.qp.modify(&fresh).expect("rts");
    b.rts(7, 7);
    a.write(2, &b, 0, a.sge(0, 8));
    f.settle();
    assert_eq!(statuses(&a.poll()), vec![(2, code::SUCCESS)]);
    assert_eq!(b.bytes(0, 8), vec![1; 8]);
}

/// Completions of a queue pair's former life (before a reset) free no slots of the new one.
#[test]
fn completions_before_a_reset_free_no_slots_after_it() {
    let f = fabric(|_| {});
    let (mut a, b) = pair(&f, 64, rw());
    let wr = Wr::Write {
        rkey: b.mr.rkey(),
        raddr: b.addr(),
        src: a.sge(0, 8),
    };
    a.qp.post_send(1, true, wr).expect("write");
    f.settle();
    a.qp.modify(&Transition::Reset).expect("reset");
    a.init(rw());
    a.rtr(b.qp.qp_num(), b.gid());
    a.rts(7, 7);
    f.hold(a.qp.qp_num(), 0);
    for id in 0..8 {
        a.qp.post_send(id, false, wr).expect("post");
    }
    assert_eq!(statuses(&a.poll()), vec![(1, code::SUCCESS)]);
    assert_eq!(
        a.qp.post_send(9, true, wr).expect_err("full").errno,
        Some(12)
    );
}

/// Nodes on threads over one fabric and the real clock: every write lands and completes,
/// whoever pumps.
#[test]
fn threads_share_one_fabric() {
    let mut cfg = FakeConfig::default();
    cfg.devices.push(FakeDevice::new("fake1", caps::rxe()));
    cfg.tear = Tear::Shuffled;
    let f = Fabric::new(cfg);
    let (a, b) = pair(&f, 1 << 16, rw());
    let (a_rkey, a_addr) = (a.mr.rkey(), a.addr());
    let (b_rkey, b_addr) = (b.mr.rkey(), b.addr());
    let run = |mut n: Node, rkey: u32, raddr: u64, byte: u8| {
        std::thread::spawn(move || {
            n.mem.write(0, &[byte; 1 << 15]);
            let deadline = Instant::now() + Duration::from_secs(10);
            for round in 0..20u64 {
                let wr = Wr::Write {
                    rkey,
                    raddr: raddr + (1 << 15),
                    src: n.sge(0, 1 << 15),
                };
                n.qp.post_send(round, true, wr).expect("post");
                let mut got = Vec::new();
                while got.is_empty() && Instant::now() < deadline {
                    got = n.poll();
                    std::thread::yield_now();
                }
                assert_eq!(statuses(&got), vec![(round, code::SUCCESS)]);
            }
            n
        })
    };
    let (a, b) = (run(a, b_rkey, b_addr, 0xaa), run(b, a_rkey, a_addr, 0xbb));
    let (a, b) = (a.join().expect("a"), b.join().expect("b"));
    assert!(b.bytes(1 << 15, 1 << 15).iter().all(|&x| x == 0xaa));
    assert!(a.bytes(1 << 15, 1 << 15).iter().all(|&x| x == 0xbb));
}
