//! `--runtime tcp`: a run whose every process is an OS process of its own, talking RDMA
//! semantics over TCP ([`transport::runtime::tcp`]).
//!
//! A **cluster file** (TOML) says where each node listens and what they all run:
//!
//! ```toml
//! run = ["--protocol", "ramcast", "--groups", "3", "--clients", "3", "--duration", "10s"]
//! secret = "8f2c..."            # only nodes that hold it may connect (at least 16 bytes)
//!
//! [[node]]                      # node 0 = process 0, and so on
//! addr = "10.0.0.1:7000"
//! role = "server g0"            # what the deployment makes of it; checked at start
//! # listen = "0.0.0.0:7000"     # where it binds, if not at addr (behind NAT)
//! ```
//!
//! Every connection proves the secret (HMAC challenge-response both ways, `transport`'s
//! `tcp::Secret`); there is no unauthenticated mode. `harness run --runtime tcp` draws a fresh
//! secret from the OS random source (or takes the hosts file's own) and hands it to each node
//! down its standard input (`harness node --secret-stdin`): the cluster file it writes holds
//! none, and its scratch directory is the owner's only (0700). A node listens at its own
//! address only (loopback for the embedded default), never on every interface unless its
//! entry's `listen` says so.
//!
//! `harness node --cluster FILE --id N` runs node N (on any host: the addresses are the
//! hosts'), and writes its report (counts, latencies, its part of the delivery log, its
//! connection events) where `--report` says. A node that gave up its link to a peer (it never
//! answered, stopped taking what was sent, or refused a re-dial) fails, naming the peer and
//! why, unless a fault the cluster file lists acts on either end: `faults`, or the kills and
//! pauses under `signalled` that `harness run --runtime tcp` sends by signal. `harness run --runtime tcp` is the embedded default: it writes a cluster
//! file of free loopback ports, starts every node as a child process, injects the faults asked
//! for (`--fault kill:N@T`: SIGKILL; `--fault pause:N@T+D`: SIGSTOP, then SIGCONT), collects
//! the reports, and prints and checks the run as on the other runtimes. With `--cluster
//! HOSTS`, a cluster file without `run`, the nodes listen at the hosts' addresses and start
//! through each entry's `exec` prefix (a network namespace, an ssh login); the reports must
//! come back to this host's filesystem (a shared directory), as they do in the namespace test.

use crate::experiment::{Experiment, Measured, Observed};
use hdrhistogram::Histogram;
use multicast::workload::latency_histogram;
use multicast::{DeliveryLog, Member, Node, Server};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};
use transport::runtime::fault_text::FaultText;
use transport::runtime::tcp::faults::{LinkEffect, LinkFault};
use transport::runtime::tcp::{self, TcpConfig, TcpNic};
use transport::{Nanos, Process, ProcessId};

/// How long a multicast run's nodes go on after the clients stop issuing, so what is in
/// flight completes: longer than a lost request takes to be recovered under the protocols'
/// wall-clock timing (a Ridge client retries after 1 s; a suspicion takes 200 ms). With 1 s,
/// a Ridge run whose coordinator was killed ended with its last requests undelivered, which
/// the checker rightly calls a validity violation of the log as it stood.
pub(crate) const DRAIN: Nanos = Nanos(3_000_000_000);

/// A cluster file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClusterFile {
    /// The arguments of `harness run` every node executes (without `run` itself). Left out in
    /// a hosts file given to `harness run --cluster`, whose own arguments are the run.
    #[serde(default)]
    pub(crate) run: Vec<String>,
    /// The cluster secret (at least 16 bytes). Left out in a cluster file whose nodes get it
    /// down their standard input (`harness node --secret-stdin`), as `harness run` starts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) secret: Option<String>,
    /// Time zero of every node's clock, nanoseconds since the Unix epoch: the nodes start
    /// together then ([`TcpConfig::start_at`]) [default: each when its bootstrap ends].
    #[serde(default)]
    pub(crate) start_at_unix_ns: Option<u64>,
    /// Network faults the nodes inject between themselves, in `harness run --fault` syntax
    /// (`delay:`, `loss:`, `partition:`), timed from time zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) faults: Vec<String>,
    /// Kills and pauses the launcher sends by signal (`harness run --fault`), listed so that
    /// each node can tell a link lost to one of them from a failure ([`finish_node`]); the
    /// nodes inject none of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) signalled: Vec<String>,
    /// One entry per node, in process-id order.
    #[serde(rename = "node")]
    pub(crate) nodes: Vec<NodeEntry>,
}

/// One node of a cluster file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeEntry {
    /// `host:port` where the other nodes reach it; it listens there too, unless `listen` says
    /// otherwise.
    pub(crate) addr: String,
    /// `host:port` it binds instead of `addr` (behind NAT, or `0.0.0.0:PORT` to listen on
    /// every interface: asked for, never the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) listen: Option<String>,
    /// Its role in the deployment ([`role_of`]); `harness run --cluster` fills it in.
    #[serde(default)]
    pub(crate) role: String,
    /// How `harness run --cluster` starts this node: a command prefix such as
    /// `["ip", "netns", "exec", "ns3"]` or `["ssh", "host3"]` (the node's own command line
    /// follows it) [default: none, a child process here].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) exec: Vec<String>,
}

impl ClusterFile {
    /// Reads and checks a cluster file as a whole: at least one node, addresses that resolve,
    /// none twice and none (nor a `listen`) at port 0, a secret long enough if it has one, a time zero not far
    /// in the future. The file is read up to [`transport::input::MAX_INPUT`] bytes.
    pub(crate) fn load(path: &Path) -> Result<ClusterFile, String> {
        let text = transport::input::read_capped(path)?;
        let c: ClusterFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        c.check().map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(c)
    }

    fn check(&self) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("no [[node]] entries".into());
        }
        let addrs = self.addrs()?;
        for (i, a) in addrs.iter().enumerate() {
            if a.port() == 0 {
                return Err(format!(
                    "node {i}: address `{}` has port 0; give every node a fixed port",
                    self.nodes[i].addr
                ));
            }
            if let Some(j) = addrs[..i].iter().position(|b| b == a) {
                return Err(format!(
                    "nodes {j} and {i} both at {a}: one address per node"
                ));
            }
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(l) = &n.listen {
                let bind = resolve(l).map_err(|e| format!("node {i}: listen {e}"))?;
                // Peers dial `addr`: a node bound to a port the kernel picks is never found.
                if bind.port() == 0 {
                    return Err(format!(
                        "node {i}: listen `{l}` has port 0; bind the port peers dial at `{}`",
                        n.addr
                    ));
                }
            }
        }
        for text in &self.signalled {
            let f: ProcessFault = text.parse()?;
            if matches!(f, ProcessFault::Net { .. }) {
                return Err(format!(
                    "`{f}` in `signalled`: only kills and pauses go there; network faults go in `faults`"
                ));
            }
        }
        if let Some(s) = &self.secret {
            tcp::Secret::new(s.as_bytes())?;
        }
        if let Some(ns) = self.start_at_unix_ns {
            let ahead = Duration::from_nanos(ns)
                .saturating_sub(std::time::UNIX_EPOCH.elapsed().unwrap_or_default());
            let most = tcp::Bounds::default().start_wait;
            if ahead > most {
                return Err(format!(
                    "start_at_unix_ns is {} s in the future, more than the {} s a node waits; set it closer (or leave it out to start each node when its bootstrap ends)",
                    ahead.as_secs(),
                    most.as_secs()
                ));
            }
        }
        Ok(())
    }

    /// Takes the cluster secret from standard input (one line, as `harness run` writes it),
    /// for a node started with `--secret-stdin`. A file that has its own must agree.
    pub(crate) fn read_secret_from_stdin(&mut self) -> Result<(), String> {
        let mut line = String::new();
        use std::io::Read;
        std::io::stdin()
            .lock()
            .take(4096)
            .read_to_string(&mut line)
            .map_err(|e| format!("--secret-stdin: {e}"))?;
        let piped = line.trim_end_matches(['\r', '\n']).to_string();
        tcp::Secret::new(piped.as_bytes()).map_err(|e| format!("--secret-stdin: {e}"))?;
        match &self.secret {
            Some(own) if *own != piped => Err(
                "--secret-stdin: the secret on standard input differs from the cluster file's own"
                    .into(),
            ),
            _ => {
                self.secret = Some(piped);
                Ok(())
            }
        }
    }

    /// Every node's address, resolved.
    pub(crate) fn addrs(&self) -> Result<Vec<SocketAddr>, String> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| resolve(&n.addr).map_err(|e| format!("node {i}: address {e}")))
            .collect()
    }

    /// Where node `id` binds: its `listen` entry, or its own address.
    fn bind_addr(&self, id: usize) -> Result<SocketAddr, String> {
        let n = &self.nodes[id];
        resolve(n.listen.as_deref().unwrap_or(&n.addr))
    }

    /// Checks that this file describes a deployment of `roles` (every node's, in process
    /// order), and that node `id` is one of them.
    pub(crate) fn check_node(&self, id: usize, roles: &[String]) -> Result<(), String> {
        if self.nodes.len() != roles.len() {
            return Err(format!(
                "the cluster file lists {} nodes, the run it names deploys {}",
                self.nodes.len(),
                roles.len()
            ));
        }
        let Some(role) = roles.get(id) else {
            return Err(format!(
                "--id {id}: the cluster has nodes 0..{}",
                roles.len()
            ));
        };
        if self.nodes[id].role != *role {
            return Err(format!(
                "node {id} is a {role} in this deployment, the cluster file says `{}`: regenerate the file from the same run",
                self.nodes[id].role
            ));
        }
        Ok(())
    }

    /// The configuration every node of this cluster runs with.
    pub(crate) fn config(&self, seed: u64) -> Result<TcpConfig, String> {
        let n = self.nodes.len();
        let mut faults = Vec::new();
        for text in &self.faults {
            let f: ProcessFault = text.parse()?;
            if !matches!(f, ProcessFault::Net { .. }) {
                return Err(format!(
                    "`{f}` in the cluster file's faults: only network faults (delay, loss, partition) go there; the launcher sends kills and pauses"
                ));
            }
            if let Some(i) = f.nodes().into_iter().find(|&i| i as usize >= n) {
                return Err(format!("`{f}`: node {i}, but the cluster has nodes 0..{n}"));
            }
            faults.extend(f.link_faults(n));
        }
        let Some(secret) = &self.secret else {
            return Err("the cluster file has no `secret`: add one of at least 16 bytes (`secret = \"<output of openssl rand -hex 32>\"`), or start the nodes with `harness run --runtime tcp --cluster`, which hands each node one (`harness node --secret-stdin`)".into());
        };
        Ok(TcpConfig {
            seed,
            secret: tcp::Secret::new(secret.as_bytes())?,
            // Many nodes may share few cores: an idle one parks soon instead of spinning
            // (12 RamCast nodes on 2 cores: 902 msg/s spinning 10 polls, 480 at 200, 153 at
            // 1000).
            spin_polls: 10,
            start_at: self
                .start_at_unix_ns
                .map(|ns| std::time::UNIX_EPOCH + Duration::from_nanos(ns)),
            faults,
            ..TcpConfig::default()
        })
    }
}

/// What one node of a multicast run reports to whoever collects the run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct NodeReport {
    /// Its role.
    pub(crate) role: String,
    /// A client's multicasts completed that started in the window.
    pub(crate) completed_in_window: u64,
    /// A client's latencies: (nanoseconds, count).
    pub(crate) latency: Vec<(u64, u64)>,
    /// A server's deliveries.
    pub(crate) delivered: u64,
    /// A server through which its group's leadership moved.
    pub(crate) changed_leader: bool,
    /// Why a server halted itself, if it did ([`multicast::Server::halt_reason`]).
    pub(crate) halted: Option<String>,
}

/// What every node reports about its connections, beside what its process reports.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Links {
    /// How the node's run ended.
    pub(crate) stop: String,
    /// Connections that closed or were refused during the run, and why (every one).
    pub(crate) events: Vec<String>,
    /// The peers whose links the node gave up on, and why.
    pub(crate) given_up: Vec<(u32, String)>,
}

impl Links {
    fn of<P>(run: &tcp::NodeRun<P>) -> Links {
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
pub(crate) fn finish_node<P, T: Serialize>(
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
fn unexplained_losses(
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
pub(crate) fn role_of<S: Server, C>(node: &Node<S, C>) -> String {
    match node {
        Node::Server(s) => format!("server g{}", s.server.group().0),
        Node::Client(_) => "client".into(),
        Node::Auxiliary(_) => "auxiliary".into(),
    }
}

fn member_of(role: &str) -> Option<Member> {
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
pub(crate) fn histogram_counts(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// Adds a report's [`histogram_counts`] to `h`.
pub(crate) fn record_counts(h: &mut Histogram<u64>, counts: &[(u64, u64)]) -> Result<(), String> {
    for &(v, c) in counts {
        h.record_n(v, c).map_err(|err| err.to_string())?;
    }
    Ok(())
}

/// Where the log part of a node's report lives.
fn log_dir(report: &Path) -> PathBuf {
    report.with_extension("log")
}

/// Runs node `id` of the deployment `nodes` as the cluster file says, then writes its report
/// (and, with `log`, its part of the delivery log beside it).
pub(crate) fn serve<S, C>(
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
pub(crate) fn run_as_node<P: Process<TcpNic> + Send>(
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
fn resolve(addr: &str) -> Result<SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("`{addr}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{addr}` resolves to nothing"))
}

/// A fault of a tcp run: on a node process (the launcher sends it signals) or on the network
/// between nodes (the nodes' fault layer, [`transport::runtime::tcp::faults`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ProcessFault {
    /// SIGKILL node `node` at `at` after start.
    Kill { node: u32, at: Nanos },
    /// SIGSTOP node `node` at `at`, SIGCONT `span` later.
    Pause { node: u32, at: Nanos, span: Nanos },
    /// What the nodes `from` send to the nodes `to` during `[at, at + span)` suffers
    /// `effect`; a partition cuts both ways.
    Net {
        at: Nanos,
        span: Nanos,
        from: Nodes,
        to: Nodes,
        effect: NetEffect,
    },
}

/// Some nodes of a run: a list of ids, or `*`, every node (in a partition, every node not on
/// the other side).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Nodes {
    All,
    Some(Vec<u32>),
}

/// What a [`ProcessFault::Net`] does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum NetEffect {
    Delay(Nanos),
    Loss(f64),
    Partition,
}

const FAULT_USAGE: &str = "a fault is kill:NODE@TIME, pause:NODE@TIME+DURATION, delay:FROM>TO@TIME+DURATION=DELAY, loss:FROM>TO@TIME+DURATION=PROBABILITY or partition:SIDE|SIDE@TIME+DURATION (nodes: ids separated by commas, or * for all), e.g. kill:0@3s, pause:4@2s+500ms, delay:0>3,4@1s+2s=5ms, loss:*>0@1s+1s=0.1, partition:0,1|*@2s+1s";

impl FromStr for ProcessFault {
    type Err = String;
    fn from_str(s: &str) -> Result<ProcessFault, String> {
        let usage = || format!("`{s}`: {FAULT_USAGE}");
        let t = FaultText::parse(s).map_err(|e| format!("{e}: {FAULT_USAGE}"))?;
        let (at, who) = (t.at, t.who);
        let node = || who.parse::<u32>().map_err(|_| usage());
        let nodes = |n: &str| -> Result<Nodes, String> {
            if n == "*" {
                return Ok(Nodes::All);
            }
            n.split(',')
                .map(|x| x.parse::<u32>().map_err(|_| usage()))
                .collect::<Result<_, _>>()
                .map(Nodes::Some)
        };
        match (t.kind, t.span, t.value) {
            ("kill", None, None) => Ok(ProcessFault::Kill { node: node()?, at }),
            ("pause", Some(span), None) => Ok(ProcessFault::Pause {
                node: node()?,
                at,
                span,
            }),
            (kind @ ("delay" | "loss" | "partition"), Some(span), value) => {
                let sides = if kind == "partition" { '|' } else { '>' };
                let (from, to) = who.split_once(sides).ok_or_else(usage)?;
                let (from, to) = (nodes(from)?, nodes(to)?);
                if kind == "partition" && from == Nodes::All && to == Nodes::All {
                    return Err(format!("`{s}`: a partition needs one side named"));
                }
                let effect = match (kind, value) {
                    ("delay", Some(v)) => NetEffect::Delay(crate::experiment::parse_duration(v)?),
                    ("loss", Some(v)) => match v.parse::<f64>() {
                        Ok(p) if (0.0..=1.0).contains(&p) => NetEffect::Loss(p),
                        _ => return Err(format!("`{s}`: a loss probability is 0 to 1, got `{v}`")),
                    },
                    ("partition", None) => NetEffect::Partition,
                    _ => return Err(usage()),
                };
                Ok(ProcessFault::Net {
                    at,
                    span,
                    from,
                    to,
                    effect,
                })
            }
            _ => Err(usage()),
        }
    }
}

impl fmt::Display for Nodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Nodes::All => write!(f, "*"),
            Nodes::Some(ids) => {
                let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
                write!(f, "{}", ids.join(","))
            }
        }
    }
}

impl fmt::Display for ProcessFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessFault::Kill { node, at } => write!(f, "kill:{node}@{}", at.exact()),
            ProcessFault::Pause { node, at, span } => {
                write!(f, "pause:{node}@{}+{}", at.exact(), span.exact())
            }
            ProcessFault::Net {
                at,
                span,
                from,
                to,
                effect,
            } => {
                let (at, span) = (at.exact(), span.exact());
                match effect {
                    NetEffect::Delay(d) => {
                        write!(f, "delay:{from}>{to}@{at}+{span}={}", d.exact())
                    }
                    NetEffect::Loss(p) => write!(f, "loss:{from}>{to}@{at}+{span}={p}"),
                    NetEffect::Partition => write!(f, "partition:{from}|{to}@{at}+{span}"),
                }
            }
        }
    }
}

impl ProcessFault {
    /// When it stops acting: a kill when it strikes, a pause or a network fault at its end.
    pub(crate) fn ends_at(&self) -> Nanos {
        match *self {
            ProcessFault::Kill { at, .. } => at,
            ProcessFault::Pause { at, span, .. } | ProcessFault::Net { at, span, .. } => {
                at.saturating_add(span)
            }
        }
    }

    /// Whether this fault can make node `i` unresponsive (paused, or its traffic delayed,
    /// lost or cut), the only way a correct server is excluded and then halts.
    pub(crate) fn impairs(&self, i: usize) -> bool {
        let has = |n: &Nodes| match n {
            Nodes::All => true,
            Nodes::Some(ids) => ids.contains(&(i as u32)),
        };
        match self {
            ProcessFault::Kill { .. } => false,
            ProcessFault::Pause { node, .. } => *node as usize == i,
            ProcessFault::Net { from, to, .. } => has(from) || has(to),
        }
    }

    /// Whether it acts on node `i` at all: kills or pauses it, or acts on its traffic. A link
    /// to or from such a node may be lost to it.
    fn touches(&self, i: usize) -> bool {
        match self {
            ProcessFault::Kill { node, .. } => *node as usize == i,
            _ => self.impairs(i),
        }
    }

    /// The node ids it names.
    fn nodes(&self) -> Vec<u32> {
        match self {
            ProcessFault::Kill { node, .. } | ProcessFault::Pause { node, .. } => vec![*node],
            ProcessFault::Net { from, to, .. } => [from, to]
                .into_iter()
                .flat_map(|n| match n {
                    Nodes::All => Vec::new(),
                    Nodes::Some(ids) => ids.clone(),
                })
                .collect(),
        }
    }

    /// The fault layer's directed link faults for a run of `n` nodes (none for a process
    /// fault).
    fn link_faults(&self, n: usize) -> Vec<LinkFault> {
        let ProcessFault::Net {
            at,
            span,
            from,
            to,
            effect,
        } = self
        else {
            return Vec::new();
        };
        let expand = |side: &Nodes, other: &Nodes| -> Vec<ProcessId> {
            match (side, other) {
                (Nodes::Some(ids), _) => ids.iter().map(|&i| ProcessId(i)).collect(),
                // A partition's `*` side: everyone not on the other side.
                (Nodes::All, Nodes::Some(ids)) if *effect == NetEffect::Partition => (0..n as u32)
                    .filter(|i| !ids.contains(i))
                    .map(ProcessId)
                    .collect(),
                (Nodes::All, _) => (0..n as u32).map(ProcessId).collect(),
            }
        };
        let (a, b) = (expand(from, to), expand(to, from));
        let fault = |from: Vec<ProcessId>, to: Vec<ProcessId>, effect| LinkFault {
            at: Duration::from_nanos(at.as_nanos()),
            span: Duration::from_nanos(span.as_nanos()),
            from,
            to,
            effect,
        };
        match *effect {
            NetEffect::Delay(d) => vec![fault(
                a,
                b,
                LinkEffect::Delay(Duration::from_nanos(d.as_nanos())),
            )],
            NetEffect::Loss(p) => vec![fault(a, b, LinkEffect::Loss(p))],
            NetEffect::Partition => vec![
                fault(a.clone(), b.clone(), LinkEffect::Partition),
                fault(b, a, LinkEffect::Partition),
            ],
        }
    }
}

#[allow(unsafe_code)]
fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid; no memory is touched.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
}

/// Removes the scratch directories in `tmp` of launchers that are gone: a launcher killed with
/// SIGKILL cannot remove its own. One is taken for such only if it is exactly what
/// [`spawn_nodes`] makes (`harness-tcp-PID-STAMP`, both numbers; this user's; mode 0700; a
/// `cluster.toml` inside) and no process PID is visible. It holds reports and a cluster file,
/// never the secret. A live launcher in another PID namespace sharing `tmp` would look gone;
/// its run would fail on its missing reports, nothing else lost.
fn sweep_orphans(tmp: &Path) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // Without /proc no PID can be told dead: sweep nothing. This process's uid is its /proc
    // entry's owner.
    let (Ok(me), Ok(entries)) = (std::fs::metadata("/proc/self"), std::fs::read_dir(tmp)) else {
        return;
    };
    let me = me.uid();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("harness-tcp-"))
            .and_then(|rest| rest.split_once('-'))
            .filter(|(pid, stamp)| {
                [pid, stamp]
                    .iter()
                    .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        // symlink_metadata: a link named like a scratch directory is not one.
        let ours = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_dir() && m.uid() == me && m.permissions().mode() & 0o777 == 0o700);
        if ours
            && path.join("cluster.toml").is_file()
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// A scratch directory for one launched run, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The nodes of a finished tcp run: their reports (in a scratch directory, removed when this
/// is dropped) and which nodes were killed.
pub(crate) struct Launched {
    dir: Scratch,
    /// Nodes killed by a fault: they wrote no report.
    pub(crate) killed: Vec<bool>,
    /// From the start of the first node to the end of the last.
    pub(crate) wall: Duration,
}

impl Launched {
    /// Node `i`'s report: its connections and what its process reported ([`finish_node`]).
    pub(crate) fn report<T: serde::de::DeserializeOwned>(
        &self,
        i: usize,
    ) -> Result<(Links, T), String> {
        let path = self.dir.0.join(format!("node-{i}.report"));
        let bytes = std::fs::read(&path).map_err(|err| format!("{}: {err}", path.display()))?;
        bincode::deserialize(&bytes)
            .map_err(|err| format!("{}: not a node report of this build: {err}", path.display()))
    }

    /// Node `i`'s part of the delivery log (runs with `--log`).
    fn log(&self, i: usize) -> Result<DeliveryLog, String> {
        DeliveryLog::read_csv(&log_dir(&self.dir.0.join(format!("node-{i}.report"))))
            .map_err(|err| err.to_string())
    }
}

/// Writes `report` as node reports are written (bincode).
fn write_report<T: Serialize>(report: &Path, value: &T) -> Result<(), String> {
    let bytes = bincode::serialize(value).expect("a report serialises");
    std::fs::write(report, bytes).map_err(|err| format!("{}: {err}", report.display()))
}

/// Runs a tcp run's nodes as child processes, on loopback or, with `hosts` (a cluster file
/// without a run), at the hosts' addresses, each started through its `exec` prefix; injects
/// `faults`; waits for every node. `run_args` are the run's own arguments, which every node
/// re-parses; `roles` the deployment's node roles; `runs_for` how long a node's clock runs.
/// With `until_all_done`, the nodes are told to stop once every one not killed is done
/// ([`run_as_node`] with a barrier). `prepare`: how long a node may take to build its part
/// beyond the usual (an RDMC root making its messages), added to the time before time zero.
pub(crate) fn spawn_nodes(
    run_args: Vec<String>,
    roles: &[String],
    faults: &[ProcessFault],
    hosts: Option<&ClusterFile>,
    runs_for: Duration,
    until_all_done: bool,
    prepare: Duration,
) -> Result<Launched, String> {
    let n = roles.len();
    if let Some(f) = faults
        .iter()
        .find(|f| f.nodes().iter().any(|&i| i as usize >= n))
    {
        return Err(format!("{f}: the run has nodes 0..{n}"));
    }
    let places: Vec<(String, Option<String>, Vec<String>)> = match hosts {
        Some(h) => {
            if h.nodes.len() != n {
                return Err(format!(
                    "the cluster file lists {} nodes, this run deploys {n} ({})",
                    h.nodes.len(),
                    summarize(roles)
                ));
            }
            if !h.run.is_empty() {
                return Err("the cluster file given to harness run names a run of its own (`run = [...]`); the command line describes the run: remove it".into());
            }
            for (i, (node, role)) in h.nodes.iter().zip(roles).enumerate() {
                if !node.role.is_empty() && node.role != *role {
                    return Err(format!(
                        "node {i} is a {role} in this run, the cluster file says `{}`",
                        node.role
                    ));
                }
            }
            h.check()?;
            h.nodes
                .iter()
                .map(|node| (node.addr.clone(), node.listen.clone(), node.exec.clone()))
                .collect()
        }
        None => free_ports(n)?
            .into_iter()
            .map(|p| (format!("127.0.0.1:{p}"), None, Vec::new()))
            .collect(),
    };
    // The hosts file's own secret, or a fresh one; it reaches the nodes down their standard
    // input only, never through a file.
    let secret = match hosts.and_then(|h| h.secret.as_deref()) {
        Some(s) => tcp::Secret::new(s.as_bytes())?,
        None => tcp::Secret::random(),
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    sweep_orphans(&std::env::temp_dir());
    let dir = std::env::temp_dir().join(format!("harness-tcp-{}-{stamp}", std::process::id()));
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&dir)
            .map_err(|err| format!("{}: {err}", dir.display()))?;
    }
    let scratch = Scratch(dir.clone());
    // Time zero a little ahead, so every node has built its part and bootstrapped by then and
    // they start together. A node still building at time zero is dialled in vain by the others,
    // who give it up after their connect timeout.
    let start_at = stamp as u64
        + 1_500_000_000
        + 50_000_000 * n as u64
        + u64::try_from(prepare.as_nanos()).unwrap_or(u64::MAX / 2);
    let cluster = ClusterFile {
        run: run_args,
        faults: faults
            .iter()
            .filter(|f| matches!(f, ProcessFault::Net { .. }))
            .map(ProcessFault::to_string)
            .collect(),
        signalled: faults
            .iter()
            .filter(|f| !matches!(f, ProcessFault::Net { .. }))
            .map(ProcessFault::to_string)
            .collect(),
        start_at_unix_ns: Some(start_at),
        secret: None,
        nodes: places
            .iter()
            .zip(roles)
            .map(|((addr, listen, _), role)| NodeEntry {
                addr: addr.clone(),
                listen: listen.clone(),
                role: role.clone(),
                exec: Vec::new(),
            })
            .collect(),
    };
    let cluster_path = dir.join("cluster.toml");
    std::fs::write(
        &cluster_path,
        toml::to_string(&cluster).expect("a cluster file serialises"),
    )
    .map_err(|err| format!("{}: {err}", cluster_path.display()))?;
    let exe = std::env::current_exe().map_err(|err| format!("cannot find this program: {err}"))?;
    println!("  nodes (one OS process each): {}", node_map(roles));
    if !cluster.faults.is_empty() {
        println!(
            "  network faults (each node's fault layer holds back its sends): {}",
            cluster.faults.join(", ")
        );
    }
    let started = Instant::now();
    // Fault times count from the nodes' time zero.
    let zero = started
        + Duration::from_nanos(start_at)
            .saturating_sub(std::time::UNIX_EPOCH.elapsed().unwrap_or_default());
    let mut children: Vec<Child> = Vec::with_capacity(n);
    for (i, (_, _, prefix)) in places.iter().enumerate() {
        let stderr = std::fs::File::create(dir.join(format!("node-{i}.err")))
            .map_err(|err| err.to_string())?;
        let mut cmd = match prefix.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let child = cmd
            .arg("node")
            .arg("--cluster")
            .arg(&cluster_path)
            .arg("--id")
            .arg(i.to_string())
            .arg("--report")
            .arg(dir.join(format!("node-{i}.report")))
            .arg("--secret-stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|err| format!("cannot start node {i}: {err}"))?;
        children.push(child);
        let child = children.last_mut().expect("just pushed");
        let mut pipe = child.stdin.take().expect("piped");
        std::io::Write::write_all(&mut pipe, secret.expose())
            .and_then(|()| std::io::Write::write_all(&mut pipe, b"\n"))
            .map_err(|err| format!("cannot hand node {i} the cluster secret: {err}"))?;
    }
    // Faults, in time order, while the nodes run.
    let mut plan: Vec<(Nanos, usize, libc::c_int)> = Vec::new();
    for f in faults {
        match *f {
            ProcessFault::Kill { node, at } => plan.push((at, node as usize, libc::SIGKILL)),
            ProcessFault::Pause { node, at, span } => {
                plan.push((at, node as usize, libc::SIGSTOP));
                plan.push((at.saturating_add(span), node as usize, libc::SIGCONT));
            }
            // The nodes inject these themselves (the cluster file lists them).
            ProcessFault::Net { .. } => {}
        }
    }
    plan.sort();
    let mut killed = vec![false; n];
    for (at, node, sig) in plan {
        let due = zero + Duration::from_nanos(at.as_nanos());
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        signal(&children[node], sig);
        killed[node] |= sig == libc::SIGKILL;
        println!(
            "  t={:.3} s: {} node {node} ({})",
            Instant::now().saturating_duration_since(zero).as_secs_f64(),
            match sig {
                libc::SIGKILL => "SIGKILL",
                libc::SIGSTOP => "SIGSTOP",
                _ => "SIGCONT",
            },
            roles[node]
        );
    }
    // Every node runs `runs_for` from time zero (its bootstrap may take the connect timeout);
    // past that it is stuck.
    let limit = zero.saturating_duration_since(started)
        + runs_for
        + TcpConfig::default().connect_timeout
        + Duration::from_secs(10);
    if until_all_done {
        // Every node not killed marks itself done; then all are told to stop polling; once
        // all have, they are told to exit (see `tcp::NodeSignals::exit`).
        let all = |marker: &str| {
            (0..n).all(|i| killed[i] || dir.join(format!("node-{i}.{marker}")).exists())
        };
        for (marker, next) in [("done", "stop"), ("stopped", "exit")] {
            while started.elapsed() < limit && !all(marker) {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::fs::write(dir.join(next), b"").map_err(|err| err.to_string())?;
        }
    }
    let mut failures = Vec::new();
    for (i, child) in children.iter_mut().enumerate() {
        let status = loop {
            match child.try_wait().map_err(|err| err.to_string())? {
                Some(s) => break Some(s),
                None if started.elapsed() > limit => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        if killed[i] {
            continue;
        }
        match status {
            Some(s) if s.success() => {}
            other => {
                let err =
                    std::fs::read_to_string(dir.join(format!("node-{i}.err"))).unwrap_or_default();
                let tail: Vec<&str> = err.lines().rev().take(5).collect();
                failures.push(format!(
                    "node {i} ({}) {}: {}",
                    roles[i],
                    other.map_or("did not finish in time".to_string(), |s| s.to_string()),
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                ));
            }
        }
    }
    if !failures.is_empty() {
        return Err(format!("the tcp run failed:\n  {}", failures.join("\n  ")));
    }
    Ok(Launched {
        dir: scratch,
        killed,
        wall: started.elapsed(),
    })
}

/// `harness run --runtime tcp` for an atomic multicast protocol: the nodes run
/// ([`spawn_nodes`]), then their reports and log parts are merged into what `run` prints.
pub(crate) fn launch(
    e: &Experiment,
    run_args: Vec<String>,
    roles: Vec<String>,
    faults: &[ProcessFault],
    hosts: Option<&ClusterFile>,
) -> Result<Measured, String> {
    let runs_for = Duration::from_nanos(
        e.warmup
            .saturating_add(e.duration)
            .saturating_add(DRAIN)
            .as_nanos(),
    );
    let launched = spawn_nodes(
        run_args,
        &roles,
        faults,
        hosts,
        runs_for,
        false,
        Duration::ZERO,
    )?;
    let (n, killed, wall) = (roles.len(), &launched.killed, launched.wall);
    let mut m = Measured {
        delivered: 0,
        throughput: 0.0,
        window: e.duration,
        clients: e.deploy.shape().2,
        latency: multicast::workload::empty_latency_histogram(),
        // A tcp node reports its window's totals, not its sections: no intervals.
        sections: Vec::new(),
        log: e.log.then(DeliveryLog::default),
        wall,
        cpu: children_cpu(),
        server_deliveries: 0,
        leader_changes: 0,
        counters: Default::default(),
        own_log: None,
    };
    let mut changed = std::collections::BTreeSet::new();
    let mut halts = Vec::new();
    let mut events = Vec::new();
    for i in 0..n {
        let p = ProcessId(i as u32);
        if killed[i] {
            if let Some(log) = m.log.as_mut() {
                let member = member_of(&roles[i]).expect("roles come from role_of");
                log.add_process(p, member, false);
            }
            continue;
        }
        let (links, r): (Links, NodeReport) = launched.report(i)?;
        m.delivered += r.completed_in_window;
        record_counts(&mut m.latency, &r.latency)?;
        m.server_deliveries += r.delivered;
        if let Some(why) = &r.halted {
            halts.push(Halt {
                node: i,
                why: why.clone(),
                stop: links.stop.clone(),
                events: links.events.clone(),
            });
        }
        events.extend(links.events.into_iter().map(|ev| (i, ev)));
        if r.changed_leader {
            changed.insert(member_of(&r.role));
        }
        if let Some(log) = m.log.as_mut() {
            log.merge(launched.log(i)?);
        }
    }
    m.leader_changes = changed.len();
    m.throughput = m.delivered as f64 / e.duration.as_secs_f64();
    print_refusals(&events);
    judge_halts(&halts, &roles, faults)?;
    Ok(m)
}

/// Connection events of a run's nodes: when any is not a peer's close (a peer without the
/// secret, a second claimant, caps, deadlines, a request out of bounds), all are counted and
/// those printed, so hostile traffic is never hidden.
/// `events`: (node, event).
pub(crate) fn print_refusals(events: &[(usize, String)]) {
    let refused: Vec<&(usize, String)> = events
        .iter()
        .filter(|(_, e)| !e.ends_with("the peer closed the connection"))
        .collect();
    // Peers closing at the end of a run is every run's story; only the rest is news.
    if refused.is_empty() {
        return;
    }
    println!(
        "  connection events: {} ({} refused, timed out or failed; the rest closed by their peer)",
        events.len(),
        refused.len()
    );
    for (i, e) in refused.iter().take(10) {
        println!("    node {i}: {e}");
    }
    if refused.len() > 10 {
        println!("    ... and {} more", refused.len() - 10);
    }
}

/// A server of a tcp run that halted itself, as its node reported it.
struct Halt {
    node: usize,
    /// What the server found ([`multicast::Server::halt_reason`]).
    why: String,
    /// How the node's run ended.
    stop: String,
    /// The node's connection events.
    events: Vec<String>,
}

/// A server halts when it was excluded while unresponsive and then finds its buffers
/// recycled; only a fault can make a correct server unresponsive. So a halt no fault explains
/// fails the run, named with the server's reason (a forged write, a bug); one a fault explains
/// is printed.
fn judge_halts(halts: &[Halt], roles: &[String], faults: &[ProcessFault]) -> Result<(), String> {
    let mut unexplained = Vec::new();
    for h in halts {
        let (i, events) = (h.node, &h.events);
        match faults.iter().find(|f| f.impairs(i)) {
            Some(f) => println!(
                "  node {i} ({}) halted after `{f}` made it unresponsive: {}",
                roles[i], h.why
            ),
            None => unexplained.push(format!(
                "node {i} ({}) halted, yet no fault paused or cut it off: a correct server stopped. Its reason: {}. (Run ended {}; {} connection events{}{})",
                roles[i],
                h.why,
                h.stop,
                events.len(),
                if events.is_empty() { "" } else { ", the last: " },
                events[events.len().saturating_sub(5)..].join(" / ")
            )),
        }
    }
    if unexplained.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the tcp run failed:\n  {}",
            unexplained.join("\n  ")
        ))
    }
}

/// `n` ports free now, below the kernel's ephemeral range: the nodes' own outgoing connections
/// take their source ports from that range, and one of them took a port chosen there
/// (bound, read, released) before the node meant to listen on it had started.
fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let first = 10_000u16;
    if low <= first + n as u16 {
        return Err(format!(
            "the ephemeral port range starts at {low}: no room below it for {n} listening ports"
        ));
    }
    // Concurrent launches start at different places.
    let span = (low - first) as u32;
    let start = first as u32 + (std::process::id().wrapping_mul(7919) % span);
    let mut ports = Vec::with_capacity(n);
    for k in 0..span {
        let p = (first as u32 + (start - first as u32 + k) % span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", p)).is_ok() {
            ports.push(p);
            if ports.len() == n {
                return Ok(ports);
            }
        }
    }
    Err(format!("fewer than {n} free ports below {low}"))
}

/// `0-2 server g0, 3-5 server g1, 6-8 client`: which node ids play which role.
fn node_map(roles: &[String]) -> String {
    let mut runs: Vec<(usize, usize, &str)> = Vec::new();
    for (i, r) in roles.iter().enumerate() {
        match runs.last_mut() {
            Some(last) if last.2 == r => last.1 = i,
            _ => runs.push((i, i, r)),
        }
    }
    runs.iter()
        .map(|&(a, b, r)| {
            if a == b {
                format!("{a} {r}")
            } else {
                format!("{a}-{b} {r}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `3 x server g0, 3 x client`: a deployment's roles, counted.
fn summarize(roles: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for r in roles {
        match counts.iter_mut().find(|c| c.0 == r) {
            Some(c) => c.1 += 1,
            None => counts.push((r, 1)),
        }
    }
    counts
        .iter()
        .map(|(r, k)| format!("{k} x {r}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// CPU time of the finished child processes (every node of a launched run).
#[allow(unsafe_code)]
pub(crate) fn children_cpu() -> Option<Duration> {
    // SAFETY: getrusage fills the struct we pass; it is plain data.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        (libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) == 0).then_some(u)
    }?;
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Some(tv(usage.ru_utime) + tv(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_print_back() {
        for s in [
            "kill:0@3s",
            "pause:4@2s+500ms",
            "delay:0>3,4@1s+2s=5ms",
            "loss:*>0@1s+1s=0.1",
            "partition:0,1|*@2s+1s",
        ] {
            let f: ProcessFault = s.parse().unwrap();
            assert_eq!(f.to_string().parse::<ProcessFault>().unwrap(), f);
        }
        for bad in [
            "kill:x@3s",
            "pause:1@2s",
            "stop:1@1s",
            "kill:1",
            "delay:0@1s+1s=1ms",
            "delay:0>1@1s+1s",
            "partition:0>1@1s+1s",
        ] {
            let err = bad.parse::<ProcessFault>().unwrap_err();
            assert!(err.contains("kill:NODE@TIME"), "{bad}: {err}");
        }
        let err = "loss:0>1@1s+1s=2".parse::<ProcessFault>().unwrap_err();
        assert!(err.contains("0 to 1"), "{err}");
        let err = "partition:*|*@1s+1s".parse::<ProcessFault>().unwrap_err();
        assert!(err.contains("one side named"), "{err}");
    }

    #[test]
    fn network_faults_become_the_fault_layer_s_directed_link_faults() {
        let p = |ids: &[u32]| ids.iter().map(|&i| ProcessId(i)).collect::<Vec<_>>();
        let cut: ProcessFault = "partition:0,1|*@2s+1s".parse().unwrap();
        let links = cut.link_faults(4);
        assert_eq!(links.len(), 2, "both ways");
        assert_eq!(
            (links[0].from.clone(), links[0].to.clone()),
            (p(&[0, 1]), p(&[2, 3]))
        );
        assert_eq!(
            (links[1].from.clone(), links[1].to.clone()),
            (p(&[2, 3]), p(&[0, 1]))
        );
        assert_eq!(links[0].at, Duration::from_secs(2));
        assert_eq!(links[0].span, Duration::from_secs(1));
        let slow: ProcessFault = "delay:*>2@1ms+1s=5ms".parse().unwrap();
        let links = slow.link_faults(3);
        assert_eq!(links.len(), 1, "one way");
        assert_eq!(links[0].from, p(&[0, 1, 2]));
        assert_eq!(links[0].effect, LinkEffect::Delay(Duration::from_millis(5)));
        assert!("kill:1@1s"
            .parse::<ProcessFault>()
            .unwrap()
            .link_faults(3)
            .is_empty());
        // A cluster file carries them to the nodes, checked against its nodes.
        let mut c = three_nodes();
        c.faults = vec!["partition:0|*@1s+1s".into()];
        assert_eq!(c.config(1).unwrap().faults.len(), 2);
        c.faults = vec!["delay:0>5@1s+1s=1ms".into()];
        assert!(c.config(1).unwrap_err().contains("nodes 0..3"));
        c.faults = vec!["kill:0@1s".into()];
        assert!(c.config(1).unwrap_err().contains("only network faults"));
        // Node ids and roles are checked against the deployment a node builds.
        let roles = vec![String::new(); 3];
        assert!(c.check_node(2, &roles).is_ok());
        assert!(c.check_node(3, &roles).unwrap_err().contains("--id 3"));
        assert!(c
            .check_node(0, &roles[..2])
            .unwrap_err()
            .contains("lists 3 nodes"));
        let client = vec!["client".to_string(); 3];
        assert!(c.check_node(1, &client).unwrap_err().contains("regenerate"));
    }

    fn three_nodes() -> ClusterFile {
        ClusterFile {
            run: Vec::new(),
            secret: Some("0123456789abcdef".into()),
            start_at_unix_ns: None,
            faults: Vec::new(),
            signalled: Vec::new(),
            nodes: (0..3)
                .map(|i| NodeEntry {
                    addr: format!("127.0.0.1:{}", 7000 + i),
                    listen: None,
                    role: String::new(),
                    exec: Vec::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_cluster_file_is_checked_as_a_whole() {
        let c = three_nodes();
        assert!(c.check().is_ok());
        assert_eq!(c.bind_addr(1).unwrap().to_string(), "127.0.0.1:7001");
        let mut twice = c.clone();
        twice.nodes[2].addr = "127.0.0.1:7000".into();
        assert!(twice.check().unwrap_err().contains("nodes 0 and 2 both at"));
        let mut zero = c.clone();
        zero.nodes[1].addr = "127.0.0.1:0".into();
        assert!(zero.check().unwrap_err().contains("port 0"));
        let mut any_port = c.clone();
        any_port.nodes[1].listen = Some("127.0.0.1:0".into());
        assert!(any_port
            .check()
            .unwrap_err()
            .contains("listen `127.0.0.1:0` has port 0"));
        let mut short = c.clone();
        short.secret = Some("s3cret".into());
        assert!(short.check().unwrap_err().contains("fewer than the 16"));
        let mut empty = c.clone();
        empty.secret = Some(String::new());
        assert!(empty.check().is_err());
        let mut later = c.clone();
        let now = std::time::UNIX_EPOCH.elapsed().unwrap().as_nanos() as u64;
        later.start_at_unix_ns = Some(now + 3_600_000_000_000);
        assert!(later.check().unwrap_err().contains("in the future"));
        later.start_at_unix_ns = Some(now + 2_000_000_000);
        assert!(later.check().is_ok());
        // No secret in the file and none handed down: the node refuses to start.
        let mut none = c.clone();
        none.secret = None;
        assert!(none.check().is_ok(), "a node may get it on stdin");
        assert!(none.config(1).unwrap_err().contains("has no `secret`"));
        // Kills and pauses the launcher sends are listed apart from the network faults.
        let mut signalled = c.clone();
        signalled.signalled = vec!["kill:1@2s".into(), "pause:2@1s+1s".into()];
        assert!(signalled.check().is_ok());
        signalled.signalled.push("partition:0|1@1s+1s".into());
        assert!(signalled
            .check()
            .unwrap_err()
            .contains("only kills and pauses"));
        // Binding every interface only when the entry asks.
        let mut any = c;
        any.nodes[0].listen = Some("0.0.0.0:7000".into());
        assert_eq!(any.bind_addr(0).unwrap().to_string(), "0.0.0.0:7000");
        assert_eq!(any.bind_addr(1).unwrap().to_string(), "127.0.0.1:7001");
    }

    /// A dead launcher's scratch directory is removed; a live one's and other names stay.
    #[test]
    fn scratch_directories_of_dead_launchers_are_swept() {
        let tmp = std::env::temp_dir().join(format!("harness-sweep-test-{}", std::process::id()));
        // Above the kernel's largest pid (2^22), so no process has it.
        let dead = tmp.join("harness-tcp-4194305-17");
        let live = tmp.join(format!("harness-tcp-{}-17", std::process::id()));
        let other = tmp.join("harness-tcp-notapid-1");
        // As the launcher makes them: private, with a cluster file.
        let scratch = |d: &Path| {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .recursive(true)
                .create(d)
                .unwrap();
            std::fs::write(d.join("cluster.toml"), b"").unwrap();
        };
        let open = tmp.join("harness-tcp-4194306-17");
        std::fs::create_dir_all(&open).unwrap();
        std::fs::write(open.join("cluster.toml"), b"").unwrap();
        let bare = tmp.join("harness-tcp-4194307-17");
        for d in [&dead, &live, &other, &bare] {
            scratch(d);
        }
        std::fs::remove_file(bare.join("cluster.toml")).unwrap();
        sweep_orphans(&tmp);
        assert!(!dead.exists());
        assert!(
            live.exists() && other.exists(),
            "a live launcher's, a name not a pid"
        );
        assert!(
            open.exists() && bare.exists(),
            "not private, or no cluster file"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    /// A user's own directory whose name merely starts with harness-tcp-<number>- (a date, a
    /// run number) is not a launcher's scratch directory: it stays.
    #[test]
    fn a_users_directory_named_like_a_scratch_directory_stays() {
        let tmp = std::env::temp_dir().join(format!("harness-sweep-review-{}", std::process::id()));
        let mine = tmp.join("harness-tcp-2026-11-29-results");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::write(mine.join("fig.csv"), b"precious").unwrap();
        sweep_orphans(&tmp);
        let survived = mine.join("fig.csv").exists();
        std::fs::remove_dir_all(&tmp).unwrap();
        assert!(survived, "sweep_orphans deleted a user's results directory");
    }

    /// A link given up fails its node unless a fault acts on the node or its peer.
    #[test]
    fn a_link_lost_to_no_fault_fails_its_node_named() {
        let lost = [(
            2,
            "p2 did not answer at 127.0.0.1:7002 within the connect timeout".into(),
        )];
        let e = unexplained_losses(0, &lost, &[]).unwrap_err();
        assert!(
            e.contains("node 0 gave up its links to node 2 (p2 did not answer"),
            "{e}"
        );
        let fault = |f: &str| vec![f.parse::<ProcessFault>().unwrap()];
        for explains in ["kill:2@1s", "pause:0@1s+1s", "partition:2|*@1s+1s"] {
            assert!(
                unexplained_losses(0, &lost, &fault(explains)).is_ok(),
                "{explains}"
            );
        }
        for unrelated in ["kill:1@1s", "pause:1@1s+1s", "delay:1>3@1s+1s=5ms"] {
            assert!(
                unexplained_losses(0, &lost, &fault(unrelated)).is_err(),
                "{unrelated}"
            );
        }
        assert!(unexplained_losses(0, &[], &[]).is_ok());
    }

    #[test]
    fn a_halt_no_fault_explains_fails_the_run_named() {
        let roles = vec!["server g0".to_string(), "server g0".into(), "client".into()];
        let halt = vec![Halt {
            node: 1,
            why: "slot 3 holds entry 9".into(),
            stop: "TimeLimit".into(),
            events: vec!["p1: connection from p2 closed: x".into()],
        }];
        let e = judge_halts(&halt, &roles, &[]).unwrap_err();
        assert!(e.contains("node 1 (server g0) halted, yet no fault"), "{e}");
        assert!(e.contains("Its reason: slot 3 holds entry 9."), "{e}");
        assert!(e.contains("connection from p2 closed"), "{e}");
        // A kill of another node explains nothing; a pause of this one, or a partition
        // around it, does.
        let kill: ProcessFault = "kill:0@1s".parse().unwrap();
        assert!(judge_halts(&halt, &roles, &[kill]).is_err());
        for f in [
            "pause:1@1s+1s",
            "partition:1|*@1s+1s",
            "delay:*>1@1s+1s=5ms",
        ] {
            let f: ProcessFault = f.parse().unwrap();
            assert!(
                judge_halts(&halt, &roles, std::slice::from_ref(&f)).is_ok(),
                "{f}"
            );
        }
        let other: ProcessFault = "pause:0@1s+1s".parse().unwrap();
        assert!(judge_halts(&halt, &roles, &[other]).is_err());
        assert!(judge_halts(&[], &roles, &[]).is_ok());
    }

    #[test]
    fn the_node_map_names_runs_of_roles() {
        let roles: Vec<String> = ["server g0", "server g0", "server g1", "client"]
            .map(String::from)
            .to_vec();
        assert_eq!(node_map(&roles), "0-1 server g0, 2 server g1, 3 client");
    }

    #[test]
    fn roles_name_their_member() {
        assert_eq!(member_of("client"), Some(Member::Client));
        assert_eq!(
            member_of("server g3"),
            Some(Member::Group(multicast::GroupId(3)))
        );
        assert_eq!(member_of("auxiliary"), Some(Member::Auxiliary));
        assert_eq!(member_of("leader"), None);
    }
}
