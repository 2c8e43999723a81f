//! `harness compare`: one workload against several protocols and variants, side by side.
//!
//! Every protocol gets the same workload: the same seed, groups, replicas and clients (so the
//! same client processes draw the same sequence of destinations), the same message size, the
//! same profile and runtime. One exception is inherent: `adjacent:K` destinations are adjacent
//! in a tree, so each contender with a tree of its own draws from it, and the genuine ones from
//! the first such contender's tree. For each protocol it measures the latency of one client,
//! then doubles the clients until throughput grows by less than 5% (saturation), as the paper
//! figures do. Outputs under `OUT/NAME/`:
//! - `runs.csv`: one row per (protocol, clients) with every parameter;
//! - `latency_cdf.csv`: the latency CDF of each protocol at 1 client and at saturation;
//! - `compare.png`: throughput-latency curves, and the two CDFs, one colour per protocol in
//!   every panel ([`crate::plot::protocol_colour`]);
//! - `summary.md`: a table per protocol, with each protocol's numbers over the first one's.

use crate::experiment::{write_summary, Experiment};
use crate::figure::{
    cdf_points, in_parallel, max_label, max_throughput, measure, panel, saturate, us, write, Point,
};
use crate::plot::{self, Series};
use crate::protocols::{self, Shape};
use crate::runtime::Runtime;
use crate::totals;
use hdrhistogram::Histogram;
use multicast::{DestPolicy, Tree};
use std::fmt::Write as _;
use std::path::Path;
use transport::runtime::sim::{Profile, Software, DEFAULT_SOFTWARE};
use transport::Nanos;

/// A protocol and its variant, as `--protocols` names it: `ramcast`, `tram` (its default
/// variant, the base tree) or `tram:TREE` (a preset: base, breadth, depth, simple; or a parent
/// array). Any protocol of [`protocols::REGISTRY`].
#[derive(Clone)]
pub(crate) struct Contender {
    entry: &'static protocols::Entry,
    variant: Option<String>,
}

impl std::fmt::Debug for Contender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

impl PartialEq for Contender {
    fn eq(&self, other: &Contender) -> bool {
        self.label() == other.label()
    }
}

impl std::str::FromStr for Contender {
    type Err = String;
    fn from_str(s: &str) -> Result<Contender, String> {
        let (name, variant) = match s.split_once(':') {
            Some((n, v)) => (n, Some(v)),
            None => (s, None),
        };
        let entry = protocols::find(name)?;
        let variant = match (entry.variants(), variant) {
            (None, None) => None,
            (None, Some(v)) => {
                return Err(format!(
                    "{name} has no variants (`{name}:{v}`); write `{name}`"
                ))
            }
            (Some(vs), v) => {
                let v = v.unwrap_or(vs.default);
                let mut scratch = Workload::shape_of(1, 1, 64, DestPolicy::Single, 1);
                (vs.apply)(v, &mut scratch)
                    .map_err(|e| format!("`{s}`: {e} ({name}:{} is a variant)", vs.what))?;
                Some(v.to_string())
            }
        };
        Ok(Contender { entry, variant })
    }
}

impl Contender {
    /// The name on the command line, used as the series label and in the CSVs.
    pub(crate) fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}:{v}", self.entry.name),
            None => self.entry.name.to_string(),
        }
    }

    /// The common flags of `w` with this contender's variant applied.
    fn shape(&self, w: &Workload, clients: usize, dest_tree: &Option<Tree>) -> Shape {
        let mut s = Workload::shape_of(w.groups, w.replicas, w.size, w.dest, clients);
        s.dest_tree = dest_tree.clone();
        self.apply_variant(&mut s);
        if let (Some(delta), Some(takes)) = (w.delta, self.entry.delta()) {
            (takes.apply)(delta, &mut s);
        }
        s
    }

    /// Sets this contender's variant, if any, in `s`.
    fn apply_variant(&self, s: &mut Shape) {
        if let (Some(vs), Some(v)) = (self.entry.variants(), &self.variant) {
            (vs.apply)(v, s).expect("checked when parsed");
        }
    }

    /// The contender's own tree, if it is tree-based.
    fn tree(&self) -> Option<Tree> {
        let mut s = Workload::shape_of(1, 1, 64, DestPolicy::Single, 1);
        self.apply_variant(&mut s);
        s.tree
    }
}

/// The workload every contender runs.
#[derive(Clone, Debug)]
pub(crate) struct Workload {
    /// Groups (a contender with a tree: its tree's groups).
    pub(crate) groups: usize,
    /// Replicas per group.
    pub(crate) replicas: usize,
    /// Destinations per message.
    pub(crate) dest: DestPolicy,
    /// Message bytes.
    pub(crate) size: usize,
    /// Measured time per point (the 1-client latency run gets twice as long).
    pub(crate) duration: Nanos,
    /// Seed of every run.
    pub(crate) seed: u64,
    /// The saturation sweep stops here even if throughput still grows.
    pub(crate) max_clients: usize,
    /// The Delta of the contenders that take one ([`protocols::Delta`]), if `--delta` sets it.
    pub(crate) delta: Option<Nanos>,
    /// The simulator's profile.
    pub(crate) profile: Profile,
    /// The software profile: what each protocol's reported work costs.
    pub(crate) software: Software,
}

impl Workload {
    /// The directory name a comparison gets when none is given: `random4-64B-8x3` (with
    /// `-SOFTWARE` after it under a software profile other than none).
    pub(crate) fn default_name(&self) -> String {
        let software = if self.software.name == DEFAULT_SOFTWARE {
            String::new()
        } else {
            format!("-{}", self.software.name)
        };
        format!(
            "{}-{}B-{}x{}{software}",
            self.dest.to_string().replace(':', ""),
            self.size,
            self.groups,
            self.replicas
        )
    }

    /// The common flags of a run (slots at their defaults, slot size from the message size).
    pub(crate) fn shape_of(
        groups: usize,
        replicas: usize,
        size: usize,
        dest: DestPolicy,
        clients: usize,
    ) -> Shape {
        Shape {
            groups: Some(groups),
            tree: None,
            replicas,
            clients,
            size,
            dest,
            slots: 16,
            slot_bytes: None,
            dest_tree: None,
            own: protocols::Own::default(),
        }
    }

    /// Checks that every contender can run it, before anything runs.
    pub(crate) fn validate(&self, contenders: &[Contender]) -> Result<(), String> {
        if contenders.is_empty() {
            return Err("--protocols names no protocol".into());
        }
        let dest_tree = self.dest_tree(contenders);
        for (i, c) in contenders.iter().enumerate() {
            if contenders[..i].contains(c) {
                return Err(format!("--protocols names {} twice", c.label()));
            }
            if let Some(t) = c.tree().filter(|t| t.groups() != self.groups) {
                return Err(format!(
                    "{} has {} groups but the workload has {}: every protocol must serve \
                     the same groups (set --groups {})",
                    c.label(),
                    t.groups(),
                    self.groups,
                    t.groups()
                ));
            }
            c.entry
                .deploy(&c.shape(self, 1, &dest_tree))
                .map_err(|e| format!("{}: {e}", c.label()))?;
        }
        Ok(())
    }

    /// The tree from which genuine protocols draw `adjacent:K` destinations: the first
    /// tree-based contender's, else the `base` preset.
    fn dest_tree(&self, contenders: &[Contender]) -> Option<Tree> {
        if !matches!(self.dest, DestPolicy::Adjacent(_)) {
            return None;
        }
        contenders
            .iter()
            .find_map(Contender::tree)
            .or_else(|| Tree::preset("base"))
    }

    fn experiment(
        &self,
        c: &Contender,
        dest_tree: &Option<Tree>,
        clients: usize,
        duration: Nanos,
    ) -> Experiment {
        let shape = c.shape(self, clients, dest_tree);
        let deploy = c.entry.deploy(&shape).expect("validated before the runs");
        Experiment {
            dest_tree: if deploy.tree().is_none() {
                dest_tree.clone()
            } else {
                None
            },
            deploy,
            dest: self.dest,
            size: self.size,
            warmup: Nanos(duration.as_nanos() / 10),
            duration,
            runtime: Runtime::Sim,
            profile: self.profile.clone(),
            software: self.software.clone(),
            seed: self.seed,
            log: false,
        }
    }
}

/// What one contender measured.
pub(crate) struct Measured {
    /// Its label ([`Contender::label`]).
    pub(crate) label: String,
    /// The 1-client run.
    pub(crate) one: Point,
    /// The saturation sweep, clients 1, 2, 4, ...
    pub(crate) points: Vec<Point>,
}

impl Measured {
    /// The sweep's point of highest throughput (where latency is read "at saturation").
    pub(crate) fn saturated(&self) -> &Point {
        self.points
            .iter()
            .max_by(|a, b| a.m.throughput.total_cmp(&b.m.throughput))
            .expect("a sweep has a point")
    }
}

/// The contender's column of `latency_cdf.csv`: the protocol as `--protocols` names it.
#[derive(Clone, Copy, serde::Serialize)]
struct ProtocolColumn<'a> {
    protocol: &'a str,
}

/// A point of a contender's latency CDF at one load: the columns of a comparison's
/// `latency_cdf.csv` after the contender's own, the same for a multicast comparison and for
/// Heron over several multicasts ([`cdf_rows`]).
#[derive(serde::Serialize)]
pub(crate) struct CdfPoint {
    load: &'static str,
    clients: usize,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    latency_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<6, _>")]
    fraction: f64,
}

/// A contender's rows of a comparison's `latency_cdf.csv`: the points of its latency CDF at 1
/// client (`one`), then at saturation, each load given as its clients and its latencies.
/// `contender` is a struct whose one field is the contender's column (`protocol`, or Heron's
/// `multicast`): the CSV writer writes a pair of structs as one row, and its header names the
/// fields of both.
pub(crate) fn cdf_rows<C: Copy>(
    contender: C,
    one: (usize, &Histogram<u64>),
    saturated: (usize, &Histogram<u64>),
) -> Vec<(C, CdfPoint)> {
    [("1-client", one), ("saturation", saturated)]
        .into_iter()
        .flat_map(|(load, (clients, latencies))| {
            cdf_points(latencies)
                .into_iter()
                .map(move |(latency_us, fraction)| {
                    let point = CdfPoint {
                        load,
                        clients,
                        latency_us,
                        fraction,
                    };
                    (contender, point)
                })
        })
        .collect()
}

/// Runs the comparison and writes its outputs into `out`; returns its summary and what each
/// contender measured.
pub(crate) fn compare(
    w: &Workload,
    contenders: &[Contender],
    out: &Path,
    commit: &str,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(String, Vec<Measured>), String> {
    w.validate(contenders)?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let dest_tree = w.dest_tree(contenders);
    let measured = in_parallel(contenders, |c| {
        let one = w.experiment(c, &dest_tree, 1, Nanos(w.duration.as_nanos() * 2));
        let m = measure(&one)?;
        let points = saturate(
            |n| w.experiment(c, &dest_tree, n, w.duration),
            w.max_clients,
            progress,
        )?;
        progress(&format!("{} done", c.label()));
        Ok(Measured {
            label: c.label(),
            one: Point { e: one, m },
            points,
        })
    })?;
    let mut rows = Vec::new();
    let mut cdf_csv = Vec::new();
    for m in &measured {
        rows.push(m.one.e.summary_row(&m.one.m, commit));
        rows.extend(m.points.iter().map(|p| p.e.summary_row(&p.m, commit)));
        let saturated = m.saturated();
        cdf_csv.extend(cdf_rows(
            ProtocolColumn { protocol: &m.label },
            (m.one.e.deploy.shape().2, &m.one.m.latency),
            (saturated.e.deploy.shape().2, &saturated.m.latency),
        ));
    }
    write_summary(&out.join("runs.csv"), &rows)?;
    crate::experiment::write_rows(&out.join("latency_cdf.csv"), &cdf_csv)?;
    // Median latency against throughput, as RamCast's Fig. 4 draws it: the median's interval
    // as its bar.
    let curve = |m: &Measured| {
        Series::with_errors(
            m.label.clone(),
            m.points.iter().map(|p| {
                let (p50, ci) = p.m.latency_ci(0.5);
                (p.m.throughput / 1000.0, p50, ci)
            }),
        )
    };
    let cdf = |m: &Measured, p: &Point| Series::new(m.label.clone(), cdf_points(&p.m.latency));
    // The tail: the fraction of messages slower than x (the last point, 0, has no logarithm).
    let ccdf = |m: &Measured, p: &Point| {
        let points = cdf_points(&p.m.latency)
            .into_iter()
            .map(|(x, f)| (x, 1.0 - f))
            .filter(|&(_, t)| t > 0.0)
            .collect();
        Series::new(m.label.clone(), points)
    };
    // Latencies of different protocols can lie decades apart (Ridge's is about its Delta at
    // light load, a millisecond; RamCast's microseconds): every latency axis is logarithmic.
    let log = |mut p: plot::Panel, x_log: bool, y_log: bool| {
        if x_log {
            p.x = plot::XScale::Log10;
        }
        p.log_y = y_log;
        p
    };
    let caption = format!(
        "{} on sim ({}): {} groups x {}, {} B, dest {}",
        measured
            .iter()
            .map(|m| m.label.as_str())
            .collect::<Vec<_>>()
            .join(" vs "),
        w.profile.name,
        w.groups,
        w.replicas,
        w.size,
        w.dest
    );
    plot::draw_png(
        &out.join("compare.png"),
        &caption,
        &[
            log(
                panel(
                    "throughput-latency (clients doubled to saturation)",
                    "throughput (k msg/s)",
                    "median latency (us, log)",
                    measured.iter().map(curve).collect(),
                ),
                false,
                true,
            ),
            log(
                panel(
                    "latency CDF, 1 client",
                    "latency (us, log)",
                    "fraction",
                    measured.iter().map(|m| cdf(m, &m.one)).collect(),
                ),
                true,
                false,
            ),
            log(
                panel(
                    "latency CDF at saturation",
                    "latency (us, log)",
                    "fraction",
                    measured.iter().map(|m| cdf(m, m.saturated())).collect(),
                ),
                true,
                false,
            ),
            log(
                panel(
                    "tail at saturation: fraction slower than x",
                    "latency (us, log)",
                    "fraction slower (log)",
                    measured.iter().map(|m| ccdf(m, m.saturated())).collect(),
                ),
                true,
                true,
            ),
        ],
    )?;
    let md = summary(w, &measured, commit, contenders);
    write(&out.join("summary.md"), &md)?;
    Ok((md, measured))
}

/// The `summary.md` of a comparison.
/// `--max-clients` when not given: the saturation sweep's cap.
pub(crate) const DEFAULT_MAX_CLIENTS: usize = 256;

fn summary(w: &Workload, measured: &[Measured], commit: &str, contenders: &[Contender]) -> String {
    let spec: Vec<String> = contenders.iter().map(Contender::label).collect();
    // The cap only where it is not the default, so the command replays the run and the
    // summaries of runs with the default read as before.
    let mut cap = if w.max_clients == DEFAULT_MAX_CLIENTS {
        String::new()
    } else {
        format!(" --max-clients {}", w.max_clients)
    };
    if let Some(d) = w.delta {
        let _ = write!(cap, " --delta {d}");
    }
    let mut md = format!(
        "# Comparison: {}\n\nCommand: `harness compare --protocols {} --groups {} --replicas {} \
         --dest {} --size {} --duration {} --seed {} --profile {} --software {}{cap}` (commit \
         {commit}).\n\n\
         Every protocol ran the same workload: seed {}, {} groups of {} replicas, the same client \
         processes drawing the same destinations, {} B messages, profile `{}` and software \
         profile `{}` on the simulator. \
         Latency at 1 client: {} of simulated time. Throughput: clients doubled from 1 until it \
         grew by less than 5% (at most {} clients), {} per point after a 10% warm-up; \
         \"at saturation\" is the point of highest throughput. Files: `runs.csv` (every run, \
         every parameter), `latency_cdf.csv`, `compare.png`.\n\n",
        spec.join(" vs "),
        spec.join(","),
        w.groups,
        w.replicas,
        w.dest,
        w.size,
        w.duration,
        w.seed,
        w.profile.name,
        w.software.name,
        w.seed,
        w.groups,
        w.replicas,
        w.size,
        w.profile.name,
        w.software.name,
        Nanos(w.duration.as_nanos() * 2),
        w.max_clients,
        w.duration
    );
    if let Some(t) = w.dest_tree(contenders) {
        let (own, others): (Vec<&Contender>, Vec<&Contender>) =
            contenders.iter().partition(|c| c.tree().is_some());
        let labels =
            |cs: Vec<&Contender>| cs.iter().map(|c| c.label()).collect::<Vec<_>>().join(", ");
        let _ = writeln!(
            md,
            "Destinations adjacent in a tree depend on the tree: each contender with a tree of \
             its own ({}) draws from it, the others ({}) from `{t}`; contenders on different \
             trees get different destination sets (the same client processes, seeds and \
             sizes).\n",
            labels(own),
            labels(others)
        );
    }
    md.push_str(
        "| protocol | 1 client p50 / p95 / p99 (us) | max throughput (k msg/s) | clients at max | \
         p50 / p99 at max (us) | throughput / first | 1-client p50 / first |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let first = &measured[0];
    for m in measured {
        let sat = m.saturated();
        let _ = writeln!(
            md,
            "| {} | {:.2} / {:.2} / {:.2} | {:.0}{} | {} | {:.2} / {:.2} | {:.2} | {:.2} |",
            m.label,
            us(&m.one.m.latency, 0.5),
            us(&m.one.m.latency, 0.95),
            us(&m.one.m.latency, 0.99),
            max_throughput(&m.points) / 1000.0,
            max_label(&m.points),
            sat.e.deploy.shape().2,
            us(&sat.m.latency, 0.5),
            us(&sat.m.latency, 0.99),
            max_throughput(&m.points) / max_throughput(&first.points),
            us(&m.one.m.latency, 0.5) / us(&first.one.m.latency, 0.5),
        );
    }
    let _ = writeln!(
        md,
        "\nA maximum marked \"still growing\" stopped at the client cap: a lower bound. These are \
         simulator numbers: the model charges NIC and wire costs, a fixed cost per poll, and \
         the work each protocol reports at the software profile's prices ({}).",
        if w.software.costs.is_free() {
            "none here: no software cost per message, see the figures' summaries"
        } else {
            "see its file"
        },
    );
    // Each protocol says what it tunes beyond the clients' slots and what its Delta is, once
    // however many of its variants run.
    let mut entries: Vec<&protocols::Entry> = Vec::new();
    for c in contenders {
        if !entries.iter().any(|e| e.name == c.entry.name) {
            entries.push(c.entry);
        }
    }
    let tuned: String = entries
        .iter()
        .filter_map(|e| e.tuning())
        .map(|t| format!("; {t}"))
        .chain(
            entries
                .iter()
                .filter_map(|e| e.delta())
                .map(|d| format!("; {}", (d.note)(w.delta))),
        )
        .collect();
    let _ = writeln!(md, "\nTuning: 16 slots per client buffer{tuned}.");
    // How each contender posts to several targets: it moves latency with the destinations.
    let posting: Vec<String> = contenders
        .iter()
        .map(|c| format!("{} {}", c.label(), w.software.posting.of(c.entry.name)))
        .collect();
    let _ = writeln!(
        md,
        "\nWrite discipline (how a process posts to several targets and awaits completions, \
         from the software profile; `collective` never waits, `batch` awaits each poll's posts \
         together, `each` awaits every one): {}.",
        posting.join(", ")
    );
    md
}

/// Refuses a comparison whose largest runs a contender cannot deploy or this machine cannot
/// hold ([`crate::totals`]): every contender's sweep may reach the largest power of two within
/// `--max-clients`, and the contenders run at once.
fn fits(w: &Workload, contenders: &[Contender]) -> Result<(), String> {
    let dest_tree = w.dest_tree(contenders);
    let clients = 1 << w.max_clients.ilog2();
    let mut processes = Vec::new();
    for c in contenders {
        let deploy = c
            .entry
            .deploy(&c.shape(w, clients, &dest_tree))
            .map_err(|e| {
                format!(
                    "{} at {clients} clients, where the sweep may go under --max-clients {}: {e}",
                    c.label(),
                    w.max_clients
                )
            })?;
        processes.extend(deploy.footprint());
    }
    let flags = format!(
        "--max-clients ({}) or --groups ({})",
        w.max_clients, w.groups
    );
    let lower = totals::Lower {
        memory: flags.clone(),
        processes: flags,
    };
    totals::check(
        &totals::Needs::of(&processes, Runtime::Sim, lower),
        &totals::Limits::probe(false),
    )
    .map_err(|e| format!("the sweeps at {clients} clients, every contender at once: {e}"))
}

/// `harness compare`: prints the header, runs [`compare`], prints the summary.
pub(crate) fn command(a: crate::CompareArgs) -> Result<std::process::ExitCode, String> {
    use crate::COMMIT;
    if a.max_clients == 0 {
        return Err("--max-clients must be at least 1".into());
    }
    // A protocol that is not an atomic multicast compares its own way, with itself only
    // (Heron over each multicast).
    let name_of = |p: &String| p.split(':').next().unwrap_or_default().to_string();
    let service = a
        .protocols
        .iter()
        .find_map(|p| match protocols::entry(&name_of(p)) {
            Some(
                e @ protocols::Entry {
                    kind: protocols::Kind::Service(s),
                    ..
                },
            ) => Some((e.name, s)),
            _ => None,
        });
    if let Some((name, service)) = service {
        let compare = service.compare.map_err(String::from)?;
        if a.protocols.iter().any(|p| name_of(p) != name) {
            return Err(format!(
                "{name} is not an atomic multicast: compare it only with itself over other \
                 multicasts (--protocols {name}:A,{name}:B), and the multicasts with each other \
                 in another run"
            ));
        }
        return compare(&a, &a.protocols);
    }
    let protocols = a
        .protocols
        .iter()
        .map(|p| p.parse::<Contender>())
        .collect::<Result<Vec<_>, _>>()?;
    if a.delta.is_some() && !protocols.iter().any(|c| c.entry.delta().is_some()) {
        let takers = || protocols::REGISTRY.iter().filter(|e| e.delta().is_some());
        let what: Vec<&str> = takers().filter_map(|e| Some(e.delta()?.what)).collect();
        let names: Vec<&str> = takers().map(|e| e.name).collect();
        return Err(format!(
            "--delta sets {}: add a {} contender or leave it out",
            what.join(", "),
            names.join(" or ")
        ));
    }
    let w = Workload {
        groups: a.groups,
        replicas: a.replicas,
        dest: a.dest.unwrap_or(DestPolicy::Random(2)),
        size: a.size.unwrap_or(64),
        duration: a.duration.unwrap_or(Nanos(2_000_000)),
        seed: a.seed,
        max_clients: a.max_clients,
        delta: a.delta,
        profile: Profile::load(a.profile.as_deref().unwrap_or(crate::testbed::COMPARE))
            .map_err(|e| e.to_string())?,
        software: Software::load(&a.software).map_err(|e| e.to_string())?,
    };
    w.validate(&protocols)?;
    fits(&w, &protocols)?;
    let out = a.out.join(a.name.unwrap_or_else(|| w.default_name()));
    let labels: Vec<String> = protocols.iter().map(|c| c.label()).collect();
    println!(
        "harness compare: protocols={} groups={} replicas={} dest={} size={} duration={} runtime=sim profile={} software={} seed={} commit={COMMIT} out={}",
        labels.join(","),
        w.groups,
        w.replicas,
        w.dest,
        w.size,
        w.duration,
        w.profile.name,
        w.software.name,
        w.seed,
        out.display()
    );
    let (md, _) = compare(&w, &protocols, &out, COMMIT, &|line: &str| {
        println!("{line}")
    })?;
    print!("{md}");
    println!("wrote {}/summary.md", out.display());
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(dest: DestPolicy) -> Workload {
        Workload {
            groups: 8,
            replicas: 3,
            dest,
            size: 64,
            duration: Nanos::from_us(200),
            seed: 5,
            max_clients: 2,
            delta: None,
            profile: Profile::load("r320-cx3").expect("built-in"),
            software: Software::none(),
        }
    }

    #[test]
    fn protocols_parse_and_bad_ones_say_what_to_write() {
        let c: Contender = "tram:breadth".parse().unwrap();
        assert_eq!(c.label(), "tram:breadth");
        assert_eq!("tram".parse::<Contender>().unwrap().label(), "tram:base");
        assert_eq!("ramcast".parse::<Contender>().unwrap().label(), "ramcast");
        for (bad, says) in [
            ("ramcast:fast", "no variants"),
            ("rdmc", "bulk multicast"),
            ("paxos", "unknown protocol"),
            ("tram:nope", "tram:nope"),
        ] {
            let e = bad.parse::<Contender>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_workload_every_contender_cannot_serve_is_refused_before_anything_runs() {
        let w = workload(DestPolicy::Random(2));
        let simple: Contender = "tram:[-1,0,0]".parse().unwrap();
        let ramcast: Contender = "ramcast".parse().unwrap();
        let e = w.validate(&[ramcast.clone(), simple]).unwrap_err();
        assert!(e.contains("3 groups") && e.contains("--groups 3"), "{e}");
        let e = w.validate(&[ramcast.clone(), ramcast.clone()]).unwrap_err();
        assert!(e.contains("twice"), "{e}");
        assert!(workload(DestPolicy::Random(9))
            .validate(&[ramcast])
            .is_err());
    }

    /// The point of `compare`: every protocol sees the same multicasts. Each client process
    /// issues the same destinations in the same order under RamCast and TRAM (adjacent
    /// destinations too: RamCast draws them from the TRAM contender's tree).
    #[test]
    fn every_protocol_gets_the_same_sequence_of_destinations() {
        for dest in [DestPolicy::Random(3), DestPolicy::Adjacent(2)] {
            let mut w = workload(dest);
            w.duration = Nanos::from_ms(1);
            let contenders: [Contender; 2] =
                ["ramcast".parse().unwrap(), "tram:depth".parse().unwrap()];
            let tree = w.dest_tree(&contenders);
            let draws = |c: &Contender| {
                let mut e = w.experiment(c, &tree, 2, w.duration);
                e.log = true;
                let log = e.run().log.expect("asked for");
                let mut per_client: std::collections::BTreeMap<_, Vec<_>> = Default::default();
                for m in log.multicasts.values() {
                    per_client.entry(m.client).or_default().push(m.dst);
                }
                per_client
            };
            let (a, b) = (draws(&contenders[0]), draws(&contenders[1]));
            assert_eq!(a.len(), 2, "{dest}");
            for (client, dsts) in &a {
                let other = &b[client];
                let n = dsts.len().min(other.len());
                assert!(n > 10, "{dest}: only {n} multicasts");
                assert_eq!(dsts[..n], other[..n], "{dest}: client {client}");
            }
        }
    }

    #[test]
    fn a_comparison_writes_every_output_with_a_row_per_run() {
        let dir = std::env::temp_dir().join(format!("compare-test-{}", std::process::id()));
        let contenders: [Contender; 2] =
            ["ramcast".parse().unwrap(), "tram:breadth".parse().unwrap()];
        let md = compare(
            &workload(DestPolicy::Random(2)),
            &contenders,
            &dir,
            "test",
            &|_| {},
        )
        .unwrap()
        .0;
        assert!(
            md.contains("| ramcast |") && md.contains("| tram:breadth |"),
            "{md}"
        );
        // The command replays the run: its cap of 2 clients is in it.
        assert!(md.contains("--software none --max-clients 2`"), "{md}");
        let runs = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
        // Per contender: the 1-client run and the sweep's points (1 and 2 clients).
        assert_eq!(runs.lines().count(), 1 + 2 * 3, "{runs}");
        assert!(runs.lines().skip(1).all(|l| l.contains(",random:2,")));
        let cdf = std::fs::read_to_string(dir.join("latency_cdf.csv")).unwrap();
        assert!(
            cdf.starts_with("protocol,load,clients,latency_us,fraction\n"),
            "{cdf}"
        );
        for tag in [
            "ramcast,1-client",
            "ramcast,saturation",
            "tram:breadth,saturation",
        ] {
            assert!(cdf.contains(tag), "{tag}");
        }
        assert!(std::fs::metadata(dir.join("compare.png")).unwrap().len() > 10_000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
