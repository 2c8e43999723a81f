//! The slot codec: fixed-size entries `[header | payload | canary]` whose canary is written last,
//! so a reader never accepts a torn entry.
//!
//! Layout of an entry in a slot of `slot_bytes` (a multiple of 8, at least 24):
//!
//! ```text
//! offset 0      header   u64 = seq (u32) | len (u32) << 32
//! offset 8      payload  len bytes, zero-padded to a multiple of 8
//! offset 8+pad  canary   u64 = seq (u32) | crc32(header, payload) (u32) << 32
//! ```
//!
//! Only `encoded_len(len)` bytes are written, not the whole slot, so small messages in large
//! slots cost what they carry. The reader knows which `seq` it expects next (a ring position, a
//! per-client counter); stale entries from an earlier lap carry another `seq`.
//!
//! Why a torn entry is never accepted: writes land word by word in ascending address order (the
//! local runtime does exactly this, and NICs do it in practice, which FaRM relies on too), so a
//! canary carrying the expected `seq` implies the words before it have landed. For a slot that a
//! later entry may overwrite while it is being read, [`SlotCodec::read`] re-reads the header after
//! copying the entry, as a seqlock does, and the CRC catches any writer that does not keep the
//! ascending order (a probability of 2^-32 per torn read remains in that case only).

use crate::nic::{Nic, OpError};
use crate::region::LocalAddr;

/// Bytes of the header word.
pub const HEADER_BYTES: usize = 8;
/// Bytes of the canary word.
pub const CANARY_BYTES: usize = 8;

/// Errors building a codec or encoding an entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    /// The slot size is unusable.
    #[error("slot size {slot_bytes} is invalid: it must be a multiple of 8 and at least 24 bytes")]
    BadSlotSize {
        /// The size given.
        slot_bytes: usize,
    },
    /// The payload does not fit in a slot.
    #[error("message of {len} bytes does not fit in a slot (at most {max} bytes per message); raise the slot size")]
    TooLarge {
        /// Payload length.
        len: usize,
        /// Largest payload per slot.
        max: usize,
    },
}

/// Why a slot's content was not accepted as the expected entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// The slot does not (yet) hold the expected `seq`.
    NotYet,
    /// The slot holds the expected `seq` but the entry is incomplete or inconsistent.
    Torn,
}

const fn pad8(n: usize) -> usize {
    (n + 7) & !7
}

/// Encodes and decodes entries of one slot size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotCodec {
    slot_bytes: usize,
}

impl SlotCodec {
    /// A codec for slots of `slot_bytes` bytes.
    pub fn new(slot_bytes: usize) -> Result<SlotCodec, SlotError> {
        if slot_bytes % 8 != 0 || slot_bytes < HEADER_BYTES + CANARY_BYTES + 8 {
            return Err(SlotError::BadSlotSize { slot_bytes });
        }
        Ok(SlotCodec { slot_bytes })
    }

    /// The slot size in bytes.
    pub const fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// The largest payload one slot carries.
    pub const fn capacity(&self) -> usize {
        self.slot_bytes - HEADER_BYTES - CANARY_BYTES
    }

    /// Bytes written for a payload of `len` bytes.
    pub const fn encoded_len(len: usize) -> usize {
        HEADER_BYTES + pad8(len) + CANARY_BYTES
    }

    fn checksum(header: u64, payload: &[u8]) -> u32 {
        let mut h = crc32fast::Hasher::new();
        h.update(&header.to_le_bytes());
        h.update(payload);
        h.finalize()
    }

    /// Encodes entry `seq` with `payload` into `out` (cleared first); write all of `out` to the
    /// slot's first byte in one write.
    pub fn encode(&self, seq: u32, payload: &[u8], out: &mut Vec<u8>) -> Result<(), SlotError> {
        if payload.len() > self.capacity() {
            return Err(SlotError::TooLarge {
                len: payload.len(),
                max: self.capacity(),
            });
        }
        let header = seq as u64 | (payload.len() as u64) << 32;
        let canary = seq as u64 | (Self::checksum(header, payload) as u64) << 32;
        out.clear();
        out.extend_from_slice(&header.to_le_bytes());
        out.extend_from_slice(payload);
        out.resize(HEADER_BYTES + pad8(payload.len()), 0);
        out.extend_from_slice(&canary.to_le_bytes());
        Ok(())
    }

    /// Decodes the entry at the start of `slot` if it is entry `expected` and complete; returns
    /// its payload.
    pub fn decode<'a>(&self, expected: u32, slot: &'a [u8]) -> Result<&'a [u8], Reject> {
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(slot.get(at..at + 8)?.try_into().ok()?))
        };
        let header = word(0).ok_or(Reject::NotYet)?;
        if header as u32 != expected {
            return Err(Reject::NotYet);
        }
        let len = (header >> 32) as usize;
        if len > self.capacity() {
            return Err(Reject::Torn);
        }
        let canary_at = HEADER_BYTES + pad8(len);
        let canary = word(canary_at).ok_or(Reject::Torn)?;
        let payload = &slot[HEADER_BYTES..HEADER_BYTES + len];
        Self::check(expected, header, payload, canary)?;
        Ok(payload)
    }

    /// The checks past the header: the canary carries `expected` and the checksum of `header`
    /// and `payload`.
    fn check(expected: u32, header: u64, payload: &[u8], canary: u64) -> Result<(), Reject> {
        if canary as u32 != expected {
            // The header has landed but the canary has not: the entry is in flight.
            return Err(Reject::Torn);
        }
        if (canary >> 32) as u32 != Self::checksum(header, payload) {
            return Err(Reject::Torn);
        }
        Ok(())
    }

    /// The header word of the slot at `at` and its payload length, if it announces entry
    /// `expected` with a length that fits.
    fn header<N: Nic + ?Sized>(
        &self,
        nic: &N,
        at: LocalAddr,
        expected: u32,
    ) -> Result<Result<(u64, usize), Reject>, OpError> {
        let header = nic.load_u64(at)?;
        if header as u32 != expected {
            return Ok(Err(Reject::NotYet));
        }
        let len = (header >> 32) as usize;
        if len > self.capacity() {
            return Ok(Err(Reject::Torn));
        }
        Ok(Ok((header, len)))
    }

    /// Reads entry `expected` from the slot at `at` in this process's memory into `out` and
    /// returns the payload's range in `out`, or why it is not (yet) there. Re-reads the header
    /// after the copy so an entry overwritten mid-read is rejected (seqlock).
    pub fn read<N: Nic + ?Sized>(
        &self,
        nic: &N,
        at: LocalAddr,
        expected: u32,
        out: &mut Vec<u8>,
    ) -> Result<Result<std::ops::Range<usize>, Reject>, OpError> {
        let (header, len) = match self.header(nic, at, expected)? {
            Ok(h) => h,
            Err(r) => return Ok(Err(r)),
        };
        // `read_local` overwrites every byte: zero only what the buffer lacks.
        let n = Self::encoded_len(len);
        if out.len() < n {
            out.resize(n, 0);
        } else {
            out.truncate(n);
        }
        nic.read_local(at, out)?;
        let range = match self.decode(expected, out) {
            Ok(p) => {
                let start = p.as_ptr() as usize - out.as_ptr() as usize;
                start..start + p.len()
            }
            Err(r) => return Ok(Err(r)),
        };
        if nic.load_u64(at)? != header {
            return Ok(Err(Reject::Torn));
        }
        Ok(Ok(range))
    }

    /// [`SlotCodec::read`] for a reader that wants the payload alone: copies just the payload
    /// into `out` (resized to it), with the same checks, rather than the whole entry for the
    /// payload to be copied out of it again (a ring's kilobyte messages were copied twice).
    pub fn read_payload<N: Nic + ?Sized>(
        &self,
        nic: &N,
        at: LocalAddr,
        expected: u32,
        out: &mut Vec<u8>,
    ) -> Result<Result<(), Reject>, OpError> {
        let (header, len) = match self.header(nic, at, expected)? {
            Ok(h) => h,
            Err(r) => return Ok(Err(r)),
        };
        // `read_local` overwrites every byte: zero only what the buffer lacks.
        out.resize(len, 0);
        nic.read_local(at.add(HEADER_BYTES), out)?;
        let canary = nic.load_u64(at.add(HEADER_BYTES + pad8(len)))?;
        if let Err(r) = Self::check(expected, header, out, canary) {
            return Ok(Err(r));
        }
        if nic.load_u64(at)? != header {
            return Ok(Err(Reject::Torn));
        }
        Ok(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn codec() -> impl Strategy<Value = SlotCodec> {
        (3usize..64).prop_map(|w| SlotCodec::new(w * 8).unwrap())
    }

    proptest! {
        /// Any payload that fits round-trips; the encoded entry never exceeds the slot.
        #[test]
        fn round_trips(c in codec(), seq: u32, payload in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut out = Vec::new();
            match c.encode(seq, &payload, &mut out) {
                Ok(()) => {
                    prop_assert!(out.len() <= c.slot_bytes());
                    let mut slot = vec![0xAB; c.slot_bytes()];
                    slot[..out.len()].copy_from_slice(&out);
                    prop_assert_eq!(c.decode(seq, &slot), Ok(&payload[..]));
                    prop_assert_eq!(c.decode(seq.wrapping_add(1), &slot), Err(Reject::NotYet));
                }
                Err(SlotError::TooLarge { len, max }) => {
                    prop_assert!(len > max && max == c.capacity());
                }
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }

        /// A slot holding any word-level mix of an old entry and the new one is either rejected or
        /// decodes to exactly the new payload: a torn entry is never accepted.
        #[test]
        fn torn_entry_never_accepted(
            c in codec(),
            old_seq: u32,
            new_seq: u32,
            old in proptest::collection::vec(any::<u8>(), 0..200),
            new in proptest::collection::vec(any::<u8>(), 0..200),
            landed in proptest::collection::vec(any::<bool>(), 64),
        ) {
            prop_assume!(old_seq != new_seq);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            prop_assume!(c.encode(old_seq, &old, &mut a).is_ok() && c.encode(new_seq, &new, &mut b).is_ok());
            let mut slot = vec![0u8; c.slot_bytes()];
            slot[..a.len()].copy_from_slice(&a);
            // Land an arbitrary subset of the new entry's words (any order, any tearing).
            for (w, chunk) in b.chunks(8).enumerate() {
                if landed[w % landed.len()] {
                    slot[w * 8..w * 8 + chunk.len()].copy_from_slice(chunk);
                }
            }
            if let Ok(p) = c.decode(new_seq, &slot) {
                prop_assert_eq!(p, &new[..]);
            }
            // A prefix landed in ascending order is accepted only once the canary is in.
            for words in 0..=b.len() / 8 {
                let mut s = vec![0u8; c.slot_bytes()];
                s[..a.len()].copy_from_slice(&a);
                s[..words * 8].copy_from_slice(&b[..words * 8]);
                let accepted = c.decode(new_seq, &s).is_ok();
                prop_assert_eq!(accepted, words * 8 == b.len(), "prefix of {} words", words);
            }
        }
    }

    proptest! {
        /// `read_payload` accepts exactly what `read` accepts, with the same payload, and
        /// rejects for the same reason, over slots holding any word-level mix of two entries.
        #[test]
        fn read_payload_agrees_with_read(
            c in codec(),
            old in proptest::collection::vec(any::<u8>(), 0..200),
            new in proptest::collection::vec(any::<u8>(), 0..200),
            landed in proptest::collection::vec(any::<bool>(), 64),
            expected in 1u32..4,
        ) {
            use crate::recording::RecordingNic;
            use crate::region::{RegionId, RegionSpec};
            use crate::process::ProcessId;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            prop_assume!(c.encode(1, &old, &mut a).is_ok() && c.encode(2, &new, &mut b).is_ok());
            let mut slot = vec![0u8; c.slot_bytes()];
            slot[..a.len()].copy_from_slice(&a);
            for (w, chunk) in b.chunks(8).enumerate() {
                if landed[w % landed.len()] {
                    slot[w * 8..w * 8 + chunk.len()].copy_from_slice(chunk);
                }
            }
            let mut nic = RecordingNic::new(ProcessId(0), vec![vec![RegionSpec::new(c.slot_bytes())]], 1);
            let at = LocalAddr::new(RegionId(0), 0);
            nic.memory_mut().write(at, &slot).unwrap();
            let (mut whole, mut payload) = (Vec::new(), vec![7u8; 3]);
            let by_read = c.read(&nic, at, expected, &mut whole).unwrap().map(|r| whole[r].to_vec());
            let by_payload = c.read_payload(&nic, at, expected, &mut payload).unwrap().map(|()| payload);
            prop_assert_eq!(by_read, by_payload);
        }
    }

    #[test]
    fn rejects_bad_sizes() {
        assert!(SlotCodec::new(16).is_err());
        assert!(SlotCodec::new(30).is_err());
        assert_eq!(SlotCodec::new(24).unwrap().capacity(), 8);
        let c = SlotCodec::new(64).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            c.encode(1, &[0; 49], &mut out),
            Err(SlotError::TooLarge { len: 49, max: 48 })
        );
    }
}
