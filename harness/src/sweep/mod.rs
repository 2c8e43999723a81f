//! What every protocol's `harness check` sweep shares: the fault schedule drawn from a seed,
//! the kinds of fault a run holds, a run's outcome, and the sweep's tally.
//!
//! In parts: [`schedule`] draws a seed's faults and phases and names the kinds of fault a run
//! holds, [`judge`] gives the verdicts on one run, [`tally`] counts outcomes, and [`driver`]
//! runs seeds on the simulator or on threads and reports.

mod driver;
pub(crate) mod judge;
mod schedule;
pub(crate) mod spec;
mod tally;

pub(crate) use driver::*;
pub(crate) use schedule::*;
pub(crate) use tally::*;

#[cfg(test)]
pub(crate) mod tests {
    use super::judge::judge_halts;
    use super::*;
    use transport::runtime::sim::{Fault, Software};
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

    /// A sweep's report on one thread and on two: every run's outcome, in seed order, and the
    /// tally line. TRAM runs are the longest-lived, so a batch finishes out of order.
    #[test]
    fn a_sweep_reports_the_same_on_one_thread_and_on_two() {
        let model = Model::hardware("r320-cx3");
        let seeds: Vec<u64> = (40..52).collect();
        let report = |jobs: usize| {
            let mut lines = Vec::new();
            let mut tally = Tally::default();
            run_seeds(
                &seeds,
                crate::protocols::tram::check::TramRun::derive,
                &model,
                false,
                jobs,
                |s, r, o| {
                    tally.add(r.kinds(), o);
                    lines.push(format!(
                        "{s} {} {} {} {} {:?} {:?}",
                        o.events, o.delivered, o.post_fault, o.halted, o.after_each, o.violations
                    ));
                },
            )
            .expect("threads start");
            lines.push(tally.describe(None));
            lines
        };
        let one = report(1);
        assert_eq!(one.len(), seeds.len() + 1);
        assert_eq!(one, report(2));
    }

    /// The simulator's change hint only saves wall time: run again without it, seeds with
    /// faults of every kind go event for event the same (`check_determinism` withholds the hint
    /// on its second run).
    #[test]
    fn the_change_hint_changes_no_event_of_a_run() {
        let free = Model::hardware("r320-cx3");
        // Priced work too: what a protocol reports must not depend on what the hint skips.
        let priced = Model {
            software: priced_software(),
            ..free.clone()
        };
        for (seed, model) in (0..4)
            .map(|s| (s, &free))
            .chain((4..6).map(|s| (s, &priced)))
        {
            let runs = [
                crate::protocols::ramcast::check::RamcastRun::derive(seed).check(model, true),
                crate::protocols::tram::check::TramRun::derive(seed).check(model, true),
            ];
            for out in runs {
                assert_eq!(out.divergence, None, "seed {seed}");
                assert!(out.delivered > 0, "seed {seed} delivered nothing");
            }
        }
    }

    /// Two shards' reports, written as TOML, read back and merged, say what the whole sweep
    /// says; a shard given twice and a report of another sweep are refused.
    #[test]
    fn merged_shard_reports_are_the_whole_sweeps_report() {
        use crate::protocols::rdmc::check::RdmcRun;
        let model = Model::hardware("r320-cx3");
        let report = |shard: (u64, u64)| {
            let seeds: Vec<u64> = (0..10)
                .skip(shard.0 as usize)
                .step_by(shard.1 as usize)
                .collect();
            let mut r = Report {
                protocol: RdmcRun::PROTOCOL.into(),
                seeds: 10,
                shard,
                runs: seeds.len() as u64,
                ..Report::default()
            };
            run_seeds(&seeds, RdmcRun::derive, &model, false, 1, |s, run, o| {
                r.tally.add(run.kinds(), o);
                if !o.violations.is_empty() {
                    r.failed.push(s);
                }
            })
            .expect("threads start");
            let text = toml::to_string(&r).expect("serialises");
            toml::from_str::<Report>(&text).expect("reads back")
        };
        let whole = report((0, 1));
        let (merged, missing) = Report::merge(vec![report((1, 2)), report((0, 2))]).unwrap();
        assert!(missing.is_empty());
        assert_eq!(
            (merged.runs, &merged.failed, merged.tally.describe(None)),
            (whole.runs, &whole.failed, whole.tally.describe(None))
        );
        assert_eq!(merged.tally.events, whole.tally.events);
        assert!(Report::merge(vec![report((0, 2)), report((0, 2))]).is_err());
        assert!(Report::merge(vec![report((0, 2)), whole]).is_err());
    }

    /// The halt verdict on hand-made outcomes: one group of three (f = 1), process 1 halted.
    #[test]
    fn halts_are_judged_against_the_schedule_and_f() {
        let m = ramcast::Config::new(1, 3, 1);
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
        let m = ramcast::Config::new(1, 3, 3);
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
        let m = ramcast::Config::new(1, 3, 6);
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

    /// A software profile with every kind of work priced (round numbers, not a calibration).
    pub(crate) fn priced_software() -> Software {
        Software::parse(
            "test.toml",
            r#"
            name = "test"
            version = 1
            description = "every kind of work priced"
            [calibration]
            source = "none: a test"
            [costs]
            scan_ns = 5
            decode_ns = 200
            copy_ps_per_byte = 100
            order_ns = 300
            deliver_ns = 200
            "#,
        )
        .expect("valid")
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
