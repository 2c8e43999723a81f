//! The interface a protocol implements to be run, compared and plotted by the workbench: the
//! shape of a run the command line asks for ([`Shape`], with a slot for the protocol's own
//! options), the clock its timeouts are sized for ([`Clock`]), what a run gives the processes
//! it builds ([`Run`]: load, seed, log and clock), the protocol itself
//! ([`Multicast`]: its configuration, processes, memory and counters) and a deployed protocol,
//! whatever it is ([`Deploy`], held as a [`Deployment`]). It names no protocol: each
//! implements [`Multicast`] in its own folder of the harness.

use crate::experiment::{Counters, Experiment, Measured};
use crate::totals::Processes;
use multicast::Observed;
use multicast::{Client, DestPolicy, LoadSpec, Membership, Node, Server, Tree};
use std::any::Any;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use transport::runtime::local::LocalNic;
use transport::runtime::sim::SimNic;
use transport::runtime::tcp::TcpNic;
use transport::Process;

/// What every atomic multicast protocol takes from the command line.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Groups, if given (tree-based protocols take them from the tree).
    pub groups: Option<usize>,
    /// The overlay tree, for tree-based protocols.
    pub tree: Option<Tree>,
    /// Replicas per group.
    pub replicas: usize,
    /// Closed-loop clients.
    pub clients: usize,
    /// Message bytes.
    pub size: usize,
    /// Destinations per message.
    pub dest: DestPolicy,
    /// Slots per client buffer (per HM buffer for TRAM).
    pub slots: usize,
    /// Bytes per slot, if given (else the smallest that holds `size`).
    pub slot_bytes: Option<usize>,
    /// The tree `adjacent:K` destinations are drawn from, for genuine protocols (which have
    /// none of their own) compared with a tree-based one.
    pub dest_tree: Option<Tree>,
    /// What the protocol takes that no other does (TRAM's LOG slots, Ridge's Delta and
    /// dissemination, ...), as its folder set it.
    pub own: Own,
}

/// A protocol's own options in a [`Shape`]: a value of a type its folder chose, set by its
/// `run` flags (the harness's `Kind::Multicast`'s `run_flags`), its `compare` variants or `--delta`, and
/// read back only by that folder, so the shape every protocol shares names none of them.
#[derive(Clone, Debug, Default)]
pub struct Own(Option<Arc<dyn Options>>);

/// What [`Own`] holds: any value its folder can print and share between threads.
trait Options: fmt::Debug + Send + Sync {
    /// Itself, to be read back as its own type.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any + fmt::Debug + Send + Sync> Options for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Own {
    /// `options` as a protocol's own.
    pub fn new<T: Any + fmt::Debug + Send + Sync>(options: T) -> Own {
        Own(Some(Arc::new(options)))
    }

    /// The options of type `T`, or `T`'s default where none were set (a shape built by
    /// `compare`, or one whose options are another protocol's).
    pub fn get<T: Any + Clone + Default>(&self) -> T {
        // Through the `Arc` to the options: an `Arc` is an [`Options`] itself.
        self.0
            .as_ref()
            .and_then(|o| (**o).as_any().downcast_ref::<T>())
            .cloned()
            .unwrap_or_default()
    }
}

impl Shape {
    /// Refuses a message larger than `max`, what a slot of `slot_bytes` holds (`per` says for
    /// what, when the limit depends on more than the slot).
    pub fn fits(&self, slot_bytes: usize, max: usize, per: &str) -> Result<(), String> {
        if self.size > max {
            return Err(format!(
                "--size {} does not fit a slot of {slot_bytes} bytes (at most {max} bytes{per}); raise --slot-bytes",
                self.size
            ));
        }
        Ok(())
    }

    /// Destination groups of one message under `dest` with `groups` groups.
    pub fn dst_groups(&self, groups: usize) -> usize {
        self.dest.max_groups(groups)
    }
}

/// The clock a run's timeouts are sized for.
#[derive(Clone, Copy, Debug)]
pub enum Clock<'a> {
    /// Simulated time on a hardware profile: the protocol's simulator defaults, which a
    /// protocol may stretch for the profile's link (Ridge's long messages on 1 Gb/s).
    Sim(&'a transport::runtime::sim::Profile),
    /// Real threads sharing few cores: a descheduled thread must not look dead.
    Wall,
}

/// What a run gives the processes [`Multicast::nodes`] builds for it, beyond the protocol's
/// configuration.
#[derive(Clone, Debug)]
pub struct Run<'a> {
    /// What the closed-loop clients multicast, and when they start and stop counting.
    pub load: LoadSpec,
    /// The seed of every random stream of the run.
    pub seed: u64,
    /// Whether the servers keep a delivery log.
    pub log: bool,
    /// The clock the protocol's timeouts are sized for.
    pub clock: Clock<'a>,
}

/// One atomic multicast protocol as the harness deploys it.
pub trait Multicast: 'static {
    /// Its name on the command line.
    const NAME: &'static str;
    /// Its configuration: a deployment.
    type Config: Membership + Clone + fmt::Debug + Send + Sync;
    /// Its server, on every runtime.
    type Server: Server
        + Observed
        + Process<SimNic>
        + Process<LocalNic>
        + Process<TcpNic>
        + crate::runtime::OnVerbs
        + Send;
    /// Its client, on every runtime.
    type Client: Client<SimNic>
        + Client<LocalNic>
        + Client<TcpNic>
        + crate::runtime::ClientOnVerbs
        + Send;

    /// The configuration `shape` asks for, checked (a message too large for its slot, a tree
    /// given to a genuine protocol, ... are errors that say what to change).
    fn configure(shape: &Shape) -> Result<Self::Config, String>;
    /// Every process of `run`, its timeouts sized for the run's clock.
    fn nodes(cfg: &Self::Config, run: Run<'_>) -> Vec<Node<Self::Server, Self::Client>>;
    /// Bytes per slot and slots per buffer.
    fn slots(cfg: &Self::Config) -> (usize, usize);
    /// The overlay tree, for tree-based protocols.
    fn tree(_cfg: &Self::Config) -> Option<Tree> {
        None
    }
    /// The registered memory of a run, in one line.
    fn regions(cfg: &Self::Config) -> String;
    /// Every process of a run by role, with the regions each declares, sized by the code its
    /// processes declare them with but without building one: a process's own state can cost
    /// more than its regions (a RamCast server tracks every slot of every client), and the
    /// estimate must come before anything large is allocated ([`crate::totals`]).
    fn footprint(cfg: &Self::Config) -> Vec<Processes>;
    /// A line on what its own counters came to in a run ([`Observed::counters`], summed over
    /// the servers), if it counts anything of its own.
    fn report(_counters: &Counters) -> Option<String> {
        None
    }
}

/// A deployed protocol, whatever it is: what experiments hold.
pub trait Deploy: fmt::Debug + Send + Sync {
    /// The protocol's name.
    fn protocol(&self) -> &'static str;
    /// Groups, replicas, clients.
    fn shape(&self) -> (usize, usize, usize);
    /// Bytes per slot and slots per buffer.
    fn slots(&self) -> (usize, usize);
    /// The overlay tree, for tree-based protocols.
    fn tree(&self) -> Option<Tree>;
    /// The registered memory of a run, in one line.
    fn regions(&self) -> String;
    /// Every process of a run by role, with the regions each declares ([`Multicast::footprint`]).
    fn footprint(&self) -> Vec<Processes>;
    /// A line on what the protocol's own counters came to in `m` ([`Multicast::report`]).
    fn report(&self, m: &Measured) -> Option<String>;
    /// Runs experiment `e` on this deployment (`sim`, `local` or `verbs`; a tcp run is launched by
    /// [`crate::cluster::launch`] and served by [`Deploy::serve`]).
    fn execute(&self, e: &Experiment) -> Measured;
    /// Each process's role in experiment `e` ([`crate::cluster::role_of`]), in id order.
    fn roles(&self, e: &Experiment) -> Vec<String>;
    /// Each process's regions in experiment `e`, in id order, as its tcp node declares them.
    fn region_specs(&self, e: &Experiment) -> Vec<Vec<transport::RegionSpec>>;
    /// Runs node `id` of experiment `e` on the tcp runtime as `cluster` says, and writes its
    /// report to `report`.
    fn serve(
        &self,
        e: &Experiment,
        cluster: &crate::cluster::ClusterFile,
        id: usize,
        report: &Path,
    ) -> Result<(), String>;
}

/// An experiment's protocol and its configuration.
pub type Deployment = Arc<dyn Deploy>;

/// Protocol `P` deployed with a configuration.
pub struct Deployed<P: Multicast>(pub P::Config);

impl<P: Multicast> fmt::Debug for Deployed<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", P::NAME, self.0)
    }
}

/// `cfg` as a [`Deployment`] of `P`.
pub fn deployment<P: Multicast>(cfg: P::Config) -> Deployment {
    Arc::new(Deployed::<P>(cfg))
}

impl<P: Multicast> Deploy for Deployed<P> {
    fn protocol(&self) -> &'static str {
        P::NAME
    }
    fn shape(&self) -> (usize, usize, usize) {
        let c = &self.0;
        (c.group_count(), c.replica_count(), c.client_count())
    }
    fn slots(&self) -> (usize, usize) {
        P::slots(&self.0)
    }
    fn tree(&self) -> Option<Tree> {
        P::tree(&self.0)
    }
    fn regions(&self) -> String {
        P::regions(&self.0)
    }
    fn footprint(&self) -> Vec<Processes> {
        P::footprint(&self.0)
    }
    fn report(&self, m: &Measured) -> Option<String> {
        P::report(&m.counters)
    }
    fn execute(&self, e: &Experiment) -> Measured {
        e.execute(self.nodes(e))
    }
    fn roles(&self, e: &Experiment) -> Vec<String> {
        self.nodes(e).iter().map(crate::cluster::role_of).collect()
    }
    fn region_specs(&self, e: &Experiment) -> Vec<Vec<transport::RegionSpec>> {
        self.nodes(e)
            .iter()
            .map(Process::<TcpNic>::regions)
            .collect()
    }
    fn serve(
        &self,
        e: &Experiment,
        cluster: &crate::cluster::ClusterFile,
        id: usize,
        report: &Path,
    ) -> Result<(), String> {
        crate::cluster::serve(e, self.nodes(e), cluster, id, report)
    }
}

impl<P: Multicast> Deployed<P> {
    /// Every process of experiment `e`, timeouts sized for its runtime's clock.
    fn nodes(&self, e: &Experiment) -> Vec<Node<P::Server, P::Client>> {
        let clock = match e.runtime {
            crate::runtime::Runtime::Sim => Clock::Sim(&e.profile),
            crate::runtime::Runtime::Local { .. }
            | crate::runtime::Runtime::Tcp
            | crate::runtime::Runtime::Verbs => Clock::Wall,
        };
        let run = Run {
            load: e.load(),
            seed: e.seed,
            log: e.log,
            clock,
        };
        P::nodes(&self.0, run)
    }
}

/// The harness's `Kind::Multicast`'s `deploy` for `P`.
pub fn deploy<P: Multicast>(shape: &Shape) -> Result<Deployment, String> {
    P::configure(shape).map(deployment::<P>)
}
