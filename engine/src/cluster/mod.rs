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

use crate::experiment::{Experiment, Measured};
use hdrhistogram::Histogram;
use multicast::workload::latency_histogram;
use multicast::Observed;
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

mod fault;
mod launch;
mod node;

pub use fault::*;
pub use launch::*;
pub use node::*;

/// How long a multicast run's nodes go on after the clients stop issuing, so what is in
/// flight completes: longer than a lost request takes to be recovered under the protocols'
/// wall-clock timing (a Ridge client retries after 1 s; a suspicion takes 200 ms). With 1 s,
/// a Ridge run whose coordinator was killed ended with its last requests undelivered, which
/// the checker rightly calls a validity violation of the log as it stood.
pub const DRAIN: Nanos = Nanos(3_000_000_000);

/// A cluster file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    /// The arguments of `harness run` every node executes (without `run` itself). Left out in
    /// a hosts file given to `harness run --cluster`, whose own arguments are the run.
    #[serde(default)]
    pub run: Vec<String>,
    /// The cluster secret (at least 16 bytes). Left out in a cluster file whose nodes get it
    /// down their standard input (`harness node --secret-stdin`), as `harness run` starts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Time zero of every node's clock, nanoseconds since the Unix epoch: the nodes start
    /// together then ([`TcpConfig::start_at`]) [default: each when its bootstrap ends].
    #[serde(default)]
    pub start_at_unix_ns: Option<u64>,
    /// Network faults the nodes inject between themselves, in `harness run --fault` syntax
    /// (`delay:`, `loss:`, `partition:`), timed from time zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<String>,
    /// Kills and pauses the launcher sends by signal (`harness run --fault`), listed so that
    /// each node can tell a link lost to one of them from a failure ([`finish_node`]); the
    /// nodes inject none of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signalled: Vec<String>,
    /// One entry per node, in process-id order.
    #[serde(rename = "node")]
    pub nodes: Vec<NodeEntry>,
}

/// One node of a cluster file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// `host:port` where the other nodes reach it; it listens there too, unless `listen` says
    /// otherwise.
    pub addr: String,
    /// `host:port` it binds instead of `addr` (behind NAT, or `0.0.0.0:PORT` to listen on
    /// every interface: asked for, never the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// Its role in the deployment ([`role_of`]); `harness run --cluster` fills it in.
    #[serde(default)]
    pub role: String,
    /// How `harness run --cluster` starts this node: a command prefix such as
    /// `["ip", "netns", "exec", "ns3"]` or `["ssh", "host3"]` (the node's own command line
    /// follows it) [default: none, a child process here].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exec: Vec<String>,
}

impl ClusterFile {
    /// Reads and checks a cluster file as a whole: at least one node, addresses that resolve,
    /// none twice and none (nor a `listen`) at port 0, a secret long enough if it has one, a time zero not far
    /// in the future. The file is read up to [`transport::input::MAX_INPUT`] bytes.
    pub fn load(path: &Path) -> Result<ClusterFile, String> {
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
    pub fn read_secret_from_stdin(&mut self) -> Result<(), String> {
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
    pub fn addrs(&self) -> Result<Vec<SocketAddr>, String> {
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
    pub fn check_node(&self, id: usize, roles: &[String]) -> Result<(), String> {
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

    /// Every node's address, and where node `id` of a run of `n` processes binds: checked
    /// against the file.
    pub(super) fn place(
        &self,
        id: usize,
        n: usize,
    ) -> Result<(Vec<SocketAddr>, SocketAddr), String> {
        let addrs = self.addrs()?;
        if addrs.len() != n {
            return Err(format!(
                "the cluster file lists {} nodes, the run it names deploys {n}",
                addrs.len()
            ));
        }
        if id >= addrs.len() {
            return Err(format!(
                "--id {id}: the cluster has nodes 0..{}",
                addrs.len()
            ));
        }
        Ok((addrs, self.bind_addr(id)?))
    }

    /// The cluster's secret.
    pub(super) fn secret(&self) -> Result<tcp::Secret, String> {
        let Some(secret) = &self.secret else {
            return Err("the cluster file has no `secret`: add one of at least 16 bytes (`secret = \"<output of openssl rand -hex 32>\"`), or start the nodes with `harness run --cluster`, which hands each node one (`harness node --secret-stdin`)".into());
        };
        tcp::Secret::new(secret.as_bytes())
    }

    /// The configuration every node of this cluster runs with.
    pub fn config(&self, seed: u64) -> Result<TcpConfig, String> {
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
        Ok(TcpConfig {
            seed,
            secret: self.secret()?,
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
        // Times are durations from the start, positive and at most an hour: a pause of no
        // length would send its SIGCONT before its SIGSTOP and leave the node stopped.
        for bad in [
            "pause:3@1s+0s",
            "kill:0@0s",
            "kill:0@7200s",
            "partition:0|*@2s+0ns",
        ] {
            let err = bad.parse::<ProcessFault>().unwrap_err();
            assert!(
                err.contains("positive and at most one hour"),
                "{bad}: {err}"
            );
        }
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
