//! The verbs runtime proper: device discovery, a node's queue pairs and memory, the
//! [`Nic`](transport::Nic) over them, and [`VerbsRuntime`], which runs every node of a run as
//! threads of one OS process on one device (tests, the conformance suite, single-host
//! measurements). All of it is generic over the verbs [`Provider`]: real devices through
//! `crate::sideway` (feature `rdma`), or the in-memory fabric of `crate::fake`.
//!
//! One node is one process: a protection domain, one completion queue, its regions (registered once
//! for local use and once per peer, [`crate::access`]), and towards every node (itself included)
//! one RC queue pair per [`Qp`](transport::Qp) kind, each with a staging ring for the bytes of its
//! sends and writes ([`crate::staging`]) and receive buffers for two-sided messages. The process
//! posts straight to its queue pairs and polls its completion queue from its own thread: no thread
//! stands between the protocol and the NIC, as on real deployments.
//!
//! Queue pairs are connected with the messages of [`crate::bootstrap`], handed between the node
//! threads in memory; a reconnect is the same exchange again. The module docs of the crate list the
//! departures from the model.
//!
//! Its parts: `rdma/device.rs` opens the device and makes registrations and queue pairs,
//! `rdma/link.rs` is a queue pair towards one peer and the posting of one work request, this file
//! holds the node's [`VerbsNic`] and its settings, `rdma/connection.rs` brings its queue pairs up
//! (opening, bootstrap, reconnects), `rdma/nic.rs` is its [`Nic`](transport::Nic) (local memory,
//! posting, access changes), `rdma/completions.rs` turns the device's work completions into the
//! process's, and `rdma/runtime.rs` runs nodes ([`VerbsRuntime`], [`run_node`]).

mod budget;
mod completions;
mod connection;
mod device;
mod link;
mod memory;
mod nic;
mod runtime;
#[cfg(test)]
mod tests;

pub use budget::memlock_limit;
pub use device::{discover_with, probe_limits};
use link::Peer;
pub use memory::NodeMemory;
pub use runtime::{run_node, NodeSpec, VerbsControl, VerbsRun, VerbsRuntime};

use crate::access::AccessBook;
use crate::control::Control;
use crate::device::{DeviceChoice, DeviceInfo};
use crate::provider::DeviceCaps;
pub use crate::provider::{Context, Provider};
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use transport::{Completion, NicLimits, ProcessId, Recv, Rng};

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

/// The NIC a process of the verbs runtime polls with, on a device opened as `C`.
pub struct VerbsNic<C: Context> {
    me: ProcessId,
    /// The run's settings, its queue depths fitted to the device ([`budget::fit`]).
    cfg: VerbsConfig,
    info: DeviceInfo,
    caps: DeviceCaps,
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
    /// Control messages that arrived during the start barrier, handled first.
    early: VecDeque<crate::bootstrap::Message>,
    timings: AccessTimings,
    // Verbs objects: queue pairs and registrations go before the memory, the completion queue
    // and the device.
    peers: Vec<Peer<C>>,
    local_mrs: Vec<C::Mr>,
    /// `[region][peer]`.
    peer_mrs: Vec<Vec<C::Mr>>,
    /// The node's regions (after the registrations: they name it).
    memory: memory::Memory,
    cq: C::Cq,
    ctx: C,
}

/// The NIC of a node on a real device.
#[cfg(feature = "rdma")]
pub type DeviceNic = VerbsNic<crate::sideway::Ctx>;

impl<C: Context> fmt::Debug for VerbsNic<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerbsNic")
            .field("me", &self.me)
            .field("device", &self.info.name)
            .finish_non_exhaustive()
    }
}

impl<C: Context> VerbsNic<C> {
    /// The device this node runs on.
    pub fn device(&self) -> &DeviceInfo {
        &self.info
    }

    /// How long this node's access changes took.
    pub fn access_timings(&self) -> &AccessTimings {
        &self.timings
    }
}
