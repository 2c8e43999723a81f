//! The smallest application: a partitioned key-value store of counters.
//!
//! Key `k` lives in partition `k % partitions`. A request names one key (a single-partition
//! request) or two keys in different partitions (a multi-partition one, with probability
//! `multi`), reads them and adds a delta to each (zero: a pure read); the response is the values
//! read. The sum of all deltas applied is the sum of all values, an invariant the tests check.

use crate::app::{Application, Execution, ObjectId, Reads, Table};
use multicast::GroupId;
use transport::Rng;

/// The key-value store.
#[derive(Clone, Debug)]
pub struct KeyValue {
    partitions: usize,
    keys: u64,
    multi: f64,
    tables: [Table; 1],
}

impl KeyValue {
    /// `keys` counters over `partitions` partitions; a request spans two partitions with
    /// probability `multi` (there must be at least two partitions for that).
    pub fn new(partitions: usize, keys: u64, multi: f64) -> KeyValue {
        assert!(partitions > 0 && keys >= partitions as u64);
        KeyValue {
            partitions,
            keys,
            multi: if partitions > 1 { multi } else { 0.0 },
            tables: [Table {
                name: "counter",
                rows: keys.div_ceil(partitions as u64),
                value_bytes: 8,
                replicated: false,
            }],
        }
    }

    fn oid(key: u64) -> ObjectId {
        ObjectId { table: 0, key }
    }

    /// The request reading `keys` and adding `delta` to each.
    pub fn request(keys: &[u64], delta: i64) -> Vec<u8> {
        let mut out = delta.to_le_bytes().to_vec();
        for k in keys {
            out.extend_from_slice(&k.to_le_bytes());
        }
        out
    }

    fn parse(request: &[u8]) -> (i64, Vec<u64>) {
        let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
        let delta = word(&request[..8]) as i64;
        (delta, request[8..].chunks_exact(8).map(word).collect())
    }

    /// A value as stored: the counter, little endian.
    pub fn value(bytes: &[u8]) -> i64 {
        i64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
    }
}

impl Application for KeyValue {
    fn tables(&self) -> &[Table] {
        &self.tables
    }

    fn partition_of(&self, oid: ObjectId) -> GroupId {
        GroupId((oid.key % self.partitions as u64) as u8)
    }

    fn row_of(&self, oid: ObjectId) -> u64 {
        oid.key / self.partitions as u64
    }

    fn populate(&self, g: GroupId, put: &mut dyn FnMut(ObjectId, Vec<u8>)) {
        for key in (g.0 as u64..self.keys).step_by(self.partitions) {
            put(Self::oid(key), 0i64.to_le_bytes().to_vec());
        }
    }

    fn read_set(&self, request: &[u8]) -> Vec<ObjectId> {
        Self::parse(request).1.into_iter().map(Self::oid).collect()
    }

    fn execute(&self, request: &[u8], reads: &Reads) -> Execution {
        let (delta, keys) = Self::parse(request);
        let mut response = Vec::new();
        let mut writes = Vec::new();
        for k in keys {
            let v = Self::value(&reads[&Self::oid(k)]);
            response.extend_from_slice(&v.to_le_bytes());
            if delta != 0 {
                writes.push((Self::oid(k), v.wrapping_add(delta).to_le_bytes().to_vec()));
            }
        }
        Execution { writes, response }
    }

    fn generate(&self, _client: usize, _seq: u64, rng: &mut Rng) -> Vec<u8> {
        let first = rng.below(self.keys);
        let delta = rng.below(3) as i64 - 1;
        if rng.unit_f64() >= self.multi {
            return Self::request(&[first], delta);
        }
        // A second key in another partition: shift by 1..partitions-1 partitions.
        let p = self.partitions as u64;
        let shift = 1 + rng.below(p - 1);
        let mut second = first + shift;
        // Back into range by whole rounds of partitions: the partition stays the shifted one.
        while second >= self.keys {
            second -= p;
        }
        Self::request(&[first, second], delta)
    }
}
