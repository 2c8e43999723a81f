//! Ridge (Bezerra, Cason, Pedone, 2015): high-throughput, low-latency atomic multicast from
//! ensembles of Paxos acceptors whose learners take turns distributing decided values, merged
//! deterministically by timestamp.
//!
//! **Status (issue 14, complete):** the normal case and section 4.4's failures run, on the
//! simulator and on threads ([`nodes`]; tests in `tests/`): clients send to ensemble
//! coordinators, ensembles decide with Ridge's Phase 2 over a message mesh
//! ([`transport::mesh`], [`wire`]), servers merge their ensembles and deliver; coordinators
//! are replaced, rounds fall back around suspected acceptors, suspected distributors are
//! passed over, learners fill gaps from acceptors, clients retry ([`server`]). Every run is
//! checked against the five properties; `harness check --protocol ridge` sweeps seeds under
//! crashes, pauses and clock skew. Optimistic deliveries (4.5, [`optimistic`]; decisions then
//! carry no values) and the ring and direct dissemination baselines
//! ([`paxos::Dissemination`]) run on the same code; section 5's latency and throughput are
//! measured on its round model ([`model`], `harness figure ridge-model`) and the
//! evaluation's Figs. 1-3 are reproduced on `lan-1g` with the `ridge-java` software profile
//! (`harness figure ridge-fig1|2|3`).
//! Acceptors run as processes of their own, the servers learning only (the paper's
//! evaluation), or on a group's first [`Config::acceptors`] servers ([`config::Placement`]).
//! `harness run`, `compare` and `check` run it.
//!
//! | paper | code |
//! |---|---|
//! | Algorithm 1 (Paxos), Algorithm 2 (Ridge's Phase 2), Tasks 1-5 | [`paxos`]: [`paxos::Coordinator`], [`paxos::Acceptor`], [`paxos::distribute`], [`paxos::Learning`] |
//! | 4.3: load balancer choosing the distributing learner | [`paxos::Balancer`] |
//! | Algorithm 3, Task 1 (timestamps from the local clock) | [`clock`] ([`clock::Stamper`]; clocks with offset and drift drawn from the seed) |
//! | Algorithm 3, Task 2 (the coordinator's Delta timer and null messages) | [`ensemble`] |
//! | Algorithm 3, Task 4 (deterministic merge) | [`merge`] |
//! | null messages, `m.dests` | [`value`] |
//! | the messages' bytes (bounded decoding of untrusted input) | [`wire`] |
//! | Algorithm 4 (groups to ensembles) | [`mapping`] |
//! | the deployment: groups, ensembles, coordinators, the mesh | [`config`] |
//! | the processes: learner, acceptor and coordinator roles of a server; the client | [`server`], [`client`] |
//! | 4.4.1 coordinator failure (Phase 1 with a higher round) | [`server`] (takeover), [`multicast::Omega`] over signs of leading |
//! | 4.4.2 acceptor failure (re-execution in a higher round) | [`server`] (fallback round), [`paxos::Coordinator::on_phase1b`] |
//! | 4.4.3 learner failure (another distributor; gaps filled from acceptors) | [`paxos::Balancer`], [`paxos::Learning::answer`], [`paxos::Msg::Fetch`] |
//! | failure suspicion | [`failure`] |
//! | 4.5 optimistic deliveries | [`optimistic`] ([`optimistic::Optimism`], [`optimistic::Holding`]) |
//! | section 5: the round model, its throughput (5.2), latency formulas (5.3) and the worked example | [`model`] |
//!
//! # Choices where the paper is silent
//! Each is explained where it is made:
//! - Phase 1 covers every instance from a given one on, so an acceptor keeps one promise for
//!   all instances ([`paxos`]);
//! - Phase 1 completes when every acceptor of the chosen quorum promised (Task 3, "from Q");
//!   instances below the highest one voted in that nobody voted in are filled with null
//!   values, so learners, which take decisions gap-free, never stall on a hole ([`paxos`]);
//! - the load balancer picks the learner outside `Q` with the fewest bytes distributed, the
//!   lowest id on a tie ([`paxos::Balancer`]);
//! - a DECISION names the decided value by its [`value::Key`] (id, timestamp, destinations),
//!   not its id alone, and a learner holds a decision until it has a value with that key
//!   ([`paxos::Learning`]; why, in [`optimistic`]);
//! - the merge raises a timestamp equal to its ensemble's last one too, and breaks ties
//!   between ensembles by ensemble index ([`merge`]);
//! - timestamps are the sender's clock in microseconds with its process id in the low 16 bits,
//!   moved past the sender's last one when its clock has not advanced ([`clock::Stamper`]);
//! - each process reads true time through an offset and a drift drawn from the seed, so clock
//!   skew is part of an experiment and replays ([`clock`]);
//! - dedicated acceptors learn their ensemble's decisions (to answer gap fills) and distribute
//!   only when every server outside the quorum is suspected ([`config`]);
//! - failures: the coordinator oracle, the fallback's quorum chain (a departure from the
//!   paper's classic Phase 2), gap filling, duplicate requests, bounded memory and what a
//!   dropped packet costs are in [`server`]'s docs.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod client;
pub mod clock;
pub mod config;
pub mod ensemble;
pub mod failure;
pub mod mapping;
pub mod merge;
pub mod model;
mod named;
pub mod optimistic;
pub mod paxos;
pub mod server;
pub mod value;
pub mod wire;

/// The hardware profile of Ridge's testbed, on which its runs and checks default: a 1 Gb/s
/// switched LAN with 133 us ping round trips (Ridge section 6.1).
pub const TESTBED: &str = "lan-1g";
/// Seeded checking runs of the protocol under injected faults (`harness check`), and the
/// runs that once failed, pinned as lines ([`sweep`]).
#[cfg(any(test, feature = "check"))]
pub mod check;
mod observed;
pub use client::RidgeClient;
pub use config::{Config, ConfigError, Placement};
pub use mapping::{EnsembleId, Mapping};
pub use merge::Merge;
pub use server::{RidgeServer, Trace};
pub use value::{Timestamp, Value};

use multicast::{LoadSpec, Node};

/// A Ridge process of a run.
pub type RidgeNode = Node<RidgeServer, RidgeClient>;

/// Every process of a run of `cfg`, servers first, then closed-loop clients running `load`,
/// then dedicated acceptors if [`Config::placement`] says so; clocks and client workloads
/// derive from `seed`. `log` keeps deliveries and multicasts for the delivery log.
pub fn nodes(cfg: &Config, load: LoadSpec, seed: u64, log: bool) -> Vec<RidgeNode> {
    multicast::deploy_with_auxiliaries(
        cfg,
        load,
        seed,
        log,
        |cfg, g, r| RidgeServer::new(cfg, g, r, seed),
        |cfg, i| RidgeClient::new(cfg, i, seed),
        |cfg, i| RidgeServer::acceptor(cfg, i, seed),
    )
}
