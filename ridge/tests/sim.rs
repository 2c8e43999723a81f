//! Ridge on the simulator, the normal case: messages to one group and to several, checked
//! against the five atomic multicast properties.

use multicast::testing::{run_sim, SimRun};
use multicast::{DestPolicy, LoadSpec};
use ridge::clock::Skew;
use ridge::{nodes, Config, RidgeClient, RidgeServer};
use transport::Nanos;

type Outcome = SimRun<RidgeServer, RidgeClient>;

fn run(cfg: &Config, dest: DestPolicy, profile: &str, seed: u64, stop_ms: u64) -> Outcome {
    cfg.validate().unwrap();
    let load = LoadSpec {
        dest,
        groups: cfg.groups,
        tree: None,
        size: 64,
        warmup_end: Nanos::ZERO,
        stop_at: Nanos(stop_ms * 1_000_000),
    };
    run_sim(
        nodes(cfg, load, seed, true),
        profile,
        seed,
        Vec::new(),
        Nanos(stop_ms * 1_000_000),
        Nanos(50_000_000),
    )
}

#[test]
fn messages_to_several_groups_go_through_e_all_in_one_order() {
    let cfg = Config::new(3, 3, 6);
    let o = run(&cfg, DestPolicy::Random(2), "r320-cx3", 1, 10);
    o.assert_safe_and_live();
    // Each message waits for the null messages of the idle group ensembles (Delta = 1 ms,
    // the paper's footnote 3), so a closed-loop client completes about one per Delta.
    assert!(o.completed >= 30, "{}", o.completed);
}

#[test]
fn single_group_messages_merge_with_e_all_on_a_lan_with_skewed_clocks() {
    let mut cfg = Config::new(2, 3, 4);
    cfg.skew = Skew {
        max_offset: Nanos(200_000),
        max_drift_ppm: 50.0,
    };
    let o = run(&cfg, DestPolicy::Single, "lan-1g", 2, 20);
    o.assert_safe_and_live();
    assert!(o.completed > 10, "{}", o.completed);
}
