//! TRAM on real threads: memory changes while a replica polls, which the simulator (where
//! writes land between polls) never shows. Checked against the five properties.

use multicast::testing::run_local_checked;
use multicast::{DestPolicy, LoadSpec, Membership, Tree};
use std::sync::Arc;
use std::time::Duration;
use tram::{nodes, Config, Timing};
use transport::Nanos;

fn concurrent_run(nic_thread: bool) {
    let tree = Tree::preset("base").unwrap();
    let mut cfg = Config::new(tree.clone(), 3, 6);
    cfg.timing = Timing::WALL;
    // Small buffers: slots are recycled many times while threads race.
    cfg.hm_slots = 4;
    cfg.log_slots = 8;
    let load = LoadSpec {
        dest: DestPolicy::Random(3),
        groups: cfg.group_count(),
        tree: Some(Arc::new(tree)),
        size: 64,
        warmup_end: Nanos::ZERO,
        stop_at: Nanos(1_500_000_000),
    };
    run_local_checked(
        nodes(&cfg, load, 7, true),
        7,
        Duration::from_millis(2_500),
        1000,
        nic_thread,
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
