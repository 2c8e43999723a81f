//! Simulator scale: one 256 MB message through a binomial pipeline of 512 members in 1 MB
//! blocks (the benchmark; the paper's largest Sierra point), synthetic payload, every
//! receiver checking the descriptor it got. `harness run --protocol rdmc --nodes 512` runs the
//! same transfer and reports the process's peak memory too.

use criterion::{criterion_group, criterion_main, Criterion};
use rdmc::{Algorithm, Delivered, Event, GroupConfig, RdmcNode};
use std::hint::black_box;
use transport::runtime::sim::{Profile, Sim, SimConfig};
use transport::{Data, Nanos, ProcessId, Synthetic};

fn transfer(nodes: usize, size: usize, block: usize) -> usize {
    let group = GroupConfig {
        id: 0,
        members: (0..nodes as u32).map(ProcessId).collect(),
        algorithm: Algorithm::BinomialPipeline,
        racks: vec![],
        block_size: block,
        buffer_bytes: size,
    };
    let msg = Synthetic::new(7, size as u64);
    let mut members: Vec<RdmcNode> = (0..nodes as u32)
        .map(|p| RdmcNode::new(ProcessId(p), std::slice::from_ref(&group), Nanos(1_000_000)))
        .collect::<Result<_, _>>()
        .expect("valid group");
    members[0].send_message(0, msg).expect("fits");
    let mut sim = Sim::new(
        SimConfig::new(1, Profile::load("sierra-qdr").expect("built in")),
        members,
    );
    sim.run(Some(Nanos(10_000_000_000)));
    let intact = sim
        .into_processes()
        .into_iter()
        .map(|mut m| {
            std::iter::from_fn(|| m.poll_event())
                .filter(
                    |e| matches!(e, Event::Completed { data: Delivered::Data(Data::Synthetic(s)), .. } if *s == msg),
                )
                .count()
        })
        .sum();
    assert_eq!(intact, nodes, "every member completes the message intact");
    intact
}

fn scale(c: &mut Criterion) {
    let mut g = c.benchmark_group("rdmc-sim");
    g.sample_size(10);
    g.measurement_time(std::time::Duration::from_secs(15));
    g.bench_function("pipeline 512 nodes 256 MB 1 MB blocks", |b| {
        b.iter(|| black_box(transfer(512, 256 << 20, 1 << 20)))
    });
    g.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);
