//! Skeen on the simulator: random configurations (1-6 groups, 1-8 clients, destinations single,
//! all, random:K or a range, message sizes, ring slots 2-16, outboxes down to one packet) under
//! random slow-process, pause and link-delay faults, both tie-break policies and priced or free
//! software work (`ramcast-java`, `tram-cpp` or `none`). Every run's delivery log is checked
//! against the five properties (and the order timestamps), and every multicast issued must
//! complete (liveness). `SKEEN_SEEDS` sets the number of seeds (40 by default), `SKEEN_SEED_BASE`
//! the first, `SKEEN_FAULTS` the most transient faults a run draws (5 by default). Also:
//! determinism, backpressure on tiny rings, proposals that beat their message, latency in
//! message delays, a refused oversized message, and what a crash does (documented, not hidden).

use multicast::testing::load_until;
use multicast::{check, collect_log, DestPolicy, MulticastError, Node};
use skeen::{nodes, Config, SkeenNode};
use transport::runtime::sim::{
    check_determinism, random_faults, Determinism, Fault, FaultBudget, Profile, Sim, SimConfig,
    Software, TieBreak,
};
use transport::{Nanos, ProcessId, Rng};

/// One seed's run: everything drawn from the seed.
#[derive(Clone, Debug)]
struct Case {
    cfg: Config,
    dest: DestPolicy,
    size: usize,
    profile: &'static str,
    /// The software profile pricing the work reports (`none` prices nothing).
    software: &'static str,
    tie_break: TieBreak,
    stop: Nanos,
    faults: Vec<Fault>,
}

/// Time after the clients stop for what is in flight to finish: far beyond the longest fault
/// (a fifth of the horizon, ending by 1.2 horizons) and the queueing of a slowed process.
const CONVERGE: Nanos = Nanos(200_000_000);

impl Case {
    fn draw(seed: u64) -> Case {
        // The test's own stream, apart from the simulator's and the workload's.
        let mut rng = Rng::from_seed(seed ^ 0x0005_cee2_1985);
        let groups = 1 + rng.below(6) as usize;
        let clients = 1 + rng.below(8) as usize;
        let mut cfg = Config::new(groups, clients);
        cfg.ring_slots = 2 + rng.below(15) as u32;
        cfg.slot_bytes = [128, 512, 1024, 4096][rng.below(4) as usize];
        cfg.outbox = [1, 2, 4, 64][rng.below(4) as usize];
        let dest = match rng.below(4) {
            0 => DestPolicy::Single,
            1 => DestPolicy::All,
            2 => DestPolicy::Random(1 + rng.below(groups as u64) as usize),
            _ => DestPolicy::Between(1, groups as u8),
        };
        let max = cfg.max_payload();
        let size = match rng.below(3) {
            0 => rng.below(16) as usize,
            1 => 64.min(max),
            _ => max,
        };
        let (profile, stop) = if rng.chance(0.7) {
            ("xl170-cx4", Nanos(500_000 + rng.below(1_500_000)))
        } else {
            ("lan-1g", Nanos(3_000_000 + rng.below(5_000_000)))
        };
        // Priced work slows servers unevenly (a server of many destinations posts more).
        let software = ["none", "none", "ramcast-java", "tram-cpp"][rng.below(4) as usize];
        let tie_break = if rng.chance(0.5) {
            TieBreak::Fifo
        } else {
            TieBreak::Random
        };
        let faults = random_faults(
            seed,
            groups + clients,
            FaultBudget {
                horizon: stop,
                max_crashes: 0,
                transient: rng.below(env_u64("SKEEN_FAULTS", 5) + 1) as usize,
                revocable_regions: 0,
            },
        );
        cfg.validate().expect("drawn configurations are valid");
        Case {
            cfg,
            dest,
            size,
            profile,
            software,
            tie_break,
            stop,
            faults,
        }
    }

    fn describe(&self) -> String {
        let faults: Vec<String> = self.faults.iter().map(|f| f.to_string()).collect();
        format!(
            "{} groups, {} clients, dest {}, {} B, {} slots of {} B, outbox {}, {} ties, {} with software {} until {}, faults [{}]",
            self.cfg.groups,
            self.cfg.clients,
            self.dest,
            self.size,
            self.cfg.ring_slots,
            self.cfg.slot_bytes,
            self.cfg.outbox,
            self.tie_break,
            self.profile,
            self.software,
            self.stop,
            faults.join(", ")
        )
    }

    fn build(&self, seed: u64) -> Sim<SkeenNode> {
        let load = load_until(self.dest, self.cfg.groups, self.size, self.stop);
        let mut sc = SimConfig::new(seed, Profile::load(self.profile).expect("built-in"));
        sc.software = Software::load(self.software).expect("built-in");
        sc.tie_break = self.tie_break;
        sc.faults = self.faults.clone();
        Sim::new(sc, nodes(&self.cfg, load, seed, true))
    }
}

/// What a checked run did.
#[derive(Debug, Default)]
struct Outcome {
    multicasts: usize,
    deliveries: usize,
    deferred: u64,
    /// The most packets a server's backlog held at once.
    backlog_peak: usize,
}

/// Runs `sim` to the end of the convergence phase and checks safety (the property checker)
/// and liveness (every multicast issued completed, no client refused with an error).
fn run_checked(case: &Case, seed: u64) -> Result<Outcome, String> {
    let mut sim = case.build(seed);
    sim.run(Some(case.stop.saturating_add(CONVERGE)));
    let (groups, clients) = (case.cfg.groups, case.cfg.clients);
    let log = collect_log(sim.processes(), |p: ProcessId| sim.crashed(p));
    let violations = check(&log);
    if !violations.is_empty() {
        return Err(format!("{violations:?}"));
    }
    let mut out = Outcome {
        multicasts: log.multicasts.len(),
        deliveries: log.deliveries.values().map(Vec::len).sum(),
        ..Outcome::default()
    };
    let mut stuck = Vec::new();
    for n in sim.processes() {
        match n {
            Node::Client(c) => {
                if let Some(e) = &c.error {
                    return Err(format!("client {} refused: {e}", c.id));
                }
                out.deferred += c.client.backlog().deferred();
                // One message in flight: at most one packet per destination waits.
                if c.client.backlog().peak() > groups {
                    return Err(format!(
                        "client {} backlog peaked at {} packets",
                        c.id,
                        c.client.backlog().peak()
                    ));
                }
                stuck.extend(
                    c.log
                        .iter()
                        .flatten()
                        .filter(|m| !m.completed)
                        .map(|m| m.msg),
                );
            }
            Node::Server(s) => {
                out.deferred += s.server.backlog().deferred();
                out.backlog_peak = out.backlog_peak.max(s.server.backlog().peak());
                // The bound the server's docs argue: a proposal per other destination or a
                // reply, per message in flight, one message in flight per client.
                if s.server.backlog().peak() > clients * groups {
                    return Err(format!(
                        "{} backlog peaked at {} packets",
                        s.server.describe(),
                        s.server.backlog().peak()
                    ));
                }
            }
            Node::Auxiliary(_) => return Err("Skeen has no auxiliary process".into()),
        }
    }
    if !stuck.is_empty() {
        let servers: Vec<String> = sim
            .processes()
            .iter()
            .filter_map(|n| match n {
                Node::Server(s) => Some(s.server.describe()),
                _ => None,
            })
            .collect();
        return Err(format!(
            "{} multicasts never completed (first {:?}); servers: {}",
            stuck.len(),
            &stuck[..stuck.len().min(5)],
            servers.join("; ")
        ));
    }
    if out.multicasts == 0 {
        return Err("no multicast issued".into());
    }
    Ok(out)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn random_configurations_and_faults_keep_every_property_and_complete_every_multicast() {
    let seeds = env_u64("SKEEN_SEEDS", 40);
    let base = env_u64("SKEEN_SEED_BASE", 1);
    let mut failures = Vec::new();
    let (mut multicasts, mut deliveries, mut deferred, mut faults, mut peak) = (0, 0, 0, 0, 0);
    for seed in base..base + seeds {
        let case = Case::draw(seed);
        faults += case.faults.len();
        match run_checked(&case, seed) {
            Ok(o) => {
                multicasts += o.multicasts;
                deliveries += o.deliveries;
                deferred += o.deferred;
                peak = peak.max(o.backlog_peak);
            }
            Err(e) => failures.push(format!("seed {seed} ({}): {e}", case.describe())),
        }
    }
    println!(
        "skeen sim: {} of {seeds} seeds from {base} passed; {multicasts} multicasts, {deliveries} deliveries, {faults} faults, {deferred} packets deferred by full rings, at most {peak} waiting at a server",
        seeds - failures.len() as u64
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_seed_replays_identically_with_and_without_the_change_hint() {
    for seed in [1, 2, 3, 4] {
        let mut case = Case::draw(seed);
        for tie_break in [TieBreak::Fifo, TieBreak::Random] {
            case.tie_break = tie_break;
            let limit = Some(case.stop.saturating_add(Nanos(5_000_000)));
            match check_determinism(|| case.build(seed), limit) {
                Determinism::Identical(_) => {}
                Determinism::Diverged { first, second } => panic!(
                    "seed {seed} ({}) diverged: {first:?} vs {second:?}",
                    case.describe()
                ),
            }
        }
    }
}

fn fixed_case(cfg: Config, dest: DestPolicy, size: usize, faults: Vec<Fault>) -> Case {
    cfg.validate().unwrap();
    Case {
        cfg,
        dest,
        size,
        profile: "xl170-cx4",
        software: "none",
        tie_break: TieBreak::Random,
        stop: Nanos(2_000_000),
        faults,
    }
}

/// Two-slot rings with a one-packet outbox, eight clients multicasting to every group, and a
/// server paused for a while: rings fill, packets wait in backlogs and go later, nothing is
/// lost, every multicast completes.
#[test]
fn tiny_rings_push_back_without_losing_a_packet() {
    let mut cfg = Config::new(3, 8);
    cfg.ring_slots = 2;
    cfg.outbox = 1;
    let pause = Fault::Pause {
        at: Nanos(300_000),
        process: ProcessId(1),
        duration: Nanos(400_000),
    };
    for (seed, faults) in [(7, vec![]), (8, vec![pause])] {
        let case = fixed_case(cfg.clone(), DestPolicy::All, 64, faults);
        let o = run_checked(&case, seed).unwrap_or_else(|e| panic!("{e}"));
        assert!(o.multicasts > 50, "{o:?}");
        assert!(
            o.deferred > 0,
            "no packet ever waited for a full ring: {o:?}"
        );
    }
}

/// The client's link to group 1's server is slow (40 us more, with jitter), so group 0's
/// proposal usually reaches group 1 before the message itself: the proposal is kept, folded in
/// when the message comes, and group 1 keeps delivering its single-group messages meanwhile
/// (such a message is not pending there yet).
#[test]
fn proposals_that_beat_their_message_are_kept_and_folded_in() {
    let mut faults = Vec::new();
    for client in 2..5 {
        faults.push(Fault::LinkDelay {
            at: Nanos::ZERO,
            from: ProcessId(client),
            to: ProcessId(1),
            duration: Nanos(2_000_000),
            delay: Nanos(40_000),
            jitter: Nanos(20_000),
        });
    }
    let case = fixed_case(Config::new(2, 3), DestPolicy::Between(1, 2), 64, faults);
    let mut sim = case.build(4);
    sim.run(Some(case.stop.saturating_add(CONVERGE)));
    let Node::Server(s1) = &sim.processes()[1] else {
        unreachable!("servers first")
    };
    assert!(
        s1.server.order().early_total() > 10,
        "{}",
        s1.server.describe()
    );
    assert_eq!(
        s1.server.order().early_proposals(),
        0,
        "{}",
        s1.server.describe()
    );
    run_checked(&case, 4).unwrap_or_else(|e| panic!("{e}"));
}

/// A message larger than a slot is refused at the client with the sizes, and nothing is sent.
#[test]
fn an_oversized_message_is_refused_at_the_client() {
    let mut cfg = Config::new(2, 2);
    cfg.slot_bytes = 256;
    let max = cfg.max_payload();
    let case = fixed_case(cfg, DestPolicy::All, max + 1, vec![]);
    let mut sim = case.build(1);
    sim.run(Some(case.stop.saturating_add(CONVERGE)));
    for n in sim.processes() {
        match n {
            Node::Client(c) => {
                let e = c.error.clone().expect("refused");
                assert_eq!(
                    e,
                    MulticastError::TooLarge {
                        len: max + 1,
                        max,
                        dst_groups: 2
                    }
                );
                assert!(e.to_string().contains("raise the slot size"), "{e}");
                assert!(c.log.as_ref().unwrap().is_empty());
            }
            Node::Server(s) => assert_eq!(s.delivered, 0),
            Node::Auxiliary(_) => unreachable!(),
        }
    }
    // The largest payload that fits goes through.
    let mut cfg = Config::new(2, 2);
    cfg.slot_bytes = 256;
    let case = fixed_case(cfg, DestPolicy::All, max, vec![]);
    run_checked(&case, 1).unwrap_or_else(|e| panic!("{e}"));
}

/// Not fault tolerant, and not hidden: group 1's server crashes; messages to group 1 never
/// complete, and group 0 stops delivering behind the first message it shares with group 1
/// that group 1 never proposed for. What was delivered still keeps every property (the
/// crashed server counts as faulty).
#[test]
fn a_crashed_server_blocks_the_messages_it_is_a_destination_of() {
    let crash = Fault::Crash {
        at: Nanos(500_000),
        process: ProcessId(1),
    };
    let case = fixed_case(
        Config::new(2, 4),
        DestPolicy::Between(1, 2),
        64,
        vec![crash],
    );
    let mut sim = case.build(3);
    sim.run(Some(case.stop.saturating_add(CONVERGE)));
    let log = collect_log(sim.processes(), |p: ProcessId| sim.crashed(p));
    let violations = check(&log);
    // Order and integrity hold; validity (group 0 never delivers what it waits for) and
    // uniform agreement (the crashed server may have delivered a message group 0 then
    // could not) are what a crash takes away.
    let safety: Vec<_> = violations
        .iter()
        .filter(|v| {
            !matches!(
                v.property,
                multicast::Property::Validity | multicast::Property::UniformAgreement
            )
        })
        .collect();
    assert!(safety.is_empty(), "{safety:?}");
    let stuck = sim
        .processes()
        .iter()
        .filter_map(|n| match n {
            Node::Client(c) => Some(c.client.in_flight()),
            _ => None,
        })
        .filter(|&f| f)
        .count();
    assert!(stuck > 0, "some multicast must be blocked by the crash");
    let Node::Server(s0) = &sim.processes()[0] else {
        unreachable!()
    };
    assert!(s0.server.order().pending() > 0, "{}", s0.server.describe());
}

/// Skeen's latency, with one client and no contention on `xl170-cx4` (a one-way message about
/// 1.6 us): two message delays to one group (the message, the reply), three to several (the
/// message, the proposals, the reply), whatever their number, plus the posting of one send per
/// destination (the client's) or per other destination (each server's proposals): a few
/// hundred nanoseconds each.
#[test]
fn a_multicast_takes_two_message_delays_to_one_group_and_three_to_several() {
    let hop = 1_600.0;
    for (groups, dest, hops) in [
        (1, DestPolicy::Single, 2.0),
        (2, DestPolicy::All, 3.0),
        (5, DestPolicy::All, 3.0),
    ] {
        let case = fixed_case(Config::new(groups, 1), dest, 64, vec![]);
        let mut sim = case.build(1);
        sim.run(Some(case.stop.saturating_add(CONVERGE)));
        let Node::Client(c) = &sim.processes()[groups] else {
            unreachable!("the client follows the servers")
        };
        let l: Vec<u64> = c
            .completions
            .iter()
            .flatten()
            .map(|d| d.latency.as_nanos())
            .collect();
        let mean = l.iter().sum::<u64>() as f64 / l.len() as f64;
        assert!(l.len() > 100, "{groups} groups: {} multicasts", l.len());
        assert!(
            mean > hops * hop * 0.9 && mean < (hops + 0.5) * hop + groups as f64 * 400.0,
            "{groups} groups: mean latency {mean} ns, expected about {hops} x {hop} ns and the posts"
        );
    }
}
