//! A Skeen server: the one process of its group. It takes messages from clients (Task 2) and
//! proposals from the other groups' servers (Task 3) off the mesh, hands them to its
//! [`Order`], sends its proposals to the other destinations, and answers each message's client
//! once it delivered the message (Task 4).
//!
//! # Backpressure
//!
//! A packet the mesh refuses ([`transport::mesh::MeshError::Full`]: the peer's ring and the
//! mesh's outbox towards it are full, because the peer is slow or paused) waits in this
//! server's backlog for that peer and is sent on a later poll, in order, before anything newer
//! to the same peer. Never dropped: Skeen has no retransmission, and a lost proposal would block
//! its message for good. The server keeps reading its own rings meanwhile, so two servers full
//! towards each other both make room. The backlog is bounded by the protocol: every packet
//! concerns a message in flight (a proposal to each other destination, or the reply that
//! completes it), and a client multicasts nothing else until it has every reply, so a server
//! holds at most `groups` packets per client in all its backlogs.

use crate::backlog::Backlog;
use crate::config::Config;
use crate::order::{Order, Received};
use crate::port::Port;
use crate::wire::Packet;
use multicast::{Delivery, GroupId, Membership, Server};
use std::collections::VecDeque;
use std::sync::Arc;
use transport::mesh::Mesh;
use transport::{Nic, Process, ProcessId, Progress, RegionSpec, Work};

/// The server of one group.
#[derive(Debug)]
pub struct SkeenServer {
    cfg: Arc<Config>,
    me: ProcessId,
    port: Port,
    order: Order,
    delivered: VecDeque<Delivery>,
    /// Packets that did not decode or came from a process that may not send them.
    rejected: u64,
}

impl SkeenServer {
    /// Group `g`'s server.
    pub fn new(cfg: Arc<Config>, g: GroupId) -> SkeenServer {
        let me = cfg.server_of(g);
        SkeenServer {
            port: Port::new(Mesh::new(cfg.mesh(), me).expect("a server is a member of the mesh")),
            order: Order::new(g),
            delivered: VecDeque::new(),
            rejected: 0,
            me,
            cfg,
        }
    }

    /// The ordering state (clock, messages pending).
    pub fn order(&self) -> &Order {
        &self.order
    }

    /// The packets waiting for room in a peer's ring, and how many ever did.
    pub fn backlog(&self) -> &Backlog {
        self.port.backlog()
    }

    /// Packets that were not packets, or not ones their sender may send, plus inputs the
    /// ordering ignored ([`crate::order::Ignored`]).
    pub fn rejected(&self) -> u64 {
        self.rejected + self.order.ignored()
    }

    /// A one-line state summary, for reports and failing tests.
    pub fn describe(&self) -> String {
        format!(
            "{} (group {}): clock {}, {} pending, {} early proposals ({} ever), {} in backlog ({} ever), {} rejected",
            self.me,
            self.order.group(),
            self.order.clock(),
            self.order.pending(),
            self.order.early_proposals(),
            self.order.early_total(),
            self.backlog().held(),
            self.backlog().deferred(),
            self.rejected()
        )
    }

    /// Handles one packet from `from`.
    fn handle<N: Nic>(&mut self, nic: &mut N, from: ProcessId, packet: Packet) {
        match packet {
            Packet::Multicast { id, dst, payload } => {
                if self.cfg.client_index(from).is_none()
                    || id.client != from.0
                    || !self.cfg.has_groups(dst)
                {
                    self.rejected += 1;
                    return;
                }
                nic.work(Work::Copy, payload.len() as u64);
                // Task 2: propose clock + 1 and tell the other destinations.
                if let Received::Proposed(ts) = self.order.receive(id, dst, payload) {
                    nic.work(Work::Order, 1);
                    let me = self.order.group();
                    if dst.len() > 1 {
                        let bytes = Packet::Propose { id, ts }.encode();
                        for g in dst.groups().filter(|&g| g != me) {
                            let to = self.cfg.server_of(g);
                            self.port.send(nic, to, bytes.clone());
                        }
                    }
                }
            }
            Packet::Propose { id, ts } => {
                // Task 3's input; a proposal names its group, which must be its sender's.
                if self.cfg.group_of(from) != Some(ts.group()) {
                    self.rejected += 1;
                    return;
                }
                // Stray proposals are counted by the ordering itself.
                let _ = self.order.propose(id, ts);
            }
            Packet::Reply { .. } => self.rejected += 1,
        }
    }

    /// Task 4's deliveries: handed out, and each message's client answered.
    fn answer<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut any = false;
        while let Some(d) = self.order.poll_delivery() {
            any = true;
            nic.work(Work::Order, 1);
            nic.work(Work::Deliver, 1);
            let ts = crate::order::Stamp(d.order.expect("Skeen stamps every delivery"));
            let bytes = Packet::Reply { id: d.msg, ts }.encode();
            self.port.send(nic, ProcessId(d.msg.client), bytes);
            self.delivered.push_back(d);
        }
        any
    }
}

impl<N: Nic> Process<N> for SkeenServer {
    fn regions(&self) -> Vec<RegionSpec> {
        self.cfg.mesh().regions().to_vec()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut worked = self.port.start_poll(nic);
        while let Some((from, packet)) = self.port.recv(nic) {
            worked = true;
            match packet {
                Ok(p) => self.handle(nic, from, p),
                Err(_) => self.rejected += 1,
            }
            worked |= self.answer(nic);
        }
        Progress::worked(worked)
    }
}

impl Server for SkeenServer {
    fn group(&self) -> GroupId {
        self.order.group()
    }

    fn poll_delivery(&mut self) -> Option<Delivery> {
        self.delivered.pop_front()
    }
}
