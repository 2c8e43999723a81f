//! Algorithm 2: the normal case, with a stable leader per group.
//!
//! | task | where |
//! |---|---|
//! | 1, `Relay` (client) | [`crate::client`] |
//! | entries landing in `M` | `RamcastServer::poll_buffers` |
//! | 2: the leader proposes | `RamcastServer::propose` |
//! | 3: followers acknowledge | `RamcastServer::poll_pending` |
//! | 4: leaders propagate other groups' timestamps | `RamcastServer::poll_pending` |
//! | 5: ORDERED with a quorum of acks per group | `RamcastServer::poll_pending` |
//! | 6: delivery in timestamp order | `RamcastServer::deliver` |
//!
//! Departures from the paper's pseudocode, each needed for safety (see the crate docs):
//! Task 4 forwards `rnd` with `tmp`; Task 5 counts acknowledgements of the round of the proposal
//! it holds and, as the paper does, folds a group's timestamp into `tmp` only once it is chosen; every timestamp a server reads raises its clock; the leader copies the message into
//! a follower's `M` before its proposal (same queue pair, so the copy lands first).

use crate::layout::{ack_word, codec_seq, local, remote, Entry, M, T};
use crate::server::{Install, Prop, RamcastServer, Role, Stat};
use crate::stamp::Stamp;
use bytes::Bytes;
use multicast::GroupId;
use multicast::Membership;
use transport::slot::Reject;
use transport::{Nanos, Nic, Work};

/// What a message slot of `M` holds for an expected sequence number.
enum Landed {
    /// The whole entry.
    Entry(Entry),
    /// Nothing usable yet.
    Nothing,
    /// A later lap: the client recycled the slot without this server (or a peer wrote what no
    /// client writes). Says what the slot held, for the halt's report.
    Lapped(String),
}

impl RamcastServer {
    /// Takes the entries clients wrote into `M`, in sequence order per client. A slot holding a
    /// later lap than expected means the client recycled it without this server: it halts.
    pub(crate) fn poll_buffers<N: Nic>(&mut self, nic: &mut N) -> bool {
        // The algorithm looks at every client's next slot, whatever the hint lets us skip.
        nic.work(Work::Scan, self.cfg.clients as u64);
        self.observe_changes(nic);
        if !self.rescan.any_dirty() {
            return false;
        }
        let dirty = self.rescan.take_dirty();
        let mut worked = false;
        // A client whose buffer is not dirty would find what it found last time. Debug builds
        // look at every client anyway and check that it does.
        let every: Vec<u32>;
        let clients = if cfg!(debug_assertions) {
            every = (0..self.cfg.clients as u32).collect();
            &every
        } else {
            &dirty
        };
        for (k, &c) in clients.iter().enumerate() {
            let was_dirty = !cfg!(debug_assertions) || dirty.binary_search(&c).is_ok();
            match self.poll_buffer(nic, c, was_dirty) {
                Some(w) => worked |= w,
                None => {
                    // Lapped: the server halts. What it did not look at stays dirty.
                    for &rest in &clients[k + 1..] {
                        self.rescan.dirty(rest);
                    }
                    break;
                }
            }
        }
        self.rescan.recycle_dirty(dirty);
        worked
    }

    /// [`Self::poll_buffers`] for client `c`: takes every entry that landed in order; `None`
    /// when the client lapped its buffer (the server halted).
    fn poll_buffer<N: Nic>(&mut self, nic: &mut N, c: u32, dirty: bool) -> Option<bool> {
        let mut worked = false;
        loop {
            let s = self.buffers[c as usize].next;
            if self.slot(c, s).is_some() {
                debug_assert!(dirty, "{}: client {c}'s slot {s} filled unseen", self.me);
                self.buffers[c as usize].next += 1;
                continue;
            }
            // Nothing was there when last looked, and nothing changed since.
            let mark = self.mark(c, self.layout.index(s));
            if self.buffers[c as usize].scanned == Some((s, mark)) {
                return Some(worked);
            }
            let landed = self.read_entry(nic, c, s);
            debug_assert!(
                dirty || matches!(landed, Landed::Nothing),
                "{}: client {c}'s entry {s} landed unseen",
                self.me
            );
            match landed {
                Landed::Entry(e) => {
                    self.accept(c, s, e, nic.now());
                    self.buffers[c as usize].next += 1;
                    worked = true;
                }
                Landed::Lapped(why) => {
                    self.halt = Some(why);
                    return None;
                }
                Landed::Nothing => {
                    self.buffers[c as usize].scanned = Some((s, mark));
                    return Some(worked);
                }
            }
        }
    }

    /// Reads client `c`'s entry `s` from `M`, if it has landed whole.
    fn read_entry<N: Nic>(&mut self, nic: &mut N, c: u32, s: u64) -> Landed {
        let at = local(M, self.layout.m_slot(c as usize, s));
        let mut buf = std::mem::take(&mut self.scratch);
        let read = self
            .layout
            .m_codec
            .read(nic, at, codec_seq(s), &mut buf)
            .expect("own region");
        let landed = match read {
            Ok(range) => match Entry::decode(Bytes::copy_from_slice(&buf[range.clone()])) {
                Some(e) if e.ptr(self.group) == Some(s) => {
                    nic.work(Work::Decode, 1);
                    nic.work(Work::Copy, range.len() as u64);
                    Landed::Entry(e)
                }
                _ => Landed::Nothing,
            },
            Err(Reject::Torn) => Landed::Nothing,
            Err(Reject::NotYet) => {
                let header = nic.load_u64(at).expect("own region") as u32;
                let ahead = header.wrapping_sub(codec_seq(s)) as i32;
                if header != 0 && ahead >= self.cfg.slots as i32 {
                    Landed::Lapped(format!(
                        "slot {} of client {}'s buffer in M holds entry {header}, {ahead} past entry {} that this server waits for (a client runs at most {} ahead): the client recycled the slot without this server, or a peer wrote what no client writes",
                        self.layout.index(s),
                        self.cfg.client(c as usize),
                        codec_seq(s),
                        self.cfg.slots
                    ))
                } else {
                    Landed::Nothing
                }
            }
        };
        self.scratch = buf;
        // The entry overwrote a message this server has not delivered yet: the client recycled
        // the slot without it (it was excluded while silent).
        let held = &self.buffers[c as usize].slots[self.layout.index(s)];
        if matches!(landed, Landed::Entry(_))
            && held.seq < s
            && matches!(held.stat, Stat::Mcast | Stat::Ordered)
        {
            return Landed::Lapped(format!(
                "client {}'s entry {} landed in slot {} of M over its entry {} that this server has not delivered: the client recycled the slot without this server",
                self.cfg.client(c as usize),
                codec_seq(s),
                self.layout.index(s),
                codec_seq(held.seq)
            ));
        }
        landed
    }

    /// Brings the local state up to what memory holds: every entry landed in the window (in
    /// any order) and every proposal landed in `T`. Task 8 reports from this state, so a
    /// proposal whose write landed (Protected Memory Paxos: landing is accepting) is reported
    /// even if this server had not processed it yet.
    pub(crate) fn refresh_window<N: Nic>(&mut self, nic: &mut N) {
        self.poll_buffers(nic);
        for c in 0..self.cfg.clients as u32 {
            let ldm = self.buffers[c as usize].ldm;
            for s in ldm..ldm + self.cfg.slots as u64 {
                if self.slot(c, s).is_none() {
                    if let Landed::Entry(e) = self.read_entry(nic, c, s) {
                        self.accept(c, s, e, nic.now());
                    }
                }
                if self.slot(c, s).is_some() {
                    self.refresh_ts(nic, c, s);
                }
            }
        }
    }

    /// Reads every destination group's proposal for slot `s` from `T`; rounds of one entry
    /// only grow, so a higher round replaces what is held. Returns whether anything changed.
    pub(crate) fn refresh_ts<N: Nic>(&mut self, nic: &N, c: u32, s: u64) -> bool {
        let dst = self
            .slot(c, s)
            .and_then(|x| x.entry.as_ref())
            .expect("held")
            .dst;
        let mut changed = false;
        let (i, epoch) = (self.layout.index(s), self.rescan.epoch());
        for h in dst.groups() {
            // An entry unchanged since it was last read would change nothing: a proposal is
            // replaced only by a higher round, and its timestamp already raised the clock.
            // Debug builds read it anyway and check that.
            let unread = self.buffers[c as usize].seen[i].t_unread(h.0 as usize, epoch);
            if !unread && !cfg!(debug_assertions) {
                continue;
            }
            let read = self.read_t(nic, c, s, h);
            self.buffers[c as usize].seen[i].t_read(h.0 as usize, epoch);
            if let Some((tmp, rnd)) = read {
                debug_assert!(
                    unread
                        || (self.clock >= tmp.time()
                            && self.slot(c, s).expect("held").ts[h.0 as usize]
                                .is_some_and(|p| rnd <= p.rnd)),
                    "{}: client {c}'s slot {s}: group {h:?}'s T entry changed unseen",
                    self.me
                );
                self.see(tmp);
                let slot = self.slot_mut(c, s).expect("held");
                let cur = &mut slot.ts[h.0 as usize];
                if cur.is_none_or(|p| rnd > p.rnd) {
                    *cur = Some(Prop {
                        tmp,
                        rnd,
                        forwarded: false,
                    });
                    changed = true;
                }
            }
        }
        changed
    }

    /// Makes `entry` the content of client `c`'s slot `s` (state MCAST).
    pub(crate) fn accept(&mut self, c: u32, s: u64, entry: Entry, now: Nanos) {
        let i = self.layout.index(s);
        let slot = &mut self.buffers[c as usize].slots[i];
        slot.seq = s;
        slot.entry = Some(entry);
        slot.stat = Stat::Mcast;
        slot.ts.clear();
        slot.ts.resize(self.cfg.groups, None);
        slot.tmp = Stamp::ZERO;
        slot.acked = None;
        slot.proposed = None;
        slot.install = None;
        slot.fast_ok = 0;
        // Proposals that landed in `T` before the entry count again for the new message.
        self.buffers[c as usize].seen[i].t_changed(None);
        self.rescan.dirty(c);
        self.pending.insert((Stamp::ZERO, c, s));
        self.slot_mut(c, s).expect("held").relays = 0;
        self.arm_relay(c, s, now);
        if self.role != Role::Follower {
            self.to_propose.insert((c, s));
        }
    }

    /// Whether `s` may be stored in client `c`'s buffer now: inside the window the client may
    /// have written, and not already held.
    pub(crate) fn fits(&self, c: u32, s: u64) -> bool {
        let b = &self.buffers[c as usize];
        s >= b.ldm && s < b.ldm + self.cfg.slots as u64 && self.slot(c, s).is_none()
    }

    /// Stores an entry that arrived by another way than the client's write (a relay, a
    /// catch-up), exactly as the client would have written it.
    pub(crate) fn store<N: Nic>(&mut self, nic: &mut N, c: u32, s: u64, entry: Entry) {
        let mut buf = std::mem::take(&mut self.scratch);
        self.layout
            .m_codec
            .encode(codec_seq(s), &entry.raw, &mut buf)
            .expect("entries come from slots of this size");
        nic.write_local(local(M, self.layout.m_slot(c as usize, s)), &buf)
            .expect("own region");
        self.scratch = buf;
        self.accept(c, s, entry, nic.now());
    }

    /// Reads the `T` entry of group `h` for client `c`'s slot `s`.
    pub(crate) fn read_t<N: Nic>(
        &mut self,
        nic: &N,
        c: u32,
        s: u64,
        h: GroupId,
    ) -> Option<(Stamp, Stamp)> {
        let at = local(T, self.layout.t_entry(c as usize, s, h));
        let mut buf = std::mem::take(&mut self.scratch);
        let got = match self.layout.t_codec.read(nic, at, codec_seq(s), &mut buf) {
            Ok(Ok(r)) if r.len() == 16 => {
                let w = |i: usize| {
                    u64::from_le_bytes(buf[r.start + i..r.start + i + 8].try_into().unwrap())
                };
                Some((Stamp(w(0)), Stamp(w(8))))
            }
            _ => None,
        };
        self.scratch = buf;
        got
    }

    /// Encodes a `T` entry `(tmp, rnd)` for slot `s` into a fresh buffer.
    pub(crate) fn t_bytes(&self, s: u64, tmp: Stamp, rnd: Stamp) -> Vec<u8> {
        let mut payload = [0u8; 16];
        payload[..8].copy_from_slice(&tmp.0.to_le_bytes());
        payload[8..].copy_from_slice(&rnd.0.to_le_bytes());
        let mut out = Vec::with_capacity(32);
        self.layout
            .t_codec
            .encode(codec_seq(s), &payload, &mut out)
            .expect("16 bytes fit");
        out
    }

    /// Tasks 3, 4 and 5 over every MCAST or ORDERED slot (those whose mark moved; see
    /// [`crate::rescan`]).
    pub(crate) fn poll_pending<N: Nic>(&mut self, nic: &mut N) -> bool {
        // Tasks 3-5 look at every pending slot; the hint only spares this code the ones that
        // did not change.
        nic.work(Work::Scan, self.pending.len() as u64);
        self.observe_changes(nic);
        let mut due = std::mem::take(&mut self.rescan.due);
        due.clear();
        due.extend(self.pending.iter().copied().filter(|&(_, c, s)| {
            let i = self.layout.index(s);
            self.buffers[c as usize].seen[i].pending != self.mark(c, i)
        }));
        // A heartbeat may be due between two slots (a long poll must still beat on time).
        // Skipped slots post nothing, so the clock stands still across them and one check
        // stands for a run of them: before each slot looked at, and after the last one if
        // slots were skipped after it.
        let beat_after = self.pending.last() != due.last();
        let mut worked = false;
        for &(key, c, s) in &due {
            self.beat_if_due(nic);
            worked |= self.pending_slot(nic, key, c, s);
            let i = self.layout.index(s);
            self.buffers[c as usize].seen[i].pending = self.mark(c, i);
        }
        if beat_after {
            self.beat_if_due(nic);
        }
        self.rescan.due = due;
        worked
    }

    /// Tasks 3, 4 and 5 for client `c`'s pending slot `s`, held under `key` in `pending`.
    fn pending_slot<N: Nic>(&mut self, nic: &mut N, key: Stamp, c: u32, s: u64) -> bool {
        let g = self.group;
        let quorum = self.cfg.quorum();
        let mut worked = false;
        worked |= self.refresh_ts(nic, c, s);
        // Task 3: acknowledge the own group's proposal of the accepted leader's round.
        let slot = self.slot(c, s).expect("pending");
        let dst = slot.entry.as_ref().expect("pending").dst;
        if let Some(p) = slot.ts[g.0 as usize] {
            if p.rnd == self.rounds[g.0 as usize] && slot.acked != Some(p.rnd) {
                let entry = slot.entry.clone().expect("pending");
                self.see(p.tmp);
                self.slot_mut(c, s).expect("pending").acked = Some(p.rnd);
                self.send_acks(nic, c, &entry, p.rnd, None);
                worked = true;
            }
        }
        // Task 4: the leader forwards other groups' proposals to its followers.
        worked |= self.forward(nic, c, s);
        // Task 5 (Alg. 2 l.26-31): fold in a group's timestamp only once a quorum of the
        // group acknowledged it, i.e. it is the group's chosen timestamp; ORDERED when every
        // destination group's is. A proposal of a round that was superseded before a quorum
        // took it may differ from the chosen one and must never raise `tmp` (see the crate
        // docs, "Final timestamps").
        let slot = self.slot(c, s).expect("pending");
        let mut tmp = slot.tmp;
        let mut all = slot.stat == Stat::Mcast;
        if all {
            for h in dst.groups() {
                match slot.ts[h.0 as usize] {
                    Some(p) if self.chosen(nic, c, s, h, p.rnd, quorum) => tmp = tmp.max(p.tmp),
                    _ => all = false,
                }
            }
        }
        let slot = self.slot_mut(c, s).expect("pending");
        let was = (slot.tmp, slot.stat);
        if slot.stat == Stat::Mcast {
            slot.tmp = tmp;
        }
        if all {
            slot.stat = Stat::Ordered;
            nic.work(Work::Order, 1);
        }
        if (slot.tmp, slot.stat) != was {
            let t = slot.tmp;
            self.see(t);
            self.rekey(c, s, Some(key));
            worked = true;
        }
        worked
    }

    /// Task 5's test for group `h`: a quorum of `h` acknowledged one round `r <= rnd`. Then the
    /// proposal held (of round `rnd`) carries the chosen timestamp: a timestamp a quorum
    /// accepted in round `r` is the one every later round proposes (Task 9 adopts the
    /// highest-round proposal of a quorum, as Paxos does).
    fn chosen<N: Nic>(
        &self,
        nic: &N,
        c: u32,
        s: u64,
        h: GroupId,
        rnd: Stamp,
        quorum: usize,
    ) -> bool {
        let mut buf = [0u64; 15];
        let mut n = 0;
        for r in 0..self.cfg.replicas {
            let w = nic
                .load_u64(local(M, self.layout.ack(c as usize, s, h, r)))
                .expect("own region");
            if w as u32 == codec_seq(s) {
                buf[n] = w;
                n += 1;
            }
        }
        let words = &buf[..n];
        words.iter().any(|&w| {
            let r = w >> 32;
            r <= rnd.0 as u32 as u64 && words.iter().filter(|&&x| x >> 32 == r).count() >= quorum
        })
    }

    /// Writes this server's acknowledgement of round `rnd` for `entry` into the slot of every
    /// destination process (or only of `only`).
    pub(crate) fn send_acks<N: Nic>(
        &mut self,
        nic: &mut N,
        c: u32,
        entry: &Entry,
        rnd: Stamp,
        only: Option<transport::ProcessId>,
    ) {
        for (h, &ptr) in entry.dst.groups().zip(&entry.ptr) {
            let word = ack_word(ptr, rnd).to_le_bytes();
            let at = self.layout.ack(c as usize, ptr, self.group, self.rank);
            let cfg = self.cfg.clone();
            for q in cfg.members(h).filter(|&q| only.is_none_or(|o| o == q)) {
                self.write(nic, remote(q, M, at), &word, false);
            }
        }
    }

    /// Task 4: as leader, forwards to the followers every other group's proposal for slot `s`
    /// not forwarded yet (each newer round is forwarded again).
    pub(crate) fn forward<N: Nic>(&mut self, nic: &mut N, c: u32, s: u64) -> bool {
        if self.role != Role::Leader {
            return false;
        }
        let g = self.group;
        let dst = self
            .slot(c, s)
            .and_then(|x| x.entry.as_ref())
            .expect("held")
            .dst;
        let mut worked = false;
        for h in dst.groups().filter(|&h| h != g) {
            let p = self.slot(c, s).expect("held").ts[h.0 as usize];
            if let Some(p) = p.filter(|p| !p.forwarded) {
                let bytes = self.t_bytes(s, p.tmp, p.rnd);
                let (cfg, me) = (self.cfg.clone(), self.me);
                for q in cfg.members(g).filter(|&q| q != me) {
                    let at = self.layout.t_entry(c as usize, s, h);
                    self.write(nic, remote(q, T, at), &bytes, false);
                }
                if let Some(x) = &mut self.slot_mut(c, s).expect("held").ts[h.0 as usize] {
                    x.forwarded = true;
                }
                worked = true;
            }
        }
        worked
    }

    /// Task 2 (and the proposals of Task 9): the leader proposes a timestamp for each waiting
    /// slot, writes it into its own `T`, then into the `T` of its followers (each preceded by a
    /// copy of the message) and of the leaders of the other destination groups. A single-group
    /// message's writes to followers are signaled: the fast path of section 3.7 orders it at the
    /// leader once a quorum (counting the leader) holds the proposal.
    ///
    /// Proposals go out in timestamp order, so a follower that holds one holds every smaller
    /// one of this leader's. Timestamps proposed again (Task 9's, or this round's after a
    /// reconnect) go first; the announcement that the round is complete follows the last one
    /// Task 9 made and precedes every fresh timestamp (see "Completed rounds" in the crate
    /// docs).
    pub(crate) fn propose<N: Nic>(&mut self, nic: &mut N) -> bool {
        if self.role != Role::Leader || (self.to_propose.is_empty() && !self.announcement_due()) {
            return false;
        }
        let g = self.group;
        let round = self.round;
        let mut order: Vec<(Option<Stamp>, u32, u64)> = Vec::new();
        for (c, s) in std::mem::take(&mut self.to_propose) {
            let Some(slot) = self.slot_mut(c, s) else {
                continue;
            };
            // A delivered slot may already be recycled at other processes: it is proposed again
            // by message only (see `crate::recovery`).
            if slot.proposed == Some(round) || slot.stat == Stat::Done {
                continue;
            }
            // A timestamp this group already proposed for the slot is proposed again: the one
            // Task 9 adopted, this round's own, or, for a slot ORDERED here before this
            // leadership, the chosen one held in T. A fresh timestamp otherwise.
            let held = match slot.install.take() {
                Some(Install::Adopt(t)) => Some(t),
                Some(Install::Fresh) => None,
                None => slot.ts[g.0 as usize]
                    .filter(|p| p.rnd == round || slot.stat == Stat::Ordered)
                    .map(|p| p.tmp),
            };
            order.push((held, c, s));
        }
        order.sort_unstable_by_key(|&(held, c, s)| (held.is_none(), held, c, s));
        for (held, c, s) in order {
            self.beat_if_due(nic);
            if held.is_none_or(|t| t > self.boundary) && self.announcement_due() {
                self.announce(nic);
            }
            let entry = self
                .slot(c, s)
                .and_then(|x| x.entry.clone())
                .expect("held slots have entries");
            let tmp = match held {
                Some(t) => t,
                None => {
                    self.clock += 1;
                    Stamp::new(self.clock, self.me.0)
                }
            };
            self.see(tmp);
            let t_entry = self.t_bytes(s, tmp, round);
            let me = self.me;
            self.write(
                nic,
                remote(me, T, self.layout.t_entry(c as usize, s, g)),
                &t_entry,
                false,
            );
            let single = entry.dst.len() == 1;
            let mut copy = std::mem::take(&mut self.scratch);
            self.layout
                .m_codec
                .encode(codec_seq(s), &entry.raw, &mut copy)
                .expect("entries come from slots of this size");
            let cfg = self.cfg.clone();
            for q in cfg.members(g).filter(|&q| q != me) {
                self.write(
                    nic,
                    remote(q, M, self.layout.m_slot(c as usize, s)),
                    &copy,
                    false,
                );
                let at = self.layout.t_entry(c as usize, s, g);
                if let Some(wr) = self.write(nic, remote(q, T, at), &t_entry, single) {
                    if single {
                        self.fast.insert(wr, (c, s, round));
                    }
                }
            }
            self.scratch = copy;
            for (h, &ptr) in entry.dst.groups().zip(&entry.ptr).filter(|(h, _)| *h != g) {
                let l = self.leader[h.0 as usize];
                let bytes = self.t_bytes(ptr, tmp, round);
                self.write(
                    nic,
                    remote(l, T, self.layout.t_entry(c as usize, ptr, g)),
                    &bytes,
                    false,
                );
            }
            let slot = self.slot_mut(c, s).expect("held");
            slot.proposed = Some(round);
            slot.fast_ok = 0;
            slot.ts[g.0 as usize] = Some(Prop {
                tmp,
                rnd: round,
                forwarded: false,
            });
            if single && self.cfg.quorum() == 1 {
                self.fast_ordered(nic, c, s);
            }
        }
        if self.announcement_due() {
            self.announce(nic);
        }
        true
    }

    /// The fast path: a single-group message whose proposal a quorum holds is ORDERED at the
    /// leader with that proposal as its final timestamp.
    pub(crate) fn fast_ordered<N: Nic>(&mut self, nic: &mut N, c: u32, s: u64) {
        let g = self.group.0 as usize;
        let Some(slot) = self.slot_mut(c, s) else {
            return;
        };
        if slot.stat != Stat::Mcast {
            return;
        }
        let Some(p) = slot.ts[g] else {
            return;
        };
        let old = slot.tmp;
        slot.tmp = p.tmp;
        slot.stat = Stat::Ordered;
        nic.work(Work::Order, 1);
        self.see(p.tmp);
        self.rekey(c, s, Some(old));
    }
}

#[cfg(test)]
mod tests;
