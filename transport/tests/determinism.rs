//! The simulator is deterministic from a seed: the chaos workload under random faults, run twice
//! per seed, gives identical traces and digests; different seeds give different digests.

use std::collections::BTreeSet;
use transport::chaos::{Chaos, ChaosConfig};
use transport::runtime::sim::{
    check_determinism, random_faults, Determinism, FaultBudget, Profile, Sim, SimConfig, TieBreak,
};
use transport::Nanos;

fn build(seed: u64) -> Sim<Chaos> {
    let cfg = ChaosConfig {
        processes: 6,
        ops: 300,
        think_ns_max: 3_000,
        drain_ns: 20_000_000,
    };
    let mut sim_cfg = SimConfig::new(seed, Profile::load("r320-cx3").unwrap());
    sim_cfg.tie_break = TieBreak::Random;
    sim_cfg.faults = random_faults(
        seed,
        cfg.processes,
        FaultBudget {
            horizon: Nanos::from_us(500),
            max_crashes: 2,
            transient: 8,
            revocable_regions: 2,
        },
    );
    Sim::new(sim_cfg, Chaos::all(cfg))
}

#[test]
fn twenty_seeds_replay_identically_and_differ_from_each_other() {
    let mut digests = BTreeSet::new();
    for seed in 0..20 {
        match check_determinism(|| build(seed), Some(Nanos::from_secs(1))) {
            Determinism::Identical(d) => {
                assert!(
                    digests.insert(d),
                    "seed {seed} repeats another seed's digest {d}"
                );
            }
            Determinism::Diverged { first, second } => {
                panic!("seed {seed} diverged: {first:?} vs {second:?}")
            }
        }
        let mut sim = build(seed);
        sim.run(Some(Nanos::from_secs(1)));
        for p in sim.processes() {
            assert!(p.violations.is_empty(), "seed {seed}: {:?}", p.violations);
        }
    }
    assert_eq!(digests.len(), 20);
}

#[test]
fn faults_exercise_every_failure_status() {
    let mut totals = [0u64; 4];
    for seed in 0..20 {
        let mut sim = build(seed);
        sim.run(Some(Nanos::from_secs(1)));
        for p in sim.processes() {
            for (t, s) in totals.iter_mut().zip(p.statuses) {
                *t += s;
            }
        }
    }
    assert!(totals.iter().all(|&t| t > 0), "statuses seen: {totals:?}");
}

/// The same chaos workload on real threads (no injected faults beyond one crash): the model's
/// guarantees hold under true concurrency too.
#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the fault comes from outside the runtime, as an operator would kill a process"
)]
fn chaos_holds_on_the_local_runtime() {
    use std::time::Duration;
    use transport::runtime::local::{LocalConfig, LocalRuntime};
    let chaos = Chaos::all(ChaosConfig {
        processes: 4,
        ops: 3_000,
        think_ns_max: 2_000,
        drain_ns: 5_000_000,
    });
    let rt = LocalRuntime::new(LocalConfig::default(), chaos);
    let control = rt.control();
    let crasher = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(2));
        control.crash(transport::ProcessId(3));
    });
    let run = rt.run(Duration::from_secs(60));
    crasher.join().unwrap();
    let mut success = 0;
    for p in &run.processes {
        assert!(p.violations.is_empty(), "{:?}", p.violations);
        success += p.statuses[0];
    }
    assert!(success > 0, "no op completed");
}

/// The determinism check can fail: a process that reads ambient state (a global counter that
/// survives between the two runs) makes the second run differ, and the check names the first
/// divergent event of each run.
#[test]
fn ambient_state_is_reported_as_divergence() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use transport::*;
    static AMBIENT: AtomicU64 = AtomicU64::new(0);

    struct Leaky {
        posted: bool,
    }
    impl<N: Nic> Process<N> for Leaky {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(0) && !self.posted {
                self.posted = true;
                // The bug under test: the think time depends on state outside the run.
                let delay = Nanos(100 * (1 + AMBIENT.fetch_add(1, Ordering::Relaxed)));
                return Progress::IDLE.wake_at(Some(nic.now() + delay));
            }
            if nic.id() == ProcessId(0) {
                let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
                nic.post_write(dst, &[1; 8], WriteFlags::NONE).unwrap();
            }
            Progress::IDLE
        }
        fn done(&self) -> bool {
            false
        }
    }
    let build = || {
        let cfg = SimConfig::new(3, Profile::load("r320-cx3").unwrap());
        Sim::new(cfg, vec![Leaky { posted: false }, Leaky { posted: false }])
    };
    match check_determinism(build, Some(Nanos::from_ms(1))) {
        Determinism::Diverged { first, second } => {
            let (a, b) = (first.unwrap(), second.unwrap());
            assert_eq!(a.index, b.index, "both runs report the same event position");
            assert_ne!(
                a.time, b.time,
                "the divergent event happened at different times"
            );
        }
        Determinism::Identical(d) => panic!("ambient state went unnoticed (digest {d})"),
    }
}
