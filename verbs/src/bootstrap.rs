//! What two verbs nodes tell each other to connect their queue pairs, and how it travels.
//!
//! An RC queue pair connects to exactly one remote queue pair, named by its number, the port's
//! LID (InfiniBand) or GID (RoCE, and InfiniBand across subnets), and the packet sequence number
//! each side starts at. One-sided ops name remote memory by address and rkey. So before the
//! first op, every node sends every node (itself included) a [`Message::Hello`]: the queue
//! pairs it made for that peer and its regions as that peer may address them (each region is
//! registered once per peer, [`crate::access`]). A reconnect after a queue-pair error is the
//! same exchange again ([`Message::Reconnect`], answered [`Message::Accepted`]), with fresh
//! sequence numbers; a slow-path access change sends the peer its new rkeys
//! ([`Message::Rekey`]).
//!
//! A queue pair drops every packet that reaches it before it is ready to receive (RTR), and
//! its sender only notices after its retries run out (about 120 ms). So a node moves its queue
//! pairs to RTR on the hellos, tells every node [`Message::Ready`], and moves them to RTS (and
//! starts its process) only once every live node said it: no packet of the run meets a queue
//! pair that is not yet listening.
//!
//! They travel on the control channel ([`crate::control`]): over TCP between the addresses of
//! the tcp runtime's cluster file across OS processes, handed over directly inside one. Frames:
//!
//! ```text
//! stream  = preamble frame*
//! preamble = "RDMAVB" version:u16le
//! frame   = len:u32le bincode(Message)       (fixed-width little-endian, len <= MAX_FRAME,
//!                                             no trailing bytes, at most MAX_REGIONS regions)
//! ```
//!
//! Nothing from a peer is trusted: wrong magic or version, oversized or malformed frames,
//! trailing bytes, or a hello for another node or another deployment are errors that name what
//! is wrong.

use serde::{Deserialize, Serialize};
use std::io::Read;
use std::net::SocketAddr;
use transport::{ProcessId, Qp};

/// The first bytes of every bootstrap stream.
pub const MAGIC: [u8; 6] = *b"RDMAVB";

/// The bootstrap version; a peer speaking another is refused.
pub const VERSION: u16 = 2;

/// The largest frame body accepted.
pub const MAX_FRAME: usize = 64 << 10;

/// The most regions a message may describe.
pub const MAX_REGIONS: usize = 1024;

/// One region as a peer addresses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteRegion {
    /// Virtual address of the region's first byte in the owner's registration.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// The rkey of the owner's registration of the region for this peer.
    pub rkey: u32,
}

/// The queue pairs one node made for one peer, one per [`Qp`] kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// The port's LID (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// The port's GID at the chosen index (RoCE; also InfiniBand with a GRH).
    pub gid: [u8; 16],
    /// Queue pair numbers, indexed by [`Qp::index`].
    pub qpn: [u32; Qp::COUNT],
    /// The first packet sequence number each queue pair sends (24 bits).
    pub psn: [u32; Qp::COUNT],
    /// How many times the sender has reset these queue pairs ([`crate::handshake`]).
    pub incarnation: u32,
    /// The sender's port MTU in bytes: a queue pair's path MTU is the smaller of both ends'
    /// (a packet larger than the receiving port's MTU is dropped, so a mismatch makes every
    /// large op time out while small ones work).
    pub mtu: u32,
    /// Whether the GID is RoCE v2: both ends must use the same family.
    pub roce_v2: bool,
    /// Reads and atomics the sender accepts in flight on each queue pair (its
    /// `max_dest_rd_atomic`): the receiver issues no more than this.
    pub rd_atomic: u8,
}

/// A bootstrap or reconnect message from one node to another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// At start: `from`'s queue pairs for `to` and its regions as `to` addresses them.
    Hello {
        /// Sender.
        from: u32,
        /// Receiver.
        to: u32,
        /// A digest of the run's region table: both ends must run the same deployment.
        table: u64,
        /// The sender's queue pairs for the receiver.
        endpoint: Endpoint,
        /// The sender's regions, in region-id order.
        regions: Vec<RemoteRegion>,
    },
    /// `from`'s queue pairs to `to` are connected (ready to receive) to `to`'s incarnation
    /// `answers`: at start after the hellos, and after every reconnect, so that `to` posts
    /// nothing towards a queue pair not yet listening.
    Ready {
        /// Sender.
        from: u32,
        /// Receiver.
        to: u32,
        /// The receiver's incarnation the sender connected to (0 at start).
        answers: u32,
    },
    /// `from` reset its queue pairs to `to` and asks `to` to reset its own and connect again.
    Reconnect {
        /// Sender.
        from: u32,
        /// Receiver.
        to: u32,
        /// The sender's queue pairs, with fresh sequence numbers.
        endpoint: Endpoint,
        /// The sender's regions as the receiver addresses them now.
        regions: Vec<RemoteRegion>,
    },
    /// `from` registered some of its regions again for `to` (a slow-path access change,
    /// [`crate::access`]): `to` addresses them with these rkeys from now on.
    Rekey {
        /// Sender.
        from: u32,
        /// Receiver.
        to: u32,
        /// The sender's regions as the receiver addresses them now.
        regions: Vec<RemoteRegion>,
    },
    /// `from` connected its queue pairs to `to` again, answering a [`Message::Reconnect`].
    Accepted {
        /// Sender.
        from: u32,
        /// Receiver.
        to: u32,
        /// The receiver's incarnation the sender connected to (an answer to an older one is
        /// stale).
        answers: u32,
        /// The sender's queue pairs, with fresh sequence numbers.
        endpoint: Endpoint,
        /// The sender's regions as the receiver addresses them now.
        regions: Vec<RemoteRegion>,
    },
}

impl Message {
    /// The sender and the receiver.
    pub fn route(&self) -> (ProcessId, ProcessId) {
        let (from, to) = match self {
            Message::Hello { from, to, .. }
            | Message::Ready { from, to, .. }
            | Message::Reconnect { from, to, .. }
            | Message::Rekey { from, to, .. }
            | Message::Accepted { from, to, .. } => (*from, *to),
        };
        (ProcessId(from), ProcessId(to))
    }

    fn regions(&self) -> &[RemoteRegion] {
        match self {
            Message::Hello { regions, .. }
            | Message::Reconnect { regions, .. }
            | Message::Rekey { regions, .. }
            | Message::Accepted { regions, .. } => regions,
            Message::Ready { .. } => &[],
        }
    }
}

/// Why bootstrap bytes or messages were refused.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The stream does not start with [`MAGIC`].
    #[error("the peer is not a workbench verbs node (wrong magic)")]
    NotAVerbsPeer,
    /// Another bootstrap version.
    #[error("the peer speaks bootstrap version {theirs}, this node {VERSION}: run the same build everywhere")]
    Version {
        /// The peer's version.
        theirs: u16,
    },
    /// A frame longer than [`MAX_FRAME`].
    #[error("bootstrap frame of {len} bytes exceeds the limit of {MAX_FRAME}")]
    TooLarge {
        /// The announced length.
        len: usize,
    },
    /// The body did not decode, or had bytes left over.
    #[error("malformed bootstrap message: {0}")]
    Malformed(String),
    /// More regions than [`MAX_REGIONS`].
    #[error("a bootstrap message describes {count} regions, more than the limit of {MAX_REGIONS}")]
    TooManyRegions {
        /// Regions described.
        count: usize,
    },
    /// A message for another node, or from a node not expected.
    #[error("expected a hello from {expected} to {me}, got {got:?}")]
    Misrouted {
        /// This node.
        me: ProcessId,
        /// The peer expected.
        expected: ProcessId,
        /// The route of what arrived.
        got: (ProcessId, ProcessId),
    },
    /// The peer runs another deployment.
    #[error("{peer} runs another deployment (region table digest {theirs:#x}, here {ours:#x}): start every node from the same cluster file and flags")]
    Deployment {
        /// The peer.
        peer: ProcessId,
        /// Its digest.
        theirs: u64,
        /// Ours.
        ours: u64,
    },
    /// A peer could not be reached or the stream broke.
    #[error("bootstrap with {peer} at {addr}: {source}")]
    Io {
        /// The peer.
        peer: ProcessId,
        /// Its address.
        addr: SocketAddr,
        /// What failed.
        source: std::io::Error,
    },
}

fn options() -> impl bincode::Options {
    transport::runtime::tcp::wire::bincode_options(MAX_FRAME)
}

/// The preamble this version sends.
pub fn preamble() -> [u8; 8] {
    let mut p = [0; 8];
    p[..6].copy_from_slice(&MAGIC);
    p[6..].copy_from_slice(&VERSION.to_le_bytes());
    p
}

/// Checks a peer's preamble.
pub fn check_preamble(p: &[u8; 8]) -> Result<(), BootstrapError> {
    if p[..6] != MAGIC {
        return Err(BootstrapError::NotAVerbsPeer);
    }
    match u16::from_le_bytes([p[6], p[7]]) {
        VERSION => Ok(()),
        theirs => Err(BootstrapError::Version { theirs }),
    }
}

/// `message` as a length-prefixed frame.
pub fn encode(message: &Message) -> Vec<u8> {
    use bincode::Options;
    assert!(
        message.regions().len() <= MAX_REGIONS,
        "a deployment with more than {MAX_REGIONS} regions per process"
    );
    let mut out = vec![0; 4];
    options()
        .serialize_into(&mut out, message)
        .expect("bootstrap messages fit the frame limit");
    let len = (out.len() - 4) as u32;
    out[..4].copy_from_slice(&len.to_le_bytes());
    out
}

/// The next frame of `buf`: `Ok(None)` if more bytes are needed, else the message and the
/// bytes it used.
pub fn decode(buf: &[u8]) -> Result<Option<(Message, usize)>, BootstrapError> {
    use bincode::Options;
    let body = match transport::runtime::tcp::wire::frame_body(buf, MAX_FRAME) {
        Ok(Some(body)) => body,
        Ok(None) => return Ok(None),
        Err(len) => return Err(BootstrapError::TooLarge { len }),
    };
    let len = body.len();
    let message: Message = options()
        .deserialize(body)
        .map_err(|e| BootstrapError::Malformed(e.to_string()))?;
    if message.regions().len() > MAX_REGIONS {
        return Err(BootstrapError::TooManyRegions {
            count: message.regions().len(),
        });
    }
    Ok(Some((message, 4 + len)))
}

/// Reads one whole frame from `stream`.
pub fn read_message(stream: &mut impl Read) -> Result<Message, std::io::Error> {
    let mut head = [0u8; 4];
    stream.read_exact(&mut head)?;
    let len = u32::from_le_bytes(head) as usize;
    if len > MAX_FRAME {
        return Err(invalid(BootstrapError::TooLarge { len }));
    }
    let mut frame = head.to_vec();
    frame.resize(4 + len, 0);
    stream.read_exact(&mut frame[4..])?;
    match decode(&frame).map_err(invalid)? {
        Some((m, _)) => Ok(m),
        None => unreachable!("a whole frame was read"),
    }
}

fn invalid(e: BootstrapError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e)
}

/// Checks that a hello is from `peer` to `me` and for the same deployment.
pub fn check_hello(
    message: &Message,
    me: ProcessId,
    peer: ProcessId,
    table: u64,
) -> Result<(), BootstrapError> {
    match message {
        Message::Hello { table: theirs, .. } if message.route() == (peer, me) => {
            if *theirs == table {
                Ok(())
            } else {
                Err(BootstrapError::Deployment {
                    peer,
                    theirs: *theirs,
                    ours: table,
                })
            }
        }
        other => Err(BootstrapError::Misrouted {
            me,
            expected: peer,
            got: other.route(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn endpoint(seed: u32) -> Endpoint {
        Endpoint {
            lid: seed as u16,
            gid: [seed as u8; 16],
            qpn: [seed, seed + 1],
            psn: [(seed * 7) & 0xFF_FFFF, (seed * 11) & 0xFF_FFFF],
            incarnation: seed / 2,
            mtu: 256 << (seed % 5),
            roce_v2: seed % 2 == 0,
            rd_atomic: seed as u8,
        }
    }

    fn regions(n: usize) -> Vec<RemoteRegion> {
        (0..n)
            .map(|i| RemoteRegion {
                addr: 0x7f00_0000_0000 + (i as u64) * 4096,
                len: 4096,
                rkey: 0x1000 + i as u32,
            })
            .collect()
    }

    fn samples() -> Vec<Message> {
        vec![
            Message::Hello {
                from: 0,
                to: 1,
                table: 0xDEAD_BEEF,
                endpoint: endpoint(3),
                regions: regions(3),
            },
            Message::Reconnect {
                from: 1,
                to: 0,
                endpoint: endpoint(9),
                regions: regions(0),
            },
            Message::Accepted {
                from: 0,
                to: 1,
                answers: 4,
                endpoint: endpoint(12),
                regions: regions(MAX_REGIONS),
            },
            Message::Rekey {
                from: 2,
                to: 0,
                regions: regions(2),
            },
            Message::Ready {
                from: 1,
                to: 2,
                answers: 3,
            },
        ]
    }

    #[test]
    fn every_message_round_trips_and_partial_input_waits() {
        for m in samples() {
            let bytes = encode(&m);
            for cut in 0..bytes.len() {
                assert!(decode(&bytes[..cut]).unwrap().is_none(), "cut at {cut}");
            }
            let (back, used) = decode(&bytes).unwrap().unwrap();
            assert_eq!(back, m);
            assert_eq!(used, bytes.len());
            assert_eq!(read_message(&mut &bytes[..]).unwrap(), m);
        }
    }

    #[test]
    fn damaged_input_is_refused_with_its_reason() {
        let mut bytes = encode(&samples()[0]);
        // A frame announcing more than the limit.
        let mut big = bytes.clone();
        big[..4].copy_from_slice(&(MAX_FRAME as u32 + 1).to_le_bytes());
        assert!(matches!(decode(&big), Err(BootstrapError::TooLarge { .. })));
        // Trailing bytes inside the frame.
        bytes.push(0);
        let len = (bytes.len() - 4) as u32;
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        assert!(matches!(decode(&bytes), Err(BootstrapError::Malformed(_))));
        // An unknown variant.
        let bad = [4, 0, 0, 0, 9, 0, 0, 0];
        assert!(matches!(decode(&bad), Err(BootstrapError::Malformed(_))));
        // Too many regions.
        let mut m = samples()[2].clone();
        if let Message::Accepted { regions: r, .. } = &mut m {
            r.push(RemoteRegion::default());
        }
        use bincode::Options;
        let mut raw = vec![0; 4];
        options().serialize_into(&mut raw, &m).unwrap();
        let len = (raw.len() - 4) as u32;
        raw[..4].copy_from_slice(&len.to_le_bytes());
        let e = decode(&raw).unwrap_err();
        assert!(e.to_string().contains("more than the limit"), "{e}");
    }

    #[test]
    fn the_preamble_and_the_hello_are_checked() {
        assert!(check_preamble(&preamble()).is_ok());
        assert!(matches!(
            check_preamble(b"RDMAWB\x01\x00"),
            Err(BootstrapError::NotAVerbsPeer)
        ));
        let mut other = preamble();
        other[6] = VERSION as u8 + 1;
        let e = check_preamble(&other).unwrap_err();
        assert!(
            e.to_string().contains(&format!("version {}", VERSION + 1)),
            "{e}"
        );
        let hello = &samples()[0];
        assert!(check_hello(hello, ProcessId(1), ProcessId(0), 0xDEAD_BEEF).is_ok());
        let e = check_hello(hello, ProcessId(1), ProcessId(0), 7).unwrap_err();
        assert!(e.to_string().contains("another deployment"), "{e}");
        let e = check_hello(hello, ProcessId(2), ProcessId(0), 0xDEAD_BEEF).unwrap_err();
        assert!(matches!(e, BootstrapError::Misrouted { .. }), "{e}");
        let e = check_hello(&samples()[1], ProcessId(0), ProcessId(1), 0).unwrap_err();
        assert!(matches!(e, BootstrapError::Misrouted { .. }), "{e}");
    }

    proptest! {
        /// Hostile bytes never panic the decoder, and it never claims more than it was given.
        #[test]
        fn decoding_hostile_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(Some((_, used))) = decode(&bytes) {
                prop_assert!(used <= bytes.len());
            }
        }
    }
}
