//! TRAM in the harness: its deployment from the common flags (the tree is its variant), its
//! entry and its paper's figures; its `check` sweep is the crate's ([`tram::check`]).

pub(crate) mod fig2;
pub(crate) mod figure_notes;
pub(crate) mod figures;
pub(crate) mod software;
pub(crate) mod table1;

use super::Variants;
use super::{servers_then_clients, Checked, Clock, Entry, Kind, Multicast, Own, Run, Shape, Takes};
use crate::totals::Processes;
use multicast::{GroupId, Membership, Node, Tree};
use plotters::style::RGBColor;
use tram::layout::Layout;
use tram::{Config, Timing, TramClient, TramServer};

/// TRAM's own `run` flags.
#[derive(clap::Args, Debug)]
#[group(skip)]
#[command(next_help_heading = "TRAM (--protocol tram)")]
pub(crate) struct Flags {
    /// The overlay tree (tram): base, breadth, depth, simple, or a parent array such as
    /// [-1,0,0,1] (-1 marks the root) [default: base].
    #[arg(long)]
    pub(crate) tree: Option<multicast::Tree>,
    /// Slots of each group's circular LOG (tram).
    #[arg(long, default_value_t = Options::default().log_slots)]
    pub(crate) log_slots: usize,
}

/// What TRAM takes that no other protocol does, in a shape ([`super::Own`]).
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// Slots of each group's LOG.
    pub(crate) log_slots: usize,
}

impl Default for Options {
    /// What `compare` runs with and `--log-slots` defaults to.
    fn default() -> Options {
        Options { log_slots: 64 }
    }
}

/// TRAM's line in the registry.
pub(crate) const ENTRY: Entry = Entry {
    name: "tram",
    about: "TRAM (Martignetti et al., 2025): tree-based; takes a tree",
    testbed: crate::testbed::TRAM,
    kind: Kind::Multicast {
        deploy: super::deploy::<Tram>,
        variants: Some(TREES),
        run_flags: Some(|own, shape| {
            let flags: Flags = own.get();
            shape.tree = flags.tree;
            shape.own = Own::new(Options {
                log_slots: flags.log_slots,
            });
        }),
        delta: None,
        tuning: Some("TRAM: a client's buffer is its HM buffer, 64 slots per LOG"),
    },
    takes: Takes::multicast(Some(<Flags as clap::Args>::augment_args)),
    checked: Some(Checked::of::<tram::check::TramRun>()),
    figures: figures::FIGURES,
    software: software::PAPER_SOFTWARE,
    colours: &[
        ("tram:base", RGBColor(31, 119, 180)),
        ("tram:breadth", RGBColor(44, 160, 44)),
        ("tram:depth", RGBColor(255, 127, 14)),
        ("tram:simple", RGBColor(148, 103, 189)),
    ],
    benches: &[],
    uncovered: &[(
        "TRAM Fig. 9's ByzCast curve (message passing, Byzantine fault tolerant)",
        "ByzCast is not implemented here; the message-passing baseline is Skeen's algorithm \
             (`tram-fig9`)",
    )],
};

/// TRAM's variants: its overlay tree, a preset (base, breadth, depth, simple) or a parent
/// array such as `[-1,0,0,1]`.
pub(crate) const TREES: Variants = Variants {
    what: "TREE",
    default: "base",
    apply: |name, shape| {
        shape.tree = Some(name.parse::<Tree>().map_err(|e| e.to_string())?);
        Ok(())
    },
};

/// TRAM (tree-based atomic multicast over RDMA).
pub(crate) struct Tram;

impl Multicast for Tram {
    const NAME: &'static str = "tram";
    type Config = Config;
    type Server = TramServer;
    type Client = TramClient;

    fn configure(s: &Shape) -> Result<Config, String> {
        let tree = s
            .tree
            .clone()
            .unwrap_or_else(|| Tree::preset("base").expect("preset"));
        if let Some(g) = s.groups.filter(|&g| g != tree.groups()) {
            return Err(format!(
                "--groups {g} does not match the tree {tree}, which has {} groups; leave --groups out for tram",
                tree.groups()
            ));
        }
        s.dest.validate(tree.groups(), Some(&tree))?;
        let mut cfg = Config::new(tree, s.replicas, s.clients);
        cfg.hm_slots = s.slots;
        cfg.log_slots = s.own.get::<Options>().log_slots;
        cfg.slot_bytes = s
            .slot_bytes
            .unwrap_or_else(|| Layout::slot_bytes_for(s.size));
        cfg.validate().map_err(|e| e.to_string())?;
        s.fits(cfg.slot_bytes, Layout::max_message(cfg.slot_bytes), "")?;
        Ok(cfg)
    }

    fn nodes(cfg: &Config, run: Run<'_>) -> Vec<Node<TramServer, TramClient>> {
        let mut cfg = cfg.clone();
        if let Clock::Wall = run.clock {
            cfg.timing = Timing::WALL;
        }
        tram::nodes(&cfg, run.load, run.seed, run.log)
    }

    fn slots(cfg: &Config) -> (usize, usize) {
        (cfg.slot_bytes, cfg.hm_slots)
    }

    fn tree(cfg: &Config) -> Option<Tree> {
        Some(cfg.tree.clone())
    }

    fn regions(cfg: &Config) -> String {
        let (hm, log, ctl) = TramServer::region_bytes(cfg, cfg.tree.root());
        format!(
            "per server of the root HM {hm} B, LOG {log} B ({} slots), CTL {ctl} B; per client {} B",
            cfg.log_slots,
            Layout::resp_bytes(cfg)
        )
    }

    fn footprint(cfg: &Config) -> Vec<Processes> {
        // A group's regions depend on its place in the tree (its children's credits).
        let servers = (0..cfg.group_count()).map(|g| {
            (
                cfg.replicas,
                Layout::new(cfg, GroupId(g as u8)).server_regions(),
            )
        });
        servers_then_clients(servers, cfg.clients, Layout::client_regions(cfg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multicast::DestPolicy;

    /// A refusal states the run's memory from the footprint: it must be what TRAM's processes
    /// declare, a group's regions depending on its children (the base tree has 8 groups).
    #[test]
    fn trams_footprint_is_what_its_processes_declare() {
        crate::protocols::tests::footprint_on_groups_is_what_the_processes_declare::<Tram>(8);
    }

    /// `--log-slots` reaches TRAM's configuration through the shape; `compare` runs with
    /// the default.
    #[test]
    fn log_slots_reach_trams_configuration() {
        let mut shape = crate::compare::Workload::shape_of(8, 3, 64, DestPolicy::Random(2), 5);
        assert_eq!(Tram::configure(&shape).unwrap().log_slots, 64);
        shape.own = Own::new(Options { log_slots: 32 });
        assert_eq!(Tram::configure(&shape).unwrap().log_slots, 32);
    }

    /// Priced work makes TRAM slower; `none` is the model without software profiles.
    #[test]
    fn priced_work_lowers_trams_throughput_and_raises_its_latency() {
        crate::protocols::tests::priced_work_lowers_throughput_and_raises_latency(&ENTRY);
    }
}
