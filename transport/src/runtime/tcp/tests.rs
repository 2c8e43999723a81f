//! A hostile peer against a real node: a raw socket that speaks the wire format by hand and
//! tries what a correct node never would.

use super::peer::RawPeer;
use super::wire::{self, Frame, WireOp, WireStatus};
use super::*;
use crate::region::Access;
use crate::{Progress, RegionId, RemoteAddr, WriteFlags};
use std::io::{Read, Write};
use std::net::TcpStream;

const PATTERN: u8 = 0xA5;

/// Node 0: region 0 readable and writable by p1, region 1 granted to nobody; both start filled with
/// [`PATTERN`]. Every poll copies both regions out, so the test sees what landed.
#[derive(Default)]
struct Target {
    filled: bool,
    seen: [Vec<u8>; 2],
}

impl<N: Nic> Process<N> for Target {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![
            RegionSpec::new(64).grant(ProcessId(1), Access::ReadWrite),
            RegionSpec::new(64),
        ]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        if !self.filled {
            for r in 0..2 {
                nic.write_local(LocalAddr::new(RegionId(r), 0), &[PATTERN; 64])
                    .unwrap();
            }
            self.filled = true;
        }
        for r in 0..2 {
            let mut buf = vec![0; 64];
            nic.read_local(LocalAddr::new(RegionId(r as u16), 0), &mut buf)
                .unwrap();
            self.seen[r] = buf;
        }
        Progress::IDLE
    }
}

/// Preamble, hello as p1 on queue pair 0, welcome, and a proof under `secret`.
fn as_p1(raw: &mut RawPeer, table: &RegionTable, secret: &Secret) -> Frame<'static> {
    raw.handshake(
        ProcessId(1),
        ProcessId(0),
        0,
        vec![8],
        table.digest(),
        secret,
    )
    .unwrap()
    .expect("a welcome")
}

/// An idle stand-in for p1 (the raw socket plays it); crashed before the run, so node 0 does
/// not wait for it.
#[derive(Default)]
struct Absent;

impl<N: Nic> Process<N> for Absent {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(8)]
    }
    fn poll(&mut self, _: &mut N) -> Progress {
        Progress::IDLE
    }
}

enum Either {
    T(Target),
    A(Absent),
}

impl<N: Nic> Process<N> for Either {
    fn regions(&self) -> Vec<RegionSpec> {
        match self {
            Either::T(t) => Process::<N>::regions(t),
            Either::A(a) => Process::<N>::regions(a),
        }
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        match self {
            Either::T(t) => t.poll(nic),
            Either::A(a) => a.poll(nic),
        }
    }
}

/// Runs node 0 with `cfg` while `attack` plays p1 against it (given node 0's address, the
/// region table and the cluster secret); returns node 0's process and its connection events.
fn against_node_0(
    cfg: TcpConfig,
    attack: impl FnOnce(SocketAddr, &RegionTable, &Secret),
) -> (Target, Vec<String>) {
    let secret = cfg.secret.clone();
    let procs = vec![Either::T(Target::default()), Either::A(Absent)];
    let specs: Vec<_> = procs.iter().map(Process::<TcpNic>::regions).collect();
    let table = RegionTable::new(&specs);
    let rt = TcpRuntime::new(cfg, procs).unwrap();
    let addr = rt.addrs()[0];
    let control = rt.control();
    control.crash(ProcessId(1));
    std::thread::scope(|s| {
        let run = s.spawn(move || rt.run(Duration::from_secs(30)));
        attack(addr, &table, &secret);
        // Let node 0 poll once more after the last request, then end the run.
        std::thread::sleep(Duration::from_millis(200));
        control.stop();
        let mut run = run.join().unwrap();
        let Either::T(t) = run.processes.remove(0) else {
            unreachable!()
        };
        (t, run.events.remove(0))
    })
}

#[test]
fn a_peer_writing_outside_its_grant_gets_an_error_and_memory_is_unchanged() {
    let (target, events) = against_node_0(TcpConfig::default(), |addr, table, secret| {
        let mut raw = RawPeer::connect(addr).unwrap();
        assert!(matches!(as_p1(&mut raw, table, secret), Frame::Welcome(_)));
        let write = |region, offset, data| WireOp::Write {
            region,
            offset,
            data,
            imm: None,
        };
        // Region 1 was never granted: refused, and the queue pair is in error...
        assert_eq!(
            raw.request(0, write(1, 0, &[1; 8])),
            Some(WireStatus::AccessDenied)
        );
        // ...so even a granted write is flushed until the peer reconnects.
        assert_eq!(
            raw.request(1, write(0, 0, &[2; 8])),
            Some(WireStatus::Flushed)
        );
        assert_eq!(raw.request(2, WireOp::Reconnect), Some(WireStatus::Success));
        assert_eq!(
            raw.request(3, write(0, 8, &[3; 8])),
            Some(WireStatus::Success)
        );
        // Bytes past the region's end: the node closes the connection without an answer.
        assert_eq!(raw.request(4, write(0, 60, &[4; 8])), None);
    });
    assert_eq!(
        target.seen[1],
        vec![PATTERN; 64],
        "the ungranted region changed"
    );
    let mut expect = vec![PATTERN; 64];
    expect[8..16].copy_from_slice(&[3; 8]);
    assert_eq!(target.seen[0], expect, "only the granted write may land");
    assert!(
        events
            .iter()
            .any(|e| e.contains("connection from p1 closed") && e.contains("bytes 60..+8 of r0")),
        "no logged reason: {events:?}"
    );
}

#[test]
fn hostile_bytes_close_the_connection_with_a_reason() {
    let cases: [(&[u8], &str); 2] = [
        (b"GET / HTTP/1.1\r\n\r\n", "wrong magic"),
        (
            &[b'R', b'D', b'M', b'A', b'W', b'B', 7, 0],
            "wire version 7",
        ),
    ];
    for (bytes, reason) in cases {
        let (target, events) = against_node_0(TcpConfig::default(), |addr, _, _| {
            let mut raw = RawPeer::connect(addr).unwrap();
            raw.stream.write_all(bytes).unwrap();
            let mut sink = Vec::new();
            // The node answers its preamble, then closes.
            let _ = raw.stream.read_to_end(&mut sink);
        });
        assert_eq!(target.seen[0], vec![PATTERN; 64]);
        assert!(
            events.iter().any(|e| e.contains(reason)),
            "expected {reason:?} in {events:?}"
        );
    }
    // A well-formed preamble followed by a frame that claims to be huge.
    let (_, events) = against_node_0(TcpConfig::default(), |addr, _, _| {
        let mut raw = RawPeer::connect(addr).unwrap();
        raw.stream.write_all(&wire::preamble()).unwrap();
        raw.stream.write_all(&u32::MAX.to_le_bytes()).unwrap();
        let mut sink = Vec::new();
        let _ = raw.stream.read_to_end(&mut sink);
    });
    assert!(
        events.iter().any(|e| e.contains("exceeds the limit")),
        "{events:?}"
    );
    // Before its proof, a peer announcing a frame a proven peer could send (a chunk) is
    // refused on its length, without the node buffering a byte of it.
    let (_, events) = against_node_0(TcpConfig::default(), |addr, _, _| {
        let mut raw = RawPeer::connect(addr).unwrap();
        raw.stream.write_all(&wire::preamble()).unwrap();
        raw.stream
            .write_all(&(wire::CHUNK as u32).to_le_bytes())
            .unwrap();
        let mut sink = Vec::new();
        let _ = raw.stream.read_to_end(&mut sink);
    });
    let limit = format!(
        "frame of {} bytes exceeds the limit of {}",
        wire::CHUNK,
        wire::MAX_GREETING
    );
    assert!(events.iter().any(|e| e.contains(&limit)), "{events:?}");
    // Requests before the handshake finished.
    let (_, events) = against_node_0(TcpConfig::default(), |addr, _, _| {
        let mut raw = RawPeer::connect(addr).unwrap();
        raw.stream.write_all(&wire::preamble()).unwrap();
        raw.send(&Frame::Request {
            seq: 0,
            op: WireOp::Reconnect,
        })
        .unwrap();
        let mut sink = Vec::new();
        let _ = raw.stream.read_to_end(&mut sink);
    });
    assert!(
        events.iter().any(|e| e.contains("unexpected request 0")),
        "{events:?}"
    );
}

/// A granted write of p1's to region 0.
fn granted_write() -> WireOp<'static> {
    WireOp::Write {
        region: 0,
        offset: 0,
        data: &[9; 8],
        imm: None,
    }
}

#[test]
fn without_the_cluster_secret_a_peer_is_refused() {
    let (target, events) = against_node_0(TcpConfig::default(), |addr, table, _| {
        let mut raw = RawPeer::connect(addr).unwrap();
        // A guessed secret: the node answers its welcome, then closes before any request
        // is applied.
        assert!(matches!(
            as_p1(&mut raw, table, &Secret::random()),
            Frame::Welcome(_)
        ));
        assert_eq!(raw.request(0, granted_write()), None);
    });
    assert_eq!(target.seen[0], vec![PATTERN; 64]);
    assert!(
        events
            .iter()
            .any(|e| e.contains("claiming to be p1 does not hold the cluster secret")),
        "{events:?}"
    );
}

/// Node 0 on its own with `connect_timeout`, p1 at `p1`, for `limit`: its address, the run's
/// region table and secret, and the run.
fn node_0_alone(
    connect_timeout: Duration,
    p1: SocketAddr,
    limit: Duration,
) -> (
    SocketAddr,
    RegionTable,
    Secret,
    std::thread::JoinHandle<NodeRun<Either>>,
) {
    let cfg = TcpConfig {
        connect_timeout,
        ..TcpConfig::default()
    };
    let procs = [Either::T(Target::default()), Either::A(Absent)];
    let specs: Vec<_> = procs.iter().map(Process::<TcpNic>::regions).collect();
    let table = RegionTable::new(&specs);
    let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let node0 = listener.local_addr().unwrap();
    let [target, _] = procs;
    let secret = cfg.secret.clone();
    let run = std::thread::spawn(move || {
        run_node(
            &cfg,
            ProcessId(0),
            &specs,
            vec![node0, p1],
            listener,
            target,
            limit,
            None,
        )
        .unwrap()
    });
    (node0, table, secret, run)
}

/// A peer that comes up after this node gave it up at start (the connect timeout passed) is
/// refused, with the reason, instead of being served while this node treats it as crashed:
/// otherwise it would wait on this node for ever (an RDMC root whose members had written it
/// off waited for a `ready_for_block` that never came).
#[test]
fn a_peer_given_up_at_start_is_refused_when_it_comes_up_late() {
    // p1's address: a port nobody listens on while node 0 starts.
    let absent = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let p1 = absent.local_addr().unwrap();
    drop(absent);
    let (node0, table, secret, run) =
        node_0_alone(Duration::from_millis(200), p1, Duration::from_millis(1500));
    std::thread::sleep(Duration::from_millis(700));
    let mut raw = RawPeer::connect(node0).unwrap();
    as_p1(&mut raw, &table, &secret);
    let mut sink = Vec::new();
    let _ = raw.stream.read_to_end(&mut sink);
    let run = run.join().unwrap();
    assert!(
        run.given_up
            .iter()
            .any(|(p, why)| *p == ProcessId(1) && why.contains("did not answer")),
        "{:?}",
        run.given_up
    );
    assert!(
        run.events
            .iter()
            .any(|e| e
                .contains("p1 connected on queue pair 0 after this node had given it up at start")),
        "{:?}",
        run.events
    );
}

/// A peer that closes every connection during the handshake at start (as a node of another
/// deployment, or without the secret, does) is tried again until the connect timeout, then
/// given up with the reason of the last attempt: the node does not start as if all were well.
#[test]
fn a_peer_that_refuses_the_handshake_at_start_is_given_up() {
    // p1: accepts and closes every connection at once (a refusing peer).
    let refuser = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p1 = refuser.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in refuser.incoming() {
            drop(s);
        }
    });
    let (_, _, _, run) = node_0_alone(Duration::from_millis(2000), p1, Duration::from_millis(300));
    let run = run.join().unwrap();
    assert!(
        run.events.iter().any(|e| e.contains("link to p1 closed")),
        "{:?}",
        run.events
    );
    assert!(
        run.given_up.iter().any(|(p, why)| *p == ProcessId(1)
            && why.contains("ended every handshake until the connect timeout (the last: ")),
        "given_up {:?}, events {:?}",
        run.given_up,
        run.events
    );
}

/// A holder of the secret may connect as p1 once per queue pair: a second claimant is refused
/// while the first is live, and nobody may claim to be node 0 itself.
#[test]
fn a_second_claimant_and_a_self_claim_are_refused() {
    let (target, events) = against_node_0(TcpConfig::default(), |addr, table, secret| {
        let mut first = RawPeer::connect(addr).unwrap();
        as_p1(&mut first, table, secret);
        assert_eq!(first.request(0, granted_write()), Some(WireStatus::Success));
        let mut second = RawPeer::connect(addr).unwrap();
        as_p1(&mut second, table, secret);
        assert_eq!(
            second.request(0, granted_write()),
            None,
            "a second p1 was served"
        );
        let mut me = RawPeer::connect(addr).unwrap();
        me.handshake(
            ProcessId(0),
            ProcessId(0),
            0,
            vec![64, 64],
            table.digest(),
            secret,
        )
        .unwrap();
        assert_eq!(
            me.request(0, granted_write()),
            None,
            "a second p0 was served"
        );
        // The first connection still works.
        assert_eq!(first.request(1, granted_write()), Some(WireStatus::Success));
    });
    let mut expect = vec![PATTERN; 64];
    expect[..8].copy_from_slice(&[9; 8]);
    assert_eq!(target.seen[0], expect);
    for reason in [
        "a second connection claims to be p1 on queue pair 0",
        "a peer claims to be this node (p0) on queue pair 0",
    ] {
        assert!(
            events.iter().any(|e| e.contains(reason)),
            "{reason:?} not in {events:?}"
        );
    }
}

/// Two nodes that both hold the secret talk; the run's processes see each other's writes.
#[test]
fn nodes_holding_the_secret_connect() {
    #[derive(Default)]
    struct Ping {
        sent: bool,
        got: u64,
    }
    impl<N: Nic> Process<N> for Ping {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            let peer = ProcessId(1 - nic.id().0);
            if !self.sent {
                nic.post_write(
                    RemoteAddr::new(peer, RegionId(0), 0),
                    &7u64.to_le_bytes(),
                    WriteFlags::NONE,
                )
                .unwrap();
                self.sent = true;
            }
            self.got = nic.load_u64(LocalAddr::new(RegionId(0), 0)).unwrap();
            Progress::worked(false)
        }
        fn done(&self) -> bool {
            self.got == 7
        }
    }
    let cfg = TcpConfig {
        secret: Secret::new(*b"sixteen bytes!!!").unwrap(),
        ..TcpConfig::default()
    };
    let run = TcpRuntime::new(cfg, vec![Ping::default(), Ping::default()])
        .unwrap()
        .run(Duration::from_secs(20));
    assert!(run.processes.iter().all(|p| p.got == 7), "{:?}", run.events);
    assert!(run.stops.iter().all(|s| *s == TcpStop::AllDone));
}

/// Two nodes whose link `from -> to` is cut from 10 ms for `span_ms` ([`super::faults`]), with
/// `bounds`.
fn partitioned(from: u32, to: u32, span_ms: u64, bounds: Bounds) -> TcpConfig {
    use super::faults::{LinkEffect, LinkFault};
    TcpConfig {
        faults: vec![LinkFault {
            at: Duration::from_millis(10),
            span: Duration::from_millis(span_ms),
            from: vec![ProcessId(from)],
            to: vec![ProcessId(to)],
            effect: LinkEffect::Partition,
        }],
        bounds,
        ..TcpConfig::default()
    }
}

/// The fault layer: a write posted while the link is cut arrives, intact and only once the
/// partition heals (RDMA's reliable connection retransmits; nothing is lost).
#[test]
fn a_partition_holds_writes_until_it_heals() {
    #[derive(Default)]
    struct Late {
        sent: bool,
        seen_at: Option<Nanos>,
    }
    impl<N: Nic> Process<N> for Late {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(0) {
                if !self.sent && nic.now() >= Nanos(20_000_000) {
                    nic.post_write(
                        RemoteAddr::new(ProcessId(1), RegionId(0), 0),
                        &7u64.to_le_bytes(),
                        WriteFlags::NONE,
                    )
                    .unwrap();
                    self.sent = true;
                }
                return Progress::worked(false).wake_at(Some(Nanos(20_000_000)));
            } else if self.seen_at.is_none()
                && nic.load_u64(LocalAddr::new(RegionId(0), 0)).unwrap() == 7
            {
                self.seen_at = Some(nic.now());
            }
            Progress::worked(false)
        }
        fn done(&self) -> bool {
            self.sent || self.seen_at.is_some()
        }
    }
    let cfg = partitioned(0, 1, 300, Bounds::default());
    let run = TcpRuntime::new(cfg, vec![Late::default(), Late::default()])
        .unwrap()
        .run(Duration::from_secs(20));
    let seen = run.processes[1]
        .seen_at
        .unwrap_or_else(|| panic!("the write never arrived: {:?} {:?}", run.stops, run.events));
    // The nodes' clocks start within a few milliseconds of each other in one process.
    assert!(
        seen >= Nanos(250_000_000),
        "arrived at {seen}, inside the partition"
    );
}

/// Node 0 with small bounds, so each test reaches them quickly.
fn bounded(bounds: Bounds) -> TcpConfig {
    TcpConfig {
        bounds,
        ..TcpConfig::default()
    }
}

/// A peer that sends reads and never takes the answers: once its responses back up, the node
/// stops reading its requests (they wait in the peer's own socket), so the peer's writes
/// block after a few megabytes of kernel buffers instead of growing the node without bound.
/// Then it reads, and every request it sent is answered, in order.
#[test]
fn a_flood_of_reads_is_throttled_and_nothing_is_lost() {
    let cfg = bounded(Bounds {
        responses: 64 << 10,
        ..Bounds::default()
    });
    against_node_0(cfg, |addr, table, secret| {
        let mut raw = RawPeer::connect(addr).unwrap();
        as_p1(&mut raw, table, secret);
        raw.stream
            .set_write_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let (mut seq, mut sent, mut frame_len) = (0u64, 0usize, 0);
        let mut blocked = false;
        while sent < 64 << 20 {
            let mut batch = Vec::new();
            for _ in 0..4096 {
                let op = WireOp::Read {
                    region: 0,
                    offset: 0,
                    len: 64,
                };
                wire::encode(&Frame::Request { seq, op }, &mut batch);
                seq += 1;
            }
            frame_len = batch.len() / 4096;
            match raw.stream.write(&batch) {
                Ok(n) if n == batch.len() => sent += n,
                Ok(n) => {
                    // A partial write: the rest of the batch is dropped, so the node sees a
                    // half frame; only whole frames count.
                    sent += n;
                    blocked = true;
                    break;
                }
                Err(_) => {
                    blocked = true;
                    break;
                }
            }
        }
        assert!(
            blocked,
            "the node took {} MiB of requests it could not answer",
            sent >> 20
        );
        assert!(sent < 48 << 20, "{} MiB before backpressure", sent >> 20);
        // Every whole request is answered, in order, once the peer reads.
        let whole = (sent / frame_len) as u64;
        raw.stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        for expect in 0..whole {
            match raw.next_frame() {
                Some(Frame::Response { seq, status, .. }) => {
                    assert_eq!(seq, expect);
                    assert_eq!(status, WireStatus::Success);
                }
                other => panic!("response {expect} of {whole}: {other:?}"),
            }
        }
    });
}

/// Writes are acknowledged by batch (a response to request `n` answers every earlier write),
/// but a read between them gets its own answer with its bytes, in order.
#[test]
fn writes_are_acknowledged_together_and_reads_one_by_one() {
    against_node_0(TcpConfig::default(), |addr, table, secret| {
        let mut raw = RawPeer::connect(addr).unwrap();
        as_p1(&mut raw, table, secret);
        let mut batch = Vec::new();
        for seq in 0..100u64 {
            let op = if seq == 50 {
                WireOp::Read {
                    region: 0,
                    offset: 0,
                    len: 8,
                }
            } else {
                granted_write()
            };
            wire::encode(&Frame::Request { seq, op }, &mut batch);
        }
        raw.stream.write_all(&batch).unwrap();
        let mut answered = Vec::new();
        while answered.last() != Some(&99) {
            match raw.next_frame() {
                Some(Frame::Response {
                    seq, status, data, ..
                }) => {
                    assert_eq!(status, WireStatus::Success, "response {seq}");
                    assert_eq!(data.len(), if seq == 50 { 8 } else { 0 }, "response {seq}");
                    answered.push(seq);
                }
                other => panic!("after responses {answered:?}: {other:?}"),
            }
        }
        assert!(
            answered.contains(&50),
            "the read was passed over: {answered:?}"
        );
        assert!(answered.windows(2).all(|w| w[0] < w[1]), "{answered:?}");
    });
}

/// Connections that never say anything: past the cap on handshakes in progress the oldest are
/// closed as newer ones come, and the rest when the handshake's deadline passes.
#[test]
fn idle_connections_are_capped_and_timed_out() {
    let cfg = bounded(Bounds {
        handshakes: 8,
        handshake: Duration::from_millis(400),
        ..Bounds::default()
    });
    let (_, events) = against_node_0(cfg, |addr, _, _| {
        // Let node 0's own connections to itself finish their handshakes first.
        std::thread::sleep(Duration::from_millis(100));
        let mut idle: Vec<TcpStream> = (0..30).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let closed = |s: &mut TcpStream, wait: u64| {
            s.set_read_timeout(Some(Duration::from_millis(wait)))
                .unwrap();
            let mut buf = [0u8; 64];
            // The node's preamble first, then end of stream once it closes.
            loop {
                match s.read(&mut buf) {
                    Ok(0) => return true,
                    Ok(_) => continue,
                    Err(_) => return false,
                }
            }
        };
        // The oldest make room for the newer ones: at most 8 are left waiting.
        let refused = idle
            .iter_mut()
            .map(|s| closed(s, 50))
            .filter(|&c| c)
            .count();
        assert!(
            refused >= 30 - 8,
            "only {refused} of 30 idle connections closed at once"
        );
        std::thread::sleep(Duration::from_millis(500));
        let all = idle
            .iter_mut()
            .map(|s| closed(s, 200))
            .filter(|&c| c)
            .count();
        assert_eq!(all, 30, "idle connections outlived the handshake deadline");
    });
    for reason in [
        "evicted: 8 handshakes in progress",
        "no finished handshake within",
    ] {
        assert!(
            events.iter().any(|e| e.contains(reason)),
            "{reason:?} not in {events:?}"
        );
    }
}

/// An outsider holding every handshake slot with idle sockets (it needs no secret for that)
/// does not lock a peer out: the peer's connection evicts the oldest idle one and proves
/// itself. Refusing the newest connection instead kept real nodes out of a run for as long as
/// the outsider kept its sockets open.
#[test]
fn idle_sockets_holding_every_handshake_slot_do_not_lock_a_peer_out() {
    let cfg = bounded(Bounds {
        handshakes: 8,
        handshake: Duration::from_secs(30),
        ..Bounds::default()
    });
    let (_, events) = against_node_0(cfg, |addr, table, secret| {
        std::thread::sleep(Duration::from_millis(100));
        let idle: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(100));
        let mut raw = RawPeer::connect(addr).unwrap();
        let welcome = as_p1(&mut raw, table, secret);
        assert!(matches!(welcome, Frame::Welcome(_)), "{welcome:?}");
        drop(idle);
    });
    assert!(
        events.iter().any(|e| e.contains("evicted")),
        "no eviction in {events:?}"
    );
}

/// A proven peer that sends half a frame and stalls is closed when the frame's deadline passes.
#[test]
fn a_frame_left_half_sent_is_timed_out() {
    let cfg = bounded(Bounds {
        frame: Duration::from_millis(300),
        ..Bounds::default()
    });
    let (_, events) = against_node_0(cfg, |addr, table, secret| {
        let mut raw = RawPeer::connect(addr).unwrap();
        as_p1(&mut raw, table, secret);
        let mut frame = Vec::new();
        wire::encode(
            &Frame::Request {
                seq: 0,
                op: granted_write(),
            },
            &mut frame,
        );
        raw.stream.write_all(&frame[..frame.len() / 2]).unwrap();
        assert_eq!(raw.next_frame(), None, "the node kept a stalled frame");
    });
    assert!(
        events.iter().any(|e| e.contains("a frame half received")),
        "{events:?}"
    );
}

/// A peer that accepts TCP and never answers: the node gives it up when the connect timeout
/// passes (its handshakes time out and are retried until then), starts, and ops to it fail
/// `PeerUnreachable` instead of hanging the node.
#[test]
fn a_peer_that_never_answers_is_given_up() {
    #[derive(Default)]
    struct Poster {
        status: Option<crate::Status>,
    }
    impl<N: Nic> Process<N> for Poster {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(0) && self.status.is_none() {
                if let Some(c) = nic.poll_completion() {
                    self.status = Some(c.status);
                } else {
                    let _ = nic.post_write(
                        RemoteAddr::new(ProcessId(1), RegionId(0), 0),
                        &7u64.to_le_bytes(),
                        WriteFlags::SIGNALED,
                    );
                }
            }
            Progress::worked(false)
        }
        fn done(&self) -> bool {
            self.status.is_some()
        }
    }
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    // Accepts and holds every connection, says nothing.
    let held = std::thread::spawn(move || {
        let mut held = Vec::new();
        silent.set_nonblocking(true).unwrap();
        let until = Instant::now() + Duration::from_secs(4);
        while Instant::now() < until {
            if let Ok((s, _)) = silent.accept() {
                held.push(s);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        held.len()
    });
    let cfg = TcpConfig {
        connect_timeout: Duration::from_millis(1500),
        bounds: Bounds {
            handshake: Duration::from_millis(300),
            ..Bounds::default()
        },
        ..TcpConfig::default()
    };
    let specs = vec![
        Process::<TcpNic>::regions(&Poster::default()),
        Process::<TcpNic>::regions(&Poster::default()),
    ];
    let listener = listen(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let addrs = vec![listener.local_addr().unwrap(), silent_addr];
    let started = Instant::now();
    let run = run_node(
        &cfg,
        ProcessId(0),
        &specs,
        addrs,
        listener,
        Poster::default(),
        Duration::from_millis(300),
        None,
    )
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "the node hung");
    assert_eq!(run.process.status, Some(crate::Status::PeerUnreachable));
    assert!(
        run.events
            .iter()
            .any(|e| e.contains("no finished handshake")),
        "{:?}",
        run.events
    );
    assert!(held.join().unwrap() >= 2, "the handshake was not retried");
}

/// A link given up while its peer lives (here: a partition holds node 0's writes until they
/// pass [`Bounds::requests`], as a queue pair whose retries ran out) comes back when the process
/// reconnects: the engine re-dials it with backoff, as a new queue-pair epoch, and writes
/// posted after the reconnect land once the partition heals. A write posted between two
/// reconnects of the re-dial is flushed by the second.
#[test]
fn a_link_given_up_is_re_dialled_when_the_process_reconnects() {
    use crate::Status;
    const BULK: usize = 64 << 10;
    #[derive(Default)]
    struct Redial {
        lost: Option<Status>,
        /// A write posted between two reconnects during the re-dial, and how it ended.
        between: Option<(crate::WrId, Option<Status>)>,
        reconnects: u32,
        reconnected: bool,
        marker: Option<Status>,
        seen: u64,
    }
    impl<N: Nic> Process<N> for Redial {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8 + BULK).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(1) {
                self.seen = nic.load_u64(LocalAddr::new(RegionId(0), 0)).unwrap();
                return Progress::worked(false);
            }
            let peer = ProcessId(1);
            while let Some(c) = nic.poll_completion() {
                match c.kind {
                    crate::OpKind::Reconnect => {
                        self.reconnects += 1;
                        self.reconnected = self.reconnects == 2;
                    }
                    _ if self.between.is_some_and(|b| b.0 == c.wr) => {
                        self.between = Some((c.wr, Some(c.status)));
                    }
                    _ if c.status != Status::Success && self.lost.is_none() => {
                        self.lost = Some(c.status);
                        nic.reconnect(peer).unwrap();
                        let dst = RemoteAddr::new(peer, RegionId(0), 0);
                        let wr = nic.post_write(dst, &[2; 8], WriteFlags::SIGNALED).unwrap();
                        self.between = Some((wr, None));
                        nic.reconnect(peer).unwrap();
                    }
                    _ if self.reconnected => self.marker = Some(c.status),
                    _ => {}
                }
            }
            if self.lost.is_none() && nic.now() >= Nanos(20_000_000) {
                // Bulk writes into the partition until the link is given up.
                let dst = RemoteAddr::new(peer, RegionId(0), 8);
                nic.post_write(dst, &[1; BULK], WriteFlags::SIGNALED)
                    .unwrap();
            }
            if self.reconnected && self.marker.is_none() && nic.now() >= Nanos(400_000_000) {
                let dst = RemoteAddr::new(peer, RegionId(0), 0);
                nic.post_write(dst, &7u64.to_le_bytes(), WriteFlags::SIGNALED)
                    .unwrap();
                self.marker = Some(Status::Flushed); // until its completion says otherwise
            }
            Progress::worked(false).wake_at(Some(nic.now() + Nanos(1_000_000)))
        }
        fn done(&self) -> bool {
            self.marker == Some(Status::Success) || self.seen == 7
        }
    }
    let cfg = partitioned(
        0,
        1,
        300,
        Bounds {
            requests: 1 << 20,
            stall: Duration::ZERO,
            ..Bounds::default()
        },
    );
    let run = TcpRuntime::new(cfg, vec![Redial::default(), Redial::default()])
        .unwrap()
        .run(Duration::from_secs(20));
    let (p0, p1) = (&run.processes[0], &run.processes[1]);
    let why = format!("{:?} {:?}", run.stops, run.events);
    assert_eq!(p0.lost, Some(Status::PeerUnreachable), "{why}");
    assert!(p0.reconnected, "{why}");
    let flushed = p0.between.and_then(|b| b.1);
    assert_eq!(
        flushed,
        Some(Status::Flushed),
        "the second reconnect flushes it: {why}"
    );
    assert_eq!(p0.marker, Some(Status::Success), "{why}");
    assert_eq!(p1.seen, 7, "{why}");
    let events = run.events[0].join("\n");
    assert!(events.contains("past the bound"), "{events}");
    assert!(
        events.contains("re-dialled (queue pair epoch 2)"),
        "{events}"
    );
}

/// A reconnect to a peer whose node is gone re-dials it, is refused (no listener), and
/// completes `PeerUnreachable` at once, as do later ops: nothing waits for the connect timeout.
#[test]
fn a_reconnect_to_a_node_that_is_gone_fails_at_once() {
    use crate::{OpKind, Status};
    #[derive(Default)]
    struct Survivor {
        stop: bool,
        lost: bool,
        reconnect: Option<(Status, Nanos)>,
        after: Option<Status>,
    }
    impl<N: Nic> Process<N> for Survivor {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(1) {
                self.stop = nic.now() >= Nanos(30_000_000);
                return Progress::worked(false).wake_at(Some(Nanos(30_000_000)));
            }
            let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
            while let Some(c) = nic.poll_completion() {
                match c.kind {
                    OpKind::Reconnect => {
                        self.reconnect = Some((c.status, nic.now()));
                        nic.post_write(dst, &[1; 8], WriteFlags::SIGNALED).unwrap();
                    }
                    _ if !self.lost => {
                        self.lost = true;
                        nic.reconnect(ProcessId(1)).unwrap();
                    }
                    _ if self.reconnect.is_some() => self.after = Some(c.status),
                    _ => {}
                }
            }
            if !self.lost && nic.now() >= Nanos(100_000_000) {
                nic.post_write(dst, &[1; 8], WriteFlags::SIGNALED).unwrap();
            }
            Progress::worked(false).wake_at(Some(nic.now() + Nanos(1_000_000)))
        }
        fn done(&self) -> bool {
            self.after.is_some()
        }
        fn stopped(&self) -> bool {
            self.stop
        }
    }
    let run = TcpRuntime::new(
        TcpConfig::default(),
        vec![Survivor::default(), Survivor::default()],
    )
    .unwrap()
    .run(Duration::from_secs(20));
    let p0 = &run.processes[0];
    let why = format!("{:?} {:?}", run.stops, run.events);
    let (status, at) = p0
        .reconnect
        .unwrap_or_else(|| panic!("no reconnect: {why}"));
    assert_eq!(status, Status::PeerUnreachable, "{why}");
    assert!(at < Nanos(2_000_000_000), "the re-dial waited {at}: {why}");
    assert_eq!(p0.after, Some(Status::PeerUnreachable), "{why}");
    assert!(
        run.events[0]
            .iter()
            .any(|e| e.contains("refused the re-dial")),
        "{why}"
    );
}

/// A re-dial that races the peer still holding the old connection (found by review). Node 1's
/// responses to node 0 are partitioned, so its end of the data connection backs up past
/// [`Bounds::responses`] and stops reading; node 0's writes then back up past
/// [`Bounds::requests`] and node 0 gives the link up while node 1 lives and, reading nothing,
/// never sees the close. Node 1 refuses the re-dial as a second claimant: that is one failed
/// attempt, retried with backoff, and the reconnect completes `Success` only once node 1 admitted
/// a connection (it answers the admission request behind the proof), after the partition heals;
/// a write posted after it lands.
#[test]
fn a_re_dial_refused_while_the_peer_holds_the_old_connection_is_tried_again() {
    use crate::{OpKind, Status};
    const BULK: usize = 64 << 10;
    #[derive(Default)]
    struct Racer {
        reads: bool,
        lost: Option<Status>,
        reconnect: Option<Status>,
        marker: Option<Status>,
        marker_posted: bool,
        seen: u64,
    }
    impl<N: Nic> Process<N> for Racer {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8 + 4 * BULK).with_default(Access::ReadWrite)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(1) {
                self.seen = nic.load_u64(LocalAddr::new(RegionId(0), 0)).unwrap();
                return Progress::worked(false).wake_at(Some(nic.now() + Nanos(1_000_000)));
            }
            let peer = ProcessId(1);
            while let Some(c) = nic.poll_completion() {
                match c.kind {
                    OpKind::Reconnect => self.reconnect = Some(c.status),
                    _ if c.status != Status::Success && self.lost.is_none() => {
                        self.lost = Some(c.status);
                        nic.reconnect(peer).unwrap();
                    }
                    _ if self.marker_posted => self.marker = Some(c.status),
                    _ => {}
                }
            }
            if self.lost.is_none() && nic.now() >= Nanos(20_000_000) {
                if !self.reads {
                    // Read responses held by the partition: node 1's connection pauses.
                    for k in 0..4 {
                        let src = RemoteAddr::new(peer, RegionId(0), 8 + k * BULK);
                        nic.post_read(src, BULK, LocalAddr::new(RegionId(0), 8 + k * BULK), false)
                            .unwrap();
                    }
                    self.reads = true;
                }
                for _ in 0..16 {
                    let dst = RemoteAddr::new(peer, RegionId(0), 8);
                    nic.post_write(dst, &[1; BULK], WriteFlags::NONE).unwrap();
                }
            }
            if self.reconnect.is_some() && !self.marker_posted && nic.now() >= Nanos(900_000_000) {
                let dst = RemoteAddr::new(peer, RegionId(0), 0);
                nic.post_write(dst, &7u64.to_le_bytes(), WriteFlags::SIGNALED)
                    .unwrap();
                self.marker_posted = true;
            }
            Progress::worked(false).wake_at(Some(nic.now() + Nanos(1_000_000)))
        }
        fn done(&self) -> bool {
            self.marker.is_some() || self.seen == 7
        }
    }
    let cfg = partitioned(
        1,
        0,
        600,
        Bounds {
            responses: 64 << 10,
            requests: 1 << 20,
            stall: Duration::ZERO,
            ..Bounds::default()
        },
    );
    let run = TcpRuntime::new(cfg, vec![Racer::default(), Racer::default()])
        .unwrap()
        .run(Duration::from_secs(10));
    let p0 = &run.processes[0];
    let why = format!(
        "lost {:?} reconnect {:?} marker {:?}; {:?} {:?}",
        p0.lost, p0.reconnect, p0.marker, run.stops, run.events
    );
    assert_eq!(p0.lost, Some(Status::PeerUnreachable), "{why}");
    assert_eq!(p0.reconnect, Some(Status::Success), "{why}");
    // The reconnect said the queue pair is back and the peer lives: a later write must land.
    assert_eq!(p0.marker, Some(Status::Success), "{why}");
    // The race happened: node 1 refused a re-dial while it held the old connection.
    assert!(
        run.events[1]
            .iter()
            .any(|e| e.contains("second connection")),
        "{why}"
    );
}

/// A peer that keeps reading is never given up, however far ahead its initiator posts: 64
/// writes of 1 MiB posted at once, 64 MiB ahead of a 4 MiB [`Bounds::requests`], all land
/// (`bench transport --sizes 8388608` posts 1 GiB ahead and failed with the byte bound alone).
#[test]
fn a_peer_that_keeps_reading_is_not_given_up_however_far_ahead_the_posts_are() {
    use crate::Status;
    const MIB: usize = 1 << 20;
    #[derive(Default)]
    struct Ahead {
        posted: bool,
        target: bool,
        done: u32,
        failed: Option<Status>,
    }
    impl<N: Nic> Process<N> for Ahead {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(MIB).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(1) {
                self.target = true;
                return Progress::worked(false);
            }
            if !self.posted {
                let payload = bytes::Bytes::from(vec![3u8; MIB]);
                for _ in 0..64 {
                    let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
                    let op = crate::Op::Write {
                        dst,
                        data: crate::Data::Bytes(payload.clone()),
                        imm: None,
                        flags: WriteFlags::SIGNALED,
                    };
                    nic.post(op).unwrap();
                }
                self.posted = true;
            }
            while let Some(c) = nic.poll_completion() {
                match c.status {
                    Status::Success => self.done += 1,
                    s => self.failed = Some(s),
                }
            }
            Progress::worked(false)
        }
        fn done(&self) -> bool {
            self.target || self.done == 64 || self.failed.is_some()
        }
    }
    let cfg = bounded(Bounds {
        requests: 4 * MIB,
        ..Bounds::default()
    });
    let run = TcpRuntime::new(cfg, vec![Ahead::default(), Ahead::default()])
        .unwrap()
        .run(Duration::from_secs(60));
    let p0 = &run.processes[0];
    let why = format!("{:?} {:?}", run.stops, run.events);
    assert_eq!(p0.failed, None, "{why}");
    assert_eq!(p0.done, 64, "{why}");
}
