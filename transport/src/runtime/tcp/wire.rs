//! The tcp runtime's wire format: a fixed preamble, then length-prefixed frames.
//!
//! ```text
//! connection  = preamble frame*
//! preamble    = "RDMAWB" version:u16le              (8 bytes, checked before anything else)
//! frame       = len:u32le body                      (len <= MAX_FRAME)
//! body        = bincode(Frame), fixed-width integers, little-endian, no trailing bytes
//! ```
//!
//! A connection carries one direction of one queue pair: its initiator sends a [`Hello`] and
//! then [`Frame::Request`]s; the acceptor answers a [`Welcome`] and then [`Frame::Response`]s
//! in request order. Reads, atomics, reconnects and every failure are answered one by one; a
//! write or send that succeeded may be answered by the next response instead (the
//! acknowledgement rule: a response to request `n` also says that every earlier request not
//! answered yet succeeded), so a stream of writes costs one response per batch, as RDMA's
//! acknowledgements coalesce. Writes and reads larger than
//! [`CHUNK`] travel as several requests of consecutive offsets (RDMA splits them into packets
//! the same way), so no frame is ever larger than [`MAX_FRAME`].
//!
//! Decoding never trusts the peer: a frame longer than [`MAX_FRAME`], a body bincode cannot
//! decode within that limit, or trailing bytes are errors ([`WireError`]), and the runtime
//! closes the connection. Whether a decoded request stays inside the target's regions is the
//! engine's check, made before any byte is touched.

use crate::process::ProcessId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The first bytes of every connection: a magic that no other protocol starts with.
pub const MAGIC: [u8; 6] = *b"RDMAWB";

/// The wire version; a peer speaking another is refused at connect.
pub const VERSION: u16 = 3;

/// Bytes of the preamble: [`MAGIC`] and [`VERSION`].
pub const PREAMBLE_LEN: usize = 8;

/// The largest payload one request or response carries; larger ops are split.
pub const CHUNK: usize = 1 << 20;

/// The largest frame body accepted: a [`CHUNK`] of payload and its header, with room to spare.
pub const MAX_FRAME: usize = CHUNK + 4096;

/// The largest frame a peer may send before it has proven itself (a hello and its proof carry
/// a node's region lengths, a nonce and a tag): an unknown peer cannot make a node buffer a
/// chunk's worth for it.
pub const MAX_GREETING: usize = 64 << 10;

/// The preamble this version sends.
pub fn preamble() -> [u8; PREAMBLE_LEN] {
    let mut p = [0; PREAMBLE_LEN];
    p[..6].copy_from_slice(&MAGIC);
    p[6..].copy_from_slice(&VERSION.to_le_bytes());
    p
}

/// Checks a peer's preamble.
pub fn check_preamble(p: &[u8; PREAMBLE_LEN]) -> Result<(), WireError> {
    if p[..6] != MAGIC {
        return Err(WireError::NotAWorkbenchPeer);
    }
    let v = u16::from_le_bytes([p[6], p[7]]);
    if v != VERSION {
        return Err(WireError::Version { theirs: v });
    }
    Ok(())
}

/// Why bytes from a peer were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The preamble's magic is wrong: not a workbench process.
    #[error("the peer is not a workbench tcp node (wrong magic)")]
    NotAWorkbenchPeer,
    /// The peer speaks another wire version.
    #[error(
        "the peer speaks wire version {theirs}, this node {VERSION}: run the same build everywhere"
    )]
    Version {
        /// The peer's version.
        theirs: u16,
    },
    /// A frame announced more bytes than a frame may have here.
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// The announced length.
        len: usize,
        /// The limit: [`MAX_FRAME`], or [`MAX_GREETING`] before the peer proved itself.
        max: usize,
    },
    /// The body did not decode.
    #[error("malformed frame: {0}")]
    Malformed(String),
}

/// A 32-byte HMAC-SHA256 tag.
pub type Mac = [u8; 32];

/// The initiator's first frame: who it is, which queue pair this connection carries, and what
/// it believes the run looks like.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The initiator.
    pub from: ProcessId,
    /// The node it means to reach.
    pub to: ProcessId,
    /// The queue pair ([`crate::Qp::index`]).
    pub qp: u8,
    /// The lengths of the initiator's own regions (the region exchange).
    pub regions: Vec<u64>,
    /// A digest of the whole run's region table: both ends must run the same deployment.
    pub table: u64,
    /// A fresh nonce the acceptor's tag must cover.
    pub nonce: [u8; 16],
}

/// The acceptor's answer to a [`Hello`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    /// The acceptor.
    pub from: ProcessId,
    /// The lengths of the acceptor's own regions.
    pub regions: Vec<u64>,
    /// A fresh nonce the initiator's [`Frame::Proof`] must cover.
    pub nonce: [u8; 16],
    /// The acceptor's tag over the hello and this nonce, under the cluster secret.
    pub mac: Mac,
}

/// A one-sided or two-sided request, as it travels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireOp<'a> {
    /// Write `data` at `offset` of `region`; with `imm`, also deliver the immediate.
    Write {
        /// Target region.
        region: u16,
        /// Byte offset.
        offset: u64,
        /// The bytes.
        #[serde(with = "serde_bytes", borrow)]
        data: &'a [u8],
        /// Immediate value (only on an op's last chunk).
        imm: Option<u32>,
    },
    /// Read `len` bytes at `offset` of `region`.
    Read {
        /// Source region.
        region: u16,
        /// Byte offset.
        offset: u64,
        /// Bytes to read (at most [`CHUNK`]).
        len: u32,
    },
    /// Compare-and-swap of the word at `offset`.
    CompareSwap {
        /// Target region.
        region: u16,
        /// Byte offset (8-aligned).
        offset: u64,
        /// Expected value.
        expect: u64,
        /// New value.
        swap: u64,
    },
    /// Fetch-and-add of the word at `offset`.
    FetchAdd {
        /// Target region.
        region: u16,
        /// Byte offset (8-aligned).
        offset: u64,
        /// Added.
        add: u64,
    },
    /// A two-sided message.
    Send {
        /// The message.
        #[serde(with = "serde_bytes", borrow)]
        data: &'a [u8],
    },
    /// Takes the receiving end of this queue pair out of error.
    Reconnect,
}

/// How a request ended at its target, as the response carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireStatus {
    /// Done.
    Success,
    /// The target's access refused it; the queue pair is now in error.
    AccessDenied,
    /// The queue pair was in error; the request had no effect.
    Flushed,
}

/// Everything that travels after the preamble.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Frame<'a> {
    /// Initiator to acceptor, first.
    Hello(Hello),
    /// Acceptor to initiator, in answer.
    Welcome(Welcome),
    /// Initiator to acceptor: its tag over the hello and the welcome's nonce, under the
    /// cluster secret.
    Proof(Mac),
    /// An op, numbered from 0 on each connection.
    Request {
        /// The request's number on this connection.
        seq: u64,
        /// The op.
        #[serde(borrow)]
        op: WireOp<'a>,
    },
    /// The outcome of request `seq`, and the success of every earlier write or send not
    /// answered yet; responses come in request order.
    Response {
        /// The request answered.
        seq: u64,
        /// Its outcome.
        status: WireStatus,
        /// An atomic's old value.
        value: Option<u64>,
        /// A read's bytes.
        #[serde(with = "serde_bytes", borrow)]
        data: &'a [u8],
    },
}

impl fmt::Display for Frame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frame::Hello(h) => write!(f, "hello from {} to {} qp {}", h.from, h.to, h.qp),
            Frame::Welcome(w) => write!(f, "welcome from {}", w.from),
            Frame::Proof(_) => write!(f, "proof"),
            Frame::Request { seq, .. } => write!(f, "request {seq}"),
            Frame::Response { seq, .. } => write!(f, "response {seq}"),
        }
    }
}

fn options() -> impl bincode::Options {
    bincode_options(MAX_FRAME)
}

/// The bincode settings of every frame body the runtimes exchange: fixed-width integers,
/// little-endian, at most `limit` bytes, no trailing bytes.
pub fn bincode_options(limit: usize) -> impl bincode::Options {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_little_endian()
        .with_limit(limit as u64)
        .reject_trailing_bytes()
}

/// Appends `frame`, length-prefixed, to `out`.
pub fn encode(frame: &Frame<'_>, out: &mut Vec<u8>) {
    use bincode::Options;
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    options()
        .serialize_into(&mut *out, frame)
        .expect("frames the runtime builds fit the limit");
    let len = out.len() - start - 4;
    debug_assert!(len <= MAX_FRAME, "frame of {len} bytes");
    out[start..start + 4].copy_from_slice(&(len as u32).to_le_bytes());
}

/// Appends the frame of write request `seq` without its payload of `len` bytes, and returns
/// what follows the payload: the frame is `out`'s new bytes, then the payload, then the
/// returned bytes, exactly as [`encode`] would lay it out. Lets a large payload go to the
/// socket from where the process put it.
pub fn encode_write_around(
    seq: u64,
    region: u16,
    offset: u64,
    len: usize,
    imm: Option<u32>,
    out: &mut Vec<u8>,
) -> Vec<u8> {
    let start = out.len();
    let op = WireOp::Write {
        region,
        offset,
        data: &[],
        imm,
    };
    encode(&Frame::Request { seq, op }, out);
    // The payload's u64 length prefix ends where the encoding of `imm` (an option: a tag
    // byte, then the value) begins.
    let tail = out.split_off(out.len() - if imm.is_some() { 5 } else { 1 });
    let at = out.len() - 8;
    out[at..].copy_from_slice(&(len as u64).to_le_bytes());
    let body = u32::from_le_bytes(out[start..start + 4].try_into().expect("4 bytes")) as usize;
    out[start..start + 4].copy_from_slice(&((body + len) as u32).to_le_bytes());
    tail
}

/// Takes the next whole frame off the front of `buf`: `Ok(None)` if more bytes are needed,
/// else the frame and how many bytes it used.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame<'_>, usize)>, WireError> {
    decode_within(buf, MAX_FRAME)
}

/// [`decode`] with frames limited to `max` bytes (at most [`MAX_FRAME`]), refused as soon as
/// their length is read.
pub fn decode_within(buf: &[u8], max: usize) -> Result<Option<(Frame<'_>, usize)>, WireError> {
    use bincode::Options;
    let max = max.min(MAX_FRAME);
    let body = match frame_body(buf, max) {
        Ok(Some(body)) => body,
        Ok(None) => return Ok(None),
        Err(len) => return Err(WireError::TooLarge { len, max }),
    };
    let frame = options()
        .deserialize(body)
        .map_err(|e| WireError::Malformed(e.to_string()))?;
    Ok(Some((frame, 4 + body.len())))
}

/// The body of the `len:u32le body` frame at the front of `buf`: `Ok(None)` while bytes are
/// missing, `Err(len)` when it announces more than `max` bytes (checked before waiting for
/// them). Shared by every length-prefixed stream of the runtimes (this wire, the verbs
/// bootstrap).
pub fn frame_body(buf: &[u8], max: usize) -> Result<Option<&[u8]>, usize> {
    let Some(head) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_le_bytes(head.try_into().expect("4 bytes")) as usize;
    if len > max {
        return Err(len);
    }
    Ok(buf.get(4..4 + len))
}

/// Decodes every frame of `bytes` until the first error or the end; the body of the fuzz
/// target. Returns how many frames decoded. Panics only if the decoder broke its contract
/// (claimed more bytes than it was given).
pub fn fuzz(bytes: &[u8]) -> usize {
    let mut at = 0;
    let mut frames = 0;
    while let Ok(Some((frame, used))) = decode(&bytes[at..]) {
        assert!(used >= 4 && at + used <= bytes.len(), "decoder overran");
        let _ = frame.to_string();
        at += used;
        frames += 1;
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn samples() -> Vec<Frame<'static>> {
        vec![
            Frame::Hello(Hello {
                from: ProcessId(3),
                to: ProcessId(1),
                qp: 1,
                regions: vec![64, 4096],
                table: 0xfeed,
                nonce: [7; 16],
            }),
            Frame::Welcome(Welcome {
                from: ProcessId(1),
                regions: vec![8],
                nonce: [9; 16],
                mac: [1; 32],
            }),
            Frame::Proof([2; 32]),
            Frame::Request {
                seq: 5,
                op: WireOp::Write {
                    region: 0,
                    offset: 64,
                    data: b"entry",
                    imm: Some(9),
                },
            },
            Frame::Request {
                seq: 6,
                op: WireOp::Read {
                    region: 1,
                    offset: 8,
                    len: 16,
                },
            },
            Frame::Request {
                seq: 7,
                op: WireOp::CompareSwap {
                    region: 0,
                    offset: 0,
                    expect: 1,
                    swap: 2,
                },
            },
            Frame::Request {
                seq: 8,
                op: WireOp::FetchAdd {
                    region: 0,
                    offset: 8,
                    add: 3,
                },
            },
            Frame::Request {
                seq: 9,
                op: WireOp::Send { data: b"hi" },
            },
            Frame::Request {
                seq: 10,
                op: WireOp::Reconnect,
            },
            Frame::Response {
                seq: 6,
                status: WireStatus::Success,
                value: None,
                data: &[5; 16],
            },
            Frame::Response {
                seq: 7,
                status: WireStatus::AccessDenied,
                value: Some(1),
                data: &[],
            },
        ]
    }

    #[test]
    fn every_frame_round_trips_and_partial_input_waits() {
        let mut buf = Vec::new();
        for f in samples() {
            encode(&f, &mut buf);
        }
        let mut at = 0;
        for f in samples() {
            // Every proper prefix of the next frame asks for more bytes.
            let (_, used) = decode(&buf[at..]).unwrap().unwrap();
            for cut in 0..used {
                assert_eq!(decode(&buf[at..at + cut]).unwrap(), None);
            }
            let (got, used) = decode(&buf[at..]).unwrap().unwrap();
            assert_eq!(got, f);
            at += used;
        }
        assert_eq!(at, buf.len());
    }

    #[test]
    fn oversized_and_trailing_frames_are_refused() {
        let mut buf = ((MAX_FRAME + 1) as u32).to_le_bytes().to_vec();
        buf.extend_from_slice(&[0; 16]);
        assert!(matches!(decode(&buf), Err(WireError::TooLarge { .. })));
        // A valid body with one byte more than it needs.
        let mut ok = Vec::new();
        encode(&Frame::Proof([0; 32]), &mut ok);
        let len = u32::from_le_bytes(ok[..4].try_into().unwrap()) + 1;
        ok[..4].copy_from_slice(&len.to_le_bytes());
        ok.push(0);
        assert!(matches!(decode(&ok), Err(WireError::Malformed(_))));
        // A byte string that claims more than the frame holds.
        let mut lying = Vec::new();
        encode(
            &Frame::Request {
                seq: 1,
                op: WireOp::Send { data: b"abcd" },
            },
            &mut lying,
        );
        let n = lying.len();
        lying[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&lying).is_err());
    }

    #[test]
    fn the_preamble_names_magic_and_version() {
        assert_eq!(check_preamble(&preamble()), Ok(()));
        let mut p = preamble();
        p[6] = 7;
        p[7] = 9;
        assert!(matches!(
            check_preamble(&p),
            Err(WireError::Version { theirs: 0x0907 })
        ));
        assert_eq!(
            check_preamble(b"GET / HT"),
            Err(WireError::NotAWorkbenchPeer)
        );
    }

    #[test]
    fn a_write_encoded_around_its_payload_is_the_write_encoded_whole() {
        for imm in [None, Some(7)] {
            let data: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
            let mut whole = Vec::new();
            let op = WireOp::Write {
                region: 3,
                offset: 4096,
                data: &data,
                imm,
            };
            encode(&Frame::Request { seq: 11, op }, &mut whole);
            let mut parts = vec![1, 2];
            let tail = encode_write_around(11, 3, 4096, data.len(), imm, &mut parts);
            parts.extend_from_slice(&data);
            parts.extend_from_slice(&tail);
            assert_eq!(parts[2..], whole[..]);
        }
    }

    proptest! {
        /// The decoder's fuzz target, run in CI: arbitrary bytes, and valid streams with bytes
        /// flipped, truncated or spliced, never panic and never claim more bytes than given.
        /// `harness`'s soak (`TCP_FUZZ_SECS`) runs the same body for as long as asked.
        #[test]
        fn decoding_hostile_bytes_never_panics(
            junk in proptest::collection::vec(any::<u8>(), 0..256),
            pick in 0usize..11,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
            cut in any::<usize>(),
        ) {
            fuzz_one(&junk);
            let mut valid = Vec::new();
            encode(&samples()[pick], &mut valid);
            for (at, x) in flips {
                let i = at % valid.len();
                valid[i] ^= x;
            }
            fuzz_one(&valid);
            fuzz_one(&valid[..cut % (valid.len() + 1)]);
            let mut spliced = valid.clone();
            spliced.extend_from_slice(&junk);
            fuzz_one(&spliced);
        }
    }

    fn fuzz_one(bytes: &[u8]) {
        super::fuzz(bytes);
    }
}
