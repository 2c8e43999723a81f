//! The client's contract, op by op on a recording NIC: one write per destination process,
//! clear errors for bad multicasts (nothing posted), backpressure when buffers are full.

use multicast::Membership;
use multicast::{Client, DestSet, MulticastError};
use ramcast::{Config, RamcastClient, RamcastServer};
use std::sync::Arc;
use transport::recording::RecordingNic;
use transport::{Op, Process};

fn setup(cfg: &Config) -> (RamcastClient, RecordingNic) {
    let cfg = Arc::new(cfg.clone());
    let mut specs = Vec::new();
    for p in 0..cfg.servers() {
        let g = multicast::GroupId((p / cfg.replicas) as u8);
        let s = RamcastServer::new(cfg.clone(), g, p % cfg.replicas);
        specs.push(Process::<RecordingNic>::regions(&s));
    }
    let client = RamcastClient::new(cfg.clone(), 0);
    for _ in 0..cfg.clients {
        specs.push(Process::<RecordingNic>::regions(&client));
    }
    let nic = RecordingNic::new(cfg.client(0), specs, 1);
    (client, nic)
}

#[test]
fn a_multicast_writes_once_to_every_destination_process() {
    let cfg = Config::new(3, 3, 1);
    let (mut c, mut nic) = setup(&cfg);
    let dst: DestSet = "0;2".parse().unwrap();
    c.try_multicast(&mut nic, dst, b"hello").unwrap();
    let targets: Vec<u32> = nic
        .take_ops()
        .into_iter()
        .map(|(_, op)| match op {
            Op::Write { dst, .. } => dst.process.0,
            other => panic!("unexpected {other}"),
        })
        .collect();
    assert_eq!(targets, vec![0, 1, 2, 6, 7, 8]);
}

#[test]
fn bad_multicasts_are_errors_and_post_nothing() {
    let cfg = Config::new(2, 3, 1);
    let (mut c, mut nic) = setup(&cfg);
    let big = vec![0u8; 2000];
    let e = c
        .try_multicast(&mut nic, "0".parse().unwrap(), &big)
        .unwrap_err();
    assert!(
        matches!(e, MulticastError::TooLarge { len: 2000, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("raise the slot size"));
    let e = c
        .try_multicast(&mut nic, "5".parse().unwrap(), b"x")
        .unwrap_err();
    assert!(matches!(e, MulticastError::UnknownGroup { .. }), "{e}");
    let e = c.try_multicast(&mut nic, DestSet::EMPTY, b"x").unwrap_err();
    assert_eq!(e, MulticastError::NoDestination);
    assert!(nic.take_ops().is_empty());
}

/// Servers of group 0 answer message `id` and report `ldm` delivered messages.
fn answer(nic: &mut RecordingNic, id: u64, ldm: u64) {
    for server in 0..3u64 {
        let at = transport::LocalAddr::new(ramcast::layout::RESP, server as usize * 16);
        nic.memory_mut().store_u64(at, id + 1).unwrap();
        nic.memory_mut().store_u64(at.add(8), ldm).unwrap();
    }
}

#[test]
fn full_buffers_are_backpressure_not_overwrites() {
    let mut cfg = Config::new(1, 3, 1);
    cfg.slots = 2;
    let (mut c, mut nic) = setup(&cfg);
    let g0: DestSet = "0".parse().unwrap();
    c.try_multicast(&mut nic, g0, b"a").unwrap();
    // Closed loop: a second multicast in flight is refused.
    assert_eq!(
        c.try_multicast(&mut nic, g0, b"b").unwrap_err(),
        MulticastError::InFlight
    );
    // Answered but not yet reported delivered everywhere (LDM 0): the second slot is free,
    // the first is not, so the third multicast waits.
    answer(&mut nic, 0, 0);
    c.poll(&mut nic);
    assert!(Client::<RecordingNic>::poll_completed(&mut c).is_some());
    c.try_multicast(&mut nic, g0, b"b").unwrap();
    answer(&mut nic, 1, 0);
    c.poll(&mut nic);
    assert!(Client::<RecordingNic>::poll_completed(&mut c).is_some());
    nic.take_ops();
    let e = c.try_multicast(&mut nic, g0, b"c").unwrap_err();
    assert!(matches!(e, MulticastError::Full { .. }), "{e}");
    assert!(
        nic.take_ops().is_empty(),
        "a full buffer must not be written"
    );
    // Once every member reports message 0 delivered, its slot is reused.
    answer(&mut nic, 1, 1);
    c.poll(&mut nic);
    c.try_multicast(&mut nic, g0, b"c").unwrap();
    assert_eq!(nic.take_ops().len(), 3);
}
