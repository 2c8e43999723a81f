//! One driver for every runtime. Every command that runs a deployment where `--runtime` says
//! (an experiment, a figure's point, a bulk transfer, Heron's clients, a transport benchmark)
//! describes the run as a [`Drive`] and hands it its processes; the driver builds the runtime,
//! runs them to the end and hands them back with what the runtime knows of the run
//! ([`Driven`]). The command line's `--runtime` names a [`Runtime`]; each command refuses, with
//! the reason, a runtime it cannot use before it gets here.
//!
//! `check` runs its seeds through `sweep` instead: a checked run needs the simulator's fault
//! schedule, torn accesses and recorded trace, or real threads that yield between the words
//! of an op, which a deployment never asks for.
//!
//! A multi-process tcp run is the one exception to "hand it the processes": its nodes are OS
//! processes the launcher starts ([`crate::cluster::launch`]), and each of them runs its own
//! node over TCP ([`crate::cluster::run_as_node`]). [`Runtime::Tcp`] given to the driver runs
//! every node as threads of this process over loopback TCP, as the transport benchmark wants.

use std::time::{Duration, Instant};
use transport::runtime::local::{LocalConfig, LocalNic, LocalRuntime};
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig, SimNic, Software};
use transport::runtime::tcp::{TcpConfig, TcpNic, TcpRuntime};
use transport::runtime::Ended;
use transport::{Nanos, NicLimits, Process, ProcessId};

/// Where processes run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// The deterministic simulator with a hardware profile.
    Sim,
    /// Real threads and shared memory in this process.
    Local {
        /// OS threads (0: one per core).
        threads: usize,
        /// Whether remote ops complete on a NIC thread
        /// ([`transport::runtime::local::nic_thread`]).
        nic_thread: bool,
    },
    /// RDMA semantics over TCP: one OS process per node when [`crate::cluster`] launches the
    /// run; every node as threads of this process over loopback when [`Drive`] runs it.
    Tcp,
    /// Every node a thread of this process on the RDMA device the environment names
    /// (`RDMA_DEVICE`; a build with `--features verbs`).
    Verbs,
}

impl Runtime {
    /// The runtime's name on the command line and in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Sim => "sim",
            Runtime::Local { .. } => "local",
            Runtime::Tcp => "tcp",
            Runtime::Verbs => "verbs",
        }
    }
}

/// The verbs runtime's NIC; in a build without it, the simulator's, so that a bound naming it
/// asks nothing of a process beyond running on the simulator.
#[cfg(feature = "verbs")]
pub type VerbsNic = verbs::rdma::DeviceNic;
/// The verbs runtime's NIC; in a build without it, the simulator's, so that a bound naming it
/// asks nothing of a process beyond running on the simulator.
#[cfg(not(feature = "verbs"))]
pub type VerbsNic = SimNic;

/// A process that also runs on the verbs runtime (every simulated process, in a build without
/// it).
pub trait OnVerbs: Process<VerbsNic> {}
impl<P: Process<VerbsNic>> OnVerbs for P {}

/// A multicast client that also runs on the verbs runtime (every simulated client, in a build
/// without it).
pub trait ClientOnVerbs: multicast::Client<VerbsNic> {}
impl<C: multicast::Client<VerbsNic>> ClientOnVerbs for C {}

/// A process every runtime of this build can drive. The driver picks the runtime at run time,
/// so a process must run on all of them, even one its command refuses (Heron on verbs).
pub trait Drivable: Process<SimNic> + Process<LocalNic> + Process<TcpNic> + OnVerbs + Send {}
impl<P: Process<SimNic> + Process<LocalNic> + Process<TcpNic> + OnVerbs + Send> Drivable for P {}

/// What `--runtime verbs` says in a build without the verbs runtime.
pub fn verbs_missing() -> String {
    format!(
        "{}: this harness was built without the verbs runtime; build it with `cargo run --release -p harness --features verbs -- ...` (scripts/verbs-deps.sh installs what that build needs)",
        verbs::NO_DEVICE
    )
}

/// One run to drive: where, from which seed, and when it ends.
#[derive(Clone, Copy, Debug)]
pub struct Drive<'a> {
    /// Where the processes run.
    pub runtime: Runtime,
    /// The seed of the runtime's streams (the simulator's events, the processes' own).
    pub seed: u64,
    /// The simulator's hardware model (a run on the simulator without one is refused).
    pub profile: Option<&'a Profile>,
    /// What the processes' reported work costs on the simulator.
    pub software: &'a Software,
    /// Faults the simulator injects.
    pub faults: &'a [Fault],
    /// What the NICs of the local and tcp runtimes grant (inline and send limits).
    pub limits: NicLimits,
    /// When the simulator stops: at this simulated time, or when every process is done.
    pub until: Option<Nanos>,
    /// How long a run on real threads, sockets or devices may take.
    pub limit: Duration,
}

/// A run the driver ended.
#[derive(Debug)]
pub struct Driven<P> {
    /// The processes, in id order, as the run left them.
    pub processes: Vec<P>,
    /// Which processes the simulator crashed. None elsewhere: on real runtimes a crash is
    /// what the processes saw of it, and a process that stopped by itself is not faulty.
    pub crashed: Vec<bool>,
    /// Events the simulator handled (none elsewhere).
    pub events: Option<u64>,
    /// The run's wall time.
    pub wall: Duration,
}

/// What a caller reads from a run's memories before the driver hands the processes back
/// (a process's memory is read through its runtime's NIC, whose type differs per runtime).
pub trait Inspect<P> {
    /// Reads what it needs from the ended run.
    fn inspect<E: Ended<Process = P>>(&mut self, run: &E);

    /// Whether it reads anything (a run whose memories cannot be read is then refused).
    fn reads(&self) -> bool {
        true
    }
}

/// Reads nothing.
impl<P> Inspect<P> for () {
    fn inspect<E: Ended<Process = P>>(&mut self, _: &E) {}

    fn reads(&self) -> bool {
        false
    }
}

impl Drive<'_> {
    /// Runs `procs` (process `i` is `ProcessId(i)`) to the end and hands them back.
    pub fn run<P: Drivable>(&self, procs: Vec<P>) -> Result<Driven<P>, String> {
        self.run_inspected(procs, &mut ())
    }

    /// [`Drive::run`], with `inspect` reading the memories at the end. The simulator, the local
    /// and the verbs runtimes keep memories readable after the run; on tcp (one OS process per
    /// node), with an inspector that reads, this is an error before anything runs.
    pub fn run_inspected<P: Drivable, I: Inspect<P>>(
        &self,
        procs: Vec<P>,
        inspect: &mut I,
    ) -> Result<Driven<P>, String> {
        if inspect.reads() && self.runtime == Runtime::Tcp {
            return Err(format!(
                "the {} runtime cannot read its processes' memories after a run: run it on sim or local",
                self.runtime.name()
            ));
        }
        let started = Instant::now();
        let n = procs.len();
        let real = |processes| Driven {
            processes,
            crashed: vec![false; n],
            events: None,
            wall: started.elapsed(),
        };
        Ok(match self.runtime {
            Runtime::Sim => {
                let profile = self
                    .profile
                    .ok_or("the simulator needs a hardware profile (--profile)")?;
                let mut sc = SimConfig::new(self.seed, profile.clone());
                sc.software = self.software.clone();
                sc.faults = self.faults.to_vec();
                let mut sim = Sim::new(sc, procs);
                sim.run(self.until);
                inspect.inspect(&sim);
                let crashed = (0..n).map(|p| sim.crashed(ProcessId(p as u32))).collect();
                let events = Some(sim.stats().events);
                Driven {
                    processes: sim.into_processes(),
                    crashed,
                    events,
                    wall: started.elapsed(),
                }
            }
            Runtime::Local {
                threads,
                nic_thread,
            } => {
                let lc = LocalConfig {
                    threads,
                    nic_thread,
                    seed: self.seed,
                    limits: self.limits,
                    ..LocalConfig::default()
                };
                let run = LocalRuntime::new(lc, procs).run(self.limit);
                inspect.inspect(&run);
                real(run.processes)
            }
            Runtime::Tcp => {
                let cfg = TcpConfig {
                    seed: self.seed,
                    limits: self.limits,
                    ..TcpConfig::default()
                };
                let rt =
                    TcpRuntime::new(cfg, procs).map_err(|e| format!("no loopback sockets: {e}"))?;
                real(rt.run(self.limit).processes)
            }
            Runtime::Verbs => real(run_on_verbs(procs, self.seed, self.limit, inspect)?),
        })
    }
}

/// Runs `procs` on the verbs runtime until all are done or `limit` passes: the device named
/// by the environment, `seed` for the processes' streams.
#[cfg(feature = "verbs")]
fn run_on_verbs<P: OnVerbs + Send, I: Inspect<P>>(
    procs: Vec<P>,
    seed: u64,
    limit: Duration,
    inspect: &mut I,
) -> Result<Vec<P>, String> {
    let cfg = verbs_config(seed)?;
    let rt = verbs::rdma::VerbsRuntime::new(verbs::sideway::Sideway, cfg, procs)
        .map_err(|e| e.to_string())?;
    let run = rt.run(limit);
    inspect.inspect(&run);
    Ok(run.processes)
}

/// The verbs runtime's settings for a run from `seed`: the device the environment names
/// (`RDMA_DEVICE`, `RDMA_PORT`, `RDMA_GID_INDEX`), the rest the runtime's defaults.
pub fn verbs_config(seed: u64) -> Result<verbs::rdma::VerbsConfig, String> {
    Ok(verbs::rdma::VerbsConfig {
        seed,
        device: verbs::DeviceChoice::from_env()?,
        ..Default::default()
    })
}

/// Without the verbs runtime in this build, `--runtime verbs` is refused before it gets here.
#[cfg(not(feature = "verbs"))]
fn run_on_verbs<P: OnVerbs + Send, I: Inspect<P>>(
    _: Vec<P>,
    _: u64,
    _: Duration,
    _: &mut I,
) -> Result<Vec<P>, String> {
    Err(verbs_missing())
}

#[cfg(test)]
mod tests {
    use super::*;
    use transport::runtime::sim::DEFAULT_PROFILE;
    use transport::{Nic, Progress, RegionSpec};

    /// A process that polls three times and is done.
    #[derive(Debug, Default)]
    struct Thrice {
        polls: u32,
    }

    impl<N: Nic> Process<N> for Thrice {
        fn regions(&self) -> Vec<RegionSpec> {
            Vec::new()
        }

        fn poll(&mut self, _: &mut N) -> Progress {
            self.polls = (self.polls + 1).min(3);
            Progress::worked(true)
        }

        fn done(&self) -> bool {
            self.polls == 3
        }
    }

    /// Counts the processes an ended run holds.
    struct Count(usize);

    impl Inspect<Thrice> for Count {
        fn inspect<E: Ended<Process = Thrice>>(&mut self, run: &E) {
            self.0 = run.processes().len();
        }
    }

    /// Two threads, each polling its processes itself.
    const LOCAL: Runtime = Runtime::Local {
        threads: 2,
        nic_thread: false,
    };

    fn drive<'a>(runtime: Runtime, profile: &'a Profile, software: &'a Software) -> Drive<'a> {
        Drive {
            runtime,
            seed: 7,
            profile: Some(profile),
            software,
            faults: &[],
            limits: NicLimits::default(),
            until: None,
            limit: Duration::from_secs(30),
        }
    }

    /// Every runtime of this build hands back every process, in id order, run to the end; the
    /// simulator also says how many events it handled and that nobody crashed.
    #[test]
    fn every_runtime_runs_the_processes_to_the_end_and_hands_them_back() {
        let profile = Profile::load(DEFAULT_PROFILE).unwrap();
        let software = Software::none();
        for runtime in [Runtime::Sim, LOCAL, Runtime::Tcp] {
            let procs = vec![Thrice::default(), Thrice::default()];
            let run = drive(runtime, &profile, &software).run(procs).unwrap();
            assert_eq!(run.processes.len(), 2, "{runtime:?}");
            assert!(run.processes.iter().all(|p| p.polls == 3), "{runtime:?}");
            assert_eq!(run.crashed, vec![false, false], "{runtime:?}");
            assert_eq!(run.events.is_some(), runtime == Runtime::Sim, "{runtime:?}");
        }
    }

    /// An inspector reads the ended run on the simulator and on threads (and on verbs, whose
    /// runs hand back every node's memory: `verbs`' own tests read them on the fake fabric),
    /// and tcp, whose memories end with their processes, refuses it before running anything.
    #[test]
    fn an_inspector_reads_sim_and_local_runs_and_is_refused_on_tcp() {
        let profile = Profile::load(DEFAULT_PROFILE).unwrap();
        let software = Software::none();
        for runtime in [Runtime::Sim, LOCAL] {
            let mut count = Count(0);
            let procs = vec![Thrice::default(), Thrice::default(), Thrice::default()];
            drive(runtime, &profile, &software)
                .run_inspected(procs, &mut count)
                .unwrap();
            assert_eq!(count.0, 3, "{runtime:?}");
        }
        let mut count = Count(0);
        let e = drive(Runtime::Tcp, &profile, &software)
            .run_inspected(vec![Thrice::default()], &mut count)
            .unwrap_err();
        assert!(e.contains("cannot read its processes' memories"), "{e}");
        assert_eq!(count.0, 0);
    }
}
