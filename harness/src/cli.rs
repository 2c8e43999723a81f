//! The command line: every command's flags as clap declares them, in one place, and [`parse`],
//! which also notes which `run` flags were given ([`RunArgs::given`], for
//! [`crate::flags`]). The commands live in their modules and take these structs; a protocol's
//! own `run` flags are declared in its folder and added from the registry
//! ([`protocols::OwnFlags`]).

use crate::{calibrate, check, cluster, compare, experiment, figure, flags, protocols};
use clap::{Args, Parser, Subcommand, ValueEnum};
use engine::perftest::MAX_BYTES;
use std::path::PathBuf;
use transport::runtime::sim::{DEFAULT_PROFILE, DEFAULT_SOFTWARE};
use transport::Nanos;

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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
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
pub(crate) fn run_protocols() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        protocols::REGISTRY
            .iter()
            .map(|e| clap::builder::PossibleValue::new(e.name).help(e.about)),
    )
}

#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// The protocol.
    #[arg(long, default_value = "ramcast", value_parser = run_protocols())]
    pub(crate) protocol: String,
    /// Groups (1..=64) [default: 1; for tram, the tree's groups].
    #[arg(long)]
    pub(crate) groups: Option<usize>,
    /// Replicas per group, 2f+1.
    #[arg(long, default_value_t = 3)]
    pub(crate) replicas: usize,
    /// Closed-loop clients.
    #[arg(long, default_value_t = 1)]
    pub(crate) clients: usize,
    /// Message size: bytes, or with a unit KB, MB, GB (powers of 1024) [default: 64 B; rdmc:
    /// 256 MB].
    #[arg(long, value_parser = experiment::parse_bytes)]
    pub(crate) size: Option<usize>,
    /// Destinations per message: single, all, random:K, random:A..B (A to B groups, the count
    /// drawn per message: single- and multi-group traffic mixed), group:G, or adjacent:K (K
    /// groups adjacent in the tree, tram).
    #[arg(long, default_value = "single")]
    pub(crate) dest: multicast::DestPolicy,
    /// Measured time (simulated on sim, wall on local): 10s, 500ms, 200us.
    #[arg(long, default_value = "10ms", value_parser = experiment::parse_duration)]
    pub(crate) duration: Nanos,
    /// Warm-up before the measurement [default: a tenth of --duration].
    #[arg(long, value_parser = experiment::parse_duration)]
    pub(crate) warmup: Option<Nanos>,
    /// Runtime.
    #[arg(long, value_enum, default_value = "sim")]
    pub(crate) runtime: RuntimeKind,
    /// Hardware profile (sim; on local only its NIC limits are used) [default: each paper's
    /// testbed: xl170-cx4 for ramcast, r320-cx3 for tram, fractus-100g for rdmc, lan-1g for
    /// ridge].
    #[arg(long)]
    pub(crate) profile: Option<String>,
    /// Software profile (sim): what the protocol's work costs beyond posts, completions and
    /// polls - a built-in name (none, measured, ramcast-java, tram-cpp; `harness profiles`) or a .toml path.
    #[arg(long, default_value = DEFAULT_SOFTWARE)]
    pub(crate) software: String,
    /// Write discipline (sim), overriding the software profile's for every process: collective
    /// (post back to back, never wait for a completion), batch (post back to back, then await
    /// them all), each (await every completion before the next post; TRAM Fig. 2's baseline) or
    /// window:N (at most N requests outstanding) [default: the software profile's].
    #[arg(long)]
    pub(crate) posting: Option<transport::runtime::sim::Discipline>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Bytes per message slot of a buffer (header, message, canary), a multiple of 8
    /// [default: the message plus its metadata, at least 1 KiB].
    #[arg(long)]
    pub(crate) slot_bytes: Option<usize>,
    /// Slots per client buffer (tram: per HM buffer).
    #[arg(long, default_value_t = 16)]
    pub(crate) slots: usize,
    /// OS threads for the local runtime [default: available cores].
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// Local runtime: remote ops complete on a NIC thread, asynchronously and in a random order
    /// across queue pairs (each queue pair in post order), instead of synchronously at post.
    /// Exposes a protocol to the in-flight reorderings of a real NIC.
    #[arg(long)]
    pub(crate) nic_thread: bool,
    /// Write summary.csv and latency_cdf.csv into this directory.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Write the delivery log (processes.csv, multicasts.csv, deliveries.csv) into this
    /// directory and check it against the five properties.
    #[arg(long)]
    pub(crate) log: Option<PathBuf>,
    /// tcp runtime: a fault, repeatable, times from the nodes' start. On a node process:
    /// kill:NODE@TIME (SIGKILL), pause:NODE@TIME+DURATION (SIGSTOP, then SIGCONT). On the
    /// network, injected by the nodes' fault layer (sends held back in order, as a reliable
    /// connection retransmits; nothing is lost): delay:FROM>TO@TIME+DURATION=DELAY,
    /// loss:FROM>TO@TIME+DURATION=PROBABILITY (a lost send arrives 1 ms late),
    /// partition:SIDE|SIDE@TIME+DURATION (both ways; nothing passes until it heals). Nodes:
    /// ids separated by commas, or * for all (in a partition, all not on the other side), as
    /// the run's `nodes:` line lists them (servers first, group by group, then clients).
    #[arg(long)]
    pub(crate) fault: Vec<cluster::ProcessFault>,
    /// tcp runtime: where the nodes run, a cluster file of `[[node]]` entries in process-id
    /// order, each with `addr = "host:port"` and optionally `exec = [...]`, the command prefix
    /// that starts it there (`["ip", "netns", "exec", "ns3"]`, `["ssh", "host3"]`) [default:
    /// every node a child process on a free loopback port].
    #[arg(long)]
    pub(crate) cluster: Option<PathBuf>,
    /// Run even when the run's totals exceed what this machine has. Before anything is
    /// allocated, a run is refused if its regions need more memory than is available
    /// (MemAvailable, the memory cgroup's limit), if it starts more threads or processes than
    /// the limits allow (`ulimit -u`, kernel.threads-max, kernel.pid_max), or, on tcp, if a
    /// node process would open more sockets than `ulimit -n` or accept more connections than
    /// the runtime's cap; the refusal says which flags to lower. The simulator allocates a
    /// large region's pages as they are written: a run that touches few of them fits in less.
    #[arg(long)]
    pub(crate) ignore_limits: bool,
    /// The protocols' own flags, each declared by its folder and added from the registry.
    #[command(flatten)]
    pub(crate) own: protocols::OwnFlags,
    /// The flags given on the command line (clap ids), for refusing those the protocol does
    /// not take ([`flags`]); filled by [`parse`].
    #[arg(skip)]
    pub(crate) given: Vec<String>,
}

#[derive(Args, Debug)]
pub(crate) struct NodeArgs {
    /// The cluster file: every node's address and role, and the run they all execute.
    #[arg(long)]
    pub(crate) cluster: PathBuf,
    /// This node's id (its entry in the cluster file, from 0).
    #[arg(long)]
    pub(crate) id: usize,
    /// Where to write this node's report (and its part of the delivery log, beside it)
    /// [default: node-ID.report].
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
    /// Read the cluster secret from standard input (one line), as `harness run --runtime tcp`
    /// hands it down, instead of from the cluster file; if the file has one too, they must
    /// agree.
    #[arg(long)]
    pub(crate) secret_stdin: bool,
}

#[derive(Args, Debug)]
pub(crate) struct FigureArgs {
    /// The figure.
    #[arg(value_parser = protocols::figure_names())]
    pub(crate) name: String,
    /// Output directory [default: results/NAME, NAME the figure; results-quick/NAME with
    /// --quick].
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) make: MakeFlags,
}

#[derive(Args, Debug)]
pub(crate) struct ReproduceArgs {
    /// Every figure.
    #[arg(long, conflicts_with = "names")]
    pub(crate) all: bool,
    /// The figures (the names `harness figure` takes).
    #[arg(value_parser = protocols::figure_names(), required_unless_present = "all")]
    pub(crate) names: Vec<String>,
    /// Results directory: each figure goes to OUT/NAME, the index to OUT/README.md [default:
    /// results; results-quick with --quick].
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) make: MakeFlags,
}

/// How `figure` and `reproduce` make a figure: `--quick`, `--software` and `--jobs`.
#[derive(Args, Debug)]
pub(crate) struct MakeFlags {
    /// Fewer points and shorter runs: a smoke test, not for publication. Its summaries say so
    /// in their titles, and it writes under results-quick/ unless --out says otherwise.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Make it only under this software profile (repeatable): a built-in name or a .toml path
    /// [default: none, measured and the paper prototype's, each in OUT/NAME/PROFILE].
    #[arg(long)]
    pub(crate) software: Vec<String>,
    /// Worker threads for the figures' points (default: every core). Fewer bound the memory:
    /// each point running holds a whole simulation (heron-table5.1's hold several GB on 2
    /// threads). The outputs are the same on any number.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) jobs: Option<u64>,
}

impl MakeFlags {
    /// The pool the points run on.
    pub(crate) fn pool(&self) -> Result<rayon::ThreadPool, String> {
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
pub(crate) struct CompareArgs {
    /// The protocols, comma-separated: ramcast, tram (the base tree) or tram:TREE (base,
    /// breadth, depth, simple, or a parent array such as [-1,0,0,1]), ridge or
    /// ridge:DISSEMINATION (ridge, ring, direct); or Heron over several multicasts,
    /// heron:ramcast,heron:ridge (TPC-C; --groups are its partitions, --dest and --size do not
    /// apply).
    #[arg(long, value_delimiter = ',', required = true)]
    pub(crate) protocols: Vec<String>,
    /// Groups; TRAM contenders' trees must have this many [default: 8, the TRAM trees'].
    #[arg(long, default_value_t = 8)]
    pub(crate) groups: usize,
    /// Replicas per group, 2f+1.
    #[arg(long, default_value_t = 3)]
    pub(crate) replicas: usize,
    /// Destinations per message: single, all, random:K, random:A..B (A to B groups, the count
    /// drawn per message), group:G, or adjacent:K (K groups adjacent in the tree; RamCast
    /// draws them from the first TRAM contender's tree).
    /// [default: random:2; not for heron, whose application decides].
    #[arg(long)]
    pub(crate) dest: Option<multicast::DestPolicy>,
    /// Message size: bytes, or with a unit KB, MB (powers of 1024) [default: 64; not for
    /// heron].
    #[arg(long, value_parser = experiment::parse_bytes)]
    pub(crate) size: Option<usize>,
    /// Simulated time per throughput point, after a 10% warm-up (the 1-client latency run
    /// gets twice as long) [default: 2ms; 20ms for heron, twenty of Ridge's Delta].
    #[arg(long, value_parser = experiment::parse_duration)]
    pub(crate) duration: Option<Nanos>,
    /// The saturation sweep (clients 1, 2, 4, ...) stops here even if throughput still grows.
    #[arg(long, default_value_t = compare::DEFAULT_MAX_CLIENTS)]
    pub(crate) max_clients: usize,
    /// Ridge contenders' Delta: an idle ensemble's coordinator proposes a null message after
    /// this long, and a learner waits up to about this long for an idle ensemble, so it bounds
    /// Ridge's latency at light load [default: 1ms, the paper's]. The summary states it.
    #[arg(long, value_parser = experiment::parse_duration)]
    pub(crate) delta: Option<Nanos>,
    /// Hardware profile, the same for every protocol [default: r320-cx3, the testbed on which
    /// the TRAM paper compares TRAM with RamCast; xl170-cx4 for heron, the thesis's].
    #[arg(long)]
    pub(crate) profile: Option<String>,
    /// Software profile, the same for every protocol: a built-in name (none, measured, ramcast-java, tram-cpp; `harness profiles`) or a .toml path.
    #[arg(long, default_value = DEFAULT_SOFTWARE)]
    pub(crate) software: String,
    /// Seed of every run.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Directory name under --out [default: from the workload, e.g. random2-64B-8x3].
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Where comparisons go.
    #[arg(long, default_value = "results/compare")]
    pub(crate) out: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct VerifyArgs {
    /// Directory holding processes.csv, multicasts.csv and deliveries.csv.
    #[arg(long)]
    pub(crate) log: PathBuf,
}

#[derive(Subcommand, Debug)]
pub(crate) enum BenchCommand {
    /// ib_write_lat / ib_write_bw equivalent: write ping-pong latency (half round trip) and
    /// streaming write bandwidth, per message size.
    Transport(TransportArgs),
    /// Simulator speed: simulated events per second on an all-to-all ping workload.
    Sim(SimSpeedArgs),
    /// What an access change (fast: one region per peer; slow: a region among several) and a
    /// reconnect after a refused write cost on a runtime: on `verbs`, queue-pair flags against
    /// re-registration, the numbers TRAM Table 1 and RamCast's leader change depend on.
    Access(AccessArgs),
    // The benchmarks the protocols offer (`bcast`, RDMC's), from the registry.
    #[command(flatten)]
    Offered(crate::bench::Offered),
}

#[derive(Args, Debug)]
pub(crate) struct AccessArgs {
    /// Runtime to measure.
    #[arg(long, value_enum, default_value = "sim")]
    pub(crate) runtime: RuntimeKind,
    /// Hardware profile (sim only): a built-in name or a .toml path.
    #[arg(long, default_value = DEFAULT_PROFILE)]
    pub(crate) profile: String,
    /// Revoke-refuse-reconnect-grant rounds per path.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) rounds: u64,
    /// Seed of the runtime's processes.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

/// The runtimes `--runtime` names: each command says which it runs on and refuses the others
/// with the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum RuntimeKind {
    /// Deterministic discrete-event simulator with a hardware profile.
    Sim,
    /// Real threads and shared memory in this process.
    Local,
    /// RDMA semantics over TCP: one OS process per node for `run` (on loopback, or on the
    /// hosts of a cluster file that `harness node` runs), two nodes as threads of this process
    /// over loopback for `bench` and `calibrate`.
    Tcp,
    /// A real RDMA device (RDMA_DEVICE, RDMA_PORT, RDMA_GID_INDEX name it; a build with
    /// `--features verbs`), every node a thread of this process.
    Verbs,
}

impl RuntimeKind {
    /// Its name on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            RuntimeKind::Sim => "sim",
            RuntimeKind::Local => "local",
            RuntimeKind::Tcp => "tcp",
            RuntimeKind::Verbs => "verbs",
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct TransportArgs {
    /// Runtime to measure.
    #[arg(long, value_enum, default_value = "sim")]
    pub(crate) runtime: RuntimeKind,
    /// Hardware profile (sim only): a built-in name (see `harness profiles`) or a .toml path.
    #[arg(long, default_value = DEFAULT_PROFILE)]
    pub(crate) profile: String,
    /// Message sizes in bytes, comma-separated (1 .. 8388608).
    #[arg(long, value_delimiter = ',', value_parser = parse_size, conflicts_with = "all")]
    pub(crate) sizes: Vec<usize>,
    /// Every power of two from 2 B to 8 MiB, as perftest's -a.
    #[arg(long, short = 'a')]
    pub(crate) all: bool,
    /// Measured iterations per size (per test).
    #[arg(long, short = 'n', default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub(crate) iterations: u64,
    /// Warm-up round trips before latency measurement [default: iterations / 10].
    #[arg(long)]
    pub(crate) warmup: Option<u64>,
    /// Outstanding writes in the bandwidth test, as perftest's --tx-depth.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub(crate) tx_depth: u64,
    /// Signal one write in this many in the bandwidth test, as perftest's --cq-mod.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub(crate) cq_mod: u64,
    /// Seed (sim); also seeds the local runtime's process streams.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// OS threads for the local runtime [default: available cores].
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// Write one CSV row per size to this file.
    #[arg(long)]
    pub(crate) csv: Option<PathBuf>,
    /// tcp runtime: also measure a raw TCP request-response and stream of each size with
    /// qperf (Debian's package) on loopback in the same run, and print both side by side.
    #[arg(long)]
    pub(crate) qperf: bool,
    /// Plot latency and bandwidth against size into this PNG.
    #[arg(long)]
    pub(crate) png: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct SimSpeedArgs {
    /// Processes, each pinging all others.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(2..=4096))]
    pub(crate) processes: u64,
    /// Simulated time per repetition, microseconds.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000_000))]
    pub(crate) duration_us: u64,
    /// Repetitions (the best and the median are reported).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub(crate) repeat: u64,
    /// Hardware profile.
    #[arg(long, default_value = DEFAULT_PROFILE)]
    pub(crate) profile: String,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    /// What to check.
    #[arg(long, default_value = check::CHAOS, value_parser = check::targets())]
    pub(crate) protocol: String,
    /// Number of seeds to run, starting at --first-seed.
    #[arg(long, default_value_t = 100, conflicts_with = "seed", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) seeds: u64,
    /// First seed of the sweep.
    #[arg(long, default_value_t = 0)]
    pub(crate) first_seed: u64,
    /// Run exactly this seed, printing the run as one line (its parameters and faults, what
    /// --replay takes).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Run exactly the run this line describes (`seed=N key=value ... fault=...`, as `check`
    /// prints a run): the same parameters and faults whatever later changes do to how seeds
    /// derive runs. The hardware and software profiles and --torn are flags, as the replay
    /// command `check` prints beside a line gives them. The protocols, not chaos.
    #[arg(long, value_name = "LINE", conflicts_with_all = ["seed", "seeds", "first_seed", "shard", "report"])]
    pub(crate) replay: Option<String>,
    /// Keep the delivery logs of failing runs under this directory (ramcast).
    #[arg(long)]
    pub(crate) log: Option<PathBuf>,
    /// Fix the number of processes instead of drawing it from the seed (chaos).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=1024))]
    pub(crate) processes: Option<u64>,
    /// Run every seed twice and report the first event where the traces differ.
    #[arg(long)]
    pub(crate) check_determinism: bool,
    /// Hardware profile [default: the protocol's testbed, as `harness run` uses: xl170-cx4 for
    /// ramcast and heron, r320-cx3 for tram and chaos, fractus-100g for rdmc, lan-1g for ridge].
    #[arg(long)]
    pub(crate) profile: Option<String>,
    /// Software profile: what the protocol's work costs (protocols only) - a built-in name
    /// (none, measured, ramcast-java, tram-cpp; `harness profiles`) or a .toml path.
    #[arg(long, default_value = DEFAULT_SOFTWARE)]
    pub(crate) software: String,
    /// Where the seeds run: `sim` (deterministic, replayable) or `local` (real threads and
    /// shared memory, not deterministic: the seed's workload and schedule stretched to wall
    /// time by --stretch, its crashes and pauses applied by a thread of their own, remote ops
    /// on a NIC thread that reorders queue pairs and yields between the words of multi-word
    /// ops; slowdowns, delayed links and revokes are the simulator's alone). Every protocol;
    /// not chaos, which checks the simulator's own model.
    #[arg(long, value_enum, default_value_t = RuntimeKind::Sim)]
    pub(crate) runtime: RuntimeKind,
    /// With --runtime local: wall nanoseconds per simulated nanosecond of the seed's schedule,
    /// phases and timeouts.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub(crate) stretch: u64,
    /// Which seeds run with torn landings: the simulator carries a write or read that spans
    /// several 8-byte words out in pieces at distinct instants (words or cache lines,
    /// ascending or any order, over a window drawn per seed), interleaved with everything
    /// else, as RDMA allows. `drawn`: half the seeds; `always`; `never` (every op lands at
    /// one instant). Protocols only, not chaos.
    #[arg(long, value_enum, default_value_t = sweep::Torn::Drawn)]
    pub(crate) torn: sweep::Torn,
    /// Print every seed's derived parameters.
    #[arg(long)]
    pub(crate) verbose: bool,
    /// Worker threads for the protocols' sweeps, not chaos (default: every core). The report
    /// is the same on any number: runs are reported in seed order.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) jobs: Option<u64>,
    /// Run only shard K of N: the seeds first-seed+K, first-seed+K+N, ... (K from 0). N
    /// machines running shards 0/N .. N-1/N cover the sweep once, for a cluster scheduler.
    #[arg(long, value_parser = parse_shard, conflicts_with = "seed")]
    pub(crate) shard: Option<(u64, u64)>,
    /// Also write the sweep's result to this file (TOML), for --merge (the protocols' sweeps,
    /// not chaos).
    #[arg(long, conflicts_with = "seed")]
    pub(crate) report: Option<PathBuf>,
    /// Sum the --report files of a sweep's shards and print the sweep's report (every other
    /// flag is taken from the files).
    #[arg(long, num_args = 1.., conflicts_with_all = ["seed", "shard", "report"])]
    pub(crate) merge: Vec<PathBuf>,
}

/// Parses `K/N` with `K < N`.
pub(crate) fn parse_shard(s: &str) -> Result<(u64, u64), String> {
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

pub(crate) fn parse_size(s: &str) -> Result<usize, String> {
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

/// Parses a command line, noting which `run` flags it gives ([`RunArgs::given`]).
pub(crate) fn parse<I, T>(argv: I) -> Result<Cli, clap::Error>
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
