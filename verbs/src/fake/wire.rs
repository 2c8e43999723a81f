//! The wire: posting, packets, the pump, the requester (transmission, ACK timer, go-back-N
//! retries, RNR waits) and the responder (checks in IBA order, landing, ACKs and NAKs), and
//! the completions and flushes they produce.

use super::mem::AtomicOp;
use super::qp::{psn_add, psn_diff, Bytes, QpState, SqE, SqOp, EINVAL, ENOMEM};
use super::{swaps_atomics, AccessCheck, Retire, Tear, World};
use crate::access::Rights;
use crate::completion::code;
use crate::provider::{GidKind, RecvWr, Src, VerbsError, Wc, Wr};

/// Something due on the fabric at a time.
#[derive(Debug)]
pub(super) enum Event {
    /// A packet arrives.
    Deliver(Packet),
    /// A requester's ACK timer of generation `timer` expires.
    AckTimeout { qpn: u32, timer: u64 },
    /// A requester's RNR wait of generation `timer` ends.
    RnrResume { qpn: u32, timer: u64 },
}

/// One packet: base transport header fields, and what it carries.
#[derive(Debug)]
pub(super) struct Packet {
    src_qpn: u32,
    dst_qpn: u32,
    /// The destination GID of the global route header, and the kind of GID it left from.
    dgid: [u8; 16],
    kind: GidKind,
    psn: u32,
    body: Body,
}

#[derive(Debug)]
enum Body {
    /// A request packet (requester to responder).
    Req(Req),
    /// Acknowledges every request up to the PSN.
    Ack,
    /// Refuses the request at the PSN; the requester completes it with this status.
    Nak(u32),
    /// Receiver not ready: try the send again after `wait` ns.
    RnrNak { wait: u64 },
    /// Bytes of a read at `offset` of the message.
    ReadResp {
        offset: u32,
        data: Vec<u8>,
        last: bool,
    },
    /// The old value of an atomic (as the responder's device returns it).
    AtomicResp { old: u64 },
}

#[derive(Debug)]
struct Req {
    op: ReqOp,
    /// First and last packet of the message (IBA opcodes FIRST/MIDDLE/LAST/ONLY).
    first: bool,
    last: bool,
    /// The message's length, and where in it this packet's payload goes.
    msg_len: u32,
    offset: u32,
    data: Vec<u8>,
}

#[derive(Clone, Copy, Debug)]
enum ReqOp {
    Write { rkey: u32, raddr: u64 },
    Send,
    Read { rkey: u32, raddr: u64 },
    Atomic { rkey: u32, raddr: u64, op: AtomicOp },
}

/// Which remote right an operation needs.
type Allowed = fn(Rights) -> bool;

/// The RNR NAK timer codes of IBA table 45, in units of 10 us (code 0 is the longest).
const RNR_TIMER_10US: [u64; 32] = [
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
];

fn post_error(verb: &'static str, errno: i32, detail: String) -> VerbsError {
    VerbsError::new(verb, Some(errno), detail)
}

/// The owned bytes of `src`: inline bytes are copied now, as at `ibv_post_send`.
fn owned(src: Src<'_>) -> Bytes {
    match src {
        Src::Inline(b) => Bytes::Inline(b.to_vec()),
        Src::Sge { lkey, addr, len } => Bytes::Sge { lkey, addr, len },
    }
}

/// The send-queue form of `wr`; inline over the granted size, or on a read or atomic, is
/// refused as `ibv_post_send` refuses it.
fn sq_op(wr: Wr<'_>, max_inline: u32) -> Result<SqOp, VerbsError> {
    let refuse = |d: String| post_error("ibv_post_send", EINVAL, d);
    let source = |src: Src<'_>| match src {
        Src::Inline(b) if b.len() as u64 > u64::from(max_inline) => Err(refuse(format!(
            "{} inline bytes over max_inline {max_inline}",
            b.len()
        ))),
        src => Ok(owned(src)),
    };
    let destination = |dst: Src<'_>, of: &str| match dst {
        Src::Inline(_) => Err(refuse(format!("inline destination of {of}"))),
        dst => Ok(owned(dst)),
    };
    let atomic = |rkey, raddr, op, dst| {
        let dst = destination(dst, "an atomic")?;
        Ok(SqOp::Atomic {
            rkey,
            raddr,
            op,
            dst,
        })
    };
    match wr {
        Wr::Write { rkey, raddr, src } => Ok(SqOp::Write {
            rkey,
            raddr,
            src: source(src)?,
        }),
        Wr::Send { src } => Ok(SqOp::Send { src: source(src)? }),
        Wr::Read { rkey, raddr, dst } => Ok(SqOp::Read {
            rkey,
            raddr,
            dst: destination(dst, "a read")?,
        }),
        Wr::Cas {
            rkey,
            raddr,
            expect,
            swap,
            dst,
        } => atomic(rkey, raddr, AtomicOp::Cas { expect, swap }, dst),
        Wr::Faa {
            rkey,
            raddr,
            add,
            dst,
        } => atomic(rkey, raddr, AtomicOp::Faa { add }, dst),
    }
}

/// Packets of a message of `len` bytes at `mtu` (at least one).
fn packets(len: u32, mtu: u32) -> u32 {
    len.div_ceil(mtu).max(1)
}

impl World {
    /// Processes every event due by `target`, each at its own time, in (due, sent) order.
    pub(super) fn run_until(&mut self, target: u64) {
        while let Some(entry) = self.wire.first_entry() {
            let (due, _) = *entry.key();
            if due > target {
                break;
            }
            let event = entry.remove();
            self.now = self.now.max(due);
            match event {
                Event::Deliver(p) => self.deliver(p),
                Event::AckTimeout { qpn, timer } => self.on_ack_timeout(qpn, timer),
                Event::RnrResume { qpn, timer } => {
                    let Some(q) = self.qps.get_mut(&qpn) else {
                        continue;
                    };
                    if q.timer == timer && q.rnr_wait {
                        q.rnr_wait = false;
                        self.transmit(qpn);
                    }
                }
            }
        }
    }

    fn schedule(&mut self, due: u64, event: Event) {
        self.seq += 1;
        self.wire.insert((due, self.seq), event);
    }

    /// `ns` of transport time, scaled by `time_scale`.
    fn scaled(&self, ns: u64) -> u64 {
        scale(ns, self.cfg.time_scale)
    }

    /// `ibv_post_send`.
    pub(super) fn post_send(
        &mut self,
        qpn: u32,
        id: u64,
        signaled: bool,
        wr: Wr<'_>,
    ) -> Result<(), VerbsError> {
        const VERB: &str = "ibv_post_send";
        self.planned(VERB)?;
        let Some(q) = self.qps.get_mut(&qpn) else {
            return Err(post_error(VERB, EINVAL, format!("no queue pair {qpn}")));
        };
        if matches!(q.state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(post_error(
                VERB,
                EINVAL,
                format!("post_send in state {:?}", q.state),
            ));
        }
        let op = sq_op(wr, q.caps.max_inline)?;
        if q.slots >= q.caps.max_send_wr {
            let d = format!("{} work requests outstanding (max_send_wr)", q.slots);
            return Err(post_error(VERB, ENOMEM, d));
        }
        q.slots += 1;
        if q.state == QpState::Err {
            self.flush_at_post(qpn, id);
            return Ok(());
        }
        let (span, req_pkts) = op.packets(q.path_mtu);
        let psn = q.next_psn;
        q.next_psn = psn_add(psn, span);
        let order = (self.cfg.tear == Tear::Shuffled && req_pkts > 1 && !op.is_rd_atomic())
            .then(|| shuffled(req_pkts, &mut self.rng));
        let q = self.qps.get_mut(&qpn).expect("looked up above");
        q.sq.push_back(SqE {
            id,
            signaled,
            op,
            psn,
            span,
            req_pkts,
            next_pkt: 0,
            resp_next: 0,
            order,
            retries: 0,
            rnr_retries: 0,
            done: None,
        });
        self.transmit(qpn);
        Ok(())
    }

    /// A work request posted to a queue pair in ERR completes `WR_FLUSH_ERR` at once,
    /// signalled or not.
    fn flush_at_post(&mut self, qpn: u32, id: u64) {
        let q = self.qps.get_mut(&qpn).expect("posting");
        q.unreported += 1;
        let retire = Retire {
            qpn,
            epoch: q.epoch,
            slots: q.unreported,
        };
        q.unreported = 0;
        let wc = Wc {
            id,
            status: code::WR_FLUSH_ERR,
            byte_len: 0,
        };
        let cq = q.cq;
        self.push_cqe(cq, wc, Some(retire));
    }

    /// `ibv_post_recv`.
    pub(super) fn post_recv(&mut self, qpn: u32, wrs: &[RecvWr]) -> Result<(), VerbsError> {
        const VERB: &str = "ibv_post_recv";
        self.planned(VERB)?;
        let Some(q) = self.qps.get_mut(&qpn) else {
            return Err(post_error(VERB, EINVAL, format!("no queue pair {qpn}")));
        };
        match q.state {
            QpState::Reset => Err(post_error(VERB, EINVAL, "post_recv in state Reset".into())),
            QpState::Err => {
                let cq = q.cq;
                for wr in wrs {
                    let wc = Wc {
                        id: wr.id,
                        status: code::WR_FLUSH_ERR,
                        byte_len: 0,
                    };
                    self.push_cqe(cq, wc, None);
                }
                Ok(())
            }
            _ if q.rq.len() + wrs.len() > q.caps.max_recv_wr as usize => {
                let d = format!("{} receives posted (max_recv_wr)", q.rq.len());
                Err(post_error(VERB, ENOMEM, d))
            }
            _ => {
                q.rq.extend(wrs.iter().copied());
                Ok(())
            }
        }
    }

    /// Sends a packet from `from`, due after a seeded latency, never before the previous
    /// packet of the same queue pair (RC delivers in order).
    fn send(&mut self, from: u32, p: Packet) {
        let jitter = self.cfg.jitter.as_nanos() as u64;
        let latency = if jitter == 0 {
            0
        } else {
            self.rng.below(jitter + 1)
        };
        let now = self.now;
        let Some(q) = self.qps.get_mut(&from) else {
            return;
        };
        let due = (now + latency).max(q.out_due);
        q.out_due = due;
        let pd = q.pd;
        self.count(pd, |s| s.packets += 1);
        self.schedule(due, Event::Deliver(p));
    }

    /// A packet from `from` to its peer, addressed by its address vector.
    fn packet(&self, from: u32, psn: u32, body: Body) -> Option<Packet> {
        let q = self.qps.get(&from)?;
        let av = q.address?;
        let kind = self
            .spec(q.pd)
            .gids
            .iter()
            .find(|g| g.port == av.port && g.index == av.sgid_index)?
            .kind;
        Some(Packet {
            src_qpn: from,
            dst_qpn: q.dest_qpn,
            dgid: av.dgid,
            kind,
            psn,
            body,
        })
    }

    fn reply(&mut self, from: u32, psn: u32, body: Body) {
        if let Some(p) = self.packet(from, psn, body) {
            self.send(from, p);
        }
    }

    /// The requester: transmits what the send queue holds, in order, until it is all on the
    /// wire, the read/atomic cap stalls it, a hold stops it, or an RNR wait does.
    pub(super) fn transmit(&mut self, qpn: u32) {
        let mut sent = false;
        loop {
            let Some(q) = self.qps.get_mut(&qpn) else {
                return;
            };
            if q.state != QpState::Rts || q.rnr_wait || q.hold == Some(0) {
                break;
            }
            let Some(e) = q.sq.get(q.tx) else { break };
            if e.done.is_some() || e.next_pkt >= e.req_pkts {
                q.tx += 1;
                continue;
            }
            if e.op.is_rd_atomic()
                && e.next_pkt == 0
                && q.rd_atomic_in_flight() >= usize::from(q.max_rd_atomic)
            {
                break;
            }
            let at = q.tx;
            match self.request_packet(qpn, at) {
                Ok(p) => {
                    let q = self.qps.get_mut(&qpn).expect("looked up above");
                    q.sq[at].next_pkt += 1;
                    if let Some(h) = q.hold.as_mut() {
                        *h -= 1;
                    }
                    self.send(qpn, p);
                    sent = true;
                }
                Err(status) => {
                    self.fail_request(qpn, at, status);
                    return;
                }
            }
        }
        if sent {
            self.rearm(qpn);
        }
    }

    /// The next request packet of entry `at`, with its payload read from local memory now
    /// (or the local error status the entry completes with).
    fn request_packet(&self, qpn: u32, at: usize) -> Result<Packet, u32> {
        let q = &self.qps[&qpn];
        let e = &q.sq[at];
        let k = e.next_pkt;
        let (op, bytes, psn) = match &e.op {
            SqOp::Write { rkey, raddr, src } => (
                ReqOp::Write {
                    rkey: *rkey,
                    raddr: *raddr,
                },
                src,
                psn_add(e.psn, k),
            ),
            SqOp::Send { src } => (ReqOp::Send, src, psn_add(e.psn, k)),
            SqOp::Read { rkey, raddr, dst } => {
                self.local(q.pd, dst)?;
                (
                    ReqOp::Read {
                        rkey: *rkey,
                        raddr: *raddr,
                    },
                    dst,
                    e.psn,
                )
            }
            SqOp::Atomic {
                rkey,
                raddr,
                op,
                dst,
            } => {
                if dst.len() != 8 {
                    return Err(code::LOC_LEN_ERR);
                }
                self.local(q.pd, dst)?;
                (
                    ReqOp::Atomic {
                        rkey: *rkey,
                        raddr: *raddr,
                        op: *op,
                    },
                    dst,
                    e.psn,
                )
            }
        };
        let msg_len = bytes.len();
        let (offset, data) = if matches!(op, ReqOp::Write { .. } | ReqOp::Send) {
            let chunk = e.order.as_ref().map_or(k, |o| o[k as usize]);
            let offset = chunk * q.path_mtu;
            let len = q.path_mtu.min(msg_len.saturating_sub(offset));
            (offset, self.source_bytes(q.pd, bytes, offset, len)?)
        } else {
            (0, Vec::new())
        };
        let req = Req {
            op,
            first: k == 0,
            last: k + 1 == e.req_pkts,
            msg_len,
            offset,
            data,
        };
        self.packet(qpn, psn, Body::Req(req))
            .ok_or(code::LOC_QP_OP_ERR)
    }

    /// The local check of an SGE (IBA order step 6): a live registration of the queue pair's
    /// protection domain covering it (every registration has local write).
    fn local(&self, pd: usize, b: &Bytes) -> Result<usize, u32> {
        match *b {
            Bytes::Inline(_) => Ok(0),
            Bytes::Sge { lkey, addr, len } => self
                .mrs
                .get(&lkey)
                .filter(|mr| mr.pd == pd)
                .and_then(|mr| mr.offset_of(addr, u64::from(len)))
                .ok_or(code::LOC_PROT_ERR),
        }
    }

    /// `len` bytes at `offset` of a source, read now (at transmission, as a DMA read).
    fn source_bytes(&self, pd: usize, b: &Bytes, offset: u32, len: u32) -> Result<Vec<u8>, u32> {
        let (offset, len) = (offset as usize, len as usize);
        match b {
            Bytes::Inline(v) => Ok(v[offset..offset + len].to_vec()),
            Bytes::Sge { lkey, .. } => {
                let at = self.local(pd, b)?;
                let mut out = vec![0; len];
                self.mrs[lkey].fetch(at + offset, &mut out);
                Ok(out)
            }
        }
    }

    /// Restarts the ACK timer if a transmitted request is unanswered, else stops it.
    pub(super) fn rearm(&mut self, qpn: u32) {
        let (now, scale) = (self.now, self.cfg.time_scale);
        let Some(q) = self.qps.get_mut(&qpn) else {
            return;
        };
        q.timer += 1;
        // IBA: a timeout of 0 waits for ever.
        if q.timeout == 0 || !q.has_outstanding() {
            return;
        }
        let ns = 4096u64 << u32::from(q.timeout).min(31);
        let (timer, due) = (q.timer, now + self::scale(ns, scale));
        self.schedule(due, Event::AckTimeout { qpn, timer });
    }

    fn on_ack_timeout(&mut self, qpn: u32, timer: u64) {
        let Some(q) = self.qps.get_mut(&qpn) else {
            return;
        };
        // A held queue pair is frozen: its timer stops until `release` restarts it.
        let held = q.hold == Some(0);
        if q.timer != timer || q.state != QpState::Rts || held || !q.has_outstanding() {
            return;
        }
        let f =
            q.sq.iter()
                .position(|e| e.done.is_none())
                .expect("outstanding");
        if q.sq[f].retries >= q.retry_cnt {
            self.fail_request(qpn, f, code::RETRY_EXC_ERR);
            return;
        }
        q.sq[f].retries += 1;
        q.rewind(f);
        let pd = q.pd;
        self.count(pd, |s| s.retries += 1);
        self.transmit(qpn);
    }

    /// The requester's entry `at` failed with `status`: the queue pair goes to ERR.
    fn fail_request(&mut self, qpn: u32, at: usize, status: u32) {
        if let Some(q) = self.qps.get_mut(&qpn) {
            q.sq[at].done = Some(status);
            self.enter_error(qpn);
        }
    }

    /// Moves a queue pair to ERR: its timers stop, every unfinished send-queue entry and every
    /// posted receive completes `WR_FLUSH_ERR` (signalled or not), in order.
    pub(super) fn enter_error(&mut self, qpn: u32) {
        let Some(q) = self.qps.get_mut(&qpn) else {
            return;
        };
        q.state = QpState::Err;
        q.timer += 1;
        q.rnr_wait = false;
        for e in q.sq.iter_mut().filter(|e| e.done.is_none()) {
            e.done = Some(code::WR_FLUSH_ERR);
        }
        let mut flushed: Vec<u64> = q.cur_recv.take().map(|(r, _)| r.id).into_iter().collect();
        flushed.extend(q.rq.drain(..).map(|r| r.id));
        let cq = q.cq;
        self.retire(qpn);
        for id in flushed {
            let wc = Wc {
                id,
                status: code::WR_FLUSH_ERR,
                byte_len: 0,
            };
            self.push_cqe(cq, wc, None);
        }
    }

    /// Completes finished entries at the head of the send queue, in order: a CQE for a
    /// signalled one or a failed one, which frees the slots of the unsignalled ones before it
    /// when polled.
    fn retire(&mut self, qpn: u32) {
        loop {
            let Some(q) = self.qps.get_mut(&qpn) else {
                return;
            };
            let Some(status) = q.sq.front().and_then(|e| e.done) else {
                return;
            };
            let e = q.sq.pop_front().expect("front exists");
            q.tx = q.tx.saturating_sub(1);
            q.unreported += 1;
            if !e.signaled && status == code::SUCCESS {
                continue;
            }
            let byte_len = match (&e.op, status) {
                (SqOp::Read { dst, .. }, code::SUCCESS) => dst.len(),
                (SqOp::Atomic { .. }, code::SUCCESS) => 8,
                _ => 0,
            };
            let retire = Retire {
                qpn,
                epoch: q.epoch,
                slots: q.unreported,
            };
            q.unreported = 0;
            let cq = q.cq;
            self.push_cqe(
                cq,
                Wc {
                    id: e.id,
                    status,
                    byte_len,
                },
                Some(retire),
            );
        }
    }

    /// Whether a packet reaches its destination queue pair, per the silent-drop rules.
    fn routable(&self, p: &Packet) -> bool {
        let Some(q) = self.qps.get(&p.dst_qpn) else {
            return false;
        };
        let state_ok = match p.body {
            Body::Req(_) => matches!(q.state, QpState::Rtr | QpState::Rts),
            _ => q.state == QpState::Rts,
        };
        let dev = self.spec(q.pd);
        let size = match &p.body {
            Body::Req(r) => r.data.len(),
            Body::ReadResp { data, .. } => data.len(),
            _ => 0,
        };
        state_ok
            && q.dest_qpn == p.src_qpn
            && size <= dev.port.active_mtu as usize
            && dev
                .gids
                .iter()
                .any(|g| g.port == q.port && g.gid == p.dgid && g.kind == p.kind)
    }

    fn deliver(&mut self, p: Packet) {
        if !self.routable(&p) {
            let pd = self.qps.get(&p.dst_qpn).map_or(usize::MAX, |q| q.pd);
            self.count(pd, |s| s.dropped += 1);
            return;
        }
        let (at, from, psn) = (p.dst_qpn, p.src_qpn, p.psn);
        match p.body {
            Body::Req(req) => self.respond(at, from, psn, req),
            body => {
                self.on_response(at, psn, body);
                let sending = |q: &super::qp::QpS| q.state == QpState::Rts && !q.rnr_wait;
                if self.qps.get(&at).is_some_and(sending) {
                    self.rearm(at);
                    self.transmit(at);
                }
            }
        }
    }
}

/// `ns` times `factor`, at least 1 ns: a timer always lets time pass.
fn scale(ns: u64, factor: f64) -> u64 {
    ((ns as f64 * factor) as u64).max(1)
}

/// A seeded permutation of `0..n`.
fn shuffled(n: u32, rng: &mut transport::Rng) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n).collect();
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

/// The responder.
impl World {
    fn respond(&mut self, qpn: u32, from: u32, psn: u32, req: Req) {
        let q = &self.qps[&qpn];
        let ahead = psn_diff(psn, q.epsn);
        // Behind the expected PSN but received in this life: a duplicate. Anything else
        // unexpected (ahead, or from before the last RTR) is dropped.
        if ahead < 0 && psn_diff(psn, q.first_psn) >= 0 {
            self.duplicate(qpn, psn, &req);
            return;
        }
        if ahead != 0 {
            let pd = q.pd;
            self.count(pd, |s| s.dropped += 1);
            return;
        }
        if let Err(status) = self.check_request(qpn, from, psn, &req) {
            self.refuse(qpn, psn, status);
            return;
        }
        match req.op {
            ReqOp::Write { rkey, raddr } => {
                let mr = &self.mrs[&rkey];
                let at = mr.offset_of(raddr, u64::from(req.msg_len));
                mr.land(at.expect("checked") + req.offset as usize, &req.data);
                self.accepted(qpn, psn, 1, req.last);
            }
            ReqOp::Send => self.land_send(qpn, psn, req),
            ReqOp::Read { rkey, raddr } => self.answer_read(qpn, psn, rkey, raddr, req.msg_len),
            ReqOp::Atomic { rkey, raddr, op } => self.answer_atomic(qpn, psn, rkey, raddr, op),
        }
    }

    /// An atomic runs on the target word now; the old value goes back in the byte order of
    /// the responder's device, and is kept to answer a duplicate.
    fn answer_atomic(&mut self, qpn: u32, psn: u32, rkey: u32, raddr: u64, op: AtomicOp) {
        let mr = &self.mrs[&rkey];
        let mut old = mr.atomic(mr.offset_of(raddr, 8).expect("checked"), op);
        if swaps_atomics(self.spec(self.qps[&qpn].pd).caps.atomic_cap) {
            old = old.swap_bytes();
        }
        let q = self.qps.get_mut(&qpn).expect("routed");
        q.atomic_replay.push_back((psn, old));
        // One saved result per read/atomic resource, as a responder keeps them (IBA 9.7.5.2.4).
        if q.atomic_replay.len() > usize::from(q.max_dest_rd_atomic).max(1) {
            q.atomic_replay.pop_front();
        }
        q.epsn = psn_add(q.epsn, 1);
        self.reply(qpn, psn, Body::AtomicResp { old });
    }

    /// A request packet executed: the expected PSN moves on, and the last packet of a write or
    /// send is ACKed.
    fn accepted(&mut self, qpn: u32, psn: u32, span: u32, ack: bool) {
        let q = self.qps.get_mut(&qpn).expect("routed");
        q.epsn = psn_add(q.epsn, span);
        if ack {
            self.reply(qpn, psn, Body::Ack);
        }
    }

    /// Responder checks 1 to 4 (IBA order): the queue pair's access flags (per
    /// [`AccessCheck`]), a live registration of the same protection domain with the right
    /// bit, the range, then atomic alignment and read/atomic resources.
    fn check_request(&mut self, qpn: u32, from: u32, psn: u32, req: &Req) -> Result<(), u32> {
        let per_packet = self.cfg.access_check == AccessCheck::PerPacket;
        let q = self.qps.get_mut(&qpn).expect("routed");
        if req.first {
            q.msg_access = q.access;
        }
        let flags = if per_packet || req.first {
            q.access
        } else {
            q.msg_access
        };
        let (rkey, raddr, len, allowed) = match req.op {
            ReqOp::Send => return Ok(()),
            ReqOp::Write { rkey, raddr } => (rkey, raddr, req.msg_len, Rights::write as Allowed),
            ReqOp::Read { rkey, raddr } => (rkey, raddr, req.msg_len, Rights::read as Allowed),
            ReqOp::Atomic { rkey, raddr, .. } => (rkey, raddr, 8, Rights::atomic as Allowed),
        };
        if !allowed(flags) {
            return Err(code::REM_ACCESS_ERR);
        }
        let pd = q.pd;
        let mr = self
            .mrs
            .get(&rkey)
            .filter(|mr| mr.pd == pd && allowed(mr.remote));
        let Some(mr) = mr else {
            return Err(code::REM_ACCESS_ERR);
        };
        if mr.offset_of(raddr, u64::from(len)).is_none() {
            return Err(code::REM_ACCESS_ERR);
        }
        if let ReqOp::Atomic { .. } = req.op {
            if raddr % 8 != 0 {
                return Err(code::REM_INV_REQ_ERR);
            }
        }
        if matches!(req.op, ReqOp::Read { .. } | ReqOp::Atomic { .. }) {
            let in_flight = self.qps.get(&from).map_or(0, |r| r.rd_atomic_up_to(psn));
            if in_flight > usize::from(self.qps[&qpn].max_dest_rd_atomic) {
                return Err(code::REM_INV_REQ_ERR);
            }
        }
        Ok(())
    }

    /// A responder error: the requester is NAKed with `status`, and the responder queue pair
    /// goes to ERR too (rxe's `do_class_ac_error`), flushing its queues onto its owner's CQ.
    fn refuse(&mut self, qpn: u32, psn: u32, status: u32) {
        self.reply(qpn, psn, Body::Nak(status));
        self.enter_error(qpn);
    }

    /// Responder check 5 and landing of a send: the head receive (else an RNR NAK), long
    /// enough (else `LOC_LEN_ERR` here and `REM_INV_REQ_ERR` there), in a live registration
    /// (else `LOC_PROT_ERR` here and `REM_OP_ERR` there).
    fn land_send(&mut self, qpn: u32, psn: u32, req: Req) {
        let q = &self.qps[&qpn];
        let (pd, cq) = (q.pd, q.cq);
        if req.first {
            let frozen = self.faults.frozen(pd, &self.spec(pd).name);
            let q = self.qps.get_mut(&qpn).expect("routed");
            // A frozen receive queue keeps its receives: the receiver "stopped posting".
            let head = if frozen { None } else { q.rq.pop_front() };
            let Some(recv) = head else {
                let wait = RNR_TIMER_10US[usize::from(q.min_rnr_timer & 31)] * 10_000;
                let wait = self.scaled(wait);
                self.count(pd, |s| s.rnr_naks += 1);
                self.reply(qpn, psn, Body::RnrNak { wait });
                return;
            };
            if req.msg_len > recv.len {
                let wc = Wc {
                    id: recv.id,
                    status: code::LOC_LEN_ERR,
                    byte_len: 0,
                };
                self.push_cqe(cq, wc, None);
                self.refuse(qpn, psn, code::REM_INV_REQ_ERR);
                return;
            }
            q.cur_recv = Some((recv, 0));
        }
        let Some((recv, _)) = self.qps[&qpn].cur_recv else {
            return;
        };
        let target = self
            .mrs
            .get(&recv.lkey)
            .filter(|mr| mr.pd == pd)
            .and_then(|mr| Some(mr).zip(mr.offset_of(recv.addr, u64::from(recv.len))));
        let Some((mr, at)) = target else {
            let wc = Wc {
                id: recv.id,
                status: code::LOC_PROT_ERR,
                byte_len: 0,
            };
            self.qps.get_mut(&qpn).expect("routed").cur_recv = None;
            self.push_cqe(cq, wc, None);
            self.refuse(qpn, psn, code::REM_OP_ERR);
            return;
        };
        mr.land(at + req.offset as usize, &req.data);
        let q = self.qps.get_mut(&qpn).expect("routed");
        let got = q.cur_recv.as_mut().map_or(0, |(_, got)| {
            *got += req.data.len() as u32;
            *got
        });
        if req.last {
            q.cur_recv = None;
            let wc = Wc {
                id: recv.id,
                status: code::SUCCESS,
                byte_len: got,
            };
            self.push_cqe(cq, wc, None);
        }
        self.accepted(qpn, psn, 1, req.last);
    }

    /// A read: its bytes are read now and sent in response packets of the responder's path
    /// MTU, one PSN each.
    fn answer_read(&mut self, qpn: u32, psn: u32, rkey: u32, raddr: u64, len: u32) {
        let mtu = self.qps[&qpn].path_mtu;
        let mr = &self.mrs[&rkey];
        let at = mr.offset_of(raddr, u64::from(len)).expect("checked");
        let n = packets(len, mtu);
        let chunks: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let off = i * mtu;
                let mut data = vec![0; mtu.min(len - off.min(len)) as usize];
                mr.fetch(at + off as usize, &mut data);
                data
            })
            .collect();
        self.accepted(qpn, psn, n, false);
        for (i, data) in chunks.into_iter().enumerate() {
            let i = i as u32;
            let body = Body::ReadResp {
                offset: i * mtu,
                data,
                last: i + 1 == n,
            };
            self.reply(qpn, psn_add(psn, i), body);
        }
    }

    /// A request seen before (its ACK or response was lost or is late): ACK a write or send
    /// again, answer a read again, repeat an atomic's old value without executing it twice.
    fn duplicate(&mut self, qpn: u32, psn: u32, req: &Req) {
        match req.op {
            ReqOp::Write { .. } | ReqOp::Send => {
                if req.last {
                    self.reply(qpn, psn, Body::Ack);
                }
            }
            ReqOp::Read { rkey, raddr } => {
                let pd = self.qps[&qpn].pd;
                let live = self.mrs.get(&rkey).is_some_and(|mr| {
                    let inside = mr.offset_of(raddr, u64::from(req.msg_len)).is_some();
                    mr.pd == pd && mr.remote.read() && inside
                });
                if live {
                    let epsn = self.qps[&qpn].epsn;
                    self.answer_read(qpn, psn, rkey, raddr, req.msg_len);
                    self.qps.get_mut(&qpn).expect("routed").epsn = epsn;
                }
            }
            ReqOp::Atomic { .. } => {
                let q = &self.qps[&qpn];
                let old = q
                    .atomic_replay
                    .iter()
                    .find(|(p, _)| *p == psn)
                    .map(|&(_, o)| o);
                if let Some(old) = old {
                    self.reply(qpn, psn, Body::AtomicResp { old });
                }
            }
        }
    }
}

/// The requester's side of responses.
impl World {
    fn on_response(&mut self, qpn: u32, psn: u32, body: Body) {
        let Some(at) = self.qps[&qpn].entry_of(psn) else {
            return;
        };
        match body {
            Body::Req(_) => unreachable!("requests go to the responder"),
            Body::Ack => self.on_ack(qpn, psn),
            Body::Nak(status) => self.fail_request(qpn, at, status),
            Body::RnrNak { wait } => self.on_rnr_nak(qpn, at, wait),
            Body::ReadResp { offset, data, last } => {
                self.on_read_response(qpn, at, psn, offset, &data, last)
            }
            Body::AtomicResp { old } => self.on_atomic_response(qpn, at, old),
        }
    }

    /// An ACK completes every write and send fully sent up to its PSN (ACKs coalesce).
    fn on_ack(&mut self, qpn: u32, psn: u32) {
        let q = self.qps.get_mut(&qpn).expect("routed");
        for e in q.sq.iter_mut().filter(|e| e.done.is_none()) {
            let end = psn_add(e.psn, e.span - 1);
            let acked = psn_diff(psn, end) >= 0 && e.next_pkt == e.req_pkts;
            if acked && matches!(e.op, SqOp::Write { .. } | SqOp::Send { .. }) {
                e.done = Some(code::SUCCESS);
            }
        }
        self.retire(qpn);
    }

    fn on_read_response(
        &mut self,
        qpn: u32,
        at: usize,
        psn: u32,
        offset: u32,
        data: &[u8],
        last: bool,
    ) {
        let q = &self.qps[&qpn];
        let e = &q.sq[at];
        let SqOp::Read { dst, .. } = &e.op else {
            return;
        };
        if e.done.is_some() || psn_diff(psn, e.psn) != e.resp_next as i32 {
            return;
        }
        if let Err(status) = self.land_local(q.pd, dst, offset, data) {
            return self.fail_request(qpn, at, status);
        }
        let e = &mut self.qps.get_mut(&qpn).expect("routed").sq[at];
        e.resp_next += 1;
        if last {
            e.done = Some(code::SUCCESS);
            self.retire(qpn);
        }
    }

    /// The old value lands in the requester's 8 bytes as the responder's device returned it.
    fn on_atomic_response(&mut self, qpn: u32, at: usize, old: u64) {
        let q = &self.qps[&qpn];
        let e = &q.sq[at];
        let SqOp::Atomic { dst, .. } = &e.op else {
            return;
        };
        if e.done.is_some() {
            return;
        }
        if let Err(status) = self.land_local(q.pd, dst, 0, &old.to_le_bytes()) {
            return self.fail_request(qpn, at, status);
        }
        self.qps.get_mut(&qpn).expect("routed").sq[at].done = Some(code::SUCCESS);
        self.retire(qpn);
    }

    /// Lands response bytes in a local SGE, checked again now (it may have been deregistered).
    fn land_local(&self, pd: usize, dst: &Bytes, offset: u32, data: &[u8]) -> Result<(), u32> {
        let base = self.local(pd, dst)?;
        if let Bytes::Sge { lkey, .. } = dst {
            self.mrs[lkey].land(base + offset as usize, data);
        }
        Ok(())
    }

    /// An RNR NAK for entry `at`: wait and send again, unless the RNR budget is spent
    /// (`rnr_retry` 7 is without end).
    fn on_rnr_nak(&mut self, qpn: u32, at: usize, wait: u64) {
        let q = self.qps.get_mut(&qpn).expect("routed");
        let e = &mut q.sq[at];
        if q.rnr_retry != 7 && e.rnr_retries >= q.rnr_retry {
            self.fail_request(qpn, at, code::RNR_RETRY_EXC_ERR);
            return;
        }
        e.rnr_retries = e.rnr_retries.saturating_add(1);
        let first = q.sq.iter().position(|e| e.done.is_none()).unwrap_or(at);
        q.rewind(first);
        q.rnr_wait = true;
        q.timer += 1;
        let (timer, due) = (q.timer, self.now + wait);
        self.schedule(due, Event::RnrResume { qpn, timer });
    }
}
