//! The object store of a replica: every object in a registered region, in two versions tagged
//! with the timestamp of the request that wrote them (Algorithm 10's dual versioning).
//!
//! Layout, table after table, one slot per row:
//!
//! ```text
//! slot of a row   [tmp_a u64 | value_a | tmp_b u64 | value_b | seal u64]   values padded to 8 bytes
//! ```
//!
//! The layout is a function of the application's schema, the same at every replica of a
//! partition, so a replica knows where an object lives at every peer of the object's partition
//! (see the crate docs, "Object addresses").
//!
//! A write replaces the older version and then the seal, the seal of the whole slot's other
//! words (see the crate docs, "Memory protocol"). A remote reader accepts a slot only if it is
//! sealed, and then picks the newest version older than its request; a slot read while it was
//! being written is read again. One seal per slot rather than per version: a read may see one
//! version before a write and the other after the next one (a slot `[a | b]` read as `a`
//! early and as `n2` late, after `n1` replaced `a` and `n2` replaced `b`), two versions each
//! whole that were never in the slot together, and picking `a` there misses `b`.

use crate::app::{ObjectId, Table};
use crate::seal::{reseal, sealed, word, SEAL};

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

    /// Bytes of a slot of table `t`: two versions, each a tag and the value padded to 8 bytes,
    /// and the seal.
    pub fn slot_bytes(t: &Table) -> usize {
        2 * (TAG + t.value_bytes.next_multiple_of(8)) + SEAL
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

    /// The slot `(offset, len)` that starts at byte `offset` of the object region, if one does:
    /// how a replica checks a slot another replica names.
    pub fn slot_at(&self, offset: usize) -> Option<(usize, usize)> {
        let &(base, slot, _) = self
            .tables
            .iter()
            .rev()
            .find(|&&(base, _, _)| base <= offset)?;
        ((offset - base) % slot == 0 && offset < self.len).then_some((offset, slot))
    }

    /// The two versions held in `slot` (the bytes of a whole slot of `oid`'s table), as this
    /// replica's own memory holds them: only it writes there, so they are whole.
    pub fn versions<'a>(&self, oid: ObjectId, slot: &'a [u8]) -> [Version<'a>; 2] {
        let half = Self::half(slot.len());
        let n = self.value_bytes(oid);
        let version = |at: usize| Version {
            tmp: word(&slot[at..at + TAG]),
            value: &slot[at + TAG..at + TAG + n],
        };
        [version(0), version(half)]
    }

    /// The two versions of `slot` as a remote read returned it: `None` if it is not
    /// [whole](Layout::whole) (read while it was written; read it again).
    pub fn open<'a>(&self, oid: ObjectId, slot: &'a [u8]) -> Option<[Version<'a>; 2]> {
        Self::whole(slot).then(|| self.versions(oid, slot))
    }

    /// Whether the bytes of `slot` are a state the slot was in: sealed, or all zero (a row
    /// the population left empty and nobody wrote yet: sealing every such row would make
    /// every partition's image as large as its region). A view read while the row's first
    /// write landed is all zero only if both tags and the seal were read before that write
    /// reached them, so it is the row's empty state, and the write was not older than the
    /// reader's request (its tag was not there for the whole read).
    pub fn whole(slot: &[u8]) -> bool {
        sealed(slot) || slot.iter().all(|&b| b == 0)
    }

    /// Bytes of one version in a slot of `slot_len` bytes.
    fn half(slot_len: usize) -> usize {
        (slot_len - SEAL) / 2
    }

    /// Writes version `tmp` of `value` (padded to the table's value bytes) over the older
    /// version of `slot`, and the seal. Returns the byte range of the version written (the
    /// seal is the slot's last word).
    pub fn rewrite(&self, slot: &mut [u8], tmp: u64, value: &[u8]) -> std::ops::Range<usize> {
        let half = Self::half(slot.len());
        let at = if word(&slot[..TAG]) <= word(&slot[half..half + TAG]) {
            0
        } else {
            half
        };
        slot[at..at + TAG].copy_from_slice(&tmp.to_le_bytes());
        let value_at = at + TAG;
        slot[value_at..value_at + value.len()].copy_from_slice(value);
        slot[value_at + value.len()..at + half].fill(0);
        reseal(slot);
        at..at + half
    }

    /// The slot holding `value` in both versions, with timestamp 0: an object's initial slot.
    pub fn initial(&self, value: &[u8], slot: &mut [u8]) {
        let half = Self::half(slot.len());
        slot.fill(0);
        for at in [0, half] {
            slot[at + TAG..at + TAG + value.len()].copy_from_slice(value);
        }
        reseal(slot);
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
    fn tables_are_laid_out_one_after_another_in_padded_sealed_slots() {
        let l = layout();
        let a = |key| ObjectId { table: 0, key };
        let b = |key| ObjectId { table: 1, key };
        assert_eq!(l.slot(a(0), 2), (80, 40));
        assert_eq!(l.slot(b(0), 0), (120, 56));
        assert_eq!(l.len(), 120 + 2 * 56);
        assert_eq!(l.max_slot(), 56);
    }

    #[test]
    fn only_the_first_byte_of_a_slot_names_one() {
        let l = layout();
        assert_eq!(l.slot_at(0), Some((0, 40)));
        assert_eq!(l.slot_at(80), Some((80, 40)));
        assert_eq!(l.slot_at(120), Some((120, 56)));
        assert_eq!(l.slot_at(176), Some((176, 56)));
        for garbage in [8, 119, 121, 232, usize::MAX] {
            assert_eq!(l.slot_at(garbage), None, "{garbage}");
        }
    }

    #[test]
    fn a_reader_takes_the_newest_version_older_than_its_request() {
        let l = layout();
        let oid = ObjectId { table: 0, key: 0 };
        let mut slot = vec![0u8; 40];
        l.initial(&[7; 8], &mut slot);
        assert_eq!(l.rewrite(&mut slot, 5, &[1; 8]), 0..16);
        assert_eq!(l.rewrite(&mut slot, 9, &[2; 8]), 16..32);
        let v = l.open(oid, &slot).expect("sealed");
        assert_eq!(valid(&v, 10), Some(&[2u8; 8][..]));
        assert_eq!(valid(&v, 9), Some(&[1u8; 8][..]));
        assert_eq!(valid(&v, 6), Some(&[1u8; 8][..]));
        // Both versions at or after the request: the reader lags.
        assert_eq!(valid(&v, 5), None);
        // A write replaces the older version.
        assert_eq!(l.rewrite(&mut slot, 12, &[3; 8]), 0..16);
        let v = l.open(oid, &slot).expect("sealed");
        assert_eq!(valid(&v, 10), Some(&[2u8; 8][..]));
        assert_eq!(valid(&v, 13), Some(&[3u8; 8][..]));
    }

    #[test]
    fn a_short_value_is_padded_with_zeros_over_the_older_version() {
        let l = layout();
        let oid = ObjectId { table: 1, key: 0 };
        let mut slot = vec![0u8; 56];
        l.initial(&[9; 13], &mut slot);
        l.rewrite(&mut slot, 4, &[1; 5]);
        let v = l.open(oid, &slot).expect("sealed");
        assert_eq!(v[0].tmp, 4);
        assert_eq!(v[0].value, &[1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0][..]);
        assert_eq!(
            v[1],
            Version {
                tmp: 0,
                value: &[9; 13]
            }
        );
    }
}
