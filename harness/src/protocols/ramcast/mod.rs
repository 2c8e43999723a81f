//! RamCast in the harness: its deployment from the common flags, its entry and its paper's
//! figures; its `check` sweep is the crate's ([`ramcast::check`]).

pub(crate) mod figures;
pub(crate) mod software;

use super::{genuine_groups, servers_then_clients, Checked, Clock, Entry, Kind, Multicast};
use super::{Run, Shape, Takes};
use crate::totals::Processes;
use multicast::{Membership, Node};
use plotters::style::RGBColor;
use ramcast::layout::{slot_bytes_for, Layout};
use ramcast::{Config, RamcastClient, RamcastServer, Timing};

/// RamCast's line in the registry.
pub(crate) const ENTRY: Entry = Entry {
    name: "ramcast",
    about: "RamCast (Le et al., Middleware 2021)",
    testbed: crate::testbed::RAMCAST,
    kind: Kind::plain::<Ramcast>(),
    takes: Takes::multicast(None),
    checked: Some(Checked::of::<ramcast::check::RamcastRun>()),
    figures: figures::FIGURES,
    software: software::PAPER_SOFTWARE,
    colours: &[("ramcast", RGBColor(214, 39, 40))],
    benches: &[],
    uncovered: &[
        (
            "RamCast Fig. 5: RamCast against WBCast (3.6x throughput, 28x lower latency)",
            "WBCast is not implemented here",
        ),
        (
            "RamCast Fig. 6: Mu, APUS and Kernel Paxos against RamCast in one group",
            "none of these atomic broadcast protocols is implemented here",
        ),
    ],
};

/// RamCast (genuine atomic multicast over RDMA writes).
pub(crate) struct Ramcast;

impl Multicast for Ramcast {
    const NAME: &'static str = "ramcast";
    type Config = Config;
    type Server = RamcastServer;
    type Client = RamcastClient;

    fn configure(s: &Shape) -> Result<Config, String> {
        let groups = genuine_groups(
            s,
            "--tree is for tree-based protocols (tram); ramcast is genuine",
        )?;
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

    fn nodes(cfg: &Config, run: Run<'_>) -> Vec<Node<RamcastServer, RamcastClient>> {
        let mut cfg = cfg.clone();
        cfg.timing = match run.clock {
            Clock::Wall => Timing::WALL,
            Clock::Sim(_) => Timing::MEASURE,
        };
        ramcast::nodes(&cfg, run.load, run.seed, run.log)
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
        // Which leaders may write `T` grants access and changes no length.
        let server = layout.server_regions(cfg.clients, &[]);
        servers_then_clients(
            [(cfg.servers(), server)],
            cfg.clients,
            layout.client_regions(),
        )
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
        crate::protocols::tests::footprint_on_groups_is_what_the_processes_declare::<Ramcast>(4);
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
