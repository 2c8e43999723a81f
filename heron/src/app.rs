//! The application interface: what Heron needs to know about a replicated service to partition
//! it, read what a request reads, and execute it deterministically.
//!
//! A request declares its read set and write set before it runs (Heron's execution has a
//! reading phase, then a writing phase, section 5.1.1); the partitions those sets touch are the
//! request's destinations. Every replica of every involved partition executes the whole request
//! with the same values read, so all of them compute the same writes and the same response, and
//! each applies the writes to its own objects only.

use multicast::GroupId;
use std::collections::BTreeMap;
use std::fmt;
use transport::Rng;

/// An object: a row of a table, named by a key the application interprets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
}

/// The values a request read, by object.
pub type Reads = BTreeMap<ObjectId, Vec<u8>>;

/// What executing a request produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Execution {
    /// New values, each for an object of the request's write set.
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

    /// The partition storing `oid`.
    fn partition_of(&self, oid: ObjectId) -> GroupId;

    /// The row of `oid` within its partition's table (below the table's `rows`).
    fn row_of(&self, oid: ObjectId) -> u64;

    /// Every object of partition `g`, with its initial value.
    fn populate(&self, g: GroupId, put: &mut dyn FnMut(ObjectId, Vec<u8>));

    /// The objects `request` reads.
    fn read_set(&self, request: &[u8]) -> Vec<ObjectId>;

    /// The objects `request` may write.
    fn write_set(&self, request: &[u8]) -> Vec<ObjectId>;

    /// Executes `request` on the values it read (every object of its read set).
    fn execute(&self, request: &[u8], reads: &Reads) -> Execution;

    /// A client's next request, drawn from `rng`.
    fn generate(&self, rng: &mut Rng) -> Vec<u8>;

    /// The partitions `request` involves: those of its read and write sets.
    fn destinations(&self, request: &[u8]) -> Vec<GroupId> {
        let mut dst: Vec<GroupId> = self
            .read_set(request)
            .into_iter()
            .chain(self.write_set(request))
            .map(|o| self.partition_of(o))
            .collect();
        dst.sort_unstable();
        dst.dedup();
        dst
    }
}
