//! Exact-op unit tests with the recording NIC: the ops one call posts, as values.

use transport::recording::RecordingNic;
use transport::ring::{RingConfig, RingReceiver, RingSender};
use transport::slot::SlotCodec;
use transport::*;

fn specs() -> Vec<Vec<RegionSpec>> {
    vec![
        vec![RegionSpec::new(8).grant(ProcessId(1), Access::Write)],
        vec![RegionSpec::new(4 * 64).grant(ProcessId(0), Access::Write)],
    ]
}

/// A ring send posts exactly one inline, unsignaled write of the encoded entry into the next
/// slot; the fourth send into a three-slot ring posts nothing and reports `Full`.
#[test]
fn ring_send_posts_one_write_per_message_then_backpressure() {
    let cfg = RingConfig::new(3, 64).unwrap();
    let ring = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
    let mut tx = RingSender::new(cfg, ring, LocalAddr::new(RegionId(0), 0)).unwrap();
    let mut nic = RecordingNic::new(ProcessId(0), specs(), 1);
    for i in 0..3u8 {
        tx.try_send(&mut nic, &[i; 5]).unwrap();
        let ops = nic.take_ops();
        let mut expected = Vec::new();
        SlotCodec::new(64)
            .unwrap()
            .encode(i as u32 + 1, &[i; 5], &mut expected)
            .unwrap();
        assert_eq!(ops.len(), 1);
        assert_eq!(
            ops[0].1,
            Op::Write {
                dst: ring.add(64 * i as usize),
                data: Data::Bytes(expected.into()),
                imm: None,
                flags: WriteFlags::NONE.inline(),
            }
        );
    }
    assert!(matches!(
        tx.try_send(&mut nic, b"x"),
        Err(transport::ring::RingError::Full)
    ));
    assert!(nic.take_ops().is_empty());
    // The consumer returning 2 credits frees 2 slots.
    nic.memory_mut()
        .store_u64(LocalAddr::new(RegionId(0), 0), 2)
        .unwrap();
    assert_eq!(tx.free(&nic).unwrap(), 2);
}

/// A receiver returns credits with one inline write of its consumed count, once per batch.
#[test]
fn ring_receiver_returns_credits_per_batch() {
    let cfg = RingConfig::new(4, 64).unwrap(); // batch = 2
    let credit = RemoteAddr::new(ProcessId(0), RegionId(0), 0);
    let mut rx = RingReceiver::new(cfg, LocalAddr::new(RegionId(0), 0), credit).unwrap();
    let mut nic = RecordingNic::new(ProcessId(1), specs(), 1);
    let codec = SlotCodec::new(64).unwrap();
    let mut buf = Vec::new();
    for seq in 1..=2u32 {
        codec.encode(seq, b"hello", &mut buf).unwrap();
        let at = LocalAddr::new(RegionId(0), 64 * (seq as usize - 1));
        nic.memory_mut().write(at, &buf).unwrap();
    }
    let mut out = Vec::new();
    assert!(rx.try_recv(&mut nic, &mut out).unwrap());
    assert!(nic.take_ops().is_empty(), "no credit before a full batch");
    assert!(rx.try_recv(&mut nic, &mut out).unwrap());
    let ops = nic.take_ops();
    assert_eq!(
        ops.iter().map(|(_, op)| op.clone()).collect::<Vec<_>>(),
        vec![Op::Write {
            dst: credit,
            data: Data::Bytes(2u64.to_le_bytes().to_vec().into()),
            imm: None,
            flags: WriteFlags::NONE.inline(),
        }]
    );
    assert!(!rx.try_recv(&mut nic, &mut out).unwrap(), "slot 3 is empty");
}
