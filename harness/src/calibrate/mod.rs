//! `harness calibrate`: produces software profiles. `calibrate software` times each kind of
//! work of our code on this machine ([`engine::probes`]) and writes the `measured` profile;
//! `calibrate paper NAME` fits a paper prototype's profile to its one published number
//! ([`engine::fit`]); `calibrate hardware` measures a device and writes a hardware profile
//! ([`hardware`]). The software files land where the built-ins live (`transport/software/`), stamped with the
//! commit and the date, so a researcher can regenerate them and see the diff.

mod hardware;

use engine::{fit, probes};
pub(crate) use fit::{DeclaredPosting, PaperSoftware, Prices};

use crate::protocols::paper_software;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use transport::runtime::sim::{Software, SoftwareCalibration, WorkCosts};

/// `harness calibrate ...`.
#[derive(Subcommand, Debug)]
pub(crate) enum CalibrateCommand {
    /// Times each kind of work (scan, decode, copy, order, deliver) of this workbench's code on
    /// this machine with real clocks (many samples, median) and writes the `measured` software
    /// profile, stamped with the machine, the commit and the date.
    Software(SoftwareArgs),
    /// Fits a paper prototype's software profile to ONE published number of its paper: the
    /// shape profile's per-message prices times one factor, found by bisection on the
    /// simulated number (scans keep the shape's price, and copies do except for a prototype
    /// whose number is a bandwidth of large messages: Ridge's; Heron's keeps RamCast's prices
    /// and fits its price per row alone), with the write discipline its paper describes.
    /// Prints every factor tried.
    Paper(PaperArgs),
    /// Measures RDMA writes on a runtime as perftest does (on `verbs`: a real device) and
    /// writes a hardware profile for the simulator: latency, its distribution, bandwidth and
    /// the inline limit measured, every other cost kept from a base profile and named as such.
    Hardware(hardware::HardwareArgs),
}

/// `harness calibrate software`.
#[derive(Args, Debug)]
pub(crate) struct SoftwareArgs {
    /// Where to write the profile (its version is one above the file's there, if any).
    #[arg(long, default_value = "transport/software/measured.toml")]
    out: PathBuf,
    /// Samples per kind of work; the median is kept.
    #[arg(long, default_value_t = 51)]
    samples: usize,
    /// Units of work per sample.
    #[arg(long, default_value_t = 20_000)]
    reps: usize,
}

fn paper_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        paper_software().map(|p| clap::builder::PossibleValue::new(p.name).help(p.target)),
    )
}

/// `harness calibrate paper`.
#[derive(Args, Debug)]
pub(crate) struct PaperArgs {
    /// The paper prototype's profile.
    #[arg(value_parser = paper_names())]
    name: String,
    /// The profile whose prices are scaled: a built-in name or a .toml path [default: the
    /// prototype's own, `measured` for the multicast prototypes, `ramcast-java` for Heron's,
    /// whose ordering layer is RamCast's prototype].
    #[arg(long)]
    shape: Option<String>,
    /// Where to write the profile [default: transport/software/NAME.toml].
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Runs `harness calibrate ...`.
pub(crate) fn command(c: CalibrateCommand, commit: &str) -> Result<ExitCode, String> {
    match c {
        CalibrateCommand::Software(a) => software(a, commit),
        CalibrateCommand::Paper(a) => paper(a, commit),
        CalibrateCommand::Hardware(a) => hardware::command(a, commit),
    }
}

fn software(a: SoftwareArgs, commit: &str) -> Result<ExitCode, String> {
    if a.samples == 0 || a.reps == 0 {
        return Err("--samples and --reps must be at least 1".into());
    }
    let version = next_version(&a.out)?;
    let machine = machine();
    println!(
        "timing each kind of work on {machine}: {} samples of {} units, median (commit {commit})",
        a.samples, a.reps
    );
    let t = probes::measure(probes::Effort {
        samples: a.samples,
        reps: a.reps,
    });
    for (what, ns) in [
        ("scan (per slot)", t.scan),
        ("decode (per message)", t.decode),
        ("copy (per byte)", t.copy_per_byte),
        ("order (per message)", t.order),
        ("deliver (per message)", t.deliver),
    ] {
        println!("  {what:<24} {ns:>9.3} ns");
    }
    let date = today();
    let s = Software {
        name: "measured".into(),
        version,
        description: "this workbench's Rust code, timed on the machine below".into(),
        calibration: SoftwareCalibration {
            source: "`harness calibrate software`: each kind of work timed with real clocks, \
                     median of many samples (probes listed in harness/src/calibrate/probes.rs)"
                .into(),
            machine: Some(machine),
            commit: Some(commit.to_string()),
            date: Some(date.clone()),
            fit: None,
        },
        costs: WorkCosts {
            scan_ns: t.scan.round() as u64,
            decode_ns: t.decode.round() as u64,
            copy_ps_per_byte: (t.copy_per_byte * 1000.0).round() as u64,
            order_ns: t.order.round() as u64,
            deliver_ns: t.deliver.round() as u64,
            // Not probed yet: the multicast protocols report no rows.
            row_ns: 0,
        },
        // Our protocols reap completions among their other work and never wait for one.
        posting: Default::default(),
    };
    let header = format!(
        "The cost of this workbench's own code, written by `harness calibrate software` on\n\
         {date} at commit {commit}. Regenerate it on your machine with that command; the\n\
         probe behind each number is documented in harness/src/calibrate/probes.rs."
    );
    write_profile(&a.out, &s, &header)?;
    Ok(ExitCode::SUCCESS)
}

fn paper(a: PaperArgs, commit: &str) -> Result<ExitCode, String> {
    let p = paper_software()
        .find(|p| p.name == a.name)
        .expect("clap checked the name");
    let shape = Software::load(a.shape.as_deref().unwrap_or(p.shape)).map_err(|e| e.to_string())?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(format!("transport/software/{}.toml", p.name)));
    let version = next_version(&out)?;
    println!(
        "fitting `{}` to {}: {} {} (shape: {})",
        p.name,
        p.target,
        p.published,
        p.unit,
        shape.describe()
    );
    let date = today();
    let print = |line: &str| println!("  {line}");
    let s = fit::fit(p, &shape, version, commit, &date, &print)?;
    let f = s.calibration.fit.as_ref().expect("fitted");
    println!(
        "fitted: scale {:.4}, simulated {:.1} {} against published {} {} ({:+.2}%)",
        f.scale,
        f.simulated,
        f.unit,
        f.published,
        f.unit,
        (f.simulated / f.published - 1.0) * 100.0
    );
    let header = format!(
        "{}: fitted by `harness calibrate paper {}` on {date} at commit {commit}.\n\
         One factor {} of `{} v{}` until the simulation gives ONE\n\
         published number (below); every other number of the paper is a validation target.",
        p.description,
        p.name,
        match p.prices {
            Prices::WithCopies => "scales the prices, copies included,",
            Prices::PerMessage => "scales the per-message prices",
            Prices::Rows => "sets the row price (factor x 100 ns) beside the other prices",
        },
        shape.name,
        shape.version
    );
    write_profile(&out, &s, &header)?;
    Ok(ExitCode::SUCCESS)
}

/// The version a profile written to `out` gets: one above the file there, 1 if none. Refuses
/// an `out` whose directory does not exist before any timing or simulation is spent on it.
fn next_version(out: &Path) -> Result<u32, String> {
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
    if dir.is_some_and(|d| !d.is_dir()) {
        return Err(format!(
            "{}: no such directory (run from the repository root, or give --out)",
            out.display()
        ));
    }
    match std::fs::read_to_string(out) {
        Ok(text) => Software::parse(&out.display().to_string(), &text)
            .map(|s| s.version + 1)
            .map_err(|e| format!("{e} (remove the file or choose another --out)")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(1),
        Err(e) => Err(format!("{}: {e}", out.display())),
    }
}

fn write_profile(out: &Path, s: &Software, header: &str) -> Result<(), String> {
    let text = s.to_toml(header);
    Software::parse("written profile", &text).map_err(|e| e.to_string())?;
    std::fs::write(out, text).map_err(|e| {
        format!(
            "{}: {e} (run from the repository root, or give --out)",
            out.display()
        )
    })?;
    println!("wrote {}: {}", out.display(), s.describe());
    Ok(())
}

/// The CPU model and core count of this machine.
fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model}, {cores} cores available")
}

/// Today's date, UTC, as YYYY-MM-DD.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_date(secs / 86_400)
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paper profile must give what its file says it was fitted to: a model change that moves
    /// the number makes this fail until the profile is fitted again.
    #[test]
    fn every_paper_profile_is_built_in_and_still_gives_its_fitted_number() {
        for p in paper_software() {
            let s = Software::load(p.name).unwrap_or_else(|e| {
                panic!(
                    "{e}: run `harness calibrate paper {}` and list the file",
                    p.name
                )
            });
            let fit = s.calibration.fit.as_ref().expect("a fitted profile");
            assert_eq!(fit.published, p.published, "{}", p.name);
            assert_eq!(
                s.posting,
                p.posting.posting().unwrap(),
                "{} posts otherwise than its paper declares: run `harness calibrate paper {}`",
                p.name,
                p.name
            );
            let simulated = (p.simulate)(&s, &|_: &str| {}).unwrap();
            assert_eq!(
                simulated, fit.simulated,
                "{} no longer gives its fitted number: run `harness calibrate paper {}`",
                p.name, p.name
            );
        }
    }

    #[test]
    fn civil_dates_of_known_days() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_780), "2026-11-23");
    }
}
