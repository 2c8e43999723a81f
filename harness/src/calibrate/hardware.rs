//! `harness calibrate hardware`: measures RDMA writes on a runtime as perftest does (a real
//! device on `verbs`; `tcp` and `local` measure the same way) and writes a hardware profile
//! for the simulator from them: the loop from real hardware back to the model.
//!
//! What is measured, and what it sets in the profile:
//! - a 64-byte inline write ping-pong (`ib_write_lat`): its typical half round trip is the
//!   calibration's `write_lat_us`, and `nic.write_latency_ns` is that less the profile's own
//!   decomposition of the rest (`cpu.poll_ns + nic.post_ns + serialisation(64 B)`, as the
//!   built-in profiles document it); its t_min, t_typical, 99% and 99.9% are
//!   `[nic.write_latency_dist]`;
//! - a stream of writes of the largest size (`ib_write_bw`): its peak bandwidth is the
//!   calibration's `write_bw_gbps` and `nic.link_gbps`;
//! - the inline limit the runtime grants is `nic.inline_max_bytes`;
//! - `harness bench access`'s probe: the typical reconnect after a refused write is
//!   `nic.reconnect_ns`, the typical access change of a region among several (the path RamCast
//!   and TRAM take when leadership moves) is `nic.permission_change.ns`, and both ranges widen
//!   to hold what was measured (the fast path's change is the permission range's low end when
//!   lower).
//!
//! Everything else (DMA read, message rate, post and completion costs, fabric, CPU) is the
//! `--base` profile's, and the file says so in its header: those are estimates to replace by
//! hand where the hardware's numbers are known.

use crate::RuntimeKind;
use clap::Args;
use engine::perftest::{self as perf, Params, Rig};
use std::path::PathBuf;
use std::process::ExitCode;
use toml::{Table, Value};
use transport::runtime::sim::Profile;

/// `harness calibrate hardware`.
#[derive(Args, Debug)]
pub(crate) struct HardwareArgs {
    /// The runtime to measure (`verbs`: the device RDMA_DEVICE names, in a build with
    /// `--features verbs`).
    #[arg(long, value_enum, default_value = "verbs")]
    runtime: RuntimeKind,
    /// The profile whose unmeasured costs the new one keeps: a built-in name or a .toml path.
    #[arg(long, default_value = "softroce")]
    base: String,
    /// The new profile's name [default: the device's, or the runtime's].
    #[arg(long)]
    name: Option<String>,
    /// Where to write it [default: NAME.toml]. Use it with `--profile PATH`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Iterations per measurement, as perftest's -n.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=100_000_000))]
    iterations: u64,
    /// The write size of the bandwidth measurement, as perftest's -s.
    #[arg(long, default_value_t = 1 << 20, value_parser = crate::parse_size)]
    bw_size: usize,
    /// Seed of the runtime's processes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// What a measurement gave, in perftest's terms.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Measured {
    /// 64-byte inline write half round trip, microseconds.
    pub(crate) t_min_us: f64,
    pub(crate) t_typical_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) p999_us: f64,
    /// Peak write bandwidth at the bandwidth size, Gb/s.
    pub(crate) bw_gbps: f64,
    pub(crate) bw_size: usize,
    pub(crate) inline_max: usize,
    /// Typical access changes (fast, slow) and reconnect, nanoseconds.
    pub(crate) change_fast_ns: u64,
    pub(crate) change_slow_ns: u64,
    pub(crate) reconnect_ns: u64,
    /// What ran: device and runtime, commit, date.
    pub(crate) source: String,
}

/// Runs `harness calibrate hardware`.
pub(crate) fn command(a: HardwareArgs, commit: &str) -> Result<ExitCode, String> {
    let base_text = Profile::text(&a.base).map_err(|e| e.to_string())?;
    let base = Profile::parse(&a.base, &base_text).map_err(|e| e.to_string())?;
    let runtime = crate::bench::rig(a.runtime, &a.base, a.seed, None)?;
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| match runtime.profile_name.clone() {
            n if n == "-" || a.runtime == RuntimeKind::Sim => {
                format!("{}-runtime", runtime.name())
            }
            device => device,
        });
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{name}.toml")));
    let version = match std::fs::read_to_string(&out) {
        Ok(text) => Profile::parse(&out.display().to_string(), &text)
            .map(|p| p.version + 1)
            .map_err(|e| format!("{e} (remove the file or choose another --out)"))?,
        Err(_) => 1,
    };
    println!(
        "harness calibrate hardware: runtime={} base={} iterations={} bw_size={} commit={commit}",
        runtime.name(),
        base.name,
        a.iterations,
        a.bw_size
    );
    let params = |bytes| Params {
        bytes,
        warmup: a.iterations / 10,
        iterations: a.iterations,
        tx_depth: 128,
        cq_mod: 100,
    };
    let (lat, _, _, _) = perf::measure(&runtime, params(64))?;
    let (_, _, bw_peak, _) = perf::measure(&runtime, params(a.bw_size))?;
    let access = crate::bench::access::measure(&runtime, 100)?;
    crate::bench::access::print(&access, &runtime);
    let ns = |us: f64| (us * 1000.0).round() as u64;
    let m = Measured {
        t_min_us: lat.min,
        t_typical_us: lat.typical,
        p99_us: lat.p99,
        p999_us: lat.p999,
        bw_gbps: bw_peak,
        bw_size: a.bw_size,
        inline_max: runtime.inline_max,
        change_fast_ns: ns(access.fast.typical),
        change_slow_ns: ns(access.slow.typical),
        reconnect_ns: ns(access.reconnect.typical),
        source: format!(
            "measured by `harness calibrate hardware --runtime {}` on {} at commit {commit}, {}",
            runtime.name(),
            describe(&runtime),
            super::today()
        ),
    };
    println!(
        "64 B inline write: t_min {:.2} us, t_typical {:.2} us, 99% {:.2} us, 99.9% {:.2} us; {} B write stream: peak {:.2} Gb/s; inline limit {} B",
        m.t_min_us, m.t_typical_us, m.p99_us, m.p999_us, m.bw_size, m.bw_gbps, m.inline_max
    );
    let text = derive(&base_text, &name, version, &m)?;
    std::fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    let p = Profile::parse(&out.display().to_string(), &text).map_err(|e| e.to_string())?;
    println!(
        "wrote {} (version {}): {}",
        out.display(),
        p.version,
        p.describe()
    );
    println!(
        "use it: harness run --profile {} ... ; unmeasured costs are {}'s (see the file's header)",
        out.display(),
        base.name
    );
    Ok(ExitCode::SUCCESS)
}

fn describe(runtime: &Rig) -> String {
    match runtime.profile_name.clone() {
        n if n == "-" => format!("the {} runtime ({})", runtime.name(), super::machine()),
        device => format!("device {device} ({})", super::machine()),
    }
}

/// The profile `base_text` with the measured numbers in place, named `name` at `version`.
pub(crate) fn derive(
    base_text: &str,
    name: &str,
    version: u32,
    m: &Measured,
) -> Result<String, String> {
    let base = Profile::parse("base profile", base_text).map_err(|e| e.to_string())?;
    let mut doc: Table = base_text
        .parse()
        .map_err(|e| format!("base profile: {e}"))?;
    let serialisation_ns = 64.0 * 8.0 / m.bw_gbps;
    let rest = base.cpu.poll_ns as f64 + base.nic.post_ns as f64 + serialisation_ns;
    let write_latency_ns = (m.t_typical_us * 1000.0 - rest).round().max(1.0) as i64;
    doc.insert("name".into(), Value::String(name.into()));
    doc.insert("version".into(), Value::Integer(version as i64));
    doc.insert("description".into(), Value::String(m.source.clone()));
    let mut cal = Table::new();
    cal.insert("write_lat_us".into(), round(m.t_typical_us));
    cal.insert("write_bw_gbps".into(), round(m.bw_gbps));
    cal.insert("source".into(), Value::String(m.source.clone()));
    doc.insert("calibration".into(), Value::Table(cal));
    let nic = doc
        .get_mut("nic")
        .and_then(Value::as_table_mut)
        .ok_or("base profile has no [nic]")?;
    nic.insert("write_latency_ns".into(), Value::Integer(write_latency_ns));
    nic.insert("link_gbps".into(), round(m.bw_gbps));
    nic.insert(
        "inline_max_bytes".into(),
        Value::Integer(m.inline_max as i64),
    );
    if let Some(d) = nic.get("duplex_gbps").and_then(Value::as_float) {
        // Both directions together reach at least what one reaches alone.
        nic.insert("duplex_gbps".into(), round(d.max(m.bw_gbps)));
    }
    let mut dist = Table::new();
    dist.insert("t_min_us".into(), round(m.t_min_us));
    dist.insert("t_typical_us".into(), round(m.t_typical_us));
    dist.insert("p99_us".into(), round(m.p99_us.max(m.t_typical_us)));
    dist.insert(
        "p999_us".into(),
        round(m.p999_us.max(m.p99_us).max(m.t_typical_us)),
    );
    dist.insert(
        "source".into(),
        Value::String(format!("{} (64 B inline write ping-pong)", m.source)),
    );
    nic.insert("write_latency_dist".into(), Value::Table(dist));
    nic.insert("reconnect_ns".into(), Value::Integer(m.reconnect_ns as i64));
    if let Some(range) = nic.get_mut("reconnect_range").and_then(Value::as_table_mut) {
        widen(range, m.reconnect_ns, m.reconnect_ns);
    }
    let mut change = Table::new();
    change.insert("ns".into(), Value::Integer(m.change_slow_ns as i64));
    change.insert("low_ns".into(), Value::Integer(0));
    change.insert("high_ns".into(), Value::Integer(0));
    if let Some(old) = base.nic.permission_change.as_ref() {
        change.insert("low_ns".into(), Value::Integer(old.low_ns as i64));
        change.insert("high_ns".into(), Value::Integer(old.high_ns as i64));
    }
    widen(
        &mut change,
        m.change_fast_ns.min(m.change_slow_ns),
        m.change_slow_ns,
    );
    change.insert(
        "source".into(),
        Value::String(format!(
            "{}: access change of a region among several (re-registration on verbs) {} ns typical, of a peer's only region (queue-pair flags on verbs) {} ns",
            m.source, m.change_slow_ns, m.change_fast_ns
        )),
    );
    nic.insert("permission_change".into(), Value::Table(change));
    let header = format!(
        "# {name}: a hardware profile measured by `harness calibrate hardware`.\n\
         # Measured: calibration.write_lat_us and nic.write_latency_dist (64 B inline write\n\
         # ping-pong), calibration.write_bw_gbps and nic.link_gbps ({} B write stream),\n\
         # nic.inline_max_bytes, and nic.write_latency_ns = t_typical - cpu.poll_ns - nic.post_ns -\n\
         # serialisation(64 B), nic.reconnect_ns and nic.permission_change (harness bench access).\n\
         # NOT measured, kept from the base profile `{}`: every other cost (DMA read, message\n\
         # rate, post and completion costs, fabric, CPU) - replace them where the hardware's\n\
         # numbers are known.\n",
        m.bw_size, base.name
    );
    let text = format!(
        "{header}{}",
        toml::to_string(&doc).map_err(|e| e.to_string())?
    );
    Profile::parse("derived profile", &text)
        .map_err(|e| format!("the derived profile is invalid: {e}"))?;
    Ok(text)
}

/// Widens a table's `low_ns`..`high_ns` to hold `low`..`high`.
fn widen(range: &mut Table, low: u64, high: u64) {
    let get = |t: &Table, k: &str| t.get(k).and_then(Value::as_integer).unwrap_or(0);
    let (l, h) = (get(range, "low_ns"), get(range, "high_ns"));
    range.insert("low_ns".into(), Value::Integer(l.min(low as i64)));
    range.insert("high_ns".into(), Value::Integer(h.max(high as i64)));
}

/// A float at the precision perftest prints (two decimals).
fn round(x: f64) -> Value {
    Value::Float((x * 100.0).round() / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> Measured {
        Measured {
            t_min_us: 2.01,
            t_typical_us: 2.5,
            p99_us: 3.75,
            p999_us: 9.0,
            bw_gbps: 21.5,
            bw_size: 1 << 20,
            inline_max: 128,
            change_fast_ns: 3_000,
            change_slow_ns: 40_000,
            reconnect_ns: 9_000_000,
            source: "a test".into(),
        }
    }

    #[test]
    fn a_derived_profile_carries_the_measured_numbers_and_the_rest_of_its_base() {
        for base in ["softroce", "r320-cx3", "xl170-cx4"] {
            let text = Profile::text(base).unwrap();
            let b = Profile::parse(base, &text).unwrap();
            let out = derive(&text, "my-nic", 3, &measured()).unwrap();
            let p = Profile::parse("derived", &out).unwrap();
            assert_eq!((p.name.as_str(), p.version), ("my-nic", 3));
            assert_eq!(p.calibration.write_lat_us, 2.5);
            assert_eq!(p.calibration.write_bw_gbps, 21.5);
            assert_eq!(p.nic.link_gbps, 21.5);
            assert_eq!(p.nic.inline_max_bytes, 128);
            // The ping-pong's typical half round trip, less the profile's own decomposition.
            let rest = b.cpu.poll_ns + b.nic.post_ns + (64.0 * 8.0 / 21.5_f64).round() as u64;
            assert_eq!(p.nic.write_latency_ns, 2500 - rest, "{base}");
            let d = p.nic.write_latency_dist.as_ref().unwrap();
            assert_eq!((d.t_min_us, d.p99_us, d.p999_us), (2.01, 3.75, 9.0));
            assert_eq!(p.nic.reconnect_ns, 9_000_000);
            if let Some(r) = &p.nic.reconnect_range {
                assert!(r.low_ns <= 9_000_000 && r.high_ns >= 9_000_000, "{r:?}");
            }
            let c = p.nic.permission_change.as_ref().unwrap();
            assert_eq!(c.ns, 40_000);
            assert!(c.low_ns <= 3_000 && c.high_ns >= 40_000, "{c:?}");
            // Unmeasured costs stay the base's.
            assert_eq!(p.nic.msg_rate_mpps, b.nic.msg_rate_mpps);
            assert_eq!(p.fabric, b.fabric);
            assert!(out.starts_with("# my-nic"), "{out}");
            assert!(out.contains(&format!("kept from the base profile `{}`", b.name)));
        }
    }

    #[test]
    fn an_unordered_tail_is_made_monotone_and_a_tiny_latency_stays_positive() {
        let m = Measured {
            t_min_us: 0.01,
            t_typical_us: 0.02,
            p99_us: 0.015,
            p999_us: 0.01,
            ..measured()
        };
        let text = Profile::text("softroce").unwrap();
        let p = Profile::parse("derived", &derive(&text, "x", 1, &m).unwrap()).unwrap();
        assert!(p.nic.write_latency_ns >= 1);
        let d = p.nic.write_latency_dist.unwrap();
        assert!(d.t_typical_us <= d.p99_us && d.p99_us <= d.p999_us);
    }
}
