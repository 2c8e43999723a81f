//! A checking run of an atomic multicast protocol, shared by every protocol whose run is a
//! deployment, a closed-loop load and a fault schedule (RamCast, TRAM, Ridge, Skeen): the
//! protocol says how its deployment is drawn, written, read back, built and stretched
//! ([`Checkable`]); the run, its line, its simulation and its local run are the same for all.

use crate::driver::{
    check_multicast, check_multicast_local, checking_load, local_faults, seeded_sim, LocalCheck,
    Model, SeedRun,
};
use crate::schedule::{kinds, Kinds, Phases, Schedule};
use crate::spec::{Spec, SpecWriter};
use crate::tally::{Outcome, Tally};
use multicast::{DestPolicy, LoadSpec, Membership, Node, Observed, Server, Tree};
use std::fmt::Debug;
use std::sync::Arc;
use transport::runtime::local::LocalNic;
use transport::runtime::sim::{Fault, SimNic, TieBreak};
use transport::{Nanos, Process};

/// Multiplies each of a deployment's `timeouts` by `k` (saturating), as
/// [`Checkable::stretched`] does to every duration of its protocol.
pub fn stretch<const N: usize>(k: u64, timeouts: [&mut Nanos; N]) {
    for t in timeouts {
        *t = Nanos(t.as_nanos().saturating_mul(k));
    }
}

/// Everything one checking run of an atomic multicast protocol is made of.
#[derive(Clone, Debug)]
pub struct MulticastRun<C> {
    /// The seed it was derived from.
    pub seed: u64,
    /// The protocol's deployment: groups, replicas, clients, buffers, timing.
    pub cfg: C,
    /// Where the clients multicast.
    pub dest: DestPolicy,
    /// Payload bytes per multicast.
    pub size: usize,
    /// How long faults may start for.
    pub fault_phase: Nanos,
    /// How the simulator orders simultaneous events.
    pub tie_break: TieBreak,
    /// The fault schedule.
    pub faults: Vec<Fault>,
    /// Fault, liveness and convergence phases.
    pub phases: Phases,
}

/// What a protocol's deployment tells the sweep so that its runs are [`MulticastRun`]s.
pub trait Checkable: Membership + Clone + Debug + Send + Sync + Sized {
    /// The protocol's server.
    type Server: Server + Observed;
    /// The protocol's client.
    type Client;
    /// The protocol's name on the command line.
    const PROTOCOL: &'static str;
    /// One line for `check --help`: what the sweep injects and checks.
    const ABOUT: &'static str;
    /// The profile the sweep runs on unless told otherwise (the protocol's testbed).
    const TESTBED: &'static str;
    /// The label of [`Outcome::extra`] in the report, if the protocol counts one.
    const EXTRA: Option<&'static str>;
    /// Derives every parameter of a run, and its faults, from `seed`.
    fn derive(seed: u64) -> MulticastRun<Self>;
    /// Writes the deployment's parameters to a run's line.
    fn write(&self, line: SpecWriter) -> SpecWriter;
    /// Reads back what [`Checkable::write`] wrote.
    fn read(line: &mut Spec<'_>) -> Result<Self, String>;
    /// The processes of a run under `load`, keeping delivery logs, their streams from `seed`.
    fn nodes(&self, load: LoadSpec, seed: u64) -> Vec<Node<Self::Server, Self::Client>>;
    /// The multicast tree the clients' destinations follow, if the protocol has one.
    fn tree(&self) -> Option<Arc<Tree>> {
        None
    }
    /// The timeout after which a paused process is suspected ([`Nanos::MAX`]: none is).
    fn suspect(&self) -> Nanos;
    /// The deployment on real threads, every duration of the protocol `k` times as long as
    /// the schedule stretches.
    fn stretched(&self, k: u64) -> Self;
    /// The kinds of fault `run` injects; a protocol adds its own ([`Kinds::own`]).
    fn kinds(run: &MulticastRun<Self>) -> Kinds {
        kinds(&run.faults, &run.cfg, run.cfg.suspect())
    }
    /// The sweep's "runs with" line.
    fn tally_line(t: &Tally) -> String {
        t.describe(Self::EXTRA)
    }
}

impl<C> MulticastRun<C> {
    /// The run of `cfg` whose faults and phases are those `schedule` drew ([`draw_schedule`]);
    /// the eviction time it drew is the protocol's to put in `cfg` first.
    ///
    /// [`draw_schedule`]: crate::schedule::draw_schedule
    pub fn scheduled(
        seed: u64,
        cfg: C,
        dest: DestPolicy,
        size: usize,
        fault_phase: Nanos,
        tie_break: TieBreak,
        schedule: Schedule,
    ) -> MulticastRun<C> {
        MulticastRun {
            seed,
            cfg,
            dest,
            size,
            fault_phase,
            tie_break,
            faults: schedule.faults,
            phases: schedule.phases,
        }
    }
}

impl<C: Checkable> MulticastRun<C> {
    /// The clients' load of this run under `phases`.
    fn load(&self, cfg: &C, phases: &Phases) -> LoadSpec {
        checking_load(self.dest, cfg.group_count(), cfg.tree(), self.size, phases)
    }
}

impl<C: Checkable> SeedRun for MulticastRun<C>
where
    Node<C::Server, C::Client>: Process<SimNic> + Process<LocalNic> + Send,
{
    const PROTOCOL: &'static str = C::PROTOCOL;
    const ABOUT: &'static str = C::ABOUT;
    const TESTBED: &'static str = C::TESTBED;
    const EXTRA: Option<&'static str> = C::EXTRA;

    fn derive(seed: u64) -> Self {
        C::derive(seed)
    }

    fn spec(&self) -> String {
        self.cfg
            .write(SpecWriter::new(self.seed))
            .put("dest", self.dest)
            .put("size", self.size)
            .time("fault_phase", self.fault_phase)
            .put("tie_break", self.tie_break)
            .time("load_end", self.phases.load_end)
            .faults(&self.faults)
    }

    /// The run [`SeedRun::spec`] wrote; the phases follow from the faults.
    fn from_spec(line: &str) -> Result<Self, String> {
        let mut s = Spec::parse(line)?;
        let cfg = C::read(&mut s)?;
        let faults = s.faults()?;
        let run = MulticastRun {
            seed: s.get("seed")?,
            phases: Phases::until(&faults, s.get("load_end")?),
            dest: s.get("dest")?,
            size: s.get("size")?,
            fault_phase: s.get("fault_phase")?,
            tie_break: s.get("tie_break")?,
            faults,
            cfg,
        };
        s.end(C::PROTOCOL)?;
        Ok(run)
    }

    fn kinds(&self) -> Kinds {
        C::kinds(self)
    }

    fn check(&self, model: &Model, determinism: bool) -> Outcome {
        let build = || {
            let nodes = self
                .cfg
                .nodes(self.load(&self.cfg, &self.phases), self.seed);
            seeded_sim(self.seed, model, self.tie_break, &self.faults, nodes)
        };
        check_multicast(
            build,
            self.phases.limit,
            &self.faults,
            &self.phases,
            &self.cfg,
            determinism,
        )
    }

    fn check_local(&self, local: &LocalCheck) -> Outcome {
        let k = local.stretch;
        let cfg = self.cfg.stretched(k);
        let phases = self.phases.stretched(k);
        let nodes = cfg.nodes(self.load(&cfg, &phases), self.seed);
        let faults = local_faults(&self.faults, k);
        check_multicast_local(nodes, &faults, &phases, &cfg, local, self.seed)
    }

    fn tally_line(t: &Tally) -> String {
        C::tally_line(t)
    }
}
