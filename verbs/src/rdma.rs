//! The verbs runtime proper (feature `rdma`): device discovery, a node's queue pairs and memory,
//! the [`Nic`] over them, and [`VerbsRuntime`], which runs every node of a run as threads of one
//! OS process on one device (tests, the conformance suite, single-host measurements).
//!
//! One node is one process: a protection domain, one completion queue, its regions (registered
//! once for local use and once per peer, [`crate::access`]), and towards every node (itself
//! included) one RC queue pair per [`Qp`] kind, each with a staging ring for the bytes of its
//! sends and writes ([`crate::staging`]) and receive buffers for two-sided messages. The process
//! posts straight to its queue pairs and polls its completion queue from its own thread: no
//! thread stands between the protocol and the NIC, as on real deployments.
//!
//! Queue pairs are connected with the messages of [`crate::bootstrap`], handed between the
//! node threads in memory; a reconnect is the same exchange again. The module docs of the crate
//! list the departures from the model.
//!
//! Its parts: `rdma/device.rs` opens the device and makes registrations and queue pairs,
//! `rdma/link.rs` is a queue pair towards one peer and the posting of one work request, this
//! file is the node's [`VerbsNic`], and `rdma/runtime.rs` runs nodes ([`VerbsRuntime`],
//! [`run_node`]).

mod device;
mod link;
mod runtime;

pub(crate) use device::discover;
pub use device::probe_limits;
use device::{create_qp, open_device, qp_flags_of, register};
use link::{split_id, Link, Peer, Src, Waiting, Wr};
pub use runtime::{run_node, VerbsControl, VerbsRun, VerbsRuntime};

use crate::access::{AccessBook, Plan, Rights};
use crate::bootstrap::{Endpoint, Message, RemoteRegion};
use crate::completion::{map_status, Health};
use crate::control::Control;
use crate::device::{DeviceChoice, DeviceInfo};
use crate::handshake::{Action, Handshake};
use crate::signal::{self, Piece, Report, SendQueue, Staged};
use crate::staging::Staging;
use sideway::ibverbs::address::{AddressHandleAttribute, Gid};
use sideway::ibverbs::completion::BasicCompletionQueue;
use sideway::ibverbs::device_context::{DeviceContext, Mtu};
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{QueuePair, QueuePairAttribute, QueuePairState};
use std::collections::VecDeque;
use std::fmt;
use std::net::Ipv6Addr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use transport::runtime::shared_memory::Words;
use transport::{
    nic::validate, Access, Completion, LocalAddr, Nanos, Nic, NicLimits, Op, OpError, OpKind,
    ProcessId, Purpose, Qp, Recv, RegionId, RegionSpec, RegionTable, Rng, Status, WrId,
};

/// Bytes of the header in front of every two-sided message: its kind, and for a
/// write-with-immediate the immediate and where the write landed.
const HEADER: usize = 32;
/// Header kind: a message of the process's.
const KIND_MESSAGE: u8 = 0;
/// Header kind: the immediate of a write that landed just before.
const KIND_IMMEDIATE: u8 = 1;

/// Set in the work-request id of every receive.
const RECV: u64 = 1 << 63;

/// Settings of a verbs run (the same on every node).
#[derive(Clone, Debug)]
pub struct VerbsConfig {
    /// Seeds the processes' random streams and the queue pairs' first sequence numbers.
    pub seed: u64,
    /// The device, port and GID index.
    pub device: DeviceChoice,
    /// Work requests each send queue holds.
    pub send_depth: usize,
    /// Receive buffers posted per queue pair.
    pub recv_depth: usize,
    /// Bytes of each receive buffer: the largest message is this less a 32-byte header.
    pub recv_size: usize,
    /// Bytes of a data queue pair's staging ring (a control queue pair gets 1/16).
    pub staging: usize,
    /// The largest piece one work request of a write carries (at most a quarter of the ring).
    pub chunk: usize,
    /// The inline limit asked of each queue pair (the device may grant less; then less is
    /// tried, down to none).
    pub inline: u32,
    /// The ACK timeout exponent: 4.096 us x 2^this per try.
    pub ack_timeout: u8,
    /// Transport retries before a peer is unreachable.
    pub retry_cnt: u8,
    /// How long a node waits for every node's hello.
    pub connect_timeout: Duration,
}

impl Default for VerbsConfig {
    fn default() -> Self {
        VerbsConfig {
            seed: 0,
            device: DeviceChoice::default(),
            send_depth: 256,
            recv_depth: 16,
            recv_size: 16 << 10,
            staging: 1 << 20,
            chunk: 256 << 10,
            inline: 220,
            // 4.096 us x 2^12 = 16.8 ms per try, 7 tries: a dead peer is noticed in ~120 ms.
            ack_timeout: 12,
            retry_cnt: 7,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// How long each access change took, by path ([`crate::access`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AccessTimings {
    /// Queue-pair flag changes.
    pub fast: Vec<Duration>,
    /// Re-registrations (until the call returned, the new rkeys sent).
    pub slow: Vec<Duration>,
}

/// The NIC a process of the verbs runtime polls with.
pub struct VerbsNic {
    me: ProcessId,
    cfg: VerbsConfig,
    info: DeviceInfo,
    mtu: Mtu,
    table: RegionTable,
    limits: NicLimits,
    rng: Rng,
    /// The runtime's own choices (first packet sequence numbers), apart from the process's.
    psns: Rng,
    start: Instant,
    next_wr: u64,
    control: Arc<dyn Control>,
    book: AccessBook,
    cq_out: VecDeque<Completion>,
    rq_out: VecDeque<Recv>,
    timings: AccessTimings,
    // Verbs objects: queue pairs and registrations go before the memory and the domain.
    peers: Vec<Peer>,
    local_mrs: Vec<Arc<MemoryRegion>>,
    /// `[region][peer]`.
    peer_mrs: Vec<Vec<Arc<MemoryRegion>>>,
    regions: Vec<Words>,
    cq: Arc<BasicCompletionQueue>,
    pd: Arc<ProtectionDomain>,
    _ctx: Arc<DeviceContext>,
}

impl fmt::Debug for VerbsNic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerbsNic")
            .field("me", &self.me)
            .field("device", &self.info.name)
            .finish_non_exhaustive()
    }
}

impl VerbsNic {
    /// Sets up node `me` of a run whose processes declared `specs`: memory, registrations,
    /// queue pairs in INIT, receive buffers.
    fn open(
        me: ProcessId,
        cfg: &VerbsConfig,
        specs: &[Vec<RegionSpec>],
        control: Arc<dyn Control>,
        start: Instant,
    ) -> Result<VerbsNic, String> {
        let (ctx, info, mtu) = open_device(&cfg.device).map_err(|e| e.to_string())?;
        let n = specs.len();
        let pd = ctx
            .alloc_pd()
            .map_err(|e| format!("ibv_alloc_pd failed: {e}"))?;
        let per_qp = cfg.send_depth + cfg.recv_depth;
        let cq = ctx
            .create_cq_builder()
            .setup_cqe((n * Qp::COUNT * per_qp + 64) as u32)
            .build()
            .map_err(|e| format!("ibv_create_cq failed: {e}"))?;
        let mine = &specs[me.index()];
        let book = AccessBook::new(mine, n);
        let regions: Vec<Words> = mine.iter().map(|s| Words::new(s.len)).collect();
        let local_mrs = regions
            .iter()
            .map(|m| register(&pd, m, Rights::NONE))
            .collect::<Result<Vec<_>, _>>()?;
        let mut peer_mrs = Vec::with_capacity(regions.len());
        for (r, mem) in regions.iter().enumerate() {
            let row = (0..n)
                .map(|p| {
                    register(
                        &pd,
                        mem,
                        book.registered(RegionId(r as u16), ProcessId(p as u32)),
                    )
                })
                .collect::<Result<Vec<_>, _>>()?;
            peer_mrs.push(row);
        }
        let rng = Rng::derive(cfg.seed, Purpose::Protocol, me.0 as u64);
        let mut psns = Rng::derive(cfg.seed, Purpose::Scheduler, 1 << 32 | me.0 as u64);
        let mut inline = cfg.inline;
        let mut peers = Vec::with_capacity(n);
        for p in 0..n {
            let mut links = Vec::with_capacity(Qp::COUNT);
            for q in 0..Qp::COUNT {
                let staging = if q == Qp::Data.index() {
                    cfg.staging
                } else {
                    cfg.staging / 16
                };
                let stage_mem = Words::new(staging);
                let stage_mr = register(&pd, &stage_mem, Rights::NONE)?;
                let recv_mem = Words::new(cfg.recv_depth * cfg.recv_size);
                let recv_mr = register(&pd, &recv_mem, Rights::NONE)?;
                let qp = create_qp(&pd, &cq, cfg, &mut inline)?;
                links.push(Link {
                    qp,
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
                });
            }
            peers.push(Peer {
                links,
                remote: Vec::new(),
                hs: Handshake::default(),
                down: control.crashed(ProcessId(p as u32)),
            });
        }
        let limits = NicLimits {
            inline_max: inline as usize,
            send_max: cfg.recv_size - HEADER,
        };
        let mut nic = VerbsNic {
            me,
            cfg: cfg.clone(),
            info,
            mtu,
            table: RegionTable::new(specs),
            limits,
            rng,
            psns,
            start,
            next_wr: 0,
            control,
            book,
            cq_out: VecDeque::new(),
            rq_out: VecDeque::new(),
            timings: AccessTimings::default(),
            peers,
            local_mrs,
            peer_mrs,
            regions,
            cq,
            pd,
            _ctx: ctx,
        };
        for p in 0..n {
            for q in 0..Qp::COUNT {
                nic.init_link(ProcessId(p as u32), q)?;
            }
        }
        Ok(nic)
    }

    /// The device this node runs on.
    pub fn device(&self) -> &DeviceInfo {
        &self.info
    }

    /// How long this node's access changes took.
    pub fn access_timings(&self) -> &AccessTimings {
        &self.timings
    }

    /// Brings a reset queue pair to INIT with the peer's access flags and posts its receive
    /// buffers.
    fn init_link(&mut self, p: ProcessId, q: usize) -> Result<(), String> {
        let flags = qp_flags_of(self.book.flags(p));
        let (port, depth, size) = (
            self.cfg.device.port,
            self.cfg.recv_depth,
            self.cfg.recv_size,
        );
        let link = &mut self.peers[p.index()].links[q];
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::Init)
            .setup_pkey_index(0)
            .setup_port(port)
            .setup_access_flags(flags);
        link.qp
            .modify(&attr)
            .map_err(|e| format!("queue pair to {p} to INIT: {e}"))?;
        link.post_recvs(p, q, 0..depth, size)
    }

    /// Moves an INIT queue pair to RTR and RTS against the peer's endpoint.
    fn connect_link(&mut self, p: ProcessId, q: usize, theirs: &Endpoint) -> Result<(), String> {
        let (port, gid_index, mtu) = (self.cfg.device.port, self.info.gid_index, self.mtu);
        let (timeout, retry) = (self.cfg.ack_timeout, self.cfg.retry_cnt);
        let link = &mut self.peers[p.index()].links[q];
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::ReadyToReceive)
            .setup_path_mtu(mtu)
            .setup_dest_qp_num(theirs.qpn[q])
            .setup_rq_psn(theirs.psn[q])
            .setup_max_dest_read_atomic(16)
            .setup_min_rnr_timer(12);
        let mut ah = AddressHandleAttribute::new();
        ah.setup_dest_lid(theirs.lid)
            .setup_port(port)
            .setup_service_level(0)
            .setup_grh_src_gid_index(gid_index as u8)
            .setup_grh_dest_gid(&Gid::from(Ipv6Addr::from(theirs.gid)))
            .setup_grh_hop_limit(64);
        attr.setup_address_vector(&ah);
        link.qp
            .modify(&attr)
            .map_err(|e| format!("queue pair to {p} to RTR: {e}"))?;
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::ReadyToSend)
            .setup_sq_psn(link.psn)
            .setup_timeout(timeout)
            .setup_retry_cnt(retry)
            .setup_rnr_retry(7)
            .setup_max_read_atomic(16);
        link.qp
            .modify(&attr)
            .map_err(|e| format!("queue pair to {p} to RTS: {e}"))?;
        link.health = Health::Up;
        Ok(())
    }

    /// This node's queue pairs for `p`.
    fn endpoint(&self, p: ProcessId) -> Endpoint {
        let links = &self.peers[p.index()].links;
        let mut e = Endpoint {
            lid: self.info.lid,
            gid: self.info.gid,
            ..Endpoint::default()
        };
        for (q, l) in links.iter().enumerate() {
            e.qpn[q] = l.qp.qp_number();
            e.psn[q] = l.psn;
        }
        // Every reset moves both queue pairs to the peer together.
        e.incarnation = links[Qp::Data.index()].epoch as u32;
        e
    }

    /// This node's regions as `p` addresses them.
    fn regions_for(&self, p: ProcessId) -> Vec<RemoteRegion> {
        self.regions
            .iter()
            .zip(&self.peer_mrs)
            .map(|(mem, mrs)| RemoteRegion {
                addr: mem.addr() as u64,
                len: mem.capacity() as u64,
                rkey: mrs[p.index()].rkey(),
            })
            .collect()
    }

    /// The hello this node sends each node that is not down (in id order, itself included).
    fn hellos(&self) -> Vec<Message> {
        let digest = self.table.digest();
        (0..self.peers.len() as u32)
            .map(ProcessId)
            .filter(|p| !self.peers[p.index()].down)
            .map(|p| Message::Hello {
                from: self.me.0,
                to: p.0,
                table: digest,
                endpoint: self.endpoint(p),
                regions: self.regions_for(p),
            })
            .collect()
    }

    /// Connects every queue pair to the endpoints of the hellos received (checked), and marks
    /// the pairs to nodes that are down unreachable.
    fn connect_hellos(&mut self, hellos: Vec<Message>) -> Result<(), String> {
        let digest = self.table.digest();
        for m in hellos {
            let (from, _) = m.route();
            crate::bootstrap::check_hello(&m, self.me, from, digest).map_err(|e| e.to_string())?;
            if let Message::Hello {
                endpoint, regions, ..
            } = m
            {
                for q in 0..Qp::COUNT {
                    self.connect_link(from, q, &endpoint)?;
                }
                self.peers[from.index()].remote = regions;
            }
        }
        for peer in &mut self.peers {
            if peer.down {
                for l in &mut peer.links {
                    l.health = Health::Broken(Status::PeerUnreachable);
                }
            }
        }
        Ok(())
    }

    /// The bootstrap inside one OS process: hellos through the mailboxes.
    fn bootstrap_in_process(&mut self) -> Result<(), String> {
        for h in self.hellos() {
            self.control.send(h);
        }
        let live = self.peers.iter().filter(|p| !p.down).count();
        let deadline = Instant::now() + self.cfg.connect_timeout;
        let mut got = Vec::with_capacity(live);
        while got.len() < live {
            match self.control.take(self.me) {
                Some(m) => got.push(m),
                None if Instant::now() > deadline => {
                    return Err(format!(
                        "{}: {} of {live} hellos after {:?}",
                        self.me,
                        got.len(),
                        self.cfg.connect_timeout
                    ))
                }
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        self.connect_hellos(got)
    }

    fn complete(&mut self, wr: WrId, kind: OpKind, peer: ProcessId, status: Status) {
        self.cq_out.push_back(Completion {
            wr,
            kind,
            peer,
            status,
            value: None,
        });
    }

    /// Resets the queue pairs to `p` and brings them back to INIT with fresh sequence
    /// numbers: everything outstanding or waiting towards `p` fails as the pair's health says.
    fn reset_links(&mut self, p: ProcessId) {
        for q in 0..Qp::COUNT {
            let link = &mut self.peers[p.index()].links[q];
            let status = link.health.flushed();
            let retired = signal::fail_all(&mut link.sq, status);
            let backlog: Vec<Waiting> = link.backlog.drain(..).collect();
            link.staging = Staging::new(link.staging.capacity());
            link.epoch += 1;
            link.sq.reconnect();
            link.psn = (self.psns.next_u64() & 0xFF_FFFF) as u32;
            let mut attr = QueuePairAttribute::new();
            attr.setup_state(QueuePairState::Reset);
            if let Err(e) = link.qp.modify(&attr) {
                eprintln!("verbs {}: resetting the queue pair to {p}: {e}", self.me);
            }
            for r in retired.reports {
                self.report(p, &r, None);
            }
            for w in backlog {
                self.complete(w.wr, w.op.kind(), p, status);
            }
            if let Err(e) = self.init_link(p, q) {
                eprintln!("verbs {}: {e}", self.me);
                self.peers[p.index()].links[q].health = Health::Broken(Status::PeerUnreachable);
            }
        }
    }

    fn report(&mut self, p: ProcessId, r: &Report, value: Option<u64>) {
        self.cq_out.push_back(Completion {
            wr: r.op,
            kind: r.kind,
            peer: p,
            status: r.status,
            value,
        });
    }

    fn connect_all(&mut self, p: ProcessId, endpoint: &Endpoint, regions: Vec<RemoteRegion>) {
        for q in 0..Qp::COUNT {
            if let Err(e) = self.connect_link(p, q, endpoint) {
                eprintln!("verbs {}: {e}", self.me);
                self.peers[p.index()].links[q].health = Health::Broken(Status::PeerUnreachable);
            }
        }
        self.peers[p.index()].remote = regions;
    }

    /// Performs a handshake's actions towards `p`; `theirs`: the endpoint and regions of the
    /// message being handled.
    fn perform(
        &mut self,
        p: ProcessId,
        actions: Vec<Action>,
        theirs: Option<(&Endpoint, &[RemoteRegion])>,
    ) {
        for a in actions {
            match a {
                Action::Reset => self.reset_links(p),
                Action::Connect => {
                    let (endpoint, regions) = theirs.expect("a connect answers a message");
                    self.connect_all(p, endpoint, regions.to_vec());
                }
                Action::SendReconnect => self.control.send(Message::Reconnect {
                    from: self.me.0,
                    to: p.0,
                    endpoint: self.endpoint(p),
                    regions: self.regions_for(p),
                }),
                Action::SendAccepted => self.control.send(Message::Accepted {
                    from: self.me.0,
                    to: p.0,
                    answers: theirs.expect("an answer to a message").0.incarnation,
                    endpoint: self.endpoint(p),
                    regions: self.regions_for(p),
                }),
                Action::Complete(wrs, status) => {
                    for wr in wrs {
                        self.complete(wr, OpKind::Reconnect, p, status);
                    }
                }
            }
        }
    }

    fn reconnect(&mut self, p: ProcessId, wr: WrId) {
        let peer = &mut self.peers[p.index()];
        if peer.down || self.control.crashed(p) {
            self.complete(wr, OpKind::Reconnect, p, Status::PeerUnreachable);
            return;
        }
        let up = peer.links.iter().all(|l| l.health == Health::Up);
        let actions = peer.hs.reconnect(Some(wr), up);
        self.perform(p, actions, None);
    }

    /// Answers reconnects from peers and completes this node's own.
    fn service_mail(&mut self) {
        while let Some(m) = self.control.take(self.me) {
            let p = m.route().0;
            match m {
                Message::Reconnect {
                    endpoint, regions, ..
                } => {
                    let actions = self.peers[p.index()].hs.on_reconnect();
                    self.perform(p, actions, Some((&endpoint, &regions)));
                }
                Message::Accepted {
                    endpoint,
                    regions,
                    answers,
                    ..
                } => {
                    let current = answers == self.endpoint(p).incarnation;
                    let actions = self.peers[p.index()].hs.on_accepted(current);
                    self.perform(p, actions, Some((&endpoint, &regions)));
                }
                Message::Rekey { regions, .. } => self.peers[p.index()].remote = regions,
                Message::Hello { .. } => {}
            }
        }
        // Reconnects to peers that crashed meanwhile end unreachable.
        for i in 0..self.peers.len() {
            let p = ProcessId(i as u32);
            if self.peers[i].hs.waiting() && self.control.crashed(p) {
                let actions = self.peers[i].hs.peer_gone();
                self.perform(p, actions, None);
            }
        }
    }

    /// Takes every work completion the device has.
    fn poll_device(&mut self) {
        let mut wcs = Vec::new();
        while let Ok(poller) = self.cq.start_poll() {
            let before = wcs.len();
            wcs.extend(poller.map(|wc| (wc.wr_id(), wc.status(), wc.byte_len())));
            if wcs.len() == before {
                break;
            }
        }
        for (id, status, len) in wcs {
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
        let values: Vec<Option<u64>> = retired
            .reports
            .iter()
            .map(|r| {
                let atomic = matches!(r.kind, OpKind::CompareSwap | OpKind::FetchAdd);
                (atomic && r.status == Status::Success)
                    .then(|| link.stage_mem.word(r.at).load(Ordering::Acquire))
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
        if epoch != link.epoch & 0xF_FFFF || status != crate::completion::code::SUCCESS {
            return; // flushed, or from before a reset (its buffer is posted again already)
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

    /// Posts what waits towards `p` on queue pair `q`, in order, while there is room.
    fn drain_backlog(&mut self, p: ProcessId, q: usize) {
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
                    self.break_link(p, q);
                    self.complete(w.wr, w.op.kind(), p, Status::Flushed);
                }
            }
        }
    }

    /// After a post the device refused (a runtime bug, reported): the pair is in error.
    fn break_link(&mut self, p: ProcessId, q: usize) {
        let link = &mut self.peers[p.index()].links[q];
        link.health = Health::Broken(Status::Flushed);
        let retired = signal::fail_all(&mut link.sq, Status::Flushed);
        link.staging.free(retired.staged);
        let backlog: Vec<Waiting> = link.backlog.drain(..).collect();
        for r in retired.reports {
            self.report(p, &r, None);
        }
        for w in backlog {
            self.complete(w.wr, w.op.kind(), p, Status::Flushed);
        }
    }

    /// Posts as many pieces of `w` as fit: `Ok(true)` once all are posted.
    fn post_pieces(&mut self, p: ProcessId, q: usize, w: &mut Waiting) -> Result<bool, String> {
        let (inline_max, chunk) = (self.limits.inline_max, self.cfg.chunk);
        let kind = w.op.kind();
        let peer = &mut self.peers[p.index()];
        let remote = |region: RegionId, offset: usize| {
            let r = peer.remote[region.index()];
            (r.rkey, r.addr + offset as u64)
        };
        match &w.op {
            Op::Write {
                dst,
                data,
                imm,
                flags,
            } => {
                let (rkey, raddr) = remote(dst.region, dst.offset);
                let link = &mut peer.links[q];
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
                    addr: (self.regions[into.region.index()].addr() + into.offset) as u64,
                    len: *len as u32,
                };
                let piece = Piece::whole(w.wr, kind, *signaled);
                self.peers[p.index()].links[q].post(p, q, piece, Wr::Read { rkey, raddr, dst })
            }
            Op::CompareSwap { dst, .. } | Op::FetchAdd { dst, .. } => {
                let (rkey, raddr) = remote(dst.region, dst.offset);
                let link = &mut peer.links[q];
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
            Op::SetAccess { .. } | Op::Reconnect { .. } => {
                unreachable!("handled when posted")
            }
        }
    }

    fn set_access(&mut self, region: RegionId, p: ProcessId, access: Access) {
        let began = Instant::now();
        let plan = self.book.plan(region, p, access);
        match &plan {
            Plan::Unchanged => {}
            Plan::QpFlags { flags, .. } => {
                self.set_flags(p, *flags);
                self.timings.fast.push(began.elapsed());
            }
            Plan::Reregister { regions, flags, .. } => {
                for &(r, rights) in regions {
                    match register(&self.pd, &self.regions[r.index()], rights) {
                        // The old registration is dropped (deregistered) here: no op of the
                        // peer lands through it after this returns.
                        Ok(mr) => self.peer_mrs[r.index()][p.index()] = mr,
                        Err(e) => eprintln!("verbs {}: re-registering {r} for {p}: {e}", self.me),
                    }
                }
                self.book.apply(region, p, access, &plan);
                self.set_flags(p, *flags);
                if !self.peers[p.index()].down {
                    self.control.send(Message::Rekey {
                        from: self.me.0,
                        to: p.0,
                        regions: self.regions_for(p),
                    });
                }
                self.timings.slow.push(began.elapsed());
                return;
            }
        }
        self.book.apply(region, p, access, &plan);
    }

    fn set_flags(&mut self, p: ProcessId, flags: Rights) {
        for link in &mut self.peers[p.index()].links {
            let mut attr = QueuePairAttribute::new();
            attr.setup_access_flags(qp_flags_of(flags));
            // A pair in error or reset takes the flags when it is brought up again
            // (`init_link` reads them from the book).
            if link.health == Health::Up {
                if let Err(e) = link.qp.modify(&attr) {
                    eprintln!("verbs: changing the access flags of a queue pair to {p}: {e}");
                }
            }
        }
    }

    fn check_local(&self, at: LocalAddr, len: usize) -> Result<&Words, OpError> {
        transport::nic::check_bounds(&self.table, self.me, at.region, at.offset, len)?;
        Ok(&self.regions[at.region.index()])
    }
}

impl Nic for VerbsNic {
    fn id(&self) -> ProcessId {
        self.me
    }

    fn regions(&self) -> &RegionTable {
        &self.table
    }

    fn now(&self) -> Nanos {
        Nanos(self.start.elapsed().as_nanos() as u64)
    }

    fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    fn limits(&self) -> NicLimits {
        self.limits
    }

    fn read_local(&self, at: LocalAddr, buf: &mut [u8]) -> Result<(), OpError> {
        self.check_local(at, buf.len())?.read(at.offset, buf);
        Ok(())
    }

    fn write_local(&mut self, at: LocalAddr, data: &[u8]) -> Result<(), OpError> {
        self.check_local(at, data.len())?.write(at.offset, data);
        Ok(())
    }

    fn load_u64(&self, at: LocalAddr) -> Result<u64, OpError> {
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        Ok(self
            .check_local(at, 8)?
            .word(at.offset)
            .load(Ordering::Acquire))
    }

    fn store_u64(&mut self, at: LocalAddr, value: u64) -> Result<(), OpError> {
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        self.check_local(at, 8)?
            .word(at.offset)
            .store(value, Ordering::Release);
        Ok(())
    }

    fn post(&mut self, op: Op) -> Result<WrId, OpError> {
        validate(&op, self.me, &self.table, &self.limits)?;
        if self.control.crashed(self.me) {
            return Err(OpError::Crashed);
        }
        let wr = WrId(self.next_wr);
        self.next_wr += 1;
        let p = op.peer();
        match op {
            Op::SetAccess { region, access, .. } => self.set_access(region, p, access),
            Op::Reconnect { .. } => self.reconnect(p, wr),
            op => {
                // Rkeys a peer re-registered before this op's cause reached us must be known
                // before it is posted (the mailbox is checked here, not only between polls).
                self.service_mail();
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
