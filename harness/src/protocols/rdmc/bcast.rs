//! `harness bench bcast`: RDMC over the tcp runtime held against Open MPI's `MPI_Bcast` over
//! TCP, the same sizes and process counts, on this host, in one run.
//!
//! Both broadcast a message already in the root's memory (MPI's buffer is filled before the first barrier; RDMC's root
//! makes its message's bytes before the run starts). Both broadcast once untimed (warming
//! connections and buffers up), then time `repeat` broadcasts back to back, from the start of
//! the first until every receiver has the last: MPI between two barriers, RDMC from when its
//! root began the first timed message (the warm-up message's tail counts where it delays that
//! one). RDMC's members check every message they receive in full as they go, which MPI's program
//! does once after its loop: on a host with fewer cores than processes that check competes
//! with the transfers. MPI runs `scripts/mpi_bcast.c` (compiled here with `mpicc`), forced onto its
//! TCP transport over loopback (`--mca btl tcp,self`): left alone it would use shared memory,
//! which is not what RDMC's tcp runtime competes with.

use super::{show_bytes, BulkSpec};
use crate::experiment;
use crate::protocols::Bench;
use crate::runtime::Runtime;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use transport::runtime::sim::{Profile, Software};
use transport::Nanos;

/// `harness bench bcast`, as RDMC's entry offers it.
pub(super) const BENCH: Bench = Bench {
    name: "bcast",
    command: || {
        <BcastArgs as clap::Args>::augment_args(clap::Command::new("bcast"))
            .about(
                "RDMC over the tcp runtime beside Open MPI's MPI_Bcast over TCP, same sizes and \
                 process counts, on this host, in one run (needs Open MPI: \
                 `scripts/bench-deps.sh` installs it)",
            )
            .long_about(None)
    },
    run: |m| {
        let a =
            <BcastArgs as clap::FromArgMatches>::from_arg_matches(m).map_err(|e| e.to_string())?;
        run(&a)
    },
};

/// `harness bench bcast`'s flags.
#[derive(clap::Args, Debug)]
pub(crate) struct BcastArgs {
    /// Process counts (root included), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16")]
    pub(crate) nodes: Vec<usize>,
    /// Message sizes, comma-separated, with units (KB, MB, GB).
    #[arg(long, value_delimiter = ',', value_parser = experiment::parse_bytes, default_value = "1MB,16MB,256MB")]
    pub(crate) sizes: Vec<usize>,
    /// Timed broadcasts per point, for each system, after one untimed warm-up broadcast (RDMC:
    /// all in one run).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub(crate) repeat: u64,
    /// RDMC's algorithm.
    #[arg(long, default_value = "pipeline")]
    pub(crate) algorithm: rdmc::Algorithm,
    /// RDMC's block size.
    #[arg(long, value_parser = experiment::parse_bytes, default_value = "1MB")]
    pub(crate) block_size: usize,
    /// Skip points whose receive buffers and root's messages ((nodes + repeat + 1) x size)
    /// exceed this.
    #[arg(long, value_parser = experiment::parse_bytes, default_value = "2GB")]
    pub(crate) max_total: usize,
    /// Write one CSV row per point to this file.
    #[arg(long)]
    pub(crate) csv: Option<PathBuf>,
}

/// The MPI program, embedded so the bench runs from any directory.
const MPI_BCAST_C: &str = include_str!("../../../../scripts/mpi_bcast.c");

/// Compiles the MPI program into `dir`.
fn build_mpi(dir: &Path) -> Result<PathBuf, String> {
    let src = dir.join("mpi_bcast.c");
    let exe = dir.join("mpi_bcast");
    std::fs::write(&src, MPI_BCAST_C).map_err(|e| format!("{}: {e}", src.display()))?;
    let o = Command::new("mpicc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| format!("cannot run mpicc ({e}): install Open MPI (`scripts/bench-deps.sh`, or Debian's `apt-get install openmpi-bin libopenmpi-dev`)"))?;
    if !o.status.success() {
        return Err(format!(
            "mpicc failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(exe)
}

/// `MPI_Bcast` of `bytes` among `ranks` processes, `repeat` times: mean Gb/s.
fn mpi_gbps(exe: &Path, ranks: usize, bytes: usize, repeat: usize) -> Result<f64, String> {
    let o = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
        ])
        .args([
            "--mca",
            "btl",
            "tcp,self",
            "--mca",
            "btl_tcp_if_include",
            "lo",
        ])
        .args(["-np", &ranks.to_string()])
        .arg(exe)
        .args([bytes.to_string(), repeat.to_string()])
        .output()
        .map_err(|e| {
            format!("cannot run mpirun ({e}): install Open MPI (`scripts/bench-deps.sh`)")
        })?;
    let out = String::from_utf8_lossy(&o.stdout);
    if !o.status.success() {
        return Err(format!(
            "mpirun -np {ranks} mpi_bcast {bytes} failed: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    out.split_whitespace()
        .find_map(|w| w.strip_prefix("gbps="))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no gbps= in mpi_bcast's output: {out}"))
}

/// One point of the comparison.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct BcastRow {
    pub(crate) nodes: usize,
    pub(crate) bytes: usize,
    pub(crate) repeat: usize,
    pub(crate) algorithm: String,
    pub(crate) block_bytes: usize,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) rdmc_tcp_gbps: f64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) mpi_bcast_gbps: f64,
    /// `rdmc_tcp_gbps` over `mpi_bcast_gbps`: at least 1 is the tcp runtime's target.
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) ratio_vs_mpi: f64,
    pub(crate) commit: String,
}

/// RDMC over tcp among `nodes` members: a warm-up message and `repeat` more in one run, the
/// latter timed as a stream (see [`crate::protocols::rdmc::BulkResult::stream_gbps`]): Gb/s.
fn rdmc_gbps(
    nodes: usize,
    bytes: usize,
    block: usize,
    algorithm: rdmc::Algorithm,
    repeat: usize,
) -> Result<f64, String> {
    let messages = repeat + 1;
    let spec = BulkSpec {
        algorithm,
        nodes,
        size: bytes,
        block_size: block,
        senders: 1,
        racks: 1,
        messages,
        runtime: Runtime::Tcp,
        profile: Profile::load(crate::testbed::RDMC).map_err(|e| e.to_string())?,
        software: Software::load("none").map_err(|e| e.to_string())?,
        seed: 1,
        timeout: Nanos::from_secs(300),
    };
    let args: Vec<String> = [
        "--protocol",
        "rdmc",
        "--runtime",
        "tcp",
        "--nodes",
        &nodes.to_string(),
        "--size",
        &bytes.to_string(),
        "--block-size",
        &block.to_string(),
        "--algorithm",
        &algorithm.to_string(),
        "--messages",
        &messages.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let r = spec.launch_tcp(args, &[], None)?;
    if !r.clean() {
        return Err(format!(
            "RDMC over tcp, {nodes} nodes, {bytes} B: {} corrupt, {} missing, {} failures",
            r.corrupt, r.missing, r.failures
        ));
    }
    if r.transfers.len() != messages {
        return Err(format!(
            "RDMC over tcp, {nodes} nodes, {bytes} B: {} of {messages} messages reached every receiver",
            r.transfers.len()
        ));
    }
    r.stream_gbps(0, bytes).ok_or_else(|| {
        format!("RDMC over tcp, {nodes} nodes, {bytes} B: the root reported no start of message 1")
    })
}

/// `harness bench bcast`.
fn run(a: &BcastArgs) -> Result<ExitCode, String> {
    let dir = std::env::temp_dir().join(format!("harness-bcast-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let exe = build_mpi(&dir);
    let result = exe.and_then(|exe| compare(a, &exe));
    let _ = std::fs::remove_dir_all(&dir);
    let rows = result?;
    if let Some(path) = &a.csv {
        experiment::write_rows(path, &rows)?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs every point of `a`, RDMC then MPI (the program `exe`), printing a line per point.
fn compare(a: &BcastArgs, exe: &Path) -> Result<Vec<BcastRow>, String> {
    println!(
        "harness bench bcast: RDMC ({}, {} blocks) over the tcp runtime vs Open MPI MPI_Bcast (btl tcp over lo), this host, commit={}; {} broadcasts back to back per point, after one untimed",
        a.algorithm,
        show_bytes(a.block_size),
        crate::COMMIT,
        a.repeat
    );
    let repeat = a.repeat as usize;
    println!(
        " {:>5} {:>10} {:>16} {:>16} {:>7}",
        "nodes", "size", "RDMC tcp[Gb/s]", "MPI_Bcast[Gb/s]", "ratio"
    );
    let mut rows = Vec::new();
    for &nodes in &a.nodes {
        for &bytes in &a.sizes {
            // Every member's receive buffer, and the root's messages (RDMC makes them all
            // before the run).
            let held = (nodes + repeat + 1) * bytes;
            if held > a.max_total {
                println!(
                    " {nodes:>5} {:>10}  skipped: {} of receive buffers and the root's {} messages on this host exceed --max-total",
                    show_bytes(bytes),
                    show_bytes(held),
                    repeat + 1
                );
                continue;
            }
            let r = rdmc_gbps(nodes, bytes, a.block_size.min(bytes), a.algorithm, repeat)?;
            let m = mpi_gbps(exe, nodes, bytes, repeat)?;
            println!(
                " {nodes:>5} {:>10} {r:>16.3} {m:>16.3} {:>7.2}",
                show_bytes(bytes),
                r / m
            );
            rows.push(BcastRow {
                nodes,
                bytes,
                repeat,
                algorithm: a.algorithm.to_string(),
                block_bytes: a.block_size.min(bytes),
                rdmc_tcp_gbps: r,
                mpi_bcast_gbps: m,
                ratio_vs_mpi: r / m,
                commit: crate::COMMIT.to_string(),
            });
        }
    }
    Ok(rows)
}
