//! The RC queue pair: its states, which [`Transition`] is legal in which (the table of
//! IBA 11.2.5 / sideway's RC attribute table), the values a transition must respect, and what a
//! queue pair holds (send queue, receive queue, requester and responder state).

use super::mem::AtomicOp;
use super::World;
use crate::access::Rights;
use crate::provider::VerbsError;
use crate::provider::{Address, DeviceCaps, GidEntry, PortInfo, QpCaps, RecvWr, Transition};
use std::collections::VecDeque;

/// `EINVAL`: an illegal transition, value or post.
pub(super) const EINVAL: i32 = 22;
/// `ENOMEM`: a queue or a resource table is full.
pub(super) const ENOMEM: i32 = 12;

/// The states of an RC queue pair (SQD and SQE are not modelled: no verb here reaches them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Created, or reset: nothing is queued, nothing is accepted.
    Reset,
    /// Receives may be posted; arriving packets are dropped.
    Init,
    /// Ready to receive: the responder accepts packets.
    Rtr,
    /// Ready to send: the requester transmits.
    Rts,
    /// In error: everything posted completes `WR_FLUSH_ERR`, arriving packets are dropped.
    Err,
}

/// The kind of a [`Transition`], to name one in a fault hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransitionKind {
    /// [`Transition::Init`].
    Init,
    /// [`Transition::Rtr`].
    Rtr,
    /// [`Transition::Rts`].
    Rts,
    /// [`Transition::Access`].
    Access,
    /// [`Transition::Error`].
    Error,
    /// [`Transition::Reset`].
    Reset,
}

impl TransitionKind {
    /// The kind of `t`.
    pub fn of(t: &Transition) -> TransitionKind {
        match t {
            Transition::Init { .. } => TransitionKind::Init,
            Transition::Rtr { .. } => TransitionKind::Rtr,
            Transition::Rts { .. } => TransitionKind::Rts,
            Transition::Access(_) => TransitionKind::Access,
            Transition::Error => TransitionKind::Error,
            Transition::Reset => TransitionKind::Reset,
        }
    }
}

/// Whether `kind` is legal from `from`, and the state it leads to (design §3.2).
pub(super) fn next_state(from: QpState, kind: TransitionKind) -> Option<QpState> {
    use QpState as S;
    use TransitionKind as K;
    match (from, kind) {
        (_, K::Reset) => Some(S::Reset),
        (_, K::Error) => Some(S::Err),
        (S::Reset, K::Init) => Some(S::Init),
        (S::Init, K::Access) => Some(S::Init),
        (S::Init, K::Rtr) => Some(S::Rtr),
        (S::Rtr, K::Rts) => Some(S::Rts),
        (S::Rts, K::Access) => Some(S::Rts),
        _ => None,
    }
}

/// What the device says, for the value checks of a transition.
pub(super) struct Limits<'a> {
    pub(super) caps: &'a DeviceCaps,
    pub(super) port: &'a PortInfo,
    pub(super) gids: &'a [GidEntry],
}

fn invalid(detail: String) -> VerbsError {
    VerbsError::new("ibv_modify_qp", Some(EINVAL), detail)
}

/// Checks the values `t` carries against the device (each failure names its field).
pub(super) fn check_values(
    t: &Transition,
    qp_port: u8,
    lim: &Limits<'_>,
) -> Result<(), VerbsError> {
    let caps = lim.caps;
    match *t {
        Transition::Init { port, .. } => ensure(port >= 1 && port <= caps.phys_port_cnt, || {
            format!("port {port} (the device has {})", caps.phys_port_cnt)
        }),
        Transition::Rtr {
            path_mtu,
            max_dest_rd_atomic,
            address,
            ..
        } => {
            let valid = path_mtu.is_power_of_two() && (256..=4096).contains(&path_mtu);
            ensure(valid, || {
                format!("path_mtu {path_mtu} (256..=4096, a power of two)")
            })?;
            ensure(path_mtu <= lim.port.active_mtu, || {
                let port = lim.port.active_mtu;
                format!("path_mtu {path_mtu} over the port's active_mtu {port}")
            })?;
            ensure(u32::from(max_dest_rd_atomic) <= caps.max_qp_rd_atom, || {
                let max = caps.max_qp_rd_atom;
                format!("max_dest_rd_atomic {max_dest_rd_atomic} over max_qp_rd_atom {max}")
            })?;
            ensure(address.port == qp_port, || {
                let port = address.port;
                format!("address port {port} is not the queue pair's port {qp_port}")
            })?;
            let sgid = address.sgid_index;
            let known = lim
                .gids
                .iter()
                .any(|g| g.port == qp_port && g.index == sgid);
            ensure(known, || format!("sgid_index {sgid} not in the GID table"))
        }
        Transition::Rts {
            retry_cnt,
            rnr_retry,
            max_rd_atomic,
            ..
        } => {
            ensure(retry_cnt <= 7 && rnr_retry <= 7, || {
                format!("retry_cnt {retry_cnt} / rnr_retry {rnr_retry} (at most 7)")
            })?;
            ensure(u32::from(max_rd_atomic) <= caps.max_qp_init_rd_atom, || {
                let max = caps.max_qp_init_rd_atom;
                format!("max_rd_atomic {max_rd_atomic} over max_qp_init_rd_atom {max}")
            })
        }
        _ => Ok(()),
    }
}

/// `EINVAL` with `detail` unless `ok`.
fn ensure(ok: bool, detail: impl FnOnce() -> String) -> Result<(), VerbsError> {
    if ok {
        Ok(())
    } else {
        Err(invalid(detail()))
    }
}

/// The bytes of a work request, owned by the send queue: inline bytes copied at post, an SGE
/// read (or written) when the request is transmitted (or answered).
#[derive(Clone, Debug)]
pub(super) enum Bytes {
    Inline(Vec<u8>),
    Sge { lkey: u32, addr: u64, len: u32 },
}

impl Bytes {
    pub(super) fn len(&self) -> u32 {
        match self {
            Bytes::Inline(b) => b.len() as u32,
            Bytes::Sge { len, .. } => *len,
        }
    }
}

/// A work request as the send queue keeps it.
#[derive(Clone, Debug)]
pub(super) enum SqOp {
    Write {
        rkey: u32,
        raddr: u64,
        src: Bytes,
    },
    Send {
        src: Bytes,
    },
    Read {
        rkey: u32,
        raddr: u64,
        dst: Bytes,
    },
    Atomic {
        rkey: u32,
        raddr: u64,
        op: AtomicOp,
        dst: Bytes,
    },
}

impl SqOp {
    /// The PSNs it uses and its request packets, at `mtu`: a write or send is one packet per
    /// `mtu` bytes (at least one); a read is one request answered by one response packet per
    /// `mtu` bytes, each with its own PSN; an atomic is one of each.
    pub(super) fn packets(&self, mtu: u32) -> (u32, u32) {
        let n = |len: u32| len.div_ceil(mtu).max(1);
        match self {
            SqOp::Write { src, .. } | SqOp::Send { src } => (n(src.len()), n(src.len())),
            SqOp::Read { dst, .. } => (n(dst.len()), 1),
            SqOp::Atomic { .. } => (1, 1),
        }
    }

    /// Reads and atomics count against `max_rd_atomic`.
    pub(super) fn is_rd_atomic(&self) -> bool {
        matches!(self, SqOp::Read { .. } | SqOp::Atomic { .. })
    }
}

/// One send-queue entry: a work request and its progress on the wire.
#[derive(Debug)]
pub(super) struct SqE {
    pub(super) id: u64,
    pub(super) signaled: bool,
    pub(super) op: SqOp,
    /// The first PSN it uses.
    pub(super) psn: u32,
    /// PSNs it uses: its request packets, or a read's response packets.
    pub(super) span: u32,
    /// Request packets (a read or an atomic is one).
    pub(super) req_pkts: u32,
    /// The next request packet to transmit.
    pub(super) next_pkt: u32,
    /// A read's next expected response packet.
    pub(super) resp_next: u32,
    /// Which chunk of the payload each request packet carries (`Tear::Shuffled`), else in order.
    pub(super) order: Option<Vec<u32>>,
    /// Retransmissions after an ACK timeout so far.
    pub(super) retries: u8,
    /// Retransmissions after an RNR NAK so far.
    pub(super) rnr_retries: u8,
    /// Its completion status once known (it completes in send-queue order).
    pub(super) done: Option<u32>,
}

/// One queue pair in the fabric.
#[derive(Debug)]
pub(super) struct QpS {
    /// The device instance (and protection domain) it belongs to.
    pub(super) pd: usize,
    pub(super) cq: u32,
    pub(super) caps: QpCaps,
    pub(super) state: QpState,
    /// Bumped by every reset, so completions of a former life free no slots of this one.
    pub(super) epoch: u64,
    pub(super) port: u8,
    pub(super) access: Rights,
    // INIT -> RTR
    pub(super) path_mtu: u32,
    pub(super) dest_qpn: u32,
    pub(super) max_dest_rd_atomic: u8,
    pub(super) min_rnr_timer: u8,
    pub(super) address: Option<Address>,
    // RTR -> RTS
    pub(super) timeout: u8,
    pub(super) retry_cnt: u8,
    pub(super) rnr_retry: u8,
    pub(super) max_rd_atomic: u8,
    /// Requester: the PSN of the next new request.
    pub(super) next_psn: u32,
    pub(super) sq: VecDeque<SqE>,
    /// Requester: the entry being transmitted (those before it are fully sent).
    pub(super) tx: usize,
    /// Requester: the ACK timer's generation (a timer event of another generation is stale).
    pub(super) timer: u64,
    /// Requester: waiting out an RNR NAK.
    pub(super) rnr_wait: bool,
    /// Send-queue slots held (posted and not freed by a polled completion).
    pub(super) slots: u32,
    /// Entries completed since the last completion that made a CQE (freed by the next one).
    pub(super) unreported: u32,
    /// Fault hook: packets it may still transmit, when held.
    pub(super) hold: Option<u32>,
    /// The due time of the last packet it sent: its packets arrive in order.
    pub(super) out_due: u64,
    /// Responder: the PSN expected next.
    pub(super) epsn: u32,
    /// Responder: the first PSN of this life (`rq_psn` at RTR); only PSNs from here to `epsn`
    /// can be duplicates.
    pub(super) first_psn: u32,
    pub(super) rq: VecDeque<RecvWr>,
    /// Responder: the receive a multi-packet send is landing in, and the bytes so far.
    pub(super) cur_recv: Option<(RecvWr, u32)>,
    /// Responder: the access flags sampled at the current message's first packet.
    pub(super) msg_access: Rights,
    /// Responder: old values of recent atomics by PSN, to answer a duplicate without
    /// executing it twice.
    pub(super) atomic_replay: VecDeque<(u32, u64)>,
}

impl QpS {
    /// A new queue pair in RESET.
    pub(super) fn new(pd: usize, cq: u32, caps: QpCaps) -> QpS {
        QpS {
            pd,
            cq,
            caps,
            state: QpState::Reset,
            epoch: 0,
            port: 1,
            access: Rights::NONE,
            path_mtu: 256,
            dest_qpn: 0,
            max_dest_rd_atomic: 0,
            min_rnr_timer: 0,
            address: None,
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            max_rd_atomic: 0,
            next_psn: 0,
            sq: VecDeque::new(),
            tx: 0,
            timer: 0,
            rnr_wait: false,
            slots: 0,
            unreported: 0,
            hold: None,
            out_due: 0,
            epsn: 0,
            first_psn: 0,
            rq: VecDeque::new(),
            cur_recv: None,
            msg_access: Rights::NONE,
            atomic_replay: VecDeque::new(),
        }
    }

    /// Takes the attributes of a legal, checked transition.
    pub(super) fn take_attributes(&mut self, t: &Transition) {
        match *t {
            Transition::Init { port, access } => {
                self.port = port;
                self.access = access;
            }
            Transition::Access(access) => self.access = access,
            Transition::Rtr {
                path_mtu,
                dest_qpn,
                rq_psn,
                max_dest_rd_atomic,
                min_rnr_timer,
                address,
            } => {
                self.path_mtu = path_mtu;
                self.dest_qpn = dest_qpn;
                self.epsn = rq_psn & PSN_MASK;
                self.first_psn = self.epsn;
                self.max_dest_rd_atomic = max_dest_rd_atomic;
                self.min_rnr_timer = min_rnr_timer;
                self.address = Some(address);
            }
            Transition::Rts {
                sq_psn,
                timeout,
                retry_cnt,
                rnr_retry,
                max_rd_atomic,
            } => {
                self.next_psn = sq_psn & PSN_MASK;
                self.timeout = timeout;
                self.retry_cnt = retry_cnt;
                self.rnr_retry = rnr_retry;
                self.max_rd_atomic = max_rd_atomic;
            }
            Transition::Error | Transition::Reset => {}
        }
    }

    /// Discards both queues and the wire state without completions (RESET).
    pub(super) fn reset(&mut self) {
        let (pd, cq, caps, epoch) = (self.pd, self.cq, self.caps, self.epoch);
        let (hold, out_due, timer) = (self.hold, self.out_due, self.timer);
        *self = QpS::new(pd, cq, caps);
        self.epoch = epoch + 1;
        self.timer = timer + 1; // stale ACK-timer events of the old life never match
        self.hold = hold;
        self.out_due = out_due;
    }

    /// Reads and atomics transmitted and not yet answered.
    pub(super) fn rd_atomic_in_flight(&self) -> usize {
        self.sq
            .iter()
            .take(self.tx)
            .filter(|e| e.done.is_none() && e.op.is_rd_atomic())
            .count()
            + self
                .sq
                .get(self.tx)
                .filter(|e| e.op.is_rd_atomic() && e.next_pkt > 0)
                .map_or(0, |_| 1)
    }
}

/// PSNs are 24 bits.
pub(super) const PSN_MASK: u32 = 0x00ff_ffff;

/// `a + n` in PSN space.
pub(super) fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// `a - b` in PSN space, as a signed distance (half the space each way).
pub(super) fn psn_diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & PSN_MASK;
    if d & 0x0080_0000 != 0 {
        d as i32 - 0x0100_0000
    } else {
        d as i32
    }
}

impl QpS {
    /// Whether a transmitted request is still unanswered (the ACK timer runs).
    pub(super) fn has_outstanding(&self) -> bool {
        self.sq
            .iter()
            .enumerate()
            .any(|(i, e)| e.done.is_none() && (i < self.tx || e.next_pkt > 0))
    }

    /// Reads and atomics transmitted and unanswered up to and including the one at `psn`:
    /// what the responder holds resources for when that one arrives.
    pub(super) fn rd_atomic_up_to(&self, psn: u32) -> usize {
        self.sq
            .iter()
            .filter(|e| e.done.is_none() && e.op.is_rd_atomic() && e.next_pkt > 0)
            .filter(|e| psn_diff(e.psn, psn) <= 0)
            .count()
    }

    /// Go-back-N: every unanswered entry from `from` on is sent again from its first packet.
    pub(super) fn rewind(&mut self, from: usize) {
        for e in self.sq.iter_mut().skip(from).filter(|e| e.done.is_none()) {
            e.next_pkt = 0;
            e.resp_next = 0;
        }
        self.tx = self.tx.min(from);
    }

    /// The entry whose PSNs include `psn`.
    pub(super) fn entry_of(&self, psn: u32) -> Option<usize> {
        self.sq.iter().position(|e| {
            let d = psn_diff(psn, e.psn);
            d >= 0 && (d as u32) < e.span
        })
    }
}

impl World {
    /// `ibv_modify_qp`: a legal transition with valid values, else `EINVAL` naming why.
    pub(super) fn modify(&mut self, qpn: u32, t: &Transition) -> Result<(), VerbsError> {
        self.planned("ibv_modify_qp")?;
        let q = self
            .qps
            .get(&qpn)
            .ok_or_else(|| invalid(format!("no queue pair {qpn}")))?;
        let kind = TransitionKind::of(t);
        let Some(to) = next_state(q.state, kind) else {
            return Err(invalid(format!("{kind:?} from state {:?}", q.state)));
        };
        let dev = self.spec(q.pd);
        let lim = Limits {
            caps: &dev.caps,
            port: &dev.port,
            gids: &dev.gids,
        };
        let port = match *t {
            Transition::Init { port, .. } => port,
            _ => q.port,
        };
        check_values(t, port, &lim)?;
        let q = self.qps.get_mut(&qpn).expect("checked above");
        match kind {
            TransitionKind::Error => self.enter_error(qpn),
            TransitionKind::Reset => q.reset(),
            _ => {
                q.take_attributes(t);
                q.state = to;
            }
        }
        Ok(())
    }
}
