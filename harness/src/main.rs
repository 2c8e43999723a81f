//! `harness`: the command researchers run. This file parses the command line and dispatches:
//! each command lives in its module (`run`, `compare`, `reproduce`, `check`, `bench`), and the
//! protocols, their sweeps and their figures come from the registries of [`protocols`], so
//! adding a protocol changes nothing here (see `harness/README.md`).

#![deny(unsafe_code)]
#![allow(
    clippy::disallowed_methods,
    reason = "the CLI measures and reports the wall-clock time of runs, sweeps and figures"
)]

mod bench;
mod calibrate;
mod check;
mod check_chaos;
mod cluster;
mod compare;
mod experiment;
mod figure;
mod flags;
mod lens;
mod plot;
mod progress;
mod protocols;
mod reproduce;
mod run;
mod stats;
mod sweep;
mod testbed;
mod totals;
mod verdict;

use bench::transport::MAX_BYTES;

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

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use transport::runtime::sim::{Profile, DEFAULT_PROFILE, DEFAULT_SOFTWARE};
use transport::Nanos;

/// The git revision this binary was built from.
const COMMIT: &str = env!("HARNESS_GIT_REV");

#[derive(Parser, Debug)]
#[command(
    name = "harness",
    version,
    about = "Workbench for RDMA ordering and replication protocols: benchmarks, checks, experiments.",
    long_about = "Workbench for RDMA ordering and replication protocols.\n\n\
        Protocols run unchanged on a deterministic simulator (`sim`, calibrated hardware profiles), \
        on real threads in one process (`local`), as OS processes with RDMA semantics over TCP \
        (`tcp`, across machines with a cluster file) or on an RDMA device (`verbs`, in a build \
        with `--features verbs`). Every run prints its seed, commit and parameters first."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Microbenchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// One multicast experiment with closed-loop clients: throughput, latency, delivery log.
    Run(Box<RunArgs>),
    /// Reproduces a paper figure on the simulator: CSV, PNG and a summary beside the paper's.
    Figure(FigureArgs),
    /// Reproduces several paper figures (--all: every one), prints each one's wall time, CPU
    /// time, cores busy on average and verdicts, and rewrites the results index (OUT/README.md).
    Reproduce(ReproduceArgs),
    /// One workload against several protocols side by side: latency CDFs at 1 client and at
    /// saturation, throughput-latency curves, CSV, PNG and a summary table.
    Compare(CompareArgs),
    /// Seeded checks under random faults (VOPR-style): every parameter derived from the seed.
    Check(CheckArgs),
    /// Produces software profiles: `measured` (this machine's timings of our code) and each
    /// paper prototype's (fitted to one published number).
    #[command(subcommand)]
    Calibrate(calibrate::CalibrateCommand),
    /// Lists the simulator's built-in hardware and software profiles.
    Profiles,
    /// Runs one node of a tcp cluster (`--runtime tcp`): the process the cluster file gives
    /// this id, until the run's warm-up and window are over; writes its report.
    Node(NodeArgs),
    /// Checks a delivery log (processes.csv, multicasts.csv, deliveries.csv in one directory)
    /// against the five atomic multicast properties; exits non-zero on a violation.
    Verify(VerifyArgs),
    /// Prints the region table a tcp run of these `run` arguments agrees on (an atomic
    /// multicast protocol's): its digest, and every node's role and region lengths. A hand-driven
    /// peer (`transport::runtime::tcp::peer::RawPeer`) declares them in its hello, so a test can
    /// play a node of a running cluster, as an insider holding the secret could.
    #[command(hide = true)]
    RegionTable(Box<RunArgs>),
}

/// `run --protocol`: every registered protocol.
fn run_protocols() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        protocols::REGISTRY
            .iter()
            .map(|e| clap::builder::PossibleValue::new(e.name).help(e.about)),
    )
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The protocol.
    #[arg(long, default_value = "ramcast", value_parser = run_protocols())]
    protocol: String,
    /// Groups (1..=64) [default: 1; for tram, the tree's groups].
    #[arg(long)]
    groups: Option<usize>,
    /// Replicas per group, 2f+1.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Closed-loop clients.
    #[arg(long, default_value_t = 1)]
    clients: usize,
    /// Message size: bytes, or with a unit KB, MB, GB (powers of 1024) [default: 64 B; rdmc:
    /// 256 MB].
    #[arg(long, value_parser = experiment::parse_bytes)]
    size: Option<usize>,
    /// Destinations per message: single, all, random:K, random:A..B (A to B groups, the count
    /// drawn per message: single- and multi-group traffic mixed), group:G, or adjacent:K (K
    /// groups adjacent in the tree, tram).
    #[arg(long, default_value = "single")]
    dest: multicast::DestPolicy,
    /// Measured time (simulated on sim, wall on local): 10s, 500ms, 200us.
    #[arg(long, default_value = "10ms", value_parser = experiment::parse_duration)]
    duration: Nanos,
    /// Warm-up before the measurement [default: a tenth of --duration].
    #[arg(long, value_parser = experiment::parse_duration)]
    warmup: Option<Nanos>,
    /// Runtime.
    #[arg(long, value_enum, default_value = "sim")]
    runtime: RuntimeKind,
    /// Hardware profile (sim; on local only its NIC limits are used) [default: each paper's
    /// testbed: xl170-cx4 for ramcast, r320-cx3 for tram, fractus-100g for rdmc, lan-1g for
    /// ridge].
    #[arg(long)]
    profile: Option<String>,
    /// Software profile (sim): what the protocol's work costs beyond posts, completions and
    /// polls - a built-in name (none, measured, ramcast-java, tram-cpp; `harness profiles`) or a .toml path.
    #[arg(long, default_value = DEFAULT_SOFTWARE)]
    software: String,
    /// Write discipline (sim), overriding the software profile's for every process: collective
    /// (post back to back, never wait for a completion), batch (post back to back, then await
    /// them all), each (await every completion before the next post; TRAM Fig. 2's baseline) or
    /// window:N (at most N requests outstanding) [default: the software profile's].
    #[arg(long)]
    posting: Option<transport::runtime::sim::Discipline>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Bytes per message slot of a buffer (header, message, canary), a multiple of 8
    /// [default: the message plus its metadata, at least 1 KiB].
    #[arg(long)]
    slot_bytes: Option<usize>,
    /// Slots per client buffer (tram: per HM buffer).
    #[arg(long, default_value_t = 16)]
    slots: usize,
    /// OS threads for the local runtime [default: available cores].
    #[arg(long)]
    threads: Option<usize>,
    /// Local runtime: remote ops complete on a NIC thread, asynchronously and in a random order
    /// across queue pairs (each queue pair in post order), instead of synchronously at post.
    /// Exposes a protocol to the in-flight reorderings of a real NIC.
    #[arg(long)]
    nic_thread: bool,
    /// Write summary.csv and latency_cdf.csv into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the delivery log (processes.csv, multicasts.csv, deliveries.csv) into this
    /// directory and check it against the five properties.
    #[arg(long)]
    log: Option<PathBuf>,
    /// tcp runtime: a fault, repeatable, times from the nodes' start. On a node process:
    /// kill:NODE@TIME (SIGKILL), pause:NODE@TIME+DURATION (SIGSTOP, then SIGCONT). On the
    /// network, injected by the nodes' fault layer (sends held back in order, as a reliable
    /// connection retransmits; nothing is lost): delay:FROM>TO@TIME+DURATION=DELAY,
    /// loss:FROM>TO@TIME+DURATION=PROBABILITY (a lost send arrives 1 ms late),
    /// partition:SIDE|SIDE@TIME+DURATION (both ways; nothing passes until it heals). Nodes:
    /// ids separated by commas, or * for all (in a partition, all not on the other side), as
    /// the run's `nodes:` line lists them (servers first, group by group, then clients).
    #[arg(long)]
    fault: Vec<cluster::ProcessFault>,
    /// tcp runtime: where the nodes run, a cluster file of `[[node]]` entries in process-id
    /// order, each with `addr = "host:port"` and optionally `exec = [...]`, the command prefix
    /// that starts it there (`["ip", "netns", "exec", "ns3"]`, `["ssh", "host3"]`) [default:
    /// every node a child process on a free loopback port].
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// Run even when the run's totals exceed what this machine has. Before anything is
    /// allocated, a run is refused if its regions need more memory than is available
    /// (MemAvailable, the memory cgroup's limit), if it starts more threads or processes than
    /// the limits allow (`ulimit -u`, kernel.threads-max, kernel.pid_max), or, on tcp, if a
    /// node process would open more sockets than `ulimit -n` or accept more connections than
    /// the runtime's cap; the refusal says which flags to lower. The simulator allocates a
    /// large region's pages as they are written: a run that touches few of them fits in less.
    #[arg(long)]
    ignore_limits: bool,
    #[command(flatten)]
    tram: protocols::tram::Flags,
    #[command(flatten)]
    ridge: protocols::ridge::Flags,
    #[command(flatten)]
    rdmc: protocols::rdmc::Flags,
    #[command(flatten)]
    heron: protocols::heron::Flags,
    /// The flags given on the command line (clap ids), for refusing those the protocol does
    /// not take ([`flags`]); filled by [`parse`].
    #[arg(skip)]
    given: Vec<String>,
}

#[derive(Args, Debug)]
struct NodeArgs {
    /// The cluster file: every node's address and role, and the run they all execute.
    #[arg(long)]
    cluster: PathBuf,
    /// This node's id (its entry in the cluster file, from 0).
    #[arg(long)]
    id: usize,
    /// Where to write this node's report (and its part of the delivery log, beside it)
    /// [default: node-ID.report].
    #[arg(long)]
    report: Option<PathBuf>,
    /// Read the cluster secret from standard input (one line), as `harness run --runtime tcp`
    /// hands it down, instead of from the cluster file; if the file has one too, they must
    /// agree.
    #[arg(long)]
    secret_stdin: bool,
}

#[derive(Args, Debug)]
struct FigureArgs {
    /// The figure.
    #[arg(value_parser = protocols::figure_names())]
    name: String,
    /// Output directory [default: results/NAME, NAME the figure; results-quick/NAME with
    /// --quick].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Fewer points and shorter runs: a smoke test, not for publication. Its summaries say so
    /// in their titles, and it writes under results-quick/ unless --out says otherwise.
    #[arg(long)]
    quick: bool,
    /// Make it only under this software profile (repeatable): a built-in name or a .toml path
    /// [default: none, measured and the paper prototype's, each in OUT/NAME/PROFILE].
    #[arg(long)]
    software: Vec<String>,
    #[command(flatten)]
    jobs: PointJobs,
}

#[derive(Args, Debug)]
struct ReproduceArgs {
    /// Every figure.
    #[arg(long, conflicts_with = "names")]
    all: bool,
    /// The figures (the names `harness figure` takes).
    #[arg(value_parser = protocols::figure_names(), required_unless_present = "all")]
    names: Vec<String>,
    /// Results directory: each figure goes to OUT/NAME, the index to OUT/README.md [default:
    /// results; results-quick with --quick].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Fewer points and shorter runs: a smoke test, not for publication. Its summaries say so
    /// in their titles, and it writes under results-quick/ unless --out says otherwise.
    #[arg(long)]
    quick: bool,
    /// Make it only under this software profile (repeatable): a built-in name or a .toml path
    /// [default: none, measured and the paper prototype's, each in OUT/NAME/PROFILE].
    #[arg(long)]
    software: Vec<String>,
    #[command(flatten)]
    jobs: PointJobs,
}

/// `--jobs` of `figure` and `reproduce`.
#[derive(Args, Debug)]
struct PointJobs {
    /// Worker threads for the figures' points (default: every core). Fewer bound the memory:
    /// each point running holds a whole simulation (heron-table5.1's hold several GB on 2
    /// threads). The outputs are the same on any number.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
}

impl PointJobs {
    /// The pool the points run on.
    fn pool(&self) -> Result<rayon::ThreadPool, String> {
        figure::worker_pool(self.jobs.map(|j| j as usize))
    }
}

#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  harness compare --protocols ramcast,tram:breadth,tram:depth --dest random:4 --size 64\n\n\
    Every protocol gets the same seed, groups, replicas and client processes (so the same \
    destination draws), message size and profile. Outputs: OUT/NAME/{runs.csv, latency_cdf.csv, \
    compare.png, summary.md}."
)]
struct CompareArgs {
    /// The protocols, comma-separated: ramcast, tram (the base tree) or tram:TREE (base,
    /// breadth, depth, simple, or a parent array such as [-1,0,0,1]), ridge or
    /// ridge:DISSEMINATION (ridge, ring, direct); or Heron over several multicasts,
    /// heron:ramcast,heron:ridge (TPC-C; --groups are its partitions, --dest and --size do not
    /// apply).
    #[arg(long, value_delimiter = ',', required = true)]
    protocols: Vec<String>,
    /// Groups; TRAM contenders' trees must have this many [default: 8, the TRAM trees'].
    #[arg(long, default_value_t = 8)]
    groups: usize,
    /// Replicas per group, 2f+1.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Destinations per message: single, all, random:K, random:A..B (A to B groups, the count
    /// drawn per message), group:G, or adjacent:K (K groups adjacent in the tree; RamCast
    /// draws them from the first TRAM contender's tree).
    /// [default: random:2; not for heron, whose application decides].
    #[arg(long)]
    dest: Option<multicast::DestPolicy>,
    /// Message size: bytes, or with a unit KB, MB (powers of 1024) [default: 64; not for
    /// heron].
    #[arg(long, value_parser = experiment::parse_bytes)]
    size: Option<usize>,
    /// Simulated time per throughput point, after a 10% warm-up (the 1-client latency run
    /// gets twice as long) [default: 2ms; 20ms for heron, twenty of Ridge's Delta].
    #[arg(long, value_parser = experiment::parse_duration)]
    duration: Option<Nanos>,
    /// The saturation sweep (clients 1, 2, 4, ...) stops here even if throughput still grows.
    #[arg(long, default_value_t = compare::DEFAULT_MAX_CLIENTS)]
    max_clients: usize,
    /// Ridge contenders' Delta: an idle ensemble's coordinator proposes a null message after
    /// this long, and a learner waits up to about this long for an idle ensemble, so it bounds
    /// Ridge's latency at light load [default: 1ms, the paper's]. The summary states it.
    #[arg(long, value_parser = experiment::parse_duration)]
    delta: Option<Nanos>,
    /// Hardware profile, the same for every protocol [default: r320-cx3, the testbed on which
    /// the TRAM paper compares TRAM with RamCast; xl170-cx4 for heron, the thesis's].
    #[arg(long)]
    profile: Option<String>,
    /// Software profile, the same for every protocol: a built-in name (none, measured, ramcast-java, tram-cpp; `harness profiles`) or a .toml path.
    #[arg(long, default_value = DEFAULT_SOFTWARE)]
    software: String,
    /// Seed of every run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Directory name under --out [default: from the workload, e.g. random2-64B-8x3].
    #[arg(long)]
    name: Option<String>,
    /// Where comparisons go.
    #[arg(long, default_value = "results/compare")]
    out: PathBuf,
}

#[derive(Args, Debug)]
struct VerifyArgs {
    /// Directory holding processes.csv, multicasts.csv and deliveries.csv.
    #[arg(long)]
    log: PathBuf,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// ib_write_lat / ib_write_bw equivalent: write ping-pong latency (half round trip) and
    /// streaming write bandwidth, per message size.
    Transport(TransportArgs),
    /// Simulator speed: simulated events per second on an all-to-all ping workload.
    Sim(SimSpeedArgs),
    /// What an access change (fast: one region per peer; slow: a region among several) and a
    /// reconnect after a refused write cost on a runtime: on `verbs`, queue-pair flags against
    /// re-registration, the numbers TRAM Table 1 and RamCast's leader change depend on.
    Access(AccessArgs),
    /// RDMC over the tcp runtime beside Open MPI's MPI_Bcast over TCP, same sizes and
    /// process counts, on this host, in one run (needs Open MPI: `scripts/bench-deps.sh` installs it).
    Bcast(BcastArgs),
}

#[derive(Args, Debug)]
struct AccessArgs {
    /// Runtime to measure.
    #[arg(long, value_enum, default_value = "sim")]
    runtime: TransportRuntime,
    /// Hardware profile (sim only): a built-in name or a .toml path.
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// Revoke-refuse-reconnect-grant rounds per path.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    rounds: u64,
    /// Seed of the runtime's processes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args, Debug)]
struct BcastArgs {
    /// Process counts (root included), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16")]
    nodes: Vec<usize>,
    /// Message sizes, comma-separated, with units (KB, MB, GB).
    #[arg(long, value_delimiter = ',', value_parser = experiment::parse_bytes, default_value = "1MB,16MB,256MB")]
    sizes: Vec<usize>,
    /// Timed broadcasts per point, for each system, after one untimed warm-up broadcast (RDMC:
    /// all in one run).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
    repeat: u64,
    /// RDMC's algorithm.
    #[arg(long, default_value = "pipeline")]
    algorithm: rdmc::Algorithm,
    /// RDMC's block size.
    #[arg(long, value_parser = experiment::parse_bytes, default_value = "1MB")]
    block_size: usize,
    /// Skip points whose receive buffers and root's messages ((nodes + repeat + 1) x size)
    /// exceed this.
    #[arg(long, value_parser = experiment::parse_bytes, default_value = "2GB")]
    max_total: usize,
    /// Write one CSV row per point to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RuntimeKind {
    /// Deterministic discrete-event simulator with a hardware profile.
    Sim,
    /// Real threads and shared memory in this process.
    Local,
    /// One OS process per node, RDMA semantics over TCP (on loopback unless `harness node`
    /// runs the nodes of a cluster file on several hosts).
    Tcp,
    /// Every node a thread of this process on a real RDMA device (RDMA_DEVICE, RDMA_PORT,
    /// RDMA_GID_INDEX name it; a build with `--features verbs`); RamCast, TRAM, Ridge, RDMC.
    Verbs,
}

/// The runtimes `bench transport` and `calibrate hardware` measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TransportRuntime {
    /// Deterministic discrete-event simulator with a hardware profile.
    Sim,
    /// Real threads and shared memory in this process.
    Local,
    /// Two nodes of the tcp runtime as threads of this process, over loopback.
    Tcp,
    /// Two nodes on a real RDMA device (RDMA_DEVICE, RDMA_PORT, RDMA_GID_INDEX name it; a
    /// build with `--features verbs`), as perftest measures it.
    Verbs,
}

#[derive(Args, Debug)]
struct TransportArgs {
    /// Runtime to measure.
    #[arg(long, value_enum, default_value = "sim")]
    runtime: TransportRuntime,
    /// Hardware profile (sim only): a built-in name (see `harness profiles`) or a .toml path.
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// Message sizes in bytes, comma-separated (1 .. 8388608).
    #[arg(long, value_delimiter = ',', value_parser = parse_size, conflicts_with = "all")]
    sizes: Vec<usize>,
    /// Every power of two from 2 B to 8 MiB, as perftest's -a.
    #[arg(long, short = 'a')]
    all: bool,
    /// Measured iterations per size (per test).
    #[arg(long, short = 'n', default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    iterations: u64,
    /// Warm-up round trips before latency measurement [default: iterations / 10].
    #[arg(long)]
    warmup: Option<u64>,
    /// Outstanding writes in the bandwidth test, as perftest's --tx-depth.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    tx_depth: u64,
    /// Signal one write in this many in the bandwidth test, as perftest's --cq-mod.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    cq_mod: u64,
    /// Seed (sim); also seeds the local runtime's process streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// OS threads for the local runtime [default: available cores].
    #[arg(long)]
    threads: Option<usize>,
    /// Write one CSV row per size to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// tcp runtime: also measure a raw TCP request-response and stream of each size with
    /// qperf (Debian's package) on loopback in the same run, and print both side by side.
    #[arg(long)]
    qperf: bool,
    /// Plot latency and bandwidth against size into this PNG.
    #[arg(long)]
    png: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct SimSpeedArgs {
    /// Processes, each pinging all others.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(2..=4096))]
    processes: u64,
    /// Simulated time per repetition, microseconds.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000_000))]
    duration_us: u64,
    /// Repetitions (the best and the median are reported).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
    repeat: u64,
    /// Hardware profile.
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// What to check.
    #[arg(long, default_value = check::CHAOS, value_parser = check::targets())]
    protocol: String,
    /// Number of seeds to run, starting at --first-seed.
    #[arg(long, default_value_t = 100, conflicts_with = "seed", value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// First seed of the sweep.
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Run exactly this seed, printing the run as one line (its parameters and faults, what
    /// --replay takes).
    #[arg(long)]
    seed: Option<u64>,
    /// Run exactly the run this line describes (`seed=N key=value ... fault=...`, as `check`
    /// prints a run): the same parameters and faults whatever later changes do to how seeds
    /// derive runs. The protocols, not chaos.
    #[arg(long, value_name = "LINE", conflicts_with_all = ["seed", "seeds", "first_seed", "shard", "report"])]
    replay: Option<String>,
    /// Keep the delivery logs of failing runs under this directory (ramcast).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Fix the number of processes instead of drawing it from the seed (chaos).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=1024))]
    processes: Option<u64>,
    /// Run every seed twice and report the first event where the traces differ.
    #[arg(long)]
    check_determinism: bool,
    /// Hardware profile [default: the protocol's testbed, as `harness run` uses: xl170-cx4 for
    /// ramcast and heron, r320-cx3 for tram and chaos, fractus-100g for rdmc, lan-1g for ridge].
    #[arg(long)]
    profile: Option<String>,
    /// Software profile: what the protocol's work costs (protocols only) - a built-in name
    /// (none, measured, ramcast-java, tram-cpp; `harness profiles`) or a .toml path.
    #[arg(long, default_value = DEFAULT_SOFTWARE)]
    software: String,
    /// Where the seeds run: `sim` (deterministic, replayable) or `local` (real threads and
    /// shared memory, not deterministic: the seed's workload and schedule stretched to wall
    /// time by --stretch, its crashes and pauses applied by a thread of their own, remote ops
    /// on a NIC thread that reorders queue pairs and yields between the words of multi-word
    /// ops; slowdowns, delayed links and revokes are the simulator's alone). Every protocol;
    /// not chaos, which checks the simulator's own model.
    #[arg(long, value_enum, default_value_t = CheckRuntime::Sim)]
    runtime: CheckRuntime,
    /// With --runtime local: wall nanoseconds per simulated nanosecond of the seed's schedule,
    /// phases and timeouts.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    stretch: u64,
    /// Which seeds run with torn landings: the simulator carries a write or read that spans
    /// several 8-byte words out in pieces at distinct instants (words or cache lines,
    /// ascending or any order, over a window drawn per seed), interleaved with everything
    /// else, as RDMA allows. `drawn`: half the seeds; `always`; `never` (every op lands at
    /// one instant). Protocols only, not chaos.
    #[arg(long, value_enum, default_value_t = sweep::Torn::Drawn)]
    torn: sweep::Torn,
    /// Print every seed's derived parameters.
    #[arg(long)]
    verbose: bool,
    /// Worker threads for the protocols' sweeps, not chaos (default: every core). The report
    /// is the same on any number: runs are reported in seed order.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Run only shard K of N: the seeds first-seed+K, first-seed+K+N, ... (K from 0). N
    /// machines running shards 0/N .. N-1/N cover the sweep once, for a cluster scheduler.
    #[arg(long, value_parser = parse_shard, conflicts_with = "seed")]
    shard: Option<(u64, u64)>,
    /// Also write the sweep's result to this file (TOML), for --merge (the protocols' sweeps,
    /// not chaos).
    #[arg(long, conflicts_with = "seed")]
    report: Option<PathBuf>,
    /// Sum the --report files of a sweep's shards and print the sweep's report (every other
    /// flag is taken from the files).
    #[arg(long, num_args = 1.., conflicts_with_all = ["seed", "shard", "report"])]
    merge: Vec<PathBuf>,
}

/// Where `harness check` runs its seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CheckRuntime {
    /// The deterministic simulator.
    Sim,
    /// The local runtime's threads.
    Local,
}

/// Parses `K/N` with `K < N`.
fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("shard `{s}` must be K/N with 0 <= K < N, e.g. 0/4");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k < n {
        Ok((k, n))
    } else {
        Err(bad())
    }
}

fn parse_size(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a size in bytes"))?;
    if n == 0 || n > MAX_BYTES {
        return Err(format!(
            "size {n} is out of range: sizes must be between 1 and {MAX_BYTES} bytes (8 MiB)"
        ));
    }
    Ok(n)
}

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
        Command::Bench(BenchCommand::Bcast(a)) => bench::bcast::run(&a),
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

/// Parses a command line, noting which `run` flags it gives ([`RunArgs::given`]).
fn parse<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    let m = Cli::command().try_get_matches_from(argv)?;
    let mut cli = Cli::from_arg_matches(&m)?;
    if let (Command::Run(a) | Command::RegionTable(a), Some((_, sub))) =
        (&mut cli.command, m.subcommand())
    {
        a.given = flags::given(sub);
    }
    Ok(cli)
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
