//! Ridge on real threads: memory changes while a process polls, and (with the NIC thread)
//! messages of different senders land in any order. Checked against the five properties.

use multicast::testing::run_concurrent;
use multicast::DestPolicy;
use ridge::config::Timing;
use ridge::{nodes, Config};

fn concurrent_run(nic_thread: bool) {
    let mut cfg = Config::new(2, 3, 4);
    // Threads on a shared machine: a descheduled thread must not look crashed.
    cfg.timing = Timing::WALL;
    let build = |load, seed| nodes(&cfg, load, seed, true);
    run_concurrent(
        DestPolicy::Random(2),
        cfg.groups,
        None,
        100,
        nic_thread,
        build,
    );
}

multicast::concurrent_tests!(concurrent_run);
