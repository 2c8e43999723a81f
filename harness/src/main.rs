//! `harness`: the command researchers run. This file dispatches: the command line is declared
//! in [`cli`], each command lives in its module (`run`, `compare`, `reproduce`, `check`,
//! `bench`), and the protocols, their sweeps and their figures come from the registry of
//! [`protocols`], so adding a protocol changes nothing here (see `harness/README.md`).

#![deny(unsafe_code)]
#![allow(
    clippy::disallowed_methods,
    reason = "the CLI measures and reports the wall-clock time of runs, sweeps and figures"
)]

use engine::{cluster, experiment, figure, progress, runtime, stats, totals, verdict};

mod bench;
mod calibrate;
mod check;
mod check_chaos;
mod cli;
mod compare;
mod flags;
mod lens;
mod plot;
mod protocols;
mod reproduce;
mod run;
mod testbed;

/// Pins glibc's mmap threshold at its initial 128 KiB. glibc raises the threshold once a large
/// block is freed, so the regions of later simulated runs came from its heap and stayed
/// resident after their run ended: `harness reproduce ridge-fig2` (two 8-group runs side by
/// side, about 3 GB each) passed 22 GB and was killed on a 24 GB machine. Quick Fig. 2 peaks
/// at 3.26 GB without this, 1.15 GB with it (`MALLOC_MMAP_THRESHOLD_=131072` has the same
/// effect from outside; mimalloc, tried instead, kept 10.4 GB). Nothing calls `malloc_trim`
/// after a run any more: handing every free page back made the next run fault it in again, a
/// third of `figure ridge-fig1`'s wall time, and since simulated regions are paged (transport's
/// `memory` module) and ring scratch grows on use, full Fig. 2 peaks at 4.3 GB without it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn pin_mmap_threshold() {
    // SAFETY: mallopt only sets an allocator parameter; called first thing in main, before
    // any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn pin_mmap_threshold() {}

pub(crate) use cli::*;
use std::process::ExitCode;
use transport::runtime::sim::Profile;
use transport::Nanos;

/// The git revision this binary was built from.
const COMMIT: &str = env!("HARNESS_GIT_REV");

fn main() -> ExitCode {
    pin_mmap_threshold();
    let cli = match parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Bench(BenchCommand::Transport(a)) => bench::run_transport(a),
        Command::Bench(BenchCommand::Sim(a)) => bench::run_sim(a),
        Command::Bench(BenchCommand::Access(a)) => bench::run_access(a),
        Command::Bench(BenchCommand::Offered(b)) => b.run(),
        Command::Run(a) => run::run(*a),
        Command::Node(a) => run::node(a),
        Command::Figure(a) => reproduce::figure_command(a),
        Command::Reproduce(a) => reproduce::reproduce_command(a),
        Command::Compare(a) => compare::command(a),
        Command::Check(a) => check::command(a),
        Command::Calibrate(c) => calibrate::command(c, COMMIT),
        Command::Profiles => list_profiles(),
        Command::Verify(a) => verify_log(a),
        Command::RegionTable(a) => run::region_table(*a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn verify_log(a: VerifyArgs) -> Result<ExitCode, String> {
    let log = multicast::DeliveryLog::read_csv(&a.log).map_err(|e| e.to_string())?;
    let deliveries: usize = log.deliveries.values().map(Vec::len).sum();
    println!(
        "harness verify: {} processes, {} multicasts, {} deliveries in {}",
        log.processes.len(),
        log.multicasts.len(),
        deliveries,
        a.log.display()
    );
    // An empty log satisfies every property vacuously: saying "0 violations" would vouch for
    // a run that recorded nothing.
    if log.multicasts.is_empty() || deliveries == 0 {
        return Err(format!(
            "{}: the log has {} multicasts and {deliveries} deliveries: nothing to verify (was the run's --log written, and did its clients multicast?)",
            a.log.display(),
            log.multicasts.len()
        ));
    }
    let violations = multicast::check(&log);
    for v in &violations {
        println!("VIOLATION {v}");
    }
    if violations.is_empty() {
        println!("0 violations");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{} properties violated", violations.len());
        Ok(ExitCode::FAILURE)
    }
}

fn list_profiles() -> Result<ExitCode, String> {
    for name in transport::runtime::sim::builtin_names() {
        let p = Profile::load(name).map_err(|e| e.to_string())?;
        println!("{:<14} v{}  {}", p.name, p.version, p.description);
        println!("{:<14}      calibrated on: {}", "", p.calibration.source);
        // What else the profile declares beyond the calibrated costs.
        let mut also = Vec::new();
        if let Some(d) = &p.nic.write_latency_dist {
            also.push(format!(
                "latency distribution (min {} / typical {} / 99% {} / 99.9% {} us)",
                d.t_min_us, d.t_typical_us, d.p99_us, d.p999_us
            ));
        }
        if let Some(g) = p.nic.duplex_gbps {
            also.push(format!("two-way limit {g} Gb/s"));
        }
        if let Some(f) = &p.fabric {
            also.push(format!("fabric {}", f.describe()));
        }
        if let Some(r) = &p.nic.reconnect_range {
            also.push(format!(
                "reconnect {} in [{}, {}]",
                Nanos(p.nic.reconnect_ns),
                Nanos(r.low_ns),
                Nanos(r.high_ns)
            ));
        }
        if let Some(c) = &p.nic.permission_change {
            also.push(format!(
                "access change {} in [{}, {}]",
                Nanos(c.ns),
                Nanos(c.low_ns),
                Nanos(c.high_ns)
            ));
        }
        if !also.is_empty() {
            println!("{:<14}      declares: {}", "", also.join("; "));
        }
    }
    println!("\nsoftware profiles (--software):");
    for (name, _) in transport::runtime::sim::SOFTWARE {
        let s = transport::runtime::sim::Software::load(name).map_err(|e| e.to_string())?;
        println!("{:<14} v{}  {}", s.name, s.version, s.description);
        println!("{:<14}      {}", "", s.describe());
        println!("{:<14}      calibrated on: {}", "", s.calibration.source);
    }
    Ok(ExitCode::SUCCESS)
}
