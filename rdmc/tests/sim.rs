//! RDMC on the simulator: every algorithm delivers byte-identical messages in order, a crash
//! mid-transfer reaches every survivor as a failure upcall.

mod common;

use bytes::Bytes;
use common::{delivered, events, members, racked_group};
use rdmc::{Algorithm, Delivered, Event, GroupConfig, RdmcNode};
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig};
use transport::{Nanos, ProcessId, Synthetic};

fn message(seed: u64, len: usize) -> Bytes {
    let mut rng = transport::Rng::from_seed(seed);
    let mut v = vec![0; len];
    rng.fill_bytes(&mut v);
    Bytes::from(v)
}

/// Runs one group of `n` members; the root sends `sizes`; returns every member's events.
fn run(
    alg: Algorithm,
    n: usize,
    block: usize,
    sizes: &[usize],
    faults: Vec<Fault>,
) -> (Vec<Vec<Event>>, Vec<Bytes>) {
    let buffer_bytes = sizes.iter().copied().max().unwrap_or(1).max(1);
    let group = racked_group(3, alg, n, block, buffer_bytes);
    let mut nodes = members(&group, Nanos(1_000_000));
    let msgs: Vec<Bytes> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| message(i as u64 + 1, len))
        .collect();
    for m in &msgs {
        nodes[0].send_message(3, m.clone()).unwrap();
    }
    let mut sc = SimConfig::new(1, Profile::load("fractus-100g").unwrap());
    sc.faults = faults;
    let mut sim = Sim::new(sc, nodes);
    sim.run(Some(Nanos(200_000_000)));
    let events = sim.into_processes().iter_mut().map(events).collect();
    (events, msgs)
}

/// One message of `size` synthetic bytes through a group of `n` on the simulator; returns
/// every member's events.
fn run_synthetic(
    alg: Algorithm,
    n: usize,
    block: usize,
    size: usize,
) -> (Vec<Vec<Event>>, Synthetic) {
    let group = GroupConfig {
        id: 0,
        members: (0..n as u32).map(ProcessId).collect(),
        algorithm: alg,
        racks: vec![],
        block_size: block,
        buffer_bytes: size,
    };
    let msg = Synthetic::new(9, size as u64);
    let mut nodes = members(&group, Nanos(1_000_000));
    nodes[0].send_message(0, msg).unwrap();
    // Full duplex, as Appendix A's step count assumes: a member receives one block and sends
    // another in the same step at the link rate (fractus-100g's two-way limit would stretch
    // the steps of relaying members).
    let mut profile = Profile::load("fractus-100g").unwrap();
    profile.nic.duplex_gbps = None;
    let mut sim = Sim::new(SimConfig::new(1, profile), nodes);
    sim.run(Some(Nanos(100_000_000)));
    let events = sim.into_processes().iter_mut().map(events).collect();
    (events, msg)
}

#[test]
fn every_algorithm_delivers_identical_bytes_in_order() {
    for alg in Algorithm::ALL {
        for n in 2..=33 {
            // One block, several blocks with a partial last one, an exact multiple.
            let sizes = [100, 1000, 4096, 1];
            let (events, msgs) = run(alg, n, 512, &sizes, vec![]);
            for (m, ev) in events.iter().enumerate() {
                let got = delivered(ev);
                let lens: Vec<usize> = got.iter().map(|d| d.len()).collect();
                let same: Vec<bool> = got.iter().zip(&msgs).map(|(a, b)| a == b).collect();
                assert!(
                    got == msgs,
                    "{alg:?} n={n} member {m}: lengths {lens:?}, equal {same:?}"
                );
                assert!(!ev.iter().any(|e| matches!(e, Event::Failed { .. })));
            }
        }
    }
}

#[test]
fn a_member_crash_mid_transfer_reaches_every_survivor() {
    for alg in Algorithm::ALL {
        let n = 8;
        // A large message (64 blocks) so the crash lands mid-transfer.
        let faults = vec![Fault::Crash {
            at: Nanos(20_000),
            process: ProcessId(3),
        }];
        let (events, msgs) = run(alg, n, 4096, &[64 * 4096], faults);
        for (m, ev) in events.iter().enumerate() {
            if m == 3 {
                continue;
            }
            let failed: Vec<usize> = ev
                .iter()
                .filter_map(|e| match e {
                    Event::Failed { group: 3, member } => Some(*member),
                    _ => None,
                })
                .collect();
            let kinds: Vec<String> = ev
                .iter()
                .map(|e| match e {
                    Event::Completed {
                        msg,
                        data: Delivered::Data(data),
                        ..
                    } => {
                        format!("completed {msg} ({} B)", data.len())
                    }
                    other => format!("{other:?}"),
                })
                .collect();
            assert_eq!(failed, [3], "{alg:?}: member {m} events {kinds:?}");
            // Nothing partially received is reported complete.
            for d in delivered(ev) {
                assert!(
                    d == msgs[0],
                    "{alg:?}: member {m} delivered a wrong message"
                );
            }
        }
    }
}

/// The paper's concurrent senders: one group per member over the same members, each member the
/// root of one; every group's messages arrive intact at every member.
#[test]
fn concurrent_groups_sharing_members_all_deliver() {
    let n = 5u32;
    let groups: Vec<GroupConfig> = (0..n)
        .map(|root| GroupConfig {
            id: 100 + root,
            // The root first, then the others in order.
            members: (0..n).map(|i| ProcessId((root + i) % n)).collect(),
            algorithm: Algorithm::BinomialPipeline,
            racks: vec![],
            block_size: 1024,
            buffer_bytes: 20_000,
        })
        .collect();
    let mut nodes: Vec<RdmcNode> = (0..n)
        .map(|p| RdmcNode::new(ProcessId(p), &groups, Nanos(1_000_000)).unwrap())
        .collect();
    for (p, node) in nodes.iter_mut().enumerate() {
        for i in 0..3 {
            node.send_message(
                100 + p as u32,
                message(p as u64 * 10 + i, 7_000 + 3_001 * i as usize),
            )
            .unwrap();
        }
    }
    let mut sim = Sim::new(
        SimConfig::new(2, Profile::load("fractus-100g").unwrap()),
        nodes,
    );
    sim.run(Some(Nanos(100_000_000)));
    for (p, mut node) in sim.into_processes().into_iter().enumerate() {
        let mut got: Vec<(u32, u64, Bytes)> = Vec::new();
        while let Some(e) = node.poll_event() {
            if let Event::Completed {
                group,
                msg,
                data: Delivered::Data(data),
                ..
            } = e
            {
                got.push((group, msg, data.to_bytes()));
            }
        }
        for root in 0..n {
            let mine: Vec<&(u32, u64, Bytes)> = got.iter().filter(|g| g.0 == 100 + root).collect();
            assert_eq!(mine.len(), 3, "member {p}, group of root {root}");
            for (i, (_, msg, data)) in mine.iter().enumerate() {
                assert_eq!(*msg, i as u64);
                let want = message(root as u64 * 10 + i as u64, 7_000 + 3_001 * i);
                assert!(*data == want, "member {p}, root {root}, message {i}");
            }
        }
    }
}

/// Time until every receiver completed one message of `k` blocks of 1 MiB in a pipeline of `n`,
/// on a simulator without jitter and with full-duplex links.
fn pipeline_time(n: usize, k: usize) -> Nanos {
    let block = 1 << 20;
    let (events, _) = run_synthetic(Algorithm::BinomialPipeline, n, block, k * block);
    events
        .iter()
        .skip(1)
        .map(|ev| {
            ev.iter()
                .find_map(|e| match e {
                    Event::Completed { at, .. } => Some(*at),
                    _ => None,
                })
                .expect("every receiver completes")
        })
        .max()
        .unwrap()
}

/// Appendix A's step count, measured: on the simulator without jitter every step moves one
/// block per link, so a message's time is its steps times the time of one block transfer. The
/// time of one step comes from a two-member group (`k` steps for `k` blocks); the steps of the
/// pipeline in a group of `n` are then read off its time. They must be `k + L - 1` when `n` is
/// a power of two and `k + L` otherwise, `L = floor(log2 n)`, for every `n` in 2..=64 and `k`
/// in 1..=32: a schedule with an idle step or two transfers serialised on one link would show.
#[test]
fn pipeline_steps_measured_on_the_simulator_are_k_plus_log_n() {
    let t1 = pipeline_time(2, 1).as_nanos() as f64;
    let step = (pipeline_time(2, 32).as_nanos() as f64 - t1) / 31.0;
    let mut wrong = Vec::new();
    for n in 2..=64usize {
        let l = (usize::BITS - 1 - n.leading_zeros()) as usize;
        for k in 1..=32usize {
            let t = pipeline_time(n, k).as_nanos() as f64;
            let measured = 1.0 + (t - t1) / step;
            let want = k + l - usize::from(n.is_power_of_two());
            if (measured - want as f64).abs() > 0.5 {
                wrong.push(format!("n={n} k={k}: {measured:.2} steps, want {want}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:?}");
}

/// On the simulator a synthetic message travels as its descriptor: each receiver's completion
/// carries exactly the payload the root sent (partial last block included), without the bytes
/// ever being materialised.
#[test]
fn synthetic_messages_arrive_as_the_root_sent_them() {
    for alg in Algorithm::ALL {
        let (events, msg) = run_synthetic(alg, 6, 4096, 3 * 4096 + 100);
        for (m, ev) in events.iter().enumerate() {
            let got: Vec<&transport::Data> = ev
                .iter()
                .filter_map(|e| match e {
                    Event::Completed {
                        data: Delivered::Data(data),
                        ..
                    } => Some(data),
                    _ => None,
                })
                .collect();
            assert_eq!(
                got,
                [&transport::Data::Synthetic(msg)],
                "{alg:?} member {m}"
            );
        }
    }
}

/// Landing times are measured apart from the upcall: in a chain of 6 with 8 blocks, member `i`
/// holds the whole message one block time after member `i - 1`, while every relay's upcall
/// waits for its own last send; a member's first block lands no later than its last, and its
/// upcall comes no earlier.
#[test]
fn first_and_last_block_landings_are_reported_apart_from_the_upcall() {
    let block = 1 << 20;
    let (events, _) = run_synthetic(Algorithm::Chain, 6, block, 8 * block);
    let times: Vec<(Nanos, Nanos, Nanos)> = events
        .iter()
        .map(|ev| {
            ev.iter()
                .find_map(|e| match e {
                    Event::Completed {
                        at,
                        first_block,
                        last_block,
                        ..
                    } => Some((*first_block, *last_block, *at)),
                    _ => None,
                })
                .expect("every member completes")
        })
        .collect();
    for &(first, last, at) in &times {
        assert!(first <= last && last <= at, "{times:?}");
    }
    let whole: Vec<u64> = times[1..].iter().map(|t| t.1.as_nanos()).collect();
    let steps: Vec<u64> = whole.windows(2).map(|w| w[1] - w[0]).collect();
    // One block time apart (within the per-op costs), every hop.
    let one = steps[0];
    assert!(one > 0, "{whole:?}");
    for s in &steps {
        assert!(s.abs_diff(one) * 20 < one, "hops differ: {steps:?}");
    }
    // A relay (members 1..4) completes after sending its last block on: later than it held it.
    for (i, t) in times.iter().enumerate().take(5).skip(1) {
        assert!(
            t.2 > t.1,
            "relay {i} completed when its last block landed: {times:?}"
        );
    }
}
