//! The verbs a node calls, as traits: the seam between the runtime and the library that
//! reaches a device.
//!
//! Two implementations exist: `crate::sideway` (feature `rdma`), a thin wrapper of the
//! `sideway` crate over rdma-core's libibverbs, and `crate::fake`, an in-memory fabric that
//! follows the InfiniBand specification where the runtime depends on it (queue-pair states,
//! retries, errors and flushes, device limits, writes landing in packets). The runtime above the
//! seam (`crate::rdma`) is the same code on both, so the conformance suite and the protocol runs on the fake
//! exercise every line of it but the library calls themselves.
//!
//! The traits speak the crate's own value types (rights, work requests, `u32` completion codes of
//! [`crate::completion::code`], [`Words`]), never the library's; one method per verb, named
//! after it. A handle's `Drop` is its destroy verb (`ibv_dereg_mr`, `ibv_destroy_cq`,
//! `ibv_destroy_qp`).

use crate::access::Rights;
use std::fmt;
use transport::runtime::shared_memory::Words;

/// A verb that failed: which, with the OS error number the library reported, and what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerbsError {
    /// The verb, as rdma-core names it (`ibv_reg_mr`, `ibv_modify_qp`, ...).
    pub verb: &'static str,
    /// The `errno` the verb returned, when the library kept it.
    pub errno: Option<i32>,
    /// What was asked (sizes, states), to make the error actionable.
    pub detail: String,
}

impl VerbsError {
    /// A failure of `verb` with `errno`.
    pub fn new(verb: &'static str, errno: Option<i32>, detail: impl Into<String>) -> VerbsError {
        VerbsError {
            verb,
            errno,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for VerbsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed", self.verb)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        match self.errno {
            Some(e) => write!(f, ": {}", std::io::Error::from_raw_os_error(e)),
            None => Ok(()),
        }
    }
}

impl std::error::Error for VerbsError {}

/// Whether the device's atomics are atomic only among themselves (`Hca`), also against other
/// devices (`Glob`), or return their old value in the device's byte order (`None`: the
/// responder executes them, but the value is big-endian, as mlx5 reports when it cannot reply
/// in host order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicCap {
    /// `IBV_ATOMIC_NONE`.
    None,
    /// `IBV_ATOMIC_HCA`.
    Hca,
    /// `IBV_ATOMIC_GLOB`.
    Glob,
}

/// What `ibv_query_device` says about a device, the fields the runtime sizes itself by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceCaps {
    /// Physical ports (numbered from 1).
    pub phys_port_cnt: u8,
    /// Queue pairs the device holds.
    pub max_qp: u32,
    /// Work requests one queue (send or receive) of a queue pair holds.
    pub max_qp_wr: u32,
    /// Scatter-gather entries per work request.
    pub max_sge: u32,
    /// Completion queues.
    pub max_cq: u32,
    /// Entries one completion queue holds.
    pub max_cqe: u32,
    /// Memory registrations.
    pub max_mr: u32,
    /// Bytes one registration may cover.
    pub max_mr_size: u64,
    /// Reads and atomics a queue pair accepts in flight as responder (`max_dest_rd_atomic`).
    pub max_qp_rd_atom: u32,
    /// Reads and atomics a queue pair issues in flight as requester (`max_rd_atomic`).
    pub max_qp_init_rd_atom: u32,
    /// How atomics behave.
    pub atomic_cap: AtomicCap,
    /// Inline bytes a queue pair can be granted (not in `ibv_device_attr`: found by asking; the
    /// real provider reports `u32::MAX` and lets `create_qp` refuse).
    pub max_inline: u32,
    /// Firmware version.
    pub firmware: String,
}

/// The link layer of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand: addressed by LID (and a GID across subnets).
    InfiniBand,
    /// Ethernet (RoCE): addressed by GID.
    Ethernet,
}

/// What `ibv_query_port` says about a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// The port is `ACTIVE`; if not, `state` says what it is.
    pub active: bool,
    /// The state as the library names it (for messages).
    pub state: String,
    /// InfiniBand or Ethernet.
    pub link_layer: LinkLayer,
    /// The active MTU in bytes (256 to 4096).
    pub active_mtu: u32,
    /// The port's LID (0 on Ethernet).
    pub lid: u16,
}

/// The kind of a GID table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidKind {
    /// InfiniBand or RoCE v1 (not routable over IP).
    IbOrRoceV1,
    /// RoCE v2 (UDP/IP).
    RoceV2,
}

/// One entry of a device's GID table (`ibv_query_gid_table`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidEntry {
    /// The port it belongs to.
    pub port: u8,
    /// Its index in the port's table.
    pub index: u32,
    /// The GID.
    pub gid: [u8; 16],
    /// Its kind.
    pub kind: GidKind,
}

/// What a queue pair is created with (one scatter-gather entry per work request, always).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpCaps {
    /// Send-queue depth.
    pub max_send_wr: u32,
    /// Receive-queue depth.
    pub max_recv_wr: u32,
    /// Inline bytes asked for.
    pub max_inline: u32,
}

/// Where a connected queue pair sends (the address vector of INIT -> RTR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address {
    /// The peer's LID (InfiniBand).
    pub dest_lid: u16,
    /// The local port.
    pub port: u8,
    /// The local GID index the packets leave from.
    pub sgid_index: u32,
    /// The peer's GID.
    pub dgid: [u8; 16],
    /// IP hop limit of the global route header.
    pub hop_limit: u8,
}

/// One legal change of an RC queue pair's state, each carrying exactly the attributes the
/// specification requires for it (so a missing attribute mask cannot be expressed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// RESET -> INIT: the port, partition 0, and the remote rights peers get.
    Init {
        /// The local port.
        port: u8,
        /// Remote rights of the queue pair (read, write, atomic).
        access: Rights,
    },
    /// INIT -> RTR: where the peer is and how its packets are numbered.
    Rtr {
        /// Path MTU in bytes.
        path_mtu: u32,
        /// The peer's queue-pair number.
        dest_qpn: u32,
        /// The first packet sequence number expected from the peer.
        rq_psn: u32,
        /// Reads and atomics accepted in flight from the peer.
        max_dest_rd_atomic: u8,
        /// The RNR NAK timer code sent when no receive is posted.
        min_rnr_timer: u8,
        /// The address vector.
        address: Address,
    },
    /// RTR -> RTS: how this side sends and retries.
    Rts {
        /// The first packet sequence number sent.
        sq_psn: u32,
        /// The ACK timeout exponent (4.096 us x 2^timeout).
        timeout: u8,
        /// Transport retries before `RETRY_EXC_ERR`.
        retry_cnt: u8,
        /// RNR retries before `RNR_RETRY_EXC_ERR` (7: without end).
        rnr_retry: u8,
        /// Reads and atomics issued in flight.
        max_rd_atomic: u8,
    },
    /// INIT -> INIT or RTS -> RTS: new remote rights (`IBV_QP_ACCESS_FLAGS` alone).
    Access(Rights),
    /// Any state -> ERR: outstanding work requests flush, and nothing lands through the queue
    /// pair any more.
    Error,
    /// Any state -> RESET: queues emptied without completions.
    Reset,
}

/// The source (a send or write) or destination (a read or atomic) of a work request's bytes.
#[derive(Clone, Copy, Debug)]
pub enum Src<'a> {
    /// Bytes copied into the work request when it is posted (`IBV_SEND_INLINE`).
    Inline(&'a [u8]),
    /// Registered memory, read when the request is sent (or written when it completes).
    Sge {
        /// The local key of the registration.
        lkey: u32,
        /// The address of the first byte.
        addr: u64,
        /// Bytes.
        len: u32,
    },
}

/// One work request of a send queue.
#[derive(Clone, Copy, Debug)]
pub enum Wr<'a> {
    /// `IBV_WR_RDMA_WRITE`.
    Write {
        /// The peer's remote key.
        rkey: u32,
        /// The peer's address.
        raddr: u64,
        /// The bytes.
        src: Src<'a>,
    },
    /// `IBV_WR_SEND`.
    Send {
        /// The bytes.
        src: Src<'a>,
    },
    /// `IBV_WR_RDMA_READ`.
    Read {
        /// The peer's remote key.
        rkey: u32,
        /// The peer's address.
        raddr: u64,
        /// Where the bytes land.
        dst: Src<'a>,
    },
    /// `IBV_WR_ATOMIC_CMP_AND_SWP`.
    Cas {
        /// The peer's remote key.
        rkey: u32,
        /// The peer's address (8-byte aligned).
        raddr: u64,
        /// Compared with the word.
        expect: u64,
        /// Stored if equal.
        swap: u64,
        /// Where the old value lands (8 bytes).
        dst: Src<'a>,
    },
    /// `IBV_WR_ATOMIC_FETCH_AND_ADD`.
    Faa {
        /// The peer's remote key.
        rkey: u32,
        /// The peer's address (8-byte aligned).
        raddr: u64,
        /// Added to the word.
        add: u64,
        /// Where the old value lands (8 bytes).
        dst: Src<'a>,
    },
}

impl Wr<'_> {
    /// Whether the bytes travel inline.
    pub fn inline(&self) -> bool {
        matches!(
            self,
            Wr::Write {
                src: Src::Inline(_),
                ..
            } | Wr::Send {
                src: Src::Inline(_)
            }
        )
    }
}

/// One receive buffer to post.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWr {
    /// The work-request id its completion carries.
    pub id: u64,
    /// The local key of the registration.
    pub lkey: u32,
    /// The address of the first byte.
    pub addr: u64,
    /// Bytes.
    pub len: u32,
}

/// One work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wc {
    /// The work-request id.
    pub id: u64,
    /// Its status, one of [`crate::completion::code`].
    pub status: u32,
    /// Bytes received (receives only).
    pub byte_len: u32,
}

/// Finds and opens devices. Cloned into every node thread.
pub trait Provider: Clone + Send + Sync + 'static {
    /// One opened device with its protection domain.
    type Ctx: Context;
    /// The names of the devices (`ibv_get_device_list`).
    fn devices(&self) -> Result<Vec<String>, VerbsError>;
    /// Opens device `name` and allocates one protection domain on it (`ibv_open_device`,
    /// `ibv_alloc_pd`).
    fn open(&self, name: &str) -> Result<Self::Ctx, VerbsError>;
    /// Bytes this OS process may register (pin) in all, `None` for no limit
    /// (`RLIMIT_MEMLOCK`, unless the process holds `CAP_IPC_LOCK`).
    fn memlock_limit(&self) -> Option<u64>;
}

/// One opened device and its protection domain: the verbs that make things on it.
pub trait Context: Send + 'static {
    /// A memory registration.
    type Mr: MemoryRegion;
    /// A completion queue.
    type Cq: CompletionQueue;
    /// An RC queue pair.
    type Qp: QueuePair;
    /// `ibv_query_device`.
    fn query_device(&self) -> Result<DeviceCaps, VerbsError>;
    /// `ibv_query_port`.
    fn query_port(&self, port: u8) -> Result<PortInfo, VerbsError>;
    /// `ibv_query_gid`.
    fn query_gid(&self, port: u8, index: u32) -> Result<[u8; 16], VerbsError>;
    /// `ibv_query_gid_table`.
    fn gid_table(&self) -> Result<Vec<GidEntry>, VerbsError>;
    /// `ibv_reg_mr` of all of `mem` with local write and `remote`. The caller keeps `mem` alive,
    /// in place, until the registration is dropped.
    fn reg_mr(&self, mem: &Words, remote: Rights) -> Result<Self::Mr, VerbsError>;
    /// `ibv_create_cq` of `cqe` entries.
    fn create_cq(&self, cqe: u32) -> Result<Self::Cq, VerbsError>;
    /// `ibv_create_qp`: an RC queue pair in RESET, sending and receiving on `cq`.
    fn create_qp(&self, cq: &Self::Cq, caps: QpCaps) -> Result<Self::Qp, VerbsError>;
}

/// A memory registration (drop: `ibv_dereg_mr`, after which nothing lands through its keys).
pub trait MemoryRegion: Send + 'static {
    /// Its local key.
    fn lkey(&self) -> u32;
    /// Its remote key.
    fn rkey(&self) -> u32;
}

/// A completion queue (drop: `ibv_destroy_cq`).
pub trait CompletionQueue: Send + 'static {
    /// Appends every completion available (`ibv_poll_cq` until empty). An error is the queue's
    /// own failure (an overrun), never "empty".
    fn poll(&self, out: &mut Vec<Wc>) -> Result<(), VerbsError>;
}

/// An RC queue pair (drop: `ibv_destroy_qp`).
pub trait QueuePair: Send + 'static {
    /// Its number.
    fn qp_num(&self) -> u32;
    /// `ibv_modify_qp`.
    fn modify(&mut self, t: &Transition) -> Result<(), VerbsError>;
    /// `ibv_post_send` of one work request with id `id`, signalled or not.
    fn post_send(&mut self, id: u64, signaled: bool, wr: Wr<'_>) -> Result<(), VerbsError>;
    /// `ibv_post_recv` of `wrs`.
    fn post_recv(&mut self, wrs: &[RecvWr]) -> Result<(), VerbsError>;
}
