//! RDMC on real threads: byte-identical delivery with every algorithm, and a crash mid-transfer
//! reaching every survivor.

mod common;

use bytes::Bytes;
use common::{delivered, events, members, racked_group};
use rdmc::{Algorithm, Event, RdmcNode};
use std::time::Duration;
use transport::runtime::local::{LocalConfig, LocalNic, LocalRuntime};
use transport::{Nanos, Process, ProcessId, Progress, RegionSpec};

fn nodes(alg: Algorithm, n: usize, block: usize, sizes: &[usize]) -> (Vec<RdmcNode>, Vec<Bytes>) {
    let buffer_bytes = sizes.iter().copied().max().unwrap_or(1);
    let group = racked_group(1, alg, n, block, buffer_bytes);
    let mut nodes = members(&group, Nanos(20_000_000));
    let msgs: Vec<Bytes> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| Bytes::from((0..len).map(|b| (b * 7 + i) as u8).collect::<Vec<u8>>()))
        .collect();
    for m in &msgs {
        nodes[0].send_message(1, m.clone()).unwrap();
    }
    (nodes, msgs)
}

/// A member that is done once it has `want` completions, so a run on a loaded machine ends
/// when the work does rather than at a fixed time.
struct UntilDelivered {
    node: RdmcNode,
    want: usize,
    events: Vec<Event>,
}

impl Process<LocalNic> for UntilDelivered {
    fn regions(&self) -> Vec<RegionSpec> {
        <RdmcNode as Process<LocalNic>>::regions(&self.node)
    }

    fn poll(&mut self, nic: &mut LocalNic) -> Progress {
        let p = self.node.poll(nic);
        self.events.extend(events(&mut self.node));
        p
    }

    fn done(&self) -> bool {
        let completed = self
            .events
            .iter()
            .filter(|e| matches!(e, Event::Completed { .. }))
            .count();
        completed >= self.want
    }
}

#[test]
fn every_algorithm_delivers_identical_bytes_on_threads() {
    for (alg, n) in Algorithm::ALL
        .into_iter()
        .flat_map(|a| [2, 3, 5, 8, 9, 16, 17, 33].map(|n| (a, n)))
    {
        let (procs, msgs) = nodes(alg, n, 1000, &[1, 2500, 40_000]);
        let procs: Vec<UntilDelivered> = procs
            .into_iter()
            .map(|node| UntilDelivered {
                node,
                want: msgs.len(),
                events: Vec::new(),
            })
            .collect();
        let run = LocalRuntime::new(LocalConfig::default(), procs).run(Duration::from_secs(20));
        for (m, p) in run.processes.into_iter().enumerate() {
            let got = delivered(&p.events);
            assert!(
                got == msgs,
                "{alg:?} n={n} member {m}: {} of {} messages",
                got.len(),
                msgs.len()
            );
        }
    }
}

#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the fault comes from outside the runtime, as an operator would kill a process"
)]
fn a_member_crash_on_threads_reaches_every_survivor() {
    let (procs, _) = nodes(Algorithm::BinomialPipeline, 6, 4096, &[8 << 20]);
    let rt = LocalRuntime::new(LocalConfig::default(), procs);
    let control = rt.control();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(3));
        control.crash(ProcessId(4));
    });
    let run = rt.run(Duration::from_millis(1500));
    killer.join().unwrap();
    for (m, mut p) in run.processes.into_iter().enumerate() {
        if m == 4 {
            continue;
        }
        let ev = events(&mut p);
        let failed: Vec<usize> = ev
            .iter()
            .filter_map(|e| match e {
                Event::Failed { member, .. } => Some(*member),
                _ => None,
            })
            .collect();
        assert_eq!(failed, [4], "member {m}");
    }
}
