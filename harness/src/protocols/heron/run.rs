//! `harness run --protocol heron`: one Heron experiment over RamCast, on the simulator or on
//! threads: closed-loop clients issue the application's requests for `--duration` after a
//! warm-up; reported are the throughput, the latency per kind of request (single- and
//! multi-partition apart, as the thesis's Figure 5.5), and, for TPC-C, the specification's
//! consistency conditions on the database the replicas end with.

use super::App;
use crate::experiment::{process_cpu, write_rows, Where};
use crate::{testbed, RunArgs, COMMIT};
use hdrhistogram::Histogram;
use heron::tpcc::{self, Scale};
use heron::{Application, HeronNode, KeyValue, ObjectId, Tpcc, Window};
use ramcast::{RamcastClient, RamcastServer, Timing};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use transport::runtime::local::{LocalConfig, LocalRuntime};
use transport::runtime::sim::{Profile, Sim, SimConfig, Software};
use transport::{Nanos, ProcessId};

/// What one run left: per kind, single- and multi-partition latencies; the database.
struct Outcome {
    kinds: Vec<&'static str>,
    latency: Vec<[Histogram<u64>; 2]>,
    database: BTreeMap<ObjectId, Vec<u8>>,
    wall: Duration,
    events: Option<u64>,
}

/// One row of `summary.csv`: every parameter, then one kind of request's numbers.
#[derive(serde::Serialize)]
struct Row {
    protocol: &'static str,
    multicast: &'static str,
    app: String,
    runtime: &'static str,
    profile: String,
    software: String,
    seed: u64,
    partitions: usize,
    replicas: usize,
    clients: usize,
    items: u64,
    customers: u64,
    capacity: u64,
    warmup_ms: f64,
    duration_ms: f64,
    kind: &'static str,
    span: &'static str,
    completed: u64,
    per_s: f64,
    mean_us: f64,
    p50_us: f64,
    p99_us: f64,
    commit: &'static str,
}

/// Refuses the flags of the multicast protocols and of rdmc.
fn refuse_others(a: &RunArgs) -> Result<(), String> {
    let mut others = crate::run::rdmc_flags(a).to_vec();
    others.extend([
        ("--tree", a.tree.is_some()),
        ("--size", a.size.is_some()),
        ("--delta", a.delta.is_some()),
        ("--acceptors", a.acceptors.is_some()),
        ("--placement", a.placement.is_some()),
        ("--dissemination", a.dissemination.is_some()),
        ("--optimistic", a.optimistic.is_some()),
        ("--log", a.log.is_some()),
    ]);
    match others.iter().find(|f| f.1) {
        Some((flag, _)) => Err(format!(
            "{flag} is not for --protocol heron: the application decides what requests carry and where they go; heron takes --app, --groups (partitions), --replicas, --clients, --scale, --capacity, --slots"
        )),
        None => Ok(()),
    }
}

/// `harness run --protocol heron`.
pub(crate) fn run(a: &RunArgs, runtime: Where) -> Result<ExitCode, String> {
    refuse_others(a)?;
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
    let app = a.app.unwrap_or(App::Tpcc);
    if app != App::Tpcc && (a.scale.is_some() || a.capacity.is_some()) {
        return Err(
            "--scale and --capacity size TPC-C's database: use them with --app tpcc".into(),
        );
    }
    let factor = a.scale.unwrap_or(100);
    if factor == 0 {
        return Err("--scale 0: the specification's size is --scale 1".into());
    }
    let scale = Scale::scaled(factor, a.capacity.unwrap_or(2_000));
    if let Some(c) = a.capacity.filter(|&c| c < scale.customers) {
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
    let mut cfg = heron::Config::new(partitions, a.replicas, a.clients);
    let mut rc = ramcast::Config::new(partitions, a.replicas, a.clients);
    rc.slots = a.slots;
    if let Some(b) = a.slot_bytes {
        rc.slot_bytes = b;
    }
    if matches!(runtime, Where::Local { .. }) {
        rc.timing = Timing::WALL;
    }
    rc.validate().map_err(|e| e.to_string())?;
    let runtime_name = match runtime {
        Where::Sim => "sim",
        Where::Local { .. } => "local",
    };
    println!(
        "harness run: protocol=heron multicast=ramcast app={} runtime={runtime_name} profile={profile_name} software={} seed={} commit={COMMIT}\n  partitions={partitions} replicas={} clients={} warmup={warmup} duration={}{}",
        match app {
            App::Tpcc => "tpcc",
            App::Kv => "kv",
        },
        a.software,
        a.seed,
        a.replicas,
        a.clients,
        a.duration,
        match app {
            App::Tpcc => format!(
                " items={} customers/district={} capacity/district={}",
                scale.items, scale.customers, scale.capacity
            ),
            App::Kv => String::new(),
        }
    );
    let mut sc = SimConfig::new(a.seed, profile.clone());
    sc.software = software;
    let rc = Arc::new(rc);
    let cpu0 = process_cpu();
    let (outcome, tpcc_app) = match app {
        App::Tpcc => {
            cfg.max_response = tpcc::MAX_RESPONSE;
            let t = Tpcc::new(partitions, scale, a.seed);
            let o = execute(cfg, Arc::new(t.clone()), rc, window, runtime, sc, a)?;
            (o, Some(t))
        }
        App::Kv => {
            let kv = KeyValue::new(partitions, 1024 * partitions as u64, 0.6);
            (
                execute(cfg, Arc::new(kv), rc, window, runtime, sc, a)?,
                None,
            )
        }
    };
    let cpu = cpu0.and_then(|c| process_cpu().map(|d| d.saturating_sub(c)));
    let secs = a.duration.as_nanos() as f64 / 1e9;
    let us = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e3;
    let mut rows = Vec::new();
    let mut total = 0;
    println!("kind            span    completed      per s    mean us     p50 us     p99 us");
    for (k, name) in outcome.kinds.iter().enumerate() {
        for (span, h) in ["single", "multi"].iter().zip(&outcome.latency[k]) {
            if h.is_empty() {
                continue;
            }
            total += h.len();
            let row = Row {
                protocol: "heron",
                multicast: "ramcast",
                app: format!("{app:?}").to_lowercase(),
                runtime: runtime_name,
                profile: profile_name.clone(),
                software: a.software.clone(),
                seed: a.seed,
                partitions,
                replicas: a.replicas,
                clients: a.clients,
                items: scale.items,
                customers: scale.customers,
                capacity: scale.capacity,
                warmup_ms: warmup.as_nanos() as f64 / 1e6,
                duration_ms: a.duration.as_nanos() as f64 / 1e6,
                kind: name,
                span,
                completed: h.len(),
                per_s: h.len() as f64 / secs,
                mean_us: h.mean() / 1e3,
                p50_us: us(h, 0.5),
                p99_us: us(h, 0.99),
                commit: COMMIT,
            };
            println!(
                "{:<15} {:<6} {:>10} {:>10.0} {:>10.1} {:>10.1} {:>10.1}",
                row.kind, row.span, row.completed, row.per_s, row.mean_us, row.p50_us, row.p99_us
            );
            rows.push(row);
        }
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
            "TPC-C consistency conditions 3.3.2.1-3.3.2.4: {}; districts out of order rows: {full}{}",
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

type Node<A> = HeronNode<RamcastServer, RamcastClient, A>;

/// Heron over RamCast on runtime NIC `N`, histories not kept.
fn deploy<N: transport::Nic, A: Application>(
    cfg: heron::Config,
    app: Arc<A>,
    rc: &Arc<ramcast::Config>,
    seed: u64,
    window: Window,
) -> Vec<Node<A>> {
    heron::deploy::<N, _, _, _>(
        cfg,
        app,
        seed,
        window,
        false,
        |g, r| RamcastServer::new(rc.clone(), g, r),
        |i| RamcastClient::new(rc.clone(), i),
    )
}

/// Deploys Heron over RamCast with `app` and runs it where `runtime` says.
fn execute<A: Application + Send + Sync + 'static>(
    cfg: heron::Config,
    app: Arc<A>,
    rc: Arc<ramcast::Config>,
    window: Window,
    runtime: Where,
    sc: SimConfig,
    a: &RunArgs,
) -> Result<Outcome, String> {
    let kinds = app.kinds().to_vec();
    let started = Instant::now();
    let end = window.stop_at.saturating_add(Nanos(5_000_000));
    let (nodes, database, events): (Vec<Node<A>>, _, _) = match runtime {
        Where::Sim => {
            let nodes = deploy::<transport::runtime::sim::SimNic, A>(cfg, app, &rc, a.seed, window);
            let mut sim = Sim::new(sc, nodes);
            sim.run(Some(end));
            let mut db = BTreeMap::new();
            for (i, n) in sim.processes().iter().enumerate() {
                if let HeronNode::Server(s) = n {
                    db.extend(s.state(sim.nic(ProcessId(i as u32))));
                }
            }
            let events = sim.stats().events;
            (sim.into_processes(), db, Some(events))
        }
        Where::Local {
            threads,
            nic_thread,
        } => {
            let nodes =
                deploy::<transport::runtime::local::LocalNic, A>(cfg, app, &rc, a.seed, window);
            let lc = LocalConfig {
                threads,
                nic_thread,
                seed: a.seed,
                limits: sc.profile.limits(),
                ..LocalConfig::default()
            };
            let limit = Duration::from_nanos(end.as_nanos()) + Duration::from_secs(5);
            let run = LocalRuntime::new(lc, nodes).run(limit);
            let mut db = BTreeMap::new();
            for (n, nic) in run.processes.iter().zip(&run.nics) {
                if let HeronNode::Server(s) = n {
                    db.extend(s.state(nic));
                }
            }
            (run.processes, db, None)
        }
    };
    let mut latency: Vec<[Histogram<u64>; 2]> = Vec::new();
    for n in &nodes {
        if let HeronNode::Client(c) = n {
            if latency.is_empty() {
                latency = c.latencies().to_vec();
            } else {
                for (sum, h) in latency.iter_mut().zip(c.latencies()) {
                    for (s, h) in sum.iter_mut().zip(h) {
                        s.add(h).map_err(|e| e.to_string())?;
                    }
                }
            }
        }
    }
    Ok(Outcome {
        kinds,
        latency,
        database,
        wall: started.elapsed(),
        events,
    })
}
