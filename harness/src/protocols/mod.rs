//! The protocols the harness runs, one folder each, and [`REGISTRY`], which lists them: one
//! [`Entry`] per protocol (its name, testbed, how `run` runs it, the flags it takes, its
//! `check` sweep, its paper's figures and software profiles, its plot colours and benchmarks).
//! The commands take everything from the registry and never name a protocol: `run`, `compare`
//! and the figures deploy an atomic multicast protocol through [`Deployment`]; RDMC and
//! Heron, which are not atomic multicast, run as a [`Service`]; `check` drives each protocol's
//! seeded runs through [`sweep::SeedRun`].
//!
//! Adding a protocol (see `harness/README.md`): its crate (with [`multicast::Observed`] for its
//! server and its seeded runs in its `check` module); a folder here with a unit type
//! implementing [`Multicast`], its paper's figures and its `ENTRY`; one line in [`REGISTRY`]
//! (with its `mod`).

pub(crate) mod heron;
pub(crate) mod ramcast;
pub(crate) mod rdmc;
pub(crate) mod ridge;
pub(crate) mod skeen;
pub(crate) mod tram;

use crate::cluster::ClusterFile;
pub(crate) use engine::protocol::*;
use std::path::Path;
use std::process::ExitCode;
use transport::runtime::sim::Software;

/// The `run` flags a protocol takes besides those of every run ([`EVERY_RUN`]); `run` refuses
/// any other flag given on the command line, naming the protocols that take it
/// ([`crate::flags`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Takes {
    /// Flags of several protocols it takes, by clap id (`slot_bytes`).
    pub(crate) shared: &'static [&'static str],
    /// Its own flags: the `clap::Args` its folder declares (`Flags::augment_args`).
    pub(crate) own: Option<fn(clap::Command) -> clap::Command>,
    /// Why it takes what it takes, for a refusal (empty: nothing to add).
    pub(crate) note: &'static str,
}

/// The `run` flags of every protocol, by clap id: where and how it runs.
pub(crate) const EVERY_RUN: &[&str] = &[
    "protocol",
    "runtime",
    "profile",
    "software",
    "seed",
    "threads",
    "nic_thread",
    "fault",
    "cluster",
];

/// The `run` flags of the atomic multicast protocols, by clap id: a deployment, its load and
/// its window. `replicas` comes first, so that [`UNREPLICATED_FLAGS`] are the others.
pub(crate) const MULTICAST_FLAGS: &[&str] = &[
    "replicas",
    "groups",
    "clients",
    "size",
    "dest",
    "duration",
    "warmup",
    "posting",
    "slot_bytes",
    "slots",
    "out",
    "log",
    "ignore_limits",
];

/// The `run` flags of an atomic multicast protocol that runs one process per group (Skeen):
/// those of [`MULTICAST_FLAGS`] but `replicas`.
pub(crate) const UNREPLICATED_FLAGS: &[&str] = MULTICAST_FLAGS.split_at(1).1;

impl Takes {
    /// What an atomic multicast protocol with replicated groups takes: [`MULTICAST_FLAGS`] and
    /// its own flags, if it declares any.
    pub(crate) const fn multicast(own: Option<fn(clap::Command) -> clap::Command>) -> Takes {
        Takes {
            shared: MULTICAST_FLAGS,
            own,
            note: "",
        }
    }
}

/// A registered protocol: everything the commands need of it.
pub(crate) struct Entry {
    /// Its name on the command line.
    pub(crate) name: &'static str,
    /// One line for `--help`.
    pub(crate) about: &'static str,
    /// The profile it runs on unless told otherwise (its paper's testbed).
    pub(crate) testbed: &'static str,
    /// How `run` runs it.
    pub(crate) kind: Kind,
    /// The `run` flags it takes.
    pub(crate) takes: Takes,
    /// Its seeded sweep under faults (`check --protocol NAME`), if it has one.
    pub(crate) checked: Option<Checked>,
    /// Its paper's figures and tables (`figure NAME`), in the order the index lists them.
    pub(crate) figures: &'static [PaperFigure],
    /// Its paper prototype's software profiles, each with the published number `calibrate
    /// paper` fits it to.
    pub(crate) software: &'static [crate::calibrate::PaperSoftware],
    /// Its fixed colours in plots, by label as `compare` names it (`tram:breadth`; its default
    /// variant, as in `ridge:ridge`, is the protocol's own label), the same in every panel and
    /// comparison ([`crate::plot::protocol_colour`]); none: coloured by position.
    pub(crate) colours: &'static [(&'static str, plotters::style::RGBColor)],
    /// The benchmarks it offers under `harness bench` (RDMC's `bcast`).
    pub(crate) benches: &'static [Bench],
    /// Its papers' published targets no figure judges, each with the reason: the results index
    /// lists them so a reader knows what was left out and why.
    pub(crate) uncovered: &'static [(&'static str, &'static str)],
}

/// A benchmark a protocol offers: `harness bench NAME`, its flags declared in its folder.
#[derive(Debug)]
pub(crate) struct Bench {
    /// Its name on the command line.
    pub(crate) name: &'static str,
    /// Its subcommand: the name, its help and its flags.
    pub(crate) command: fn() -> clap::Command,
    /// Runs it with the flags given.
    pub(crate) run: fn(&clap::ArgMatches) -> Result<ExitCode, String>,
}

/// Every benchmark the protocols offer, in registry order.
pub(crate) fn benches() -> impl Iterator<Item = &'static Bench> {
    REGISTRY.iter().flat_map(|e| e.benches.iter())
}

/// How `run` runs a protocol.
pub(crate) enum Kind {
    /// An atomic multicast protocol: deployed from the common flags, compared with the others.
    Multicast {
        /// Deploys it as `shape` asks.
        deploy: fn(&Shape) -> Result<Deployment, String>,
        /// Its variants, as `compare` names them (`tram:breadth`), if it has any.
        variants: Option<Variants>,
        /// Sets in a shape what its own `run` flags ask for (its folder's `Flags`, read back
        /// from [`OwnFlags`]), if it has flags of its own.
        run_flags: Option<fn(&OwnFlags, &mut Shape)>,
        /// What `compare --delta` sets in it, if it takes a Delta.
        delta: Option<Delta>,
        /// Its buffers beyond the clients' slots, for a comparison's tuning line, if it has
        /// any of its own.
        tuning: Option<&'static str>,
    },
    /// Not an atomic multicast (RDMC's bulk transfers, Heron's replicated service): it runs,
    /// serves tcp nodes and compares its own way.
    Service(Service),
}

impl Kind {
    /// An atomic multicast protocol deployed as `P` without variants, flags of its own or a
    /// Delta.
    pub(crate) const fn plain<P: Multicast>() -> Kind {
        Kind::Multicast {
            deploy: deploy::<P>,
            variants: None,
            run_flags: None,
            delta: None,
            tuning: None,
        }
    }
}

/// The groups of a genuine protocol's deployment (one without an overlay tree) as `s` asks
/// (one unless told), once the destinations are valid among them; a tree is refused with
/// `no_tree`.
pub(crate) fn genuine_groups(s: &Shape, no_tree: &str) -> Result<usize, String> {
    if s.tree.is_some() {
        return Err(no_tree.into());
    }
    let groups = s.groups.unwrap_or(1);
    s.dest.validate(groups, s.dest_tree.as_ref())?;
    Ok(groups)
}

/// A footprint of servers and clients ([`Multicast::footprint`]): the servers of each kind in
/// `servers` (how many, and the regions each of them declares), then `clients` clients that
/// declare `client_regions`.
pub(crate) fn servers_then_clients(
    servers: impl IntoIterator<Item = (usize, Vec<transport::RegionSpec>)>,
    clients: usize,
    client_regions: Vec<transport::RegionSpec>,
) -> Vec<crate::totals::Processes> {
    let role = |role, (count, regions)| crate::totals::Processes {
        role,
        count,
        regions,
    };
    servers
        .into_iter()
        .map(|s| role("servers", s))
        .chain([role("clients", (clients, client_regions))])
        .collect()
}

/// What a protocol that is not an atomic multicast does for each command.
pub(crate) struct Service {
    /// `harness run --protocol NAME`.
    pub(crate) run: fn(crate::RunArgs) -> Result<ExitCode, String>,
    /// `harness node`: node `id` of a tcp run of these arguments, as the cluster file places
    /// it; writes its report to the path.
    pub(crate) serve: fn(&crate::RunArgs, &ClusterFile, usize, &Path) -> Result<(), String>,
    /// `harness compare --protocols NAME:...` when every contender is one of its own
    /// (Heron over each multicast); else why it does not compare (RDMC).
    pub(crate) compare: Result<CompareService, &'static str>,
}

/// A service's own comparison: the `compare` arguments and its contenders as named.
pub(crate) type CompareService = fn(&crate::CompareArgs, &[String]) -> Result<ExitCode, String>;

/// How a protocol's variants are named and applied.
pub(crate) struct Variants {
    /// What a variant is, for messages (`TREE`).
    pub(crate) what: &'static str,
    /// The variant when none is named.
    pub(crate) default: &'static str,
    /// Sets variant `name` in a shape; an error says which variants exist.
    pub(crate) apply: fn(&str, &mut Shape) -> Result<(), String>,
}

/// What `compare --delta` means to a protocol that takes it: a time its folder sets (Ridge's
/// Delta), which the comparison's summary states.
pub(crate) struct Delta {
    /// What it sets, for messages (`Ridge's Delta`).
    pub(crate) what: &'static str,
    /// Sets it in a shape.
    pub(crate) apply: fn(transport::Nanos, &mut Shape),
    /// The summary's clause on it: its value, `--delta`'s if given, and what it does.
    pub(crate) note: fn(Option<transport::Nanos>) -> String,
}

/// Every protocol of the workspace, in the order `--help`, `check` and the results index list
/// them.
pub(crate) const REGISTRY: &[Entry] = &[
    ramcast::ENTRY,
    tram::ENTRY,
    rdmc::ENTRY,
    ridge::ENTRY,
    heron::ENTRY,
    skeen::ENTRY,
];

/// What a figure is made with: where it goes (CSV, PNG, `summary.md` under `out`), the commit
/// it stamps, whether `quick` (fewer points, shorter runs), the software profile every run
/// charges, and where a line per measured point goes.
#[derive(Clone, Copy)]
pub(crate) struct Making<'a> {
    pub(crate) out: &'a Path,
    pub(crate) commit: &'a str,
    pub(crate) quick: bool,
    pub(crate) software: &'a Software,
    pub(crate) progress: Progress<'a>,
}

/// A figure's progress sink: a line per measured point.
pub(crate) type Progress<'a> = &'a (dyn Fn(&str) + Sync);

impl<'a> Making<'a> {
    /// Its parts, for a figure function to name them.
    pub(crate) fn parts(&self) -> (&'a Path, &'a str, bool, &'a Software, Progress<'a>) {
        (
            self.out,
            self.commit,
            self.quick,
            self.software,
            self.progress,
        )
    }
}

/// Makes a figure as [`Making`] says.
pub(crate) type MakeFigure = fn(&Making<'_>) -> Result<(), String>;

/// A paper figure (or table) the harness reproduces: `harness figure NAME`.
#[derive(Debug)]
pub(crate) struct PaperFigure {
    /// Its name on the command line, also its directory under `results/`.
    pub(crate) name: &'static str,
    /// One line for `--help` and the results index.
    pub(crate) about: &'static str,
    /// The profile it runs on, as `harness figure` announces it.
    pub(crate) profile: &'static str,
    /// The software profile of the paper's prototype: the one its summary leads with (see
    /// [`paper_software`]).
    pub(crate) software: &'static str,
    /// Makes it.
    pub(crate) make: MakeFigure,
}

/// Every paper prototype's software profile, in registry order. RDMC has none: its C++
/// prototype's software overhead is about 1% of a transfer (RDMC Fig. 4), no published number
/// isolates it, and fitting one would charge a bandwidth gap to the CPU; RDMC runs with
/// `measured` where a priced profile is asked for.
pub(crate) fn paper_software() -> impl Iterator<Item = &'static crate::calibrate::PaperSoftware> {
    REGISTRY.iter().flat_map(|e| e.software.iter())
}

/// Every paper figure, in registry order.
pub(crate) fn figures() -> impl Iterator<Item = &'static PaperFigure> {
    REGISTRY.iter().flat_map(|e| e.figures.iter())
}

/// `harness figure NAME` and `harness reproduce NAME...`: every figure's name, with its help.
pub(crate) fn figure_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        figures().map(|f| clap::builder::PossibleValue::new(f.name).help(f.about)),
    )
}

/// What `harness check --protocol NAME` sweeps, besides the transport model's chaos check.
#[derive(Debug)]
pub(crate) struct Checked {
    /// Its name on the command line.
    pub(crate) name: &'static str,
    /// One line for `--help`: what its sweep injects and checks.
    pub(crate) about: &'static str,
    /// The profile its sweep runs on unless told otherwise.
    pub(crate) testbed: &'static str,
    /// Runs the sweep `check` asks for.
    pub(crate) sweep: fn(&crate::check::Plan) -> Result<std::process::ExitCode, String>,
    /// Checks a `--replay` line is one of its runs (before anything is printed).
    pub(crate) replay: fn(&str) -> Result<(), String>,
    /// Prints a sweep's report (merged from shards).
    pub(crate) report: fn(&sweep::Report) -> std::process::ExitCode,
}

impl Checked {
    /// The entry of the protocol whose seeded runs are `R`.
    pub(crate) const fn of<R: sweep::SeedRun>() -> Checked {
        Checked {
            name: R::PROTOCOL,
            about: R::ABOUT,
            testbed: R::TESTBED,
            sweep: crate::check::sweep::<R>,
            replay: |line| crate::check::replayed::<R>(line).map(drop),
            report: crate::check::print_report::<R>,
        }
    }
}

/// The `run` flags the protocols declare themselves: the registry adds each one's
/// ([`Takes::own`]) to the command, and a protocol's folder reads its own back
/// ([`OwnFlags::get`]). The command line names no protocol's flags.
#[derive(Clone, Debug, Default)]
pub(crate) struct OwnFlags(clap::ArgMatches);

impl OwnFlags {
    /// The flags `F` (a protocol folder's `clap::Args`) as the command line gave them.
    pub(crate) fn get<F: clap::FromArgMatches>(&self) -> F {
        F::from_arg_matches(&self.0)
            .unwrap_or_else(|e| panic!("the registry adds every protocol's own flags: {e}"))
    }
}

impl clap::FromArgMatches for OwnFlags {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(OwnFlags(m.clone()))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0 = m.clone();
        Ok(())
    }
}

impl clap::Args for OwnFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        REGISTRY
            .iter()
            .filter_map(|e| e.takes.own)
            .fold(cmd, |cmd, augment| augment(cmd))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// The published targets no figure judges, in registry order, each with the reason.
pub(crate) fn uncovered() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    REGISTRY.iter().flat_map(|e| e.uncovered)
}

/// Every protocol `harness check` sweeps under faults, in registry order.
pub(crate) fn checked() -> impl Iterator<Item = &'static Checked> {
    REGISTRY.iter().filter_map(|e| e.checked.as_ref())
}

/// The atomic multicast protocol called `name`.
pub(crate) fn find(name: &str) -> Result<&'static Entry, String> {
    let multicast = || {
        REGISTRY
            .iter()
            .filter(|e| matches!(e.kind, Kind::Multicast { .. }))
    };
    match entry(name) {
        Some(e) if matches!(e.kind, Kind::Multicast { .. }) => Ok(e),
        Some(Entry {
            kind: Kind::Service(Service {
                compare: Err(why), ..
            }),
            ..
        }) => Err((*why).into()),
        Some(_) => Err(format!(
            "{name} is not an atomic multicast protocol: use `harness run --protocol {name}`"
        )),
        None => {
            let names: Vec<&str> = multicast().map(|e| e.name).collect();
            Err(format!(
                "unknown protocol `{name}`: the atomic multicast protocols are {}",
                names.join(", ")
            ))
        }
    }
}

impl Entry {
    /// Deploys this atomic multicast protocol as `shape` asks (a service is refused).
    pub(crate) fn deploy(&self, shape: &Shape) -> Result<Deployment, String> {
        match &self.kind {
            Kind::Multicast { deploy, .. } => deploy(shape),
            Kind::Service(_) => Err(format!("{} is not an atomic multicast protocol", self.name)),
        }
    }

    /// Its variants, as `compare` names them, if it has any.
    pub(crate) fn variants(&self) -> Option<&Variants> {
        match &self.kind {
            Kind::Multicast { variants, .. } => variants.as_ref(),
            Kind::Service(_) => None,
        }
    }

    /// What `compare --delta` sets in it, if it takes a Delta.
    pub(crate) fn delta(&self) -> Option<&Delta> {
        match &self.kind {
            Kind::Multicast { delta, .. } => delta.as_ref(),
            Kind::Service(_) => None,
        }
    }

    /// Its buffers beyond the clients' slots, for a comparison's tuning line.
    pub(crate) fn tuning(&self) -> Option<&'static str> {
        match &self.kind {
            Kind::Multicast { tuning, .. } => *tuning,
            Kind::Service(_) => None,
        }
    }

    /// Sets in `shape` what its own `run` flags in `own` ask for, if it has any.
    pub(crate) fn run_flags(&self, own: &OwnFlags, shape: &mut Shape) {
        if let Kind::Multicast {
            run_flags: Some(set),
            ..
        } = &self.kind
        {
            set(own, shape);
        }
    }
}

/// The protocol called `name`, whatever it is.
pub(crate) fn entry(name: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == name)
}

#[cfg(test)]
pub(crate) mod tests {
    use multicast::{LoadSpec, Membership};
    use std::sync::Arc;
    use transport::runtime::sim::SimNic;
    use transport::Process;
    /// Priced work makes protocol `p` slower on a workload of 8 groups of 3 and 4 clients
    /// (each protocol's folder calls it), and `none` is the model without software profiles:
    /// the same numbers.
    pub(crate) fn priced_work_lowers_throughput_and_raises_latency(p: &super::Entry) {
        let measure = |software: Software| {
            let shape =
                crate::compare::Workload::shape_of(8, 3, 64, multicast::DestPolicy::Random(2), 4);
            let e = crate::experiment::Experiment {
                deploy: p.deploy(&shape).unwrap(),
                dest: multicast::DestPolicy::Random(2),
                size: 64,
                warmup: transport::Nanos(100_000),
                duration: transport::Nanos(1_000_000),
                runtime: crate::runtime::Runtime::Sim,
                profile: transport::runtime::sim::Profile::load("r320-cx3").unwrap(),
                software,
                seed: 1,
                log: false,
                dest_tree: None,
            };
            let m = e.run();
            (m.throughput, m.latency.value_at_quantile(0.5))
        };
        let name = p.name;
        let free = measure(Software::none());
        let priced = measure(sweep::priced_software());
        assert!(free.0 > 0.0, "{name} delivered nothing");
        assert!(priced.0 < free.0, "{name}: {priced:?} against {free:?}");
        assert!(priced.1 > free.1, "{name}: {priced:?} against {free:?}");
    }

    use super::*;
    use transport::{Nanos, RegionSpec};

    /// [`footprint_is_what_the_processes_declare`] on the shape of `compare`'s workload of
    /// `groups` groups of 3 and 5 clients multicasting 64 bytes to 2 groups.
    pub(crate) fn footprint_on_groups_is_what_the_processes_declare<P: Multicast>(groups: usize) {
        let shape =
            crate::compare::Workload::shape_of(groups, 3, 64, multicast::DestPolicy::Random(2), 5);
        footprint_is_what_the_processes_declare::<P>(&shape);
    }

    /// A refusal states a run's memory from [`Multicast::footprint`], not from built processes:
    /// it must list the regions the processes declare, process by process in id order, or the
    /// refusal would misstate the run. Each protocol's folder may call it on its own shapes.
    pub(crate) fn footprint_is_what_the_processes_declare<P: Multicast>(shape: &Shape) {
        let cfg = P::configure(shape).unwrap();
        let run = Run {
            load: LoadSpec {
                dest: shape.dest,
                groups: cfg.group_count(),
                tree: P::tree(&cfg).map(Arc::new),
                size: shape.size,
                warmup_end: Nanos(0),
                stop_at: Nanos(1),
            },
            seed: 1,
            log: false,
            clock: Clock::Wall,
        };
        let lens = |regions: &[RegionSpec]| regions.iter().map(|r| r.len).collect::<Vec<_>>();
        let declared: Vec<Vec<usize>> = P::nodes(&cfg, run)
            .iter()
            .map(|n| lens(&Process::<SimNic>::regions(n)))
            .collect();
        let estimated: Vec<Vec<usize>> = P::footprint(&cfg)
            .iter()
            .flat_map(|p| std::iter::repeat_n(lens(&p.regions), p.count))
            .collect();
        assert_eq!(declared, estimated, "{}", P::NAME);
    }
}
