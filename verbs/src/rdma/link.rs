//! A node's queue pair towards one peer ([`Link`]) with its staging ring, receive buffers and
//! backlog; the peer's links and regions ([`Peer`]); and the ids that name a work request's
//! peer, queue pair and sequence.

use super::device::{create_qp, register};
use super::{VerbsConfig, HEADER, RECV};
use crate::access::Rights;
use crate::bootstrap::RemoteRegion;
use crate::completion::Health;
use crate::handshake::Handshake;
use crate::provider::{Context, MemoryRegion, QueuePair, RecvWr, Src, Wr};
use crate::signal::{Piece, SendQueue, Staged};
use crate::staging::{Slice, Staging};
use std::collections::VecDeque;
use transport::runtime::shared_memory::Words;
use transport::{Op, ProcessId, Qp, Rng, WrId};

/// An op waiting for room in its queue pair, with how much of it is posted.
#[derive(Debug)]
pub(super) struct Waiting {
    pub(super) wr: WrId,
    pub(super) op: Op,
    /// Payload bytes of a write posted so far (it goes in pieces).
    pub(super) sent: usize,
    /// Every data piece of a write is posted (a write-with-immediate's header may wait).
    pub(super) data_done: bool,
}

/// One queue pair towards one peer and what the runtime keeps for it.
pub(super) struct Link<C: Context> {
    // Fields drop in order: the queue pair, then the registrations, then the memory they name.
    pub(super) qp: C::Qp,
    pub(super) stage_mr: C::Mr,
    pub(super) recv_mr: C::Mr,
    pub(super) stage_mem: Words,
    pub(super) recv_mem: Words,
    pub(super) sq: SendQueue,
    pub(super) health: Health,
    pub(super) staging: Staging,
    /// Bumped at every reset: receive completions of an older incarnation are ignored.
    pub(super) epoch: u64,
    pub(super) backlog: VecDeque<Waiting>,
    pub(super) psn: u32,
    /// A drain's marker receive has completed ([`super::VerbsNic::drain_link`]).
    pub(super) rq_drained: bool,
}

impl<C: Context> Link<C> {
    /// A queue pair of kind `q` (a data pair has the whole staging ring, a control pair 1/16)
    /// on `cq`, with its staging ring and receive buffers registered, in RESET: the largest
    /// inline limit the device grants from `*inline` down, its first sequence number from
    /// `psns`.
    pub(super) fn open(
        ctx: &C,
        cq: &C::Cq,
        cfg: &VerbsConfig,
        q: usize,
        inline: &mut u32,
        psns: &mut Rng,
    ) -> Result<Link<C>, String> {
        let staging = if q == Qp::Data.index() {
            cfg.staging
        } else {
            cfg.staging / 16
        };
        let stage_mem = Words::new(staging);
        let stage_mr = register(ctx, &stage_mem, Rights::NONE)?;
        let recv_mem = Words::new(cfg.recv_depth * cfg.recv_size);
        let recv_mr = register(ctx, &recv_mem, Rights::NONE)?;
        Ok(Link {
            qp: create_qp(ctx, cq, cfg, inline)?,
            sq: SendQueue::new(cfg.send_depth),
            health: Health::Up,
            staging: Staging::new(staging),
            stage_mem,
            stage_mr,
            recv_mem,
            recv_mr,
            epoch: 0,
            backlog: VecDeque::new(),
            psn: (psns.next_u64() & 0xFF_FFFF) as u32,
            rq_drained: true,
        })
    }

    /// Room in the send queue and `len` bytes of the staging ring, filled by `fill`, as a work
    /// request's source: `None` until earlier requests retire (the caller keeps its op).
    pub(super) fn stage(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Option<(Src<'static>, Slice)> {
        if !self.sq.has_room(1) {
            return None;
        }
        let slice = self.staging.alloc(len)?;
        let mut buf = vec![0u8; len];
        fill(&mut buf);
        self.stage_mem.write(slice.at, &buf);
        let src = Src::Sge {
            lkey: self.stage_mr.lkey(),
            addr: (self.stage_mem.addr() + slice.at) as u64,
            len: len as u32,
        };
        Some((src, slice))
    }

    /// Admits `piece` to the send queue and posts `wr` for it: `Ok(false)` if the queue is
    /// full (nothing posted).
    pub(super) fn post(
        &mut self,
        p: ProcessId,
        q: usize,
        piece: Piece,
        wr: Wr<'_>,
    ) -> Result<bool, String> {
        // A request holding staging bytes is signalled: the ring frees only as requests
        // retire, and unsignalled ones retire only behind a later signalled one, which a
        // stalled ring would never let be posted (a large unsignalled write filled the ring
        // with four chunks and waited for good).
        let Some((id, signal)) = self.sq.admit_signalled(piece, piece.tag.bytes > 0) else {
            return Ok(false);
        };
        if let Err(e) = self.qp.post_send(send_id(p, q, id), signal, wr) {
            // Nothing reached the wire: the op is the caller's to report, once.
            self.sq.unadmit_last();
            return Err(e.to_string());
        }
        Ok(true)
    }

    /// Posts a two-sided message, `header` then `body`: inline if it fits, else staged.
    pub(super) fn send(
        &mut self,
        p: ProcessId,
        q: usize,
        piece: Piece,
        header: &[u8; HEADER],
        body: &[u8],
        inline_max: usize,
    ) -> Result<bool, String> {
        let len = HEADER + body.len();
        if len <= inline_max {
            let mut bytes = Vec::with_capacity(len);
            bytes.extend_from_slice(header);
            bytes.extend_from_slice(body);
            let src = Src::Inline(&bytes);
            return self.post(p, q, piece, Wr::Send { src });
        }
        let fill = |buf: &mut [u8]| {
            buf[..HEADER].copy_from_slice(header);
            buf[HEADER..].copy_from_slice(body);
        };
        let Some((src, slice)) = self.stage(len, fill) else {
            return Ok(false);
        };
        let piece = Piece {
            tag: Staged {
                bytes: slice.charged,
                at: slice.at,
            },
            ..piece
        };
        self.post(p, q, piece, Wr::Send { src })
    }

    /// Posts receive buffers `ks` (each `size` bytes of the link's receive memory) on the
    /// queue pair to `p`, tagged with the link's epoch.
    pub(super) fn post_recvs(
        &mut self,
        p: ProcessId,
        q: usize,
        ks: std::ops::Range<usize>,
        size: usize,
    ) -> Result<(), String> {
        let (lkey, base, epoch) = (self.recv_mr.lkey(), self.recv_mem.addr(), self.epoch);
        let wrs: Vec<RecvWr> = ks
            .map(|k| RecvWr {
                id: recv_id(p, q, epoch, k),
                lkey,
                addr: (base + k * size) as u64,
                len: size as u32,
            })
            .collect();
        self.qp
            .post_recv(&wrs)
            .map_err(|e| format!("receives to {p}: {e}"))
    }
}

/// One peer: its queue pairs, its regions as this node addresses them, and a reconnect in
/// progress.
pub(super) struct Peer<C: Context> {
    pub(super) links: Vec<Link<C>>,
    pub(super) remote: Vec<RemoteRegion>,
    /// A reconnect with the peer ([`crate::handshake`]).
    pub(super) hs: Handshake,
    /// Never connected: it had crashed before the run began.
    pub(super) down: bool,
    /// The peer's queue pairs listen to this node's current incarnation (its `Ready` came, or
    /// its `Accepted`): until then, ops wait in the backlog.
    pub(super) confirmed: bool,
}

pub(super) fn send_id(peer: ProcessId, qp: usize, seq: u64) -> u64 {
    (peer.0 as u64) << 44 | (qp as u64) << 40 | seq
}

pub(super) fn recv_id(peer: ProcessId, qp: usize, epoch: u64, k: usize) -> u64 {
    RECV | (peer.0 as u64) << 40 | (qp as u64) << 36 | (epoch & 0xF_FFFF) << 16 | k as u64
}

/// A work request's id split back into its parts: (receive?, peer, queue pair, seq or
/// (epoch, buffer)).
pub(super) fn split_id(id: u64) -> (bool, ProcessId, usize, u64) {
    if id & RECV != 0 {
        (
            true,
            ProcessId(((id >> 40) & 0xFFFF) as u32),
            ((id >> 36) & 0xF) as usize,
            id & 0xF_FFFF_FFFF,
        )
    } else {
        (
            false,
            ProcessId((id >> 44) as u32),
            ((id >> 40) & 0xF) as usize,
            id & ((1 << 40) - 1),
        )
    }
}
