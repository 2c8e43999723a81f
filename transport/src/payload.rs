//! Synthetic payloads: `len` bytes defined by a seed instead of stored.
//!
//! A write may carry a [`Synthetic`] payload so a simulated 256 MB transfer to hundreds of nodes
//! never materialises the bytes on the sender. The content is a pure function of
//! `(seed, position)`, so any receiver can verify any byte range by regenerating it.

use crate::rng::mix64;

/// The odd multiplier of a word's index ([`Synthetic`]'s content).
const STEP: u64 = 0x9E37_79B9_7F4A_7C15;

/// `len` bytes whose value at position `i` is a function of `seed` and `i` only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Synthetic {
    /// Selects the content.
    pub seed: u64,
    /// Position of the first byte within the seeded stream (lets a block of a large object
    /// be described as a window of it).
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
}

impl Synthetic {
    /// The first `len` bytes of the stream selected by `seed`.
    pub const fn new(seed: u64, len: u64) -> Synthetic {
        Synthetic {
            seed,
            start: 0,
            len,
        }
    }

    /// The window `[offset, offset + len)` of this payload (clamped to its end).
    pub fn window(&self, offset: u64, len: u64) -> Synthetic {
        let offset = offset.min(self.len);
        Synthetic {
            seed: self.seed,
            start: self.start + offset,
            len: len.min(self.len - offset),
        }
    }

    fn word(&self, index: u64) -> [u8; 8] {
        self.word_value(index).to_le_bytes()
    }

    /// Word `index` of the seeded stream, as the little-endian integer of its bytes: the seed's
    /// key xor an odd multiple of the index. Every word of a stream differs from every other (an
    /// odd multiplier is a bijection), so a block landing at the wrong offset is caught; two
    /// streams differ at every position (distinct keys), so a stale or foreign block is caught;
    /// and the next word is one add and one xor away, so filling and checking run at the speed
    /// of memory (every receiver of a real run checks every byte it gets).
    fn word_value(&self, index: u64) -> u64 {
        self.key() ^ index.wrapping_mul(STEP)
    }

    /// What every word of the stream is xored with.
    fn key(&self) -> u64 {
        mix64(self.seed)
    }

    /// Writes bytes `[offset, offset + out.len())` of this payload into `out`.
    ///
    /// # Panics
    /// If the range exceeds the payload's length.
    pub fn fill(&self, offset: u64, out: &mut [u8]) {
        assert!(
            offset + out.len() as u64 <= self.len,
            "synthetic range {}+{} beyond length {}",
            offset,
            out.len(),
            self.len
        );
        // A partial word up to the first word boundary, whole words, a partial word: the whole
        // words go eight bytes at a time (this runs on every synthetic byte a runtime moves).
        let pos = self.start + offset;
        let skip = (pos % 8) as usize;
        let head = ((8 - skip) % 8).min(out.len());
        if head > 0 {
            out[..head].copy_from_slice(&self.word(pos / 8)[skip..skip + head]);
        }
        let first = (pos + head as u64) / 8;
        let index = first + (out.len() - head) as u64 / 8;
        let mut words = out[head..].chunks_exact_mut(8);
        let key = self.key();
        let mut step = first.wrapping_mul(STEP);
        for w in &mut words {
            w.copy_from_slice(&(key ^ step).to_le_bytes());
            step = step.wrapping_add(STEP);
        }
        let tail = words.into_remainder();
        let n = tail.len();
        if n > 0 {
            tail.copy_from_slice(&self.word(index)[..n]);
        }
    }

    /// The whole payload as bytes (for small payloads and tests).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0; self.len as usize];
        self.fill(0, &mut v);
        v
    }

    /// Whether `bytes` equals this payload's range starting at `offset`.
    pub fn verify(&self, offset: u64, bytes: &[u8]) -> bool {
        if offset + bytes.len() as u64 > self.len {
            return false;
        }
        // Partial words at either end byte by byte; whole words as integers, a run of them at
        // a time without branching, so the comparison keeps pace with the copies that receivers
        // make (every receiver of a real run checks every byte it gets).
        let pos = self.start + offset;
        let head = (((8 - pos % 8) % 8) as usize).min(bytes.len());
        let mut first = [0u8; 8];
        self.fill(offset, &mut first[..head]);
        if first[..head] != bytes[..head] {
            return false;
        }
        let (words, tail) = bytes[head..].split_at((bytes.len() - head) / 8 * 8);
        let first = (pos + head as u64) / 8;
        let (key, mut step) = (self.key(), first.wrapping_mul(STEP));
        for run in words.chunks(4096) {
            let mut differ = 0;
            for w in run.chunks_exact(8) {
                let got = u64::from_le_bytes(w.try_into().expect("eight bytes"));
                differ |= got ^ key ^ step;
                step = step.wrapping_add(STEP);
            }
            if differ != 0 {
                return false;
            }
        }
        *tail == self.word(first + words.len() as u64 / 8)[..tail.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Regenerating any range gives the bytes of the whole, so receivers can verify blocks.
        #[test]
        fn ranges_agree_with_whole(seed: u64, len in 0u64..2048, a in 0u64..2048, b in 0u64..2048) {
            let p = Synthetic::new(seed, len);
            let whole = p.to_vec();
            let (lo, hi) = (a.min(b).min(len), a.max(b).min(len));
            let mut part = vec![0; (hi - lo) as usize];
            p.fill(lo, &mut part);
            prop_assert_eq!(&part[..], &whole[lo as usize..hi as usize]);
            prop_assert!(p.verify(lo, &part));
            let w = p.window(lo, hi - lo);
            prop_assert_eq!(w.to_vec(), part);
        }

        /// Verification rejects any corrupted byte.
        #[test]
        fn verify_detects_corruption(seed: u64, start in 0u64..64, len in 1u64..1024, at in 0usize..1024, flip in 1u8..=255) {
            let p = Synthetic::new(seed, len + start).window(start, len);
            let mut bytes = p.to_vec();
            let at = at % bytes.len();
            bytes[at] ^= flip;
            prop_assert!(!p.verify(0, &bytes));
        }
    }

    proptest! {
        /// A block of 8 bytes or more never passes for another place in its stream, nor for
        /// the same place in another stream: what catches misplaced and stale blocks.
        #[test]
        fn a_block_verifies_only_where_it_belongs(seed: u64, other: u64, a in 0u64..4096, b in 0u64..4096, len in 8u64..512) {
            let p = Synthetic::new(seed, 8192);
            let block = p.window(a, len).to_vec();
            prop_assert!(p.verify(a, &block));
            if a != b {
                prop_assert!(!p.verify(b, &block));
            }
            if other != seed {
                prop_assert!(!Synthetic::new(other, 8192).verify(a, &block));
            }
        }
    }

    proptest! {
        /// `verify` agrees with a byte-wise comparison for every window, offset, length and
        /// single-byte change (or none).
        #[test]
        fn verify_agrees_with_comparing_byte_by_byte(seed: u64, start in 0u64..24, len in 0u64..200, off in 0u64..200, n in 0usize..200, at in 0usize..200, flip in 0u8..=255) {
            let p = Synthetic::new(seed, start + len).window(start, len);
            let whole = p.to_vec();
            let mut bytes: Vec<u8> = (0..n).map(|i| whole.get(off as usize + i).copied().unwrap_or(0)).collect();
            if !bytes.is_empty() { let a = at % bytes.len(); bytes[a] ^= flip; }
            let want = off + n as u64 <= len && whole[off as usize..off as usize + n] == bytes[..];
            prop_assert_eq!(p.verify(off, &bytes), want);
        }
    }

    proptest! {
        /// Byte `i` of the stream is byte `i % 8` of word `i / 8`, whatever range is filled.
        #[test]
        fn fill_matches_the_bytewise_definition(seed: u64, start in 0u64..64, offset in 0u64..64, len in 0usize..100) {
            let p = Synthetic { seed, start, len: offset + len as u64 };
            let mut out = vec![0; len];
            p.fill(offset, &mut out);
            for (i, &byte) in out.iter().enumerate() {
                let at = start + offset + i as u64;
                prop_assert_eq!(byte, p.word(at / 8)[(at % 8) as usize]);
            }
        }
    }

    #[test]
    fn different_seeds_differ() {
        assert_ne!(
            Synthetic::new(1, 64).to_vec(),
            Synthetic::new(2, 64).to_vec()
        );
    }
}
