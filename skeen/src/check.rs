//! `harness check --protocol skeen`: seeded runs of Skeen on the simulator. Every parameter
//! comes from the seed: groups (1-6), clients (1-8), destinations (single, all, random:K, and
//! random:1..G mixing single- and multi-group messages), message size, ring slots, the
//! tie-break policy, and the faults Skeen tolerates (its crate docs): slow processes, pauses
//! and link delays, drawn by [`transport::runtime::sim::random_faults`] with no crash and no revoke, within the first
//! 2-6 ms or, in a quarter of the runs, as late as 20 ms. A fault phase, a liveness phase in
//! which every client must complete a multicast started after the last fault, a convergence
//! phase; the five properties checked on the delivery log ([`sweep::judge::judge`]).

use crate::{Config, SkeenClient, SkeenNode, SkeenServer};
use multicast::LoadSpec;
use sweep::spec::{Spec, SpecWriter};
use sweep::{draw, Checkable, MulticastRun, Phases};
use transport::rng::{Purpose, Rng};
use transport::runtime::sim::{random_faults, FaultBudget};
use transport::Nanos;

/// The stream Skeen's run parameters are drawn from (`skeen` in ASCII), apart from the faults'.
const PARAMS: u64 = 0x006E_6565_6B73;

/// A seeded checking run of Skeen.
pub type SkeenRun = MulticastRun<Config>;

impl Checkable for Config {
    type Server = SkeenServer;
    type Client = SkeenClient;
    const PROTOCOL: &'static str = "skeen";
    const ABOUT: &'static str =
        "Skeen (one process per group) under slow processes, pauses and link delays: the faults it tolerates";
    const TESTBED: &'static str = crate::TESTBED;
    const EXTRA: Option<&'static str> = None;

    fn derive(seed: u64) -> SkeenRun {
        let mut rng = Rng::derive(seed, Purpose::Workload, PARAMS);
        let groups = 1 + rng.below(6) as usize;
        let mut cfg = Config::new(groups, 1 + rng.below(8) as usize);
        cfg.ring_slots = 2 + rng.below(15) as u32;
        // Mixed single- and multi-group traffic in a quarter of the runs (the count drawn per
        // message), where Task 4's bound is tested hardest.
        let dest = draw::dest_k_after(&mut rng, groups, true);
        let size = draw::size(&mut rng);
        cfg.slot_bytes = Config::slot_bytes_for(size);
        // Faults within the first 2-6 ms, or in a quarter of the runs as late as 20 ms, long
        // after the rings and clocks have run ahead.
        let fault_phase = if rng.chance(0.25) {
            Nanos(10_000_000 + rng.below(10_000_000))
        } else {
            draw::fault_phase(&mut rng)
        };
        let tie_break = draw::tie_break(&mut rng);
        let budget = FaultBudget {
            horizon: fault_phase,
            max_crashes: 0,
            transient: 1 + rng.below(6) as usize,
            revocable_regions: 0,
        };
        let faults = random_faults(seed, groups + cfg.clients, budget);
        MulticastRun {
            seed,
            phases: Phases::of(fault_phase, &faults, Nanos::ZERO, 1),
            cfg,
            dest,
            size,
            fault_phase,
            tie_break,
            faults,
        }
    }

    fn write(&self, line: SpecWriter) -> SpecWriter {
        line.put("groups", self.groups)
            .put("clients", self.clients)
            .put("ring_slots", self.ring_slots)
            .put("slot_bytes", self.slot_bytes)
    }

    fn read(line: &mut Spec<'_>) -> Result<Config, String> {
        let mut cfg = Config::new(line.get("groups")?, line.get("clients")?);
        cfg.ring_slots = line.get("ring_slots")?;
        cfg.slot_bytes = line.get("slot_bytes")?;
        Ok(cfg)
    }

    fn nodes(&self, load: LoadSpec, seed: u64) -> Vec<SkeenNode> {
        crate::nodes(self, load, seed, true)
    }

    /// No leader to suspect: a pause is a pause.
    fn suspect(&self) -> Nanos {
        Nanos::MAX
    }

    /// Skeen has no timeout: nothing to stretch.
    fn stretched(&self, _k: u64) -> Config {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multicast::DestPolicy;
    use sweep::{Kinds, Model, SeedRun};

    /// A run's line ([`SeedRun::spec`]) reads back to the same run.
    #[test]
    fn runs_read_back_from_their_lines() {
        sweep::assert_specs_read_back::<SkeenRun>(300);
    }

    /// CI's sweep: 40 seeds with slow processes, pauses and link delays, 0 violations, every
    /// client served after the faults (the long sweep is `harness check --protocol skeen`).
    /// `SKEEN_CHECK_SEEDS=N` runs a longer sweep.
    #[test]
    fn forty_seeds_under_the_faults_it_tolerates_hold_every_property() {
        let model = Model::hardware(crate::TESTBED);
        let mut seen = Kinds::default();
        let (mut mixed, mut late) = (0, 0);
        sweep::ci_sweep("SKEEN_CHECK_SEEDS", 40, &model, |run: &SkeenRun, _| {
            let k = run.kinds();
            seen.slow |= k.slow;
            seen.link_delay |= k.link_delay;
            mixed += matches!(run.dest, DestPolicy::Between(..)) as u32;
            late += (run.fault_phase > Nanos(10_000_000)) as u32;
            assert!(!k.leader_crash && !k.follower_crash && !k.client_crash);
        });
        // The sweep really injects both kinds, mixes single- and multi-group traffic, and
        // faults late in the run.
        assert!(seen.slow && seen.link_delay, "{seen:?}");
        assert!(mixed > 0 && late > 0, "mixed {mixed}, late {late}");
    }
}
