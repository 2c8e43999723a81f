//! Where everything lives in memory (section 5.1), and the encodings of `HM` and `LOG` entries.
//!
//! Server regions:
//!
//! | region | contents | remote access |
//! |---|---|---|
//! | `HM` | one circular buffer per client and one for the parent group, `hm_slots` slots each | write, for everyone (clients, the parent's leader) |
//! | `LOG` | the circular log, `log_slots` slots | read-write for the leader this replica granted, nobody else |
//! | `CTL` | `perm`, `perm_ack`, heartbeats, commit and progress words, children's credits, halt | write |
//! | `SCRATCH` | where a candidate's reads of its group's logs land (Algorithm 4) | none |
//!
//! A client has one region, `RESP`: one word per server, the sequence number (+1) of this
//! client's latest message the server delivered.
//!
//! Every word written by remote processes has a single writer (`perm[r]`, `hb[r]`, `commit[r]`,
//! ... are indexed by the writer's rank), so a late write never overwrites a newer value from
//! someone else. Entries of `HM` and `LOG` are slot-codec entries ([`transport::slot`]) whose
//! `seq` is the entry's absolute position (`HM`) or log index (`LOG`), so an entry of an earlier
//! lap of a circular buffer is never taken for the expected one. The one other field wider
//! than a word, `perm_ack`, is a slot-codec entry too (see the crate doc, "Torn landings").

use crate::config::Config;
use multicast::{DestSet, GroupId, Membership};
use transport::slot::{SlotCodec, CANARY_BYTES, HEADER_BYTES};
use transport::{Access, LocalAddr, ProcessId, RegionId, RegionSpec, RemoteAddr};

/// The `HM` buffers of a server.
pub const HM: RegionId = RegionId(0);
/// The `LOG` of a server.
pub const LOG: RegionId = RegionId(1);
/// Control words of a server.
pub const CTL: RegionId = RegionId(2);
/// A server's landing area for log reads.
pub const SCRATCH: RegionId = RegionId(3);
/// A client's response words.
pub const RESP: RegionId = RegionId(0);

/// Bytes of an `HM` entry's header: client, sequence number, destinations.
pub const HM_HEADER: usize = 24;
/// Bytes of a log entry's fixed fields: tmp, source, outs count, source position.
pub const LOG_HEADER: usize = 24;
/// Bytes per child in a log entry: the position in the child's buffer and the credit known.
pub const LOG_PER_CHILD: usize = 16;
/// The `source` of a log entry whose message came from the parent group.
pub const FROM_PARENT: u32 = u32::MAX;
/// Bytes of a `perm_ack` answer's payload: `[ack, value, ts]`.
pub const PERM_ACK_PAYLOAD: usize = 24;
/// Bytes of a `perm_ack` slot: the answer as a slot-codec entry (see [`Layout::perm_ack`]).
pub const PERM_ACK_BYTES: usize = SlotCodec::encoded_len(PERM_ACK_PAYLOAD);

/// Address in the caller's own memory.
pub fn local(region: RegionId, offset: usize) -> LocalAddr {
    LocalAddr::new(region, offset)
}

/// Address in `p`'s memory.
pub fn remote(p: ProcessId, region: RegionId, offset: usize) -> RemoteAddr {
    RemoteAddr::new(p, region, offset)
}

/// Offsets and sizes of one group's server regions (and of clients' `RESP`).
#[derive(Clone, Debug)]
pub struct Layout {
    replicas: usize,
    clients: usize,
    hm_slots: usize,
    log_slots: usize,
    /// Codec of `HM` slots.
    pub hm_codec: SlotCodec,
    /// Codec of `LOG` slots.
    pub log_codec: SlotCodec,
    /// Codec of `perm_ack` slots.
    pub perm_ack_codec: SlotCodec,
    children: usize,
}

impl Layout {
    /// The layout of group `g`'s servers.
    pub fn new(cfg: &Config, g: GroupId) -> Layout {
        let children = cfg.tree.children(g).count();
        let log_slot = cfg.slot_bytes + LOG_HEADER + LOG_PER_CHILD * children;
        Layout {
            replicas: cfg.replicas,
            clients: cfg.clients,
            hm_slots: cfg.hm_slots,
            log_slots: cfg.log_slots,
            hm_codec: SlotCodec::new(cfg.slot_bytes).expect("validated"),
            log_codec: SlotCodec::new(log_slot).expect("multiple of 8"),
            perm_ack_codec: SlotCodec::new(PERM_ACK_BYTES).expect("multiple of 8"),
            children,
        }
    }

    /// The slot size, in bytes, for messages of `size` bytes: the smallest multiple of 8 that
    /// holds one with its entry header and the slot codec's header and canary, and at least 128
    /// bytes. The inverse of [`Layout::max_message`].
    pub fn slot_bytes_for(size: usize) -> usize {
        (size + HM_HEADER + HEADER_BYTES + CANARY_BYTES)
            .div_ceil(8)
            .max(16)
            * 8
    }

    /// The largest message a multicast may carry with `slot_bytes`-byte slots.
    pub fn max_message(slot_bytes: usize) -> usize {
        slot_bytes - HEADER_BYTES - CANARY_BYTES - HM_HEADER
    }

    /// Bytes of `HM`.
    pub fn hm_bytes(&self) -> usize {
        (self.clients + 1) * self.hm_slots * self.hm_codec.slot_bytes()
    }

    /// Bytes of `LOG`.
    pub fn log_bytes(&self) -> usize {
        self.log_slots * self.log_codec.slot_bytes()
    }

    /// Bytes of `CTL`.
    pub fn ctl_bytes(&self) -> usize {
        self.halt() + 8
    }

    /// Bytes of `SCRATCH`.
    pub fn scratch_bytes(&self) -> usize {
        self.replicas * self.log_bytes()
    }

    /// The `HM` buffer a client writes into.
    pub fn client_buffer(&self, client: usize) -> usize {
        client
    }

    /// The `HM` buffer the parent's leader writes into.
    pub fn parent_buffer(&self) -> usize {
        self.clients
    }

    /// Offset of the slot of `HM` buffer `buffer` holding position `pos`.
    pub fn hm_slot(&self, buffer: usize, pos: u64) -> usize {
        (buffer * self.hm_slots + (pos % self.hm_slots as u64) as usize)
            * self.hm_codec.slot_bytes()
    }

    /// Slots per `HM` buffer.
    pub fn hm_slots(&self) -> u64 {
        self.hm_slots as u64
    }

    /// Slots of `LOG`.
    pub fn log_slots(&self) -> u64 {
        self.log_slots as u64
    }

    /// Offset of the log slot holding index `i`.
    pub fn log_slot(&self, i: u64) -> usize {
        (i % self.log_slots as u64) as usize * self.log_codec.slot_bytes()
    }

    /// `perm[rank]`: the timestamp candidate `rank` asks permission with (Algorithm 3).
    pub fn perm(&self, rank: usize) -> usize {
        8 * rank
    }

    /// `perm_ack[rank]`: replica `rank`'s answer to this candidate, `[ack, value, ts]`, as a
    /// slot-codec entry whose `seq` is the timestamp's low 32 bits (see
    /// [`crate::election`]: the answer spans several words, and RDMA orders no word of a write
    /// before another, so only the codec's CRC tells a whole answer from a torn one).
    pub fn perm_ack(&self, rank: usize) -> usize {
        8 * self.replicas + PERM_ACK_BYTES * rank
    }

    /// The heartbeat counter of leader `rank`.
    pub fn heartbeat(&self, rank: usize) -> usize {
        self.words() + 8 * rank
    }

    /// The commit index leader `rank` last wrote here: log entries below it are decided.
    pub fn commit(&self, rank: usize) -> usize {
        self.words() + 8 * (self.replicas + rank)
    }

    /// How many log entries member `rank` delivered, as it reported to this leader.
    pub fn progress(&self, rank: usize) -> usize {
        self.words() + 8 * (2 * self.replicas + rank)
    }

    /// The credit child `child` (its index among this group's children) reported through its
    /// replica `rank`: positions of this group's buffer at the child below it are consumed.
    pub fn credit(&self, child: usize, rank: usize) -> usize {
        self.words() + 8 * (3 * self.replicas + child * self.replicas + rank)
    }

    /// Non-zero once a leader found this replica too far behind to catch up: it must halt.
    pub fn halt(&self) -> usize {
        self.words() + 8 * (3 + self.children) * self.replicas
    }

    /// Where the single-word fields of `CTL` start, after `perm` and `perm_ack`.
    fn words(&self) -> usize {
        (8 + PERM_ACK_BYTES) * self.replicas
    }

    /// Where replica `rank`'s log lands in `SCRATCH`.
    pub fn scratch(&self, rank: usize) -> usize {
        rank * self.log_bytes()
    }

    /// Offset of server `p`'s response word in a client's `RESP`.
    pub fn response(p: ProcessId) -> usize {
        8 * p.index()
    }

    /// Bytes of a client's `RESP`.
    pub fn resp_bytes(cfg: &Config) -> usize {
        8 * cfg.servers()
    }

    /// The regions of a server of this group, in [`HM`], [`LOG`], [`CTL`], [`SCRATCH`] order.
    pub fn server_regions(&self) -> Vec<RegionSpec> {
        vec![
            RegionSpec::new(self.hm_bytes()).with_default(Access::Write),
            RegionSpec::new(self.log_bytes()).with_default(Access::None),
            RegionSpec::new(self.ctl_bytes()).with_default(Access::Write),
            RegionSpec::new(self.scratch_bytes()).with_default(Access::None),
        ]
    }

    /// The region of a client: [`RESP`].
    pub fn client_regions(cfg: &Config) -> Vec<RegionSpec> {
        vec![RegionSpec::new(Self::resp_bytes(cfg)).with_default(Access::Write)]
    }
}

/// A multicast message as it sits in `HM`: `⟨c, id, dst, val⟩`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hm<'a> {
    /// The client that multicast it (its client index).
    pub client: u32,
    /// The client's sequence number (the message id).
    pub seq: u64,
    /// Destination groups.
    pub dst: DestSet,
    /// The payload.
    pub val: &'a [u8],
}

impl<'a> Hm<'a> {
    /// Appends the encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.client.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.dst.bits().to_le_bytes());
        out.extend_from_slice(self.val);
    }

    /// Decodes an encoding made by [`Hm::encode`].
    pub fn decode(b: &'a [u8]) -> Option<Hm<'a>> {
        if b.len() < HM_HEADER {
            return None;
        }
        Some(Hm {
            client: u32::from_le_bytes(b[0..4].try_into().ok()?),
            seq: u64::from_le_bytes(b[8..16].try_into().ok()?),
            dst: DestSet::from_bits(u64::from_le_bytes(b[16..24].try_into().ok()?)),
            val: &b[HM_HEADER..],
        })
    }
}

/// Where a log entry's message goes in one child's buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Out {
    /// `slot_out[x]`: the position in child x's buffer this entry's message takes if it is
    /// forwarded to x, else the next free position.
    pub pos: u64,
    /// The child's consumed positions known to the leader that wrote the entry (see
    /// [`crate::catchup`]: a new leader never re-forwards below it).
    pub credit: u64,
}

/// A log entry `⟨tmp, source, slot_out, hm⟩`, plus the source position and the credits known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// The proposer's timestamp (a ballot).
    pub tmp: u64,
    /// The client index the message came from, or [`FROM_PARENT`].
    pub source: u32,
    /// The message's position in the source's `HM` buffer.
    pub src_pos: u64,
    /// Per child of the group.
    pub outs: Vec<Out>,
    /// The message, encoded as in `HM` ([`Hm::encode`]).
    pub hm: Vec<u8>,
}

impl LogEntry {
    /// The encoding (the log slot's codec payload).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.tmp.to_le_bytes());
        out.extend_from_slice(&self.source.to_le_bytes());
        out.extend_from_slice(&(self.outs.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.src_pos.to_le_bytes());
        for o in &self.outs {
            out.extend_from_slice(&o.pos.to_le_bytes());
            out.extend_from_slice(&o.credit.to_le_bytes());
        }
        out.extend_from_slice(&self.hm);
    }

    /// Decodes an encoding made by [`LogEntry::encode`].
    pub fn decode(b: &[u8]) -> Option<LogEntry> {
        let u64_at = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
        };
        let n = u32::from_le_bytes(b.get(12..16)?.try_into().ok()?) as usize;
        let hm_at = LOG_HEADER + LOG_PER_CHILD * n;
        let outs = (0..n)
            .map(|i| {
                let at = LOG_HEADER + LOG_PER_CHILD * i;
                Some(Out {
                    pos: u64_at(at)?,
                    credit: u64_at(at + 8)?,
                })
            })
            .collect::<Option<Vec<Out>>>()?;
        let hm = b.get(hm_at..)?.to_vec();
        Hm::decode(&hm)?;
        Some(LogEntry {
            tmp: u64_at(0)?,
            source: u32::from_le_bytes(b.get(8..12)?.try_into().ok()?),
            src_pos: u64_at(16)?,
            outs,
            hm,
        })
    }

    /// The message.
    pub fn msg(&self) -> Hm<'_> {
        Hm::decode(&self.hm).expect("checked at construction")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multicast::Tree;

    #[test]
    fn the_slot_for_a_size_is_the_smallest_that_holds_it() {
        for size in [0, 1, 7, 8, 64, 100, 1000, 4096, 16384] {
            let slot = Layout::slot_bytes_for(size);
            assert!(Layout::max_message(slot) >= size, "{size} B");
            assert!(
                slot <= 128 || Layout::max_message(slot - 8) < size,
                "{size} B"
            );
        }
    }

    #[test]
    fn entries_round_trip_and_regions_do_not_overlap() {
        let dst = DestSet::of([GroupId(1), GroupId(3)]).unwrap();
        let mut hm = Vec::new();
        Hm {
            client: 4,
            seq: 77,
            dst,
            val: b"hello",
        }
        .encode(&mut hm);
        let e = LogEntry {
            tmp: 9 << 8 | 2,
            source: FROM_PARENT,
            src_pos: 12,
            outs: vec![Out { pos: 3, credit: 1 }, Out { pos: 8, credit: 8 }],
            hm,
        };
        let mut b = Vec::new();
        e.encode(&mut b);
        let d = LogEntry::decode(&b).unwrap();
        assert_eq!(d, e);
        assert_eq!(d.msg().val, b"hello");
        assert_eq!(d.msg().dst, dst);
        assert!(LogEntry::decode(&b[..20]).is_none());

        let cfg = Config::new(Tree::preset("breadth").unwrap(), 3, 5);
        let l = Layout::new(&cfg, GroupId(0));
        assert!(l.perm(2) + 8 <= l.perm_ack(0));
        assert!(l.perm_ack(2) + PERM_ACK_BYTES <= l.heartbeat(0));
        assert!(l.heartbeat(2) + 8 <= l.commit(0));
        assert!(l.commit(2) + 8 <= l.progress(0));
        assert!(l.progress(2) + 8 <= l.credit(0, 0));
        assert!(l.credit(6, 2) + 8 <= l.halt());
        assert_eq!(l.hm_slot(5, 17), (5 * 16 + 1) * 256);
        // The root of breadth has 7 children: its log slots carry 7 outs.
        assert_eq!(l.log_codec.slot_bytes(), 256 + 24 + 7 * 16);
    }
}
