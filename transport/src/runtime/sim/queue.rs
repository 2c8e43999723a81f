//! The simulator's event queue: a calendar queue (a timing wheel of fixed-width time buckets),
//! specialised for the simulator's monotone clock.
//!
//! Events are keyed by one integer, `time << 64 | seq`. An event goes into the bucket of its time
//! if that lies within the wheel's horizon, else into an overflow heap. The bucket being drained
//! is kept sorted, so a pop is O(1) and a push into the current instant is a short binary insert.
//! Most events of an RDMA simulation land a few microseconds ahead, so the buckets hold tens of
//! events and the queue beats a binary heap of thousands several times over. A bitmap of the
//! occupied buckets lets the queue jump over empty ones: protocols that wait for timers (Ridge's
//! rounds of a millisecond) leave tens of thousands of empty buckets between events.

use crate::bits::Bits;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bucket width: 2^5 = 32 ns.
const BUCKET_SHIFT: u32 = 5;
/// Buckets in the wheel: 2^13, a horizon of 262 us.
const WHEEL_BITS: u32 = 13;
const WHEEL: u64 = 1 << WHEEL_BITS;

fn bucket_of(key: u128) -> u64 {
    ((key >> 64) as u64) >> BUCKET_SHIFT
}

#[derive(Debug)]
struct Far<T> {
    key: u128,
    item: T,
}

impl<T> PartialEq for Far<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<T> Eq for Far<T> {}
impl<T> PartialOrd for Far<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Far<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// A priority queue of `(key, item)` that pops in key order. It is fastest when keys grow (as the
/// simulator's clock does), but any key is accepted: one earlier than the current bucket joins the
/// sorted current bucket, ahead of everything in the wheel.
#[derive(Debug)]
pub(crate) struct EventQueue<T> {
    wheel: Vec<Vec<(u128, T)>>,
    /// Bucket number (time >> BUCKET_SHIFT) of `current`.
    cur: u64,
    /// The current bucket's events, sorted by descending key (pop from the end).
    current: Vec<(u128, T)>,
    in_wheel: usize,
    /// Bit `i` is set iff wheel slot `i` holds events.
    occupied: Bits,
    far: BinaryHeap<Reverse<Far<T>>>,
    /// Reused buffers for the counting sort of a bucket.
    scratch: Vec<(u128, T)>,
    dest: Vec<u32>,
}

impl<T> EventQueue<T> {
    pub(crate) fn new() -> EventQueue<T> {
        EventQueue {
            wheel: (0..WHEEL).map(|_| Vec::new()).collect(),
            cur: 0,
            current: Vec::new(),
            in_wheel: 0,
            occupied: Bits::new(WHEEL as usize),
            far: BinaryHeap::new(),
            scratch: Vec::new(),
            dest: Vec::new(),
        }
    }

    /// Adds an event.
    pub(crate) fn push(&mut self, key: u128, item: T) {
        let b = bucket_of(key);
        if b <= self.cur {
            // Descending order: everything before `at` has a larger key.
            let at = self.current.partition_point(|(k, _)| *k > key);
            self.current.insert(at, (key, item));
        } else if b < self.cur + WHEEL {
            self.push_wheel(b, key, item);
        } else {
            self.far.push(Reverse(Far { key, item }));
        }
    }

    /// Makes `current` non-empty if any event is queued; returns whether one is.
    fn fill(&mut self) -> bool {
        while self.current.is_empty() {
            if self.in_wheel == 0 {
                match self.far.peek() {
                    None => return false,
                    Some(Reverse(f)) => self.cur = bucket_of(f.key),
                }
            } else {
                self.cur += self.next_occupied();
            }
            // Overflow events now within the horizon move into the wheel.
            while let Some(Reverse(f)) = self.far.peek() {
                let b = bucket_of(f.key);
                if b >= self.cur + WHEEL {
                    break;
                }
                let Reverse(Far { key, item }) = self.far.pop().expect("peeked");
                self.push_wheel(b, key, item);
            }
            let slot = (self.cur & (WHEEL - 1)) as usize;
            std::mem::swap(&mut self.scratch, &mut self.wheel[slot]);
            self.occupied.remove(slot);
            self.in_wheel -= self.scratch.len();
            self.sort_bucket();
        }
        true
    }

    /// Puts an event of bucket `b` (within the horizon) into its wheel slot.
    fn push_wheel(&mut self, b: u64, key: u128, item: T) {
        let slot = (b & (WHEEL - 1)) as usize;
        self.wheel[slot].push((key, item));
        self.occupied.insert(slot);
        self.in_wheel += 1;
    }

    /// How many buckets after `cur` the next occupied one lies (1..WHEEL); the wheel holds an
    /// event. Every occupied slot holds a bucket of `cur + 1 .. cur + WHEEL`, so the first one
    /// after `cur`'s slot, going round, is the earliest. Overflow events are all later (they lie
    /// beyond the horizon of the old `cur`), so jumping there skips nothing.
    fn next_occupied(&self) -> u64 {
        let start = ((self.cur + 1) & (WHEEL - 1)) as usize;
        // From `start` to the end of the wheel, then round from its beginning.
        let found = self
            .occupied
            .first_in(start, WHEEL as usize)
            .or_else(|| self.occupied.first_in(0, start))
            .expect("the wheel holds an event");
        1 + ((found + WHEEL as usize - start) % WHEEL as usize) as u64
    }

    /// Moves the bucket in `scratch` into `current`, in descending key order.
    ///
    /// A bucket's events were appended in increasing `seq` (overflow events, which have the
    /// smallest `seq`s, migrate in key order before any direct push to the bucket can happen), so
    /// a stable counting sort on the nanosecond within the bucket yields exact `(time, seq)`
    /// order without comparisons.
    fn sort_bucket(&mut self) {
        const WIDTH: usize = 1 << BUCKET_SHIFT;
        let ns = |key: u128| ((key >> 64) as usize) & (WIDTH - 1);
        let mut counts = [0usize; WIDTH];
        for (k, _) in &self.scratch {
            counts[ns(*k)] += 1;
        }
        // Descending layout: the latest nanosecond first; within one, the latest `seq` first.
        let mut end = [0usize; WIDTH];
        let mut acc = 0;
        for t in (0..WIDTH).rev() {
            acc += counts[t];
            end[t] = acc;
        }
        // Destination of each element: reverse insertion order fills each run from its start.
        let dest = &mut self.dest;
        dest.clear();
        dest.resize(self.scratch.len(), 0);
        for (i, (k, _)) in self.scratch.iter().enumerate().rev() {
            let t = ns(*k);
            dest[i] = (end[t] - counts[t]) as u32;
            counts[t] -= 1;
        }
        // Apply the permutation in place by following its cycles.
        for i in 0..self.scratch.len() {
            while dest[i] as usize != i {
                let j = dest[i] as usize;
                self.scratch.swap(i, j);
                dest.swap(i, j);
            }
        }
        debug_assert!(self.current.is_empty());
        std::mem::swap(&mut self.current, &mut self.scratch);
        debug_assert!(
            self.current.windows(2).all(|w| w[0].0 > w[1].0),
            "bucket not in descending key order"
        );
    }

    /// The smallest key, if any.
    pub(crate) fn peek_key(&mut self) -> Option<u128> {
        if !self.fill() {
            return None;
        }
        self.current.last().map(|(k, _)| *k)
    }

    /// Removes and returns the event with the smallest key.
    pub(crate) fn pop(&mut self) -> Option<(u128, T)> {
        if !self.fill() {
            return None;
        }
        self.current.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes and pops come out exactly in key order, as from a binary heap,
        /// across bucket, wheel-wrap and overflow boundaries, including pushes earlier than the
        /// last popped time (the simulator does this when a time limit puts an event back).
        #[test]
        fn pops_in_key_order(ops in proptest::collection::vec((any::<bool>(), 0u64..2_000_000, 0u8..5, any::<bool>()), 1..400)) {
            let mut q = EventQueue::new();
            let mut reference = BinaryHeap::new();
            let mut now = 0u64;
            let mut seq = 0u64;
            for (pop, delta, scale, back) in ops {
                if pop {
                    let got = q.pop().map(|(k, _)| k);
                    let want = reference.pop().map(|Reverse(k)| k);
                    prop_assert_eq!(got, want);
                    if let Some(k) = got {
                        now = (k >> 64) as u64;
                    }
                } else {
                    seq += 1;
                    // Scale 4 rounds to 100 us steps: many equal times, across the horizon.
                    let d = if scale == 4 {
                        delta / 100_000 * 100_000
                    } else {
                        delta / 10u64.pow(scale as u32)
                    };
                    let t = if back { now.saturating_sub(d % 100) } else { now + d };
                    let key = (t as u128) << 64 | seq as u128;
                    q.push(key, ());
                    reference.push(Reverse(key));
                }
            }
            while let Some(Reverse(k)) = reference.pop() {
                prop_assert_eq!(q.pop().map(|(k, _)| k), Some(k));
            }
            prop_assert!(q.pop().is_none());
        }
    }
}
