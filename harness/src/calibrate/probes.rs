//! The timing probes of `harness calibrate software`: each kind of [`Work`] timed on this
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
//! Each probe runs `reps` units per sample, `samples` samples after one warm-up sample, and
//! keeps the median: the machine is shared, and the median of many short samples is what a
//! quiet core would show.

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
pub(crate) struct Effort {
    /// Samples per probe (the median is kept).
    pub(crate) samples: usize,
    /// Units of work per sample.
    pub(crate) reps: usize,
}

/// The median cost of one unit of each kind, in nanoseconds (fractional).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timings {
    /// Per slot scanned.
    pub(crate) scan: f64,
    /// Per entry decoded (without its bytes).
    pub(crate) decode: f64,
    /// Per byte copied out of an entry.
    pub(crate) copy_per_byte: f64,
    /// Per message ordered.
    pub(crate) order: f64,
    /// Per message delivered.
    pub(crate) deliver: f64,
}

/// Payload sizes of the two decode probes; the line through them gives `Decode` and `Copy`.
const SMALL: usize = 8;
const LARGE: usize = 4096;
/// Slots of the scanned buffer.
const SLOTS: usize = 1024;
/// Keys in the pending set.
const PENDING: u64 = 64;

/// The median time of one call of `unit`, in nanoseconds.
fn median_ns(effort: Effort, mut unit: impl FnMut(usize)) -> f64 {
    let mut sample = || {
        let start = Instant::now();
        for i in 0..effort.reps {
            unit(i);
        }
        start.elapsed().as_nanos() as f64 / effort.reps as f64
    };
    sample();
    let mut times: Vec<f64> = (0..effort.samples.max(1)).map(|_| sample()).collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
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

/// Reads slot `i % SLOTS` expecting entry `expected(i)`, copying a payload out as the servers do.
fn read_probe(effort: Effort, len: usize, expect_news: bool) -> f64 {
    let codec = SlotCodec::new(SlotCodec::encoded_len(LARGE)).expect("valid slot size");
    let nic = filled(codec, len);
    let mut buf = Vec::new();
    median_ns(effort, |i| {
        let slot = i % SLOTS;
        // A scan expects the entry of the next lap, which is not there yet.
        let expected = if expect_news { slot } else { slot + SLOTS } as u32;
        let at = LocalAddr::new(RegionId(0), slot * codec.slot_bytes());
        let read = codec.read(&nic, at, expected, &mut buf).expect("in region");
        if let Ok(range) = read {
            black_box(Bytes::copy_from_slice(&buf[range]));
        }
        black_box(&buf);
    })
}

/// Times every kind of work.
pub(crate) fn measure(effort: Effort) -> Timings {
    let scan = read_probe(effort, SMALL, false);
    let small = read_probe(effort, SMALL, true);
    let large = read_probe(effort, LARGE, true);
    let copy_per_byte = ((large - small) / (LARGE - SMALL) as f64).max(0.0);
    let decode = (small - copy_per_byte * SMALL as f64).max(0.0);

    let mut pending: BTreeSet<(u64, u32, u64)> = (0..PENDING).map(|s| (s, 0, s)).collect();
    let mut next = PENDING;
    let order = median_ns(effort, |_| {
        let first = pending.pop_first().expect("never empty");
        pending.insert((next, first.1, first.2));
        next += 1;
    });

    let mut handed = VecDeque::new();
    let payload = Bytes::from_static(&[7; 64]);
    let deliver = median_ns(effort, |i| {
        handed.push_back(Delivery {
            msg: MsgId::new(ProcessId(0), i as u64),
            dst: DestSet::from_bits(1),
            payload: payload.clone(),
        });
        black_box(handed.pop_front());
    });
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
        let small = read_probe(effort, SMALL, true);
        let large = read_probe(effort, LARGE, true);
        assert!(large > small, "4 KB read {large} ns, 8 B read {small} ns");
    }
}
