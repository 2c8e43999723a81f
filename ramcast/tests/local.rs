//! RamCast on real threads: memory changes while a server polls, which the simulator (where
//! writes land between polls) never shows. Checked against the five properties.

use multicast::testing::run_concurrent;
use multicast::DestPolicy;
use ramcast::{nodes, Config, Timing};

/// Postmortem: a follower read a proposal, then delivered a message with a larger timestamp,
/// while an entry with a smaller one (copied earlier by the same leader) had landed after the
/// poll looked at its buffers. Two runs in six of `harness run --runtime local --groups 3
/// --clients 8 --dest random:2 --duration 5s` violated prefix order. Fixed by taking landed
/// entries again between reading proposals and delivering.
fn concurrent_run(nic_thread: bool) {
    let mut cfg = Config::new(3, 3, 8);
    cfg.timing = Timing::WALL;
    run_concurrent(
        DestPolicy::Random(2),
        3,
        None,
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
