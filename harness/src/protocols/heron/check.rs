//! `harness check --protocol heron`: Heron over RamCast, seeded runs on the simulator, half of
//! them with the key-value store and half with TPC-C (drawn from the seed). The deployment and
//! faults come from [`heron::testing::chaos`], the sweep the crate's own tests run (2 or 3
//! partitions of 3 replicas, 4 clients; per partition a replica crashed, RamCast's initial
//! leader among them, and another paused long enough to lag, each with probability 1/2; a
//! client crashed in 30% of the runs; clients issue requests until 3 ms after the last fault).
//! Every run is judged by the sequential oracle (every response a replica computed or a client
//! received, every surviving replica's state, real-time order against the multicast order), by
//! whether every surviving replica finished its work, and by whether every surviving client
//! had a request it issued after the last fault answered. Key-value runs also go through an
//! external linearizability checker; TPC-C runs through the specification's consistency
//! conditions on the database the replicas end with.

use crate::experiment::Observed;
use crate::sweep::{kinds, Kinds, Model, Outcome, SeedRun, Tally};
use heron::testing::{self, chaos, Chaos};
use heron::tpcc::{self, Scale};
use heron::{Application, HeronNode, KeyValue, Tpcc};
use ramcast::{RamcastClient, RamcastServer};
use std::sync::Arc;
use transport::runtime::sim::Digest;
use transport::{Nanos, ProcessId, Purpose, Rng};

/// How long the run goes on after the clients stop: a few RDMA retry timeouts (10 ms on
/// `xl170-cx4`; a read of a crashed replica fails only then).
const CONVERGE: Nanos = Nanos(40_000_000);
/// The share of key-value requests that span two partitions.
const MULTI: f64 = 0.6;
/// TPC-C's size per warehouse: a hundredth of the specification's, 100 orders per district.
fn tpcc_scale() -> Scale {
    Scale::scaled(100, 100)
}

/// One checking run.
#[derive(Clone, Debug)]
pub(crate) struct HeronRun {
    seed: u64,
    chaos: Chaos,
    /// TPC-C, or the key-value store.
    tpcc: bool,
}

type Run<A> = testing::SimRun<RamcastServer, RamcastClient, A>;

impl HeronRun {
    fn run<A: Application>(&self, model: &Model, app: A) -> Run<A> {
        let mut cfg = self.chaos.cfg.clone();
        if self.tpcc {
            cfg.max_response = tpcc::MAX_RESPONSE;
        }
        let mut rc = ramcast::Config::new(cfg.partitions, cfg.replicas, cfg.clients);
        // Enough slots that no client waits for a crashed replica's eviction.
        rc.slots = 128;
        let rc = Arc::new(rc);
        let mut sc = model.config(self.seed);
        sc.faults = self.chaos.faults.clone();
        testing::run_sim(
            cfg,
            Arc::new(app),
            sc,
            self.chaos.stop,
            CONVERGE,
            |g, r| RamcastServer::new(rc.clone(), g, r),
            |i| RamcastClient::new(rc.clone(), i),
        )
    }

    /// Runs the seed's application and judges the run; returns the outcome and the run's
    /// digest.
    fn run_and_judge(&self, model: &Model) -> (Outcome, Digest) {
        let partitions = self.chaos.cfg.partitions;
        if self.tpcc {
            let app = Tpcc::new(partitions, tpcc_scale(), self.seed);
            let r = self.run(model, app.clone());
            let mut out = self.judge(&r);
            out.violations.extend(
                tpcc::consistency::check(&app, &r.database())
                    .into_iter()
                    .map(|v| format!("TPC-C consistency condition {v}")),
            );
            (out, r.sim.digest())
        } else {
            let r = self.run(model, KeyValue::new(partitions, 48, MULTI));
            let mut out = self.judge(&r);
            if !r.externally_linearizable() {
                out.violations.push(
                    "the external checker finds no linearization of the clients' histories".into(),
                );
            }
            (out, r.sim.digest())
        }
    }

    /// The verdicts every run gets, whatever the application.
    fn judge<A: Application>(&self, r: &Run<A>) -> Outcome {
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
        out
    }
}

impl SeedRun for HeronRun {
    const PROTOCOL: &'static str = "heron";
    const ABOUT: &'static str =
        "Heron over RamCast, key-value store and TPC-C: replica crashes (leaders too), laggards, client crashes; the sequential oracle, an external linearizability checker, TPC-C's consistency conditions, progress after the faults";
    const TESTBED: &'static str = crate::testbed::HERON;
    const EXTRA: Option<&'static str> = Some("state transfers installed");

    fn derive(seed: u64) -> HeronRun {
        HeronRun {
            seed,
            chaos: chaos(seed),
            tpcc: Rng::derive(seed, Purpose::Workload, 1).chance(0.5),
        }
    }

    fn describe(&self) -> String {
        let c = &self.chaos.cfg;
        let app = if self.tpcc {
            let s = tpcc_scale();
            format!(
                "tpcc items={} customers={} capacity={}",
                s.items, s.customers, s.capacity
            )
        } else {
            format!("key-value keys=48 multi={MULTI}")
        };
        let mut s = format!(
            "SEED={} app={app} partitions={} replicas={} clients={} extra_wait={} stop={} faults={}",
            self.seed,
            c.partitions,
            c.replicas,
            c.clients,
            c.extra_wait,
            self.chaos.stop,
            self.chaos.faults.len()
        );
        for f in &self.chaos.faults {
            s.push_str(&format!("\n  fault: {f}"));
        }
        s
    }

    fn kinds(&self) -> Kinds {
        let mut k = kinds(
            &self.chaos.faults,
            &self.chaos.cfg,
            ramcast::Timing::SIM.suspect,
        );
        k.tpcc = self.tpcc;
        k
    }

    fn check(&self, model: &Model, determinism: bool) -> Outcome {
        let (mut out, digest) = self.run_and_judge(model);
        if determinism && self.run_and_judge(model).1 != digest {
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
    /// own tests run 30 key-value seeds and 4 TPC-C ones).
    #[test]
    fn seeds_pass_through_the_harness() {
        let model = Model::hardware(crate::testbed::HERON);
        ci_sweep::<HeronRun>("HERON_CHECK_SEEDS", 5, &model, |_, _| {});
    }
}
