//! Selective signalling on the verbs runtime: [`transport::queue_pair::SendQueue`] (the one
//! queue-pair core every runtime shares) with what each work request holds of its queue pair's
//! staging ring.
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
//! a write-with-immediate, which is the write followed by a header message; see `rdma`): they
//! are posted back to back, only the last carries the op's signal, and the op is reported once,
//! with its first failure if any piece failed. A full queue never drops an op: `admit` refuses,
//! and the caller keeps the op in its backlog until a retirement frees room.

use transport::queue_pair::{self, Retired as Leaving};
use transport::{OpKind, Status, WrId};

/// What a work request holds of its queue pair's staging ring until it retires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Staged {
    /// Bytes it holds (the staging ring frees in post order, as requests retire).
    pub bytes: usize,
    /// Where its bytes are (an atomic's old value lands there).
    pub at: usize,
}

/// One work request on the wire: a piece of an op.
pub type Piece = queue_pair::Piece<Staged>;

/// A queue pair's send queue on the verbs runtime.
pub type SendQueue = queue_pair::SendQueue<Staged>;

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
    /// Staging bytes freed.
    pub staged: usize,
}

impl Retired {
    fn add(&mut self, r: Leaving<Staged>) {
        self.staged += r.piece.tag.bytes;
        if r.report {
            self.reports.push(Report {
                op: r.piece.op,
                kind: r.piece.kind,
                status: r.status,
                at: r.piece.tag.at,
            });
        }
    }
}

/// A completion for wire id `id` with model status `status` (after
/// [`crate::completion::map_status`]): [`SendQueue::retire`], collected.
pub fn retire(sq: &mut SendQueue, id: u64, status: Status) -> Retired {
    let mut out = Retired::default();
    sq.retire(id, status, |r| out.add(r));
    out
}

/// Fails every outstanding request with `status` (the queue pair was torn down: nothing more
/// will complete), reporting each op once: [`SendQueue::fail_all`], collected.
pub fn fail_all(sq: &mut SendQueue, status: Status) -> Retired {
    let mut out = Retired::default();
    sq.fail_all(status, |r| out.add(r));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_is_freed_as_requests_retire_and_an_atomic_reports_where_its_value_is() {
        let mut sq = SendQueue::new(8);
        let staged = |bytes, at| Staged { bytes, at };
        let write = Piece {
            tag: staged(100, 0),
            ..Piece::whole(WrId(1), OpKind::Write, false)
        };
        let cas = Piece {
            tag: staged(8, 100),
            ..Piece::whole(WrId(2), OpKind::CompareSwap, true)
        };
        sq.admit(write).unwrap();
        sq.admit(cas).unwrap();
        sq.admit(Piece::whole(WrId(3), OpKind::Send, true)).unwrap();
        let r = retire(&mut sq, 1, Status::Success);
        assert_eq!(r.staged, 108, "both retired");
        assert_eq!(
            r.reports,
            vec![Report {
                op: WrId(2),
                kind: OpKind::CompareSwap,
                status: Status::Success,
                at: 100
            }]
        );
        let r = fail_all(&mut sq, Status::Flushed);
        assert_eq!((r.staged, r.reports.len()), (0, 1));
    }
}
