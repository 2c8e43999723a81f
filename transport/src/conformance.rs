//! The transport conformance suite: one set of RDMA-model guarantees that every runtime must
//! keep (per-pair ordering, access checks and revoke, queue-pair errors and reconnect, atomics,
//! two-sided messages, crash reporting, and rejection of bad ops without side effects).
//!
//! Each check is generic over a [`Runner`], which runs a set of processes to completion on one
//! runtime. `transport/tests/conformance.rs` runs it on sim, local, local with its NIC thread
//! and tcp; the `verbs` crate runs it on a real RDMA device. An assumption that only holds in
//! the simulator is caught on real threads and real NICs. Built with the `conformance` feature.

use crate::*;

/// Runs processes on one runtime until every one is done, and hands them back.
pub trait Runner {
    /// The runtime's NIC.
    type Nic: Nic;
    /// Runs `procs` (process `i` is `ProcessId(i)`); with `crash`, that process crashes at about
    /// that time (as soon as the runtime can, on real runtimes).
    fn run<P: Process<Self::Nic> + Send>(
        procs: Vec<P>,
        crash: Option<(ProcessId, Nanos)>,
    ) -> Vec<P>;
}

/// Every check of the suite with its name, instantiated for `R`.
pub fn all<R: Runner>() -> Vec<(&'static str, fn())> {
    vec![
        ("writes_land_in_post_order", writes_land_in_post_order::<R>),
        (
            "revoke_stops_later_writes_until_regranted",
            revoke_stops_later_writes_until_regranted::<R>,
        ),
        (
            "atomics_reads_sends_and_immediates",
            atomics_reads_sends_and_immediates::<R>,
        ),
        (
            "ops_to_a_crashed_peer_fail",
            ops_to_a_crashed_peer_fail::<R>,
        ),
        (
            "bad_ops_are_rejected_without_effect",
            bad_ops_are_rejected_without_effect::<R>,
        ),
        (
            "synthetic_payload_lands_intact",
            synthetic_payload_lands_intact::<R>,
        ),
        ("large_writes_land_intact", large_writes_land_intact::<R>),
    ]
}

const R0: RegionId = RegionId(0);
const P0: ProcessId = ProcessId(0);
const P1: ProcessId = ProcessId(1);
const READY: u64 = u64::from_le_bytes([1; 8]);

/// p1 writes 64-byte entries whose every word is the entry number `1..=N`, mixing inline,
/// non-inline, signaled and unsignaled; p0 watches the first word and checks it never goes back.
struct Ordered {
    n: u64,
    next: u64,
    seen: Vec<u64>,
    completions: u64,
}

impl<N: Nic> Process<N> for Ordered {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(64).with_default(Access::Write)]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == P1 {
            while nic.poll_completion().is_some() {
                self.completions += 1;
            }
            if self.next > self.n {
                return Progress::IDLE;
            }
            let i = self.next;
            let entry: Vec<u8> = (0..8).flat_map(|_| i.to_le_bytes()).collect();
            let mut flags = WriteFlags::NONE;
            if i % 3 == 0 {
                flags = flags.inline();
            }
            if i % 16 == 0 {
                flags = flags.signaled();
            }
            nic.post_write(RemoteAddr::new(P0, R0, 0), &entry, flags)
                .unwrap();
            self.next += 1;
            Progress::worked(true)
        } else {
            let v = nic.load_u64(LocalAddr::new(R0, 0)).unwrap();
            if self.seen.last() != Some(&v) {
                self.seen.push(v);
                return Progress::worked(true);
            }
            Progress::IDLE
        }
    }
    fn done(&self) -> bool {
        self.seen.last() == Some(&self.n) || self.next > self.n && self.completions == self.n / 16
    }
}

/// Runs this check on runtime `R`; panics with what went wrong.
pub fn writes_land_in_post_order<R: Runner>() {
    let n = 2000;
    let mk = || Ordered {
        n,
        next: 1,
        seen: vec![],
        completions: 0,
    };
    let procs = R::run(vec![mk(), mk()], None);
    let seen = &procs[0].seen;
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "went back: {seen:?}");
    assert_eq!(seen.last(), Some(&n), "the last write must land");
    assert_eq!(
        procs[1].completions,
        n / 16,
        "one completion per signaled write"
    );
}

/// p1 keeps writing 64-byte entries into p0; p0 revokes p1's access once entry 100 has landed,
/// snapshots its region and checks that nothing changes until it grants access again. p1 must see
/// `AccessDenied`, reconnect, and tell p0 by a message; p0 then grants access again and p1's
/// writes must land again. Event-driven, so thread scheduling cannot make it pass vacuously.
/// p1 also checks that its work-request ids increase across the reconnect ([`WrId`]).
#[derive(Default)]
struct Revoker {
    last_wr: Option<WrId>,
    ids_out_of_order: bool,
    counter: u64,
    revoked: bool,
    snapshot: Vec<u8>,
    changed_while_revoked: bool,
    regranted: bool,
    after_regrant: u64,
    denied: u64,
    reconnects: u64,
    reconnecting: bool,
    told: u64,
    granted: bool,
}

impl<N: Nic> Process<N> for Revoker {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(64).grant(P1, Access::Write)]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == P1 {
            while let Some(c) = nic.poll_completion() {
                match (c.kind, c.status) {
                    (_, Status::AccessDenied) => self.denied += 1,
                    (OpKind::Reconnect, Status::Success) => self.reconnecting = false,
                    _ => {}
                }
            }
            let mut posted = |wr: WrId| {
                self.ids_out_of_order |= self.last_wr.is_some_and(|last| wr <= last);
                self.last_wr = Some(wr);
            };
            if self.denied > self.reconnects && !self.reconnecting {
                posted(nic.reconnect(P0).unwrap());
                self.reconnects += 1;
                self.reconnecting = true;
            }
            if self.reconnects > self.told && !self.reconnecting {
                posted(nic.send(P0, b"denied", false).unwrap());
                self.told = self.reconnects;
            }
            if nic.poll_recv().is_some() {
                self.granted = true;
            }
            // Once denied, stop writing until p0 says access is back: a write denied again
            // would break the queue pair and flush the message behind it.
            if self.denied > 0 && !self.granted {
                return Progress::IDLE;
            }
            self.counter += 1;
            let entry: Vec<u8> = (0..8).flat_map(|_| self.counter.to_le_bytes()).collect();
            posted(
                nic.post_write(RemoteAddr::new(P0, R0, 0), &entry, WriteFlags::NONE)
                    .unwrap(),
            );
            // Pace the writer a little so the simulator does not run millions of writes.
            return Progress::worked(false).wake_at(Some(nic.now() + Nanos(200)));
        }
        let mut buf = vec![0; 64];
        nic.read_local(LocalAddr::new(R0, 0), &mut buf).unwrap();
        let v = u64::from_le_bytes(buf[..8].try_into().unwrap());
        if !self.revoked {
            if v >= 100 {
                nic.set_access(R0, P1, Access::None).unwrap();
                // Read after set_access returned: anything that lands later is a violation.
                self.snapshot = vec![0; 64];
                nic.read_local(LocalAddr::new(R0, 0), &mut self.snapshot)
                    .unwrap();
                self.revoked = true;
                return Progress::worked(true);
            }
            return Progress::IDLE;
        }
        if !self.regranted {
            if buf != self.snapshot {
                self.changed_while_revoked = true;
            }
            if nic.poll_recv().is_some() {
                nic.set_access(R0, P1, Access::Write).unwrap();
                nic.send(P1, b"granted", false).unwrap();
                self.regranted = true;
                self.snapshot = buf;
                return Progress::worked(true);
            }
            return Progress::IDLE;
        }
        if buf != self.snapshot {
            self.after_regrant += 1;
            self.snapshot = buf;
            return Progress::worked(true);
        }
        Progress::IDLE
    }
    fn done(&self) -> bool {
        self.after_regrant >= 10 || self.granted && self.counter > 10_000
    }
}

/// Runs this check on runtime `R`; panics with what went wrong.
pub fn revoke_stops_later_writes_until_regranted<R: Runner>() {
    let procs = R::run(vec![Revoker::default(), Revoker::default()], None);
    let (owner, writer) = (&procs[0], &procs[1]);
    assert!(owner.revoked, "the owner never revoked");
    assert!(
        !owner.changed_while_revoked,
        "a write landed after set_access revoked the writer"
    );
    assert!(
        owner.regranted && owner.after_regrant >= 10,
        "writes never resumed"
    );
    assert!(writer.denied >= 1, "the writer never saw AccessDenied");
    assert!(writer.reconnects >= 1, "the writer never reconnected");
    assert!(
        !writer.ids_out_of_order,
        "a work-request id was not above every earlier one"
    );
}

/// p0 exercises CAS, fetch-and-add, read, send and write-with-immediate against p1.
#[derive(Default)]
struct Verbs {
    step: u32,
    values: Vec<u64>,
    read_back: Vec<u8>,
    messages: Vec<Vec<u8>>,
    imms: Vec<u32>,
    failures: Vec<Status>,
}

impl<N: Nic> Process<N> for Verbs {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![
            RegionSpec::new(64).with_default(Access::ReadWrite),
            RegionSpec::new(64).with_default(Access::Read),
        ]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut worked = false;
        while let Some(c) = nic.poll_completion() {
            worked = true;
            if c.status != Status::Success {
                self.failures.push(c.status);
            } else if let Some(v) = c.value {
                self.values.push(v);
            } else if c.kind == OpKind::Read {
                let mut b = vec![0; 16];
                nic.read_local(LocalAddr::new(R0, 32), &mut b).unwrap();
                self.read_back = b;
            }
            self.step += 1;
        }
        while let Some(r) = nic.poll_recv() {
            worked = true;
            match r {
                Recv::Message { data, .. } => self.messages.push(data.to_vec()),
                Recv::Immediate { imm, .. } => self.imms.push(imm),
            }
        }
        if nic.id() == P1 {
            if self.step == 0 {
                nic.write_local(LocalAddr::new(RegionId(1), 0), b"remote bytes 16!")
                    .unwrap();
                nic.store_u64(LocalAddr::new(R0, 8), 5).unwrap();
                nic.post_write(RemoteAddr::new(P0, R0, 56), &[1; 8], WriteFlags::NONE)
                    .unwrap();
                self.step = 1;
                return Progress::worked(true);
            }
            return Progress::worked(worked);
        }
        let peer = RemoteAddr::new(P1, R0, 0);
        match (self.step, self.values.len()) {
            (0, _) if nic.load_u64(LocalAddr::new(R0, 56)).unwrap() == READY => {
                nic.post_cas(peer, 0, 7).unwrap(); // succeeds: 0 -> 7
                nic.post_cas(peer, 0, 9).unwrap(); // fails: word is 7
                nic.post_fetch_add(peer.add(8), 10).unwrap(); // 5 -> 15
                nic.post_read(
                    RemoteAddr::new(P1, RegionId(1), 0),
                    16,
                    LocalAddr::new(R0, 32),
                    true,
                )
                .unwrap();
                nic.send(P1, b"hello", false).unwrap();
                nic.post_write_imm(peer.add(16), &[1; 8], 77, WriteFlags::NONE)
                    .unwrap();
                // Atomics need read-write access; region 1 only grants read.
                nic.post_cas(RemoteAddr::new(P1, RegionId(1), 0), 0, 1)
                    .unwrap();
                self.step = 100;
                true
            }
            (0, _) => return Progress::IDLE,
            _ => worked,
        };
        Progress::worked(true)
    }
    fn done(&self) -> bool {
        self.step >= 105 || self.messages.len() == 1 && self.imms.len() == 1
    }
}

/// Runs this check on runtime `R`; panics with what went wrong.
pub fn atomics_reads_sends_and_immediates<R: Runner>() {
    let procs = R::run(vec![Verbs::default(), Verbs::default()], None);
    let (a, b) = (&procs[0], &procs[1]);
    assert_eq!(a.values, vec![0, 7, 5], "CAS old values then FAA old value");
    assert_eq!(a.read_back, b"remote bytes 16!");
    assert_eq!(a.failures, vec![Status::AccessDenied]);
    assert_eq!(b.messages, vec![b"hello".to_vec()]);
    assert_eq!(b.imms, vec![77]);
}

/// p0 writes to p1 after p1 has crashed; the write must fail with `PeerUnreachable`.
#[derive(Default)]
struct ToCrashed {
    posted: bool,
    status: Option<Status>,
}

impl<N: Nic> Process<N> for ToCrashed {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(8).with_default(Access::Write)]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == P1 {
            return Progress::IDLE;
        }
        if let Some(c) = nic.poll_completion() {
            self.status = Some(c.status);
        }
        if !self.posted && nic.now() >= Nanos::from_us(10) {
            nic.post_write(RemoteAddr::new(P1, R0, 0), &[1; 8], WriteFlags::NONE)
                .unwrap();
            self.posted = true;
        }
        Progress::IDLE.wake_at(if self.posted {
            None
        } else {
            Some(Nanos::from_us(10))
        })
    }
    fn done(&self) -> bool {
        self.status.is_some()
    }
}

/// Runs this check on runtime `R`; panics with what went wrong.
pub fn ops_to_a_crashed_peer_fail<R: Runner>() {
    let procs = R::run(
        vec![ToCrashed::default(), ToCrashed::default()],
        Some((P1, Nanos::from_us(1))),
    );
    assert_eq!(procs[0].status, Some(Status::PeerUnreachable));
}

/// Out-of-range, unknown, misaligned and oversized ops return errors and change nothing. p1
/// fills its region with guard bytes and signals p0; p0 posts the bad ops, then a message; p1
/// (whose ops from p0 arrive in order) snapshots its region when the message arrives.
#[derive(Default)]
struct BadOps {
    errors: Vec<OpError>,
    started: bool,
    finished: bool,
    guard: Vec<u8>,
}

impl<N: Nic> Process<N> for BadOps {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![
            RegionSpec::new(32).with_default(Access::ReadWrite),
            RegionSpec::new(8).with_default(Access::Write),
        ]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == P1 {
            if !self.started {
                nic.write_local(LocalAddr::new(R0, 0), &[0xEE; 32]).unwrap();
                nic.post_write(
                    RemoteAddr::new(P0, RegionId(1), 0),
                    &[1; 8],
                    WriteFlags::NONE,
                )
                .unwrap();
                self.started = true;
            }
            if nic.poll_recv().is_some() {
                self.guard = vec![0; 32];
                nic.read_local(LocalAddr::new(R0, 0), &mut self.guard)
                    .unwrap();
                self.finished = true;
            }
            return Progress::IDLE;
        }
        if self.finished || nic.load_u64(LocalAddr::new(RegionId(1), 0)).unwrap() != READY {
            return Progress::IDLE;
        }
        let inline_max = nic.limits().inline_max;
        let dst = RemoteAddr::new(P1, R0, 0);
        let results = vec![
            nic.post_write(dst.add(30), &[1; 4], WriteFlags::NONE),
            nic.post_write(dst, &[1; 33], WriteFlags::NONE),
            nic.post_write(dst.add(usize::MAX), &[1], WriteFlags::NONE),
            nic.post_write(RemoteAddr::new(P1, RegionId(3), 0), &[1], WriteFlags::NONE),
            nic.post_write(RemoteAddr::new(ProcessId(9), R0, 0), &[1], WriteFlags::NONE),
            nic.post_cas(dst.add(4), 0, 1),
            nic.post_write(dst, &vec![0; inline_max + 1], WriteFlags::NONE.inline()),
            nic.post_read(dst, 8, LocalAddr::new(R0, 28), true),
        ];
        for r in results {
            self.errors.push(r.expect_err("a bad op was accepted"));
        }
        self.errors.push(
            nic.write_local(LocalAddr::new(R0, 30), &[0; 3])
                .unwrap_err(),
        );
        let mut buf = [0; 8];
        self.errors.push(
            nic.read_local(LocalAddr::new(RegionId(2), 0), &mut buf)
                .unwrap_err(),
        );
        self.errors
            .push(nic.load_u64(LocalAddr::new(R0, 3)).unwrap_err());
        nic.send(P1, b"check", false).unwrap();
        self.finished = true;
        Progress::worked(true)
    }
    fn done(&self) -> bool {
        self.finished
    }
}

/// Runs this check on runtime `R`; panics with what went wrong.
pub fn bad_ops_are_rejected_without_effect<R: Runner>() {
    let procs = R::run(vec![BadOps::default(), BadOps::default()], None);
    let e = &procs[0].errors;
    assert_eq!(e.len(), 11);
    assert!(matches!(
        e[0],
        OpError::OutOfBounds {
            offset: 30,
            len: 4,
            region_len: 32,
            ..
        }
    ));
    assert!(matches!(e[1], OpError::OutOfBounds { len: 33, .. }));
    assert!(matches!(e[2], OpError::OutOfBounds { .. }));
    assert!(matches!(e[3], OpError::UnknownRegion { .. }));
    assert!(matches!(e[4], OpError::UnknownProcess { .. }));
    assert!(matches!(e[5], OpError::Misaligned { offset: 4 }));
    assert!(matches!(e[6], OpError::InlineTooLarge { .. }));
    assert!(matches!(e[7], OpError::OutOfBounds { offset: 28, .. }));
    assert!(matches!(e[8], OpError::OutOfBounds { offset: 30, .. }));
    assert!(matches!(e[9], OpError::UnknownRegion { .. }));
    assert!(matches!(e[10], OpError::Misaligned { offset: 3 }));
    assert!(
        e[0].to_string().contains("outside the region of 32 bytes"),
        "{}",
        e[0]
    );
    assert_eq!(
        procs[1].guard,
        vec![0xEE; 32],
        "a rejected op modified memory"
    );
}

/// A 64 KiB synthetic payload (bytes regenerated from a seed, never materialised by the sender)
/// lands intact: the receiver verifies every byte by regenerating it.
#[derive(Default)]
struct SyntheticWrite {
    posted: bool,
    verified: Option<bool>,
}

const SYNTH: Synthetic = Synthetic::new(0xFEED, 64 << 10);

impl<N: Nic> Process<N> for SyntheticWrite {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(SYNTH.len as usize).with_default(Access::Write)]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == P0 {
            if !self.posted {
                let dst = RemoteAddr::new(P1, R0, 0);
                nic.post_write_data(dst, Data::Synthetic(SYNTH), WriteFlags::SIGNALED)
                    .unwrap();
                self.posted = true;
            }
            if let Some(c) = nic.poll_completion() {
                assert_eq!(c.status, Status::Success);
                nic.send(P1, b"check", false).unwrap();
                self.verified = Some(true);
            }
            return Progress::IDLE;
        }
        if nic.poll_recv().is_some() {
            let mut buf = vec![0; SYNTH.len as usize];
            nic.read_local(LocalAddr::new(R0, 0), &mut buf).unwrap();
            self.verified = Some(SYNTH.verify(0, &buf));
        }
        Progress::IDLE
    }
    fn done(&self) -> bool {
        self.verified.is_some()
    }
}

/// Runs this check on runtime `R`; panics with what went wrong.
pub fn synthetic_payload_lands_intact<R: Runner>() {
    let procs = R::run(
        vec![SyntheticWrite::default(), SyntheticWrite::default()],
        None,
    );
    assert_eq!(procs[1].verified, Some(true));
}

/// Two writes larger than any runtime sends in one piece, at an unaligned offset, back to back
/// on one queue pair; the second carries an immediate. When the immediate arrives every byte of
/// both must be there, and nothing around them touched.
#[derive(Default)]
struct LargeWrites {
    posted: bool,
    verified: Option<bool>,
}

const LARGE_AT: usize = 5;
const LARGE_A: usize = (5 << 19) + 3;
const LARGE_B: usize = 40_000;

fn large_byte(i: usize) -> u8 {
    (i * 31 % 251) as u8 + 1
}

impl<N: Nic> Process<N> for LargeWrites {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(LARGE_AT + LARGE_A + LARGE_B + 64).with_default(Access::Write)]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == P0 {
            if !self.posted {
                let bytes: Vec<u8> = (0..LARGE_A + LARGE_B).map(large_byte).collect();
                let bytes = bytes::Bytes::from(bytes);
                for (at, len, imm, flags) in [
                    (0, LARGE_A, None, WriteFlags::NONE),
                    (LARGE_A, LARGE_B, Some(9), WriteFlags::SIGNALED),
                ] {
                    nic.post(Op::Write {
                        dst: RemoteAddr::new(P1, R0, LARGE_AT + at),
                        data: Data::Bytes(bytes.slice(at..at + len)),
                        imm,
                        flags,
                    })
                    .unwrap();
                }
                self.posted = true;
            }
            if let Some(c) = nic.poll_completion() {
                assert_eq!(c.status, Status::Success);
                self.verified = Some(true);
            }
            return Progress::IDLE;
        }
        if let Some(r) = nic.poll_recv() {
            assert!(matches!(r, Recv::Immediate { imm: 9, .. }), "{r:?}");
            let mut buf = vec![0; LARGE_AT + LARGE_A + LARGE_B + 64];
            nic.read_local(LocalAddr::new(R0, 0), &mut buf).unwrap();
            let landed = buf[LARGE_AT..LARGE_AT + LARGE_A + LARGE_B]
                .iter()
                .enumerate()
                .all(|(i, b)| *b == large_byte(i));
            let untouched = buf[..LARGE_AT]
                .iter()
                .chain(&buf[LARGE_AT + LARGE_A + LARGE_B..])
                .all(|b| *b == 0);
            self.verified = Some(landed && untouched);
        }
        Progress::IDLE
    }
    fn done(&self) -> bool {
        self.verified.is_some()
    }
}

/// Runs this check on runtime `R`; panics with what went wrong.
pub fn large_writes_land_intact<R: Runner>() {
    let procs = R::run(vec![LargeWrites::default(), LargeWrites::default()], None);
    assert_eq!(procs[1].verified, Some(true));
}
