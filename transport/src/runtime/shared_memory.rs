//! Word-atomic shared memory: a region is a slice of `AtomicU64`, so a write becomes visible word
//! by word (8-byte words never tear) and never atomically as a whole.

use crate::nic::{Data, OpError};
use crate::region::{Access, LocalAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// One region of one process, shared by every thread.
#[derive(Debug)]
pub(crate) struct SharedRegion {
    words: Words,
    /// Per-peer access. A remote op holds its peer's lock while it checks and copies, so once
    /// `set_access` (which takes the same lock) returns, no later word of that peer lands.
    pub(crate) access: Box<[Mutex<Access>]>,
}

impl SharedRegion {
    pub(crate) fn new(len: usize, access: Vec<Access>) -> SharedRegion {
        SharedRegion {
            words: Words::new(len),
            access: access.into_iter().map(Mutex::new).collect(),
        }
    }

    /// Runs `op` on the region under `peer`'s access lock if `allowed` accepts its current access;
    /// `None` when refused. Holding the lock through `op` is what makes a revoke final: once
    /// `set_access` (which takes the same lock) returns, no later word of that peer lands.
    pub(crate) fn guarded<R>(
        &self,
        peer: usize,
        allowed: fn(Access) -> bool,
        op: impl FnOnce(&SharedRegion) -> R,
    ) -> Option<R> {
        let access = self.access[peer].lock().expect("access lock poisoned");
        allowed(*access).then(|| op(self))
    }
}

impl std::ops::Deref for SharedRegion {
    type Target = Words;
    fn deref(&self) -> &Words {
        &self.words
    }
}

/// A region's bytes as 8-byte atomic words: what a process and its NIC (a thread of the
/// runtime, or real hardware writing by DMA) share. Every word access is atomic, so no word
/// tears; a longer write lands word by word in ascending address order.
#[derive(Debug)]
pub struct Words {
    words: Box<[AtomicU64]>,
}

impl Words {
    /// `len` bytes of zeros (rounded up to whole words, at least one).
    pub fn new(len: usize) -> Words {
        Words {
            words: (0..len.div_ceil(8).max(1))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// The address of the first byte (stable for the memory's lifetime), for a NIC to register.
    pub fn addr(&self) -> usize {
        self.words.as_ptr() as usize
    }

    /// Bytes held (whole words).
    pub fn capacity(&self) -> usize {
        self.words.len() * 8
    }

    /// Stores `data` at `offset`, word by word in ascending address order. Partial words at the
    /// edges are merged with a compare-and-swap loop so neighbouring bytes are never clobbered.
    pub fn write(&self, offset: usize, data: &[u8]) {
        let mut pos = offset;
        let mut i = 0;
        while i < data.len() {
            let w = pos / 8;
            let in_word = pos % 8;
            let n = (8 - in_word).min(data.len() - i);
            if n == 8 {
                let v = u64::from_le_bytes(data[i..i + 8].try_into().expect("8 bytes"));
                self.words[w].store(v, Ordering::Release);
            } else {
                let mut bytes = [0u8; 8];
                bytes[in_word..in_word + n].copy_from_slice(&data[i..i + n]);
                let bits = u64::from_le_bytes(bytes);
                let mask = if n == 8 {
                    u64::MAX
                } else {
                    ((1u64 << (8 * n)) - 1) << (8 * in_word)
                };
                let _ = self.words[w].fetch_update(Ordering::Release, Ordering::Relaxed, |old| {
                    Some((old & !mask) | bits)
                });
            }
            pos += n;
            i += n;
        }
    }

    /// Stores a write op's payload at `offset` (synthetic payloads regenerated chunk by chunk).
    pub fn write_data(&self, offset: usize, data: &Data) {
        match data {
            Data::Bytes(b) => self.write(offset, b),
            Data::Inline(i) => self.write(offset, i),
            Data::Synthetic(s) => {
                let mut buf = [0u8; 4096];
                let mut done = 0usize;
                while done < s.len as usize {
                    let n = buf.len().min(s.len as usize - done);
                    s.fill(done as u64, &mut buf[..n]);
                    self.write(offset + done, &buf[..n]);
                    done += n;
                }
            }
        }
    }

    /// Loads bytes at `offset` into `out`, word by word in ascending order.
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        let mut pos = offset;
        let mut i = 0;
        while i < out.len() {
            let w = pos / 8;
            let in_word = pos % 8;
            let n = (8 - in_word).min(out.len() - i);
            let bytes = self.words[w].load(Ordering::Acquire).to_le_bytes();
            out[i..i + n].copy_from_slice(&bytes[in_word..in_word + n]);
            pos += n;
            i += n;
        }
    }

    /// The aligned word at `offset`.
    pub fn word(&self, offset: usize) -> &AtomicU64 {
        &self.words[offset / 8]
    }
}

/// The local-memory half of a [`crate::Nic`] over shared regions, for the runtimes whose
/// process memory is [`SharedRegion`]s (`local`, `tcp`): `check` bounds-checks an access and
/// returns the region.
pub(crate) trait SharedMemory {
    fn check(&self, at: LocalAddr, len: usize) -> Result<&SharedRegion, OpError>;

    fn read_shared(&self, at: LocalAddr, buf: &mut [u8]) -> Result<(), OpError> {
        self.check(at, buf.len())?.read(at.offset, buf);
        Ok(())
    }

    fn write_shared(&self, at: LocalAddr, data: &[u8]) -> Result<(), OpError> {
        self.check(at, data.len())?.write(at.offset, data);
        Ok(())
    }

    fn load_shared(&self, at: LocalAddr) -> Result<u64, OpError> {
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        Ok(self.check(at, 8)?.word(at.offset).load(Ordering::Acquire))
    }

    fn store_shared(&self, at: LocalAddr, value: u64) -> Result<(), OpError> {
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        self.check(at, 8)?
            .word(at.offset)
            .store(value, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Unaligned writes touch exactly their bytes; reads return them.
        #[test]
        fn writes_touch_only_their_range(
            len in 1usize..100, offset in 0usize..100, data in proptest::collection::vec(any::<u8>(), 0..100)
        ) {
            let total = len + offset + data.len();
            let r = SharedRegion::new(total, vec![]);
            let fill: Vec<u8> = (0..total).map(|i| i as u8 ^ 0x5A).collect();
            r.write(0, &fill);
            r.write(offset, &data);
            let mut out = vec![0; total];
            r.read(0, &mut out);
            let mut expect = fill.clone();
            expect[offset..offset + data.len()].copy_from_slice(&data);
            prop_assert_eq!(out, expect);
        }
    }
}
