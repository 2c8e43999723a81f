//! The client: Algorithm 2, Task 1 and procedure `Relay`, and the client side of buffer
//! recycling (section 3.7).
//!
//! A client writes each message into the buffer `M` of every member of every destination group
//! and waits for the first response of each group, written by the servers into its own memory
//! along with their Last Delivered Message (LDM). A group's Last Stable Group Message (LSGM) is
//! the lowest LDM of its members. A slot is reused once the message in it was delivered by all
//! its destinations, in every destination group (the LSGM of each passed it), so no process
//! writes about it any more; until then `try_multicast` refuses with [`MulticastError::Full`]
//! (backpressure: nothing is dropped or overwritten).
//!
//! A crashed server's LDM never moves. A client that has been blocked on group `h` for
//! `timing.evict` stops waiting for the members of `h` that have not delivered the message
//! holding the slot back and whose LDM has not moved for that long (members that are up to
//! date are never excluded: they have nothing new to report). Every group holding a slot back
//! starts its clock at once. The paper requires checkpoints for this step, and we have none, so
//! an excluded member, should it be alive after all, finds its slots overwritten and halts
//! ([`multicast::Server::halted`]). Keep `evict` above any pause a live server can take; the
//! sweeps draw it short in a third of runs and judge the halts.

use crate::config::Config;
use crate::layout::{codec_seq, local, remote, Entry, Layout, M, RESP};
use multicast::Membership;
use multicast::{Client, Completed, DestSet, GroupId, MsgId, MulticastError, MulticastResult};
use std::collections::VecDeque;
use std::sync::Arc;
use transport::{Nanos, Nic, Process, ProcessId, Progress, RegionSpec, Work, WriteFlags};

#[derive(Clone, Copy, Debug)]
struct InFlight {
    id: u64,
    dst: DestSet,
    sent_at: Nanos,
    answered: DestSet,
}

/// A RamCast client.
#[derive(Debug)]
pub struct RamcastClient {
    cfg: Arc<Config>,
    layout: Layout,
    me: ProcessId,
    index: usize,
    /// Next sequence number per group (`cptr` of Algorithm 1, one per group: see [`crate::layout`]).
    next: Vec<u64>,
    /// Per server: last LDM read and when it last changed.
    ldm: Vec<(u64, Nanos)>,
    /// Servers this client no longer waits for when recycling.
    excluded: Vec<bool>,
    /// Per group and slot: the destinations `(group, seq)` of the message occupying it. A slot is
    /// free once every destination group's LSGM passed that message: all its destinations
    /// delivered it, so no process will write about it any more.
    occupant: Vec<Vec<Vec<(GroupId, u64)>>>,
    /// Per group: since when a multicast has been refused for lack of slots, and the highest
    /// sequence number of that group holding a slot back.
    blocked_since: Vec<Option<(Nanos, u64)>>,
    next_id: u64,
    in_flight: Option<InFlight>,
    completed: VecDeque<Completed>,
    scratch: Vec<u8>,
    /// Whether the `[response, ldm]` pairs may hold what `read_responses` has not seen: set
    /// by the runtime's change hint (any write into this client's memory, or "anything may
    /// have changed") and by a new multicast. A simulation speed-up only, as the servers'
    /// ([`crate::rescan`]).
    unread: bool,
    /// The last changes taken from the NIC (kept for its allocation).
    changes: transport::Changes,
}

impl RamcastClient {
    /// Client `index` of `cfg`.
    pub fn new(cfg: Arc<Config>, index: usize) -> RamcastClient {
        let layout = Layout::new(&cfg);
        RamcastClient {
            me: cfg.client(index),
            index,
            next: vec![0; cfg.groups],
            ldm: vec![(0, Nanos::ZERO); cfg.servers()],
            excluded: vec![false; cfg.servers()],
            blocked_since: vec![None; cfg.groups],
            occupant: vec![vec![Vec::new(); cfg.slots]; cfg.groups],
            next_id: 0,
            in_flight: None,
            completed: VecDeque::new(),
            scratch: Vec::new(),
            unread: true,
            changes: transport::Changes::exact(),
            layout,
            cfg,
        }
    }

    /// The LSGM of group `g`: the lowest LDM among the members still waited for.
    fn lsgm(&self, g: GroupId) -> u64 {
        self.cfg
            .members(g)
            .filter(|q| !self.excluded[q.index()])
            .map(|q| self.ldm[q.index()].0)
            .min()
            .unwrap_or(u64::MAX / 2)
    }

    /// Reads every server's `[response, ldm]` pair: completes the multicast in flight once each
    /// destination group answered, and tracks LDMs for recycling.
    fn read_responses<N: Nic>(&mut self, nic: &mut N) -> bool {
        let now = nic.now();
        let mut worked = false;
        // One `[response, ldm]` pair looked at per server, news or not.
        nic.work(Work::Scan, self.cfg.servers() as u64);
        nic.take_changes(&mut self.changes);
        self.unread |= !self.changes.is_exact() || !self.changes.extents().is_empty();
        // Nothing written since the last look: it would find what it found then. Debug builds
        // look anyway and check that.
        let unread = std::mem::take(&mut self.unread);
        if !unread && !cfg!(debug_assertions) {
            return false;
        }
        for s in 0..self.cfg.servers() {
            let at = self.layout.response(ProcessId(s as u32));
            let ldm = nic.load_u64(local(RESP, at + 8)).expect("own region");
            if ldm != self.ldm[s].0 {
                self.ldm[s] = (ldm, now);
                worked = true;
            }
            let Some(f) = &mut self.in_flight else {
                continue;
            };
            let g = self.cfg.group_of(ProcessId(s as u32)).expect("a server");
            if f.dst.contains(g) && !f.answered.contains(g) {
                let resp = nic.load_u64(local(RESP, at)).expect("own region");
                if resp == f.id + 1 {
                    f.answered = f.answered.with(g);
                    worked = true;
                }
            }
        }
        debug_assert!(
            unread || !worked,
            "{}: a response or LDM landed unseen by the change hint",
            self.me
        );
        if let Some(f) = self.in_flight {
            if f.answered == f.dst {
                self.completed
                    .push_back(Completed::at(MsgId::new(self.me, f.id), f.sent_at, now));
                self.in_flight = None;
            }
        }
        worked
    }

    /// The members of blocked groups still waited for (not excluded, not past the message
    /// holding the slot back), each with when it may be excluded.
    fn eviction_deadlines(&self) -> Vec<(ProcessId, Nanos)> {
        let evict = self.cfg.timing.evict;
        let mut out = Vec::new();
        for g in 0..self.cfg.groups {
            let Some((since, needed)) = self.blocked_since[g] else {
                continue;
            };
            for q in self.cfg.members(GroupId(g as u8)) {
                let (ldm, changed) = self.ldm[q.index()];
                // Only a member that has not delivered the message holding the slot back is
                // waited for; one that is up to date has no reason to report anything new.
                if !self.excluded[q.index()] && ldm <= needed {
                    out.push((q, since.max(changed).saturating_add(evict)));
                }
            }
        }
        out
    }

    /// Stops waiting for members of a blocked group whose LDM has not moved for `evict`;
    /// returns when to look again.
    fn exclude_silent(&mut self, now: Nanos) -> Option<Nanos> {
        let mut wake: Option<Nanos> = None;
        for (q, deadline) in self.eviction_deadlines() {
            if now >= deadline {
                self.excluded[q.index()] = true;
            } else {
                wake = Some(wake.map_or(deadline, |w| w.min(deadline)));
            }
        }
        wake
    }
}

impl<N: Nic> Process<N> for RamcastClient {
    fn regions(&self) -> Vec<RegionSpec> {
        self.layout.client_regions()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        // Client writes go to regions every process may write: nothing can be refused, and an
        // op to a crashed server simply fails; the protocol needs no reaction.
        let mut worked = false;
        while nic.poll_completion().is_some() {
            worked = true;
        }
        worked |= self.read_responses(nic);
        let wake = self.exclude_silent(nic.now());
        Progress::worked(worked).wake_at(wake)
    }
}

impl<N: Nic> Client<N> for RamcastClient {
    /// Task 1: reserve the next slot of every destination, then `Relay` the message there.
    fn try_multicast(&mut self, nic: &mut N, dst: DestSet, payload: &[u8]) -> MulticastResult {
        MulticastError::check_destinations(dst, self.cfg.groups)?;
        MulticastError::check_size(payload.len(), self.layout.max_message(dst.len()), dst)?;
        if self.in_flight.is_some() {
            return Err(MulticastError::InFlight);
        }
        let now = nic.now();
        // Every group that holds back the next slot of any group starts its eviction clock now,
        // not only the first found for this destination set: otherwise groups with silent
        // members would be waited for one after another, by later multicasts to other groups.
        let mut full = None;
        for g in (0..self.cfg.groups).map(|g| GroupId(g as u8)) {
            let slot = (self.next[g.0 as usize] % self.layout.slots() as u64) as usize;
            let busy: Vec<(GroupId, u64)> = self.occupant[g.0 as usize][slot]
                .iter()
                .filter(|&&(d, seq)| self.lsgm(d) <= seq)
                .copied()
                .collect();
            for (d, seq) in &busy {
                let b = self.blocked_since[d.0 as usize].get_or_insert((now, *seq));
                b.1 = b.1.max(*seq);
            }
            if !busy.is_empty() && dst.contains(g) {
                full.get_or_insert(g);
            }
        }
        if let Some(group) = full {
            return Err(MulticastError::Full { group });
        }
        let id = self.next_id;
        let ptr: Vec<u64> = dst.groups().map(|g| self.next[g.0 as usize]).collect();
        let entry = Entry::encode(id, dst, &ptr, payload);
        let dests: Vec<(GroupId, u64)> = dst.groups().zip(ptr.iter().copied()).collect();
        for (g, seq) in &dests {
            self.occupant[g.0 as usize][self.layout.index(*seq)] = dests.clone();
        }
        let limits = nic.limits();
        for (g, &seq) in dst.groups().zip(&ptr) {
            self.blocked_since[g.0 as usize] = None;
            self.layout
                .m_codec
                .encode(codec_seq(seq), &entry, &mut self.scratch)
                .expect("size checked above");
            nic.work(Work::Copy, self.scratch.len() as u64);
            let flags = WriteFlags::NONE.inline_if_fits(self.scratch.len(), limits);
            let at = self.layout.m_slot(self.index, seq);
            for q in self.cfg.members(g) {
                // Relay, lines 38-42: msg, dst and ptr in one entry; its canary makes the
                // entry visible as a whole (the state MCAST of line 42).
                match nic.post_write(remote(q, M, at), &self.scratch, flags) {
                    Ok(_) | Err(transport::OpError::Crashed) => {}
                    Err(e) => panic!("client write rejected: {e}"),
                }
            }
            self.next[g.0 as usize] += 1;
        }
        self.next_id += 1;
        self.unread = true;
        self.in_flight = Some(InFlight {
            id,
            dst,
            sent_at: now,
            answered: DestSet::EMPTY,
        });
        Ok(MsgId::new(self.me, id))
    }

    fn poll_completed(&mut self) -> Option<Completed> {
        self.completed.pop_front()
    }

    /// A refused multicast starts the eviction clock of the groups holding it back: the client
    /// must be polled when the first silent member may be excluded.
    fn deadline(&self) -> Option<Nanos> {
        self.eviction_deadlines().into_iter().map(|(_, t)| t).min()
    }
}
