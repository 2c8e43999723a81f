//! Heron (the Heron thesis, chapter 5) in the harness: `check` (Heron over RamCast or Ridge
//! with the key-value store and TPC-C under faults), `run` (one experiment, on the simulator or
//! on threads), the thesis's figures and its prototype's software profile. Heron is not an
//! atomic multicast protocol, so it has no line in [`super::REGISTRY`].

pub(crate) mod check;
pub(crate) mod experiment;
pub(crate) mod figures;
pub(crate) mod over;
pub(crate) mod run;
pub(crate) mod software;
pub(crate) mod tcp;
pub(crate) mod transfer;

/// The application Heron replicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum App {
    /// TPC-C, one warehouse per partition (section 5.2.1).
    Tpcc,
    /// The key-value store of counters (1 or 2 keys per request, 60% spanning two
    /// partitions).
    Kv,
}

/// The atomic multicast Heron runs over. Heron needs one that gives every delivery an order
/// timestamp ([`multicast::Delivery::order`]): RamCast (the thesis's) and Ridge do; TRAM orders
/// along its tree without one, so Heron cannot tag object versions with a TRAM delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Over {
    /// RamCast, as in the thesis.
    Ramcast,
    /// Ridge, colocated, `e_all`'s acceptors in partition 0 (see [`experiment::ridge_config`]).
    Ridge,
}

impl Over {
    /// Its name in CSV and summaries.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Over::Ramcast => "ramcast",
            Over::Ridge => "ridge",
        }
    }
}
