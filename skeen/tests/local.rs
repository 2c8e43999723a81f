//! Skeen on real threads: memory changes while a process polls, and (with the NIC thread)
//! messages of different senders land in any order. A few seeds of random configurations,
//! short runs, each checked against the five properties, and every multicast issued must have
//! completed by the end (liveness). `SKEEN_LOCAL_SEEDS` sets the number of seeds (3 by
//! default).

use multicast::testing::{load_until, run_local_checked};
use multicast::DestPolicy;
use skeen::{nodes, Config};
use std::time::Duration;
use transport::{Nanos, Rng};

/// A configuration drawn from `seed`, kept small: every process is a thread.
fn draw(seed: u64) -> (Config, DestPolicy, usize) {
    let mut rng = Rng::from_seed(seed ^ 0x10ca1);
    let groups = 1 + rng.below(4) as usize;
    let mut cfg = Config::new(groups, 1 + rng.below(4) as usize);
    cfg.ring_slots = 2 + rng.below(15) as u32;
    cfg.slot_bytes = [256, 1024, 4096][rng.below(3) as usize];
    cfg.outbox = [1, 4, 64][rng.below(3) as usize];
    let dest = match rng.below(4) {
        0 => DestPolicy::Single,
        1 => DestPolicy::All,
        2 => DestPolicy::Random(1 + rng.below(groups as u64) as usize),
        _ => DestPolicy::Between(1, groups as u8),
    };
    let size = [8, 64, cfg.max_payload()][rng.below(3) as usize];
    cfg.validate().unwrap();
    (cfg, dest, size)
}

fn run(seed: u64, nic_thread: bool) {
    let (cfg, dest, size) = draw(seed);
    let load = load_until(dest, cfg.groups, size, Nanos(300_000_000));
    // Named before the run, so that a failure inside the runner shows what ran.
    println!("skeen local seed {seed} (nic thread {nic_thread}): {cfg:?}, {dest}, {size} B");
    // Clients stop at 300 ms; the rest of the run lets what is in flight finish.
    let log = run_local_checked(
        nodes(&cfg, load, seed, true),
        seed,
        Duration::from_millis(1_000),
        10,
        nic_thread,
    );
    let stuck: Vec<_> = log
        .multicasts
        .values()
        .filter(|m| !m.completed)
        .map(|m| m.msg)
        .collect();
    assert!(
        stuck.is_empty(),
        "seed {seed} ({cfg:?}, {dest}, {size} B, nic thread {nic_thread}): {} of {} multicasts never completed: {:?}",
        stuck.len(),
        log.multicasts.len(),
        &stuck[..stuck.len().min(5)]
    );
    println!(
        "skeen local seed {seed} (nic thread {nic_thread}): {} groups, {} clients, {dest}, {size} B, {} slots: {} multicasts, all completed",
        cfg.groups,
        cfg.clients,
        cfg.ring_slots,
        log.multicasts.len()
    );
}

fn seeds() -> u64 {
    std::env::var("SKEEN_LOCAL_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

#[test]
fn concurrent_runs_keep_every_property_and_complete_every_multicast() {
    for seed in 1..=seeds() {
        run(seed, false);
    }
}

#[test]
fn concurrent_runs_with_a_nic_thread_keep_every_property_and_complete_every_multicast() {
    for seed in 1..=seeds() {
        run(100 + seed, true);
    }
}
