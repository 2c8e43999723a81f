//! What an ensemble decides: a multicast message with its timestamp and destinations, or a
//! null message (Algorithm 3, lines 15-16).

use bytes::Bytes;
use multicast::{DestSet, MsgId};
use serde::{Deserialize, Serialize};

/// A message's timestamp: microseconds of its sender's clock, made unique by the sender's id
/// in the low bits (Algorithm 3, line 3: "unique timestamp based on local clock").
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// Bits of a timestamp that hold the sender's id.
    pub const SENDER_BITS: u32 = 16;

    /// The timestamp `clock_us` of sender `sender` (one of at most 2^16 processes).
    pub fn new(clock_us: u64, sender: u32) -> Timestamp {
        debug_assert!(sender < 1 << Self::SENDER_BITS, "sender id out of range");
        Timestamp(clock_us << Self::SENDER_BITS | u64::from(sender))
    }

    /// The smallest timestamp above `self` (Algorithm 3, line 32: `last_ts_e + 1`).
    pub fn next(self) -> Timestamp {
        Timestamp(self.0 + 1)
    }
}

/// What a DECISION names (section 4.5 sends decisions without values): the decided value's id
/// with the fields its order and delivery depend on, so that a learner pairs the decision only
/// with a copy of that content and never with another message that carries the same id (see
/// [`crate::optimistic`]). 28 bytes on the wire where the id alone took 12.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    /// The value's id.
    pub id: MsgId,
    /// Its timestamp as the sender gave it.
    pub ts: Timestamp,
    /// Its destinations.
    pub dests: DestSet,
}

/// A value of one consensus instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Value {
    /// Which message it is; a null message has the coordinator's id and its own sequence.
    pub id: MsgId,
    /// The initial timestamp the sender gave it (the learner may raise it, see
    /// [`crate::merge`]).
    pub ts: Timestamp,
    /// Where it is addressed (Algorithm 4, line 3, `m.dests`); empty for a null message.
    pub dests: DestSet,
    /// The payload; `None` for a null message.
    pub payload: Option<Bytes>,
}

impl Value {
    /// A null message (Algorithm 3, lines 15-16): decided like any value, never delivered.
    pub fn null(id: MsgId, ts: Timestamp) -> Value {
        Value {
            id,
            ts,
            dests: DestSet::EMPTY,
            payload: None,
        }
    }

    /// What a DECISION of this value names.
    pub fn key(&self) -> Key {
        Key {
            id: self.id,
            ts: self.ts,
            dests: self.dests,
        }
    }

    /// Whether this is a null message.
    pub fn is_null(&self) -> bool {
        self.payload.is_none()
    }

    /// Bytes a distributor sends for it (what the load balancer counts).
    pub fn size(&self) -> usize {
        self.payload.as_ref().map_or(0, Bytes::len)
    }
}
