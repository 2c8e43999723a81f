//! A random-op workload that checks the transport model's guarantees while it runs.
//!
//! Every process issues a random mix of writes (inline or not, signaled or not), sends,
//! write-with-immediates, reads, compare-and-swaps and fetch-and-adds to random peers, and checks
//! what it observes against the model:
//! - per-pair order: the sequence numbers a sender writes into its own slot of the receiver's
//!   inbox, and the ones it sends, never go backwards at the receiver;
//! - a read returns the peer's (immutable) readable pattern;
//! - every failed op is reported, and a queue pair in error recovers with `reconnect`.
//!
//! Under injected faults (crashes, pauses, slow processes, link delay, revokes) it exercises
//! every path of a runtime, which makes it the workload of the simulator's determinism check
//! and of `harness check --protocol chaos`.

pub mod seeded;

use crate::nic::{Nic, OpError, Recv, Status, WriteFlags};
use crate::process::{Process, ProcessId, Progress};
use crate::region::{Access, LocalAddr, RegionId, RegionSpec, RemoteAddr};
use crate::time::{Nanos, Timer};

/// Each sender's slot in a receiver's inbox.
const SLOT_BYTES: usize = 64;
/// The inbox: one slot per sender, writable by all.
pub const INBOX: RegionId = RegionId(0);
/// One counter word per process, for atomics; read-write for all.
pub const COUNTERS: RegionId = RegionId(1);
/// A pattern anyone may read; never changes after start.
pub const PATTERN: RegionId = RegionId(2);
/// Where reads land locally.
pub const SCRATCH: RegionId = RegionId(3);
const PATTERN_BYTES: usize = 256;

/// Parameters of a chaos process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChaosConfig {
    /// Processes in the run.
    pub processes: usize,
    /// Ops each process issues before it is done.
    pub ops: u64,
    /// Largest think time between two ops.
    pub think_ns_max: u64,
    /// How long a process keeps draining completions after its last op before it is done
    /// (longer than the unreachable timeout, so failures of the last ops are observed).
    pub drain_ns: u64,
}

/// One chaos participant.
#[derive(Clone, Debug)]
pub struct Chaos {
    cfg: ChaosConfig,
    issued: u64,
    write_seq: Vec<u64>,
    send_seq: Vec<u64>,
    seen_write: Vec<u64>,
    seen_send: Vec<u64>,
    reconnecting: Vec<bool>,
    needs_reconnect: Vec<bool>,
    pending_reads: u64,
    think: Timer,
    last_peer: Option<ProcessId>,
    drained_at: Option<Nanos>,
    drained: bool,
    /// Counts of completions by status: success, access denied, unreachable, flushed.
    pub statuses: [u64; 4],
    /// Model violations observed (empty in a correct runtime).
    pub violations: Vec<String>,
    started: bool,
}

impl Chaos {
    /// A participant of a run of `cfg.processes` processes.
    pub fn new(cfg: ChaosConfig) -> Chaos {
        let n = cfg.processes;
        Chaos {
            cfg,
            issued: 0,
            write_seq: vec![0; n],
            send_seq: vec![0; n],
            seen_write: vec![0; n],
            seen_send: vec![0; n],
            reconnecting: vec![false; n],
            needs_reconnect: vec![false; n],
            pending_reads: 0,
            think: Timer::new(),
            last_peer: None,
            drained_at: None,
            drained: false,
            statuses: [0; 4],
            violations: Vec::new(),
            started: false,
        }
    }

    /// Every participant of a run of `cfg`: `cfg.processes` of them, alike (each learns its
    /// id from its NIC).
    pub fn all(cfg: ChaosConfig) -> Vec<Chaos> {
        (0..cfg.processes).map(|_| Chaos::new(cfg)).collect()
    }

    fn pattern_byte(owner: ProcessId, i: usize) -> u8 {
        (owner.0 as usize * 31 + i * 7) as u8
    }

    fn check_inbox<N: Nic>(&mut self, nic: &mut N) {
        for s in 0..self.cfg.processes {
            let at = LocalAddr::new(INBOX, s * SLOT_BYTES);
            let seq = nic.load_u64(at).expect("inbox in bounds");
            if seq < self.seen_write[s] {
                self.violations.push(format!(
                    "{}: writes from p{s} went backwards: {} after {}",
                    nic.id(),
                    seq,
                    self.seen_write[s]
                ));
            }
            self.seen_write[s] = self.seen_write[s].max(seq);
        }
    }

    fn check_scratch<N: Nic>(&mut self, nic: &mut N, peer: ProcessId) {
        let mut buf = [0u8; PATTERN_BYTES];
        nic.read_local(LocalAddr::new(SCRATCH, 0), &mut buf)
            .expect("scratch in bounds");
        // The peer writes its pattern on its first poll, word by word; on real threads a read
        // may overlap that, so each word is either still zero or exactly the pattern's word.
        let word_ok = |w: usize| {
            let got = &buf[w * 8..w * 8 + 8];
            got.iter().all(|&b| b == 0)
                || (0..8).all(|i| got[i] == Self::pattern_byte(peer, w * 8 + i))
        };
        if !(0..PATTERN_BYTES / 8).all(word_ok) {
            self.violations.push(format!(
                "{}: read from {peer} returned wrong bytes",
                nic.id()
            ));
        }
    }

    fn issue<N: Nic>(&mut self, nic: &mut N) {
        let n = self.cfg.processes as u64;
        let me = nic.id();
        // Streams to one peer make per-pair ordering observable; otherwise pick anyone.
        let peer = match self.last_peer {
            Some(p) if nic.rng().chance(0.6) => p,
            _ => ProcessId(nic.rng().below(n) as u32),
        };
        self.last_peer = Some(peer);
        if peer == me || self.reconnecting[peer.index()] {
            self.issued += 1;
            return;
        }
        let signaled = nic.rng().chance(0.3);
        let choice = nic.rng().below(100);
        let result = match choice {
            0..=49 => {
                let seq = self.write_seq[peer.index()] + 1;
                let len = 8 + 8 * nic.rng().below(7) as usize;
                let mut entry = vec![0u8; len];
                entry[..8].copy_from_slice(&seq.to_le_bytes());
                let mut flags = WriteFlags::NONE;
                if nic.rng().chance(0.5) && len <= nic.limits().inline_max {
                    flags = flags.inline();
                }
                if signaled {
                    flags = flags.signaled();
                }
                let dst = RemoteAddr::new(peer, INBOX, me.index() * SLOT_BYTES);
                let r = if nic.rng().chance(0.1) {
                    nic.post_write_imm(dst, &entry, seq as u32, flags)
                } else {
                    nic.post_write(dst, &entry, flags)
                };
                self.write_seq[peer.index()] = seq;
                r.map(|_| ())
            }
            50..=69 => {
                let seq = self.send_seq[peer.index()] + 1;
                self.send_seq[peer.index()] = seq;
                nic.send(peer, &seq.to_le_bytes(), signaled).map(|_| ())
            }
            70..=79 if self.pending_reads == 0 => {
                self.pending_reads += 1;
                let src = RemoteAddr::new(peer, PATTERN, 0);
                nic.post_read(src, PATTERN_BYTES, LocalAddr::new(SCRATCH, 0), true)
                    .map(|_| ())
            }
            80..=89 => {
                let dst = RemoteAddr::new(peer, COUNTERS, 8 * me.index());
                let expect = nic.rng().below(4);
                nic.post_cas(dst, expect, expect + 1).map(|_| ())
            }
            _ => {
                let dst = RemoteAddr::new(peer, COUNTERS, 8 * me.index());
                nic.post_fetch_add(dst, 1).map(|_| ())
            }
        };
        match result {
            // Crashed mid-poll (the local runtime crashes a process from another thread).
            Ok(()) | Err(OpError::Crashed) => {}
            Err(e) => self
                .violations
                .push(format!("{me}: a valid op was rejected: {e}")),
        }
        self.issued += 1;
    }
}

impl<N: Nic> Process<N> for Chaos {
    fn regions(&self) -> Vec<RegionSpec> {
        let n = self.cfg.processes;
        vec![
            RegionSpec::new(SLOT_BYTES * n).with_default(Access::Write),
            RegionSpec::new(8 * n).with_default(Access::ReadWrite),
            RegionSpec::new(PATTERN_BYTES).with_default(Access::Read),
            RegionSpec::new(PATTERN_BYTES),
        ]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut worked = false;
        self.drained = self.drained_at.is_some_and(|t| nic.now() >= t);
        if !self.started {
            let me = nic.id();
            let pattern: Vec<u8> = (0..PATTERN_BYTES)
                .map(|i| Self::pattern_byte(me, i))
                .collect();
            nic.write_local(LocalAddr::new(PATTERN, 0), &pattern)
                .expect("pattern in bounds");
            self.started = true;
            self.think.arm_at(nic.now());
            worked = true;
        }
        while let Some(c) = nic.poll_completion() {
            worked = true;
            let k = match c.status {
                Status::Success => 0,
                Status::AccessDenied => 1,
                Status::PeerUnreachable => 2,
                Status::Flushed => 3,
            };
            self.statuses[k] += 1;
            let p = c.peer.index();
            match (c.kind, c.status) {
                (crate::nic::OpKind::Reconnect, _) => self.reconnecting[p] = false,
                (crate::nic::OpKind::Read, Status::Success) => {
                    self.pending_reads -= 1;
                    self.check_scratch(nic, c.peer);
                }
                (crate::nic::OpKind::Read, _) => self.pending_reads -= 1,
                (_, Status::AccessDenied | Status::Flushed) => self.needs_reconnect[p] = true,
                _ => {}
            }
        }
        while let Some(r) = nic.poll_recv() {
            worked = true;
            if let Recv::Message { from, data } = r {
                let seq = u64::from_le_bytes(data[..8].try_into().expect("8-byte message"));
                if seq <= self.seen_send[from.index()] {
                    self.violations.push(format!(
                        "{}: sends from {from} out of order: {seq} after {}",
                        nic.id(),
                        self.seen_send[from.index()]
                    ));
                }
                self.seen_send[from.index()] = seq;
            }
        }
        self.check_inbox(nic);
        for p in 0..self.cfg.processes {
            if self.needs_reconnect[p] && !self.reconnecting[p] {
                self.needs_reconnect[p] = false;
                self.reconnecting[p] = true;
                match nic.reconnect(ProcessId(p as u32)) {
                    Ok(_) | Err(OpError::Crashed) => {}
                    Err(e) => self.violations.push(format!("reconnect rejected: {e}")),
                }
                worked = true;
            }
        }
        if self.issued < self.cfg.ops && self.think.fire(nic.now()) {
            self.issue(nic);
            if self.issued < self.cfg.ops {
                // Bursts (no think time) put several ops of one pair in flight at once.
                let think = if nic.rng().chance(0.4) {
                    0
                } else {
                    nic.rng().below(self.cfg.think_ns_max + 1)
                };
                self.think.arm_at(nic.now() + Nanos(think));
            }
            worked = true;
        }
        if self.issued >= self.cfg.ops && self.drained_at.is_none() {
            self.drained_at = Some(nic.now() + Nanos(self.cfg.drain_ns));
        }
        Progress::worked(worked).wake_at(self.think.deadline().or(self.drained_at))
    }

    fn done(&self) -> bool {
        self.issued >= self.cfg.ops && self.reconnecting.iter().all(|r| !r) && self.drained
    }
}
