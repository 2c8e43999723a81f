//! One Heron experiment over RamCast or Ridge, as `run` and the figures make it: the
//! deployment, the application, the window and the runtime in; per kind of request the
//! clients' latencies, every replica's [`Counters`] and the database the replicas end with out.

use super::Over;
use crate::runtime::Runtime;
use crate::runtime::{ClientOnVerbs, Drive, Inspect, VerbsNic};
use hdrhistogram::Histogram;
use heron::client::Tally;
use heron::over::ridge_config;
use heron::tpcc::Scale;
use heron::{
    Application, Catchup, Counters, HeronNode, KeyValue, NullRequests, ObjectId, Tpcc, Window,
};
use multicast::GroupId;
use multicast::{Client, Server};
use ramcast::{RamcastClient, RamcastServer, Timing};
use ridge::{RidgeClient, RidgeServer};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use transport::runtime::sim::{SimConfig, SimNic};
use transport::runtime::tcp::TcpNic;
use transport::runtime::Ended;
use transport::{Nanos, Nic, ProcessId};

/// The application of a run.
#[derive(Clone, Debug)]
pub(crate) enum Workload {
    /// TPC-C.
    Tpcc(Tpcc),
    /// Null requests bound where this TPC-C's would go (the thesis's Table 5.1).
    Null(Tpcc),
    /// The key-value store.
    Kv(KeyValue),
    /// Figure 5.6's scripted laggard.
    Catchup(Catchup),
}

impl Workload {
    /// The TPC-C scale, for TPC-C and its null requests.
    fn scale(&self) -> Option<Scale> {
        match self {
            Workload::Tpcc(t) | Workload::Null(t) => Some(t.scale()),
            Workload::Kv(_) | Workload::Catchup(_) => None,
        }
    }
}

/// One row of a Heron `summary.csv`: every parameter of the run, then one kind of request's
/// numbers (single- and multi-partition requests apart).
#[derive(serde::Serialize)]
pub(crate) struct Row {
    pub(crate) protocol: &'static str,
    /// The atomic multicast underneath.
    pub(crate) multicast: &'static str,
    /// What the clients ran (`tpcc`, `null`, `kv`, or a figure's name for a variant).
    pub(crate) workload: String,
    pub(crate) runtime: &'static str,
    pub(crate) profile: String,
    pub(crate) software: String,
    pub(crate) seed: u64,
    pub(crate) partitions: usize,
    pub(crate) replicas: usize,
    pub(crate) clients: usize,
    pub(crate) extra_wait_us: f64,
    /// TPC-C's scale (0 for other applications).
    pub(crate) items: u64,
    pub(crate) customers: u64,
    pub(crate) capacity: u64,
    pub(crate) warmup_ms: f64,
    pub(crate) duration_ms: f64,
    pub(crate) kind: &'static str,
    pub(crate) span: &'static str,
    pub(crate) completed: u64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) per_s: f64,
    /// The 95% interval of `per_s` by sectioning (empty where the run reported no sections).
    #[serde(serialize_with = "crate::stats::precision::opt_rate")]
    pub(crate) per_s_ci95_lo: Option<f64>,
    #[serde(serialize_with = "crate::stats::precision::opt_rate")]
    pub(crate) per_s_ci95_hi: Option<f64>,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) mean_us: f64,
    /// The 95% interval of `mean_us` by sectioning (empty where a section completed none).
    #[serde(serialize_with = "crate::stats::precision::opt_us")]
    pub(crate) mean_us_ci95_lo: Option<f64>,
    #[serde(serialize_with = "crate::stats::precision::opt_us")]
    pub(crate) mean_us_ci95_hi: Option<f64>,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) commit: String,
}

/// One Heron experiment.
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    /// Heron's deployment and tunables.
    pub(crate) cfg: heron::Config,
    /// The atomic multicast underneath.
    pub(crate) over: Over,
    /// Slots per client buffer (RamCast) or per ring (Ridge).
    pub(crate) slots: usize,
    /// The multicast's bytes per slot, if not its default.
    pub(crate) slot_bytes: Option<usize>,
    pub(crate) workload: Workload,
    /// When the measurement starts and the clients stop.
    pub(crate) window: Window,
    pub(crate) runtime: Runtime,
    /// The simulator's seed, hardware and software profiles and faults (the hardware's limits
    /// and the seed also serve the local runtime). The runtime driver reads these four fields
    /// only: a Heron run does not tear, trace or break ties its own way.
    pub(crate) sim: SimConfig,
}

/// What one run left.
pub(crate) struct Outcome {
    /// The application's kinds of request.
    pub(crate) kinds: Vec<&'static str>,
    /// Per kind, the single- and multi-partition requests' latencies in the window.
    pub(crate) latency: Vec<[Histogram<u64>; 2]>,
    /// Per section of the window, per kind, single then multi-partition: what completed, over
    /// every client ([`heron::client::HeronClient::sections`]); empty where not reported.
    pub(crate) sections: Vec<Vec<[Tally; 2]>>,
    /// The database the replicas end with.
    pub(crate) database: BTreeMap<ObjectId, Vec<u8>>,
    /// Each replica's partition and counters, in process order.
    pub(crate) replicas: Vec<(GroupId, Counters)>,
    /// Wall-clock time of the run.
    pub(crate) wall: Duration,
    /// Simulator events, on the simulator.
    pub(crate) events: Option<u64>,
}

impl Outcome {
    /// Every request's latency in the window, or those of `span` (0 single-, 1 multi-partition).
    pub(crate) fn latencies(&self, span: Option<usize>) -> Histogram<u64> {
        let mut all = multicast::workload::empty_latency_histogram();
        for k in &self.latency {
            for (s, h) in k.iter().enumerate() {
                if span.is_none_or(|x| x == s) {
                    all.add(h).expect("same bounds");
                }
            }
        }
        all
    }

    /// What completed in each section of the window, of kind `kind` and span `span` (`None`:
    /// every one).
    fn section_tallies(&self, kind: Option<usize>, span: Option<usize>) -> Vec<Tally> {
        self.sections
            .iter()
            .map(|section| {
                let mut t = Tally::default();
                for (k, spans) in section.iter().enumerate() {
                    for (sp, x) in spans.iter().enumerate() {
                        if kind.is_none_or(|w| w == k) && span.is_none_or(|w| w == sp) {
                            t.add(x);
                        }
                    }
                }
                t
            })
            .collect()
    }

    /// The 95% interval of the mean latency `point_us` of kind `kind` and span `span` (`None`:
    /// every one), by sectioning over the sections' means; `None` when a section completed
    /// none of them (its mean does not exist) or the run reported no sections.
    pub(crate) fn mean_ci(
        &self,
        point_us: f64,
        kind: Option<usize>,
        span: Option<usize>,
    ) -> Option<(f64, f64)> {
        let tallies = self.section_tallies(kind, span);
        if tallies.iter().any(|t| t.completed == 0) {
            return None;
        }
        let means: Vec<f64> = tallies
            .iter()
            .map(|t| t.latency_ns as f64 / t.completed as f64 / 1e3)
            .collect();
        crate::stats::sectioning(point_us, &means)
    }

    /// Every replica's counters added up.
    pub(crate) fn counters(&self) -> Counters {
        let mut total = Counters::default();
        for (_, c) in &self.replicas {
            total.add(c);
        }
        total
    }
}

impl Setup {
    /// The window's length.
    pub(crate) fn duration(&self) -> Nanos {
        self.window.stop_at.saturating_sub(self.window.warmup_end)
    }

    /// Requests completed per second in the window.
    pub(crate) fn throughput(&self, o: &Outcome) -> f64 {
        o.latencies(None).len() as f64 / (self.duration().as_nanos() as f64 / 1e9)
    }

    /// The 95% interval of the rate `per_s` of kind `kind` and span `span` (`None`: every
    /// one; [`crate::stats::rate_ci`]).
    pub(crate) fn rate_ci(
        &self,
        o: &Outcome,
        per_s: f64,
        kind: Option<usize>,
        span: Option<usize>,
    ) -> Option<(f64, f64)> {
        crate::stats::rate_ci(
            per_s,
            self.duration().as_nanos() as f64 / 1e9,
            self.cfg.clients,
            o.section_tallies(kind, span).iter().map(|t| t.completed),
        )
    }

    /// The 95% interval of [`Setup::throughput`].
    pub(crate) fn throughput_ci(&self, o: &Outcome) -> Option<(f64, f64)> {
        self.rate_ci(o, self.throughput(o), None, None)
    }

    /// One [`Row`] per kind and span of request that completed in the window.
    pub(crate) fn rows(&self, o: &Outcome, workload: &str, commit: &str) -> Vec<Row> {
        let secs = self.duration().as_nanos() as f64 / 1e9;
        let us = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e3;
        let scale = self.workload.scale();
        let mut rows = Vec::new();
        for (k, name) in o.kinds.iter().enumerate() {
            for (i, (span, h)) in ["single", "multi"].iter().zip(&o.latency[k]).enumerate() {
                if h.is_empty() {
                    continue;
                }
                let (per_s, mean_us) = (h.len() as f64 / secs, h.mean() / 1e3);
                let rate_ci = self.rate_ci(o, per_s, Some(k), Some(i));
                let mean_ci = o.mean_ci(mean_us, Some(k), Some(i));
                rows.push(Row {
                    protocol: "heron",
                    multicast: self.over.name(),
                    workload: workload.to_string(),
                    runtime: self.runtime.name(),
                    profile: self.sim.profile.name.clone(),
                    software: self.sim.software.name.clone(),
                    seed: self.sim.seed,
                    partitions: self.cfg.partitions,
                    replicas: self.cfg.replicas,
                    clients: self.cfg.clients,
                    extra_wait_us: self.cfg.extra_wait.as_nanos() as f64 / 1e3,
                    items: scale.map_or(0, |s| s.items),
                    customers: scale.map_or(0, |s| s.customers),
                    capacity: scale.map_or(0, |s| s.capacity),
                    warmup_ms: self.window.warmup_end.as_nanos() as f64 / 1e6,
                    duration_ms: self.duration().as_nanos() as f64 / 1e6,
                    kind: name,
                    span,
                    completed: h.len(),
                    per_s,
                    per_s_ci95_lo: rate_ci.map(|c| c.0),
                    per_s_ci95_hi: rate_ci.map(|c| c.1),
                    mean_us,
                    mean_us_ci95_lo: mean_ci.map(|c| c.0),
                    mean_us_ci95_hi: mean_ci.map(|c| c.1),
                    p50_us: us(h, 0.5),
                    p99_us: us(h, 0.99),
                    commit: commit.to_string(),
                });
            }
        }
        rows
    }

    /// RamCast's configuration for this run.
    pub(crate) fn ramcast(&self) -> Result<ramcast::Config, String> {
        let c = &self.cfg;
        let mut rc = ramcast::Config::new(c.partitions, c.replicas, c.clients);
        rc.slots = self.slots;
        if let Some(b) = self.slot_bytes {
            rc.slot_bytes = b;
        }
        rc.timing = if self.runtime == Runtime::Sim {
            Timing::MEASURE
        } else {
            Timing::WALL
        };
        rc.validate().map_err(|e| e.to_string())?;
        Ok(rc)
    }

    /// Ridge's configuration for this run (see [`ridge_config`]).
    pub(crate) fn ridge(&self) -> Result<ridge::Config, String> {
        let mut rc = ridge_config(&self.cfg);
        rc.ring_slots = self.slots as u32;
        if let Some(b) = self.slot_bytes {
            rc.slot_bytes = b;
        }
        if self.runtime != Runtime::Sim {
            rc.timing = ridge::config::Timing::WALL;
        }
        rc.validate().map_err(|e| e.to_string())?;
        Ok(rc)
    }

    /// Checks the multicast layer's configuration.
    pub(crate) fn validate(&self) -> Result<(), String> {
        match self.over {
            Over::Ramcast => self.ramcast().map(|_| ()),
            Over::Ridge => self.ridge().map(|_| ()),
        }
    }

    /// Runs it (on the simulator or on threads; a tcp run is launched by
    /// [`Setup::launch`], whose nodes each run [`Setup::serve`]).
    pub(crate) fn run(&self) -> Result<Outcome, String> {
        self.dispatch(&Whole)
    }

    /// Launches it on the tcp runtime ([`super::tcp::Launch`]).
    pub(crate) fn launch(
        &self,
        launch: &super::tcp::Launch<'_>,
    ) -> Result<(Outcome, super::tcp::Judged), String> {
        self.dispatch(launch)
    }

    /// Runs node `id` of a tcp cluster of this experiment and writes its report to `report`.
    pub(crate) fn serve(
        &self,
        cluster: &crate::cluster::ClusterFile,
        id: usize,
        report: &std::path::Path,
    ) -> Result<(), String> {
        self.dispatch(&super::tcp::Node {
            cluster,
            id,
            report,
        })
    }

    /// Deploys Heron with this experiment's application over its multicast, and hands the
    /// deployment to `exec`.
    fn dispatch<E: Exec>(&self, exec: &E) -> Result<E::Out, String> {
        match self.over {
            Over::Ramcast => {
                let rc = Arc::new(self.ramcast()?);
                self.with_app(
                    exec,
                    (
                        |g, i| RamcastServer::new(rc.clone(), g, i),
                        |i| RamcastClient::new(rc.clone(), i),
                    ),
                )
            }
            Over::Ridge => {
                let rc = Arc::new(self.ridge()?);
                let seed = self.sim.seed;
                self.with_app(
                    exec,
                    (
                        |g, i| RidgeServer::new(rc.clone(), g, i, seed),
                        |i| RidgeClient::new(rc.clone(), i, seed),
                    ),
                )
            }
        }
    }

    /// Hands the deployment of this experiment's application over the multicast `processes`
    /// builds to `exec`.
    fn with_app<E: Exec, P: Processes>(&self, exec: &E, processes: P) -> Result<E::Out, String> {
        let mut cfg = self.cfg.clone();
        match &self.workload {
            Workload::Tpcc(t) => {
                cfg.max_response = heron::tpcc::MAX_RESPONSE;
                exec.exec(self, Deployment::new(cfg, t.clone(), processes))
            }
            Workload::Null(t) => exec.exec(
                self,
                Deployment::new(cfg, NullRequests::new(t.clone()), processes),
            ),
            Workload::Kv(k) => exec.exec(self, Deployment::new(cfg, k.clone(), processes)),
            Workload::Catchup(c) => exec.exec(self, Deployment::new(cfg, c.clone(), processes)),
        }
    }
}

/// How the multicast underneath builds its processes: a server per replica (by partition and
/// index within it) and a client per Heron client (by index).
pub(crate) trait Processes {
    /// The multicast's server.
    type Server: Multicast;
    /// The multicast's client.
    type Client: MulticastClient;
    /// The server of replica `index` of partition `group`.
    fn server(&self, group: GroupId, index: usize) -> Self::Server;
    /// The client of Heron client `index`.
    fn client(&self, index: usize) -> Self::Client;
}

/// The builders [`Setup::dispatch`] writes: the server's, then the client's.
impl<S, C, FS, FC> Processes for (FS, FC)
where
    S: Multicast,
    C: MulticastClient,
    FS: Fn(GroupId, usize) -> S,
    FC: Fn(usize) -> C,
{
    type Server = S;
    type Client = C;
    fn server(&self, group: GroupId, index: usize) -> S {
        (self.0)(group, index)
    }
    fn client(&self, index: usize) -> C {
        (self.1)(index)
    }
}

/// A Heron deployment before its nodes are built, as [`Setup::dispatch`] hands it to an
/// [`Exec`]: Heron's configuration, the replicated application and the multicast underneath.
pub(crate) struct Deployment<A, P> {
    /// Heron's deployment and tunables, as the application needs them (TPC-C raises the
    /// response bound).
    pub(crate) cfg: heron::Config,
    /// The replicated application, which every node shares.
    pub(crate) app: Arc<A>,
    /// Builds the multicast's processes.
    pub(crate) processes: P,
}

impl<A: Application, P: Processes> Deployment<A, P> {
    /// `app` deployed as `cfg` says over the multicast `processes` builds.
    fn new(cfg: heron::Config, app: A, processes: P) -> Self {
        Deployment {
            cfg,
            app: Arc::new(app),
            processes,
        }
    }

    /// Its nodes in process order ([`heron::deploy`]) with the seed and window of experiment
    /// `s`, typed for runtime `N`; `record` keeps every response a replica computes.
    pub(crate) fn nodes<N: Nic>(
        &self,
        s: &Setup,
        record: bool,
    ) -> Vec<HeronNode<P::Server, P::Client, A>>
    where
        P::Server: transport::Process<N>,
        P::Client: Client<N>,
    {
        heron::deploy::<N, _, _, _>(
            self.cfg.clone(),
            self.app.clone(),
            s.sim.seed,
            s.window,
            record,
            |g, i| self.processes.server(g, i),
            |i| self.processes.client(i),
        )
    }
}

/// What is done with a deployed Heron: run whole here ([`Whole`]: the simulator, threads) or
/// one node of a tcp cluster ([`super::tcp::Node`]).
pub(crate) trait Exec {
    /// What it leaves.
    type Out;
    /// Builds deployment `d` as experiment `s` says, and runs it.
    fn exec<A: Application + Send + Sync + 'static, P: Processes>(
        &self,
        s: &Setup,
        d: Deployment<A, P>,
    ) -> Result<Self::Out, String>;
}

/// The whole deployment, run in this process, where the experiment says.
struct Whole;

impl Exec for Whole {
    type Out = Outcome;
    fn exec<A: Application + Send + Sync + 'static, P: Processes>(
        &self,
        s: &Setup,
        d: Deployment<A, P>,
    ) -> Result<Outcome, String> {
        let kinds = d.app.kinds().to_vec();
        let started = Instant::now();
        let end = s.window.stop_at.saturating_add(Nanos(5_000_000));
        // The node types do not depend on the runtime's NIC: one deployment serves them all.
        let nodes = d.nodes::<SimNic>(s, false);
        let drive = Drive {
            runtime: s.runtime,
            seed: s.sim.seed,
            profile: Some(&s.sim.profile),
            software: &s.sim.software,
            faults: &s.sim.faults,
            limits: s.sim.profile.limits(),
            until: Some(end),
            limit: Duration::from_nanos(end.as_nanos()) + Duration::from_secs(5),
        };
        let mut read = Database::default();
        let run = drive.run_inspected(nodes, &mut read)?;
        let (nodes, events) = (run.processes, run.events);
        let (database, replicas) = (read.database, read.replicas);
        let clients: Vec<_> = nodes
            .iter()
            .filter_map(|n| match n {
                HeronNode::Client(c) => Some(c.latencies()),
                _ => None,
            })
            .collect();
        let latency = if clients.is_empty() {
            Vec::new()
        } else {
            heron::client::latency_histograms(kinds.len(), clients)
        };
        let sections = add_sections(nodes.iter().filter_map(|n| match n {
            HeronNode::Client(c) => Some(c.sections()),
            _ => None,
        }));
        Ok(Outcome {
            kinds,
            latency,
            sections,
            database,
            replicas,
            wall: started.elapsed(),
            events,
        })
    }
}

/// A multicast server Heron runs over, on any runtime: on the simulator and on threads
/// ([`heron::over::Multicast`]), over TCP, and (the driver drives every runtime) on verbs.
pub(crate) trait Multicast:
    heron::over::Multicast
    + transport::Process<TcpNic>
    + for<'a> transport::Process<heron::layered::Layered<'a, TcpNic>>
    + LayeredOnVerbs
{
}
impl<S> Multicast for S where
    S: heron::over::Multicast
        + transport::Process<TcpNic>
        + for<'a> transport::Process<heron::layered::Layered<'a, TcpNic>>
        + LayeredOnVerbs
{
}

/// A multicast server Heron's layer also runs over on the verbs runtime (every simulated
/// server, in a build without it).
pub(crate) trait LayeredOnVerbs:
    for<'a> transport::Process<heron::layered::Layered<'a, VerbsNic>>
{
}
impl<S> LayeredOnVerbs for S where
    S: for<'a> transport::Process<heron::layered::Layered<'a, VerbsNic>>
{
}

/// Every replica's partition and counters (in process order) and the database the replicas end
/// with: each partition's objects as its last replica in process order holds them. Only that
/// replica's memory is read: reading a partition's state builds its whole initial population to
/// list the objects, and reading every replica only for the last one to win took an eighth of
/// `figure heron-over`.
#[derive(Default)]
struct Database {
    replicas: Vec<(GroupId, Counters)>,
    database: BTreeMap<ObjectId, Vec<u8>>,
}

impl<S: Server, C, A: Application> Inspect<HeronNode<S, C, A>> for Database {
    fn inspect<E: Ended<Process = HeronNode<S, C, A>>>(&mut self, run: &E) {
        let mut last = BTreeMap::new();
        let servers = run
            .processes()
            .iter()
            .enumerate()
            .filter_map(|(i, n)| match n {
                HeronNode::Server(r) => Some((r, run.nic(ProcessId(i as u32)))),
                _ => None,
            });
        for (i, (r, nic)) in servers.enumerate() {
            self.replicas.push((r.group(), r.counters()));
            last.insert(r.group(), (i, r, nic));
        }
        // In process order, as if every replica were read (the replicated ITEM rows included).
        let mut last: Vec<_> = last.into_values().collect();
        last.sort_by_key(|(i, _, _)| *i);
        self.database = heron::merge_states(last.into_iter().map(|(_, r, nic)| r.state(nic)));
    }
}

/// A multicast client Heron's clients run over, on any runtime: on the simulator and on
/// threads ([`heron::over::MulticastClient`]), over TCP, and (the driver drives every runtime)
/// on verbs.
pub(crate) trait MulticastClient:
    heron::over::MulticastClient + Client<TcpNic> + ClientOnVerbs
{
}
impl<C> MulticastClient for C where C: heron::over::MulticastClient + Client<TcpNic> + ClientOnVerbs {}

/// The sections of every client (each [`heron::client::HeronClient::sections`]) added up.
pub(crate) fn add_sections<'a>(
    clients: impl IntoIterator<Item = &'a [Vec<[Tally; 2]>]>,
) -> Vec<Vec<[Tally; 2]>> {
    let mut sum: Vec<Vec<[Tally; 2]>> = Vec::new();
    for client in clients {
        if sum.is_empty() {
            sum = client.to_vec();
            continue;
        }
        for (s, c) in sum.iter_mut().zip(client) {
            for (k, ck) in s.iter_mut().zip(c) {
                for (x, y) in k.iter_mut().zip(ck) {
                    x.add(y);
                }
            }
        }
    }
    sum
}
