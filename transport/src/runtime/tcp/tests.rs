//! A hostile peer against a real node: a raw socket that speaks the wire format by hand and
//! tries what a correct node never would.

use super::wire::{self, Frame, Hello, WireOp, WireStatus};
use super::*;
use crate::region::Access;
use crate::{Progress, RegionId, RemoteAddr, WriteFlags};
use std::io::{Read, Write};
use std::net::TcpStream;

const PATTERN: u8 = 0xA5;

/// Node 0: region 0 writable by p1, region 1 granted to nobody; both start filled with
/// [`PATTERN`]. Every poll copies both regions out, so the test sees what landed.
#[derive(Default)]
struct Target {
    filled: bool,
    seen: [Vec<u8>; 2],
}

impl<N: Nic> Process<N> for Target {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![
            RegionSpec::new(64).grant(ProcessId(1), Access::Write),
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

/// A raw connection to node 0 that claims to be p1.
struct Raw {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Raw {
            stream,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, frame: &Frame<'_>) {
        let mut out = Vec::new();
        wire::encode(frame, &mut out);
        self.stream.write_all(&out).unwrap();
    }

    /// The next frame, or `None` once the node closed the connection.
    fn next(&mut self) -> Option<Frame<'static>> {
        loop {
            if let Some((f, used)) = wire::decode(&self.buf).unwrap() {
                // Re-encode to detach the frame from the buffer.
                let owned: Frame<'static> = match f {
                    Frame::Welcome(w) => Frame::Welcome(w),
                    Frame::Response {
                        seq,
                        status,
                        value,
                        data,
                    } => Frame::Response {
                        seq,
                        status,
                        value,
                        data: Vec::leak(data.to_vec()),
                    },
                    other => panic!("node sent {other}"),
                };
                self.buf.drain(..used);
                return Some(owned);
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Preamble, hello as p1 on queue pair 0, welcome, and a proof (all zeros: no secret).
    fn handshake(&mut self, table: &RegionTable) -> Frame<'static> {
        self.stream.write_all(&wire::preamble()).unwrap();
        let mut pre = [0u8; wire::PREAMBLE_LEN];
        self.stream.read_exact(&mut pre).unwrap();
        wire::check_preamble(&pre).unwrap();
        self.send(&Frame::Hello(Hello {
            from: ProcessId(1),
            to: ProcessId(0),
            qp: 0,
            regions: vec![8],
            table: table.digest(),
            nonce: [1; 16],
        }));
        let welcome = self.next().expect("a welcome");
        self.send(&Frame::Proof([0; 32]));
        welcome
    }

    fn request(&mut self, seq: u64, op: WireOp<'_>) -> Option<WireStatus> {
        self.send(&Frame::Request { seq, op });
        match self.next()? {
            Frame::Response { seq: s, status, .. } => {
                assert_eq!(s, seq, "responses come in order");
                Some(status)
            }
            other => panic!("expected a response, got {other}"),
        }
    }
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

/// Runs node 0 with `cfg` while `attack` plays p1 against it; returns node 0's process and
/// its connection events.
fn against_node_0(
    cfg: TcpConfig,
    attack: impl FnOnce(SocketAddr, &RegionTable),
) -> (Target, Vec<String>) {
    let procs = vec![Either::T(Target::default()), Either::A(Absent)];
    let specs: Vec<_> = procs.iter().map(Process::<TcpNic>::regions).collect();
    let table = RegionTable::new(&specs);
    let rt = TcpRuntime::new(cfg, procs).unwrap();
    let addr = rt.addrs()[0];
    let control = rt.control();
    control.crash(ProcessId(1));
    std::thread::scope(|s| {
        let run = s.spawn(move || rt.run(Duration::from_secs(30)));
        attack(addr, &table);
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
    let (target, events) = against_node_0(TcpConfig::default(), |addr, table| {
        let mut raw = Raw::connect(addr);
        assert!(matches!(raw.handshake(table), Frame::Welcome(_)));
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
        let (target, events) = against_node_0(TcpConfig::default(), |addr, _| {
            let mut raw = Raw::connect(addr);
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
    let (_, events) = against_node_0(TcpConfig::default(), |addr, _| {
        let mut raw = Raw::connect(addr);
        raw.stream.write_all(&wire::preamble()).unwrap();
        raw.stream.write_all(&u32::MAX.to_le_bytes()).unwrap();
        let mut sink = Vec::new();
        let _ = raw.stream.read_to_end(&mut sink);
    });
    assert!(
        events.iter().any(|e| e.contains("exceeds the limit")),
        "{events:?}"
    );
    // Requests before the handshake finished.
    let (_, events) = against_node_0(TcpConfig::default(), |addr, _| {
        let mut raw = Raw::connect(addr);
        raw.stream.write_all(&wire::preamble()).unwrap();
        raw.send(&Frame::Request {
            seq: 0,
            op: WireOp::Reconnect,
        });
        let mut sink = Vec::new();
        let _ = raw.stream.read_to_end(&mut sink);
    });
    assert!(
        events.iter().any(|e| e.contains("unexpected request 0")),
        "{events:?}"
    );
}

#[test]
fn without_the_cluster_secret_a_peer_is_refused() {
    let cfg = TcpConfig {
        secret: Some(b"the cluster's secret".to_vec()),
        ..TcpConfig::default()
    };
    let (target, events) = against_node_0(cfg, |addr, table| {
        let mut raw = Raw::connect(addr);
        let Frame::Welcome(w) = raw.handshake(table) else {
            panic!("no welcome");
        };
        assert!(w.mac.is_some(), "a node with a secret tags its welcome");
        // The proof was all zeros: the node closes before any request is applied.
        let refused = raw.request(
            0,
            WireOp::Write {
                region: 0,
                offset: 0,
                data: &[9; 8],
                imm: None,
            },
        );
        assert_eq!(refused, None);
    });
    assert_eq!(target.seen[0], vec![PATTERN; 64]);
    assert!(
        events
            .iter()
            .any(|e| e.contains("does not hold the cluster secret")),
        "{events:?}"
    );
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
        secret: Some(b"s".to_vec()),
        ..TcpConfig::default()
    };
    let run = TcpRuntime::new(cfg, vec![Ping::default(), Ping::default()])
        .unwrap()
        .run(Duration::from_secs(20));
    assert!(run.processes.iter().all(|p| p.got == 7), "{:?}", run.events);
    assert!(run.stops.iter().all(|s| *s == TcpStop::AllDone));
}

/// The fault layer: a write posted while the link is cut arrives, intact and only once the
/// partition heals (RDMA's reliable connection retransmits; nothing is lost).
#[test]
fn a_partition_holds_writes_until_it_heals() {
    use super::faults::{LinkEffect, LinkFault};
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
    let cfg = TcpConfig {
        faults: vec![LinkFault {
            at: Duration::from_millis(10),
            span: Duration::from_millis(300),
            from: vec![ProcessId(0)],
            to: vec![ProcessId(1)],
            effect: LinkEffect::Partition,
        }],
        ..TcpConfig::default()
    };
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
