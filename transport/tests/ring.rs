//! Property tests of the SPSC ring over one-sided writes, run end to end on the simulator (with
//! random tie-breaks and link jitter) and on the local runtime's real threads: no loss, no
//! duplication, no reordering, wrap-around, and backpressure when full (never a silent drop).

use proptest::prelude::*;
use std::time::Duration;
use transport::ring::{RingConfig, RingError, RingReceiver, RingSender};
use transport::runtime::local::{LocalConfig, LocalRuntime};
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig, TieBreak};
use transport::*;

const RING: RegionId = RegionId(0);
const CREDIT: RegionId = RegionId(1);

/// Process 0 produces `messages`, process 1 consumes them, polling at most once per
/// `consumer_gap` so the producer runs into a full ring.
struct Pair {
    cfg: RingConfig,
    messages: Vec<Vec<u8>>,
    consumer_gap: Nanos,
    sender: Option<RingSender>,
    receiver: Option<RingReceiver>,
    next: usize,
    fulls: u64,
    received: Vec<Vec<u8>>,
}

impl Pair {
    fn new(cfg: RingConfig, messages: Vec<Vec<u8>>, consumer_gap: Nanos) -> Pair {
        Pair {
            cfg,
            messages,
            consumer_gap,
            sender: None,
            receiver: None,
            next: 0,
            fulls: 0,
            received: Vec::new(),
        }
    }
}

impl<N: Nic> Process<N> for Pair {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![
            RegionSpec::new(self.cfg.ring_bytes()).grant(ProcessId(0), Access::Write),
            RegionSpec::new(RingConfig::CREDIT_BYTES).grant(ProcessId(1), Access::Write),
        ]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        while let Some(c) = nic.poll_completion() {
            assert_eq!(c.status, Status::Success, "ring write failed: {c:?}");
        }
        if nic.id() == ProcessId(0) {
            let sender = self.sender.get_or_insert_with(|| {
                let ring = RemoteAddr::new(ProcessId(1), RING, 0);
                RingSender::new(self.cfg, ring, LocalAddr::new(CREDIT, 0)).unwrap()
            });
            let mut worked = false;
            while self.next < self.messages.len() {
                match sender.try_send(nic, &self.messages[self.next]) {
                    Ok(_) => {
                        self.next += 1;
                        worked = true;
                    }
                    Err(RingError::Full) => {
                        self.fulls += 1;
                        break;
                    }
                    Err(e) => panic!("send failed: {e}"),
                }
            }
            // Parked until the consumer's credit write lands in our memory.
            return Progress::worked(worked);
        }
        let receiver = self.receiver.get_or_insert_with(|| {
            let credit = RemoteAddr::new(ProcessId(0), CREDIT, 0);
            RingReceiver::new(self.cfg, LocalAddr::new(RING, 0), credit).unwrap()
        });
        let mut out = Vec::new();
        if receiver.try_recv(nic, &mut out).unwrap() {
            self.received.push(out);
            if self.consumer_gap > Nanos::ZERO {
                return Progress::IDLE.wake_at(Some(nic.now() + self.consumer_gap));
            }
            return Progress::worked(true);
        }
        Progress::IDLE
    }

    fn done(&self) -> bool {
        self.next == self.messages.len() && self.sender.is_some()
            || self.received.len() == self.messages.len()
    }
}

fn messages() -> impl Strategy<Value = Vec<Vec<u8>>> {
    proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..=48), 1..120)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every message arrives once, in order, whatever the ring shape, timing and tie-breaks;
    /// a slow consumer makes the producer see `Full` instead of losing messages.
    #[test]
    fn sim_ring_delivers_everything_in_order(
        seed: u64,
        slots in 1u32..9,
        batch_frac in 0.0f64..1.0,
        msgs in messages(),
        gap_ns in prop_oneof![Just(0u64), 1u64..20_000],
        jitter in any::<bool>(),
    ) {
        let mut cfg = RingConfig::new(slots, 64).unwrap();
        cfg.credit_batch = 1 + ((slots - 1) as f64 * batch_frac) as u32;
        let mut sim_cfg = SimConfig::new(seed, Profile::load("r320-cx3").unwrap());
        sim_cfg.tie_break = TieBreak::Random;
        if jitter {
            for (from, to) in [(0, 1), (1, 0)] {
                sim_cfg.faults.push(Fault::LinkDelay {
                    at: Nanos::ZERO, from: ProcessId(from), to: ProcessId(to),
                    duration: Nanos::from_secs(1), delay: Nanos(500), jitter: Nanos(5_000),
                });
            }
        }
        let gap = Nanos(gap_ns);
        let mut sim = Sim::new(sim_cfg, vec![
            Pair::new(cfg, msgs.clone(), gap),
            Pair::new(cfg, msgs.clone(), gap),
        ]);
        sim.run(Some(Nanos::from_secs(10)));
        let procs = sim.into_processes();
        prop_assert_eq!(&procs[1].received, &msgs);
        if gap_ns > 10_000 && msgs.len() > slots as usize + 1 {
            prop_assert!(procs[0].fulls > 0, "a slow consumer must cause backpressure");
        }
    }
}

#[test]
fn oversized_message_is_an_error_not_a_truncation() {
    let cfg = RingConfig::new(4, 32).unwrap();
    let mut s = RingSender::new(cfg, RemoteAddr::default(), LocalAddr::default()).unwrap();
    let specs = vec![vec![RegionSpec::new(8)], vec![RegionSpec::new(128)]];
    let mut nic = transport::recording::RecordingNic::new(ProcessId(0), specs, 1);
    let e = s.try_send(&mut nic, &[0; 17]).unwrap_err();
    assert!(e.to_string().contains("does not fit"), "{e}");
    assert!(nic.take_ops().is_empty(), "nothing may be posted");
    assert!(RingConfig::new(0, 64).is_err());
    assert!(RingConfig::new(4, 20).is_err());
}

/// The same ring between two real threads: 200k messages of varying length through 16 slots.
#[test]
fn local_ring_delivers_everything_in_order() {
    let msgs: Vec<Vec<u8>> = (0..200_000u32)
        .map(|i| i.to_le_bytes().repeat((i % 12) as usize + 1))
        .collect();
    let cfg = RingConfig::new(16, 64).unwrap();
    let procs = vec![
        Pair::new(cfg, msgs.clone(), Nanos::ZERO),
        Pair::new(cfg, msgs.clone(), Nanos::ZERO),
    ];
    let run = LocalRuntime::new(LocalConfig::default(), procs).run(Duration::from_secs(60));
    assert_eq!(run.processes[1].received.len(), msgs.len(), "messages lost");
    assert!(
        run.processes[1].received == msgs,
        "messages reordered or corrupted"
    );
}
