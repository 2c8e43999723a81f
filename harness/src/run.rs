//! `harness run`: one experiment of a registered atomic multicast protocol, or an RDMC bulk
//! transfer, on the simulator or on threads.

use crate::protocols::{Kind, Service};
use crate::runtime::Runtime;
use crate::{experiment, protocols, totals, RunArgs, RuntimeKind, COMMIT};
use std::process::ExitCode;
use transport::runtime::sim::{Profile, Software};
use transport::Nanos;

/// Refuses the flags `a` gives that its protocol does not take ([`crate::flags`]).
fn refuse_foreign(a: &RunArgs) -> Result<(), String> {
    use clap::CommandFactory;
    let cli = crate::Cli::command();
    let run = cli.find_subcommand("run").expect("a run command");
    crate::flags::refuse_foreign(&a.protocol, &a.given, run)
}

/// The protocol called `name`, if it is a [`Service`] (not an atomic multicast).
fn service(name: &str) -> Option<&'static Service> {
    match protocols::entry(name).map(|e| &e.kind) {
        Some(Kind::Service(s)) => Some(s),
        _ => None,
    }
}

/// The protocol `harness run` names, and the shape its flags ask for: the common flags, and
/// what the protocol's own flags set ([`protocols::Entry::run_flags`]).
fn shape(a: &RunArgs) -> Result<(&'static protocols::Entry, protocols::Shape), String> {
    let entry = protocols::find(&a.protocol)?;
    let mut shape = protocols::Shape {
        groups: a.groups,
        tree: None,
        replicas: a.replicas,
        clients: a.clients,
        size: a.size.unwrap_or(64),
        dest: a.dest,
        slots: a.slots,
        slot_bytes: a.slot_bytes,
        dest_tree: None,
        own: protocols::Own::default(),
    };
    entry.run_flags(&a.own, &mut shape);
    Ok((entry, shape))
}

/// The deployment `harness run` asks for, checked.
fn deployment(a: &RunArgs) -> Result<protocols::Deployment, String> {
    let (entry, shape) = shape(a)?;
    entry.deploy(&shape)
}

/// Where `a` asks to run.
pub(crate) fn runtime(a: &RunArgs) -> Result<Runtime, String> {
    match a.runtime {
        RuntimeKind::Sim if a.nic_thread => {
            Err("--nic-thread is for --runtime local (the simulator always models the NIC)".into())
        }
        RuntimeKind::Sim => Ok(Runtime::Sim),
        RuntimeKind::Local => Ok(Runtime::Local {
            threads: a.threads.unwrap_or(0),
            nic_thread: a.nic_thread,
        }),
        RuntimeKind::Tcp if a.nic_thread || a.threads.is_some() => Err(
            "--nic-thread and --threads are for --runtime local (on tcp every node is a process with its own NIC thread)".into(),
        ),
        RuntimeKind::Tcp => Ok(Runtime::Tcp),
        RuntimeKind::Verbs if a.nic_thread || a.threads.is_some() => Err(
            "--nic-thread and --threads are for --runtime local (on verbs every node is a thread and the NIC is the device)".into(),
        ),
        RuntimeKind::Verbs if cfg!(not(feature = "verbs")) => Err(crate::runtime::verbs_missing()),
        RuntimeKind::Verbs => {
            // No device is an error here, before any setup, with the reason.
            let choice = verbs::DeviceChoice::from_env()?;
            let device = verbs::discover(&choice).map_err(|e| e.to_string())?;
            println!("verbs: {device}");
            Ok(Runtime::Verbs)
        }
    }
}

/// The experiment `harness run` arguments describe (an atomic multicast protocol's).
fn experiment(a: &RunArgs) -> Result<experiment::Experiment, String> {
    let profile_name = a.profile.clone().unwrap_or_else(|| {
        protocols::entry(&a.protocol)
            .map_or("", |p| p.testbed)
            .into()
    });
    let profile = Profile::load(&profile_name).map_err(|e| e.to_string())?;
    let runtime = runtime(a)?;
    Ok(experiment::Experiment {
        deploy: deployment(a)?,
        dest: a.dest,
        size: a.size.unwrap_or(64),
        warmup: a.warmup.unwrap_or(Nanos(a.duration.as_nanos() / 10)),
        duration: a.duration,
        runtime,
        profile,
        software: software(a)?,
        seed: a.seed,
        log: a.log.is_some(),
        dest_tree: None,
    })
}

/// The software profile of `--software`, posting as `--posting` says if given.
pub(crate) fn software(a: &RunArgs) -> Result<Software, String> {
    let mut s = Software::load(&a.software).map_err(|e| e.to_string())?;
    if let Some(discipline) = a.posting {
        s.posting = transport::runtime::sim::Posting {
            discipline,
            protocols: Default::default(),
            source: Some("--posting".into()),
        };
    }
    Ok(s)
}

/// `harness run`.
pub(crate) fn run(a: RunArgs) -> Result<ExitCode, String> {
    refuse_foreign(&a)?;
    let processes =
        a.runtime == RuntimeKind::Tcp || a.runtime == RuntimeKind::Verbs && a.cluster.is_some();
    if a.cluster.is_some() && !processes {
        return Err(
            "--cluster places the nodes of --runtime tcp or verbs, one OS process each".into(),
        );
    }
    if !a.fault.is_empty() && !processes {
        return Err("--fault injects faults into node processes of --runtime tcp (or verbs with --cluster); the simulator's faults are harness check's".into());
    }
    if let Some(service) = service(&a.protocol) {
        if a.runtime == RuntimeKind::Verbs && a.cluster.is_some() {
            return Err(verbs_cluster_refused(&a.protocol));
        }
        return (service.run)(a);
    }
    let e = experiment(&a)?;
    if !a.ignore_limits {
        fits(&a, &e)?;
    }
    let (groups, replicas, clients) = e.deploy.shape();
    let (slot_bytes, slots) = e.deploy.slots();
    let tree = e
        .deploy
        .tree()
        .map_or(String::new(), |t| format!(" tree={t}"));
    println!(
        "harness run: protocol={} runtime={} profile={} seed={} commit={COMMIT}\n  groups={groups} replicas={replicas} clients={clients}{tree} size={} dest={} warmup={} duration={} slot_bytes={slot_bytes} slots={slots}",
        e.deploy.protocol(),
        e.runtime_name(),
        e.profile.name,
        e.seed,
        e.size,
        e.dest,
        e.warmup,
        e.duration,
    );
    println!(
        "regions (fixed for the whole run: circular buffers): {}",
        e.deploy.regions()
    );
    if e.runtime == Runtime::Sim {
        println!("{}", e.software.describe());
    }
    let m = if processes {
        let (args, hosts) = tcp_launch(&a)?;
        crate::cluster::launch(&e, args, e.deploy.roles(&e), &a.fault, hosts.as_ref())?
    } else {
        e.run()
    };
    let q = |x: f64| m.latency.value_at_quantile(x) as f64 / 1000.0;
    println!(
        "delivered {} multicasts in the window: {:.0} msg/s; latency p50 {:.2} us, p95 {:.2} us, p99 {:.2} us; server deliveries {}; groups that changed leader {}; wall {:.2} s",
        m.delivered,
        m.throughput,
        q(0.5),
        q(0.95),
        q(0.99),
        m.server_deliveries,
        m.leader_changes,
        m.wall.as_secs_f64()
    );
    if let Some(line) = e.deploy.report(&m) {
        println!("{line}");
    }
    if let Some(cpu) = m.cpu.filter(|_| e.runtime != Runtime::Sim) {
        if m.server_deliveries > 0 {
            println!(
                "cpu {:.2} s: {:.0} ns of CPU per server delivery, {:.0} ns per completed multicast",
                cpu.as_secs_f64(),
                cpu.as_nanos() as f64 / m.server_deliveries as f64,
                cpu.as_nanos() as f64 / m.delivered.max(1) as f64
            );
        }
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        experiment::write_summary(&dir.join("summary.csv"), &[e.summary_row(&m, COMMIT)])?;
        experiment::write_cdf(&dir.join("latency_cdf.csv"), &m.latency)?;
        println!("wrote {}/summary.csv and latency_cdf.csv", dir.display());
    }
    if let (Some(dir), Some(log)) = (&a.log, &m.log) {
        log.write_csv(dir).map_err(|e| e.to_string())?;
        if let Some((kind, logs)) = &m.own_log {
            // Beside the atomic log, never in it: the checker judges atomic deliveries only.
            #[derive(serde::Serialize)]
            struct Row {
                process: u32,
                index: usize,
                client: u32,
                seq: u64,
            }
            let rows: Vec<Row> = logs
                .iter()
                .flat_map(|(p, ids)| {
                    ids.iter().enumerate().map(|(index, id)| Row {
                        process: p.0,
                        index,
                        client: id.client,
                        seq: id.seq,
                    })
                })
                .collect();
            let path = dir.join(format!("{kind}.csv"));
            experiment::write_rows(&path, &rows)?;
            println!(
                "{kind} deliveries in {} (the checker judges the atomic ones)",
                path.display()
            );
        }
        let v = multicast::check(log);
        println!(
            "delivery log in {}: {} processes, {} multicasts, {} deliveries; {} violations",
            dir.display(),
            log.processes.len(),
            log.multicasts.len(),
            log.deliveries.values().map(Vec::len).sum::<usize>(),
            v.len()
        );
        for x in v.iter().take(10) {
            println!("  violation: {x}");
        }
        if !v.is_empty() {
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses experiment `e` if its totals exceed what this machine has ([`crate::totals`]),
/// before any of its processes is built. Only the launching command checks: a node of a tcp
/// run is one of many sharing the machine the launcher checked for all.
fn fits(a: &RunArgs, e: &experiment::Experiment) -> Result<(), String> {
    let (groups, replicas, clients) = e.deploy.shape();
    let groups = match &shape(a)?.1.tree {
        Some(t) => format!("--tree ({t})"),
        None => format!("--groups ({groups})"),
    };
    let (slot_bytes, slots) = e.deploy.slots();
    let lower = totals::Lower {
        memory: format!(
            "--clients ({clients}), {groups}, --slots ({slots}) or the slot size ({slot_bytes} B: --slot-bytes, or --size, which it fits)"
        ),
        processes: format!("--clients ({clients}), {groups} or --replicas ({replicas})"),
    };
    let needs = totals::Needs::of(&e.deploy.footprint(), e.runtime, lower);
    totals::check(&needs, &totals::Limits::probe(a.cluster.is_some()))
        .map_err(|refusal| format!("{refusal}\n(--ignore-limits runs it anyway)"))
}

/// Why `protocol` does not launch on a verbs cluster.
fn verbs_cluster_refused(protocol: &str) -> String {
    format!(
        "--runtime verbs --cluster launches the atomic multicast protocols (ramcast, tram, ridge, ...); {protocol} does not run on a verbs cluster yet: run it with --runtime verbs in one process, or on --runtime tcp --cluster"
    )
}

/// What a tcp launch needs beyond the run: this command's own `run` arguments, which every
/// node re-parses (the run is described once), and the hosts file, if one is given.
pub(crate) fn tcp_launch(
    a: &RunArgs,
) -> Result<(Vec<String>, Option<crate::cluster::ClusterFile>), String> {
    let args = std::env::args()
        .skip_while(|x| x != "run")
        .skip(1)
        .collect();
    let hosts = a
        .cluster
        .as_deref()
        .map(crate::cluster::ClusterFile::load)
        .transpose()?;
    Ok((args, hosts))
}

/// `harness node`: one node of a tcp cluster.
pub(crate) fn node(a: crate::NodeArgs) -> Result<ExitCode, String> {
    let mut cluster = crate::cluster::ClusterFile::load(&a.cluster)?;
    if a.secret_stdin {
        cluster.read_secret_from_stdin()?;
    }
    let argv = ["harness", "run"]
        .into_iter()
        .map(String::from)
        .chain(cluster.run.iter().cloned());
    let run = match crate::parse(argv) {
        Ok(crate::Cli {
            command: crate::Command::Run(r),
        }) => r,
        Ok(_) => unreachable!("parsed as run"),
        Err(e) => {
            return Err(format!(
                "{}: its `run` arguments do not parse: {e}",
                a.cluster.display()
            ))
        }
    };
    let report = a
        .report
        .unwrap_or_else(|| std::path::PathBuf::from(format!("node-{}.report", a.id)));
    refuse_foreign(&run)?;
    if let Some(service) = service(&run.protocol) {
        if run.runtime == RuntimeKind::Verbs {
            return Err(verbs_cluster_refused(&run.protocol));
        }
        (service.serve)(&run, &cluster, a.id, &report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut e = experiment(&run)?;
    if e.runtime != Runtime::Verbs {
        e.runtime = Runtime::Tcp;
    }
    e.deploy.serve(&e, &cluster, a.id, &report)?;
    Ok(ExitCode::SUCCESS)
}

/// `harness region-table`: the region table of the tcp run `a` describes, one line for its
/// digest (`table 0x...`), then one per node (`node I ROLE: LEN,LEN,...`).
pub(crate) fn region_table(a: RunArgs) -> Result<ExitCode, String> {
    refuse_foreign(&a)?;
    if service(&a.protocol).is_some() {
        return Err(format!(
            "harness region-table: the atomic multicast protocols only, not {}",
            a.protocol
        ));
    }
    // Built as `harness node` builds it, so the table is the one the nodes agree on.
    let mut e = experiment(&a)?;
    e.runtime = Runtime::Tcp;
    let specs = e.deploy.region_specs(&e);
    println!("table {:#x}", transport::RegionTable::new(&specs).digest());
    for (i, (role, regions)) in e.deploy.roles(&e).iter().zip(&specs).enumerate() {
        let lens: Vec<String> = regions.iter().map(|r| r.len.to_string()).collect();
        println!("node {i} {role}: {}", lens.join(","));
    }
    Ok(ExitCode::SUCCESS)
}
