//! TRAM on real threads: memory changes while a replica polls, which the simulator (where
//! writes land between polls) never shows. Checked against the five properties.

use multicast::testing::run_concurrent;
use multicast::{DestPolicy, Membership, Tree};
use tram::{nodes, Config, Timing};

fn concurrent_run(nic_thread: bool) {
    let tree = Tree::preset("base").unwrap();
    let mut cfg = Config::new(tree.clone(), 3, 6);
    cfg.timing = Timing::WALL;
    // Small buffers: slots are recycled many times while threads race.
    cfg.hm_slots = 4;
    cfg.log_slots = 8;
    run_concurrent(
        DestPolicy::Random(3),
        cfg.group_count(),
        Some(tree),
        1000,
        nic_thread,
        |load, seed| nodes(&cfg, load, seed, true),
    );
}

#[test]
fn concurrent_runs_keep_every_property() {
    concurrent_run(false);
}

/// The same with remote ops completing on a NIC thread: ops of different queue pairs land in
/// any order and long after their post, as on a real NIC.
#[test]
fn concurrent_runs_with_a_nic_thread_keep_every_property() {
    concurrent_run(true);
}
