//! TPC-C on Heron over RamCast, on the simulator: the oracle replays the agreed order (every
//! response, every surviving replica's state), TPC-C's consistency conditions hold on the
//! database the replicas end with, and the requests stay live after replica crashes and
//! laggards.

use heron::testing::{self, chaos};
use heron::tpcc::{consistency, Kind, Scale};
use heron::{Config, Tpcc};
use ramcast::{RamcastClient, RamcastServer};
use std::collections::BTreeMap;
use std::sync::Arc;
use transport::runtime::sim::{Fault, Profile, SimConfig};
use transport::Nanos;

type Run = testing::SimRun<RamcastServer, RamcastClient, Tpcc>;

fn run(mut cfg: Config, app: Tpcc, seed: u64, faults: Vec<Fault>, stop: Nanos) -> Run {
    cfg.max_response = heron::tpcc::MAX_RESPONSE;
    let mut rc = ramcast::Config::new(cfg.partitions, cfg.replicas, cfg.clients);
    rc.slots = 128;
    let rc = Arc::new(rc);
    let mut sc = SimConfig::new(seed, Profile::load("xl170-cx4").expect("built in"));
    sc.faults = faults;
    testing::run_sim(
        cfg,
        Arc::new(app),
        sc,
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
