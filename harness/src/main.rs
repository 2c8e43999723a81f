//! `harness`: the command researchers run. Transport microbenchmarks on any runtime, simulator
//! speed, and seeded checks under faults; later, protocol experiments and paper figures.

#![forbid(unsafe_code)]

mod bench;
mod check;
mod plot;
mod stats;

use bench::transport::{self as perf, Row, Runtime, MAX_BYTES};
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
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
    /// Seeded checks under random faults (VOPR-style): every parameter derived from the seed.
    Check(CheckArgs),
    /// Lists the simulator's built-in hardware profiles.
    Profiles,
    /// Checks a delivery log (processes.csv, multicasts.csv, deliveries.csv in one directory)
    /// against the five atomic multicast properties; exits non-zero on a violation.
    Verify(VerifyArgs),
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
    /// Fix the number of processes instead of drawing it from the seed.
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=1024))]
    processes: Option<u64>,
    /// Run every seed twice and report the first event where the traces differ.
    #[arg(long)]
    check_determinism: bool,
    /// Hardware profile.
    #[arg(long, default_value = DEFAULT_PROFILE)]
    profile: String,
    /// Print every seed's derived parameters.
    #[arg(long)]
    verbose: bool,
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
                series: vec![lat],
            },
            plot::Panel {
                title: "Write bandwidth".into(),
                x_label: "message size (bytes)".into(),
                y_label: "bandwidth (Gb/s)".into(),
                log_y: false,
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

fn run_check(a: CheckArgs) -> Result<ExitCode, String> {
    let CheckProtocol::Chaos = a.protocol;
    let profile = Profile::load(&a.profile).map_err(|e| e.to_string())?;
    let processes = a.processes.map(|n| n as usize);
    let (seeds, verbose): (Vec<u64>, bool) = match a.seed {
        Some(s) => (vec![s], true),
        None => (
            (a.first_seed..a.first_seed.saturating_add(a.seeds)).collect(),
            a.verbose,
        ),
    };
    println!(
        "harness check: protocol=chaos seeds={} first={} determinism={} commit={COMMIT}",
        seeds.len(),
        seeds.first().copied().unwrap_or(0),
        a.check_determinism
    );
    println!("{}", profile.describe());
    let bar = progress_bar(seeds.len() as u64);
    let s = check::sweep(
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
