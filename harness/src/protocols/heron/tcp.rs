//! Heron on the tcp runtime: every replica and client an OS process of its own
//! ([`crate::cluster`]), killed with SIGKILL or stopped with SIGSTOP by `--fault`.
//!
//! Each node runs its part of the deployment and reports what judging the run needs: a
//! replica what it executed (every response it computed), the timestamp its objects reached,
//! the objects themselves and its counters; a client its history and latencies. The launcher
//! merges the reports and judges the run as `harness check` judges a simulated one: the
//! sequential oracle (every response, every surviving replica's state, real-time order), every
//! surviving replica idle at the end (no request left running), every surviving client with
//! no request left unanswered and one answered that it issued after the last fault; `run`
//! adds TPC-C's consistency conditions on the database. A killed node reports nothing: the
//! oracle judges the others, as it judges a crashed replica on the simulator by the responses
//! it computed, here lost with it.

use super::experiment::{Deployment, Exec, Outcome, Processes, Setup};
use crate::cluster::{self, ClusterFile, ProcessFault};
use hdrhistogram::Histogram;
use heron::client::Tally;
use heron::oracle::{self, ClientView, ReplicaView};
use heron::{Application, Call, Counters, Executed, HeronNode, ObjectId};
use multicast::{GroupId, Membership, Observed, Server};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use transport::runtime::tcp::TcpNic;
use transport::{Nanos, Process, ProcessId};

/// How far two nodes' clocks may disagree. Every node's clock starts at the cluster's time
/// zero (read from the host's wall clock), so on one host they agree to microseconds and
/// across hosts to their clock synchronisation. The oracle's real-time order compares one
/// client's response with another's invocation, so each call is widened by this much on both
/// sides: a precedence the clocks cannot establish is not asserted (sound, slightly weaker).
const CLOCK_UNCERTAINTY: Nanos = Nanos(1_000_000);

/// What one node of a Heron run reports.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Report {
    /// A replica.
    Replica {
        /// Its partition.
        group: u8,
        counters: Counters,
        /// What it executed, with the responses it computed.
        executed: Vec<Executed>,
        /// The timestamp its objects are current to.
        applied: u64,
        /// Its objects at the end.
        state: BTreeMap<ObjectId, Vec<u8>>,
        /// Whether it had finished its work (no request running or queued).
        idle: bool,
        /// Whether its multicast server saw its group's leadership move.
        changed_leader: bool,
        /// Why its multicast server halted itself, if it did.
        halted: Option<String>,
    },
    /// A client.
    Client {
        /// Its client index.
        index: u32,
        /// Per kind of request, single- and multi-partition latencies: (nanoseconds, count).
        latency: Vec<[Vec<(u64, u64)>; 2]>,
        /// What completed per section of the window ([`heron::client::HeronClient::sections`]).
        sections: Vec<Vec<[Tally; 2]>>,
        /// Every request it issued.
        history: Vec<Call>,
    },
}

/// The node roles of a Heron deployment, in process order: `server gP` per replica of
/// partition P, then `client`.
fn roles(cfg: &heron::Config) -> Vec<String> {
    (0..cfg.partitions * cfg.replicas)
        .map(|i| format!("server g{}", i / cfg.replicas))
        .chain((0..cfg.clients).map(|_| "client".to_string()))
        .collect()
}

/// How long a node's clock runs: the clients stop at the window's end, then what is in
/// flight completes.
fn runs_for(s: &Setup) -> Duration {
    Duration::from_nanos(s.window.stop_at.saturating_add(cluster::DRAIN).as_nanos())
}

/// One node of a tcp cluster: runs its part of the deployment, then writes its [`Report`].
pub(crate) struct Node<'a> {
    pub(crate) cluster: &'a ClusterFile,
    pub(crate) id: usize,
    pub(crate) report: &'a Path,
}

impl Exec for Node<'_> {
    type Out = ();
    fn exec<A: Application + Send + Sync + 'static, P: Processes>(
        &self,
        s: &Setup,
        d: Deployment<A, P>,
    ) -> Result<(), String> {
        let roles = roles(&d.cfg);
        // `record`: the oracle needs every response a replica computed.
        let nodes = d.nodes::<TcpNic>(s, true);
        let specs: Vec<_> = nodes.iter().map(Process::<TcpNic>::regions).collect();
        self.cluster.check_node(self.id, &roles)?;
        let node = nodes
            .into_iter()
            .nth(self.id)
            .expect("as many nodes as roles");
        let run = cluster::run_as_node(
            self.cluster,
            self.id,
            &specs,
            node,
            s.sim.seed,
            runs_for(s),
            None,
        )?;
        let report = match &run.process {
            HeronNode::Server(r) => Report::Replica {
                group: r.group().0,
                counters: r.counters(),
                executed: r.executed().unwrap_or_default().to_vec(),
                applied: r.applied(),
                state: r.state(&run.nic),
                idle: r.idle(),
                changed_leader: r.multicast().changed_leader(),
                halted: r.multicast().halt_reason().map(str::to_owned),
            },
            HeronNode::Client(c) => Report::Client {
                index: d
                    .cfg
                    .client_index(ProcessId(self.id as u32))
                    .expect("a client node") as u32,
                latency: heron::client::latency_histograms(c.latencies().len(), [c.latencies()])
                    .iter()
                    .map(|[single, multi]| {
                        [
                            cluster::histogram_counts(single),
                            cluster::histogram_counts(multi),
                        ]
                    })
                    .collect(),
                sections: c.sections().to_vec(),
                history: c.history(),
            },
        };
        cluster::finish_node(
            self.cluster,
            self.id,
            &cluster::Links::of(&run),
            self.report,
            &report,
        )
    }
}

/// A run's verdict beyond TPC-C's conditions.
#[derive(Debug, Default)]
pub(crate) struct Judged {
    /// What was checked, for the report.
    pub(crate) checked: String,
    /// Every violation found.
    pub(crate) violations: Vec<String>,
}

/// Launches a tcp run of `s` (every node a `harness node` child process, or one on each host
/// of `hosts`), injects `faults`, merges the reports and judges the run.
pub(crate) struct Launch<'a> {
    /// The run's own arguments, which every node re-parses.
    pub(crate) args: Vec<String>,
    pub(crate) faults: &'a [ProcessFault],
    pub(crate) hosts: Option<&'a ClusterFile>,
}

impl Exec for Launch<'_> {
    type Out = (Outcome, Judged);
    fn exec<A: Application + Send + Sync + 'static, P: Processes>(
        &self,
        s: &Setup,
        d: Deployment<A, P>,
    ) -> Result<(Outcome, Judged), String> {
        let (cfg, app) = (&d.cfg, &*d.app);
        let quiet = self.quiet(s)?;
        let launched = cluster::spawn_nodes(
            self.args.clone(),
            &roles(cfg),
            self.faults,
            self.hosts,
            runs_for(s),
            false,
            Duration::ZERO,
        )?;
        let (mut reports, mut events) = (Vec::new(), Vec::new());
        for (i, killed) in launched.killed.iter().enumerate() {
            if !killed {
                let (links, report) = launched.report::<Report>(i)?;
                events.extend(links.events.into_iter().map(|e| (i, e)));
                reports.push((ProcessId(i as u32), report));
            }
        }
        cluster::print_refusals(&events);
        let kinds = app.kinds().to_vec();
        let mut merged = Merged::new(kinds.len(), quiet);
        for (p, r) in &reports {
            merged.add(*p, r)?;
        }
        let mut judged = merged.judged;
        judged.checked = match oracle::check(app, cfg.partitions, &merged.views, &merged.clients)
        {
            Ok(r) => format!(
                "the sequential oracle replayed {} requests: {} replica responses, {} client responses, {} replica states as the replay gives them",
                r.requests, r.replica_responses, r.client_responses, r.states
            ),
            Err(v) => {
                judged
                    .violations
                    .extend(v.iter().map(|v| format!("oracle: {v}")));
                "the sequential oracle".into()
            }
        };
        let killed: Vec<String> = launched
            .killed
            .iter()
            .enumerate()
            .filter(|k| *k.1)
            .map(|(i, _)| format!("p{i}"))
            .collect();
        judged.checked.push_str(&format!(
            "; partitions whose leader changed {}; killed {}",
            merged.changed.len(),
            if killed.is_empty() {
                "none".into()
            } else {
                killed.join(", ")
            }
        ));
        let outcome = Outcome {
            kinds,
            latency: merged.latency,
            sections: merged.sections,
            database: merged.database,
            replicas: merged.replicas,
            wall: launched.wall,
            events: None,
        };
        Ok((outcome, judged))
    }
}

impl Launch<'_> {
    /// When the last fault ends: requests issued after it show the run recovered from it, so
    /// it must end before the clients stop.
    fn quiet(&self, s: &Setup) -> Result<Nanos, String> {
        let quiet = self
            .faults
            .iter()
            .map(ProcessFault::ends_at)
            .max()
            .unwrap_or(Nanos::ZERO);
        if quiet >= s.window.stop_at {
            return Err(format!(
                "the last fault ends at {quiet}, once the clients have stopped (at {}): lengthen --duration so the run shows it recovered",
                s.window.stop_at
            ));
        }
        Ok(quiet)
    }
}

/// The surviving nodes' reports merged in process order, and what they already violate: a
/// replica left with work or halted, a client with requests unanswered or none answered after
/// the last fault (`quiet`).
struct Merged<'r> {
    quiet: Nanos,
    sections: Vec<Vec<[Tally; 2]>>,
    latency: Vec<[Histogram<u64>; 2]>,
    database: BTreeMap<ObjectId, Vec<u8>>,
    replicas: Vec<(GroupId, Counters)>,
    views: Vec<ReplicaView<'r>>,
    clients: Vec<ClientView>,
    judged: Judged,
    changed: std::collections::BTreeSet<u8>,
}

impl<'r> Merged<'r> {
    /// Nothing merged yet, for an application with `kinds` kinds of request.
    fn new(kinds: usize, quiet: Nanos) -> Merged<'r> {
        let empty = multicast::workload::empty_latency_histogram;
        Merged {
            quiet,
            sections: Vec::new(),
            latency: (0..kinds).map(|_| [empty(), empty()]).collect(),
            database: BTreeMap::new(),
            replicas: Vec::new(),
            views: Vec::new(),
            clients: Vec::new(),
            judged: Judged::default(),
            changed: std::collections::BTreeSet::new(),
        }
    }

    /// Merges node `p`'s report.
    fn add(&mut self, p: ProcessId, report: &'r Report) -> Result<(), String> {
        match report {
            Report::Replica {
                group,
                counters,
                executed,
                applied,
                state,
                idle,
                changed_leader,
                halted,
            } => {
                self.database
                    .extend(state.iter().map(|(k, v)| (*k, v.clone())));
                self.replicas.push((GroupId(*group), *counters));
                self.views.push(ReplicaView {
                    process: p,
                    group: GroupId(*group),
                    executed,
                    applied: *applied,
                    state: Some(state.clone()),
                });
                if *changed_leader {
                    self.changed.insert(*group);
                }
                if !idle {
                    self.judged.violations.push(format!(
                        "{p} never finished its work (a request still running)"
                    ));
                }
                if let Some(why) = halted {
                    self.judged
                        .violations
                        .push(format!("{p}'s multicast server halted itself: {why}"));
                }
            }
            Report::Client {
                index,
                latency,
                sections,
                history,
            } => {
                self.sections = super::experiment::add_sections([
                    self.sections.as_slice(),
                    sections.as_slice(),
                ]);
                for (sum, pair) in self.latency.iter_mut().zip(latency) {
                    for (h, counts) in sum.iter_mut().zip(pair) {
                        cluster::record_counts(h, counts)?;
                    }
                }
                self.judge_client(p, history);
                self.clients.push(ClientView {
                    client: *index,
                    calls: history.iter().map(widened).collect(),
                });
            }
        }
        Ok(())
    }

    /// A surviving client's liveness: every request answered, and one answered that it issued
    /// after the last fault.
    fn judge_client(&mut self, p: ProcessId, history: &[Call]) {
        let quiet = self.quiet;
        let unanswered = history.iter().filter(|c| c.returned.is_none()).count();
        let after = history
            .iter()
            .any(|c| c.invoked >= quiet && c.returned.is_some());
        if unanswered > 0 || !after {
            self.judged.violations.push(format!(
                "liveness after faults: correct client {p} left {unanswered} requests unanswered{}",
                if after {
                    String::new()
                } else {
                    format!(" and had none answered that it issued after the last fault ended at {quiet}")
                }
            ));
        }
    }
}

/// A call as the oracle's real-time order may trust it across nodes' clocks
/// ([`CLOCK_UNCERTAINTY`]).
fn widened(c: &Call) -> Call {
    Call {
        invoked: c.invoked.saturating_sub(CLOCK_UNCERTAINTY),
        returned: c
            .returned
            .as_ref()
            .map(|(t, r)| (t.saturating_add(CLOCK_UNCERTAINTY), r.clone())),
        ..c.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_list_replicas_partition_by_partition_then_clients() {
        let cfg = heron::Config::new(2, 3, 2);
        assert_eq!(
            roles(&cfg),
            [
                "server g0",
                "server g0",
                "server g0",
                "server g1",
                "server g1",
                "server g1",
                "client",
                "client"
            ]
        );
    }

    #[test]
    fn widened_calls_assert_no_precedence_the_clocks_cannot_establish() {
        let call = |invoked: u64, returned: u64| Call {
            seq: 0,
            request: Vec::new(),
            invoked: Nanos(invoked),
            returned: Some((Nanos(returned), Vec::new())),
        };
        // Answered 0.5 ms before the other was issued, by two clocks: not trusted.
        let (a, b) = (
            widened(&call(0, 5_000_000)),
            widened(&call(5_500_000, 9_000_000)),
        );
        assert!(a.returned.as_ref().unwrap().0 > b.invoked);
        // 3 ms apart: the precedence stands.
        let c = widened(&call(8_000_000, 9_000_000));
        assert!(a.returned.as_ref().unwrap().0 < c.invoked);
    }
}
