//! A RamCast server replica: Algorithm 1's per-process state and the poll loop that runs the
//! tasks of Algorithm 2 ([`crate::normal`]) and Algorithm 3 ([`crate::failures`]).

use crate::config::Config;
use crate::layout::{local, remote, Entry, Layout, RESP, T};
use crate::rescan::{Mark, Rescan, Seen};
use crate::stamp::Stamp;
use multicast::Membership;
use multicast::{Delivery, GroupId, MsgId, Omega, Server};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::sync::Arc;
use transport::{
    Nanos, Nic, OpError, Process, ProcessId, Progress, Qp, RegionSpec, RemoteAddr, Timer, Tracked,
    Work, WrId, WriteFlags,
};

/// A message's state (Algorithm 1, line 8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Stat {
    /// ⊥: nothing in the slot for this sequence number yet.
    #[default]
    Empty,
    /// Waiting for its final timestamp.
    Mcast,
    /// Final timestamp known, waiting for its turn.
    Ordered,
    /// Delivered.
    Done,
}

/// A group's proposal for a message, as read from `T`: `tmp` proposed in round `rnd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prop {
    pub(crate) tmp: Stamp,
    pub(crate) rnd: Stamp,
    /// (Leader) forwarded to the followers in this round (Task 4).
    pub(crate) forwarded: bool,
}

/// Task 9's decision for one slot of the new leader's group (see [`crate::failures`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Install {
    /// Propose this timestamp again: it may have been chosen.
    Adopt(Stamp),
    /// Propose a fresh timestamp: no timestamp can have been chosen for the slot.
    Fresh,
}

/// What this server knows of one slot of one client buffer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Slot {
    /// The group sequence number this state is about.
    pub(crate) seq: u64,
    pub(crate) entry: Option<Entry>,
    pub(crate) stat: Stat,
    /// Per group, the proposal read from `T` (`T[c,i].tmp/rnd` of Algorithm 1). Empty until
    /// the slot first holds an entry ([`RamcastServer::accept`] sizes it): only held slots are
    /// read, and a window of empty slots per client, thousands of clients per server in a
    /// Heron run, would otherwise allocate one of these per slot up front.
    pub(crate) ts: Vec<Option<Prop>>,
    /// `M[c,i].tmp`: the final timestamp once ORDERED, else the largest proposal seen.
    pub(crate) tmp: Stamp,
    /// The round this server last acknowledged (Task 3).
    pub(crate) acked: Option<Stamp>,
    /// (Leader) the round in which this server proposed (Task 2).
    pub(crate) proposed: Option<Stamp>,
    /// (New leader) what Task 9 decided to propose for the slot in the new round.
    pub(crate) install: Option<Install>,
    /// (Leader) successful quorum writes of the single-group fast path.
    pub(crate) fast_ok: usize,
    /// When Task 10 next suspects its client if the entry is still MCAST.
    pub(crate) relay_at: Nanos,
    /// How many times this server relayed it (each doubles the next timeout).
    pub(crate) relays: u32,
}

/// One client's buffer at this server.
#[derive(Clone, Debug)]
pub(crate) struct Buffer {
    /// Next sequence number expected from the client's writes.
    pub(crate) next: u64,
    /// Last Delivered Message: every sequence number below it is DONE.
    pub(crate) ldm: u64,
    /// The slots, by `seq % slots`; versioned so scans skip what did not change
    /// ([`crate::rescan`]).
    pub(crate) slots: Vec<Tracked<Slot>>,
    /// What the scans of each slot last saw.
    pub(crate) seen: Vec<Seen>,
    /// `next` and the mark of its slot when `poll_buffers` last found nothing there.
    pub(crate) scanned: Option<(u64, Mark)>,
}

/// The role this server plays in its group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Follower,
    /// Running Tasks 7-9 with this round.
    Candidate(Candidacy),
    Leader,
}

/// A would-be leader's collection of `MY_STATE` replies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidacy {
    pub(crate) round: Stamp,
    /// The highest round of the own group that a responder of the own group knows complete.
    pub(crate) completed: Stamp,
    /// Per responder: entries so far and whether its last part arrived.
    pub(crate) replies: BTreeMap<ProcessId, (Vec<crate::wire::Pend>, bool)>,
}

/// A RamCast server replica.
#[derive(Debug)]
pub struct RamcastServer {
    pub(crate) cfg: Arc<Config>,
    pub(crate) layout: Layout,
    pub(crate) me: ProcessId,
    pub(crate) group: GroupId,
    pub(crate) rank: usize,
    /// Logical clock `clock` (its `cnt`; the pid is this server's).
    pub(crate) clock: u64,
    /// `round`: this server's round when it leads.
    pub(crate) round: Stamp,
    /// `Leader[h]`.
    pub(crate) leader: Vec<ProcessId>,
    /// `Round[h]`.
    pub(crate) rounds: Vec<Stamp>,
    /// The highest round of the own group known complete: its leader posted every proposal
    /// Task 9 made before announcing it ([`crate::failures`], "Completed rounds").
    pub(crate) completed: Stamp,
    /// (Leader) Task 9 proposed no timestamp above this one; fresh ones are above it.
    pub(crate) boundary: Stamp,
    /// (Leader) followers, and other groups' leaders, owed the announcement that this leader's
    /// round is complete.
    pub(crate) owed: BTreeSet<ProcessId>,
    /// CATCH_UP requests accepted in this poll, answered once every message received before
    /// them was handled: `(candidate, round, fus)`.
    pub(crate) answer: Vec<(ProcessId, Stamp, Vec<u64>)>,
    pub(crate) role: Role,
    pub(crate) buffers: Vec<Buffer>,
    /// Slots with an entry that is MCAST or ORDERED, keyed by `M[c,i].tmp` (Task 6's order).
    pub(crate) pending: BTreeSet<(Stamp, u32, u64)>,
    /// Task 10's deadlines `(relay_at, client, seq)`, earliest on top: one for each time a
    /// slot's `relay_at` was set. One whose slot left MCAST, or whose `relay_at` moved, is stale and
    /// dropped when it reaches the top, so `relay_stale` reads the earliest deadline without
    /// scanning every pending slot on every poll.
    pub(crate) relay_due: BinaryHeap<Reverse<(Nanos, u32, u64)>>,
    /// (Leader) slots waiting for Task 2.
    pub(crate) to_propose: BTreeSet<(u32, u64)>,
    /// Fast-path writes in flight: work request -> (client, seq, round).
    pub(crate) fast: BTreeMap<WrId, (u32, u64, Stamp)>,
    /// Queue pairs in error, with the time a reconnect may be (re)tried.
    pub(crate) broken: BTreeMap<ProcessId, Option<Nanos>>,
    /// The latest reconnect posted to each peer. An op with a smaller id was posted before it
    /// ([`transport::WrId`] order), so its failure reports on the queue pairs that reconnect
    /// replaced, and the resync after it already covers what the op carried.
    pub(crate) reconnected: BTreeMap<ProcessId, WrId>,
    /// Unsignaled writes per queue pair (`peer * Qp::COUNT + qp`) since the last signaled one.
    pub(crate) unsignaled: Vec<u32>,
    /// Heartbeat counter and timer (leader and candidate).
    pub(crate) beat: u64,
    pub(crate) beat_timer: Timer,
    /// The failure detector: the leader oracle over the group's heartbeat words.
    pub(crate) omega: Omega,
    pub(crate) deliveries: VecDeque<Delivery>,
    /// Why this server halted, once it has (a lapped slot: [`crate::normal`]).
    pub(crate) halt: Option<String>,
    /// Control messages posted and not yet completed.
    pub(crate) sends: BTreeMap<WrId, (ProcessId, Vec<u8>)>,
    /// Control messages a broken queue pair flushed, to send again after its reconnect.
    pub(crate) unsent: BTreeMap<ProcessId, Vec<Vec<u8>>>,
    /// Cursor of `RamcastServer::sweep_delivered` over the window: a client and a slot index.
    pub(crate) sweep: (usize, usize),
    /// Whether the next `sweep_delivered` must go over the whole window: a group's new leader
    /// announced its round complete ([`crate::wire::Wire::Complete`]), so its Task 9 proposals
    /// have landed, and those for slots this server already delivered are acknowledged (own
    /// group) or forwarded to the followers (another group's, at a leader) by the sweep alone
    /// (see [`crate::recovery`]).
    pub(crate) sweep_all: bool,
    /// Catch-up items waiting to be sent, per peer (see [`crate::recovery`]).
    pub(crate) outbox: BTreeMap<ProcessId, Vec<crate::wire::CatchItem>>,
    /// Catch-up items about slots of the window this server does not hold yet, applied once it
    /// takes the entry (see [`crate::recovery`]).
    pub(crate) early: BTreeMap<(u32, u64), crate::wire::CatchItem>,
    /// Messages this server relayed for a suspected client (Task 10).
    pub(crate) relayed: u64,
    /// Writes of this server that a peer refused (it had been deposed: a revoke race).
    pub(crate) refused: u64,
    pub(crate) scratch: Vec<u8>,
    /// What changed since the scans last looked ([`crate::rescan`]).
    pub(crate) rescan: Rescan,
}

impl RamcastServer {
    /// Replica `rank` of group `g`.
    pub fn new(cfg: Arc<Config>, g: GroupId, rank: usize) -> RamcastServer {
        let layout = Layout::new(&cfg);
        let me = cfg.server(g, rank);
        let leader: Vec<ProcessId> = (0..cfg.groups)
            .map(|h| cfg.initial_leader(GroupId(h as u8)))
            .collect();
        let rounds: Vec<Stamp> = leader.iter().map(|l| Stamp::new(0, l.0)).collect();
        let buffers = (0..cfg.clients)
            .map(|_| Buffer {
                next: 0,
                ldm: 0,
                slots: vec![Tracked::new(Slot::default()); cfg.slots],
                seen: vec![Seen::default(); cfg.slots],
                scanned: None,
            })
            .collect();
        RamcastServer {
            me,
            group: g,
            rank,
            clock: 0,
            round: Stamp::new(0, me.0),
            role: if rank == 0 {
                Role::Leader
            } else {
                Role::Follower
            },
            leader,
            // The initial leader's round needs no Task 9: it is complete from the start.
            completed: rounds[g.0 as usize],
            boundary: Stamp::ZERO,
            owed: BTreeSet::new(),
            answer: Vec::new(),
            rounds,
            buffers,
            pending: BTreeSet::new(),
            relay_due: BinaryHeap::new(),
            to_propose: BTreeSet::new(),
            fast: BTreeMap::new(),
            broken: BTreeMap::new(),
            reconnected: BTreeMap::new(),
            unsignaled: vec![0; cfg.processes() * Qp::COUNT],
            beat: 0,
            beat_timer: Timer::new(),
            omega: Omega::new(cfg.replicas),
            deliveries: VecDeque::new(),
            halt: None,
            refused: 0,
            relayed: 0,
            outbox: BTreeMap::new(),
            early: BTreeMap::new(),
            sends: BTreeMap::new(),
            unsent: BTreeMap::new(),
            sweep: (0, 0),
            sweep_all: false,
            scratch: Vec::new(),
            rescan: Rescan::new(cfg.clients),
            layout,
            cfg,
        }
    }

    /// This server's process id.
    pub fn id(&self) -> ProcessId {
        self.me
    }

    /// Whether this server currently leads its group.
    pub fn is_leader(&self) -> bool {
        self.role == Role::Leader
    }

    /// A one-line account of this server's state, for failure reports.
    pub fn describe(&self) -> String {
        let ldm: Vec<u64> = self.buffers.iter().map(|b| b.ldm).collect();
        let next: Vec<u64> = self.buffers.iter().map(|b| b.next).collect();
        format!(
            "{} {:?} round {} leaders {:?} halted {} pending {} ldm {:?} next {:?} broken {:?}",
            self.me,
            match self.role {
                Role::Follower => "follower",
                Role::Candidate(_) => "candidate",
                Role::Leader => "leader",
            },
            self.current_round(),
            self.leader,
            self.halt.is_some(),
            self.pending.len(),
            ldm,
            next,
            self.broken
        )
    }

    /// The first pending slot with its proposals, for failure reports.
    pub fn describe_pending<N: Nic>(&self, nic: &N) -> String {
        let Some(&(key, c, s)) = self.pending.first() else {
            return String::new();
        };
        let slot = self.slot(c, s).expect("pending");
        let e = slot.entry.as_ref().expect("pending");
        let mut out = format!(
            "c{c}:{s} key {key} {:?} acked {:?} dst {} ptr {:?}",
            slot.stat, slot.acked, e.dst, e.ptr
        );
        for h in e.dst.groups() {
            let acks: Vec<String> = (0..self.cfg.replicas)
                .map(|r| {
                    let w = nic
                        .load_u64(local(
                            crate::layout::M,
                            self.layout.ack(c as usize, s, h, r),
                        ))
                        .unwrap_or(0);
                    format!("{}:{:x}", w as u32, w >> 32)
                })
                .collect();
            out.push_str(&format!(
                " | {h} {:?} acks {acks:?} Round {}",
                slot.ts[h.0 as usize].map(|p| (p.tmp.to_string(), p.rnd.to_string())),
                self.rounds[h.0 as usize]
            ));
        }
        out
    }

    /// How many messages this server relayed for a suspected client (Task 10).
    pub fn relayed_messages(&self) -> u64 {
        self.relayed
    }

    /// How many of this server's writes were refused because it had been deposed.
    pub fn refused_writes(&self) -> u64 {
        self.refused
    }

    /// The round this server last accepted for its own group.
    pub fn current_round(&self) -> Stamp {
        self.rounds[self.group.0 as usize]
    }

    /// The slot of client `c`'s message `seq`, if this server holds that sequence number.
    pub(crate) fn slot(&self, c: u32, seq: u64) -> Option<&Slot> {
        let b = &self.buffers[c as usize];
        let s = &b.slots[self.layout.index(seq)];
        (s.seq == seq && s.stat != Stat::Empty).then_some(&**s)
    }

    pub(crate) fn slot_mut(&mut self, c: u32, seq: u64) -> Option<&mut Slot> {
        let i = self.layout.index(seq);
        let s = &mut self.buffers[c as usize].slots[i];
        if s.seq == seq && s.stat != Stat::Empty {
            Some(&mut **s)
        } else {
            None
        }
    }

    /// Raises the clock to at least `time(ts)`.
    pub(crate) fn see(&mut self, ts: Stamp) {
        self.clock = self.clock.max(ts.time());
    }

    /// Re-keys a slot in the pending set after its `tmp` or state changed.
    pub(crate) fn rekey(&mut self, c: u32, seq: u64, old: Option<Stamp>) {
        if let Some(k) = old {
            self.pending.remove(&(k, c, seq));
        }
        if let Some(s) = self.slot(c, seq) {
            if matches!(s.stat, Stat::Mcast | Stat::Ordered) {
                self.pending.insert((s.tmp, c, seq));
            }
        }
    }

    /// Posts a write on the data queue pair, to itself as a local write. Applies inlining below
    /// the NIC's threshold and selective signaling; `signal` forces a completion. Returns the
    /// work request, if posted.
    pub(crate) fn write<N: Nic>(
        &mut self,
        nic: &mut N,
        dst: RemoteAddr,
        data: &[u8],
        signal: bool,
    ) -> Option<WrId> {
        self.write_on(nic, dst, data, signal, Qp::Data)
    }

    /// [`RamcastServer::write`] on queue pair `qp` (selective signaling counts per queue pair).
    pub(crate) fn write_on<N: Nic>(
        &mut self,
        nic: &mut N,
        dst: RemoteAddr,
        data: &[u8],
        signal: bool,
        qp: Qp,
    ) -> Option<WrId> {
        if dst.process == self.me {
            nic.write_local(local(dst.region, dst.offset), data)
                .expect("own region");
            if dst.region == T {
                self.t_written(dst.offset, data.len());
            }
            return None;
        }
        let k = dst.process.index() * Qp::COUNT + qp.index();
        self.unsignaled[k] += 1;
        let signaled = signal || self.unsignaled[k] >= self.cfg.signal_every;
        if signaled {
            self.unsignaled[k] = 0;
        }
        let flags = WriteFlags {
            signaled,
            ..WriteFlags::NONE
        };
        let flags = flags.inline_if_fits(data.len(), nic.limits()).on(qp);
        match nic.post_write(dst, data, flags) {
            Ok(wr) => Some(wr),
            Err(OpError::Crashed) => None,
            Err(e) => panic!("{}: write to {dst} rejected: {e}", self.me),
        }
    }

    /// Sends a control message (to itself: handled at once).
    pub(crate) fn send<N: Nic>(&mut self, nic: &mut N, to: ProcessId, msg: &crate::wire::Wire) {
        if to == self.me {
            self.on_wire(nic, self.me, msg.clone());
            return;
        }
        self.send_bytes(nic, to, msg.encode());
    }

    /// Posts a control message, signaled: a message flushed by a queue pair in error is sent
    /// again after the reconnect (control messages are never lost to a live peer).
    pub(crate) fn send_bytes<N: Nic>(&mut self, nic: &mut N, to: ProcessId, bytes: Vec<u8>) {
        match nic.send(to, &bytes, true) {
            Ok(wr) => {
                self.sends.insert(wr, (to, bytes));
            }
            Err(OpError::Crashed) => {}
            Err(e) => panic!("{}: send to {to} rejected: {e}", self.me),
        }
    }

    /// Task 6, completed: the smallest proposal of this group for a message this server has
    /// not taken out of `M` yet, if any. Task 6 looks only at messages in `M`, but an entry can
    /// be missing while its proposal is in `T`: a deposed leader's delayed copy of an entry two
    /// laps older may overwrite it (`M` is writable by every process), and a quorum's
    /// acknowledgements then make it ORDERED elsewhere with a timestamp this server would
    /// deliver past. The leader writes `T` entries to a follower in the order it proposes (one
    /// queue pair), so every smaller proposal of this group is in `T` by the time a larger one
    /// is. Per client, the slots from the next unread one on, until the first without a `T`
    /// entry (one client's slots are proposed in slot order); once per delivery pass.
    ///
    /// Most clients have nothing unread, so their first slot's entry is empty. Where the NIC
    /// says exactly what changed, an entry found empty is not decoded again until a write into
    /// the slot's `T` entries or a new epoch ([`crate::rescan`]); the modelled scan is the same
    /// either way.
    fn unread_bound<N: Nic>(&mut self, nic: &mut N) -> Option<Stamp> {
        let (g, epoch, exact) = (self.group, self.rescan.epoch(), self.rescan.exact());
        let mut looked = 0;
        let mut bound: Option<Stamp> = None;
        for c in 0..self.cfg.clients as u32 {
            let b = &self.buffers[c as usize];
            let (from, to) = (b.next, b.ldm + self.cfg.slots as u64);
            for s in from..to {
                if self.slot(c, s).is_some() {
                    continue;
                }
                looked += 1;
                let i = self.layout.index(s);
                if exact && self.buffers[c as usize].seen[i].t_empty(s, epoch) {
                    debug_assert!(self.read_t(nic, c, s, g).is_none(), "{c}:{s} not empty");
                    break;
                }
                match self.read_t(nic, c, s, g) {
                    Some((tmp, _)) => bound = Some(bound.map_or(tmp, |b| b.min(tmp))),
                    None => {
                        self.buffers[c as usize].seen[i].t_found_empty(s, epoch);
                        break;
                    }
                }
            }
        }
        nic.work(Work::Scan, looked);
        bound
    }

    /// Task 6: deliver ORDERED messages in final-timestamp order while no MCAST or ORDERED
    /// message has a smaller timestamp, and no message not yet read may have one
    /// ([`Self::unread_bound`]); answer the client with a one-sided write carrying the LDM
    /// (section 3.7).
    fn deliver<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        let mut unread: Option<Option<Stamp>> = None;
        while let Some(&(ts, c, seq)) = self.pending.first() {
            let slot = self.slot(c, seq).expect("pending slots are held");
            if slot.stat != Stat::Ordered {
                break;
            }
            let bound = *unread.get_or_insert_with(|| self.unread_bound(nic));
            if bound.is_some_and(|b| b < ts) {
                break;
            }
            let slot = self.slot_mut(c, seq).expect("pending slots are held");
            slot.stat = Stat::Done;
            let entry = slot.entry.clone().expect("ordered slots have entries");
            self.pending.remove(&(ts, c, seq));
            let b = &mut self.buffers[c as usize];
            while let Some(s) = b.slots.get(self.layout.index(b.ldm)) {
                if s.seq == b.ldm && s.stat == Stat::Done {
                    b.ldm += 1;
                } else {
                    break;
                }
            }
            let ldm = b.ldm;
            let client = self.cfg.client(c as usize);
            nic.work(Work::Deliver, 1);
            self.deliveries.push_back(Delivery {
                msg: MsgId::new(client, entry.id),
                dst: entry.dst,
                payload: entry.message(),
                // The final timestamp, the key of the delivery order (Task 6).
                order: Some(ts.0),
            });
            let mut resp = [0u8; 16];
            resp[..8].copy_from_slice(&(entry.id + 1).to_le_bytes());
            resp[8..].copy_from_slice(&ldm.to_le_bytes());
            let at = self.layout.response(self.me);
            self.write(nic, remote(client, RESP, at), &resp, false);
            worked = true;
        }
        worked
    }
}

impl<N: Nic> Process<N> for RamcastServer {
    fn regions(&self) -> Vec<RegionSpec> {
        self.layout.server_regions(self.cfg.clients, &self.leader)
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if self.halt.is_some() {
            return Progress::IDLE;
        }
        // The failure detector first: it reads heartbeats as memory stood when the poll began,
        // so a poll that itself runs long never makes its own follower suspect the leader.
        let (mut worked, wake) = self.failure_detector(nic);
        worked |= self.drain_completions(nic);
        worked |= self.drain_receives(nic);
        worked |= self.poll_buffers(nic);
        if self.halt.is_some() {
            return Progress::IDLE;
        }
        worked |= self.apply_early(nic);
        worked |= self.poll_pending(nic);
        worked |= self.sweep_delivered(nic);
        worked |= self.propose(nic);
        // Entries that landed while this poll read proposals must be taken before Task 6 may
        // deliver: a proposal read above implies that every message the same leader copied
        // earlier has landed (one queue pair, in order), but it may have landed after
        // `poll_buffers` looked. Without this, a message with a smaller timestamp could still
        // be missing from `pending` (memory changes during a poll on real threads).
        worked |= self.poll_buffers(nic);
        if self.halt.is_some() {
            return Progress::IDLE;
        }
        worked |= self.deliver(nic);
        worked |= self.flush_catch(nic);
        // A heartbeat written mid-poll moved the timer past the deadline taken above.
        let wake = match (wake, self.beat_timer.deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Progress::worked(worked).wake_at(wake)
    }
}

impl Server for RamcastServer {
    fn group(&self) -> GroupId {
        self.group
    }

    fn poll_delivery(&mut self) -> Option<Delivery> {
        self.deliveries.pop_front()
    }

    fn halt_reason(&self) -> Option<&str> {
        self.halt.as_deref()
    }
}
