//! One node of a tcp run: serving it, its report, the links it gave up and why.

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
    pub(super) fn of<P>(run: &tcp::NodeRun<P>) -> Links {
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
pub fn finish_node<P, T: Serialize>(
    cluster: &ClusterFile,
    id: usize,
    run: &tcp::NodeRun<P>,
    report: &Path,
    value: &T,
) -> Result<(), String> {
    let links = Links::of(run);
    write_report(report, &(&links, value))?;
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
    Node<S, C>: Process<TcpNic> + Send,
{
    let mut roles: Vec<String> = nodes.iter().map(role_of).collect();
    cluster.check_node(id, &roles)?;
    let specs: Vec<_> = nodes.iter().map(Process::<TcpNic>::regions).collect();
    let node = nodes.into_iter().nth(id).expect("checked");
    let role = roles.swap_remove(id);
    let limit = e.warmup.saturating_add(e.duration).saturating_add(DRAIN);
    let run = run_as_node(
        cluster,
        id,
        &specs,
        node,
        e.seed,
        Duration::from_nanos(limit.as_nanos()),
        None,
    )?;
    let mut r = NodeReport {
        role,
        ..NodeReport::default()
    };
    match &run.process {
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
        multicast::log_node(&mut log, ProcessId(id as u32), &run.process, false);
        let dir = log_dir(report);
        std::fs::create_dir_all(&dir).map_err(|err| format!("{}: {err}", dir.display()))?;
        log.write_csv(&dir).map_err(|err| err.to_string())?;
    }
    finish_node(cluster, id, &run, report, &r)
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
    use std::sync::atomic::{AtomicBool, Ordering};
    let addrs = cluster.addrs()?;
    if addrs.len() != specs.len() {
        return Err(format!(
            "the cluster file lists {} nodes, the run it names deploys {}",
            addrs.len(),
            specs.len()
        ));
    }
    if id >= addrs.len() {
        return Err(format!(
            "--id {id}: the cluster has nodes 0..{}",
            addrs.len()
        ));
    }
    let bind = cluster.bind_addr(id)?;
    let listener =
        tcp::listen(bind).map_err(|err| format!("node {id}: listen on {bind}: {err}"))?;
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
        let run = tcp::run_node(
            &cluster.config(seed)?,
            ProcessId(id as u32),
            specs,
            addrs,
            listener,
            process,
            limit,
            signals.clone(),
        );
        finished.store(true, Ordering::Relaxed);
        run.map_err(|err| format!("node {id}: {err}"))
    })
}

/// `host:port`, resolved to its first address.
pub(super) fn resolve(addr: &str) -> Result<SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("`{addr}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{addr}` resolves to nothing"))
}
