//! Algorithm 1's data structures as memory: where M, T, the acknowledgement vectors, the
//! heartbeats and the client responses live, and how a message entry is encoded.
//!
//! Every server exposes three regions:
//!
//! | region | content | remote access |
//! |---|---|---|
//! | `M` | per client, `slots` entries: the message slot (slot codec: header, payload, canary), then two banks of `ack[k][n]` words (alternate laps) | write, everyone |
//! | `T` | per client and slot, per group: a 32-byte slot-codec entry `(tmp, rnd)` | write, the leader of each group only |
//! | `CTL` | one heartbeat word per member of the server's group | write, everyone |
//!
//! Every client exposes one region with, per server, `[response, ldm]`: the id (+1) of the last
//! message of this client the server delivered and the server's Last Delivered Message (the
//! count of this client's messages it delivered contiguously). The response write of the paper
//! carries the LDM of section 3.7, so recycling costs no extra write.
//!
//! Slot indices are per (client, group) sequence numbers: the `s`-th message a client sends to
//! group `h` sits in slot `s mod slots` at every member of `h`, so the paper's address vector
//! `ptr[h][q]` is the same for all `q` of `h` and is stored once per destination group. The slot
//! codec's `seq` is `s + 1` (never 0, so a zeroed slot never decodes), which also tells a slot's
//! laps apart. An acknowledgement word packs the acknowledged slot's `seq` with the round, so a
//! late acknowledgement of an earlier lap is never counted.

use crate::config::Config;
use crate::stamp::Stamp;
use bytes::Bytes;
use multicast::{DestSet, GroupId};
use transport::slot::{SlotCodec, CANARY_BYTES, HEADER_BYTES};
use transport::{Access, LocalAddr, ProcessId, RegionId, RegionSpec, RemoteAddr};

/// Region `M` at a server.
pub const M: RegionId = RegionId(0);
/// Region `T` at a server.
pub const T: RegionId = RegionId(1);
/// Region `CTL` (heartbeats) at a server.
pub const CTL: RegionId = RegionId(2);
/// The response region at a client.
pub const RESP: RegionId = RegionId(0);
/// Bytes of one `T` entry: header, `tmp`, `rnd`, canary.
pub const T_ENTRY: usize = 32;

/// Offsets of everything in the regions of one configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    groups: usize,
    replicas: usize,
    slots: usize,
    /// `log2(slots)` when `slots` is a power of two: slot indices and laps are then a mask and a
    /// shift instead of a division (the scans compute them on every slot they look at).
    slots_log2: Option<u32>,
    slot_bytes: usize,
    m_stride: usize,
    /// The codec of message slots.
    pub m_codec: SlotCodec,
    /// The codec of `T` entries.
    pub t_codec: SlotCodec,
}

impl Layout {
    /// The layout of `cfg` (validated).
    pub fn new(cfg: &Config) -> Layout {
        Layout {
            groups: cfg.groups,
            replicas: cfg.replicas,
            slots: cfg.slots,
            slots_log2: cfg
                .slots
                .is_power_of_two()
                .then(|| cfg.slots.trailing_zeros()),
            slot_bytes: cfg.slot_bytes,
            m_stride: cfg.slot_bytes + 2 * cfg.groups * cfg.replicas * 8,
            m_codec: SlotCodec::new(cfg.slot_bytes).expect("validated slot size"),
            t_codec: SlotCodec::new(T_ENTRY).expect("32 is a valid slot"),
        }
    }

    /// The regions of a server; `leaders` may write `T` initially.
    pub fn server_regions(&self, clients: usize, leaders: &[ProcessId]) -> Vec<RegionSpec> {
        let mut t = RegionSpec::new(clients * self.slots * self.groups * T_ENTRY);
        for &l in leaders {
            t = t.grant(l, Access::Write);
        }
        vec![
            RegionSpec::new(clients * self.slots * self.m_stride).with_default(Access::Write),
            t,
            RegionSpec::new(self.replicas * 8).with_default(Access::Write),
        ]
    }

    /// The region of a client.
    pub fn client_regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(self.groups * self.replicas * 16).with_default(Access::Write)]
    }

    /// The slot of a client buffer that sequence number `seq` occupies: `seq mod slots`.
    pub fn index(&self, seq: u64) -> usize {
        match self.slots_log2 {
            Some(k) => (seq & ((1 << k) - 1)) as usize,
            None => (seq % self.slots as u64) as usize,
        }
    }

    /// How many times the client went round its buffer before `seq`: `seq div slots`.
    pub fn lap(&self, seq: u64) -> u64 {
        match self.slots_log2 {
            Some(k) => seq >> k,
            None => seq / self.slots as u64,
        }
    }

    fn m_base(&self, client: usize, seq: u64) -> usize {
        (client * self.slots + self.index(seq)) * self.m_stride
    }

    /// Bytes of `M` per slot: the message slot and its acknowledgement banks.
    pub fn m_stride(&self) -> usize {
        self.m_stride
    }

    /// The message slot of `client`'s message `seq` (in the owner's group numbering).
    pub fn m_slot(&self, client: usize, seq: u64) -> usize {
        self.m_base(client, seq)
    }

    /// The acknowledgement word of replica `rank` of group `g` in that slot. Consecutive laps
    /// of a slot use alternate banks of acknowledgement words, so a late acknowledgement of
    /// the previous message in the slot never overwrites one of the current message.
    pub fn ack(&self, client: usize, seq: u64, g: GroupId, rank: usize) -> usize {
        let bank = (self.lap(seq) % 2) as usize * self.groups * self.replicas;
        self.m_base(client, seq)
            + self.slot_bytes
            + (bank + g.0 as usize * self.replicas + rank) * 8
    }

    /// The `T` entry of group `g` in that slot.
    pub fn t_entry(&self, client: usize, seq: u64, g: GroupId) -> usize {
        ((client * self.slots + self.index(seq)) * self.groups + g.0 as usize) * T_ENTRY
    }

    /// The heartbeat word of replica `rank`.
    pub fn heartbeat(&self, rank: usize) -> usize {
        rank * 8
    }

    /// The `[response, ldm]` pair of server `server` at a client.
    pub fn response(&self, server: ProcessId) -> usize {
        server.index() * 16
    }

    /// The largest message for a destination set of `dst_groups` groups.
    pub fn max_message(&self, dst_groups: usize) -> usize {
        self.m_codec.capacity() - meta_len(dst_groups)
    }

    /// Slots per client buffer.
    pub fn slots(&self) -> usize {
        self.slots
    }
}

/// A local address in a server's region.
pub fn local(region: RegionId, offset: usize) -> LocalAddr {
    LocalAddr::new(region, offset)
}

/// A remote address.
pub fn remote(p: ProcessId, region: RegionId, offset: usize) -> RemoteAddr {
    RemoteAddr::new(p, region, offset)
}

/// The slot-codec `seq` of group sequence number `s`.
pub fn codec_seq(s: u64) -> u32 {
    (s as u32).wrapping_add(1)
}

/// An acknowledgement word: slot `seq` acknowledged in `round`.
pub fn ack_word(s: u64, round: Stamp) -> u64 {
    codec_seq(s) as u64 | (round.0 as u32 as u64) << 32
}

/// The slot size, in bytes, for a message of `size` bytes to `dst_groups` groups: the smallest
/// multiple of 8 that holds it with its entry metadata and the slot codec's header and canary,
/// and at least 1 KiB. The inverse of [`Layout::max_message`].
pub fn slot_bytes_for(size: usize, dst_groups: usize) -> usize {
    (size + meta_len(dst_groups) + HEADER_BYTES + CANARY_BYTES)
        .div_ceil(8)
        .max(128)
        * 8
}

fn meta_len(dst_groups: usize) -> usize {
    16 + dst_groups * 8
}

/// A message entry of `M` (Algorithm 1, lines 2-5: msg, dst, ptr), decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The client's sequence number of the message (its [`multicast::MsgId`] `seq`).
    pub id: u64,
    /// Destination groups.
    pub dst: DestSet,
    /// Per destination group, ascending, the message's sequence number in that group.
    pub ptr: Vec<u64>,
    /// The encoded entry payload (meta and message), as stored in every slot.
    pub raw: Bytes,
}

impl Entry {
    /// Encodes an entry payload: `id u64, dst u64, ptr u64 x |dst|, message`.
    pub fn encode(id: u64, dst: DestSet, ptr: &[u64], msg: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(meta_len(ptr.len()) + msg.len());
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&dst.bits().to_le_bytes());
        for &p in ptr {
            out.extend_from_slice(&p.to_le_bytes());
        }
        out.extend_from_slice(msg);
        out
    }

    /// Decodes an entry payload; `None` if it is malformed.
    pub fn decode(raw: Bytes) -> Option<Entry> {
        let word = |i: usize| {
            raw.get(i..i + 8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        };
        let id = word(0)?;
        let dst = DestSet::from_bits(word(8)?);
        if dst.is_empty() || raw.len() < meta_len(dst.len()) {
            return None;
        }
        let ptr = (0..dst.len()).map(|i| word(16 + 8 * i).unwrap()).collect();
        Some(Entry { id, dst, ptr, raw })
    }

    /// The message bytes.
    pub fn message(&self) -> Bytes {
        self.raw.slice(meta_len(self.ptr.len())..)
    }

    /// The message's sequence number in group `g`, if `g` is a destination.
    pub fn ptr(&self, g: GroupId) -> Option<u64> {
        if !self.dst.contains(g) {
            return None;
        }
        let below = (self.dst.bits() & ((1u64 << g.0) - 1)).count_ones() as usize;
        Some(self.ptr[below])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_for_a_size_is_the_smallest_that_holds_it() {
        for size in [0, 1, 7, 8, 100, 1000, 1024, 4096, 65536] {
            for dst in 1..=8 {
                let mut cfg = Config::new(8, 3, 1);
                cfg.slot_bytes = slot_bytes_for(size, dst);
                assert!(
                    Layout::new(&cfg).max_message(dst) >= size,
                    "{size} B to {dst}"
                );
                if cfg.slot_bytes > 1024 {
                    cfg.slot_bytes -= 8;
                    assert!(
                        Layout::new(&cfg).max_message(dst) < size,
                        "{size} B to {dst}"
                    );
                }
            }
        }
    }

    #[test]
    fn slot_index_and_lap_are_mod_and_div_for_any_slot_count() {
        for slots in [2, 3, 12, 16, 1000, 65536] {
            let mut cfg = Config::new(2, 3, 1);
            cfg.slots = slots;
            let l = Layout::new(&cfg);
            let seqs = [0, 1, 15, 16, 17, 999, 1000, 65535, 65536, u64::MAX];
            for seq in seqs {
                let n = slots as u64;
                assert_eq!(l.index(seq), (seq % n) as usize, "{seq} in {slots}");
                assert_eq!(l.lap(seq), seq / n, "{seq} in {slots}");
            }
        }
    }

    #[test]
    fn entries_round_trip_and_regions_do_not_overlap() {
        let cfg = Config::new(3, 3, 2);
        let l = Layout::new(&cfg);
        let dst: DestSet = "0;2".parse().unwrap();
        let raw = Entry::encode(7, dst, &[5, 9], b"hello");
        let e = Entry::decode(Bytes::from(raw)).unwrap();
        assert_eq!(
            (e.id, e.dst, e.ptr(GroupId(2)), e.ptr(GroupId(1))),
            (7, dst, Some(9), None)
        );
        assert_eq!(&e.message()[..], b"hello");
        assert_eq!(l.max_message(2), 1024 - 16 - 32);
        // The ack words of one slot sit between its message slot and the next slot.
        let last_ack = l.ack(1, 31, GroupId(2), 2);
        assert_eq!(last_ack + 8, l.server_regions(2, &[])[0].len);
        assert_eq!(l.ack(0, 0, GroupId(0), 0), 1024);
        assert_eq!(
            l.t_entry(1, 15, GroupId(2)) + T_ENTRY,
            l.server_regions(2, &[])[1].len
        );
    }
}
