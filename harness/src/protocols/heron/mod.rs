//! Heron (the Heron thesis, chapter 5) in the harness: `check` (Heron over RamCast or Ridge
//! with the key-value store and TPC-C under faults; the crate's [`heron::check`]), `run` (one experiment, on the simulator or
//! on threads), the thesis's figures and its prototype's software profile. Heron is not an
//! atomic multicast protocol: its registry entry runs it as a [`super::Service`].

pub(crate) mod experiment;
pub(crate) mod figures;
pub(crate) mod over;
pub(crate) mod run;
pub(crate) mod software;
pub(crate) mod tcp;
pub(crate) mod transfer;

use super::{Checked, Entry, Kind, Service, Takes};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
pub(crate) use heron::over::Over;
use plotters::style::RGBColor;

/// Heron's own `run` flags.
#[derive(clap::Args, Debug)]
#[group(skip)]
#[command(next_help_heading = "Heron (--protocol heron)")]
pub(crate) struct Flags {
    /// Heron: the replicated application.
    #[arg(long, value_enum)]
    pub(crate) app: Option<App>,
    /// Heron: the atomic multicast underneath, one with order timestamps (TRAM has none)
    /// [default: ramcast, the thesis's].
    #[arg(long, value_parser = over_values())]
    pub(crate) over: Option<Over>,
    /// Heron's TPC-C: the specification's cardinalities divided by this (items, customers,
    /// new orders; 10 districts kept) [default: 100].
    #[arg(long)]
    pub(crate) scale: Option<u64>,
    /// Heron's TPC-C: order rows (and history rows) per district, the initial ones included;
    /// a New-Order or Payment finding its district full changes nothing and the run says so
    /// [default: 2000].
    #[arg(long)]
    pub(crate) capacity: Option<u64>,
}

/// Heron's line in the registry.
pub(crate) const ENTRY: Entry = Entry {
    name: "heron",
    about: "Heron (Le, thesis, 2022, chapter 5): partitioned state machine replication over RamCast (or --over ridge), one warehouse per partition (--groups); takes --app, --scale, --capacity, --over",
    testbed: crate::testbed::HERON,
    kind: Kind::Service(Service {
        run: run::command,
        serve: run::serve,
        compare: Ok(over::compare_command),
    }),
    // A deployment (partitions as --groups) and a window: the application decides what
    // requests carry and where they go.
    takes: Takes {
        shared: &[
            "groups",
            "replicas",
            "clients",
            "duration",
            "warmup",
            "slot_bytes",
            "slots",
            "out",
        ],
        own: Some(<Flags as clap::Args>::augment_args),
        note: "the application decides what requests carry and where they go",
    },
    checked: Some(Checked::of::<heron::check::HeronRun>()),
    figures: figures::FIGURES,
    software: software::PAPER_SOFTWARE,
    colours: &[("heron", RGBColor(227, 119, 194))],
    benches: &[],
    uncovered: &[
        (
            "Heron Fig. 5.3 against DynaStar (17-27x throughput, 43.9-72.0x lower latency)",
            "DynaStar is not implemented here",
        ),
    ],
};

/// The application Heron replicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum App {
    /// TPC-C, one warehouse per partition (section 5.2.1).
    Tpcc,
    /// The key-value store of counters (1 or 2 keys per request, 60% spanning two
    /// partitions).
    Kv,
}

/// `--over`'s values: [`Over`]'s names, each with its help (word for word what clap drew from
/// the variants' doc comments while `Over` was the harness's own `ValueEnum`).
fn over_values() -> impl TypedValueParser<Value = Over> {
    PossibleValuesParser::new(Over::ALL.map(|o| {
        PossibleValue::new(o.name()).help(match o {
            Over::Ramcast => "RamCast, as in the thesis",
            Over::Ridge => {
                "Ridge, colocated, `e_all`'s acceptors in partition 0 (see `heron::over::ridge_config`)"
            }
        })
    }))
    .map(|name| name.parse::<Over>().expect("one of the possible values"))
}
