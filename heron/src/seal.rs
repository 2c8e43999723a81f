//! Sealed entries: how a reader tells a multi-word entry written whole from a torn one, for
//! any order in which its 8-byte words land and are read (see the crate docs, "Memory
//! protocol").
//!
//! A sealed entry is a run of little-endian words whose last word, the seal, is [`seal`] of the
//! others. A reader accepts the entry only if the seal it read matches the words it read.
//! Each step of the seal is a bijection of one word given the state before it, so a view that
//! differs from a written entry in exactly one word never matches; a view mixing several
//! writes matches with probability about 2^-64.

use transport::rng::mix64;

/// Bytes of a seal.
pub(crate) const SEAL: usize = 8;

/// Where the chain starts ("heronsea"): a zeroed entry, never written, does not match.
const START: u64 = 0x6865_726f_6e73_6561;

/// The little-endian word of 8 bytes.
pub(crate) fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

/// The seal of `words`: SplitMix64 finalisations ([`mix64`]) chained over them.
pub(crate) fn seal(words: impl IntoIterator<Item = u64>) -> u64 {
    words.into_iter().fold(START, |h, w| mix64(h ^ w))
}

/// The seal of `bytes` (a multiple of 8), read as little-endian words.
pub(crate) fn seal_bytes(bytes: &[u8]) -> u64 {
    seal(bytes.chunks_exact(8).map(word))
}

/// Whether `entry`, a run of words ending with a seal, holds the seal of its other words.
pub(crate) fn sealed(entry: &[u8]) -> bool {
    entry.len() >= SEAL && {
        let (body, s) = entry.split_at(entry.len() - SEAL);
        seal_bytes(body) == word(s)
    }
}

/// Writes the seal of `entry`'s other words into its last word.
pub(crate) fn reseal(entry: &mut [u8]) {
    let (body, s) = entry.split_at_mut(entry.len() - SEAL);
    s.copy_from_slice(&seal_bytes(body).to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Changing any one word of a sealed entry, the seal included, breaks it.
        #[test]
        fn an_entry_with_any_one_word_changed_is_not_sealed(
            words in proptest::collection::vec(any::<u64>(), 1..8),
            at in any::<prop::sample::Index>(),
            flip in 1u64..,
        ) {
            let mut entry: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            entry.extend_from_slice(&[0; SEAL]);
            reseal(&mut entry);
            prop_assert!(sealed(&entry));
            let i = at.index(entry.len() / 8) * 8;
            let w = word(&entry[i..i + 8]) ^ flip;
            entry[i..i + 8].copy_from_slice(&w.to_le_bytes());
            prop_assert!(!sealed(&entry));
        }
    }

    #[test]
    fn a_zeroed_entry_is_not_sealed() {
        assert!(!sealed(&[0; 40]));
    }
}
