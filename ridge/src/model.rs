//! Section 5's performance model, measured on the simulator. In a round a process sends one
//! message and receives at most one, and a message sent in round `k` arrives in round
//! `k + delta`. [`unit_delay`] makes that a hardware profile: a value message serialises for one
//! round on the sender's egress and on the receiver's ingress, and travels `delta - 1` rounds
//! between; posting, polling and the few bytes of ids (which the paper neglects, its footnote
//! 2) cost a few percent of a round each (a last acceptor's DECISION to each of `n` learners
//! adds up: [`throughput`]). [`measure`] multicasts one value to every group, so
//! `e_all` decides it and every server learns it (`L` is all `n` servers, `e_all`'s quorum 2
//! servers of group 0), and counts the rounds from the coordinator's proposal to the last
//! learner's decision, to set beside [`formula`]: Ridge `(|Q| + 1) delta + |L \ Q| - 2`, a ring
//! `delta (n - 1)`. [`throughput`] counts the values a learner learns per round under load,
//! to set beside section 5.2's one per round.

use crate::config::{AllAcceptors, Config};
use crate::paxos::Dissemination;
use multicast::{DestPolicy, LoadSpec, Node};
use transport::runtime::sim::{Profile, Sim, SimConfig};
use transport::Nanos;

/// One round of the model, in simulated time.
pub const ROUND: Nanos = Nanos(1_000_000);

/// The payload of the value measured: with its packet's own bytes, just under one round on the
/// wire of [`unit_delay`].
pub const PAYLOAD: usize = 3_800;

/// Servers per group in [`measure`] (`e_all` has 3 acceptors, `f = 1`, `|Q| = 2`).
pub const REPLICAS: usize = 3;

/// The model as a hardware profile: a 4000-byte packet takes one round each way, the network
/// `delta - 1` more.
pub fn unit_delay(delta: u64) -> Profile {
    assert!(delta >= 1, "a message takes at least one round");
    // 4000 bytes in one round: 4000 * 8 bits per ROUND.
    let gbps = 4000.0 * 8.0 / ROUND.as_nanos() as f64;
    let text = format!(
        r#"
name = "unit-delay"
version = 1
description = "Ridge section 5's round model: one 4000-byte message per round each way, {delta} rounds from send to receive"
[calibration]
write_lat_us = {lat}
write_bw_gbps = {gbps}
source = "model: Ridge section 5.1 (rounds of {round} ns)"
[nic]
write_latency_ns = {wl}
inline_max_bytes = 65536
dma_read_ns = 0
link_gbps = {gbps}
msg_rate_mpps = 1000.0
post_ns = 1
completion_ns = 1
reconnect_ns = 1000
unreachable_timeout_ns = 100000000000000
send_max_bytes = 16777216
[cpu]
poll_ns = 1
"#,
        lat = (delta * ROUND.as_nanos()) as f64 / 1000.0,
        wl = (delta - 1) * ROUND.as_nanos(),
        round = ROUND.as_nanos(),
    );
    Profile::parse("unit-delay", &text).expect("a valid profile")
}

/// The paper's latency in rounds for `n` learners, a quorum of `q` and `delta`; `None` for the
/// direct baseline, for which section 5 gives none.
pub fn formula(d: Dissemination, n: u64, q: u64, delta: u64) -> Option<u64> {
    match d {
        Dissemination::Ridge => Some((q + 1) * delta + (n - q) - 2),
        Dissemination::Ring => Some(delta * (n - 1)),
        Dissemination::Direct => None,
    }
}

/// One measurement of [`measure`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// The dissemination measured.
    pub dissemination: Dissemination,
    /// Learners (every server).
    pub n: u64,
    /// The quorum.
    pub q: u64,
    /// Rounds from sending to receiving.
    pub delta: u64,
    /// Rounds from the coordinator's proposal to the last learner's decision.
    pub rounds: f64,
}

impl Point {
    /// The paper's latency for this point, if it gives one.
    pub fn formula(&self) -> Option<u64> {
        formula(self.dissemination, self.n, self.q, self.delta)
    }
}

/// `r` rounds of simulated time.
fn rounds(r: u64) -> Nanos {
    Nanos(r * ROUND.as_nanos())
}

/// `cfg` as the model runs it: dissemination `d`, learning traced, slots that hold a value, and
/// only the values travelling (no null message, no heartbeat, failure timeouts far beyond the
/// run).
fn in_the_model(mut cfg: Config, d: Dissemination) -> Config {
    cfg.dissemination = d;
    cfg.trace = true;
    cfg.slot_bytes = 8192;
    cfg.ring_slots = 64;
    let far = Nanos(1_000_000 * ROUND.as_nanos());
    cfg.delta = far;
    cfg.timing.heartbeat = far;
    cfg.timing.suspect = Nanos(far.as_nanos() * 2);
    cfg.timing.retry = Nanos(far.as_nanos() * 2);
    cfg
}

/// Measures one value's rounds with `groups` groups of [`REPLICAS`] servers on
/// [`unit_delay`]`(delta)`.
pub fn measure(groups: usize, delta: u64, d: Dissemination) -> Point {
    let mut cfg = Config::new(groups, REPLICAS, 1);
    cfg.all_acceptors = AllAcceptors::FirstGroup;
    let cfg = in_the_model(cfg, d);
    let load = LoadSpec {
        dest: DestPolicy::All,
        groups,
        tree: None,
        size: PAYLOAD,
        // Phase 1 first: the client sends once it is done.
        warmup_end: rounds(4 * delta),
        stop_at: rounds(5 * delta),
    };
    let horizon = rounds(30 * delta + 100 * groups as u64);
    let mut sim = Sim::new(
        SimConfig::new(1, unit_delay(delta)),
        crate::nodes(&cfg, load, 1, false),
    );
    sim.run(Some(horizon));
    let all = cfg.mapping().all();
    let traces: Vec<&crate::Trace> = sim
        .processes()
        .iter()
        .filter_map(|n| match n {
            Node::Server(s) => Some(s.server.trace()),
            Node::Client(_) | Node::Auxiliary(_) => None,
        })
        .collect();
    let (k, at) = traces
        .iter()
        .flat_map(|t| t.proposed.iter())
        .filter(|((e, _), _)| *e == all)
        .map(|((_, k), t)| (*k, *t))
        .min()
        .expect("the coordinator proposed");
    let last = traces
        .iter()
        .map(|t| {
            t.learned
                .get(&(all, k))
                .copied()
                .expect("every server learns")
        })
        .max()
        .expect("servers");
    Point {
        dissemination: d,
        n: (groups * REPLICAS) as u64,
        q: (REPLICAS / 2 + 1) as u64,
        delta,
        rounds: (last.as_nanos() - at.as_nanos()) as f64 / ROUND.as_nanos() as f64,
    }
}

/// One measurement of [`throughput`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// The dissemination measured.
    pub dissemination: Dissemination,
    /// Learners (every server of the one group).
    pub n: u64,
    /// Rounds from sending to receiving.
    pub delta: u64,
    /// Closed-loop clients of the best run.
    pub clients: usize,
    /// Values decided per round at the slowest learner, in the best run.
    pub per_round: f64,
}

/// Section 5.2's throughput: one group of `n` servers, all learners, its first 3 the
/// acceptors (`#Q = 2`, the coordinator first), on [`unit_delay`]`(delta)`; closed-loop clients
/// multicast values of [`PAYLOAD`] bytes, doubled from 4 while the rate grows by 5% or more (up
/// to 128). The rate is the values the slowest learner learns per round over 400 rounds after
/// 200 of warm-up; the best run is kept. One group, so no idle ensemble waits on null messages.
pub fn throughput(n: usize, delta: u64, d: Dissemination) -> Rate {
    let mut best: Option<Rate> = None;
    let mut clients = 4;
    while clients <= 128 {
        let per_round = rate(n, delta, d, clients);
        let grew = best.is_none_or(|b| per_round >= b.per_round * 1.05);
        if best.is_none_or(|b| per_round > b.per_round) {
            best = Some(Rate {
                dissemination: d,
                n: n as u64,
                delta,
                clients,
                per_round,
            });
        }
        if !grew {
            break;
        }
        clients *= 2;
    }
    best.expect("measured at least once")
}

/// Values learned per round by the slowest learner with `clients` closed-loop clients.
fn rate(n: usize, delta: u64, d: Dissemination, clients: usize) -> f64 {
    const WARMUP: u64 = 200;
    const WINDOW: u64 = 400;
    let mut cfg = Config::new(1, n, clients);
    cfg.acceptors = 3;
    let cfg = in_the_model(cfg, d);
    let load = LoadSpec {
        dest: DestPolicy::Single,
        groups: 1,
        tree: None,
        size: PAYLOAD,
        warmup_end: rounds(WARMUP),
        stop_at: rounds(WARMUP + WINDOW),
    };
    let mut sim = Sim::new(
        SimConfig::new(1, unit_delay(delta)),
        crate::nodes(&cfg, load, 1, false),
    );
    sim.run(Some(rounds(WARMUP + WINDOW)));
    let window = rounds(WARMUP)..rounds(WARMUP + WINDOW);
    sim.processes()
        .iter()
        .filter_map(|node| match node {
            Node::Server(s) => Some(
                s.server
                    .trace()
                    .learned
                    .values()
                    .filter(|at| window.contains(at))
                    .count(),
            ),
            Node::Client(_) | Node::Auxiliary(_) => None,
        })
        .min()
        .expect("servers") as f64
        / WINDOW as f64
}

/// Section 5.3's worked example: 100 processes on a wide-area network, 1 MB/s each way,
/// 100 ms latency, 1 KB messages: a round is 1 ms and `delta` 100 rounds. Returns `(n, delta,
/// distributors, ring)` in rounds as the paper computes them (`delta + n - 2` when every
/// process distributes its own message, `delta (n - 1)` around a ring), and Ridge's own
/// formula for the same `n` with 3 acceptors.
pub fn worked_example() -> (u64, u64, u64, u64, u64) {
    let (n, delta) = (100, 100);
    let ridge = formula(Dissemination::Ridge, n, 2, delta).expect("has one");
    let ring = formula(Dissemination::Ring, n, 2, delta).expect("has one");
    (n, delta, delta + n - 2, ring, ridge)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Section 5.2: Ridge decides about one value per round (the model's 1, less what the
    /// packets' own bytes, ids and the clients' requests and responses take of a round), as
    /// many as a ring.
    #[test]
    fn ridge_decides_about_one_value_per_round_as_a_ring_does() {
        let ridge = throughput(9, 2, Dissemination::Ridge);
        let ring = throughput(9, 2, Dissemination::Ring);
        // 0.895 at n = 9 with clients started apart (workload::staggered_start); 0.9 and more
        // when they started in lockstep. The paper's claim is judged by `harness figure
        // ridge-model` at its own rule (at least 0.9); this checks the model is near one.
        assert!(
            ridge.per_round >= 0.85 && ridge.per_round <= 1.0,
            "{ridge:?}"
        );
        assert!(
            (ridge.per_round / ring.per_round - 1.0).abs() <= 0.1,
            "{ridge:?} {ring:?}"
        );
    }

    #[test]
    fn the_worked_example_is_the_papers() {
        // Section 5.3: "latency delta + n - 2 = 100 + 100 - 2 = 198 ms ... a ring ...
        // 100 x (100 - 1) = 9900 ms".
        assert_eq!(worked_example(), (100, 100, 198, 9900, 396));
    }
}
