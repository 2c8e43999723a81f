//! Memory registrations and landing: the only `unsafe` of the fake.
//!
//! A registration keeps the raw address and length of the [`Words`] it covers, as a NIC keeps
//! the DMA mapping of pinned pages. Bytes reach that memory through a view of `&[AtomicU64]`
//! created for one operation, only through an [`MrS`] borrowed from the fabric's world, that
//! is, only while the fabric lock is held.
//!
//! The contract, stated once (it is the one DMA relies on, and [`crate::provider::Context::reg_mr`]
//! states it to the caller): the registrant keeps the memory alive and in place until the
//! registration is dropped, and dropping a registration takes the fabric lock and removes its
//! entry. So while the lock is held, every `MrS` in the world names live memory.

use crate::access::Rights;
use std::sync::atomic::{AtomicU64, Ordering};
use transport::runtime::shared_memory::{load_words, store_words, Words};

/// One live registration.
#[derive(Debug)]
pub(super) struct MrS {
    /// The device instance (and protection domain) it belongs to.
    pub(super) pd: usize,
    /// The address of its first byte (8-aligned: the first word of a `Words`).
    addr: usize,
    /// Bytes covered (whole words).
    len: usize,
    /// Remote rights (local write is always granted, as `reg_mr` promises).
    pub(super) remote: Rights,
}

impl MrS {
    /// The registration of all of `mem`. The caller must keep `mem` alive and in place until
    /// the entry leaves the world (see the module docs).
    pub(super) fn of(mem: &Words, pd: usize, remote: Rights) -> MrS {
        MrS {
            pd,
            addr: mem.addr(),
            len: mem.capacity(),
            remote,
        }
    }

    /// Bytes covered.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The offset of `[addr, addr + len)` inside the registration, if it lies inside.
    pub(super) fn offset_of(&self, addr: u64, len: u64) -> Option<usize> {
        let start = addr.checked_sub(self.addr as u64)?;
        (start.checked_add(len)? <= self.len as u64).then_some(start as usize)
    }

    /// Runs `f` on the registered memory as words.
    fn with_words<R>(&self, f: impl FnOnce(&[AtomicU64]) -> R) -> R {
        debug_assert_eq!(self.addr % 8, 0, "a Words starts on a word");
        // SAFETY: `self` lives in the fabric's world, and the caller holds the world (the only
        // way to reach an `MrS`), so the lock is held. While it is held the registration is
        // live, and the registrant keeps the memory of a live registration allocated and in
        // place (the `reg_mr` contract), so `addr..addr+len` is `len / 8` initialised
        // `AtomicU64`s. The view is shared (atomics only) and does not outlive `f`, which runs
        // under the lock.
        let words =
            unsafe { std::slice::from_raw_parts(self.addr as *const AtomicU64, self.len / 8) };
        f(words)
    }

    /// Stores `data` at `offset`, word by word in ascending order, merging partial words at
    /// the edges so neighbouring bytes are kept (`Words::write`'s own walk: the owner never
    /// sees a word half written).
    pub(super) fn land(&self, offset: usize, data: &[u8]) {
        self.with_words(|words| store_words(words, offset, data))
    }

    /// Loads `out.len()` bytes at `offset`, word by word in ascending order, as a DMA read
    /// would (`Words::read`'s own walk).
    pub(super) fn fetch(&self, offset: usize, out: &mut [u8]) {
        self.with_words(|words| load_words(words, offset, out))
    }

    /// Runs an atomic on the aligned word at `offset`: `compare_exchange(expect, swap)` when
    /// `swap` is given, else `fetch_add(add)`. Returns the old value.
    pub(super) fn atomic(&self, offset: usize, op: AtomicOp) -> u64 {
        self.with_words(|words| {
            let word = &words[offset / 8];
            match op {
                AtomicOp::Cas { expect, swap } => word
                    .compare_exchange(expect, swap, Ordering::AcqRel, Ordering::Acquire)
                    .unwrap_or_else(|old| old),
                AtomicOp::Faa { add } => word.fetch_add(add, Ordering::AcqRel),
            }
        })
    }
}

/// An atomic a responder executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AtomicOp {
    /// Compare and swap.
    Cas { expect: u64, swap: u64 },
    /// Fetch and add.
    Faa { add: u64 },
}
