//! Skeen's atomic multicast in the harness: the message-passing baseline of TRAM's Fig. 9, one
//! process per group (not replicated), over the transport's rings. Its deployment from the
//! common flags and the figure `tram-fig9` ([`figures`]); its `check` sweep is the crate's
//! ([`skeen::check`]).

pub(crate) mod figures;

use super::{genuine_groups, servers_then_clients, Checked, Entry, Kind, Multicast};
use super::{Run, Shape, Takes, UNREPLICATED_FLAGS};
use crate::totals::Processes;
use multicast::Node;
use skeen::{Config, SkeenClient, SkeenServer};

/// Skeen's line in the registry.
pub(crate) const ENTRY: Entry = Entry {
    name: "skeen",
    about: "Skeen's atomic multicast (1985): one process per group, not replicated, message passing over rings; TRAM Fig. 9's baseline",
    testbed: crate::testbed::TRAM,
    kind: Kind::plain::<Skeen>(),
    // Every flag of a multicast deployment but --replicas: a group is one process.
    takes: Takes {
        shared: UNREPLICATED_FLAGS,
        own: None,
        note: "skeen runs one process per group, not replicated",
    },
    checked: Some(Checked::of::<skeen::check::SkeenRun>()),
    figures: figures::FIGURES,
    software: &[],
    colours: &[],
    benches: &[],
    uncovered: &[],
};

/// Skeen's algorithm (timestamps proposed by every destination, the largest final).
pub(crate) struct Skeen;

impl Multicast for Skeen {
    const NAME: &'static str = "skeen";
    type Config = Config;
    type Server = SkeenServer;
    type Client = SkeenClient;

    /// `replicas` is not Skeen's: a comparison with replicated protocols runs it on one process
    /// per group, as the TRAM paper does (its summary says so).
    fn configure(s: &Shape) -> Result<Config, String> {
        let groups = genuine_groups(
            s,
            "--tree is for tree-based protocols (tram); skeen is genuine",
        )?;
        let mut cfg = Config::new(groups, s.clients);
        cfg.ring_slots = s.slots as u32;
        cfg.slot_bytes = s
            .slot_bytes
            .unwrap_or_else(|| Config::slot_bytes_for(s.size));
        cfg.validate().map_err(|e| e.to_string())?;
        s.fits(
            cfg.slot_bytes,
            cfg.max_payload(),
            " of payload in a Skeen packet",
        )?;
        Ok(cfg)
    }

    /// Skeen has no timeouts: the clock changes nothing.
    fn nodes(cfg: &Config, run: Run<'_>) -> Vec<Node<SkeenServer, SkeenClient>> {
        skeen::nodes(cfg, run.load, run.seed, run.log)
    }

    fn slots(cfg: &Config) -> (usize, usize) {
        (cfg.slot_bytes, cfg.ring_slots as usize)
    }

    fn regions(cfg: &Config) -> String {
        let [inbox, credits] = cfg.mesh().regions();
        format!(
            "per process a mesh inbox of {} B ({} rings of {} slots of {} B, one per process) and {} B of credits; one process per group",
            inbox.len,
            cfg.groups + cfg.clients,
            cfg.ring_slots,
            cfg.slot_bytes,
            credits.len
        )
    }

    fn footprint(cfg: &Config) -> Vec<Processes> {
        let regions = cfg.mesh().regions().to_vec();
        servers_then_clients([(cfg.groups, regions.clone())], cfg.clients, regions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multicast::DestPolicy;

    /// The common flags deploy Skeen on one process per group; a message too large for a slot
    /// and a tree are refused with what to change.
    #[test]
    fn a_shape_deploys_one_process_per_group_and_bad_ones_are_refused() {
        let shape = |size| crate::compare::Workload::shape_of(4, 3, size, DestPolicy::Random(2), 5);
        let cfg = Skeen::configure(&shape(64)).unwrap();
        assert_eq!((cfg.groups, cfg.clients), (4, 5));
        let mut big = shape(64);
        big.slot_bytes = Some(128);
        big.size = 4096;
        assert!(Skeen::configure(&big).unwrap_err().contains("--slot-bytes"));
        let mut tree = shape(64);
        tree.tree = Some("base".parse().unwrap());
        assert!(Skeen::configure(&tree).unwrap_err().contains("tree-based"));
        crate::protocols::tests::footprint_is_what_the_processes_declare::<Skeen>(&shape(64));
    }
}
