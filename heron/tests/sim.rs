//! Heron over RamCast on the simulator, judged by the sequential oracle, an external
//! linearizability checker, and whether every surviving replica finished its work.

use heron::testing::{self, chaos, key_value_linearizable};
use heron::{Config, HeronNode, KeyValue};
use multicast::Membership;
use ramcast::{RamcastClient, RamcastServer};
use std::sync::Arc;
use transport::runtime::sim::Fault;
use transport::{Nanos, ProcessId};

type Run = testing::SimRun<RamcastServer, RamcastClient, KeyValue>;

/// `cfg` over RamCast (`xl170-cx4`, the thesis's testbed) with a key-value store of 48 keys
/// whose requests span two partitions with probability `multi`; clients stop at `stop_us`.
fn run(cfg: Config, multi: f64, seed: u64, faults: Vec<Fault>, stop_us: u64) -> Run {
    let mut rc = ramcast::Config::new(cfg.partitions, cfg.replicas, cfg.clients);
    // Enough slots that no client waits for a crashed replica's eviction (RamCast recycles a
    // slot once every destination replica delivered it, or after excluding a silent one).
    rc.slots = testing::ramcast_slots(Nanos(stop_us * 1_000));
    let rc = Arc::new(rc);
    let server = |g, r| RamcastServer::new(rc.clone(), g, r);
    let client = |i| RamcastClient::new(rc.clone(), i);
    let stop = Nanos(stop_us * 1_000);
    testing::key_value_run(cfg, multi, seed, faults, stop, server, client)
}

/// The oracle's verdict, or a panic naming the first violations.
fn check(r: &Run) -> heron::oracle::Report {
    r.verdict().unwrap_or_else(|v| {
        let first: Vec<String> = v.iter().take(5).map(|v| v.to_string()).collect();
        panic!("{} violations, first: {}", v.len(), first.join("; "))
    })
}

#[test]
fn single_and_multi_partition_requests_are_linearizable() {
    let r = run(Config::new(3, 3, 6), 0.5, 1, vec![], 1_000);
    let report = check(&r);
    let histories = r.histories();
    assert!(key_value_linearizable(&histories));
    // The external checker rejects the same history with one response changed.
    let mut broken = histories.clone();
    let call = broken[0]
        .1
        .iter_mut()
        .find(|c| c.returned.is_some())
        .expect("a response");
    let (_, response) = call.returned.as_mut().expect("checked");
    response[0] ^= 1;
    assert!(!key_value_linearizable(&broken));
    let c = r.counters();
    assert!(r.completed() > 100, "completed {}", r.completed());
    assert!(c.multi > 100 && c.remote_reads > 100, "{c:?}");
    assert_eq!(c.transfers_asked, 0, "{c:?}");
    // Every replica was compared, and every response.
    assert_eq!(report.states, 9);
    assert!(report.client_responses as u64 >= r.completed());
}

#[test]
fn a_crashed_replica_in_each_partition_does_not_stop_the_others() {
    let cfg = Config::new(2, 3, 4);
    let faults = (0..2)
        .map(|g| Fault::Crash {
            at: Nanos(300_000 + 100_000 * g as u64),
            process: cfg.server(multicast::GroupId(g), 1 + g as usize),
        })
        .collect();
    let r = run(cfg, 0.5, 2, faults, 1_000);
    let report = check(&r);
    assert_eq!(report.states, 4, "the four surviving replicas are compared");
    // Requests kept completing after the crashes (multi-partition ones waited out the extra
    // wait for the crashed replicas).
    assert!(r.counters().waited_out > 50, "{:?}", r.counters());
    let late = r
        .run
        .processes()
        .iter()
        .filter_map(|n| match n {
            HeronNode::Client(c) => Some(c.history()),
            HeronNode::Server(_) => None,
        })
        .flatten()
        .filter(|call| {
            call.returned
                .as_ref()
                .is_some_and(|(at, _)| *at > Nanos(600_000))
        })
        .count();
    assert!(late > 50, "{late} requests completed after the crashes");
}

#[test]
fn a_single_partition_deployment_executes_without_coordination() {
    let r = run(Config::new(1, 3, 3), 0.5, 3, vec![], 500);
    check(&r);
    let c = r.counters();
    assert_eq!((c.multi, c.remote_reads), (0, 0), "{c:?}");
    assert!(c.executed > 100, "{c:?}");
}

#[test]
fn phase_times_cover_multi_partition_requests_and_delays_wait_for_every_replica() {
    // Every request spans both partitions; the extra wait is long enough to wait for all.
    let mut cfg = Config::new(2, 3, 1);
    cfg.extra_wait = Nanos(1_000_000);
    let r = run(cfg, 1.0, 5, vec![], 500);
    check(&r);
    let c = r.counters();
    assert!(c.executed > 50 && c.multi == c.executed, "{c:?}");
    let per = |ns: u64| ns as f64 / c.executed as f64;
    let (coordinating, executing) = (per(c.coordinating_ns), per(c.executing_ns));
    // Two coordination rounds take at least two one-way writes; execution reads remotely.
    assert!(coordinating > 1_000.0 && executing > 1_000.0, "{c:?}");
    let latencies: Vec<f64> = r
        .histories()
        .iter()
        .flat_map(|(_, h)| h.iter())
        .filter_map(|call| call.returned.as_ref().map(|(at, _)| *at - call.invoked))
        .map(|d| d.as_nanos() as f64)
        .collect();
    let latency = latencies.iter().sum::<f64>() / latencies.len() as f64;
    assert!(
        coordinating + executing < latency,
        "phases {coordinating} + {executing} ns within a request of {latency} ns"
    );
    // A delayed request waited for the last replica, never past the extra wait.
    assert!(c.delay_ns <= c.delayed * 1_000_000, "{c:?}");
    // With the extra wait at zero nothing is delayed.
    let mut cfg = Config::new(2, 3, 1);
    cfg.extra_wait = Nanos::ZERO;
    let c = run(cfg, 1.0, 5, vec![], 300).counters();
    assert_eq!((c.delayed, c.delay_ns), (0, 0), "{c:?}");
}

#[test]
fn a_replica_paused_past_its_partition_catches_up_by_state_transfer() {
    let mut cfg = Config::new(2, 3, 4);
    cfg.extra_wait = Nanos::ZERO;
    let laggard = cfg.server(multicast::GroupId(0), 2);
    let faults = vec![Fault::Pause {
        at: Nanos(200_000),
        process: laggard,
        duration: Nanos(300_000),
    }];
    let r = run(cfg, 0.8, 4, faults, 1_500);
    let report = check(&r);
    assert_eq!(
        report.states, 6,
        "every replica is compared, the laggard too"
    );
    let HeronNode::Server(s) = &r.run.processes()[laggard.index()] else {
        unreachable!("a server")
    };
    let c = s.counters();
    assert!(c.transfers_received >= 1 && c.skipped > 0, "{c:?}");
    let total = r.counters();
    assert!(
        total.transfers_served >= 1 && total.objects_sent > 0,
        "{total:?}"
    );
    // It executed again after catching up.
    let last = s
        .executed()
        .expect("recording")
        .last()
        .expect("executed")
        .tmp;
    assert_eq!(s.applied(), last, "{c:?}");
}

/// Regression, seed 219 of the sweep below (2 partitions; a follower of partition 0 crashed,
/// its leader paused for 309 us, a replica of partition 1 and a client crashed). Postmortem: a
/// replica of partition 1 lagged and installed a state transfer up to the responder's last
/// applied request, then went on with single-partition requests only; the responder waited in
/// phase 4 of a request the laggard had skipped, for a majority its partition (one replica
/// crashed) could only reach with the laggard, which never wrote a coordination entry for it.
/// And the oracle missed the request's writes: replicas recorded a request when they
/// responded, so a request executed but stuck in phase 4 was in the responder's state and in the
/// laggard's after the transfer, yet in no log. Fixed: a replica records a request as soon as
/// it executes it, and one that installs a transfer up to `rid` writes `<rid, 2>` into every
/// server's coordination memory. Since clients wait for an answer from every partition a
/// request involves (as the thesis's do), the timing of seed 219 changed and its run installs no
/// transfer any more; the same faults under seed 34 did (one transfer, 22 requests skipped),
/// until sealed object slots and entries (8 bytes more per slot, see `heron::store`) changed
/// its timing too; under seed 19 they do (one transfer, 9 requests skipped).
#[test]
fn a_laggard_that_skipped_a_request_lets_phase_4_of_it_end() {
    let cfg = Config {
        extra_wait: Nanos::ZERO,
        ..Config::new(2, 3, 4)
    };
    let faults = vec![
        Fault::Crash {
            at: Nanos(106_541),
            process: ProcessId(1),
        },
        Fault::Pause {
            at: Nanos(538_353),
            process: ProcessId(0),
            duration: Nanos(308_647),
        },
        Fault::Crash {
            at: Nanos(240_195),
            process: ProcessId(5),
        },
        Fault::Crash {
            at: Nanos(534_622),
            process: ProcessId(6),
        },
    ];
    let r = run(cfg, 0.6, 19, faults, 1_500);
    check(&r);
    assert!(r.stuck().is_empty(), "{:?}", r.stuck());
    assert!(r.counters().transfers_received >= 1, "{:?}", r.counters());
}

/// Regression, seed 363 of the sweep (2 partitions; a replica of each crashed, the leader of
/// partition 0 paused past RamCast's suspicion timeout). Postmortem: RamCast's leader change
/// refused a write of the old leader, which put its queue pair to a replica in error; Heron's
/// coordination writes queued behind on the same queue pair were flushed and never made again,
/// so that replica never saw the old leader finish a request, and with one replica of the
/// partition crashed, it waited in phase 4 forever (and every replica after it). Fixed: the
/// multicast layer also sees Heron's flushed completions (it reconnects the pair), and Heron
/// writes each flushed address's latest value again. Since clients wait for an answer from
/// every partition a request involves, seed 363's timing changed and no write of it is flushed
/// any more; seed 119 flushes two and writes them again (it would not stall without: its
/// flushed writes are not ones a partition down to a bare majority waits for), so this test
/// keeps the repair path exercised, and the sweep keeps looking for the stall.
#[test]
fn coordination_writes_flushed_by_a_leader_change_are_made_again() {
    let c = chaos(119);
    let r = run(c.cfg, 0.6, 119, c.faults, 1_500);
    check(&r);
    assert!(r.stuck().is_empty(), "{:?}", r.stuck());
    assert!(r.counters().rewrites > 0, "{:?}", r.counters());
}

/// Regression (chaos seed 1, found once the sweep judged progress after the faults): replica
/// 8 crashed at 410 us; replicas executing a request that read an object from it waited for
/// the read to fail, which takes the NIC's retry timeout (10 ms on xl170-cx4), and every later
/// request of their partitions waited behind: three of the four clients had nothing answered
/// between the last fault and the end of their load. Fixed: a read not back within
/// `Config::read_timeout` is also made at another replica that coordinated. Sealed object
/// slots (8 bytes more per slot, see `heron::store`) changed the timing of seed 1, which no
/// longer reads from the crashed replica; seed 13 does, and with the read timeout out of reach
/// leaves all four clients with nothing answered after the faults.
#[test]
fn a_crashed_replica_does_not_hold_reads_for_the_retry_timeout() {
    let c = chaos(13);
    let r = run(c.cfg, 0.6, 13, c.faults, c.stop.as_nanos() / 1_000);
    check(&r);
    assert!(
        r.idle_clients(c.quiet).is_empty(),
        "{:?}",
        r.idle_clients(c.quiet)
    );
    assert!(r.counters().late_reads > 0, "{:?}", r.counters());
}

/// Seeds of the fault-injected sweep: `HERON_SEEDS` (default 30, kept small for CI).
fn seeds() -> u64 {
    testing::env_u64("HERON_SEEDS", 30)
}

/// Every seed is judged by the oracle, by the external checker, by whether every surviving
/// replica finished, and by whether every surviving client had a request it issued after the
/// last fault answered (and none left unanswered).
#[test]
fn random_crashes_pauses_and_client_crashes_stay_linearizable() {
    let first: u64 = testing::env_u64("HERON_FIRST_SEED", 0);
    let mut tally = [0u64; 8];
    for seed in first..first + seeds() {
        let c = chaos(seed);
        for (a, b) in
            tally
                .iter_mut()
                .zip([c.crashes, c.leader_crashes, c.pauses, c.client_crashes])
        {
            *a += b;
        }
        let faults = c.faults.clone();
        let r = run(c.cfg, 0.6, seed, c.faults, c.stop.as_nanos() / 1_000);
        if let Err(v) = r.verdict() {
            panic!("seed {seed}, faults {faults:?}: {}", v[0]);
        }
        let stuck = r.stuck();
        assert!(
            stuck.is_empty(),
            "seed {seed}, faults {faults:?}: {stuck:?} never finished"
        );
        let idle = r.idle_clients(c.quiet);
        assert!(
            idle.is_empty(),
            "seed {seed}, faults {faults:?}: clients {idle:?} made no progress after the last fault"
        );
        assert!(
            r.externally_linearizable(),
            "seed {seed}, faults {faults:?}: the external checker finds no linearization"
        );
        let c = r.counters();
        tally[4] += c.transfers_received;
        tally[5] += c.executed;
        tally[6] += c.rewrites;
        tally[7] += c.late_reads;
    }
    eprintln!(
        "seeds {first}..{}: replica crashes {} (leaders {}), pauses {}, client crashes {}; state transfers {}, requests executed {}, writes repeated after a reset queue pair {}, reads repeated elsewhere after the read timeout {}",
        first + seeds(),
        tally[0],
        tally[1],
        tally[2],
        tally[3],
        tally[4],
        tally[5],
        tally[6],
        tally[7]
    );
}

#[test]
fn the_external_checker_rejects_a_stale_read() {
    let call = |keys: &[u64], delta: i64, invoked: u64, returned: u64, before: i64| heron::Call {
        seq: 1,
        request: KeyValue::request(keys, delta),
        invoked: Nanos(invoked),
        returned: Some((Nanos(returned), before.to_le_bytes().to_vec())),
    };
    // Client 0 adds 1 to key 3 (it read 0); client 1 then reads key 3.
    let history = |read: i64| {
        vec![
            (0, vec![call(&[3], 1, 0, 5, 0)]),
            (1, vec![call(&[3], 0, 6, 9, read)]),
        ]
    };
    assert!(key_value_linearizable(&history(1)));
    assert!(
        !key_value_linearizable(&history(0)),
        "the read began after the write ended"
    );
}

/// Figure 5.6's script: replica 2 of partition 0 paused from the start past the `fill` lags
/// by exactly the filled blobs, asks for one state transfer and installs exactly their slots
/// (written in 32 KB writes), and the run stays linearizable.
#[test]
fn a_scripted_laggard_receives_exactly_the_objects_updated_since_its_request() {
    for blobs in [0, 5] {
        let cfg = Config::new(2, 3, 1);
        let laggard = cfg.server(multicast::GroupId(0), 2);
        let app = Arc::new(heron::Catchup::new(blobs));
        let mut rc = ramcast::Config::new(2, 3, 1);
        rc.slots = 128;
        let rc = Arc::new(rc);
        let pause = Fault::Pause {
            at: Nanos(1),
            process: laggard,
            duration: Nanos(1_000_000),
        };
        let sc = testing::on_testbed(1, vec![pause]);
        let r = testing::run_sim(
            cfg,
            app.clone(),
            sc,
            Nanos(2_000_000),
            Nanos(10_000_000),
            |g, i| RamcastServer::new(rc.clone(), g, i),
            |i| RamcastClient::new(rc.clone(), i),
        );
        if let Err(v) = r.verdict() {
            panic!("{blobs} blobs: {}", v[0]);
        }
        assert!(r.stuck().is_empty(), "{:?}", r.stuck());
        let HeronNode::Server(s) = &r.run.processes()[laggard.index()] else {
            unreachable!("a server")
        };
        let c = s.counters();
        assert_eq!(c.transfers_received, 1, "{c:?}");
        assert_eq!(c.transfer_bytes, app.fill_bytes(), "{c:?}");
        assert!(c.transfer_ns > 0, "{c:?}");
    }
}

/// Ordering only (Table 5.1's RamCast bars): every request answered on delivery, nothing
/// coordinated or executed, multi-partition requests included.
#[test]
fn ordering_only_answers_every_request_without_coordinating_or_executing() {
    let cfg = Config {
        order_only: true,
        ..Config::new(2, 3, 4)
    };
    let r = run(cfg, 0.6, 3, Vec::new(), 1_000);
    let c = r.counters();
    assert_eq!((c.executed, c.multi, c.coordinating_ns), (0, 0, 0), "{c:?}");
    assert!(r.completed() > 100, "{}", r.completed());
    assert!(r.stuck().is_empty());
    for (_, calls) in r.histories() {
        assert!(calls
            .iter()
            .filter_map(|c| c.returned.as_ref())
            .all(|(_, response)| response.is_empty()));
    }
}

/// Null requests (Table 5.1's "Heron (null requests)"): an application without a single
/// object, whose replicas start from an empty population in a region of the minimum size.
#[test]
fn null_requests_without_objects_complete() {
    let cfg = Config::new(2, 3, 4);
    let rc = Arc::new(ramcast::Config::new(
        cfg.partitions,
        cfg.replicas,
        cfg.clients,
    ));
    let app = Arc::new(heron::NullRequests::new(KeyValue::new(2, 48, 0.5)));
    let sc = testing::on_testbed(3, Vec::new());
    let r = testing::run_sim(
        cfg,
        app,
        sc,
        Nanos(500_000),
        Nanos(1_000_000),
        |g, r| RamcastServer::new(rc.clone(), g, r),
        |i| RamcastClient::new(rc.clone(), i),
    );
    assert!(r.completed() > 50, "completed {}", r.completed());
    assert!(r.counters().multi > 0, "{:?}", r.counters());
    assert!(r.database().is_empty());
}
