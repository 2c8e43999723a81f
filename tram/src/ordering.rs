//! Ordering within a group: the leader's Steps 2.2-2.5, the followers' Step 2.6, and the
//! circular buffers' reuse rules.
//!
//! The leader orders one message at a time, as Algorithm 2 does: it writes log entry `FUO` to
//! every replica that granted it permission (awaiting the completions collectively, section 3)
//! and moves on once f+1 replicas (itself included) hold it. Writes to a follower go in log
//! order on one queue pair (see [`crate::replica`], "streams").
//!
//! Buffer reuse, with every position and log index carried in its slot's `seq`:
//!
//! - **`HM` of a child.** The leader forwards a message into position `p` of a child's buffer
//!   only if `p < credit + hm_slots`, where `credit` is the number of positions the child has
//!   *decided* (the child's leader writes it into this group's `CTL`). A decided position is
//!   never read again by any leader of the child, so its slot may be reused. When the child is
//!   behind, the leader takes no message that must go there: backpressure up the tree and, in
//!   the end, to clients, who wait for their response.
//! - **`HM` of a client.** See [`crate::client`].
//! - **`LOG`.** Log index `i` reuses the slot of `i - log_slots`, which the leader allows once
//!   (a) every member reported delivering it (`progress`), and (b) its message reached every
//!   child it was forwarded to (the child's credit passed its position), so no later leader
//!   needs it to re-forward. A member that has been behind the group (the group decided an
//!   entry it has not delivered) with its report unmoved for `timing.evict` is no longer
//!   waited for (a crashed member must not stop its group); an up-to-date member never is.
//!   Should an evicted member be alive, it finds a later lap in its log and halts
//!   ([`multicast::Server::halted`]), the same rule as RamCast's recycling. Keep `evict` above
//!   any pause a live replica takes; the sweeps draw it short in a third of runs and judge the
//!   halts.

use crate::election::perm_answer;
use crate::layout::{local, remote, Hm, LogEntry, Out, CTL, FROM_PARENT, LOG};
use crate::replica::{hm_at, Role, TramServer};
use multicast::Membership;
use transport::{Nanos, Nic, ProcessId, Work};

/// Entries written to one follower per poll at most (catching up a follower must not starve
/// the rest of the loop).
const PUMP_BUDGET: usize = 64;

/// The log entry being ordered (Step 2.3 or 4.3).
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) index: u64,
    pub(crate) entry: LogEntry,
    /// Per rank: holds the entry (the leader itself from the start).
    acked: Vec<bool>,
    /// Recovered by Algorithm 4 (re-forwarded by Algorithm 5, not here).
    pub(crate) recovered: bool,
}

/// A leader's state.
#[derive(Debug)]
pub(crate) struct Lead {
    /// The timestamp this reign holds permissions with.
    pub(crate) ts: u64,
    /// Per rank: granted permission to this reign and its stream is intact.
    pub(crate) granted: Vec<bool>,
    /// Per rank: its stream failed in this reign (it revoked this leader or crashed); its
    /// grant is not taken again.
    pub(crate) dropped: Vec<bool>,
    /// Per rank: the next log index to write to it.
    next: Vec<u64>,
    /// Per rank: the `STD` it last reported, and since when unchanged.
    progress: Vec<(u64, Nanos)>,
    /// Per rank: since when its report has been below `FUO` (the group decided entries it has
    /// not delivered), if it is.
    behind_since: Vec<Option<Nanos>>,
    /// Per rank: no longer waited for when recycling log slots.
    evicted: Vec<bool>,
    pub(crate) pending: Option<Pending>,
    commit_sent: Vec<u64>,
    /// Round-robin start among the sources (Step 2.2).
    rr: usize,
    credit_published: Option<u64>,
    /// `Some` while Algorithm 4 runs: the ranks whose log copies are in `SCRATCH`.
    pub(crate) catchup: Option<Vec<usize>>,
}

impl Lead {
    /// A reign with timestamp `ts`, the answers of Algorithm 3 and the log copies of Step 4.1.
    pub(crate) fn new(
        s: &mut TramServer,
        ts: u64,
        answers: &[Option<(bool, u64)>],
        copies: Vec<usize>,
        now: Nanos,
    ) -> Lead {
        let n = s.cfg.replicas;
        // Algorithm 4 starts at the first entry this replica has not delivered: every entry
        // below it is decided and in its log.
        s.fuo = s.std;
        let granted: Vec<bool> = (0..n).map(|r| answers[r].is_some_and(|a| a.0)).collect();
        let reported = |r: usize| answers[r].filter(|a| a.0).map_or(0, |a| a.1);
        Lead {
            ts,
            next: (0..n).map(reported).collect(),
            progress: (0..n).map(|r| (reported(r), now)).collect(),
            granted,
            evicted: vec![false; n],
            behind_since: vec![None; n],
            dropped: vec![false; n],
            pending: None,
            commit_sent: vec![0; n],
            rr: 0,
            credit_published: None,
            catchup: Some(copies),
        }
    }
}

impl TramServer {
    fn lead_mut(&mut self) -> &mut Lead {
        match &mut self.role {
            Role::Leader(l) => l,
            _ => unreachable!("called while leading"),
        }
    }

    fn lead_ref(&self) -> &Lead {
        match &self.role {
            Role::Leader(l) => l,
            _ => unreachable!("called while leading"),
        }
    }

    /// One poll of a leader.
    pub(crate) fn lead<N: Nic>(&mut self, nic: &mut N) -> (bool, Option<Nanos>) {
        let now = nic.now();
        let mut worked = self.late_grants(nic);
        self.refresh_reports(nic, now);
        if let Some(p) = &self.lead_ref().pending {
            let held = p.acked.iter().filter(|a| **a).count();
            if held >= self.cfg.quorum() {
                self.decide(nic);
                worked = true;
            }
        }
        let granted = self.lead_ref().granted.iter().filter(|g| **g).count();
        if granted < self.cfg.quorum() {
            // Step 2.3's else branch: a quorum can no longer hold the entry; the followers that
            // left revoked this leader's permission (or crashed, at most f of them).
            self.give_up(now, true);
            return (true, None);
        }
        let mut wake = None;
        if self.lead_ref().pending.is_none() {
            if self.lead_ref().catchup.is_some() {
                worked |= self.recover_next(nic);
                if !self.is_leader() {
                    // Algorithm 4 found this reign over.
                    return (true, None);
                }
            } else {
                let (w, at) = self.order_next(nic, now);
                worked |= w;
                wake = at;
            }
        }
        worked |= self.pump(nic);
        if self.lead_ref().pending.is_none() {
            worked |= self.send_commits(nic, false);
        }
        worked |= self.publish_credit(nic);
        (worked, wake)
    }

    /// Replicas that grant this reign after it started (they were slow to answer Step 3.2).
    fn late_grants<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        for r in 0..self.cfg.replicas {
            if self.lead_ref().granted[r] || self.lead_ref().dropped[r] {
                continue;
            }
            let ts = self.lead_ref().ts;
            let Some((true, std)) = perm_answer(&self.layout, nic, &mut self.buf, r, ts) else {
                continue;
            };
            let l = self.lead_mut();
            l.granted[r] = true;
            l.next[r] = std;
            l.progress[r].0 = l.progress[r].0.max(std);
            l.commit_sent[r] = 0;
            worked = true;
        }
        worked
    }

    /// Children's credits and members' progress reports from `CTL`.
    fn refresh_reports<N: Nic>(&mut self, nic: &mut N, now: Nanos) {
        for x in 0..self.children.len() {
            for r in 0..self.cfg.replicas {
                let c = nic
                    .load_u64(local(CTL, self.layout.credit(x, r)))
                    .expect("own region");
                self.credit[x] = self.credit[x].max(c);
            }
        }
        let fuo = self.fuo;
        for r in 0..self.cfg.replicas {
            let v = if r == self.rank {
                self.std
            } else {
                nic.load_u64(local(CTL, self.layout.progress(r)))
                    .expect("own region")
            };
            let me = r == self.rank;
            let l = self.lead_mut();
            if v > l.progress[r].0 || me {
                l.progress[r] = (v.max(l.progress[r].0), now);
            }
            // A member is behind once the group decided an entry it has not delivered.
            if l.progress[r].0 >= fuo {
                l.behind_since[r] = None;
            } else if l.behind_since[r].is_none() {
                l.behind_since[r] = Some(now);
            }
        }
    }

    /// Whether log index `i` may be written (its slot's previous entry is no longer needed);
    /// evicts members that have not delivered that entry and whose report has not moved for
    /// `timing.evict` while they were behind the group. A member that is up to date is never
    /// evicted for its silence (it has nothing to report); a crashed one is evicted `evict`
    /// after the group first decided an entry without it, whether or not its slot is needed
    /// yet, so leaders along a tree do not wait for their crashed members one after another.
    /// The second value is when to look again.
    fn can_reuse<N: Nic>(&mut self, nic: &N, i: u64, now: Nanos) -> (bool, Option<Nanos>) {
        let slots = self.layout.log_slots();
        if i < slots {
            return (true, None);
        }
        let old = i - slots;
        let evict = self.cfg.timing.evict;
        let rank = self.rank;
        let l = self.lead_mut();
        for r in 0..l.progress.len() {
            if r == rank || l.evicted[r] || l.progress[r].0 > old {
                continue;
            }
            let since = l.behind_since[r].unwrap_or(now);
            let deadline = l.progress[r].1.max(since).saturating_add(evict);
            if now >= deadline {
                l.evicted[r] = true;
                continue;
            }
            return (false, Some(deadline));
        }
        if let Some(e) = self.own_entry(nic, old) {
            let m = e.msg();
            for (x, o) in e.outs.iter().enumerate() {
                let forwarded = m.dst.bits() & self.cfg.tree.reach(self.children[x]).bits() != 0;
                if forwarded && self.credit[x] <= o.pos {
                    return (false, None);
                }
            }
        }
        (true, None)
    }

    /// Steps 2.2-2.3: find a message in an input buffer and start ordering it at `FUO`.
    fn order_next<N: Nic>(&mut self, nic: &mut N, now: Nanos) -> (bool, Option<Nanos>) {
        let (ok, wake) = self.can_reuse(nic, self.fuo, now);
        if !ok {
            return (false, wake);
        }
        let sources = self.cfg.clients + usize::from(self.parent.is_some());
        let start = self.lead_ref().rr;
        let hm_slots = self.layout.hm_slots();
        for k in 0..sources {
            let y = (start + k) % sources;
            // Step 2.2: HM[y, slot_in[y]].
            let pos = self.slot_in[y];
            nic.work(Work::Scan, 1);
            if !self.hm_message(nic, y, pos) {
                continue;
            }
            nic.work(Work::Decode, 1);
            nic.work(Work::Copy, self.enc.len() as u64);
            let dst = Hm::decode(&self.enc).expect("checked").dst;
            let mut outs = Vec::with_capacity(self.children.len());
            let mut room = true;
            for (x, &child) in self.children.iter().enumerate() {
                let forwarded = dst.bits() & self.cfg.tree.reach(child).bits() != 0;
                if forwarded && self.slot_out[x] >= self.credit[x] + hm_slots {
                    room = false; // backpressure: the child has not consumed enough yet
                }
                outs.push(Out {
                    pos: self.slot_out[x],
                    credit: self.credit[x],
                });
            }
            if !room {
                continue;
            }
            self.slot_in[y] += 1;
            let source = if y == self.parent_source() {
                FROM_PARENT
            } else {
                y as u32
            };
            let entry = LogEntry {
                tmp: self.lead_ref().ts,
                source,
                src_pos: pos,
                outs,
                hm: self.enc.clone(),
            };
            self.lead_mut().rr = y + 1;
            self.propose(nic, entry, false);
            return (true, None);
        }
        (false, None)
    }

    /// Step 2.3 (and 4.3): write entry `FUO` into this replica's log; [`Self::pump`] writes it
    /// to the others.
    pub(crate) fn propose<N: Nic>(&mut self, nic: &mut N, entry: LogEntry, recovered: bool) {
        let index = self.fuo;
        nic.work(Work::Order, 1);
        entry.encode(&mut self.buf);
        self.layout
            .log_codec
            .encode(index as u32, &self.buf, &mut self.enc)
            .expect("a log slot holds an HM slot plus the log fields");
        nic.write_local(local(LOG, self.layout.log_slot(index)), &self.enc)
            .expect("own region");
        let rank = self.rank;
        let n = self.cfg.replicas;
        let l = self.lead_mut();
        let mut acked = vec![false; n];
        acked[rank] = true;
        for r in 0..n {
            // A follower that already holds later entries takes this one again in order.
            l.next[r] = l.next[r].min(index);
        }
        l.pending = Some(Pending {
            index,
            entry,
            acked,
            recovered,
        });
    }

    /// A write of log entry `index` to `rank` completed.
    pub(crate) fn on_log_written(&mut self, rank: usize, index: u64) {
        if let Role::Leader(l) = &mut self.role {
            if let Some(p) = &mut l.pending {
                if p.index == index {
                    p.acked[rank] = true;
                }
            }
        }
    }

    /// Steps 2.4-2.5 (or 4.4): the entry in flight is in a quorum: deliver it, forward it.
    fn decide<N: Nic>(&mut self, nic: &mut N) {
        let p = self.lead_mut().pending.take().expect("pending");
        self.fuo = p.index + 1;
        self.deliver_entry(nic, &p.entry);
        if !p.recovered {
            self.forward(nic, &p.entry, None);
        }
    }

    /// Step 2.5 (and 5.3): write the entry's message into the buffer each child keeps for this
    /// group, for the children whose reach holds a destination (only `only`, if given).
    pub(crate) fn forward<N: Nic>(&mut self, nic: &mut N, e: &LogEntry, only: Option<usize>) {
        let m = e.msg();
        let parent_buffer = self.layout.parent_buffer();
        for (x, o) in e.outs.iter().enumerate() {
            let child = self.children[x];
            if only.is_some_and(|c| c != x) || m.dst.bits() & self.cfg.tree.reach(child).bits() == 0
            {
                continue;
            }
            self.layout
                .hm_codec
                .encode(o.pos as u32, &e.hm, &mut self.enc)
                .expect("the message came from an HM slot of the same size");
            let members: Vec<ProcessId> = self.cfg.members(child).collect();
            let enc = std::mem::take(&mut self.enc);
            for p in members {
                let at = hm_at(&self.layout, p, parent_buffer, o.pos);
                self.post_bytes(nic, at, &enc, false);
            }
            self.enc = enc;
        }
    }

    /// Writes log entries to each granted follower, in index order, up to the one in flight.
    fn pump<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        let (upto, pending) = match &self.lead_ref().pending {
            Some(p) => (p.index + 1, Some(p.index)),
            None => (self.fuo, None),
        };
        for r in 0..self.cfg.replicas {
            if r == self.rank {
                continue;
            }
            let p = self.cfg.server(self.group, r);
            let mut budget = PUMP_BUDGET;
            while budget > 0 {
                let l = self.lead_ref();
                let j = l.next[r];
                if !l.granted[r] || j >= upto || self.broken.contains(&p) {
                    break;
                }
                budget -= 1;
                worked = true;
                let codec = self.layout.log_codec;
                let at = local(LOG, self.layout.log_slot(j));
                let range = codec
                    .read(nic, at, j as u32, &mut self.buf)
                    .expect("own region");
                let Ok(range) = range else {
                    // Entry j is gone from this log: the follower cannot be caught up.
                    let halt = self.layout.halt();
                    self.write_word(nic, p, halt, &1u64.to_le_bytes());
                    let l = self.lead_mut();
                    l.granted[r] = false;
                    l.evicted[r] = true;
                    break;
                };
                let payload = self.buf[range].to_vec();
                codec
                    .encode(j as u32, &payload, &mut self.enc)
                    .expect("it fit before");
                let enc = std::mem::take(&mut self.enc);
                let signaled = pending == Some(j);
                let wr =
                    self.post_bytes(nic, remote(p, LOG, self.layout.log_slot(j)), &enc, signaled);
                self.enc = enc;
                if signaled {
                    if let Some(wr) = wr {
                        self.inflight.insert(wr, (r, j));
                    }
                }
                self.lead_mut().next[r] = j + 1;
            }
        }
        worked
    }

    /// The commit index to followers that hold every decided entry: when idle (`force`: with
    /// each heartbeat), so followers deliver the last entries when traffic stops.
    fn send_commits<N: Nic>(&mut self, nic: &mut N, force: bool) -> bool {
        let fuo = self.fuo;
        if fuo == 0 {
            return false;
        }
        let mut worked = false;
        for r in 0..self.cfg.replicas {
            let l = self.lead_ref();
            if r == self.rank || !l.granted[r] || l.next[r] < fuo {
                continue;
            }
            if !force && l.commit_sent[r] >= fuo {
                continue;
            }
            self.lead_mut().commit_sent[r] = fuo;
            let p = self.cfg.server(self.group, r);
            let at = self.layout.commit(self.rank);
            self.write_word(nic, p, at, &fuo.to_le_bytes());
            worked = true;
        }
        worked
    }

    /// Leader duties on each heartbeat.
    pub(crate) fn on_heartbeat<N: Nic>(&mut self, nic: &mut N) {
        if self.is_leader() {
            self.send_commits(nic, true);
        }
    }

    /// Tells the parent group how many positions of its buffer here are decided (credit).
    pub(crate) fn publish_credit<N: Nic>(&mut self, nic: &mut N) -> bool {
        let Some(parent) = self.parent else {
            return false;
        };
        let c = self.decided_from_parent;
        if self.lead_ref().credit_published == Some(c) {
            return false;
        }
        self.lead_mut().credit_published = Some(c);
        let at = self.layout.credit(self.child_index, self.rank);
        let members: Vec<ProcessId> = self.cfg.members(parent).collect();
        for p in members {
            self.write_word(nic, p, at, &c.to_le_bytes());
        }
        true
    }

    /// An op to `peer` failed: a follower that refused or crashed leaves this reign.
    pub(crate) fn on_peer_failed<N: Nic>(
        &mut self,
        _nic: &mut N,
        peer: ProcessId,
        tagged: Option<(usize, u64)>,
    ) {
        let same_group = self.cfg.group_of(peer) == Some(self.group);
        match &mut self.role {
            Role::Candidate(_) => {
                if let Some((rank, _)) = tagged {
                    self.on_log_read(rank, false);
                }
            }
            Role::Leader(l) if same_group => {
                let r = self.cfg.rank_of(peer);
                l.granted[r] = false;
                l.dropped[r] = true;
            }
            _ => {}
        }
    }

    /// The queue pair to `peer` works again: what it flushed is written again.
    pub(crate) fn on_reconnected(&mut self, peer: ProcessId) {
        self.progress_sent = (None, 0);
        if let Role::Leader(l) = &mut self.role {
            if self.cfg.group_of(peer) == Some(self.group) {
                l.commit_sent[self.cfg.rank_of(peer)] = 0;
            }
            l.credit_published = None;
        }
    }

    /// Step 2.6: deliver log entries that are decided: slot `STD` once slot `STD+1` exists or a
    /// commit index above `STD` arrived.
    pub(crate) fn follow<N: Nic>(&mut self, nic: &mut N) -> bool {
        for r in 0..self.cfg.replicas {
            let c = nic
                .load_u64(local(CTL, self.layout.commit(r)))
                .expect("own region");
            self.commit_seen = self.commit_seen.max(c);
        }
        let mut worked = false;
        loop {
            let i = self.std;
            nic.work(Work::Scan, 1);
            let Some(e) = self.own_entry(nic, i) else {
                if self.lapped(nic, local(LOG, self.layout.log_slot(i)), i) {
                    // A later lap overwrote an entry this replica never delivered: it was
                    // evicted while slow; it cannot catch up and stops.
                    self.halt = Some(format!(
                        "log entry {i}, not yet delivered here, was overwritten by a later lap: this replica was evicted while slow, or a peer wrote what no leader writes"
                    ));
                }
                break;
            };
            let next_exists = self.commit_seen > i || self.own_entry(nic, i + 1).is_some();
            if !next_exists {
                break;
            }
            self.deliver_entry(nic, &e);
            worked = true;
        }
        worked
    }
}
