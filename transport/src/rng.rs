//! The pinned pseudo-random generator and seed derivation.
//!
//! Every random choice in a run comes from a [`Rng`] handed out by the runtime. The algorithm is
//! named and pinned (Xoshiro256++, seeded through SplitMix64) so a seed replays identically across
//! crate versions, unlike `StdRng` or `SmallRng`. Streams are split by [`Purpose`] and entity
//! (usually a process id), so changing the fault settings never perturbs protocol choices and
//! adding a process does not reshuffle the others.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// What a random stream is used for; each purpose gets an independent stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Purpose {
    /// Choices a protocol makes (timeouts with jitter, leader tie-breaks).
    Protocol,
    /// The fault schedule of a simulated run.
    Faults,
    /// Workload generation (destinations, sizes, think times).
    Workload,
    /// Synthetic payload contents.
    Payload,
    /// The simulator's scheduler (random tie-break policy, link jitter).
    Scheduler,
}

impl Purpose {
    fn tag(self) -> u64 {
        match self {
            Purpose::Protocol => 0x7072_6f74_6f63_6f6c,
            Purpose::Faults => 0x6661_756c_7473_0000,
            Purpose::Workload => 0x776f_726b_6c6f_6164,
            Purpose::Payload => 0x7061_796c_6f61_6400,
            Purpose::Scheduler => 0x7363_6865_6475_6c65,
        }
    }
}

/// One step of SplitMix64: the standard seeder for the xoshiro family, also used to hash words.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Mixes `x` into a well-distributed 64-bit value (one SplitMix64 finalisation).
pub fn mix64(x: u64) -> u64 {
    let mut s = x;
    splitmix64(&mut s)
}

/// Derives the seed of the stream for `purpose` and `entity` from a run's master seed.
pub fn derive_seed(master: u64, purpose: Purpose, entity: u64) -> u64 {
    let mut s = master ^ purpose.tag();
    let a = splitmix64(&mut s);
    let mut t = a ^ entity.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    splitmix64(&mut t)
}

/// A pinned, seedable PRNG (Xoshiro256++), with the few helpers protocols and workloads need.
#[derive(Clone, Debug)]
pub struct Rng {
    inner: Xoshiro256PlusPlus,
    draws: u64,
}

impl Rng {
    /// A generator seeded directly from `seed` (through SplitMix64).
    pub fn from_seed(seed: u64) -> Rng {
        Rng {
            inner: Xoshiro256PlusPlus::seed_from_u64(seed),
            draws: 0,
        }
    }

    /// The stream for `purpose` and `entity` of the run with master seed `master`.
    pub fn derive(master: u64, purpose: Purpose, entity: u64) -> Rng {
        Rng::from_seed(derive_seed(master, purpose, entity))
    }

    /// How many 64-bit values this generator has produced (part of the determinism digest).
    pub fn draws(&self) -> u64 {
        self.draws
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.draws += 1;
        self.inner.next_u64()
    }

    /// A uniform value in `0..n` (`n` > 0), without modulo bias (Lemire's method).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below(0)");
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (n as u128);
            let low = m as u64;
            if low >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniform value in `lo..=hi`.
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        if hi - lo == u64::MAX {
            return self.next_u64();
        }
        lo + self.below(hi - lo + 1)
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit_f64() < p
    }

    /// Fills `buf` with random bytes.
    pub fn fill_bytes(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let w = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pinned algorithm must never change output: these values were produced by this
    /// implementation when it was written and guard seed replay across dependency upgrades.
    #[test]
    fn output_is_pinned() {
        let mut r = Rng::from_seed(42);
        let first: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        let mut again = Rng::from_seed(42);
        let second: Vec<u64> = (0..3).map(|_| again.next_u64()).collect();
        assert_eq!(first, second);
        assert_eq!(first, PINNED_SEED_42.to_vec());
    }

    const PINNED_SEED_42: [u64; 3] = [
        15021278609987233951,
        5881210131331364753,
        18149643915985481100,
    ];

    #[test]
    fn streams_are_independent() {
        let a = derive_seed(7, Purpose::Protocol, 1);
        let b = derive_seed(7, Purpose::Faults, 1);
        let c = derive_seed(7, Purpose::Protocol, 2);
        let d = derive_seed(8, Purpose::Protocol, 1);
        assert!(a != b && a != c && a != d && b != c);
        assert_eq!(a, derive_seed(7, Purpose::Protocol, 1));
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::from_seed(1);
        for n in [1u64, 2, 3, 7, 1000, u64::MAX] {
            for _ in 0..200 {
                assert!(r.below(n) < n);
            }
        }
        assert_eq!(r.range_inclusive(5, 5), 5);
    }
}
