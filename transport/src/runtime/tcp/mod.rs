//! The `tcp` runtime: every process a node of its own, RDMA semantics carried over TCP.
//!
//! A node is one process with its registered regions, a protocol thread that busy-polls it (as on
//! `local`), and a NIC thread (`engine.rs`) that owns the node's sockets: it sends the ops the
//! process posts and applies the ops peers send to the node's memory, with the bounds and access
//! checks, completions, per-queue-pair FIFO and queue-pair errors of the model. The same node
//! runs in its own OS process ([`run_node`], what `harness node` calls, one per host or per core)
//! or as threads of one test process ([`TcpRuntime`], every node still talking TCP over
//! loopback), so the conformance suite checks the very code a cluster runs.
//!
//! Why plain threads and mio rather than tokio: the protocol side must busy-poll memory without
//! an executor in the way, and the NIC side is one readiness loop over a few dozen sockets; an
//! async runtime would add a scheduler between the two and buy nothing.
//!
//! # Bootstrap
//! Every node knows the cluster (each node's address, in process-id order) and the run's region
//! table (every node builds the same deployment). Each node connects to every node, itself
//! included, once per queue pair; the handshake ([`wire`]) checks magic and version, that both
//! ends run the same deployment (a digest of the region table, and each side's own region
//! lengths: the region exchange), and that both hold the cluster secret ([`Secret`]: HMAC-SHA256
//! challenge-response both ways; one proven connection per peer and queue pair). A
//! node starts its process once every connection it initiates is up, or its peer was given up
//! on after [`TcpConfig::connect_timeout`] (then ops to that peer fail `PeerUnreachable`, as
//! to a crashed one). A peer given up that way and coming up later is refused when it
//! connects, until this node's process reconnects to it: as with one queue pair's two ends, it
//! finds the link broken too, instead of waiting on a node that counts it as crashed.
//!
//! # Crashes
//! A node that dies (`kill -9`, or [`TcpControl::crash`] in one process) closes its sockets with
//! it; its peers complete everything outstanding towards it, and everything posted later, with
//! `PeerUnreachable`. A stopped process (`SIGSTOP`) keeps its connections: its peers' ops wait in
//! the socket buffers and land when it resumes, which is how a false suspicion looks on real
//! hardware too. A connection lost while its peer may live (closed for a reason, a peer given
//! up below) is dialled again when the process reconnects to that peer ([`Nic::reconnect`]),
//! with a backoff from 20 ms doubling to 1 s until [`TcpConfig::connect_timeout`], as a new
//! queue-pair epoch ([`crate::queue_pair`]); ops posted after the reconnect wait for it, and
//! ops still waiting when another reconnect comes are flushed by it. The link is back once the
//! peer has admitted the new connection (it answers a reconnect request sent behind the proof):
//! a peer that still holds the old one refuses a second claimant, which is one failed attempt,
//! so no old-epoch write can land after the reconnect completes. A peer that refuses the
//! re-dial's TCP connection has no listener, so its node is gone: the reconnect completes
//! `PeerUnreachable` (as on verbs, when the peer does not answer the reconnection), and so do
//! later ops, as after a crash.
//!
//! Delays, losses and partitions between nodes come from a userspace fault layer
//! in the NIC thread ([`faults`], [`TcpConfig::faults`]): it holds sends back, in order, as a
//! reliable connection's retransmissions would.
//!
//! # Departures from RDMA, by necessity
//! - Time is each node's own monotonic clock from the moment its bootstrap finished; nodes do
//!   not share a clock (protocols only compare their own times).
//! - [`Nic::take_changes`] says "anything may have changed" (the default): the NIC thread writes
//!   memory behind the process's back, exactly as a NIC does.
//! - A node's queue towards a peer that stopped reading grows up to [`Bounds::requests`]; past
//!   that, once the peer has taken nothing for [`Bounds::stall`], the peer is given up, as a
//!   queue pair breaks when its retries run out (RDMA would also fail posts to a full send
//!   queue; the model has no such error). A peer flooding requests is not read while its
//!   responses back up ([`Bounds::responses`]).

#![allow(
    clippy::disallowed_methods,
    reason = "the tcp runtime is where real time, sockets and threads enter"
)]

mod auth;
mod buffers;
mod engine;
pub mod peer;
pub use auth::{nonce, Secret, MIN_SECRET};
pub mod faults;
pub mod wire;

use crate::nic::{validate, Completion, Nic, NicLimits, Op, OpError, Recv, WrId};
use crate::process::{Process, ProcessId};
use crate::region::{LocalAddr, RegionSpec, RegionTable};
use crate::rng::{Purpose, Rng};
use crate::runtime::shared_memory::{shared_local_memory, Recycled, SharedMemory, SharedRegion};
use crate::time::Nanos;
use std::collections::VecDeque;
use std::fmt;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Configuration of a tcp node (the same on every node of a run).
#[derive(Clone, Debug)]
pub struct TcpConfig {
    /// Seeds the processes' random streams.
    pub seed: u64,
    /// NIC limits reported to processes (`send_max` at most [`wire::CHUNK`]).
    pub limits: NicLimits,
    /// How long a node tries to reach a peer before it treats it as crashed.
    pub connect_timeout: Duration,
    /// Consecutive idle polls before the protocol thread parks (the first 256 spin,
    /// the rest yield the core). The default, 2,000 (a millisecond or two of yielding), is what
    /// `harness bench transport --runtime tcp --qperf` measured best on a 2-core host, four
    /// rounds side by side: 1 MB bandwidth 0.69-0.82 of qperf's against 0.54-0.63 at 20,000
    /// (a protocol thread yielding for 10-20 ms after each op took the core from the NIC
    /// thread copying the next megabyte) and 1 MB latency 0.67-1.39 against 0.67-1.72; fewer
    /// (200) park so soon that a 64 B round trip pays two wake-ups (1.4-1.6x qperf's).
    pub spin_polls: u32,
    /// The cluster secret: only nodes that hold it may connect (HMAC-SHA256
    /// challenge-response both ways). There is no unauthenticated mode: the default is a fresh
    /// random secret, which the in-process runtime's nodes share.
    pub secret: Secret,
    /// Print connection events (closed connections and why) to stderr as they happen.
    pub verbose: bool,
    /// Start the process at this wall-clock time (after the bootstrap) and count its clock
    /// from it, so the nodes of a run on one host (or on NTP-synchronised hosts) share time
    /// zero and start together. A node whose bootstrap ends later starts at once, its clock
    /// already past zero. `None`: each node's clock starts when its bootstrap ends.
    pub start_at: Option<std::time::SystemTime>,
    /// Network faults between the nodes ([`faults`]), timed from the node's time zero.
    pub faults: Vec<faults::LinkFault>,
    /// What a node holds for its peers at most ([`Bounds`]).
    pub bounds: Bounds,
}

/// What a node holds for its peers at most, and how long it waits for them: a peer that stops
/// reading, floods requests, or opens connections and never finishes them costs bounded memory
/// and time, never the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Unsent response bytes on one connection above which the node stops reading that peer's
    /// requests until they drain (backpressure: the peer's requests wait in its own socket).
    pub responses: usize,
    /// Unsent request bytes towards one peer's queue pair above which the node gives the peer
    /// up (its ops fail `PeerUnreachable`) once the peer has also taken no byte for
    /// [`Bounds::stall`], as an RDMA queue pair breaks once its retry budget is spent on a peer
    /// that does not acknowledge. A peer that keeps reading is never given up, however far
    /// ahead its initiator posts (a stream of 8 MiB writes 128 deep is 1 GiB ahead).
    pub requests: usize,
    /// How long a peer past [`Bounds::requests`] may take no byte before it is given up.
    /// Long: a paused peer resumes long before.
    pub stall: Duration,
    /// Connections from peers open at once (proven or not); more are closed at accept.
    pub connections: usize,
    /// Connections from peers still in their handshake at once; a newer one closes the oldest.
    pub handshakes: usize,
    /// From accept (or connect) to a proven connection.
    pub handshake: Duration,
    /// How long a frame may stay half received.
    pub frame: Duration,
    /// How far in the future [`TcpConfig::start_at`] may lie.
    pub start_wait: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            responses: 4 << 20,
            requests: 256 << 20,
            stall: Duration::from_secs(10),
            connections: 4096,
            handshakes: 64,
            handshake: Duration::from_secs(5),
            frame: Duration::from_secs(30),
            start_wait: Duration::from_secs(600),
        }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            seed: 0,
            limits: NicLimits::default(),
            connect_timeout: Duration::from_secs(10),
            spin_polls: 2_000,
            secret: Secret::random(),
            verbose: false,
            start_at: None,
            faults: Vec::new(),
            bounds: Bounds::default(),
        }
    }
}

/// What a node's two threads share.
#[derive(Debug)]
struct NodeShared {
    me: ProcessId,
    regions: Vec<SharedRegion>,
    table: RegionTable,
    table_digest: u64,
    limits: NicLimits,
    outbox: Mutex<Vec<(WrId, Op)>>,
    cq: Mutex<VecDeque<Completion>>,
    rq: Mutex<VecDeque<Recv>>,
    /// Set by the NIC thread when it gives the process something; read before it parks.
    pending: AtomicBool,
    proc_sleeping: AtomicBool,
    proc_thread: OnceLock<Thread>,
    nic_sleeping: AtomicBool,
    waker: OnceLock<mio::Waker>,
    /// The node stops (crash, or the end of the run).
    stop: AtomicBool,
    /// The node crashed (or its process stopped itself): its posts fail.
    crashed: AtomicBool,
    /// Every link is up or given up on: the process may start.
    ready: AtomicBool,
    ready_signal: (Mutex<bool>, Condvar),
    /// The node's time zero, once its process starts (the fault layer times faults from it).
    zero: OnceLock<Instant>,
    events: Mutex<Vec<String>>,
    /// Links given up on, and why (also among `events`).
    given_up: Mutex<Vec<(ProcessId, String)>>,
    verbose: bool,
}

impl NodeShared {
    fn own_region_lens(&self) -> Vec<u64> {
        self.region_lens(self.me)
    }

    fn region_lens(&self, p: ProcessId) -> Vec<u64> {
        (0..)
            .map_while(|r| self.table.len_of(p, crate::RegionId(r)))
            .map(|l| l as u64)
            .collect()
    }

    /// Own region `region` if `len` bytes at `offset` lie inside it (and, for atomics, the
    /// offset is aligned); a peer that asks for anything else is hostile or broken.
    fn checked(
        &self,
        peer: ProcessId,
        region: u16,
        offset: u64,
        len: usize,
        atomic: bool,
    ) -> Result<&SharedRegion, String> {
        let id = crate::RegionId(region);
        let Some(size) = self.table.len_of(self.me, id) else {
            return Err(format!(
                "{peer} named region {id}, which this node does not have"
            ));
        };
        let inside = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(len))
            .is_some_and(|end| end <= size);
        if !inside {
            return Err(format!(
                "{peer} asked for bytes {offset}..+{len} of {id}, a region of {size} bytes"
            ));
        }
        if atomic && offset % 8 != 0 {
            return Err(format!(
                "{peer} sent an atomic at unaligned offset {offset}"
            ));
        }
        Ok(&self.regions[id.index()])
    }

    fn outbox_is_empty(&self) -> bool {
        self.outbox.lock().expect("outbox lock").is_empty()
    }

    fn take_outbox(&self) -> Vec<(WrId, Op)> {
        std::mem::take(&mut *self.outbox.lock().expect("outbox lock"))
    }

    fn complete(&self, c: Completion) {
        self.cq.lock().expect("cq lock").push_back(c);
        self.notify();
    }

    fn deliver(&self, r: Recv) {
        self.rq.lock().expect("rq lock").push_back(r);
    }

    /// Tells the protocol thread there is something new.
    fn notify(&self) {
        self.pending.store(true, Ordering::SeqCst);
        if self.proc_sleeping.load(Ordering::SeqCst) {
            if let Some(t) = self.proc_thread.get() {
                t.unpark();
            }
        }
    }

    fn wake_nic(&self) {
        if self.nic_sleeping.load(Ordering::SeqCst) {
            if let Some(w) = self.waker.get() {
                let _ = w.wake();
            }
        }
    }

    fn set_ready(&self) {
        self.ready.store(true, Ordering::SeqCst);
        let (m, cv) = &self.ready_signal;
        *m.lock().expect("ready lock") = true;
        cv.notify_all();
    }

    fn log(&self, event: String) {
        if self.verbose {
            eprintln!("tcp: {event}");
        }
        self.events.lock().expect("events lock").push(event);
    }

    /// The node crashes: its posts fail from now on, and it stops.
    fn crash(&self) {
        self.crashed.store(true, Ordering::SeqCst);
        self.stop();
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(w) = self.waker.get() {
            let _ = w.wake();
        }
        self.set_ready();
        if let Some(t) = self.proc_thread.get() {
            t.unpark();
        }
    }
}

/// The NIC a process of the tcp runtime polls with.
pub struct TcpNic {
    shared: Arc<NodeShared>,
    rng: Rng,
    next_wr: u64,
    start: Instant,
    /// Ops were posted since the NIC thread was last woken: the protocol thread rings the
    /// doorbell once after its poll, so a burst of posts costs one wake-up, not one each.
    doorbell: bool,
    /// Buffers [`Nic::read_data`] copies into, recycled.
    recycled: Recycled,
}

impl fmt::Debug for TcpNic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpNic")
            .field("id", &self.shared.me)
            .finish_non_exhaustive()
    }
}

impl SharedMemory for TcpNic {
    fn check(
        &self,
        at: LocalAddr,
        len: usize,
    ) -> Result<&crate::runtime::shared_memory::Words, OpError> {
        let me = self.shared.me;
        crate::nic::check_bounds(&self.shared.table, me, at.region, at.offset, len)?;
        Ok(&self.shared.regions[at.region.index()])
    }
}

impl Nic for TcpNic {
    fn id(&self) -> ProcessId {
        self.shared.me
    }

    fn regions(&self) -> &RegionTable {
        &self.shared.table
    }

    fn now(&self) -> Nanos {
        Nanos(self.start.elapsed().as_nanos() as u64)
    }

    fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    fn limits(&self) -> NicLimits {
        self.shared.limits
    }

    shared_local_memory!();

    fn post(&mut self, op: Op) -> Result<WrId, OpError> {
        validate(&op, self.shared.me, &self.shared.table, &self.shared.limits)?;
        if self.shared.crashed.load(Ordering::Relaxed) {
            return Err(OpError::Crashed);
        }
        let wr = WrId(self.next_wr);
        self.next_wr += 1;
        if let Some((region, peer, access)) = op.access_change() {
            // Takes the lock the NIC thread holds while it applies a peer's op: once this
            // returns, no later op of `peer` sees the old access.
            let r = &self.shared.regions[region.index()];
            *r.access[peer.index()].lock().expect("access lock") = access;
            return Ok(wr);
        }
        self.shared
            .outbox
            .lock()
            .expect("outbox lock")
            .push((wr, op));
        self.doorbell = true;
        Ok(wr)
    }

    fn poll_completion(&mut self) -> Option<Completion> {
        self.shared.cq.lock().expect("cq lock").pop_front()
    }

    fn poll_recv(&mut self) -> Option<Recv> {
        self.shared.rq.lock().expect("rq lock").pop_front()
    }
}

/// Why a node's run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpStop {
    /// Every live process of the run reported `done` (in-process runs only).
    AllDone,
    /// The time limit passed.
    TimeLimit,
    /// The node was stopped or crashed ([`TcpControl`]), or its process stopped itself.
    Stopped,
}

/// What one node's run leaves.
#[derive(Debug)]
pub struct NodeRun<P> {
    /// The process as the run left it.
    pub process: P,
    /// Why the run ended.
    pub stop: TcpStop,
    /// Connection events: every closed connection and its reason.
    pub events: Vec<String>,
    /// The peers whose links this node gave up on, once each with the first reason: they did
    /// not answer or kept refusing the handshake until the connect timeout, stopped taking what
    /// it sent, or refused a re-dial. A link the peer closed once the node had started (as a
    /// crashed or finished node does) is among `events` only.
    pub given_up: Vec<(ProcessId, String)>,
    /// The node's clock at the end of the run (from the end of the bootstrap, or from
    /// [`TcpConfig::start_at`]).
    pub elapsed: Duration,
    /// The node's NIC as the run left it: its registered memory stays readable
    /// ([`Nic::read_local`]), so a process's state can be read after the run.
    pub nic: TcpNic,
}

/// Binds the listening socket of a node (use port 0 for any free port).
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr)
}

/// The parts of a node's run that the in-process runtime shares between nodes.
#[derive(Clone, Debug, Default)]
struct Together {
    not_done: Option<Arc<AtomicUsize>>,
    all: Vec<Arc<NodeShared>>,
    signals: Option<Arc<NodeSignals>>,
}

/// Flags between a node and whoever runs it: when the nodes of a run live in different OS
/// processes, only their launcher knows that all are done, and a node that left early would
/// look crashed to the others.
#[derive(Debug, Default)]
pub struct NodeSignals {
    /// Set by the node once its process reports [`Process::done`].
    pub done: AtomicBool,
    /// Set by the runner: the node's process stops now (its NIC keeps serving peers).
    pub stop: AtomicBool,
    /// Set by the node once its process has stopped for `stop`.
    pub stopped: AtomicBool,
    /// Set by the runner once every node has stopped: the node closes its connections and
    /// ends. Without this second step a node that ended first would make its peers, still
    /// polling, see it gone and report a failure that never was.
    pub exit: AtomicBool,
}

struct NodeSpec<'a> {
    cfg: &'a TcpConfig,
    id: ProcessId,
    specs: &'a [Vec<RegionSpec>],
    addrs: Vec<SocketAddr>,
    down: Vec<bool>,
}

fn node_shared(s: &NodeSpec<'_>) -> Arc<NodeShared> {
    let n = s.specs.len();
    let table = RegionTable::new(s.specs);
    assert!(
        s.cfg.limits.send_max <= wire::CHUNK,
        "send_max {} exceeds the tcp runtime's largest message {}",
        s.cfg.limits.send_max,
        wire::CHUNK
    );
    Arc::new(NodeShared {
        me: s.id,
        regions: s.specs[s.id.index()]
            .iter()
            .map(|r| SharedRegion::new(r.len, r.access_table(n)))
            .collect(),
        table_digest: table.digest(),
        table,
        limits: s.cfg.limits,
        outbox: Mutex::new(Vec::new()),
        cq: Mutex::new(VecDeque::new()),
        rq: Mutex::new(VecDeque::new()),
        pending: AtomicBool::new(true),
        proc_sleeping: AtomicBool::new(false),
        proc_thread: OnceLock::new(),
        nic_sleeping: AtomicBool::new(false),
        waker: OnceLock::new(),
        stop: AtomicBool::new(false),
        crashed: AtomicBool::new(false),
        ready: AtomicBool::new(false),
        ready_signal: (Mutex::new(false), Condvar::new()),
        zero: OnceLock::new(),
        events: Mutex::new(Vec::new()),
        given_up: Mutex::new(Vec::new()),
        verbose: s.cfg.verbose,
    })
}

/// Runs one node: its NIC thread and its process, until `limit` after the bootstrap, until the
/// node is stopped, or (in-process) until every process is done.
fn drive<P: Process<TcpNic>>(
    spec: NodeSpec<'_>,
    shared: Arc<NodeShared>,
    listener: TcpListener,
    mut process: P,
    limit: Duration,
    together: &Together,
) -> std::io::Result<NodeRun<P>> {
    let poll = mio::Poll::new()?;
    let waker = mio::Waker::new(poll.registry(), engine::WAKER)?;
    let _ = shared.waker.set(waker);
    let _ = shared.proc_thread.set(std::thread::current());
    let engine = engine::Engine::new(
        shared.clone(),
        poll,
        listener,
        spec.addrs,
        &spec.down,
        spec.cfg,
    )?;
    let id = spec.id;
    let spin_polls = spec.cfg.spin_polls;
    let seed = spec.cfg.seed;
    let start_at = spec.cfg.start_at;
    let start_wait = spec.cfg.bounds.start_wait;
    if let Some(ahead) = start_at.and_then(|t| t.duration_since(std::time::SystemTime::now()).ok())
    {
        if ahead > start_wait {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "the start time is {} s away, more than the {} s a node waits (Bounds::start_wait)",
                    ahead.as_secs(),
                    start_wait.as_secs()
                ),
            ));
        }
    }
    std::thread::scope(|scope| {
        let nic_thread = std::thread::Builder::new()
            .name(format!("tcp-nic-{id}"))
            .spawn_scoped(scope, move || engine.run())?;
        {
            let (m, cv) = &shared.ready_signal;
            let mut ready = m.lock().expect("ready lock");
            while !*ready {
                ready = cv.wait(ready).expect("ready lock");
            }
        }
        let start = match start_at {
            None => Instant::now(),
            Some(t) => {
                if let Ok(ahead) = t.duration_since(std::time::SystemTime::now()) {
                    std::thread::sleep(ahead);
                }
                let behind = std::time::SystemTime::now()
                    .duration_since(t)
                    .unwrap_or_default();
                let now = Instant::now();
                now.checked_sub(behind).unwrap_or(now)
            }
        };
        let _ = shared.zero.set(start);
        let mut nic = TcpNic {
            shared: shared.clone(),
            rng: Rng::derive(seed, Purpose::Protocol, id.0 as u64),
            next_wr: 0,
            doorbell: false,
            start,
            recycled: Recycled::with_spare(),
        };
        let stop = run_process(&mut process, &mut nic, spin_polls, limit, together);
        if let Some(s) = together
            .signals
            .as_ref()
            .filter(|s| s.stop.load(Ordering::SeqCst))
        {
            s.stopped.store(true, Ordering::SeqCst);
            let waited = Instant::now();
            while !s.exit.load(Ordering::SeqCst) && waited.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        shared.stop();
        let _ = nic_thread.join();
        Ok(NodeRun {
            process,
            stop,
            events: shared.events.lock().expect("events lock").clone(),
            given_up: shared.given_up.lock().expect("given-up lock").clone(),
            elapsed: nic.start.elapsed(),
            nic,
        })
    })
}

/// Idle polls the protocol thread spins through before it starts yielding its core.
const PURE_SPINS: u32 = 256;

/// The protocol thread: polls, spins while idle (yielding its core after [`PURE_SPINS`]), then
/// parks until the NIC thread or a timer wakes it.
fn run_process<P: Process<TcpNic>>(
    process: &mut P,
    nic: &mut TcpNic,
    spin_polls: u32,
    limit: Duration,
    together: &Together,
) -> TcpStop {
    let shared = nic.shared.clone();
    let deadline = nic.start + limit;
    let mut idle = 0u32;
    let mut counted = false;
    let mut rounds = 0u64;
    let signals = together.signals.clone();
    loop {
        if signals
            .as_ref()
            .is_some_and(|s| s.stop.load(Ordering::Relaxed))
        {
            break TcpStop::Stopped;
        }
        if shared.stop.load(Ordering::Relaxed) {
            // A crashed node counts as done, as on the other runtimes.
            count_done(together, &mut counted);
            break if together
                .not_done
                .as_ref()
                .is_some_and(|n| n.load(Ordering::SeqCst) == 0)
            {
                TcpStop::AllDone
            } else {
                TcpStop::Stopped
            };
        }
        rounds += 1;
        if rounds % 1024 == 0 && Instant::now() >= deadline {
            break TcpStop::TimeLimit;
        }
        shared.pending.store(false, Ordering::Relaxed);
        let progress = process.poll(nic);
        if std::mem::take(&mut nic.doorbell) {
            shared.wake_nic();
        }
        if process.stopped() {
            shared.crash();
            count_done(together, &mut counted);
            break TcpStop::Stopped;
        }
        if process.done() {
            count_done(together, &mut counted);
            if let Some(s) = &signals {
                s.done.store(true, Ordering::Relaxed);
            }
        }
        if progress.did_work {
            idle = 0;
            continue;
        }
        idle = idle.saturating_add(1);
        if idle < spin_polls {
            // Spin briefly, then offer the core at every idle poll: the NIC threads doing this
            // node's (and, on a small machine, its peers') sends and receives must not wait
            // for a time slice behind a thread with nothing to do.
            if idle < PURE_SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            continue;
        }
        let now = Instant::now();
        if now >= deadline {
            break TcpStop::TimeLimit;
        }
        let now_ns = nic.now();
        // An idle node still looks at its runner's flags now and then.
        let progress = if signals.is_some() {
            progress.wake_at(Some(now_ns + Nanos(10_000_000)))
        } else {
            progress
        };
        if progress.wake_at.is_some_and(|w| w <= now_ns) {
            continue;
        }
        shared.proc_sleeping.store(true, Ordering::SeqCst);
        if !shared.pending.load(Ordering::SeqCst) && !shared.stop.load(Ordering::SeqCst) {
            let mut timeout = deadline.saturating_duration_since(now);
            if let Some(w) = progress.wake_at {
                timeout = timeout.min(Duration::from_nanos(w.0 - now_ns.0));
            }
            std::thread::park_timeout(timeout);
        }
        shared.proc_sleeping.store(false, Ordering::SeqCst);
        idle = spin_polls / 2;
    }
}

fn count_done(together: &Together, counted: &mut bool) {
    if std::mem::replace(counted, true) {
        return;
    }
    if let Some(n) = &together.not_done {
        if n.fetch_sub(1, Ordering::SeqCst) == 1 {
            for s in &together.all {
                s.stop();
            }
        }
    }
}

/// Runs node `id` of a cluster in this OS process: `addrs[i]` is node `i`'s address, `specs[i]`
/// its regions (every node computes the same list from the same deployment), `listener` this
/// node's bound socket. Returns when its clock reads `limit`, when the process stops itself,
/// or when `signals` say stop.
#[allow(
    clippy::too_many_arguments,
    reason = "a node's whole setup, each named at the call"
)]
pub fn run_node<P: Process<TcpNic>>(
    cfg: &TcpConfig,
    id: ProcessId,
    specs: &[Vec<RegionSpec>],
    addrs: Vec<SocketAddr>,
    listener: TcpListener,
    process: P,
    limit: Duration,
    signals: Option<Arc<NodeSignals>>,
) -> std::io::Result<NodeRun<P>> {
    assert_eq!(specs.len(), addrs.len(), "one address per node");
    let spec = NodeSpec {
        cfg,
        id,
        specs,
        down: vec![false; addrs.len()],
        addrs,
    };
    let shared = node_shared(&spec);
    let together = Together {
        signals,
        ..Together::default()
    };
    drive(spec, shared, listener, process, limit, &together)
}

/// A handle to an in-process tcp run, usable from any thread.
#[derive(Clone, Debug)]
pub struct TcpControl {
    nodes: Arc<Vec<Arc<NodeShared>>>,
    crashed_early: Arc<Mutex<Vec<bool>>>,
}

impl TcpControl {
    /// Crashes node `p`: it stops polling and closes its sockets, so peers see it gone. Before
    /// the run starts, the node never starts.
    pub fn crash(&self, p: ProcessId) {
        if let Some(n) = self.nodes.get(p.index()) {
            self.crashed_early.lock().expect("crash lock")[p.index()] = true;
            n.crash();
        }
    }

    /// Stops every node.
    pub fn stop(&self) {
        for n in self.nodes.iter() {
            n.stop();
        }
    }
}

/// The result of an in-process tcp run.
#[derive(Debug)]
pub struct TcpRun<P> {
    /// The processes, in id order, as the run left them.
    pub processes: Vec<P>,
    /// Why each node's run ended.
    pub stops: Vec<TcpStop>,
    /// Every node's connection events, in id order.
    pub events: Vec<Vec<String>>,
}

/// Every node of a run as threads of this OS process, each with its own sockets on loopback:
/// the tcp runtime's code paths, without spawning processes (tests, the conformance suite).
pub struct TcpRuntime<P> {
    cfg: TcpConfig,
    processes: Vec<P>,
    specs: Vec<Vec<RegionSpec>>,
    listeners: Vec<TcpListener>,
    addrs: Vec<SocketAddr>,
    control: TcpControl,
}

impl<P> fmt::Debug for TcpRuntime<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpRuntime")
            .field("cfg", &self.cfg)
            .field("addrs", &self.addrs)
            .finish_non_exhaustive()
    }
}

impl<P: Process<TcpNic> + Send> TcpRuntime<P> {
    /// Sets up one node per process (process `i` is `ProcessId(i)`), listening on free loopback
    /// ports.
    pub fn new(cfg: TcpConfig, processes: Vec<P>) -> std::io::Result<TcpRuntime<P>> {
        let specs: Vec<_> = processes.iter().map(|p| p.regions()).collect();
        let listeners = (0..processes.len())
            .map(|_| listen(SocketAddr::from(([127, 0, 0, 1], 0))))
            .collect::<std::io::Result<Vec<_>>>()?;
        let addrs = listeners
            .iter()
            .map(TcpListener::local_addr)
            .collect::<std::io::Result<Vec<_>>>()?;
        let n = processes.len();
        let nodes = (0..n)
            .map(|i| {
                node_shared(&NodeSpec {
                    cfg: &cfg,
                    id: ProcessId(i as u32),
                    specs: &specs,
                    addrs: addrs.clone(),
                    down: vec![false; n],
                })
            })
            .collect();
        Ok(TcpRuntime {
            cfg,
            processes,
            specs,
            listeners,
            addrs,
            control: TcpControl {
                nodes: Arc::new(nodes),
                crashed_early: Arc::new(Mutex::new(vec![false; n])),
            },
        })
    }

    /// The nodes' addresses, in id order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// A handle to crash nodes or stop the run.
    pub fn control(&self) -> TcpControl {
        self.control.clone()
    }

    /// Runs every node until all processes are done, `limit` passes, or the run is stopped.
    pub fn run(self, limit: Duration) -> TcpRun<P> {
        let TcpRuntime {
            cfg,
            processes,
            specs,
            listeners,
            addrs,
            control,
        } = self;
        let n = processes.len();
        let early = control.crashed_early.lock().expect("crash lock").clone();
        let together = Together {
            not_done: Some(Arc::new(AtomicUsize::new(
                early.iter().filter(|&&c| !c).count(),
            ))),
            all: control.nodes.to_vec(),
            signals: None,
        };
        let results: Vec<(P, TcpStop, Vec<String>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = processes
                .into_iter()
                .zip(listeners)
                .enumerate()
                .map(|(i, (p, listener))| {
                    let (cfg, specs, addrs) = (&cfg, &specs, addrs.clone());
                    let (together, shared) = (&together, control.nodes[i].clone());
                    let down = early.clone();
                    scope.spawn(move || {
                        if down[i] {
                            drop(listener);
                            return (p, TcpStop::Stopped, Vec::new());
                        }
                        let spec = NodeSpec {
                            cfg,
                            id: ProcessId(i as u32),
                            specs,
                            addrs,
                            down,
                        };
                        let run = drive(spec, shared, listener, p, limit, together)
                            .expect("a node of an in-process run failed to start");
                        (run.process, run.stop, run.events)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a tcp node thread panicked"))
                .collect()
        });
        let mut run = TcpRun {
            processes: Vec::with_capacity(n),
            stops: Vec::with_capacity(n),
            events: Vec::with_capacity(n),
        };
        for (p, stop, events) in results {
            run.processes.push(p);
            run.stops.push(stop);
            run.events.push(events);
        }
        run
    }
}

#[cfg(test)]
mod tests;
