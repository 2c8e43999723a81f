//! The application of the thesis's Figure 5.6 (state transfer latency against the amount of
//! state): a scripted client that leaves one replica of partition 0 behind by exactly a given
//! number of updated objects, then makes it find out.
//!
//! Two partitions; partition 0 holds `blobs` objects of [`BLOB_BYTES`] each (slots of just
//! under 32 KB, the thesis's write size, both versions included), each partition one 8-byte
//! cell. Client 0's requests, in order:
//! 1. `probe`: reads both cells, writes nothing (multi-partition): the request the laggard
//!    will fail to execute, its timestamp `T`;
//! 2. and 3. `bump`: adds one to partition 1's cell, twice: both versions of the cell now
//!    carry timestamps above `T`, so a replica executing `probe` after them reads no version
//!    older than `T` (Algorithm 10, line 30) and lags;
//! 4. `fill`: writes every blob of partition 0: the updates made since `T`, which a state
//!    transfer must bring the laggard (`blobs` slots, nothing else);
//! 5. and after: `idle`, a read of partition 1's cell, so the run goes on without touching
//!    partition 0.
//!
//! A replica of partition 0 paused from the start until after `fill` executes `probe` when it
//! resumes and asks for a state transfer of exactly the `fill`'s objects. With no blobs the
//! transfer carries no object: the protocol alone (the figure's "Protocol" bar). Other
//! clients only issue `idle`.

use crate::app::{Application, Execution, ObjectId, Reads, Table};
use multicast::GroupId;
use transport::Rng;

/// Bytes of a blob's value: the largest whose slot (two versions, each with its 8-byte tag,
/// and the 8-byte seal) fits a transfer write of 32 KB, a slot of 32,760 bytes (before the
/// seal, 16 KB less 8 made slots of exactly 32 KB).
pub const BLOB_BYTES: usize = 16 * 1024 - 16;

/// Table of the blobs.
const BLOB: u16 = 0;
/// Table of the cells.
const CELL: u16 = 1;

/// The kinds of request, by their first byte.
const KINDS: [&str; 4] = ["probe", "bump", "fill", "idle"];
const PROBE: u8 = 0;
const BUMP: u8 = 1;
const FILL: u8 = 2;
const IDLE: u8 = 3;

/// The scripted application.
#[derive(Clone, Debug)]
pub struct Catchup {
    blobs: u64,
    tables: [Table; 2],
}

impl Catchup {
    /// Partition 0 with `blobs` blobs for `fill` to write (0: a transfer of no object).
    pub fn new(blobs: u64) -> Catchup {
        Catchup {
            blobs,
            tables: [
                Table {
                    name: "blob",
                    rows: blobs,
                    value_bytes: BLOB_BYTES,
                    replicated: false,
                },
                Table {
                    name: "cell",
                    rows: 1,
                    value_bytes: 8,
                    replicated: false,
                },
            ],
        }
    }

    /// Blobs `fill` writes.
    pub fn blobs(&self) -> u64 {
        self.blobs
    }

    /// Bytes of the object slots `fill` updates, both versions of each: what a state transfer
    /// of them writes into the laggard.
    pub fn fill_bytes(&self) -> u64 {
        self.blobs * crate::store::Layout::slot_bytes(&self.tables[BLOB as usize]) as u64
    }

    fn cell(partition: u64) -> ObjectId {
        ObjectId {
            table: CELL,
            key: partition,
        }
    }

    fn blob(row: u64) -> ObjectId {
        ObjectId {
            table: BLOB,
            key: row,
        }
    }

    fn counter(v: &[u8]) -> u64 {
        u64::from_le_bytes(v[..8].try_into().expect("8 bytes"))
    }
}

impl Application for Catchup {
    fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// Blobs live in partition 0, cell `k` in partition `k`.
    fn partition_of(&self, oid: ObjectId) -> GroupId {
        match oid.table {
            BLOB => GroupId(0),
            _ => GroupId(oid.key as u8),
        }
    }

    fn row_of(&self, oid: ObjectId) -> u64 {
        match oid.table {
            BLOB => oid.key,
            _ => 0,
        }
    }

    fn populate(&self, g: GroupId, put: &mut dyn FnMut(ObjectId, Vec<u8>)) {
        if g.0 == 0 {
            for row in 0..self.blobs {
                put(Self::blob(row), vec![0; BLOB_BYTES]);
            }
        }
        put(Self::cell(g.0 as u64), 0u64.to_le_bytes().to_vec());
    }

    fn read_set(&self, request: &[u8]) -> Vec<ObjectId> {
        match request[0] {
            PROBE => vec![Self::cell(0), Self::cell(1)],
            BUMP | IDLE => vec![Self::cell(1)],
            // What makes partition 0 its destination; the blobs are written blind.
            _ => vec![Self::cell(0)],
        }
    }

    fn execute(&self, request: &[u8], reads: &Reads) -> Execution {
        let mut writes = Vec::new();
        match request[0] {
            BUMP => {
                let v = Self::counter(&reads[&Self::cell(1)]) + 1;
                writes.push((Self::cell(1), v.to_le_bytes().to_vec()));
            }
            FILL => {
                for row in 0..self.blobs {
                    writes.push((Self::blob(row), vec![request[1]; BLOB_BYTES]));
                }
            }
            _ => {}
        }
        let response = reads.values().flat_map(|v| v[..8].to_vec()).collect();
        Execution { writes, response }
    }

    /// Client 0 runs the script (see the module docs); the others read partition 1's cell.
    fn generate(&self, client: usize, seq: u64, _rng: &mut Rng) -> Vec<u8> {
        match (client, seq) {
            (0, 0) => vec![PROBE],
            (0, 1 | 2) => vec![BUMP],
            // The byte every blob is filled with: not the initial zero.
            (0, 3) => vec![FILL, 0xfe],
            _ => vec![IDLE],
        }
    }

    fn kinds(&self) -> &[&'static str] {
        &KINDS
    }

    fn kind_of(&self, request: &[u8]) -> usize {
        request[0] as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::execute_on;
    use std::collections::BTreeMap;

    #[test]
    fn the_script_probes_bumps_twice_fills_then_idles() {
        let app = Catchup::new(3);
        let mut state = BTreeMap::new();
        for g in 0..2 {
            app.populate(GroupId(g), &mut |o, v| {
                state.insert(o, v);
            });
        }
        let mut rng = Rng::from_seed(1);
        let script: Vec<Vec<u8>> = (0..6).map(|s| app.generate(0, s, &mut rng)).collect();
        let dst: Vec<Vec<GroupId>> = script.iter().map(|r| app.destinations(r)).collect();
        assert_eq!(dst[0], vec![GroupId(0), GroupId(1)], "probe spans both");
        assert_eq!(dst[1], vec![GroupId(1)]);
        assert_eq!(dst[3], vec![GroupId(0)], "fill is partition 0's");
        assert_eq!(dst[5], vec![GroupId(1)], "idle leaves partition 0 alone");
        for r in &script {
            execute_on(&app, &mut state, r);
        }
        assert_eq!(Catchup::counter(&state[&Catchup::cell(1)]), 2);
        for row in 0..3 {
            assert!(state[&Catchup::blob(row)].iter().all(|&b| b == 0xfe));
        }
        assert_eq!(app.fill_bytes(), 3 * (32 * 1024 - 8));
        assert_eq!(app.generate(1, 0, &mut rng), vec![IDLE]);
    }
}
