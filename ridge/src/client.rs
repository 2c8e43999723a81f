//! A Ridge client (Algorithm 3, Task 1 with Algorithm 4, Task 1): it timestamps its message
//! from its local clock, sends it to the coordinator of the ensemble its destinations map to,
//! and completes the multicast once a server of every destination group answered. Without an
//! answer for [`crate::config::Timing::retry`], it sends the same message (same id and
//! timestamp) to every acceptor of the ensemble, which pass it on to the coordinator they
//! trust (the coordinator may have crashed or been replaced; see [`crate::server`]).
//!
//! A client follows a replaced coordinator: an acceptor that passes its request on names the
//! coordinator it trusts ([`Packet::Redirect`]), as do answers from acceptors
//! ([`Packet::Response`]), and the client asks that one first from then on. A request the
//! first choice's channel refuses (full: nobody drains a crashed process's ring) goes to the
//! next acceptor in rank order, which passes it on; only when every acceptor's channel is
//! full is the multicast refused.

use crate::clock::{Clock, Stamper};
use crate::config::Config;
use crate::mapping::EnsembleId;
use crate::value::Value;
use crate::wire::Packet;
use bytes::Bytes;
use multicast::{
    Client, Completed, DestSet, Membership, MsgId, MulticastError, MulticastResult, Outstanding,
};
use std::collections::VecDeque;
use std::sync::Arc;
use transport::mesh::{Mesh, MeshError};
use transport::{Nanos, Nic, Process, ProcessId, Progress, Purpose, RegionSpec, Rng, Work};

/// The multicast in flight.
#[derive(Debug)]
struct InFlight {
    /// The message and the answers it awaits.
    outstanding: Outstanding,
    /// The ensemble and the request, for a retry.
    e: EnsembleId,
    value: Value,
    /// When it was last sent.
    last_sent: Nanos,
}

/// A Ridge client.
#[derive(Debug)]
pub struct RidgeClient {
    cfg: Arc<Config>,
    me: ProcessId,
    mesh: Mesh,
    /// Each ensemble's acceptors, by ensemble index; the first is its initial coordinator.
    acceptors: Vec<Vec<ProcessId>>,
    /// Each ensemble's learners, by ensemble index (for optimistic copies).
    learners: Vec<Vec<ProcessId>>,
    /// Per ensemble, the rank of the acceptor asked first: the initial coordinator, then the
    /// coordinator the last hint named, or the acceptor that took the last request.
    target: Vec<usize>,
    stamper: Stamper,
    next_seq: u64,
    inflight: Option<InFlight>,
    completed: VecDeque<Completed>,
    buf: Vec<u8>,
}

impl RidgeClient {
    /// Client `i`; its clock is drawn from `seed` within the configured skew.
    pub fn new(cfg: Arc<Config>, i: usize, seed: u64) -> RidgeClient {
        let me = cfg.client(i);
        let clock = Clock::draw(
            cfg.skew,
            &mut Rng::derive(seed, Purpose::Protocol, me.0 as u64),
        );
        let acceptors: Vec<Vec<ProcessId>> = (0..cfg.mapping().ensembles())
            .map(|e| cfg.ensemble(EnsembleId(e as u16)).acceptors)
            .collect();
        RidgeClient {
            mesh: Mesh::new(cfg.mesh(), me).expect("a client is a member of the mesh"),
            target: vec![0; acceptors.len()],
            learners: (0..cfg.mapping().ensembles())
                .map(|e| cfg.ensemble(EnsembleId(e as u16)).learners)
                .collect(),
            acceptors,
            me,
            stamper: Stamper::new(me.0, clock),
            next_seq: 0,
            inflight: None,
            completed: VecDeque::new(),
            buf: Vec::new(),
            cfg,
        }
    }
}

impl RidgeClient {
    /// Asks `coordinator` first for ensemble `e` from now on, if it is one of its acceptors.
    fn follow(&mut self, e: u16, coordinator: ProcessId) {
        let rank = self
            .acceptors
            .get(e as usize)
            .and_then(|a| a.iter().position(|&a| a == coordinator));
        if let Some(rank) = rank {
            self.target[e as usize] = rank;
        }
    }

    /// Sends a request for ensemble `e` to the acceptor asked first or, if its channel is
    /// full, to the next in rank order that takes it, which becomes the one asked first: a
    /// crashed acceptor never drains its ring, and a client that kept asking it would be
    /// refused for good. Any acceptor will do, as it passes the request on. `false` if every
    /// channel is full.
    fn request<N: Nic>(&mut self, nic: &mut N, e: EnsembleId, bytes: &[u8]) -> bool {
        let acceptors = &self.acceptors[e.0 as usize];
        let first = self.target[e.0 as usize];
        for i in 0..acceptors.len() {
            let rank = (first + i) % acceptors.len();
            match self.mesh.send(nic, acceptors[rank], bytes) {
                Ok(_) => {
                    self.target[e.0 as usize] = rank;
                    return true;
                }
                Err(MeshError::Full { .. }) => {}
                Err(e) => panic!("a checked request was refused: {e}"),
            }
        }
        false
    }

    /// Sends the request in flight to every acceptor of its ensemble once the retry timeout
    /// passed without an answer (each passes it on to the coordinator it trusts; whatever is
    /// decided twice is delivered once); returns whether it did.
    fn retry<N: Nic>(&mut self, nic: &mut N) -> bool {
        let now = nic.now();
        let retry = self.cfg.timing.retry;
        let Some(f) = self.inflight.as_mut() else {
            return false;
        };
        if now < f.last_sent.saturating_add(retry) {
            return false;
        }
        let bytes = Packet::Request {
            e: f.e.0,
            value: f.value.clone(),
            forwarded: false,
        }
        .encode();
        for &to in &self.acceptors[f.e.0 as usize] {
            nic.work(Work::Copy, bytes.len() as u64);
            // A full ring towards an acceptor (crashed, or paused): the others are asked.
            let _ = self.mesh.send(nic, to, &bytes);
        }
        f.last_sent = now;
        true
    }
}

impl<N: Nic> Process<N> for RidgeClient {
    fn regions(&self) -> Vec<RegionSpec> {
        self.cfg.mesh().regions().to_vec()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        // A failed write (to a crashed coordinator) needs no handling: the retry covers it.
        while nic.poll_completion().is_some() {}
        let mut worked = self.mesh.flush(nic).expect("own packets fit");
        let mut buf = std::mem::take(&mut self.buf);
        // Nothing else in this process polls memory (Heron above Ridge does not): the mesh
        // takes the change hint whole.
        self.mesh.observe_changes(nic);
        while let Some(from) = self.mesh.recv(nic, &mut buf).expect("ring reads") {
            worked = true;
            nic.work(Work::Decode, 1);
            let (id, g) = match Packet::decode(&buf) {
                Ok(Packet::Response { id, coordinator }) => {
                    // Any answer's hint counts, a late one's too: the first answer often comes
                    // from a learner that is no acceptor and gives none.
                    if let Some((e, c)) = coordinator {
                        self.follow(e, c);
                    }
                    match self.cfg.group_of(from) {
                        Some(g) => (id, g),
                        None => continue,
                    }
                }
                Ok(Packet::Redirect { e, coordinator }) => {
                    self.follow(e, coordinator);
                    continue;
                }
                _ => continue,
            };
            if self
                .inflight
                .as_mut()
                .is_some_and(|f| f.outstanding.answer(id, g))
            {
                let f = self.inflight.take().expect("in flight");
                self.completed.push_back(f.outstanding.completed(nic.now()));
            }
        }
        self.buf = buf;
        worked |= self.retry(nic);
        let wake = self
            .inflight
            .as_ref()
            .map(|f| f.last_sent.saturating_add(self.cfg.timing.retry));
        Progress::worked(worked).wake_at(wake)
    }
}

impl<N: Nic> Client<N> for RidgeClient {
    fn try_multicast(&mut self, nic: &mut N, dst: DestSet, payload: &[u8]) -> MulticastResult {
        if self.inflight.is_some() {
            return Err(MulticastError::InFlight);
        }
        MulticastError::check_destinations(dst, self.cfg.groups)?;
        let e = self
            .cfg
            .mapping()
            .ensemble_of(dst)
            .expect("a checked destination set is not empty");
        MulticastError::check_size(payload.len(), self.cfg.max_payload(), dst)?;
        let now = nic.now();
        let id = MsgId {
            client: self.me.0,
            seq: self.next_seq,
        };
        let value = Value {
            id,
            ts: self.stamper.stamp(now),
            dests: dst,
            payload: Some(Bytes::copy_from_slice(payload)),
        };
        let bytes = Packet::Request {
            e: e.0,
            value: value.clone(),
            forwarded: false,
        }
        .encode();
        nic.work(Work::Copy, bytes.len() as u64);
        if !self.request(nic, e, &bytes) {
            // Backpressure: nothing was sent, copies included. The caller's next message
            // takes this one's id (its sequence number is not consumed), so no learner may
            // hold a copy of this content under it ([`crate::optimistic`]). The group of the
            // first destination is named.
            let group = dst.groups().next().expect("non-empty");
            return Err(MulticastError::Full { group });
        }
        if self.cfg.optimistic.is_some() {
            // Section 4.5: "p first sends m directly to all learners of e", then to the
            // coordinator: the copy for optimistic delivery (encoded once). Here the request
            // goes first, so that a refused request leaves no copy behind; the copies still
            // beat the DECISION, three hops (and the coordinator's wait) behind them. Not to
            // the ensemble's first quorum, whose acceptors see the message in the request and
            // in Phase 2 (acceptors are learners here; the paper's are apart). Best effort
            // (the paper uses reliable multicast): a learner whose ring is full misses the
            // optimistic delivery and fills its decision from the acceptors.
            let copy = Packet::Optimistic {
                e: e.0,
                value: value.clone(),
            }
            .encode();
            nic.work(Work::Copy, copy.len() as u64);
            let quorum = self.cfg.quorum(e);
            for &l in self.learners[e.0 as usize]
                .iter()
                .filter(|l| !quorum.contains(l))
            {
                let _ = self.mesh.send(nic, l, &copy);
            }
        }
        self.next_seq += 1;
        self.inflight = Some(InFlight {
            outstanding: Outstanding::new(id, dst, now),
            e,
            value,
            last_sent: now,
        });
        Ok(id)
    }

    fn poll_completed(&mut self) -> Option<Completed> {
        self.completed.pop_front()
    }
}
