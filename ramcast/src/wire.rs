//! The two-sided messages of failure handling (Algorithm 3) and of client-failure relays
//! (Task 10), encoded with bincode. The normal case uses one-sided writes only.

use serde::{Deserialize, Serialize};

/// One entry of a `MY_STATE` reply (Algorithm 3, line 16): a slot the new leader must know of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pend {
    /// Client index.
    pub client: u32,
    /// The slot's sequence number in the responder's group.
    pub seq: u64,
    /// The encoded entry payload (msg, dst, ptr).
    pub entry: Vec<u8>,
    /// The responder's `T` entry for its own group: `(tmp, rnd)`, if any.
    pub ts: Option<(u64, u64)>,
}

/// Recovery information about one slot of the receiver (see [`crate::recovery`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatchItem {
    /// Client index.
    pub client: u32,
    /// The slot's sequence number in the receiver's group.
    pub seq: u64,
    /// Proposals `(group, tmp, rnd)` the sender holds for the slot.
    pub props: Vec<(u8, u64, u64)>,
    /// Acknowledgements `(group, rank, round)` the sender gives (its own) for the slot.
    pub acks: Vec<(u8, u8, u64)>,
    /// The encoded entry, for a receiver that may lack it (empty when not sent).
    pub entry: Vec<u8>,
}

impl CatchItem {
    /// An item about slot `seq` of client `client`, carrying nothing yet.
    pub fn about(client: u32, seq: u64) -> CatchItem {
        CatchItem {
            client,
            seq,
            props: Vec::new(),
            acks: Vec::new(),
            entry: Vec::new(),
        }
    }
}

/// A control message between servers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Wire {
    /// Task 7: a would-be leader's round and, per client, its first undecided slot.
    CatchUp {
        /// The new round.
        round: u64,
        /// First undecided sequence number per client, in the sender's group numbering.
        fus: Vec<u64>,
    },
    /// Task 8: the responder's pending entries, possibly split over several messages.
    MyState {
        /// The round answered.
        round: u64,
        /// Entries.
        pend: Vec<Pend>,
        /// True on the last part.
        last: bool,
        /// The highest round of the responder's group it knows complete.
        completed: u64,
    },
    /// Task 8, refused: the responder already accepted a round at least this high.
    Nack {
        /// The responder's round for the sender's group.
        round: u64,
    },
    /// A new leader's announcement that its round is complete, to its followers and to the
    /// other groups' leaders: every proposal its Task 9 made was posted to the receiver before
    /// this message (same queue pair, in order).
    Complete {
        /// The round.
        round: u64,
    },
    /// Proposals and acknowledgements for slots the sender already delivered, sent by message
    /// so the receiver applies them only to a slot that still holds that message.
    Catch {
        /// Items.
        items: Vec<CatchItem>,
    },
    /// Task 10: a message of a suspected client, relayed to a destination.
    Relay {
        /// Client index.
        client: u32,
        /// The message's sequence number in the receiver's group.
        seq: u64,
        /// The encoded entry payload.
        entry: Vec<u8>,
    },
}

impl Wire {
    /// Encodes the message.
    pub fn encode(&self) -> Vec<u8> {
        bincode::serialize(self).expect("plain data always serialises")
    }

    /// Decodes a message; a malformed one is an error, never a panic, and no length inside it
    /// may claim more than the message's own bytes (so a damaged length cannot allocate).
    pub fn decode(bytes: &[u8]) -> Result<Wire, bincode::Error> {
        use bincode::Options;
        // `encode`'s format (bincode's defaults: fixed-width integers, trailing bytes allowed),
        // bounded by the message's length.
        bincode::DefaultOptions::new()
            .with_fixint_encoding()
            .allow_trailing_bytes()
            .with_limit(bytes.len() as u64)
            .deserialize(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_garbage_is_an_error() {
        let m = Wire::MyState {
            round: 5,
            pend: vec![Pend {
                client: 1,
                seq: 2,
                entry: vec![1, 2, 3],
                ts: Some((4, 5)),
            }],
            last: true,
            completed: 3,
        };
        assert_eq!(Wire::decode(&m.encode()).unwrap(), m);
        assert!(Wire::decode(&[0xff, 0xff, 0xff, 0xff, 1]).is_err());
        // A `Catch` whose item list claims 2^40 items is refused, not allocated.
        let mut bytes = Wire::Catch { items: Vec::new() }.encode();
        let n = bytes.len();
        bytes[n - 8..].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(Wire::decode(&bytes).is_err());
    }
}
