//! One queue pair's rules, kept once for every runtime: post order, what is outstanding, which
//! completions the process sees, error -> flush, reconnect -> a new epoch, and selective
//! signalling.
//!
//! An RC queue pair executes its work requests in post order and completes them in post order.
//! A remote error (a refused access) puts it in error: the failing request completes with its
//! error and every later one is flushed without effect until the process reconnects, which
//! starts a new epoch; a failure answered to a request of an older epoch is old news and does not
//! put the new epoch back in error. [`QpState`] is that rule, and every runtime keeps one per
//! queue pair: the simulator and `local` check it when an op lands, `tcp` and `verbs` when an op
//! is posted and when its answer comes back.
//!
//! [`SendQueue`] is the initiator's bookkeeping of requests on the wire, for the runtimes that
//! have a wire (`tcp`, `verbs`): one op may take several requests ([`Piece`]s: a write larger
//! than a chunk, a write-with-immediate on verbs), only the last carries the op's signal, a
//! success retires every earlier request as done (a later completion implies the earlier ones on
//! an RC queue pair, and `tcp`'s acknowledgement rule says the same), and an op is reported once,
//! with its first failure if any piece failed. A NIC's send queue holds at most `depth` requests
//! and an unsignalled one leaves it only when a later signalled one completes, so the queue asks
//! for a hidden signal every `depth / 2` requests. A full queue never drops an op:
//! [`SendQueue::admit`] refuses and the caller keeps the op until [`SendQueue::retire`] frees room.
//!
//! Both are pure (no sockets, no device, no clock), so their tests need neither.

use crate::nic::{OpKind, Status, WrId};
use std::collections::VecDeque;

/// A queue pair's error state and epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpState {
    epoch: u64,
    error: bool,
}

impl QpState {
    /// Reconnects so far: ops are stamped with the epoch they were posted in.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether the queue pair is in error (its ops are flushed until a reconnect).
    pub fn in_error(&self) -> bool {
        self.error
    }

    /// An op posted now: the epoch to stamp it with, or `Flushed` if the queue pair is in error.
    pub fn admit(&self) -> Result<u64, Status> {
        if self.error {
            Err(Status::Flushed)
        } else {
            Ok(self.epoch)
        }
    }

    /// Whether an op stamped `epoch` takes effect when it reaches the front, or is flushed (the
    /// queue pair went to error, or was reconnected, since it was posted).
    pub fn executes(&self, epoch: u64) -> bool {
        !self.error && epoch == self.epoch
    }

    /// An op stamped `epoch` ended with `status`. A remote error (`AccessDenied`, or `Flushed`
    /// answered by a target whose end is in error) of the current epoch puts the queue pair in
    /// error; one of an older epoch was answered to a queue pair since re-made. An unreachable
    /// peer does not: the model reports every later op to it `PeerUnreachable`, not flushed.
    pub fn failed(&mut self, epoch: u64, status: Status) {
        let remote = matches!(status, Status::AccessDenied | Status::Flushed);
        if remote && epoch == self.epoch {
            self.error = true;
        }
    }

    /// The process reconnected: a new epoch, out of error.
    pub fn reconnect(&mut self) {
        self.epoch += 1;
        self.error = false;
    }
}

/// One request on the wire: a piece of an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece<T> {
    /// The op it belongs to.
    pub op: WrId,
    /// The op's kind (an error answer does not say).
    pub kind: OpKind,
    /// The op's last piece: its success is the op's.
    pub last: bool,
    /// The process asked for a completion on success.
    pub wants: bool,
    /// The queue pair's epoch when it was admitted.
    pub epoch: u64,
    /// What the runtime keeps with the request until it retires (where a read's bytes go,
    /// staging bytes it holds).
    pub tag: T,
}

impl<T: Default> Piece<T> {
    /// The only piece of op `op`, with a default tag.
    pub fn whole(op: WrId, kind: OpKind, wants: bool) -> Piece<T> {
        Piece {
            op,
            kind,
            last: true,
            wants,
            epoch: 0,
            tag: T::default(),
        }
    }
}

/// A queue pair's state and the requests it has on the wire.
#[derive(Clone, Debug)]
pub struct SendQueue<T> {
    state: QpState,
    depth: usize,
    every: usize,
    since_signal: usize,
    /// `since_signal` before the last admission, for [`SendQueue::unadmit_last`].
    before_admit: usize,
    /// Wire ids are consecutive: the first entry's is `base`.
    base: u64,
    entries: VecDeque<Piece<T>>,
    /// The last op reported as failed (its later pieces are not reported again).
    failed: Option<WrId>,
}

impl<T: Copy> SendQueue<T> {
    /// A send queue of `depth` requests (at least 2), with a hidden signal every `depth / 2`.
    pub fn new(depth: usize) -> SendQueue<T> {
        let depth = depth.max(2);
        SendQueue {
            state: QpState::default(),
            depth,
            every: depth / 2,
            since_signal: 0,
            before_admit: 0,
            base: 0,
            entries: VecDeque::new(),
            failed: None,
        }
    }

    /// A send queue bounded by the caller (in bytes, say) rather than by a count of requests;
    /// it never asks for a hidden signal.
    pub fn unbounded() -> SendQueue<T> {
        SendQueue::new(usize::MAX)
    }

    /// The queue pair's error state and epoch.
    pub fn state(&self) -> QpState {
        self.state
    }

    /// The process reconnected: a new epoch, out of error. Requests still outstanding stay
    /// (their answers come, flushed or not), and their failures no longer put the queue pair in
    /// error.
    pub fn reconnect(&mut self) {
        self.state.reconnect();
    }

    /// Requests admitted and not yet retired.
    pub fn outstanding(&self) -> usize {
        self.entries.len()
    }

    /// The wire id the next admitted request gets.
    pub fn next_id(&self) -> u64 {
        self.base + self.entries.len() as u64
    }

    /// Whether wire id `id` is outstanding (an answer for anything else is from before a reset,
    /// or not this queue's).
    pub fn holds(&self, id: u64) -> bool {
        id >= self.base && id < self.next_id()
    }

    /// Takes back the request just admitted, which never reached the wire (the device refused
    /// its post): the queue is as before that `admit`.
    pub fn unadmit_last(&mut self) {
        if self.entries.pop_back().is_some() {
            self.since_signal = self.before_admit;
        }
    }

    /// The outstanding request with wire id `id`.
    pub fn get(&self, id: u64) -> Option<&Piece<T>> {
        id.checked_sub(self.base)
            .and_then(|k| self.entries.get(usize::try_from(k).ok()?))
    }

    /// The outstanding requests, oldest first, with their wire ids.
    pub fn pending(&self) -> impl Iterator<Item = (u64, &Piece<T>)> {
        (self.base..).zip(self.entries.iter())
    }

    /// Whether `pieces` more requests fit.
    pub fn has_room(&self, pieces: usize) -> bool {
        self.entries.len().saturating_add(pieces) <= self.depth
    }

    /// Takes one request, stamped with the current epoch. Returns its wire id and whether to
    /// signal it on the wire, or `None` if the queue is full.
    pub fn admit(&mut self, piece: Piece<T>) -> Option<(u64, bool)> {
        self.admit_signalled(piece, false)
    }

    /// [`SendQueue::admit`], signalled on the wire whatever the count says when `force`: the
    /// runtime needs its completion to free something the queue does not count (the staging
    /// bytes it holds). The process is told of it only as `admit` would.
    pub fn admit_signalled(&mut self, piece: Piece<T>, force: bool) -> Option<(u64, bool)> {
        if self.entries.len() == self.depth {
            return None;
        }
        self.before_admit = self.since_signal;
        self.since_signal += 1;
        let signal = force || (piece.last && piece.wants) || self.since_signal >= self.every;
        if signal {
            self.since_signal = 0;
        }
        let id = self.next_id();
        self.entries.push_back(Piece {
            epoch: self.state.epoch,
            ..piece
        });
        Some((id, signal))
    }

    /// The answer for wire id `id` came back with `status`. A success retires every request up
    /// to it as done; an error retires the earlier ones as done and it as failed (and puts the
    /// queue pair in error if it was of the current epoch). `retired` sees each retired request
    /// in order, with its status and whether the process is told: every last piece it asked
    /// about, and each failed op once. An answer for a request already retired (none should
    /// come) retires nothing.
    pub fn retire(&mut self, id: u64, status: Status, mut retired: impl FnMut(Retired<T>)) {
        if !self.holds(id) {
            return;
        }
        for _ in self.base..=id {
            let piece = self
                .entries
                .pop_front()
                .expect("within the outstanding range");
            let s = if self.base == id {
                status
            } else {
                Status::Success
            };
            self.base += 1;
            let report = if s == Status::Success {
                piece.last && piece.wants && self.failed != Some(piece.op)
            } else {
                self.state.failed(piece.epoch, s);
                let first = self.failed != Some(piece.op);
                self.failed = Some(piece.op);
                first
            };
            retired(Retired {
                id: self.base - 1,
                piece,
                status: s,
                report,
            });
        }
    }

    /// Fails every outstanding request with `status` (the connection or queue pair was torn
    /// down: nothing more will be answered), reporting each op once.
    pub fn fail_all(&mut self, status: Status, mut retired: impl FnMut(Retired<T>)) {
        while self.outstanding() > 0 {
            self.retire(self.base, status, &mut retired);
        }
    }
}

/// A request leaving the send queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retired<T> {
    /// Its wire id.
    pub id: u64,
    /// The request.
    pub piece: Piece<T>,
    /// How it ended.
    pub status: Status,
    /// Whether the process sees a completion for it (with `piece.op`, `piece.kind`, `status`).
    pub report: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn piece(op: u64, last: bool, wants: bool) -> Piece<u32> {
        Piece {
            last,
            ..Piece::whole(WrId(op), OpKind::Write, wants)
        }
    }

    /// The reports of one retirement, as (op, status).
    fn retire(q: &mut SendQueue<u32>, id: u64, status: Status) -> Vec<(u64, Status)> {
        let mut out = Vec::new();
        q.retire(id, status, |r| {
            if r.report {
                out.push((r.piece.op.0, r.status));
            }
        });
        out
    }

    fn fail_all(q: &mut SendQueue<u32>, status: Status) -> Vec<(u64, Status)> {
        let mut out = Vec::new();
        q.fail_all(status, |r| {
            if r.report {
                out.push((r.piece.op.0, r.status));
            }
        });
        out
    }

    #[test]
    fn an_error_flushes_the_queue_pair_until_a_reconnect() {
        let mut s = QpState::default();
        let before = s.admit().unwrap();
        s.failed(before, Status::AccessDenied);
        assert_eq!(
            s.admit(),
            Err(Status::Flushed),
            "posts after the error flush"
        );
        assert!(!s.executes(before), "queued ops flush too");
        s.reconnect();
        let after = s.admit().unwrap();
        assert!(s.executes(after));
        assert!(!s.executes(before), "an op of the old epoch still flushes");
        // The old epoch's flushed answers come back: not a new error.
        s.failed(before, Status::Flushed);
        assert!(!s.in_error());
        s.failed(after, Status::Success);
        s.failed(after, Status::PeerUnreachable);
        assert!(
            !s.in_error(),
            "neither a success nor an unreachable peer is a remote error"
        );
    }

    #[test]
    fn unsignalled_ops_are_signalled_every_half_queue() {
        let mut q = SendQueue::new(8);
        let signals: Vec<bool> = (0..12)
            .map_while(|i| q.admit(piece(i, true, false)).map(|(_, s)| s))
            .collect();
        assert_eq!(signals.len(), 8, "the queue holds 8");
        assert_eq!(
            signals,
            vec![false, false, false, true, false, false, false, true]
        );
        assert_eq!(
            q.admit(piece(99, true, false)),
            None,
            "full: the caller keeps it"
        );
        // The hidden completion of the 4th retires four and reports none.
        assert!(retire(&mut q, 3, Status::Success).is_empty());
        assert_eq!(q.outstanding(), 4);
        assert!(q.admit(piece(8, true, false)).is_some());
    }

    #[test]
    fn the_process_sees_its_signalled_ops_and_every_failure() {
        let mut q = SendQueue::new(16);
        for i in 0..6 {
            q.admit(piece(i, true, i == 1)).unwrap();
        }
        assert_eq!(
            retire(&mut q, 1, Status::Success),
            vec![(1, Status::Success)]
        );
        // WrId(3) refused, the rest flushed: every one reported, none as success.
        assert_eq!(
            retire(&mut q, 3, Status::AccessDenied),
            vec![(3, Status::AccessDenied)]
        );
        assert!(
            q.state().in_error(),
            "a remote error puts the queue pair in error"
        );
        assert_eq!(
            fail_all(&mut q, Status::Flushed),
            vec![(4, Status::Flushed), (5, Status::Flushed)]
        );
        assert_eq!(q.outstanding(), 0);
    }

    #[test]
    fn an_op_in_pieces_is_reported_once() {
        let mut q = SendQueue::new(16);
        // Three pieces of a signalled write, then a one-piece write.
        let ids: Vec<(u64, bool)> = [false, false, true]
            .iter()
            .map(|&last| q.admit(piece(7, last, true)).unwrap())
            .collect();
        assert_eq!(
            ids.iter().map(|x| x.1).collect::<Vec<_>>(),
            vec![false, false, true]
        );
        q.admit(piece(8, true, true)).unwrap();
        // The first piece fails: the op is reported failed once, its later pieces are not.
        assert_eq!(retire(&mut q, ids[0].0, Status::PeerUnreachable).len(), 1);
        assert_eq!(
            fail_all(&mut q, Status::PeerUnreachable),
            vec![(8, Status::PeerUnreachable)]
        );
    }

    #[test]
    fn answers_for_retired_requests_are_ignored() {
        let mut q = SendQueue::new(4);
        q.admit(piece(1, true, true)).unwrap();
        assert!(q.holds(0) && !q.holds(1));
        assert_eq!(q.get(0).map(|p| p.op), Some(WrId(1)));
        assert_eq!(retire(&mut q, 0, Status::Success).len(), 1);
        assert!(!q.holds(0) && q.get(0).is_none());
        assert!(retire(&mut q, 0, Status::Success).is_empty());
        assert!(retire(&mut q, 57, Status::Flushed).is_empty());
    }

    #[test]
    fn a_failure_answered_after_a_reconnect_leaves_the_new_epoch_alone() {
        let mut q: SendQueue<u32> = SendQueue::unbounded();
        q.admit(piece(1, true, true)).unwrap();
        q.admit(piece(2, true, true)).unwrap();
        q.reconnect();
        q.admit(piece(3, true, true)).unwrap();
        assert_eq!(q.get(2).map(|p| p.epoch), Some(1), "stamped at admission");
        // The old epoch's requests come back refused and flushed.
        assert_eq!(
            retire(&mut q, 1, Status::AccessDenied),
            vec![(1, Status::Success), (2, Status::AccessDenied)]
        );
        assert!(!q.state().in_error(), "old news for the re-made queue pair");
        assert_eq!(
            retire(&mut q, 2, Status::Success),
            vec![(3, Status::Success)]
        );
    }

    proptest! {
        /// Whatever the mix, every op the process asked about or that failed is reported once,
        /// in post order, and the queue never holds more than its depth.
        #[test]
        fn each_op_is_reported_at_most_once_and_in_order(
            ops in proptest::collection::vec((1usize..4, any::<bool>()), 1..60),
            fail_at in proptest::option::of(0usize..200),
        ) {
            let mut q = SendQueue::new(32);
            let mut reports = Vec::new();
            let mut posted = Vec::new();
            let mut wire = 0u64;
            for (i, &(pieces, wants)) in ops.iter().enumerate() {
                while !q.has_room(pieces) {
                    // Answer the oldest outstanding request, as the NIC would.
                    let status = if Some(wire as usize) == fail_at { Status::AccessDenied } else { Status::Success };
                    reports.extend(retire(&mut q, wire, status));
                    wire += 1;
                }
                for k in 0..pieces {
                    q.admit(piece(i as u64, k + 1 == pieces, wants)).unwrap();
                }
                posted.push(wants);
                prop_assert!(q.outstanding() <= 32);
            }
            reports.extend(fail_all(&mut q, Status::Flushed));
            let ids: Vec<u64> = reports.iter().map(|r| r.0).collect();
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "reported twice or out of order");
            for &(op, status) in &reports {
                if status == Status::Success {
                    prop_assert!(posted[op as usize], "a success nobody asked for");
                }
            }
        }
    }
}
