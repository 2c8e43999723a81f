//! TPC-C on Heron over RamCast, on the simulator: the oracle replays the agreed order (every
//! response, every surviving replica's state), TPC-C's consistency conditions hold on the
//! database the replicas end with, and the requests stay live after replica crashes and
//! laggards.

use heron::testing::{self, chaos};
use heron::tpcc::{consistency, Kind, Scale};
use heron::{Application, Config, Tpcc};
use ramcast::{RamcastClient, RamcastServer};
use std::collections::BTreeMap;
use std::sync::Arc;
use transport::runtime::sim::Fault;
use transport::{Nanos, ProcessId};

type Run = testing::SimRun<RamcastServer, RamcastClient, Tpcc>;

fn run(mut cfg: Config, app: Tpcc, seed: u64, faults: Vec<Fault>, stop: Nanos) -> Run {
    cfg.max_response = heron::tpcc::MAX_RESPONSE;
    let mut rc = ramcast::Config::new(cfg.partitions, cfg.replicas, cfg.clients);
    rc.slots = testing::ramcast_slots(stop);
    let rc = Arc::new(rc);
    testing::run_sim(
        cfg,
        Arc::new(app),
        testing::on_testbed(seed, faults),
        stop,
        Nanos(40_000_000),
        |g, r| RamcastServer::new(rc.clone(), g, r),
        |i| RamcastClient::new(rc.clone(), i),
    )
}

/// The oracle's verdict and the consistency conditions; returns the requests per kind the
/// clients completed.
fn judge(r: &Run, app: &Tpcc, what: &str) -> BTreeMap<Kind, u64> {
    if let Err(v) = r.verdict() {
        panic!("{what}: {} violations, first: {}", v.len(), v[0]);
    }
    assert!(
        r.stuck().is_empty(),
        "{what}: {:?} never finished",
        r.stuck()
    );
    let bad = consistency::check(app, &r.database());
    assert!(bad.is_empty(), "{what}: {bad:?}");
    let mut kinds = BTreeMap::new();
    for (_, calls) in r.histories() {
        for c in calls.iter().filter(|c| c.returned.is_some()) {
            *kinds.entry(Kind::of(&c.request)).or_default() += 1;
        }
    }
    kinds
}

fn scale() -> Scale {
    Scale::scaled(100, 100)
}

#[test]
fn tpcc_over_three_warehouses_is_linearizable_and_consistent() {
    let app = Tpcc::new(3, scale(), 1);
    let r = run(
        Config::new(3, 3, 6),
        app.clone(),
        2,
        vec![],
        Nanos(2_000_000),
    );
    let kinds = judge(&r, &app, "no faults");
    let total: u64 = kinds.values().sum();
    assert!(total > 100, "{kinds:?}");
    assert!(r.counters().multi > 0, "{:?}", r.counters());
    assert_eq!(kinds.len(), 5, "every transaction ran: {kinds:?}");
}

/// The chaos sweep's faults (replica crashes, RamCast leaders among them, laggards that
/// need state transfers, client crashes) under TPC-C: `TPCC_SEEDS` seeds (default 4).
#[test]
fn tpcc_under_faults_stays_linearizable_and_consistent() {
    let seeds: u64 = testing::env_u64("TPCC_SEEDS", 4);
    let mut transfers = 0;
    for seed in 0..seeds {
        let c = chaos(seed);
        let app = Tpcc::new(c.cfg.partitions, scale(), seed);
        let faults = c.faults.clone();
        let r = run(c.cfg.clone(), app.clone(), seed, c.faults, c.stop);
        let kinds = judge(&r, &app, &format!("seed {seed}, faults {faults:?}"));
        let idle = r.idle_clients(c.quiet);
        assert!(idle.is_empty(), "seed {seed}, faults {faults:?}: {idle:?}");
        transfers += r.counters().transfers_received;
        assert!(!kinds.is_empty(), "seed {seed}");
    }
    eprintln!("{seeds} seeds, {transfers} state transfers");
}

/// Regression (seed 19 of the chaos faults, found by the first TPC-C sweep): replica 5 lagged
/// behind by a few dozen requests, about a thousand rows to send; the transfer took longer
/// than the transfer timeout (100 us), so the laggard named the next responder (crashed, p4),
/// then the first again, which started over, and so on: 412 attempts, none installed, and with
/// p4 crashed the partition had no majority for the next multi-partition request, so every
/// replica of both partitions waited in its phase 2. Fixed: each attempt of one lag waits
/// twice as long as the one before. Since clients became terminals bound to a warehouse the
/// seed's transfer fits the default timeout, so the test shortens the timeout to 2 us: every
/// transfer outlasts its first attempts and must still complete.
#[test]
fn a_transfer_longer_than_the_timeout_completes() {
    let mut c = chaos(19);
    c.cfg.transfer_timeout = transport::Nanos(2_000);
    let app = Tpcc::new(c.cfg.partitions, scale(), 19);
    let r = run(c.cfg.clone(), app.clone(), 19, c.faults, c.stop);
    judge(&r, &app, "seed 19");
    let counters = r.counters();
    assert!(counters.transfers_received > 0, "{counters:?}");
    assert!(
        counters.transfers_asked > counters.transfers_received,
        "{counters:?}"
    );
}

/// Regression (`harness check --protocol heron --seed 51 --torn never`, found once the
/// harness drew faults late in the run): replica p7 (partition 2) crashed at 180 us and p4
/// paused from 1.49 ms to 1.60 ms. RamCast's rings had 128 slots; every client had sent a
/// message involving partition 2 since the crash, and one lap later (1.45-1.74 ms: a TPC-C
/// terminal sends nearly all its requests to its home partition) each found a slot still held
/// for p7, which never delivers, and waited for RamCast's eviction of p7, 20 ms: no request
/// issued after the pause was answered before the clients stopped at 4.6 ms. With a ring
/// sized to the run (`testing::ramcast_slots`) no client laps it.
#[test]
fn no_client_waits_for_a_crashed_replicas_slots() {
    let mut c = chaos(51);
    c.faults = vec![
        Fault::Crash {
            at: Nanos(180_336),
            process: ProcessId(7),
        },
        Fault::Pause {
            at: Nanos(1_490_404),
            process: ProcessId(4),
            duration: Nanos(114_489),
        },
    ];
    c.quiet = Nanos(1_604_893);
    c.stop = c.quiet + testing::LIVE;
    let app = Tpcc::new(c.cfg.partitions, scale(), 51);
    let r = run(c.cfg.clone(), app.clone(), 51, c.faults, c.stop);
    judge(&r, &app, "seed 51");
    // The run is one where a ring of 128 would lap: some terminal sent more than 128
    // requests to one partition.
    let mut most = 0;
    for (_, calls) in r.histories() {
        let mut per = BTreeMap::new();
        for call in &calls {
            for g in app.destinations(&call.request) {
                *per.entry(g).or_insert(0) += 1;
            }
        }
        most = per.into_values().max().unwrap_or(0).max(most);
    }
    assert!(
        most > 128,
        "{most} requests: the run no longer laps a ring of 128"
    );
    let idle = r.idle_clients(c.quiet);
    assert!(
        idle.is_empty(),
        "clients with nothing answered after 1.6 ms: {idle:?}"
    );
}
