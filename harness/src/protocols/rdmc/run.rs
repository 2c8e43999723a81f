//! `harness run --protocol rdmc` and each node of its tcp runs: a [`BulkSpec`] from the
//! command line, run, reported.

use super::{peak_rss, show_bytes, BulkSpec};
use crate::cluster::ClusterFile;
use crate::experiment;
use crate::runtime::Runtime;
use crate::{testbed, RunArgs, COMMIT};
use std::path::Path;
use std::process::ExitCode;
use transport::runtime::sim::Profile;
use transport::Nanos;

/// `harness node`: node `id` of a tcp run of RDMC.
pub(super) fn serve(
    a: &RunArgs,
    cluster: &ClusterFile,
    id: usize,
    report: &Path,
) -> Result<(), String> {
    let mut spec = bulk_spec(a)?;
    spec.runtime = Runtime::Tcp;
    spec.serve(cluster, id, report)
}

/// The RDMC experiment `harness run --protocol rdmc` arguments describe.
fn bulk_spec(a: &RunArgs) -> Result<BulkSpec, String> {
    let profile_name = a.profile.clone().unwrap_or_else(|| testbed::RDMC.into());
    let rdmc: super::Flags = a.own.get();
    Ok(BulkSpec {
        algorithm: rdmc
            .algorithm
            .unwrap_or(::rdmc::Algorithm::BinomialPipeline),
        nodes: rdmc.nodes.unwrap_or(4),
        size: a.size.unwrap_or(256 << 20),
        block_size: rdmc.block_size.unwrap_or(1 << 20),
        senders: rdmc.senders.unwrap_or(1),
        racks: rdmc.racks.unwrap_or(1),
        messages: rdmc.messages.unwrap_or(1),
        runtime: crate::run::runtime(a)?,
        profile: Profile::load(&profile_name).map_err(|e| e.to_string())?,
        software: crate::run::software(a)?,
        seed: a.seed,
        timeout: rdmc.timeout.unwrap_or(Nanos(600_000_000_000)),
    })
}

/// `harness run --protocol rdmc`.
pub(super) fn run(a: RunArgs) -> Result<ExitCode, String> {
    let spec = bulk_spec(&a)?;
    spec.validate()?;
    println!(
        "harness run: protocol=rdmc runtime={} profile={} seed={} commit={COMMIT}\n  algorithm={} nodes={} size={} block={} ({} blocks) senders={} racks={} messages={}",
        spec.runtime.name(),
        spec.profile.name,
        spec.seed,
        spec.algorithm,
        spec.nodes,
        show_bytes(spec.size),
        show_bytes(spec.block_size),
        spec.blocks(),
        spec.senders,
        spec.racks,
        spec.messages
    );
    let r = if spec.runtime == crate::runtime::Runtime::Tcp {
        let (args, hosts) = crate::run::tcp_launch(&a)?;
        spec.launch_tcp(args, &a.fault, hosts.as_ref())?
    } else {
        spec.run()?
    };
    let ms = |t: Nanos| t.as_nanos() as f64 / 1e6;
    for t in r.transfers.iter().take(8) {
        println!(
            "group {} message {}: {} receivers; last at {:.3} ms -> {:.2} Gb/s; first at {:.3} ms, skew {:.1} us",
            t.group,
            t.msg,
            t.receivers,
            ms(t.last),
            t.gbps(spec.size),
            ms(t.first),
            t.skew().as_nanos() as f64 / 1e3
        );
    }
    if r.transfers.len() > 8 {
        println!("... {} more messages", r.transfers.len() - 8);
    }
    let row = spec.row(&r, COMMIT);
    println!(
        "bandwidth (size / time until every receiver has it): mean {:.2} Gb/s, sd {:.2}; aggregate {:.2} Gb/s received per node; {:.0} messages/s; mean skew {:.1} us",
        row.gbps_mean, row.gbps_sd, row.aggregate_gbps, row.messages_per_s, row.skew_us_mean
    );
    println!(
        "verified: {} of {} receiver deliveries intact; {} corrupt, {} missing, {} failure upcalls",
        r.transfers
            .iter()
            .map(|t| t.receivers)
            .sum::<usize>()
            .saturating_sub(r.corrupt),
        spec.senders * spec.messages * (spec.nodes - 1),
        r.corrupt,
        r.missing,
        r.failures
    );
    if let Some(u) = r.unresolved {
        println!(
            "members were killed, so the group fails and what was in flight may reach some receivers only (RDMC's promise under failures); surviving members that neither completed every message of a group nor were told it failed: {u}"
        );
    }
    println!(
        "wall {:.2} s{}; peak memory {}",
        r.wall.as_secs_f64(),
        r.events
            .map_or(String::new(), |e| format!(", {e} simulator events")),
        peak_rss().map_or("unknown".into(), |b| format!("{} MiB", b >> 20))
    );
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        experiment::write_rows(&dir.join("summary.csv"), &[row])?;
        println!("wrote {}/summary.csv", dir.display());
    }
    Ok(if r.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
