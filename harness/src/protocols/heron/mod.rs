//! Heron (the Heron thesis, chapter 5) in the harness: `check` (Heron over RamCast with the
//! key-value store and TPC-C under faults), `run` (one experiment, on the simulator or on
//! threads), the thesis's figures and its prototype's software profile. Heron over the other
//! multicast protocols (`compare`, `heron-over`) and Figure 5.6 are the next steps of issue 15.
//! Heron is not an atomic multicast protocol, so it has no line in [`super::REGISTRY`].

pub(crate) mod check;
pub(crate) mod experiment;
pub(crate) mod figures;
pub(crate) mod run;
pub(crate) mod software;

/// The application Heron replicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum App {
    /// TPC-C, one warehouse per partition (section 5.2.1).
    Tpcc,
    /// The key-value store of counters (1 or 2 keys per request, 60% spanning two
    /// partitions).
    Kv,
}
