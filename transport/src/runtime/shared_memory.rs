//! Word-atomic shared memory: a region is a slice of `AtomicU64`, so a write becomes visible word
//! by word (8-byte words never tear) and never atomically as a whole.

use crate::nic::{Data, OpError};
use crate::region::{Access, LocalAddr};
use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

/// The smallest page size of the platforms we run on: touching one word in each is enough to
/// make a whole region resident.
const PAGE: usize = 4096;

/// A region's bytes as 8-byte atomic words: what a process and its NIC (a thread of the
/// runtime, or real hardware writing by DMA) share. Every word access is atomic, so no word
/// tears; a longer write lands word by word in ascending address order.
#[derive(Debug)]
pub struct Words {
    words: Box<[AtomicU64]>,
}

impl Words {
    /// `len` bytes of zeros (rounded up to whole words, at least one), resident from the start.
    pub fn new(len: usize) -> Words {
        let words: Box<[AtomicU64]> = (0..len.div_ceil(8).max(1))
            .map(|_| AtomicU64::new(0))
            .collect();
        // The allocator hands out zeroed pages the kernel maps on first touch; touch every page
        // now, as registering memory with an RDMA NIC pins it, so the first write a peer makes
        // does not pay a page fault per 4 KiB on the data path (a fresh 16 MiB receive buffer
        // took 3x as long to fill as a warm one).
        for word in words.iter().step_by(PAGE / 8) {
            word.store(0, Ordering::Relaxed);
        }
        Words { words }
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
        store_words(&self.words, offset, data);
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
        load_words(&self.words, offset, out);
    }

    /// The aligned word at `offset`.
    pub fn word(&self, offset: usize) -> &AtomicU64 {
        &self.words[offset / 8]
    }
}

/// Buffers that bytes copied out of a region ([`crate::Nic::read_data`]) travel in, taken back
/// when the last [`Bytes`] holding one is dropped. A relay that forwards a block (RDMC) copies it
/// out and posts it; with a fresh allocation per block, the allocator's pages were faulted in
/// and zeroed each time (0.4-1.3 ms per 1 MiB block in a 4-node tcp run, against 50 us for the
/// copy itself). A recycled buffer is resident and is overwritten whole, so it needs neither.
///
/// Block-sized buffers are kept by the dozen. A pool [`Recycled::with_spare`] also keeps the
/// last larger one freed (a delivered message copied out whole), so a node delivering message
/// after message reuses one resident copy: an OS process that is one node (`tcp`) holds at
/// rest what it held while it used the copy. Where many nodes share a process (`local`), each
/// would keep its own for the rest of the run, so there none is kept.
#[derive(Debug, Default)]
pub(crate) struct Recycled {
    free: Arc<Mutex<Pool>>,
}

/// Free buffers: block-sized ones, and one larger spare if the pool keeps one.
#[derive(Debug, Default)]
struct Pool {
    small: Vec<Vec<u8>>,
    large: Option<Vec<u8>>,
    keeps_large: bool,
}

/// Block-sized buffers kept for reuse at most: a few blocks in flight per peer.
const KEPT: usize = 16;

/// The largest block-sized buffer; a larger one is the pool's one spare.
const KEPT_BYTES: usize = 4 << 20;

impl Recycled {
    /// A pool that also keeps one message-sized spare.
    pub(crate) fn with_spare() -> Recycled {
        let pool = Pool {
            keeps_large: true,
            ..Pool::default()
        };
        Recycled {
            free: Arc::new(Mutex::new(pool)),
        }
    }

    /// Bytes `[offset, offset + len)` of `words`, in a recycled buffer when one is free.
    pub(crate) fn copy_out(&self, words: &Words, offset: usize, len: usize) -> Bytes {
        let mut buf = {
            let mut free = self.free.lock().expect("recycled buffers lock");
            if len > KEPT_BYTES {
                free.large.take()
            } else {
                free.small.pop()
            }
        }
        .unwrap_or_default();
        // Shrinking keeps the old bytes and growing zeroes only the new tail: every byte is
        // overwritten by the read next.
        buf.resize(len, 0);
        words.read(offset, &mut buf);
        Bytes::from_owner(Lent {
            buf,
            home: self.free.clone(),
        })
    }
}

/// A recycled buffer on loan to a [`Bytes`]: back to its pool when dropped.
struct Lent {
    buf: Vec<u8>,
    home: Arc<Mutex<Pool>>,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        let mut free = self.home.lock().expect("recycled buffers lock");
        if buf.len() > KEPT_BYTES {
            if free.keeps_large {
                free.large = Some(buf);
            }
        } else if free.small.len() < KEPT {
            free.small.push(buf);
        }
    }
}

/// The local-memory half of a [`crate::Nic`] over word-atomic memory, for every runtime whose
/// process memory is [`Words`] (`local`, `tcp`, and the verbs runtime's registered regions):
/// `check` bounds-checks an access and returns the region; the rest is written once here.
pub trait SharedMemory {
    /// The region `at` names, if `len` bytes from `at` lie inside it.
    fn check(&self, at: LocalAddr, len: usize) -> Result<&Words, OpError>;

    /// [`crate::Nic::read_local`].
    fn read_shared(&self, at: LocalAddr, buf: &mut [u8]) -> Result<(), OpError> {
        self.check(at, buf.len())?.read(at.offset, buf);
        Ok(())
    }

    /// [`crate::Nic::write_local`].
    fn write_shared(&self, at: LocalAddr, data: &[u8]) -> Result<(), OpError> {
        self.check(at, data.len())?.write(at.offset, data);
        Ok(())
    }

    /// [`crate::Nic::load_u64`].
    fn load_shared(&self, at: LocalAddr) -> Result<u64, OpError> {
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        Ok(self.check(at, 8)?.word(at.offset).load(Ordering::Acquire))
    }

    /// [`crate::Nic::store_u64`].
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

/// [`crate::Nic::read_data`] of `memory` in a buffer from `pool`.
pub(crate) fn read_data_shared(
    memory: &impl SharedMemory,
    at: LocalAddr,
    len: usize,
    pool: &Recycled,
) -> Result<Data, OpError> {
    let region = memory.check(at, len)?;
    Ok(Data::Bytes(pool.copy_out(region, at.offset, len)))
}

/// The local-memory methods of [`crate::Nic`] (`read_local`, `read_data`, `write_local`,
/// `load_u64`, `store_u64`) for a NIC that implements [`SharedMemory`] and keeps its recycled
/// buffers in a field `recycled`, written once for the runtimes over shared regions; invoked
/// inside the runtime's `impl Nic`.
macro_rules! shared_local_memory {
    () => {
        fn read_local(&self, at: $crate::LocalAddr, buf: &mut [u8]) -> Result<(), $crate::OpError> {
            self.read_shared(at, buf)
        }

        fn read_data(
            &self,
            at: $crate::LocalAddr,
            len: usize,
        ) -> Result<$crate::nic::Data, $crate::OpError> {
            $crate::runtime::shared_memory::read_data_shared(self, at, len, &self.recycled)
        }

        fn write_local(
            &mut self,
            at: $crate::LocalAddr,
            data: &[u8],
        ) -> Result<(), $crate::OpError> {
            self.write_shared(at, data)
        }

        fn load_u64(&self, at: $crate::LocalAddr) -> Result<u64, $crate::OpError> {
            self.load_shared(at)
        }

        fn store_u64(&mut self, at: $crate::LocalAddr, value: u64) -> Result<(), $crate::OpError> {
            self.store_shared(at, value)
        }
    };
}
pub(crate) use shared_local_memory;

/// Stores `data` at byte `offset` of `words`, word by word in ascending address order, the
/// partial words at the edges merged with a compare-and-swap loop so neighbouring bytes are
/// never clobbered: what [`Words::write`] does, for any memory seen as words (a NIC's DMA into
/// registered memory, as the verbs runtime's fake fabric lands it).
pub fn store_words(words: &[AtomicU64], offset: usize, data: &[u8]) {
    // The partial head word, then whole words in a tight loop (the data path of every remote
    // write on `local` and `tcp`), then the partial tail word.
    let head = ((8 - offset % 8) % 8).min(data.len());
    let (first, rest) = data.split_at(head);
    merge(words, offset, first);
    let at = (offset + head) / 8;
    let mut whole = rest.chunks_exact(8);
    for (word, bytes) in words[at..].iter().zip(&mut whole) {
        word.store(
            u64::from_le_bytes(bytes.try_into().expect("8 bytes")),
            Ordering::Release,
        );
    }
    let tail = whole.remainder();
    merge(words, offset + data.len() - tail.len(), tail);
}

/// Loads `out.len()` bytes at byte `offset` of `words`, word by word in ascending address
/// order: what [`Words::read`] does, for any memory seen as words.
pub fn load_words(words: &[AtomicU64], offset: usize, out: &mut [u8]) {
    let head = ((8 - offset % 8) % 8).min(out.len());
    let (first, rest) = out.split_at_mut(head);
    load_part(words, offset, first);
    let rest_len = rest.len();
    let at = (offset + head) / 8;
    let mut whole = rest.chunks_exact_mut(8);
    for (word, bytes) in words[at..].iter().zip(&mut whole) {
        bytes.copy_from_slice(&word.load(Ordering::Acquire).to_le_bytes());
    }
    let end = offset + head + rest_len;
    let tail = whole.into_remainder();
    load_part(words, end - tail.len(), tail);
}

/// Stores `bytes` (inside one word) at `pos`, leaving the word's other bytes as they are.
fn merge(words: &[AtomicU64], pos: usize, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let in_word = pos % 8;
    let mut word = [0u8; 8];
    word[in_word..in_word + bytes.len()].copy_from_slice(bytes);
    let bits = u64::from_le_bytes(word);
    let mask = if bytes.len() == 8 {
        u64::MAX
    } else {
        ((1u64 << (8 * bytes.len())) - 1) << (8 * in_word)
    };
    let _ = words[pos / 8].fetch_update(Ordering::Release, Ordering::Relaxed, |old| {
        Some((old & !mask) | bits)
    });
}

/// Loads the bytes of one word at `pos` into `out`.
fn load_part(words: &[AtomicU64], pos: usize, out: &mut [u8]) {
    if out.is_empty() {
        return;
    }
    let in_word = pos % 8;
    let word = words[pos / 8].load(Ordering::Acquire).to_le_bytes();
    out.copy_from_slice(&word[in_word..in_word + out.len()]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Unaligned writes touch exactly their bytes; reads, whole or at the write's offset, return them.
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
            let mut part = vec![0; data.len()];
            r.read(offset, &mut part);
            prop_assert_eq!(part, data);
        }
    }

    /// Resident bytes of the mapping holding `addr` (Linux `/proc/self/smaps`).
    #[cfg(target_os = "linux")]
    fn resident(addr: usize) -> Option<usize> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                    {
                        inside = (lo..hi).contains(&addr);
                        continue;
                    }
                }
            }
            if inside {
                if let Some(kb) = line.strip_prefix("Rss:") {
                    let kb: usize = kb.trim().trim_end_matches("kB").trim().parse().ok()?;
                    return Some(kb * 1024);
                }
            }
        }
        None
    }

    /// A region is resident as soon as it exists (as registered RDMA memory is pinned), so a
    /// peer's first write does not fault in a page per 4 KiB on the data path. Unoptimised
    /// builds happen to touch the pages while zeroing them; the check bites in optimised ones
    /// (`cargo test --release -p transport shared_memory`), where the allocation is a calloc.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_new_region_is_resident_before_anything_is_written() {
        let len = 64 << 20;
        let words = Words::new(len);
        let rss = resident(words.addr()).expect("the region's mapping is in smaps");
        assert!(
            rss >= len,
            "only {} of the region's {} MiB are resident",
            rss >> 20,
            len >> 20
        );
        let mut first = [0xFFu8; 8];
        words.read(len - 8, &mut first);
        assert_eq!(first, [0; 8], "a new region reads as zeros");
    }

    /// A copied-out buffer is reused once every `Bytes` holding it is gone, never before, and
    /// a reused buffer (larger or smaller than the copy) holds exactly the copied bytes.
    #[test]
    fn copied_out_buffers_are_reused_only_when_free() {
        let words = Words::new(64);
        let data: Vec<u8> = (0..64).collect();
        words.write(0, &data);
        let pool = Recycled::with_spare();
        let a = pool.copy_out(&words, 0, 40);
        let first = a.as_ptr();
        assert_eq!(&a[..], &data[..40]);
        drop(a);
        let b = pool.copy_out(&words, 3, 20);
        assert_eq!(b.as_ptr(), first, "a dropped buffer is reused");
        assert_eq!(&b[..], &data[3..23]);
        let held = b.slice(4..8);
        drop(b);
        let c = pool.copy_out(&words, 1, 50);
        assert_ne!(
            c.as_ptr(),
            first,
            "a buffer still held by a slice is not reused"
        );
        assert_eq!(&c[..], &data[1..51]);
        assert_eq!(&held[..], &data[7..11]);
        drop(held);
        // The freed 40-byte buffer grows (and may move) to hold 64 bytes.
        let d = pool.copy_out(&words, 0, 64);
        assert_eq!(&d[..], &data[..]);
        // A message-sized copy is kept apart, one at a time: the next one reuses it once it
        // is free, and block-sized copies never take it.
        let big = Words::new(KEPT_BYTES + 16);
        big.write(KEPT_BYTES, &[9; 16]);
        let e = pool.copy_out(&big, 0, KEPT_BYTES + 8);
        assert_eq!(&e[KEPT_BYTES..], &[9; 8]);
        let large = e.as_ptr();
        drop(e);
        let small = pool.copy_out(&big, 0, 8);
        assert_ne!(small.as_ptr(), large);
        let f = pool.copy_out(&big, 8, KEPT_BYTES + 8);
        assert_eq!(f.as_ptr(), large, "a freed large buffer is reused");
        assert_eq!(&f[KEPT_BYTES - 8..], &[9; 16]);
        let g = pool.copy_out(&big, 0, KEPT_BYTES + 16);
        assert_ne!(g.as_ptr(), large, "only when free");
        // A pool without a spare keeps none.
        let plain = Recycled::default();
        drop(plain.copy_out(&big, 0, KEPT_BYTES + 8));
        assert!(plain.free.lock().unwrap().large.is_none());
    }
}
