//! Atomic multicast: the vocabulary RamCast, TRAM and Ridge share, the delivery-log format other
//! people's tools can read, and a checker of the five properties.
//!
//! The properties are those of RamCast (Le et al., Middleware 2021, section 2.2), checked on the
//! log of a finished run (after a convergence phase, so "eventually" means "by the end"):
//!
//! | property | module |
//! |---|---|
//! | validity | [`check::validity`] |
//! | (uniform) integrity | [`check::integrity`] |
//! | uniform agreement | [`check::agreement`] |
//! | uniform prefix order | [`check::prefix_order`] |
//! | uniform acyclic order | [`check::acyclic_order`] |
//!
//! A violation names its property and the smallest witness the checker found (messages and
//! processes), so a failing seed can be read without a debugger.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod check;
pub mod limits;
pub mod log;
pub mod membership;
pub mod observed;
pub mod omega;
pub mod role;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tree;
pub mod workload;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

pub use check::{check, Property, Violation};
pub use limits::{check_limits, LimitError};
pub use log::{DeliveryLog, LogError, Member, Multicast};
pub use membership::Membership;
pub use observed::Observed;
pub use omega::Omega;
pub use role::{
    collect_log, deploy, deploy_with_auxiliaries, log_node, Client, Completed, Delivery,
    MulticastError, MulticastResult, Node, Outstanding, Server, ServerNode,
};
pub use transport::ProcessId;
pub use tree::{Tree, TreeError};
pub use workload::{ClosedLoop, DestPolicy, LoadSpec};

/// A group of server processes (groups are disjoint).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct GroupId(pub u8);

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "g{}", self.0)
    }
}

/// The largest number of groups a destination set can name.
pub const MAX_GROUPS: usize = 64;

/// A message's destination groups: a set of up to [`MAX_GROUPS`] groups.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct DestSet(u64);

impl DestSet {
    /// The empty set.
    pub const EMPTY: DestSet = DestSet(0);

    /// The set of `groups`; `None` if one is out of range.
    pub fn of(groups: impl IntoIterator<Item = GroupId>) -> Option<DestSet> {
        let mut bits = 0u64;
        for g in groups {
            if g.0 as usize >= MAX_GROUPS {
                return None;
            }
            bits |= 1 << g.0;
        }
        Some(DestSet(bits))
    }

    /// Whether `g` is a destination.
    pub fn contains(&self, g: GroupId) -> bool {
        (g.0 as usize) < MAX_GROUPS && self.0 & (1 << g.0) != 0
    }

    /// This set with `g` added (a group below [`MAX_GROUPS`]).
    pub fn with(self, g: GroupId) -> DestSet {
        DestSet(self.0 | 1 << g.0)
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether no group is named.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The set as a bitmask (bit `g` for group `g`), for wire encodings.
    pub const fn bits(&self) -> u64 {
        self.0
    }

    /// The set of a bitmask made by [`DestSet::bits`].
    pub const fn from_bits(bits: u64) -> DestSet {
        DestSet(bits)
    }

    /// The groups, in increasing order.
    pub fn groups(&self) -> impl Iterator<Item = GroupId> + '_ {
        // Walks the set bits only: destination sets are small and this is on hot paths.
        let mut bits = self.0;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let g = bits.trailing_zeros() as u8;
                bits &= bits - 1;
                GroupId(g)
            })
        })
    }
}

/// `0;2;5`, the delivery-log spelling.
impl fmt::Display for DestSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.groups().map(|g| g.0.to_string()).collect();
        f.write_str(&parts.join(";"))
    }
}

impl FromStr for DestSet {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut groups = Vec::new();
        for part in s.split(';').filter(|p| !p.is_empty()) {
            let g: u8 = part
                .trim()
                .parse()
                .map_err(|_| format!("`{part}` is not a group id in destination set `{s}`"))?;
            groups.push(GroupId(g));
        }
        DestSet::of(groups)
            .ok_or_else(|| format!("destination set `{s}` names a group >= {MAX_GROUPS}"))
    }
}

/// A message id: the multicasting client and its sequence number, spelled `c3:17`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct MsgId {
    /// The client's process id.
    pub client: u32,
    /// The client's sequence number for this message.
    pub seq: u64,
}

impl fmt::Display for MsgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}:{}", self.client, self.seq)
    }
}

impl FromStr for MsgId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a message id like c3:17");
        let rest = s.strip_prefix('c').ok_or_else(bad)?;
        let (client, seq) = rest.split_once(':').ok_or_else(bad)?;
        Ok(MsgId {
            client: client.parse().map_err(|_| bad())?,
            seq: seq.parse().map_err(|_| bad())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_sets_round_trip_their_spelling() {
        let d: DestSet = "0;2;63".parse().unwrap();
        assert_eq!(d.to_string(), "0;2;63");
        assert!(d.contains(GroupId(2)) && !d.contains(GroupId(1)) && d.len() == 3);
        assert!("64".parse::<DestSet>().is_err());
        assert!("x".parse::<DestSet>().is_err());
        let m: MsgId = "c3:17".parse().unwrap();
        assert_eq!(
            (m.client, m.seq, m.to_string()),
            (3, 17, "c3:17".to_string())
        );
        assert!("3:17".parse::<MsgId>().is_err());
    }
}
