//! A TRAM replica: its state (section 5.3), its main loop (Algorithm 2), and what every role
//! shares: delivering a log entry, writing control words, handling completions.
//!
//! | step | where |
//! |---|---|
//! | 2.1 becoming leader | [`crate::election`] (Algorithm 3), then [`crate::catchup`] (Algorithms 4, 5) |
//! | 2.2-2.5 leader: find, order, deliver, forward | [`crate::ordering`] |
//! | 2.6 followers deliver from the log | [`crate::ordering`] |
//! | 2.7 checking permissions | [`crate::election`] |
//!
//! Details the paper leaves out, decided here:
//!
//! - **Followers when traffic stops.** Step 2.6 delivers slot i once slot i+1 exists, so the last
//!   message before a pause would wait for the next one. A leader that has nothing in flight
//!   writes its commit index (`FUO`, every entry below it is decided) into each follower's `CTL`,
//!   and again with each heartbeat; a follower delivers slot i when slot i+1 exists *or* a
//!   commit index above i arrived. The commit word goes on the same queue pair as the entries
//!   it covers, after them, so a follower never sees it before the entries.
//! - **Finite buffers.** `HM` and `LOG` are circular; see [`crate::ordering`] for when a slot is
//!   reused and how a full buffer pushes back on its writer.
//! - **Streams to followers.** The leader writes log entries to each follower in index order,
//!   starting where that follower said it was when it granted permission (`perm_ack` carries its
//!   `STD`). So a follower's slot i+1 is only ever written after its slot i holds the decided
//!   entry, which is what makes Step 2.6 safe after leader changes.
//! - **The candidate counts itself.** Algorithm 3 waits for f+1 acknowledgements of a
//!   timestamp the candidate itself never acknowledges (Step 2.7 skips `ts = tmp`); we count
//!   the candidate's own permission, as f+1 out of 2f+1 must tolerate f crashes.

use crate::config::Config;
use crate::layout::{
    local, remote, Hm, Layout, LogEntry, CTL, FROM_PARENT, HM, LOG, RESP, SCRATCH,
};
use bytes::Bytes;
use multicast::{Delivery, GroupId, Membership, MsgId, Omega, Server};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use transport::slot::Reject;
use transport::{
    Nanos, Nic, OpKind, Process, ProcessId, Progress, Qp, RegionSpec, Status, Timer, Work, WrId,
    WriteFlags,
};

/// What a replica is doing.
#[derive(Debug)]
pub(crate) enum Role {
    /// Following `leader` (Step 2.6).
    Follower,
    /// Running `become_leader` (Algorithm 3) and reading its group's logs (Algorithm 4.1).
    Candidate(crate::election::Candidacy),
    /// Leading: catching up (Algorithm 4) then ordering (Steps 2.2-2.5).
    Leader(Box<crate::ordering::Lead>),
}

/// A TRAM server replica.
#[derive(Debug)]
pub struct TramServer {
    pub(crate) cfg: Arc<Config>,
    pub(crate) layout: Layout,
    pub(crate) group: GroupId,
    pub(crate) rank: usize,
    pub(crate) me: ProcessId,
    pub(crate) parent: Option<GroupId>,
    pub(crate) children: Vec<GroupId>,
    /// This group's index among its parent's children (for the credit words).
    pub(crate) child_index: usize,
    /// `slot_in[x]`: per source (clients, then the parent), the next position to take.
    pub(crate) slot_in: Vec<u64>,
    /// `slot_out[x]`: per child, the next free position in its buffer for this group.
    pub(crate) slot_out: Vec<u64>,
    /// Per child: positions of its buffer known to be consumed (decided by the child).
    pub(crate) credit: Vec<u64>,
    /// Positions of the parent's buffer this group decided: the credit it reports to its
    /// parent. Not `slot_in`, which a leader advances when it takes a message, before the
    /// message is decided.
    pub(crate) decided_from_parent: u64,
    /// First Undecided Offset: the next log index to decide (meaningful while leading).
    pub(crate) fuo: u64,
    /// Slot To Deliver: the next log index to deliver.
    pub(crate) std: u64,
    /// The highest timestamp seen or proposed: `counter << 8 | rank`.
    pub(crate) tmp: u64,
    /// The rank this replica granted its log to (itself while candidate or leader).
    pub(crate) leader: Option<usize>,
    pub(crate) role: Role,
    /// `perm[r]` values already handled (Step 2.7 handles each request once).
    pub(crate) perm_seen: Vec<u64>,
    /// The highest commit index any leader wrote here.
    pub(crate) commit_seen: u64,
    /// The `STD` last reported to the leader.
    pub(crate) progress_sent: (Option<usize>, u64),
    /// The leader oracle over the group's heartbeat words.
    pub(crate) omega: Omega,
    /// No candidacy before this time (after a failed one).
    pub(crate) retry_at: Nanos,
    pub(crate) beat: u64,
    pub(crate) beat_timer: Timer,
    /// Peers whose queue pair is in error, being reconnected.
    pub(crate) broken: BTreeSet<ProcessId>,
    /// Signaled writes and reads in flight: op -> (rank, log index).
    pub(crate) inflight: BTreeMap<WrId, (usize, u64)>,
    pub(crate) delivered: VecDeque<Delivery>,
    /// Why this replica halted, once it has.
    pub(crate) halt: Option<String>,
    /// Leader changes this replica took part in as the new leader.
    pub(crate) reigns: u64,
    /// Writes of this replica refused by a revoked permission.
    pub(crate) refused: u64,
    pub(crate) buf: Vec<u8>,
    pub(crate) enc: Vec<u8>,
}

impl TramServer {
    /// Replica `rank` of group `g` of `cfg`.
    pub fn new(cfg: Arc<Config>, g: GroupId, rank: usize) -> TramServer {
        let children = cfg.children(g);
        let parent = cfg.tree.parent(g);
        let child_index = parent
            .map(|p| cfg.tree.children(p).position(|c| c == g).expect("a child"))
            .unwrap_or(0);
        TramServer {
            layout: Layout::new(&cfg, g),
            group: g,
            rank,
            me: cfg.server(g, rank),
            parent,
            child_index,
            slot_in: vec![0; cfg.clients + 1],
            slot_out: vec![0; children.len()],
            credit: vec![0; children.len()],
            decided_from_parent: 0,
            children,
            fuo: 0,
            std: 0,
            tmp: 0,
            leader: None,
            role: Role::Follower,
            perm_seen: vec![0; cfg.replicas],
            commit_seen: 0,
            progress_sent: (None, 0),
            omega: Omega::new(cfg.replicas),
            retry_at: Nanos::ZERO,
            beat: 0,
            beat_timer: Timer::new(),
            broken: BTreeSet::new(),
            inflight: BTreeMap::new(),
            delivered: VecDeque::new(),
            halt: None,
            reigns: 0,
            refused: 0,
            buf: Vec::new(),
            enc: Vec::new(),
            cfg,
        }
    }

    /// Whether this replica currently acts as its group's leader.
    pub fn is_leader(&self) -> bool {
        matches!(self.role, Role::Leader(_))
    }

    /// How many times this replica became leader.
    pub fn reigns(&self) -> u64 {
        self.reigns
    }

    /// Whether this replica is its group's initial leader (rank 0).
    pub fn initial(&self) -> bool {
        self.rank == 0
    }

    /// Writes of this replica refused because it had lost its permission.
    pub fn refused_writes(&self) -> u64 {
        self.refused
    }

    /// Per child: positions written into its buffer that it has not reported decided yet (at
    /// most `hm_slots` while this replica leads: backpressure).
    pub fn unconsumed_forwards(&self) -> Vec<u64> {
        self.slot_out
            .iter()
            .zip(&self.credit)
            .map(|(o, c)| o.saturating_sub(*c))
            .collect()
    }

    /// The next log index this replica will deliver.
    pub fn std(&self) -> u64 {
        self.std
    }

    /// A one-line summary of the replica's state, for failure reports.
    pub fn describe(&self) -> String {
        let role = match &self.role {
            Role::Follower => "follower".to_string(),
            Role::Candidate(_) => "candidate".to_string(),
            Role::Leader(l) => format!(
                "leader(catching up {}, pending {:?}, granted {:?})",
                l.catchup.is_some(),
                l.pending.as_ref().map(|p| p.index),
                l.granted
            ),
        };
        format!(
            "{}/{} {role} std {} fuo {} tmp {:#x} leader {:?} omega {} commit {} slot_in {:?} slot_out {:?} credit {:?} halted {} reigns {}",
            self.group,
            self.rank,
            self.std,
            self.fuo,
            self.tmp,
            self.leader,
            self.omega.expected(),
            self.commit_seen,
            self.slot_in,
            self.slot_out,
            self.credit,
            self.halt.is_some(),
            self.reigns
        )
    }

    /// The region sizes of a replica of group `g`: `(HM, LOG, CTL)` bytes.
    pub fn region_bytes(cfg: &Config, g: GroupId) -> (usize, usize, usize) {
        let l = Layout::new(cfg, g);
        (l.hm_bytes(), l.log_bytes(), l.ctl_bytes())
    }

    /// The members of this group other than this replica, by rank.
    pub(crate) fn peers(&self) -> impl Iterator<Item = (usize, ProcessId)> + '_ {
        (0..self.cfg.replicas)
            .filter(move |&r| r != self.rank)
            .map(move |r| (r, self.cfg.server(self.group, r)))
    }

    /// Index of the parent in the source arrays (`slot_in`).
    pub(crate) fn parent_source(&self) -> usize {
        self.cfg.clients
    }

    pub(crate) fn source_index(&self, source: u32) -> usize {
        if source == FROM_PARENT {
            self.parent_source()
        } else {
            source as usize
        }
    }

    /// Posts a small control write (inline, unsignaled) on the data queue pair unless the
    /// queue pairs to `to` are being reconnected; what it carries is written again later
    /// (commits, progress).
    pub(crate) fn write_word<N: Nic>(&mut self, nic: &mut N, to: ProcessId, at: usize, v: &[u8]) {
        self.write_word_on(nic, to, at, v, Qp::Data);
    }

    /// [`TramServer::write_word`] on queue pair `qp`.
    pub(crate) fn write_word_on<N: Nic>(
        &mut self,
        nic: &mut N,
        to: ProcessId,
        at: usize,
        v: &[u8],
        qp: Qp,
    ) {
        if self.broken.contains(&to) {
            return;
        }
        let _ = nic.post_write(remote(to, CTL, at), v, WriteFlags::NONE.inline().on(qp));
    }

    /// Posts a write of `data` to `at` of `to`'s `region`, inline when it fits.
    pub(crate) fn post_bytes<N: Nic>(
        &mut self,
        nic: &mut N,
        at: transport::RemoteAddr,
        data: &[u8],
        signaled: bool,
    ) -> Option<WrId> {
        let flags = WriteFlags {
            signaled,
            ..WriteFlags::NONE
        };
        nic.post_write(at, data, flags.inline_if_fits(data.len(), nic.limits()))
            .ok()
    }

    /// The decoded log entry at index `i` of this replica's own log, if the slot holds it.
    pub(crate) fn own_entry<N: Nic>(&mut self, nic: &N, i: u64) -> Option<LogEntry> {
        self.slot_entry(nic, local(LOG, self.layout.log_slot(i)), i)
            .ok()
    }

    /// The decoded log entry `i` at `at` (this replica's log or a copy in `SCRATCH`), or why
    /// the slot does not hold it: [`Reject::Torn`] when it holds index `i` caught mid-write.
    pub(crate) fn slot_entry<N: Nic>(
        &mut self,
        nic: &N,
        at: transport::LocalAddr,
        i: u64,
    ) -> Result<LogEntry, Reject> {
        let codec = self.layout.log_codec;
        let range = match codec
            .read(nic, at, i as u32, &mut self.buf)
            .expect("own region")
        {
            // The codec takes a zeroed slot for entry 0 with an empty payload and a wrong CRC;
            // no log entry has an empty payload, so a zero header word is a slot never written.
            Err(Reject::Torn) if nic.load_u64(at).expect("own region") == 0 => {
                return Err(Reject::NotYet)
            }
            r => r?,
        };
        // The CRC matched: an entry that does not parse was never written whole.
        LogEntry::decode(&self.buf[range]).ok_or(Reject::Torn)
    }

    /// Whether the log slot at `at`, which would hold index `i`, holds a later lap (index
    /// `i + k * log_slots`): entry `i` was overwritten before this replica took it.
    pub(crate) fn lapped<N: Nic>(&self, nic: &N, at: transport::LocalAddr, i: u64) -> bool {
        let header = nic.load_u64(at).expect("own region");
        let found = header as u32;
        // An empty slot has header 0; sequence numbers compare modulo 2^32.
        header != 0 && found != i as u32 && (found.wrapping_sub(i as u32) as i32) > 0
    }

    /// Delivers log entry `e` at index `std` (Steps 2.4, 2.6 and 4.4): advances the pointers the
    /// entry implies, hands the message to the application if this group is a destination, and
    /// answers its client.
    pub(crate) fn deliver_entry<N: Nic>(&mut self, nic: &mut N, e: &LogEntry) {
        nic.work(Work::Decode, 1);
        let src = self.source_index(e.source);
        self.slot_in[src] = self.slot_in[src].max(e.src_pos + 1);
        if e.source == FROM_PARENT {
            self.decided_from_parent = self.decided_from_parent.max(e.src_pos + 1);
        }
        let m = e.msg();
        for (x, o) in e.outs.iter().enumerate() {
            let forwarded = m.dst.bits() & self.cfg.tree.reach(self.children[x]).bits() != 0;
            let next = if forwarded { o.pos + 1 } else { o.pos };
            self.slot_out[x] = self.slot_out[x].max(next);
            self.credit[x] = self.credit[x].max(o.credit);
        }
        self.std += 1;
        if m.dst.contains(self.group) {
            let client = self.cfg.client(m.client as usize);
            nic.work(Work::Deliver, 1);
            nic.work(Work::Copy, m.val.len() as u64);
            self.delivered.push_back(Delivery {
                msg: MsgId::new(client, m.seq),
                dst: m.dst,
                payload: Bytes::copy_from_slice(m.val),
                // TRAM orders along its tree, with no timestamp.
                order: None,
            });
            let at = remote(client, RESP, Layout::response(self.me));
            let _ = nic.post_write(at, &(m.seq + 1).to_le_bytes(), WriteFlags::NONE.inline());
        }
    }

    /// Whether the message of `HM` buffer `buffer` at position `pos` has arrived; if so, its
    /// encoding is left in `self.enc`.
    pub(crate) fn hm_message<N: Nic>(&mut self, nic: &N, buffer: usize, pos: u64) -> bool {
        let at = local(HM, self.layout.hm_slot(buffer, pos));
        let codec = self.layout.hm_codec;
        match codec
            .read(nic, at, pos as u32, &mut self.buf)
            .expect("own region")
        {
            Ok(range) if Hm::decode(&self.buf[range.clone()]).is_some() => {
                self.enc.clear();
                self.enc.extend_from_slice(&self.buf[range]);
                true
            }
            _ => false,
        }
    }

    /// Completions: quorum counting for the entry in flight, log reads, refused and broken
    /// queue pairs.
    fn drain_completions<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        while let Some(cq) = nic.poll_completion() {
            worked = true;
            let tagged = self.inflight.remove(&cq.wr);
            match (cq.status, cq.kind) {
                (Status::Success, OpKind::Reconnect) => {
                    self.broken.remove(&cq.peer);
                    self.on_reconnected(cq.peer);
                    self.answer_again(nic, cq.peer);
                }
                (Status::Success, OpKind::Read) => {
                    if let Some((rank, _)) = tagged {
                        self.on_log_read(rank, true);
                    }
                }
                (Status::Success, _) => {
                    if let Some((rank, index)) = tagged {
                        self.on_log_written(rank, index);
                    }
                }
                (status, kind) => {
                    if status == Status::AccessDenied {
                        self.refused += 1;
                    }
                    if matches!(status, Status::AccessDenied | Status::Flushed)
                        && kind != OpKind::Reconnect
                        && self.broken.insert(cq.peer)
                    {
                        // A denied op leaves the queue pair in error: reconnect (the cost the
                        // paper reports for failover).
                        let _ = nic.reconnect(cq.peer);
                    }
                    if status == Status::PeerUnreachable && kind == OpKind::Reconnect {
                        self.broken.remove(&cq.peer);
                    }
                    self.on_peer_failed(nic, cq.peer, tagged);
                }
            }
        }
        worked
    }

    /// A follower (or candidate) reports its `STD` to the leader it granted, when it moved.
    fn report_progress<N: Nic>(&mut self, nic: &mut N) {
        let Some(l) = self.leader.filter(|&l| l != self.rank) else {
            return;
        };
        if self.progress_sent == (Some(l), self.std) {
            return;
        }
        let to = self.cfg.server(self.group, l);
        if self.broken.contains(&to) {
            return;
        }
        self.progress_sent = (Some(l), self.std);
        let at = self.layout.progress(self.rank);
        self.write_word(nic, to, at, &self.std.to_le_bytes());
    }

    fn check_halt<N: Nic>(&mut self, nic: &N) {
        if nic
            .load_u64(local(CTL, self.layout.halt()))
            .expect("own region")
            != 0
        {
            self.halt = Some(
                "a leader set this replica's halt word in CTL: it found the log entries this replica still needed gone from its own log".into(),
            );
        }
    }
}

impl<N: Nic> Process<N> for TramServer {
    fn regions(&self) -> Vec<RegionSpec> {
        self.layout.server_regions()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if self.halt.is_some() {
            return Progress::IDLE;
        }
        let mut worked = self.drain_completions(nic);
        // Step 2.7 first: a request for permission may demote this replica.
        worked |= self.check_permissions(nic);
        let mut wake = None;
        match self.role {
            Role::Follower => worked |= self.follow(nic),
            Role::Candidate(_) => worked |= self.campaign(nic),
            Role::Leader(_) => {
                let (w, at) = self.lead(nic);
                worked |= w;
                wake = at;
            }
        }
        self.report_progress(nic);
        self.check_halt(nic);
        let (w, at) = self.failure_detector(nic);
        worked |= w;
        Progress::worked(worked).wake_at(wake).wake_at(at)
    }
}

impl Server for TramServer {
    fn group(&self) -> GroupId {
        self.group
    }

    fn poll_delivery(&mut self) -> Option<Delivery> {
        self.delivered.pop_front()
    }

    fn halt_reason(&self) -> Option<&str> {
        self.halt.as_deref()
    }
}

/// Reads a log slot of `SCRATCH` (a copy of replica `rank`'s log) at index `i`.
pub(crate) fn scratch_slot(layout: &Layout, rank: usize, i: u64) -> transport::LocalAddr {
    local(SCRATCH, layout.scratch(rank) + layout.log_slot(i))
}

/// Where the message of `HM` buffer `buffer` at `pos` lives at `p`.
pub(crate) fn hm_at(
    layout: &Layout,
    p: ProcessId,
    buffer: usize,
    pos: u64,
) -> transport::RemoteAddr {
    remote(p, HM, layout.hm_slot(buffer, pos))
}
