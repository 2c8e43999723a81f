//! Short runs of the unchanged protocols through the verbs runtime, each checked: RamCast,
//! TRAM and Ridge against the five properties of atomic multicast, RDMC for every member
//! getting every message intact.
//!
//! On the fake fabric ([`verbs::fake`]) they run in every CI run, once with mlx5-like access
//! checks and writes landing in order, once with rxe-like per-packet checks and a write's
//! packets landing in any order. On a real device they run only where `RDMA_DEVICE` names one,
//! and skip with the "no RDMA device" line anywhere else.

use multicast::{check, collect_log, DestPolicy, LoadSpec, Membership, Node, Server, Tree};
use std::sync::Arc;
use std::time::Duration;
use transport::{Nanos, Process, ProcessId};
use verbs::fake::{AccessCheck, Fabric, FakeConfig, Tear};
use verbs::rdma::{Provider, VerbsConfig, VerbsNic, VerbsRuntime};
use verbs::DeviceChoice;

/// Small rings and buffers: a run has (nodes x nodes x 2) queue pairs, each with its own
/// staging and receive memory, and CI runners lock little memory.
fn small(device: DeviceChoice) -> VerbsConfig {
    VerbsConfig {
        device,
        seed: 7,
        recv_depth: 4,
        recv_size: 4096,
        staging: 256 << 10,
        chunk: 64 << 10,
        ..VerbsConfig::default()
    }
}

/// 64-byte multicasts to `dest` among `groups` for the first second.
fn load(groups: usize, dest: DestPolicy, tree: Option<Tree>) -> LoadSpec {
    LoadSpec {
        dest,
        groups,
        tree: tree.map(Arc::new),
        size: 64,
        warmup_end: Nanos::ZERO,
        stop_at: Nanos(1_000_000_000),
    }
}

/// Runs `nodes` for 2 s on `provider`'s `device` and checks their log.
fn keeps_every_property<V: Provider, S: Server, C>(
    provider: V,
    device: DeviceChoice,
    protocol: &str,
    nodes: Vec<Node<S, C>>,
) where
    Node<S, C>: Process<VerbsNic<V::Ctx>> + Send,
{
    let rt = VerbsRuntime::new(provider, small(device), nodes).expect("the device was found");
    let run = rt.run(Duration::from_millis(2_000));
    let log = collect_log(&run.processes, |_| false);
    let delivered: usize = log.deliveries.values().map(Vec::len).sum();
    println!("{protocol}: {delivered} deliveries");
    assert!(delivered >= 100, "{protocol}: only {delivered} deliveries");
    let v = check(&log);
    assert!(v.is_empty(), "{protocol}: {v:?}");
}

fn ramcast_run<V: Provider>(provider: V, device: DeviceChoice)
where
    ramcast::RamcastNode: Process<VerbsNic<V::Ctx>>,
{
    let mut cfg = ramcast::Config::new(2, 3, 4);
    cfg.timing = ramcast::Timing::WALL;
    let nodes = ramcast::nodes(&cfg, load(2, DestPolicy::Random(2), None), 7, true);
    keeps_every_property(provider, device, "RamCast", nodes);
}

fn tram_run<V: Provider>(provider: V, device: DeviceChoice)
where
    tram::TramNode: Process<VerbsNic<V::Ctx>>,
{
    let tree = Tree::preset("simple").expect("a preset");
    let mut cfg = tram::Config::new(tree.clone(), 3, 4);
    cfg.timing = tram::Timing::WALL;
    let groups = cfg.group_count();
    let load = load(groups, DestPolicy::Random(2), Some(tree));
    keeps_every_property(provider, device, "TRAM", tram::nodes(&cfg, load, 7, true));
}

fn ridge_run<V: Provider>(provider: V, device: DeviceChoice)
where
    ridge::RidgeNode: Process<VerbsNic<V::Ctx>>,
{
    let mut cfg = ridge::Config::new(2, 3, 4);
    // Threads on a shared machine: a descheduled thread must not look crashed.
    cfg.timing = ridge::config::Timing::WALL;
    let nodes = ridge::nodes(&cfg, load(2, DestPolicy::Random(2), None), 7, true);
    keeps_every_property(provider, device, "Ridge", nodes);
}

fn rdmc_run<V: Provider>(provider: V, device: DeviceChoice) {
    use rdmc::{Algorithm, Event, GroupConfig, RdmcNode};
    let n = 4u32;
    let sizes = [1usize, 5000, 3 << 20];
    let group = GroupConfig {
        id: 1,
        members: (0..n).map(ProcessId).collect(),
        algorithm: Algorithm::BinomialPipeline,
        racks: vec![0; n as usize],
        block_size: 64 << 10,
        buffer_bytes: sizes[2],
    };
    let mut members: Vec<RdmcNode> = (0..n)
        .map(|p| {
            RdmcNode::new(
                ProcessId(p),
                std::slice::from_ref(&group),
                Nanos(20_000_000),
            )
        })
        .collect::<Result<_, _>>()
        .expect("a valid group");
    let msgs: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| (0..len).map(|b| (b * 7 + i) as u8).collect())
        .collect();
    for m in &msgs {
        members[0]
            .send_message(1, bytes::Bytes::from(m.clone()))
            .unwrap();
    }
    let run = VerbsRuntime::new(provider, small(device), members)
        .expect("the device was found")
        .run(Duration::from_secs(3));
    for (m, mut node) in run.processes.into_iter().enumerate().skip(1) {
        let got: Vec<Vec<u8>> = std::iter::from_fn(|| node.poll_event())
            .filter_map(|e| match e {
                Event::Completed {
                    data: rdmc::Delivered::Data(data),
                    ..
                } => Some(data.to_bytes().to_vec()),
                _ => None,
            })
            .collect();
        assert!(
            got == msgs,
            "RDMC member {m}: {} of {} messages intact",
            got.len(),
            msgs.len()
        );
    }
    println!("RDMC: {} members got {} messages intact", n - 1, msgs.len());
}

/// The fake fabrics the runs go through: mlx5-like (access checked at a message's first
/// packet, packets in order) and rxe-like (checked per packet, a write's packets in any order).
fn fabrics() -> [Fabric; 2] {
    let rxe_like = FakeConfig {
        access_check: AccessCheck::PerPacket,
        tear: Tear::Shuffled,
        ..FakeConfig::default()
    };
    [Fabric::new(FakeConfig::default()), Fabric::new(rxe_like)]
}

#[test]
fn ramcast_on_the_fake_fabric_keeps_every_property() {
    for fabric in fabrics() {
        ramcast_run(fabric, DeviceChoice::default());
    }
}

#[test]
fn tram_on_the_fake_fabric_keeps_every_property() {
    for fabric in fabrics() {
        tram_run(fabric, DeviceChoice::default());
    }
}

#[test]
fn ridge_on_the_fake_fabric_keeps_every_property() {
    for fabric in fabrics() {
        ridge_run(fabric, DeviceChoice::default());
    }
}

#[test]
fn rdmc_on_the_fake_fabric_delivers_identical_bytes() {
    for fabric in fabrics() {
        rdmc_run(fabric, DeviceChoice::default());
    }
}

/// The device to run `protocol` on, named in the test's output; `None`, after the line that
/// says why the test skips, where there is none.
fn device(protocol: &str) -> Option<DeviceChoice> {
    match verbs::device::for_tests() {
        Ok((choice, info)) => {
            println!("{protocol} on {info}");
            Some(choice)
        }
        Err(no) => {
            println!("{no}\nskipped: {protocol} on verbs");
            None
        }
    }
}

/// Declares the test of `$run` on the named device.
macro_rules! on_the_device {
    ($name:ident, $protocol:literal, $run:ident) => {
        #[test]
        fn $name() {
            let Some(choice) = device($protocol) else {
                return;
            };
            #[cfg(not(feature = "rdma"))]
            let _ = choice;
            #[cfg(feature = "rdma")]
            $run(verbs::sideway::Sideway, choice);
        }
    };
}

on_the_device!(
    ramcast_on_the_device_keeps_every_property,
    "RamCast",
    ramcast_run
);
on_the_device!(tram_on_the_device_keeps_every_property, "TRAM", tram_run);
on_the_device!(ridge_on_the_device_keeps_every_property, "Ridge", ridge_run);
on_the_device!(
    rdmc_on_the_device_delivers_identical_bytes,
    "RDMC",
    rdmc_run
);
