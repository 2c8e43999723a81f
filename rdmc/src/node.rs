//! An RDMC member: the library of the paper's Fig. 1 as a sans-IO process. It belongs to any
//! number of groups (each with its own root, members, algorithm and block size) and runs their
//! transfers side by side.
//!
//! Per message, a member walks its [`crate::schedule`] step by step. In a step it may receive
//! one block and send one: it tells the member it receives from that it is ready
//! (`ready_for_block`), and it writes its block into the target's receive buffer (a
//! write-with-immediate carrying the block number) once the target said it is ready and the
//! block is here. A step is over when both are done; members run ahead of each other as far as
//! their own transfers allow. The first relay of a member also tells it the message size, just
//! before its first block. Messages of a group are sent and delivered in order.
//!
//! **Failures.** A failed operation towards a member (it crashed, or its queue pair broke)
//! marks that member failed in every group it shares with us; so does a silent peer we wait on,
//! which we probe every `probe` interval (a crashed peer's probe fails). A receiver waiting for
//! a group's next message, or holding a lent one, probes its first relay too, with a period
//! that doubles while the group stays idle, so a root that dies between messages is detected as
//! well. The detector tells every other member of the group, and every member that learns it
//! the first time tells them again, so every surviving member gets a [`Event::Failed`] even if
//! a detector crashes next. A failed group stops; a partially received message is never
//! reported delivered.

mod failure;

use crate::schedule::{Algorithm, Step};
use crate::wire::Ctl;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use transport::{
    Access, Data, LocalAddr, Nanos, Nic, Op, OpKind, Process, ProcessId, Progress, Recv, RegionId,
    RegionSpec, RemoteAddr, Status, Work, WrId, WriteFlags,
};

/// `Ready.step` for a member's first block, whose step the member cannot know before it knows
/// the message size.
const FIRST: u64 = u64::MAX;

/// A group as every member creates it (`create_group`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupConfig {
    /// The group number.
    pub id: u32,
    /// Members in order; `members[0]` is the root, the only sender.
    pub members: Vec<ProcessId>,
    /// The dissemination algorithm.
    pub algorithm: Algorithm,
    /// The rack of each member, for the hybrid algorithms (empty: one rack).
    pub racks: Vec<u32>,
    /// Bytes per block (the last block may be shorter).
    pub block_size: usize,
    /// The receive buffer: the largest message the group carries.
    pub buffer_bytes: usize,
}

impl GroupConfig {
    /// Member `me`'s steps for a message of `k` blocks.
    pub fn steps(&self, k: usize, me: usize) -> Vec<Step> {
        if self.racks.is_empty() {
            self.algorithm.steps(self.members.len(), k, me)
        } else {
            self.algorithm.steps_in_racks(&self.racks, k, me)
        }
    }
}

/// Why a group or a send was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RdmcError {
    /// This process is not the group's root.
    #[error("only the root of group {0} sends")]
    NotRoot(u32),
    /// No such group here.
    #[error("this process is not a member of group {0}")]
    UnknownGroup(u32),
    /// The message does not fit the receivers' buffers.
    #[error("a message of {len} bytes does not fit the group's {max}-byte receive buffers")]
    TooLarge {
        /// Message size.
        len: usize,
        /// Buffer size.
        max: usize,
    },
    /// The group failed earlier.
    #[error("group {0} has failed")]
    Failed(u32),
    /// A release named a message that is not lent.
    #[error("message {msg} of group {group} is not lent to the application")]
    NotLent {
        /// Group number.
        group: u32,
        /// The message named.
        msg: u64,
    },
    /// A configuration is unusable.
    #[error("group {id}: {why}")]
    Config {
        /// Group number.
        id: u32,
        /// What is wrong.
        why: String,
    },
}

/// What a member reports to its application (the paper's upcalls).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A message is coming: its size; it lands in the group's receive buffer.
    Incoming {
        /// Group number.
        group: u32,
        /// Message sequence number.
        msg: u64,
        /// Size in bytes.
        bytes: u64,
    },
    /// A message was received completely (receivers) or sent completely (the root).
    Completed {
        /// Group number.
        group: u32,
        /// Message sequence number.
        msg: u64,
        /// The message: what the root sent; a receiver's copy of its buffer, or where the
        /// message lies in it ([`Handoff`]).
        data: Delivered,
        /// When it completed here.
        at: Nanos,
        /// When this member started on it: the root when it began sending, a receiver when
        /// it learnt the size (before that, only others worked on it).
        started: Nanos,
        /// Of the time since `started`, how long this member's steps waited before their send
        /// could go (for the target's `ready_for_block` or for the block itself to arrive).
        waiting: Nanos,
        /// When this member saw its first block land (the root: `started`, it has them all).
        first_block: Nanos,
        /// When it saw its last missing block land: it held the whole message from then on.
        /// The upcall (`at`) can be later: a relay completes once its own sends are done too.
        last_block: Nanos,
    },
    /// A member failed; the group is broken and transfers in it stopped.
    Failed {
        /// Group number.
        group: u32,
        /// The failed member's index in the group.
        member: usize,
    },
}

/// How a receiver hands a completed message to its application.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Handoff {
    /// The upcall carries a copy of the receive buffer, which is free for the next message at
    /// once. On the simulator a synthetic message arrives as the same synthetic descriptor, so
    /// a receiver verifies hundreds of MB without materialising them.
    #[default]
    Copy,
    /// The upcall names where the message lies in the group's receive buffer, as the paper's
    /// completion callback hands over the buffer it filled; the application reads it there and
    /// calls [`RdmcNode::release`], and only then does the member say it is ready for the
    /// group's next message. Saves a copy of every message (with the harness checking in
    /// place: ~310 -> ~290 ms per 256 MiB message on a 4-node tcp run).
    Lend,
}

/// A completed message as its upcall hands it over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// The message: what the root sent, or a receiver's copy ([`Handoff::Copy`]).
    Data(Data),
    /// [`Handoff::Lend`]: the message is the `len` bytes at `at`, in the group's receive
    /// buffer, until [`RdmcNode::release`]; after it, the buffer takes the group's next
    /// message.
    Lent {
        /// Where the message starts (offset 0 of the group's receive region).
        at: LocalAddr,
        /// Its length in bytes.
        len: usize,
    },
}

/// The message a member is working on.
#[derive(Debug)]
struct Current {
    msg: u64,
    bytes: u64,
    steps: Vec<Step>,
    step: usize,
    /// Blocks held.
    have: Vec<bool>,
    /// Block writes that arrived and no step has taken yet (a block may come twice).
    arrived: BTreeMap<usize, u32>,
    /// This step's send posted / completed, this step's receive arrived.
    posted: bool,
    sent: bool,
    received: bool,
    /// Ready notices already sent for steps.
    asked: BTreeSet<usize>,
    /// The root's message.
    data: Option<Data>,
    /// Members this member already sent a block of this message to (its first send to a
    /// member it is the first relay of carries that member's first block).
    sent_to: BTreeSet<usize>,
    /// Whether a receive step came yet (the first one is announced by `Ready(FIRST)`).
    received_any: bool,
    /// When the member started the message.
    started: Nanos,
    /// Time its steps waited before posting their send.
    waiting: Nanos,
    /// When the first block landed here, and when the last missing one did.
    first_block: Option<Nanos>,
    last_block: Option<Nanos>,
    /// Since when the member is in the current step.
    since: Nanos,
    probed: Nanos,
}

impl Current {
    /// A block landed at `at` (blocks are marked in `have` first): the first landing, and the
    /// landing that completed the message.
    fn landed(&mut self, at: Nanos) {
        self.first_block = Some(self.first_block.map_or(at, |t| t.min(at)));
        if self.last_block.is_none() && self.have.iter().all(|h| *h) {
            self.last_block = Some(at);
        }
    }
}

#[derive(Debug)]
struct Group {
    cfg: GroupConfig,
    me: usize,
    region: RegionId,
    /// The receive region of this group at each member (groups are numbered per process in
    /// the order of the configuration list, which every member is given alike).
    regions_at: Vec<RegionId>,
    first_relay: Option<usize>,
    /// The first relay of each member we send to, computed when first needed.
    first_relay_of: BTreeMap<usize, Option<usize>>,
    failed: bool,
    /// Root: messages waiting to be sent.
    queue: VecDeque<Data>,
    next_msg: u64,
    cur: Option<Current>,
    /// Ready notices received: (msg, step or FIRST, from member).
    ready: BTreeSet<(u64, u64, usize)>,
    /// Sizes announced for messages not started yet.
    sizes: BTreeMap<u64, u64>,
    /// Blocks that arrived for the message to come (its first block may race its start), with
    /// when.
    early: Vec<(u64, usize, Nanos)>,
    /// Whether `Ready(FIRST)` went out for `next_msg`.
    asked_first: bool,
    /// The message whose receive buffer the application holds ([`Handoff::Lend`]).
    lent: Option<u64>,
    /// Waiting for the next message (or for the application to release the buffer): when the
    /// first relay was last probed, and the current probe period (doubling while the group
    /// stays idle).
    idle_probed: Nanos,
    idle_period: Nanos,
}

/// An RDMC member process.
#[derive(Debug)]
pub struct RdmcNode {
    me: ProcessId,
    groups: Vec<Group>,
    events: VecDeque<Event>,
    /// Signaled block writes: op -> group index.
    writes: BTreeMap<WrId, usize>,
    probe: Nanos,
    dead: BTreeSet<ProcessId>,
    handoff: Handoff,
}

impl RdmcNode {
    /// Member `me` of `groups` (those it is not a member of are ignored), probing a silent peer
    /// every `probe`. Every process must be given the same list in the same order
    /// (`create_group` with identical membership information, as in the paper): a group's
    /// receive buffer at each member is found from it.
    pub fn new(me: ProcessId, groups: &[GroupConfig], probe: Nanos) -> Result<RdmcNode, RdmcError> {
        let mut mine = Vec::new();
        let mut count: BTreeMap<ProcessId, u16> = BTreeMap::new();
        for cfg in groups {
            let regions_at: Vec<RegionId> = cfg
                .members
                .iter()
                .map(|p| {
                    let c = count.entry(*p).or_insert(0);
                    *c += 1;
                    RegionId(*c - 1)
                })
                .collect();
            let bad = |why: &str| RdmcError::Config {
                id: cfg.id,
                why: why.into(),
            };
            if cfg.members.is_empty() {
                return Err(bad("a group needs at least one member"));
            }
            if cfg.block_size == 0 {
                return Err(bad("the block size must be at least 1 byte"));
            }
            if !cfg.racks.is_empty() && cfg.racks.len() != cfg.members.len() {
                return Err(bad("the rack map must name one rack per member"));
            }
            let unique: BTreeSet<_> = cfg.members.iter().collect();
            if unique.len() != cfg.members.len() {
                return Err(bad("a process is listed twice among the members"));
            }
            let Some(index) = cfg.members.iter().position(|&m| m == me) else {
                continue;
            };
            mine.push(Group {
                region: regions_at[index],
                regions_at,
                me: index,
                first_relay: first_relay(cfg, index),
                first_relay_of: BTreeMap::new(),
                failed: false,
                queue: VecDeque::new(),
                next_msg: 0,
                cur: None,
                ready: BTreeSet::new(),
                sizes: BTreeMap::new(),
                early: Vec::new(),
                asked_first: false,
                lent: None,
                idle_probed: Nanos::ZERO,
                idle_period: probe,
                cfg: cfg.clone(),
            });
        }
        Ok(RdmcNode {
            me,
            groups: mine,
            events: VecDeque::new(),
            writes: BTreeMap::new(),
            probe,
            dead: BTreeSet::new(),
            handoff: Handoff::Copy,
        })
    }

    /// This member, handing completed messages over as `handoff` says.
    pub fn with_handoff(mut self, handoff: Handoff) -> RdmcNode {
        self.handoff = handoff;
        self
    }

    /// The application is done with message `msg` of group `id`, lent by its
    /// [`Delivered::Lent`] upcall: the member may take the group's next message into the
    /// buffer. Refused unless `msg` is the message lent, so a release once too often cannot
    /// free the buffer of a message still being read.
    pub fn release(&mut self, id: u32, msg: u64) -> Result<(), RdmcError> {
        let g = self.group_mut(id)?;
        if g.lent != Some(msg) {
            return Err(RdmcError::NotLent { group: id, msg });
        }
        g.lent = None;
        Ok(())
    }

    /// `send_message`: queues `data` (bytes, or a synthetic payload for large simulated
    /// messages) for the members of group `id` (root only); returns its sequence number.
    pub fn send_message(&mut self, id: u32, data: impl Into<Data>) -> Result<u64, RdmcError> {
        let data = data.into();
        let g = self.group_mut(id)?;
        if g.me != 0 {
            return Err(RdmcError::NotRoot(id));
        }
        if g.failed {
            return Err(RdmcError::Failed(id));
        }
        if data.len() > g.cfg.buffer_bytes {
            return Err(RdmcError::TooLarge {
                len: data.len(),
                max: g.cfg.buffer_bytes,
            });
        }
        if data.len().div_ceil(g.cfg.block_size) > u32::MAX as usize {
            return Err(RdmcError::Config {
                id,
                why: format!(
                    "{} bytes in {}-byte blocks: more blocks than a 32-bit immediate names; \
                     use larger blocks",
                    data.len(),
                    g.cfg.block_size
                ),
            });
        }
        g.queue.push_back(data);
        Ok(g.next_msg + g.cur.is_some() as u64 + g.queue.len() as u64 - 1)
    }

    /// `destroy_group`: stops taking part in group `id`; transfers in progress stop.
    pub fn destroy_group(&mut self, id: u32) -> Result<(), RdmcError> {
        let g = self.group_mut(id)?;
        g.failed = true;
        g.cur = None;
        g.queue.clear();
        Ok(())
    }

    /// The groups this process is a member of.
    pub fn group_ids(&self) -> Vec<u32> {
        self.groups.iter().map(|g| g.cfg.id).collect()
    }

    /// The next upcall.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn group_mut(&mut self, id: u32) -> Result<&mut Group, RdmcError> {
        self.groups
            .iter_mut()
            .find(|g| g.cfg.id == id)
            .ok_or(RdmcError::UnknownGroup(id))
    }

    fn send_ctl<N: Nic>(&self, nic: &mut N, to: ProcessId, c: Ctl) {
        // A failure is reported as a completion even when unsignaled.
        let _ = nic.send(to, &c.encode(), false);
    }

    fn on_ctl<N: Nic>(&mut self, nic: &mut N, from: ProcessId, c: Ctl) {
        let find = |groups: &[Group], id: u32| groups.iter().position(|g| g.cfg.id == id);
        match c {
            Ctl::Probe => {}
            Ctl::Failed { group, member } => {
                if let Some(gi) = find(&self.groups, group) {
                    self.fail(nic, gi, member as usize);
                }
            }
            Ctl::Ready { group, msg, step } => {
                if let Some(gi) = find(&self.groups, group) {
                    let g = &mut self.groups[gi];
                    if let Some(m) = g.cfg.members.iter().position(|&p| p == from) {
                        g.ready.insert((msg, step, m));
                    }
                }
            }
            Ctl::Size { group, msg, bytes } => {
                if let Some(gi) = find(&self.groups, group) {
                    self.groups[gi].sizes.insert(msg, bytes);
                }
            }
        }
    }

    fn on_block(&mut self, region: RegionId, block: usize, now: Nanos) {
        let Some(g) = self.groups.iter_mut().find(|g| g.region == region) else {
            return;
        };
        match &mut g.cur {
            Some(c) => {
                if let Some(h) = c.have.get_mut(block) {
                    *h = true;
                }
                *c.arrived.entry(block).or_insert(0) += 1;
                c.landed(now);
            }
            None => g.early.push((g.next_msg, block, now)),
        }
    }

    fn drain<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        while let Some(cq) = nic.poll_completion() {
            worked = true;
            let gi = self.writes.remove(&cq.wr);
            if cq.status == Status::Success {
                if let Some(gi) = gi {
                    if let Some(c) = &mut self.groups[gi].cur {
                        c.sent = true;
                    }
                }
            } else if cq.kind != OpKind::Reconnect {
                self.peer_failed(nic, cq.peer);
            }
        }
        while let Some(r) = nic.poll_recv() {
            worked = true;
            match r {
                Recv::Message { from, data } => {
                    if let Some(c) = Ctl::decode(&data) {
                        self.on_ctl(nic, from, c);
                    }
                }
                Recv::Immediate { imm, at, .. } => {
                    // The block landed by RDMA into the receive buffer: no copy, one arrival
                    // to take and account.
                    nic.work(Work::Decode, 1);
                    self.on_block(at.region, imm as usize, nic.now())
                }
            }
        }
        worked
    }

    /// Starts the next message of group `gi` if its size is known (root: queued).
    fn start<N: Nic>(&mut self, nic: &mut N, gi: usize) -> bool {
        let g = &mut self.groups[gi];
        if g.failed || g.cur.is_some() {
            return false;
        }
        let msg = g.next_msg;
        let (bytes, data) = if g.me == 0 {
            match g.queue.pop_front() {
                Some(d) => (d.len() as u64, Some(d)),
                None => return false,
            }
        } else {
            if g.lent.is_some() {
                return false;
            }
            if !g.asked_first {
                // Ready for the first block of the next message: the buffer is free.
                g.asked_first = true;
                let now = nic.now();
                g.idle_probed = now;
                g.idle_period = self.probe;
                let relay = g.cfg.members[g.first_relay.expect("a receiver")];
                let c = Ctl::Ready {
                    group: g.cfg.id,
                    msg,
                    step: FIRST,
                };
                self.send_ctl(nic, relay, c);
                return true;
            }
            match g.sizes.remove(&msg) {
                Some(b) => (b, None),
                None => return false,
            }
        };
        let k = (bytes as usize).div_ceil(g.cfg.block_size).max(1);
        let steps = g.cfg.steps(k, g.me);
        let mut have = vec![g.me == 0; k];
        let mut arrived = BTreeMap::new();
        let mut early_at = Vec::new();
        for (m, b, at) in g.early.drain(..) {
            if m == msg && b < k {
                have[b] = true;
                *arrived.entry(b).or_insert(0) += 1;
                early_at.push(at);
            }
        }
        let now = nic.now();
        if g.me != 0 {
            self.events.push_back(Event::Incoming {
                group: g.cfg.id,
                msg,
                bytes,
            });
        }
        g.cur = Some(Current {
            msg,
            bytes,
            steps,
            step: 0,
            have,
            arrived,
            posted: false,
            sent: false,
            received: false,
            asked: BTreeSet::new(),
            data,
            sent_to: BTreeSet::new(),
            received_any: false,
            started: now,
            waiting: Nanos::ZERO,
            first_block: None,
            last_block: None,
            since: now,
            probed: now,
        });
        let c = g.cur.as_mut().expect("just set");
        if g.me == 0 {
            c.landed(now);
        } else if let (Some(&lo), Some(&hi)) = (early_at.iter().min(), early_at.iter().max()) {
            c.first_block = Some(lo);
            if c.have.iter().all(|h| *h) {
                c.last_block = Some(hi);
            }
        }
        true
    }

    /// Block `b` as group `gi`'s member holds it: a window of the root's message, or what
    /// landed in the receive buffer (a synthetic block stays synthetic on the simulator).
    fn block_data<N: Nic>(&self, nic: &N, gi: usize, b: usize) -> Data {
        let g = &self.groups[gi];
        let c = g.cur.as_ref().expect("in progress");
        let bs = g.cfg.block_size;
        let start = b * bs;
        let len = (start + bs).min(c.bytes as usize) - start;
        match &c.data {
            Some(d) => d.window(start, len),
            None => nic
                .read_data(LocalAddr::new(g.region, start), len)
                .expect("own region"),
        }
    }

    /// Whether member `target` of group `gi` gets its first block of the current message from
    /// our send in this step: we are its first relay and have not sent to it yet.
    fn carries_first_block(&mut self, gi: usize, target: usize) -> bool {
        let g = &mut self.groups[gi];
        let cfg = &g.cfg;
        let relay = *g
            .first_relay_of
            .entry(target)
            .or_insert_with(|| first_relay(cfg, target));
        let c = g.cur.as_ref().expect("in progress");
        relay == Some(g.me) && !c.sent_to.contains(&target)
    }

    /// Advances group `gi`'s message as far as it can.
    fn advance<N: Nic>(&mut self, nic: &mut N, gi: usize) -> bool {
        let mut worked = false;
        let now = nic.now();
        loop {
            let g = &mut self.groups[gi];
            let Some(c) = &mut g.cur else {
                return worked;
            };
            if c.step >= c.steps.len() {
                break;
            }
            let step = c.steps[c.step];
            let t = c.step;
            // Ask for this step's block.
            if let Some(rx) = step.recv {
                let first = g.first_relay == Some(rx.peer) && !c.received_any;
                if !first && c.asked.insert(t) {
                    let to = g.cfg.members[rx.peer];
                    let ctl = Ctl::Ready {
                        group: g.cfg.id,
                        msg: c.msg,
                        step: t as u64,
                    };
                    self.send_ctl(nic, to, ctl);
                    worked = true;
                    continue;
                }
                if !c.received {
                    if let Some(count) = c.arrived.get_mut(&rx.block).filter(|n| **n > 0) {
                        *count -= 1;
                        c.received = true;
                    }
                }
            } else {
                c.received = true;
            }
            if let Some(tx) = step.send {
                if !c.posted {
                    // The target's first block is announced by Ready(FIRST).
                    let key = if self.carries_first_block(gi, tx.peer) {
                        FIRST
                    } else {
                        t as u64
                    };
                    let g = &mut self.groups[gi];
                    let c = g.cur.as_mut().expect("in progress");
                    let ready = g.ready.contains(&(c.msg, key, tx.peer));
                    if !ready || !c.have[tx.block] {
                        return self.maybe_probe(nic, gi, Some(tx.peer), now) || worked;
                    }
                    g.ready.remove(&(c.msg, key, tx.peer));
                    let (id, msg, bytes, to) = (g.cfg.id, c.msg, c.bytes, g.cfg.members[tx.peer]);
                    c.posted = true;
                    c.sent_to.insert(tx.peer);
                    c.waiting += now.saturating_sub(c.since);
                    if key == FIRST {
                        self.send_ctl(
                            nic,
                            to,
                            Ctl::Size {
                                group: id,
                                msg,
                                bytes,
                            },
                        );
                    }
                    let data = self.block_data(nic, gi, tx.block);
                    let dst = RemoteAddr::new(
                        to,
                        self.groups[gi].regions_at[tx.peer],
                        tx.block * self.groups[gi].cfg.block_size,
                    );
                    // The immediate names the block; a block count beyond u32 is refused at
                    // `send_message`.
                    let write = Op::Write {
                        dst,
                        data,
                        imm: Some(tx.block as u32),
                        flags: WriteFlags::SIGNALED,
                    };
                    match nic.post(write) {
                        Ok(wr) => {
                            self.writes.insert(wr, gi);
                        }
                        Err(_) => {
                            self.peer_failed(nic, to);
                            return true;
                        }
                    }
                    worked = true;
                    continue;
                }
            } else {
                c.sent = true;
            }
            if !(c.sent && c.received) {
                let waiting_on = step.recv.map(|r| r.peer).or(step.send.map(|s| s.peer));
                return self.maybe_probe(nic, gi, waiting_on, now) || worked;
            }
            c.received_any |= step.recv.is_some();
            c.step += 1;
            c.posted = false;
            c.sent = false;
            c.received = false;
            c.since = now;
            worked = true;
        }
        // Every step done: deliver (receivers need every block).
        let g = &mut self.groups[gi];
        let c = g.cur.as_ref().expect("in progress");
        if !c.have.iter().all(|h| *h) {
            return worked;
        }
        let c = g.cur.take().expect("in progress");
        let at = LocalAddr::new(g.region, 0);
        let len = c.bytes as usize;
        let data = match (c.data, self.handoff) {
            (Some(d), _) => Delivered::Data(d),
            (None, Handoff::Copy) => Delivered::Data(nic.read_data(at, len).expect("own region")),
            (None, Handoff::Lend) => {
                // Held by the application: the first relay is probed meanwhile, as while the
                // group waits for its next message, so a root that dies is still detected.
                g.lent = Some(c.msg);
                g.idle_probed = now;
                g.idle_period = self.probe;
                Delivered::Lent { at, len }
            }
        };
        g.next_msg += 1;
        g.asked_first = false;
        g.ready.retain(|r| r.0 > c.msg);
        nic.work(Work::Deliver, 1);
        self.events.push_back(Event::Completed {
            group: g.cfg.id,
            msg: c.msg,
            data,
            at: now,
            started: c.started,
            waiting: c.waiting,
            first_block: c.first_block.expect("every block landed"),
            last_block: c.last_block.expect("every block landed"),
        });
        true
    }

    /// Whether no message is in progress or queued in any group.
    pub fn idle(&self) -> bool {
        self.groups
            .iter()
            .all(|g| g.failed || (g.cur.is_none() && g.queue.is_empty()))
    }
}

/// The member that sends `member` its first block: the same for every message size (the
/// schedules keep it so), hence known before the size is.
fn first_relay(cfg: &GroupConfig, member: usize) -> Option<usize> {
    (member > 0).then(|| {
        cfg.steps(1, member)
            .iter()
            .find_map(|s| s.recv.map(|r| r.peer))
            .expect("every receiver receives")
    })
}

impl<N: Nic> Process<N> for RdmcNode {
    fn regions(&self) -> Vec<RegionSpec> {
        self.groups
            .iter()
            // Sparse: the simulator keeps synthetic blocks as descriptors.
            .map(|g| {
                RegionSpec::new(g.cfg.buffer_bytes)
                    .with_default(Access::Write)
                    .sparse()
            })
            .collect()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut worked = self.drain(nic);
        for gi in 0..self.groups.len() {
            worked |= self.start(nic, gi);
            worked |= self.advance(nic, gi);
            worked |= self.probe_idle(nic, gi);
        }
        Progress::worked(worked).wake_at(self.next_deadline())
    }
}
