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
//! `poll_buffers` goes further and looks only at the clients whose buffers are dirty (one of
//! their message slots changed, a slot was filled, or the epoch rose), from a list of them
//! rather than by testing every client's flag: a Heron run has a thousand clients.
//!
//! Task 6's `unread_bound` reads the own group's `T` entry of every client's next unread slot
//! on every delivery pass, and for almost every client finds it empty. Where the NIC reports
//! exact changes, an entry found empty is remembered ([`Seen::t_empty`]) until a `T` entry of
//! the slot is written or the epoch rises, and not decoded again meanwhile.
//!
//! A skipped slot is one whose scan would have read the same words and decided nothing: the
//! run is the same event for event. Debug builds look at the clients `poll_buffers` would skip
//! and assert that they give nothing, and re-read every entry remembered empty. Tests run seeds
//! with and without the hint (`exact_changes`) and compare the simulator's digests.

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
    /// `refresh_ts`: bit `h` set when group `h`'s `T` entry may hold what it has not read
    /// (groups from 64 on are always read), valid in epoch `t_epoch` (in another epoch every
    /// entry counts as unread).
    t_unread: u64,
    t_epoch: u64,
    /// `unread_bound`: the sequence number and epoch for which it found the own group's `T`
    /// entry empty; void once any `T` entry of the slot changes ([`Seen::t_changed`]).
    t_empty: Option<(u64, u64)>,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            pending: UNSEEN,
            sweep: UNSEEN,
            t_unread: u64::MAX,
            t_epoch: u64::MAX,
            t_empty: None,
        }
    }
}

impl Seen {
    /// Whether group `h`'s `T` entry may hold what `refresh_ts` has not read, in `epoch`.
    pub(crate) fn t_unread(&self, h: usize, epoch: u64) -> bool {
        self.t_epoch != epoch || h >= 64 || self.t_unread & (1 << h) != 0
    }

    /// Records that `refresh_ts` read group `h`'s `T` entry in `epoch`.
    pub(crate) fn t_read(&mut self, h: usize, epoch: u64) {
        if self.t_epoch != epoch {
            self.t_epoch = epoch;
            self.t_unread = u64::MAX;
        }
        if h < 64 {
            self.t_unread &= !(1 << h);
        }
    }

    /// Whether `unread_bound` found the own group's `T` entry of sequence number `s` empty in
    /// `epoch`, and no `T` entry of the slot changed since.
    pub(crate) fn t_empty(&self, s: u64, epoch: u64) -> bool {
        self.t_empty == Some((s, epoch))
    }

    /// Records that `unread_bound` found the own group's `T` entry of sequence number `s` empty
    /// in `epoch`.
    pub(crate) fn t_found_empty(&mut self, s: u64, epoch: u64) {
        self.t_empty = Some((s, epoch));
    }

    /// Marks group `h`'s `T` entry as changed (every group's with `None`).
    pub(crate) fn t_changed(&mut self, h: Option<usize>) {
        self.t_empty = None;
        match h {
            Some(h) if h < 64 => self.t_unread |= 1 << h,
            Some(_) => {}
            None => self.t_unread = u64::MAX,
        }
    }
}

/// The server's side of the hint: the last changes taken from the NIC, the epoch, and the
/// fields whose change raises it.
#[derive(Debug)]
pub(crate) struct Rescan {
    changes: Changes,
    epoch: u64,
    /// Per client, whether `poll_buffers` may find something in its buffer it did not see
    /// last time: one of its message slots of `M` changed, the epoch rose, or one of its slots
    /// was filled (`accept`) since its last pass.
    dirty: Vec<bool>,
    /// The dirty clients, in the order they became dirty: `poll_buffers` visits these alone
    /// instead of testing every client's flag (a Heron run has a thousand clients).
    marked: Vec<u32>,
    /// `poll_pending`'s list of slots to look at (kept for its allocation).
    pub(crate) due: Vec<(Stamp, u32, u64)>,
    /// (Debug builds) the role, round, rounds and leaders as the last scan saw them, and the
    /// epoch then: see [`Rescan::new_view`].
    role: Option<Discriminant<Role>>,
    round: Stamp,
    rounds: Vec<Stamp>,
    leader: Vec<ProcessId>,
    view_epoch: u64,
}

impl Rescan {
    pub(crate) fn new(clients: usize) -> Rescan {
        Rescan {
            changes: Changes::exact(),
            epoch: 0,
            dirty: vec![true; clients],
            marked: (0..clients as u32).collect(),
            due: Vec::new(),
            role: None,
            round: Stamp::ZERO,
            rounds: Vec::new(),
            leader: Vec::new(),
            view_epoch: u64::MAX,
        }
    }
}

impl Rescan {
    /// Marks every client's buffer for `poll_buffers` to look at.
    fn all_dirty(&mut self) {
        for c in 0..self.dirty.len() as u32 {
            self.dirty(c);
        }
    }

    /// The epoch: it rises whenever the NIC cannot say what changed and whenever the role,
    /// round, rounds or leaders changed.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether the NIC said exactly what changed when last asked (only the simulator does;
    /// elsewhere memory may change at any time, even mid-poll).
    pub(crate) fn exact(&self) -> bool {
        self.changes.is_exact()
    }

    /// Starts a new epoch: called whenever the role, the round, or a group's round or leader
    /// changed, since what every scan decides depends on them. (Debug builds compare them at
    /// every scan and check that no change went without this.)
    pub(crate) fn new_view(&mut self) {
        self.epoch += 1;
        self.all_dirty();
    }

    /// Marks client `c`'s buffer for `poll_buffers` to look at.
    pub(crate) fn dirty(&mut self, c: u32) {
        if !std::mem::replace(&mut self.dirty[c as usize], true) {
            self.marked.push(c);
        }
    }

    /// Whether any client is dirty.
    pub(crate) fn any_dirty(&self) -> bool {
        !self.marked.is_empty()
    }

    /// The dirty clients in ascending order (the order `poll_buffers` visits clients in), no
    /// longer marked dirty.
    pub(crate) fn take_dirty(&mut self) -> Vec<u32> {
        let mut clients = std::mem::take(&mut self.marked);
        clients.sort_unstable();
        for &c in &clients {
            self.dirty[c as usize] = false;
        }
        clients
    }

    /// Hands back the list [`Rescan::take_dirty`] returned, for its allocation.
    pub(crate) fn recycle_dirty(&mut self, mut clients: Vec<u32>) {
        if self.marked.is_empty() {
            clients.clear();
            self.marked = clients;
        }
    }
}

impl RamcastServer {
    /// Takes what changed in memory since the last call and raises the versions of the slots
    /// it touched, or the epoch. Called before each scan.
    pub(crate) fn observe_changes<N: Nic>(&mut self, nic: &mut N) {
        nic.take_changes(&mut self.rescan.changes);
        // Most polls find nothing new, and call this four times.
        let r = &self.rescan.changes;
        if r.is_exact() && r.extents().is_empty() && !cfg!(debug_assertions) {
            return;
        }
        self.apply_changes();
    }

    /// [`Self::observe_changes`] for what it took.
    fn apply_changes(&mut self) {
        let changes = std::mem::take(&mut self.rescan.changes);
        if !changes.is_exact() {
            self.rescan.epoch += 1;
            self.rescan.all_dirty();
        } else {
            let slots = self.cfg.slots;
            let t_stride = self.cfg.groups * T_ENTRY;
            for e in changes.extents() {
                // Whether the extent makes its clients dirty for `poll_buffers`.
                let (cells, into_slot) = match e.region {
                    M => {
                        // Acknowledgements land in the stride too, after the message slot;
                        // only a write into a message slot can give `poll_buffers` an entry.
                        let stride = self.layout.m_stride();
                        let into_slot = e.offset % stride < self.cfg.slot_bytes
                            || e.len > stride - e.offset % stride;
                        (e.cells(stride), into_slot)
                    }
                    T => {
                        self.t_written(e.offset, e.len);
                        (e.cells(t_stride), false)
                    }
                    _ => continue,
                };
                for cell in cells {
                    self.buffers[cell / slots].slots[cell % slots].touch();
                    if into_slot {
                        self.rescan.dirty((cell / slots) as u32);
                    }
                }
            }
        }
        self.rescan.changes = changes;
        if cfg!(debug_assertions) {
            let r = &mut self.rescan;
            let role = Some(std::mem::discriminant(&self.role));
            if r.role != role
                || r.round != self.round
                || r.rounds != self.rounds
                || r.leader != self.leader
            {
                assert!(
                    r.view_epoch != r.epoch,
                    "{}: the role, round, rounds or leaders changed without a new epoch",
                    self.me
                );
                r.role = role;
                r.round = self.round;
                r.rounds.clone_from(&self.rounds);
                r.leader.clone_from(&self.leader);
                r.view_epoch = r.epoch;
            }
        }
    }

    /// Marks the `T` entries that `len` bytes at `offset` of `T` cover as changed, for
    /// `refresh_ts`. Called for the extents the NIC reports and for this server's own writes
    /// into `T`, which it makes in the middle of a poll.
    pub(crate) fn t_written(&mut self, offset: usize, len: usize) {
        let (slots, groups) = (self.cfg.slots, self.cfg.groups);
        for k in offset / T_ENTRY..(offset + len).div_ceil(T_ENTRY) {
            let (cell, h) = (k / groups, k % groups);
            self.buffers[cell / slots].seen[cell % slots].t_changed(Some(h));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `poll_buffers` visits the dirty clients in ascending order, each once, and a client
    /// marked again while it is visited waits for the next pass.
    #[test]
    fn dirty_clients_come_out_sorted_once_and_cleared() {
        let mut r = Rescan::new(6);
        assert_eq!(
            r.take_dirty(),
            vec![0, 1, 2, 3, 4, 5],
            "all dirty at the start"
        );
        assert!(!r.any_dirty());
        assert!(r.take_dirty().is_empty());
        for c in [4, 1, 4, 3, 1] {
            r.dirty(c);
        }
        assert!(r.any_dirty());
        let taken = r.take_dirty();
        assert_eq!(taken, vec![1, 3, 4]);
        r.dirty(3); // marked again mid-pass
        r.recycle_dirty(taken);
        assert_eq!(r.take_dirty(), vec![3]);
        r.dirty(5);
        r.new_view();
        assert_eq!(
            r.take_dirty(),
            vec![0, 1, 2, 3, 4, 5],
            "a new view marks everyone"
        );
    }

    /// An empty `T` entry stays known empty only for its sequence number and epoch, and until a
    /// `T` entry of the slot changes.
    #[test]
    fn an_entry_found_empty_is_forgotten_when_the_slot_changes() {
        let mut seen = Seen::default();
        assert!(!seen.t_empty(7, 0));
        seen.t_found_empty(7, 0);
        assert!(seen.t_empty(7, 0));
        assert!(!seen.t_empty(23, 0), "another lap of the slot");
        assert!(!seen.t_empty(7, 1), "another epoch");
        seen.t_changed(Some(2));
        assert!(!seen.t_empty(7, 0), "a write into the slot's T entries");
        seen.t_found_empty(7, 0);
        seen.t_changed(None);
        assert!(!seen.t_empty(7, 0));
    }
}
