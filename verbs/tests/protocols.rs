//! Short runs of the unchanged protocols on a real RDMA device: RamCast (checked against the
//! five properties of atomic multicast) and RDMC (every member gets every message intact).
//! Like the conformance suite, they run only where `RDMA_DEVICE` names a device, and skip with
//! the "no RDMA device" line anywhere else.

#[cfg(feature = "rdma")]
use std::time::Duration;
#[cfg(feature = "rdma")]
use verbs::rdma::{VerbsConfig, VerbsRuntime};

/// Small rings and buffers: a run has (nodes x nodes x 2) queue pairs, each with its own
/// staging and receive memory, and CI runners lock little memory.
#[cfg(feature = "rdma")]
fn small(device: verbs::DeviceChoice) -> VerbsConfig {
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

/// The device to run `protocol` on, named in the test's output; `None`, after the line that
/// says why the test skips, where there is none.
fn device(protocol: &str) -> Option<verbs::DeviceChoice> {
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

#[test]
fn ramcast_on_the_device_keeps_every_property() {
    let Some(choice) = device("RamCast") else {
        return;
    };
    #[cfg(not(feature = "rdma"))]
    let _ = choice;
    #[cfg(feature = "rdma")]
    {
        use multicast::{check, collect_log, DestPolicy, LoadSpec};
        use ramcast::{nodes, Config, Timing};
        use transport::Nanos;
        let mut cfg = Config::new(2, 3, 4);
        cfg.timing = Timing::WALL;
        let load = LoadSpec {
            dest: DestPolicy::Random(2),
            groups: 2,
            tree: None,
            size: 64,
            warmup_end: Nanos::ZERO,
            stop_at: Nanos(1_000_000_000),
        };
        let rt = VerbsRuntime::new(
            verbs::sideway::Sideway,
            small(choice),
            nodes(&cfg, load, 7, true),
        )
        .expect("the device was found before");
        let run = rt.run(Duration::from_millis(2_000));
        let log = collect_log(&run.processes, |_| false);
        let delivered: usize = log.deliveries.values().map(Vec::len).sum();
        println!("{delivered} deliveries");
        assert!(delivered >= 100, "only {delivered} deliveries");
        let v = check(&log);
        assert!(v.is_empty(), "{v:?}");
    }
}

#[test]
fn rdmc_on_the_device_delivers_identical_bytes() {
    let Some(choice) = device("RDMC") else {
        return;
    };
    #[cfg(not(feature = "rdma"))]
    let _ = choice;
    #[cfg(feature = "rdma")]
    {
        use rdmc::{Algorithm, Event, GroupConfig, RdmcNode};
        use transport::{Nanos, ProcessId};
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
        let run = VerbsRuntime::new(verbs::sideway::Sideway, small(choice), members)
            .expect("the device was found before")
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
                "member {m}: {} of {} messages intact",
                got.len(),
                msgs.len()
            );
        }
    }
}
