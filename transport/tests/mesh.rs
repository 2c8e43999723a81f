//! The ring mesh on both runtimes: every member sends to every member (itself included) more
//! messages than a ring holds, so backpressure and the outboxes work; each sender's messages
//! arrive complete and in order. Bad sends are refused with the reason. Members take the change
//! hint ([`Mesh::observe_changes`]); on the simulator a run with it is the same, event for event,
//! as one without.

use std::time::Duration;
use transport::mesh::{Mesh, MeshError, MeshLayout};
use transport::ring::RingConfig;
use transport::runtime::local::{LocalConfig, LocalRuntime};
use transport::runtime::sim::{Profile, Sim, SimConfig};
use transport::*;

const MEMBERS: u32 = 4;
const EACH: u32 = 200;

fn layout() -> MeshLayout {
    let ring = RingConfig::new(8, 64).unwrap();
    MeshLayout::new((0..MEMBERS).map(ProcessId).collect(), ring, RegionId(0))
}

/// One member: sends `EACH` messages `(sender, seq)` to every member in turn, receives all.
struct Member {
    mesh: Option<Mesh>,
    /// Next message to send, per destination.
    next: Vec<u32>,
    /// Per sender, the sequence numbers received, in arrival order.
    got: Vec<Vec<u32>>,
    full: u64,
    /// Whether the mesh gets the change hint.
    hint: bool,
}

impl Member {
    fn new() -> Member {
        Member {
            mesh: None,
            next: vec![0; MEMBERS as usize],
            got: vec![Vec::new(); MEMBERS as usize],
            full: 0,
            hint: true,
        }
    }
}

impl<N: Nic> Process<N> for Member {
    fn regions(&self) -> Vec<RegionSpec> {
        layout().regions().to_vec()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mesh = self
            .mesh
            .get_or_insert_with(|| Mesh::new(layout(), nic.id()).unwrap());
        let mut worked = mesh.flush(nic).unwrap();
        for to in 0..MEMBERS {
            while self.next[to as usize] < EACH {
                let seq = self.next[to as usize];
                let mut msg = nic.id().0.to_le_bytes().to_vec();
                msg.extend_from_slice(&seq.to_le_bytes());
                match mesh.send(nic, ProcessId(to), &msg) {
                    Ok(_) => {
                        self.next[to as usize] += 1;
                        worked = true;
                    }
                    Err(MeshError::Full { .. }) => {
                        self.full += 1;
                        break;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
        let mut buf = Vec::new();
        if self.hint {
            mesh.observe_changes(nic);
        }
        while let Some(from) = mesh.recv(nic, &mut buf).unwrap() {
            let sender = u32::from_le_bytes(buf[..4].try_into().unwrap());
            assert_eq!(sender, from.0, "a message names its ring's sender");
            self.got[from.index()].push(u32::from_le_bytes(buf[4..8].try_into().unwrap()));
            worked = true;
        }
        Progress::worked(worked).wake_at(Some(nic.now() + Nanos(2_000)))
    }

    fn done(&self) -> bool {
        self.next.iter().all(|&n| n == EACH)
            && self.got.iter().all(|g| g.len() == EACH as usize)
            && self.mesh.as_ref().is_some_and(|m| m.queued() == 0)
    }
}

fn check(members: &[Member]) {
    for (i, m) in members.iter().enumerate() {
        for (from, got) in m.got.iter().enumerate() {
            assert_eq!(
                *got,
                (0..EACH).collect::<Vec<_>>(),
                "member {i} from {from}: every message, in order"
            );
        }
    }
    assert!(
        members.iter().any(|m| m.full > 0),
        "the test must fill outboxes to exercise backpressure"
    );
}

#[test]
fn every_member_gets_every_message_in_order_on_the_simulator() {
    let procs = (0..MEMBERS).map(|_| Member::new()).collect();
    let mut sim = Sim::new(SimConfig::new(3, Profile::load("r320-cx3").unwrap()), procs);
    sim.run(Some(Nanos::from_secs(1)));
    check(&sim.into_processes());
}

/// The hint only spares reads of rings that did not change: with it, without it, and with the
/// simulator withholding it, the runs are identical event for event.
#[test]
fn the_change_hint_leaves_the_simulated_run_unchanged() {
    let digest = |hint: bool, exact: bool| {
        let procs = (0..MEMBERS)
            .map(|_| Member {
                hint,
                ..Member::new()
            })
            .collect();
        let mut cfg = SimConfig::new(3, Profile::load("r320-cx3").unwrap());
        cfg.exact_changes = exact;
        let mut sim = Sim::new(cfg, procs);
        sim.run(Some(Nanos::from_secs(1)));
        let d = sim.digest();
        check(&sim.into_processes());
        d
    };
    let with = digest(true, true);
    assert_eq!(with, digest(false, true));
    assert_eq!(with, digest(true, false));
}

#[test]
fn every_member_gets_every_message_in_order_on_threads() {
    for nic_thread in [false, true] {
        let cfg = LocalConfig {
            threads: 2,
            nic_thread,
            ..LocalConfig::default()
        };
        let procs = (0..MEMBERS).map(|_| Member::new()).collect();
        let run = LocalRuntime::new(cfg, procs).run(Duration::from_secs(30));
        check(&run.processes);
    }
}

/// Too large for a slot, or to a process outside the mesh: refused, nothing sent.
#[test]
fn bad_sends_are_refused_with_the_reason() {
    struct Probe(Option<String>, Option<String>);
    impl<N: Nic> Process<N> for Probe {
        fn regions(&self) -> Vec<RegionSpec> {
            layout().regions().to_vec()
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(0) && self.0.is_none() {
                let mut mesh = Mesh::new(layout(), nic.id()).unwrap();
                let big = vec![0u8; mesh.capacity() + 1];
                self.0 = Some(mesh.send(nic, ProcessId(1), &big).unwrap_err().to_string());
                self.1 = Some(mesh.send(nic, ProcessId(9), b"x").unwrap_err().to_string());
                assert_eq!(mesh.queued(), 0);
            }
            Progress::IDLE
        }
        fn done(&self) -> bool {
            true
        }
    }
    let procs = (0..MEMBERS).map(|_| Probe(None, None)).collect();
    let mut sim = Sim::new(SimConfig::new(1, Profile::load("r320-cx3").unwrap()), procs);
    sim.run(Some(Nanos::from_secs(1)));
    let p = &sim.into_processes()[0];
    let (big, stranger) = (p.0.clone().unwrap(), p.1.clone().unwrap());
    assert!(big.contains("does not fit in a slot"), "{big}");
    assert!(stranger.contains("not a member"), "{stranger}");
    assert!(Mesh::new(layout(), ProcessId(9)).is_err());
}
