//! What travels between Ridge's processes, as bytes in a mesh ring slot: bincode, with a size
//! limit so that a malformed length inside a message can neither allocate past the slot it
//! came in nor be mistaken for a valid message.

use crate::mapping::EnsembleId;
use crate::paxos::{Msg, Round};
use crate::value::Value;
use bincode::Options;
use multicast::MsgId;
use transport::ProcessId;

/// One message between processes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Packet {
    /// Algorithm 3, line 4: a client's message for ensemble `e`'s coordinator.
    Request {
        /// The ensemble (Algorithm 4's mapping of the destinations).
        e: u16,
        /// The message, timestamped by its sender.
        value: Value,
        /// Whether an acceptor already passed it on to the coordinator it trusts (a request
        /// is passed on once, so two acceptors with different views never bounce it).
        forwarded: bool,
    },
    /// A message of Algorithm 2 within ensemble `e`.
    Paxos {
        /// The ensemble.
        e: u16,
        /// The message.
        msg: Msg,
    },
    /// A server delivered the client's message `id`.
    Response {
        /// The message delivered.
        id: MsgId,
        /// Where the answering server is an acceptor of the ensemble that ordered the message:
        /// that ensemble and the coordinator it trusts, so the client sends its next request
        /// there (and follows a takeover without a retry per message).
        coordinator: Option<(u16, ProcessId)>,
    },
    /// Nothing but a sign of life ([`crate::failure`]).
    Heartbeat,
    /// Section 4.5: a multicaster's copy of its message, sent straight to a learner of
    /// ensemble `e` for optimistic delivery.
    Optimistic {
        /// The ensemble.
        e: u16,
        /// The message.
        value: Value,
    },
    /// The sender coordinates each ensemble `e` listed, in round `rnd`: what the other
    /// acceptors' oracles count as its heartbeat (a process that stopped coordinating stops
    /// sending it, so nobody keeps trusting a live process that does not lead).
    Lead {
        /// `(e, rnd)` per ensemble led.
        leads: Vec<(u16, Round)>,
    },
    /// An acceptor of ensemble `e` that does not coordinate passed a client's request on to
    /// `coordinator`, the one it trusts: the client sends its next requests there. Only a
    /// client whose first choice is not the coordinator (it crashed, was replaced, or this is
    /// a retry) gets one; [`Packet::Response`]'s hint covers the rest, but only where an
    /// acceptor of the ensemble answers, never with dedicated acceptors.
    Redirect {
        /// The ensemble.
        e: u16,
        /// The coordinator the acceptor trusts.
        coordinator: ProcessId,
    },
}

impl Packet {
    /// A message of Algorithm 2 in ensemble `e`.
    pub fn paxos(e: EnsembleId, msg: Msg) -> Packet {
        Packet::Paxos { e: e.0, msg }
    }
}

/// Why bytes are not a packet.
#[derive(Debug)]
pub struct WireError(bincode::Error);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a Ridge message: {}", self.0)
    }
}

impl std::error::Error for WireError {}

fn options(limit: usize) -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(limit as u64)
        .reject_trailing_bytes()
}

impl Packet {
    /// The packet's bytes.
    pub fn encode(&self) -> Vec<u8> {
        options(usize::MAX)
            .serialize(self)
            .expect("plain data always serialises")
    }

    /// The packet in `bytes`, which must be all of it; nothing inside may claim more than
    /// `bytes.len()` (a packet never holds more than its own length).
    pub fn decode(bytes: &[u8]) -> Result<Packet, WireError> {
        options(bytes.len()).deserialize(bytes).map_err(WireError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paxos::{Msg, Round};
    use crate::value::{Timestamp, Value};
    use bytes::Bytes;
    use multicast::{DestSet, GroupId, MsgId};
    use proptest::prelude::*;
    use transport::ProcessId;

    fn value(payload: Vec<u8>, null: bool) -> Value {
        let id = MsgId { client: 9, seq: 4 };
        if null {
            return Value::null(id, Timestamp(77));
        }
        Value {
            id,
            ts: Timestamp(77),
            dests: DestSet::of([GroupId(0), GroupId(5)]).unwrap(),
            payload: Some(Bytes::from(payload)),
        }
    }

    fn msg(kind: u8, payload: Vec<u8>, null: bool) -> Msg {
        let v = value(payload, null);
        let quorum = vec![ProcessId(1), ProcessId(2)];
        match kind % 10 {
            0 => Msg::Phase1a {
                rnd: Round(3),
                from: 10,
            },
            1 => Msg::Phase1b {
                rnd: Round(3),
                from: 10,
                low: 4,
                votes: vec![(11, Round(2), v)],
                last: true,
            },
            2 => Msg::Phase2 {
                k: 12,
                rnd: Round(3),
                value: v,
                quorum,
                count: 1,
            },
            3 => Msg::Decision {
                k: 12,
                key: v.key(),
            },
            4 => Msg::Distribute {
                k: 12,
                value: v,
                quorum,
            },
            5 => Msg::Value { k: 12, value: v },
            6 => Msg::Reject {
                rnd: Round(3),
                promised: Round(9),
            },
            7 => Msg::Fetch { from: 3 },
            8 => Msg::Decided {
                k: 3,
                values: vec![v.clone(), v],
            },
            _ => Msg::Trimmed { low: 5 },
        }
    }

    proptest! {
        #[test]
        fn every_message_comes_back_as_it_went(
            kind in 0u8..10,
            payload in proptest::collection::vec(any::<u8>(), 0..300),
            null in any::<bool>(),
        ) {
            let m = Packet::Paxos { e: 2, msg: msg(kind, payload, null) };
            prop_assert_eq!(Packet::decode(&m.encode()).unwrap(), m);
        }

        /// Garbage, truncations and extensions of real messages are errors, never panics or
        /// huge allocations.
        #[test]
        fn damaged_bytes_are_refused_or_read_as_some_message(
            kind in 0u8..10,
            cut in any::<prop::sample::Index>(),
            noise in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let bytes = Packet::Paxos { e: 0, msg: msg(kind, vec![1; 40], false) }.encode();
            let cut = cut.index(bytes.len());
            prop_assert!(Packet::decode(&bytes[..cut]).is_err(), "a truncated message decoded");
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert!(Packet::decode(&longer).is_err(), "trailing bytes accepted");
            let _ = Packet::decode(&noise);
        }
    }

    #[test]
    fn a_length_beyond_the_message_is_refused_without_allocating_it() {
        // A Value message whose payload claims 2^40 bytes.
        let mut bytes = Packet::Paxos {
            e: 0,
            msg: msg(5, vec![1; 8], false),
        }
        .encode();
        let n = bytes.len();
        let at = n - 8 - 8; // the payload's u64 length precedes its 8 bytes
        bytes[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let e = Packet::decode(&bytes).unwrap_err().to_string();
        assert!(e.starts_with("not a Ridge message"), "{e}");
    }

    /// A DECISION names its value by key: 16 bytes (timestamp, destinations) more than the id
    /// alone, whatever the payload.
    #[test]
    fn a_decision_carries_the_key_and_no_value() {
        let v = value(vec![1; 1000], false);
        let decision = Packet::paxos(
            crate::mapping::EnsembleId(1),
            Msg::Decision { k: 3, key: v.key() },
        );
        // Packet tag 4, ensemble 2; Msg tag 4, instance 8; id 12, timestamp 8, destinations 8.
        assert_eq!(decision.encode().len(), 4 + 2 + 4 + 8 + 12 + 8 + 8);
    }
}
