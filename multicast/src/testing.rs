//! Runners for the tests of atomic multicast protocols (the `testing` feature, for
//! dev-dependencies): a run on the simulator with a convergence phase, and a run on real
//! threads, each checked against the five properties. One copy for every protocol's tests.

use crate::{check, collect_log, DeliveryLog, DestPolicy, LoadSpec, Node, Server, Tree};
use std::sync::Arc;
use std::time::Duration;
use transport::runtime::local::{LocalConfig, LocalNic, LocalRuntime};
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig, SimNic};
use transport::{Nanos, Process, ProcessId};

/// A test's load: clients multicast `size`-byte messages to `dest` among `groups` from the
/// start, with no warm-up, until `stop_at`. It has no tree; a tree-based protocol's test sets
/// [`LoadSpec::tree`].
pub fn load_until(dest: DestPolicy, groups: usize, size: usize, stop_at: Nanos) -> LoadSpec {
    LoadSpec {
        dest,
        groups,
        tree: None,
        size,
        warmup_end: Nanos::ZERO,
        stop_at,
    }
}

/// A finished simulation and the multicasts its clients completed.
pub struct SimRun<S, C> {
    /// The simulation, as the run left it.
    pub sim: Sim<Node<S, C>>,
    /// Multicasts completed by all clients in their measurement window.
    pub completed: u64,
}

/// Runs `nodes` on the simulator with `profile` (a built-in name), `seed` and `faults` until
/// `stop` (when the clients stop multicasting, set in their [`crate::LoadSpec`]) plus
/// `converge`, so that multicasts in flight finish.
pub fn run_sim<S, C>(
    nodes: Vec<Node<S, C>>,
    profile: &str,
    seed: u64,
    faults: Vec<Fault>,
    stop: Nanos,
    converge: Nanos,
) -> SimRun<S, C>
where
    Node<S, C>: Process<SimNic>,
{
    let profile = Profile::load(profile).unwrap_or_else(|e| panic!("profile {profile}: {e}"));
    let mut sc = SimConfig::new(seed, profile);
    sc.faults = faults;
    let mut sim = Sim::new(sc, nodes);
    sim.run(Some(stop.saturating_add(converge)));
    let completed = sim
        .processes()
        .iter()
        .map(|n| match n {
            Node::Client(c) => c.completed_in_window,
            Node::Server(_) | Node::Auxiliary(_) => 0,
        })
        .sum();
    SimRun { sim, completed }
}

impl<S, C> std::fmt::Debug for SimRun<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SimRun {{ completed: {} }}", self.completed)
    }
}

impl<S: Server, C> SimRun<S, C>
where
    Node<S, C>: Process<SimNic>,
{
    /// The run's delivery log (crashed processes marked faulty).
    pub fn log(&self) -> DeliveryLog {
        collect_log(self.sim.processes(), |p: ProcessId| self.sim.crashed(p))
    }

    /// Panics unless the run kept the five properties and completed a multicast.
    pub fn assert_safe_and_live(&self) {
        let violations = check(&self.log());
        assert!(violations.is_empty(), "{violations:?}");
        assert!(self.completed > 0, "no multicast completed");
    }
}

/// Runs `nodes` on real threads for `wall` and panics unless the run kept the five properties
/// and delivered at least `min_deliveries` messages (all servers together); returns the log.
/// With `nic_thread`, remote ops complete on a NIC thread, reordered across queue pairs
/// ([`transport::runtime::local::nic_thread`]).
pub fn run_local_checked<S, C>(
    nodes: Vec<Node<S, C>>,
    seed: u64,
    wall: Duration,
    min_deliveries: usize,
    nic_thread: bool,
) -> DeliveryLog
where
    S: Server,
    Node<S, C>: Process<LocalNic> + Send,
{
    let lc = LocalConfig {
        seed,
        nic_thread,
        ..LocalConfig::default()
    };
    let run = LocalRuntime::new(lc, nodes).run(wall);
    let log = collect_log(&run.processes, |_| false);
    let delivered: usize = log.deliveries.values().map(Vec::len).sum();
    assert!(
        delivered >= min_deliveries,
        "only {delivered} deliveries (at least {min_deliveries} expected)"
    );
    let v = check(&log);
    assert!(v.is_empty(), "{v:?}");
    log
}

/// The protocols' concurrent run on real threads (their `local` tests): the clients multicast
/// 64-byte messages to `dest` among `groups` (over `tree`, for a tree-based protocol) from the
/// start for 1.5 s, and the run lasts 2.5 s with seed 7, checked as [`run_local_checked`]
/// checks it. `nodes` builds the processes of that load and seed.
pub fn run_concurrent<S, C>(
    dest: DestPolicy,
    groups: usize,
    tree: Option<Tree>,
    min_deliveries: usize,
    nic_thread: bool,
    nodes: impl FnOnce(LoadSpec, u64) -> Vec<Node<S, C>>,
) -> DeliveryLog
where
    S: Server,
    Node<S, C>: Process<LocalNic> + Send,
{
    let load = LoadSpec {
        tree: tree.map(Arc::new),
        ..load_until(dest, groups, 64, Nanos(1_500_000_000))
    };
    let seed = 7;
    run_local_checked(
        nodes(load, seed),
        seed,
        Duration::from_millis(2_500),
        min_deliveries,
        nic_thread,
    )
}

/// Declares a protocol's two concurrent tests on real threads: `$run` (a `fn(nic_thread:
/// bool)`, usually calling [`run_concurrent`]) without a NIC thread, and with one, where remote
/// ops of different queue pairs complete in any order and long after their post, as on a real
/// NIC.
#[macro_export]
macro_rules! concurrent_tests {
    ($run:path) => {
        #[test]
        fn concurrent_runs_keep_every_property() {
            $run(false);
        }

        #[test]
        fn concurrent_runs_with_a_nic_thread_keep_every_property() {
            $run(true);
        }
    };
}
