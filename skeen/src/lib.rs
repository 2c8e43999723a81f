//! Skeen's atomic multicast (D. Skeen, 1985; as described by Birman and Joseph, 1987, and in
//! every atomic multicast survey), the message-passing baseline of the TRAM paper's Figure 9
//! (section 8.6: "the ByzCast and Skeen implementations shown here are non-replicated"): one
//! process per group, clients that multicast, message passing over the transport's rings
//! ([`transport::mesh`]), written as sans-IO state machines that run on every runtime of
//! [`transport`] (simulator, threads, TCP, ibverbs). [`nodes`] builds a run.
//!
//! # The algorithm
//!
//! | task | what | code |
//! |---|---|---|
//! | 1 | A client multicasts `m` to a set of destination groups: it sends `m` to the one server of each. | [`client`] (`try_multicast`) |
//! | 2 | A server receiving `m` assigns it a local timestamp `lts = clock + 1` (`clock := lts`), marks `m` pending and sends `(m.id, lts)` to the servers of the other destination groups of `m`. | [`order::Order::receive`], [`server`] |
//! | 3 | A server holding `m` and the proposals of every destination group sets `m`'s final timestamp to the largest proposal, `clock := max(clock, final)`, and marks `m` final (a single-group message is final at once with its local timestamp). | [`order::Order::propose`], `Order::try_finalize` |
//! | 4 | A server delivers, in order, each final message whose `(final timestamp, id)` is smaller than the `(timestamp, id)` of every pending message (proposed, or final and not yet delivered), so no message can later get a smaller final timestamp; it answers the message's client. | `Order::deliver`, [`server`] |
//!
//! Why Task 4 is safe is in [`order`]'s docs. The packets are in [`wire`], the deployment in
//! [`config`].
//!
//! # Fault model
//!
//! The paper's: not fault tolerant. Processes do not crash. Slow processes, pauses and link
//! delays are tolerated: order and liveness hold whatever they are (Skeen needs no timing
//! assumption, and the mesh's links are reliable and FIFO). A crash is not hidden: a crashed
//! server never proposes for the messages it is a destination of and had not proposed for, nor
//! answers their clients, so every other destination holds them pending forever, and with them every message whose final
//! timestamp would come after theirs (Task 4): the groups it shares messages with stop
//! delivering. A client that crashes between the sends of Task 1 leaves its message at some
//! destinations only, which block in the same way. Nothing detects either; the servers go on
//! serving what they can. Failed ring writes (to a crashed peer) are drained and ignored.
//!
//! # Choices the algorithm leaves open
//!
//! - **Timestamps** carry the proposing group in their low 6 bits ([`order::Stamp`]), so
//!   proposals, and therefore final timestamps, are unique: the final timestamp is the
//!   delivery's order timestamp ([`multicast::Delivery::order`]), strictly increasing along
//!   every server's deliveries. The message id stays the second key of Task 4's comparison;
//!   with unique stamps it never decides.
//! - **Message ids** are the workbench's: the client's process id and its sequence number
//!   ([`multicast::MsgId`]).
//! - **Pending lower bound.** Task 4 compares against a pending message's largest proposal
//!   held so far (its own proposal at least), a lower bound of its final timestamp that rises
//!   as proposals come, so deliveries are not held back by a bound the server already knows
//!   is exceeded.
//! - **Early proposals.** A proposal for a message whose client's packet has not arrived yet
//!   is kept and folded in when the message arrives; such a message is not pending (this
//!   server has not proposed, and its proposal will be above everything it delivered).
//! - **What a client waits for:** the reply of every destination's server, sent when that
//!   server delivers the message (the papers' latency: until the first response of every
//!   destination group, here the only one).
//! - **Backpressure:** a packet the mesh refuses (`MeshError::Full`) waits in the sender's
//!   backlog and is sent on a later poll, in order per peer; never dropped, and bounded by the
//!   multicasts in flight ([`server`]). A client accepts a multicast whenever it has none in
//!   flight and the payload fits ([`client`]).
//! - **Duplicates** cannot arrive over the mesh; a server still ignores (and counts) a
//!   message it holds or delivered, a second proposal from a group and a proposal from a group
//!   that is not a destination ([`order::Ignored`]).
//!
//! # Tests
//!
//! `tests/sim.rs` draws configurations, workloads, faults (slow processes, pauses, link
//! delays), tie-break policies and software profiles from each of `SKEEN_SEEDS` seeds and
//! checks every run's delivery log against the five properties and that every multicast
//! completed; it also checks determinism, backpressure on two-slot rings, latency in message
//! delays, and that a crash blocks (the fault model above). `tests/local.rs` runs random
//! configurations on real threads. The delivery rule has unit tests in [`order`].
//!
//! # Work reports
//!
//! For the simulator's software profiles ([`transport::Work`]): a `Decode` per packet taken
//! off a ring, a `Copy` of a multicast's bytes at the client (encoded once) and of its payload
//! at each server, an `Order` per proposal and per final timestamp delivered, a `Deliver` per
//! delivery.
//!
//! # Known limits
//!
//! - One multicast in flight per client (closed loop). A server refuses, as a duplicate, a
//!   message of a client older than one of that client's messages it already delivered.
//! - Every process is a member of one all-to-all mesh, clients included: `n^2` rings in all,
//!   as in Ridge.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod backlog;
pub mod client;
pub mod config;
pub mod order;
mod port;
pub mod server;
pub mod wire;

/// The hardware profile Skeen's runs and checks default to: TRAM's testbed (Dell R320,
/// ConnectX-3), where TRAM's Figure 9 compares TRAM and RamCast with message passing.
pub const TESTBED: &str = "r320-cx3";
/// Seeded checking runs of the protocol under injected faults (`harness check`), and the
/// runs that once failed, pinned as lines ([`sweep`]).
#[cfg(any(test, feature = "check"))]
pub mod check;
mod observed;
pub use backlog::Backlog;
pub use client::SkeenClient;
pub use config::{Config, ConfigError};
pub use order::{Order, Stamp};
pub use server::SkeenServer;

use multicast::{LoadSpec, Node};

/// A Skeen process of a run.
pub type SkeenNode = Node<SkeenServer, SkeenClient>;

/// Every process of a run of `cfg`, servers first (group `g`'s is process `g`), then
/// closed-loop clients running `load`; client `i`'s workload stream derives from `seed` (the
/// protocol itself draws nothing). `log` keeps deliveries and multicasts for the delivery log.
pub fn nodes(cfg: &Config, load: LoadSpec, seed: u64, log: bool) -> Vec<SkeenNode> {
    let server = |cfg, g, _rank| SkeenServer::new(cfg, g);
    multicast::deploy(cfg, load, seed, log, server, SkeenClient::new)
}
