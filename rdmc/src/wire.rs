//! RDMC's few control messages, sent two-sided next to the block writes. The paper avoids
//! out-of-band signalling except `ready_for_block`; we add the message size for a member's
//! first block (the paper carries it in every block's immediate, which is 32 bits: ours carries
//! the block number so that messages of any size and any block count work), failure notices,
//! and probes of a silent peer.

/// A control message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ctl {
    /// The receiver is ready for the block of `step` of message `msg` (`ready_for_block`).
    Ready {
        /// Group number.
        group: u32,
        /// Message sequence number in the group.
        msg: u64,
        /// The receiver's step.
        step: u64,
    },
    /// Message `msg` has `bytes` bytes; sent by a member's first relay before its first block.
    Size {
        /// Group number.
        group: u32,
        /// Message sequence number.
        msg: u64,
        /// Message size.
        bytes: u64,
    },
    /// `member` of the group failed; the group is broken.
    Failed {
        /// Group number.
        group: u32,
        /// Index of the failed member in the group.
        member: u32,
    },
    /// Are you alive? (An error completion answers for a crashed peer.)
    Probe,
}

const READY: u8 = 1;
const SIZE: u8 = 2;
const FAILED: u8 = 3;
const PROBE: u8 = 4;

impl Ctl {
    /// The encoding: a tag byte and little-endian fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(21);
        match *self {
            Ctl::Ready { group, msg, step } => {
                b.push(READY);
                b.extend_from_slice(&group.to_le_bytes());
                b.extend_from_slice(&msg.to_le_bytes());
                b.extend_from_slice(&step.to_le_bytes());
            }
            Ctl::Size { group, msg, bytes } => {
                b.push(SIZE);
                b.extend_from_slice(&group.to_le_bytes());
                b.extend_from_slice(&msg.to_le_bytes());
                b.extend_from_slice(&bytes.to_le_bytes());
            }
            Ctl::Failed { group, member } => {
                b.push(FAILED);
                b.extend_from_slice(&group.to_le_bytes());
                b.extend_from_slice(&member.to_le_bytes());
            }
            Ctl::Probe => b.push(PROBE),
        }
        b
    }

    /// Decodes an encoding made by [`Ctl::encode`]; `None` for anything else.
    pub fn decode(b: &[u8]) -> Option<Ctl> {
        let u32_at = |at: usize| Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?));
        let u64_at = |at: usize| Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?));
        let ctl = match *b.first()? {
            READY if b.len() == 21 => Ctl::Ready {
                group: u32_at(1)?,
                msg: u64_at(5)?,
                step: u64_at(13)?,
            },
            SIZE if b.len() == 21 => Ctl::Size {
                group: u32_at(1)?,
                msg: u64_at(5)?,
                bytes: u64_at(13)?,
            },
            FAILED if b.len() == 9 => Ctl::Failed {
                group: u32_at(1)?,
                member: u32_at(5)?,
            },
            PROBE if b.len() == 1 => Ctl::Probe,
            _ => return None,
        };
        Some(ctl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_messages_round_trip_and_garbage_is_refused() {
        for c in [
            Ctl::Ready {
                group: 7,
                msg: 1 << 40,
                step: 3,
            },
            Ctl::Size {
                group: 1,
                msg: 2,
                bytes: 5 << 33,
            },
            Ctl::Failed {
                group: 9,
                member: 511,
            },
            Ctl::Probe,
        ] {
            assert_eq!(Ctl::decode(&c.encode()), Some(c));
        }
        assert_eq!(Ctl::decode(&[]), None);
        assert_eq!(Ctl::decode(&[READY, 1, 2]), None);
        assert_eq!(Ctl::decode(&[99; 21]), None);
    }
}
