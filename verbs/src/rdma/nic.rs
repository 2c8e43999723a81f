//! The [`Nic`] a process of the verbs runtime polls: its local memory, posting (an op cut
//! into work requests: inline, staged chunks, an immediate's header, reads and atomics) and
//! access changes (queue-pair flags, or re-registration and new rkeys sent to the peer).

use super::device::register;
use super::link::{Link, Waiting};
use super::memory::SharedMemory;
use super::{VerbsNic, HEADER, KIND_IMMEDIATE, KIND_MESSAGE};
use crate::access::{Plan, Rights};
use crate::bootstrap::Message;
use crate::completion::Health;
use crate::provider::{Context, MemoryRegion, QueuePair, Src, Transition, Wr};
use crate::signal::{Piece, Staged};
use std::time::Instant;
use transport::{
    nic::validate, Access, Completion, LocalAddr, Nanos, Nic, Op, OpError, ProcessId, Recv,
    RegionId, Status, WrId,
};

impl<C: Context> VerbsNic<C> {
    /// Posts as many pieces of `w` as fit: `Ok(true)` once all are posted.
    pub(super) fn post_pieces(
        &mut self,
        p: ProcessId,
        q: usize,
        w: &mut Waiting,
    ) -> Result<bool, String> {
        let (inline_max, chunk) = (self.limits.inline_max, self.cfg.chunk);
        let kind = w.op.kind();
        let peer = &mut self.peers[p.index()];
        let remote = |region: RegionId, offset: usize| {
            let r = peer.remote[region.index()];
            (r.rkey, r.addr + offset as u64)
        };
        match &w.op {
            Op::Write { dst, .. } => {
                let remote = remote(dst.region, dst.offset);
                // A piece takes at most a quarter of its ring: the control ring is 1/16 of
                // the data ring, smaller than a data chunk.
                let chunk = chunk.min(peer.links[q].staging.capacity() / 4);
                post_write(&mut peer.links[q], p, q, w, remote, inline_max, chunk)
            }
            Op::Send { data, signaled, .. } => {
                let mut h = [0u8; HEADER];
                h[0] = KIND_MESSAGE;
                let piece = Piece::whole(w.wr, kind, *signaled);
                peer.links[q].send(p, q, piece, &h, data, inline_max)
            }
            Op::Read {
                src,
                len,
                into,
                signaled,
            } => {
                let (rkey, raddr) = remote(src.region, src.offset);
                let dst = Src::Sge {
                    lkey: self.local_mrs[into.region.index()].lkey(),
                    addr: (self.memory.regions[into.region.index()].addr() + into.offset) as u64,
                    len: *len as u32,
                };
                let piece = Piece::whole(w.wr, kind, *signaled);
                self.peers[p.index()].links[q].post(p, q, piece, Wr::Read { rkey, raddr, dst })
            }
            Op::CompareSwap { dst, .. } | Op::FetchAdd { dst, .. } => {
                let remote = remote(dst.region, dst.offset);
                post_atomic(&mut peer.links[q], p, q, w, remote)
            }
            Op::SetAccess { .. } | Op::Reconnect { .. } => {
                unreachable!("handled when posted")
            }
        }
    }

    /// Applies an access change before returning, as the model promises. A grant changes the
    /// queue pairs' flags (or registers regions again); a revoke must also be a fence: no op
    /// of the peer may land after this returns. Neither a flag change (rxe checks flags per
    /// packet without synchronising with `ibv_modify_qp`; mlx5 applies them to later
    /// requests) nor anything but deregistration or ERR is documented to stop an accepted
    /// multi-packet write, so a revoke through the flags moves the queue pairs to ERR and
    /// reconnects them with the new flags ([`VerbsNic::fence`]). A verb that fails here
    /// panics: the change cannot be made, and recording it as made would be a lie the
    /// protocols' safety rests on.
    fn set_access(&mut self, region: RegionId, p: ProcessId, access: Access) {
        let began = Instant::now();
        let plan = self.book.plan(region, p, access);
        let before = self.book.flags(p);
        if let Plan::Reregister { regions, .. } = &plan {
            for &(r, rights) in regions {
                let mr = register(&self.ctx, &self.memory.regions[r.index()], rights).unwrap_or_else(|e| {
                    panic!("verbs {}: registering {r} again for {p} failed, so its access cannot change: {e}", self.me)
                });
                // The old registration is dropped (deregistered) here: no op of the peer
                // lands through it after this returns.
                self.peer_mrs[r.index()][p.index()] = mr;
            }
        }
        self.book.apply(region, p, access, &plan);
        let flags = self.book.flags(p);
        if flags != before {
            if before.intersect(flags) != before {
                self.fence(p);
            } else {
                self.grant_flags(p, flags);
            }
        }
        match plan {
            Plan::Unchanged => {}
            Plan::QpFlags { .. } => self.timings.fast.push(began.elapsed()),
            Plan::Reregister { .. } => {
                if !self.peers[p.index()].down {
                    self.control.send(Message::Rekey {
                        from: self.me.0,
                        to: p.0,
                        regions: self.regions_for(p),
                    });
                }
                self.timings.slow.push(began.elapsed());
            }
        }
    }

    /// Widens the flags of the queue pairs to `p` that are up; one in error or reset takes
    /// them from the book when it connects again.
    fn grant_flags(&mut self, p: ProcessId, flags: Rights) {
        for link in &mut self.peers[p.index()].links {
            if link.health == Health::Up {
                if let Err(e) = link.qp.modify(&Transition::Access(flags)) {
                    panic!(
                        "verbs {}: widening the access of a queue pair to {p} failed: {e}",
                        self.me
                    );
                }
            }
        }
    }

    /// A revoke's fence: every queue pair to `p` goes to ERR (nothing the peer sends lands
    /// through it from then on), unless a reconnect under way holds them in INIT, where nothing
    /// lands. The link's health is not the device's state, so a pair already broken is moved
    /// to ERR too (idempotent there); pairs that were up reconnect with the book's new flags,
    /// and the node's own ops to `p` on them that had not executed complete `Flushed`, as after
    /// any reset. A broken pair is left for the process's own reconnect, as before the revoke:
    /// reconnecting it here too would double the resets every election pays.
    fn fence(&mut self, p: ProcessId) {
        let me = self.me;
        let peer = &mut self.peers[p.index()];
        if peer.down || peer.hs.waiting() {
            return;
        }
        let mut were_up = false;
        for link in &mut peer.links {
            if let Err(e) = link.qp.modify(&Transition::Error) {
                panic!("verbs {me}: a revoke could not stop the queue pair to {p}: {e}");
            }
            if link.health == Health::Up {
                link.health = Health::Broken(Status::Flushed);
                were_up = true;
            }
        }
        if were_up {
            let actions = self.peers[p.index()].hs.reconnect(None, false);
            self.perform(p, actions, None);
        }
    }
}

impl<C: Context> Nic for VerbsNic<C> {
    super::memory::memory_methods!();

    fn now(&self) -> Nanos {
        Nanos(self.start.elapsed().as_nanos() as u64)
    }

    fn post(&mut self, op: Op) -> Result<WrId, OpError> {
        validate(&op, self.me, &self.memory.table, &self.limits)?;
        if self.control.crashed(self.me) {
            return Err(OpError::Crashed);
        }
        let wr = WrId(self.next_wr);
        self.next_wr += 1;
        let p = op.peer();
        // What peers sent before this op's cause reached us acts first: rkeys a peer
        // re-registered, a reset it started (so a reconnect is not called done on a pair the
        // peer already tore down). Crashed peers are swept by the node's loop, not per op.
        self.read_mail();
        match op {
            Op::SetAccess { region, access, .. } => self.set_access(region, p, access),
            Op::Reconnect { .. } => self.reconnect(p, wr),
            op => {
                let q = op.qp().index();
                let peer = &self.peers[p.index()];
                let link = &peer.links[q];
                if peer.down || peer.hs.waiting() || link.health != Health::Up {
                    let status = if peer.down {
                        Status::PeerUnreachable
                    } else {
                        link.health.flushed()
                    };
                    self.complete(wr, op.kind(), p, status);
                } else {
                    let w = Waiting {
                        wr,
                        op,
                        sent: 0,
                        data_done: false,
                    };
                    self.peers[p.index()].links[q].backlog.push_back(w);
                    self.drain_backlog(p, q);
                }
            }
        }
        Ok(wr)
    }

    fn poll_completion(&mut self) -> Option<Completion> {
        if self.cq_out.is_empty() {
            self.poll_device();
        }
        self.cq_out.pop_front()
    }

    fn poll_recv(&mut self) -> Option<Recv> {
        if self.rq_out.is_empty() {
            self.poll_device();
        }
        self.rq_out.pop_front()
    }
}

/// Posts as many pieces of write `w` to `(rkey, raddr)` as fit on `link`, queue pair `q` to
/// `p`: inline if it may be, else staged a chunk at a time, then its immediate's header as a
/// send. `Ok(true)` once all are posted.
fn post_write<C: Context>(
    link: &mut Link<C>,
    p: ProcessId,
    q: usize,
    w: &mut Waiting,
    (rkey, raddr): (u32, u64),
    inline_max: usize,
    chunk: usize,
) -> Result<bool, String> {
    let kind = w.op.kind();
    let Op::Write {
        dst,
        data,
        imm,
        flags,
    } = &w.op
    else {
        unreachable!("a write")
    };
    let total = data.len();
    let wants = flags.signaled;
    // An empty write is one inline piece of no bytes.
    if !w.data_done && (total == 0 || flags.inline && total <= inline_max) {
        let mut bytes = [0u8; 256];
        if total > bytes.len() {
            return Err(format!("an inline write of {total} bytes"));
        }
        let bytes = &mut bytes[..total];
        data.copy_to(0, bytes);
        let piece = Piece {
            last: imm.is_none(),
            ..Piece::whole(w.wr, kind, wants)
        };
        let src = Src::Inline(bytes);
        if !link.post(p, q, piece, Wr::Write { rkey, raddr, src })? {
            return Ok(false);
        }
        w.data_done = true;
    }
    while !w.data_done {
        let n = (total - w.sent).min(chunk);
        let from = w.sent;
        let Some((src, slice)) = link.stage(n, |buf| data.copy_to(from, buf)) else {
            return Ok(false);
        };
        let piece = Piece {
            last: from + n == total && imm.is_none(),
            tag: Staged {
                bytes: slice.charged,
                at: slice.at,
            },
            ..Piece::whole(w.wr, kind, wants)
        };
        let raddr = raddr + from as u64;
        link.post(p, q, piece, Wr::Write { rkey, raddr, src })?;
        w.sent += n;
        w.data_done = w.sent == total;
    }
    match imm {
        None => Ok(true),
        Some(imm) => {
            let mut h = [0u8; HEADER];
            h[0] = KIND_IMMEDIATE;
            h[4..8].copy_from_slice(&imm.to_le_bytes());
            h[8..10].copy_from_slice(&dst.region.0.to_le_bytes());
            h[16..24].copy_from_slice(&(dst.offset as u64).to_le_bytes());
            h[24..32].copy_from_slice(&(total as u64).to_le_bytes());
            link.send(p, q, Piece::whole(w.wr, kind, wants), &h, &[], inline_max)
        }
    }
}

/// Posts atomic `w` (a compare-and-swap or a fetch-and-add) to `(rkey, raddr)` on `link`,
/// queue pair `q` to `p`, its old value landing in staged bytes: `Ok(false)` if the ring has
/// no room yet.
fn post_atomic<C: Context>(
    link: &mut Link<C>,
    p: ProcessId,
    q: usize,
    w: &mut Waiting,
    (rkey, raddr): (u32, u64),
) -> Result<bool, String> {
    let kind = w.op.kind();
    // The old value lands in 8 staged bytes.
    let Some((dst, slice)) = link.stage(8, |_| {}) else {
        return Ok(false);
    };
    let piece = Piece {
        tag: Staged {
            bytes: slice.charged,
            at: slice.at,
        },
        ..Piece::whole(w.wr, kind, true)
    };
    let wr = match w.op {
        Op::CompareSwap { expect, swap, .. } => Wr::Cas {
            rkey,
            raddr,
            expect,
            swap,
            dst,
        },
        Op::FetchAdd { add, .. } => Wr::Faa {
            rkey,
            raddr,
            add,
            dst,
        },
        _ => unreachable!("matched above"),
    };
    link.post(p, q, piece, wr)
}
