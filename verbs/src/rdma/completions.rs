//! Work completions from the device: a send queue's turned into the process's completions, a
//! receive queue's into its receives; backlogs drained as room frees, and a link broken when
//! the device refuses a post.

use super::link::{split_id, Waiting};
use super::{VerbsNic, HEADER, KIND_IMMEDIATE, KIND_MESSAGE};
use crate::completion::{map_status, Health};
use crate::provider::{AtomicCap, CompletionQueue, Context, Wc};
use crate::signal::{self, Report};
use std::sync::atomic::Ordering;
use transport::{Completion, LocalAddr, OpKind, ProcessId, Qp, Recv, RegionId, Status, WrId};

impl<C: Context> VerbsNic<C> {
    /// Takes every work completion the device has: whether there was any.
    pub(super) fn poll_device(&mut self) -> bool {
        let mut wcs = Vec::new();
        if let Err(e) = self.cq.poll(&mut wcs) {
            eprintln!("verbs {}: {e}", self.me);
        }
        let any = !wcs.is_empty();
        for Wc {
            id,
            status,
            byte_len: len,
        } in wcs
        {
            let (recv, p, q, rest) = split_id(id);
            if p.index() >= self.peers.len() || q >= Qp::COUNT {
                continue;
            }
            if recv {
                self.on_receive(p, q, rest, status, len as usize);
            } else {
                self.on_send(p, q, rest, status);
            }
        }
        for p in 0..self.peers.len() {
            for q in 0..Qp::COUNT {
                self.drain_backlog(ProcessId(p as u32), q);
            }
        }
        any
    }

    fn on_send(&mut self, p: ProcessId, q: usize, seq: u64, status: u32) {
        let link = &mut self.peers[p.index()].links[q];
        if !link.sq.holds(seq) {
            return; // from before a reset
        }
        let mapped = map_status(status, &mut link.health);
        if let Some(name) = mapped.runtime_fault {
            eprintln!(
                "verbs {}: the NIC refused a request to {p} with {name}: a bug in the verbs runtime",
                self.me
            );
        }
        let retired = signal::retire(&mut link.sq, seq, mapped.status);
        link.staging.free(retired.staged);
        // A device without host-order atomics returns the old value big-endian.
        let host_order = self.caps.atomic_cap != AtomicCap::None;
        let values: Vec<Option<u64>> = retired
            .reports
            .iter()
            .map(|r| {
                let atomic = matches!(r.kind, OpKind::CompareSwap | OpKind::FetchAdd);
                (atomic && r.status == Status::Success).then(|| {
                    let v = link.stage_mem.word(r.at).load(Ordering::Acquire);
                    if host_order {
                        v
                    } else {
                        u64::from_be(v)
                    }
                })
            })
            .collect();
        let broken = link.health != Health::Up;
        let failed: Vec<Waiting> = if broken {
            link.backlog.drain(..).collect()
        } else {
            Vec::new()
        };
        let flushed = link.health.flushed();
        for (r, v) in retired.reports.iter().zip(values) {
            self.report(p, r, v);
        }
        for w in failed {
            self.complete(w.wr, w.op.kind(), p, flushed);
        }
    }

    fn on_receive(&mut self, p: ProcessId, q: usize, rest: u64, status: u32, len: usize) {
        let (epoch, k) = (rest >> 16, (rest & 0xFFFF) as usize);
        let size = self.cfg.recv_size;
        let link = &mut self.peers[p.index()].links[q];
        if epoch != link.epoch & 0xF_FFFF {
            return; // from before a reset (its buffer is posted again already)
        }
        if k == super::connection::MARKER {
            link.rq_drained = true;
            return;
        }
        if status != crate::completion::code::SUCCESS {
            // The queue pair is in error, maybe from the responder's side (a peer's refused
            // write breaks both ends), which no send completion here would tell: record it,
            // so this node's next reconnect resets the pair instead of trusting it.
            map_status(status, &mut link.health);
            return;
        }
        let mut buf = vec![0u8; len.min(size)];
        link.recv_mem.read(k * size, &mut buf);
        if let Err(e) = link.post_recvs(p, q, k..k + 1, size) {
            eprintln!("verbs {}: {e}", self.me);
        }
        if buf.len() < HEADER {
            eprintln!(
                "verbs {}: a {}-byte message from {p} without its header",
                self.me,
                buf.len()
            );
            return;
        }
        let word = |at: usize| u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
        match buf[0] {
            KIND_MESSAGE => self.rq_out.push_back(Recv::Message {
                from: p,
                data: bytes::Bytes::copy_from_slice(&buf[HEADER..]),
            }),
            KIND_IMMEDIATE => self.rq_out.push_back(Recv::Immediate {
                from: p,
                imm: u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes")),
                at: LocalAddr::new(
                    RegionId(u16::from_le_bytes([buf[8], buf[9]])),
                    word(16) as usize,
                ),
                len: word(24) as usize,
            }),
            other => eprintln!(
                "verbs {}: a message from {p} of unknown kind {other}",
                self.me
            ),
        }
    }

    /// Posts what waits towards `p` on queue pair `q`, in order, while there is room and the
    /// peer listens.
    pub(super) fn drain_backlog(&mut self, p: ProcessId, q: usize) {
        if !self.peers[p.index()].confirmed {
            return;
        }
        loop {
            let link = &mut self.peers[p.index()].links[q];
            let Some(mut w) = link.backlog.pop_front() else {
                return;
            };
            match self.post_pieces(p, q, &mut w) {
                Ok(true) => {}
                Ok(false) => {
                    self.peers[p.index()].links[q].backlog.push_front(w);
                    return;
                }
                Err(e) => {
                    eprintln!("verbs {}: {e}", self.me);
                    // A piece of it already on the wire reports the op when it is flushed.
                    let on_wire = w.sent > 0 || w.data_done;
                    self.break_link(p, q);
                    if !on_wire {
                        self.complete(w.wr, w.op.kind(), p, Status::Flushed);
                    }
                }
            }
        }
    }

    /// After a post the device refused (a runtime bug, reported): the pair is broken. What
    /// waits fails at once; what is on the device is drained as a reset drains it (an op that
    /// executed completes with its success, its staging bytes freed only once the device is
    /// done with them), and the pair stays in ERR until a reconnect.
    fn break_link(&mut self, p: ProcessId, q: usize) {
        let link = &mut self.peers[p.index()].links[q];
        link.health = Health::Broken(Status::Flushed);
        let backlog: Vec<Waiting> = link.backlog.drain(..).collect();
        for w in backlog {
            self.complete(w.wr, w.op.kind(), p, Status::Flushed);
        }
        self.drain_link(p, q);
        let link = &mut self.peers[p.index()].links[q];
        let retired = signal::fail_all(&mut link.sq, Status::Flushed);
        link.staging.free(retired.staged);
        for r in retired.reports {
            self.report(p, &r, None);
        }
    }

    pub(super) fn complete(&mut self, wr: WrId, kind: OpKind, peer: ProcessId, status: Status) {
        self.cq_out.push_back(Completion {
            wr,
            kind,
            peer,
            status,
            value: None,
        });
    }

    pub(super) fn report(&mut self, p: ProcessId, r: &Report, value: Option<u64>) {
        self.cq_out.push_back(Completion {
            wr: r.op,
            kind: r.kind,
            peer: p,
            status: r.status,
            value,
        });
    }
}
