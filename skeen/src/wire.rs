//! The packets Skeen's processes exchange over the mesh, and their bytes.
//!
//! Every packet starts with a tag byte and the message id (`client` u32, `seq` u64, little
//! endian): 13 bytes. Then:
//!
//! | tag | packet | from, to | rest |
//! |---|---|---|---|
//! | 1 | [`Packet::Multicast`] (Task 1) | client, each destination's server | destination bitmask u64, payload (to the end of the entry) |
//! | 2 | [`Packet::Propose`] (Task 2) | server, the other destinations' servers | the proposed [`Stamp`] u64 |
//! | 3 | [`Packet::Reply`] (after Task 4) | server, the message's client | the final [`Stamp`] u64 |
//!
//! The payload's length is the entry's (the ring frames entries), so a multicast costs
//! [`HEADER_BYTES`] beyond its payload whatever its destinations. Decoding is bounded: a short,
//! long or unknown packet is an error, never a panic.

use crate::order::Stamp;
use bytes::Bytes;
use multicast::{DestSet, MsgId};

/// Bytes a multicast packet needs besides its payload.
pub const HEADER_BYTES: usize = ID_BYTES + 8;

/// The tag and the message id.
const ID_BYTES: usize = 1 + 4 + 8;

const MULTICAST: u8 = 1;
const PROPOSE: u8 = 2;
const REPLY: u8 = 3;

/// A packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packet {
    /// Task 1: a client's message to one of its destinations' servers.
    Multicast {
        /// The message.
        id: MsgId,
        /// Its destination groups.
        dst: DestSet,
        /// Its bytes.
        payload: Bytes,
    },
    /// Task 2: a destination's local timestamp for a message, to the other destinations.
    Propose {
        /// The message.
        id: MsgId,
        /// The sender group's proposal.
        ts: Stamp,
    },
    /// A destination delivered the message: the answer its client waits for.
    Reply {
        /// The message.
        id: MsgId,
        /// Its final timestamp.
        ts: Stamp,
    },
}

/// Bytes that are not a packet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Shorter than its kind needs.
    #[error("packet of {len} bytes is too short (at least {need} expected)")]
    Short {
        /// Bytes received.
        len: usize,
        /// Bytes the packet needs.
        need: usize,
    },
    /// Longer than its kind allows (only multicasts carry a payload).
    #[error("packet with tag {tag} has {extra} trailing bytes")]
    Trailing {
        /// The tag.
        tag: u8,
        /// Bytes left over.
        extra: usize,
    },
    /// An unknown tag.
    #[error("unknown packet tag {0}")]
    Tag(u8),
}

impl Packet {
    /// The packet's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_into(&mut out);
        out
    }

    /// Bytes [`Packet::encode`] produces.
    pub fn encoded_len(&self) -> usize {
        match self {
            Packet::Multicast { payload, .. } => HEADER_BYTES + payload.len(),
            Packet::Propose { .. } | Packet::Reply { .. } => ID_BYTES + 8,
        }
    }

    /// Appends the packet's bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let (tag, id) = match self {
            Packet::Multicast { id, .. } => (MULTICAST, id),
            Packet::Propose { id, .. } => (PROPOSE, id),
            Packet::Reply { id, .. } => (REPLY, id),
        };
        out.push(tag);
        out.extend_from_slice(&id.client.to_le_bytes());
        out.extend_from_slice(&id.seq.to_le_bytes());
        match self {
            Packet::Multicast { dst, payload, .. } => {
                out.extend_from_slice(&dst.bits().to_le_bytes());
                out.extend_from_slice(payload);
            }
            Packet::Propose { ts, .. } | Packet::Reply { ts, .. } => {
                out.extend_from_slice(&ts.0.to_le_bytes());
            }
        }
    }

    /// The packet `bytes` hold.
    pub fn decode(bytes: &[u8]) -> Result<Packet, WireError> {
        let short = |need| WireError::Short {
            len: bytes.len(),
            need,
        };
        if bytes.len() < ID_BYTES + 8 {
            return Err(match bytes.first() {
                Some(&t) if t > REPLY || t == 0 => WireError::Tag(t),
                _ => short(ID_BYTES + 8),
            });
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let id = MsgId {
            client: u32::from_le_bytes(bytes[1..5].try_into().expect("4")),
            seq: u64_at(5),
        };
        let word = u64_at(ID_BYTES);
        let tag = bytes[0];
        let fixed = |p: Packet| {
            if bytes.len() > ID_BYTES + 8 {
                Err(WireError::Trailing {
                    tag,
                    extra: bytes.len() - ID_BYTES - 8,
                })
            } else {
                Ok(p)
            }
        };
        match tag {
            MULTICAST => Ok(Packet::Multicast {
                id,
                dst: DestSet::from_bits(word),
                payload: Bytes::copy_from_slice(&bytes[HEADER_BYTES..]),
            }),
            PROPOSE => fixed(Packet::Propose {
                id,
                ts: Stamp(word),
            }),
            REPLY => fixed(Packet::Reply {
                id,
                ts: Stamp(word),
            }),
            t => Err(WireError::Tag(t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multicast::GroupId;

    #[test]
    fn packets_round_trip_and_bad_bytes_are_errors() {
        let id = MsgId {
            client: 7,
            seq: u64::MAX - 3,
        };
        let packets = [
            Packet::Multicast {
                id,
                dst: DestSet::of([GroupId(0), GroupId(63)]).unwrap(),
                payload: Bytes::from_static(b"hello"),
            },
            Packet::Multicast {
                id,
                dst: DestSet::of([GroupId(1)]).unwrap(),
                payload: Bytes::new(),
            },
            Packet::Propose {
                id,
                ts: Stamp::new(9, GroupId(3)),
            },
            Packet::Reply {
                id,
                ts: Stamp(u64::MAX),
            },
        ];
        for p in packets {
            let b = p.encode();
            assert_eq!(b.len(), p.encoded_len());
            assert_eq!(Packet::decode(&b), Ok(p.clone()));
            for cut in 0..b.len().min(HEADER_BYTES) {
                assert!(Packet::decode(&b[..cut]).is_err(), "{p:?} cut at {cut}");
            }
        }
        let mut long = Packet::Propose { id, ts: Stamp(1) }.encode();
        long.push(0);
        assert_eq!(
            Packet::decode(&long),
            Err(WireError::Trailing { tag: 2, extra: 1 })
        );
        long[0] = 9;
        assert_eq!(Packet::decode(&long), Err(WireError::Tag(9)));
        assert_eq!(Packet::decode(&[0]), Err(WireError::Tag(0)));
    }
}
