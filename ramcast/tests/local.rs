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
    let build = |load, seed| nodes(&cfg, load, seed, true);
    run_concurrent(DestPolicy::Random(2), 3, None, 1000, nic_thread, build);
}

multicast::concurrent_tests!(concurrent_run);
