//! The `local` runtime: P processes on K OS threads with real shared memory.
//!
//! Remote ops are executed by the posting thread directly on the target's memory, the way a
//! NIC's DMA engine would: words land one at a time in ascending address order, so readers on
//! other threads really do see torn multi-word writes and protocols must use canaries. Ops of one
//! process to one peer take effect in post order (they execute synchronously at post). Access is
//! checked at write time, under a per-(region, peer) lock that [`Nic::set_access`] also takes, so
//! after a revoke returns no later write of that peer lands.
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

mod memory;

use crate::nic::{validate, Completion, Nic, NicLimits, Op, OpError, Qp, Recv, Status, WrId};
use crate::process::{Process, ProcessId};
use crate::region::{Access, LocalAddr, RegionTable};
use crate::rng::{Purpose, Rng};
use crate::time::Nanos;
use memory::SharedRegion;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
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
}

impl Default for LocalConfig {
    fn default() -> Self {
        LocalConfig {
            threads: 0,
            seed: 0,
            spin_polls: 20_000,
            limits: NicLimits::default(),
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

    /// Stops the run.
    pub fn stop(&self) {
        self.shared.stop_all();
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
    /// Per peer, one flag per queue pair ([`Qp::COUNT`] each): in error until a reconnect.
    qp_error: Vec<bool>,
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

    fn check_local(&self, at: LocalAddr, len: usize) -> Result<&SharedRegion, OpError> {
        crate::nic::check_bounds(&self.shared.table, self.id, at.region, at.offset, len)?;
        Ok(self.region(self.id, at))
    }

    /// Executes a network op against the target's memory; returns its status and atomic value.
    fn execute(&mut self, op: &Op) -> (Status, Option<u64>) {
        let d = op.peer();
        if self.shared.procs[d.index()].crashed.load(Ordering::SeqCst) {
            return (Status::PeerUnreachable, None);
        }
        let qp = d.index() * Qp::COUNT + op.qp().index();
        if self.qp_error[qp] {
            return (Status::Flushed, None);
        }
        let me = self.id.index();
        let target = &self.shared.procs[d.index()];
        let denied = |this: &mut LocalNic| {
            this.qp_error[qp] = true;
            (Status::AccessDenied, None)
        };
        match op {
            Op::Write { dst, data, imm, .. } => {
                let region = &target.regions[dst.region.index()];
                if region
                    .guarded(me, Access::can_write, |r| r.write_data(dst.offset, data))
                    .is_none()
                {
                    return denied(self);
                }
                if let Some(imm) = imm {
                    target
                        .recv
                        .lock()
                        .expect("recv lock")
                        .push_back(Recv::Immediate {
                            from: self.id,
                            imm: *imm,
                            at: LocalAddr::new(dst.region, dst.offset),
                            len: data.len(),
                        });
                }
                self.shared.notify(d.index());
                (Status::Success, None)
            }
            Op::Send { data, .. } => {
                target
                    .recv
                    .lock()
                    .expect("recv lock")
                    .push_back(Recv::Message {
                        from: self.id,
                        data: data.clone(),
                    });
                self.shared.notify(d.index());
                (Status::Success, None)
            }
            Op::Read { src, len, into, .. } => {
                let region = &target.regions[src.region.index()];
                let mut buf = vec![0; *len];
                if region
                    .guarded(me, Access::can_read, |r| r.read(src.offset, &mut buf))
                    .is_none()
                {
                    return denied(self);
                }
                self.region(self.id, *into).write(into.offset, &buf);
                (Status::Success, None)
            }
            Op::CompareSwap { dst, expect, swap } => {
                let region = &target.regions[dst.region.index()];
                let cas = |r: &SharedRegion| {
                    let word = r.word(dst.offset);
                    match word.compare_exchange(*expect, *swap, Ordering::AcqRel, Ordering::Acquire)
                    {
                        Ok(v) | Err(v) => v,
                    }
                };
                let Some(old) = region.guarded(me, Access::can_atomic, cas) else {
                    return denied(self);
                };
                self.shared.notify(d.index());
                (Status::Success, Some(old))
            }
            Op::FetchAdd { dst, add } => {
                let region = &target.regions[dst.region.index()];
                let faa = |r: &SharedRegion| r.word(dst.offset).fetch_add(*add, Ordering::AcqRel);
                let Some(old) = region.guarded(me, Access::can_atomic, faa) else {
                    return denied(self);
                };
                self.shared.notify(d.index());
                (Status::Success, Some(old))
            }
            Op::SetAccess { .. } | Op::Reconnect { .. } => unreachable!("not network ops"),
        }
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

    fn read_local(&self, at: LocalAddr, buf: &mut [u8]) -> Result<(), OpError> {
        self.check_local(at, buf.len())?.read(at.offset, buf);
        Ok(())
    }

    fn write_local(&mut self, at: LocalAddr, data: &[u8]) -> Result<(), OpError> {
        self.check_local(at, data.len())?.write(at.offset, data);
        Ok(())
    }

    fn load_u64(&self, at: LocalAddr) -> Result<u64, OpError> {
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        Ok(self
            .check_local(at, 8)?
            .word(at.offset)
            .load(Ordering::Acquire))
    }

    fn store_u64(&mut self, at: LocalAddr, value: u64) -> Result<(), OpError> {
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        self.check_local(at, 8)?
            .word(at.offset)
            .store(value, Ordering::Release);
        Ok(())
    }

    fn post(&mut self, op: Op) -> Result<WrId, OpError> {
        validate(&op, self.id, &self.shared.table, &self.limits)?;
        if self.shared.procs[self.id.index()]
            .crashed
            .load(Ordering::Relaxed)
        {
            return Err(OpError::Crashed);
        }
        let wr = WrId(self.next_wr);
        self.next_wr += 1;
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
                let first = peer.index() * Qp::COUNT;
                self.qp_error[first..first + Qp::COUNT].fill(false);
                (Status::Success, None)
            }
            _ => self.execute(&op),
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
        self.cq.pop_front()
    }

    fn poll_recv(&mut self) -> Option<Recv> {
        self.shared.procs[self.id.index()]
            .recv
            .lock()
            .expect("recv lock")
            .pop_front()
    }
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
    /// Wall-clock duration.
    pub elapsed: Duration,
    /// Why it ended.
    pub stop: LocalStop,
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
                qp_error: vec![false; n * Qp::COUNT],
            };
            groups[i % k].push((i, p, nic));
        }
        let started = Instant::now();
        let deadline = started + limit;
        let mut finished: Vec<(usize, P)> = std::thread::scope(|scope| {
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
        finished.sort_by_key(|(i, _)| *i);
        let stop = if shared.not_done.load(Ordering::SeqCst) == 0 {
            LocalStop::AllDone
        } else if Instant::now() >= deadline {
            LocalStop::TimeLimit
        } else {
            LocalStop::Stopped
        };
        LocalRun {
            processes: finished.into_iter().map(|(_, p)| p).collect(),
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
) -> Vec<(usize, P)> {
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
            if !crashed {
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
    group.into_iter().map(|(i, p, _)| (i, p)).collect()
}
