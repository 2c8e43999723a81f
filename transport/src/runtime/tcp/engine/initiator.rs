//! The NIC's initiator half: the ops the process posted, routed to their links, cut into
//! requests and sent; the answers turned into completions, reconnects included.

use super::{Engine, LinkState, ReadInto, Reconnects, ADMISSION, RETRY, SHARE_AT_LEAST};
use crate::nic::{Completion, Data, Op, OpKind, Qp, Status, WrId};
use crate::process::ProcessId;
use crate::queue_pair::{Piece, Retired, SendQueue};
use crate::runtime::tcp::wire::{self, Frame, WireOp, WireStatus, CHUNK};
use crate::runtime::tcp::NodeShared;
use std::time::Instant;

impl Engine {
    /// Initiator: the answer to request `seq` of link `l` (see [`answer`]).
    pub(super) fn answered(
        &mut self,
        l: usize,
        seq: u64,
        status: WireStatus,
        value: Option<u64>,
        data: &[u8],
    ) -> Result<(), String> {
        let (link, shared, reconnects) = self.link_parts(l);
        let peer = link.peer;
        let status = match status {
            WireStatus::Success => Status::Success,
            WireStatus::AccessDenied => Status::AccessDenied,
            WireStatus::Flushed => Status::Flushed,
        };
        let mut admitted = false;
        answer(&mut link.sq, seq, status, data.len(), |r| {
            if r.piece.op == ADMISSION {
                admitted = true;
                return;
            }
            if r.piece.kind == OpKind::Reconnect {
                reconnect_answered(reconnects, shared, r.piece.op, peer, r.status);
                return;
            }
            let answered = r.id == seq;
            if let (Some((into, _)), Status::Success, true) = (r.piece.tag, r.status, answered) {
                shared.regions[into.region.index()].write(into.offset, data);
                shared.notify();
            }
            if r.report {
                shared.complete(Completion {
                    wr: r.piece.op,
                    kind: r.piece.kind,
                    peer,
                    status: r.status,
                    value: value.filter(|_| answered && r.status == Status::Success),
                });
            }
        })?;
        if admitted && self.links[l].state == LinkState::Admitting {
            self.up(l);
        }
        Ok(())
    }

    pub(super) fn take_posts(&mut self) {
        for (wr, op) in self.shared.take_outbox() {
            self.dispatch(wr, op);
        }
    }

    /// Routes a posted op to its link: sent, held until the link is up, or failed at once.
    pub(super) fn dispatch(&mut self, wr: WrId, op: Op) {
        let peer = op.peer();
        if let Op::Reconnect { .. } = op {
            self.reconnect(wr, peer);
            return;
        }
        let l = peer.index() * Qp::COUNT + op.qp().index();
        let link = &mut self.links[l];
        let fail = match link.state {
            LinkState::Down => Some(Status::PeerUnreachable),
            LinkState::Connecting | LinkState::Admitting => {
                link.waiting.push_back((wr, op));
                return;
            }
            LinkState::Ready if link.sq.state().in_error() => Some(Status::Flushed),
            LinkState::Ready => None,
        };
        if let Some(status) = fail {
            self.shared.complete(Completion {
                wr,
                kind: op.kind(),
                peer,
                status,
                value: None,
            });
            return;
        }
        self.send(l, wr, op);
    }

    /// Reconnect `wr` to `peer`: every queue pair towards it is re-established, sent a
    /// reconnect request if it is up, re-dialled if it was lost; the reconnect completes once
    /// each has answered (at once if none has to).
    fn reconnect(&mut self, wr: WrId, peer: ProcessId) {
        let mut due = 0;
        for qp in 0..Qp::COUNT {
            let l = peer.index() * Qp::COUNT + qp;
            self.links[l].sq.reconnect();
            match self.links[l].state {
                LinkState::Ready => {
                    let piece = Piece::whole(wr, OpKind::Reconnect, false);
                    self.send_request(l, piece, WireOp::Reconnect);
                    due += 1;
                }
                LinkState::Down => {
                    // Lost earlier (a broken connection, a peer given up): dialled again,
                    // as a new queue pair; ops posted from now on wait for it.
                    let link = &mut self.links[l];
                    let now = Instant::now();
                    link.state = LinkState::Connecting;
                    link.retry_at = Some(now);
                    link.connect_by = now + self.connect_timeout;
                    link.backoff = RETRY;
                    link.redialling.push(wr);
                    link.lost_at_start = false;
                    due += 1;
                }
                LinkState::Connecting | LinkState::Admitting => {
                    // Another reconnect during a re-dial: what waits was posted before
                    // it, and a reconnect flushes what it finds queued.
                    let link = &mut self.links[l];
                    link.redialling.push(wr);
                    let (p, flushed) = (link.peer, std::mem::take(&mut link.waiting));
                    for (w, op) in flushed {
                        self.shared.complete(Completion {
                            wr: w,
                            kind: op.kind(),
                            peer: p,
                            status: Status::Flushed,
                            value: None,
                        });
                    }
                    due += 1;
                }
            }
        }
        if due == 0 {
            self.shared.complete(Completion {
                wr,
                kind: OpKind::Reconnect,
                peer,
                status: Status::Success,
                value: None,
            });
        } else {
            self.reconnects.insert(wr, (due, Status::Success));
        }
    }

    /// Sends op `wr` on link `l`, which is ready and not in error: one request, or a chunk's
    /// worth each for writes and reads.
    fn send(&mut self, l: usize, wr: WrId, op: Op) {
        let kind = op.kind();
        let signaled = op.signaled();
        // A request of this op: its last one carries the op's success.
        let request = |last, tag| Piece {
            last,
            tag,
            ..Piece::whole(wr, kind, signaled)
        };
        match op {
            Op::Write { dst, data, imm, .. } => self.send_write(l, request, dst, data, imm),
            Op::Read { src, len, into, .. } => {
                let mut at = 0;
                loop {
                    let n = CHUNK.min(len - at);
                    let last = at + n == len;
                    let op = WireOp::Read {
                        region: src.region.0,
                        offset: (src.offset + at) as u64,
                        len: n as u32,
                    };
                    self.send_request(l, request(last, Some((into.add(at), n))), op);
                    at += n;
                    if last {
                        break;
                    }
                }
            }
            Op::CompareSwap { dst, expect, swap } => {
                let op = WireOp::CompareSwap {
                    region: dst.region.0,
                    offset: dst.offset as u64,
                    expect,
                    swap,
                };
                self.send_request(l, request(true, None), op);
            }
            Op::FetchAdd { dst, add } => {
                let op = WireOp::FetchAdd {
                    region: dst.region.0,
                    offset: dst.offset as u64,
                    add,
                };
                self.send_request(l, request(true, None), op);
            }
            Op::Send { data, .. } => {
                self.send_request(l, request(true, None), WireOp::Send { data: &data });
            }
            Op::SetAccess { .. } | Op::Reconnect { .. } => unreachable!("handled by the caller"),
        }
    }

    /// Sends a write of `data` to `dst` a chunk at a time, the last carrying `imm`; large
    /// chunks go from the process's own buffer ([`SHARE_AT_LEAST`]). `request` makes each
    /// chunk's piece.
    fn send_write(
        &mut self,
        l: usize,
        request: impl Fn(bool, ReadInto) -> Piece<ReadInto>,
        dst: crate::RemoteAddr,
        data: Data,
        imm: Option<u32>,
    ) {
        let len = data.len();
        let mut at = 0;
        loop {
            let n = CHUNK.min(len - at);
            let last = at + n == len;
            if let (Data::Bytes(b), true) = (&data, n >= SHARE_AT_LEAST) {
                let imm = if last { imm } else { None };
                let payload = b.slice(at..at + n);
                self.send_shared_write(l, request(last, None), dst, at, payload, imm);
                at += n;
                if last {
                    break;
                }
                continue;
            }
            let mut chunk = std::mem::take(&mut self.chunk);
            let bytes: &[u8] = match &data {
                Data::Bytes(b) => &b[at..at + n],
                Data::Inline(i) => &i[at..at + n],
                Data::Synthetic(_) => {
                    chunk.resize(n, 0);
                    data.copy_to(at, &mut chunk);
                    &chunk
                }
            };
            let op = WireOp::Write {
                region: dst.region.0,
                offset: (dst.offset + at) as u64,
                data: bytes,
                imm: if last { imm } else { None },
            };
            self.send_request(l, request(last, None), op);
            self.chunk = chunk;
            at += n;
            if last {
                break;
            }
        }
    }

    /// Numbers request `piece` of link `l` and records it as outstanding.
    fn track(&mut self, l: usize, piece: Piece<ReadInto>) -> u64 {
        let (seq, _) = self.links[l]
            .sq
            .admit(piece)
            .expect("bounded in bytes, not requests");
        seq
    }

    /// Sends request `piece` of link `l`, `op` on the wire.
    pub(super) fn send_request(&mut self, l: usize, piece: Piece<ReadInto>, op: WireOp<'_>) {
        let seq = self.track(l, piece);
        let c = self.links[l].conn.expect("a ready link has its connection");
        let conn = self.conns[c].as_mut().expect("live");
        conn.out
            .append(|v| wire::encode(&Frame::Request { seq, op }, v));
    }

    /// [`Engine::send_request`] for a write chunk whose payload is queued where the process
    /// put it rather than copied into the frame.
    fn send_shared_write(
        &mut self,
        l: usize,
        piece: Piece<ReadInto>,
        dst: crate::RemoteAddr,
        at: usize,
        payload: bytes::Bytes,
        imm: Option<u32>,
    ) {
        let seq = self.track(l, piece);
        let link = &self.links[l];
        let c = link.conn.expect("a ready link has its connection");
        let out = &mut self.conns[c].as_mut().expect("live").out;
        let (region, offset) = (dst.region.0, (dst.offset + at) as u64);
        let mut tail = Vec::new();
        out.append(|v| {
            tail = wire::encode_write_around(seq, region, offset, payload.len(), imm, v);
        });
        out.share(payload);
        out.append(|v| v.extend_from_slice(&tail));
    }
}

/// One queue pair of reconnect `wr` towards `peer` is re-established (`Success`) or lost
/// (`PeerUnreachable`: its connection broke, or its re-dial was given up). The reconnect
/// completes once every queue pair has answered: `PeerUnreachable` if any was lost.
pub(super) fn reconnect_answered(
    reconnects: &mut Reconnects,
    shared: &NodeShared,
    wr: WrId,
    peer: ProcessId,
    status: Status,
) {
    let (due, worst) = reconnects.get_mut(&wr).expect("reconnect tracked");
    *due -= 1;
    if status != Status::Success {
        *worst = status;
    }
    if *due == 0 {
        let status = *worst;
        reconnects.remove(&wr);
        shared.complete(Completion {
            wr,
            kind: OpKind::Reconnect,
            peer,
            status,
            value: None,
        });
    }
}

/// Initiator, without sockets: the answer to request `seq` of a queue pair, `status` with
/// `data_len` bytes of read data, checked against what is outstanding and retired through
/// `retired` ([`SendQueue::retire`]). Earlier requests still outstanding are retired as done
/// ([`wire`]'s acknowledgement rule), which only writes and sends may be; an answer that passes
/// over anything else, answers nothing outstanding, or brings a read the wrong number of bytes
/// is the peer breaking the protocol: the caller closes the connection with the reason.
fn answer(
    sq: &mut SendQueue<ReadInto>,
    seq: u64,
    status: Status,
    data_len: usize,
    retired: impl FnMut(Retired<ReadInto>),
) -> Result<(), String> {
    let implied = |k: OpKind| matches!(k, OpKind::Write | OpKind::WriteImm | OpKind::Send);
    if let Some((id, _)) = sq
        .pending()
        .take_while(|(id, _)| *id < seq)
        .find(|(_, p)| !implied(p.kind))
    {
        return Err(format!(
            "response {seq} passes over request {id}, which needs its own answer"
        ));
    }
    let Some(piece) = sq.get(seq) else {
        return Err(format!("response {seq} answers no request in order"));
    };
    if let (Some((_, len)), Status::Success) = (piece.tag, status) {
        if data_len != len {
            return Err(format!(
                "read response of {data_len} bytes for a read of {len}"
            ));
        }
    }
    sq.retire(seq, status, retired);
    Ok(())
}

/// The initiator's side of a peer that answers out of turn, without sockets: [`answer`] on a
/// queue pair's requests.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::LocalAddr;
    use crate::RegionId;

    /// A queue pair holding, in order: `kinds`, op `i` signalled, one piece each; reads of 8
    /// bytes into region 0.
    fn queue(kinds: &[OpKind]) -> SendQueue<ReadInto> {
        let mut sq = SendQueue::unbounded();
        for (i, &kind) in kinds.iter().enumerate() {
            let tag = (kind == OpKind::Read).then(|| (LocalAddr::new(RegionId(0), 0), 8));
            let piece = Piece {
                tag,
                ..Piece::whole(WrId(i as u64), kind, true)
            };
            sq.admit(piece).unwrap();
        }
        sq
    }

    /// Answers `seq` and returns the completions the process would see, as (op, status).
    fn reports(
        sq: &mut SendQueue<ReadInto>,
        seq: u64,
        status: Status,
        data_len: usize,
    ) -> Result<Vec<(u64, Status)>, String> {
        let mut out = Vec::new();
        answer(sq, seq, status, data_len, |r| {
            if r.report {
                out.push((r.piece.op.0, r.status));
            }
        })?;
        Ok(out)
    }

    #[test]
    fn one_answer_acknowledges_every_earlier_write_and_send() {
        use OpKind::*;
        let mut sq = queue(&[Write, Send, WriteImm, Write]);
        let got = reports(&mut sq, 3, Status::Success, 0).unwrap();
        let done = vec![
            (0, Status::Success),
            (1, Status::Success),
            (2, Status::Success),
        ];
        assert_eq!(got, [done, vec![(3, Status::Success)]].concat());
        assert_eq!(sq.outstanding(), 0);
    }

    #[test]
    fn an_answer_passing_over_a_read_or_an_atomic_is_refused_and_retires_nothing() {
        use OpKind::*;
        for kind in [Read, CompareSwap, FetchAdd, Reconnect] {
            let mut sq = queue(&[Write, kind, Write]);
            let err = reports(&mut sq, 2, Status::Success, 0).unwrap_err();
            assert!(err.contains("passes over request 1"), "{kind:?}: {err}");
            assert_eq!(sq.outstanding(), 3, "{kind:?}: nothing retired");
        }
    }

    #[test]
    fn an_answer_to_nothing_outstanding_or_a_short_read_is_refused() {
        use OpKind::*;
        let err = reports(&mut queue(&[Write]), 1, Status::Success, 0).unwrap_err();
        assert!(err.contains("answers no request"), "{err}");
        let mut sq = queue(&[Read]);
        let err = reports(&mut sq, 0, Status::Success, 7).unwrap_err();
        assert!(err.contains("7 bytes for a read of 8"), "{err}");
        assert_eq!(
            reports(&mut sq, 0, Status::Success, 8),
            Ok(vec![(0, Status::Success)])
        );
        let err = reports(&mut sq, 0, Status::Success, 8).unwrap_err();
        assert!(err.contains("answers no request"), "answered twice: {err}");
    }

    #[test]
    fn a_refusal_flushes_the_queue_pair_until_a_reconnect_and_old_answers_leave_it_alone() {
        use OpKind::*;
        let mut sq = queue(&[Write, Write, Read]);
        assert_eq!(
            reports(&mut sq, 0, Status::AccessDenied, 0),
            Ok(vec![(0, Status::AccessDenied)])
        );
        assert!(sq.state().in_error());
        sq.reconnect();
        // The target flushes what it received before the reconnect: reported, but the re-made
        // queue pair stays out of error.
        assert_eq!(
            reports(&mut sq, 1, Status::Flushed, 0),
            Ok(vec![(1, Status::Flushed)])
        );
        assert_eq!(
            reports(&mut sq, 2, Status::Flushed, 0),
            Ok(vec![(2, Status::Flushed)])
        );
        assert!(!sq.state().in_error());
    }
}
