//! Algorithm 3: failures and suspicions, and the failure detector that raises them.
//!
//! | task | where |
//! |---|---|
//! | failure detector (heartbeats in `CTL`, next-leader rule) | `RamcastServer::failure_detector` |
//! | 7: a would-be leader picks a higher round and sends CATCH_UP | `RamcastServer::start_candidacy` |
//! | 8: accept a higher round, move `T`'s write permission, answer MY_STATE | `RamcastServer::on_catch_up` |
//! | 9: from a quorum of every group, re-propose or forward | `RamcastServer::finish_candidacy` |
//! | (added) the round's completion, announced before fresh timestamps, to the followers and the other groups' leaders | `RamcastServer::announce`, `Wire::Complete` |
//! | 10: relay the undecided messages of a suspected client | `RamcastServer::relay_stale` and `on_relay` |
//!
//! The next leader of a group is the member after the one expected, in rank order: a follower
//! that has not seen the expected leader's heartbeat change for `timing.suspect` moves its
//! expectation to the next rank, and the member that finds itself expected runs Task 7. Safety
//! never depends on this rule: two members may both believe they lead, and `T`'s permissions
//! let at most one of them write a quorum in a round.
//!
//! A refused write ("if write denied then end task") makes a leader step down. The refused queue
//! pair is in error, so the server reconnects and then re-sends to that peer what it may have
//! lost: its acknowledgements, and, as leader, its proposals.

use crate::layout::{local, remote, Entry, CTL, T};
use crate::server::{Candidacy, Install, Prop, RamcastServer, Role, Stat};
use crate::stamp::Stamp;
use crate::wire::{Pend, Wire};
use bytes::Bytes;
use multicast::GroupId;
use multicast::Membership;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use transport::{Access, Nanos, Nic, OpError, OpKind, ProcessId, Qp, Recv, Status};

/// The most times a message's relay timeout is doubled by its relays: a message still
/// undecided after a relay is relayed again after 2, 4, ... 1024 timeouts, not every timeout.
const MAX_RELAY_BACKOFF: u32 = 10;

/// Task 9's bag, per slot: the highest-round proposal `(tmp, rnd)` and the encoded entry.
type Adopted = (Option<(Stamp, Stamp)>, Vec<u8>);

impl RamcastServer {
    /// Completions: fast-path successes, refused writes (step down), broken queue pairs.
    ///
    /// A failure of an op posted before the latest reconnect to its peer is stale: the queue
    /// pair it reports on is already replaced, and that reconnect's resync re-sends, from the
    /// current state, whatever the op carried. Reconnecting again for it would flush what the
    /// resync just posted, whose failures would reconnect again, forever: on real threads the
    /// local runtime completes a reconnect before it flushes the old queue pair's ops, and two
    /// servers looped so (`check --runtime local` ramcast seeds 4 and 33, as drawn before the
    /// large-buffer class of 129ba87 changed seed 4's run). Only the flushed
    /// control message itself is sent again.
    pub(crate) fn drain_completions<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        while let Some(cq) = nic.poll_completion() {
            worked = true;
            let stale = self.reconnected.get(&cq.peer).is_some_and(|&r| cq.wr < r);
            let fast = self.fast.remove(&cq.wr);
            if let Some((to, bytes)) = self.sends.remove(&cq.wr) {
                if matches!(cq.status, Status::Flushed | Status::AccessDenied) {
                    if stale && !self.broken.contains_key(&to) {
                        self.send_bytes(nic, to, bytes);
                    } else {
                        self.unsent.entry(to).or_default().push(bytes);
                    }
                }
            }
            match (cq.status, cq.kind) {
                (Status::Success, OpKind::Reconnect) => {
                    self.broken.remove(&cq.peer);
                    for bytes in self.unsent.remove(&cq.peer).unwrap_or_default() {
                        self.send_bytes(nic, cq.peer, bytes);
                    }
                    self.resync(nic, cq.peer);
                }
                (Status::Success, _) => {
                    if let Some((c, s, r)) = fast {
                        if self.role == Role::Leader && r == self.round {
                            if let Some(slot) = self.slot_mut(c, s) {
                                if slot.proposed == Some(r) {
                                    slot.fast_ok += 1;
                                    if slot.fast_ok + 1 >= self.cfg.quorum() {
                                        self.fast_ordered(nic, c, s);
                                    }
                                }
                            }
                        }
                    }
                }
                (Status::AccessDenied, _) => {
                    self.refused += 1;
                    // Another member took over the group: end the task, step down.
                    if self.role != Role::Follower {
                        self.step_down(nic.now());
                    }
                    if !stale {
                        self.mark_broken(nic, cq.peer);
                    }
                }
                (Status::Flushed, _) if !stale => self.mark_broken(nic, cq.peer),
                (Status::Flushed, _) => {}
                (Status::PeerUnreachable, OpKind::Reconnect) => {
                    let retry = nic.now().saturating_add(self.cfg.timing.suspect);
                    self.broken.insert(cq.peer, Some(retry));
                }
                (Status::PeerUnreachable, _) => {}
            }
        }
        worked
    }

    fn mark_broken<N: Nic>(&mut self, nic: &mut N, peer: ProcessId) {
        if let std::collections::btree_map::Entry::Vacant(v) = self.broken.entry(peer) {
            v.insert(None);
            self.reconnect(nic, peer);
        }
    }

    /// Posts a reconnect to `peer` and remembers it: failures of earlier ops are stale.
    fn reconnect<N: Nic>(&mut self, nic: &mut N, peer: ProcessId) {
        if let Ok(wr) = nic.reconnect(peer) {
            self.reconnected.insert(peer, wr);
        }
    }

    /// After a reconnect, re-sends to `peer` what the broken queue pair may have flushed.
    fn resync<N: Nic>(&mut self, nic: &mut N, peer: ProcessId) {
        // Acknowledgements of undelivered slots go again by write, those of delivered slots by
        // message (they may be reused at the peer already, see `crate::recovery`): a leader
        // that has not delivered a slot yet may be waiting for this very acknowledgement.
        for c in 0..self.cfg.clients as u32 {
            for i in 0..self.cfg.slots {
                let slot = &self.buffers[c as usize].slots[i];
                let (Some(entry), Some(rnd), s) = (slot.entry.clone(), slot.acked, slot.seq) else {
                    continue;
                };
                match slot.stat {
                    Stat::Mcast | Stat::Ordered => self.send_acks(nic, c, &entry, rnd, Some(peer)),
                    Stat::Done => self.ack_decided(nic, c, s, rnd, Some(peer)),
                    Stat::Empty => {}
                }
            }
        }
        if self.role == Role::Leader {
            if self.cfg.group_of(peer) == Some(self.group) {
                self.repropose_decided(nic, Some(peer));
                // The announcement may have been flushed with the proposals; it goes again
                // after the proposals Task 9 made (`RamcastServer::propose`).
                self.owed.insert(peer);
            } else if self.leader.contains(&peer) {
                // Another group's leader: the proposals go to it again too (below), and so
                // does the announcement after them.
                self.owed.insert(peer);
            }
            self.repropose_pending();
        }
    }

    /// Makes every pending slot this leader proposed be proposed again with the same
    /// timestamp, and every forwarded proposal be forwarded again.
    fn repropose_pending(&mut self) {
        let g = self.group.0 as usize;
        let keys: Vec<(u32, u64)> = self.pending.iter().map(|&(_, c, s)| (c, s)).collect();
        for (c, s) in keys {
            let round = self.round;
            let slot = self.slot_mut(c, s).expect("pending");
            for p in slot.ts.iter_mut().flatten() {
                p.forwarded = false;
            }
            if slot.proposed == Some(round) {
                slot.install = slot.ts[g].map(|p| Install::Adopt(p.tmp));
                slot.proposed = None;
            }
            self.to_propose.insert((c, s));
        }
    }

    fn step_down(&mut self, now: Nanos) {
        self.role = Role::Follower;
        self.rescan.new_view();
        self.to_propose.clear();
        self.fast.clear();
        self.owed.clear();
        self.beat_timer.disarm();
        self.omega.expect(self.rank, now, None);
    }

    /// Control messages from other servers.
    pub(crate) fn drain_receives<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        while let Some(r) = nic.poll_recv() {
            worked = true;
            if let Recv::Message { from, data } = r {
                if self.cfg.group_of(from).is_none() {
                    continue;
                }
                // A malformed message is dropped: it cannot come from a correct server.
                if let Ok(w) = Wire::decode(&data) {
                    self.on_wire(nic, from, w);
                }
            }
        }
        self.answer_catch_ups(nic);
        worked
    }

    pub(crate) fn on_wire<N: Nic>(&mut self, nic: &mut N, from: ProcessId, w: Wire) {
        match w {
            Wire::CatchUp { round, fus } => self.on_catch_up(nic, from, Stamp(round), &fus),
            Wire::MyState {
                round,
                pend,
                last,
                completed,
            } => self.on_my_state(nic, from, Stamp(round), pend, last, Stamp(completed)),
            Wire::Complete { round } => {
                // Only the round's own leader announces it (a round's pid is its leader's).
                let round = Stamp(round);
                if round.pid() == from.0 {
                    if self.cfg.group_of(from) == Some(self.group) {
                        self.completed = self.completed.max(round);
                    }
                    // Every proposal Task 9 made landed before this (one queue pair): the
                    // sweep acknowledges those of slots delivered here (own group) or, as
                    // leader, forwards them to the followers (another group), all of them now.
                    self.sweep_all = true;
                }
            }
            Wire::Nack { round } => {
                if let Role::Candidate(cand) = &self.role {
                    if Stamp(round) >= cand.round {
                        self.step_down(nic.now());
                    }
                }
            }
            Wire::Relay { client, seq, entry } => self.on_relay(nic, client, seq, entry),
            Wire::Catch { items } => self.on_catch(nic, items),
        }
    }

    /// The failure detector, heartbeats, Task 7 on suspicion, Task 10's relays and reconnect
    /// retries. Returns whether it worked and its next deadline.
    pub(crate) fn failure_detector<N: Nic>(&mut self, nic: &mut N) -> (bool, Option<Nanos>) {
        let now = nic.now();
        let timing = self.cfg.timing;
        let mut worked = false;
        let mut wake: Option<Nanos> = None;
        let mut at = |t: Nanos| wake = Some(wake.map_or(t, |w: Nanos| w.min(t)));
        let retries: Vec<ProcessId> = self
            .broken
            .iter()
            .filter(|(_, t)| t.is_some_and(|t| now >= t))
            .map(|(&p, _)| p)
            .collect();
        for p in retries {
            self.broken.insert(p, None);
            self.reconnect(nic, p);
        }
        for t in self.broken.values().flatten() {
            at(*t);
        }
        if self.role == Role::Follower {
            let beat_of = |rank: usize| {
                nic.load_u64(local(CTL, self.layout.heartbeat(rank)))
                    .expect("own region")
            };
            let beat = beat_of(self.omega.expected());
            if self.omega.observe(beat, now, timing.suspect, beat_of) {
                worked = true;
                if self.omega.expected() == self.rank {
                    self.start_candidacy(nic);
                }
            }
            at(self.omega.deadline(timing.suspect));
        }
        if self.role != Role::Follower {
            worked |= self.beat_if_due(nic);
            at(self.beat_timer.deadline().expect("armed"));
        }
        let (relayed, next) = self.relay_stale(nic, now);
        if let Some(t) = next {
            at(t);
        }
        (worked || relayed, wake)
    }

    /// As leader or candidate, writes the heartbeat counter into the followers' `CTL` when it is
    /// due; returns whether it did. Called at the start of a poll and between the slots of the
    /// long loops, so a poll that posts for longer than `timing.suspect` (hundreds of messages
    /// under load) still beats on time, as the prototype's heartbeat thread would.
    pub(crate) fn beat_if_due<N: Nic>(&mut self, nic: &mut N) -> bool {
        if self.role == Role::Follower {
            return false;
        }
        let now = nic.now();
        if self.beat_timer.deadline().is_some() && !self.beat_timer.fire(now) {
            return false;
        }
        self.beat += 1;
        let word = self.beat.to_le_bytes();
        let members: Vec<_> = self
            .cfg
            .members(self.group)
            .filter(|&q| q != self.me)
            .collect();
        // On the control queue pair: a heartbeat queued behind a backlog of message copies
        // would look like a dead leader under load.
        for q in members {
            self.write_on(
                nic,
                remote(q, CTL, self.layout.heartbeat(self.rank)),
                &word,
                false,
                Qp::Control,
            );
        }
        self.beat_timer
            .arm_at(now.saturating_add(self.cfg.timing.heartbeat));
        true
    }

    /// Task 7: become a candidate with a round above every round seen for the group, and ask
    /// every server for its state from this server's first undecided slot on.
    fn start_candidacy<N: Nic>(&mut self, nic: &mut N) {
        let g = self.group.0 as usize;
        let round = Stamp::new(self.rounds[g].time().max(self.round.time()) + 1, self.me.0);
        self.round = round;
        self.role = Role::Candidate(Candidacy {
            round,
            completed: Stamp::ZERO,
            replies: BTreeMap::new(),
        });
        self.rescan.new_view();
        self.beat_timer.disarm();
        let fus: Vec<u64> = (0..self.cfg.clients as u32)
            .map(|c| {
                let mut s = self.buffers[c as usize].ldm;
                while self
                    .slot(c, s)
                    .is_some_and(|x| matches!(x.stat, Stat::Ordered | Stat::Done))
                {
                    s += 1;
                }
                s
            })
            .collect();
        let msg = Wire::CatchUp {
            round: round.0,
            fus,
        };
        for q in 0..self.cfg.servers() as u32 {
            self.send(nic, ProcessId(q), &msg);
        }
    }

    /// Task 8: accept a higher round from `q` and move `T`'s write permission from the group's
    /// previous leader to `q`; the report of every slot `q` may need goes once every message
    /// already received is handled (`RamcastServer::answer_catch_ups`).
    fn on_catch_up<N: Nic>(&mut self, nic: &mut N, q: ProcessId, round: Stamp, fus: &[u64]) {
        let h = self.cfg.group_of(q).expect("servers only");
        let hi = h.0 as usize;
        if round <= self.rounds[hi] || fus.len() != self.cfg.clients {
            let nack = Wire::Nack {
                round: self.rounds[hi].0,
            };
            self.send(nic, q, &nack);
            return;
        }
        let old = self.leader[hi];
        if old != q {
            if old != self.me {
                nic.set_access(T, old, Access::None).expect("valid region");
            }
            if q != self.me {
                nic.set_access(T, q, Access::Write).expect("valid region");
            }
        }
        self.rounds[hi] = round;
        self.leader[hi] = q;
        self.rescan.new_view();
        if h == self.group && q != self.me {
            if self.role != Role::Follower {
                self.step_down(nic.now());
            }
            self.omega.expect(self.cfg.rank_of(q), nic.now(), None);
        }
        if h != self.group && self.role == Role::Leader {
            // The new leader of h has not seen this leader's earlier proposals.
            self.repropose_pending();
            self.hand_over_decided(nic, q, h);
        }
        self.answer.push((q, round, fus.to_vec()));
    }

    /// Task 8's MY_STATE replies to the rounds accepted in this poll. They are built after the
    /// whole receive queue was handled, from memory read after that: any proposal in `T` landed
    /// before the permission moved, so a completion announcement posted before it by the same
    /// leader was received, and handled, before the reply reads `completed` (see "Completed
    /// rounds" in the crate docs).
    fn answer_catch_ups<N: Nic>(&mut self, nic: &mut N) {
        if self.answer.is_empty() {
            return;
        }
        self.refresh_window(nic);
        for (q, round, fus) in std::mem::take(&mut self.answer) {
            self.answer_catch_up(nic, q, round, &fus);
        }
    }

    fn answer_catch_up<N: Nic>(&mut self, nic: &mut N, q: ProcessId, round: Stamp, fus: &[u64]) {
        let h = self.cfg.group_of(q).expect("servers only");
        let completed = self.completed.0;
        let mut pend = Vec::new();
        for c in 0..self.cfg.clients as u32 {
            for slot in &self.buffers[c as usize].slots {
                let Some(entry) = slot.entry.as_ref().filter(|_| slot.stat != Stat::Empty) else {
                    continue;
                };
                let wanted = if h == self.group {
                    slot.seq >= fus[c as usize]
                } else {
                    entry.ptr(h).is_some_and(|p| p >= fus[c as usize])
                };
                if wanted {
                    pend.push(Pend {
                        client: c,
                        seq: slot.seq,
                        entry: entry.raw.to_vec(),
                        ts: slot.ts[self.group.0 as usize].map(|p| (p.tmp.0, p.rnd.0)),
                    });
                }
            }
        }
        // Split the reply so no part exceeds the largest two-sided message.
        let parts = crate::wire::parts(pend, nic.limits().send_max);
        let n = parts.len();
        for (i, pend) in parts.into_iter().enumerate() {
            let msg = Wire::MyState {
                round: round.0,
                pend,
                last: i + 1 == n,
                completed,
            };
            self.send(nic, q, &msg);
        }
    }

    /// Collects `MY_STATE` replies; with a quorum of every group (its own reply included),
    /// runs Task 9.
    fn on_my_state<N: Nic>(
        &mut self,
        nic: &mut N,
        from: ProcessId,
        round: Stamp,
        pend: Vec<Pend>,
        last: bool,
        completed: Stamp,
    ) {
        let Role::Candidate(cand) = &mut self.role else {
            return;
        };
        if cand.round != round {
            return;
        }
        if self.cfg.group_of(from) == Some(self.group) {
            cand.completed = cand.completed.max(completed);
        }
        let reply = cand.replies.entry(from).or_default();
        reply.0.extend(pend);
        reply.1 |= last;
        let complete = |p: &ProcessId| cand.replies.get(p).is_some_and(|r| r.1);
        let mine = complete(&self.me);
        let every_group = (0..self.cfg.groups).all(|h| {
            self.cfg
                .members(GroupId(h as u8))
                .filter(|p| complete(p))
                .count()
                >= self.cfg.quorum()
        });
        if mine && every_group {
            self.finish_candidacy(nic);
        }
    }

    /// Task 9: adopt, per slot, the proposal of the highest round among the replies of the own
    /// group if that round is at least the highest completed round any of them knows, else
    /// let Task 2 pick a fresh timestamp (see "Completed rounds" in the crate docs); take other
    /// groups' proposals to forward; then lead.
    fn finish_candidacy<N: Nic>(&mut self, nic: &mut N) {
        let Role::Candidate(cand) = std::mem::replace(&mut self.role, Role::Leader) else {
            return;
        };
        self.rescan.new_view();
        let g = self.group;
        let known = cand.completed.max(self.completed);
        // Per (group, client, seq in this group): the highest-round proposal and the entry.
        let mut bag: BTreeMap<(u8, u32, u64), Adopted> = BTreeMap::new();
        for (p, (pend, _)) in cand.replies {
            let h = self.cfg.group_of(p).expect("servers only");
            for e in pend {
                let Some(entry) = Entry::decode(Bytes::from(e.entry.clone())) else {
                    continue;
                };
                let Some(seq) = entry.ptr(g) else {
                    continue;
                };
                let ts = e.ts.map(|(t, r)| (Stamp(t), Stamp(r)));
                if let Some((t, _)) = ts {
                    self.see(t);
                }
                let slot = bag.entry((h.0, e.client, seq)).or_insert((None, e.entry));
                if ts.is_some_and(|(_, r)| slot.0.is_none_or(|(_, best)| r > best)) {
                    slot.0 = ts;
                }
            }
        }
        for ((h, c, s), (ts, raw)) in bag {
            if self.slot(c, s).is_none() && self.fits(c, s) {
                let entry = Entry::decode(Bytes::from(raw)).expect("decoded above");
                self.store(nic, c, s, entry);
            }
            let Some(slot) = self.slot_mut(c, s) else {
                continue;
            };
            if h == g.0 {
                // A proposal older than a completed round was seen by no quorum of that round
                // (it would have been proposed again in it): it cannot have been chosen, and
                // adopting it could order the message below one that round delivered.
                slot.install = Some(match ts {
                    Some((t, r)) if r >= known => Install::Adopt(t),
                    _ => Install::Fresh,
                });
                slot.proposed = None;
                self.to_propose.insert((c, s));
            } else if let Some((tmp, rnd)) = ts {
                let cur = &mut slot.ts[h as usize];
                if cur.is_none_or(|p| rnd > p.rnd) {
                    *cur = Some(Prop {
                        tmp,
                        rnd,
                        forwarded: false,
                    });
                }
            }
        }
        // Every pending slot is proposed (again) in the new round and forwarded again.
        let keys: Vec<(u32, u64)> = self.pending.iter().map(|&(_, c, s)| (c, s)).collect();
        for (c, s) in keys {
            let slot = self.slot_mut(c, s).expect("pending");
            for p in slot.ts.iter_mut().flatten() {
                p.forwarded = false;
            }
            self.to_propose.insert((c, s));
        }
        self.beat_timer.disarm();
        // Every timestamp Task 9 proposes is at most the clock now; fresh ones are above it.
        self.boundary = Stamp::new(self.clock, 0xffff);
        // The followers, and the other groups' leaders, which Task 9 proposes to as well:
        // one of them may have delivered a slot this leader proposes again, and forwards a
        // delivered slot's proposals to its followers only when it sweeps it (see
        // `crate::recovery`).
        self.owed = self.cfg.members(g).filter(|&q| q != self.me).collect();
        self.owed.extend(
            (0..self.cfg.groups)
                .filter(|&h| h != g.0 as usize)
                .map(|h| self.leader[h]),
        );
        self.repropose_decided(nic, None);
    }

    /// Whether this leader still owes followers the announcement that its round is complete.
    pub(crate) fn announcement_due(&self) -> bool {
        self.role == Role::Leader && (self.completed < self.round || !self.owed.is_empty())
    }

    /// Announces this leader's round complete to the followers and other groups' leaders owed
    /// it, after the catch-up messages queued so far (they carry Task 9's proposals for
    /// delivered slots), and behind every proposal posted so far on the same queue pair.
    pub(crate) fn announce<N: Nic>(&mut self, nic: &mut N) {
        self.flush_catch(nic);
        let msg = Wire::Complete {
            round: self.round.0,
        }
        .encode();
        for q in std::mem::take(&mut self.owed) {
            // Not kept for re-sending after a reconnect: `resync` owes the peer a new one, to
            // go after the proposals it re-sends.
            match nic.send(q, &msg, false) {
                Ok(_) | Err(OpError::Crashed) => {}
                Err(e) => panic!("{}: send to {q} rejected: {e}", self.me),
            }
        }
        self.completed = self.completed.max(self.round);
    }

    /// Task 10, sending side: an entry undecided for `timing.relay` (doubled by each relay of
    /// it) may come from a crashed client that did not write it everywhere; relay it to every
    /// destination.
    fn relay_stale<N: Nic>(&mut self, nic: &mut N, now: Nanos) -> (bool, Option<Nanos>) {
        let mut worked = false;
        // The slots already due, from the deadline heap; the first live deadline not yet due
        // is the next one.
        let mut due_now: Vec<(Stamp, u32, u64)> = Vec::new();
        let mut next = None;
        while let Some(&Reverse((due, c, s))) = self.relay_due.peek() {
            let live = self
                .slot(c, s)
                .filter(|x| x.stat == Stat::Mcast && x.relay_at == due);
            match live {
                None => {}
                Some(_) if now < due => {
                    next = Some(due);
                    break;
                }
                Some(slot) => due_now.push((slot.tmp, c, s)),
            }
            self.relay_due.pop();
        }
        // Relayed in `pending`'s order, as a scan of every pending slot would.
        due_now.sort_unstable();
        due_now.dedup();
        debug_assert_eq!(
            (due_now.clone(), next),
            self.relay_scan(now),
            "the deadline heap disagrees with a scan of every pending slot"
        );
        for (_, c, s) in due_now {
            let slot = self.slot(c, s).expect("pending");
            let due = slot.relay_at;
            if now < due {
                next = Some(next.map_or(due, |n: Nanos| n.min(due)));
                continue;
            }
            let entry = slot.entry.clone().expect("pending");
            self.slot_mut(c, s).expect("pending").relays += 1;
            let due = self.arm_relay(c, s, now);
            self.relayed += 1;
            next = Some(next.map_or(due, |n| n.min(due)));
            for (h, &ptr) in entry.dst.groups().zip(&entry.ptr) {
                let msg = Wire::Relay {
                    client: c,
                    seq: ptr,
                    entry: entry.raw.to_vec(),
                };
                let members: Vec<_> = self.cfg.members(h).filter(|&q| q != self.me).collect();
                for q in members {
                    self.send(nic, q, &msg);
                }
            }
            worked = true;
        }
        (worked, next)
    }

    /// Starts Task 10's timer of client `c`'s slot `s` at `now`, for its next relay: its
    /// `relay_at`, and the deadline `relay_stale` finds on its heap (the one place either is
    /// set). Returns the deadline.
    pub(crate) fn arm_relay(&mut self, c: u32, s: u64, now: Nanos) -> Nanos {
        let relays = self.slot(c, s).expect("held").relays;
        let timeout = self.cfg.timing.relay.as_nanos() << relays.min(MAX_RELAY_BACKOFF);
        let due = now.saturating_add(Nanos(timeout));
        self.slot_mut(c, s).expect("held").relay_at = due;
        self.relay_due.push(Reverse((due, c, s)));
        due
    }

    /// What `relay_stale` finds by scanning every pending slot: the due slots in `pending`'s
    /// order and the earliest deadline not yet due (the definition the heap must agree with).
    fn relay_scan(&self, now: Nanos) -> (Vec<(Stamp, u32, u64)>, Option<Nanos>) {
        let mut next: Option<Nanos> = None;
        let mut due_now = Vec::new();
        for &(key, c, s) in &self.pending {
            let slot = self.slot(c, s).expect("pending");
            if slot.stat != Stat::Mcast {
                continue;
            }
            let due = slot.relay_at;
            if now < due {
                next = Some(next.map_or(due, |n: Nanos| n.min(due)));
            } else {
                due_now.push((key, c, s));
            }
        }
        (due_now, next)
    }

    /// Task 10, receiving side: store a relayed entry as if its client had written it.
    fn on_relay<N: Nic>(&mut self, nic: &mut N, c: u32, s: u64, raw: Vec<u8>) {
        if c as usize >= self.cfg.clients || !self.fits(c, s) {
            return;
        }
        let Some(entry) = Entry::decode(Bytes::from(raw)) else {
            return;
        };
        if entry.ptr(self.group) == Some(s) && entry.raw.len() <= self.layout.m_codec.capacity() {
            self.store(nic, c, s, entry);
        }
    }
}

#[cfg(test)]
mod tests;
