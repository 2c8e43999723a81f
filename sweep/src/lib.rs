//! VOPR-style checking sweeps of the workbench's protocols, in the spirit of FoundationDB's and
//! TigerBeetle's simulators: every parameter of a run and its fault schedule drawn from one
//! seed, the run on the deterministic simulator (or on real threads), the verdicts, and a
//! tally of what the runs held. `harness check` drives a protocol's runs over many seeds; a
//! protocol's own tests pin the runs that once failed, each as one line ([`spec`]).
//!
//! In parts: [`schedule`] draws a seed's faults and phases and names the kinds of fault a run
//! holds, [`draw`] draws the run parameters several protocols draw alike, [`judge`] gives the
//! verdicts on one run, [`tally`] counts outcomes, and [`driver`] runs seeds on the simulator
//! or on threads and reports. A protocol takes part by
//! implementing [`SeedRun`] (its crate's `check` module, behind its `check` feature) and
//! [`multicast::Observed`] for its server; an atomic multicast protocol implements
//! [`Checkable`] for its deployment and its runs are [`MulticastRun`]s.

#![deny(missing_docs)]

pub mod draw;
pub mod driver;
pub mod judge;
pub mod multicast_run;
pub mod schedule;
pub mod spec;
pub mod tally;

pub use driver::*;
pub use multicast_run::{stretch, Checkable, MulticastRun};
pub use schedule::*;
pub use tally::*;

#[cfg(test)]
mod tests {
    use super::judge::judge_halts;
    use super::*;
    use transport::runtime::sim::Fault;
    use transport::{Nanos, ProcessId};

    /// `--torn drawn` tears about half the seeds, with every piece size and order among them;
    /// `always` every seed with the same draw; `never` none.
    #[test]
    fn torn_policies_choose_the_seeds_that_tear() {
        let model = |torn| Model {
            torn,
            ..Model::hardware("r320-cx3")
        };
        let (drawn, always, never) = (model(Torn::Drawn), model(Torn::Always), model(Torn::Never));
        let mut kinds = std::collections::BTreeSet::new();
        let mut torn = 0;
        for seed in 0..400 {
            let t = always.tearing(seed).expect("always");
            kinds.insert(
                t.to_string()
                    .split('/')
                    .take(2)
                    .collect::<Vec<_>>()
                    .join("/"),
            );
            if let Some(d) = drawn.tearing(seed) {
                assert_eq!(d, t, "seed {seed}: drawn and always tear alike");
                torn += 1;
            }
            assert!(never.tearing(seed).is_none());
        }
        assert!((150..250).contains(&torn), "{torn} of 400 seeds torn");
        assert_eq!(kinds.len(), 4, "{kinds:?}");
    }

    /// The stretched phases keep their order and cap the convergence of a local run.
    #[test]
    fn a_local_run_stretches_the_schedule_and_keeps_crashes_and_pauses() {
        let p = Phases {
            last_fault: Nanos(1_000),
            load_end: Nanos(5_000),
            limit: Nanos(100_000_000),
        };
        let s = p.stretched(100);
        assert_eq!((s.last_fault, s.load_end), (Nanos(100_000), Nanos(500_000)));
        assert_eq!(s.limit, Nanos(500_000) + LOCAL_CONVERGE);
        let faults = [
            Fault::CrashMidPost {
                at: Nanos(7),
                process: ProcessId(1),
            },
            Fault::Pause {
                at: Nanos(3),
                process: ProcessId(2),
                duration: Nanos(5),
            },
            Fault::Slow {
                at: Nanos(1),
                process: ProcessId(0),
                duration: Nanos(5),
                factor: 2.0,
            },
        ];
        assert_eq!(
            local_faults(&faults, 10),
            vec![
                Fault::Crash {
                    at: Nanos(70),
                    process: ProcessId(1)
                },
                Fault::Pause {
                    at: Nanos(30),
                    process: ProcessId(2),
                    duration: Nanos(50)
                },
            ]
        );
    }

    /// The halt verdict on hand-made outcomes: one group of three (f = 1), process 1 halted.
    #[test]
    fn halts_are_judged_against_the_schedule_and_f() {
        let m = Groups::new(1, 3, 1);
        let none = |_: ProcessId| false;
        let halted = [ProcessId(1)];
        let paused = Fault::Pause {
            at: Nanos(10),
            process: ProcessId(1),
            duration: Nanos(1_000_000),
        };
        // Paused by the schedule, alone in its group: an outcome, not a failure.
        assert!(judge_halts(&halted, &none, std::slice::from_ref(&paused), &m).is_empty());
        // Nothing in the schedule touched it: a correct server stopped.
        let other = Fault::Pause {
            at: Nanos(10),
            process: ProcessId(2),
            duration: Nanos(1_000_000),
        };
        let v = judge_halts(&halted, &none, &[other], &m);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("never paused"), "{v:?}");
        // A crash beside the halt: two of three members gone, more than f = 1.
        let crashed = |p: ProcessId| p == ProcessId(0);
        let v = judge_halts(&halted, &crashed, &[paused], &m);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("more than f = 1"), "{v:?}");
    }

    /// A membership of `groups` groups of `replicas` servers and `clients` clients (the
    /// protocols' own configurations are not at hand here).
    struct Groups(usize, usize, usize);

    impl Groups {
        fn new(groups: usize, replicas: usize, clients: usize) -> Groups {
            Groups(groups, replicas, clients)
        }
    }

    impl multicast::Membership for Groups {
        fn group_count(&self) -> usize {
            self.0
        }
        fn replica_count(&self) -> usize {
            self.1
        }
        fn client_count(&self) -> usize {
            self.2
        }
    }

    fn us(x: u64) -> Nanos {
        Nanos(x * 1_000)
    }

    /// Overlapping spans join; a gap between two splits them.
    #[test]
    fn impairments_join_where_they_overlap() {
        let span = |a, b| (us(a), us(b));
        assert_eq!(longest_impairment(&[]), Nanos::ZERO);
        assert_eq!(
            longest_impairment(&[span(3810, 5531), span(1064, 2255), span(1064, 5828)]),
            us(5531 - 1064).max(us(5828 - 1064))
        );
        assert_eq!(
            longest_impairment(&[span(0, 1000), span(1500, 2000)]),
            us(1000)
        );
    }

    /// RamCast seed 4707 as the drawer once drew it: one group of three (f = 1), p2 crashed,
    /// and p0 paused with its inbound links slowed (the revoke race) and paused again. Each
    /// fault is shorter than the eviction time (3400 us), their union is not, so p0 counts
    /// against f once it joins: with p2 down the group has no room, and the drawer refuses it.
    #[test]
    fn impairments_that_together_outlast_eviction_count_against_f() {
        let m = Groups::new(1, 3, 3);
        let (p0, p1, p2) = (ProcessId(0), ProcessId(1), ProcessId(2));
        let evict = Nanos(3_399_508);
        let suspect = us(300);
        let crash = [Fault::Crash {
            at: us(2971),
            process: p2,
        }];
        let pause = |at, d| Fault::Pause {
            at: us(at),
            process: p0,
            duration: us(d),
        };
        let slowed_into_p0 = |from| Fault::LinkDelay {
            at: us(1064),
            from,
            to: p0,
            duration: us(3573),
            delay: us(1191),
            jitter: Nanos::ZERO,
        };
        let revoke_race = [pause(1064, 1191), slowed_into_p0(p1), slowed_into_p0(p2)];
        let mut drawn = Impairments::new(&m, &crash, evict, suspect);
        // The second pause alone is shorter than the eviction time: it fits beside the crash.
        assert!(drawn.admit(&[pause(3810, 1721)], |_| true, &m));
        // The revoke race joins it into 4.7 ms: p0 would be a second faulty member.
        assert!(!drawn.admit(&revoke_race, |p| p == p0, &m));
        // Without the crash the group has room for p0.
        let mut roomy = Impairments::new(&m, &[], evict, suspect);
        assert!(roomy.admit(&[pause(3810, 1721)], |_| true, &m));
        assert!(roomy.admit(&revoke_race, |p| p == p0, &m));
        assert_eq!(roomy.faulty[0], vec![p0]);
    }

    /// TRAM seed 4475 as the drawer once drew it: with a short eviction time, a slowed link
    /// between two members of a group (f = 1) impairs both ends, so it does not fit; and the
    /// halt of the sender behind it is an outcome, not a correct server stopped.
    #[test]
    fn a_slowed_link_impairs_both_of_its_ends() {
        let m = Groups::new(1, 3, 6);
        let (p0, p1) = (ProcessId(0), ProcessId(1));
        let link = Fault::LinkDelay {
            at: us(962),
            from: p0,
            to: p1,
            duration: us(1849),
            delay: us(783),
            jitter: Nanos::ZERO,
        };
        assert!(impairs(&link, p0) && impairs(&link, p1) && !impairs(&link, ProcessId(2)));
        let mut short = Impairments::new(&m, &[], Nanos(980_965), us(300));
        assert!(!short.admit(std::slice::from_ref(&link), |_| true, &m));
        let mut long = Impairments::new(&m, &[], Nanos(5_000_000), us(300));
        assert!(long.admit(std::slice::from_ref(&link), |_| true, &m));
        assert!(long.faulty[0].is_empty());
        let none = |_: ProcessId| false;
        assert!(judge_halts(&[p0], &none, &[link], &m).is_empty());
    }

    /// A report written before the protocols' own kinds were counted by name (Ridge's
    /// `clock_skew` as a field of its own) is refused, not merged without them.
    #[test]
    fn a_report_with_tally_fields_it_does_not_know_is_refused() {
        let text = toml::to_string(&Report::default()).expect("serialises");
        assert!(text.contains("[tally]"), "{text}");
        let old = text.replace("[tally]", "[tally]\nclock_skew = 3");
        let err = toml::from_str::<Report>(&old).unwrap_err().to_string();
        assert!(err.contains("clock_skew"), "{err}");
    }
}
