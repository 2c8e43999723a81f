//! `harness check --protocol chaos`: a VOPR-style seeded checker of the transport model. Every
//! parameter of a run is derived from its seed; the run is checked as it goes; a failing seed
//! prints one command that replays it. The runs themselves, and the seeds that once failed,
//! are the transport's ([`transport::chaos::seeded`]).

use std::time::Instant;
use transport::chaos::seeded::{check_seed, ChaosRun};
use transport::runtime::sim::{Fault, Profile};

/// Summary counters of a sweep.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sweep {
    pub(crate) runs: u64,
    pub(crate) failed: Vec<u64>,
    pub(crate) with_crash: u64,
    pub(crate) with_revoke: u64,
    pub(crate) with_pause_or_slow: u64,
    pub(crate) with_link_delay: u64,
    pub(crate) events: u64,
    pub(crate) statuses: [u64; 4],
    pub(crate) wall_s: f64,
}

/// Checks `seeds` in order; prints failures with their replay command as they happen.
pub(crate) fn sweep(
    seeds: impl Iterator<Item = u64>,
    processes: Option<usize>,
    profile: &Profile,
    determinism: bool,
    verbose: bool,
    mut progress: impl FnMut(u64),
) -> Sweep {
    let start = Instant::now();
    let mut s = Sweep::default();
    for seed in seeds {
        let run = ChaosRun::derive(seed, processes);
        if verbose {
            println!("{}", run.describe());
        }
        let has = |f: fn(&Fault) -> bool| run.faults.iter().any(f) as u64;
        s.with_crash += has(|f| matches!(f, Fault::Crash { .. }));
        s.with_revoke += has(|f| matches!(f, Fault::Revoke { .. }));
        s.with_pause_or_slow += has(|f| matches!(f, Fault::Pause { .. } | Fault::Slow { .. }));
        s.with_link_delay += has(|f| matches!(f, Fault::LinkDelay { .. }));
        let out = check_seed(&run, profile, determinism);
        s.runs += 1;
        s.events += out.events;
        for (t, x) in s.statuses.iter_mut().zip(out.statuses) {
            *t += x;
        }
        if !out.violations.is_empty() || out.divergence.is_some() {
            s.failed.push(seed);
            println!("FAILED seed {seed}:");
            for v in out.violations.iter().take(10) {
                println!("  violation: {v}");
            }
            if let Some(d) = &out.divergence {
                println!("  nondeterminism: {d}");
            }
            println!(
                "  replay: harness check --protocol chaos --seed {seed} --profile {}{}{}",
                profile.name,
                processes.map_or(String::new(), |n| format!(" --processes {n}")),
                if determinism {
                    " --check-determinism"
                } else {
                    ""
                }
            );
        }
        progress(seed);
    }
    s.wall_s = start.elapsed().as_secs_f64();
    s
}
