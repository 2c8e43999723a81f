//! One test per item of the expert review of the verbs runtime (issue 48, findings 3 and 6-8),
//! each on the fake fabric ([`verbs::fake`]) and each asserting what the runtime promises
//! (writes complete, a run is refused with a message that says why), not how the fix does it.
//! Every test was seen to fail with its fix undone by hand (the report of the change lists the
//! patches and the failures).

use std::marker::PhantomData;
use std::net::{SocketAddr, TcpListener};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use transport::conformance::{
    atomics_reads_sends_and_immediates, writes_land_in_post_order, Runner,
};
use transport::runtime::tcp::Secret;
use transport::{
    Access, Nanos, Nic, Process, ProcessId, Progress, RegionId, RegionSpec, RemoteAddr, Status,
    WriteFlags,
};
use verbs::device::DeviceError;
use verbs::fake::{caps, DeviceSel, Fabric, FakeConfig, FakeCtx, FakeDevice, TransitionKind};
use verbs::provider::{DeviceCaps, GidKind};
use verbs::rdma::{run_node, NodeSpec, VerbsConfig, VerbsNic, VerbsRuntime};
use verbs::DeviceChoice;

/// A process of these runs: at its first poll it writes `len` bytes (signalled) into region 0
/// of every other process, at offset `len` x its id so no two writers overlap, and it is done
/// once every write has completed. With `len` 0 it posts nothing and is never done: an idle
/// node.
#[derive(Clone, Debug)]
struct Writer {
    /// Bytes written to each peer.
    len: usize,
    /// Bytes of the region it exposes.
    region: usize,
    started: bool,
    posted: usize,
    /// How each write ended, in completion order.
    statuses: Vec<Status>,
}

impl Writer {
    /// A writer of `len` bytes to each of the other `n - 1` processes, with a region that
    /// holds every peer's write.
    fn new(len: usize, n: usize) -> Writer {
        Writer {
            len,
            region: (len * n).max(64),
            started: false,
            posted: 0,
            statuses: Vec::new(),
        }
    }

    /// `n` writers of `len` bytes each.
    fn all(len: usize, n: usize) -> Vec<Writer> {
        vec![Writer::new(len, n); n]
    }

    /// The region it declares, without naming a NIC type (`run_node` needs every process's).
    fn spec(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(self.region).with_default(Access::Write)]
    }

    /// Panics unless all `n - 1` writes of every writer completed `Success`.
    fn assert_all_succeeded(writers: &[Writer]) {
        let n = writers.len();
        for (p, w) in writers.iter().enumerate() {
            assert_eq!(
                w.statuses,
                vec![Status::Success; n - 1],
                "process {p}: its writes ended so"
            );
        }
    }
}

impl<N: Nic> Process<N> for Writer {
    fn regions(&self) -> Vec<RegionSpec> {
        self.spec()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut worked = false;
        while let Some(c) = nic.poll_completion() {
            self.statuses.push(c.status);
            worked = true;
        }
        if !self.started && self.len > 0 {
            self.started = true;
            let me = nic.id();
            let data: Vec<u8> = (0..self.len).map(|i| (i as u8) ^ (me.0 as u8)).collect();
            let peers = (0..nic.processes() as u32).map(ProcessId);
            for p in peers.filter(|&p| p != me) {
                let at = RemoteAddr::new(p, RegionId(0), me.index() * self.len);
                nic.post_write(at, &data, WriteFlags::NONE.signaled())
                    .expect("a write inside the peer's region");
                self.posted += 1;
            }
            worked = true;
        }
        Progress::worked(worked)
    }

    fn done(&self) -> bool {
        self.started && self.statuses.len() == self.posted
    }
}

/// A fabric configuration with one device `fake0` of limits `caps` (real clock).
fn one_device(caps: DeviceCaps) -> FakeConfig {
    FakeConfig {
        devices: vec![FakeDevice::new("fake0", caps)],
        ..FakeConfig::default()
    }
}

/// rxe's limits changed by `f`.
fn rxe_with(f: impl FnOnce(&mut DeviceCaps)) -> DeviceCaps {
    let mut c = caps::rxe();
    f(&mut c);
    c
}

/// A device's limits as a type: a conformance [`Runner`] is a type with no value to carry
/// them in.
trait Limits {
    /// The limits.
    fn caps() -> DeviceCaps;
}

/// Runs conformance checks on a fabric whose one device has `L`'s limits, at the default
/// settings (what the findings say the runtime assumed of every device).
struct OnDevice<L>(PhantomData<L>);

impl<L: Limits> Runner for OnDevice<L> {
    type Nic = VerbsNic<FakeCtx>;
    fn run<P: Process<Self::Nic> + Send>(
        procs: Vec<P>,
        crash: Option<(ProcessId, Nanos)>,
    ) -> Vec<P> {
        let fabric = Fabric::new(one_device(L::caps()));
        let rt = VerbsRuntime::new(fabric, VerbsConfig::default(), procs)
            .expect("the device holds the run");
        if let Some((p, _)) = crash {
            rt.control().crash(p);
        }
        rt.run(Duration::from_secs(20)).processes
    }
}

/// rxe with 4 reads and atomics in flight, each way.
struct FourRdAtomics;
impl Limits for FourRdAtomics {
    fn caps() -> DeviceCaps {
        rxe_with(|c| (c.max_qp_rd_atom, c.max_qp_init_rd_atom) = (4, 4))
    }
}

/// rxe with 1000 completion-queue entries: two nodes at the default depths need
/// 2 x 2 x (256 + 16) + 64 = 1152.
struct SmallCq;
impl Limits for SmallCq {
    fn caps() -> DeviceCaps {
        rxe_with(|c| c.max_cqe = 1000)
    }
}

/// ConnectX-5 reporting `IBV_ATOMIC_NONE`.
struct AtomicNone;
impl Limits for AtomicNone {
    fn caps() -> DeviceCaps {
        caps::connectx5_atomic_none()
    }
}

/// rxe whose queues hold 128 work requests, half the default send depth.
struct ShallowQueues;
impl Limits for ShallowQueues {
    fn caps() -> DeviceCaps {
        rxe_with(|c| c.max_qp_wr = 128)
    }
}

/// Every panic message of this test binary so far (node threads' too): a node that does not
/// start panics on its own thread, and the run's own panic carries only "a verbs node thread
/// panicked", so the reason is taken where it is raised.
fn panic_log() -> &'static Mutex<Vec<String>> {
    static LOG: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic_log()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(msg);
            previous(info);
        }));
        Mutex::new(Vec::new())
    })
}

/// Why a run of `procs` with `cfg` on `fabric` fails: the error of [`VerbsRuntime::new`]
/// when it refuses the run, else the panic messages raised while it runs (other tests'
/// panics may be among them; callers look for their own words).
///
/// # Panics
/// When the run starts and ends without failing.
fn failure_of(fabric: Fabric, cfg: VerbsConfig, procs: Vec<Writer>) -> String {
    let log = panic_log();
    let seen = log.lock().unwrap_or_else(|e| e.into_inner()).len();
    let rt = match VerbsRuntime::new(fabric, cfg, procs) {
        Err(e) => return format!("VerbsRuntime::new: {e}"),
        Ok(rt) => rt,
    };
    let ran = catch_unwind(AssertUnwindSafe(|| rt.run(Duration::from_secs(5))));
    assert!(ran.is_err(), "the run started and ended without failing");
    log.lock().unwrap_or_else(|e| e.into_inner())[seen..].join("\n")
}

/// Runs `procs[i]` as node `i` of a run across "hosts" (`run_node` on its own thread, over
/// loopback TCP), node `i` with `cfgs[i]`, every node for `limit`.
fn run_nodes(
    fabric: &Fabric,
    cfgs: &[VerbsConfig],
    procs: Vec<Writer>,
    limit: Duration,
) -> Vec<Result<Writer, String>> {
    let specs: Vec<Vec<RegionSpec>> = procs.iter().map(Writer::spec).collect();
    let listeners: Vec<TcpListener> = procs
        .iter()
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a loopback port"))
        .collect();
    let addrs: Vec<SocketAddr> = listeners
        .iter()
        .map(|l| l.local_addr().expect("a bound address"))
        .collect();
    let secret = Secret::new([7u8; 32].to_vec()).expect("32 bytes");
    std::thread::scope(|s| {
        let handles: Vec<_> = procs
            .into_iter()
            .zip(&listeners)
            .zip(cfgs)
            .enumerate()
            .map(|(i, ((p, l), cfg))| {
                let (specs, addrs, secret) = (&specs, &addrs, &secret);
                let node = NodeSpec {
                    cfg,
                    me: ProcessId(i as u32),
                    specs,
                    listener: l,
                    addrs,
                    secret,
                    limit,
                    signals: None,
                };
                s.spawn(move || run_node(fabric, node, p))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a node thread panicked"))
            .collect()
    })
}

/// The processes of nodes that all ran.
///
/// # Panics
/// With the error of the first node that did not.
fn ran(ends: Vec<Result<Writer, String>>) -> Vec<Writer> {
    let ends = ends.into_iter().enumerate();
    ends.map(|(i, r)| r.unwrap_or_else(|e| panic!("node {i} did not run: {e}")))
        .collect()
}

/// Settings naming device `name`.
fn on(name: &str) -> VerbsConfig {
    VerbsConfig {
        device: DeviceChoice {
            name: Some(name.to_string()),
            ..DeviceChoice::default()
        },
        ..VerbsConfig::default()
    }
}

/// Finding 3: a node slow to move its queue pairs to RTR must not make its peers' first ops
/// fail. Without a start barrier the others post at once, their packets meet queue pairs still
/// in INIT and are dropped, and their retries (about 134 ms at the default ACK timeout) run out
/// long before the 300 ms the slow node takes. Both ways of running nodes bootstrap on their
/// own, so both are run: every node a thread of one runtime, and every node a `run_node` (the
/// deployment across hosts).
#[test]
fn nodes_reach_each_other_although_one_is_slow_to_rtr() {
    let delay = Duration::from_millis(300);
    let fabric = Fabric::new(FakeConfig::default());
    // Open 0 is `VerbsRuntime::new`'s look at the device, so open 1 is the first node's;
    // which node that is does not matter, as all three do the same.
    fabric.delay_modify(DeviceSel::NthOpen(1), TransitionKind::Rtr, delay);
    let rt = VerbsRuntime::new(fabric, VerbsConfig::default(), Writer::all(64, 3))
        .expect("the device holds the run");
    Writer::assert_all_succeeded(&rt.run(Duration::from_secs(10)).processes);

    // `run_node` opens the device twice per node, in an order the threads decide: the delay
    // goes to the first RTR on the device, whichever node makes it.
    let fabric = Fabric::new(FakeConfig::default());
    let fake0 = DeviceSel::Name("fake0".to_string());
    fabric.delay_modify(fake0, TransitionKind::Rtr, delay);
    let cfgs = vec![VerbsConfig::default(); 3];
    let ends = run_nodes(&fabric, &cfgs, Writer::all(64, 3), Duration::from_secs(1));
    Writer::assert_all_succeeded(&ran(ends));
}

/// Finding 6: reads and atomics in flight follow the device's `max_qp_rd_atom` and
/// `max_qp_init_rd_atom` (here 4) instead of a fixed 16 the device refuses.
#[test]
fn read_atomic_depth_follows_the_device() {
    atomics_reads_sends_and_immediates::<OnDevice<FourRdAtomics>>();
}

/// Finding 6: a run whose queues need more completion-queue entries than `max_cqe` runs with
/// shallower send queues; one that cannot fit even 16-deep send queues is refused with a
/// message naming `max_cqe` and the fix.
#[test]
fn a_run_larger_than_the_completion_queue_fits_or_is_refused_clearly() {
    writes_land_in_post_order::<OnDevice<SmallCq>>();
    // Two nodes of 16 sends and 16 receives per queue pair need 2 x 2 x 32 + 64 = 192.
    let fabric = Fabric::new(one_device(rxe_with(|c| c.max_cqe = 150)));
    let why = failure_of(fabric, VerbsConfig::default(), Writer::all(64, 2));
    // The limit and what to do about it, not a bare EINVAL from `ibv_create_cq`.
    assert!(
        why.contains("max_cqe") && why.contains("fewer nodes"),
        "the failure does not name max_cqe and the fix: {why}"
    );
}

/// Finding 6: a device reporting `IBV_ATOMIC_NONE` returns atomics' old values big-endian;
/// the process must still see them in host order.
#[test]
fn atomics_on_a_device_without_host_order_atomics() {
    atomics_reads_sends_and_immediates::<OnDevice<AtomicNone>>();
}

/// Finding 6: a send depth over the device's `max_qp_wr` is fitted to it, not refused by
/// `ibv_create_qp`.
#[test]
fn depth_over_max_qp_wr_fits() {
    writes_land_in_post_order::<OnDevice<ShallowQueues>>();
}

/// Finding 7: a run that needs more locked memory than `RLIMIT_MEMLOCK` allows is refused
/// before anything is registered, with the numbers and the fix, instead of failing part-way
/// through a node's setup with a bare `ENOMEM`.
#[test]
fn locked_memory_is_checked_before_registering() {
    let fabric = Fabric::new(FakeConfig {
        memlock: Some(8 << 20),
        ..FakeConfig::default()
    });
    // Three nodes at the default rings pin about 15 MiB.
    let refused = VerbsRuntime::new(fabric.clone(), VerbsConfig::default(), Writer::all(64, 3));
    let Err(e) = refused else {
        panic!("a run over RLIMIT_MEMLOCK was not refused up front");
    };
    let e = e.to_string();
    assert!(e.contains("RLIMIT_MEMLOCK"), "{e}");
    assert!(e.contains("8.0 MiB"), "the limit in MiB: {e}");
    assert!(e.contains("ulimit -l"), "the fix: {e}");
    assert_eq!(fabric.stats().reg_mr, 0, "registered before refusing");
}

/// Finding 7: a verb that fails reports the errno the library gave it.
#[test]
fn verb_errors_keep_their_errno() {
    let fabric = Fabric::new(FakeConfig::default());
    fabric.fail_next("ibv_create_cq", 12);
    // The node whose CQ fails never says hello: the other gives up soon.
    let cfg = VerbsConfig {
        connect_timeout: Duration::from_millis(500),
        ..VerbsConfig::default()
    };
    let why = failure_of(fabric, cfg, Writer::all(64, 2));
    assert!(why.contains("did not start"), "{why}");
    assert!(why.contains("os error 12"), "the errno is lost: {why}");
}

/// Finding 8: the path MTU of a queue pair is the smaller of both ports': packets of 4096
/// bytes to a port of 1024 are dropped, so a mismatch lets small ops through and makes every
/// large one run out of retries.
#[test]
fn path_mtu_is_the_smaller_of_both_ports() {
    let mut fake1 = FakeDevice::new("fake1", caps::rxe());
    fake1.port.active_mtu = 1024;
    let fabric = Fabric::new(FakeConfig {
        devices: vec![FakeDevice::new("fake0", caps::rxe()), fake1],
        ..FakeConfig::default()
    });
    let cfgs = [on("fake0"), on("fake1")];
    let ends = run_nodes(
        &fabric,
        &cfgs,
        Writer::all(16 << 10, 2),
        Duration::from_secs(1),
    );
    Writer::assert_all_succeeded(&ran(ends));
}

/// Finding 8: both ends of a queue pair must use the same GID family (InfiniBand or RoCE v1
/// against RoCE v2 never meet); a mismatch fails the bootstrap on both nodes with a message
/// naming the families, instead of every op timing out.
#[test]
fn gid_families_must_match() {
    let mut fake0 = FakeDevice::new("fake0", caps::rxe());
    fake0.gids[0].kind = GidKind::IbOrRoceV1;
    let fabric = Fabric::new(FakeConfig {
        devices: vec![fake0, FakeDevice::new("fake1", caps::rxe())],
        ..FakeConfig::default()
    });
    let cfgs = [on("fake0"), on("fake1")];
    let ends = run_nodes(
        &fabric,
        &cfgs,
        Writer::all(64, 2),
        Duration::from_millis(300),
    );
    for (i, end) in ends.into_iter().enumerate() {
        let Err(e) = end else {
            panic!("node {i} ran across GID families");
        };
        assert!(
            e.contains("RoCE v2") && e.contains("RoCE v1"),
            "node {i}: {e}"
        );
    }
}

/// Finding 8: a node with nothing to do sleeps between polls instead of spinning a core
/// (on a machine with fewer cores than nodes, the spinning starves the working ones).
#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "a rate per second of the real time the run took"
)]
fn an_idle_node_does_not_spin() {
    let fabric = Fabric::new(FakeConfig::default());
    let rt = VerbsRuntime::new(fabric.clone(), VerbsConfig::default(), Writer::all(0, 2))
        .expect("the device holds the run");
    let began = Instant::now();
    rt.run(Duration::from_secs(1));
    let secs = began.elapsed().as_secs_f64();
    let per_node = fabric.stats().poll_cq_calls as f64 / 2.0 / secs;
    println!("an idle node polled its completion queue {per_node:.0} times a second");
    assert!(per_node < 20_000.0, "{per_node:.0} polls a second");
}

/// Finding 8: a device that is there but does not open is an error naming it, not the "no
/// device" a test skips on.
#[test]
fn a_named_device_that_will_not_open_is_an_error() {
    let mut fake0 = FakeDevice::new("fake0", caps::rxe());
    fake0.open_error = Some(verbs::fake::EACCES);
    let fabric = Fabric::new(FakeConfig {
        devices: vec![fake0],
        ..FakeConfig::default()
    });
    let choice = DeviceChoice {
        name: Some("fake0".to_string()),
        ..DeviceChoice::default()
    };
    match verbs::rdma::discover_with(&fabric, &choice) {
        Err(DeviceError::Unusable(why)) => assert!(why.contains("fake0"), "{why}"),
        other => panic!("not Unusable: {other:?}"),
    }
}

/// A node of a launched cluster ends at the launcher's barrier, not at its time limit: it
/// says when its process is done, serves its peers (without polling its process) once told to
/// stop, and ends once told to exit, so that a node done early never looks crashed to one
/// still working.
#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the launcher's side of the barrier waits in real time"
)]
fn run_node_ends_at_the_launchers_barrier() {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use transport::runtime::tcp::NodeSignals;
    let fabric = Fabric::new(FakeConfig::default());
    let procs = Writer::all(64, 2);
    let specs: Vec<Vec<RegionSpec>> = procs.iter().map(Writer::spec).collect();
    let listeners: Vec<TcpListener> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a loopback port"))
        .collect();
    let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
    let secret = Secret::new([7u8; 32].to_vec()).expect("32 bytes");
    let signals: Vec<Arc<NodeSignals>> = (0..2).map(|_| Arc::default()).collect();
    let cfg = VerbsConfig::default();
    let ended: Vec<Writer> = std::thread::scope(|s| {
        let nodes: Vec<_> = procs
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let node = NodeSpec {
                    cfg: &cfg,
                    me: ProcessId(i as u32),
                    specs: &specs,
                    listener: &listeners[i],
                    addrs: &addrs,
                    secret: &secret,
                    limit: Duration::from_secs(60),
                    signals: Some(signals[i].clone()),
                };
                let fabric = &fabric;
                s.spawn(move || run_node(fabric, node, p))
            })
            .collect();
        let all = |flag: fn(&NodeSignals) -> bool| {
            let until = Instant::now() + Duration::from_secs(10);
            while !signals.iter().all(|s| flag(s)) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(signals.iter().all(|s| flag(s)));
        };
        all(|s| s.done.load(Ordering::Acquire));
        signals
            .iter()
            .for_each(|s| s.stop.store(true, Ordering::Release));
        all(|s| s.stopped.load(Ordering::Acquire));
        signals
            .iter()
            .for_each(|s| s.exit.store(true, Ordering::Release));
        nodes
            .into_iter()
            .map(|h| h.join().unwrap().unwrap())
            .collect()
    });
    // A node that ignored `stop` would only say `stopped` at its 60 s limit, and one that
    // ignored `exit` would never return: the waits above and the join are the checks.
    Writer::assert_all_succeeded(&ended);
}

/// A run hands back every node's memory, readable after the run as on the simulator and
/// `local` (Heron reads its replicas' objects so): here, what the other writers wrote.
#[test]
fn a_run_hands_back_every_nodes_memory() {
    use transport::runtime::Ended;
    let fabric = Fabric::new(FakeConfig::default());
    let rt = VerbsRuntime::new(fabric, VerbsConfig::default(), Writer::all(64, 3))
        .expect("the device holds the run");
    let run = rt.run(Duration::from_secs(5));
    Writer::assert_all_succeeded(&run.processes);
    for me in 0..3u32 {
        let mut got = vec![0u8; 3 * 64];
        run.nic(ProcessId(me))
            .read_local(transport::LocalAddr::new(RegionId(0), 0), &mut got)
            .unwrap();
        for from in (0..3u32).filter(|&p| p != me) {
            let want: Vec<u8> = (0..64).map(|i| (i as u8) ^ (from as u8)).collect();
            let at = from as usize * 64;
            assert_eq!(
                &got[at..at + 64],
                &want[..],
                "node {me}: node {from}'s write"
            );
        }
        assert!(!run.crashed(ProcessId(me)));
    }
}
