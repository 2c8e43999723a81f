//! [`Handoff::Lend`] on the simulator: over random groups sharing members, every algorithm,
//! random holds, crashes and `destroy_group`, no byte of a lent message's receive buffer changes
//! before its release, every survivor finishes or is told its group failed, a member that holds
//! a buffer still detects a dead root, and lending released at once times exactly like copying.
//! `RDMC_LEND_SEEDS=N` runs more seeds than the lean default.

use bytes::Bytes;
use rdmc::{Algorithm, Delivered, Event, GroupConfig, Handoff, RdmcError, RdmcNode};
use std::collections::BTreeMap;
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig};
use transport::{LocalAddr, Nanos, Nic, Process, ProcessId, Progress, RegionSpec, Rng};

fn message(seed: u64, len: usize) -> Bytes {
    let mut rng = Rng::from_seed(seed);
    let mut v = vec![0; len];
    rng.fill_bytes(&mut v);
    Bytes::from(v)
}

fn seeds() -> u64 {
    std::env::var("RDMC_LEND_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

/// A message the application holds.
struct Held {
    group: u32,
    msg: u64,
    at: LocalAddr,
    len: usize,
    /// The group's whole receive buffer when the message was lent.
    snapshot: Vec<u8>,
    until: Nanos,
}

/// When a member completed a message: (group, msg, at, started, first block, last block).
type Times = Vec<(u32, u64, Nanos, Nanos, Nanos, Nanos)>;

/// A member whose application holds each lent message for a random time up to `max_hold`,
/// checks on every poll that no held buffer changed, and checks each message when lent and when
/// released.
struct Holder {
    node: RdmcNode,
    me: u32,
    rng: Rng,
    max_hold: u64,
    buffers: BTreeMap<u32, usize>,
    expected: BTreeMap<(u32, u64), Bytes>,
    held: Vec<Held>,
    /// Whether to destroy the group of the first message lent to it.
    destroy: bool,
    bad: Vec<String>,
    completed: BTreeMap<u32, u64>,
    failed: Vec<u32>,
    times: Times,
}

impl Holder {
    fn lent<N: Nic>(&mut self, nic: &N, group: u32, msg: u64, at: LocalAddr, len: usize) {
        if self.held.iter().any(|h| h.group == group) {
            self.bad.push(format!(
                "group {group}: msg {msg} lent while the last is held"
            ));
        }
        let mut snapshot = vec![0; self.buffers[&group]];
        nic.read_local(LocalAddr::new(at.region, 0), &mut snapshot)
            .unwrap();
        if snapshot[..len] != self.expected[&(group, msg)][..] {
            self.bad
                .push(format!("group {group} msg {msg}: corrupt when lent"));
        }
        let hold = match self.max_hold {
            0 => 0,
            max => self.rng.below(max),
        };
        self.held.push(Held {
            group,
            msg,
            at,
            len,
            snapshot,
            until: nic.now() + Nanos(hold),
        });
        if std::mem::take(&mut self.destroy) {
            self.node.destroy_group(group).unwrap();
        }
    }
}

impl<N: Nic> Process<N> for Holder {
    fn regions(&self) -> Vec<RegionSpec> {
        <RdmcNode as Process<N>>::regions(&self.node)
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut progress = self.node.poll(nic);
        for h in &self.held {
            let mut now = vec![0; h.snapshot.len()];
            nic.read_local(LocalAddr::new(h.at.region, 0), &mut now)
                .unwrap();
            if let Some(byte) = now.iter().zip(&h.snapshot).position(|(a, b)| a != b) {
                self.bad.push(format!(
                    "group {} msg {}: buffer byte {byte} changed while lent (t={:?})",
                    h.group,
                    h.msg,
                    nic.now()
                ));
            }
        }
        while let Some(e) = self.node.poll_event() {
            match e {
                Event::Completed {
                    group,
                    msg,
                    data,
                    at,
                    started,
                    first_block,
                    last_block,
                    ..
                } => {
                    self.times
                        .push((group, msg, at, started, first_block, last_block));
                    *self.completed.entry(group).or_insert(0) += 1;
                    match data {
                        Delivered::Lent { at, len } => self.lent(nic, group, msg, at, len),
                        Delivered::Data(d) if d.to_bytes() != self.expected[&(group, msg)] => {
                            self.bad.push(format!("root: msg {msg} differs"))
                        }
                        Delivered::Data(_) => {}
                    }
                }
                Event::Failed { group, .. } => self.failed.push(group),
                Event::Incoming { .. } => {}
            }
        }
        let now = nic.now();
        let (due, kept): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.until <= now);
        self.held = kept;
        for h in due {
            let mut bytes = vec![0; h.len];
            nic.read_local(h.at, &mut bytes).unwrap();
            if bytes[..] != self.expected[&(h.group, h.msg)][..] {
                self.bad.push(format!(
                    "group {} msg {}: corrupt when released",
                    h.group, h.msg
                ));
            }
            // A second release of the same message is refused.
            self.node.release(h.group, h.msg).unwrap();
            assert_eq!(
                self.node.release(h.group, h.msg),
                Err(RdmcError::NotLent {
                    group: h.group,
                    msg: h.msg
                })
            );
            progress = Progress::worked(true).wake_at(progress.wake_at);
        }
        progress.wake_at(self.held.iter().map(|h| h.until).min())
    }
}

/// One random case: 2-10 members, 1-3 groups over them (each member the root of at most one),
/// one algorithm and block size, 1-4 messages per group. `handoff: Copy` or a hold of 0 makes
/// a baseline whose times lending must reproduce.
fn run_case(seed: u64, crash: bool, handoff: Handoff, hold: bool) -> (Vec<String>, Vec<Times>) {
    let mut rng = Rng::from_seed(seed);
    let n = 2 + rng.below(9) as usize;
    let alg = Algorithm::ALL[rng.below(Algorithm::ALL.len() as u64) as usize];
    let block = [100, 1000, 4096][rng.below(3) as usize];
    let ngroups = 1 + rng.below(3.min(n as u64)) as usize;
    let mut groups = Vec::new();
    let mut expected = BTreeMap::new();
    let mut buffers = BTreeMap::new();
    for r in 0..ngroups {
        let sizes: Vec<usize> = (0..1 + rng.below(4))
            .map(|_| 1 + rng.below(20_000) as usize)
            .collect();
        let buffer = *sizes.iter().max().unwrap();
        groups.push(GroupConfig {
            id: r as u32,
            members: (0..n).map(|i| ProcessId(((r + i) % n) as u32)).collect(),
            algorithm: alg,
            racks: (0..n as u32).map(|i| i % 3).collect(),
            block_size: block,
            buffer_bytes: buffer,
        });
        buffers.insert(r as u32, buffer);
        for (m, &len) in sizes.iter().enumerate() {
            let content = message(seed * 100 + r as u64 * 10 + m as u64, len);
            expected.insert((r as u32, m as u64), content);
        }
    }
    let max_hold = if hold {
        [0, 50_000, 3_000_000][rng.below(3) as usize]
    } else {
        0
    };
    let destroyer = (hold && rng.below(4) == 0).then(|| rng.below(n as u64) as u32);
    let nodes: Vec<Holder> = (0..n as u32)
        .map(|p| {
            let mut node = RdmcNode::new(ProcessId(p), &groups, Nanos(500_000))
                .unwrap()
                .with_handoff(handoff);
            for (&(_, m), d) in expected.range((p, 0)..=(p, u64::MAX)) {
                assert_eq!(node.send_message(p, d.clone()).unwrap(), m);
            }
            Holder {
                node,
                me: p,
                rng: Rng::from_seed(seed ^ ((p as u64 + 1) * 7777)),
                max_hold: if p % 2 == 0 { max_hold } else { max_hold / 3 },
                buffers: buffers.clone(),
                expected: expected.clone(),
                held: Vec::new(),
                destroy: destroyer == Some(p),
                bad: Vec::new(),
                completed: BTreeMap::new(),
                failed: Vec::new(),
                times: Vec::new(),
            }
        })
        .collect();
    let mut sc = SimConfig::new(seed, Profile::load("fractus-100g").unwrap());
    let victim = crash.then(|| rng.below(n as u64) as u32);
    if let Some(v) = victim {
        let (at, process) = (Nanos(rng.below(2_000_000)), ProcessId(v));
        sc.faults = vec![if rng.below(2) == 0 {
            Fault::Crash { at, process }
        } else {
            Fault::CrashMidPost { at, process }
        }];
    }
    let mut sim = Sim::new(sc, nodes);
    sim.run(Some(Nanos(2_000_000_000)));
    let case = format!("seed {seed} {alg:?} n={n} block={block}");
    let mut bad = Vec::new();
    for h in sim.processes() {
        bad.extend(
            h.bad
                .iter()
                .map(|b| format!("{case}: member {}: {b}", h.me)),
        );
        if victim == Some(h.me) || destroyer.is_some() {
            continue;
        }
        // Every survivor completes every message of its groups or is told the group failed.
        for g in groups
            .iter()
            .filter(|g| g.members.contains(&ProcessId(h.me)))
        {
            let total = expected.range((g.id, 0)..=(g.id, u64::MAX)).count() as u64;
            let got = h.completed.get(&g.id).copied().unwrap_or(0);
            if got < total && !h.failed.contains(&g.id) {
                bad.push(format!(
                    "{case}: member {} stuck at {got}/{total} in group {} (crashed {victim:?})",
                    h.me, g.id
                ));
            }
        }
    }
    let times = sim.processes().iter().map(|h| h.times.clone()).collect();
    (bad, times)
}

fn assert_clean(bad: &[String]) {
    assert!(
        bad.is_empty(),
        "{} violations:\n{}",
        bad.len(),
        bad[..bad.len().min(40)].join("\n")
    );
}

#[test]
fn a_lent_buffer_never_changes_before_its_release() {
    let mut bad = Vec::new();
    for seed in 0..seeds() {
        bad.extend(run_case(seed, false, Handoff::Lend, true).0);
        bad.extend(run_case(1000 + seed, true, Handoff::Lend, true).0);
    }
    assert_clean(&bad);
}

/// What the simulator's figures rest on: lending changes no simulated time when the
/// application releases at once.
#[test]
fn lending_released_at_once_times_exactly_like_copying() {
    for seed in 0..seeds() {
        for crash in [false, true] {
            let (b1, copy) = run_case(seed, crash, Handoff::Copy, false);
            let (b2, lend) = run_case(seed, crash, Handoff::Lend, false);
            assert_clean(&[b1, b2].concat());
            assert_eq!(copy, lend, "seed {seed} crash {crash}");
        }
    }
}

/// Member 1 of a chain holds message 0 for `hold`; the root crashes while it holds it, with
/// message 1 queued. Returns when each survivor got its failure upcall.
fn root_crash_while_held(hold: Nanos) -> Vec<Option<Nanos>> {
    struct Member {
        node: RdmcNode,
        hold: Nanos,
        release: Option<(u64, Nanos)>,
        failed_at: Option<Nanos>,
    }
    impl<N: Nic> Process<N> for Member {
        fn regions(&self) -> Vec<RegionSpec> {
            <RdmcNode as Process<N>>::regions(&self.node)
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            let progress = self.node.poll(nic);
            while let Some(e) = self.node.poll_event() {
                match e {
                    Event::Completed {
                        msg,
                        data: Delivered::Lent { .. },
                        ..
                    } => self.release = Some((msg, nic.now() + self.hold)),
                    Event::Failed { .. } => {
                        self.failed_at.get_or_insert(nic.now());
                    }
                    _ => {}
                }
            }
            match self.release {
                Some((msg, t)) if nic.now() >= t => {
                    self.node.release(0, msg).unwrap();
                    self.release = None;
                    Progress::worked(true)
                }
                Some((_, t)) => progress.wake_at(Some(t)),
                None => progress,
            }
        }
    }
    let group = GroupConfig {
        id: 0,
        members: (0..4).map(ProcessId).collect(),
        algorithm: Algorithm::Chain,
        racks: vec![],
        block_size: 1000,
        buffer_bytes: 4000,
    };
    let nodes: Vec<Member> = (0..4)
        .map(|p| {
            let mut node =
                RdmcNode::new(ProcessId(p), std::slice::from_ref(&group), Nanos(1_000_000))
                    .unwrap()
                    .with_handoff(Handoff::Lend);
            if p == 0 {
                node.send_message(0, message(1, 4000)).unwrap();
                node.send_message(0, message(2, 4000)).unwrap();
            }
            Member {
                node,
                hold: if p == 1 { hold } else { Nanos(0) },
                release: None,
                failed_at: None,
            }
        })
        .collect();
    let mut sc = SimConfig::new(1, Profile::load("fractus-100g").unwrap());
    // Message 0 is through in well under 100 us; message 1 waits for member 1's release.
    sc.faults = vec![Fault::Crash {
        at: Nanos(200_000),
        process: ProcessId(0),
    }];
    let mut sim = Sim::new(sc, nodes);
    sim.run(Some(Nanos(3_000_000_000)));
    sim.processes()
        .iter()
        .skip(1)
        .map(|p| p.failed_at)
        .collect()
}

/// A member holding a lent buffer keeps probing its first relay, so a root that dies meanwhile
/// is detected as soon as when nobody holds anything: within a few probe intervals (1 ms), not
/// when the buffer is released (1 s).
#[test]
fn a_held_buffer_does_not_delay_detecting_a_dead_root() {
    let at_once = root_crash_while_held(Nanos(0));
    let held = root_crash_while_held(Nanos(1_000_000_000));
    for (i, t) in at_once.iter().chain(&held).enumerate() {
        assert!(
            t.is_some_and(|t| t < Nanos(20_000_000)),
            "survivor {} (released at once: {at_once:?}; held 1 s: {held:?})",
            i % 3 + 1
        );
    }
}
