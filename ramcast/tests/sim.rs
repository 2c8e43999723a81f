//! RamCast on the simulator: the normal case, the fast path, recycling and failures, each
//! checked against the five atomic multicast properties.

use multicast::{check, collect_log, DestPolicy, LoadSpec, Node};
use ramcast::{nodes, Config, RamcastNode};
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig};
use transport::{Nanos, ProcessId};

struct Outcome {
    sim: Sim<RamcastNode>,
    completed: u64,
}

fn run(cfg: &Config, dest: DestPolicy, seed: u64, faults: Vec<Fault>, stop_us: u64) -> Outcome {
    let load = LoadSpec {
        dest,
        groups: cfg.groups,
        tree: None,
        size: 64,
        warmup_end: Nanos::ZERO,
        stop_at: Nanos(stop_us * 1000),
    };
    let mut sc = SimConfig::new(seed, Profile::load("xl170-cx4").unwrap());
    sc.faults = faults;
    let mut sim = Sim::new(sc, nodes(cfg, load, seed, true));
    // A convergence phase after the clients stop.
    sim.run(Some(Nanos(stop_us * 1000 + 30_000_000)));
    let completed = sim
        .processes()
        .iter()
        .map(|n| match n {
            Node::Client(c) => c.completed_in_window,
            Node::Server(_) => 0,
        })
        .sum();
    Outcome { sim, completed }
}

fn assert_safe_and_live(o: &Outcome) {
    let crashed = |p: ProcessId| o.sim.crashed(p);
    let log = collect_log(o.sim.processes(), crashed);
    let violations = check(&log);
    assert!(violations.is_empty(), "{violations:?}");
    assert!(o.completed > 0, "no multicast completed");
}

#[test]
fn multi_group_messages_are_delivered_in_one_order() {
    let cfg = Config::new(3, 3, 6);
    let o = run(&cfg, DestPolicy::Random(2), 1, vec![], 500);
    assert_safe_and_live(&o);
}

#[test]
fn single_group_fast_path_and_recycling_keep_going() {
    let mut cfg = Config::new(2, 3, 4);
    cfg.slots = 2;
    let o = run(&cfg, DestPolicy::Single, 2, vec![], 1000);
    assert_safe_and_live(&o);
    // Far more messages than slots: buffers were recycled.
    assert!(
        o.completed > 10 * cfg.slots as u64 * cfg.clients as u64,
        "{}",
        o.completed
    );
}

#[test]
fn a_crashed_leader_is_replaced() {
    let cfg = Config::new(2, 3, 4);
    let faults = vec![Fault::Crash {
        at: Nanos(200_000),
        process: ProcessId(0),
    }];
    let o = run(&cfg, DestPolicy::All, 3, faults, 3000);
    assert_safe_and_live(&o);
    let leader = match &o.sim.processes()[1] {
        Node::Server(s) => s.server.is_leader(),
        Node::Client(_) => false,
    };
    assert!(leader, "rank 1 should lead group 0 after rank 0 crashed");
}
