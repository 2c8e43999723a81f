//! Heron over RamCast on the simulator, judged by the sequential oracle.

use heron::oracle::{self, ClientView, ReplicaView};
use heron::{Config, HeronNode, KeyValue, Window};
use multicast::Membership;
use ramcast::{RamcastClient, RamcastServer};
use std::sync::Arc;
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig, SimNic};
use transport::{Nanos, ProcessId};

type Node = HeronNode<RamcastServer, RamcastClient, KeyValue>;

struct Run {
    sim: Sim<Node>,
    cfg: Config,
    app: Arc<KeyValue>,
}

fn run(cfg: Config, multi: f64, seed: u64, faults: Vec<Fault>, stop_us: u64) -> Run {
    let mut rc = ramcast::Config::new(cfg.partitions, cfg.replicas, cfg.clients);
    // Enough slots that no client waits for a crashed replica's eviction (RamCast recycles a
    // slot once every destination replica delivered it, or after excluding a silent one).
    rc.slots = 128;
    let rc = Arc::new(rc);
    let app = Arc::new(KeyValue::new(cfg.partitions, 48, multi));
    let window = Window {
        warmup_end: Nanos::ZERO,
        stop_at: Nanos(stop_us * 1_000),
    };
    let nodes = heron::deploy::<SimNic, _, _, _>(
        cfg.clone(),
        app.clone(),
        seed,
        window,
        true,
        |g, r| RamcastServer::new(rc.clone(), g, r),
        |i| RamcastClient::new(rc.clone(), i),
    );
    let mut sc = SimConfig::new(seed, Profile::load("xl170-cx4").expect("built in"));
    sc.faults = faults;
    let mut sim = Sim::new(sc, nodes);
    sim.run(Some(window.stop_at + Nanos(20_000_000)));
    Run { sim, cfg, app }
}

impl Run {
    /// The oracle's verdict over every replica (the state of those that did not crash or stop)
    /// and every client.
    fn check(&self) -> oracle::Report {
        let mut replicas = Vec::new();
        let mut clients = Vec::new();
        for (i, node) in self.sim.processes().iter().enumerate() {
            let p = ProcessId(i as u32);
            match node {
                HeronNode::Server(s) => replicas.push(ReplicaView {
                    process: p,
                    group: s.group(),
                    executed: s.executed().expect("recording"),
                    applied: s.applied(),
                    state: (!self.sim.crashed(p)).then(|| s.state(self.sim.nic(p))),
                }),
                HeronNode::Client(c) => clients.push(ClientView {
                    client: self.cfg.client_index(p).expect("a client") as u32,
                    calls: c.history(),
                }),
            }
        }
        match oracle::check(&*self.app, self.cfg.partitions, &replicas, &clients) {
            Ok(r) => r,
            Err(v) => panic!(
                "{} violations, first: {}",
                v.len(),
                v.iter()
                    .take(5)
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }

    fn counters(&self) -> heron::Counters {
        let mut total = heron::Counters::default();
        for node in self.sim.processes() {
            if let HeronNode::Server(s) = node {
                let c = s.counters();
                total.executed += c.executed;
                total.multi += c.multi;
                total.remote_reads += c.remote_reads;
                total.failed_reads += c.failed_reads;
                total.waited_out += c.waited_out;
                total.lagged |= c.lagged;
            }
        }
        total
    }

    fn completed(&self) -> u64 {
        self.sim
            .processes()
            .iter()
            .map(|n| match n {
                HeronNode::Client(c) => c.completed().0,
                HeronNode::Server(_) => 0,
            })
            .sum()
    }
}

#[test]
fn single_and_multi_partition_requests_are_linearizable() {
    let r = run(Config::new(3, 3, 6), 0.5, 1, vec![], 1_000);
    let report = r.check();
    let c = r.counters();
    assert!(r.completed() > 100, "completed {}", r.completed());
    assert!(c.multi > 100 && c.remote_reads > 100, "{c:?}");
    assert!(!c.lagged, "{c:?}");
    // Every replica was compared, and every response.
    assert_eq!(report.states, 9);
    assert!(report.client_responses as u64 >= r.completed());
}

#[test]
fn a_crashed_replica_in_each_partition_does_not_stop_the_others() {
    let cfg = Config::new(2, 3, 4);
    let faults = (0..2)
        .map(|g| Fault::Crash {
            at: Nanos(300_000 + 100_000 * g as u64),
            process: cfg.server(multicast::GroupId(g), 1 + g as usize),
        })
        .collect();
    let r = run(cfg, 0.5, 2, faults, 1_000);
    let report = r.check();
    assert_eq!(report.states, 4, "the four surviving replicas are compared");
    // Requests kept completing after the crashes (multi-partition ones waited out the extra
    // wait for the crashed replicas).
    assert!(r.counters().waited_out > 50, "{:?}", r.counters());
    let late = r
        .sim
        .processes()
        .iter()
        .filter_map(|n| match n {
            HeronNode::Client(c) => Some(c.history()),
            HeronNode::Server(_) => None,
        })
        .flatten()
        .filter(|call| {
            call.returned
                .as_ref()
                .is_some_and(|(at, _)| *at > Nanos(600_000))
        })
        .count();
    assert!(late > 50, "{late} requests completed after the crashes");
}

#[test]
fn a_single_partition_deployment_executes_without_coordination() {
    let r = run(Config::new(1, 3, 3), 0.5, 3, vec![], 500);
    r.check();
    let c = r.counters();
    assert_eq!((c.multi, c.remote_reads), (0, 0), "{c:?}");
    assert!(c.executed > 100, "{c:?}");
}

#[test]
fn a_replica_paused_past_its_partition_finds_that_it_lags_and_stops() {
    let mut cfg = Config::new(2, 3, 4);
    cfg.extra_wait = Nanos::ZERO;
    let laggard = cfg.server(multicast::GroupId(0), 2);
    let faults = vec![Fault::Pause {
        at: Nanos(200_000),
        process: laggard,
        duration: Nanos(300_000),
    }];
    let r = run(cfg, 0.8, 4, faults, 1_500);
    let report = r.check();
    assert_eq!(
        report.states, 5,
        "the lagging replica stopped; the other five are compared"
    );
    let HeronNode::Server(s) = &r.sim.processes()[laggard.index()] else {
        unreachable!("a server")
    };
    assert!(
        s.counters().lagged && r.sim.crashed(laggard),
        "{:?}",
        s.counters()
    );
}
