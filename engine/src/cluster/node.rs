//! One node of a run across OS processes (tcp, or verbs with a cluster file): serving it, its
//! report, the links it gave up and why.

use super::*;

/// What one node of a multicast run reports to whoever collects the run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NodeReport {
    /// Its role.
    pub role: String,
    /// A client's multicasts completed that started in the window.
    pub completed_in_window: u64,
    /// A client's latencies: (nanoseconds, count).
    pub latency: Vec<(u64, u64)>,
    /// A server's deliveries.
    pub delivered: u64,
    /// A server through which its group's leadership moved.
    pub changed_leader: bool,
    /// Why a server halted itself, if it did ([`multicast::Server::halt_reason`]).
    pub halted: Option<String>,
}

/// What every node reports about its connections, beside what its process reports.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Links {
    /// How the node's run ended.
    pub stop: String,
    /// Connections that closed or were refused during the run, and why (every one).
    pub events: Vec<String>,
    /// The peers whose links the node gave up on, and why.
    pub given_up: Vec<(u32, String)>,
}

impl Links {
    /// What a tcp node's run says about its connections.
    pub fn of<P>(run: &tcp::NodeRun<P>) -> Links {
        Links {
            stop: format!("{:?}", run.stop),
            events: run.events.clone(),
            given_up: run
                .given_up
                .iter()
                .map(|(p, why)| (p.0, why.clone()))
                .collect(),
        }
    }
}

/// Ends node `id`'s part of a run: writes its report (`value` beside its [`Links`]), then fails
/// if it gave up a link that no fault of the cluster file explains. A link is lost for a reason:
/// a peer killed or paused, traffic cut or delayed, or a failure (a peer that never started or
/// crashed, an address nobody listens on, a firewall); only the last fails the node, so a run
/// that lost a node nobody meant to lose does not pass as clean.
pub fn finish_node<T: Serialize>(
    cluster: &ClusterFile,
    id: usize,
    links: &Links,
    report: &Path,
    value: &T,
) -> Result<(), String> {
    write_report(report, &(links, value))?;
    let faults: Vec<ProcessFault> = cluster
        .faults
        .iter()
        .chain(&cluster.signalled)
        .map(|f| f.parse())
        .collect::<Result<_, _>>()?;
    unexplained_losses(id, &links.given_up, &faults)
}

/// [`finish_node`]'s judgement: every link node `me` gave up must be explained by a fault
/// that touches it or its peer.
pub(super) fn unexplained_losses(
    me: usize,
    given_up: &[(u32, String)],
    faults: &[ProcessFault],
) -> Result<(), String> {
    // A peer has a link per queue pair: each is named once, with the first reason.
    let mut lost: Vec<(u32, &str)> = Vec::new();
    for (peer, why) in given_up {
        let explained = faults
            .iter()
            .any(|f| f.touches(me) || f.touches(*peer as usize));
        if !explained && !lost.iter().any(|(p, _)| p == peer) {
            lost.push((*peer, why));
        }
    }
    if lost.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = lost
        .iter()
        .map(|(peer, why)| format!("node {peer} ({why})"))
        .collect();
    Err(format!(
        "node {me} gave up its links to {}, and no fault of the run acts on either end: a peer that never started or crashed, an address nobody listens on, a firewall?",
        named.join(", ")
    ))
}

/// A node's role as the cluster file names it: `server gG`, `client`, `auxiliary`.
pub fn role_of<S: Server, C>(node: &Node<S, C>) -> String {
    match node {
        Node::Server(s) => format!("server g{}", s.server.group().0),
        Node::Client(_) => "client".into(),
        Node::Auxiliary(_) => "auxiliary".into(),
    }
}

pub(super) fn member_of(role: &str) -> Option<Member> {
    match role {
        "client" => Some(Member::Client),
        "auxiliary" => Some(Member::Auxiliary),
        _ => role
            .strip_prefix("server g")?
            .parse()
            .ok()
            .map(|g| Member::Group(multicast::GroupId(g))),
    }
}

/// A histogram as a node report carries it: (value, count) of every recorded value.
pub fn histogram_counts(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// Adds a report's [`histogram_counts`] to `h`.
pub fn record_counts(h: &mut Histogram<u64>, counts: &[(u64, u64)]) -> Result<(), String> {
    for &(v, c) in counts {
        h.record_n(v, c).map_err(|err| err.to_string())?;
    }
    Ok(())
}

/// Where the log part of a node's report lives.
pub(super) fn log_dir(report: &Path) -> PathBuf {
    report.with_extension("log")
}

/// Runs node `id` of the deployment `nodes` as the cluster file says, then writes its report
/// (and, with `log`, its part of the delivery log beside it).
pub fn serve<S, C>(
    e: &Experiment,
    nodes: Vec<Node<S, C>>,
    cluster: &ClusterFile,
    id: usize,
    report: &Path,
) -> Result<(), String>
where
    S: Server + Observed,
    Node<S, C>: Process<TcpNic> + crate::runtime::OnVerbs + Send,
{
    let mut roles: Vec<String> = nodes.iter().map(role_of).collect();
    cluster.check_node(id, &roles)?;
    let specs: Vec<_> = nodes.iter().map(Process::<TcpNic>::regions).collect();
    let node = nodes.into_iter().nth(id).expect("checked");
    let role = roles.swap_remove(id);
    let limit = e.warmup.saturating_add(e.duration).saturating_add(DRAIN);
    let limit = Duration::from_nanos(limit.as_nanos());
    let (process, links) = if e.runtime == crate::runtime::Runtime::Verbs {
        serve_on_verbs(cluster, id, &specs, node, e.seed, limit)?
    } else {
        let run = run_as_node(cluster, id, &specs, node, e.seed, limit, None)?;
        let links = Links::of(&run);
        (run.process, links)
    };
    let mut r = NodeReport {
        role,
        ..NodeReport::default()
    };
    match &process {
        Node::Client(c) => {
            r.completed_in_window = c.completed_in_window;
            r.latency = histogram_counts(&latency_histogram([&c.latencies]));
        }
        Node::Server(s) | Node::Auxiliary(s) => {
            r.delivered = s.delivered;
            r.changed_leader = s.server.changed_leader();
            r.halted = s.server.halt_reason().map(str::to_owned);
        }
    }
    if e.log {
        let mut log = DeliveryLog::default();
        multicast::log_node(&mut log, ProcessId(id as u32), &process, false);
        let dir = log_dir(report);
        std::fs::create_dir_all(&dir).map_err(|err| format!("{}: {err}", dir.display()))?;
        log.write_csv(&dir).map_err(|err| err.to_string())?;
    }
    finish_node(cluster, id, &links, report, &r)
}

/// Runs `process` as node `id` of `cluster` (`specs`: every node's regions, `seed` the run's)
/// until its clock reads `limit`. With `barrier` (this node's report path), the run also ends
/// when the launcher says every node is done: the node marks itself done (`REPORT.done`) once
/// its process is, stops polling when the launcher's `stop` file appears beside the report (and
/// says so: `REPORT.stopped`), and exits when the `exit` file appears. A node that left as soon
/// as it was done would look crashed to the others while they still need it.
pub fn run_as_node<P: Process<TcpNic> + Send>(
    cluster: &ClusterFile,
    id: usize,
    specs: &[Vec<transport::RegionSpec>],
    process: P,
    seed: u64,
    limit: Duration,
    barrier: Option<&Path>,
) -> Result<tcp::NodeRun<P>, String> {
    let (addrs, bind) = cluster.place(id, specs.len())?;
    let listener =
        tcp::listen(bind).map_err(|err| format!("node {id}: listen on {bind}: {err}"))?;
    let config = cluster.config(seed)?;
    with_barrier(barrier, |signals| {
        tcp::run_node(
            &config,
            ProcessId(id as u32),
            specs,
            addrs,
            listener,
            process,
            limit,
            signals,
        )
        .map_err(|err| format!("node {id}: {err}"))
    })
}

/// Runs `node` (given the launcher's signals with `barrier`, this node's report path) while a
/// thread of its own relays the launcher's barrier: it marks the node done (`REPORT.done`) once
/// its process is, tells it to stop polling when the launcher's `stop` file appears beside the
/// report (and says so: `REPORT.stopped`), and to exit when the `exit` file appears.
fn with_barrier<T>(
    barrier: Option<&Path>,
    node: impl FnOnce(Option<std::sync::Arc<tcp::NodeSignals>>) -> T,
) -> T {
    use std::sync::atomic::{AtomicBool, Ordering};
    let signals = barrier.map(|_| std::sync::Arc::new(tcp::NodeSignals::default()));
    let finished = AtomicBool::new(false);
    std::thread::scope(|s| {
        if let (Some(report), Some(signals)) = (barrier, &signals) {
            let marker = |step: &str| report.with_extension(step);
            let step = |name: &str| report.with_file_name(name);
            let finished = &finished;
            s.spawn(move || {
                let (mut done, mut stopped) = (false, false);
                while !finished.load(Ordering::Relaxed) {
                    if !done && signals.done.load(Ordering::Relaxed) {
                        done = std::fs::write(marker("done"), b"").is_ok();
                    }
                    if step("stop").exists() {
                        signals.stop.store(true, Ordering::Relaxed);
                    }
                    if !stopped && signals.stopped.load(Ordering::Relaxed) {
                        stopped = std::fs::write(marker("stopped"), b"").is_ok();
                    }
                    if step("exit").exists() {
                        signals.exit.store(true, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
        }
        let out = node(signals.clone());
        finished.store(true, Ordering::Relaxed);
        out
    })
}

/// Runs `process` as node `id` of `cluster` on the verbs runtime, on `provider`'s device as
/// `cfg` names it (`specs`: every node's regions), until `limit` or the launcher's barrier
/// (`barrier`, as for [`run_as_node`]) ends it: its queue pairs connect through the device, its
/// control streams through the cluster file's addresses, proving the cluster secret. The
/// verbs runtime has no fault layer, so a cluster file with network faults is refused; the
/// launcher's kills and pauses act on the node's process as on tcp.
#[allow(
    clippy::too_many_arguments,
    reason = "the node's inputs, each named once"
)]
pub fn run_as_verbs_node<V: verbs::rdma::Provider, P>(
    provider: &V,
    cluster: &ClusterFile,
    id: usize,
    specs: &[Vec<transport::RegionSpec>],
    process: P,
    cfg: &verbs::rdma::VerbsConfig,
    limit: Duration,
    barrier: Option<&Path>,
) -> Result<(P, Links), String>
where
    P: Process<verbs::rdma::VerbsNic<V::Ctx>> + Send,
{
    if let Some(f) = cluster.faults.first() {
        return Err(format!(
            "`{f}` in the cluster file: the verbs runtime has no fault layer (the device carries the traffic); kill and pause faults act on its nodes, network faults need --runtime tcp"
        ));
    }
    let (addrs, bind) = cluster.place(id, specs.len())?;
    let listener = std::net::TcpListener::bind(bind)
        .map_err(|err| format!("node {id}: listen on {bind}: {err}"))?;
    let secret = cluster.secret()?;
    let process = with_barrier(barrier, |signals| {
        let node = verbs::rdma::NodeSpec {
            cfg,
            me: ProcessId(id as u32),
            specs,
            listener: &listener,
            addrs: &addrs,
            secret: &secret,
            limit,
            signals,
        };
        verbs::rdma::run_node(provider, node, process).map_err(|err| format!("node {id}: {err}"))
    })?;
    let links = Links {
        stop: "the run's end".into(),
        ..Links::default()
    };
    Ok((process, links))
}

/// [`run_as_verbs_node`] on the device the environment names (`RDMA_DEVICE`, ...).
#[cfg(feature = "verbs")]
fn serve_on_verbs<P: crate::runtime::OnVerbs + Send>(
    cluster: &ClusterFile,
    id: usize,
    specs: &[Vec<transport::RegionSpec>],
    process: P,
    seed: u64,
    limit: Duration,
) -> Result<(P, Links), String> {
    let cfg = crate::runtime::verbs_config(seed)?;
    run_as_verbs_node(
        &verbs::sideway::Sideway,
        cluster,
        id,
        specs,
        process,
        &cfg,
        limit,
        None,
    )
}

/// Without the verbs runtime in this build, a verbs node says how to get it.
#[cfg(not(feature = "verbs"))]
fn serve_on_verbs<P>(
    _: &ClusterFile,
    _: usize,
    _: &[Vec<transport::RegionSpec>],
    _: P,
    _: u64,
    _: Duration,
) -> Result<(P, Links), String> {
    Err(crate::runtime::verbs_missing())
}

/// `host:port`, resolved to its first address.
pub(super) fn resolve(addr: &str) -> Result<SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("`{addr}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{addr}` resolves to nothing"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use multicast::testing::load_until;
    use multicast::DestPolicy;
    use verbs::fake::{Fabric, FakeConfig, FakeCtx};
    use verbs::rdma::{VerbsConfig, VerbsNic};

    /// The node side of a verbs cluster launch, each node a thread here (a fake fabric cannot
    /// span OS processes): RamCast's nodes connect over loopback control streams that prove
    /// the secret, run through the fake device for their time, and their log keeps every
    /// property.
    #[test]
    fn ramcast_nodes_of_a_verbs_cluster_keep_every_property() {
        let mut cfg = ramcast::Config::new(2, 3, 2);
        cfg.timing = ramcast::Timing::WALL;
        let load = load_until(DestPolicy::Random(2), 2, 64, Nanos(1_000_000_000));
        let nodes = ramcast::nodes(&cfg, load, 7, true);
        let cluster = ClusterFile {
            run: Vec::new(),
            secret: Some("0123456789abcdef0123456789abcdef".into()),
            start_at_unix_ns: None,
            faults: Vec::new(),
            signalled: Vec::new(),
            nodes: free_ports(nodes.len())
                .unwrap()
                .into_iter()
                .map(|port| NodeEntry {
                    addr: format!("127.0.0.1:{port}"),
                    listen: None,
                    role: String::new(),
                    exec: Vec::new(),
                })
                .collect(),
        };
        let specs: Vec<_> = nodes
            .iter()
            .map(Process::<VerbsNic<FakeCtx>>::regions)
            .collect();
        let fabric = Fabric::new(FakeConfig::default());
        let vcfg = VerbsConfig {
            recv_depth: 4,
            recv_size: 4096,
            staging: 256 << 10,
            chunk: 64 << 10,
            ..VerbsConfig::default()
        };
        let limit = Duration::from_millis(2_500);
        let processes: Vec<_> = std::thread::scope(|s| {
            let running: Vec<_> = nodes
                .into_iter()
                .enumerate()
                .map(|(i, node)| {
                    let (fabric, cluster, specs, vcfg) = (&fabric, &cluster, &specs, &vcfg);
                    s.spawn(move || {
                        run_as_verbs_node(fabric, cluster, i, specs, node, vcfg, limit, None)
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|h| h.join().unwrap().unwrap().0)
                .collect()
        });
        let log = multicast::collect_log(&processes, |_| false);
        let delivered: usize = log.deliveries.values().map(Vec::len).sum();
        assert!(delivered >= 100, "only {delivered} deliveries");
        let v = multicast::check(&log);
        assert!(v.is_empty(), "{v:?}");
    }

    /// A cluster file with network faults is refused on verbs, which has no fault layer.
    #[test]
    fn a_verbs_node_refuses_network_faults() {
        let cluster = ClusterFile {
            run: Vec::new(),
            secret: Some("0123456789abcdef0123456789abcdef".into()),
            start_at_unix_ns: None,
            faults: vec!["loss:0-1@1s+1s=0.5".into()],
            signalled: Vec::new(),
            nodes: Vec::new(),
        };
        let fabric = Fabric::new(FakeConfig::default());
        let load = load_until(DestPolicy::Random(1), 1, 64, Nanos::ZERO);
        let node = ramcast::nodes(&ramcast::Config::new(1, 1, 1), load, 7, false).remove(0);
        let e = run_as_verbs_node(
            &fabric,
            &cluster,
            0,
            &[],
            node,
            &VerbsConfig::default(),
            Duration::ZERO,
            None,
        )
        .unwrap_err();
        assert!(e.contains("no fault layer"), "{e}");
    }
}
