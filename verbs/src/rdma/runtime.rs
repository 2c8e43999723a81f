//! Running nodes: [`VerbsRuntime`], every node of a run as threads of one OS process, and
//! [`run_node`], one node of a run across processes and hosts.

use super::budget::Budget;
use super::device::open_device;
use super::{AccessTimings, NodeMemory, VerbsConfig, VerbsNic};
use crate::control::{Control, Mailboxes, TcpControl};
use crate::device::{DeviceError, DeviceInfo};
use crate::provider::{Context, Provider};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use transport::runtime::tcp::{NodeSignals, Secret};
use transport::{Nic, Process, ProcessId, RegionSpec};

/// The result of an in-process verbs run.
#[derive(Debug)]
pub struct VerbsRun<P> {
    /// The processes, in id order, as the run left them.
    pub processes: Vec<P>,
    /// The device the nodes ran on.
    pub device: DeviceInfo,
    /// Every node's access-change timings, in id order.
    pub access: Vec<AccessTimings>,
    /// Every node's memory as the run left it, in id order ([`transport::runtime::Ended`]).
    pub memories: Vec<NodeMemory>,
    /// Per node, in id order, whether it crashed before the run ended.
    pub crashed: Vec<bool>,
}

impl<P> transport::runtime::Ended for VerbsRun<P> {
    type Process = P;
    type Nic = NodeMemory;
    fn processes(&self) -> &[P] {
        &self.processes
    }
    fn nic(&self, p: ProcessId) -> &NodeMemory {
        &self.memories[p.index()]
    }
    fn crashed(&self, p: ProcessId) -> bool {
        self.crashed[p.index()]
    }
    fn now(&self) -> transport::Nanos {
        self.memories
            .first()
            .map_or(transport::Nanos::ZERO, Nic::now)
    }
}

/// A handle to crash nodes of a run.
#[derive(Clone, Debug)]
pub struct VerbsControl {
    mailboxes: Arc<Mailboxes>,
}

impl VerbsControl {
    /// Crashes process `p`: it stops at once and its queue pairs are destroyed, so its peers'
    /// ops to it fail `PeerUnreachable` once their retries run out. Before the run, it never
    /// starts.
    pub fn crash(&self, p: ProcessId) {
        self.mailboxes.crash(p);
    }
}

/// Every node of a run as threads of this OS process, on one device of `provider`.
pub struct VerbsRuntime<P, V> {
    provider: V,
    cfg: VerbsConfig,
    processes: Vec<P>,
    mailboxes: Arc<Mailboxes>,
    device: DeviceInfo,
}

impl<P, V> fmt::Debug for VerbsRuntime<P, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerbsRuntime")
            .field("cfg", &self.cfg)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

/// What a node does in its next round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Polls its process and serves its peers.
    Poll,
    /// Serves its peers only (its process has stopped, the others may still need it).
    Serve,
    /// Ends.
    End,
}

/// Polls `process` on `nic` as `next` says after each round: the NIC makes progress every
/// round whether or not the process polls its queues (reconnects answered, finished work
/// requests retired, backlogs posted). `next` sees whether the process is done.
fn drive<C: Context, P: Process<VerbsNic<C>>>(
    nic: &mut VerbsNic<C>,
    process: &mut P,
    mut next: impl FnMut(bool) -> Next,
) {
    let (mut idle, mut step) = (0u32, Next::Poll);
    loop {
        if nic.control.crashed(nic.me) {
            return;
        }
        nic.service_mail();
        let completed = nic.poll_device();
        let worked = step == Next::Poll && process.poll(nic).did_work;
        step = next(process.done());
        if step == Next::End {
            return;
        }
        if worked || completed {
            idle = 0;
        } else {
            idle = idle.saturating_add(1);
            back_off(idle);
        }
    }
}

/// Rounds without work a node polls flat out (about as long as an op takes to come back on
/// a NIC) before it starts to sleep.
const SPIN_ROUNDS: u32 = 256;

/// The longest sleep of an idle node: the latency a first op after a quiet spell pays at
/// most, and about what a busy node's timers can tolerate.
const MAX_NAP: Duration = Duration::from_micros(500);

/// Waits after `idle` rounds without work: a yield while the node may be between the post and
/// the completion of an op, then naps that double up to [`MAX_NAP`], so an idle node (a
/// process waiting for a peer, or done) does not take a core from the ones working, which on
/// a machine with fewer cores than nodes is the difference between progress and none.
fn back_off(idle: u32) {
    if idle < SPIN_ROUNDS {
        std::thread::yield_now();
    } else {
        let doublings = (idle - SPIN_ROUNDS).min(16);
        let nap = Duration::from_micros(1 << doublings).min(MAX_NAP);
        std::thread::sleep(nap);
    }
}

impl<V: Provider, P: Process<VerbsNic<V::Ctx>> + Send> VerbsRuntime<P, V> {
    /// A run of `processes` (process `i` is `ProcessId(i)`) on the configured device of
    /// `provider`; no device, or one that cannot hold the run (its limits, or the locked
    /// memory all the nodes register), is an error that says so.
    pub fn new(
        provider: V,
        cfg: VerbsConfig,
        processes: Vec<P>,
    ) -> Result<VerbsRuntime<P, V>, DeviceError> {
        let (_, device, caps) = open_device(&provider, &cfg.device)?;
        let specs: Vec<Vec<RegionSpec>> = processes.iter().map(|p| p.regions()).collect();
        Budget::all(&cfg, &specs)
            .check(&device.name, &caps, provider.memlock_limit())
            .map_err(DeviceError::Unusable)?;
        let n = processes.len();
        super::budget::fit(&cfg, &caps, n)
            .map_err(|e| DeviceError::Unusable(format!("{}: {e}", device.name)))?;
        Ok(VerbsRuntime {
            provider,
            cfg,
            processes,
            mailboxes: Arc::new(Mailboxes::new(n)),
            device,
        })
    }

    /// The device the run uses.
    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// A handle to crash nodes.
    pub fn control(&self) -> VerbsControl {
        VerbsControl {
            mailboxes: self.mailboxes.clone(),
        }
    }

    /// Runs every node until all live processes are done or `limit` passes. A node that cannot
    /// set up its queue pairs on a device that was found is a failure, not a skip: it panics
    /// with what the device refused.
    pub fn run(self, limit: Duration) -> VerbsRun<P> {
        let VerbsRuntime {
            provider,
            cfg,
            processes,
            mailboxes,
            device,
        } = self;
        let specs: Vec<Vec<RegionSpec>> = processes.iter().map(|p| p.regions()).collect();
        let live = (0..processes.len())
            .filter(|&i| !mailboxes.crashed(ProcessId(i as u32)))
            .count();
        let (done, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
        let start = Instant::now();
        let deadline = start + limit;
        let results: Vec<(P, AccessTimings, NodeMemory)> = std::thread::scope(|scope| {
            let handles: Vec<_> = processes
                .into_iter()
                .enumerate()
                .map(|(i, mut process)| {
                    let (provider, cfg, specs) = (&provider, &cfg, &specs);
                    let (done, stop) = (&done, &stop);
                    let control: Arc<dyn Control> = mailboxes.clone();
                    scope.spawn(move || {
                        let me = ProcessId(i as u32);
                        if control.crashed(me) {
                            let memory = NodeMemory::untouched(me, specs, start);
                            return (process, AccessTimings::default(), memory);
                        }
                        let mut nic = VerbsNic::open(provider, me, cfg, specs, control, start)
                            .and_then(|mut nic| nic.bootstrap_in_process().map(|()| nic))
                            .unwrap_or_else(|e| panic!("verbs node {me} did not start: {e}"));
                        let mut counted = false;
                        drive(&mut nic, &mut process, |is_done| {
                            if is_done && !counted {
                                counted = true;
                                done.fetch_add(1, Ordering::AcqRel);
                            }
                            if done.load(Ordering::Acquire) >= live || Instant::now() >= deadline {
                                stop.store(true, Ordering::Release);
                            }
                            if stop.load(Ordering::Acquire) {
                                Next::End
                            } else {
                                Next::Poll
                            }
                        });
                        let timings = nic.access_timings().clone();
                        (process, timings, nic.into_memory())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|e| {
                        // The node's own message (what the device refused) carries on.
                        let why = e
                            .downcast_ref::<String>()
                            .map(String::as_str)
                            .or_else(|| e.downcast_ref::<&str>().copied())
                            .unwrap_or("no message");
                        panic!("a verbs node thread panicked: {why}")
                    })
                })
                .collect()
        });
        let crashed = (0..results.len())
            .map(|i| mailboxes.crashed(ProcessId(i as u32)))
            .collect();
        let mut run = VerbsRun {
            processes: Vec::new(),
            device,
            access: Vec::new(),
            memories: Vec::new(),
            crashed,
        };
        for (process, timings, memory) in results {
            run.processes.push(process);
            run.access.push(timings);
            run.memories.push(memory);
        }
        run
    }
}

/// One node of a run across OS processes or hosts: what a cluster launcher starts on each.
#[derive(Debug)]
pub struct NodeSpec<'a> {
    /// The run's settings (the same on every node).
    pub cfg: &'a VerbsConfig,
    /// This node.
    pub me: ProcessId,
    /// Every node's regions, in id order.
    pub specs: &'a [Vec<RegionSpec>],
    /// Where this node accepts its peers' control streams (its address in `addrs`).
    pub listener: &'a std::net::TcpListener,
    /// The cluster file's addresses, in id order.
    pub addrs: &'a [std::net::SocketAddr],
    /// The cluster secret every control stream proves.
    pub secret: &'a Secret,
    /// How long the node's process runs at most.
    pub limit: Duration,
    /// The launcher's barrier (the tcp runtime's): with it, the node says when its process is
    /// done, stops polling it (serving its peers still) when told to stop, and ends when told
    /// to exit, so that a node done early does not look crashed to the others.
    pub signals: Option<Arc<NodeSignals>>,
}

/// Runs node `node.me` of a run across OS processes or hosts on `provider`'s device: connects
/// its queue pairs to every node through [`TcpControl`] (every stream proving the cluster
/// secret), then polls `process` until `node.limit` passes or the launcher's signals end it,
/// and returns it. Every node must be started; one that does not come within
/// `cfg.connect_timeout` fails the bootstrap. A device that cannot hold the node (its limits,
/// the locked memory it registers) is refused before anything is made.
pub fn run_node<V: Provider, P: Process<VerbsNic<V::Ctx>>>(
    provider: &V,
    node: NodeSpec<'_>,
    mut process: P,
) -> Result<P, String> {
    let NodeSpec {
        cfg,
        me,
        specs,
        listener,
        addrs,
        secret,
        limit,
        signals,
    } = node;
    if addrs.len() != specs.len() {
        return Err(format!(
            "{} addresses for {} processes: the cluster file must name one per process",
            addrs.len(),
            specs.len()
        ));
    }
    let start = Instant::now();
    // Until the control channel is up nobody is known to be down.
    let local: Arc<dyn Control> = Arc::new(Mailboxes::new(specs.len()));
    let mut nic = VerbsNic::open(provider, me, cfg, specs, local, start)?;
    let (control, hellos) = TcpControl::connect(
        me,
        listener,
        addrs,
        &nic.hellos(),
        nic.memory.table.digest(),
        cfg.connect_timeout,
        secret,
    )
    .map_err(|e| e.to_string())?;
    nic.control = control;
    nic.connect_hellos(hellos)?;
    nic.await_ready()?;
    let deadline = Instant::now() + limit;
    drive(&mut nic, &mut process, |done| {
        let Some(s) = &signals else {
            return if Instant::now() >= deadline {
                Next::End
            } else {
                Next::Poll
            };
        };
        if done {
            s.done.store(true, Ordering::Release);
        }
        if s.exit.load(Ordering::Acquire) {
            Next::End
        } else if s.stop.load(Ordering::Acquire) || Instant::now() >= deadline {
            s.stopped.store(true, Ordering::Release);
            Next::Serve
        } else {
            Next::Poll
        }
    });
    Ok(process)
}
