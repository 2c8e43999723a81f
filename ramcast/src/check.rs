//! `harness check --protocol ramcast`: VOPR-style runs of RamCast on the simulator. Every
//! parameter comes from the seed: groups, replicas, clients, destinations, buffer sizes, the
//! tie-break policy, the eviction time and the fault schedule of [`sweep::draw_schedule`]
//! (leader and follower crashes within each group's f, leaders of several groups at once,
//! client crashes mid-multicast reaching any subset, pauses long enough to be suspected, slow
//! processes, link delays up to three suspicion timeouts, and a leader cut off from its group by
//! links slowed by three to ten timeouts, with the member that takes over crashing in half of
//! those runs). A fault phase, a liveness phase in which clients keep multicasting (each
//! correct client must complete a multicast started after the last fault), a convergence phase
//! without new multicasts; then halts are judged and the five properties checked on the
//! delivery log ([`sweep::judge::judge`]).

use crate::{Config, RamcastClient, RamcastNode, RamcastServer};
use multicast::LoadSpec;
use sweep::spec::{Spec, SpecWriter};
use sweep::{draw, draw_schedule, Checkable, MulticastRun};
use transport::rng::{Purpose, Rng};
use transport::Nanos;

/// The `Purpose::Workload` stream a run's parameters are drawn from ([`sweep::params_stream`]).
const PARAMS: u64 = u64::MAX - 1;
/// The stream that makes one run in eight one of large buffers (many clients of kilobytes, so a
/// leader change's replies span several messages), apart from the earlier draws.
const LARGE: u64 = u64::MAX - 9;

/// A seeded checking run of RamCast.
pub type RamcastRun = MulticastRun<Config>;

impl Checkable for Config {
    type Server = RamcastServer;
    type Client = RamcastClient;
    const PROTOCOL: &'static str = "ramcast";
    const ABOUT: &'static str =
        "RamCast under crashes, client crashes, false suspicions, slow processes and link delays";
    const TESTBED: &'static str = crate::TESTBED;
    const EXTRA: Option<&'static str> = Some("Task 10 relay of a suspected client's message");

    fn derive(seed: u64) -> RamcastRun {
        let mut rng = Rng::derive(seed, Purpose::Workload, PARAMS);
        let groups = 1 + rng.below(4) as usize;
        let replicas = draw::replicas(&mut rng);
        let clients = draw::clients(&mut rng);
        let mut cfg = Config::new(groups, replicas, clients);
        cfg.slots = 2 + rng.below(7) as usize;
        cfg.slot_bytes = 256;
        let dest = draw::dest_k_after(&mut rng, groups, false);
        let mut size = draw::size(&mut rng);
        let fault_phase = draw::fault_phase(&mut rng);
        let tie_break = draw::tie_break(&mut rng);
        // Large buffers: a leader change then carries megabytes of held entries, more than one
        // two-sided message (a 256-client, 16 KB run once panicked on a 4.9 MB catch-up).
        let mut large = Rng::derive(seed, Purpose::Workload, LARGE);
        if large.chance(0.125) {
            size = 4096 + large.below(12_288) as usize;
            cfg.clients = 8 + large.below(17) as usize;
            cfg.slots = 8 + large.below(9) as usize;
            cfg.slot_bytes = crate::layout::slot_bytes_for(size, groups);
        }
        // A correct member may wait a suspicion timeout for a new leader, then `relay` for a
        // crashed client's message to be relayed.
        let stall = cfg.timing.relay.saturating_add(cfg.timing.suspect);
        let schedule = draw_schedule(seed, &cfg, cfg.timing.suspect, stall, fault_phase, 1);
        cfg.timing.evict = schedule.evict;
        MulticastRun::scheduled(seed, cfg, dest, size, fault_phase, tie_break, schedule)
    }

    fn write(&self, line: SpecWriter) -> SpecWriter {
        line.put("groups", self.groups)
            .put("replicas", self.replicas)
            .put("clients", self.clients)
            .put("slots", self.slots)
            .put("slot_bytes", self.slot_bytes)
            .time("evict", self.timing.evict)
    }

    fn read(line: &mut Spec<'_>) -> Result<Config, String> {
        let mut cfg = Config::new(
            line.get("groups")?,
            line.get("replicas")?,
            line.get("clients")?,
        );
        cfg.slots = line.get("slots")?;
        cfg.slot_bytes = line.get("slot_bytes")?;
        cfg.timing.evict = line.get("evict")?;
        Ok(cfg)
    }

    fn nodes(&self, load: LoadSpec, seed: u64) -> Vec<RamcastNode> {
        crate::nodes(self, load, seed, true)
    }

    fn suspect(&self) -> Nanos {
        self.timing.suspect
    }

    fn stretched(&self, k: u64) -> Config {
        let mut cfg = self.clone();
        let t = &mut cfg.timing;
        sweep::stretch(
            k,
            [&mut t.heartbeat, &mut t.suspect, &mut t.relay, &mut t.evict],
        );
        cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sweep::{pinned, Model, SeedRun};
    use transport::runtime::sim::Fault;

    /// The simulator's change hint changes no event of a RamCast run.
    #[test]
    fn the_change_hint_changes_no_event_of_a_run() {
        sweep::assert_hint_changes_no_event::<RamcastRun>("r320-cx3");
    }

    /// A run's line ([`SeedRun::spec`]) reads back to the same run, for every kind of run the
    /// seeds derive.
    #[test]
    fn runs_read_back_from_their_lines() {
        sweep::assert_specs_read_back::<RamcastRun>(300);
    }
    use transport::ProcessId;

    /// Schedules that once failed, with their postmortems.
    ///
    /// - 99 (prefix order, then liveness): a candidate missed a proposal that had landed in its
    ///   `T` but was not processed yet, and re-proposed a fresh timestamp for a chosen slot;
    ///   later, a follower could not order a slot whose acknowledgements were overwritten by
    ///   later rounds. Fixed: MY_STATE reports landed memory; delivered slots are proposed
    ///   again in the new round and acknowledged (`crate::recovery`).
    /// - 205 (liveness): a candidate waited forever for a MY_STATE flushed by a queue pair in
    ///   error. Fixed: control messages are sent again after the reconnect.
    /// - 5 (liveness): a deposed leader missed the proposals of the round that replaced it.
    ///   Fixed with 99's recovery.
    /// - 1226 (uniform agreement and prefix order): a client crashed mid-multicast; the new
    ///   leader's copy of the message to a paused follower was flushed (its queue pair broke on
    ///   a refused proposal) and every other member had delivered, so nobody relayed it; the
    ///   follower delivered a later message without it. Fixed: catch-up items of delivered
    ///   slots carry the entry.
    #[test]
    fn formerly_failing_schedules_pass() {
        let runs = [
            "seed=99 groups=4 replicas=3 clients=6 slots=5 slot_bytes=256 dest=random:3 size=91 \
             fault_phase=5.126501ms evict=20ms tie_break=fifo load_end=28.619986ms \
             fault=kill:0@2.862901ms fault=pause:6@2.894401ms+1.275209ms \
             fault=slow:5@3.07612ms+713.97us=5.8 fault=slow:2@3.215473ms+1.107935ms=8.9 \
             fault=slow:9@4.283786ms+1.3362ms=9.7 fault=kill:15@4.690254ms",
            "seed=205 groups=3 replicas=5 clients=2 slots=2 slot_bytes=256 dest=random:2 size=56 \
             fault_phase=2.119769ms evict=20ms tie_break=fifo load_end=25.167199ms \
             fault=pause:12@126.65us+1.254954ms fault=kill:5@428.963us \
             fault=slow:4@609.097us+883.667us=4.2 fault=pause:10@656.308us+1.120883ms \
             fault=kill:8@723.278us fault=delay:2>11@1.433002ms+734.197us=13.48us~6.138us \
             fault=kill:2@1.649881ms fault=kill:3@1.936514ms",
            "seed=5 groups=3 replicas=5 clients=5 slots=5 slot_bytes=256 dest=all size=101 \
             fault_phase=4.613468ms evict=20ms tie_break=random load_end=27.657955ms \
             fault=delay:7>9@535.101us+767.955us=17.907us~5.912us fault=kill:18@651.709us \
             fault=pause:0@1.039268ms+1.108585ms fault=kill:15@1.721886ms \
             fault=kill:17@2.384976ms fault=kill:5@3.355296ms fault=pause:9@3.675522ms+982.433us \
             fault=kill:16@3.967852ms fault=kill:6@4.378204ms",
            "seed=1226 groups=2 replicas=3 clients=2 slots=7 slot_bytes=256 dest=random:2 size=57 \
             fault_phase=2.519419ms evict=20ms tie_break=fifo load_end=25.519419ms \
             fault=kill-posting:6@603.403us fault=kill-posting:2@607.782us \
             fault=pause:3@681.828us+1.177727ms",
        ];
        let profile = Model::hardware("r320-cx3");
        for line in runs {
            let run: RamcastRun = pinned(line);
            let out = run.check(&profile, false);
            assert!(out.violations.is_empty(), "{line}\n{:?}", out.violations);
        }
    }

    /// Seed 128 of the first liveness-phase sweep, with the eviction time it drew then (0.86
    /// ms, below the 1 ms a correct member may wait for a crashed client's relay).
    ///
    /// postmortem: the short eviction excluded p3 (correct, stalled behind a crashed client's
    /// message) and p3 halted, but stayed alive to the NIC: it still refused every new
    /// leader's writes to its `T`, so each new leader stepped down at once, and leadership
    /// churned while the deposed leader p0 resumed from a pause. p0, unaware, proposed
    /// `<1765,0>` for c5:359 from its stale clock into its own `T`; a later leader adopted it
    /// (Task 9: highest round in the bag), after p1 had delivered c9:358 at `<1767,1>` without
    /// knowing c5:359: p0 and p1 delivered the two in opposite orders. Fixed: a halted server
    /// exits (`Process::stopped`), so peers see it as crashed. The halt itself is still
    /// unjustified with so short an eviction, so the run keeps its halt and liveness verdicts;
    /// this test checks that the order is safe. Sweeps now draw eviction times above `relay`.
    #[test]
    fn a_halted_member_no_longer_makes_leaders_churn_into_an_order_violation() {
        let run: RamcastRun = pinned(
            "seed=128 groups=1 replicas=5 clients=5 slots=3 slot_bytes=256 dest=single size=122 \
             fault_phase=5.684065ms evict=863.207us tie_break=random load_end=10.218766ms \
             fault=slow:2@717.01us+5.769us=5.456118604387918 \
             fault=slow:2@2.169168ms+1.962975ms=4.320145240468985 fault=kill-posting:7@2.508509ms \
             fault=pause:0@3.559478ms+932.027us \
             fault=delay:1>0@3.559478ms+2.796081ms=932.027us~8.038us \
             fault=delay:2>0@3.559478ms+2.796081ms=932.027us~6.635us \
             fault=delay:3>0@3.559478ms+2.796081ms=932.027us~9.854us \
             fault=delay:4>0@3.559478ms+2.796081ms=932.027us~4.386us fault=kill:2@3.967489ms \
             fault=slow:0@5.243794ms+874.555us=7.047141788546029",
        );
        let out = run.check(&Model::hardware("r320-cx3"), false);
        let safety: Vec<&String> = out
            .violations
            .iter()
            .filter(|v| v.contains("order") || v.contains("agreement") || v.contains("integrity"))
            .collect();
        assert!(safety.is_empty(), "{}\n{safety:?}", run.spec());
        assert!(out.halted > 0, "the scenario needs the halt");
    }

    /// Seed 358 of the first 3,000-seed liveness-phase sweep, as that sweep ran it.
    ///
    /// postmortem: a client whose multicast was refused for lack of slots (a crashed member's
    /// LDM held one back) started the eviction clock in that refusal, after its `poll` had
    /// computed its wake-up time; nothing else was due to it, so it was never polled again and
    /// multicast nothing for the rest of the run. Fixed: `Client::deadline`, which the closed
    /// loop asks after a refused multicast.
    #[test]
    fn a_refused_multicast_wakes_its_client_when_the_eviction_is_due() {
        sweep::assert_passes(&pinned::<RamcastRun>(
            "seed=358 groups=4 replicas=3 clients=4 slots=7 slot_bytes=256 dest=single size=96 \
             fault_phase=2.857691ms evict=1.67031ms tie_break=random load_end=7.528001ms \
             fault=kill:4@282.719us fault=kill:10@1.218727ms fault=kill-posting:0@2.077488ms \
             fault=kill-posting:6@2.077488ms fault=kill-posting:12@2.702883ms",
        ));
    }

    /// Seed 1107 of the second 3,000-seed sweep (two groups, single-group destinations drawn
    /// per attempt), as that sweep ran it.
    ///
    /// postmortem: both groups' leaders crashed. A client refused for group 1 waited out the
    /// eviction there, then drew group 0, only then found it held back by the crashed leader of
    /// group 0, and started a second eviction clock: 8.5 ms without a multicast. Fixed: a
    /// refused multicast starts the eviction clock of every group holding back any group's next
    /// slot, not only the destinations drawn this time.
    #[test]
    fn a_refused_multicast_starts_every_blocked_groups_eviction_clock() {
        sweep::assert_passes(&pinned::<RamcastRun>(
            "seed=1107 groups=2 replicas=3 clients=5 slots=8 slot_bytes=256 dest=single size=84 \
             fault_phase=4.160149ms evict=4.266956ms tie_break=fifo load_end=11.427105ms \
             fault=delay:0>1@29.082us+1.37048ms=1.019884ms~4.724us \
             fault=delay:7>1@29.082us+1.37048ms=1.019884ms~6.066us \
             fault=delay:0>2@29.082us+1.37048ms=1.019884ms~8.454us \
             fault=delay:7>2@29.082us+1.37048ms=1.019884ms~3.462us \
             fault=delay:5>7@114.833us+1.962782ms=218.015us~6.436us \
             fault=delay:1>1@592.467us+1.456303ms=2.193us~9.579us \
             fault=delay:5>5@751.148us+85.701us=10.094us~7.8us fault=kill:9@2.315377ms \
             fault=slow:2@2.67721ms+1.457327ms=5.525976924540986 fault=kill:0@3.282898ms \
             fault=kill:3@3.282898ms",
        ));
    }

    /// Seeds 44 and 198 of the first sweep with cut-off leaders, as that sweep ran
    /// them; both failed on RamCast as it stood at 960f8db.
    ///
    /// postmortem (uniform prefix and acyclic order): group 1's leader was cut off from its
    /// followers, and one client's writes to them crawled; the followers elected rank 1, which
    /// never saw the old leader's proposals for that client's messages, gave later messages
    /// fresh timestamps and delivered them, then crashed. Rank 2 led next with the old leader in
    /// its quorum and adopted the old leader's proposals (highest round in Task 9's bag), below
    /// timestamps the crashed member had delivered. The class of
    /// `ramcast/tests/sim.rs::a_stale_rounds_timestamp_is_never_adopted_below_a_delivered_one`;
    /// fixed by completed rounds (ramcast's crate docs).
    #[test]
    fn a_cut_off_leaders_proposals_are_never_adopted_below_what_its_successor_delivered() {
        for line in [
            "seed=44 groups=3 replicas=3 clients=3 slots=5 slot_bytes=256 dest=random:1 size=20 \
             fault_phase=3.04782ms evict=4.596608ms tie_break=random load_end=12.337681ms \
             fault=slow:5@6.013us+233.28us=3.1945252879983155 \
             fault=slow:5@391.761us+1.08507ms=4.310699613421894 fault=kill-posting:10@607.039us \
             fault=slow:3@992.077us+807.422us=2.747624269361071 \
             fault=slow:8@2.380974ms+509.782us=7.364925742835238 \
             fault=delay:3>4@2.693733ms+2.04734ms=1.07671ms~428ns \
             fault=delay:9>4@2.693733ms+2.04734ms=1.07671ms~2.542us \
             fault=delay:3>5@2.693733ms+2.04734ms=1.07671ms~7.839us \
             fault=delay:9>5@2.693733ms+2.04734ms=1.07671ms~6.696us fault=kill:4@3.729129ms",
            "seed=198 groups=2 replicas=3 clients=4 slots=2 slot_bytes=256 dest=single size=53 \
             fault_phase=3.424673ms evict=4.534714ms tie_break=random load_end=10.959387ms \
             fault=delay:3>4@1.111978ms+1.52569ms=1.056651ms~7.27us \
             fault=delay:8>4@1.111978ms+1.52569ms=1.056651ms~6.961us \
             fault=delay:3>5@1.111978ms+1.52569ms=1.056651ms~2.995us \
             fault=delay:8>5@1.111978ms+1.52569ms=1.056651ms~7.015us \
             fault=pause:2@1.777918ms+1.492223ms fault=kill:4@2.090542ms \
             fault=delay:0>4@2.350524ms+136.472us=3.541us~6.917us fault=kill-posting:0@2.90152ms",
        ] {
            let run: RamcastRun = pinned(line);
            assert!(
                run.kinds().cut_off,
                "{line}: the scenario needs the cut-off"
            );
            sweep::assert_passes(&run);
        }
    }

    /// Seeds 629 and 1064 of the same sweep; both failed at 960f8db and with completed rounds
    /// alone.
    ///
    /// postmortem (629: validity and uniform agreement; 1064: a member halted, over f): the
    /// cut-off leader's late proposals were refused, so its queue pair to the new leader broke
    /// and flushed its acknowledgement of a slot it had already delivered. After the reconnect
    /// `resync` re-sent only the acknowledgements of undelivered slots, and the new leader,
    /// which had not delivered that slot, waited for a quorum forever (the run's other member
    /// had crashed). Fixed: `resync` re-sends the acknowledgements of delivered slots too, by
    /// message (`RamcastServer::ack_decided`).
    #[test]
    fn an_acknowledgement_of_a_delivered_slot_survives_a_broken_queue_pair() {
        for line in [
            "seed=629 groups=3 replicas=3 clients=5 slots=6 slot_bytes=256 dest=all size=143 \
             fault_phase=4.521173ms evict=7.608348ms tie_break=fifo load_end=16.08323ms \
             fault=pause:3@51.819us+827.241us \
             fault=delay:0>1@2.035432ms+3.43945ms=1.857297ms~9.627us \
             fault=delay:9>1@2.035432ms+3.43945ms=1.857297ms~6.084us \
             fault=delay:0>2@2.035432ms+3.43945ms=1.857297ms~7.776us \
             fault=delay:9>2@2.035432ms+3.43945ms=1.857297ms~1.052us \
             fault=pause:6@2.132051ms+1.489294ms fault=kill:11@2.594186ms \
             fault=kill-posting:6@2.827638ms fault=kill-posting:4@2.935751ms \
             fault=kill:1@3.179335ms fault=delay:7>3@3.593665ms+901.707us=11.536us~7.744us",
            "seed=1064 groups=2 replicas=3 clients=5 slots=8 slot_bytes=256 dest=all size=141 \
             fault_phase=2.70012ms evict=9.18969ms tie_break=random load_end=15.975682ms \
             fault=delay:3>4@748.074us+3.037918ms=1.733697ms~2.292us \
             fault=delay:7>4@748.074us+3.037918ms=1.733697ms~9.42us \
             fault=delay:3>5@748.074us+3.037918ms=1.733697ms~9.254us \
             fault=delay:7>5@748.074us+3.037918ms=1.733697ms~1.493us \
             fault=kill-posting:5@1.282391ms fault=kill-posting:9@1.725344ms \
             fault=pause:2@2.258336ms+445.77us",
        ] {
            sweep::assert_passes(&pinned::<RamcastRun>(line));
        }
    }

    /// Seed 4707 of the 10,000-seed sweep at 02a9e8c on xl170-cx4 (RamCast's default profile
    /// for `check` since that commit; earlier sweeps ran on r320-cx3, where this seed passed).
    /// It failed identically at b1f219e: the bug predated the simulator's change hint.
    ///
    /// postmortem (liveness, validity, and 2 of 3 members out with f = 1): one group of three.
    /// p2 crashed at 2971 us. p0, correct, was paused 1064-2255 us, its inbound links from p1
    /// and p2 were slowed by 1191 us until 4637 us, and it was paused again 3810-5531 us: each
    /// impairment shorter than `evict` (3400 us), their union (about 4.5 ms) not. Client p5,
    /// blocked on p0's LDM for `evict`, excluded p0 and reused its slot; p0 found the slot
    /// lapped and halted; p1 alone had no quorum. By the eviction contract (crate docs,
    /// "Recycling") a member silent for `evict` while a client is blocked may be excluded, so
    /// the schedule put two faulty members in a group with f = 1: a bug of the sweep, not of
    /// RamCast (capping a client's exclusions at f changed nothing, as expected). Fixed in the
    /// drawer: a server whose joined impairments outlast `evict` less a suspicion timeout
    /// counts against f (`sweep::Impairments`; its unit test replays this schedule), so the
    /// seed now draws without the revoke race on p0, and passes.
    #[test]
    fn a_correct_member_slowed_past_evict_beside_a_crash_is_not_excluded_into_a_halt() {
        let run = pinned::<RamcastRun>(
            "seed=4707 groups=1 replicas=3 clients=3 slots=5 slot_bytes=256 dest=all size=150 \
             fault_phase=4.024263ms evict=3.399508ms tie_break=random load_end=11.930231ms \
             fault=delay:0>1@236.007us+231.917us=559.587us~3.609us \
             fault=kill-posting:3@1.745674ms fault=slow:2@2.584971ms+1.851096ms=4.342122482836464 \
             fault=kill:2@2.971471ms fault=slow:2@3.149667ms+563.76us=5.482693951378636 \
             fault=kill-posting:4@3.576215ms fault=pause:0@3.810158ms+1.720565ms",
        );
        let pauses_of_p0 = run
            .faults
            .iter()
            .filter(|f| matches!(f, Fault::Pause { process, .. } if *process == ProcessId(0)))
            .count();
        assert_eq!(pauses_of_p0, 1, "{}", run.spec());
        sweep::assert_passes_on(&run, "xl170-cx4");
    }

    /// Seed 257 of the 2,000-seed sweep at 52506f8, the first with the new model on: xl170-cx4
    /// v2 (a declared latency distribution) and software ramcast-java v2. It passes with either
    /// alone.
    ///
    /// postmortem (uniform prefix order): one group of five. p0, the first leader, was cut off
    /// from its followers by a 1.1 ms link delay from 304 us; p1 suspected it and led round
    /// <1,1> from about 0.8 ms; p0 crashed at 1605 us. Follower p4, paused 721-1661 us,
    /// delivered c8:17, c9:17, c10:17 and c7:10 and crashed at 2325 us without ever delivering
    /// c6:17, which every correct member delivered between c8:17 and c9:17. Traced: p1
    /// proposed c6:17 at 835.6 us and its copy of the entry and its `T` entry landed at p4 (one
    /// queue pair, in that order); then p0's copy of c6:9, two laps older in the same ring slot
    /// and held back by the link delay, landed and overwrote it (`M` is writable by every
    /// process: clients, and leaders copying entries). At 1701 us p4's slot held c6:9's entry,
    /// so c6:17 was neither MCAST nor ORDERED there, while its proposal (below c9:17's final
    /// timestamp) sat in `T`: Task 6, which looks only at messages in `M`, let c9:17 through.
    /// Fixed in `RamcastServer::unread_bound`: a proposal of this group below the candidate's
    /// final timestamp, in a slot not yet read, holds delivery back. Open (issue 13 note): a
    /// member whose entry was overwritten that way now waits instead of misordering, and gets
    /// the entry back only through a later catch-up; a stale copy should be refused at the
    /// source (revoking a deposed leader's access to `M`, as `T`'s). With the fix the seed's
    /// timing moves (the added scan is priced), so it no longer reaches the overwrite; it is
    /// kept as the regression it was found as.
    #[test]
    fn a_member_never_delivers_past_a_proposal_for_a_message_it_has_not_read() {
        let run = pinned::<RamcastRun>(
            "seed=257 groups=1 replicas=5 clients=6 slots=8 slot_bytes=256 dest=all size=69 \
             fault_phase=3.326035ms evict=5.433679ms tie_break=random load_end=11.759714ms \
             fault=delay:0>1@303.653us+2.176738ms=1.094681ms~7.209us \
             fault=delay:7>1@303.653us+2.176738ms=1.094681ms~3.073us \
             fault=delay:0>2@303.653us+2.176738ms=1.094681ms~3.619us \
             fault=delay:7>2@303.653us+2.176738ms=1.094681ms~2.39us \
             fault=delay:0>3@303.653us+2.176738ms=1.094681ms~7.497us \
             fault=delay:7>3@303.653us+2.176738ms=1.094681ms~2.252us \
             fault=delay:0>4@303.653us+2.176738ms=1.094681ms~6.003us \
             fault=delay:7>4@303.653us+2.176738ms=1.094681ms~3.08us fault=kill:5@640.986us \
             fault=pause:4@721.384us+939.733us fault=kill:0@1.604683ms \
             fault=kill-posting:4@2.32517ms fault=kill-posting:7@2.855351ms \
             fault=slow:0@3.208186ms+20.315us=5.234437458420656",
        );
        sweep::assert_passes_under(&run, &Model::priced("xl170-cx4", "ramcast-java"));
    }

    /// Seed 3490 of a 3,000-seed sweep (seeds 2000-4999) at aeb9694 with the new model on
    /// (xl170-cx4 v2, ramcast-java v3): liveness (validity and uniform agreement) at p4. Three
    /// groups of five; p4, a correct follower of g0, is paused 230-1922 us; the first leaders
    /// (p0, p5, p10) crash at 1386 us and p1, p6, p11 lead rounds <1,1>, <1,6>, <1,11>. The
    /// others ordered client 1's slot 6 (to all groups) while p4 slept; p4 stayed one
    /// acknowledgement short of a quorum of g1 for it forever and delivered nothing after it.
    /// Traced: p6, g1's new leader, acknowledges its round for the slot once, by catch-up
    /// message (`ack_decided` from `repropose_decided`); at 1926.305 us, just awake, p4
    /// processed that message before it held the slot's entry (which came 20 ns later in g0's
    /// leader's catch-up), and `on_catch` dropped items about slots not held. Fixed: such an
    /// item, for a slot of the window, is kept (`RamcastServer::early`) and applied once the
    /// entry is taken (`apply_early`). Fails with the item dropped again.
    #[test]
    fn a_member_paused_through_every_leader_change_still_delivers() {
        let run = pinned::<RamcastRun>(
            "seed=3490 groups=3 replicas=5 clients=5 slots=8 slot_bytes=256 dest=all size=102 \
             fault_phase=5.935727ms evict=9.482564ms tie_break=random load_end=18.771208ms \
             fault=kill-posting:7@91.906us fault=pause:4@229.96us+1.69241ms \
             fault=delay:4>12@313.261us+6.987us=44.386us~1.064us fault=kill-posting:15@1.156617ms \
             fault=kill-posting:0@1.385943ms fault=kill:5@1.385943ms \
             fault=kill-posting:10@1.385943ms fault=kill-posting:18@2.355385ms \
             fault=kill-posting:17@2.653809ms fault=kill-posting:16@3.753998ms \
             fault=slow:8@3.879674ms+299.642us=3.433608189538802 fault=kill-posting:2@5.071816ms \
             fault=slow:11@5.676441ms+612.203us=6.541742268622689",
        );
        sweep::assert_passes_under(&run, &Model::priced("xl170-cx4", "ramcast-java"));
    }

    /// CI's sweep: 50 seeds with faults, 0 violations (the long sweep is `harness check`).
    /// `RAMCAST_SEEDS=N` runs a longer sweep.
    #[test]
    fn fifty_seeds_under_faults_hold_every_property() {
        let profile = Model::hardware("xl170-cx4");
        let mut kinds = (0, 0, 0);
        sweep::ci_sweep("RAMCAST_SEEDS", 50, &profile, |run: &RamcastRun, _| {
            let k = run.kinds();
            kinds.0 += k.leader_crash as u32;
            kinds.1 += k.client_crash as u32;
            kinds.2 += k.false_suspicion as u32;
        });
        // The sweep really injects each fault kind.
        assert!(kinds.0 > 0 && kinds.1 > 0 && kinds.2 > 0, "{kinds:?}");
    }
}
