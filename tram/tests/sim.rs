//! TRAM on the simulator: the normal case on every preset tree, recycling, followers when
//! traffic stops, and failover, each checked against the five atomic multicast properties.

use multicast::testing::{load_until, run_sim, SimRun};
use multicast::{DestPolicy, LoadSpec, Membership, Node, Tree};
use tram::{nodes, Config, TramClient, TramNode, TramServer};
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig};
use transport::{Nanos, ProcessId};

type Outcome = SimRun<TramServer, TramClient>;

fn run(cfg: &Config, dest: DestPolicy, seed: u64, faults: Vec<Fault>, stop_us: u64) -> Outcome {
    let stop = Nanos(stop_us * 1000);
    let nodes = nodes(cfg, over_tree(cfg, dest, stop), seed, true);
    // A convergence phase after the clients stop.
    run_sim(nodes, "r320-cx3", seed, faults, stop, Nanos(30_000_000))
}

/// Clients of `cfg` multicasting 64-byte messages to `dest` along its tree until `stop`.
fn over_tree(cfg: &Config, dest: DestPolicy, stop: Nanos) -> LoadSpec {
    LoadSpec {
        tree: Some(std::sync::Arc::new(cfg.tree.clone())),
        ..load_until(dest, cfg.group_count(), 64, stop)
    }
}

fn tree(name: &str) -> Tree {
    Tree::preset(name).unwrap()
}

#[test]
fn every_preset_tree_orders_random_destinations() {
    for (name, seed) in [("base", 1), ("breadth", 2), ("depth", 3), ("simple", 4)] {
        let cfg = Config::new(tree(name), 3, 6);
        let o = run(&cfg, DestPolicy::Random(2), seed, vec![], 500);
        o.assert_safe_and_live();
    }
}

#[test]
fn small_buffers_are_recycled_under_backpressure() {
    let mut cfg = Config::new(tree("depth"), 3, 8);
    cfg.hm_slots = 2;
    cfg.log_slots = 4;
    let o = run(&cfg, DestPolicy::All, 5, vec![], 1000);
    o.assert_safe_and_live();
    // Far more messages than log slots went through every group.
    assert!(o.completed > 20 * cfg.log_slots as u64, "{}", o.completed);
}

/// Step 2.6 alone delivers slot i only once slot i+1 exists, so without the idle leader's commit
/// index the followers would keep the last message of a burst undelivered forever.
#[test]
fn followers_deliver_everything_after_the_last_multicast() {
    let cfg = Config::new(tree("simple"), 3, 1);
    // One client, a handful of multicasts, then silence for the rest of the run.
    let o = run(&cfg, DestPolicy::All, 6, vec![], 60);
    o.assert_safe_and_live();
    let multicast: usize = o
        .sim
        .processes()
        .iter()
        .filter_map(|n| match n {
            Node::Client(c) => c.log.as_ref().map(Vec::len),
            Node::Server(_) | Node::Auxiliary(_) => None,
        })
        .sum();
    assert!(multicast > 2, "{multicast}");
    for (i, n) in o.sim.processes().iter().enumerate() {
        if let Node::Server(s) = n {
            assert_eq!(s.delivered as usize, multicast, "p{i} stopped delivering");
        }
    }
}

fn leader_of(o: &Outcome, cfg: &Config, g: u8) -> Option<usize> {
    cfg.members(multicast::GroupId(g))
        .position(|p| match &o.sim.processes()[p.index()] {
            Node::Server(s) => s.server.is_leader() && !o.sim.crashed(p),
            Node::Client(_) | Node::Auxiliary(_) => false,
        })
}

#[test]
fn leaders_crashed_in_several_groups_at_once_are_replaced() {
    let cfg = Config::new(tree("base"), 3, 8);
    // The initial leaders (rank 0) of the root, an inner group and a leaf, at the same instant.
    let faults = [0u8, 1, 6]
        .iter()
        .map(|&g| Fault::Crash {
            at: Nanos(300_000),
            process: cfg.server(multicast::GroupId(g), 0),
        })
        .collect();
    let o = run(&cfg, DestPolicy::Random(3), 7, faults, 3000);
    o.assert_safe_and_live();
    for g in [0, 1, 6] {
        assert!(leader_of(&o, &cfg, g).is_some_and(|r| r != 0), "g{g}");
    }
}

#[test]
fn a_paused_leader_is_replaced_and_steps_down_when_it_resumes() {
    let cfg = Config::new(tree("breadth"), 3, 6);
    let faults = vec![Fault::Pause {
        at: Nanos(300_000),
        process: cfg.server(multicast::GroupId(0), 0),
        duration: Nanos(2_000_000),
    }];
    let o = run(&cfg, DestPolicy::Random(4), 8, faults, 5000);
    o.assert_safe_and_live();
    assert_eq!(leader_of(&o, &cfg, 0), Some(1));
}

#[test]
fn clients_crashing_mid_multicast_leave_no_partial_delivery() {
    let cfg = Config::new(tree("base"), 3, 6);
    let faults = (0..3)
        .map(|i| Fault::CrashMidPost {
            at: Nanos(200_000 + 37_000 * i),
            process: cfg.client(i as usize),
        })
        .collect();
    let o = run(&cfg, DestPolicy::Random(3), 9, faults, 1000);
    o.assert_safe_and_live();
}

/// A leader paused past the timeout resumes before the new leader's permission request reaches
/// it (the link from the group to it is slow): it still believes it leads, its next log write is
/// refused by the revoked permission, it reconnects the queue pair and steps down.
#[test]
fn a_deposed_leader_unaware_of_it_is_refused_and_steps_down() {
    let cfg = Config::new(tree("simple"), 3, 4);
    let old = cfg.server(multicast::GroupId(0), 0);
    let mut faults = vec![Fault::Pause {
        at: Nanos(300_000),
        process: old,
        duration: Nanos(1_000_000),
    }];
    for r in 1..3 {
        faults.push(Fault::LinkDelay {
            at: Nanos(300_000),
            from: cfg.server(multicast::GroupId(0), r),
            to: old,
            duration: Nanos(3_000_000),
            delay: Nanos(1_500_000),
            jitter: Nanos(0),
        });
    }
    let o = run(&cfg, DestPolicy::All, 10, faults, 5000);
    o.assert_safe_and_live();
    let Node::Server(s) = &o.sim.processes()[old.index()] else {
        unreachable!()
    };
    assert!(s.server.refused_writes() > 0, "{}", s.server.describe());
    assert!(!s.server.is_leader(), "{}", s.server.describe());
}

/// A child that stops consuming (all its replicas paused) fills the buffer its parent writes
/// into; the parent's leader then stops taking messages that must go there instead of
/// overwriting unconsumed ones, and everything is delivered once the child resumes.
#[test]
fn a_full_child_buffer_pushes_back_on_the_parent() {
    let mut cfg = Config::new(tree("simple"), 3, 6);
    cfg.hm_slots = 2;
    let child: Vec<ProcessId> = cfg.members(multicast::GroupId(1)).collect();
    let faults = child
        .iter()
        .map(|&p| Fault::Pause {
            at: Nanos(200_000),
            process: p,
            duration: Nanos(1_000_000),
        })
        .collect();
    let load = over_tree(&cfg, DestPolicy::All, Nanos(2_000_000));
    let mut sc = SimConfig::new(11, Profile::load("r320-cx3").unwrap());
    sc.faults = faults;
    let mut sim = Sim::new(sc, nodes(&cfg, load, 11, true));
    let root_leader = cfg.server(multicast::GroupId(0), 0);
    let delivered_by_root = |sim: &Sim<TramNode>| match &sim.processes()[root_leader.index()] {
        Node::Server(s) => (s.delivered, s.server.unconsumed_forwards()),
        Node::Client(_) | Node::Auxiliary(_) => unreachable!(),
    };
    // In the middle of the pause: the root's leader has at most 2 messages outstanding at the
    // paused child, and it stopped ordering (every message goes to all groups).
    sim.run(Some(Nanos(700_000)));
    let (before, outstanding) = delivered_by_root(&sim);
    assert!(outstanding[0] <= 2, "{outstanding:?}");
    sim.run(Some(Nanos(1_100_000)));
    let (during, outstanding) = delivered_by_root(&sim);
    assert!(outstanding[0] <= 2, "{outstanding:?}");
    assert_eq!(before, during, "the root kept ordering into a full buffer");
    sim.run(Some(Nanos(40_000_000)));
    let (after, _) = delivered_by_root(&sim);
    assert!(after > during + 10, "{after}");
    let violations = multicast::check(&multicast::collect_log(sim.processes(), |p| sim.crashed(p)));
    assert!(violations.is_empty(), "{violations:?}");
}
