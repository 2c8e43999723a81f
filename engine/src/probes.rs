//! The timing probes of `harness calibrate software`: each kind of [`transport::Work`] timed on this
//! machine by running the workspace's own code for it, with real clocks.
//!
//! | work | what one unit runs |
//! |---|---|
//! | `Scan` | [`SlotCodec::read`] of a slot that does not hold the expected entry (the header word loaded and compared), walking a 256 KB buffer of 1,024 slots |
//! | `Decode` | [`SlotCodec::read`] of a complete entry (header, canary, CRC-32 over the entry, seqlock re-read) and the payload copied out into `Bytes`, as the servers do; the intercept of the two sizes below |
//! | `Copy` | the slope of that read between an 8 B and a 4 KB payload: the per-byte cost of copying and checksumming |
//! | `Order` | a pending message's key moved in the ordered set of pending messages (a `BTreeSet` of 64 `(timestamp, client, slot)` keys, RamCast's `pending`): removed and re-inserted with a larger timestamp |
//! | `Deliver` | a `multicast::Delivery` (id, destinations, payload handle) handed over through a queue and taken out, as a server hands it to the application (its key leaving the pending set is priced by `Order`'s probe) |
//!
//! Memory is the simulator's (plain bytes behind the `Nic` interface, through
//! [`RecordingNic`]), which is what the code reads on every runtime but `local`'s atomics.
//! Each probe runs `reps` units per sample, `samples` samples after one warm-up sample, the
//! probes taking turns, and keeps the median: the machine is shared, and the median of many
//! short samples is what a quiet core would show.

use bytes::Bytes;
use multicast::{Delivery, DestSet, MsgId};
use std::collections::{BTreeSet, VecDeque};
use std::hint::black_box;
use std::time::Instant;
use transport::recording::RecordingNic;
use transport::slot::SlotCodec;
use transport::{LocalAddr, ProcessId, RegionId, RegionSpec};

/// How long each probe runs: samples and units per sample.
#[derive(Clone, Copy, Debug)]
pub struct Effort {
    /// Samples per probe (the median is kept).
    pub samples: usize,
    /// Units of work per sample.
    pub reps: usize,
}

/// The median cost of one unit of each kind, in nanoseconds (fractional).
#[derive(Clone, Copy, Debug)]
pub struct Timings {
    /// Per slot scanned.
    pub scan: f64,
    /// Per entry decoded (without its bytes).
    pub decode: f64,
    /// Per byte copied out of an entry.
    pub copy_per_byte: f64,
    /// Per message ordered.
    pub order: f64,
    /// Per message delivered.
    pub deliver: f64,
}

/// Payload sizes of the two decode probes; the line through them gives `Decode` and `Copy`.
const SMALL: usize = 8;
const LARGE: usize = 4096;
/// Slots of the scanned buffer.
const SLOTS: usize = 1024;
/// Keys in the pending set.
const PENDING: u64 = 64;

/// A unit of work to time, given its repetition index.
type Unit<'a> = Box<dyn FnMut(usize) + 'a>;

/// The median time of one call of each unit, in nanoseconds. The probes take turns sample by
/// sample, so a slow spell of the shared machine falls on all of them alike instead of on one.
fn medians_ns(effort: Effort, units: &mut [Unit<'_>]) -> Vec<f64> {
    let sample = |unit: &mut Unit<'_>| {
        let start = Instant::now();
        for i in 0..effort.reps {
            unit(i);
        }
        start.elapsed().as_nanos() as f64 / effort.reps as f64
    };
    for unit in units.iter_mut() {
        sample(unit); // warm-up
    }
    let mut times = vec![Vec::with_capacity(effort.samples); units.len()];
    for _ in 0..effort.samples.max(1) {
        for (unit, t) in units.iter_mut().zip(&mut times) {
            t.push(sample(unit));
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        })
        .collect()
}

/// A NIC whose region 0 is `SLOTS` slots of `codec`, slot `i` holding entry `i` with a payload
/// of `len` bytes.
fn filled(codec: SlotCodec, len: usize) -> RecordingNic {
    let spec = RegionSpec::new(codec.slot_bytes() * SLOTS);
    let mut nic = RecordingNic::new(ProcessId(0), vec![vec![spec]], 1);
    let mut entry = Vec::new();
    let payload: Vec<u8> = (0..len).map(|b| b as u8).collect();
    for i in 0..SLOTS {
        codec.encode(i as u32, &payload, &mut entry).expect("fits");
        let at = LocalAddr::new(RegionId(0), i * codec.slot_bytes());
        nic.memory_mut().write(at, &entry).expect("in region");
    }
    nic
}

/// Reads slot `i % SLOTS` of a buffer holding `len`-byte entries, copying the payload out as
/// the servers do; a scan (`expect_news` false) expects the next lap's entry, not there yet.
fn read_probe<'a>(len: usize, expect_news: bool) -> Unit<'a> {
    let codec = SlotCodec::new(SlotCodec::encoded_len(LARGE)).expect("valid slot size");
    let nic = filled(codec, len);
    let mut buf = Vec::new();
    Box::new(move |i| {
        let slot = i % SLOTS;
        let expected = if expect_news { slot } else { slot + SLOTS } as u32;
        let at = LocalAddr::new(RegionId(0), slot * codec.slot_bytes());
        let read = codec.read(&nic, at, expected, &mut buf).expect("in region");
        if let Ok(range) = read {
            black_box(Bytes::copy_from_slice(&buf[range]));
        }
        black_box(&buf);
    })
}

/// A pending message's key moved to the end of the pending set (RamCast's final timestamp).
fn order_probe<'a>() -> Unit<'a> {
    let mut pending: BTreeSet<(u64, u32, u64)> = (0..PENDING).map(|s| (s, 0, s)).collect();
    let mut next = PENDING;
    Box::new(move |_| {
        let first = pending.pop_first().expect("never empty");
        pending.insert((next, first.1, first.2));
        next += 1;
    })
}

/// A delivery handed to the application through a queue.
fn deliver_probe<'a>() -> Unit<'a> {
    let mut handed = VecDeque::new();
    let payload = Bytes::from_static(&[7; 64]);
    Box::new(move |i| {
        handed.push_back(Delivery {
            msg: MsgId::new(ProcessId(0), i as u64),
            dst: DestSet::from_bits(1),
            payload: payload.clone(),
            order: None,
        });
        black_box(handed.pop_front());
    })
}

/// Times every kind of work.
pub fn measure(effort: Effort) -> Timings {
    let mut units = [
        read_probe(SMALL, false),
        read_probe(SMALL, true),
        read_probe(LARGE, true),
        order_probe(),
        deliver_probe(),
    ];
    let m = medians_ns(effort, &mut units);
    let (scan, small, large, order, deliver) = (m[0], m[1], m[2], m[3], m[4]);
    let copy_per_byte = ((large - small) / (LARGE - SMALL) as f64).max(0.0);
    let decode = (small - copy_per_byte * SMALL as f64).max(0.0);
    Timings {
        scan,
        decode,
        copy_per_byte,
        order,
        deliver,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_measures_a_positive_time_and_a_large_entry_costs_more_than_a_small_one() {
        let effort = Effort {
            samples: 3,
            reps: 2_000,
        };
        let t = measure(effort);
        for (what, ns) in [("scan", t.scan), ("order", t.order), ("deliver", t.deliver)] {
            assert!(ns > 0.0, "{what}: {ns} ns");
        }
        let m = medians_ns(
            effort,
            &mut [read_probe(SMALL, true), read_probe(LARGE, true)],
        );
        assert!(m[1] > m[0], "4 KB read {} ns, 8 B read {} ns", m[1], m[0]);
    }
}
