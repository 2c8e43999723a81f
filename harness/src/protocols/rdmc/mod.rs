//! `harness run --protocol rdmc`: RDMC bulk transfers measured as the paper measures them
//! (section 5). Every group's root submits its messages at time zero; a message's latency is
//! the time from submission until every receiver has had the completion upcall, and its
//! bandwidth is the message size over that latency, whatever the number of receivers. The
//! delivery skew is the time between the first and the last receiver holding the whole message
//! (its last block landing), not between their upcalls: a relay's upcall waits for its own sends.
//!
//! Every member checks each message it receives against what the root sent: a synthetic
//! payload regenerated from its seed (on the simulator the content travels as that descriptor,
//! so 256 MB at 512 members costs no memory; on `local` the bytes are real and compared byte by
//! byte). A corrupted, truncated or misplaced block fails the run.

pub(crate) mod bcast;
pub(crate) mod figures;
mod run;

use crate::protocols::{Checked, Entry, Kind, Service, Takes};
use crate::runtime::Runtime;
use rdmc::{Algorithm, GroupConfig, RdmcNode};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use transport::runtime::sim::{Profile, Software};
use transport::{Data, Nanos, Process, ProcessId, Synthetic};

pub(crate) use rdmc::member::{
    payload, rooted_group, Member, MemberOutcome, MemberTime, CHECK_CHUNK,
};

/// RDMC's own `run` flags.
#[derive(clap::Args, Debug)]
#[group(skip)]
#[command(next_help_heading = "RDMC (--protocol rdmc)")]
pub(crate) struct Flags {
    /// RDMC dissemination algorithm: sequential, chain, tree, pipeline, hybrid-chain,
    /// hybrid-pipeline [default: pipeline].
    #[arg(long)]
    pub(crate) algorithm: Option<::rdmc::Algorithm>,
    /// RDMC group size, root included [default: 4].
    #[arg(long)]
    pub(crate) nodes: Option<usize>,
    /// RDMC block size; the last block of a message may be shorter [default: 1MB].
    #[arg(long, value_parser = crate::experiment::parse_bytes)]
    pub(crate) block_size: Option<usize>,
    /// RDMC concurrent senders: this many groups over the same nodes, node i the root of group
    /// i, all sending at once [default: 1].
    #[arg(long)]
    pub(crate) senders: Option<usize>,
    /// RDMC racks for the hybrid algorithms: the nodes split into this many contiguous ranges
    /// [default: 1].
    #[arg(long)]
    pub(crate) racks: Option<usize>,
    /// RDMC messages each root submits at time zero, sent in order [default: 1].
    #[arg(long)]
    pub(crate) messages: Option<usize>,
    /// RDMC: give up after this long, simulated on sim, wall on local [default: 600s].
    #[arg(long, value_parser = crate::experiment::parse_duration)]
    pub(crate) timeout: Option<Nanos>,
}

/// RDMC's line in the registry.
pub(crate) const ENTRY: Entry = Entry {
    name: "rdmc",
    about: "RDMC (Behrens et al., 2016): bulk multicast of large messages; takes --algorithm, --nodes, --block-size, --senders, --racks, --messages",
    testbed: crate::testbed::RDMC,
    kind: Kind::Service(Service {
        run: run::run,
        serve: run::serve,
        compare: Err("rdmc is bulk multicast, not atomic multicast: it has no order to compare; use `harness run --protocol rdmc` or its figures"),
    }),
    // A bulk transfer has no groups, clients, destinations or window.
    takes: Takes {
        shared: &["size", "posting", "out"],
        own: Some(<Flags as clap::Args>::augment_args),
        note: "rdmc sends --messages messages of --size bytes from each of --senders roots to --nodes members",
    },
    checked: Some(Checked::of::<rdmc::check::RdmcRun>()),
    figures: figures::FIGURES,
    software: &[],
    colours: &[],
    benches: &[bcast::BENCH],
    uncovered: &[
        (
            "RDMC: the binomial pipeline with one block is a binomial tree, and it finishes in \
             about blocks + log2 n - 1 steps",
            "properties of the schedule, not measurements: rdmc's unit tests check both \
             (`one_block_pipeline_is_a_binomial_tree`, `binomial_pipeline_takes_k_plus_log_steps`)",
        ),
    ],
};

/// How often a member probes a peer it has waited on this long (failure detection).
const PROBE: Nanos = Nanos(1_000_000);

/// Bytes of one schedule step in memory (a `Step`), for the memory estimate.
const STEP_BYTES: usize = std::mem::size_of::<rdmc::Step>();

/// One bulk-multicast experiment.
#[derive(Clone, Debug)]
pub(crate) struct BulkSpec {
    pub(crate) algorithm: Algorithm,
    /// Group size, root included.
    pub(crate) nodes: usize,
    /// Bytes per message.
    pub(crate) size: usize,
    pub(crate) block_size: usize,
    /// Concurrent groups over the same nodes; node `s` is the root of group `s`.
    pub(crate) senders: usize,
    /// Racks the nodes are spread over, in contiguous ranges (hybrid algorithms); 1: none.
    pub(crate) racks: usize,
    /// Messages each root submits.
    pub(crate) messages: usize,
    pub(crate) runtime: Runtime,
    pub(crate) profile: Profile,
    /// What the members' work costs (sim).
    pub(crate) software: Software,
    pub(crate) seed: u64,
    /// Give up after this long (simulated on sim, wall on local).
    pub(crate) timeout: Nanos,
}

/// One message's outcome over its receivers.
#[derive(Clone, Debug)]
pub(crate) struct Transfer {
    pub(crate) group: u32,
    pub(crate) msg: u64,
    /// Receivers that completed it intact.
    pub(crate) receivers: usize,
    /// From submission until the first and the last receiver completed.
    pub(crate) first: Nanos,
    pub(crate) last: Nanos,
    /// From submission until the first and the last receiver held the whole message.
    pub(crate) first_whole: Nanos,
    pub(crate) last_whole: Nanos,
}

impl Transfer {
    /// Message size over the time until every receiver had it, Gb/s.
    pub(crate) fn gbps(&self, size: usize) -> f64 {
        size as f64 * 8.0 / self.last.as_nanos().max(1) as f64
    }

    /// First to last receiver holding the whole message.
    pub(crate) fn skew(&self) -> Nanos {
        self.last_whole.saturating_sub(self.first_whole)
    }
}

/// What an experiment measured.
#[derive(Debug)]
pub(crate) struct BulkResult {
    pub(crate) transfers: Vec<Transfer>,
    pub(crate) times: Vec<MemberTime>,
    /// Completions whose content differed from what the root sent, came out of sequence, or
    /// came after a failure upcall.
    pub(crate) corrupt: usize,
    /// Failure upcalls (none in a run without faults).
    pub(crate) failures: usize,
    /// Receiver completions that never came.
    pub(crate) missing: usize,
    /// In a run where members were killed: the (surviving member, group) pairs where the
    /// member neither completed every message nor was told the group failed. RDMC promises
    /// no more under failures (a failed group stops; what was in flight may reach some
    /// receivers only), so such a run is judged by this and `corrupt`, not by `missing`.
    pub(crate) unresolved: Option<usize>,
    pub(crate) wall: Duration,
    /// Simulator events, on sim.
    pub(crate) events: Option<u64>,
}

impl BulkResult {
    /// The mean of the messages' bandwidths and their standard deviation, Gb/s.
    pub(crate) fn gbps_mean_sd(&self, size: usize) -> (f64, f64) {
        let xs: Vec<f64> = self.transfers.iter().map(|t| t.gbps(size)).collect();
        crate::stats::LatencySummary::of(&xs).map_or((0.0, 0.0), |s| (s.avg, s.stdev))
    }

    /// Group `group`'s messages after its first as a stream, Gb/s: their bytes over the time
    /// from when the root began sending the second message until the last receiver completed
    /// the last one. The first message warms the connections up, as `MPI_Bcast` benchmarks
    /// broadcast once before they time; the time counted includes the first message's tail
    /// wherever the second one waits for it. Counts the messages that reached any receiver:
    /// the caller checks that every one reached every receiver ([`BulkResult::clean`]). `None`
    /// without a second message.
    pub(crate) fn stream_gbps(&self, group: u32, size: usize) -> Option<f64> {
        let timed: Vec<_> = self
            .transfers
            .iter()
            .filter(|t| t.group == group && t.msg > 0)
            .collect();
        // The root's first block is its whole message: it starts holding all of them.
        let start = self
            .times
            .iter()
            .find(|m| m.process.0 == group && m.group == group && m.msg == 1)?
            .first_block;
        let end = timed.iter().map(|t| t.last).max()?;
        let took = end.saturating_sub(start).as_nanos().max(1);
        Some((timed.len() * size) as f64 * 8.0 / took as f64)
    }

    /// The bytes an average node received (over all groups) over the time until the last
    /// message completed, Gb/s.
    pub(crate) fn aggregate_gbps(&self, size: usize, nodes: usize) -> f64 {
        let delivered: usize = self.transfers.iter().map(|t| t.receivers).sum();
        let end = self.last_completed();
        (delivered * size) as f64 * 8.0 / nodes as f64 / end.as_nanos().max(1) as f64
    }

    /// Messages per second: all messages over the time until the last one completed.
    pub(crate) fn messages_per_s(&self) -> f64 {
        self.transfers.len() as f64 * 1e9 / self.last_completed().as_nanos().max(1) as f64
    }

    /// From submission until the last message reached its last receiver; 1 ns when none did,
    /// so that the rates above stay finite.
    fn last_completed(&self) -> Nanos {
        self.transfers
            .iter()
            .map(|t| t.last)
            .max()
            .unwrap_or(Nanos(1))
    }

    /// Whether every message reached every receiver intact or, in a run where members were
    /// killed, whether RDMC kept its promises under failure (see [`BulkResult::unresolved`]).
    pub(crate) fn clean(&self) -> bool {
        self.corrupt == 0
            && match self.unresolved {
                None => self.failures == 0 && self.missing == 0,
                Some(u) => u == 0,
            }
    }
}

/// One experiment as a CSV row: every parameter, then what it measured. No wall time: one
/// commit makes the same files (`harness run` prints it).
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Row {
    pub(crate) runtime: &'static str,
    pub(crate) profile: String,
    pub(crate) profile_version: u32,
    /// The profile's fabric ([`transport::runtime::sim::Fabric::describe`]), empty without one.
    pub(crate) fabric: String,
    pub(crate) software: String,
    pub(crate) algorithm: String,
    pub(crate) nodes: usize,
    pub(crate) size_bytes: usize,
    pub(crate) block_bytes: usize,
    pub(crate) blocks: usize,
    pub(crate) senders: usize,
    pub(crate) racks: usize,
    pub(crate) messages: usize,
    pub(crate) seed: u64,
    pub(crate) commit: String,
    /// Messages that reached at least one receiver.
    pub(crate) transfers: usize,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) latency_us_mean: f64,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) latency_us_max: f64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) gbps_mean: f64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) gbps_sd: f64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) aggregate_gbps: f64,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) skew_us_mean: f64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) messages_per_s: f64,
    pub(crate) corrupt: usize,
    pub(crate) failures: usize,
    pub(crate) missing: usize,
    pub(crate) sim_events: u64,
}

impl BulkSpec {
    /// Blocks per message.
    pub(crate) fn blocks(&self) -> usize {
        self.size.div_ceil(self.block_size).max(1)
    }

    /// The groups: group `s` has root `s`, then the other nodes in order after it.
    pub(crate) fn groups(&self) -> Vec<GroupConfig> {
        let racks = if self.algorithm.uses_racks() {
            self.racks
        } else {
            1
        };
        (0..self.senders)
            .map(|s| {
                rooted_group(
                    self.nodes,
                    s,
                    self.algorithm,
                    racks,
                    self.block_size,
                    self.size,
                )
            })
            .collect()
    }

    /// Refuses experiments that make no sense or would not fit this machine, saying why.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.nodes < 2 {
            return Err("--nodes must be at least 2 (a root and a receiver)".into());
        }
        if self.nodes > 4096 {
            return Err(format!("--nodes {} is more than 4096", self.nodes));
        }
        if self.senders == 0 || self.senders > self.nodes {
            return Err(format!(
                "--senders {} must be between 1 and --nodes ({}): each sender is the root of its own group",
                self.senders, self.nodes
            ));
        }
        if self.size == 0 || self.block_size == 0 || self.messages == 0 {
            return Err("--size, --block-size and --messages must be at least 1".into());
        }
        if self.algorithm.uses_racks() {
            if self.racks < 2 || self.racks > self.nodes {
                return Err(format!(
                    "--algorithm {} needs --racks R with 2 <= R <= --nodes ({}); got {}",
                    self.algorithm, self.nodes, self.racks
                ));
            }
        } else if self.racks > 1 {
            return Err(format!(
                "--racks is for the hybrid algorithms (hybrid-chain, hybrid-pipeline); {} ignores racks",
                self.algorithm
            ));
        }
        let steps = self.algorithm.steps(self.nodes, self.blocks(), 0).len();
        let schedule_bytes = steps * STEP_BYTES * self.nodes * self.senders;
        if schedule_bytes > 4 << 30 {
            return Err(format!(
                "{} steps per message at each of {} members in {} group(s) need {} MiB of schedules; use fewer nodes, fewer blocks (larger --block-size) or another algorithm",
                steps,
                self.nodes,
                self.senders,
                schedule_bytes >> 20
            ));
        }
        if matches!(
            self.runtime,
            Runtime::Local { .. } | Runtime::Tcp | Runtime::Verbs
        ) {
            // Every receive buffer, and every root's messages (made before the run).
            let buffers = self.nodes * self.senders * self.size;
            let messages = self.senders * self.messages * self.size;
            if buffers + messages > 8 << 30 {
                return Err(format!(
                    "the {} runtime allocates every receive buffer and every message a root sends: {} nodes x {} groups x {} bytes + {} messages x {} groups x {} bytes = {} MiB; use --runtime sim (synthetic payloads), fewer nodes or messages, or a smaller --size",
                    self.runtime.name(),
                    self.nodes,
                    self.senders,
                    self.size,
                    self.messages,
                    self.senders,
                    self.size,
                    (buffers + messages) >> 20
                ));
            }
        }
        Ok(())
    }

    /// The content of every message of every group, by (group, sequence number).
    fn expected(&self) -> Arc<BTreeMap<(u32, u64), Synthetic>> {
        Arc::new(
            (0..self.senders as u32)
                .flat_map(|g| (0..self.messages as u64).map(move |m| (g, m)))
                .map(|(g, m)| ((g, m), payload(self.seed, g, m, self.size)))
                .collect(),
        )
    }

    /// Every member, its messages queued.
    fn members(&self) -> Result<Vec<Member>, String> {
        let (groups, expected) = (self.groups(), self.expected());
        (0..self.nodes)
            .map(|p| self.member(p, &groups, &expected))
            .collect()
    }

    /// Member `p`, its messages queued if it is a root. On a real runtime a root's messages
    /// are bytes in its memory before the run starts, as an application's (and MPI's
    /// benchmark's) buffer is before it broadcasts: generating them is not part of the
    /// transfer. On the simulator they stay synthetic descriptors.
    fn member(
        &self,
        p: usize,
        groups: &[GroupConfig],
        expected: &Arc<BTreeMap<(u32, u64), Synthetic>>,
    ) -> Result<Member, String> {
        let me = ProcessId(p as u32);
        let mut node = RdmcNode::new(me, groups, PROBE).map_err(|e| e.to_string())?;
        if p < self.senders {
            for m in 0..self.messages as u64 {
                let message = expected[&(p as u32, m)];
                let data = match self.runtime {
                    Runtime::Sim => Data::Synthetic(message),
                    _ => Data::Bytes(message.to_vec().into()),
                };
                node.send_message(p as u32, data)
                    .map_err(|e| e.to_string())?;
            }
        }
        let chunk = match self.runtime {
            Runtime::Sim => usize::MAX,
            _ => CHECK_CHUNK,
        };
        Ok(Member::new(node, me, expected.clone(), chunk))
    }

    /// The CSV row of this experiment's result `r`.
    pub(crate) fn row(&self, r: &BulkResult, commit: &str) -> Row {
        let n = r.transfers.len().max(1) as f64;
        let us = |t: Nanos| t.as_nanos() as f64 / 1e3;
        let (gbps_mean, gbps_sd) = r.gbps_mean_sd(self.size);
        Row {
            runtime: self.runtime.name(),
            profile: self.profile.name.clone(),
            profile_version: self.profile.version,
            fabric: self
                .profile
                .fabric
                .as_ref()
                .map_or(String::new(), |f| f.describe()),
            software: self.software.name.clone(),
            algorithm: self.algorithm.to_string(),
            nodes: self.nodes,
            size_bytes: self.size,
            block_bytes: self.block_size,
            blocks: self.blocks(),
            senders: self.senders,
            racks: self.racks,
            messages: self.messages,
            seed: self.seed,
            commit: commit.to_string(),
            transfers: r.transfers.len(),
            latency_us_mean: r.transfers.iter().map(|t| us(t.last)).sum::<f64>() / n,
            latency_us_max: r.transfers.iter().map(|t| us(t.last)).fold(0.0, f64::max),
            gbps_mean,
            gbps_sd,
            aggregate_gbps: r.aggregate_gbps(self.size, self.nodes),
            skew_us_mean: r.transfers.iter().map(|t| us(t.skew())).sum::<f64>() / n,
            messages_per_s: r.messages_per_s(),
            corrupt: r.corrupt,
            failures: r.failures,
            missing: r.missing,
            sim_events: r.events.unwrap_or(0),
        }
    }

    /// Runs the experiment.
    pub(crate) fn run(&self) -> Result<BulkResult, String> {
        self.validate()?;
        if self.runtime == Runtime::Tcp {
            return Err("a tcp transfer is one OS process per member: launch_tcp runs it".into());
        }
        let members = self.members()?;
        let start = Instant::now();
        let drive = crate::runtime::Drive {
            runtime: self.runtime,
            seed: self.seed,
            profile: Some(&self.profile),
            software: &self.software,
            faults: &[],
            limits: self.profile.limits(),
            until: Some(self.timeout),
            limit: Duration::from_nanos(self.timeout.as_nanos()),
        };
        let run = drive.run(members)?;
        let (outcomes, events) = (run.processes, run.events);
        let outcomes: Vec<_> = outcomes.iter().map(Member::outcome).collect();
        Ok(self.result(&outcomes, start.elapsed(), events))
    }

    /// What the members' outcomes add up to.
    fn result(
        &self,
        outcomes: &[MemberOutcome],
        wall: Duration,
        events: Option<u64>,
    ) -> BulkResult {
        let mut times = Vec::new();
        let (mut corrupt, mut failures) = (0, 0);
        for m in outcomes {
            corrupt += m.corrupt;
            failures += m.failures;
            times.extend(m.done.iter().copied());
        }
        let mut by_msg: BTreeMap<(u32, u64), Vec<(Nanos, Nanos)>> = BTreeMap::new();
        for t in &times {
            // The root's own completion says it has sent, not that anyone received.
            if t.process.0 != t.group {
                by_msg
                    .entry((t.group, t.msg))
                    .or_default()
                    .push((t.at, t.last_block));
            }
        }
        let receivers = self.nodes - 1;
        let mut missing = 0;
        let mut transfers = Vec::new();
        for g in 0..self.senders as u32 {
            for m in 0..self.messages as u64 {
                let ats = by_msg.remove(&(g, m)).unwrap_or_default();
                missing += receivers - ats.len();
                let upcall = ats.iter().map(|a| a.0);
                let whole = ats.iter().map(|a| a.1);
                if let (Some(first), Some(last), Some(first_whole), Some(last_whole)) = (
                    upcall.clone().min(),
                    upcall.max(),
                    whole.clone().min(),
                    whole.max(),
                ) {
                    transfers.push(Transfer {
                        group: g,
                        msg: m,
                        receivers: ats.len(),
                        first,
                        last,
                        first_whole,
                        last_whole,
                    });
                }
            }
        }
        BulkResult {
            transfers,
            times,
            corrupt,
            failures,
            missing,
            unresolved: None,
            wall,
            events,
        }
    }

    /// The run on the tcp runtime: every member a node process ([`crate::cluster`]); the run
    /// ends once every surviving member is done (or at the timeout). `run_args` are the run's
    /// own arguments, which each node re-parses.
    pub(crate) fn launch_tcp(
        &self,
        run_args: Vec<String>,
        faults: &[crate::cluster::ProcessFault],
        hosts: Option<&crate::cluster::ClusterFile>,
    ) -> Result<BulkResult, String> {
        self.validate()?;
        let roles = vec!["member".to_string(); self.nodes];
        let runs_for = Duration::from_nanos(self.timeout.as_nanos());
        // A root makes its messages' bytes before its node starts: at 1 GB/s, to be safe (30
        // GB/s filling on this host, plus the pages faulted in), or a quarter of that in an
        // unoptimised build (0.3-0.5 GB/s measured).
        let rate = if cfg!(debug_assertions) { 0.25e9 } else { 1e9 };
        let prepare = Duration::from_secs_f64((self.messages * self.size) as f64 / rate);
        let launched =
            crate::cluster::spawn_nodes(run_args, &roles, faults, hosts, runs_for, true, prepare)?;
        let (mut outcomes, mut events) = (Vec::new(), Vec::new());
        for (i, killed) in launched.killed.iter().enumerate() {
            if !killed {
                let (links, outcome) = launched.report::<MemberOutcome>(i)?;
                events.extend(links.events.into_iter().map(|e| (i, e)));
                outcomes.push(outcome);
            }
        }
        crate::cluster::print_refusals(&events);
        let mut r = self.result(&outcomes, launched.wall, None);
        if launched.killed.contains(&true) {
            let unresolved = outcomes
                .iter()
                .flat_map(|m| (0..self.senders as u32).map(move |g| (m, g)))
                .filter(|(m, g)| {
                    let completed = m.done.iter().filter(|t| t.group == *g).count();
                    completed < self.messages && !m.failed_groups.contains(g)
                })
                .count();
            r.unresolved = Some(unresolved);
        }
        Ok(r)
    }

    /// Runs member `id` as node `id` of `cluster`, and writes its outcome to `report`.
    pub(crate) fn serve(
        &self,
        cluster: &crate::cluster::ClusterFile,
        id: usize,
        report: &std::path::Path,
    ) -> Result<(), String> {
        if id >= self.nodes {
            return Err(format!(
                "--id {id}: the group has members 0..{}",
                self.nodes
            ));
        }
        // Every member's regions (the region table), but only this node's messages.
        let groups = self.groups();
        let specs: Vec<_> = (0..self.nodes)
            .map(|p| {
                RdmcNode::new(ProcessId(p as u32), &groups, PROBE)
                    .map(|n| Process::<transport::runtime::tcp::TcpNic>::regions(&n))
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?;
        let member = self.member(id, &groups, &self.expected())?;
        let run = crate::cluster::run_as_node(
            cluster,
            id,
            &specs,
            member,
            self.seed,
            Duration::from_nanos(self.timeout.as_nanos()),
            Some(report),
        )?;
        let links = crate::cluster::Links::of(&run);
        crate::cluster::finish_node(cluster, id, &links, report, &run.process.outcome())
    }
}

/// Peak resident memory of this process so far (Linux `VmHWM`), bytes.
pub(crate) fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A byte count for people: `256 MiB`, `64 KiB`, `1000 B`.
pub(crate) fn show_bytes(b: usize) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if b >= 1 << shift && b % (1 << shift) == 0 {
            return format!("{} {unit}", b >> shift);
        }
    }
    format!("{b} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_show_in_the_largest_whole_unit() {
        assert_eq!(show_bytes(256 << 20), "256 MiB");
        assert_eq!(show_bytes(64 << 10), "64 KiB");
        assert_eq!(show_bytes(1000), "1000 B");
    }

    fn spec(algorithm: Algorithm, nodes: usize, senders: usize, runtime: Runtime) -> BulkSpec {
        BulkSpec {
            algorithm,
            nodes,
            size: 100_000,
            block_size: 8192,
            senders,
            racks: if algorithm.uses_racks() { 2 } else { 1 },
            messages: 2,
            runtime,
            profile: Profile::load("fractus-100g").unwrap(),
            software: Software::none(),
            seed: 7,
            timeout: Nanos(20_000_000_000),
        }
    }

    /// Every message reaches every receiver intact, on both runtimes (local with and without
    /// the NIC thread), and the measures are
    /// consistent: skew within the latency, bandwidth = size over the last receiver's time.
    #[test]
    fn every_receiver_gets_every_message_intact() {
        for (alg, n, senders, runtime) in [
            (Algorithm::BinomialPipeline, 7, 1, Runtime::Sim),
            (Algorithm::HybridPipeline, 6, 3, Runtime::Sim),
            (
                Algorithm::Chain,
                5,
                1,
                Runtime::Local {
                    threads: 2,
                    nic_thread: false,
                },
            ),
            (
                Algorithm::BinomialPipeline,
                5,
                1,
                Runtime::Local {
                    threads: 2,
                    nic_thread: true,
                },
            ),
        ] {
            let s = spec(alg, n, senders, runtime);
            let r = s.run().unwrap();
            assert!(r.clean(), "{alg} {runtime:?}: {r:?}");
            assert_eq!(r.transfers.len(), senders * 2);
            for t in &r.transfers {
                assert_eq!(t.receivers, n - 1);
                assert!(t.first <= t.last);
                let want = s.size as f64 * 8.0 / t.last.as_nanos() as f64;
                assert!((t.gbps(s.size) - want).abs() < 1e-9);
            }
        }
    }

    /// A stream counts the messages after the first, from their root's start of the second to
    /// the last receiver of the last; without a second message there is no stream.
    #[test]
    fn a_stream_is_timed_from_the_roots_start_of_its_first_timed_message() {
        let mut s = spec(Algorithm::BinomialPipeline, 5, 1, Runtime::Sim);
        s.messages = 3;
        let r = s.run().unwrap();
        assert!(r.clean(), "{r:?}");
        let root = |msg| {
            r.times
                .iter()
                .find(|m| m.process.0 == 0 && m.msg == msg)
                .unwrap()
        };
        let start = root(1).first_block;
        // The root starts its second message once it has sent its first, and the stream ends
        // when the last message reached its last receiver.
        let root_done_0 = root(0).at;
        assert!(start >= root_done_0, "{start} < {root_done_0}");
        let end = r.transfers.iter().find(|t| t.msg == 2).unwrap().last;
        assert_eq!(end, r.transfers.iter().map(|t| t.last).max().unwrap());
        assert!(start < end);
        let want = 2.0 * s.size as f64 * 8.0 / (end - start).as_nanos() as f64;
        assert!((r.stream_gbps(0, s.size).unwrap() - want).abs() < 1e-9);
        s.messages = 1;
        assert_eq!(s.run().unwrap().stream_gbps(0, s.size), None);
    }

    #[test]
    fn impossible_experiments_are_refused_with_a_reason() {
        let mut s = spec(Algorithm::BinomialPipeline, 4, 1, Runtime::Sim);
        s.racks = 2;
        assert!(s.validate().unwrap_err().contains("--racks is for"));
        let mut s = spec(Algorithm::HybridChain, 4, 1, Runtime::Sim);
        s.racks = 1;
        assert!(s.validate().unwrap_err().contains("needs --racks"));
        let s = spec(Algorithm::Chain, 4, 5, Runtime::Sim);
        assert!(s.validate().unwrap_err().contains("--senders"));
        let mut s = spec(
            Algorithm::Chain,
            512,
            1,
            Runtime::Local {
                threads: 2,
                nic_thread: false,
            },
        );
        s.size = 256 << 20;
        assert!(s
            .validate()
            .unwrap_err()
            .contains("local runtime allocates"));
    }
}
