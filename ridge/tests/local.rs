//! Ridge on real threads: memory changes while a process polls, and (with the NIC thread)
//! messages of different senders land in any order. Checked against the five properties.

use multicast::testing::run_local_checked;
use multicast::{DestPolicy, LoadSpec};
use ridge::config::Timing;
use ridge::{nodes, Config};
use std::time::Duration;
use transport::Nanos;

fn concurrent_run(nic_thread: bool) {
    let mut cfg = Config::new(2, 3, 4);
    // Threads on a shared machine: a descheduled thread must not look crashed.
    cfg.timing = Timing::WALL;
    let load = LoadSpec {
        dest: DestPolicy::Random(2),
        groups: cfg.groups,
        tree: None,
        size: 64,
        warmup_end: Nanos::ZERO,
        stop_at: Nanos(1_500_000_000),
    };
    run_local_checked(
        nodes(&cfg, load, 7, true),
        7,
        Duration::from_millis(2_500),
        100,
        nic_thread,
    );
}

#[test]
fn concurrent_runs_keep_every_property() {
    concurrent_run(false);
}

#[test]
fn concurrent_runs_with_a_nic_thread_keep_every_property() {
    concurrent_run(true);
}
