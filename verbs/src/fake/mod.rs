//! An in-memory RDMA fabric implementing [`crate::provider`]: RC queue pairs, memory
//! registrations and completion queues that follow the InfiniBand specification where the
//! runtime depends on it, so the runtime can be tested without a device (design 48, §3).
//!
//! One [`Fabric`] serves every node of a test. It has no thread: every call on it or on a handle
//! takes its lock and first processes every event due by now ("pump"), so a node that sleeps
//! or crashed is still served by the others. With [`ClockMode::Manual`] time moves only through
//! [`Fabric::advance`] and [`Fabric::settle`], which makes node-level tests deterministic.
//!
//! # Modelled
//! - Devices ([`FakeDevice`]): capabilities ([`caps`]), one port (state, link layer, MTU, LID),
//!   a GID table, a host (the memlock group) and an optional open error. Every `open` makes a
//!   new instance with its own protection domain; limits (`max_qp`, `max_cq`, `max_mr`) count
//!   over all instances of a named device, as they would on one adapter.
//! - The RC state machine RESET/INIT/RTR/RTS/ERR with the legality table and value checks of
//!   design §3.2 (`qp.rs`); `EINVAL` (22) for an illegal transition or post, `ENOMEM` (12) for a
//!   full queue or table.
//! - The wire (`wire.rs`): messages cut into packets of `path_mtu` bytes, 24-bit PSNs, ACKs,
//!   NAKs, RNR NAKs, go-back-N retransmission after `4.096 us x 2^timeout x time_scale`
//!   (`timeout` 0 waits for ever, as IBA says), `retry_cnt`/`rnr_retry` budgets (`rnr_retry` 7:
//!   for ever), reads and atomics capped at `max_rd_atomic` in flight (the requester stalls),
//!   silent drops (absent or non-RTR/RTS destination, wrong source QPN, unknown GID or GID-kind
//!   mismatch, packet over the port MTU, unexpected PSN).
//! - Responder checks in IBA order (§3.3), landing packet by packet, word by word (`mem.rs`),
//!   atomics on the target word (byte-swapped old value with [`AtomicCap::None`]).
//! - Completions (§3.4) when the ACK or response arrives, send-queue slots freed by a later
//!   polled signalled completion, error and flush completions (§3.5), CQ overrun.
//! - Capability and memlock refusals (§3.6); faults and counters (`fault.rs`).
//!
//! # Assumed (each a knob where vendors differ)
//! - [`AccessCheck::FirstPacket`] (default, the weaker behaviour design 48 attributes to mlx5)
//!   samples the queue pair's access flags at a message's first packet and lets its later
//!   packets land; [`AccessCheck::PerPacket`] (attributed to rxe) checks every packet. Neither
//!   attribution is verified on a device. The rkey is looked up on every packet in both, so
//!   deregistration is a fence.
//! - A responder access error moves the responder queue pair to ERR too and flushes its queues,
//!   as rxe's `do_class_ac_error` does (mlx5 unverified).
//! - Flushed work requests complete `WR_FLUSH_ERR` signalled or not (the crate's assumption,
//!   `signal.rs`).
//! - Atomics are atomic against CPU stores too (`AtomicU64`); `IBV_ATOMIC_HCA` promises less.
//! - A responder's read/atomic resources are compared with the requester's reads and atomics in
//!   flight (the fabric sees both ends), not modelled as a responder-side queue.
//! - A request behind the expected PSN is a duplicate (ACKed again, a read answered again, an
//!   atomic's saved result repeated) only if the queue pair received it since its last RTR;
//!   one from before (a peer that reset and took a fresh PSN) is dropped, as design §3.3 says.
//!   A real responder may take it for a duplicate and ACK it without executing it.
//! - Write ACKs are coalesced: one per message, at its last packet (IBA allows it); a retry
//!   resends a message from its first packet.
//! - [`Tear::Ascending`] lands a message's packets in address order; [`Tear::Shuffled`] sends
//!   the payload chunks of a write or send in a seeded random order (PSNs stay in order), so
//!   the last packet is not the last bytes.
//! - Presets are from rxe_param.h and mlx5 documentation, unverified on a device ([`caps`]).
//!
//! # Not modelled
//! Write-with-immediate, shared receive queues, UD/UC/XRC, more than one SGE per work request,
//! memory windows, completion channels and events, SQD/SQE states, path migration, P_Keys and
//! Q_Keys, LIDs and routing between subnets (routing is by QPN and GID), packet loss or
//! corruption (only drops by the rules above), congestion, `ibv_query_qp` (the granted caps are
//! the ones asked for), ports with different attributes (every port answers the device's one
//! [`PortInfo`]), `EBUSY` on destroying a CQ that queue pairs still use (it goes; their
//! completions are lost), and `hide_cqes` (design §3.8; cut).

mod fault;
mod mem;
mod qp;
#[cfg(test)]
mod tests;
mod wire;

pub use fault::{DeviceSel, Stats};
pub use qp::{QpState, TransitionKind};

use crate::access::Rights;
use crate::provider::{
    AtomicCap, CompletionQueue, Context, DeviceCaps, GidEntry, GidKind, LinkLayer, MemoryRegion,
    PortInfo, Provider, QpCaps, QueuePair, RecvWr, Transition, VerbsError, Wc, Wr,
};
use fault::FaultPlan;
use mem::MrS;
use qp::{QpS, EINVAL, ENOMEM};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use transport::runtime::shared_memory::Words;
use transport::{Purpose, Rng};
use wire::Event;

/// `EACCES`, for tests of a device that will not open.
pub const EACCES: i32 = 13;

/// How the fabric's clock moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockMode {
    /// The monotonic clock of the OS (runtime tests with threads).
    Real,
    /// Only [`Fabric::advance`] and [`Fabric::settle`] move time (step-by-step tests).
    Manual,
}

/// When the responder checks the queue pair's access flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessCheck {
    /// At a message's first packet only (mlx5-like, the weaker and default behaviour).
    FirstPacket,
    /// At every packet (rxe-like).
    PerPacket,
}

/// In what order the packets of one write or send land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tear {
    /// In address order: a poller sees a growing prefix.
    Ascending,
    /// Payload chunks in a seeded random order: a poller sees any subset.
    Shuffled,
}

/// One device of the fabric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeDevice {
    /// The name `devices` lists and `open` takes.
    pub name: String,
    /// What `query_device` says.
    pub caps: DeviceCaps,
    /// What `query_port` says (for every port).
    pub port: PortInfo,
    /// The GID table.
    pub gids: Vec<GidEntry>,
    /// The host (OS process) it is opened in: memlock is charged per host.
    pub host: u32,
    /// Set: `open` fails with this errno.
    pub open_error: Option<i32>,
}

impl FakeDevice {
    /// An active RoCE device named `name` on host 0: MTU 4096, one RoCE v2 GID
    /// (`::ffff:10.x.y.z` derived from the name, so devices differ).
    pub fn new(name: &str, caps: DeviceCaps) -> FakeDevice {
        let h = name.bytes().fold(0x811c_9dc5u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12] = 10;
        gid[13..16].copy_from_slice(&h.to_be_bytes()[1..]);
        FakeDevice {
            name: name.to_string(),
            caps,
            port: PortInfo {
                active: true,
                state: "ACTIVE".to_string(),
                link_layer: LinkLayer::Ethernet,
                active_mtu: 4096,
                lid: 0,
            },
            gids: vec![GidEntry {
                port: 1,
                index: 0,
                gid,
                kind: GidKind::RoceV2,
            }],
            host: 0,
            open_error: None,
        }
    }
}

/// The fabric's configuration.
#[derive(Clone, Debug)]
pub struct FakeConfig {
    /// Seeds the latency jitter and the shuffled tearing order.
    pub seed: u64,
    /// The devices.
    pub devices: Vec<FakeDevice>,
    /// How time moves.
    pub clock: ClockMode,
    /// Each packet takes `0..=jitter` (seeded), in order per queue pair.
    pub jitter: Duration,
    /// When access flags are checked.
    pub access_check: AccessCheck,
    /// In what order a message's packets land.
    pub tear: Tear,
    /// Bytes each host may pin (`RLIMIT_MEMLOCK`); `None`: unlimited.
    pub memlock: Option<u64>,
    /// Multiplies every transport timer (ACK timeout, RNR wait); 1.0 is the specification's.
    /// Must be positive (a timer of zero would retry without time passing).
    pub time_scale: f64,
}

impl Default for FakeConfig {
    /// One device `fake0` with [`caps::rxe`], the real clock, 20 us jitter, mlx5-like access
    /// checks, ascending tearing, no memlock limit, real timeouts.
    fn default() -> FakeConfig {
        FakeConfig {
            seed: 0,
            devices: vec![FakeDevice::new("fake0", caps::rxe())],
            clock: ClockMode::Real,
            jitter: Duration::from_micros(20),
            access_check: AccessCheck::FirstPacket,
            tear: Tear::Ascending,
            memlock: None,
            time_scale: 1.0,
        }
    }
}

impl FakeConfig {
    /// The manual clock without jitter: every step of a test is deterministic.
    pub fn manual() -> FakeConfig {
        FakeConfig {
            clock: ClockMode::Manual,
            jitter: Duration::ZERO,
            ..FakeConfig::default()
        }
    }
}

/// Capability presets.
pub mod caps {
    use crate::provider::{AtomicCap, DeviceCaps};

    /// SoftRoCE (rxe), from rxe_param.h of recent kernels (`RXE_MAX_QP_WR` = `1 << 20`,
    /// `max_cqe` = `(1 << RXE_MAX_LOG_CQE) - 1`, `RXE_MAX_QP_RD_ATOM` = 128,
    /// `RXE_MAX_INLINE_DATA` = 512 on the kernel dumped in a linux-rdma thread), unverified on
    /// a device. `max_mr` is taken as the kernel's `DEFAULT_MAX_VALUE`, not seen in a dump.
    pub fn rxe() -> DeviceCaps {
        DeviceCaps {
            phys_port_cnt: 1,
            max_qp: 1 << 20,
            max_qp_wr: 1 << 20,
            max_sge: 32,
            max_cq: 1 << 20,
            max_cqe: (1 << 15) - 1,
            max_mr: 1 << 20,
            max_mr_size: u64::MAX,
            max_qp_rd_atom: 128,
            max_qp_init_rd_atom: 128,
            atomic_cap: AtomicCap::Hca,
            max_inline: 512,
            firmware: "0.0.0 (fake rxe)".to_string(),
        }
    }

    /// ConnectX-5 (mlx5), from mlx5 documentation and commonly published `ibv_devinfo -v`
    /// output, unverified on a device. `max_inline` is a plausible grant, not a documented
    /// figure.
    pub fn connectx5() -> DeviceCaps {
        DeviceCaps {
            phys_port_cnt: 1,
            max_qp: 262_144,
            max_qp_wr: 32_768,
            max_sge: 30,
            max_cq: 16_777_216,
            max_cqe: 4_194_303,
            max_mr: 16_777_216,
            max_mr_size: u64::MAX,
            max_qp_rd_atom: 16,
            max_qp_init_rd_atom: 16,
            atomic_cap: AtomicCap::Hca,
            max_inline: 512,
            firmware: "16.0.0 (fake ConnectX-5)".to_string(),
        }
    }

    /// ConnectX-5 reporting `IBV_ATOMIC_NONE`: atomics execute, old values come back
    /// big-endian.
    pub fn connectx5_atomic_none() -> DeviceCaps {
        DeviceCaps {
            atomic_cap: AtomicCap::None,
            ..connectx5()
        }
    }

    /// Small limits for tests: 8 queue pairs of 16 work requests, 4 CQs of 64 entries, 16
    /// registrations of 1 MiB, 4 reads/atomics in flight, 64 inline bytes.
    pub fn tiny() -> DeviceCaps {
        DeviceCaps {
            phys_port_cnt: 1,
            max_qp: 8,
            max_qp_wr: 16,
            max_sge: 1,
            max_cq: 4,
            max_cqe: 64,
            max_mr: 16,
            max_mr_size: 1 << 20,
            max_qp_rd_atom: 4,
            max_qp_init_rd_atom: 4,
            atomic_cap: AtomicCap::Hca,
            max_inline: 64,
            firmware: "0.0.0 (fake tiny)".to_string(),
        }
    }
}

/// One opened instance of a device.
#[derive(Debug)]
struct Dev {
    /// Its index in `FakeConfig::devices`.
    spec: usize,
    stats: Stats,
}

/// Resources held on one named device, over all its instances.
#[derive(Clone, Copy, Debug, Default)]
struct Used {
    qps: u32,
    cqs: u32,
    mrs: u32,
}

/// Which send-queue slots a completion frees when it is polled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Retire {
    qpn: u32,
    epoch: u64,
    slots: u32,
}

/// One completion queue.
#[derive(Debug)]
struct CqS {
    cap: u32,
    entries: VecDeque<(Wc, Option<Retire>)>,
    broken: bool,
}

/// Everything the lock guards.
#[derive(Debug)]
struct World {
    cfg: FakeConfig,
    /// Nanoseconds since the fabric was made.
    now: u64,
    devs: Vec<Dev>,
    used: Vec<Used>,
    qps: BTreeMap<u32, QpS>,
    mrs: BTreeMap<u32, MrS>,
    cqs: BTreeMap<u32, CqS>,
    /// Events by (due, sequence): delivery order is due time, then sending order.
    wire: BTreeMap<(u64, u64), Event>,
    seq: u64,
    pinned: BTreeMap<u32, u64>,
    rng: Rng,
    stats: Stats,
    faults: FaultPlan,
    next_qpn: u32,
    next_key: u32,
    next_cq: u32,
}

#[derive(Debug)]
struct Shared {
    start: Instant,
    world: Mutex<World>,
}

/// The fabric: the [`Provider`] of the fake, one per test (cheap to clone; clones share it).
#[derive(Clone, Debug)]
pub struct Fabric(Arc<Shared>);

/// The longest stretch of simulated time [`Fabric::settle`] runs through: a queue pair retrying
/// for ever (`rnr_retry` 7 against a frozen receiver) never settles.
pub const SETTLE_HORIZON: Duration = Duration::from_secs(60);

impl Fabric {
    /// A fabric with `cfg`'s devices.
    ///
    /// # Panics
    /// If `cfg.time_scale` is not positive.
    pub fn new(cfg: FakeConfig) -> Fabric {
        assert!(
            cfg.time_scale > 0.0,
            "time_scale {} must be positive",
            cfg.time_scale
        );
        let world = World {
            rng: Rng::derive(cfg.seed, Purpose::Scheduler, 48),
            used: vec![Used::default(); cfg.devices.len()],
            cfg,
            now: 0,
            devs: Vec::new(),
            qps: BTreeMap::new(),
            mrs: BTreeMap::new(),
            cqs: BTreeMap::new(),
            wire: BTreeMap::new(),
            seq: 0,
            pinned: BTreeMap::new(),
            stats: Stats::default(),
            faults: FaultPlan::default(),
            // Above rxe's RXE_MIN_QP_INDEX (16); QPNs 0 and 1 are special in IBA.
            next_qpn: 0x11,
            next_key: 0x100,
            next_cq: 1,
        };
        Fabric(Arc::new(Shared {
            start: Instant::now(),
            world: Mutex::new(world),
        }))
    }

    /// Takes the lock and brings the world up to now: every event due is processed.
    fn enter(&self) -> MutexGuard<'_, World> {
        // A panic under the lock (a failed test) must not make every later drop panic too.
        let mut w = self.0.world.lock().unwrap_or_else(|e| e.into_inner());
        if w.cfg.clock == ClockMode::Real {
            let real = self.0.start.elapsed().as_nanos() as u64;
            w.now = w.now.max(real);
        }
        let now = w.now;
        w.run_until(now);
        w
    }

    /// The fabric's time.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.enter().now)
    }

    /// Moves the manual clock by `d`, processing every event due on the way at its own time.
    ///
    /// # Panics
    /// With [`ClockMode::Real`].
    pub fn advance(&self, d: Duration) {
        let mut w = self.enter();
        assert_eq!(
            w.cfg.clock,
            ClockMode::Manual,
            "advance needs ClockMode::Manual"
        );
        let target = w.now + d.as_nanos() as u64;
        w.run_until(target);
        w.now = target;
    }

    /// Processes events until none is left, moving the manual clock to each one's due time
    /// (at most [`SETTLE_HORIZON`] ahead). Returns whether the fabric is quiet.
    ///
    /// # Panics
    /// With [`ClockMode::Real`].
    pub fn settle(&self) -> bool {
        let mut w = self.enter();
        assert_eq!(
            w.cfg.clock,
            ClockMode::Manual,
            "settle needs ClockMode::Manual"
        );
        let horizon = w.now + SETTLE_HORIZON.as_nanos() as u64;
        w.run_until(horizon);
        if w.wire.is_empty() {
            true
        } else {
            w.now = horizon;
            false
        }
    }

    /// Makes the next call of `verb` (`ibv_reg_mr`, `ibv_modify_qp`, `ibv_create_qp`,
    /// `ibv_create_cq`, `ibv_post_send`, `ibv_post_recv`, `ibv_open_device`,
    /// `ibv_get_device_list`) fail with `errno`, doing nothing.
    pub fn fail_next(&self, verb: &'static str, errno: i32) {
        self.enter().faults.fail.push((verb, errno));
    }

    /// Sleeps `d` (real time, outside the lock) before the next `kind` transition of a queue
    /// pair on `dev`: a node slow to reach a state.
    pub fn delay_modify(&self, dev: DeviceSel, kind: TransitionKind, d: Duration) {
        self.enter().faults.delays.push((dev, kind, d));
    }

    /// Lets queue pair `qpn` transmit at most `after_packets` more request packets until
    /// [`Fabric::release`]: a message frozen in flight. Once the budget is spent its ACK timer
    /// stops too, so a hold costs no retries.
    pub fn hold(&self, qpn: u32, after_packets: u32) {
        if let Some(q) = self.enter().qps.get_mut(&qpn) {
            q.hold = Some(after_packets);
        }
    }

    /// Ends a [`Fabric::hold`]: the queue pair transmits what it held back.
    pub fn release(&self, qpn: u32) {
        let mut w = self.enter();
        if let Some(q) = w.qps.get_mut(&qpn) {
            q.hold = None;
            w.transmit(qpn);
            w.rearm(qpn);
        }
    }

    /// Makes every receive queue on `dev` answer incoming sends with an RNR NAK, as a
    /// receiver that stopped posting buffers.
    pub fn freeze_rq(&self, dev: DeviceSel) {
        self.enter().faults.frozen.push(dev);
    }

    /// Counters of the whole fabric.
    pub fn stats(&self) -> Stats {
        self.enter().stats
    }

    /// Counters of the `k`-th device instance opened, if there is one.
    pub fn device_stats(&self, k: usize) -> Option<Stats> {
        self.enter().devs.get(k).map(|d| d.stats)
    }

    /// The state of queue pair `qpn`, if it exists.
    pub fn qp_state(&self, qpn: u32) -> Option<QpState> {
        self.enter().qps.get(&qpn).map(|q| q.state)
    }

    /// The configuration it was made with (the memlock limit the runtime would read from
    /// `getrlimit`, for one).
    pub fn config(&self) -> FakeConfig {
        self.enter().cfg.clone()
    }

    /// Bytes pinned by registrations on `host`.
    pub fn pinned(&self, host: u32) -> u64 {
        self.enter().pinned.get(&host).copied().unwrap_or(0)
    }
}

impl World {
    /// The device specification of instance `pd`.
    fn spec(&self, pd: usize) -> &FakeDevice {
        &self.cfg.devices[self.devs[pd].spec]
    }

    /// Counts on instance `pd` and on the fabric.
    fn count(&mut self, pd: usize, f: impl Fn(&mut Stats)) {
        f(&mut self.stats);
        if let Some(d) = self.devs.get_mut(pd) {
            f(&mut d.stats);
        }
    }

    /// The planned failure of `verb`, as its error.
    fn planned(&mut self, verb: &'static str) -> Result<(), VerbsError> {
        match self.faults.take_failure(verb) {
            Some(errno) => Err(VerbsError::new(verb, Some(errno), "injected by fail_next")),
            None => Ok(()),
        }
    }

    /// A fresh key (lkey == rkey), unique fabric-wide.
    fn fresh_key(&mut self) -> u32 {
        self.next_key = self.next_key.wrapping_add(1).max(0x100);
        self.next_key
    }

    fn reg_mr(&mut self, pd: usize, mem: &Words, remote: Rights) -> Result<u32, VerbsError> {
        const VERB: &str = "ibv_reg_mr";
        self.planned(VERB)?;
        let spec = self.devs[pd].spec;
        let (caps, host, limit) = (
            &self.cfg.devices[spec].caps,
            self.cfg.devices[spec].host,
            self.cfg.memlock,
        );
        let len = mem.capacity() as u64;
        if len > caps.max_mr_size {
            let e = format!("{len} bytes over max_mr_size {}", caps.max_mr_size);
            return Err(VerbsError::new(VERB, Some(EINVAL), e));
        }
        if self.used[spec].mrs >= caps.max_mr {
            let e = format!("{} registrations already (max_mr)", caps.max_mr);
            return Err(VerbsError::new(VERB, Some(ENOMEM), e));
        }
        let charge = len.div_ceil(4096) * 4096;
        let pinned = self.pinned.get(&host).copied().unwrap_or(0);
        if let Some(limit) = limit.filter(|&l| pinned + charge > l) {
            let e = format!("{len} bytes with {pinned} pinned on host {host} over memlock {limit}");
            return Err(VerbsError::new(VERB, Some(ENOMEM), e));
        }
        *self.pinned.entry(host).or_insert(0) += charge;
        self.used[spec].mrs += 1;
        self.count(pd, |s| s.reg_mr += 1);
        let key = self.fresh_key();
        self.mrs.insert(key, MrS::of(mem, pd, remote));
        Ok(key)
    }

    fn dereg_mr(&mut self, key: u32) {
        if let Some(mr) = self.mrs.remove(&key) {
            let spec = self.devs[mr.pd].spec;
            let host = self.cfg.devices[spec].host;
            let charge = (mr.len() as u64).div_ceil(4096) * 4096;
            if let Some(p) = self.pinned.get_mut(&host) {
                *p = p.saturating_sub(charge);
            }
            self.used[spec].mrs -= 1;
        }
    }

    fn create_cq(&mut self, pd: usize, cqe: u32) -> Result<u32, VerbsError> {
        const VERB: &str = "ibv_create_cq";
        self.planned(VERB)?;
        let spec = self.devs[pd].spec;
        let caps = &self.cfg.devices[spec].caps;
        if cqe == 0 || cqe > caps.max_cqe {
            let e = format!("cqe {cqe} (max_cqe {})", caps.max_cqe);
            return Err(VerbsError::new(VERB, Some(EINVAL), e));
        }
        if self.used[spec].cqs >= caps.max_cq {
            let e = format!("{} completion queues already (max_cq)", caps.max_cq);
            return Err(VerbsError::new(VERB, Some(ENOMEM), e));
        }
        self.used[spec].cqs += 1;
        let id = self.next_cq;
        self.next_cq += 1;
        let cq = CqS {
            cap: cqe,
            entries: VecDeque::new(),
            broken: false,
        };
        self.cqs.insert(id, cq);
        Ok(id)
    }

    fn create_qp(&mut self, pd: usize, cq: u32, want: QpCaps) -> Result<u32, VerbsError> {
        const VERB: &str = "ibv_create_qp";
        self.planned(VERB)?;
        let spec = self.devs[pd].spec;
        let caps = &self.cfg.devices[spec].caps;
        let einval = |e: String| Err(VerbsError::new(VERB, Some(EINVAL), e));
        if want.max_send_wr > caps.max_qp_wr || want.max_recv_wr > caps.max_qp_wr {
            let (s, r, m) = (want.max_send_wr, want.max_recv_wr, caps.max_qp_wr);
            return einval(format!(
                "max_send_wr {s} / max_recv_wr {r} over max_qp_wr {m}"
            ));
        }
        if want.max_inline > caps.max_inline {
            let (i, m) = (want.max_inline, caps.max_inline);
            return einval(format!("max_inline {i} over the device's {m}"));
        }
        if !self.cqs.contains_key(&cq) {
            return einval(format!("completion queue {cq} does not exist"));
        }
        if self.used[spec].qps >= caps.max_qp {
            let e = format!("{} queue pairs already (max_qp)", caps.max_qp);
            return Err(VerbsError::new(VERB, Some(ENOMEM), e));
        }
        self.used[spec].qps += 1;
        let qpn = self.next_qpn;
        self.next_qpn = (self.next_qpn + 1) & qp::PSN_MASK;
        self.qps.insert(qpn, QpS::new(pd, cq, want));
        Ok(qpn)
    }

    fn destroy_qp(&mut self, qpn: u32) {
        if let Some(q) = self.qps.remove(&qpn) {
            self.used[self.devs[q.pd].spec].qps -= 1;
        }
    }

    fn destroy_cq(&mut self, id: u32, pd: usize) {
        if self.cqs.remove(&id).is_some() {
            self.used[self.devs[pd].spec].cqs -= 1;
        }
    }

    /// Queues a completion on `cq`; one over its capacity overruns it: the CQ is broken and
    /// every queue pair on it goes to ERR (their flushes are lost with the CQ).
    fn push_cqe(&mut self, cq: u32, wc: Wc, retire: Option<Retire>) {
        let Some(c) = self.cqs.get_mut(&cq) else {
            return;
        };
        if c.broken {
            return;
        }
        if c.entries.len() as u32 >= c.cap {
            c.broken = true;
            let on_it: Vec<u32> = self
                .qps
                .iter()
                .filter(|(_, q)| q.cq == cq)
                .map(|(&n, _)| n)
                .collect();
            for qpn in on_it {
                self.enter_error(qpn);
            }
            return;
        }
        c.entries.push_back((wc, retire));
    }

    fn poll(&mut self, cq: u32, out: &mut Vec<Wc>) -> Result<(), VerbsError> {
        let Some(c) = self.cqs.get_mut(&cq) else {
            return Err(VerbsError::new("ibv_poll_cq", Some(EINVAL), "no such CQ"));
        };
        if c.broken {
            return Err(VerbsError::new("ibv_poll_cq", None, "CQ overrun"));
        }
        let drained: Vec<_> = c.entries.drain(..).collect();
        for (wc, retire) in drained {
            if let Some(r) = retire {
                if let Some(q) = self.qps.get_mut(&r.qpn).filter(|q| q.epoch == r.epoch) {
                    q.slots = q.slots.saturating_sub(r.slots);
                }
            }
            out.push(wc);
        }
        Ok(())
    }
}

impl Provider for Fabric {
    type Ctx = FakeCtx;

    fn devices(&self) -> Result<Vec<String>, VerbsError> {
        let mut w = self.enter();
        w.planned("ibv_get_device_list")?;
        Ok(w.cfg.devices.iter().map(|d| d.name.clone()).collect())
    }

    fn open(&self, name: &str) -> Result<FakeCtx, VerbsError> {
        const VERB: &str = "ibv_open_device";
        let mut w = self.enter();
        w.planned(VERB)?;
        let Some(spec) = w.cfg.devices.iter().position(|d| d.name == name) else {
            return Err(VerbsError::new(VERB, Some(19), format!("no device {name}")));
        };
        if let Some(errno) = w.cfg.devices[spec].open_error {
            return Err(VerbsError::new(VERB, Some(errno), name.to_string()));
        }
        w.devs.push(Dev {
            spec,
            stats: Stats::default(),
        });
        Ok(FakeCtx {
            fabric: self.clone(),
            pd: w.devs.len() - 1,
        })
    }

    fn memlock_limit(&self) -> Option<u64> {
        self.enter().cfg.memlock
    }
}

/// An opened device instance with its protection domain.
#[derive(Debug)]
pub struct FakeCtx {
    fabric: Fabric,
    pd: usize,
}

impl FakeCtx {
    /// Its open order on the fabric (what [`DeviceSel::NthOpen`] names).
    pub fn instance(&self) -> usize {
        self.pd
    }

    fn spec(&self) -> FakeDevice {
        self.fabric.enter().spec(self.pd).clone()
    }
}

impl Context for FakeCtx {
    type Mr = FakeMr;
    type Cq = FakeCq;
    type Qp = FakeQp;

    fn query_device(&self) -> Result<DeviceCaps, VerbsError> {
        Ok(self.spec().caps)
    }

    fn query_port(&self, port: u8) -> Result<PortInfo, VerbsError> {
        let d = self.spec();
        if port == 0 || port > d.caps.phys_port_cnt {
            let e = format!("port {port} of {}", d.caps.phys_port_cnt);
            return Err(VerbsError::new("ibv_query_port", Some(EINVAL), e));
        }
        Ok(d.port)
    }

    fn query_gid(&self, port: u8, index: u32) -> Result<[u8; 16], VerbsError> {
        let d = self.spec();
        d.gids
            .iter()
            .find(|g| g.port == port && g.index == index)
            .map(|g| g.gid)
            .ok_or_else(|| {
                let e = format!("port {port} index {index}");
                VerbsError::new("ibv_query_gid", Some(EINVAL), e)
            })
    }

    fn gid_table(&self) -> Result<Vec<GidEntry>, VerbsError> {
        Ok(self.spec().gids)
    }

    fn reg_mr(&self, mem: &Words, remote: Rights) -> Result<FakeMr, VerbsError> {
        let key = self.fabric.enter().reg_mr(self.pd, mem, remote)?;
        Ok(FakeMr {
            fabric: self.fabric.clone(),
            key,
        })
    }

    fn create_cq(&self, cqe: u32) -> Result<FakeCq, VerbsError> {
        let id = self.fabric.enter().create_cq(self.pd, cqe)?;
        Ok(FakeCq {
            fabric: self.fabric.clone(),
            id,
            pd: self.pd,
        })
    }

    fn create_qp(&self, cq: &FakeCq, caps: QpCaps) -> Result<FakeQp, VerbsError> {
        let qpn = self.fabric.enter().create_qp(self.pd, cq.id, caps)?;
        Ok(FakeQp {
            fabric: self.fabric.clone(),
            qpn,
            pd: self.pd,
        })
    }
}

/// A registration (drop: removed under the lock; nothing lands through its key after).
#[derive(Debug)]
pub struct FakeMr {
    fabric: Fabric,
    key: u32,
}

impl MemoryRegion for FakeMr {
    fn lkey(&self) -> u32 {
        self.key
    }

    fn rkey(&self) -> u32 {
        self.key
    }
}

impl Drop for FakeMr {
    fn drop(&mut self) {
        self.fabric.enter().dereg_mr(self.key);
    }
}

/// A completion queue.
#[derive(Debug)]
pub struct FakeCq {
    fabric: Fabric,
    id: u32,
    pd: usize,
}

impl CompletionQueue for FakeCq {
    fn poll(&self, out: &mut Vec<Wc>) -> Result<(), VerbsError> {
        let mut w = self.fabric.enter();
        w.count(self.pd, |s| s.poll_cq_calls += 1);
        w.poll(self.id, out)
    }
}

impl Drop for FakeCq {
    fn drop(&mut self) {
        self.fabric.enter().destroy_cq(self.id, self.pd);
    }
}

/// An RC queue pair (drop: removed under the lock; its peer's packets are dropped from then
/// on, so the peer's requests end `RETRY_EXC_ERR`).
#[derive(Debug)]
pub struct FakeQp {
    fabric: Fabric,
    qpn: u32,
    pd: usize,
}

impl QueuePair for FakeQp {
    fn qp_num(&self) -> u32 {
        self.qpn
    }

    fn modify(&mut self, t: &Transition) -> Result<(), VerbsError> {
        let delay = {
            let mut w = self.fabric.enter();
            let name = w.spec(self.pd).name.clone();
            w.faults.take_delay(self.pd, &name, TransitionKind::of(t))
        };
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
        self.fabric.enter().modify(self.qpn, t)
    }

    fn post_send(&mut self, id: u64, signaled: bool, wr: Wr<'_>) -> Result<(), VerbsError> {
        self.fabric.enter().post_send(self.qpn, id, signaled, wr)
    }

    fn post_recv(&mut self, wrs: &[RecvWr]) -> Result<(), VerbsError> {
        self.fabric.enter().post_recv(self.qpn, wrs)
    }
}

impl Drop for FakeQp {
    fn drop(&mut self) {
        self.fabric.enter().destroy_qp(self.qpn);
    }
}

/// Whether `cap` returns atomics' old values byte-swapped (see [`AtomicCap::None`]).
fn swaps_atomics(cap: AtomicCap) -> bool {
    cap == AtomicCap::None
}
