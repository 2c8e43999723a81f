//! RamCast on real threads: memory changes while a server polls, which the simulator (where
//! writes land between polls) never shows. Checked against the five properties.

use multicast::testing::run_local_checked;
use multicast::{DestPolicy, LoadSpec};
use ramcast::{nodes, Config, Timing};
use std::time::Duration;
use transport::Nanos;

/// Postmortem: a follower read a proposal, then delivered a message with a larger timestamp,
/// while an entry with a smaller one (copied earlier by the same leader) had landed after the
/// poll looked at its buffers. Two runs in six of `harness run --runtime local --groups 3
/// --clients 8 --dest random:2 --duration 5s` violated prefix order. Fixed by taking landed
/// entries again between reading proposals and delivering.
fn concurrent_run(nic_thread: bool) {
    let mut cfg = Config::new(3, 3, 8);
    cfg.timing = Timing::WALL;
    let load = LoadSpec {
        dest: DestPolicy::Random(2),
        groups: 3,
        tree: None,
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
