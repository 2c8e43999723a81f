//! A run's outcome and the sweep's tally of them.

use super::schedule::Kinds;
use multicast::DeliveryLog;

/// The outcome of one run.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) violations: Vec<String>,
    pub(crate) events: u64,
    pub(crate) delivered: u64,
    pub(crate) leader_changes: bool,
    pub(crate) refused_writes: u64,
    /// Servers that stopped themselves (a halt is an outcome, judged by [`super::judge::judge`]).
    pub(crate) halted: u64,
    /// Completed multicasts started after the last fault stopped acting.
    pub(crate) post_fault: u64,
    /// Per fault of the schedule (in its order), completed multicasts started after it stopped
    /// acting.
    pub(crate) after_each: Vec<u64>,
    /// A protocol-specific event count (RamCast: messages relayed for suspected clients).
    pub(crate) extra: u64,
    pub(crate) divergence: Option<String>,
    pub(crate) log: Option<DeliveryLog>,
    /// Each server's final state, for failure reports.
    pub(crate) states: Vec<String>,
    /// Ops the simulator carried out in pieces (torn landings).
    pub(crate) torn_ops: u64,
}

/// Counts over a sweep: how many runs had each fault kind and each protocol event.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Tally {
    pub(crate) events: u64,
    pub(crate) delivered: u64,
    pub(crate) leader_crash: u64,
    leaders_at_once: u64,
    pub(crate) follower_crash: u64,
    client_crash: u64,
    pub(crate) mid_post: u64,
    false_suspicion: u64,
    pub(crate) slow: u64,
    pub(crate) link_delay: u64,
    cut_off: u64,
    leader_change: u64,
    revoke_race: u64,
    halted_runs: u64,
    halted_servers: u64,
    /// Per run, completed multicasts started after its last fault.
    post_fault: Vec<u64>,
    pub(crate) extra: u64,
    /// Ridge's own kinds (absent from earlier reports).
    #[serde(default)]
    distributor_crash: u64,
    #[serde(default)]
    clock_skew: u64,
    #[serde(default)]
    dedicated: u64,
    #[serde(default)]
    tpcc: u64,
    #[serde(default)]
    over_ridge: u64,
    #[serde(default)]
    mixed_dest: u64,
    #[serde(default)]
    small_retain: u64,
    #[serde(default)]
    spread: u64,
    #[serde(default)]
    five_replicas: u64,
    #[serde(default)]
    serve_broken: u64,
    #[serde(default)]
    late_fault: u64,
    /// Runs with torn landings, and the ops they carried out in pieces.
    #[serde(default)]
    torn: u64,
    #[serde(default)]
    torn_ops: u64,
}

impl Tally {
    /// Adds another sweep's counts (a shard of the same sweep).
    pub(crate) fn merge(&mut self, o: &Tally) {
        let Tally {
            events,
            delivered,
            leader_crash,
            leaders_at_once,
            follower_crash,
            client_crash,
            mid_post,
            false_suspicion,
            slow,
            link_delay,
            cut_off,
            leader_change,
            revoke_race,
            halted_runs,
            halted_servers,
            post_fault,
            extra,
            distributor_crash,
            clock_skew,
            dedicated,
            tpcc,
            over_ridge,
            mixed_dest,
            small_retain,
            spread,
            five_replicas,
            serve_broken,
            late_fault,
            torn,
            torn_ops,
        } = o;
        self.events += events;
        self.delivered += delivered;
        self.leader_crash += leader_crash;
        self.leaders_at_once += leaders_at_once;
        self.follower_crash += follower_crash;
        self.client_crash += client_crash;
        self.mid_post += mid_post;
        self.false_suspicion += false_suspicion;
        self.slow += slow;
        self.link_delay += link_delay;
        self.cut_off += cut_off;
        self.leader_change += leader_change;
        self.revoke_race += revoke_race;
        self.halted_runs += halted_runs;
        self.halted_servers += halted_servers;
        self.post_fault.extend(post_fault);
        self.extra += extra;
        self.distributor_crash += distributor_crash;
        self.clock_skew += clock_skew;
        self.dedicated += dedicated;
        self.tpcc += tpcc;
        self.over_ridge += over_ridge;
        self.mixed_dest += mixed_dest;
        self.small_retain += small_retain;
        self.spread += spread;
        self.five_replicas += five_replicas;
        self.serve_broken += serve_broken;
        self.late_fault += late_fault;
        self.torn += torn;
        self.torn_ops += torn_ops;
    }

    /// The median over runs of the multicasts completed after the run's last fault, and the
    /// smallest.
    pub(crate) fn post_fault(&self) -> (u64, u64) {
        let mut v = self.post_fault.clone();
        v.sort_unstable();
        (
            v.get(v.len() / 2).copied().unwrap_or(0),
            v.first().copied().unwrap_or(0),
        )
    }

    /// Adds one run.
    pub(crate) fn add(&mut self, k: Kinds, out: &Outcome) {
        let n = |b: bool| b as u64;
        self.events += out.events;
        self.delivered += out.delivered;
        self.leader_crash += n(k.leader_crash);
        self.leaders_at_once += n(k.leaders_at_once);
        self.follower_crash += n(k.follower_crash);
        self.client_crash += n(k.client_crash);
        self.mid_post += n(k.mid_post);
        self.false_suspicion += n(k.false_suspicion);
        self.slow += n(k.slow);
        self.link_delay += n(k.link_delay);
        self.cut_off += n(k.cut_off);
        self.leader_change += n(out.leader_changes);
        self.revoke_race += n(out.refused_writes > 0);
        self.halted_runs += n(out.halted > 0);
        self.halted_servers += out.halted;
        self.post_fault.push(out.post_fault);
        self.extra += n(out.extra > 0);
        self.distributor_crash += n(k.distributor_crash);
        self.clock_skew += n(k.clock_skew);
        self.dedicated += n(k.dedicated);
        self.tpcc += n(k.tpcc);
        self.over_ridge += n(k.over_ridge);
        self.mixed_dest += n(k.mixed_dest);
        self.small_retain += n(k.small_retain);
        self.spread += n(k.spread);
        self.five_replicas += n(k.five_replicas);
        self.serve_broken += n(k.serve_broken);
        self.late_fault += n(k.late_fault);
        self.torn += n(out.torn_ops > 0);
        self.torn_ops += out.torn_ops;
    }

    /// The clause on torn landings every sweep's line ends with.
    pub(crate) fn describe_torn(&self) -> String {
        format!(
            "; torn landings (writes and reads in pieces) in {} runs, {} ops",
            self.torn, self.torn_ops
        )
    }

    /// The "runs with" line in Ridge's vocabulary: an ensemble's rank 0 is its initial
    /// coordinator; colocated, a group's rank 0 is its ensemble's, every server an acceptor,
    /// ranks beyond f distributors; dedicated, every server a distributor; a leader change is
    /// a coordinator's round after the first.
    pub(crate) fn describe_ridge(&self) -> String {
        let (median, least) = self.post_fault();
        format!(
            "runs with: mixed single- and multi-group traffic {}, retain under 256 decisions (trimming) {}, e_all acceptors spread over the groups {}, dedicated acceptors {}, coordinator crash {} (in several ensembles at the same instant {}), acceptor crash {}, distributor crash {}, client crash {}, crash in the middle of posting {}, false suspicion (initial coordinator paused past the timeout) {}, pause/slow {}, link delay {} (coordinator cut off from its acceptors {}), clock skew {}; new round after the first (takeover or fallback) {}, learner filled a gap from an acceptor {}, server halted {} ({} halts); multicasts ordered after the last fault: median {median} per run (least {least}){}",
            self.mixed_dest,
            self.small_retain,
            self.spread,
            self.dedicated,
            self.leader_crash,
            self.leaders_at_once,
            self.follower_crash,
            self.distributor_crash,
            self.client_crash,
            self.mid_post,
            self.false_suspicion,
            self.slow,
            self.link_delay,
            self.cut_off,
            self.clock_skew,
            self.leader_change,
            self.extra,
            self.halted_runs,
            self.halted_servers,
            self.describe_torn(),
        )
    }

    /// Heron's "runs with" line: the faults in the vocabulary of Heron over RamCast.
    pub(crate) fn describe_heron(&self) -> String {
        let (median, least) = self.post_fault();
        format!(
            "runs with: over Ridge {} (the others over RamCast), TPC-C {} (the others the key-value store), five replicas per partition {}, multicast leader crash (RamCast leader, Ridge coordinator) {}, other replica crash {}, crash in the middle of posting {}, client crash {}, false suspicion (leader paused past the timeout) {}, pause (laggard) {}, link delay {}, a fault after the first 900 us {}, queue pair broken while a laggard is served (transfer interrupted) {}; leader change happened {}, state transfers installed {}; requests completed that were issued after the last fault: median {median} per run (least {least}){}",
            self.over_ridge,
            self.tpcc,
            self.five_replicas,
            self.leader_crash,
            self.follower_crash,
            self.mid_post,
            self.client_crash,
            self.false_suspicion,
            self.slow,
            self.link_delay,
            self.late_fault,
            self.serve_broken,
            self.leader_change,
            self.extra,
            self.describe_torn(),
        )
    }

    /// The "runs with" line of a sweep's report; `extra` names the protocol-specific event.
    pub(crate) fn describe(&self, extra: Option<&str>) -> String {
        let mut s = format!(
            "runs with: leader crash {} (in several groups at the same instant {}), follower crash {}, client crash {}, crash in the middle of posting (partial multicast or proposal) {}, false suspicion (initial leader paused past the timeout) {}, pause/slow {}, link delay {} (leader cut off from its followers {}); leader change happened {}, deposed leader's write refused (revoke race) {}, server halted {} ({} halts)",
            self.leader_crash,
            self.leaders_at_once,
            self.follower_crash,
            self.client_crash,
            self.mid_post,
            self.false_suspicion,
            self.slow,
            self.link_delay,
            self.cut_off,
            self.leader_change,
            self.revoke_race,
            self.halted_runs,
            self.halted_servers,
        );
        if let Some(label) = extra {
            s.push_str(&format!(", {label} {}", self.extra));
        }
        let (median, least) = self.post_fault();
        s.push_str(&format!(
            "; multicasts ordered after the last fault: median {median} per run (least {least})"
        ));
        s.push_str(&self.describe_torn());
        s
    }
}
