//! Ridge (Bezerra, Cason, Pedone, 2015): high-throughput, low-latency atomic multicast from
//! ensembles of Paxos acceptors whose learners take turns distributing decided values, merged
//! deterministically by timestamp.
//!
//! **Status (issue 14, first increment):** the algorithms as pure state machines with their
//! tests: Paxos in one ensemble with Ridge's Phase 2 ([`paxos`]), timestamps from skewed local
//! clocks ([`clock`]), the coordinator's null messages ([`ensemble`]), the learner's
//! deterministic merge ([`merge`]) and the groups-to-ensembles mapping ([`mapping`]). Not yet here: the
//! processes that run them on [`transport`] (message passing over [`transport::mesh`], one
//! ring per ordered pair, with [`wire`] as the bytes),
//! optimistic delivery (4.5), failure handling (4.4), the harness wiring and the figures.
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
//! - a learner holds a decision until it has both the DECISION's id and a value with that id
//!   ([`paxos::Learning`]);
//! - the merge raises a timestamp equal to its ensemble's last one too, and breaks ties
//!   between ensembles by ensemble index ([`merge`]);
//! - timestamps are the sender's clock in microseconds with its process id in the low 16 bits,
//!   moved past the sender's last one when its clock has not advanced ([`clock::Stamper`]);
//! - each process reads true time through an offset and a drift drawn from the seed, so clock
//!   skew is part of an experiment and replays ([`clock`]).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod clock;
pub mod ensemble;
pub mod mapping;
pub mod merge;
pub mod paxos;
pub mod value;
pub mod wire;

pub use mapping::{EnsembleId, Mapping};
pub use merge::Merge;
pub use value::{Timestamp, Value};
