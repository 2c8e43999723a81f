//! `harness check --protocol rdmc`: RDMC under random faults on the simulator. Every parameter
//! comes from the seed: group size (2-20), algorithm (rack-aware ones with 2-4 racks), 1-3
//! concurrent groups over the same nodes, 1-4 messages per root of 1 B to 1 MB in blocks of
//! 256 B to 64 KB, synthetic or real byte payloads, and the faults: crashes of any members
//! (roots included, half of them in the middle of posting) while transfers are in flight,
//! pauses, slow processes and delayed links.
//!
//! What must hold (each a violation otherwise):
//! - **integrity**: every completed message is byte for byte what its root sent;
//! - **order**: each member completes a group's messages in sequence, none twice;
//! - **no completion after failure**: once a member got a group's failure upcall, nothing of
//!   that group completes there;
//! - **accuracy**: a failure upcall names a member that crashed;
//! - **liveness**: at the end, every surviving member of every group has completed all of
//!   the group's messages or got its failure upcall, and the latter only if the group has a
//!   crashed member: nobody hangs.

use crate::member::{rooted_group, Member};
use crate::{Algorithm, GroupConfig, RdmcNode};
use std::collections::BTreeMap;
use std::sync::Arc;
use sweep::spec::{list, parse_list, Spec, SpecWriter};
use sweep::{
    divergence, local_faults, run_local, Kinds, LocalCheck, Model, Outcome, SeedRun, Tally,
};
use transport::rng::{Purpose, Rng};
use transport::runtime::sim::{Fault, Sim};
use transport::{Data, Nanos, ProcessId, Synthetic};

/// The `Purpose::Workload` stream a run's parameters are drawn from ([`sweep::params_stream`]).
const PARAMS: u64 = u64::MAX - 3;

/// How often members probe a peer they wait on.
const PROBE: Nanos = Nanos(500_000);

/// Simulated time a run gets: the transfers take well under a millisecond, a crashed peer is
/// reported unreachable after the profile's timeout (10 ms), and idle groups probe with
/// backoff; everything must be settled by then.
const LIMIT: Nanos = Nanos(400_000_000);

/// Wall time a local run gets at most: its transfers and failure reports take well under a
/// second on threads (an op to a crashed member fails at once), seconds on a loaded machine;
/// only a hung run should reach it.
const LOCAL_LIMIT: Nanos = Nanos(30_000_000_000);

/// Everything one checking run is made of.
#[derive(Clone, Debug)]
pub struct RdmcRun {
    seed: u64,
    nodes: usize,
    algorithm: Algorithm,
    racks: usize,
    block: usize,
    /// Message sizes per group (group `g` has root `g`).
    sizes: Vec<Vec<usize>>,
    /// Whether payloads are real bytes (else synthetic descriptors).
    bytes: bool,
    faults: Vec<Fault>,
}

impl RdmcRun {
    fn groups(&self) -> Vec<GroupConfig> {
        (0..self.sizes.len())
            .map(|s| {
                let buffer = self.sizes[s].iter().copied().max().unwrap_or(1);
                rooted_group(
                    self.nodes,
                    s,
                    self.algorithm,
                    self.racks,
                    self.block,
                    buffer,
                )
            })
            .collect()
    }

    fn expected(&self) -> BTreeMap<(u32, u64), Synthetic> {
        let mut rng = Rng::derive(self.seed, Purpose::Payload, 0);
        let mut out = BTreeMap::new();
        for (g, sizes) in self.sizes.iter().enumerate() {
            for (m, &len) in sizes.iter().enumerate() {
                out.insert(
                    (g as u32, m as u64),
                    Synthetic::new(rng.next_u64(), len as u64),
                );
            }
        }
        out
    }

    fn build(&self, model: &Model) -> Sim<Member> {
        let mut sc = model.config(self.seed);
        sc.faults = self.faults.clone();
        Sim::new(sc, self.members())
    }

    /// Every node, its roots' messages queued.
    fn members(&self) -> Vec<Member> {
        let groups = self.groups();
        let expected = Arc::new(self.expected());
        (0..self.nodes)
            .map(|p| {
                let me = ProcessId(p as u32);
                let mut node = RdmcNode::new(me, &groups, PROBE).expect("valid groups");
                if p < self.sizes.len() {
                    for m in 0..self.sizes[p].len() as u64 {
                        let s = expected[&(p as u32, m)];
                        let data = if self.bytes {
                            Data::Bytes(s.to_vec().into())
                        } else {
                            Data::Synthetic(s)
                        };
                        node.send_message(p as u32, data).expect("fits the buffer");
                    }
                }
                Member::new(node, me, expected.clone(), usize::MAX)
            })
            .collect()
    }

    /// The crashed processes' ids among the faults.
    #[cfg(test)]
    fn crashes(&self) -> impl Iterator<Item = ProcessId> + '_ {
        self.faults.iter().filter_map(|f| match *f {
            Fault::Crash { process, .. } | Fault::CrashMidPost { process, .. } => Some(process),
            _ => None,
        })
    }
}

impl SeedRun for RdmcRun {
    const PROTOCOL: &'static str = "rdmc";
    const ABOUT: &'static str =
        "RDMC: random groups, algorithms and messages; members (roots too) crash mid-transfer; integrity, order, failure upcalls to every survivor, nobody hangs";
    const TESTBED: &'static str = crate::TESTBED;
    const EXTRA: Option<&'static str> = Some("failure upcalls");

    fn derive(seed: u64) -> RdmcRun {
        let mut rng = Rng::derive(seed, Purpose::Workload, PARAMS);
        let nodes = 2 + rng.below(19) as usize;
        let algorithm = Algorithm::ALL[rng.below(Algorithm::ALL.len() as u64) as usize];
        let racks = if algorithm.uses_racks() {
            2 + rng.below(3.min(nodes as u64 - 1)) as usize
        } else {
            1
        };
        let block = [256, 1000, 4096, 65536][rng.below(4) as usize];
        let senders = 1 + rng.below(3.min(nodes as u64)) as usize;
        let sizes: Vec<Vec<usize>> = (0..senders)
            .map(|_| {
                (0..1 + rng.below(4))
                    .map(|_| match rng.below(3) {
                        0 => 1 + rng.below(block as u64 * 2) as usize,
                        1 => 1 + rng.below(64 << 10) as usize,
                        _ => 1 + rng.below(1 << 20) as usize,
                    })
                    .collect()
            })
            .collect();
        let bytes = rng.chance(0.5);
        // Faults within the time the transfers take (100 Gb/s, a few relays deep).
        let total: usize = sizes.iter().flatten().sum();
        let phase = 20_000 + (total as u64 * 8 / 97) * 3;
        let mut frng = Rng::derive(seed, Purpose::Faults, 0);
        let mut faults = Vec::new();
        if frng.chance(0.7) {
            let mut victims: Vec<u32> = (0..nodes as u32).collect();
            for i in 0..1 + frng.below(2.min(nodes as u64 - 1)) as usize {
                let j = i + frng.below((victims.len() - i) as u64) as usize;
                victims.swap(i, j);
                let (at, process) = (Nanos(frng.below(phase)), ProcessId(victims[i]));
                faults.push(if frng.chance(0.5) {
                    Fault::CrashMidPost { at, process }
                } else {
                    Fault::Crash { at, process }
                });
            }
        }
        for _ in 0..frng.below(4) {
            let at = Nanos(frng.below(phase));
            let process = ProcessId(frng.below(nodes as u64) as u32);
            faults.push(match frng.below(3) {
                0 => Fault::Pause {
                    at,
                    process,
                    duration: Nanos(frng.below(3_000_000)),
                },
                1 => Fault::Slow {
                    at,
                    process,
                    duration: Nanos(frng.below(phase) + 1),
                    factor: 1.0 + frng.unit_f64() * 9.0,
                },
                _ => Fault::LinkDelay {
                    at,
                    from: process,
                    to: ProcessId(frng.below(nodes as u64) as u32),
                    duration: Nanos(frng.below(phase) + 1),
                    delay: Nanos(frng.below(50_000)),
                    jitter: Nanos(frng.below(10_000)),
                },
            });
        }
        faults.sort_by_key(|f| f.at());
        RdmcRun {
            seed,
            nodes,
            algorithm,
            racks,
            block,
            sizes,
            bytes,
            faults,
        }
    }

    /// Message sizes are written per root, `/` between roots: `sizes=10,2000/77`.
    fn spec(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|m| list(m)).collect();
        SpecWriter::new(self.seed)
            .put("nodes", self.nodes)
            .put("algorithm", self.algorithm)
            .put("racks", self.racks)
            .put("block", self.block)
            .put("sizes", sizes.join("/"))
            .put("payload", if self.bytes { "bytes" } else { "synthetic" })
            .faults(&self.faults)
    }

    fn from_spec(line: &str) -> Result<RdmcRun, String> {
        let mut s = Spec::parse(line)?;
        let run = RdmcRun {
            seed: s.get("seed")?,
            nodes: s.get("nodes")?,
            algorithm: s.get("algorithm")?,
            racks: s.get("racks")?,
            block: s.get("block")?,
            sizes: s
                .get::<String>("sizes")?
                .split('/')
                .map(parse_list)
                .collect::<Result<_, _>>()?,
            bytes: match s.get::<String>("payload")?.as_str() {
                "bytes" => true,
                "synthetic" => false,
                other => return Err(format!("`payload={other}`: bytes or synthetic")),
            },
            faults: s.faults()?,
        };
        s.end("rdmc")?;
        Ok(run)
    }

    fn kinds(&self) -> Kinds {
        let mut k = Kinds::default();
        for f in &self.faults {
            match *f {
                Fault::Crash { process, .. } | Fault::CrashMidPost { process, .. } => {
                    // A root ("leader" of the sweep's tally) or a receiver.
                    if (process.0 as usize) < self.sizes.len() {
                        k.leader_crash = true;
                    } else {
                        k.follower_crash = true;
                    }
                    k.mid_post |= matches!(f, Fault::CrashMidPost { .. });
                }
                Fault::Pause { .. } | Fault::Slow { .. } => k.slow = true,
                Fault::LinkDelay { .. } => k.link_delay = true,
                Fault::Revoke { .. } => {}
            }
        }
        k
    }

    fn check(&self, model: &Model, determinism: bool) -> Outcome {
        self.check_until(model, LIMIT, determinism)
    }

    /// The same members on real threads: the crashes and pauses stretched to wall time; a run
    /// ends once every member has completed or been told of a failure in each of its groups.
    fn check_local(&self, local: &LocalCheck) -> Outcome {
        let k = local.stretch;
        let faults = local_faults(&self.faults, k);
        let limit = Nanos(LIMIT.as_nanos().saturating_mul(k)).min(LOCAL_LIMIT);
        let run = run_local(local.config(self.seed), self.members(), &faults, limit);
        let mut out = Outcome::default();
        self.judge(&run.processes, &run.crashed, &mut out);
        out
    }

    fn tally_line(t: &Tally) -> String {
        format!(
            "runs with: root crash {}, receiver crash {}, crash in the middle of posting {}, pause/slow {}, link delay {}; runs with failure upcalls {}{}",
            t.leader_crash, t.follower_crash, t.mid_post, t.slow, t.link_delay, t.extra, t.describe_torn()
        )
    }
}

impl RdmcRun {
    /// Runs for `limit` of simulated time and checks the properties.
    fn check_until(&self, model: &Model, limit: Nanos, determinism: bool) -> Outcome {
        let mut sim = self.build(model);
        sim.run(Some(limit));
        let mut out = Outcome::simulated(&sim.stats());
        let dead: Vec<bool> = (0..self.nodes)
            .map(|p| sim.crashed(ProcessId(p as u32)))
            .collect();
        self.judge(sim.processes(), &dead, &mut out);
        if determinism {
            out.divergence = divergence(|| self.build(model), limit);
        }
        out
    }

    /// Judges the members as a run left them, `dead[p]` saying whether `p` crashed.
    fn judge(&self, members: &[Member], dead: &[bool], out: &mut Outcome) {
        let groups = self.groups();
        let crashed = |p: ProcessId| dead[p.index()];
        for (i, m) in members.iter().enumerate() {
            let dead = dead[i];
            out.delivered += m.done.len() as u64;
            out.extra += m.failed.len() as u64;
            out.states.push(format!(
                "p{i}{}: {} completed, failed {:?}",
                if dead { " (crashed)" } else { "" },
                m.done.len(),
                m.failed
            ));
            let mut v = |what: String| out.violations.push(format!("p{i}: {what}"));
            if m.corrupt > 0 {
                v(format!(
                    "{} messages differ from what the root sent",
                    m.corrupt
                ));
            }
            if m.out_of_order > 0 {
                v(format!("{} completions out of sequence", m.out_of_order));
            }
            if m.after_failure > 0 {
                v(format!(
                    "{} completions after the group failed",
                    m.after_failure
                ));
            }
            for &(g, member) in &m.failed {
                let p = groups[g as usize].members[member];
                if !crashed(p) {
                    v(format!(
                        "group {g} reported member {member} ({p}) failed; it is alive"
                    ));
                }
            }
            if dead {
                continue;
            }
            for g in m.groups() {
                let has_crash = groups[g as usize].members.iter().any(|&p| crashed(p));
                let failed = m.failed.iter().any(|f| f.0 == g);
                if !m.complete(g) && !failed {
                    v(format!(
                        "group {g} neither completed nor failed (hung){}",
                        if has_crash {
                            ""
                        } else {
                            " with no member crashed"
                        }
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two shards' reports, written as TOML, read back and merged, say what the whole sweep
    /// says; a shard given twice and a report of another sweep are refused.
    #[test]
    fn merged_shard_reports_are_the_whole_sweeps_report() {
        let model = Model::hardware("r320-cx3");
        let report = |shard: (u64, u64)| {
            let seeds: Vec<u64> = (0..10)
                .skip(shard.0 as usize)
                .step_by(shard.1 as usize)
                .collect();
            let mut r = sweep::Report {
                protocol: RdmcRun::PROTOCOL.into(),
                seeds: 10,
                shard,
                runs: seeds.len() as u64,
                ..sweep::Report::default()
            };
            sweep::run_seeds(&seeds, RdmcRun::derive, &model, false, 1, |s, run, o| {
                r.tally.add(run.kinds(), o);
                if !o.violations.is_empty() {
                    r.failed.push(s);
                }
            })
            .expect("threads start");
            let text = toml::to_string(&r).expect("serialises");
            toml::from_str::<sweep::Report>(&text).expect("reads back")
        };
        let whole = report((0, 1));
        let (merged, missing) = sweep::Report::merge(vec![report((1, 2)), report((0, 2))]).unwrap();
        assert!(missing.is_empty());
        assert_eq!(
            (merged.runs, &merged.failed, merged.tally.describe(None)),
            (whole.runs, &whole.failed, whole.tally.describe(None))
        );
        assert_eq!(merged.tally.events, whole.tally.events);
        assert!(sweep::Report::merge(vec![report((0, 2)), report((0, 2))]).is_err());
        assert!(sweep::Report::merge(vec![report((0, 2)), whole]).is_err());
    }

    /// A run's line ([`SeedRun::spec`]) reads back to the same run, for every kind of run the
    /// seeds derive.
    #[test]
    fn runs_read_back_from_their_lines() {
        sweep::assert_specs_read_back::<RdmcRun>(300);
    }

    /// A lean sweep for CI; `RDMC_SEEDS=N` runs more.
    #[test]
    fn rdmc_holds_its_properties_under_random_faults() {
        let seeds: u64 = std::env::var("RDMC_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(40);
        let profile = Model::hardware("fractus-100g");
        let mut failed = Vec::new();
        let mut crashes = 0;
        for seed in 0..seeds {
            let run = RdmcRun::derive(seed);
            crashes += usize::from(run.crashes().next().is_some());
            let out = run.check(&profile, seed < 3);
            if !out.violations.is_empty() || out.divergence.is_some() {
                failed.push((seed, out.violations, out.divergence));
            }
        }
        assert!(crashes > 0, "the sweep injected no crash");
        assert!(failed.is_empty(), "{failed:?}");
    }

    /// On real threads too: a seed whose members crash mid-transfer ends with the survivors
    /// told (failure upcalls), nothing corrupt, nobody hung.
    #[test]
    fn a_crash_on_real_threads_is_reported_to_the_survivors() {
        let run = (0..200)
            .map(RdmcRun::derive)
            .find(|r| {
                r.nodes > 3
                    && r.faults
                        .iter()
                        .all(|f| matches!(f, Fault::Crash { .. } | Fault::CrashMidPost { .. }))
                    && r.crashes().next().is_some()
            })
            .expect("a seed with crashes only");
        let local = LocalCheck {
            stretch: 100,
            nic_thread: true,
            yield_words: true,
        };
        let out = run.check_local(&local);
        assert!(out.violations.is_empty(), "{:?}", out.violations);
        assert!(
            out.extra > 0,
            "the crash was not reported to anyone: {:?}",
            out.states
        );
    }

    /// The check is not vacuous: a crash is reported to survivors, and a run stopped before
    /// its transfers finish is flagged as hung.
    #[test]
    fn crashes_are_reported_and_unfinished_runs_are_flagged() {
        let profile = Model::hardware("fractus-100g");
        let run = (0..200)
            .map(RdmcRun::derive)
            .find(|r| r.crashes().next().is_some() && r.nodes > 3)
            .expect("a seed with a crash");
        let out = run.check(&profile, false);
        assert!(out.violations.is_empty(), "{:?}", out.violations);
        assert!(out.extra > 0, "the crash was not reported to anyone");
        let cut = run.check_until(&profile, Nanos(1_000), false);
        assert!(
            cut.violations.iter().any(|v| v.contains("hung")),
            "{:?}",
            cut.violations
        );
    }
}
