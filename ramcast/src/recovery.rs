//! Catching up a member that missed proposals or acknowledgements while leadership moved.
//!
//! A slot a server already delivered may already hold a later message at other processes: once
//! every destination delivered a message, its client reuses the slots. One-sided writes about a
//! delivered slot could therefore overwrite a newer message's entry, proposal or
//! acknowledgement. Everything said about delivered slots travels instead as a two-sided
//! [`Wire::Catch`] message, and the receiver applies it only to a slot that still holds that
//! message. (Writes about undelivered slots are safe: the writer has not delivered the message,
//! so its client cannot have reused the slot anywhere.)
//!
//! Two situations need it:
//! - a new leader, or a leader that reconnected to a follower, proposes again in its round
//!   every slot it delivered, with the chosen timestamp (`RamcastServer::repropose_decided`),
//!   along with the other groups' proposals it holds, so a member that missed the earlier round
//!   can order the slot with the new round's acknowledgements;
//! - every member acknowledges such a proposal even for a slot it delivered.
//!
//! A new leader's Task 9 also proposes by write the slots it has not delivered, and a follower
//! may have delivered one of them in an earlier round: `RamcastServer::sweep_delivered`
//! acknowledges it, a few slots per poll, and over the whole window on the poll that receives
//! the leader's announcement that its round is complete (which follows those proposals on the
//! same queue pair). Without that pass a parked follower came round to the slot one heartbeat
//! per four slots, milliseconds while the new leader waited for a quorum.
//!
//! The same goes for the leaders of the other destination groups, to which Task 9 proposes by
//! write too: one that delivered the slot forwards the new round's proposal to its followers
//! (Task 4 for a delivered slot, `forward_decided`) only when the sweep comes round to it, and
//! a follower that missed the crashed leader's acknowledgements cannot order the message
//! without that proposal. The new leader announces its round complete to them as well, and
//! they sweep the whole window on receiving it (harness seed 1388 of `check --protocol heron`:
//! group 1's followers waited 6.8 ms for their leader to forward group 0's new proposal).
//!
//! An item can also arrive before its slot's entry: a member paused while leadership moved
//! wakes to the new leaders' acknowledgements, sent once, and the entry (from the client's
//! write, or from its own group's leader's catch-up) may land or be read only after. Such an
//! item is kept (`RamcastServer::early`, merged per slot) and applied once the entry is taken.
//! Only slots of the receiver's window are kept: a correct member that has not delivered `s`
//! holds no message newer than `s`'s lap, so the item cannot be about a superseded slot, and the
//! stash holds at most one item per slot of the window. Dropping it instead loses the only
//! acknowledgement of the new round that member will get (seed 3490: a follower paused through
//! every leader change waited forever one acknowledgement short of a quorum).

use crate::layout::{ack_word, local, Entry, M};
use crate::server::{Prop, RamcastServer, Role, Stat};
use crate::stamp::Stamp;
use crate::wire::{CatchItem, Wire};
use multicast::GroupId;
use multicast::Membership;
use transport::{Nic, ProcessId, Work};

impl RamcastServer {
    /// Queues `item` for `to`; `RamcastServer::flush_catch` sends the batch.
    fn catch_to<N: Nic>(&mut self, nic: &mut N, to: ProcessId, item: CatchItem) {
        if to == self.me {
            self.on_catch(nic, vec![item]);
        } else {
            self.outbox.entry(to).or_default().push(item);
        }
    }

    /// Sends the queued catch-up items to each peer, in as few messages as fit (an
    /// item can carry a whole entry).
    pub(crate) fn flush_catch<N: Nic>(&mut self, nic: &mut N) -> bool {
        if self.outbox.is_empty() {
            return false;
        }
        let send_max = nic.limits().send_max;
        for (to, items) in std::mem::take(&mut self.outbox) {
            for items in crate::wire::parts(items, send_max) {
                self.send(nic, to, &Wire::Catch { items });
            }
        }
        true
    }

    /// This server's acknowledgement of round `rnd` for a delivered slot, to every destination
    /// process (or only to `only`).
    pub(crate) fn ack_decided<N: Nic>(
        &mut self,
        nic: &mut N,
        c: u32,
        s: u64,
        rnd: Stamp,
        only: Option<ProcessId>,
    ) {
        let Some(entry) = self.slot(c, s).and_then(|x| x.entry.clone()) else {
            return;
        };
        self.slot_mut(c, s).expect("held").acked = Some(rnd);
        let ack = (self.group.0, self.rank as u8, rnd.0);
        for (h, &ptr) in entry.dst.groups().zip(&entry.ptr) {
            let members: Vec<ProcessId> = self.cfg.members(h).collect();
            for q in members.into_iter().filter(|&q| only.is_none_or(|o| o == q)) {
                let item = CatchItem {
                    acks: vec![ack],
                    ..CatchItem::about(c, ptr)
                };
                self.catch_to(nic, q, item);
            }
        }
    }

    /// As leader: proposes again, in this round, every delivered slot of the window with its
    /// chosen timestamp (a chosen value is what Paxos proposes in every later round anyway),
    /// and hands the followers the other groups' proposals held.
    pub(crate) fn repropose_decided<N: Nic>(&mut self, nic: &mut N, only: Option<ProcessId>) {
        let g = self.group;
        let round = self.round;
        for c in 0..self.cfg.clients as u32 {
            for i in 0..self.cfg.slots {
                let slot = &self.buffers[c as usize].slots[i];
                if slot.stat != Stat::Done {
                    continue;
                }
                let (s, Some(own), Some(entry)) =
                    (slot.seq, slot.ts[g.0 as usize], slot.entry.clone())
                else {
                    continue;
                };
                let mut props = vec![(g.0, own.tmp.0, round.0)];
                for h in entry.dst.groups().filter(|&h| h != g) {
                    if let Some(p) = slot.ts[h.0 as usize] {
                        props.push((h.0, p.tmp.0, p.rnd.0));
                    }
                }
                self.slot_mut(c, s).expect("held").ts[g.0 as usize] = Some(Prop {
                    tmp: own.tmp,
                    rnd: round,
                    forwarded: false,
                });
                let followers: Vec<ProcessId> = self
                    .cfg
                    .members(g)
                    .filter(|&q| q != self.me && only.is_none_or(|o| o == q))
                    .collect();
                // The entry goes along: the leader's copy to a follower may have been flushed by
                // a broken queue pair, and the client may have crashed mid-multicast.
                for q in followers {
                    let item = CatchItem {
                        props: props.clone(),
                        entry: entry.raw.to_vec(),
                        ..CatchItem::about(c, s)
                    };
                    self.catch_to(nic, q, item);
                }
                if only.is_none() {
                    for (h, &ptr) in entry.dst.groups().zip(&entry.ptr).filter(|(h, _)| *h != g) {
                        let item = CatchItem {
                            props: vec![(g.0, own.tmp.0, round.0)],
                            ..CatchItem::about(c, ptr)
                        };
                        let l = self.leader[h.0 as usize];
                        self.catch_to(nic, l, item);
                    }
                }
                if self.slot(c, s).expect("held").acked != Some(round) {
                    self.ack_decided(nic, c, s, round, None);
                }
            }
        }
    }

    /// Task 3 for delivered slots whose `T` received a proposal of the current round by write.
    /// Such a write comes from a leader that has not delivered the slot, so no process has
    /// reused it and acknowledging by write is safe. As leader, also Task 4 for them: other
    /// groups' proposals are forwarded to the followers (by message). Checks a few slots per
    /// poll, round-robin over the window, so the cost per poll stays constant; and the whole
    /// window once after a group's new leader (this server's own, or, for a leader, another
    /// group's) announced its round complete (`sweep_all`).
    ///
    /// Why the whole window then: a poll that finds nothing to do parks the server until
    /// something lands, and a follower with nothing pending is polled about once per heartbeat,
    /// so a few slots per poll take `clients * slots / 4` heartbeats to reach a slot (20 ms for
    /// 4 clients and 1024 slots). A new leader's Task 9 proposal for a slot this follower
    /// already delivered (in an earlier round, with acknowledgements the new leader never got)
    /// needs this follower's acknowledgement to make a quorum of the new round; meanwhile the
    /// new leader holds the message, and every message behind it, undelivered (harness seed
    /// 299 of `check --protocol heron`). The announcement follows every Task 9 proposal on the
    /// same queue pair, so one pass once it arrives finds them all.
    pub(crate) fn sweep_delivered<N: Nic>(&mut self, nic: &mut N) -> bool {
        const PER_POLL: usize = 4;
        let total = self.cfg.clients * self.cfg.slots;
        let visits = if std::mem::take(&mut self.sweep_all) {
            total
        } else {
            PER_POLL.min(total)
        };
        nic.work(Work::Scan, visits as u64);
        self.observe_changes(nic);
        let mut worked = false;
        for _ in 0..visits {
            // The next slot of the window, client by client, going round.
            let (c, i) = &mut self.sweep;
            *i += 1;
            if *i == self.cfg.slots {
                *i = 0;
                *c = (*c + 1) % self.cfg.clients;
            }
            let (c, i) = (*c as u32, *i);
            let slot = &self.buffers[c as usize].slots[i];
            if slot.stat != Stat::Done || self.buffers[c as usize].seen[i].sweep == self.mark(c, i)
            {
                continue;
            }
            worked |= self.sweep_slot(nic, c, slot.seq);
            self.buffers[c as usize].seen[i].sweep = self.mark(c, i);
        }
        worked
    }

    /// [`Self::sweep_delivered`] for client `c`'s delivered slot `s`.
    fn sweep_slot<N: Nic>(&mut self, nic: &mut N, c: u32, s: u64) -> bool {
        let g = self.group;
        let acked = self.slot(c, s).expect("held").acked;
        let Some((_, rnd)) = self.read_t(nic, c, s, g) else {
            return false;
        };
        let ack = rnd == self.rounds[g.0 as usize] && acked != Some(rnd);
        let leader = self.role == Role::Leader;
        if ack || leader {
            self.refresh_ts(nic, c, s);
        }
        if ack {
            let slot = self.slot_mut(c, s).expect("held");
            slot.acked = Some(rnd);
            let entry = slot.entry.clone().expect("held");
            self.send_acks(nic, c, &entry, rnd, None);
        }
        if leader {
            self.forward_decided(nic, c, s);
        }
        ack
    }

    /// As leader, hands the new leader `q` of group `h` this group's proposals for the
    /// delivered slots addressed to `h` (pending ones are proposed again by write).
    pub(crate) fn hand_over_decided<N: Nic>(&mut self, nic: &mut N, q: ProcessId, h: GroupId) {
        let g = self.group;
        for c in 0..self.cfg.clients as u32 {
            for i in 0..self.cfg.slots {
                let slot = &self.buffers[c as usize].slots[i];
                if slot.stat != Stat::Done {
                    continue;
                }
                let (Some(own), Some(ptr)) = (
                    slot.ts[g.0 as usize],
                    slot.entry.as_ref().and_then(|e| e.ptr(h)),
                ) else {
                    continue;
                };
                let item = CatchItem {
                    props: vec![(g.0, own.tmp.0, own.rnd.0)],
                    ..CatchItem::about(c, ptr)
                };
                self.catch_to(nic, q, item);
            }
        }
    }

    /// Applies catch-up items to the slots that still hold their messages.
    pub(crate) fn on_catch<N: Nic>(&mut self, nic: &mut N, items: Vec<CatchItem>) {
        let g = self.group;
        for item in items {
            let (c, s) = (item.client, item.seq);
            if c as usize >= self.cfg.clients {
                continue;
            }
            if self.slot(c, s).is_none() && !item.entry.is_empty() && self.fits(c, s) {
                let entry = Entry::decode(bytes::Bytes::from(item.entry));
                if let Some(e) = entry.filter(|e| {
                    e.ptr(g) == Some(s) && e.raw.len() <= self.layout.m_codec.capacity()
                }) {
                    self.store(nic, c, s, e);
                }
            }
            if self.slot(c, s).is_none() {
                if self.fits(c, s) {
                    let held = self.early.entry((c, s)).or_insert(CatchItem::about(c, s));
                    held.acks.extend(item.acks);
                    held.props.extend(item.props);
                }
                continue;
            }
            for (gr, rank, round) in item.acks {
                if (gr as usize) < self.cfg.groups && (rank as usize) < self.cfg.replicas {
                    let at = self.layout.ack(c as usize, s, GroupId(gr), rank as usize);
                    nic.store_u64(local(M, at), ack_word(s, Stamp(round)))
                        .expect("own region");
                }
            }
            for (h, tmp, rnd) in item.props {
                if h as usize >= self.cfg.groups {
                    continue;
                }
                let (tmp, rnd) = (Stamp(tmp), Stamp(rnd));
                self.see(tmp);
                let slot = self.slot_mut(c, s).expect("held");
                let cur = &mut slot.ts[h as usize];
                if cur.is_none_or(|p| rnd > p.rnd) {
                    *cur = Some(Prop {
                        tmp,
                        rnd,
                        forwarded: false,
                    });
                }
            }
            let slot = self.slot(c, s).expect("held");
            if slot.stat == Stat::Done {
                // Acknowledge a new round's proposal of a delivered slot (pending slots are
                // acknowledged by Task 3), and, as leader, pass other groups' on.
                if let Some(p) = slot.ts[g.0 as usize] {
                    if p.rnd == self.rounds[g.0 as usize] && slot.acked != Some(p.rnd) {
                        self.ack_decided(nic, c, s, p.rnd, None);
                    }
                }
                if self.role == Role::Leader {
                    self.forward_decided(nic, c, s);
                }
            }
        }
    }

    /// Applies the kept items ([`RamcastServer::early`]) whose entries this server has taken
    /// since, and forgets those whose slot left the window.
    pub(crate) fn apply_early<N: Nic>(&mut self, nic: &mut N) -> bool {
        if self.early.is_empty() {
            return false;
        }
        let keys: Vec<(u32, u64)> = self.early.keys().copied().collect();
        let mut ready = Vec::new();
        for (c, s) in keys {
            let held = self.slot(c, s).is_some();
            if held || !self.fits(c, s) {
                let item = self.early.remove(&(c, s)).expect("kept");
                if held {
                    ready.push(item);
                }
            }
        }
        let worked = !ready.is_empty();
        self.on_catch(nic, ready);
        worked
    }

    /// Task 4 for a delivered slot, by message.
    fn forward_decided<N: Nic>(&mut self, nic: &mut N, c: u32, s: u64) {
        let g = self.group;
        let Some(entry) = self.slot(c, s).and_then(|x| x.entry.clone()) else {
            return;
        };
        let mut props = Vec::new();
        for h in entry.dst.groups().filter(|&h| h != g) {
            let slot = self.slot_mut(c, s).expect("held");
            if let Some(p) = slot.ts[h.0 as usize].as_mut().filter(|p| !p.forwarded) {
                p.forwarded = true;
                props.push((h.0, p.tmp.0, p.rnd.0));
            }
        }
        if props.is_empty() {
            return;
        }
        let followers: Vec<ProcessId> = self.cfg.members(g).filter(|&q| q != self.me).collect();
        for q in followers {
            let item = CatchItem {
                props: props.clone(),
                ..CatchItem::about(c, s)
            };
            self.catch_to(nic, q, item);
        }
    }
}

#[cfg(test)]
mod tests;
