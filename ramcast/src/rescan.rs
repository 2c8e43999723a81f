//! Which slots a poll must look at again: the runtime's change hint
//! ([`transport::changes`]) mapped onto RamCast's slots. A simulation speed-up, not part of
//! the algorithm.
//!
//! Three scans read memory on every poll: `poll_buffers` (every client's next slot of `M`),
//! `poll_pending` (the `T` entries and acknowledgements of every pending slot) and
//! `sweep_delivered` (the own group's `T` entry of delivered slots). What each does for one
//! slot depends only on the slot's memory (its stride of `M`, message and acknowledgements,
//! and its `T` entries), the slot's state, and a few fields of the server (the role, its
//! round, every group's round and leader); run again with none of these changed, it does
//! nothing. So each scan keeps, per slot, the [`Mark`] it last looked at and skips the slot
//! while the mark is unchanged:
//! - the slot's version ([`transport::Tracked`]) rises on every mutable borrow of the slot and
//!   on every change the NIC reports in the slot's `M` stride or `T` entries;
//! - the epoch rises when the NIC cannot say what changed (every poll outside the simulator,
//!   so there everything is looked at, as before) and when the role, round, rounds or leaders
//!   changed.
//!
//! A skipped slot is one whose scan would have read the same words and decided nothing: the
//! run is the same event for event. Tests run seeds with and without the hint
//! (`exact_changes`) and compare the simulator's digests.

use crate::layout::{M, T, T_ENTRY};
use crate::server::{RamcastServer, Role};
use crate::stamp::Stamp;
use std::mem::Discriminant;
use transport::{Changes, Nic, ProcessId};

/// A slot as a scan last saw it: the slot's version and the server's epoch.
pub(crate) type Mark = (u64, u64);

/// What a scan never saw (a slot's version and the epoch start at 0, so no real mark is this).
pub(crate) const UNSEEN: Mark = (u64::MAX, u64::MAX);

/// What the scans of one slot last saw.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen {
    /// `poll_pending` (Tasks 3-5).
    pub(crate) pending: Mark,
    /// `sweep_delivered`.
    pub(crate) sweep: Mark,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            pending: UNSEEN,
            sweep: UNSEEN,
        }
    }
}

/// The server's side of the hint: the last changes taken from the NIC, the epoch, and the
/// fields whose change raises it.
#[derive(Debug)]
pub(crate) struct Rescan {
    changes: Changes,
    epoch: u64,
    /// Whether `poll_buffers` may find something it did not see last time: a message slot of
    /// `M` changed, the epoch rose, or a slot was filled (`accept`) since its last pass.
    pub(crate) buffers: bool,
    /// `poll_pending`'s list of slots to look at (kept for its allocation).
    pub(crate) due: Vec<(Stamp, u32, u64)>,
    role: Option<Discriminant<Role>>,
    round: Stamp,
    rounds: Vec<Stamp>,
    leader: Vec<ProcessId>,
}

impl Rescan {
    pub(crate) fn new() -> Rescan {
        Rescan {
            changes: Changes::exact(),
            epoch: 0,
            buffers: true,
            due: Vec::new(),
            role: None,
            round: Stamp::ZERO,
            rounds: Vec::new(),
            leader: Vec::new(),
        }
    }
}

impl RamcastServer {
    /// Takes what changed in memory since the last call and raises the versions of the slots
    /// it touched, or the epoch. Called before each scan.
    pub(crate) fn observe_changes<N: Nic>(&mut self, nic: &mut N) {
        let mut changes = std::mem::take(&mut self.rescan.changes);
        nic.take_changes(&mut changes);
        if !changes.is_exact() {
            self.rescan.epoch += 1;
            self.rescan.buffers = true;
        } else {
            let slots = self.cfg.slots;
            let t_stride = self.cfg.groups * T_ENTRY;
            for e in changes.extents() {
                let cells = match e.region {
                    M => {
                        // Acknowledgements land in the stride too, after the message slot;
                        // only a write into a message slot can give `poll_buffers` an entry.
                        let stride = self.layout.m_stride();
                        let into_slot = e.offset % stride < self.cfg.slot_bytes
                            || e.len > stride - e.offset % stride;
                        self.rescan.buffers |= into_slot;
                        e.cells(stride)
                    }
                    T => e.cells(t_stride),
                    _ => continue,
                };
                for cell in cells {
                    self.buffers[cell / slots].slots[cell % slots].touch();
                }
            }
        }
        self.rescan.changes = changes;
        let r = &mut self.rescan;
        let role = Some(std::mem::discriminant(&self.role));
        if r.role != role
            || r.round != self.round
            || r.rounds != self.rounds
            || r.leader != self.leader
        {
            r.role = role;
            r.round = self.round;
            r.rounds.clone_from(&self.rounds);
            r.leader.clone_from(&self.leader);
            r.epoch += 1;
            r.buffers = true;
        }
    }

    /// Client `c`'s slot at index `i` as a scan sees it now.
    pub(crate) fn mark(&self, c: u32, i: usize) -> Mark {
        (
            self.buffers[c as usize].slots[i].version(),
            self.rescan.epoch,
        )
    }
}
