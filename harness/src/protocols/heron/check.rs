//! `harness check --protocol heron`: Heron over RamCast with the key-value store, seeded runs
//! on the simulator. The deployment and faults come from [`heron::testing::chaos`], the sweep
//! the crate's own tests run (2 or 3 partitions of 3 replicas, 4 clients, 60% of the requests
//! multi-partition; per partition a replica crashed, RamCast's initial leader among them, and
//! another paused long enough to lag, each with probability 1/2; a client crashed in 30% of the
//! runs). Each run is judged three ways: the sequential oracle (every response a replica
//! computed or a client received, every surviving replica's state, real-time order against
//! the multicast order), an external linearizability checker on the clients' histories, and
//! whether every surviving replica finished its work after the convergence phase.

use crate::experiment::Observed;
use crate::sweep::{kinds, Kinds, Model, Outcome, SeedRun, Tally};
use heron::testing::{self, chaos, Chaos};
use heron::{HeronNode, KeyValue};
use ramcast::{RamcastClient, RamcastServer};
use std::sync::Arc;
use transport::{Nanos, ProcessId};

/// How long the run goes on after that: a few RDMA retry timeouts (10 ms on `xl170-cx4`; a
/// read of a crashed replica fails only then).
const CONVERGE: Nanos = Nanos(40_000_000);
/// The share of requests that span two partitions.
const MULTI: f64 = 0.6;

/// One checking run.
#[derive(Clone, Debug)]
pub(crate) struct HeronRun {
    seed: u64,
    chaos: Chaos,
}

type Run = testing::SimRun<RamcastServer, RamcastClient, KeyValue>;

impl HeronRun {
    fn run(&self, model: &Model) -> Run {
        let cfg = &self.chaos.cfg;
        let mut rc = ramcast::Config::new(cfg.partitions, cfg.replicas, cfg.clients);
        // Enough slots that no client waits for a crashed replica's eviction.
        rc.slots = 128;
        let rc = Arc::new(rc);
        let mut sc = model.config(self.seed);
        sc.faults = self.chaos.faults.clone();
        testing::run_sim(
            cfg.clone(),
            Arc::new(KeyValue::new(cfg.partitions, 48, MULTI)),
            sc,
            self.chaos.stop,
            CONVERGE,
            |g, r| RamcastServer::new(rc.clone(), g, r),
            |i| RamcastClient::new(rc.clone(), i),
        )
    }
}

impl SeedRun for HeronRun {
    const PROTOCOL: &'static str = "heron";
    const ABOUT: &'static str =
        "Heron over RamCast, key-value store: replica crashes (leaders too), laggards, client crashes; the sequential oracle, an external linearizability checker, no replica left behind";
    const TESTBED: &'static str = crate::testbed::HERON;
    const EXTRA: Option<&'static str> = Some("state transfers installed");

    fn derive(seed: u64) -> HeronRun {
        HeronRun {
            seed,
            chaos: chaos(seed),
        }
    }

    fn describe(&self) -> String {
        let c = &self.chaos.cfg;
        let mut s = format!(
            "SEED={} partitions={} replicas={} clients={} extra_wait={} multi={MULTI} faults={}",
            self.seed,
            c.partitions,
            c.replicas,
            c.clients,
            c.extra_wait,
            self.chaos.faults.len()
        );
        for f in &self.chaos.faults {
            s.push_str(&format!("\n  fault: {f}"));
        }
        s
    }

    fn kinds(&self) -> Kinds {
        kinds(
            &self.chaos.faults,
            &self.chaos.cfg,
            ramcast::Timing::SIM.suspect,
        )
    }

    fn check(&self, model: &Model, determinism: bool) -> Outcome {
        let r = self.run(model);
        let counters = r.counters();
        let mut out = Outcome {
            events: r.sim.stats().events,
            delivered: counters.executed,
            extra: counters.transfers_received,
            ..Outcome::default()
        };
        if let Err(v) = r.verdict() {
            out.violations.extend(v.iter().map(|v| v.to_string()));
        }
        for p in r.stuck() {
            out.violations.push(format!(
                "{p} never finished its work (a request still running)"
            ));
        }
        // Liveness: requests issued once every fault stopped acting, and answered.
        let quiet = self.chaos.quiet;
        out.post_fault = r
            .histories()
            .iter()
            .flat_map(|(_, calls)| calls)
            .filter(|c| c.invoked >= quiet && c.returned.is_some())
            .count() as u64;
        for p in r.idle_clients(quiet) {
            out.violations.push(format!(
                "liveness after faults: correct client {p} left a request unanswered or had none answered that it issued after the last fault ended at {quiet} (it issued requests until {})",
                self.chaos.stop
            ));
        }
        if !r.externally_linearizable() {
            out.violations.push(
                "the external checker finds no linearization of the clients' histories".into(),
            );
        }
        for (i, n) in r.sim.processes().iter().enumerate() {
            if let HeronNode::Server(s) = n {
                let p = ProcessId(i as u32);
                out.leader_changes |= s.multicast().changed_leader();
                out.states.push(format!(
                    "{p}{} applied {} {:?}",
                    if r.sim.crashed(p) { " (crashed)" } else { "" },
                    s.applied(),
                    s.counters()
                ));
            }
        }
        if determinism && self.run(model).sim.digest() != r.sim.digest() {
            out.divergence = Some("a second run of the seed ended with another digest".into());
        }
        out
    }

    fn tally_line(t: &Tally) -> String {
        t.describe_heron()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::ci_sweep;

    /// The harness's path through Heron's sweep (`HERON_CHECK_SEEDS`, default 5; the crate's
    /// own tests run 30).
    #[test]
    fn seeds_pass_through_the_harness() {
        let model = Model::hardware(crate::testbed::HERON);
        ci_sweep::<HeronRun>("HERON_CHECK_SEEDS", 5, &model, |_, _| {});
    }
}
