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

use crate::access::{AccessBook, Plan, Rights};
use crate::bootstrap::{Endpoint, Message, RemoteRegion};
use crate::completion::{map_status, Health};
use crate::control::{Control, Mailboxes, TcpControl};
use crate::device::{DeviceChoice, DeviceInfo, NoDevice};
use crate::handshake::{Action, Handshake};
use crate::signal::{self, Piece, Report, SendQueue, Staged};
use crate::staging::{Slice, Staging};
use sideway::ibverbs::address::{AddressHandleAttribute, Gid, GidType};
use sideway::ibverbs::completion::BasicCompletionQueue;
use sideway::ibverbs::device::{DeviceInfo as _, DeviceList};
use sideway::ibverbs::device_context::{DeviceContext, LinkLayer, Mtu, PortState};
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{
    BasicQueuePair, PostSendGuard, QueuePair, QueuePairAttribute, QueuePairState, QueuePairType,
    SetInlineData, SetScatterGatherEntry, WorkRequestFlags,
};
use sideway::ibverbs::AccessFlags;
use std::collections::VecDeque;
use std::fmt;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use transport::runtime::shared_memory::Words;
use transport::{
    nic::validate, Access, Completion, LocalAddr, Nanos, Nic, NicLimits, Op, OpError, OpKind,
    Process, ProcessId, Purpose, Qp, Recv, RegionId, RegionSpec, RegionTable, Rng, Status, WrId,
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

fn mtu_bytes(m: Mtu) -> u32 {
    match m {
        Mtu::Mtu256 => 256,
        Mtu::Mtu512 => 512,
        Mtu::Mtu1024 => 1024,
        Mtu::Mtu2048 => 2048,
        Mtu::Mtu4096 => 4096,
    }
}

/// Opens the chosen device and describes its port.
fn open_device(choice: &DeviceChoice) -> Result<(Arc<DeviceContext>, DeviceInfo, Mtu), NoDevice> {
    let list = DeviceList::new().map_err(|e| {
        let why = if std::path::Path::new("/sys/class/infiniband").exists() {
            "is rdma-core installed (libibverbs1, ibverbs-providers)?"
        } else {
            "the kernel exposes no RDMA device (/sys/class/infiniband is absent: no RDMA driver is loaded; SoftRoCE needs the rdma_rxe module, see scripts/softroce.sh)"
        };
        NoDevice::new(format!("ibv_get_device_list failed ({e}): {why}"))
    })?;
    if list.is_empty() {
        return Err(NoDevice::new(
            "ibv_get_device_list found none (scripts/softroce.sh creates a SoftRoCE device on an Ethernet interface)",
        ));
    }
    let names: Vec<String> = list.iter().map(|d| d.name()).collect();
    let device = match &choice.name {
        None => list.get(0).expect("the list is not empty"),
        Some(n) => list.iter().find(|d| d.name() == *n).ok_or_else(|| {
            NoDevice::new(format!(
                "no device named {n} (there are: {})",
                names.join(", ")
            ))
        })?,
    };
    let name = device.name();
    let ctx = device
        .open()
        .map_err(|e| NoDevice::new(format!("{name} does not open: {e}")))?;
    let attr = ctx
        .query_device()
        .map_err(|e| NoDevice::new(format!("{name}: ibv_query_device failed: {e}")))?;
    if choice.port > attr.phys_port_cnt() {
        return Err(NoDevice::new(format!(
            "{name} has {} port(s), RDMA_PORT={} names none",
            attr.phys_port_cnt(),
            choice.port
        )));
    }
    let port = ctx
        .query_port(choice.port)
        .map_err(|e| NoDevice::new(format!("{name}: ibv_query_port failed: {e}")))?;
    if port.port_state() != PortState::Active {
        return Err(NoDevice::new(format!(
            "port {} of {name} is {:?}, not active (is its link up?)",
            choice.port,
            port.port_state()
        )));
    }
    let link = port.link_layer();
    let gid_index = match choice.gid_index {
        Some(i) => i,
        None if link == LinkLayer::Ethernet => roce_v2_gid(&ctx, choice.port).unwrap_or(0),
        None => 0,
    };
    let gid = ctx.query_gid(choice.port, gid_index).map_err(|e| {
        NoDevice::new(format!(
            "{name} port {}: no GID at index {gid_index} ({e})",
            choice.port
        ))
    })?;
    let mtu = port.active_mtu();
    let info = DeviceInfo {
        name,
        port: choice.port,
        link_layer: format!("{link:?}"),
        lid: port.lid(),
        gid_index,
        gid: Ipv6Addr::from(gid).octets(),
        mtu: mtu_bytes(mtu),
        firmware: attr.firmware_version(),
    };
    Ok((ctx, info, mtu))
}

/// The first RoCE v2 GID of `port` that is routable (not link-local), else the first RoCE v2
/// one: what perftest users pass as `-x` on RoCE.
fn roce_v2_gid(ctx: &DeviceContext, port: u8) -> Option<u32> {
    let table = ctx.query_gid_table().ok()?;
    let v2: Vec<_> = table
        .iter()
        .filter(|e| e.port_num() == port as u32 && e.gid_type() == GidType::RoceV2)
        .filter(|e| !e.gid().is_zero())
        .collect();
    v2.iter()
        .find(|e| !e.gid().is_unicast_link_local())
        .or(v2.first())
        .map(|e| e.gid_index())
}

/// See [`crate::device::discover`].
pub(crate) fn discover(choice: &DeviceChoice) -> Result<DeviceInfo, NoDevice> {
    open_device(choice).map(|(_, info, _)| info)
}

fn flags_of(rights: Rights) -> AccessFlags {
    let mut f = AccessFlags::LocalWrite;
    if rights.read() {
        f |= AccessFlags::RemoteRead;
    }
    if rights.write() {
        f |= AccessFlags::RemoteWrite;
    }
    if rights.atomic() {
        f |= AccessFlags::RemoteAtomic;
    }
    f
}

/// A queue pair's access flags: only the remote bits mean anything there.
fn qp_flags_of(rights: Rights) -> AccessFlags {
    flags_of(rights) & !AccessFlags::LocalWrite
}

/// Registers `len` bytes at `addr` (memory this node owns for the run).
fn register(
    pd: &Arc<ProtectionDomain>,
    mem: &Words,
    rights: Rights,
) -> Result<Arc<MemoryRegion>, String> {
    // SAFETY: `mem` is a heap allocation of `mem.capacity()` bytes that the node keeps, at
    // the same address, for as long as the registration (the node drops registrations first).
    unsafe { pd.reg_mr(mem.addr(), mem.capacity(), flags_of(rights)) }
        .map_err(|e| format!("ibv_reg_mr of {} bytes failed: {e}", mem.capacity()))
}

/// An RC queue pair on `cq` with the configured depths and the largest inline limit the device
/// grants, from `*inline` down (halving): `*inline` is left at the limit granted.
fn create_qp(
    pd: &Arc<ProtectionDomain>,
    cq: &Arc<BasicCompletionQueue>,
    cfg: &VerbsConfig,
    inline: &mut u32,
) -> Result<BasicQueuePair, String> {
    loop {
        let built = pd
            .create_qp_builder()
            .setup_qp_type(QueuePairType::ReliableConnection)
            .setup_max_send_wr(cfg.send_depth as u32)
            .setup_max_recv_wr(cfg.recv_depth as u32)
            .setup_max_send_sge(1)
            .setup_max_recv_sge(1)
            .setup_max_inline_data(*inline)
            .setup_send_cq(cq.clone())
            .setup_recv_cq(cq.clone())
            .build();
        match built {
            Ok(qp) => return Ok(qp),
            // The device grants less inline data: ask for less.
            Err(_) if *inline > 0 => *inline /= 2,
            Err(e) => return Err(format!("ibv_create_qp failed: {e}")),
        }
    }
}

/// The limits a node of a run with `cfg` reports to its process (the inline limit is what the
/// device grants a queue pair), found by creating one queue pair.
pub fn probe_limits(cfg: &VerbsConfig) -> Result<NicLimits, NoDevice> {
    let (ctx, info, _) = open_device(&cfg.device)?;
    let refused = |what: &str, e: String| NoDevice::new(format!("{}: {what}: {e}", info.name));
    let pd = ctx
        .alloc_pd()
        .map_err(|e| refused("ibv_alloc_pd", e.to_string()))?;
    let cq = ctx
        .create_cq_builder()
        .setup_cqe(64)
        .build()
        .map_err(|e| refused("ibv_create_cq", e.to_string()))?;
    let mut inline = cfg.inline;
    create_qp(&pd, &cq, cfg, &mut inline).map_err(|e| refused("a queue pair", e))?;
    Ok(NicLimits {
        inline_max: inline as usize,
        send_max: cfg.recv_size - HEADER,
    })
}

/// An op waiting for room in its queue pair, with how much of it is posted.
#[derive(Debug)]
struct Waiting {
    wr: WrId,
    op: Op,
    /// Payload bytes of a write posted so far (it goes in pieces).
    sent: usize,
    /// Every data piece of a write is posted (a write-with-immediate's header may wait).
    data_done: bool,
}

/// One queue pair towards one peer and what the runtime keeps for it.
struct Link {
    // Fields drop in order: the queue pair, then the registrations, then the memory they name.
    qp: BasicQueuePair,
    stage_mr: Arc<MemoryRegion>,
    recv_mr: Arc<MemoryRegion>,
    stage_mem: Words,
    recv_mem: Words,
    sq: SendQueue,
    health: Health,
    staging: Staging,
    /// Bumped at every reset: receive completions of an older incarnation are ignored.
    epoch: u64,
    backlog: VecDeque<Waiting>,
    psn: u32,
}

impl Link {
    /// Room in the send queue and `len` bytes of the staging ring, filled by `fill`, as a work
    /// request's source: `None` until earlier requests retire (the caller keeps its op).
    fn stage(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Option<(Src<'static>, Slice)> {
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
    fn post(&mut self, p: ProcessId, q: usize, piece: Piece, wr: Wr<'_>) -> Result<bool, String> {
        let Some((id, signal)) = self.sq.admit(piece) else {
            return Ok(false);
        };
        post_wr(&mut self.qp, send_id(p, q, id), signal, wr)?;
        Ok(true)
    }

    /// Posts a two-sided message, `header` then `body`: inline if it fits, else staged.
    fn send(
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
    fn post_recvs(
        &mut self,
        p: ProcessId,
        q: usize,
        ks: std::ops::Range<usize>,
        size: usize,
    ) -> Result<(), String> {
        let (lkey, base, epoch) = (self.recv_mr.lkey(), self.recv_mem.addr(), self.epoch);
        let mut guard = self.qp.start_post_recv();
        for k in ks {
            let h = guard.construct_wr(recv_id(p, q, epoch, k));
            // SAFETY: buffer `k` of the link's registered receive memory, which the link owns
            // for as long as its queue pair.
            unsafe { h.setup_sge(lkey, (base + k * size) as u64, size as u32) };
        }
        guard
            .post()
            .map_err(|e| format!("ibv_post_recv to {p}: {e}"))
    }
}

/// One peer: its queue pairs, its regions as this node addresses them, and a reconnect in
/// progress.
struct Peer {
    links: Vec<Link>,
    remote: Vec<RemoteRegion>,
    /// A reconnect with the peer ([`crate::handshake`]).
    hs: Handshake,
    /// Never connected: it had crashed before the run began.
    down: bool,
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

fn send_id(peer: ProcessId, qp: usize, seq: u64) -> u64 {
    (peer.0 as u64) << 44 | (qp as u64) << 40 | seq
}

fn recv_id(peer: ProcessId, qp: usize, epoch: u64, k: usize) -> u64 {
    RECV | (peer.0 as u64) << 40 | (qp as u64) << 36 | (epoch & 0xF_FFFF) << 16 | k as u64
}

/// A work request's id split back into its parts: (receive?, peer, queue pair, seq or
/// (epoch, buffer)).
fn split_id(id: u64) -> (bool, ProcessId, usize, u64) {
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

/// The source of a work request's bytes.
#[derive(Clone, Copy)]
enum Src<'a> {
    Inline(&'a [u8]),
    Sge { lkey: u32, addr: u64, len: u32 },
}

/// One work request to post.
#[derive(Clone, Copy)]
enum Wr<'a> {
    Write {
        rkey: u32,
        raddr: u64,
        src: Src<'a>,
    },
    Send {
        src: Src<'a>,
    },
    Read {
        rkey: u32,
        raddr: u64,
        dst: Src<'a>,
    },
    Cas {
        rkey: u32,
        raddr: u64,
        expect: u64,
        swap: u64,
        dst: Src<'a>,
    },
    Faa {
        rkey: u32,
        raddr: u64,
        add: u64,
        dst: Src<'a>,
    },
}

fn post_wr(qp: &mut BasicQueuePair, id: u64, signal: bool, wr: Wr<'_>) -> Result<(), String> {
    let inline = matches!(
        wr,
        Wr::Write {
            src: Src::Inline(_),
            ..
        } | Wr::Send {
            src: Src::Inline(_)
        }
    );
    let mut flags = WorkRequestFlags::none();
    if signal {
        flags |= WorkRequestFlags::Signaled;
    }
    if inline {
        flags |= WorkRequestFlags::Inline;
    }
    let mut guard = qp.start_post_send();
    let w = guard.construct_wr(id, flags);
    let (handle, src) = match wr {
        Wr::Write { rkey, raddr, src } => (w.setup_write(rkey, raddr), src),
        Wr::Send { src } => (w.setup_send(), src),
        Wr::Read { rkey, raddr, dst } => (w.setup_read(rkey, raddr), dst),
        Wr::Cas {
            rkey,
            raddr,
            expect,
            swap,
            dst,
        } => (w.setup_atomic_compare_swap(rkey, raddr, expect, swap), dst),
        Wr::Faa {
            rkey,
            raddr,
            add,
            dst,
        } => (w.setup_atomic_fetch_add(rkey, raddr, add), dst),
    };
    match src {
        Src::Inline(bytes) => handle.setup_inline_data(bytes),
        // SAFETY: every sge names registered memory the node owns for the whole run (staging,
        // receive buffers or a region), within its bounds (checked by `validate` and the
        // staging ring).
        Src::Sge { lkey, addr, len } => unsafe { handle.setup_sge(lkey, addr, len) },
    }
    guard
        .post()
        .map_err(|e| format!("ibv_post_send failed: {e}"))
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

/// The result of an in-process verbs run.
#[derive(Debug)]
pub struct VerbsRun<P> {
    /// The processes, in id order, as the run left them.
    pub processes: Vec<P>,
    /// The device the nodes ran on.
    pub device: DeviceInfo,
    /// Every node's access-change timings, in id order.
    pub access: Vec<AccessTimings>,
}

/// A handle to crash nodes of a run.
#[derive(Clone, Debug)]
pub struct VerbsControl {
    mailboxes: Arc<Mailboxes>,
}

impl VerbsControl {
    /// Crashes process `p`: it stops at once and its queue pairs are destroyed, so its peers'
    /// ops to it fail `PeerUnreachable` once their retries run out. Before the run, it never
    /// starts.
    pub fn crash(&self, p: ProcessId) {
        self.mailboxes.crash(p);
    }
}

/// Every node of a run as threads of this OS process, on one device.
pub struct VerbsRuntime<P> {
    cfg: VerbsConfig,
    processes: Vec<P>,
    mailboxes: Arc<Mailboxes>,
    device: DeviceInfo,
}

impl<P> fmt::Debug for VerbsRuntime<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerbsRuntime")
            .field("cfg", &self.cfg)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

/// Polls `process` on `nic` until `stop` says so: the NIC makes progress every round whether
/// or not the process polls its queues (reconnects answered, finished work requests retired,
/// backlogs posted). `stop` sees whether the process is done.
fn drive<P: Process<VerbsNic>>(
    nic: &mut VerbsNic,
    process: &mut P,
    mut stop: impl FnMut(bool) -> bool,
) {
    loop {
        if nic.control.crashed(nic.me) {
            return;
        }
        nic.service_mail();
        nic.poll_device();
        let progress = process.poll(nic);
        if stop(process.done()) {
            return;
        }
        if !progress.did_work {
            std::thread::yield_now();
        }
    }
}

impl<P: Process<VerbsNic> + Send> VerbsRuntime<P> {
    /// A run of `processes` (process `i` is `ProcessId(i)`) on the configured device, or no
    /// device.
    pub fn new(cfg: VerbsConfig, processes: Vec<P>) -> Result<VerbsRuntime<P>, NoDevice> {
        let device = discover(&cfg.device)?;
        let n = processes.len();
        Ok(VerbsRuntime {
            cfg,
            processes,
            mailboxes: Arc::new(Mailboxes::new(n)),
            device,
        })
    }

    /// The device the run uses.
    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// A handle to crash nodes.
    pub fn control(&self) -> VerbsControl {
        VerbsControl {
            mailboxes: self.mailboxes.clone(),
        }
    }

    /// Runs every node until all live processes are done or `limit` passes. A node that cannot
    /// set up its queue pairs on a device that was found is a failure, not a skip: it panics
    /// with what the device refused.
    pub fn run(self, limit: Duration) -> VerbsRun<P> {
        let VerbsRuntime {
            cfg,
            processes,
            mailboxes,
            device,
        } = self;
        let specs: Vec<Vec<RegionSpec>> = processes.iter().map(|p| p.regions()).collect();
        let live = (0..processes.len())
            .filter(|&i| !mailboxes.crashed(ProcessId(i as u32)))
            .count();
        let (done, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
        let start = Instant::now();
        let deadline = start + limit;
        let results: Vec<(P, AccessTimings)> = std::thread::scope(|scope| {
            let handles: Vec<_> = processes
                .into_iter()
                .enumerate()
                .map(|(i, mut process)| {
                    let (cfg, specs, done, stop) = (&cfg, &specs, &done, &stop);
                    let control: Arc<dyn Control> = mailboxes.clone();
                    scope.spawn(move || {
                        let me = ProcessId(i as u32);
                        if control.crashed(me) {
                            return (process, AccessTimings::default());
                        }
                        let mut nic = VerbsNic::open(me, cfg, specs, control, start)
                            .and_then(|mut nic| nic.bootstrap_in_process().map(|()| nic))
                            .unwrap_or_else(|e| panic!("verbs node {me} did not start: {e}"));
                        let mut counted = false;
                        drive(&mut nic, &mut process, |is_done| {
                            if is_done && !counted {
                                counted = true;
                                done.fetch_add(1, Ordering::AcqRel);
                            }
                            if done.load(Ordering::Acquire) >= live || Instant::now() >= deadline {
                                stop.store(true, Ordering::Release);
                            }
                            stop.load(Ordering::Acquire)
                        });
                        let timings = nic.access_timings().clone();
                        drop(nic);
                        (process, timings)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a verbs node thread panicked"))
                .collect()
        });
        let (processes, access) = results.into_iter().unzip();
        VerbsRun {
            processes,
            device,
            access,
        }
    }
}

/// One node of a run across OS processes or hosts (what a cluster launcher starts on each):
/// process `me` of a deployment whose processes declared `specs`, listening on `listener` (its
/// address in `addrs`, the cluster file's addresses in id order). Connects its queue pairs to
/// every node through [`TcpControl`], then polls `process` until `limit` passes (the launcher
/// gives every node the same run length) and returns it. Every node must be started; one that
/// does not come within `cfg.connect_timeout` fails the bootstrap.
pub fn run_node<P: Process<VerbsNic>>(
    cfg: &VerbsConfig,
    me: ProcessId,
    specs: &[Vec<RegionSpec>],
    listener: &std::net::TcpListener,
    addrs: &[std::net::SocketAddr],
    mut process: P,
    limit: Duration,
) -> Result<P, String> {
    if addrs.len() != specs.len() {
        return Err(format!(
            "{} addresses for {} processes: the cluster file must name one per process",
            addrs.len(),
            specs.len()
        ));
    }
    let start = Instant::now();
    // Until the control channel is up nobody is known to be down.
    let local: Arc<dyn Control> = Arc::new(Mailboxes::new(specs.len()));
    let mut nic = VerbsNic::open(me, cfg, specs, local, start)?;
    let (control, hellos) = TcpControl::connect(
        me,
        listener,
        addrs,
        &nic.hellos(),
        nic.table.digest(),
        cfg.connect_timeout,
    )
    .map_err(|e| e.to_string())?;
    nic.control = control;
    nic.connect_hellos(hellos)?;
    let deadline = Instant::now() + limit;
    drive(&mut nic, &mut process, |_| Instant::now() >= deadline);
    Ok(process)
}
