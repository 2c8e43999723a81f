//! Heron (Long Hoang Le, PhD thesis, USI 2022, chapter 5): linearizable partitioned state
//! machine replication over RDMA. Clients atomically multicast requests to the partitions they
//! involve; every replica of an involved partition executes the whole request, reading its own
//! partition's objects from memory and other partitions' by one-sided RDMA reads, and writes its
//! own objects only, in the older of two versions. Multi-partition requests execute between two
//! rounds of coordination with a majority of every involved partition.
//!
//! Sans-IO like the rest of the workspace: a [`HeronServer`] wraps any multicast server that
//! gives order timestamps (RamCast, Ridge) and polls it through the same NIC; a [`HeronClient`]
//! wraps the matching multicast client.
//!
//! | thesis | code |
//! |---|---|
//! | Algorithm 9, coordination | [`coordination`] |
//! | Algorithm 10, execution | [`execution`] |
//! | dual versions, objects in registered memory | [`store`] |
//! | Algorithm 11, state transfer | [`state_transfer`]; Figure 5.6's scripted laggard, [`catchup`] |
//! | the application (read set, execute, partitioning) | [`app`]; [`kv`]; [`null`] (Table 5.1) |
//! | TPC-C (5.2.1) | [`tpcc`] |
//! | linearizability argument (5.1.3) | checked by [`oracle`] |
//!
//! # Choices the thesis leaves open, and departures
//! - **Object addresses.** The store's layout is a function of the application's schema (each
//!   table has a fixed number of rows per partition and a fixed value size), the same at every
//!   replica of a partition, so a replica knows the address of an object at every replica of its
//!   partition: the `query_obj_addr` exchange of Algorithm 10 (lines 4-10), needed in the
//!   prototype because the JVM places objects where it likes, is a lookup here. The rows are
//!   registered up front, so a row exists (empty) before its first insert.
//! - **Phase 2 counts replicas past the request** (see [`coordination`]).
//! - **Remote reads of one request go out together** (see [`execution`]).
//! - **Every Heron work request is signaled**, so its completion comes back to Heron and never
//!   reaches the multicast layer polling the same completion queue, except a flushed one,
//!   which both see: the multicast layer reconnects the queue pair they share, and Heron writes
//!   the flushed address's latest value again ([`layered`], `HeronServer::write`). RamCast
//!   reconnects; Ridge assumes channels that never break and reconnects nothing, so over Ridge a
//!   broken queue pair is not survived (Heron itself never revokes access, so only a fault
//!   breaks one).
//! - **A replica remembers where a read failed** (the process crashed) and reads elsewhere while
//!   anyone else coordinated (see [`execution`]).
//! - **A read not back within [`Config::read_timeout`] is made again elsewhere**: the thesis
//!   waits for the RDMA exception, which takes the NIC's retry timeout (see [`execution`]).
//! - **A laggard that installed a transfer up to `rid` writes `<rid, 2>` into every server's
//!   coordination memory**: replicas waiting in phase 4 of a request it skipped may count it
//!   (see [`state_transfer`]).
//! - **State transfers are staged** in an area of the laggard only their responder writes,
//!   and each attempt names one responder (see [`state_transfer`]).
//! - **The extra wait** ([`Config::extra_wait`]) applies to phase 4 only, once a majority of
//!   every involved partition is in, as section 5.3.5 says it needs to ("only the second
//!   coordination phase needs to use this additional delay"); section 5.1.1 describes it
//!   without naming the phase. (Until 2026-11-24 it applied to phase 2 as well, which added
//!   up to the wait to every multi-partition request's coordination for nothing.)
//!
//! # Memory protocol
//! The RDMA rule everything below rests on: only an aligned 8-byte word is atomic. A one-sided
//! read of several words may see them in any order and at different instants, between the
//! owner's local writes (which become visible word by word, in any order); a write of several
//! words may land them in any order. Only the order of whole writes from one process to one
//! peer holds (one queue pair). So every entry that a reader may read while someone writes
//! it is either
//! - **a single word**, where that is enough: a coordination entry is two words written one
//!   at a time, the last request its writer took and the last it executed, each only growing
//!   (see [`coordination`]); or
//! - **sealed**: its last word is a 64-bit digest of the others (SplitMix64 finalisations,
//!   [`transport::rng::mix64`], chained over the words), and a reader takes the entry only if
//!   the seal matches; otherwise it reads again and decides nothing. An object slot has one
//!   seal over both versions ([`store`]: one per version is not enough, a read may see one
//!   version before a write and the other after the next); a state-sync entry and a
//!   transfer's directory have theirs ([`state_transfer`]).
//!
//! Why a seal rather than a seqlock or a canary written last: a single RDMA read has no
//! internal order, so a version word written last proves nothing about the words beside it,
//! and a seqlock needs a second read per object; a seal is checked within the one read Heron
//! already makes, for one word per entry. A view mixing two writes matches its seal with
//! probability about 2^-64 (a view one word away from a written entry never does); a view
//! made only of words no write has reached yet (all zero) is a row never written. Why not
//! `transport`'s slot codec: its canary keeps a 32-bit CRC beside a sequence number the reader
//! must expect, and a reader of an object knows no sequence number; its checksum is private.
//!
//! # Testing
//! `tests/sim.rs` runs Heron over RamCast on the simulator (module `testing`, behind the
//! `testing` feature, which the harness shares) and judges every run with the
//! [`oracle`]; a sweep draws replica crashes (RamCast leaders among them), pauses long enough to
//! make laggards, and client crashes per seed (`HERON_SEEDS`, default 30; `HERON_FIRST_SEED`),
//! and also requires every surviving replica to finish its work and every surviving client to
//! have a request it issued after the last fault answered. The clients' histories also go
//! through a linearizability checker nobody here wrote, `todc-utils`'s `WGLChecker` (the
//! Wing-Gong-Lowe search with memoization), against the key-value store's sequential
//! specification written again in `testing`. `tests/tpcc.rs` runs TPC-C under the same faults
//! (`TPCC_SEEDS`, default 4), judged by the oracle and by TPC-C's consistency conditions on the
//! database the replicas end with. `tests/over_ridge.rs` runs the key-value sweep over Ridge.
//! Failing seeds are kept as regression tests with their postmortems.
//!
//! The runs give RamCast a ring of slots per client that no client laps before it stops
//! (`testing::ramcast_slots`): RamCast reuses a slot only once every destination replica
//! delivered its message, so a crashed replica holds every slot of a message sent to its
//! partition until RamCast evicts it (20 ms in the simulator), and a client coming round to
//! one waits that long. That stall is RamCast's recycling, bounded by its eviction timeout and
//! judged by RamCast's sweep; Heron cannot shorten it, and the liveness phase (3 ms after the
//! last fault) would catch it whenever a client laps after a late fault (the harness's seed
//! 51, `no_client_waits_for_a_crashed_replicas_slots` in `tests/tpcc.rs`).
//!
//! # Over which multicast
//! Heron asks the layer underneath for one thing beyond atomic multicast: an order timestamp
//! per delivery ([`multicast::Delivery::order`]), the same at every server that delivers the
//! message and increasing along each server's deliveries. RamCast's final timestamps and
//! Ridge's merged ones are; TRAM orders along its overlay tree without one, so Heron does not
//! run over TRAM (a count of deliveries per group would not do: object versions and the
//! coordination words compare one request's timestamp at replicas of several partitions).
//! Ridge's timestamps are unique per ensemble only (a coordinator moves a late one to
//! `last + 1`), so two requests of disjoint partitions may share one; Heron compares
//! timestamps only between requests that some partition delivers both of, and the [`oracle`]
//! allows such ties. Over Ridge, `e_all`'s acceptors must survive what Heron survives, a
//! minority of each partition: the harness and the tests put them in partition 0
//! (`AllAcceptors::FirstGroup`), since spread over the partitions, one crash in each of two
//! partitions stops every delivery (seed 38 of the sweep over Ridge).
//!
//! # Status
//! The harness runs `check --protocol heron` (key-value store and TPC-C under faults, over
//! RamCast and over Ridge: module `check`, behind the `check` feature), `run --protocol heron [--over ridge]` (TPC-C or the key-value
//! store, on the simulator or on threads) and
//! the thesis's Table 5.1, Figures 5.4, 5.5 and 5.6 and Table 5.2 (`harness figure heron-*`),
//! with execution priced per row ([`transport::Work::Row`]) by the `heron-java` software
//! profile, and Heron's TPC-C over RamCast and over Ridge side by side (`harness compare
//! --protocols heron:ramcast,heron:ridge`, `harness figure heron-over`). Table 5.1's RamCast row runs Heron
//! ordering only ([`Config::order_only`]).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod app;
pub mod catchup;
/// Seeded checking runs of Heron over RamCast and over Ridge under injected faults (`harness
/// check`) ([`sweep`]).
#[cfg(any(test, feature = "check"))]
pub mod check;
pub mod client;
pub mod config;
pub mod coordination;
pub mod execution;
#[cfg(test)]
mod fixture;
pub mod kv;
pub mod layered;
pub mod null;
pub mod oracle;
#[cfg(any(test, feature = "check"))]
pub mod over;
mod population;
mod seal;
pub mod server;
pub mod state_transfer;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tpcc;
pub mod wire;

pub use app::{Application, Execution, ObjectId, Reads, Table};
pub use catchup::Catchup;
pub use client::{Call, HeronClient, Window};
pub use config::Config;
pub use kv::KeyValue;
pub use null::NullRequests;
pub use server::{Counters, Executed, HeronServer};
pub use tpcc::Tpcc;

/// The hardware profile of Heron's testbed, on which its runs and checks default: CloudLab
/// XL170 nodes, ConnectX-4 (the Heron thesis, section 5.3).
pub const TESTBED: &str = "xl170-cx4";

use multicast::{Client, GroupId, Membership, Server};
use std::collections::BTreeMap;
use std::sync::Arc;
use transport::{Nic, Process, Progress, RegionSpec};

/// A process of a Heron run: a replica or a client.
// A run holds a handful of these, each polled in place: boxing the larger variant would add an
// indirection to every poll for no memory worth saving.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum HeronNode<S, C, A> {
    /// A replica.
    Server(HeronServer<S, A>),
    /// A client.
    Client(HeronClient<C, A>),
}

impl<N: Nic, S, C: Client<N>, A: Application> Process<N> for HeronNode<S, C, A>
where
    S: Server + for<'a> Process<layered::Layered<'a, N>>,
{
    fn regions(&self) -> Vec<RegionSpec> {
        match self {
            HeronNode::Server(s) => Process::<N>::regions(s),
            HeronNode::Client(c) => Process::<N>::regions(c),
        }
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        match self {
            HeronNode::Server(s) => s.poll(nic),
            HeronNode::Client(c) => c.poll(nic),
        }
    }

    fn done(&self) -> bool {
        match self {
            HeronNode::Server(_) => false,
            HeronNode::Client(c) => Process::<N>::done(c),
        }
    }

    fn stopped(&self) -> bool {
        match self {
            HeronNode::Server(s) => Process::<N>::stopped(s),
            HeronNode::Client(_) => false,
        }
    }
}

/// One database from the states of several replicas ([`HeronServer::state`]), a later state
/// winning for an object several hold (a replicated table's rows): what extending one map by
/// each state in turn gives, built in one pass instead of an insert per object.
pub fn merge_states(
    states: impl IntoIterator<Item = BTreeMap<ObjectId, Vec<u8>>>,
) -> BTreeMap<ObjectId, Vec<u8>> {
    // Sized once: a 16-partition TPC-C database has over a million objects, and a vector grown
    // by doubling copies them and faults in fresh pages at each step.
    let states: Vec<_> = states.into_iter().collect();
    let mut all: Vec<(ObjectId, Vec<u8>)> =
        Vec::with_capacity(states.iter().map(BTreeMap::len).sum());
    all.extend(states.into_iter().flatten());
    // Stable: of equal objects, the later state's value comes last.
    all.sort_by_key(|(oid, _)| *oid);
    // Of each run of equal objects the last value is kept: `dedup_by` keeps the first entry,
    // so a later one hands its value over before it is dropped.
    all.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            std::mem::swap(&mut later.1, &mut kept.1);
        }
        same
    });
    // Ascending and distinct: the map is built from it in one pass, in the vector's memory.
    all.into_iter().collect()
}

/// Every process of a Heron run on runtime NIC `N`: `cfg.partitions` x `cfg.replicas` replicas
/// over the multicast servers `server(g, rank)` builds, then `cfg.clients` clients over
/// `client(i)`, issuing requests of `app` during `window` from streams derived from `seed`.
/// `record` keeps what replicas executed and what clients issued, for the [`oracle`]. Sets `cfg`'s region bases from
/// the multicast processes' own region lists.
#[allow(clippy::too_many_arguments)]
pub fn deploy<N: Nic, S, C, A>(
    mut cfg: Config,
    app: Arc<A>,
    seed: u64,
    window: Window,
    record: bool,
    server: impl Fn(GroupId, usize) -> S,
    client: impl Fn(usize) -> C,
) -> Vec<HeronNode<S, C, A>>
where
    S: Server + Process<N>,
    C: Client<N>,
    A: Application,
{
    let servers: Vec<S> = (0..cfg.partitions * cfg.replicas)
        .map(|i| server(GroupId((i / cfg.replicas) as u8), i % cfg.replicas))
        .collect();
    let clients: Vec<C> = (0..cfg.clients).map(client).collect();
    if let Some(s) = servers.first() {
        cfg.server_region_base = Process::<N>::regions(s).len() as u16;
    }
    if let Some(c) = clients.first() {
        cfg.client_region_base = Process::<N>::regions(c).len() as u16;
    }
    let cfg = Arc::new(cfg);
    let mut nodes = Vec::with_capacity(cfg.processes());
    let populations: Vec<population::SharedPopulation> =
        (0..cfg.partitions).map(|_| Arc::default()).collect();
    for (i, s) in servers.into_iter().enumerate() {
        let g = GroupId((i / cfg.replicas) as u8);
        nodes.push(HeronNode::Server(HeronServer::new(
            s,
            app.clone(),
            cfg.clone(),
            (g, i % cfg.replicas),
            record,
            populations[g.0 as usize].clone(),
        )));
    }
    for (i, c) in clients.into_iter().enumerate() {
        nodes.push(HeronNode::Client(HeronClient::new(
            c,
            app.clone(),
            cfg.clone(),
            i,
            seed,
            window,
            record,
        )));
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Merging gives what extending one map by each state in turn gives: every object of
        /// any state, with the value of the last state that holds it.
        #[test]
        fn merging_states_keeps_the_last_value_of_each_object(
            states in proptest::collection::vec(
                proptest::collection::btree_map((0u16..3, 0u64..20), any::<u8>(), 0..30),
                0..5,
            )
        ) {
            let states: Vec<BTreeMap<ObjectId, Vec<u8>>> = states
                .into_iter()
                .map(|m| {
                    m.into_iter()
                        .map(|((table, key), v)| (ObjectId { table, key }, vec![v]))
                        .collect()
                })
                .collect();
            let mut want = BTreeMap::new();
            for s in &states {
                want.extend(s.clone());
            }
            prop_assert_eq!(merge_states(states), want);
        }
    }
}
