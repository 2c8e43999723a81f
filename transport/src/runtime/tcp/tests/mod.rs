//! A hostile peer against a real node: a raw socket that speaks the wire format by hand and
//! tries what a correct node never would. The fixtures every such test uses live here, with the
//! tests of requests a node refuses and of partitions; the handshake's, the bounds' and giving
//! up's tests have modules of their own.

use super::peer::RawPeer;
use super::wire::{self, Frame, WireOp, WireStatus};
use super::*;
use crate::region::Access;
use crate::{Progress, RegionId, RemoteAddr, WriteFlags};
use std::io::{Read, Write};
use std::net::TcpStream;

mod bounds;
mod give_up;
mod handshake;

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

/// Two nodes on loopback, each running a `P` from its default, with `cfg`, until both are done
/// or `limit` passed.
fn pair<P: Process<TcpNic> + Default + Send>(cfg: TcpConfig, limit: Duration) -> TcpRun<P> {
    TcpRuntime::new(cfg, vec![P::default(), P::default()])
        .unwrap()
        .run(limit)
}

/// Asserts one of a node's connection events says `what` (printing them all if none does).
fn logged(events: &[String], what: &str) {
    assert!(
        events.iter().any(|e| e.contains(what)),
        "{what:?} not in {events:?}"
    );
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
        logged(&events, reason);
    }
    // A well-formed preamble followed by a frame that claims to be huge.
    let events = after_preamble(|raw| raw.stream.write_all(&u32::MAX.to_le_bytes()).unwrap());
    logged(&events, "exceeds the limit");
    // Before its proof, a peer announcing a frame a proven peer could send (a chunk) is
    // refused on its length, without the node buffering a byte of it.
    let events = after_preamble(|raw| {
        raw.stream
            .write_all(&(wire::CHUNK as u32).to_le_bytes())
            .unwrap()
    });
    let limit = format!(
        "frame of {} bytes exceeds the limit of {}",
        wire::CHUNK,
        wire::MAX_GREETING
    );
    logged(&events, &limit);
    // Requests before the handshake finished.
    let events = after_preamble(|raw| {
        raw.send(&Frame::Request {
            seq: 0,
            op: WireOp::Reconnect,
        })
        .unwrap()
    });
    logged(&events, "unexpected request 0");
}

/// Node 0's connection events after a raw peer sent the wire preamble and then whatever `send`
/// writes, and read until the node closed the connection.
fn after_preamble(send: impl FnOnce(&mut RawPeer)) -> Vec<String> {
    let (_, events) = against_node_0(TcpConfig::default(), |addr, _, _| {
        let mut raw = RawPeer::connect(addr).unwrap();
        raw.stream.write_all(&wire::preamble()).unwrap();
        send(&mut raw);
        let mut sink = Vec::new();
        let _ = raw.stream.read_to_end(&mut sink);
    });
    events
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
    let run = pair::<Late>(cfg, Duration::from_secs(20));
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
