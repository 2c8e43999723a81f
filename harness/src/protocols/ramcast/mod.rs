//! RamCast in the harness: its deployment from the common flags and what the harness reads of
//! its servers.

pub(crate) mod figures;
pub(crate) mod software;

use super::{Checked, Clock, Entry, Kind, Multicast, Shape, Takes, MULTICAST_FLAGS};
use crate::totals::Processes;
use multicast::{LoadSpec, Membership, Node};
use plotters::style::RGBColor;
use ramcast::layout::{slot_bytes_for, Layout};
use ramcast::{Config, RamcastClient, RamcastServer, Timing};

/// RamCast's line in the registry.
pub(crate) const ENTRY: Entry = Entry {
    name: "ramcast",
    about: "RamCast (Le et al., Middleware 2021)",
    testbed: crate::testbed::RAMCAST,
    kind: Kind::Multicast {
        deploy: super::deploy::<Ramcast>,
        variants: None,
        run_flags: None,
        delta: None,
    },
    takes: Takes {
        shared: MULTICAST_FLAGS,
        own: None,
        note: "",
    },
    checked: Some(Checked::of::<ramcast::check::RamcastRun>()),
    figures: figures::FIGURES,
    software: software::PAPER_SOFTWARE,
    colours: &[("ramcast", RGBColor(214, 39, 40))],
    benches: &[],
};

/// RamCast (genuine atomic multicast over RDMA writes).
pub(crate) struct Ramcast;

impl Multicast for Ramcast {
    const NAME: &'static str = "ramcast";
    type Config = Config;
    type Server = RamcastServer;
    type Client = RamcastClient;

    fn configure(s: &Shape) -> Result<Config, String> {
        if s.tree.is_some() {
            return Err("--tree is for tree-based protocols (tram); ramcast is genuine".into());
        }
        let groups = s.groups.unwrap_or(1);
        s.dest.validate(groups, s.dest_tree.as_ref())?;
        let mut cfg = Config::new(groups, s.replicas, s.clients);
        cfg.slots = s.slots;
        let dst_groups = s.dst_groups(groups);
        cfg.slot_bytes = s
            .slot_bytes
            .unwrap_or_else(|| slot_bytes_for(s.size, dst_groups));
        cfg.validate().map_err(|e| e.to_string())?;
        let max = Layout::new(&cfg).max_message(dst_groups);
        let per = format!(" for {dst_groups} destination group(s)");
        s.fits(cfg.slot_bytes, max, &per)?;
        Ok(cfg)
    }

    fn nodes(
        cfg: &Config,
        load: LoadSpec,
        seed: u64,
        log: bool,
        clock: Clock<'_>,
    ) -> Vec<Node<RamcastServer, RamcastClient>> {
        let mut cfg = cfg.clone();
        cfg.timing = match clock {
            Clock::Wall => Timing::WALL,
            Clock::Sim(_) => Timing::MEASURE,
        };
        ramcast::nodes(&cfg, load, seed, log)
    }

    fn slots(cfg: &Config) -> (usize, usize) {
        (cfg.slot_bytes, cfg.slots)
    }

    fn regions(cfg: &Config) -> String {
        let layout = Layout::new(cfg);
        let server = layout.server_regions(cfg.clients, &[]);
        format!(
            "per server M {} B, T {} B, CTL {} B; per client {} B",
            server[0].len,
            server[1].len,
            server[2].len,
            layout.client_regions()[0].len
        )
    }

    fn footprint(cfg: &Config) -> Vec<Processes> {
        let layout = Layout::new(cfg);
        vec![
            Processes {
                role: "servers",
                count: cfg.servers(),
                // Which leaders may write `T` grants access and changes no length.
                regions: layout.server_regions(cfg.clients, &[]),
            },
            Processes {
                role: "clients",
                count: cfg.clients,
                regions: layout.client_regions(),
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multicast::DestPolicy;

    /// A refusal states the run's memory from the footprint: it must be what RamCast's
    /// processes declare.
    #[test]
    fn ramcasts_footprint_is_what_its_processes_declare() {
        let shape = crate::compare::Workload::shape_of(4, 3, 64, DestPolicy::Random(2), 5);
        crate::protocols::tests::footprint_is_what_the_processes_declare::<Ramcast>(&shape);
    }

    /// A figure's window shorter than one message's latency completes nothing: the point is
    /// stretched until it completes some, not refused as a collapse.
    #[test]
    fn a_window_shorter_than_the_latency_is_stretched_not_refused() {
        let profile = transport::runtime::sim::Profile::load(crate::testbed::RAMCAST).unwrap();
        let none = transport::runtime::sim::Software::load("none").unwrap();
        let e = figures::experiment(
            &profile,
            &none,
            1,
            1,
            64,
            DestPolicy::Single,
            1,
            transport::Nanos(2_000),
        );
        assert_eq!(
            e.run().delivered,
            0,
            "the test needs a window without a completion"
        );
        let m = crate::figure::measure(&e).expect("stretched until it completes some");
        assert!(
            m.delivered > 0 && m.window > transport::Nanos(2_000),
            "{:?}",
            m.window
        );
    }

    /// Priced work makes RamCast slower; `none` is the model without software profiles.
    #[test]
    fn priced_work_lowers_ramcasts_throughput_and_raises_its_latency() {
        crate::protocols::tests::priced_work_lowers_throughput_and_raises_latency(&ENTRY);
    }
}
