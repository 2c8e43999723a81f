//! `harness run --protocol heron`: one Heron experiment over RamCast or Ridge, on the simulator or on
//! threads: closed-loop clients issue the application's requests for `--duration` after a
//! warm-up; reported are the throughput, the latency per kind of request (single- and
//! multi-partition apart, as the thesis's Figure 5.5), and, for TPC-C, the specification's
//! consistency conditions on the database the replicas end with.

use super::experiment::{Setup, Workload};
use super::{App, Over};
use crate::experiment::{process_cpu, write_rows};
use crate::runtime::Runtime;
use crate::{testbed, RunArgs, COMMIT};
use heron::tpcc::{self, Scale};
use heron::{KeyValue, Tpcc, Window};
use std::process::ExitCode;
use transport::runtime::sim::{Profile, SimConfig, Software};
use transport::Nanos;

/// The experiment `harness run --protocol heron` arguments describe (also each node's of a
/// tcp run).
pub(crate) fn setup(a: &RunArgs, runtime: Runtime) -> Result<Setup, String> {
    let partitions = a.groups.unwrap_or(4);
    if !(1..=64).contains(&partitions) {
        return Err(format!("--groups {partitions}: 1 to 64 partitions"));
    }
    if a.replicas % 2 == 0 {
        return Err(format!(
            "--replicas {}: Heron needs a majority per partition, 2f+1 replicas",
            a.replicas
        ));
    }
    let heron: super::Flags = a.own.get();
    let app = heron.app.unwrap_or(App::Tpcc);
    if app != App::Tpcc && (heron.scale.is_some() || heron.capacity.is_some()) {
        return Err(
            "--scale and --capacity size TPC-C's database: use them with --app tpcc".into(),
        );
    }
    let factor = heron.scale.unwrap_or(100);
    if factor == 0 {
        return Err("--scale 0: the specification's size is --scale 1".into());
    }
    let scale = Scale::scaled(factor, heron.capacity.unwrap_or(2_000));
    if let Some(c) = heron.capacity.filter(|&c| c < scale.customers) {
        return Err(format!(
            "--capacity {c}: a district starts with {} orders (one per customer at --scale {factor}); give at least that many rows",
            scale.customers
        ));
    }
    let profile_name = a.profile.clone().unwrap_or_else(|| testbed::HERON.into());
    let profile = Profile::load(&profile_name).map_err(|e| e.to_string())?;
    let software = Software::load(&a.software).map_err(|e| e.to_string())?;
    let warmup = a.warmup.unwrap_or(Nanos(a.duration.as_nanos() / 10));
    let window = Window {
        warmup_end: warmup,
        stop_at: warmup.saturating_add(a.duration),
    };
    let mut sc = SimConfig::new(a.seed, profile);
    sc.software = software;
    let setup = Setup {
        cfg: heron::Config::new(partitions, a.replicas, a.clients),
        over: heron.over.unwrap_or(Over::Ramcast),
        slots: a.slots,
        slot_bytes: a.slot_bytes,
        workload: match app {
            App::Tpcc => Workload::Tpcc(Tpcc::new(partitions, scale, a.seed)),
            App::Kv => Workload::Kv(KeyValue::new(partitions, 1024 * partitions as u64, 0.6)),
        },
        window,
        runtime,
        sim: sc,
    };
    setup.validate()?;
    Ok(setup)
}

/// `harness run --protocol heron` as the registry calls it.
pub(super) fn command(a: RunArgs) -> Result<ExitCode, String> {
    if a.runtime == crate::RuntimeKind::Verbs {
        return Err("Heron does not run on verbs yet: its key-value store over RamCast passes on the verbs runtime's fake fabric (heron/tests/verbs.rs), but TPC-C has not, and with a large RamCast ring no request completed there (issue 48): use --runtime local or tcp".into());
    }
    run(&a, crate::run::runtime(&a)?)
}

/// `harness node`: node `id` of a tcp run of Heron.
pub(super) fn serve(
    a: &RunArgs,
    cluster: &crate::cluster::ClusterFile,
    id: usize,
    report: &std::path::Path,
) -> Result<(), String> {
    setup(a, Runtime::Tcp)?.serve(cluster, id, report)
}

/// `harness run --protocol heron`.
pub(crate) fn run(a: &RunArgs, runtime: Runtime) -> Result<ExitCode, String> {
    let setup = setup(a, runtime)?;
    let app = a.own.get::<super::Flags>().app.unwrap_or(App::Tpcc);
    let tpcc_scale = match &setup.workload {
        Workload::Tpcc(t) => Some(t.scale()),
        _ => None,
    };
    println!(
        "harness run: protocol=heron multicast={} app={} runtime={} profile={} software={} seed={} commit={COMMIT}\n  partitions={} replicas={} clients={} warmup={} duration={}{}",
        setup.over.name(),
        match app {
            App::Tpcc => "tpcc",
            App::Kv => "kv",
        },
        runtime.name(),
        setup.sim.profile.name,
        a.software,
        a.seed,
        setup.cfg.partitions,
        a.replicas,
        a.clients,
        setup.window.warmup_end,
        a.duration,
        tpcc_scale.map_or(String::new(), |scale| format!(
            " items={} customers/district={} capacity/district={}",
            scale.items, scale.customers, scale.capacity
        ))
    );
    let cpu0 = process_cpu();
    let (outcome, judged) = if runtime == Runtime::Tcp {
        let (args, hosts) = crate::run::tcp_launch(a)?;
        let (o, j) = setup.launch(&super::tcp::Launch {
            args,
            faults: &a.fault,
            hosts: hosts.as_ref(),
        })?;
        (o, Some(j))
    } else {
        (setup.run()?, None)
    };
    let tpcc_app = match &setup.workload {
        Workload::Tpcc(t) => Some(t.clone()),
        _ => None,
    };
    let cpu = if runtime == Runtime::Tcp {
        // The nodes' CPU: the launcher only waits.
        crate::cluster::children_cpu()
    } else {
        cpu0.and_then(|c| process_cpu().map(|d| d.saturating_sub(c)))
    };
    let secs = a.duration.as_nanos() as f64 / 1e9;
    let label = match app {
        App::Tpcc => "tpcc",
        App::Kv => "kv",
    };
    let rows = setup.rows(&outcome, label, COMMIT);
    let total: u64 = rows.iter().map(|r| r.completed).sum();
    println!("kind            span    completed      per s    mean us     p50 us     p99 us");
    for row in &rows {
        println!(
            "{:<15} {:<6} {:>10} {:>10.0} {:>10.1} {:>10.1} {:>10.1}",
            row.kind, row.span, row.completed, row.per_s, row.mean_us, row.p50_us, row.p99_us
        );
    }
    println!(
        "throughput {:.0} requests/s ({total} completed in {:.3} s); wall {:.2} s{}{}",
        total as f64 / secs,
        secs,
        outcome.wall.as_secs_f64(),
        outcome
            .events
            .map_or(String::new(), |e| format!(", {e} simulator events")),
        cpu.map_or(String::new(), |c| format!(", cpu {:.2} s", c.as_secs_f64()))
    );
    let mut clean = total > 0;
    if total == 0 {
        println!("no request completed in the measurement window: lengthen --duration");
    }
    if let Some(t) = &tpcc_app {
        let bad = tpcc::consistency::check(t, &outcome.database);
        let full = tpcc::full_districts(t, &outcome.database);
        println!(
            "TPC-C consistency conditions 3.3.2.1-3.3.2.12: {}; districts out of order rows: {full}{}",
            if bad.is_empty() {
                "hold".to_string()
            } else {
                format!("{} violated: {}", bad.len(), bad.join("; "))
            },
            if full > 0 {
                " (their New-Orders changed nothing: raise --capacity)"
            } else {
                ""
            }
        );
        clean &= bad.is_empty();
    }
    if let Some(j) = &judged {
        println!("{}; {} violations", j.checked, j.violations.len());
        for v in j.violations.iter().take(10) {
            println!("  violation: {v}");
        }
        clean &= j.violations.is_empty();
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        write_rows(&dir.join("summary.csv"), &rows)?;
        println!("wrote {}/summary.csv", dir.display());
    }
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
