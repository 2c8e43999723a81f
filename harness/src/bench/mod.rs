//! Benchmarks: `bench transport` (perftest-style), `bench sim` (simulator speed), `bench
//! access`, and those the protocols offer ([`Offered`]).

pub(crate) mod access;
pub(crate) mod qperf;
pub(crate) mod sim_speed;
pub(crate) mod transport;

use self::transport::{self as perf, Rig, Row};
use crate::runtime::Runtime;
use crate::{plot, AccessArgs, RuntimeKind, SimSpeedArgs, TransportArgs, COMMIT};
use ::transport::runtime::local::{thread_count, LocalConfig};
use ::transport::runtime::sim::Profile;
use ::transport::Nanos;
use std::process::ExitCode;

/// A benchmark a protocol offers ([`crate::protocols::Bench`]), as `harness bench NAME` gave
/// it: the subcommands come from the registry, so `bench` names no protocol.
#[derive(Debug)]
pub(crate) struct Offered {
    bench: &'static crate::protocols::Bench,
    /// Its flags as given.
    matches: clap::ArgMatches,
}

impl Offered {
    /// Runs it.
    pub(crate) fn run(&self) -> Result<ExitCode, String> {
        (self.bench.run)(&self.matches)
    }
}

impl clap::FromArgMatches for Offered {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Offered, clap::Error> {
        let missing = || clap::Error::new(clap::error::ErrorKind::MissingSubcommand);
        let (name, matches) = m.subcommand().ok_or_else(missing)?;
        let bench = crate::protocols::benches()
            .find(|b| b.name == name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        Ok(Offered {
            bench,
            matches: matches.clone(),
        })
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Offered::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Subcommand for Offered {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        crate::protocols::benches().fold(cmd, |cmd, b| cmd.subcommand((b.command)()))
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Offered::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        crate::protocols::benches().any(|b| b.name == name)
    }
}

/// Where a transport measurement runs (`bench transport`, `bench access`, `calibrate
/// hardware`): tcp as two nodes in this process over loopback, verbs on the device the
/// environment names.
pub(crate) fn rig(
    kind: RuntimeKind,
    profile: &str,
    seed: u64,
    threads: Option<usize>,
) -> Result<Rig, String> {
    Ok(match kind {
        RuntimeKind::Sim => Rig::sim(Profile::load(profile).map_err(|e| e.to_string())?, seed),
        RuntimeKind::Local => {
            if threads == Some(0) {
                return Err("--threads must be at least 1".into());
            }
            let runtime = Runtime::Local {
                threads: threads.unwrap_or(0),
                nic_thread: false,
            };
            Rig::real(runtime, seed)
        }
        RuntimeKind::Tcp => Rig::real(Runtime::Tcp, seed),
        RuntimeKind::Verbs => verbs_rig(seed)?,
    })
}

/// Two nodes on the device the environment names (RDMA_DEVICE, RDMA_PORT, RDMA_GID_INDEX).
#[cfg(feature = "verbs")]
fn verbs_rig(seed: u64) -> Result<Rig, String> {
    let cfg = verbs::rdma::VerbsConfig {
        seed,
        device: verbs::DeviceChoice::from_env()?,
        ..Default::default()
    };
    let info = verbs::discover(&cfg.device).map_err(|e| e.to_string())?;
    let limits =
        verbs::rdma::probe_limits(&verbs::sideway::Sideway, &cfg).map_err(|e| e.to_string())?;
    println!(
        "device: {info}; inline limit granted {} B",
        limits.inline_max
    );
    Ok(Rig {
        inline_max: limits.inline_max,
        profile_name: info.name,
        ..Rig::real(Runtime::Verbs, seed)
    })
}

#[cfg(not(feature = "verbs"))]
fn verbs_rig(_: u64) -> Result<Rig, String> {
    Err(crate::runtime::verbs_missing())
}

/// `harness bench access`.
pub(crate) fn run_access(a: AccessArgs) -> Result<ExitCode, String> {
    let runtime = rig(a.runtime, &a.profile, a.seed, None)?;
    println!(
        "harness bench access: runtime={} rounds={} seed={} commit={COMMIT}",
        runtime.name(),
        a.rounds,
        a.seed
    );
    let costs = access::measure(&runtime, a.rounds)?;
    access::print(&costs, &runtime);
    Ok(ExitCode::SUCCESS)
}

/// `harness bench transport`.
pub(crate) fn run_transport(a: TransportArgs) -> Result<ExitCode, String> {
    let mut sizes = if a.all {
        perf::all_sizes()
    } else {
        a.sizes.clone()
    };
    if sizes.is_empty() {
        sizes = vec![64];
    }
    let warmup = a.warmup.unwrap_or(a.iterations / 10);
    let runtime = rig(a.runtime, &a.profile, a.seed, a.threads)?;
    let threads = pair_threads(runtime.runtime);
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
    if let Some(profile) = &runtime.profile {
        println!("{}", profile.describe());
    }
    if a.qperf && a.runtime != RuntimeKind::Tcp {
        return Err("--qperf compares the tcp runtime with raw TCP: add --runtime tcp".into());
    }
    let qperf = a.qperf.then(qperf::Server::start).transpose()?;
    let bar = crate::progress::bar(sizes.len() as u64);
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
        let yardstick = qperf.as_ref().map(|q| q.measure(bytes, 2)).transpose()?;
        rows.push(Row {
            runtime: runtime.name().to_string(),
            profile: runtime.profile_name.clone(),
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
            inline: bytes <= runtime.inline_max,
            threads,
            seed: a.seed,
            commit: COMMIT.to_string(),
            qperf_lat_us: yardstick.map(|(l, _)| l),
            qperf_bw_gbps: yardstick.map(|(_, b)| b),
            lat_ratio_vs_qperf: yardstick.map(|(l, _)| lat.typical / l),
            bw_ratio_vs_qperf: yardstick.map(|(_, b)| bw_avg / b),
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    print_tables(&rows);
    if qperf.is_some() {
        print_qperf(&rows);
    }
    if let Some(path) = &a.csv {
        write_csv(path, &rows)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &a.png {
        draw(path, &runtime, &rows)?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Threads a pair takes on `runtime`.
fn pair_threads(runtime: Runtime) -> usize {
    match runtime {
        Runtime::Local { threads, .. } => {
            let cfg = LocalConfig {
                threads,
                ..LocalConfig::default()
            };
            thread_count(&cfg, 2)
        }
        Runtime::Sim => 1,
        // Per node: the protocol thread and the NIC thread.
        Runtime::Tcp => 4,
        // Per node: the protocol thread (the NIC is the device).
        Runtime::Verbs => 2,
    }
}

/// The tcp runtime beside qperf's raw TCP, size by size (`--qperf`).
fn print_qperf(rows: &[Row]) {
    println!(
        "tcp runtime (RDMA write semantics, NIC threads) vs qperf (raw TCP), loopback, one run"
    );
    println!(
        " {:<9} {:>18} {:>18} {:>7} {:>18} {:>18} {:>7}",
        "#bytes",
        "tcp t_typical[us]",
        "qperf tcp_lat[us]",
        "ratio",
        "tcp BW avg[Gb/s]",
        "qperf tcp_bw[Gb/s]",
        "ratio"
    );
    for r in rows {
        let (Some(q_lat), Some(q_bw)) = (r.qperf_lat_us, r.qperf_bw_gbps) else {
            continue;
        };
        println!(
            " {:<9} {:>18.2} {q_lat:>18.2} {:>7.2} {:>18.3} {q_bw:>18.3} {:>7.2}",
            r.bytes,
            r.t_typical_us,
            r.t_typical_us / q_lat,
            r.bw_avg_gbps,
            r.bw_avg_gbps / q_bw
        );
    }
}

/// Latency and bandwidth against size, as `--png` draws them.
fn draw(path: &std::path::Path, runtime: &Rig, rows: &[Row]) -> Result<(), String> {
    let caption = format!(
        "RDMA write, runtime {} profile {} ({})",
        runtime.name(),
        runtime.profile_name,
        COMMIT
    );
    let lat = plot::Series::new(
        "t_typical (half round trip)",
        rows.iter()
            .map(|r| (r.bytes as f64, r.t_typical_us))
            .collect(),
    );
    let bw = plot::Series::new(
        "average bandwidth",
        rows.iter()
            .map(|r| (r.bytes as f64, r.bw_avg_gbps))
            .collect(),
    );
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
    plot::draw_png(path, &caption, &panels)
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
    crate::experiment::write_rows(path, rows)
}

/// `harness bench sim`.
pub(crate) fn run_sim(a: SimSpeedArgs) -> Result<ExitCode, String> {
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
        let s = sim_speed::run(&profile, a.seed, n, Nanos::from_us(a.duration_us));
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
