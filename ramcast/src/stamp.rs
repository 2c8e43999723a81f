//! Timestamps and rounds: the paper's tuples `<cnt, pid>`, ordered by `cnt` then `pid`.
//!
//! Both are packed in one 64-bit word, `cnt << 16 | pid`, so the integer order is the tuple order
//! and a stamp is written to remote memory as one untearable word. Process ids stay below 2^16
//! (at most 64 groups of 15 replicas plus 4096 clients).

use std::fmt;

/// A Skeen timestamp or a Paxos round, `<cnt, pid>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp(pub u64);

impl Stamp {
    /// `<0, 0>`, smaller than every stamp a process makes.
    pub const ZERO: Stamp = Stamp(0);

    /// `<cnt, pid>`.
    pub const fn new(cnt: u64, pid: u32) -> Stamp {
        Stamp(cnt << 16 | (pid as u64 & 0xffff))
    }

    /// `time(<cnt, pid>) = cnt`.
    pub const fn time(self) -> u64 {
        self.0 >> 16
    }

    /// The pid component.
    pub const fn pid(self) -> u32 {
        (self.0 & 0xffff) as u32
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{},{}>", self.time(), self.pid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn packed_order_is_tuple_order(a in 0u64..1 << 40, p in 0u32..1 << 16, b in 0u64..1 << 40, q in 0u32..1 << 16) {
            let (x, y) = (Stamp::new(a, p), Stamp::new(b, q));
            prop_assert_eq!(x.cmp(&y), (a, p).cmp(&(b, q)));
            prop_assert_eq!((x.time(), x.pid()), (a, p));
        }
    }
}
