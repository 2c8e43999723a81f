//! `harness check --protocol heron`: seeded runs on the simulator, half of them over RamCast
//! and half over Ridge, half with the key-value store and half with TPC-C (each drawn from the
//! seed). The deployment and
//! faults come from [`heron::testing::chaos`], the sweep the crate's own tests run (2 or 3
//! partitions of 3 replicas, 4 clients; per partition a replica crashed, RamCast's initial
//! leader among them, and another paused long enough to lag, each with probability 1/2; a
//! client crashed in 30% of the runs; clients issue requests until 3 ms after the last fault,
//! over Ridge 4 ms more: a Ridge client whose request died with a coordinator asks again only
//! after its retry timeout).
//! Every run is judged by the sequential oracle (every response a replica computed or a client
//! received, every surviving replica's state, real-time order against the multicast order), by
//! whether every surviving replica finished its work, and by whether every surviving client
//! had a request it issued after the last fault answered. Key-value runs also go through an
//! external linearizability checker; TPC-C runs through the specification's consistency
//! conditions on the database the replicas end with.

use super::experiment::ridge_config;
use super::Over;
use crate::experiment::Observed;
use crate::sweep::{kinds, Kinds, Model, Outcome, SeedRun, Tally};
use heron::testing::{self, chaos, Chaos};
use heron::tpcc::{self, Scale};
use heron::{Application, HeronNode, KeyValue, Tpcc};
use multicast::{Client, GroupId, Server};
use ramcast::{RamcastClient, RamcastServer};
use ridge::{RidgeClient, RidgeServer};
use std::sync::Arc;
use transport::runtime::sim::{Digest, SimNic};
use transport::{Nanos, Process, ProcessId, Purpose, Rng};

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
    /// The atomic multicast underneath.
    over: Over,
}

/// A multicast server a checking run puts under Heron.
trait Under:
    Server + Observed + Process<SimNic> + for<'a> Process<heron::layered::Layered<'a, SimNic>>
{
}
impl<S> Under for S where
    S: Server + Observed + Process<SimNic> + for<'a> Process<heron::layered::Layered<'a, SimNic>>
{
}

type Run<S, C, A> = testing::SimRun<S, C, A>;

impl HeronRun {
    fn run<S: Under, C: Client<SimNic>, A: Application>(
        &self,
        model: &Model,
        app: A,
        server: impl Fn(GroupId, usize) -> S,
        client: impl Fn(usize) -> C,
    ) -> Run<S, C, A> {
        let mut cfg = self.chaos.cfg.clone();
        if self.tpcc {
            cfg.max_response = tpcc::MAX_RESPONSE;
        }
        let mut sc = model.config(self.seed);
        sc.faults = self.chaos.faults.clone();
        testing::run_sim(
            cfg,
            Arc::new(app),
            sc,
            self.chaos.stop,
            CONVERGE,
            server,
            client,
        )
    }

    /// Runs the seed's application over its multicast and judges the run; returns the
    /// outcome and the run's digest.
    fn run_and_judge(&self, model: &Model) -> (Outcome, Digest) {
        let cfg = &self.chaos.cfg;
        match self.over {
            Over::Ramcast => {
                let mut rc = ramcast::Config::new(cfg.partitions, cfg.replicas, cfg.clients);
                // Enough slots that no client waits for a crashed replica's eviction.
                rc.slots = 128;
                let rc = Arc::new(rc);
                self.judged(
                    model,
                    |g, r| RamcastServer::new(rc.clone(), g, r),
                    |i| RamcastClient::new(rc.clone(), i),
                )
            }
            Over::Ridge => {
                let rc = Arc::new(ridge_config(cfg));
                self.judged(
                    model,
                    |g, r| RidgeServer::new(rc.clone(), g, r, self.seed),
                    |i| RidgeClient::new(rc.clone(), i, self.seed),
                )
            }
        }
    }

    /// Runs the seed's application over the multicast processes `server` and `client` build
    /// and judges the run.
    fn judged<S: Under, C: Client<SimNic>>(
        &self,
        model: &Model,
        server: impl Fn(GroupId, usize) -> S,
        client: impl Fn(usize) -> C,
    ) -> (Outcome, Digest) {
        let partitions = self.chaos.cfg.partitions;
        if self.tpcc {
            let app = Tpcc::new(partitions, tpcc_scale(), self.seed);
            let r = self.run(model, app.clone(), server, client);
            let mut out = self.judge(&r);
            out.violations.extend(
                tpcc::consistency::check(&app, &r.database())
                    .into_iter()
                    .map(|v| format!("TPC-C consistency condition {v}")),
            );
            (out, r.sim.digest())
        } else {
            let r = self.run(model, KeyValue::new(partitions, 48, MULTI), server, client);
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
    fn judge<S: Under, C: Client<SimNic>, A: Application>(&self, r: &Run<S, C, A>) -> Outcome {
        let counters = r.counters();
        let mut out = Outcome {
            events: r.sim.stats().events,
            torn_ops: r.sim.stats().torn_ops,
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
        "Heron over RamCast and over Ridge, key-value store and TPC-C: replica crashes (leaders too), laggards, client crashes; the sequential oracle, an external linearizability checker, TPC-C's consistency conditions, progress after the faults";
    const TESTBED: &'static str = crate::testbed::HERON;
    const EXTRA: Option<&'static str> = Some("state transfers installed");

    fn derive(seed: u64) -> HeronRun {
        let over = if Rng::derive(seed, Purpose::Workload, 2).chance(0.5) {
            Over::Ridge
        } else {
            Over::Ramcast
        };
        let mut chaos = chaos(seed);
        if over == Over::Ridge {
            chaos.stop = chaos
                .stop
                .max(chaos.quiet + ridge::config::Timing::SIM.retry + testing::LIVE);
        }
        HeronRun {
            seed,
            chaos,
            tpcc: Rng::derive(seed, Purpose::Workload, 1).chance(0.5),
            over,
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
            "SEED={} over={} app={app} partitions={} replicas={} clients={} extra_wait={} stop={} faults={}",
            self.seed,
            self.over.name(),
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
        let suspect = match self.over {
            Over::Ramcast => ramcast::Timing::SIM.suspect,
            Over::Ridge => ridge::config::Timing::SIM.suspect,
        };
        let mut k = kinds(&self.chaos.faults, &self.chaos.cfg, suspect);
        k.tpcc = self.tpcc;
        k.over_ridge = self.over == Over::Ridge;
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
