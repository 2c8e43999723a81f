//! Ridge in the harness: its deployment from the common flags, its own options and counters,
//! and its entry (its `check` sweep is the crate's, [`ridge::check`]).

pub(crate) mod evaluation;
pub(crate) mod figures;
pub(crate) mod software;

use super::{genuine_groups, Checked, Clock, Delta, Entry, Kind, Multicast, Own, Shape, Takes};
use super::{Run, Variants};
use crate::totals::Processes;
use multicast::{Membership, Node};
use plotters::style::RGBColor;
use ridge::{Config, RidgeClient, RidgeServer};
use transport::Nanos;

/// Ridge's own `run` flags, also what it takes in a shape ([`super::Own`]): `compare` sets its
/// dissemination (a variant) and its Delta (`--delta`).
#[derive(clap::Args, Clone, Debug, Default)]
#[group(skip)]
#[command(next_help_heading = "Ridge (--protocol ridge)")]
pub(crate) struct Flags {
    /// Ridge: an idle ensemble's coordinator proposes a null message after this long, and a
    /// learner waits up to about this long for an idle ensemble [default: 1ms, the paper's].
    #[arg(long, value_parser = crate::experiment::parse_duration)]
    pub(crate) delta: Option<Nanos>,
    /// Ridge: acceptors per ensemble, 2f + 1, odd; colocated, at most --replicas: a group's
    /// first servers, the others learners only [default: every server when --replicas is
    /// odd, all but one when it is even]. The paper's evaluation runs 3, dedicated.
    #[arg(long)]
    pub(crate) acceptors: Option<usize>,
    /// Ridge: where the acceptors run: `colocated` (on the groups' servers) or `dedicated`
    /// (--acceptors processes of their own per ensemble, started after the clients; the
    /// servers learn only, as in the paper's evaluation) [default: colocated].
    #[arg(long)]
    pub(crate) placement: Option<::ridge::Placement>,
    /// Ridge: how Phase 2 disseminates: `ridge` (the paper's quorum chain and rotating
    /// distributors), `ring` (Ring Paxos: the value along the learners) or `direct` (LibPaxos:
    /// 2a to every acceptor, 2b with the value to every learner) [default: ridge].
    #[arg(long)]
    pub(crate) dissemination: Option<::ridge::paxos::Dissemination>,
    /// Ridge: optimistic deliveries (section 4.5) with this wait: clients also send each
    /// message to the learners, which deliver it optimistically once their clock reads its
    /// timestamp plus the wait; the run reports how many and the mistakes (an optimistic
    /// delivery out of the atomic order). Coordinators wait as long before proposing.
    #[arg(long, value_parser = crate::experiment::parse_duration)]
    pub(crate) optimistic: Option<Nanos>,
}

/// Ridge's line in the registry.
pub(crate) const ENTRY: Entry = Entry {
    name: "ridge",
    about: "Ridge (Bezerra, Cason, Pedone, 2015): Paxos ensembles, rotating distributors, deterministic merge; variants ridge:ring, ridge:direct (its evaluation's baselines)",
    testbed: crate::testbed::RIDGE,
    kind: Kind::Multicast {
        deploy: super::deploy::<Ridge>,
        variants: Some(DISSEMINATIONS),
        run_flags: Some(|own, shape| shape.own = Own::new(own.get::<Flags>())),
        delta: Some(Delta {
            what: "Ridge's Delta",
            apply: |delta, shape| {
                shape.own = Own::new(Flags {
                    delta: Some(delta),
                    ..shape.own.get()
                })
            },
            note: |delta| {
                format!(
                    "Ridge's Delta {} ({}): an idle ensemble proposes a null message after it and a \
                     learner waits up to about it, so at light load Ridge's latency is about Delta, \
                     not its protocol steps (set it with `--delta`)",
                    delta.unwrap_or(Nanos(1_000_000)),
                    if delta.is_some() { "--delta" } else { "the paper's" }
                )
            },
        }),
        tuning: None,
    },
    takes: Takes::multicast(Some(<Flags as clap::Args>::augment_args)),
    checked: Some(Checked::of::<ridge::check::RidgeRun>()),
    figures: figures::FIGURES,
    software: software::PAPER_SOFTWARE,
    colours: &[
        ("ridge", RGBColor(140, 86, 75)),
        ("ridge:ring", RGBColor(188, 189, 34)),
        ("ridge:direct", RGBColor(23, 190, 207)),
    ],
    benches: &[],
    uncovered: &[],
};

/// Ridge (ensembles of Paxos acceptors, rotating distributors, deterministic merge).
pub(crate) struct Ridge;

/// What a run's optimistic deliveries came to, summed over its learners, if it made any.
pub(crate) fn optimistic(m: &crate::experiment::Measured) -> Option<ridge::optimistic::Tally> {
    optimistic_of(&m.counters)
}

/// [`optimistic`] from the counters alone.
fn optimistic_of(counters: &crate::experiment::Counters) -> Option<ridge::optimistic::Tally> {
    ridge::optimistic::Tally::from_counters(|name| counters.get(name).copied())
}

/// Ridge's variants for `compare` (`ridge:ring`): its dissemination, the paper's or one of
/// its evaluation's baselines.
pub(crate) const DISSEMINATIONS: Variants = Variants {
    what: "DISSEMINATION",
    default: "ridge",
    apply: |name, shape| {
        shape.own = Own::new(Flags {
            dissemination: Some(name.parse()?),
            ..shape.own.get()
        });
        Ok(())
    },
};

impl Multicast for Ridge {
    const NAME: &'static str = "ridge";
    type Config = Config;
    type Server = RidgeServer;
    type Client = RidgeClient;

    fn configure(s: &Shape) -> Result<Config, String> {
        let groups = genuine_groups(s, "ridge takes no tree; leave the tree out")?;
        let own: Flags = s.own.get();
        let mut cfg = Config::new(groups, s.replicas, s.clients);
        if let Some(delta) = own.delta {
            cfg.delta = delta;
        }
        if let Some(p) = own.placement {
            cfg.placement = p;
        }
        if let Some(a) = own.acceptors {
            cfg.acceptors = a;
        } else if cfg.placement == ridge::Placement::Dedicated {
            // The paper's evaluation (section 6.1).
            cfg.acceptors = 3;
        }
        if let Some(d) = own.dissemination {
            cfg.dissemination = d;
        }
        cfg.optimistic = own.optimistic;
        cfg.ring_slots = s.slots as u32;
        cfg.slot_bytes = s.slot_bytes.unwrap_or_else(|| slot_bytes_for(s.size));
        let cfg = cfg.retain_within_budget();
        cfg.validate().map_err(|e| e.to_string())?;
        s.fits(
            cfg.slot_bytes,
            cfg.max_payload(),
            " of payload in a Ridge packet",
        )?;
        Ok(cfg)
    }

    fn nodes(cfg: &Config, run: Run<'_>) -> Vec<Node<RidgeServer, RidgeClient>> {
        let mut cfg = cfg.clone();
        cfg.log_optimistic = run.log;
        cfg.timing = match run.clock {
            // Delta is wall-clock sized already (1 ms); the failure timeouts are not.
            Clock::Wall => ridge::config::Timing::WALL,
            Clock::Sim(profile) => {
                let slot_wire = cfg.slot_bytes as f64 * 8.0 / profile.nic.link_gbps;
                let post = Nanos(profile.nic.post_ns);
                // The widest fan-out: the learners of the largest ensemble.
                let learners = (0..cfg.mapping().ensembles())
                    .map(|e| cfg.ensemble(ridge::EnsembleId(e as u16)).learners.len())
                    .max()
                    .unwrap_or(1);
                ridge::config::Timing::for_link(Nanos(slot_wire as u64), post, learners)
            }
        };
        ridge::nodes(&cfg, run.load, run.seed, run.log)
    }

    fn slots(cfg: &Config) -> (usize, usize) {
        (cfg.slot_bytes, cfg.ring_slots as usize)
    }

    fn regions(cfg: &Config) -> String {
        let mesh = cfg.mesh();
        let [inbox, credits] = mesh.regions();
        let acceptors = match cfg.placement {
            ridge::Placement::Colocated => {
                format!("{} acceptors per ensemble on the servers", cfg.acceptors)
            }
            ridge::Placement::Dedicated => format!(
                "{} acceptors per ensemble, processes of their own ({}..{}), the servers learning only",
                cfg.acceptors,
                cfg.auxiliary(0),
                cfg.auxiliary(cfg.auxiliary_count() - 1)
            ),
        };
        format!(
            "per process a mesh inbox of {} B ({} rings of {} slots of {} B, one per process) and {} B of credits; {acceptors}",
            inbox.len,
            cfg.processes(),
            cfg.ring_slots,
            cfg.slot_bytes,
            credits.len
        )
    }

    fn footprint(cfg: &Config) -> Vec<Processes> {
        // Every process, whatever its role, declares the mesh's regions and no other.
        let regions = cfg.mesh().regions().to_vec();
        [
            ("servers", cfg.servers()),
            ("clients", cfg.client_count()),
            ("dedicated acceptors", cfg.auxiliary_count()),
        ]
        .into_iter()
        .map(|(role, count)| Processes {
            role,
            count,
            regions: regions.clone(),
        })
        .collect()
    }

    fn report(counters: &crate::experiment::Counters) -> Option<String> {
        let t = optimistic_of(counters)?;
        let (optimistic_us, atomic_us) = t.mean_us();
        Some(format!(
            "optimistic deliveries {} (all servers), mistakes {} ({:.2}%: an optimistic delivery not in the atomic order's place); mean delivery latency at the servers (their clock minus the sender's timestamp): optimistic {optimistic_us:.1} us, atomic {atomic_us:.1} us",
            t.delivered,
            t.mistakes,
            100.0 * t.mistakes as f64 / t.delivered.max(1) as f64
        ))
    }
}

/// The smallest power of two holding a `size`-byte payload and a packet's own bytes.
pub(crate) fn slot_bytes_for(size: usize) -> usize {
    (size + ridge::config::OVERHEAD_BYTES + 64).next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::find;

    fn shape(groups: usize, size: usize) -> Shape {
        Shape {
            groups: Some(groups),
            tree: None,
            replicas: 3,
            clients: 2,
            size,
            dest: multicast::DestPolicy::Single,
            slots: 16,
            slot_bytes: None,
            dest_tree: None,
            own: Own::default(),
        }
    }

    #[test]
    fn the_slot_grows_with_the_message_and_a_tree_is_refused() {
        let cfg = Ridge::configure(&shape(2, 8 << 10)).unwrap();
        assert!(cfg.max_payload() >= 8 << 10, "{cfg:?}");
        let mut s = shape(2, 64);
        s.slot_bytes = Some(1024);
        s.size = 1024;
        let e = Ridge::configure(&s).unwrap_err();
        assert!(e.contains("raise --slot-bytes"), "{e}");
        s.tree = Some("base".parse().unwrap());
        assert!(Ridge::configure(&s).unwrap_err().contains("no tree"));
        assert_eq!(find("ridge").unwrap().testbed, "lan-1g");
    }

    /// `--delta` reaches Ridge's configuration; the other protocols are refused it before any
    /// deployment (`flags::tests`). `compare --delta` sets it beside a variant's dissemination.
    #[test]
    fn delta_reaches_ridges_configuration() {
        let mut s = shape(2, 64);
        s.own = Own::new(Flags {
            delta: Some(Nanos(20_000)),
            ..Flags::default()
        });
        assert_eq!(Ridge::configure(&s).unwrap().delta, Nanos(20_000));
        let mut s = shape(2, 64);
        (DISSEMINATIONS.apply)("ring", &mut s).unwrap();
        (ENTRY.delta().unwrap().apply)(Nanos(30_000), &mut s);
        let cfg = Ridge::configure(&s).unwrap();
        assert_eq!(cfg.delta, Nanos(30_000));
        assert_eq!(cfg.dissemination, ridge::paxos::Dissemination::Ring);
    }

    /// Dedicated acceptors are processes of their own: the footprint lists them as built.
    #[test]
    fn ridges_footprint_is_what_its_processes_declare() {
        let mut dedicated =
            crate::compare::Workload::shape_of(4, 3, 64, multicast::DestPolicy::Random(2), 5);
        dedicated.own = Own::new(Flags {
            placement: Some(ridge::Placement::Dedicated),
            ..Flags::default()
        });
        assert!(Ridge::configure(&dedicated).unwrap().auxiliary_count() > 0);
        crate::protocols::tests::footprint_is_what_the_processes_declare::<Ridge>(&dedicated);
    }
}
