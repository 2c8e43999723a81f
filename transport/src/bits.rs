//! Bit sets over `u64` words, searched a word at a time: which of `n` things are marked, found
//! in index order without looking at each unmarked one. The simulator's wheel keeps its
//! occupied buckets so, and a [`crate::mesh::Mesh`] the rings that may hold news and the
//! outboxes that hold messages: with hundreds of members, walking every peer on every receive
//! cost Ridge's figures a tenth of their time.

/// `n` bits, all clear.
#[derive(Clone, Debug)]
pub(crate) struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    /// `n` bits, all clear.
    pub(crate) fn new(n: usize) -> Bits {
        Bits {
            words: vec![0; n.div_ceil(64)],
            len: n,
        }
    }

    /// `n` bits, all set.
    pub(crate) fn full(n: usize) -> Bits {
        let mut b = Bits::new(n);
        b.set_all();
        b
    }

    /// Sets every bit.
    pub(crate) fn set_all(&mut self) {
        self.words.iter_mut().for_each(|w| *w = !0);
        if let Some(last) = self.words.last_mut() {
            let tail = self.len % 64;
            if tail != 0 {
                *last = (1 << tail) - 1;
            }
        }
    }

    /// Whether bit `i` is set.
    pub(crate) fn get(&self, i: usize) -> bool {
        self.words[i / 64] & (1 << (i % 64)) != 0
    }

    /// Sets bit `i`; returns whether it was clear.
    pub(crate) fn insert(&mut self, i: usize) -> bool {
        debug_assert!(i < self.len);
        let (w, m) = (&mut self.words[i / 64], 1 << (i % 64));
        let was_clear = *w & m == 0;
        *w |= m;
        was_clear
    }

    /// Clears bit `i`.
    pub(crate) fn remove(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
    }

    /// The first set bit in `lo..hi`.
    pub(crate) fn first_in(&self, lo: usize, hi: usize) -> Option<usize> {
        first_set(&self.words, lo, hi.min(self.len))
    }
}

/// The first set bit of `words` (bit `i` is bit `i % 64` of word `i / 64`) in `lo..hi`.
fn first_set(words: &[u64], lo: usize, hi: usize) -> Option<usize> {
    if lo >= hi {
        return None;
    }
    let last = (hi - 1) / 64;
    let mut w = lo / 64;
    let mut bits = words[w] & (!0u64 << (lo % 64));
    loop {
        if w == last {
            let tail = hi - last * 64;
            if tail < 64 {
                bits &= (1u64 << tail) - 1;
            }
            return (bits != 0).then(|| w * 64 + bits.trailing_zeros() as usize);
        }
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
        w += 1;
        bits = words[w];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `first_in` against a plain scan, over every range of sets that straddle word ends.
    #[test]
    fn first_in_finds_what_a_scan_finds() {
        for n in [1, 63, 64, 65, 130] {
            let marked: Vec<usize> = (0..n).filter(|i| i % 7 == 3 || *i == n - 1).collect();
            let mut b = Bits::new(n);
            for &i in &marked {
                assert!(b.insert(i));
                assert!(!b.insert(i));
            }
            for lo in 0..=n {
                for hi in lo..=n + 2 {
                    let want = marked.iter().copied().find(|&i| i >= lo && i < hi);
                    assert_eq!(b.first_in(lo, hi), want, "n {n} lo {lo} hi {hi}");
                }
            }
            b.remove(n - 1);
            assert!(!b.get(n - 1));
            let full = Bits::full(n);
            assert_eq!(full.first_in(0, n + 5), Some(0));
            assert_eq!(full.first_in(n - 1, n + 5), Some(n - 1));
            assert_eq!(full.first_in(n, n + 5), None, "no bit past n is set");
        }
    }
}
