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

/// Bytes a [`Wire`] message adds around its list of items: the variant tag, the list's length
/// and `MyState`'s three scalar fields, rounded up.
pub const ENVELOPE: usize = 64;

/// Splits `items` into runs, in order, each of whose encodings (bincode's, as in
/// [`Wire::encode`]) fits in `budget` bytes with a message's [`ENVELOPE`]: a reply carrying
/// every entry a server holds (Task 8's `MY_STATE`, a new leader's catch-up) can be megabytes
/// (256 clients of 16 KB: 4.9 MB), far above one two-sided message. Always at least one run,
/// possibly empty, so a reply is sent even when there is nothing in it.
///
/// # Panics
/// If one item alone does not fit: its entry is larger than the NIC's largest two-sided
/// message, a deployment whose slots are too large for its transport (see `Config::slot_bytes`).
pub fn parts<T: Serialize>(items: Vec<T>, budget: usize) -> Vec<Vec<T>> {
    let room = budget.saturating_sub(ENVELOPE);
    let mut parts = vec![Vec::new()];
    let mut used = 0;
    for item in items {
        let size = bincode::serialized_size(&item).expect("plain data always serialises") as usize;
        assert!(
            size <= room,
            "a control message item of {size} bytes exceeds the NIC's largest two-sided message \
             ({budget} bytes, {ENVELOPE} of them envelope): the slots are larger than this \
             transport can carry in one message; use smaller slots or raise the NIC's send limit"
        );
        if used + size > room {
            parts.push(Vec::new());
            used = 0;
        }
        used += size;
        parts.last_mut().expect("never empty").push(item);
    }
    parts
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

    /// A leader change with 256 clients of 16 KB (`harness run --protocol ramcast --software
    /// tram-cpp --clients 256 --size 16384` with a false suspicion) once sent a 4.9 MB catch-up
    /// and panicked: the parts of such a reply each fit one message and keep every item, in order.
    #[test]
    fn a_reply_of_megabytes_goes_in_parts_that_each_fit_one_message() {
        let send_max = 1 << 20;
        let items: Vec<CatchItem> = (0..300)
            .map(|c| CatchItem {
                props: vec![(0, 7, 9)],
                entry: vec![c as u8; 16_300],
                ..CatchItem::about(c, 3)
            })
            .collect();
        let parts = parts(items.clone(), send_max);
        assert!(parts.len() >= 5, "{} parts", parts.len());
        for part in &parts {
            let msg = Wire::Catch {
                items: part.clone(),
            };
            assert!(msg.encode().len() <= send_max, "{}", msg.encode().len());
            let msg = Wire::MyState {
                round: u64::MAX,
                pend: part
                    .iter()
                    .map(|x| Pend {
                        client: x.client,
                        seq: x.seq,
                        entry: x.entry.clone(),
                        ts: Some((1, 2)),
                    })
                    .collect(),
                last: true,
                completed: u64::MAX,
            };
            assert!(msg.encode().len() <= send_max, "{}", msg.encode().len());
        }
        assert_eq!(parts.concat(), items);
        // Items that fill a part to the byte: the envelope is what keeps the message within
        // the limit (with no envelope these would exceed it).
        let exact = |n: usize| CatchItem {
            props: vec![(0, 7, 9)],
            entry: vec![1; n],
            ..CatchItem::about(1, 3)
        };
        let item = bincode::serialized_size(&exact(0)).unwrap() as usize;
        let full = exact(send_max - ENVELOPE - item);
        for part in super::parts(vec![full.clone(), full], send_max) {
            assert_eq!(part.len(), 1);
            assert!(Wire::Catch { items: part }.encode().len() <= send_max);
        }
        // Nothing to say is still one (empty) part: a candidate waits for every reply.
        assert_eq!(super::parts(Vec::<Pend>::new(), send_max), vec![vec![]]);
    }
}
