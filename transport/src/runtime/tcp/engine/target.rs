//! The NIC's target half: peers' requests applied to this node's registered regions, after
//! the bounds and access checks, and answered in order.

use super::{Conn, Engine};
use crate::process::ProcessId;
use crate::region::{Access, LocalAddr};
use crate::runtime::tcp::wire::{self, Frame, WireOp, WireStatus, CHUNK};
use crate::runtime::tcp::NodeShared;
use std::sync::atomic::{AtomicU64, Ordering};

impl Engine {
    /// Target: applies request `seq` of `peer` and queues its response.
    pub(super) fn apply(
        &mut self,
        c: usize,
        peer: ProcessId,
        seq: u64,
        op: WireOp<'_>,
    ) -> Result<(), String> {
        let shared = self.shared.clone();
        let conn = self.conns[c].as_mut().expect("live");
        let respond = |conn: &mut Conn, status, value, data: &[u8]| {
            let f = Frame::Response {
                seq,
                status,
                value,
                data,
            };
            conn.unanswered = None;
            conn.out.append(|v| wire::encode(&f, v));
        };
        if matches!(op, WireOp::Reconnect) {
            conn.error = false;
            respond(conn, WireStatus::Success, None, &[]);
            return Ok(());
        }
        if conn.error {
            respond(conn, WireStatus::Flushed, None, &[]);
            return Ok(());
        }
        let mut read = Vec::new();
        let deferrable = matches!(op, WireOp::Write { .. } | WireOp::Send { .. });
        let (allowed, value) = execute(&shared, peer, op, &mut read)?;
        if allowed && deferrable {
            // Answered with the batch it arrived in (`handle_frames`): a stream of writes
            // costs one response per read of the socket, not one per write.
            conn.unanswered = Some(seq);
        } else if allowed {
            respond(conn, WireStatus::Success, value, &read);
        } else {
            conn.error = true;
            respond(conn, WireStatus::AccessDenied, None, &[]);
        }
        Ok(())
    }
}

/// Carries out request `op` of `peer` (not a reconnect) on this node's regions, read bytes
/// into `read`: whether the peer's access allowed it, and an atomic's old value. `Err` is a
/// request outside the regions or the limits, which closes the connection.
fn execute(
    shared: &NodeShared,
    peer: ProcessId,
    op: WireOp<'_>,
    read: &mut Vec<u8>,
) -> Result<(bool, Option<u64>), String> {
    match op {
        WireOp::Write {
            region,
            offset,
            data,
            imm,
        } => write(shared, peer, region, offset, data, imm),
        WireOp::Read {
            region,
            offset,
            len,
        } => self::read(shared, peer, region, offset, len, read),
        WireOp::CompareSwap {
            region,
            offset,
            expect,
            swap,
        } => atomic(shared, peer, region, offset, |word| {
            match word.compare_exchange(expect, swap, Ordering::AcqRel, Ordering::Acquire) {
                Ok(old) | Err(old) => old,
            }
        }),
        WireOp::FetchAdd {
            region,
            offset,
            add,
        } => atomic(shared, peer, region, offset, |word| {
            word.fetch_add(add, Ordering::AcqRel)
        }),
        WireOp::Send { data } => send(shared, peer, data),
        WireOp::Reconnect => unreachable!("handled above"),
    }
}

/// A write of `data` at `offset` of `region`, with its immediate delivered if it lands.
fn write(
    shared: &NodeShared,
    peer: ProcessId,
    region: u16,
    offset: u64,
    data: &[u8],
    imm: Option<u32>,
) -> Result<(bool, Option<u64>), String> {
    let p = peer.index();
    let r = shared.checked(peer, region, offset, data.len(), false)?;
    let off = offset as usize;
    let ok = r.guarded(p, Access::can_write, |r| r.write(off, data));
    if ok.is_some() {
        if let Some(imm) = imm {
            shared.deliver(crate::nic::Recv::Immediate {
                from: peer,
                imm,
                at: LocalAddr::new(crate::RegionId(region), off),
                len: data.len(),
            });
        }
        shared.notify();
    }
    Ok((ok.is_some(), None))
}

/// A read of `len` bytes at `offset` of `region` into `buf`: at most a chunk.
fn read(
    shared: &NodeShared,
    peer: ProcessId,
    region: u16,
    offset: u64,
    len: u32,
    buf: &mut Vec<u8>,
) -> Result<(bool, Option<u64>), String> {
    let p = peer.index();
    let len = len as usize;
    if len > CHUNK {
        return Err(format!("read of {len} bytes exceeds a chunk of {CHUNK}"));
    }
    let r = shared.checked(peer, region, offset, len, false)?;
    buf.resize(len, 0);
    let ok = r.guarded(p, Access::can_read, |r| r.read(offset as usize, buf));
    Ok((ok.is_some(), None))
}

/// An atomic on the word at `offset` of `region` (a compare-and-swap or a fetch-and-add: `op`
/// applies it to the word and returns the word's old value), if the peer may use atomics
/// there; its old value.
fn atomic(
    shared: &NodeShared,
    peer: ProcessId,
    region: u16,
    offset: u64,
    op: impl FnOnce(&AtomicU64) -> u64,
) -> Result<(bool, Option<u64>), String> {
    let r = shared.checked(peer, region, offset, 8, true)?;
    let old = r.guarded(peer.index(), Access::can_atomic, |r| {
        op(r.word(offset as usize))
    });
    if old.is_some() {
        shared.notify();
    }
    Ok((old.is_some(), old))
}

/// A message, delivered to the process's receive queue: at most the largest message.
fn send(shared: &NodeShared, peer: ProcessId, data: &[u8]) -> Result<(bool, Option<u64>), String> {
    if data.len() > shared.limits.send_max {
        return Err(format!(
            "send of {} bytes exceeds the largest message of {}",
            data.len(),
            shared.limits.send_max
        ));
    }
    shared.deliver(crate::nic::Recv::Message {
        from: peer,
        data: bytes::Bytes::copy_from_slice(data),
    });
    shared.notify();
    Ok((true, None))
}
