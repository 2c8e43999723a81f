//! The `local` runtime: P processes on K OS threads with real shared memory.
//!
//! Remote ops are executed by the posting thread directly on the target's memory, the way a
//! NIC's DMA engine would: words land one at a time in ascending address order, so readers on
//! other threads really do see torn multi-word writes and protocols must use canaries. Ops of one
//! process to one peer take effect in post order (they execute synchronously at post). Access is
//! checked at write time, under a per-(region, peer) lock that [`Nic::set_access`] also takes, so
//! after a revoke returns no later write of that peer lands.
//!
//! With [`LocalConfig::nic_thread`], a NIC thread executes remote ops instead, asynchronously
//! and in a random order across queue pairs (per queue pair in post order): see [`nic_thread`].
//!
//! Threads busy-poll their processes; a thread whose processes all report no work for
//! `spin_polls` consecutive rounds parks until one of its processes is written to, receives a
//! completion or message, or reaches its `wake_at`.
//!
//! This runtime is nondeterministic by design (its job is memory-ordering bugs and real software
//! cost). Its seed only seeds the processes' random streams; runs never replay.

#![allow(
    clippy::disallowed_methods,
    reason = "the local runtime is where real time and threads enter: it gives processes `now()`"
)]

pub mod nic_thread;

use super::shared_memory::{shared_local_memory, Recycled, SharedMemory, SharedRegion};
use crate::nic::{validate, Completion, Nic, NicLimits, Op, OpError, Qp, Recv, Status, WrId};
use crate::process::{Process, ProcessId};
use crate::queue_pair::QpState;
use crate::region::{Access, LocalAddr, RegionTable};
use crate::rng::{Purpose, Rng};
use crate::time::Nanos;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Configuration of a local run.
#[derive(Clone, Copy, Debug)]
pub struct LocalConfig {
    /// OS threads; 0 means one per available core (at most one per process).
    pub threads: usize,
    /// Seeds the processes' random streams.
    pub seed: u64,
    /// Consecutive idle rounds a thread spins before parking.
    pub spin_polls: u32,
    /// NIC limits reported to processes.
    pub limits: NicLimits,
    /// Execute remote ops on a NIC thread, asynchronously and reordered across queue pairs,
    /// instead of synchronously at post ([`nic_thread`]).
    pub nic_thread: bool,
    /// Carry out a write or read of several words in up to 16 pieces of whole words, yielding
    /// the thread once between two of them, so that the target's thread (and other ops) run in
    /// between: torn accesses become likely, not merely possible (`harness check --runtime
    /// local`).
    pub yield_words: bool,
}

impl Default for LocalConfig {
    fn default() -> Self {
        LocalConfig {
            threads: 0,
            seed: 0,
            spin_polls: 20_000,
            limits: NicLimits::default(),
            nic_thread: false,
            yield_words: false,
        }
    }
}

#[derive(Debug)]
struct ProcShared {
    regions: Vec<SharedRegion>,
    crashed: AtomicBool,
    /// Set by anyone who gives the process something to do; read before its thread parks.
    pending: AtomicBool,
    thread: usize,
    recv: Mutex<VecDeque<Recv>>,
    /// Not polled before this time (ns since the start; [`LocalControl::pause`]).
    paused_until: AtomicU64,
    /// Completions the NIC thread produced for this process.
    cq: Mutex<VecDeque<Completion>>,
}

#[derive(Debug)]
struct ThreadShared {
    sleeping: AtomicBool,
    handle: OnceLock<Thread>,
}

#[derive(Debug)]
struct Shared {
    procs: Vec<ProcShared>,
    threads: Vec<ThreadShared>,
    table: RegionTable,
    start: Instant,
    stop: AtomicBool,
    not_done: AtomicUsize,
    /// Whether remote ops go through the NIC thread.
    nic_thread: bool,
    /// [`LocalConfig::yield_words`].
    yield_words: bool,
    /// The NIC thread's queue pairs, and its wake-up signal.
    nic: Mutex<nic_thread::NicQueues>,
    nic_signal: Condvar,
    /// Signalled when the NIC thread takes an op: a poster whose send queue is full waits on it.
    nic_drained: Condvar,
}

impl Shared {
    fn now(&self) -> Nanos {
        Nanos(self.start.elapsed().as_nanos() as u64)
    }

    fn notify(&self, p: usize) {
        let proc = &self.procs[p];
        proc.pending.store(true, Ordering::SeqCst);
        let t = &self.threads[proc.thread];
        if t.sleeping.load(Ordering::SeqCst) {
            if let Some(h) = t.handle.get() {
                h.unpark();
            }
        }
    }

    fn stop_all(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.nic_signal.notify_all();
        self.nic_drained.notify_all();
        for t in &self.threads {
            if let Some(h) = t.handle.get() {
                h.unpark();
            }
        }
    }
}

/// A handle to a running local runtime, usable from any thread.
#[derive(Clone, Debug)]
pub struct LocalControl {
    shared: Arc<Shared>,
}

impl LocalControl {
    /// Crashes `p`: it is never polled again and ops to it fail with `PeerUnreachable`.
    pub fn crash(&self, p: ProcessId) {
        if let Some(proc) = self.shared.procs.get(p.index()) {
            proc.crashed.store(true, Ordering::SeqCst);
            self.shared.notify(p.index());
        }
    }

    /// Pauses `p` for `duration` from now: its thread does not poll it meanwhile (its memory
    /// and NIC go on), as a descheduled or stopped process.
    pub fn pause(&self, p: ProcessId, duration: Duration) {
        if let Some(proc) = self.shared.procs.get(p.index()) {
            let until = self.shared.now().0 + duration.as_nanos() as u64;
            proc.paused_until.fetch_max(until, Ordering::SeqCst);
            self.shared.notify(p.index());
        }
    }

    /// Stops the run.
    pub fn stop(&self) {
        self.shared.stop_all();
    }

    /// Holds the NIC thread (`true`): it executes nothing until released (`false`), so ops
    /// posted meanwhile queue up and are then executed in a random order across queue pairs.
    /// No effect without [`LocalConfig::nic_thread`].
    pub fn hold_nic(&self, held: bool) {
        self.shared.nic.lock().expect("nic lock").held = held;
        self.shared.nic_signal.notify_all();
    }
}

/// The NIC a process of the local runtime polls with.
pub struct LocalNic {
    id: ProcessId,
    shared: Arc<Shared>,
    limits: NicLimits,
    rng: Rng,
    next_wr: u64,
    cq: VecDeque<Completion>,
    /// Per peer, its queue pairs' states ([`Qp::COUNT`] each), for synchronous execution.
    qps: Vec<QpState>,
    /// Buffers [`Nic::read_data`] copies into, recycled.
    recycled: Recycled,
}

impl fmt::Debug for LocalNic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalNic")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl LocalNic {
    fn region(&self, p: ProcessId, at: LocalAddr) -> &SharedRegion {
        &self.shared.procs[p.index()].regions[at.region.index()]
    }
}

impl SharedMemory for LocalNic {
    fn check(
        &self,
        at: LocalAddr,
        len: usize,
    ) -> Result<&crate::runtime::shared_memory::Words, OpError> {
        crate::nic::check_bounds(&self.shared.table, self.id, at.region, at.offset, len)?;
        Ok(self.region(self.id, at))
    }
}

impl Nic for LocalNic {
    fn id(&self) -> ProcessId {
        self.id
    }

    fn regions(&self) -> &RegionTable {
        &self.shared.table
    }

    fn now(&self) -> Nanos {
        self.shared.now()
    }

    fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    fn limits(&self) -> NicLimits {
        self.limits
    }

    shared_local_memory!();

    fn post(&mut self, op: Op) -> Result<WrId, OpError> {
        validate(&op, self.id, &self.shared.table, &self.limits)?;
        let wr = WrId(self.next_wr);
        self.next_wr += 1;
        if self.shared.procs[self.id.index()]
            .crashed
            .load(Ordering::SeqCst)
        {
            // Crashed by another thread in the middle of this poll: a dead node's NIC does
            // nothing, and its process is never polled again, so it cannot tell. An error here
            // would run the rest of the poll on a path no crashed process takes (Ridge panicked
            // on its own refused packet, RDMC blamed the peer it was posting to).
            return Ok(wr);
        }
        let (status, value) = match &op {
            Op::SetAccess {
                region,
                peer,
                access,
            } => {
                let r = &self.shared.procs[self.id.index()].regions[region.index()];
                // Waits for any in-flight op of `peer` on this region to finish landing.
                *r.access[peer.index()].lock().expect("access lock poisoned") = *access;
                return Ok(wr);
            }
            Op::Reconnect { peer } => {
                // Both queue pairs to the peer are re-established.
                if self.shared.nic_thread {
                    self.shared
                        .nic
                        .lock()
                        .expect("nic lock")
                        .reconnect(self.id, *peer);
                } else {
                    let first = peer.index() * Qp::COUNT;
                    self.qps[first..first + Qp::COUNT]
                        .iter_mut()
                        .for_each(QpState::reconnect);
                }
                (Status::Success, None)
            }
            _ if self.shared.nic_thread => {
                let shared = &self.shared;
                let mut queues = shared.nic.lock().expect("nic lock");
                // A full send queue: wait for the NIC thread (bounded, so a stop or a crash
                // is seen; a stopped run posts anyway, its NIC thread gone).
                while queues.full(self.id)
                    && !shared.stop.load(Ordering::SeqCst)
                    && !shared.procs[self.id.index()].crashed.load(Ordering::SeqCst)
                {
                    queues = shared
                        .nic_drained
                        .wait_timeout(queues, Duration::from_millis(1))
                        .expect("nic lock")
                        .0;
                }
                queues.post(self.id, wr, op);
                drop(queues);
                self.shared.nic_signal.notify_one();
                return Ok(wr);
            }
            _ => {
                let qp = op.peer().index() * Qp::COUNT + op.qp().index();
                let state = &mut self.qps[qp];
                let result = execute(&self.shared, self.id, &op, !state.in_error());
                state.failed(state.epoch(), result.0);
                result
            }
        };
        if status != Status::Success || op.signaled() {
            self.cq.push_back(Completion {
                wr,
                kind: op.kind(),
                peer: op.peer(),
                status,
                value,
            });
        }
        Ok(wr)
    }

    fn poll_completion(&mut self) -> Option<Completion> {
        self.cq.pop_front().or_else(|| {
            self.shared.procs[self.id.index()]
                .cq
                .lock()
                .expect("cq lock")
                .pop_front()
        })
    }

    fn poll_recv(&mut self) -> Option<Recv> {
        self.shared.procs[self.id.index()]
            .recv
            .lock()
            .expect("recv lock")
            .pop_front()
    }
}

/// Executes network op `op` of process `me` against its target's memory, the way a NIC's DMA
/// engine would, unless the target crashed (`PeerUnreachable`) or the queue pair is in error
/// (`Flushed`, unless `live`: its queue pair's [`QpState::executes`]). A refused op returns
/// `AccessDenied`, and its caller puts the queue pair in error. Returns the status and an
/// atomic's old value.
fn execute(shared: &Shared, me: ProcessId, op: &Op, live: bool) -> (Status, Option<u64>) {
    let d = op.peer();
    if shared.procs[d.index()].crashed.load(Ordering::SeqCst) {
        return (Status::PeerUnreachable, None);
    }
    if !live {
        return (Status::Flushed, None);
    }
    let target = &shared.procs[d.index()];
    let me_i = me.index();
    let denied = || (Status::AccessDenied, None);
    match op {
        Op::Write { dst, data, imm, .. } => {
            let region = &target.regions[dst.region.index()];
            let write = |r: &SharedRegion| {
                in_pieces(shared.yield_words, dst.offset, data.len(), |at, len| {
                    r.write_data(dst.offset + at, &data.window(at, len))
                })
            };
            if region.guarded(me_i, Access::can_write, write).is_none() {
                return denied();
            }
            if let Some(imm) = imm {
                target
                    .recv
                    .lock()
                    .expect("recv lock")
                    .push_back(Recv::Immediate {
                        from: me,
                        imm: *imm,
                        at: LocalAddr::new(dst.region, dst.offset),
                        len: data.len(),
                    });
            }
            shared.notify(d.index());
            (Status::Success, None)
        }
        Op::Send { data, .. } => {
            target
                .recv
                .lock()
                .expect("recv lock")
                .push_back(Recv::Message {
                    from: me,
                    data: data.clone(),
                });
            shared.notify(d.index());
            (Status::Success, None)
        }
        Op::Read { src, len, into, .. } => {
            let region = &target.regions[src.region.index()];
            let mut buf = vec![0; *len];
            let read = |r: &SharedRegion| {
                in_pieces(shared.yield_words, src.offset, *len, |at, n| {
                    r.read(src.offset + at, &mut buf[at..at + n])
                })
            };
            if region.guarded(me_i, Access::can_read, read).is_none() {
                return denied();
            }
            shared.procs[me_i].regions[into.region.index()].write(into.offset, &buf);
            (Status::Success, None)
        }
        Op::CompareSwap { dst, expect, swap } => {
            let region = &target.regions[dst.region.index()];
            let cas = |r: &SharedRegion| {
                let word = r.word(dst.offset);
                match word.compare_exchange(*expect, *swap, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(v) | Err(v) => v,
                }
            };
            let Some(old) = region.guarded(me_i, Access::can_atomic, cas) else {
                return denied();
            };
            shared.notify(d.index());
            (Status::Success, Some(old))
        }
        Op::FetchAdd { dst, add } => {
            let region = &target.regions[dst.region.index()];
            let faa = |r: &SharedRegion| r.word(dst.offset).fetch_add(*add, Ordering::AcqRel);
            let Some(old) = region.guarded(me_i, Access::can_atomic, faa) else {
                return denied();
            };
            shared.notify(d.index());
            (Status::Success, Some(old))
        }
        Op::SetAccess { .. } | Op::Reconnect { .. } => unreachable!("not network ops"),
    }
}

/// Runs `access(start, len)` over an access of `len` bytes at `offset`: at once, or with
/// `yielding` in up to 16 pieces of whole aligned words with a pause between two pieces drawn
/// at random ([`LocalConfig::yield_words`]): a few microseconds of spinning, in which threads
/// on other cores see the access half done, or, if the thread has not yielded for
/// [`YIELD_EVERY`], a yield, so that a thread waiting for this core runs in between. Not a
/// yield every time: on oversubscribed cores a yield hands the core to busy-polling threads
/// for their time slices (1.5 ms each on a quiet 2-core machine, 37 ms under a build), and
/// the NIC thread carries every process's ops: with a yield between every two pieces an RDMC
/// check of 2,950 blocks of 256 B took over 10 s, with one per access 4.4 s, with spinning
/// only 0.1 s.
fn in_pieces(yielding: bool, offset: usize, len: usize, mut access: impl FnMut(usize, usize)) {
    let words = (offset + len).div_ceil(8) - offset / 8;
    if !yielding || words < 2 {
        return access(0, len);
    }
    let per = words.div_ceil(16) * 8;
    let base = offset / 8 * 8;
    let pieces = (offset + len - base).div_ceil(per);
    let yield_before = 1 + draw_below(pieces as u64 - 1) as usize;
    let mut at = offset;
    for piece in 0.. {
        if at >= offset + len {
            break;
        }
        if piece == yield_before {
            if yield_due() {
                std::thread::yield_now();
            } else {
                let until = Instant::now() + PIECE_PAUSE;
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
        }
        let end = (base + ((at - base) / per + 1) * per).min(offset + len);
        access(at - offset, end - at);
        at = end;
    }
}

/// How long a yielding access spins between its two pieces.
const PIECE_PAUSE: Duration = Duration::from_micros(2);
/// A thread's yielding accesses yield it at most this often; they spin otherwise.
const YIELD_EVERY: Duration = Duration::from_millis(100);

/// Whether this thread's last yield was [`YIELD_EVERY`] ago (it yields now, then).
fn yield_due() -> bool {
    use std::cell::Cell;
    thread_local! {
        static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    LAST.with(|last| {
        let now = Instant::now();
        let due = last.get().is_none_or(|t| now - t >= YIELD_EVERY);
        if due {
            last.set(Some(now));
        }
        due
    })
}

/// A number below `n` (n > 0) from a per-thread stream: where a yielding access yields. Not
/// from the run's seed: a local run does not replay anyway.
fn draw_below(n: u64) -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0x9e37_79b9_7f4a_7c15) };
    }
    STATE.with(|s| {
        let mut state = s.get();
        let x = crate::rng::splitmix64(&mut state);
        s.set(state);
        x % n
    })
}

/// Why a local run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalStop {
    /// Every live process reported `done`.
    AllDone,
    /// The wall-clock limit passed.
    TimeLimit,
    /// [`LocalControl::stop`] was called.
    Stopped,
}

/// The result of a local run.
#[derive(Debug)]
pub struct LocalRun<P> {
    /// The processes, in id order, as the run left them.
    pub processes: Vec<P>,
    /// Their NICs, in id order: what each process's memory holds at the end.
    pub nics: Vec<LocalNic>,
    /// Per process, in id order, whether it crashed ([`LocalControl::crash`]) or stopped by
    /// itself before the run ended: a crash scheduled after the run ended did not happen.
    pub crashed: Vec<bool>,
    /// Wall-clock duration.
    pub elapsed: Duration,
    /// Why it ended.
    pub stop: LocalStop,
}

impl<P> super::Ended for LocalRun<P> {
    type Process = P;
    type Nic = LocalNic;
    fn processes(&self) -> &[P] {
        &self.processes
    }
    fn nic(&self, p: ProcessId) -> &LocalNic {
        &self.nics[p.index()]
    }
    fn crashed(&self, p: ProcessId) -> bool {
        self.crashed[p.index()]
    }
    fn now(&self) -> Nanos {
        // The runtime's clock, which goes on after the run.
        self.nics.first().map_or(Nanos::ZERO, Nic::now)
    }
}

/// A local run being set up.
pub struct LocalRuntime<P> {
    cfg: LocalConfig,
    processes: Vec<P>,
    shared: Arc<Shared>,
}

impl<P> fmt::Debug for LocalRuntime<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalRuntime")
            .field("cfg", &self.cfg)
            .field("processes", &self.processes.len())
            .finish_non_exhaustive()
    }
}

/// The number of threads a run of `processes` processes uses under `cfg`.
pub fn thread_count(cfg: &LocalConfig, processes: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let k = if cfg.threads == 0 { cores } else { cfg.threads };
    k.clamp(1, processes.max(1))
}

impl<P: Process<LocalNic> + Send> LocalRuntime<P> {
    /// Sets up `processes` (process `i` gets `ProcessId(i)`) and their shared memory.
    pub fn new(cfg: LocalConfig, processes: Vec<P>) -> LocalRuntime<P> {
        let n = processes.len();
        let k = thread_count(&cfg, n);
        let specs: Vec<_> = processes.iter().map(|p| p.regions()).collect();
        let procs = specs
            .iter()
            .enumerate()
            .map(|(i, regions)| ProcShared {
                regions: regions
                    .iter()
                    .map(|r| SharedRegion::new(r.len, r.access_table(n)))
                    .collect(),
                crashed: AtomicBool::new(false),
                pending: AtomicBool::new(true),
                thread: i % k,
                recv: Mutex::new(VecDeque::new()),
                paused_until: AtomicU64::new(0),
                cq: Mutex::new(VecDeque::new()),
            })
            .collect();
        let shared = Arc::new(Shared {
            procs,
            threads: (0..k)
                .map(|_| ThreadShared {
                    sleeping: AtomicBool::new(false),
                    handle: OnceLock::new(),
                })
                .collect(),
            table: RegionTable::new(&specs),
            start: Instant::now(),
            stop: AtomicBool::new(false),
            not_done: AtomicUsize::new(n),
            nic_thread: cfg.nic_thread,
            yield_words: cfg.yield_words,
            nic: Mutex::new(nic_thread::NicQueues::default()),
            nic_signal: Condvar::new(),
            nic_drained: Condvar::new(),
        });
        LocalRuntime {
            cfg,
            processes,
            shared,
        }
    }

    /// A handle to crash processes or stop the run from another thread.
    pub fn control(&self) -> LocalControl {
        LocalControl {
            shared: self.shared.clone(),
        }
    }

    /// Runs until every process is done, `limit` passes, or the run is stopped.
    pub fn run(self, limit: Duration) -> LocalRun<P> {
        let LocalRuntime {
            cfg,
            processes,
            shared,
        } = self;
        let k = shared.threads.len();
        let mut groups: Vec<Vec<(usize, P, LocalNic)>> = (0..k).map(|_| Vec::new()).collect();
        let n = processes.len();
        for (i, p) in processes.into_iter().enumerate() {
            let nic = LocalNic {
                id: ProcessId(i as u32),
                shared: shared.clone(),
                limits: cfg.limits,
                rng: Rng::derive(cfg.seed, Purpose::Protocol, i as u64),
                next_wr: 0,
                cq: VecDeque::new(),
                qps: vec![QpState::default(); n * Qp::COUNT],
                recycled: Recycled::default(),
            };
            groups[i % k].push((i, p, nic));
        }
        let started = Instant::now();
        let deadline = started + limit;
        let mut finished: Vec<(usize, P, LocalNic)> = std::thread::scope(|scope| {
            if cfg.nic_thread {
                let shared = shared.clone();
                let rng = Rng::derive(cfg.seed, Purpose::Scheduler, 0);
                scope.spawn(move || nic_thread::run(&shared, rng));
            }
            let handles: Vec<_> = groups
                .into_iter()
                .enumerate()
                .map(|(t, group)| {
                    let shared = shared.clone();
                    scope.spawn(move || thread_main(t, group, &shared, cfg.spin_polls, deadline))
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a local runtime thread panicked"))
                .collect()
        });
        finished.sort_by_key(|(i, _, _)| *i);
        let stop = if shared.not_done.load(Ordering::SeqCst) == 0 {
            LocalStop::AllDone
        } else if Instant::now() >= deadline {
            LocalStop::TimeLimit
        } else {
            LocalStop::Stopped
        };
        let (processes, nics) = finished.into_iter().map(|(_, p, nic)| (p, nic)).unzip();
        let crashed = shared
            .procs
            .iter()
            .map(|p| p.crashed.load(Ordering::SeqCst))
            .collect();
        LocalRun {
            processes,
            nics,
            crashed,
            elapsed: started.elapsed(),
            stop,
        }
    }
}

fn thread_main<P: Process<LocalNic>>(
    t: usize,
    mut group: Vec<(usize, P, LocalNic)>,
    shared: &Shared,
    spin_polls: u32,
    deadline: Instant,
) -> Vec<(usize, P, LocalNic)> {
    let me = &shared.threads[t];
    let _ = me.handle.set(std::thread::current());
    let mut done = vec![false; group.len()];
    let mut idle_rounds = 0u32;
    let mut rounds = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        rounds += 1;
        // Busy processes never go idle; look at the clock every so often regardless.
        if rounds % 1024 == 0 && Instant::now() >= deadline {
            shared.stop_all();
            break;
        }
        let mut worked = false;
        let mut wake_at: Option<Nanos> = None;
        for (k, (i, process, nic)) in group.iter_mut().enumerate() {
            let ps = &shared.procs[*i];
            let crashed = ps.crashed.load(Ordering::Relaxed);
            let paused = ps.paused_until.load(Ordering::Relaxed);
            if !crashed && paused > 0 && shared.now().0 < paused {
                wake_at = Some(wake_at.map_or(Nanos(paused), |w| w.min(Nanos(paused))));
            } else if !crashed {
                ps.pending.store(false, Ordering::Relaxed);
                let progress = process.poll(nic);
                if process.stopped() {
                    // It exits: peers see it as crashed from now on.
                    ps.crashed.store(true, Ordering::SeqCst);
                }
                worked |= progress.did_work;
                wake_at = match (wake_at, progress.wake_at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            if !done[k] && (crashed || process.done()) {
                done[k] = true;
                if shared.not_done.fetch_sub(1, Ordering::SeqCst) == 1 {
                    shared.stop_all();
                }
            }
        }
        if worked {
            idle_rounds = 0;
            continue;
        }
        let now = Instant::now();
        if now >= deadline {
            shared.stop_all();
            break;
        }
        idle_rounds = idle_rounds.saturating_add(1);
        if idle_rounds < spin_polls {
            std::hint::spin_loop();
            continue;
        }
        let now_ns = shared.now();
        if wake_at.is_some_and(|w| w <= now_ns) {
            continue;
        }
        // Park: announce it, then re-check for work that arrived meanwhile (the notifier sets
        // `pending` before reading `sleeping`, both SeqCst, so one of us sees the other).
        me.sleeping.store(true, Ordering::SeqCst);
        let pending = group
            .iter()
            .any(|(i, _, _)| shared.procs[*i].pending.load(Ordering::SeqCst));
        if !pending && !shared.stop.load(Ordering::SeqCst) {
            let mut timeout = deadline.saturating_duration_since(now);
            if let Some(w) = wake_at {
                timeout = timeout.min(Duration::from_nanos(w.0 - now_ns.0));
            }
            std::thread::park_timeout(timeout);
        }
        me.sleeping.store(false, Ordering::SeqCst);
        idle_rounds = spin_polls / 2;
    }
    group
}
