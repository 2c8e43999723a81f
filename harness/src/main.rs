//! `harness`: the command researchers run. Transport microbenchmarks on any runtime, simulator
//! speed, and seeded checks under faults; later, protocol experiments and paper figures.

#![forbid(unsafe_code)]
#![allow(
    clippy::disallowed_methods,
    reason = "the CLI measures and reports the wall-clock time of runs, sweeps and figures"
)]

mod bench;
mod check_chaos;
mod compare;
mod experiment;
mod figure;
mod plot;
mod protocols;
mod reproduce;
mod stats;
mod sweep;
mod testbed;

use bench::transport::{self as perf, Row, Runtime, MAX_BYTES};
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use transport::runtime::local::{thread_count, LocalConfig};
use transport::runtime::sim::{Profile, DEFAULT_PROFILE};
use transport::Nanos;

/// The git revision this binary was built from.
const COMMIT: &str = env!("HARNESS_GIT_REV");

#[derive(Parser, Debug)]
#[command(
    name = "harness",
    version,
    about = "Workbench for RDMA ordering and replication protocols: benchmarks, checks, experiments.",
    long_about = "Workbench for RDMA ordering and replication protocols.\n\n\
        Protocols run unchanged on a deterministic simulator (`sim`, calibrated hardware profiles) \
        or on real threads in one process (`local`). Every run prints its seed, commit and \
        parameters first."
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
    /// Reproduces several paper figures (--all: every one), prints each one's wall time and
    /// verdicts, and rewrites the results index (OUT/README.md).
    Reproduce(ReproduceArgs),
    /// One workload against several protocols side by side: latency CDFs at 1 client and at
    /// saturation, throughput-latency curves, CSV, PNG and a summary table.
    Compare(CompareArgs),
    /// Seeded checks under random faults (VOPR-style): every parameter derived from the seed.
    Check(CheckArgs),
    /// Lists the simulator's built-in hardware profiles.
    Profiles,
    /// Checks a delivery log (processes.csv, multicasts.csv, deliveries.csv in one directory)
    /// against the five atomic multicast properties; exits non-zero on a violation.
    Verify(VerifyArgs),
}

/// The bulk multicast protocol `run` also takes (not an atomic multicast: no registry entry).
const RDMC: &str = "rdmc";

/// `run --protocol`: every registered atomic multicast protocol, and rdmc.
fn run_protocols() -> clap::builder::PossibleValuesParser {
    let mut names: Vec<clap::builder::PossibleValue> = protocols::REGISTRY
        .iter()
        .map(|e| clap::builder::PossibleValue::new(e.name).help(e.about))
        .collect();
    names.push(clap::builder::PossibleValue::new(RDMC).help(
        "RDMC (Behrens et al., 2016): bulk multicast of large messages; takes --algorithm, \
         --nodes, --block-size, --senders, --racks, --messages",
    ));
    clap::builder::PossibleValuesParser::new(names)
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The protocol.
    #[arg(long, default_value = "ramcast", value_parser = run_protocols())]
    protocol: String,
    /// Groups (1..=64) [default: 1; for tram, the tree's groups].
    #[arg(long)]
    groups: Option<usize>,
    /// The overlay tree (tram): base, breadth, depth, simple, or a parent array such as
    /// [-1,0,0,1] (-1 marks the root) [default: base].
    #[arg(long)]
    tree: Option<multicast::Tree>,
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
    /// RDMC dissemination algorithm: sequential, chain, tree, pipeline, hybrid-chain,
    /// hybrid-pipeline [default: pipeline].
    #[arg(long)]
    algorithm: Option<rdmc::Algorithm>,
    /// RDMC group size, root included [default: 4].
    #[arg(long)]
    nodes: Option<usize>,
    /// RDMC block size; the last block of a message may be shorter [default: 1MB].
    #[arg(long, value_parser = experiment::parse_bytes)]
    block_size: Option<usize>,
    /// RDMC concurrent senders: this many groups over the same nodes, node i the root of group
    /// i, all sending at once [default: 1].
    #[arg(long)]
    senders: Option<usize>,
    /// RDMC racks for the hybrid algorithms: the nodes split into this many contiguous ranges
    /// [default: 1].
    #[arg(long)]
    racks: Option<usize>,
    /// RDMC messages each root submits at time zero, sent in order [default: 1].
    #[arg(long)]
    messages: Option<usize>,
    /// RDMC: give up after this long, simulated on sim, wall on local [default: 600s].
    #[arg(long, value_parser = experiment::parse_duration)]
    timeout: Option<Nanos>,
    /// Destinations per message: single, all, random:K, group:G, or adjacent:K (K groups
    /// adjacent in the tree, tram).
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
    /// testbed: xl170-cx4 for ramcast, r320-cx3 for tram, fractus-100g for rdmc].
    #[arg(long)]
    profile: Option<String>,
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
    /// Slots of each group's circular LOG (tram).
    #[arg(long, default_value_t = 64)]
    log_slots: usize,
    /// OS threads for the local runtime [default: available cores].
    #[arg(long)]
    threads: Option<usize>,
    /// Write summary.csv and latency_cdf.csv into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the delivery log (processes.csv, multicasts.csv, deliveries.csv) into this
    /// directory and check it against the five properties.
    #[arg(long)]
    log: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FigureName {
    /// RamCast Fig. 4: throughput and latency against message size, one group.
    #[value(name = "ramcast-fig4")]
    RamcastFig4,
    /// RamCast Fig. 5: single-group and all-groups messages with 1, 2, 4, 8 groups.
    #[value(name = "ramcast-fig5")]
    RamcastFig5,
    /// TRAM Fig. 5: uniform random destinations, trees base/breadth/depth against RamCast.
    #[value(name = "tram-fig5")]
    TramFig5,
    /// TRAM Fig. 6: destinations adjacent in the tree ("genuine" workload).
    #[value(name = "tram-fig6")]
    TramFig6,
    /// TRAM Fig. 7: payload 64 B .. 16 KB to all 8 groups.
    #[value(name = "tram-fig7")]
    TramFig7,
    /// TRAM Fig. 8: the simple tree with 1..7 replicas per group.
    #[value(name = "tram-fig8")]
    TramFig8,
    /// TRAM Table 1: failover latency, leader change in all 8 groups at once, three times.
    #[value(name = "tram-table1")]
    TramTable1,
    /// RDMC Fig. 4/5: time breakdown of one 256 MB transfer to a group of 4 (stampede-fdr).
    #[value(name = "rdmc-fig4")]
    RdmcFig4,
    /// RDMC Fig. 6: bandwidth against block size, 4..256 MB, group of 4 (stampede-fdr).
    #[value(name = "rdmc-fig6")]
    RdmcFig6,
    /// RDMC Figs. 7-9: pipeline bandwidth against group size on sierra-qdr (to 512 nodes),
    /// stampede-fdr and fractus-100g.
    #[value(name = "rdmc-fig7-9")]
    RdmcFig7_9,
    /// RDMC Figs. 10-11: sequential, chain, tree and pipeline against each other, 8 and 256 MB.
    #[value(name = "rdmc-fig10-11")]
    RdmcFig10_11,
    /// RDMC Fig. 12: latency against group size, pipeline and sequential (sierra-qdr).
    #[value(name = "rdmc-fig12")]
    RdmcFig12,
    /// RDMC Figs. 13-14: concurrent senders, each member a root (fractus-100g).
    #[value(name = "rdmc-fig13-14")]
    RdmcFig13_14,
    /// RDMC Fig. 15: 1-byte messages per second against group size (fractus-100g).
    #[value(name = "rdmc-fig15")]
    RdmcFig15,
}

#[derive(Args, Debug)]
struct FigureArgs {
    /// The figure.
    #[arg(value_enum)]
    name: FigureName,
    /// Output directory [default: results/NAME, NAME the figure].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Fewer points and shorter runs (a smoke test, not for publication).
    #[arg(long)]
    quick: bool,
}

#[derive(Args, Debug)]
struct ReproduceArgs {
    /// Every figure.
    #[arg(long, conflicts_with = "names")]
    all: bool,
    /// The figures (the names `harness figure` takes).
    #[arg(value_enum, required_unless_present = "all")]
    names: Vec<FigureName>,
    /// Results directory: each figure goes to OUT/NAME, the index to OUT/README.md.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Fewer points and shorter runs (a smoke test, not for publication).
    #[arg(long)]
    quick: bool,
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
    /// breadth, depth, simple, or a parent array such as [-1,0,0,1]).
    #[arg(long, value_delimiter = ',', required = true)]
    protocols: Vec<compare::Contender>,
    /// Groups; TRAM contenders' trees must have this many [default: 8, the TRAM trees'].
    #[arg(long, default_value_t = 8)]
    groups: usize,
    /// Replicas per group, 2f+1.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Destinations per message: single, all, random:K, group:G, or adjacent:K (K groups
    /// adjacent in the tree; RamCast draws them from the first TRAM contender's tree).
    #[arg(long, default_value = "random:2")]
    dest: multicast::DestPolicy,
    /// Message size: bytes, or with a unit KB, MB (powers of 1024).
    #[arg(long, default_value = "64", value_parser = experiment::parse_bytes)]
    size: usize,
    /// Simulated time per throughput point, after a 10% warm-up (the 1-client latency run
    /// gets twice as long).
    #[arg(long, default_value = "2ms", value_parser = experiment::parse_duration)]
    duration: Nanos,
    /// The saturation sweep (clients 1, 2, 4, ...) stops here even if throughput still grows.
    #[arg(long, default_value_t = 256)]
    max_clients: usize,
    /// Hardware profile, the same for every protocol (r320-cx3 is the testbed on which the
    /// TRAM paper compares TRAM with RamCast).
    #[arg(long, default_value = testbed::TRAM)]
    profile: String,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RuntimeKind {
    /// Deterministic discrete-event simulator with a hardware profile.
    Sim,
    /// Real threads and shared memory in this process.
    Local,
}

#[derive(Args, Debug)]
struct TransportArgs {
    /// Runtime to measure.
    #[arg(long, value_enum, default_value = "sim")]
    runtime: RuntimeKind,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CheckProtocol {
    /// The transport model itself: random ops under random faults, checked against the model.
    Chaos,
    /// RamCast under crashes, client crashes, false suspicions, slow processes and link delays.
    Ramcast,
    /// TRAM on random trees under the same faults, leaders of several groups crashing at once.
    Tram,
    /// RDMC: random groups, algorithms and messages; members (roots too) crash mid-transfer;
    /// integrity, order, failure upcalls to every survivor, nobody hangs.
    Rdmc,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// What to check.
    #[arg(long, value_enum, default_value = "chaos")]
    protocol: CheckProtocol,
    /// Number of seeds to run, starting at --first-seed.
    #[arg(long, default_value_t = 100, conflicts_with = "seed", value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// First seed of the sweep.
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Run exactly this seed, printing its derived parameters (replay a failure).
    #[arg(long)]
    seed: Option<u64>,
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
    /// ramcast, r320-cx3 for tram and chaos, fractus-100g for rdmc].
    #[arg(long)]
    profile: Option<String>,
    /// Print every seed's derived parameters.
    #[arg(long)]
    verbose: bool,
    /// Worker threads for ramcast, tram and rdmc sweeps (default: every core). The report is
    /// the same on any number: runs are reported in seed order.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Run only shard K of N: the seeds first-seed+K, first-seed+K+N, ... (K from 0). N
    /// machines running shards 0/N .. N-1/N cover the sweep once, for a cluster scheduler.
    #[arg(long, value_parser = parse_shard, conflicts_with = "seed")]
    shard: Option<(u64, u64)>,
    /// Also write the sweep's result to this file (TOML), for --merge (ramcast, tram, rdmc).
    #[arg(long, conflicts_with = "seed")]
    report: Option<PathBuf>,
    /// Sum the --report files of a sweep's shards and print the sweep's report (every other
    /// flag is taken from the files).
    #[arg(long, num_args = 1.., conflicts_with_all = ["seed", "shard", "report"])]
    merge: Vec<PathBuf>,
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
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(BenchCommand::Transport(a)) => bench_transport(a),
        Command::Bench(BenchCommand::Sim(a)) => bench_sim(a),
        Command::Run(a) => run_experiment(*a),
        Command::Figure(a) => run_figure(a),
        Command::Reproduce(a) => run_reproduce(a),
        Command::Compare(a) => run_compare(a),
        Command::Check(a) => run_check(a),
        Command::Profiles => list_profiles(),
        Command::Verify(a) => verify_log(a),
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
    }
    Ok(ExitCode::SUCCESS)
}

fn progress_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} {msg}")
            .expect("valid template"),
    );
    bar
}

fn bench_transport(a: TransportArgs) -> Result<ExitCode, String> {
    let mut sizes = if a.all {
        perf::all_sizes()
    } else {
        a.sizes.clone()
    };
    if sizes.is_empty() {
        sizes = vec![64];
    }
    let warmup = a.warmup.unwrap_or(a.iterations / 10);
    let runtime = match a.runtime {
        RuntimeKind::Sim => Runtime::Sim {
            profile: Profile::load(&a.profile).map_err(|e| e.to_string())?,
            seed: a.seed,
        },
        RuntimeKind::Local => {
            if a.threads == Some(0) {
                return Err("--threads must be at least 1".into());
            }
            Runtime::Local {
                cfg: LocalConfig {
                    threads: a.threads.unwrap_or(0),
                    seed: a.seed,
                    ..LocalConfig::default()
                },
            }
        }
    };
    let threads = match &runtime {
        Runtime::Local { cfg } => thread_count(cfg, 2),
        Runtime::Sim { .. } => 1,
    };
    println!(
        "harness bench transport: runtime={} seed={} commit={} iterations={} warmup={} tx_depth={} cq_mod={} threads={}",
        runtime.name(),
        a.seed,
        COMMIT,
        a.iterations,
        warmup,
        a.tx_depth,
        a.cq_mod,
        threads
    );
    if let Runtime::Sim { profile, .. } = &runtime {
        println!("{}", profile.describe());
    }
    let bar = progress_bar(sizes.len() as u64);
    let mut rows = Vec::new();
    for &bytes in &sizes {
        bar.set_message(format!("{bytes} B"));
        let params = perf::Params {
            bytes,
            warmup,
            iterations: a.iterations,
            tx_depth: a.tx_depth,
            cq_mod: a.cq_mod,
        };
        let (lat, bw_avg, bw_peak, rate) = perf::measure(&runtime, params)?;
        rows.push(Row {
            runtime: runtime.name().to_string(),
            profile: runtime.profile_name(),
            bytes,
            iterations: a.iterations,
            t_min_us: lat.min,
            t_max_us: lat.max,
            t_typical_us: lat.typical,
            t_avg_us: lat.avg,
            t_stdev_us: lat.stdev,
            t_p99_us: lat.p99,
            t_p999_us: lat.p999,
            bw_peak_gbps: bw_peak,
            bw_avg_gbps: bw_avg,
            msg_rate_mpps: rate,
            warmup,
            tx_depth: a.tx_depth,
            cq_mod: a.cq_mod,
            inline: bytes <= runtime.inline_max(),
            threads,
            seed: a.seed,
            commit: COMMIT.to_string(),
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    print_tables(&rows);
    if let Some(path) = &a.csv {
        write_csv(path, &rows)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &a.png {
        let caption = format!(
            "RDMA write, runtime {} profile {} ({})",
            runtime.name(),
            runtime.profile_name(),
            COMMIT
        );
        let lat = plot::Series {
            label: "t_typical (half round trip)".into(),
            points: rows
                .iter()
                .map(|r| (r.bytes as f64, r.t_typical_us))
                .collect(),
        };
        let bw = plot::Series {
            label: "average bandwidth".into(),
            points: rows
                .iter()
                .map(|r| (r.bytes as f64, r.bw_avg_gbps))
                .collect(),
        };
        let panels = [
            plot::Panel {
                title: "Write latency".into(),
                x_label: "message size (bytes)".into(),
                y_label: "latency (us, log scale)".into(),
                log_y: true,
                x: plot::XScale::Bytes,
                series: vec![lat],
            },
            plot::Panel {
                title: "Write bandwidth".into(),
                x_label: "message size (bytes)".into(),
                y_label: "bandwidth (Gb/s)".into(),
                log_y: false,
                x: plot::XScale::Bytes,
                series: vec![bw],
            },
        ];
        create_parent(path)?;
        plot::draw_png(path, &caption, &panels)?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn print_tables(rows: &[Row]) {
    let line = "-".repeat(120);
    println!("{line}");
    println!("                    RDMA_Write Latency Test");
    println!(
        " {:<8} {:<12} {:>12} {:>12} {:>16} {:>12} {:>14} {:>22} {:>24}",
        "#bytes",
        "#iterations",
        "t_min[usec]",
        "t_max[usec]",
        "t_typical[usec]",
        "t_avg[usec]",
        "t_stdev[usec]",
        "99% percentile[usec]",
        "99.9% percentile[usec]"
    );
    for r in rows {
        println!(
            " {:<8} {:<12} {:>12.2} {:>12.2} {:>16.2} {:>12.2} {:>14.2} {:>22.2} {:>24.2}",
            r.bytes,
            r.iterations,
            r.t_min_us,
            r.t_max_us,
            r.t_typical_us,
            r.t_avg_us,
            r.t_stdev_us,
            r.t_p99_us,
            r.t_p999_us
        );
    }
    println!("{line}");
    println!("                    RDMA_Write BW Test");
    println!(
        " {:<8} {:<12} {:>16} {:>20} {:>16}",
        "#bytes", "#iterations", "BW peak[Gb/sec]", "BW average[Gb/sec]", "MsgRate[Mpps]"
    );
    for r in rows {
        println!(
            " {:<8} {:<12} {:>16.2} {:>20.2} {:>16.6}",
            r.bytes, r.iterations, r.bw_peak_gbps, r.bw_avg_gbps, r.msg_rate_mpps
        );
    }
    println!("{line}");
}

fn create_parent(path: &std::path::Path) -> Result<(), String> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create directory {}: {e}", dir.display())),
        _ => Ok(()),
    }
}

fn write_csv(path: &std::path::Path, rows: &[Row]) -> Result<(), String> {
    create_parent(path)?;
    let mut w = csv::Writer::from_path(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    for r in rows {
        w.serialize(r)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    w.flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn bench_sim(a: SimSpeedArgs) -> Result<ExitCode, String> {
    let profile = Profile::load(&a.profile).map_err(|e| e.to_string())?;
    let n = a.processes as usize;
    println!(
        "harness bench sim: workload=all-to-all-ping processes={n} duration={} repeat={} seed={} commit={COMMIT}",
        Nanos::from_us(a.duration_us),
        a.repeat,
        a.seed
    );
    println!("{}", profile.describe());
    let mut rates = Vec::new();
    for r in 0..a.repeat {
        let s = bench::sim_speed::run(&profile, a.seed, n, Nanos::from_us(a.duration_us));
        let rate = s.events as f64 / s.wall_s;
        println!(
            "run {}: {} events ({} polls, {} ops, {} round trips) in {:.3} s wall for {} simulated: {:.2} M events/s",
            r + 1,
            s.events,
            s.polls,
            s.ops,
            s.round_trips,
            s.wall_s,
            s.virtual_time,
            rate / 1e6
        );
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "events per second: best {:.2} M, median {:.2} M",
        rates[rates.len() - 1] / 1e6,
        rates[rates.len() / 2] / 1e6
    );
    Ok(ExitCode::SUCCESS)
}

/// The deployment `harness run` asks for, checked.
fn deployment(a: &RunArgs) -> Result<protocols::Deployment, String> {
    let rdmc_only = [
        ("--algorithm", a.algorithm.is_some()),
        ("--nodes", a.nodes.is_some()),
        ("--block-size", a.block_size.is_some()),
        ("--senders", a.senders.is_some()),
        ("--racks", a.racks.is_some()),
        ("--messages", a.messages.is_some()),
        ("--timeout", a.timeout.is_some()),
    ];
    if let Some((flag, _)) = rdmc_only.iter().find(|f| f.1) {
        return Err(format!("{flag} is for --protocol rdmc"));
    }
    let shape = protocols::Shape {
        groups: a.groups,
        tree: a.tree.clone(),
        replicas: a.replicas,
        clients: a.clients,
        size: a.size.unwrap_or(64),
        dest: a.dest,
        slots: a.slots,
        log_slots: a.log_slots,
        slot_bytes: a.slot_bytes,
        dest_tree: None,
    };
    (protocols::find(&a.protocol)?.deploy)(&shape)
}

fn run_experiment(a: RunArgs) -> Result<ExitCode, String> {
    if a.protocol == RDMC {
        return run_bulk(a);
    }
    let deploy = deployment(&a)?;
    let profile_name = a.profile.clone().unwrap_or_else(|| {
        protocols::find(&a.protocol)
            .map_or("", |p| p.testbed)
            .into()
    });
    let profile = Profile::load(&profile_name).map_err(|e| e.to_string())?;
    let runtime = match a.runtime {
        RuntimeKind::Sim => experiment::Where::Sim,
        RuntimeKind::Local => experiment::Where::Local {
            threads: a.threads.unwrap_or(0),
        },
    };
    let e = experiment::Experiment {
        deploy,
        dest: a.dest,
        size: a.size.unwrap_or(64),
        warmup: a.warmup.unwrap_or(Nanos(a.duration.as_nanos() / 10)),
        duration: a.duration,
        runtime,
        profile,
        seed: a.seed,
        log: a.log.is_some(),
        dest_tree: None,
    };
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
    let m = e.run();
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
    if let Some(cpu) = m.cpu.filter(|_| e.runtime != experiment::Where::Sim) {
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

/// `harness run --protocol rdmc`.
fn run_bulk(a: RunArgs) -> Result<ExitCode, String> {
    let multicast_only = [
        ("--groups", a.groups.is_some()),
        ("--tree", a.tree.is_some()),
        ("--slot-bytes", a.slot_bytes.is_some()),
        ("--warmup", a.warmup.is_some()),
        ("--log", a.log.is_some()),
    ];
    if let Some((flag, _)) = multicast_only.iter().find(|f| f.1) {
        return Err(format!(
            "{flag} is for the atomic multicast protocols; rdmc takes --nodes, --size, --block-size, --algorithm, --senders, --racks, --messages"
        ));
    }
    let profile_name = a.profile.clone().unwrap_or_else(|| testbed::RDMC.into());
    let spec = protocols::rdmc::BulkSpec {
        algorithm: a.algorithm.unwrap_or(rdmc::Algorithm::BinomialPipeline),
        nodes: a.nodes.unwrap_or(4),
        size: a.size.unwrap_or(256 << 20),
        block_size: a.block_size.unwrap_or(1 << 20),
        senders: a.senders.unwrap_or(1),
        racks: a.racks.unwrap_or(1),
        messages: a.messages.unwrap_or(1),
        runtime: match a.runtime {
            RuntimeKind::Sim => experiment::Where::Sim,
            RuntimeKind::Local => experiment::Where::Local {
                threads: a.threads.unwrap_or(0),
            },
        },
        profile: Profile::load(&profile_name).map_err(|e| e.to_string())?,
        seed: a.seed,
        timeout: a.timeout.unwrap_or(Nanos(600_000_000_000)),
    };
    spec.validate()?;
    println!(
        "harness run: protocol=rdmc runtime={} profile={} seed={} commit={COMMIT}\n  algorithm={} nodes={} size={} block={} ({} blocks) senders={} racks={} messages={}",
        match spec.runtime {
            experiment::Where::Sim => "sim",
            experiment::Where::Local { .. } => "local",
        },
        spec.profile.name,
        spec.seed,
        spec.algorithm,
        spec.nodes,
        protocols::rdmc::show_bytes(spec.size),
        protocols::rdmc::show_bytes(spec.block_size),
        spec.blocks(),
        spec.senders,
        spec.racks,
        spec.messages
    );
    let r = spec.run()?;
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
    println!(
        "wall {:.2} s{}; peak memory {}",
        r.wall.as_secs_f64(),
        r.events
            .map_or(String::new(), |e| format!(", {e} simulator events")),
        protocols::rdmc::peak_rss().map_or("unknown".into(), |b| format!("{} MiB", b >> 20))
    );
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        protocols::rdmc::write_rows(&dir.join("summary.csv"), &[row])?;
        println!("wrote {}/summary.csv", dir.display());
    }
    Ok(if r.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn run_figure(a: FigureArgs) -> Result<ExitCode, String> {
    let value = a.name.to_possible_value().expect("every figure has a name");
    let name = value.get_name();
    let profile = if name.starts_with("ramcast") {
        testbed::RAMCAST
    } else if name.starts_with("rdmc") {
        "per panel, named in summary.md"
    } else {
        testbed::TRAM
    };
    let out = a.out.unwrap_or_else(|| PathBuf::from("results").join(name));
    println!(
        "harness figure {name}: runtime=sim profile={profile} seed=1 commit={COMMIT} out={}",
        out.display()
    );
    make_figure(a.name, &out, a.quick, &|line: &str| println!("{line}"))?;
    println!("wrote {}/summary.md", out.display());
    Ok(ExitCode::SUCCESS)
}

/// `harness compare`.
fn run_compare(a: CompareArgs) -> Result<ExitCode, String> {
    if a.max_clients == 0 {
        return Err("--max-clients must be at least 1".into());
    }
    let w = compare::Workload {
        groups: a.groups,
        replicas: a.replicas,
        dest: a.dest,
        size: a.size,
        duration: a.duration,
        seed: a.seed,
        max_clients: a.max_clients,
        profile: Profile::load(&a.profile).map_err(|e| e.to_string())?,
    };
    let out = a.out.join(a.name.unwrap_or_else(|| w.default_name()));
    let labels: Vec<String> = a.protocols.iter().map(|c| c.label()).collect();
    println!(
        "harness compare: protocols={} groups={} replicas={} dest={} size={} duration={} runtime=sim profile={} seed={} commit={COMMIT} out={}",
        labels.join(","),
        w.groups,
        w.replicas,
        w.dest,
        w.size,
        w.duration,
        w.profile.name,
        w.seed,
        out.display()
    );
    let md = compare::compare(&w, &a.protocols, &out, COMMIT, &|line: &str| {
        println!("{line}")
    })?;
    print!("{md}");
    println!("wrote {}/summary.md", out.display());
    Ok(ExitCode::SUCCESS)
}

/// `harness reproduce`.
fn run_reproduce(a: ReproduceArgs) -> Result<ExitCode, String> {
    let figure = |n: &FigureName| {
        let v = n.to_possible_value().expect("every figure has a name");
        reproduce::Figure {
            name: v.get_name().to_string(),
            about: v.get_help().map_or(String::new(), |h| h.to_string()),
        }
    };
    let every = FigureName::value_variants();
    let wanted: Vec<&FigureName> = if a.all {
        every.iter().collect()
    } else {
        a.names.iter().collect()
    };
    println!(
        "harness reproduce: {} figures, runtime=sim seed=1 commit={COMMIT} out={}{}",
        wanted.len(),
        a.out.display(),
        if a.quick { " (quick)" } else { "" }
    );
    let names: Vec<reproduce::Figure> = wanted.iter().map(|n| figure(n)).collect();
    let all: Vec<reproduce::Figure> = every.iter().map(figure).collect();
    let make = |f: &reproduce::Figure, out: &Path, progress: &(dyn Fn(&str) + Sync)| {
        let n = every
            .iter()
            .find(|n| figure(n).name == f.name)
            .expect("a known figure");
        make_figure(*n, out, a.quick, progress)
    };
    let done = reproduce::reproduce(&names, &all, &a.out, &make)?;
    println!(
        "{:<16} {:>8}  {:>10} {:>14} {:>16}",
        "figure", "wall s", "reproduced", "not reproduced", "by construction"
    );
    let mut total = 0.0;
    let mut sums = [0; 3];
    for d in &done {
        total += d.wall_s;
        for (s, v) in sums.iter_mut().zip(d.verdicts) {
            *s += v;
        }
        println!(
            "{:<16} {:>8.1}  {:>10} {:>14} {:>16}",
            d.name, d.wall_s, d.verdicts[0], d.verdicts[1], d.verdicts[2]
        );
    }
    println!(
        "{:<16} {:>8.1}  {:>10} {:>14} {:>16}",
        "total", total, sums[0], sums[1], sums[2]
    );
    println!("wrote {}", a.out.join("README.md").display());
    Ok(ExitCode::SUCCESS)
}

/// Writes figure `name` under `out`; `progress` gets a line per measured point.
fn make_figure(
    name: FigureName,
    out: &Path,
    quick: bool,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    match name {
        FigureName::RamcastFig4 => protocols::ramcast::figures::fig4(out, COMMIT, quick, progress)?,
        FigureName::RamcastFig5 => protocols::ramcast::figures::fig5(out, COMMIT, quick, progress)?,
        FigureName::TramFig5 => {
            protocols::tram::figures::fig5_6(out, COMMIT, false, quick, progress)?
        }
        FigureName::TramFig6 => {
            protocols::tram::figures::fig5_6(out, COMMIT, true, quick, progress)?
        }
        FigureName::TramFig7 => protocols::tram::figures::fig7(out, COMMIT, quick, progress)?,
        FigureName::TramFig8 => protocols::tram::figures::fig8(out, COMMIT, quick, progress)?,
        FigureName::TramTable1 => protocols::tram::table1::table1(out, COMMIT, quick, progress)?,
        FigureName::RdmcFig4 => protocols::rdmc::figures::fig4(out, COMMIT, quick, progress)?,
        FigureName::RdmcFig6 => protocols::rdmc::figures::fig6(out, COMMIT, quick, progress)?,
        FigureName::RdmcFig7_9 => protocols::rdmc::figures::fig7_9(out, COMMIT, quick, progress)?,
        FigureName::RdmcFig10_11 => {
            protocols::rdmc::figures::fig10_11(out, COMMIT, quick, progress)?
        }
        FigureName::RdmcFig12 => protocols::rdmc::figures::fig12(out, COMMIT, quick, progress)?,
        FigureName::RdmcFig13_14 => {
            protocols::rdmc::figures::fig13_14(out, COMMIT, quick, progress)?
        }
        FigureName::RdmcFig15 => protocols::rdmc::figures::fig15(out, COMMIT, quick, progress)?,
    }
    Ok(())
}

/// The profile a `check` runs on: `--profile`, else the protocol's testbed.
fn check_profile(a: &CheckArgs) -> String {
    a.profile.clone().unwrap_or_else(|| {
        match a.protocol {
            CheckProtocol::Chaos => DEFAULT_PROFILE,
            CheckProtocol::Ramcast => testbed::RAMCAST,
            CheckProtocol::Tram => testbed::TRAM,
            CheckProtocol::Rdmc => testbed::RDMC,
        }
        .into()
    })
}

/// The seeds a `check` covers and whether to print each run's parameters; prints the header.
fn check_preamble(a: &CheckArgs, protocol: &str) -> Result<(Profile, Vec<u64>, bool), String> {
    let profile = Profile::load(&check_profile(a)).map_err(|e| e.to_string())?;
    let (k, n) = a.shard.unwrap_or((0, 1));
    let (seeds, verbose): (Vec<u64>, bool) = match a.seed {
        Some(s) => (vec![s], true),
        None => (
            (a.first_seed..a.first_seed.saturating_add(a.seeds))
                .skip(k as usize)
                .step_by(n as usize)
                .collect(),
            a.verbose,
        ),
    };
    let shard = a
        .shard
        .map_or(String::new(), |(k, n)| format!(" shard={k}/{n}"));
    println!(
        "harness check: protocol={protocol} seeds={} first={}{shard} determinism={} commit={COMMIT}",
        seeds.len(),
        seeds.first().copied().unwrap_or(0),
        a.check_determinism
    );
    println!("{}", profile.describe());
    Ok((profile, seeds, verbose))
}

/// A seeded sweep of one protocol under faults, each run checked against its properties.
fn check_multicast<R: sweep::SeedRun>(a: CheckArgs) -> Result<ExitCode, String> {
    let (profile, seeds, verbose) = check_preamble(&a, R::PROTOCOL)?;
    // A report file that cannot be written fails now, not after the sweep.
    if let Some(path) = &a.report {
        std::fs::write(path, "").map_err(|e| format!("--report {}: {e}", path.display()))?;
    }
    let bar = progress_bar(seeds.len() as u64);
    let start = std::time::Instant::now();
    let mut failed = Vec::new();
    let mut tally = sweep::Tally::default();
    let mut error = None;
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    sweep::run_seeds::<R>(
        &seeds,
        &profile,
        a.check_determinism,
        jobs,
        |seed, run, out| {
            if verbose {
                bar.suspend(|| println!("{}", run.describe()));
            }
            tally.add(run.kinds(), out);
            if !out.violations.is_empty() || out.divergence.is_some() {
                failed.push(seed);
                bar.suspend(|| {
                    println!("FAILED seed {seed}: {}", run.describe());
                    for v in out.violations.iter().take(10) {
                        println!("  violation: {v}");
                    }
                    if let Some(d) = &out.divergence {
                        println!("  nondeterminism: {d}");
                    }
                    if verbose {
                        for s in &out.states {
                            println!("  state: {s}");
                        }
                    }
                    println!(
                        "  replay: harness check --protocol {} --seed {seed} --profile {}",
                        R::PROTOCOL,
                        profile.name
                    );
                });
                if let (Some(dir), Some(log)) = (&a.log, &out.log) {
                    let d = dir.join(format!("seed-{seed}"));
                    match log.write_csv(&d) {
                        Ok(()) => bar.suspend(|| println!("  log: {}", d.display())),
                        Err(e) => error = error.take().or(Some(e.to_string())),
                    }
                }
            }
            bar.inc(1);
        },
    )?;
    bar.finish_and_clear();
    let report = sweep::Report {
        protocol: R::PROTOCOL.to_string(),
        profile: profile.name.clone(),
        commit: COMMIT.to_string(),
        first: a.first_seed,
        seeds: a.seeds,
        shard: a.shard.unwrap_or((0, 1)),
        runs: seeds.len() as u64,
        wall_s: start.elapsed().as_secs_f64(),
        failed,
        tally,
    };
    // The verdict is printed first: a failed write below must not lose the sweep's result.
    let code = print_report::<R>(&report);
    if let Some(path) = &a.report {
        let text = toml::to_string(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("--report {}: {e}", path.display()))?;
    }
    match error {
        Some(e) => Err(format!("a delivery log could not be written: {e}")),
        None => Ok(code),
    }
}

/// A sweep's last lines: runs, the tally, the verdict.
fn print_report<R: sweep::SeedRun>(r: &sweep::Report) -> ExitCode {
    println!(
        "{} runs in {:.1} s: {} failed; {} events, {} server deliveries",
        r.runs,
        r.wall_s,
        r.failed.len(),
        r.tally.events,
        r.tally.delivered
    );
    println!("{}", R::tally_line(&r.tally));
    if r.failed.is_empty() {
        println!("0 violations");
        ExitCode::SUCCESS
    } else {
        println!("failing seeds: {:?}", r.failed);
        ExitCode::FAILURE
    }
}

/// `check --merge`: the report of a sweep run in shards, from the shards' `--report` files.
fn merge_reports(paths: &[PathBuf]) -> Result<ExitCode, String> {
    use sweep::SeedRun;
    let mut reports = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let r: sweep::Report = toml::from_str(&text).map_err(|e| {
            format!(
                "{}: not a report written by `harness check --report`: {e}",
                path.display()
            )
        })?;
        reports.push(r);
    }
    let (all, missing) = sweep::Report::merge(reports)?;
    println!(
        "harness check --merge: {} reports, protocol={} profile={} seeds={} first={} commit={} (run times summed over shards)",
        paths.len(),
        all.protocol,
        all.profile,
        all.seeds,
        all.first,
        all.commit
    );
    if !missing.is_empty() {
        println!(
            "warning: shards {missing:?} of {} are missing: this covers {} of the sweep's {} seeds",
            all.shard.1, all.runs, all.seeds
        );
    }
    match all.protocol.as_str() {
        p if p == protocols::ramcast::check::RamcastRun::PROTOCOL => {
            Ok(print_report::<protocols::ramcast::check::RamcastRun>(&all))
        }
        p if p == protocols::tram::check::TramRun::PROTOCOL => {
            Ok(print_report::<protocols::tram::check::TramRun>(&all))
        }
        p if p == protocols::rdmc::check::RdmcRun::PROTOCOL => {
            Ok(print_report::<protocols::rdmc::check::RdmcRun>(&all))
        }
        p => Err(format!(
            "cannot merge reports of `{p}`: only ramcast, tram and rdmc sweeps write them"
        )),
    }
}

fn run_check(a: CheckArgs) -> Result<ExitCode, String> {
    if !a.merge.is_empty() {
        return merge_reports(&a.merge);
    }
    match a.protocol {
        CheckProtocol::Ramcast => {
            return check_multicast::<protocols::ramcast::check::RamcastRun>(a)
        }
        CheckProtocol::Tram => return check_multicast::<protocols::tram::check::TramRun>(a),
        CheckProtocol::Rdmc => return check_multicast::<protocols::rdmc::check::RdmcRun>(a),
        CheckProtocol::Chaos => {}
    }
    if a.report.is_some() {
        return Err(
            "--report is for ramcast, tram and rdmc sweeps; chaos prints its report".into(),
        );
    }
    let (profile, seeds, verbose) = check_preamble(&a, "chaos")?;
    let processes = a.processes.map(|n| n as usize);
    let bar = progress_bar(seeds.len() as u64);
    let s = check_chaos::sweep(
        seeds.into_iter(),
        processes,
        &profile,
        a.check_determinism,
        verbose,
        |_| bar.inc(1),
    );
    bar.finish_and_clear();
    println!(
        "{} runs in {:.1} s: {} failed; {} events; runs with crash {}, revoke {}, pause/slow {}, link delay {}",
        s.runs,
        s.wall_s,
        s.failed.len(),
        s.events,
        s.with_crash,
        s.with_revoke,
        s.with_pause_or_slow,
        s.with_link_delay
    );
    println!(
        "completions: success {}, access denied {}, peer unreachable {}, flushed {}",
        s.statuses[0], s.statuses[1], s.statuses[2], s.statuses[3]
    );
    if s.failed.is_empty() {
        println!("0 violations");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("failing seeds: {:?}", s.failed);
        Ok(ExitCode::FAILURE)
    }
}
