//! Torn landings: multi-word WRITEs and READs carried out in pieces (issue 44).
//!
//! RDMA makes only aligned 8-byte words atomic. The verbs specification leaves the order in
//! which a WRITE places its bytes, and the order in which a READ's responder fetches them,
//! unspecified; all it orders is the messages of one queue pair. By default the simulator
//! lands every op at one instant, which hides any protocol that reads a multi-word entry while
//! its owner (or another writer) rewrites it. Under a [`Tearing`] an op that spans two or more
//! pieces (aligned 8-byte words or 64-byte cache lines) is carried out piece by piece at
//! distinct instants spread over a drawn window, in ascending address order or in an order
//! drawn per op, and every other event of the run (the owner's polls, other senders' writes,
//! reads of the same bytes) may fall between two pieces.
//!
//! What still holds, as on hardware:
//! - No 8-byte word tears: pieces are whole aligned words or lines.
//! - Ops of one queue pair land in post order: the next op of the pair lands after this op's
//!   last piece.
//! - A WRITE's completion, and a write-with-immediate's receive, follow its last piece; a
//!   READ's response carries what each piece fetched when it fetched it.
//! - An access change ([`crate::Nic::set_access`]) is final: the pieces still pending from
//!   that peer in that region land at once, before the change takes effect, as the local
//!   runtime makes a revoke wait for the op that holds the region's lock.
//! - A crash of the target mid-op stops it (the rest never lands or is never fetched; the
//!   sender sees `PeerUnreachable`); a crash of the sender does not stop an op already landing.

use crate::memory::Memory;
use crate::nic::Data;
use crate::process::ProcessId;
use crate::region::{LocalAddr, RegionId};
use crate::rng::Rng;
use crate::time::Nanos;
use std::collections::VecDeque;
use std::fmt;

/// At most this many pieces per op: a larger op tears at the boundaries of runs of whole
/// pieces, which keeps a bulk transfer (RDMC's blocks) from costing an event per word while
/// its first and last pieces still land apart.
const MAX_PIECES: usize = 16;

/// In which order an op's pieces land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceOrder {
    /// Ascending addresses (what NICs do in practice, and what the local runtime does).
    Ascending,
    /// An order drawn per op (anything the specification allows).
    Any,
}

/// How a simulated run tears multi-word accesses (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tearing {
    /// Bytes of one piece: 8 (a word) or 64 (a cache line).
    pub piece_bytes: usize,
    /// The order of an op's pieces.
    pub order: PieceOrder,
    /// An op's pieces land over a span drawn uniformly from zero up to this.
    pub window: Nanos,
}

impl Tearing {
    /// A tearing drawn from `rng`: words or cache lines, ascending or any order, a window of
    /// 250 ns, 1 us or 4 us (from about one poll to several, so pieces straddle the owner's
    /// polls often).
    pub fn draw(rng: &mut Rng) -> Tearing {
        let piece_bytes = if rng.chance(0.5) { 8 } else { 64 };
        let order = if rng.chance(0.5) {
            PieceOrder::Ascending
        } else {
            PieceOrder::Any
        };
        let window = Nanos([250, 1_000, 4_000][rng.below(3) as usize]);
        Tearing {
            piece_bytes,
            order,
            window,
        }
    }

    /// Whether an access of `len` bytes at `offset` spans two pieces or more.
    pub(crate) fn tears(&self, offset: usize, len: usize) -> bool {
        len > 0 && offset / self.piece_bytes != (offset + len - 1) / self.piece_bytes
    }

    /// The pieces of an access of `len` bytes at `offset` as `(start, len)` relative to
    /// `offset`, in landing order.
    fn pieces(&self, offset: usize, len: usize, rng: &mut Rng) -> VecDeque<(usize, usize)> {
        let p = self.piece_bytes;
        let units = (offset + len - 1) / p - offset / p + 1;
        let per = units.div_ceil(MAX_PIECES) * p;
        let mut pieces = Vec::with_capacity(units.min(MAX_PIECES));
        let base = offset / p * p;
        let mut at = offset;
        while at < offset + len {
            let end = (base + ((at - base) / per + 1) * per).min(offset + len);
            pieces.push((at - offset, end - at));
            at = end;
        }
        if self.order == PieceOrder::Any {
            for i in (1..pieces.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                pieces.swap(i, j);
            }
        }
        pieces.into()
    }
}

impl fmt::Display for Tearing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let piece = if self.piece_bytes == 8 {
            "word"
        } else {
            "line"
        };
        let order = match self.order {
            PieceOrder::Ascending => "ascending",
            PieceOrder::Any => "any-order",
        };
        write!(f, "{piece}s/{order}/{}ns", self.window.0)
    }
}

/// What a torn op moves: a WRITE's payload, or the bytes a READ has fetched so far.
#[derive(Debug)]
pub(crate) enum Moved {
    Write(Data),
    Read(Vec<u8>),
}

/// An op landing piece by piece in its target's memory, kept by the target's NIC so an
/// access change can settle it.
#[derive(Debug)]
pub(crate) struct Landing {
    /// The op's in-flight slot in the engine.
    pub(crate) slot: u32,
    pub(crate) from: ProcessId,
    pub(crate) at: LocalAddr,
    pub(crate) moved: Moved,
    /// Pieces not yet carried out, in landing order.
    pieces: VecDeque<(usize, usize)>,
    /// The instants of the pieces still to come after the first.
    pub(crate) times: VecDeque<Nanos>,
}

impl Landing {
    /// Plans an op moving `moved` at `at` whose pieces land over `span`, the first at its
    /// start.
    pub(crate) fn plan(
        tearing: &Tearing,
        slot: u32,
        from: ProcessId,
        at: LocalAddr,
        moved: Moved,
        span: std::ops::Range<Nanos>,
        rng: &mut Rng,
    ) -> Landing {
        let len = match &moved {
            Moved::Write(data) => data.len(),
            Moved::Read(buf) => buf.len(),
        };
        let pieces = tearing.pieces(at.offset, len, rng);
        let spread = span.end - span.start;
        let mut times: Vec<Nanos> = (1..pieces.len())
            .map(|_| span.start + Nanos(rng.below(spread.0 + 1)))
            .collect();
        times.sort_unstable();
        Landing {
            slot,
            from,
            at,
            moved,
            pieces,
            times: times.into(),
        }
    }

    /// Carries out the next piece; whether any remains.
    pub(crate) fn step(&mut self, mem: &mut Memory) -> bool {
        if let Some((start, len)) = self.pieces.pop_front() {
            let at = LocalAddr::new(self.at.region, self.at.offset + start);
            match &mut self.moved {
                Moved::Write(data) => mem
                    .write_data(at, &data.window(start, len))
                    .expect("validated at post"),
                Moved::Read(buf) => mem
                    .read(at, &mut buf[start..start + len])
                    .expect("validated at post"),
            }
        }
        !self.pieces.is_empty()
    }

    /// Carries out every remaining piece at once.
    pub(crate) fn settle(&mut self, mem: &mut Memory) {
        while self.step(mem) {}
    }

    /// Whether this op writes (each piece then wakes the target).
    pub(crate) fn writes(&self) -> bool {
        matches!(self.moved, Moved::Write(_))
    }

    /// Whether this op is `peer`'s in `region`.
    pub(crate) fn is_of(&self, region: RegionId, peer: ProcessId) -> bool {
        self.at.region == region && self.from == peer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tearing(piece_bytes: usize, order: PieceOrder) -> Tearing {
        Tearing {
            piece_bytes,
            order,
            window: Nanos(1_000),
        }
    }

    #[test]
    fn pieces_cover_the_access_once_on_piece_boundaries() {
        let mut rng = Rng::derive(7, crate::rng::Purpose::Scheduler, 2);
        for (piece, order) in [
            (8, PieceOrder::Ascending),
            (64, PieceOrder::Any),
            (8, PieceOrder::Any),
        ] {
            let t = tearing(piece, order);
            for (offset, len) in [(8, 16), (4, 20), (56, 72), (0, 4096), (64, 1 << 20)] {
                if !t.tears(offset, len) {
                    continue;
                }
                let pieces = t.pieces(offset, len, &mut rng);
                assert!(pieces.len() <= MAX_PIECES && pieces.len() >= 2);
                let mut covered: Vec<_> = pieces.iter().copied().collect();
                covered.sort_unstable();
                let mut next = 0;
                for (start, l) in covered {
                    assert_eq!(start, next, "gap or overlap at {start}");
                    // Every piece ends on a piece boundary of the address, or at the end.
                    let end = offset + start + l;
                    assert!(end % piece == 0 || start + l == len);
                    next = start + l;
                }
                assert_eq!(next, len);
                if order == PieceOrder::Ascending {
                    assert!(pieces
                        .iter()
                        .zip(pieces.iter().skip(1))
                        .all(|(a, b)| a.0 < b.0));
                }
            }
        }
    }

    #[test]
    fn an_access_within_one_piece_does_not_tear() {
        let t = tearing(8, PieceOrder::Any);
        assert!(!t.tears(16, 8));
        assert!(!t.tears(17, 3));
        assert!(t.tears(16, 9));
        assert!(t.tears(20, 8));
        let t = tearing(64, PieceOrder::Any);
        assert!(!t.tears(0, 64));
        assert!(t.tears(8, 64));
    }
}
