//! Heron over the atomic multicasts of the workspace that give order timestamps, RamCast and
//! Ridge (see "Over which multicast" in the crate's documentation): which one a run uses,
//! Ridge's configuration under Heron, and the bounds a multicast server and client meet to run
//! under Heron on the simulator and on threads. The checks ([`crate::check`]) and the
//! harness's runs and figures share them.

use crate::layered::Layered;
use multicast::{Client, Server};
use std::fmt;
use std::str::FromStr;
use transport::runtime::local::LocalNic;
use transport::runtime::sim::SimNic;
use transport::Process;

/// The atomic multicast Heron runs over. Heron needs one that gives every delivery an order
/// timestamp ([`multicast::Delivery::order`]): RamCast (the thesis's) and Ridge do; TRAM orders
/// along its tree without one, so Heron cannot tag object versions with a TRAM delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// RamCast, as in the thesis.
    Ramcast,
    /// Ridge, colocated, `e_all`'s acceptors in partition 0 (see [`ridge_config`]).
    Ridge,
}

impl Over {
    /// Every multicast Heron runs over, RamCast (the default) first.
    pub const ALL: [Over; 2] = [Over::Ramcast, Over::Ridge];

    /// Its name in CSV, summaries, checking lines and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Over::Ramcast => "ramcast",
            Over::Ridge => "ridge",
        }
    }
}

impl fmt::Display for Over {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Over {
    type Err = String;

    /// An [`Over`] by its [`Over::name`].
    fn from_str(name: &str) -> Result<Over, String> {
        Over::ALL
            .into_iter()
            .find(|o| o.name() == name)
            .ok_or_else(|| format!("`{name}`: ramcast or ridge"))
    }
}

/// Ridge under Heron: `cfg`'s partitions, replicas and clients, colocated (Heron's replicas
/// are the processes), with `e_all`'s acceptors in partition 0 rather than spread over the
/// partitions (Ridge's default). Heron survives a minority of every partition failing;
/// spread, `e_all` loses its majority when one replica of each of two partitions crashes, and
/// every partition stops delivering (Heron's chaos seed 38 over Ridge). The simulator's timing.
pub fn ridge_config(cfg: &crate::Config) -> ridge::Config {
    let mut rc = ridge::Config::new(cfg.partitions, cfg.replicas, cfg.clients);
    rc.all_acceptors = ridge::config::AllAcceptors::FirstGroup;
    rc
}

/// Declares `$name`, a trait that stands for its supertraits `$bounds` (a trait alias, which
/// stable Rust lacks): every type with those bounds implements it, so the bounds are written
/// once.
macro_rules! trait_alias {
    ($(#[$doc:meta])* $name:ident = $($bounds:tt)+) => {
        $(#[$doc])*
        pub trait $name: $($bounds)+ {}
        impl<T> $name for T where T: $($bounds)+ {}
    };
}

trait_alias!(
    /// A multicast server Heron runs over, on the simulator and on threads.
    Multicast = Server
        + multicast::Observed
        + Send
        + Process<SimNic>
        + Process<LocalNic>
        + for<'a> Process<Layered<'a, SimNic>>
        + for<'a> Process<Layered<'a, LocalNic>>
);

trait_alias!(
    /// A multicast client Heron's clients run over, on the simulator and on threads.
    MulticastClient = Client<SimNic> + Client<LocalNic> + Send
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every multicast reads back from its name, and only those names read.
    #[test]
    fn names_read_back() {
        for o in Over::ALL {
            assert_eq!(o.name().parse::<Over>(), Ok(o));
            assert_eq!(o.to_string(), o.name());
        }
        assert!("tram".parse::<Over>().is_err());
    }
}
