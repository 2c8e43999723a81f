//! Which bytes of a process's memory changed since it last looked: a hint that lets a process
//! that polls its memory skip what did not change, and [`Tracked`], the per-item version a
//! process keeps to decide what to look at again.
//!
//! RDMA gives a receiver no notice of a one-sided write, so protocols poll: a RamCast server
//! reads every client's next slot and every pending message's timestamps on every poll. On real
//! hardware that is the cost of the design. In the simulator it is the cost of the simulation:
//! most polls find nothing new, yet they rescan everything. The simulator knows exactly which
//! bytes landed, so its [`crate::Nic::take_changes`] says so; other runtimes answer
//! [`Changes::is_exact`] `false` ("anything may have changed") and the process rescans as before.
//!
//! The hint is a speed-up of the simulation, never a change of the model: a poll's modelled CPU
//! cost does not depend on it, and a process must decide exactly what it would have decided had
//! it scanned everything. The simulator can withhold the hint ([`crate::runtime::sim::SimConfig`]'s
//! `exact_changes`), so tests compare the two runs' digests event by event.

use crate::region::RegionId;
use std::ops::{Deref, DerefMut};

/// One changed byte range of a process's own region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// The region.
    pub region: RegionId,
    /// First byte.
    pub offset: usize,
    /// Bytes changed (at least one).
    pub len: usize,
}

impl Extent {
    /// The indices of the `stride`-byte cells of the region the extent touches.
    pub fn cells(&self, stride: usize) -> std::ops::RangeInclusive<usize> {
        self.offset / stride..=(self.offset + self.len - 1) / stride
    }
}

/// The changes a runtime reports: exact extents, or "anything may have changed".
#[derive(Clone, Debug, Default)]
pub struct Changes {
    exact: bool,
    extents: Vec<Extent>,
}

/// Extents a log keeps before it gives up and reports "anything may have changed" (a process
/// that never looks must not make its runtime's memory grow).
const MAX_EXTENTS: usize = 4096;

impl Changes {
    /// An exact, empty record: nothing changed yet.
    pub fn exact() -> Changes {
        Changes {
            exact: true,
            extents: Vec::new(),
        }
    }

    /// Whether the extents are all that changed; `false` means anything may have changed.
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// The changed extents, in the order they changed (meaningful only when exact).
    pub fn extents(&self) -> &[Extent] {
        &self.extents
    }

    /// Records a change of `len` bytes at `offset` of `region`.
    pub fn record(&mut self, region: RegionId, offset: usize, len: usize) {
        if !self.exact || len == 0 {
            return;
        }
        if self.extents.len() == MAX_EXTENTS {
            self.exact = false;
            self.extents = Vec::new();
            return;
        }
        self.extents.push(Extent {
            region,
            offset,
            len,
        });
    }

    /// Moves everything recorded into `into` (replacing what it held) and starts a new, exact
    /// and empty record; keeps both vectors' allocations.
    pub fn take_into(&mut self, into: &mut Changes) {
        std::mem::swap(self, into);
        self.exact = true;
        self.extents.clear();
    }

    /// Makes `self` say "anything may have changed" (what runtimes without the hint report).
    pub fn set_unknown(&mut self) {
        self.exact = false;
        self.extents.clear();
    }
}

/// A value with a version that every mutable access raises, so a scan can tell whether an item
/// may have changed since it last looked: store [`Tracked::version`] after looking, and look
/// again only if it moved. Memory changes that concern the item raise it too
/// ([`Tracked::touch`]).
#[derive(Clone, Debug, Default)]
pub struct Tracked<T> {
    value: T,
    version: u64,
}

impl<T> Tracked<T> {
    /// `value` at version 0.
    pub fn new(value: T) -> Tracked<T> {
        Tracked { value, version: 0 }
    }

    /// The current version: it differs from an earlier reading iff the value was borrowed
    /// mutably or touched since.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Raises the version without changing the value (something it depends on changed).
    pub fn touch(&mut self) {
        self.version += 1;
    }
}

impl<T> Deref for Tracked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Tracked<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.version += 1;
        &mut self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_turns_into_unknown_and_taking_restarts_it_exact() {
        let mut log = Changes::exact();
        for i in 0..MAX_EXTENTS {
            log.record(RegionId(0), i, 1);
        }
        assert!(log.is_exact() && log.extents().len() == MAX_EXTENTS);
        log.record(RegionId(0), 0, 8);
        assert!(!log.is_exact() && log.extents().is_empty());
        let mut out = Changes::exact();
        log.take_into(&mut out);
        assert!(!out.is_exact());
        assert!(log.is_exact() && log.extents().is_empty());
        log.record(RegionId(1), 16, 8);
        log.take_into(&mut out);
        assert_eq!(
            (out.is_exact(), out.extents()),
            (
                true,
                &[Extent {
                    region: RegionId(1),
                    offset: 16,
                    len: 8
                }][..]
            )
        );
    }

    #[test]
    fn cells_cover_every_byte_of_an_extent() {
        let e = Extent {
            region: RegionId(0),
            offset: 30,
            len: 5,
        };
        assert_eq!(e.cells(32), 0..=1);
        assert_eq!(e.cells(8), 3..=4);
        assert_eq!(e.cells(64), 0..=0);
    }

    #[test]
    fn every_mutable_borrow_raises_the_version_and_reads_do_not() {
        let mut t = Tracked::new(5);
        let v = t.version();
        assert_eq!(*t + 1, 6);
        assert_eq!(t.version(), v);
        *t += 1;
        assert!(t.version() > v);
        let w = t.version();
        t.touch();
        assert!(t.version() > w && *t == 6);
    }
}
