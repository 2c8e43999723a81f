//! TRAM (Martignetti, Batista, Cugola, Pedone, 2025): tree-based atomic multicast over RDMA,
//! as sans-IO state machines on the workbench's [`transport`].
//!
//! Groups form a static overlay tree ([`multicast::Tree`]). A client writes its message into
//! the lca of its destinations (Algorithm 1, [`client`]); that group's leader orders it in the
//! group's log by writing the entry into a quorum of logs, delivers it if the group is a
//! destination, and forwards it to each child whose reach holds a destination; children do the
//! same, and since parent-child buffers are FIFO, the order the lca chose is kept down the tree
//! (Algorithm 2, [`ordering`]). Followers deliver from their log. A failed or suspected leader is
//! replaced using RDMA permissions: a candidate gathers permission to write a quorum of logs
//! (Algorithm 3, [`election`]), makes the logs consistent (Algorithm 4) and finishes what the
//! old leader left undone towards its children (Algorithm 5, [`catchup`]).
//!
//! | paper | module |
//! |---|---|
//! | 5.1 shared data structures | [`layout`] |
//! | Algorithm 1 (client) | [`client`] |
//! | Algorithm 2 (main loop), Steps 2.1-2.7 | [`replica`], [`ordering`], [`election`] |
//! | Algorithm 3 (`become_leader`) | [`election`] |
//! | Algorithms 4, 5 (`group_catchup`, `tree_catchup`) | [`catchup`] |
//!
//! # Choices where the paper is silent
//! Each is explained where it is made:
//! - followers deliver when traffic stops thanks to a commit index the idle leader writes
//!   ([`replica`]);
//! - circular `HM` and `LOG` buffers with credits from children, backpressure, and eviction of
//!   members that stopped reporting ([`ordering`], [`client`]);
//! - per-follower streams of log entries in index order, starting from the `STD` a follower
//!   reports when it grants permission ([`replica`]);
//! - the candidate counts its own permission ([`replica`]);
//! - a new leader starts Algorithm 4 at its own `STD` and re-forwards from the children's
//!   credits, so finite buffers are never written at a position a child may have reused
//!   ([`catchup`]);
//! - a leader orders one message at a time, as Algorithm 2 does (no batching, no pipelining);
//! - work reports ([`transport::Work`], priced by the simulator's software profile): a `Scan`
//!   per input buffer position the leader looks at (Step 2.2) and per log slot a replica
//!   looks at to deliver (Step 2.6); a `Decode` and a `Copy` of its bytes per message taken
//!   from `HM`; an `Order` per log entry proposed; a `Decode` per log entry delivered, and a
//!   `Deliver` and a `Copy` of the payload where its group is a destination. A client reports a
//!   `Copy` of the entry it encodes and a `Scan` per replica's response word it looks at.
//!
//! # Torn landings
//! RDMA makes only aligned 8-byte words atomic, and the verbs specification orders no word of
//! a WRITE (or of a READ's fetch) before another; what it orders is the ops of one queue pair.
//! TRAM is correct for any order of the words within an op because it never infers one word's
//! arrival from another's within one op:
//! - every field another process writes is either one aligned word (`perm`, heartbeats,
//!   commit, progress, credits, halt, clients' response words), or a slot-codec entry
//!   ([`transport::slot`]: `HM` entries, `LOG` entries, and `perm_ack`, a candidate's
//!   `[ack, value, ts]` answer), taken only when the CRC over the whole entry matches, so any
//!   mix of an old and a new entry at the same place is rejected and read again at a later
//!   poll;
//! - what orders one structure after another (a follower's slot i before slot i+1, a commit
//!   index after the entries it covers) is the order of ops on one queue pair;
//! - a candidate's READ of a log (Step 4.1) is checked entry by entry the same way, and a copy
//!   that caught an entry mid-rewrite (a higher timestamp's leader writes that log) ends the
//!   reign rather than reading as an empty slot ([`catchup`]).
//!
//! `perm_ack` once relied on the timestamp, its last word, landing last: a candidate then took
//! a grant whose timestamp had landed over an earlier refusal as that refusal, or the refusal's
//! `tmp` as the follower's `STD` (its leader recycled log slots the follower never had, and
//! the follower halted) ([`election`]).
//!
//! Clients get a response from every replica that delivers their message, and a multicast
//! completes once each destination group answered (as in [`ramcast`-style] measurements).
//!
//! [`ramcast`-style]: multicast::Completed

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod catchup;
pub mod client;
pub mod config;
pub mod election;
pub mod layout;
pub mod ordering;
pub mod replica;

/// The hardware profile of TRAM's testbed, on which its runs and checks default: Dell R320
/// nodes, ConnectX-3 at 56 Gb/s (TRAM section 5.1).
pub const TESTBED: &str = "r320-cx3";
/// Seeded checking runs of the protocol under injected faults (`harness check`), and the
/// runs that once failed, pinned as lines ([`sweep`]).
#[cfg(any(test, feature = "check"))]
pub mod check;
mod observed;
pub use client::TramClient;
pub use config::{Config, ConfigError, Timing};
pub use replica::TramServer;

use multicast::{LoadSpec, Node};

/// A TRAM process of a run.
pub type TramNode = Node<TramServer, TramClient>;

/// Every process of a run of `cfg`, servers first then closed-loop clients running `load`;
/// client `i`'s workload stream derives from `seed`. `log` keeps deliveries and multicasts for
/// the delivery log.
pub fn nodes(cfg: &Config, load: LoadSpec, seed: u64, log: bool) -> Vec<TramNode> {
    multicast::deploy(cfg, load, seed, log, TramServer::new, TramClient::new)
}
