//! The deterministic discrete-event simulator.
//!
//! Single-threaded and deterministic from a seed: events are ordered by `(time, seq)`, where
//! `seq` is a monotone counter. Events of one instant run in `seq` order under
//! [`TieBreak::Fifo`]; under [`TieBreak::Random`] the events pending for an instant are drawn
//! out together and shuffled with the scheduler's random stream. Nothing is ordered by
//! addresses or hashes.
//!
//! # Cost model (see [`Profile`])
//! - A process is one CPU. A poll costs `cpu.poll_ns`, each posted op `nic.post_ns`, each drained
//!   completion or receive `nic.completion_ns`, all multiplied by the process's slow factor; the
//!   process is busy until its poll's cost has elapsed, and events for it wait. An access
//!   change costs the process `nic.permission_change.ns` where the profile declares one (free
//!   otherwise) and is in effect at once.
//! - An op leaves the sender's NIC when its doorbell rang (plus `dma_read_ns` unless inline), no
//!   earlier than the NIC's egress is free: each NIC serialises its egress bytes at `link_gbps`
//!   and spaces work requests by the message-rate limit.
//! - It reaches the target after `write_latency_ns` (plus injected link delay) and then
//!   serialises on the target's ingress, full duplex. Ops of one queue pair (a sender has
//!   [`crate::Qp::COUNT`] to each target) land in post order; a write lands atomically at that
//!   instant.
//! - Ports move 4096-byte packets: an op that fits one packet (a control message, a small
//!   write) waits at most one packet behind larger transfers queued on the same egress or
//!   ingress, as the NIC's per-packet queue-pair scheduling and the switch interleave them;
//!   it still serialises fully behind other one-packet ops, and never overtakes an earlier op
//!   of its own queue pair. Ops of [`crate::Qp::Control`] queue pairs travel at a higher
//!   service level: they serialise behind other control ops only, never behind data.
//! - Acknowledgements (completions, read responses, atomic results) return after another
//!   `write_latency_ns`; read responses serialise on the target's egress and sender's ingress.
//! - Where the profile declares a two-way limit (`duplex_gbps`, below twice the link rate), a
//!   multi-packet op also passes through that shared send + receive budget at the sender and
//!   at the receiver, booked in issue order, and lands no earlier than both bookings end: a
//!   NIC sending and receiving at once moves bytes at the two-way rate in total, not at twice
//!   the link rate.
//! - Where the profile declares a [`Fabric`] (racks of hosts under top-of-rack switches,
//!   joined by a spine), an op between racks takes two switch latencies longer, and a
//!   multi-packet one also passes through its source rack's uplinks and its target rack's
//!   downlinks (one shared budget per rack and direction, booked in issue order like an
//!   ingress), landing no earlier than both bookings end. Processes sit in racks by the
//!   fabric's placement (packed or spread). Read responses cross the switches but do not book
//!   the uplinks (no protocol here reads bulk data).
//! - Where the profile declares a latency distribution ([`LatencyDist`]), each op, each
//!   acknowledgement and each read response draws its one-way latency from it (the calibrated
//!   `write_latency_ns` as the median) with a random stream of its own; a queue pair's ops
//!   still land, and its completions still arrive, in post order. Ops of different queue pairs
//!   may overtake each other, as on a network with variance.
//! - Under a software profile whose write discipline waits (`batch`, `each`, `window:N`), a process
//!   spins on its posts' completions before posting more and at the end of its poll, and the
//!   rest of the poll moves back by the wait (see [`Discipline`]); under the default
//!   ([`Discipline::Collective`]) it never waits.
//! - An access check happens when the op lands. A refused op completes with `AccessDenied` and
//!   puts the sender's queue pair in error: its later ops are `Flushed` until a `reconnect` of
//!   the peer, which takes `reconnect_ns` and re-establishes both queue pairs.
//! - Ops to a crashed process fail with `PeerUnreachable` after `unreachable_timeout_ns`.
//! - Under [`SimConfig::tearing`] a write or read spanning several words is carried out in
//!   pieces at distinct instants, in ascending or any order, interleaved with everything else
//!   (see [`Tearing`]); otherwise it lands at one instant, which no RDMA hardware promises.
//!
//! # Declared limits
//! What the model leaves out, with what it may bias (issue 13's audit; none of these is known
//! to decide a verdict in `results/`):
//! - The receiver's ingress is booked when an op is issued, not when it arrives: an op issued
//!   later with a shorter latency draw waits behind a booking that starts in the future. With
//!   the declared distributions the window is well under a microsecond; exact arrival order
//!   needs an arrival event per op.
//! - A DMA read of the source buffer is a fixed delay (`dma_read_ns`) with no PCIe bandwidth:
//!   a NIC never contends with its own DMA. Near 100 Gb/s the host link is close to the wire
//!   rate; `duplex_gbps` caps the total where a paper publishes it.
//! - An RDMA read costs its target's CPU nothing (as on hardware) and its NIC only egress
//!   bandwidth: read responses do not count against the target's message rate.
//! - Queue pairs are free in number: a real NIC caches a few hundred to a few thousand QP
//!   contexts and slows past that, which runs far beyond the papers' sizes would not see.
//! - The fabric carries this run's traffic only: no other jobs, no load-dependent switch
//!   latency (RDMC Fig. 7's summary shows what share of Sierra's uplinks would be left).
//!
//! # Determinism
//! Every processed event, every op issued and every process's RNG draw count is folded into a
//! running [`Digest`]. [`check_determinism`] runs a seed twice and reports the first event at
//! which the traces diverge.

mod determinism;
mod fault;
mod issue;
mod land;
mod nic;
mod posting;
mod profile;
mod queue;
mod software;
mod tear;

pub use determinism::{check_determinism, Determinism, Digest, TraceRecord};
pub use fault::{random_faults, Fault, FaultBudget};
pub use nic::SimNic;
pub use posting::{Discipline, Posting};
pub use profile::{
    builtin_names, Calibration, CpuCosts, Fabric, LatencyDist, NicCosts, PermissionChange,
    Placement, Profile, ProfileError, ReconnectRange, BUILTIN, DEFAULT_PROFILE,
};
pub use software::{
    Software, SoftwareCalibration, SoftwareFit, WorkCosts, DEFAULT_SOFTWARE, ROW_PRICE_UNIT_NS,
    SOFTWARE,
};
pub use tear::{PieceOrder, Tearing};

use crate::memory::Memory;
use crate::nic::{Completion, Op, Qp, Status};
use crate::process::{Process, ProcessId};
use crate::region::RegionTable;
use crate::rng::{mix64, Purpose, Rng};
use crate::time::Nanos;
use nic::{Posted, QueuePair};
use posting::Gate;
use profile::WireCosts;
use queue::EventQueue;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

/// Which of several events scheduled for the same instant goes first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TieBreak {
    /// In the order they were scheduled.
    #[default]
    Fifo,
    /// In an order drawn from the scheduler's random stream (still deterministic per seed).
    Random,
}

impl fmt::Display for TieBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TieBreak::Fifo => "fifo",
            TieBreak::Random => "random",
        })
    }
}

impl std::str::FromStr for TieBreak {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fifo" => Ok(TieBreak::Fifo),
            "random" => Ok(TieBreak::Random),
            _ => Err(format!(
                "unknown tie-break policy `{s}`: use fifo or random"
            )),
        }
    }
}

/// Configuration of a simulated run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The master seed; every random stream derives from it.
    pub seed: u64,
    /// The hardware profile.
    pub profile: Profile,
    /// What the work processes report costs ([`crate::Nic::work`]); [`Software::none`] unless
    /// set.
    pub software: Software,
    /// Tie-break policy for simultaneous events.
    pub tie_break: TieBreak,
    /// Faults to inject.
    pub faults: Vec<Fault>,
    /// Keep a per-event trace so a determinism check can name the first divergent event.
    pub record_trace: bool,
    /// Tell processes exactly which bytes of their memory changed ([`crate::Nic::take_changes`]);
    /// `false` reports "anything may have changed", as other runtimes do. The run must come
    /// out identical either way (only its wall time differs): tests compare the digests.
    pub exact_changes: bool,
    /// Carry out multi-word writes and reads in pieces at distinct instants ([`Tearing`]);
    /// `None` lands each op at one instant.
    pub tearing: Option<Tearing>,
}

impl SimConfig {
    /// A run with `seed` on `profile`, FIFO ties, no faults.
    pub fn new(seed: u64, profile: Profile) -> SimConfig {
        SimConfig {
            seed,
            profile,
            software: Software::none(),
            tie_break: TieBreak::Fifo,
            faults: Vec::new(),
            record_trace: false,
            exact_changes: true,
            tearing: None,
        }
    }
}

/// Why [`Sim::run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Nothing left to happen: every process is parked with no deadline and no op is in flight.
    Quiescent,
    /// Every process reported `done`.
    AllDone,
    /// The time limit was reached.
    TimeLimit,
}

/// Counters of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Events processed (polls, landings, completions, read returns, faults).
    pub events: u64,
    /// Polls run.
    pub polls: u64,
    /// Ops issued onto the (simulated) wire.
    pub ops: u64,
    /// Ops carried out in pieces (under [`SimConfig::tearing`]).
    pub torn_ops: u64,
}

#[derive(Debug)]
enum Event {
    Poll {
        p: u32,
        gen: u32,
    },
    Land {
        slot: u32,
    },
    ReadReturn {
        slot: u32,
    },
    Complete {
        slot: u32,
    },
    Fault {
        index: u32,
    },
    /// The next piece of a torn op.
    Piece {
        slot: u32,
    },
}

impl Event {
    /// A small code per kind, folded into the digest.
    fn code(&self) -> u64 {
        match self {
            Event::Poll { .. } => 1,
            Event::Land { .. } => 2,
            Event::ReadReturn { .. } => 3,
            Event::Complete { .. } => 4,
            Event::Fault { .. } => 5,
            Event::Piece { .. } => 6,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Event::Poll { .. } => "poll",
            Event::Land { .. } => "land",
            Event::ReadReturn { .. } => "read-return",
            Event::Complete { .. } => "complete",
            Event::Fault { .. } => "fault",
            Event::Piece { .. } => "piece",
        }
    }
}

/// Queued events are keyed by one integer: time in the high 64 bits, a sequence number in the
/// low 64, so one comparison orders them (see [`queue`]).
fn key_time(key: u128) -> Nanos {
    Nanos((key >> 64) as u64)
}

/// A hasher for small integer keys: one SplitMix64 finalisation (the default SipHash costs more
/// than the rest of an event). Never iterated, so iteration order cannot leak into a run.
#[derive(Clone, Copy, Debug, Default)]
struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 ^= x;
    }
}

#[derive(Debug)]
struct InFlight {
    src: u32,
    posted: Posted,
    epoch: u64,
    /// Lost with its sender's crash before it left the NIC: it never lands.
    lost: bool,
    /// Under tearing, the span its pieces land over (zero: it lands at one instant).
    spread: Nanos,
    /// Its pieces have started landing: a crash of its sender no longer stops it.
    landing: bool,
}

#[derive(Debug)]
struct Cpu {
    busy_until: Nanos,
    paused_until: Nanos,
    scheduled: Option<Nanos>,
    gen: u32,
    crashed: bool,
    /// A [`Fault::CrashMidPost`] is armed: crash during the next poll that posts.
    crash_on_post: bool,
    done: bool,
    /// When the port's egress and ingress have sent / received everything issued so far.
    egress_free: Nanos,
    ingress_free: Nanos,
    /// The same for single-packet ops alone (they interleave with larger ones), per service
    /// level: index [`Qp::Data`] for the data queue pairs, [`Qp::Control`] for the control queue
    /// pairs, whose higher service level lets them pass every queued data packet.
    egress_small: [Nanos; Qp::COUNT],
    ingress_small: [Nanos; Qp::COUNT],
    /// When the NIC's two-way limit has carried everything booked on it (profiles that
    /// declare `duplex_gbps`).
    duplex_free: Nanos,
    /// The rack this process sits in (0 without a [`Fabric`]).
    rack: u32,
}

/// One rack's links to the spine (profiles that declare a [`Fabric`]): when its uplinks and
/// its downlinks have carried everything booked on them.
#[derive(Clone, Copy, Debug, Default)]
struct Uplinks {
    up_free: Nanos,
    down_free: Nanos,
}

#[derive(Debug)]
struct ActiveLink {
    from: ProcessId,
    to: ProcessId,
    until: Nanos,
    delay: Nanos,
    jitter: Nanos,
    /// When the latest op of this pair lands; the pair stays tracked until then, so an op
    /// posted after the fault ends cannot overtake a delayed one.
    last_land: Nanos,
}

/// A simulated run of processes of type `P` (use `Box<dyn Process<SimNic>>` to mix roles).
pub struct Sim<P> {
    cfg: SimConfig,
    wire: WireCosts,
    now: Nanos,
    seq: u64,
    queue: EventQueue<Event>,
    /// Events of one instant in the order the random tie-break drew (Random policy only).
    batch: VecDeque<(u128, Event)>,
    processes: Vec<P>,
    nics: Vec<SimNic>,
    cpus: Vec<Cpu>,
    /// Per rack, where the profile declares a [`Fabric`] of several racks.
    uplinks: Vec<Uplinks>,
    inflight: Vec<Option<InFlight>>,
    free_slots: Vec<u32>,
    completions: Vec<(u32, Completion)>,
    free_completions: Vec<u32>,
    /// Bytes read responses carry, by in-flight slot (kept apart so writes stay compact).
    #[allow(
        clippy::disallowed_types,
        reason = "looked up by key only, never iterated: its order cannot reach a run"
    )]
    read_data: std::collections::HashMap<u32, Vec<u8>, std::hash::BuildHasherDefault<MixHasher>>,
    links: Vec<ActiveLink>,
    sched_rng: Rng,
    /// Draws of the one-way latency, where the profile declares a distribution (a stream of
    /// its own, so declaring one leaves the scheduler's draws as they were).
    latency_rng: Rng,
    /// Draws of torn landings (a stream of its own, so runs without tearing are unchanged).
    tear_rng: Rng,
    digest: Digest,
    stats: SimStats,
    trace: Vec<TraceRecord>,
    not_done: usize,
    started: bool,
}

impl<P> fmt::Debug for Sim<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sim")
            .field("now", &self.now)
            .field("processes", &self.processes.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// The simulator's own accessors, for judges that take any runtime's run.
impl<P: Process<SimNic>> super::Ended for Sim<P> {
    type Process = P;
    type Nic = SimNic;
    fn processes(&self) -> &[P] {
        Sim::processes(self)
    }
    fn nic(&self, p: ProcessId) -> &SimNic {
        Sim::nic(self, p)
    }
    fn crashed(&self, p: ProcessId) -> bool {
        Sim::crashed(self, p)
    }
    fn now(&self) -> Nanos {
        Sim::now(self)
    }
}

impl<P: Process<SimNic>> Sim<P> {
    /// A simulation of `processes` (process `i` gets `ProcessId(i)`).
    pub fn new(cfg: SimConfig, processes: Vec<P>) -> Sim<P> {
        let n = processes.len();
        let specs: Vec<_> = processes.iter().map(|p| p.regions()).collect();
        let table = Arc::new(RegionTable::new(&specs));
        let limits = cfg.profile.limits();
        let nics = specs
            .iter()
            .enumerate()
            .map(|(i, s)| SimNic {
                id: ProcessId(i as u32),
                table: table.clone(),
                limits,
                memory: Memory::new(ProcessId(i as u32), s, n),
                poll_start: Nanos::ZERO,
                charged: Nanos::ZERO,
                slow: 1.0,
                post_ns: cfg.profile.nic.post_ns,
                permission_ns: cfg
                    .profile
                    .nic
                    .permission_change
                    .as_ref()
                    .map_or(0, |c| c.ns),
                completion_ns: cfg.profile.nic.completion_ns,
                work: cfg.software.costs,
                rng: Rng::derive(cfg.seed, Purpose::Protocol, i as u64),
                next_wr: 0,
                outbox: Vec::new(),
                exact_changes: cfg.exact_changes,
                landings: Vec::new(),
                cq: VecDeque::new(),
                rq: VecDeque::new(),
                qps: vec![QueuePair::default(); n * Qp::COUNT],
            })
            .collect();
        let fabric = cfg.profile.fabric.as_ref();
        let rack_of = |i: usize| fabric.map_or(0, |f| f.rack_of(i) as u32);
        let racks = (0..n).map(rack_of).max().map_or(0, |m| m as usize + 1);
        let cpus = (0..n)
            .map(|i| Cpu {
                busy_until: Nanos::ZERO,
                paused_until: Nanos::ZERO,
                scheduled: None,
                gen: 0,
                crashed: false,
                crash_on_post: false,
                done: false,
                egress_free: Nanos::ZERO,
                ingress_free: Nanos::ZERO,
                egress_small: [Nanos::ZERO; Qp::COUNT],
                ingress_small: [Nanos::ZERO; Qp::COUNT],
                duplex_free: Nanos::ZERO,
                rack: rack_of(i),
            })
            .collect();
        let sched_rng = Rng::derive(cfg.seed, Purpose::Scheduler, 0);
        let latency_rng = Rng::derive(cfg.seed, Purpose::Scheduler, 1);
        let mut sim = Sim {
            wire: WireCosts::of(&cfg.profile),
            now: Nanos::ZERO,
            seq: 0,
            queue: EventQueue::new(),
            batch: VecDeque::new(),
            processes,
            nics,
            cpus,
            uplinks: vec![Uplinks::default(); racks],
            inflight: Vec::new(),
            free_slots: Vec::new(),
            completions: Vec::new(),
            free_completions: Vec::new(),
            read_data: Default::default(),
            links: Vec::new(),
            sched_rng,
            latency_rng,
            tear_rng: Rng::derive(cfg.seed, Purpose::Scheduler, 2),
            digest: Digest(cfg.seed),
            stats: SimStats::default(),
            trace: Vec::new(),
            not_done: n,
            started: false,
            cfg,
        };
        for i in 0..sim.cfg.faults.len() {
            let at = sim.cfg.faults[i].at();
            sim.schedule(at, Event::Fault { index: i as u32 });
        }
        sim
    }

    /// The current virtual time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The running digest of everything that happened so far.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// From now on, tells processes "anything may have changed" instead of the exact changes
    /// (as if built with [`SimConfig::exact_changes`] `false`).
    pub fn withhold_changes(&mut self) {
        self.cfg.exact_changes = false;
        for nic in &mut self.nics {
            nic.exact_changes = false;
        }
    }

    /// The run's counters.
    pub fn stats(&self) -> SimStats {
        self.stats
    }

    /// The per-event trace (empty unless `record_trace`).
    pub fn trace(&self) -> &[TraceRecord] {
        &self.trace
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// The processes.
    pub fn processes(&self) -> &[P] {
        &self.processes
    }

    /// Process `p`'s NIC (its memory, for inspection).
    pub fn nic(&self, p: ProcessId) -> &SimNic {
        &self.nics[p.index()]
    }

    /// Whether `p` has crashed.
    pub fn crashed(&self, p: ProcessId) -> bool {
        self.cpus[p.index()].crashed
    }

    /// Ends the run and returns the processes.
    pub fn into_processes(self) -> Vec<P> {
        self.processes
    }

    fn schedule(&mut self, time: Nanos, event: Event) {
        self.seq += 1;
        self.queue
            .push((time.0 as u128) << 64 | self.seq as u128, event);
    }

    /// Schedules a poll of `p` at `t` or as soon as its CPU is free, unless one is due earlier.
    fn wake(&mut self, p: u32, t: Nanos) {
        let cpu = &mut self.cpus[p as usize];
        if cpu.crashed {
            return;
        }
        let at = t.max(cpu.busy_until).max(cpu.paused_until);
        if cpu.scheduled.is_some_and(|s| s <= at) {
            return;
        }
        cpu.gen = cpu.gen.wrapping_add(1);
        cpu.scheduled = Some(at);
        let gen = cpu.gen;
        self.schedule(at, Event::Poll { p, gen });
    }

    fn complete(&mut self, p: u32, at: Nanos, c: Completion) {
        let slot = match self.free_completions.pop() {
            Some(s) => {
                self.completions[s as usize] = (p, c);
                s
            }
            None => {
                self.completions.push((p, c));
                (self.completions.len() - 1) as u32
            }
        };
        self.schedule(at, Event::Complete { slot });
    }

    fn alloc(&mut self, f: InFlight) -> u32 {
        match self.free_slots.pop() {
            Some(s) => {
                self.inflight[s as usize] = Some(f);
                s
            }
            None => {
                self.inflight.push(Some(f));
                (self.inflight.len() - 1) as u32
            }
        }
    }

    fn take(&mut self, slot: u32) -> InFlight {
        self.free_slots.push(slot);
        self.inflight[slot as usize]
            .take()
            .expect("in-flight slot freed twice")
    }

    /// Runs until quiescence, until every process is done, or until `limit` (virtual time).
    pub fn run(&mut self, limit: Option<Nanos>) -> StopReason {
        if !self.started {
            self.started = true;
            for p in 0..self.processes.len() as u32 {
                self.wake(p, Nanos::ZERO);
            }
        }
        loop {
            if self.not_done == 0 {
                return StopReason::AllDone;
            }
            let Some((key, event)) = self.next_event() else {
                return StopReason::Quiescent;
            };
            if let Some(l) = limit.filter(|&l| key_time(key) > l) {
                // Put it back so a later `run` resumes here.
                self.queue.push(key, event);
                self.now = l;
                return StopReason::TimeLimit;
            }
            self.step(key_time(key), event);
        }
    }

    /// The next event: the queue's head under FIFO; under Random, the events pending for the
    /// earliest instant are drawn out together and shuffled with the scheduler stream.
    fn next_event(&mut self) -> Option<(u128, Event)> {
        if self.cfg.tie_break == TieBreak::Fifo {
            return self.queue.pop();
        }
        if self.batch.is_empty() {
            let first = self.queue.pop()?;
            let t = key_time(first.0);
            self.batch.push_back(first);
            while self.queue.peek_key().is_some_and(|k| key_time(k) == t) {
                self.batch.push_back(self.queue.pop().expect("peeked"));
            }
            for i in (1..self.batch.len()).rev() {
                let j = self.sched_rng.below(i as u64 + 1) as usize;
                self.batch.swap(i, j);
            }
        }
        self.batch.pop_front()
    }

    fn step(&mut self, time: Nanos, event: Event) {
        self.now = time;
        let (kind, code) = (event.kind(), event.code());
        let process = match event {
            Event::Poll { p, gen } => {
                if self.cpus[p as usize].gen != gen || self.cpus[p as usize].crashed {
                    return; // superseded by an earlier wake-up, or crashed since
                }
                self.poll(p);
                p
            }
            Event::Land { slot } => self.land(slot),
            Event::ReadReturn { slot } => self.read_return(slot),
            Event::Complete { slot } => {
                let (p, c) = self.completions[slot as usize];
                self.free_completions.push(slot);
                if !self.cpus[p as usize].crashed {
                    self.nics[p as usize].cq.push_back(c);
                    self.wake(p, self.now);
                }
                self.digest
                    .fold((c.wr.0 << 8) ^ (c.status as u64) << 4 ^ c.kind as u64);
                p
            }
            Event::Fault { index } => self.fault(index as usize),
            Event::Piece { slot } => self.piece(slot),
        };
        self.stats.events += 1;
        self.digest.fold(self.now.0);
        self.digest.fold((process as u64) << 8 | code);
        if self.cfg.record_trace {
            self.trace.push(TraceRecord {
                index: self.stats.events - 1,
                time: self.now,
                process,
                kind,
                digest: self.digest.0,
            });
        }
    }

    fn poll(&mut self, p: u32) {
        let i = p as usize;
        let cpu = &mut self.cpus[i];
        cpu.scheduled = None;
        let nic = &mut self.nics[i];
        nic.poll_start = self.now;
        nic.charged = Nanos::ZERO;
        nic.charge(self.cfg.profile.cpu.poll_ns);
        let progress = self.processes[i].poll(nic);
        let nic = &mut self.nics[i];
        let end = self.now + nic.charged;
        self.digest.fold(nic.rng.draws());
        self.stats.polls += 1;
        let cpu = &mut self.cpus[i];
        if !cpu.done && self.processes[i].done() {
            cpu.done = true;
            self.not_done -= 1;
        }
        let mut outbox = std::mem::take(&mut self.nics[i].outbox);
        // The crash follows this poll's posts: the crash drops what its NIC had not sent. A
        // process that stopped itself exits the same way.
        let crash_now =
            (self.cpus[i].crash_on_post && !outbox.is_empty()) || self.processes[i].stopped();
        // Under a waiting discipline the poll's posts, and the work between them, move back
        // by the completions the process spins on (see [`Discipline`]).
        let mut gate = Gate::new(self.cfg.software.posting.discipline);
        for mut posted in outbox.drain(..) {
            let peer = match posted.op {
                Op::SetAccess { .. } | Op::Reconnect { .. } => None,
                _ => Some(posted.op.peer()),
            };
            posted.at = gate.doorbell(posted.at, peer);
            if let (Some(peer), Some(completes)) = (peer, self.issue(p, posted)) {
                gate.issued(peer, completes);
            }
        }
        self.nics[i].outbox = outbox;
        let busy_until = gate.free_at(end);
        self.cpus[i].busy_until = busy_until;
        if crash_now {
            self.crash(i);
            return;
        }
        if progress.did_work {
            self.wake(p, busy_until);
        } else if let Some(at) = progress.wake_at {
            self.wake(p, at.max(busy_until));
        }
    }
}

/// The index in a NIC's `qps` of the queue pair to peer `d` that carries `op`.
fn qp_of(d: u32, op: &Op) -> usize {
    d as usize * Qp::COUNT + op.qp().index()
}

/// The indices in a NIC's `qps` of every queue pair to peer `d`.
fn qp_range(d: u32) -> std::ops::Range<usize> {
    d as usize * Qp::COUNT..(d as usize + 1) * Qp::COUNT
}

fn failed(posted: &Posted, peer: ProcessId, status: Status) -> Completion {
    Completion {
        wr: posted.wr,
        kind: posted.op.kind(),
        peer,
        status,
        value: None,
    }
}
