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
    let groups = cfg.group_count();
    let build = |load, seed| nodes(&cfg, load, seed, true);
    run_concurrent(
        DestPolicy::Random(3),
        groups,
        Some(tree),
        1000,
        nic_thread,
        build,
    );
}

multicast::concurrent_tests!(concurrent_run);
