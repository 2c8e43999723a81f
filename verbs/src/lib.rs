//! The `verbs` runtime: the workbench's protocols, unchanged, on real RDMA queue pairs
//! (InfiniBand, RoCE, SoftRoCE) through ibverbs.
//!
//! The protocols see the same [`transport::Nic`] as on the simulator, `local` and `tcp`; this
//! runtime maps it onto one device:
//!
//! | model (`transport`) | verbs |
//! |---|---|
//! | a region ([`transport::RegionSpec`]) | word-atomic memory ([`transport::runtime::shared_memory::Words`]) registered once for local use and once per peer ([`access`]) |
//! | [`transport::Qp::Data`], [`transport::Qp::Control`] to each peer | one RC queue pair each, itself included |
//! | write, inline write, read, compare-and-swap, fetch-and-add | `IBV_WR_RDMA_WRITE` (with `IBV_SEND_INLINE` up to the queue pair's inline limit), `IBV_WR_RDMA_READ`, `IBV_WR_ATOMIC_CMP_AND_SWP`, `IBV_WR_ATOMIC_FETCH_AND_ADD` |
//! | write-with-immediate | the write, then a header message on the same queue pair (see *Departures*) |
//! | send and receive | `IBV_WR_SEND` into receive buffers posted per queue pair |
//! | signalled or not | selective signalling, with a hidden signal every half send queue ([`signal`]) |
//! | completions and their status | work completions mapped by [`completion`] |
//! | `SetAccess` | queue-pair access flags (fast) or re-registration with the new rkeys sent to the peer (slow), [`access`] |
//! | `Reconnect` | both ends' queue pairs reset and re-connected through the bootstrap channel ([`bootstrap`]) |
//! | a full send queue | the op waits in the runtime's backlog (never dropped, never an error) |
//!
//! What is built where:
//! - always (no native dependency, tested here): [`device`] discovery and its "no RDMA device"
//!   report, the completion mapping, access bookkeeping, selective signalling, staging rings,
//!   the bootstrap messages, the reconnect handshake, and the control channel that carries them
//!   (in memory, or over TCP between the hosts of a cluster file);
//! - always, generic over the verbs [`provider::Provider`]: [`rdma::VerbsNic`];
//!   [`rdma::VerbsRuntime`], every node of a run as threads of one OS process, each with its
//!   own protection domain, queue pairs and memory on one device, connected to each other
//!   through the device (the transport conformance suite and short RamCast and RDMC runs use it
//!   when `RDMA_DEVICE` names a device); and [`rdma::run_node`], one node of a run across
//!   processes or hosts, connected through the cluster file's addresses
//!   ([`control::TcpControl`], which proves the cluster secret), as `harness run --runtime
//!   verbs --cluster` launches it; and [`fake`], an in-memory fabric that follows the
//!   specification where the runtime depends on it, on which all of the above is tested;
//! - with the `rdma` feature: `sideway`, the provider of real devices (ibverbs through the
//!   `sideway` crate), the only code that calls a verbs library.
//!
//! Why `sideway`: it is maintained, MPL-2.0, and wraps everything this runtime needs (RC queue
//! pairs, RDMA write with and without immediate, reads, both atomics, inline data, selective
//! signalling, access-flag changes on a live queue pair). The `rdma` crate (0.3) cannot post an
//! RDMA WRITE, and `async-rdma` is GPL-3.0 and signals every work request. Its `rdma-mummy-sys`
//! loads rdma-core at run time, so a binary built with the feature runs (and reports no device)
//! on a machine without rdma-core.
//!
//! # Departures from the model, by necessity
//! - **Write-with-immediate** is the write followed by a header message (immediate, region,
//!   offset, length) on the same queue pair: a real `IBV_WR_RDMA_WRITE_WITH_IMM` completion
//!   tells the receiver the immediate and the length but not where the bytes landed, which the
//!   model's [`transport::Recv::Immediate`] names (RDMC's receiver uses it to find the group).
//!   RC order makes the bytes visible before the header is received, as with a real immediate.
//! - **Reconnect** resets the queue pairs at both ends (an RC queue pair's sequence numbers
//!   cannot be re-synchronised from one side): ops the peer had in flight towards the
//!   reconnecting process complete `Flushed`, which the model reserves for the reconnecting
//!   side. The peer's queue pairs are up again at once, so its own `Reconnect` then completes
//!   at once, without a second reset; its ops wait until the reconnecting end says its pairs
//!   listen (`Ready`), so none meets a queue pair still in INIT. A reset drains both queues
//!   first (to ERR, then every completion the device holds): what executed completes as it
//!   did, a message the peer saw delivered is delivered.
//! - **An op in flight across a reset** (its response not yet back when the pair goes to ERR)
//!   completes `Flushed` although it may have executed at the peer: RC cannot tell, and the
//!   model's `Flushed` promises no effect. A process that posts such an atomic again may apply
//!   it twice. (Tests `review48::r4*`, ignored: the fix needs the responder's sequence number
//!   in `Reconnect`, or a model status for "may have executed".)
//! - **A slow-path access change** (one region of several, [`access`]) re-registers the region
//!   and sends the peer the new rkey: an op of the peer to that region still in flight with the
//!   old rkey is refused even where the change was a grant (the model refuses only ops the
//!   access forbids). Inside one OS process the new rkey is known before any later op of the
//!   peer is posted; across processes it travels beside, not in order with, the data path.
//! - **A revoke** that narrows the flags of a peer's queue pairs also resets them (ERR, then
//!   the reconnect exchange): a flag change is not documented to stop a multi-packet write the
//!   NIC has accepted, and ERR (or deregistration, the slow path's fence) is. The process's own
//!   ops to that peer that had not executed complete `Flushed`; the peer's complete `Flushed`
//!   when it resets in answer. A verb an access change needs that fails stops the node with
//!   the reason: the change is never recorded as made when it was not.
//! - **Crashes** are noticed by the transport's retries: ops to a crashed peer complete
//!   `PeerUnreachable` after about `retry_cnt` x the ACK timeout (the model: at once).
//! - **Time** is each node's monotonic clock from the run's start.

#![deny(missing_docs)]
#![allow(
    clippy::disallowed_methods,
    reason = "the verbs runtime is where real time, threads and devices enter"
)]

pub mod access;
pub mod bootstrap;
pub mod completion;
pub mod control;
pub mod device;
pub mod fake;
pub mod handshake;
pub mod provider;
pub mod signal;
pub mod staging;

pub mod rdma;
#[cfg(feature = "rdma")]
pub mod sideway;

pub use device::{discover, DeviceChoice, DeviceInfo, NoDevice, NO_DEVICE};
