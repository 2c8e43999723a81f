//! The object store of a replica: every object in a registered region, in two versions tagged
//! with the timestamp of the request that wrote them (Algorithm 10's dual versioning).
//!
//! Layout, table after table, one slot per row:
//!
//! ```text
//! slot of a row   [tmp_a u64 | value_a | tmp_b u64 | value_b]     values padded to 8 bytes
//! ```
//!
//! The layout is a function of the application's schema, the same at every replica of a
//! partition, so a replica knows where an object lives at every peer of the object's partition
//! (see the crate docs, "Object addresses").
//!
//! A write replaces the older version: first its tag, then its value. A remote reader picks the
//! newest version older than its request, so a version being rewritten already carries a tag
//! at least as large as any concurrent reader's request and is never chosen; the local runtime
//! lands bytes in ascending address order, so the tag (lower address) is visible first.

use crate::app::{ObjectId, Table};

/// Bytes of a version's tag.
const TAG: usize = 8;

/// Where each table's rows live in the object region.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Per table: first byte, bytes per slot, bytes per value.
    tables: Vec<(usize, usize, usize)>,
    len: usize,
    rows: usize,
}

/// One version of an object: the timestamp of the request that wrote it and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version<'a> {
    /// The writing request's timestamp (0: the initial value).
    pub tmp: u64,
    /// The value.
    pub value: &'a [u8],
}

impl Layout {
    /// The layout of `tables`.
    pub fn new(tables: &[Table]) -> Layout {
        let tables_rows = tables.iter().map(|t| t.rows as usize).sum();
        let mut at = 0;
        let tables = tables
            .iter()
            .map(|t| {
                let slot = Layout::slot_bytes(t);
                let base = at;
                at += slot * t.rows as usize;
                (base, slot, t.value_bytes)
            })
            .collect();
        Layout {
            tables,
            len: at,
            rows: tables_rows,
        }
    }

    /// Bytes of a slot of table `t`: two versions, each a tag and the value padded to 8 bytes.
    pub fn slot_bytes(t: &Table) -> usize {
        2 * (TAG + t.value_bytes.next_multiple_of(8))
    }

    /// Bytes of the object region.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Rows of every table together.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether the schema has no rows at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The largest slot of any table.
    pub fn max_slot(&self) -> usize {
        self.tables.iter().map(|t| t.1).max().unwrap_or(0)
    }

    /// The byte range of `row` of table `oid.table`: `(offset, len)`.
    ///
    /// # Panics
    /// If the table does not exist (an application bug).
    pub fn slot(&self, oid: ObjectId, row: u64) -> (usize, usize) {
        let (base, slot, _) = self.tables[oid.table as usize];
        (base + slot * row as usize, slot)
    }

    /// Bytes of a value of `oid`'s table.
    pub fn value_bytes(&self, oid: ObjectId) -> usize {
        self.tables[oid.table as usize].2
    }

    /// The two versions held in `slot` (the bytes of a whole slot of `oid`'s table).
    pub fn versions<'a>(&self, oid: ObjectId, slot: &'a [u8]) -> [Version<'a>; 2] {
        let half = slot.len() / 2;
        let n = self.value_bytes(oid);
        let version = |at: usize| Version {
            tmp: u64::from_le_bytes(slot[at..at + TAG].try_into().expect("8 bytes")),
            value: &slot[at + TAG..at + TAG + n],
        };
        [version(0), version(half)]
    }

    /// The offset within a slot of the version a write replaces (the older one), and of its
    /// value.
    pub fn older(&self, versions: &[Version<'_>; 2], slot_len: usize) -> (usize, usize) {
        let at = if versions[0].tmp <= versions[1].tmp {
            0
        } else {
            slot_len / 2
        };
        (at, at + TAG)
    }
}

/// Algorithm 10, lines 24-28: the value a request with timestamp `tmp` may read, the newest
/// version older than the request; `None` if both are at or after it (the replica read from
/// has moved past what this request must see: the reader lags, line 29).
pub fn valid<'a>(versions: &[Version<'a>; 2], tmp: u64) -> Option<&'a [u8]> {
    versions
        .iter()
        .filter(|v| v.tmp < tmp)
        .max_by_key(|v| v.tmp)
        .map(|v| v.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout::new(&[
            Table {
                name: "a",
                rows: 3,
                value_bytes: 8,
                replicated: false,
            },
            Table {
                name: "b",
                rows: 2,
                value_bytes: 13,
                replicated: false,
            },
        ])
    }

    #[test]
    fn tables_are_laid_out_one_after_another_in_padded_slots() {
        let l = layout();
        let a = |key| ObjectId { table: 0, key };
        let b = |key| ObjectId { table: 1, key };
        assert_eq!(l.slot(a(0), 2), (64, 32));
        assert_eq!(l.slot(b(0), 0), (96, 48));
        assert_eq!(l.len(), 96 + 2 * 48);
        assert_eq!(l.max_slot(), 48);
    }

    #[test]
    fn a_reader_takes_the_newest_version_older_than_its_request() {
        let l = layout();
        let oid = ObjectId { table: 0, key: 0 };
        let mut slot = vec![0u8; 32];
        slot[..8].copy_from_slice(&5u64.to_le_bytes());
        slot[8..16].copy_from_slice(&[1; 8]);
        slot[16..24].copy_from_slice(&9u64.to_le_bytes());
        slot[24..32].copy_from_slice(&[2; 8]);
        let v = l.versions(oid, &slot);
        assert_eq!(valid(&v, 10), Some(&[2u8; 8][..]));
        assert_eq!(valid(&v, 9), Some(&[1u8; 8][..]));
        assert_eq!(valid(&v, 6), Some(&[1u8; 8][..]));
        // Both versions at or after the request: the reader lags.
        assert_eq!(valid(&v, 5), None);
        // A write replaces the older version.
        assert_eq!(l.older(&v, 32), (0, 8));
    }
}
