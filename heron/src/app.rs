//! The application interface: what Heron needs to know about a replicated service to partition
//! it, read what a request reads, and execute it deterministically.
//!
//! A request declares the objects it reads first before it runs (Heron's execution has a
//! reading phase, then a writing phase, section 5.1.1); the partitions they live in are the
//! request's destinations, and the request writes objects of those partitions only. Reads may
//! depend on values read ([`Application::more_reads`]: a TPC-C New Order's order rows are named
//! by its district's next order id), within the same partitions. Every replica of every
//! involved partition executes the whole request with the same values read, so all of them
//! compute the same writes and the same response, and each applies the writes to its own
//! objects only. A table may be replicated: every partition holds all of it, reads it locally,
//! and nobody writes it (TPC-C's Item table, section 5.2.1).

use multicast::{DestSet, GroupId};
use std::collections::BTreeMap;
use std::fmt;
use transport::Rng;

/// An object: a row of a table, named by a key the application interprets.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ObjectId {
    /// The table.
    pub table: u16,
    /// The row's key within the table (its partition and row follow from it).
    pub key: u64,
}

/// A table: `rows` objects per partition of `value_bytes` each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// Name, for reports.
    pub name: &'static str,
    /// Rows each partition stores (every key of the table that maps to the partition has a row
    /// below this).
    pub rows: u64,
    /// Bytes of one value.
    pub value_bytes: usize,
    /// Every partition holds all rows (read locally, never written); `rows` counts them all.
    pub replicated: bool,
}

/// The values a request read, by object.
pub type Reads = BTreeMap<ObjectId, Vec<u8>>;

/// What executing a request produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Execution {
    /// New values, each for an object of the request's destinations; an object written twice
    /// takes the last value.
    pub writes: Vec<(ObjectId, Vec<u8>)>,
    /// The response returned to the client.
    pub response: Vec<u8>,
}

/// A replicated service Heron runs: its schema, its partitioning, and its deterministic
/// execution. Implementations must be pure functions of their arguments (every replica must
/// compute the same thing).
pub trait Application: fmt::Debug {
    /// The tables, in the order the object store lays them out.
    fn tables(&self) -> &[Table];

    /// The partition storing `oid` (of a table that is not replicated).
    fn partition_of(&self, oid: ObjectId) -> GroupId;

    /// The row of `oid` within its partition's table (below the table's `rows`).
    fn row_of(&self, oid: ObjectId) -> u64;

    /// Every object partition `g` holds (replicated tables' too), with its initial value.
    fn populate(&self, g: GroupId, put: &mut dyn FnMut(ObjectId, Vec<u8>));

    /// The objects `request` reads first; their partitions are its destinations.
    fn read_set(&self, request: &[u8]) -> Vec<ObjectId>;

    /// The objects `request` reads next, given what it has read so far (every object of the
    /// read set and of the earlier rounds); empty once it has read everything. They must live
    /// in the request's destinations or in replicated tables.
    fn more_reads(&self, _request: &[u8], _reads: &Reads) -> Vec<ObjectId> {
        Vec::new()
    }

    /// Executes `request` on the values it read. It writes objects of its destinations only,
    /// never of a replicated table.
    fn execute(&self, request: &[u8], reads: &Reads) -> Execution;

    /// Client `client`'s request number `seq` (0, 1, ...), drawn from `rng` (TPC-C binds a
    /// client to a home warehouse, as the specification binds a terminal, and deals its
    /// transaction types from a deck, which needs the request's place in the sequence).
    fn generate(&self, client: usize, seq: u64, rng: &mut Rng) -> Vec<u8>;

    /// The names of the kinds of request, for latencies reported per kind (TPC-C's
    /// transactions).
    fn kinds(&self) -> &[&'static str] {
        &["request"]
    }

    /// The kind of `request`: an index into [`Application::kinds`].
    fn kind_of(&self, _request: &[u8]) -> usize {
        0
    }

    /// Whether every partition holds `oid` (its table is replicated).
    fn replicated(&self, oid: ObjectId) -> bool {
        self.tables()[oid.table as usize].replicated
    }

    /// The partitions `request` involves: those of its read set, replicated tables aside.
    fn destinations(&self, request: &[u8]) -> Vec<GroupId> {
        let mut dst: Vec<GroupId> = self
            .read_set(request)
            .into_iter()
            .filter(|&o| !self.replicated(o))
            .map(|o| self.partition_of(o))
            .collect();
        dst.sort_unstable();
        dst.dedup();
        dst
    }
}

/// The objects a request bound for `dst` reads next ([`Application::more_reads`]), less those
/// it read already.
///
/// # Panics
/// If the application asks for an object outside `dst` that is not replicated: the request
/// was not multicast to its partition.
pub(crate) fn next_reads<A: Application + ?Sized>(
    app: &A,
    request: &[u8],
    dst: DestSet,
    reads: &Reads,
) -> Vec<ObjectId> {
    let mut more = app.more_reads(request, reads);
    more.retain(|o| !reads.contains_key(o));
    more.sort_unstable();
    more.dedup();
    for &o in &more {
        assert!(
            app.replicated(o) || dst.contains(app.partition_of(o)),
            "the application reads {o:?} after its first reads, outside the request's destinations"
        );
    }
    more
}

/// Executes `request` on `state` (every object, as [`Application::populate`] lays them out)
/// the way a lone replica holding everything would: reads round after round, executes, and
/// applies the writes. The sequential specification the oracle replays.
pub fn execute_on<A: Application + ?Sized>(
    app: &A,
    state: &mut BTreeMap<ObjectId, Vec<u8>>,
    request: &[u8],
) -> Execution {
    let dst = DestSet::of(app.destinations(request)).expect("requests have destinations");
    let mut reads: Reads = app
        .read_set(request)
        .into_iter()
        .map(|o| (o, state[&o].clone()))
        .collect();
    loop {
        let more = next_reads(app, request, dst, &reads);
        if more.is_empty() {
            break;
        }
        reads.extend(more.into_iter().map(|o| (o, state[&o].clone())));
    }
    let execution = app.execute(request, &reads);
    for (o, v) in &execution.writes {
        let slot = state.get_mut(o).expect("writes name existing objects");
        let mut padded = vec![0; slot.len()];
        padded[..v.len()].copy_from_slice(v);
        *slot = padded;
    }
    execution
}
