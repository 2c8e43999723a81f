//! A Skeen client (Task 1): it sends its message to the server of each destination group and
//! completes the multicast once every destination's server answered that it delivered it.
//!
//! One multicast in flight at a time (the papers' closed-loop clients). A message larger than
//! a slot allows is refused at once ([`MulticastError::TooLarge`]); nothing is sent. A
//! destination whose ring and outbox are full does not refuse the multicast: the packet waits
//! in the client's backlog and goes on a later poll (a client has one message in flight, so
//! that backlog holds at most one packet per group). The multicast was accepted, and Skeen
//! needs every destination to get it, so it is never dropped half sent.

use crate::backlog::Backlog;
use crate::config::Config;
use crate::port::Port;
use crate::wire::Packet;
use bytes::Bytes;
use multicast::{
    Client, Completed, DestSet, Membership, MsgId, MulticastError, MulticastResult, Outstanding,
};
use std::collections::VecDeque;
use std::sync::Arc;
use transport::mesh::Mesh;
use transport::{Nic, Process, ProcessId, Progress, RegionSpec, Work};

/// A Skeen client.
#[derive(Debug)]
pub struct SkeenClient {
    cfg: Arc<Config>,
    me: ProcessId,
    port: Port,
    next_seq: u64,
    /// The multicast in flight.
    inflight: Option<Outstanding>,
    completed: VecDeque<Completed>,
}

impl SkeenClient {
    /// Client `i`.
    pub fn new(cfg: Arc<Config>, i: usize) -> SkeenClient {
        let me = cfg.client(i);
        SkeenClient {
            port: Port::new(Mesh::new(cfg.mesh(), me).expect("a client is a member of the mesh")),
            me,
            next_seq: 0,
            inflight: None,
            completed: VecDeque::new(),
            cfg,
        }
    }

    /// The packets waiting for room in a peer's ring, and how many ever did.
    pub fn backlog(&self) -> &Backlog {
        self.port.backlog()
    }

    /// Whether a multicast is in flight.
    pub fn in_flight(&self) -> bool {
        self.inflight.is_some()
    }
}

impl<N: Nic> Process<N> for SkeenClient {
    fn regions(&self) -> Vec<RegionSpec> {
        self.cfg.mesh().regions().to_vec()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut worked = self.port.start_poll(nic);
        while let Some((from, packet)) = self.port.recv(nic) {
            worked = true;
            let (Ok(Packet::Reply { id, .. }), Some(g)) = (packet, self.cfg.group_of(from)) else {
                continue;
            };
            if self.inflight.as_mut().is_some_and(|f| f.answer(id, g)) {
                let f = self.inflight.take().expect("in flight");
                self.completed.push_back(f.completed(nic.now()));
            }
        }
        Progress::worked(worked)
    }
}

impl<N: Nic> Client<N> for SkeenClient {
    fn try_multicast(&mut self, nic: &mut N, dst: DestSet, payload: &[u8]) -> MulticastResult {
        if self.inflight.is_some() {
            return Err(MulticastError::InFlight);
        }
        MulticastError::check_destinations(dst, self.cfg.groups)?;
        MulticastError::check_size(payload.len(), self.cfg.max_payload(), dst)?;
        let now = nic.now();
        let id = MsgId::new(self.me, self.next_seq);
        self.next_seq += 1;
        // Task 1: m to the server of each destination group, encoded once.
        let bytes = Packet::Multicast {
            id,
            dst,
            payload: Bytes::copy_from_slice(payload),
        }
        .encode();
        nic.work(Work::Copy, bytes.len() as u64);
        for g in dst.groups() {
            let to = self.cfg.server_of(g);
            self.port.send(nic, to, bytes.clone());
        }
        self.inflight = Some(Outstanding::new(id, dst, now));
        Ok(id)
    }

    fn poll_completed(&mut self) -> Option<Completed> {
        self.completed.pop_front()
    }
}
