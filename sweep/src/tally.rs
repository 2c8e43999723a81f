//! A run's outcome and the sweep's tally of them.

use super::schedule::Kinds;
use multicast::DeliveryLog;
use transport::runtime::sim::SimStats;

/// The outcome of one run.
#[derive(Debug, Default)]
pub struct Outcome {
    /// What failed: every property violated, client error and halt not explained by the schedule (empty: the run passed).
    pub violations: Vec<String>,
    /// Events the simulator processed.
    pub events: u64,
    /// Deliveries summed over the servers.
    pub delivered: u64,
    /// Whether some group's leadership moved ([`multicast::Observed::changed_leader`]).
    pub leader_changes: bool,
    /// Writes refused because their writer had been deposed (the revoke race).
    pub refused_writes: u64,
    /// Servers that stopped themselves (a halt is an outcome, judged by [`super::judge::judge`]).
    pub halted: u64,
    /// Completed multicasts started after the last fault stopped acting.
    pub post_fault: u64,
    /// Per fault of the schedule (in its order), completed multicasts started after it stopped
    /// acting.
    pub after_each: Vec<u64>,
    /// A protocol-specific event count (RamCast: messages relayed for suspected clients).
    pub extra: u64,
    /// The first event at which a second run of the seed diverged (with the determinism check).
    pub divergence: Option<String>,
    /// The run's delivery log, kept only for a failing run.
    pub log: Option<DeliveryLog>,
    /// Each server's final state, for failure reports.
    pub states: Vec<String>,
    /// Ops the simulator carried out in pieces (torn landings).
    pub torn_ops: u64,
}

impl Outcome {
    /// The outcome of a simulated run before it is judged: the simulator's counts of events
    /// and of ops carried out in pieces, from its `stats`.
    pub fn simulated(stats: &SimStats) -> Outcome {
        Outcome {
            events: stats.events,
            torn_ops: stats.torn_ops,
            ..Outcome::default()
        }
    }
}

/// Counts over a sweep: how many runs had each fault kind and each protocol event. A report
/// whose tally has fields this one does not know (one written before the protocols' own kinds
/// became [`Tally::own`]) is refused rather than merged without them.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tally {
    /// Events processed over the sweep.
    pub events: u64,
    /// Deliveries over the sweep.
    pub delivered: u64,
    /// Runs in which a group's leader crashed.
    pub leader_crash: u64,
    /// Runs in which leaders of two or more groups crashed at one instant.
    pub leaders_at_once: u64,
    /// Runs in which a follower crashed.
    pub follower_crash: u64,
    /// Runs in which a client crashed.
    pub client_crash: u64,
    /// Runs with a crash in the middle of posting.
    pub mid_post: u64,
    /// Runs with a pause long enough to be suspected (a correct process suspected).
    pub false_suspicion: u64,
    /// Runs with a slow process.
    pub slow: u64,
    /// Runs with a delayed link.
    pub link_delay: u64,
    /// Runs with a leader cut off from its followers by slow links.
    pub cut_off: u64,
    /// Runs in which some group's leadership moved.
    pub leader_change: u64,
    /// Runs in which a deposed writer's write was refused.
    pub revoke_race: u64,
    /// Runs in which some server stopped itself.
    pub halted_runs: u64,
    /// Servers that stopped themselves, over the sweep.
    pub halted_servers: u64,
    /// Per run, completed multicasts started after its last fault.
    post_fault: Vec<u64>,
    /// The protocol's own event count ([`Outcome::extra`]), summed.
    pub extra: u64,
    /// Runs with each of the protocol's own kinds ([`Kinds::own`]), by name.
    #[serde(default)]
    own: std::collections::BTreeMap<String, u64>,
    /// Runs with torn landings.
    #[serde(default)]
    pub torn: u64,
    /// Ops carried out in pieces, over the torn runs.
    #[serde(default)]
    pub torn_ops: u64,
}

impl Tally {
    /// Adds another sweep's counts (a shard of the same sweep).
    pub fn merge(&mut self, o: &Tally) {
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
            own,
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
        for (name, n) in own {
            *self.own.entry(name.clone()).or_default() += n;
        }
        self.torn += torn;
        self.torn_ops += torn_ops;
    }

    /// The median over runs of the multicasts completed after the run's last fault, and the
    /// smallest.
    pub fn post_fault(&self) -> (u64, u64) {
        let mut v = self.post_fault.clone();
        v.sort_unstable();
        (
            v.get(v.len() / 2).copied().unwrap_or(0),
            v.first().copied().unwrap_or(0),
        )
    }

    /// Adds one run.
    pub fn add(&mut self, k: Kinds, out: &Outcome) {
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
        for name in &k.own {
            *self.own.entry(name.to_string()).or_default() += 1;
        }
        self.torn += n(out.torn_ops > 0);
        self.torn_ops += out.torn_ops;
    }

    /// The clause on torn landings every sweep's line ends with.
    pub fn describe_torn(&self) -> String {
        format!(
            "; torn landings (writes and reads in pieces) in {} runs, {} ops",
            self.torn, self.torn_ops
        )
    }

    /// Runs with the protocol's own kind `name` ([`Kinds::own`]).
    pub fn own(&self, name: &str) -> u64 {
        self.own.get(name).copied().unwrap_or(0)
    }

    /// The "runs with" line of a sweep's report; `extra` names the protocol-specific event.
    pub fn describe(&self, extra: Option<&str>) -> String {
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
