//! The simulator's cost model, checked on hand-computed timelines: small-write latency, the
//! inline saving, egress and ingress serialisation, one-packet ops interleaving with large
//! transfers, the message-rate limit, reconnect cost and per-process CPU. Times are virtual and deterministic, so exact values are the specification.

use transport::runtime::sim::{Profile, Sim, SimConfig};
use transport::*;

/// Process 0 posts `writes` (size, inline) to process 1 on its first poll; every process records
/// when the bytes of each write became visible to it (the first byte of each write holds its
/// index + 1, written to its own 8-byte-aligned offset).
struct Timeline {
    writes: Vec<(usize, bool)>,
    /// Writes from this index on go on the control queue pair.
    control_from: usize,
    targets: Vec<u32>,
    posted: bool,
    seen: Vec<(u8, Nanos)>,
}

fn timeline(writes: Vec<(usize, bool)>, targets: Vec<u32>) -> Timeline {
    Timeline {
        control_from: writes.len(),
        writes,
        targets,
        posted: false,
        seen: Vec::new(),
    }
}

const SPAN: usize = 2 << 20;

impl<N: Nic> Process<N> for Timeline {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(SPAN * 4).with_default(Access::Write)]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        if !self.posted && !self.writes.is_empty() {
            self.posted = true;
            for (i, &(len, inline)) in self.writes.iter().enumerate() {
                let mut data = vec![0u8; len];
                data[0] = i as u8 + 1;
                let flags = if inline {
                    WriteFlags::NONE.inline()
                } else {
                    WriteFlags::NONE
                };
                let flags = flags.on(if i >= self.control_from {
                    Qp::Control
                } else {
                    Qp::Data
                });
                let to = ProcessId(self.targets[i % self.targets.len()]);
                let dst = RemoteAddr::new(to, RegionId(0), (nic.id().index() * 2 + i) * SPAN / 2);
                nic.post_write(dst, &data, flags).unwrap();
            }
            return Progress::worked(true);
        }
        let mut b = [0u8; 1];
        for slot in 0..8 {
            nic.read_local(LocalAddr::new(RegionId(0), slot * SPAN / 2), &mut b)
                .unwrap();
            if b[0] != 0 && !self.seen.iter().any(|(v, _)| *v == b[0] + slot as u8 * 16) {
                self.seen.push((b[0] + slot as u8 * 16, nic.now()));
            }
        }
        Progress::IDLE
    }
}

/// r320-cx3 with every op at its calibrated latency: the timelines below are exact.
fn constant() -> Profile {
    let mut p = Profile::load("r320-cx3").unwrap();
    p.nic.write_latency_dist = None;
    p
}

fn run(procs: Vec<Timeline>) -> Vec<Timeline> {
    let mut sim = Sim::new(SimConfig::new(1, constant()), procs);
    sim.run(None);
    sim.into_processes()
}

fn landed(p: &Timeline) -> Vec<u64> {
    // `now` in a poll is the landing time plus the poll's own CPU charge (30 ns).
    p.seen.iter().map(|(_, t)| t.as_nanos() - 30).collect()
}

/// r320-cx3: poll 30, post 60, latency 1210, 50 Gb/s (0.16 ns/byte), DMA read 300, 35 Mpps.
#[test]
fn small_inline_write_lands_after_post_latency_and_serialisation() {
    let p = run(vec![
        timeline(vec![(64, true)], vec![1]),
        timeline(vec![], vec![]),
    ]);
    // Doorbell at 30 (poll) + 60 (post) = 90; + 1210 latency + 10 ns for 64 B.
    assert_eq!(landed(&p[1]), vec![90 + 1210 + 10]);
}

#[test]
fn non_inline_write_pays_the_dma_read() {
    let p = run(vec![
        timeline(vec![(64, false)], vec![1]),
        timeline(vec![], vec![]),
    ]);
    assert_eq!(landed(&p[1]), vec![90 + 300 + 1210 + 10]);
}

#[test]
fn later_inline_write_never_overtakes_earlier_non_inline_one() {
    let p = run(vec![
        timeline(vec![(64, false), (64, true)], vec![1]),
        timeline(vec![], vec![]),
    ]);
    let t = landed(&p[1]);
    assert_eq!(t.len(), 2);
    assert!(t[0] <= t[1], "RC order broken: {t:?}");
}

#[test]
fn egress_serialises_large_writes_back_to_back() {
    // Two 1 MiB writes from one sender: the second leaves when the first is on the wire.
    let mb = 1 << 20;
    let p = run(vec![
        timeline(vec![(mb, false), (mb, false)], vec![1]),
        timeline(vec![], vec![]),
    ]);
    let t = landed(&p[1]);
    let wire = (mb as u64 * 160 + 500) / 1000;
    assert_eq!(t[1] - t[0], wire);
}

#[test]
fn ingress_serialises_writes_from_two_senders() {
    // p0 and p2 each write 1 MiB to p1 at the same instant: the receiver's link takes them one
    // after the other, so the second lands one serialisation time after the first.
    let mb = 1 << 20;
    let p = run(vec![
        timeline(vec![(mb, false)], vec![1]),
        timeline(vec![], vec![]),
        timeline(vec![(mb, false)], vec![1]),
    ]);
    let t = landed(&p[1]);
    let wire = (mb as u64 * 160 + 500) / 1000;
    assert_eq!(t.len(), 2);
    assert_eq!(t[1] - t[0], wire);
}

#[test]
fn a_one_packet_op_interleaves_with_a_large_transfer_on_the_port() {
    // p0 writes 1 MiB to p1, then 64 B to p2: the NIC interleaves queue pairs per packet, so
    // the small write waits one 4096-byte packet (655 ns at 50 Gb/s), not the whole MiB.
    let mb = 1 << 20;
    let p = run(vec![
        timeline(vec![(mb, false), (64, true)], vec![1, 2]),
        timeline(vec![], vec![]),
        timeline(vec![], vec![]),
    ]);
    // Posted at 30 + 2 x 60 = 150; one packet; latency; 10 ns for 64 B.
    assert_eq!(landed(&p[2]), vec![150 + 655 + 1210 + 10]);
}

#[test]
fn a_one_packet_op_never_overtakes_a_large_one_of_its_queue_pair() {
    let mb = 1 << 20;
    let p = run(vec![
        timeline(vec![(mb, false), (64, true)], vec![1]),
        timeline(vec![], vec![]),
    ]);
    let t = landed(&p[1]);
    assert_eq!(t.len(), 2);
    assert!(t[0] < t[1], "RC order broken: {t:?}");
}

#[test]
fn a_control_queue_pair_write_passes_the_data_queued_to_the_same_peer() {
    // p0 writes 1 MiB then 64 B to p1 on the data queue pair, then 64 B on the control queue
    // pair: the data 64 B keeps RC order behind the MiB, the control write waits one packet.
    let mb = 1 << 20;
    let mut t = timeline(vec![(mb, false), (64, true), (64, true)], vec![1]);
    t.control_from = 2;
    let p = run(vec![t, timeline(vec![], vec![])]);
    let t = landed(&p[1]);
    // Posted at 30 + 3 x 60 = 210; one packet (655) on p0's egress; latency; one packet on
    // p1's ingress, where the MiB is arriving too; 10 ns for 64 B.
    assert_eq!(t[0], 210 + 655 + 1210 + 655 + 10, "{t:?}");
    assert_eq!(t.len(), 3);
    assert!(t[1] < t[2], "the data queue pair keeps its order: {t:?}");
}

#[test]
fn message_rate_limits_small_writes() {
    // With posting made cheap (5 ns) and the NIC limited to 10 Mpps, two small writes to two
    // targets leave the NIC 100 ns apart, not 5.
    let text = transport::runtime::sim::BUILTIN[0]
        .1
        .replace("msg_rate_mpps = 35.0", "msg_rate_mpps = 10.0")
        .replace("post_ns = 60", "post_ns = 5");
    let mut profile = Profile::parse("rate-limited", &text).unwrap();
    profile.nic.write_latency_dist = None;
    let procs = vec![
        timeline(vec![(64, true), (64, true)], vec![1, 2]),
        timeline(vec![], vec![]),
        timeline(vec![], vec![]),
    ];
    let mut sim = Sim::new(SimConfig::new(1, profile), procs);
    sim.run(None);
    let p = sim.into_processes();
    let (a, b) = (landed(&p[1])[0], landed(&p[2])[0]);
    assert_eq!(b - a, 100);
}

/// Process 0 posts `each` one-word writes (word `i` holds `i + 1`) to every one of `targets`
/// in its first poll; the others only sit there.
struct Burst {
    targets: Vec<transport::ProcessId>,
    each: u64,
    posted: bool,
}

fn burst(targets: &[u32], each: u64) -> Burst {
    Burst {
        targets: targets.iter().map(|&t| transport::ProcessId(t)).collect(),
        each,
        posted: false,
    }
}

/// `procs` on the constant profile with `seed`, process 0 crashing in the middle of its first
/// poll's posts, run for a millisecond.
fn crash_mid_post(seed: u64, procs: Vec<Burst>) -> Sim<Burst> {
    let mut cfg = SimConfig::new(seed, constant());
    cfg.faults = vec![transport::runtime::sim::Fault::CrashMidPost {
        at: transport::Nanos::ZERO,
        process: transport::ProcessId(0),
    }];
    let mut sim = Sim::new(cfg, procs);
    sim.run(Some(transport::Nanos(1_000_000)));
    sim
}

impl<N: transport::Nic> transport::Process<N> for Burst {
    fn regions(&self) -> Vec<transport::RegionSpec> {
        vec![transport::RegionSpec::new(80).with_default(transport::Access::Write)]
    }
    fn poll(&mut self, nic: &mut N) -> transport::Progress {
        if !self.posted && nic.id().0 == 0 {
            for &to in &self.targets {
                for i in 0..self.each {
                    let dst =
                        transport::RemoteAddr::new(to, transport::RegionId(0), i as usize * 8);
                    nic.post_write(
                        dst,
                        &(i + 1).to_le_bytes(),
                        transport::WriteFlags::NONE.inline(),
                    )
                    .unwrap();
                }
            }
            self.posted = true;
        }
        transport::Progress::IDLE
    }
}

#[test]
fn a_crash_mid_post_reaches_any_subset_of_its_queue_pairs() {
    // One write to each of 4 peers, then a crash: across seeds, the peers that got the write
    // form different subsets, not only prefixes of the posting order.
    let mut subsets = std::collections::BTreeSet::new();
    for seed in 0..64 {
        let procs = (0..5).map(|_| burst(&[1, 2, 3, 4], 1)).collect();
        let sim = crash_mid_post(seed, procs);
        let got: Vec<bool> = (1..=4)
            .map(|d| {
                sim.nic(transport::ProcessId(d))
                    .memory()
                    .bytes(transport::RegionId(0))[0]
                    == 1
            })
            .collect();
        subsets.insert(got);
    }
    let prefixes = subsets
        .iter()
        .filter(|s| s.windows(2).all(|w| w[0] || !w[1]))
        .count();
    assert!(subsets.len() >= 8, "{subsets:?}");
    assert!(prefixes < subsets.len(), "only prefixes: {subsets:?}");
}

#[test]
fn a_crash_in_the_middle_of_posting_issues_only_a_prefix() {
    let mut landed = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let sim = crash_mid_post(seed, vec![burst(&[1], 10), burst(&[], 0)]);
        assert!(sim.crashed(transport::ProcessId(0)));
        let mem = sim
            .nic(transport::ProcessId(1))
            .memory()
            .bytes(transport::RegionId(0));
        let words: Vec<u64> = mem
            .chunks(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .collect();
        let n = words.iter().take_while(|&&w| w != 0).count();
        // A prefix, in post order (one queue pair).
        assert!(words[n..].iter().all(|&w| w == 0), "{words:?}");
        assert!(words[..n]
            .iter()
            .enumerate()
            .all(|(i, &w)| w == i as u64 + 1));
        landed.insert(n);
    }
    assert!(
        landed.len() > 3,
        "prefix lengths should vary with the seed: {landed:?}"
    );
}

/// Reports `work` on each of its first `polls` polls (doing nothing else) and records when each
/// poll began.
struct Worker {
    work: Vec<(Work, u64)>,
    polls: usize,
    began: Vec<Nanos>,
}

impl<N: Nic> Process<N> for Worker {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(8)]
    }
    fn poll(&mut self, nic: &mut N) -> Progress {
        self.began.push(nic.now());
        if self.began.len() > self.polls {
            return Progress::IDLE;
        }
        for &(kind, units) in &self.work {
            nic.work(kind, units);
        }
        Progress::worked(true)
    }
}

/// The gaps between a worker's polls under software profile `software`.
fn poll_gaps(software: transport::runtime::sim::Software, work: Vec<(Work, u64)>) -> Vec<u64> {
    let mut cfg = SimConfig::new(1, constant());
    cfg.software = software;
    let mut sim = Sim::new(
        cfg,
        vec![Worker {
            work,
            polls: 3,
            began: Vec::new(),
        }],
    );
    sim.run(None);
    let w = &sim.into_processes()[0];
    w.began
        .windows(2)
        .map(|p| (p[1] - p[0]).as_nanos())
        .collect()
}

/// A process that reports work is busy for its software profile's price of it, on top of the
/// poll's own cost (30 ns on r320-cx3), and polls again only then; under `none` work is free.
#[test]
fn reported_work_delays_the_next_poll_by_its_price() {
    use transport::runtime::sim::Software;
    let work = vec![(Work::Scan, 10), (Work::Copy, 64), (Work::Deliver, 1)];
    assert_eq!(poll_gaps(Software::none(), work.clone()), vec![30; 3]);
    let priced = Software::parse(
        "test.toml",
        r#"
        name = "test"
        version = 1
        description = "round numbers"
        [calibration]
        source = "none: a test"
        [costs]
        scan_ns = 5
        decode_ns = 0
        copy_ps_per_byte = 250
        order_ns = 0
        deliver_ns = 100
        "#,
    )
    .unwrap();
    // 30 + 10 * 5 + 64 * 0.25 + 100.
    assert_eq!(poll_gaps(priced, work), vec![196; 3]);
}

/// With a declared latency distribution (r320-cx3 declares one), the first write's landing
/// varies with the seed within the distribution's bounds and replays identically for a seed,
/// and the writes of one queue pair are still seen in post order.
#[test]
fn a_declared_latency_distribution_varies_by_seed_and_keeps_each_queue_pairs_order() {
    let profile = Profile::load("r320-cx3").unwrap();
    let d = profile
        .nic
        .write_latency_dist
        .clone()
        .expect("r320-cx3 declares one");
    let first = |seed: u64| {
        let procs = vec![
            timeline(vec![(64, true); 8], vec![1]),
            timeline(vec![], vec![]),
        ];
        let mut sim = Sim::new(SimConfig::new(seed, profile.clone()), procs);
        sim.run(None);
        let mut seen = sim.into_processes()[1].seen.clone();
        assert_eq!(seen.len(), 8);
        // In post order (write i's marker sorts by i); writes landing between two polls are
        // seen by the same one, never a later write before an earlier one.
        seen.sort_by_key(|&(v, _)| v);
        let t: Vec<u64> = seen.iter().map(|(_, t)| t.as_nanos() - 30).collect();
        assert!(t.windows(2).all(|w| w[0] <= w[1]), "RC order broken: {t:?}");
        t[0]
    };
    let firsts: Vec<u64> = (1..=40).map(first).collect();
    assert_eq!(first(7), firsts[6], "a seed replays identically");
    let (lo, hi) = (firsts.iter().min().unwrap(), firsts.iter().max().unwrap());
    assert!(hi > lo, "no spread over 40 seeds: {firsts:?}");
    // Doorbell at 90, + 10 ns of serialisation; the latency itself within [t_min, p99.9].
    let dev = |q: f64| d.deviation_ns(q);
    assert!(
        *lo as f64 >= 90.0 + 10.0 + 1210.0 + dev(0.0) - 1.0,
        "{firsts:?}"
    );
    assert!(
        *hi as f64 <= 90.0 + 10.0 + 1210.0 + dev(1.0) + 1.0,
        "{firsts:?}"
    );
}

/// A declared two-way limit: two NICs sending 1 MiB to each other at once share it, each
/// direction getting half; without one each direction runs at the link rate.
#[test]
fn a_two_way_limit_is_shared_by_a_nics_sending_and_receiving() {
    let mb = 1usize << 20;
    let exchange = |duplex: Option<f64>| {
        let mut profile = constant();
        profile.nic.duplex_gbps = duplex;
        let procs = vec![
            timeline(vec![(mb, false)], vec![1]),
            timeline(vec![(mb, false)], vec![0]),
        ];
        let mut sim = Sim::new(SimConfig::new(1, profile), procs);
        sim.run(None);
        let p = sim.into_processes();
        landed(&p[1])[0].max(landed(&p[0])[0])
    };
    // 1 MiB at 50 Gb/s takes 168 us of wire; at half of a 60 Gb/s two-way limit, 280 us.
    let (free, capped) = (exchange(None), exchange(Some(60.0)));
    assert!((160_000..185_000).contains(&free), "{free}");
    assert!((270_000..300_000).contains(&capped), "{capped}");
    // One direction alone is not slowed by a limit above the link rate.
    let one_way = |duplex: Option<f64>| {
        let mut profile = constant();
        profile.nic.duplex_gbps = duplex;
        let procs = vec![
            timeline(vec![(mb, false)], vec![1]),
            timeline(vec![], vec![]),
        ];
        let mut sim = Sim::new(SimConfig::new(1, profile), procs);
        sim.run(None);
        landed(&sim.into_processes()[1])[0]
    };
    assert_eq!(one_way(None), one_way(Some(60.0)));
}

/// A declared fabric: two racks of two hosts (packed). Between racks an op crosses two more
/// switches, and transfers share their racks' uplinks; within a rack nothing changes.
#[test]
fn transfers_between_racks_share_the_uplinks_and_cross_two_more_switches() {
    let mb = 1usize << 20;
    let fabric = |uplink_gbps: f64| transport::runtime::sim::Fabric {
        hosts_per_rack: 2,
        racks: 2,
        uplink_gbps: Some(uplink_gbps),
        switch_ns: 100,
        placement: transport::runtime::sim::Placement::Packed,
        source: "test".into(),
    };
    let run_on = |fabric: Option<transport::runtime::sim::Fabric>, procs: Vec<Timeline>| {
        let mut profile = constant();
        profile.fabric = fabric;
        let mut sim = Sim::new(SimConfig::new(1, profile), procs);
        sim.run(None);
        sim.into_processes()
    };
    // A small write: 2 x 100 ns more between racks, nothing more within one.
    let small = |fabric, to: u32| {
        let mut procs = vec![timeline(vec![(64, true)], vec![to])];
        procs.extend((1..4).map(|_| timeline(vec![], vec![])));
        landed(&run_on(fabric, procs)[to as usize])[0]
    };
    assert_eq!(small(None, 2), 90 + 1210 + 10);
    assert_eq!(small(Some(fabric(100.0)), 2), 90 + 1210 + 10 + 200);
    assert_eq!(small(Some(fabric(100.0)), 1), 90 + 1210 + 10);
    // p0 -> p2 and p1 -> p3 at once: full bisection (2 x 50 Gb/s of uplinks) carries both at
    // the link rate; half of it (2:1 oversubscribed) makes them share, the later one landing
    // about one more serialisation time (168 us) after.
    let pair = |fabric| {
        let procs = vec![
            timeline(vec![(mb, false)], vec![2]),
            timeline(vec![(mb, false)], vec![3]),
            timeline(vec![], vec![]),
            timeline(vec![], vec![]),
        ];
        let p = run_on(fabric, procs);
        landed(&p[2])[0].max(landed(&p[3])[0])
    };
    let (free, full, half) = (
        pair(None),
        pair(Some(fabric(100.0))),
        pair(Some(fabric(50.0))),
    );
    assert!((160_000..185_000).contains(&free), "{free}");
    assert!(
        full - free < 1_000,
        "full bisection slowed the pair: {full} vs {free}"
    );
    assert!((320_000..350_000).contains(&half), "{half}");
}

/// A fabric of several racks without uplinks is refused with the field named.
#[test]
fn a_fabric_of_several_racks_needs_its_uplink_bandwidth() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/profiles/sierra-qdr.toml"
    ))
    .unwrap()
    .replace("uplink_gbps = 360.0", "");
    let e = Profile::parse("bad.toml", &text).unwrap_err().to_string();
    assert!(e.contains("fabric.uplink_gbps"), "{e}");
}

/// A permission change costs the process making it the profile's price, and a price outside
/// its documented range is refused with the field named.
#[test]
fn an_access_change_costs_its_declared_price_within_its_range() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/profiles/r320-cx3.toml"
    ))
    .unwrap();
    let p = Profile::parse("r320-cx3.toml", &text).unwrap();
    let c = p.nic.permission_change.expect("declared");
    assert!(c.low_ns <= c.ns && c.ns <= c.high_ns);
    let bad = text.replace("\nns = 0\n", "\nns = 9000000\n");
    let e = Profile::parse("bad.toml", &bad).unwrap_err().to_string();
    assert!(e.contains("nic.permission_change"), "{e}");
    let bad = text.replace("low_ns = 300000", "low_ns = 400000");
    let e = Profile::parse("bad.toml", &bad).unwrap_err().to_string();
    assert!(e.contains("nic.reconnect_range"), "{e}");
    // A process that changes access twice in each of two polls starts its third poll four
    // prices later than with free changes.
    struct Revoker(u32, Nanos);
    impl<N: Nic> Process<N> for Revoker {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(64).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            self.0 += 1;
            if self.0 <= 2 {
                for peer in [1, 2] {
                    nic.set_access(RegionId(0), ProcessId(peer), Access::None)
                        .unwrap();
                }
                return Progress::worked(true);
            }
            self.1 = nic.now();
            Progress::IDLE
        }
        fn done(&self) -> bool {
            self.0 >= 3
        }
    }
    let third_poll = |ns: u64| {
        let mut profile = constant();
        profile.nic.permission_change = Some(transport::runtime::sim::PermissionChange {
            ns,
            low_ns: 0,
            high_ns: 1_000_000,
            source: "test".into(),
        });
        let procs = vec![
            Revoker(0, Nanos::ZERO),
            Revoker(3, Nanos::ZERO),
            Revoker(3, Nanos::ZERO),
        ];
        let mut sim = Sim::new(SimConfig::new(1, profile), procs);
        sim.run(None);
        sim.into_processes()[0].1.as_nanos()
    };
    assert_eq!(third_poll(10_000) - third_poll(0), 40_000);
}

/// Process 0 writes 64 B inline to each of four targets in one poll under `discipline`; the
/// landing times, by target.
fn landings_under(discipline: &str) -> Vec<u64> {
    let mut cfg = SimConfig::new(1, constant());
    cfg.software.posting.discipline = discipline.parse().unwrap();
    let mut procs = vec![timeline(vec![(64, true); 4], vec![1, 2, 3, 4])];
    procs.extend((0..4).map(|_| timeline(vec![], vec![])));
    let mut sim = Sim::new(cfg, procs);
    sim.run(None);
    sim.into_processes()[1..].iter().flat_map(landed).collect()
}

/// TRAM Fig. 2's mechanism on r320-cx3 (post 60 ns, latency 1210 ns, 10 ns on the wire): posted
/// back to back, the writes land a post apart; awaiting each completion (1210 ns back) before the
/// next post costs a round trip per target; a window of two pays one per pair.
#[test]
fn awaiting_each_completion_costs_a_round_trip_per_target() {
    let first = 90 + 1210 + 10;
    let rtt = 1220 + 1210;
    assert_eq!(
        landings_under("collective"),
        (0..4).map(|k| first + 60 * k).collect::<Vec<_>>()
    );
    assert_eq!(
        landings_under("each"),
        (0..4).map(|k| first + rtt * k).collect::<Vec<_>>()
    );
    // Awaited together at the end: posted as collectively, the CPU waits (not seen here).
    assert_eq!(landings_under("batch"), landings_under("collective"));
    // The third waits for the first's completion, the fourth for the second's, 60 ns later.
    assert_eq!(
        landings_under("window:2"),
        vec![first, first + 60, first + rtt, first + rtt + 60]
    );
}
