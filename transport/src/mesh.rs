//! A mesh of [`ring`](crate::ring)s: message passing among a set of processes over one-sided
//! writes, one SPSC ring per ordered pair, for protocols that exchange messages (Ridge).
//!
//! Each member owns two regions, appended after its own: an inbox holding one ring per peer
//! (peer `i`'s ring at offset `i * ring_bytes`, writable by every member), and a credit region
//! holding one word per peer (where that peer, as consumer, returns credits for what this
//! member sent it). A message to a peer whose ring is full waits in a per-peer outbox of
//! bounded length; [`Mesh::send`] refuses with [`MeshError::Full`] once that is full too
//! (backpressure, never a silent drop), and [`Mesh::flush`] moves waiting messages as credits
//! come back. Messages from one sender arrive in the order sent; [`Mesh::recv`] takes from the
//! senders in turn, so no sender starves another. As with a single ring, a write that fails (a
//! crashed peer, a revoked region) surfaces as a completion on the sender's NIC; the mesh
//! leaves failure handling to its owner.
//!
//! [`Mesh::observe_changes`] hands the mesh the runtime's change hint ([`crate::changes`]):
//! `recv` then skips the rings whose memory did not change since it last found them empty. A
//! simulation speed-up only: reading an empty ring costs nothing in the model and decides
//! nothing, so the run is the same event for event.

use crate::bits::Bits;
use crate::changes::Changes;
use crate::nic::{Nic, WrId};
use crate::process::ProcessId;
use crate::region::{Access, LocalAddr, RegionId, RegionSpec, RemoteAddr};
use crate::ring::{RingConfig, RingError, RingReceiver, RingSender};
use crate::slot::SlotError;
use std::collections::VecDeque;

/// Where a mesh lives: its members, its rings' shape, and the ids of its two regions at every
/// member (the same at all of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeshLayout {
    /// The members, in index order.
    pub members: Vec<ProcessId>,
    /// Every ring's shape.
    pub ring: RingConfig,
    /// The inbox region's id at every member.
    pub inbox: RegionId,
    /// The credit region's id at every member (`inbox + 1`).
    pub credits: RegionId,
    /// Messages a member may hold per peer while that peer's ring is full.
    pub outbox_max: usize,
}

impl MeshLayout {
    /// A mesh of `members` whose regions take ids `first` and `first + 1` at each of them.
    pub fn new(members: Vec<ProcessId>, ring: RingConfig, first: RegionId) -> MeshLayout {
        MeshLayout {
            members,
            ring,
            inbox: first,
            credits: RegionId(first.0 + 1),
            outbox_max: ring.slots as usize,
        }
    }

    /// The mesh of every process of a run (ids `0..processes`), in regions 0 and 1, holding
    /// up to `outbox_max` messages per peer while the peer's ring is full (at least one, so a
    /// full ring defers a message rather than refusing it at once).
    pub fn whole_run(processes: usize, ring: RingConfig, outbox_max: usize) -> MeshLayout {
        let members = (0..processes).map(|p| ProcessId(p as u32)).collect();
        MeshLayout {
            outbox_max: outbox_max.max(1),
            ..MeshLayout::new(members, ring, RegionId(0))
        }
    }

    /// The two regions every member declares, in order (after its own).
    pub fn regions(&self) -> [RegionSpec; 2] {
        let n = self.members.len();
        [
            RegionSpec::new(n * self.ring.ring_bytes()).with_default(Access::Write),
            RegionSpec::new(n * RingConfig::CREDIT_BYTES).with_default(Access::Write),
        ]
    }

    fn index(&self, p: ProcessId) -> Option<usize> {
        self.members.iter().position(|&m| m == p)
    }
}

/// Why a message was not sent.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The peer's ring and this member's outbox for it are full: retry after [`Mesh::flush`].
    #[error(
        "mesh full towards {peer:?}: its ring and the outbox are full; retry after it consumes"
    )]
    Full {
        /// The peer.
        peer: ProcessId,
    },
    /// Not a member of the mesh.
    #[error("{peer:?} is not a member of the mesh")]
    NotMember {
        /// The process named.
        peer: ProcessId,
    },
    /// The ring refused the message (too large for a slot) or the NIC an op.
    #[error(transparent)]
    Ring(#[from] RingError),
}

/// One member's end of the mesh.
#[derive(Debug)]
pub struct Mesh {
    layout: MeshLayout,
    me: ProcessId,
    /// Per peer (by index): the ring into it, the ring from it, and what waits for credits.
    senders: Vec<RingSender>,
    receivers: Vec<RingReceiver>,
    outboxes: Vec<VecDeque<Vec<u8>>>,
    /// Which outboxes hold messages, so `flush` visits those alone.
    waiting: Bits,
    /// Messages in all outboxes (so `flush` returns at once when there are none).
    queued: usize,
    /// Each member's index, by process id (`u32::MAX`: not a member): `send` finds its peer
    /// without searching the member list.
    index_of: Vec<u32>,
    /// The largest message a slot holds.
    capacity: usize,
    /// The sender [`Mesh::recv`] looks at first next time.
    next_from: usize,
    /// The senders whose rings may hold something `recv` has not seen; only cleared once the
    /// owner gives the mesh the change hint ([`Mesh::observe_changes`]).
    unseen: Bits,
    /// How many bits of `unseen` are set (so `recv` returns at once when none is).
    unseen_count: usize,
    /// Whether the last [`Mesh::observe_changes`] got exact changes: only then may `recv`
    /// skip a ring.
    hinted: bool,
    /// The last changes taken from the NIC (kept for its allocation).
    changes: Changes,
}

impl Mesh {
    /// Member `me`'s end of `layout`.
    pub fn new(layout: MeshLayout, me: ProcessId) -> Result<Mesh, MeshError> {
        let mine = layout.index(me).ok_or(MeshError::NotMember { peer: me })?;
        let ring_bytes = layout.ring.ring_bytes();
        // Sized up front: a mesh of hundreds of members grew these vectors one doubling at a
        // time, in every member, 5% of a 10 ms Ridge run with 512 clients.
        let mut senders = Vec::with_capacity(layout.members.len());
        let mut receivers = Vec::with_capacity(layout.members.len());
        for (i, &peer) in layout.members.iter().enumerate() {
            senders.push(RingSender::new(
                layout.ring,
                RemoteAddr::new(peer, layout.inbox, mine * ring_bytes),
                LocalAddr::new(layout.credits, i * RingConfig::CREDIT_BYTES),
            )?);
            receivers.push(RingReceiver::new(
                layout.ring,
                LocalAddr::new(layout.inbox, i * ring_bytes),
                RemoteAddr::new(peer, layout.credits, mine * RingConfig::CREDIT_BYTES),
            )?);
        }
        let n = layout.members.len();
        let outboxes = vec![VecDeque::new(); n];
        let capacity = layout.ring.validate()?.capacity();
        let ids = layout
            .members
            .iter()
            .map(|p| p.index() + 1)
            .max()
            .unwrap_or(0);
        let mut index_of = vec![u32::MAX; ids];
        for (i, p) in layout.members.iter().enumerate().rev() {
            // Reversed, so a process listed twice maps to its first index, as a search would.
            index_of[p.index()] = i as u32;
        }
        Ok(Mesh {
            layout,
            me,
            senders,
            receivers,
            outboxes,
            waiting: Bits::new(n),
            queued: 0,
            index_of,
            capacity,
            next_from: 0,
            unseen: Bits::full(n),
            unseen_count: n,
            hinted: false,
            changes: Changes::exact(),
        })
    }

    /// This member.
    pub fn me(&self) -> ProcessId {
        self.me
    }

    /// The largest message [`Mesh::send`] accepts.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Sends `msg` to `to` (itself included), or queues it while `to`'s ring is full; refuses
    /// when the outbox for `to` is full too.
    pub fn send<N: Nic + ?Sized>(
        &mut self,
        nic: &mut N,
        to: ProcessId,
        msg: &[u8],
    ) -> Result<Option<WrId>, MeshError> {
        let i = match self.index_of.get(to.index()) {
            Some(&i) if i != u32::MAX => i as usize,
            _ => return Err(MeshError::NotMember { peer: to }),
        };
        // Checked here, not when it leaves the outbox: refused where it was offered.
        if msg.len() > self.capacity {
            return Err(RingError::Slot(SlotError::TooLarge {
                len: msg.len(),
                max: self.capacity,
            })
            .into());
        }
        if self.outboxes[i].is_empty() {
            match self.senders[i].try_send(nic, msg) {
                Ok(wr) => return Ok(Some(wr)),
                Err(RingError::Full) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if self.outboxes[i].len() >= self.layout.outbox_max {
            return Err(MeshError::Full { peer: to });
        }
        self.outboxes[i].push_back(msg.to_vec());
        self.waiting.insert(i);
        self.queued += 1;
        Ok(None)
    }

    /// Moves queued messages into rings that have room again; returns whether one moved.
    pub fn flush<N: Nic + ?Sized>(&mut self, nic: &mut N) -> Result<bool, MeshError> {
        let mut moved = false;
        if self.queued == 0 {
            return Ok(false);
        }
        let mut at = 0;
        while let Some(i) = self.waiting.first_in(at, self.outboxes.len()) {
            let outbox = &mut self.outboxes[i];
            while let Some(msg) = outbox.front() {
                match self.senders[i].try_send(nic, msg) {
                    Ok(_) => {
                        outbox.pop_front();
                        self.queued -= 1;
                        moved = true;
                    }
                    Err(RingError::Full) => break,
                    Err(e) => return Err(e.into()),
                }
            }
            if outbox.is_empty() {
                self.waiting.remove(i);
            }
            at = i + 1;
        }
        Ok(moved)
    }

    /// Messages waiting in outboxes.
    pub fn queued(&self) -> usize {
        debug_assert_eq!(
            self.queued,
            self.outboxes.iter().map(VecDeque::len).sum::<usize>()
        );
        self.queued
    }

    /// Takes what changed in this process's memory from the NIC ([`Nic::take_changes`]) and
    /// marks the rings it touched, so [`Mesh::recv`] skips the others. For an owner whose memory
    /// is the mesh's alone (or whose other code does not use the hint): it consumes every
    /// change. Call it before `recv` in each poll, once called, always.
    pub fn observe_changes<N: Nic + ?Sized>(&mut self, nic: &mut N) {
        nic.take_changes(&mut self.changes);
        // Without an exact hint (real threads, where memory changes while `recv` runs), every
        // ring is looked at on every `recv`, as if the mesh had no hint.
        self.hinted = self.changes.is_exact();
        let n = self.receivers.len();
        if !self.hinted {
            self.unseen.set_all();
            self.unseen_count = n;
            return;
        }
        let (ring_bytes, last) = (self.layout.ring.ring_bytes(), n - 1);
        for e in self.changes.extents() {
            if e.region == self.layout.inbox {
                for i in e.cells(ring_bytes) {
                    self.unseen_count += usize::from(self.unseen.insert(i.min(last)));
                }
            }
        }
    }

    /// The next message that has landed, with its sender, into `out`; senders take turns.
    pub fn recv<N: Nic + ?Sized>(
        &mut self,
        nic: &mut N,
        out: &mut Vec<u8>,
    ) -> Result<Option<ProcessId>, MeshError> {
        let n = self.receivers.len();
        if cfg!(debug_assertions) {
            for (i, r) in self.receivers.iter_mut().enumerate() {
                debug_assert!(
                    self.unseen.get(i) || !r.ready(nic)?,
                    "a message landed in the ring from {} unseen by the change hint",
                    self.layout.members[i]
                );
            }
        }
        // The senders in turn from `next_from`, round to it again; those whose rings did not
        // change since they were found empty are skipped.
        let start = self.next_from;
        for (lo, hi) in [(start, n), (0, start)] {
            let mut at = lo;
            while self.unseen_count > 0 {
                let Some(i) = self.unseen.first_in(at, hi) else {
                    break;
                };
                if self.receivers[i].try_recv(nic, out)? {
                    self.next_from = (i + 1) % n;
                    return Ok(Some(self.layout.members[i]));
                }
                if self.hinted {
                    self.unseen.remove(i);
                    self.unseen_count -= 1;
                }
                at = i + 1;
            }
        }
        Ok(None)
    }
}
