//! One queue pair's send queue as the runtime keeps it: selective signalling, which completions
//! the process sees, and backpressure when the queue is full.
//!
//! A NIC's send queue holds at most `depth` work requests, and an unsignalled request leaves it
//! only when a later signalled one on the same queue pair completes (completions come in post
//! order on an RC queue pair). So the runtime signals on the wire every `depth / 2`-th request
//! even if the process did not ask, and hides those completions; a success completion retires
//! every earlier request, which therefore succeeded too. On an error every outstanding request
//! completes, signalled or not (the failing one with its error, the rest flushed), and the
//! process sees every failure, as the model promises.
//!
//! One op of the model may take several work requests (a write larger than a staging chunk, or
//! a write-with-immediate, which is the write followed by a header message; see
//! `rdma`): they are posted back to back, only the last carries the op's signal, and the
//! op is reported once, with its first failure if any piece failed.
//!
//! A full queue never drops an op: [`SendQueue::admit`] refuses, and the caller keeps the op in
//! its backlog until [`SendQueue::retire`] frees room.

use std::collections::VecDeque;
use transport::{OpKind, Status, WrId};

/// One work request on the wire: a piece of an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The op it belongs to.
    pub op: WrId,
    /// The op's kind (an error completion does not say).
    pub kind: OpKind,
    /// The op's last piece.
    pub last: bool,
    /// The process asked for a completion on success.
    pub wants: bool,
    /// Bytes of the queue pair's staging buffer it holds until it retires.
    pub staged: usize,
    /// Where in the staging buffer its bytes are (an atomic's old value lands there).
    pub at: usize,
}

impl Piece {
    /// The only piece of op `op`, holding no staging bytes.
    pub fn whole(op: WrId, kind: OpKind, wants: bool) -> Piece {
        Piece {
            op,
            kind,
            last: true,
            wants,
            staged: 0,
            at: 0,
        }
    }
}

/// What the process learns when work requests retire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    /// The op.
    pub op: WrId,
    /// Its kind.
    pub kind: OpKind,
    /// How it ended.
    pub status: Status,
    /// Where its last piece's bytes are in the staging buffer.
    pub at: usize,
}

/// What a retirement frees and reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retired {
    /// Completions the process sees, in post order.
    pub reports: Vec<Report>,
    /// Staging bytes freed (the staging ring frees in post order, as entries retire).
    pub staged: usize,
}

/// The bookkeeping of one queue pair's send queue.
#[derive(Clone, Debug)]
pub struct SendQueue {
    depth: usize,
    every: usize,
    since_signal: usize,
    /// Wire ids are consecutive: the first entry's is `base`.
    base: u64,
    entries: VecDeque<Piece>,
    /// The last op reported as failed (its later pieces are not reported again).
    failed: Option<WrId>,
}

impl SendQueue {
    /// A send queue of `depth` work requests (at least 2).
    pub fn new(depth: usize) -> SendQueue {
        let depth = depth.max(2);
        SendQueue {
            depth,
            every: depth / 2,
            since_signal: 0,
            base: 0,
            entries: VecDeque::new(),
            failed: None,
        }
    }

    /// Work requests posted and not yet retired.
    pub fn outstanding(&self) -> usize {
        self.entries.len()
    }

    /// Whether wire id `id` is outstanding (a completion for anything else is from before a
    /// reset, or not this queue's).
    pub fn holds(&self, id: u64) -> bool {
        id >= self.base && id < self.base + self.entries.len() as u64
    }

    /// Whether `pieces` more work requests fit.
    pub fn has_room(&self, pieces: usize) -> bool {
        self.entries.len() + pieces <= self.depth
    }

    /// Takes one work request. Returns the wire id to post it with and whether to signal it
    /// on the wire, or `None` if the queue is full.
    pub fn admit(&mut self, piece: Piece) -> Option<(u64, bool)> {
        if self.entries.len() == self.depth {
            return None;
        }
        self.since_signal += 1;
        let signal = (piece.last && piece.wants) || self.since_signal >= self.every;
        if signal {
            self.since_signal = 0;
        }
        let id = self.base + self.entries.len() as u64;
        self.entries.push_back(piece);
        Some((id, signal))
    }

    /// A completion for wire id `id` with model status `status` (after
    /// [`crate::completion::map_status`]). A success retires every request up to it; an error
    /// retires the ones before it as successes and it as failed. A completion for a request
    /// already retired (none should come) is ignored.
    pub fn retire(&mut self, id: u64, status: Status) -> Retired {
        let mut out = Retired::default();
        if !self.holds(id) {
            return out;
        }
        let through = (id - self.base) as usize;
        for k in 0..=through {
            let e = self
                .entries
                .pop_front()
                .expect("within the outstanding range");
            self.base += 1;
            out.staged += e.staged;
            let s = if k == through {
                status
            } else {
                Status::Success
            };
            let report = Report {
                op: e.op,
                kind: e.kind,
                status: s,
                at: e.at,
            };
            if s == Status::Success {
                if e.last && e.wants && self.failed != Some(e.op) {
                    out.reports.push(report);
                }
            } else if self.failed != Some(e.op) {
                self.failed = Some(e.op);
                out.reports.push(report);
            }
        }
        out
    }

    /// Fails every outstanding request with `status` (the queue pair was torn down: nothing
    /// more will complete), reporting each op once.
    pub fn fail_all(&mut self, status: Status) -> Retired {
        match self.entries.len() {
            0 => Retired::default(),
            n => {
                let mut out = Retired::default();
                for _ in 0..n {
                    let id = self.base;
                    let r = self.retire(id, status);
                    out.reports.extend(r.reports);
                    out.staged += r.staged;
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn piece(op: u64, last: bool, wants: bool, staged: usize) -> Piece {
        Piece {
            staged,
            last,
            ..Piece::whole(WrId(op), OpKind::Write, wants)
        }
    }

    fn report(op: u64, status: Status) -> Report {
        Report {
            op: WrId(op),
            kind: OpKind::Write,
            status,
            at: 0,
        }
    }

    #[test]
    fn unsignalled_ops_are_signalled_every_half_queue() {
        let mut q = SendQueue::new(8);
        let signals: Vec<bool> = (0..12)
            .map(|i| q.admit(piece(i, true, false, 0)).map(|(_, s)| s))
            .take_while(Option::is_some)
            .map(Option::unwrap)
            .collect();
        assert_eq!(signals.len(), 8, "the queue holds 8");
        assert_eq!(
            signals,
            vec![false, false, false, true, false, false, false, true]
        );
        assert_eq!(
            q.admit(piece(99, true, false, 0)),
            None,
            "full: the caller keeps it"
        );
        // The hidden completion of the 4th retires four and reports none.
        let r = q.retire(3, Status::Success);
        assert!(r.reports.is_empty());
        assert_eq!(q.outstanding(), 4);
        assert!(q.admit(piece(8, true, false, 0)).is_some());
    }

    #[test]
    fn the_process_sees_its_signalled_ops_and_every_failure() {
        let mut q = SendQueue::new(16);
        for i in 0..6 {
            q.admit(piece(i, true, i == 1, 10)).unwrap();
        }
        let r = q.retire(1, Status::Success);
        assert_eq!(r.reports, vec![report(1, Status::Success)]);
        assert_eq!(r.staged, 20);
        // WrId(3) refused, the rest flushed: every one reported, none as success.
        let r = q.retire(3, Status::AccessDenied);
        assert_eq!(r.reports, vec![report(3, Status::AccessDenied)]);
        let r = q.fail_all(Status::Flushed);
        assert_eq!(
            r.reports,
            vec![report(4, Status::Flushed), report(5, Status::Flushed)]
        );
        assert_eq!(q.outstanding(), 0);
    }

    #[test]
    fn an_op_in_pieces_is_reported_once() {
        let mut q = SendQueue::new(16);
        // Three pieces of a signalled write, then a one-piece write.
        let ids: Vec<(u64, bool)> = [(false, 7), (false, 7), (true, 7)]
            .iter()
            .map(|&(last, op)| q.admit(piece(op, last, true, 100)).unwrap())
            .collect();
        assert_eq!(
            ids.iter().map(|x| x.1).collect::<Vec<_>>(),
            vec![false, false, true]
        );
        q.admit(piece(8, true, true, 0)).unwrap();
        // The first piece fails: the op is reported failed once, its later pieces are not.
        let r = q.retire(ids[0].0, Status::PeerUnreachable);
        assert_eq!(r.reports.len(), 1);
        let r = q.fail_all(Status::PeerUnreachable);
        assert_eq!(r.reports, vec![report(8, Status::PeerUnreachable)]);
        assert_eq!(r.staged, 200);
    }

    #[test]
    fn completions_for_retired_requests_are_ignored() {
        let mut q = SendQueue::new(4);
        q.admit(piece(1, true, true, 0)).unwrap();
        assert!(q.holds(0) && !q.holds(1));
        assert_eq!(q.retire(0, Status::Success).reports.len(), 1);
        assert!(!q.holds(0));
        assert_eq!(q.retire(0, Status::Success), Retired::default());
        assert_eq!(q.retire(57, Status::Flushed), Retired::default());
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
                    // Complete the oldest outstanding request, as the NIC would.
                    let status = if Some(wire as usize) == fail_at { Status::AccessDenied } else { Status::Success };
                    let oldest = wire;
                    reports.extend(q.retire(oldest, status).reports);
                    wire += 1;
                }
                for k in 0..pieces {
                    q.admit(piece(i as u64, k + 1 == pieces, wants, 1)).unwrap();
                }
                posted.push((WrId(i as u64), wants));
                prop_assert!(q.outstanding() <= 32);
            }
            reports.extend(q.fail_all(Status::Flushed).reports);
            let ids: Vec<u64> = reports.iter().map(|r| r.op.0).collect();
            let mut sorted = ids.clone();
            sorted.dedup();
            prop_assert_eq!(&ids, &sorted, "reported twice or out of order");
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]));
            for r in &reports {
                if r.status == Status::Success {
                    prop_assert!(posted[r.op.0 as usize].1, "a success nobody asked for");
                }
            }
        }
    }
}
