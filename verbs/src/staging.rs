//! Where the bytes of a non-inline send or write wait until the NIC has read them: one
//! registered ring per queue pair, freed in post order.
//!
//! The NIC reads a work request's source bytes by DMA some time after the post, so the bytes
//! must stay put until the request completes. The process's payloads live in ordinary heap
//! buffers (or are synthetic), so the runtime copies each into the queue pair's staging ring
//! and posts from there. Work requests of one queue pair retire in post order ([`crate::signal`]),
//! so the ring frees in allocation order and needs no free list: it keeps where the next
//! allocation goes and how many bytes are held. An allocation that would run past the end
//! skips to the start, and the skipped tail is charged to it, so frees stay in step.

/// The allocation state of one staging ring of `capacity` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staging {
    capacity: usize,
    head: usize,
    held: usize,
}

/// An allocation: where its bytes go and how many bytes it holds (its length rounded up to a
/// word, plus any tail it skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// Offset of the first byte in the ring (8-byte aligned).
    pub at: usize,
    /// Bytes to free when the work request retires.
    pub charged: usize,
}

impl Staging {
    /// A ring of `capacity` bytes (rounded down to a word).
    pub fn new(capacity: usize) -> Staging {
        Staging {
            capacity: capacity / 8 * 8,
            head: 0,
            held: 0,
        }
    }

    /// The ring's size.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes held by requests not yet retired.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Room for `len` contiguous bytes, or `None` until earlier requests retire. `len` must
    /// be at most half the ring, so that it always fits once the ring drains.
    pub fn alloc(&mut self, len: usize) -> Option<Slice> {
        let len = len.div_ceil(8).max(1) * 8;
        assert!(
            len <= self.capacity / 2,
            "staging allocation of {len} bytes in a ring of {}",
            self.capacity
        );
        let (at, charged) = if self.head + len <= self.capacity {
            (self.head, len)
        } else {
            (0, self.capacity - self.head + len)
        };
        if self.held + charged > self.capacity {
            return None;
        }
        self.head = (at + len) % self.capacity;
        self.held += charged;
        Some(Slice { at, charged })
    }

    /// Frees `charged` bytes of the oldest allocations (in allocation order).
    pub fn free(&mut self, charged: usize) {
        assert!(charged <= self.held, "freed more than was held");
        self.held -= charged;
        if self.held == 0 {
            // Empty: start over at the beginning, so large allocations fit without a skip.
            self.head = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn allocations_wrap_and_charge_the_skipped_tail() {
        let mut s = Staging::new(64);
        let a = s.alloc(20).unwrap();
        assert_eq!(a, Slice { at: 0, charged: 24 });
        let b = s.alloc(32).unwrap();
        assert_eq!(
            b,
            Slice {
                at: 24,
                charged: 32
            }
        );
        // 8 bytes left at the end, 8 more needed: wait for a free.
        assert_eq!(s.alloc(16), None);
        s.free(a.charged);
        let c = s.alloc(16).unwrap();
        assert_eq!(c, Slice { at: 0, charged: 24 }, "skips the 8-byte tail");
        s.free(b.charged);
        s.free(c.charged);
        assert_eq!(s.held(), 0);
        assert_eq!(s.alloc(32).unwrap().at, 0, "an empty ring starts over");
    }

    #[test]
    #[should_panic(expected = "staging allocation")]
    fn an_allocation_larger_than_half_the_ring_is_a_bug() {
        Staging::new(64).alloc(40);
    }

    proptest! {
        /// Live allocations never overlap and never leave the ring, whatever the sizes and the
        /// pace of frees.
        #[test]
        fn live_allocations_never_overlap(
            steps in proptest::collection::vec((1usize..=512, 0usize..3), 1..200),
        ) {
            let mut s = Staging::new(1024);
            let mut live: std::collections::VecDeque<(Slice, usize)> = Default::default();
            for (len, frees) in steps {
                for _ in 0..frees {
                    if let Some((old, _)) = live.pop_front() {
                        s.free(old.charged);
                    }
                }
                match s.alloc(len) {
                    Some(a) => {
                        prop_assert!(a.at + len <= 1024);
                        for (b, blen) in &live {
                            prop_assert!(a.at + len <= b.at || b.at + blen <= a.at,
                                "{:?} over {:?}", a, b);
                        }
                        live.push_back((a, len));
                    }
                    None => prop_assert!(!live.is_empty(), "an empty ring refused {}", len),
                }
            }
        }
    }
}
