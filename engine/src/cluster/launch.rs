//! Launching a tcp run: its nodes as child processes, the faults sent to them, their reports
//! collected and judged.

use super::*;

#[allow(unsafe_code)]
pub(super) fn signal(child: &Child, sig: libc::c_int) {
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
pub(super) fn sweep_orphans(tmp: &Path) {
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
pub(super) struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The nodes of a finished tcp run: their reports (in a scratch directory, removed when this
/// is dropped) and which nodes were killed.
#[allow(
    missing_debug_implementations,
    reason = "it holds child processes' reports on disk, nothing to print"
)]
pub struct Launched {
    dir: Scratch,
    /// Nodes killed by a fault: they wrote no report.
    pub killed: Vec<bool>,
    /// From the start of the first node to the end of the last.
    pub wall: Duration,
}

impl Launched {
    /// Node `i`'s report: its connections and what its process reported ([`finish_node`]).
    pub fn report<T: serde::de::DeserializeOwned>(&self, i: usize) -> Result<(Links, T), String> {
        let path = self.dir.0.join(format!("node-{i}.report"));
        let bytes = std::fs::read(&path).map_err(|err| format!("{}: {err}", path.display()))?;
        bincode::deserialize(&bytes)
            .map_err(|err| format!("{}: not a node report of this build: {err}", path.display()))
    }

    /// Node `i`'s part of the delivery log (runs with `--log`).
    pub(super) fn log(&self, i: usize) -> Result<DeliveryLog, String> {
        DeliveryLog::read_csv(&log_dir(&self.dir.0.join(format!("node-{i}.report"))))
            .map_err(|err| err.to_string())
    }
}

/// Writes `report` as node reports are written (bincode).
pub(super) fn write_report<T: Serialize>(report: &Path, value: &T) -> Result<(), String> {
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
pub fn spawn_nodes(
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
    let places = places(roles, hosts)?;
    // The hosts file's own secret, or a fresh one; it reaches the nodes down their standard
    // input only, never through a file.
    let secret = match hosts.and_then(|h| h.secret.as_deref()) {
        Some(s) => tcp::Secret::new(s.as_bytes())?,
        None => tcp::Secret::random(),
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = scratch_dir(stamp)?;
    let scratch = Scratch(dir.clone());
    // Time zero a little ahead, so every node has built its part and bootstrapped by then and
    // they start together. A node still building at time zero is dialled in vain by the others,
    // who give it up after their connect timeout.
    let start_at = stamp as u64
        + 1_500_000_000
        + 50_000_000 * n as u64
        + u64::try_from(prepare.as_nanos()).unwrap_or(u64::MAX / 2);
    let cluster = cluster_file(run_args, roles, faults, &places, start_at);
    let cluster_path = dir.join("cluster.toml");
    std::fs::write(
        &cluster_path,
        toml::to_string(&cluster).expect("a cluster file serialises"),
    )
    .map_err(|err| format!("{}: {err}", cluster_path.display()))?;
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
    for (i, place) in places.iter().enumerate() {
        children.push(start_node(i, &place.exec, &cluster_path, &dir, &secret)?);
    }
    let killed = signal_faults(faults, &children, zero, roles);
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
    let failures = wait_for_nodes(&mut children, &killed, roles, &dir, started, limit)?;
    if !failures.is_empty() {
        return Err(format!("the tcp run failed:\n  {}", failures.join("\n  ")));
    }
    Ok(Launched {
        dir: scratch,
        killed,
        wall: started.elapsed(),
    })
}

/// Where a node of a tcp run listens and how it starts.
struct Place {
    /// The address the others dial.
    addr: String,
    /// Where it binds, if not at `addr`.
    listen: Option<String>,
    /// The prefix it starts through (a network namespace, an ssh login; empty: a child here).
    exec: Vec<String>,
}

/// Each node's place: the hosts file's, checked against the run's roles, or free loopback
/// ports.
fn places(roles: &[String], hosts: Option<&ClusterFile>) -> Result<Vec<Place>, String> {
    let n = roles.len();
    let Some(h) = hosts else {
        return Ok(free_ports(n)?
            .into_iter()
            .map(|p| Place {
                addr: format!("127.0.0.1:{p}"),
                listen: None,
                exec: Vec::new(),
            })
            .collect());
    };
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
    Ok(h.nodes
        .iter()
        .map(|node| Place {
            addr: node.addr.clone(),
            listen: node.listen.clone(),
            exec: node.exec.clone(),
        })
        .collect())
}

/// A fresh scratch directory only this user may enter (orphans of killed launchers swept
/// first), named after this process and `stamp`.
fn scratch_dir(stamp: u128) -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    sweep_orphans(&std::env::temp_dir());
    let dir = std::env::temp_dir().join(format!("harness-tcp-{}-{stamp}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&dir)
        .map_err(|err| format!("{}: {err}", dir.display()))?;
    Ok(dir)
}

/// The cluster file the nodes read: the run, its network faults (the nodes inject them) and
/// signalled ones (for the record), time zero, and each node's place and role; no secret.
fn cluster_file(
    run: Vec<String>,
    roles: &[String],
    faults: &[ProcessFault],
    places: &[Place],
    start_at: u64,
) -> ClusterFile {
    let net = |f: &&ProcessFault| matches!(f, ProcessFault::Net { .. });
    ClusterFile {
        run,
        faults: faults
            .iter()
            .filter(net)
            .map(ProcessFault::to_string)
            .collect(),
        signalled: faults
            .iter()
            .filter(|f| !net(f))
            .map(ProcessFault::to_string)
            .collect(),
        start_at_unix_ns: Some(start_at),
        secret: None,
        nodes: places
            .iter()
            .zip(roles)
            .map(|(place, role)| NodeEntry {
                addr: place.addr.clone(),
                listen: place.listen.clone(),
                role: role.clone(),
                exec: Vec::new(),
            })
            .collect(),
    }
}

/// Starts node `i` as `harness node` (through `prefix`, if any), its standard error to the
/// scratch directory, and hands it the cluster secret down its standard input.
fn start_node(
    i: usize,
    prefix: &[String],
    cluster_path: &Path,
    dir: &Path,
    secret: &tcp::Secret,
) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|err| format!("cannot find this program: {err}"))?;
    let stderr =
        std::fs::File::create(dir.join(format!("node-{i}.err"))).map_err(|err| err.to_string())?;
    let mut cmd = match prefix.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    let mut child = cmd
        .arg("node")
        .arg("--cluster")
        .arg(cluster_path)
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
    let mut pipe = child.stdin.take().expect("piped");
    std::io::Write::write_all(&mut pipe, secret.expose())
        .and_then(|()| std::io::Write::write_all(&mut pipe, b"\n"))
        .map_err(|err| format!("cannot hand node {i} the cluster secret: {err}"))?;
    Ok(child)
}

/// Sends the signalled faults (kills, pauses and their ends) in time order, their times
/// counted from `zero`, while the nodes run; says which nodes were killed.
fn signal_faults(
    faults: &[ProcessFault],
    children: &[Child],
    zero: Instant,
    roles: &[String],
) -> Vec<bool> {
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
    let mut killed = vec![false; children.len()];
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
    killed
}

/// Waits for every node until `limit` after `started` (killing those still running then);
/// says how each node not killed failed, with the tail of its standard error.
fn wait_for_nodes(
    children: &mut [Child],
    killed: &[bool],
    roles: &[String],
    dir: &Path,
    started: Instant,
    limit: Duration,
) -> Result<Vec<String>, String> {
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
    Ok(failures)
}

/// `harness run --runtime tcp` for an atomic multicast protocol: the nodes run
/// ([`spawn_nodes`]), then their reports and log parts are merged into what `run` prints.
pub fn launch(
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
pub fn print_refusals(events: &[(usize, String)]) {
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
pub(super) struct Halt {
    pub(super) node: usize,
    /// What the server found ([`multicast::Server::halt_reason`]).
    pub(super) why: String,
    /// How the node's run ended.
    pub(super) stop: String,
    /// The node's connection events.
    pub(super) events: Vec<String>,
}

/// A server halts when it was excluded while unresponsive and then finds its buffers
/// recycled; only a fault can make a correct server unresponsive. So a halt no fault explains
/// fails the run, named with the server's reason (a forged write, a bug); one a fault explains
/// is printed.
pub(super) fn judge_halts(
    halts: &[Halt],
    roles: &[String],
    faults: &[ProcessFault],
) -> Result<(), String> {
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
pub(super) fn free_ports(n: usize) -> Result<Vec<u16>, String> {
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
pub(super) fn node_map(roles: &[String]) -> String {
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
pub(super) fn summarize(roles: &[String]) -> String {
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
pub fn children_cpu() -> Option<Duration> {
    // SAFETY: getrusage fills the struct we pass; it is plain data.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        (libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) == 0).then_some(u)
    }?;
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Some(tv(usage.ru_utime) + tv(usage.ru_stime))
}
