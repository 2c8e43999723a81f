//! Totals a machine cannot hold, refused before a run starts.
//!
//! `harness run --groups 64 --clients 4096` passed every flag check, then declared 72 GiB of
//! regions: the simulator aborted allocating them, and the tcp runtime forked 4,288 node
//! processes first. Now such a run is refused up front with the estimate, the limit and the
//! flags to lower: [`Needs::of`] estimates what a run takes from its deployment's
//! [`Processes`] before any process is built, [`Limits::probe`] reads what this machine has,
//! and [`check`], a pure function of the two, decides.
//!
//! What the estimate counts:
//! - **Memory**: every process's regions, sized by the code its processes declare them with
//!   ([`crate::protocol::Multicast::footprint`]), plus [`NODE_PROCESS_BYTES`] per node process
//!   on tcp. Regions the simulator allocates page by page as they are written count whole: a
//!   closed-loop client goes round its buffers within a few laps, so a long run touches them.
//! - **Tasks**: threads and processes the run starts: [`TCP_NODE_THREADS`] per node process on
//!   tcp, a thread per node on verbs, the runtime's threads on local.
//! - **Sockets** (tcp): every node connects to every node, itself included, once per queue
//!   pair, and accepts as many connections: its descriptors against `ulimit -n`, and the
//!   connections it accepts against the runtime's own bound ([`tcp::Bounds::connections`]).
//!
//! The estimate is a lower bound. It leaves out the processes' own state (a RamCast server
//! tracks every slot of every client, and every tcp node builds the whole deployment) and the
//! runtimes' per-peer tables, so the check refuses only what cannot fit, with no margin: a run
//! it passes may still not fit.

use crate::runtime::Runtime;
use transport::runtime::tcp;
use transport::{Qp, RegionSpec};

/// Processes of one role in a run, and the regions each of them declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Processes {
    /// The role, plural and ending in s, as messages write it (`servers`: `servers' regions`).
    pub role: &'static str,
    /// How many of them run.
    pub count: usize,
    /// The regions one of them declares.
    pub regions: Vec<RegionSpec>,
}

/// Memory of a tcp node process beyond its regions: measured, a debug node of the README's tcp
/// run holds 1.3 MB of its own (`RssAnon`); rounded up for its thread stacks, sockets and page
/// tables. The binary's code is shared by all nodes and not counted.
pub const NODE_PROCESS_BYTES: u64 = 2 << 20;

/// Threads of a tcp node process: its process's and its NIC's.
pub const TCP_NODE_THREADS: u64 = 2;

/// Descriptors of a tcp node process besides its connections: standard streams, the listener,
/// the poller and its waker, the files it writes; rounded up.
const TCP_NODE_FILES: u64 = 16;

/// The flags that set a run's totals, with their values, as a refusal names them
/// (`--clients (4096), --groups (64) or --slots (16)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lower {
    /// The flags that set its memory.
    pub memory: String,
    /// The flags that set how many processes it has.
    pub processes: String,
}

/// What a run takes of the machine, estimated before anything is built (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Needs {
    /// Bytes of memory.
    pub bytes: u64,
    /// What those bytes are (`192 servers' regions: 72.0 GiB, 4096 clients' regions: 12.0 MiB`).
    pub parts: String,
    /// Threads and processes started.
    pub tasks: u64,
    /// What those tasks are.
    pub tasks_are: String,
    /// On tcp: each node process's sockets.
    pub sockets: Option<Sockets>,
    /// The flags to lower.
    pub lower: Lower,
}

/// The sockets of each node process of a tcp run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sockets {
    /// Node processes.
    pub nodes: u64,
    /// Descriptors one opens.
    pub descriptors: u64,
    /// Connections one accepts.
    pub connections: u64,
}

impl Needs {
    /// What a run of `processes` on `runtime` takes; `lower` names the flags that set it.
    pub fn of(processes: &[Processes], runtime: Runtime, lower: Lower) -> Needs {
        let nodes: u64 = processes.iter().map(|p| p.count as u64).sum();
        // Bytes by role, in the order the roles first appear (TRAM's servers come a group at a
        // time, their regions sized by the group's place in the tree).
        let mut roles: Vec<(&str, u64, u64)> = Vec::new();
        for p in processes {
            let each: u64 = p.regions.iter().map(|r| r.len as u64).sum();
            let bytes = each.saturating_mul(p.count as u64);
            match roles.iter_mut().find(|r| r.0 == p.role) {
                Some(r) => (r.1, r.2) = (r.1 + p.count as u64, r.2.saturating_add(bytes)),
                None => roles.push((p.role, p.count as u64, bytes)),
            }
        }
        let mut parts: Vec<(String, u64)> = roles
            .iter()
            .filter(|r| r.1 > 0)
            .map(|(role, count, bytes)| (format!("{count} {role}' regions"), *bytes))
            .collect();
        if runtime == Runtime::Tcp {
            parts.push((
                format!("{nodes} node processes"),
                nodes * NODE_PROCESS_BYTES,
            ));
        }
        let bytes = parts.iter().fold(0u64, |sum, p| sum.saturating_add(p.1));
        let parts = parts
            .iter()
            .map(|(what, bytes)| format!("{what}: {}", approx(*bytes)))
            .collect::<Vec<_>>()
            .join(", ");
        let (tasks, tasks_are) = match runtime {
            Runtime::Sim => (0, String::new()),
            Runtime::Local {
                threads,
                nic_thread,
            } => {
                let cfg = transport::runtime::local::LocalConfig {
                    threads,
                    ..Default::default()
                };
                let k = transport::runtime::local::thread_count(&cfg, nodes as usize) as u64;
                (
                    k + u64::from(nic_thread),
                    "the local runtime's threads".into(),
                )
            }
            Runtime::Tcp => (
                nodes * TCP_NODE_THREADS,
                format!("{nodes} node processes of {TCP_NODE_THREADS} threads"),
            ),
            Runtime::Verbs => (nodes, "a thread per node".into()),
        };
        let sockets = (runtime == Runtime::Tcp).then(|| {
            let connections = Qp::COUNT as u64 * nodes;
            Sockets {
                nodes,
                descriptors: 2 * connections + TCP_NODE_FILES,
                connections,
            }
        });
        Needs {
            bytes,
            parts,
            tasks,
            tasks_are,
            sockets,
            lower,
        }
    }
}

/// One limit and where it comes from, for the message (`MemAvailable in /proc/meminfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    /// The limit.
    pub value: u64,
    /// Where it comes from.
    pub source: String,
}

/// What the machine (and the tcp runtime) allows a run; `None` where it is not known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of memory.
    pub memory: Option<Limit>,
    /// Threads and processes, already running ones included.
    pub tasks: Option<Limit>,
    /// Descriptors per process.
    pub descriptors: Option<Limit>,
    /// Connections a tcp node accepts.
    pub connections: Limit,
}

impl Limits {
    /// This machine's limits; with `elsewhere` (a cluster file places the nodes, perhaps on
    /// other hosts), only the tcp runtime's own, which hold on every host.
    pub fn probe(elsewhere: bool) -> Limits {
        let connections = Limit {
            value: tcp::Bounds::default().connections as u64,
            source: "the tcp runtime's bound on connections from peers".into(),
        };
        if elsewhere {
            return Limits {
                memory: None,
                tasks: None,
                descriptors: None,
                connections,
            };
        }
        let [nproc, nofile] = soft_limits();
        let memory = [
            meminfo_available().map(|value| Limit {
                value,
                source: "MemAvailable in /proc/meminfo".into(),
            }),
            cgroup_memory_max().map(|value| Limit {
                value,
                source: "the limit of this process's memory cgroup".into(),
            }),
        ];
        let tasks = [
            nproc.map(|value| Limit {
                value,
                source: "`ulimit -u`".into(),
            }),
            read_u64("/proc/sys/kernel/threads-max").map(|value| Limit {
                value,
                source: "kernel.threads-max".into(),
            }),
            read_u64("/proc/sys/kernel/pid_max").map(|value| Limit {
                value,
                source: "kernel.pid_max".into(),
            }),
        ];
        let lowest =
            |limits: &[Option<Limit>]| limits.iter().flatten().min_by_key(|l| l.value).cloned();
        Limits {
            memory: lowest(&memory),
            tasks: lowest(&tasks),
            descriptors: nofile.map(|value| Limit {
                value,
                source: "`ulimit -n`".into(),
            }),
            connections,
        }
    }
}

/// Refuses a run that needs more than the limits allow: one sentence per limit exceeded, each
/// with the estimate, the limit and the flags to lower.
pub fn check(needs: &Needs, limits: &Limits) -> Result<(), String> {
    let mut refusals = Vec::new();
    if let Some(m) = limits.memory.as_ref().filter(|m| needs.bytes > m.value) {
        refusals.push(format!(
            "this run needs about {} of memory ({}) but the machine has {} ({}): lower {}",
            approx(needs.bytes),
            needs.parts,
            approx(m.value),
            m.source,
            needs.lower.memory
        ));
    }
    if let Some(t) = limits.tasks.as_ref().filter(|t| needs.tasks > t.value) {
        refusals.push(format!(
            "this run starts {} threads ({}) but the machine allows {} ({}), running ones included: lower {}",
            needs.tasks, needs.tasks_are, t.value, t.source, needs.lower.processes
        ));
    }
    if let Some(s) = &needs.sockets {
        if let Some(d) = limits
            .descriptors
            .as_ref()
            .filter(|d| s.descriptors > d.value)
        {
            refusals.push(format!(
                "each of this run's {} node processes opens about {} descriptors (a socket per peer and queue pair, each way) but a process may open {} ({}): lower {}, or raise the limit",
                s.nodes, s.descriptors, d.value, d.source, needs.lower.processes
            ));
        }
        let c = &limits.connections;
        if s.connections > c.value {
            refusals.push(format!(
                "each of this run's {} node processes accepts {} connections ({} per peer, itself included) but {} is {}: lower {}",
                s.nodes,
                s.connections,
                Qp::COUNT,
                c.source,
                c.value,
                needs.lower.processes
            ));
        }
    }
    if refusals.is_empty() {
        Ok(())
    } else {
        Err(refusals.join("\n"))
    }
}

/// A byte count to one decimal in the largest binary unit it reaches (`72.0 GiB`).
pub fn approx(bytes: u64) -> String {
    let units = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    match units.iter().find(|u| bytes >= 1 << u.1) {
        Some((unit, shift)) => format!("{:.1} {unit}", bytes as f64 / (1u64 << shift) as f64),
        None => format!("{bytes} B"),
    }
}

/// `MemAvailable` of /proc/meminfo, bytes: what new allocations get without swapping.
fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The memory limit of this process's cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`),
/// where one is set. The whole limit, not what is left under it: the cgroup's usage counts
/// page cache the kernel reclaims before it refuses anything.
fn cgroup_memory_max() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let file = if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}/memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        } else {
            return None;
        };
        // v2 writes `max` when there is no limit: it does not parse, as it should not.
        read_u64(&file)
    })
}

/// The number in the file at `path`.
fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The soft limits on processes (`ulimit -u`) and descriptors (`ulimit -n`) of this process
/// and of the node processes it starts, which inherit them; `None` where unlimited.
#[allow(unsafe_code)]
fn soft_limits() -> [Option<u64>; 2] {
    [libc::RLIMIT_NPROC, libc::RLIMIT_NOFILE].map(|resource| {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into `r`, which outlives the call.
        let ok = unsafe { libc::getrlimit(resource, &mut r) } == 0;
        (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use transport::RegionSpec;

    /// RamCast's regions at 64 groups of 3 and 4096 clients, the run: 384 MiB per
    /// server, 3 KiB per client.
    fn run_64x3_with_4096_clients() -> Vec<Processes> {
        vec![
            Processes {
                role: "servers",
                count: 192,
                regions: vec![
                    RegionSpec::new(256 << 20),
                    RegionSpec::new(128 << 20),
                    RegionSpec::new(24),
                ],
            },
            Processes {
                role: "clients",
                count: 4096,
                regions: vec![RegionSpec::new(3072)],
            },
        ]
    }

    fn lower() -> Lower {
        Lower {
            memory: "--clients (4096), --groups (64) or --slots (16)".into(),
            processes: "--clients (4096) or --groups (64)".into(),
        }
    }

    fn limits(memory: u64, tasks: u64, descriptors: u64) -> Limits {
        let limit = |value, source: &str| {
            Some(Limit {
                value,
                source: source.into(),
            })
        };
        Limits {
            memory: limit(memory, "MemAvailable"),
            tasks: limit(tasks, "kernel.pid_max"),
            descriptors: limit(descriptors, "`ulimit -n`"),
            connections: Limit {
                value: 4096,
                source: "the bound".into(),
            },
        }
    }

    /// The run on the simulator, against a 24 GB machine: refused, with the estimate,
    /// the limit and the flags to lower.
    #[test]
    fn a_run_over_the_memory_it_has_is_refused_with_the_flags_to_lower() {
        let needs = Needs::of(&run_64x3_with_4096_clients(), Runtime::Sim, lower());
        assert_eq!(needs.bytes, 192 * (384 << 20) + 192 * 24 + 4096 * 3072);
        assert_eq!(needs.tasks, 0);
        let err = check(&needs, &limits(22 << 30, 32768, 1024)).unwrap_err();
        assert_eq!(
            err,
            "this run needs about 72.0 GiB of memory (192 servers' regions: 72.0 GiB, 4096 clients' regions: 12.0 MiB) but the machine has 22.0 GiB (MemAvailable): lower --clients (4096), --groups (64) or --slots (16)"
        );
    }

    /// On tcp the same run also forks a process per node: every limit it exceeds is named,
    /// each with its flags.
    #[test]
    fn a_tcp_run_is_refused_for_each_limit_it_exceeds() {
        let needs = Needs::of(&run_64x3_with_4096_clients(), Runtime::Tcp, lower());
        assert_eq!(needs.tasks, 4288 * TCP_NODE_THREADS);
        assert_eq!(
            needs.sockets,
            Some(Sockets {
                nodes: 4288,
                descriptors: 4 * 4288 + TCP_NODE_FILES,
                connections: 2 * 4288,
            })
        );
        let err = check(&needs, &limits(22 << 30, 4096, 1024)).unwrap_err();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 4, "{err}");
        assert!(
            lines[0].contains(", 4288 node processes: 8.4 GiB)"),
            "{err}"
        );
        assert!(lines[1].starts_with("this run starts 8576 threads (4288 node processes of 2 threads) but the machine allows 4096 (kernel.pid_max)"), "{err}");
        assert!(lines[2].contains("opens about 17168 descriptors"), "{err}");
        assert!(
            lines[3].contains("accepts 8576 connections (2 per peer"),
            "{err}"
        );
        assert!(
            lines[1..]
                .iter()
                .all(|l| l.contains("lower --clients (4096) or --groups (64)")),
            "{err}"
        );
    }

    /// A small run passes, on every runtime; and limits that are not known refuse nothing.
    #[test]
    fn a_run_within_the_limits_is_accepted() {
        let small = vec![Processes {
            role: "servers",
            count: 9,
            regions: vec![RegionSpec::new(56064), RegionSpec::new(4608)],
        }];
        for runtime in [
            Runtime::Sim,
            Runtime::Tcp,
            Runtime::Verbs,
            Runtime::Local {
                threads: 0,
                nic_thread: true,
            },
        ] {
            let needs = Needs::of(&small, runtime, lower());
            assert_eq!(check(&needs, &limits(1 << 30, 4096, 1024)), Ok(()));
        }
        let needs = Needs::of(&run_64x3_with_4096_clients(), Runtime::Tcp, lower());
        let unknown = Limits {
            memory: None,
            tasks: None,
            descriptors: None,
            connections: Limit {
                value: u64::MAX,
                source: "none".into(),
            },
        };
        assert_eq!(check(&needs, &unknown), Ok(()));
    }

    #[test]
    fn byte_counts_round_to_one_decimal_in_the_largest_unit() {
        assert_eq!(approx(192 * (384 << 20)), "72.0 GiB");
        assert_eq!(approx(1536), "1.5 KiB");
        assert_eq!(approx(1000), "1000 B");
    }

    /// The probe reads this machine: a Linux host has memory available and a task limit.
    #[test]
    fn this_machine_has_limits() {
        let l = Limits::probe(false);
        assert!(l.memory.is_some_and(|m| m.value > 0));
        assert!(l.tasks.is_some_and(|t| t.value > 0));
        assert_eq!(Limits::probe(true).memory, None);
    }
}
