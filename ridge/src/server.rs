//! A Ridge server: a learner of its group's ensemble and of `e_all` (Algorithm 3, Task 4 and
//! Algorithm 4, Task 2), and, where the deployment says so ([`crate::config`]), an acceptor
//! (Algorithm 2, Tasks 2 and 4) and a coordinator (Algorithm 2, Tasks 1 and 3; Algorithm 3,
//! Task 2) of them. The normal case only, for now: no failure detection or recovery (4.4).

use crate::clock::{Clock, Stamper};
use crate::config::Config;
use crate::ensemble::NullTimer;
use crate::mapping::{EnsembleId, Mapping};
use crate::merge::Merge;
use crate::paxos::{distribute, Acceptor, Coordinator, Learning, Msg, Out, Round};
use crate::value::Value;
use crate::wire::Packet;
use multicast::{Delivery, GroupId, Membership, Server};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use transport::mesh::{Mesh, MeshError};
use transport::{Nanos, Nic, Process, ProcessId, Progress, Purpose, RegionSpec, Rng, Work};

/// What a coordinator of one ensemble keeps.
#[derive(Debug)]
struct Coordinating {
    paxos: Coordinator,
    timer: NullTimer,
    /// Clients' messages received before Phase 1 completed.
    waiting: VecDeque<Value>,
}

/// A Ridge server.
#[derive(Debug)]
pub struct RidgeServer {
    cfg: Arc<Config>,
    group: GroupId,
    me: ProcessId,
    mesh: Mesh,
    /// Every ensemble's learners, by ensemble index (looked up for each Phase 2 and
    /// DISTRIBUTE, so built once).
    learners: Vec<Vec<ProcessId>>,
    /// The ensembles learned from, in merge order: the group's own, then `e_all` if any.
    subs: Vec<EnsembleId>,
    learning: Vec<Learning>,
    merge: Merge,
    acceptors: BTreeMap<EnsembleId, Acceptor>,
    coordinating: BTreeMap<EnsembleId, Coordinating>,
    stamper: Stamper,
    /// Packets the mesh refused (a full outbox), sent first on the next poll.
    backlog: VecDeque<(ProcessId, Vec<u8>)>,
    deliveries: VecDeque<Delivery>,
    started: bool,
    buf: Vec<u8>,
}

impl RidgeServer {
    /// Replica `rank` of group `g`; its clock is drawn from `seed` within the configured skew.
    pub fn new(cfg: Arc<Config>, g: GroupId, rank: usize, seed: u64) -> RidgeServer {
        let me = cfg.server(g, rank);
        let mapping = cfg.mapping();
        let subs = mapping.subscriptions(g);
        let streams = subs.len();
        let all_ensembles = (0..mapping.ensembles()).map(|e| EnsembleId(e as u16));
        let acceptors = all_ensembles
            .clone()
            .filter(|&e| cfg.ensemble(e).acceptors.contains(&me))
            .map(|e| (e, Acceptor::new(me)))
            .collect();
        let clock = Clock::draw(
            cfg.skew,
            &mut Rng::derive(seed, Purpose::Protocol, me.0 as u64),
        );
        let coordinating = all_ensembles
            .filter(|&e| cfg.coordinator(e) == me)
            .map(|e| {
                let c = Coordinating {
                    paxos: Coordinator::new(me, cfg.ensemble(e)),
                    timer: NullTimer::new(me.0, cfg.delta, Nanos::ZERO),
                    waiting: VecDeque::new(),
                };
                (e, c)
            })
            .collect();
        let learners = (0..mapping.ensembles())
            .map(|e| cfg.ensemble(EnsembleId(e as u16)).learners)
            .collect();
        RidgeServer {
            mesh: Mesh::new(cfg.mesh(), me).expect("a server is a member of the mesh"),
            learners,
            group: g,
            me,
            subs,
            learning: vec![Learning::default(); streams],
            merge: Merge::new(streams),
            acceptors,
            coordinating,
            stamper: Stamper::new(me.0, clock),
            backlog: VecDeque::new(),
            deliveries: VecDeque::new(),
            started: false,
            buf: Vec::new(),
            cfg,
        }
    }

    fn send<N: Nic>(&mut self, nic: &mut N, to: ProcessId, packet: &Packet) {
        let bytes = packet.encode();
        nic.work(Work::Copy, bytes.len() as u64);
        if !self.backlog.is_empty() {
            self.backlog.push_back((to, bytes));
            return;
        }
        match self.mesh.send(nic, to, &bytes) {
            Ok(_) => {}
            Err(MeshError::Full { .. }) => self.backlog.push_back((to, bytes)),
            Err(e) => panic!("a server's own packet was refused: {e}"),
        }
    }

    fn send_all<N: Nic>(&mut self, nic: &mut N, e: EnsembleId, out: Out) {
        for (to, msg) in out {
            self.send(nic, to, &Packet::paxos(e, msg));
        }
    }

    /// Retries what the mesh refused, in order; returns whether something left.
    fn drain_backlog<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = self.mesh.flush(nic).expect("own packets fit");
        while let Some((to, bytes)) = self.backlog.front() {
            match self.mesh.send(nic, *to, bytes) {
                Ok(_) => {
                    self.backlog.pop_front();
                    worked = true;
                }
                Err(MeshError::Full { .. }) => break,
                Err(e) => panic!("a server's own packet was refused: {e}"),
            }
        }
        worked
    }

    fn learner_slot(&self, e: EnsembleId) -> Option<usize> {
        self.subs.iter().position(|&s| s == e)
    }

    fn on_packet<N: Nic>(&mut self, nic: &mut N, from: ProcessId, packet: Packet) {
        match packet {
            Packet::Request { e, value } => {
                if let Some(c) = self.coordinating.get_mut(&EnsembleId(e)) {
                    c.waiting.push_back(value);
                }
            }
            Packet::Paxos { e, msg } => self.on_paxos(nic, from, EnsembleId(e), msg),
            Packet::Response { .. } => {}
        }
    }

    fn on_paxos<N: Nic>(&mut self, nic: &mut N, from: ProcessId, e: EnsembleId, msg: Msg) {
        let learners = std::mem::take(&mut self.learners[e.0 as usize]);
        let out = match msg {
            Msg::Phase1a { rnd, from: k } => self
                .acceptors
                .get_mut(&e)
                .map_or(Vec::new(), |a| a.on_phase1a(from, rnd, k)),
            Msg::Phase1b { rnd, votes, .. } => self
                .coordinating
                .get_mut(&e)
                .map_or(Vec::new(), |c| c.paxos.on_phase1b(from, rnd, votes)),
            Msg::Phase2 {
                k,
                rnd,
                value,
                quorum,
                count,
            } => {
                if let Some(i) = self.learner_slot(e) {
                    self.learning[i].value(k, value.clone());
                }
                self.acceptors.get_mut(&e).map_or(Vec::new(), |a| {
                    a.on_phase2(&learners, k, rnd, value, quorum, count)
                })
            }
            Msg::Decision { k, id } => {
                if let Some(i) = self.learner_slot(e) {
                    self.learning[i].decided(k, id);
                }
                Vec::new()
            }
            Msg::Distribute { k, value, quorum } => {
                let out = distribute(self.me, &learners, k, &value, &quorum);
                if let Some(i) = self.learner_slot(e) {
                    self.learning[i].value(k, value);
                }
                out
            }
            Msg::Value { k, value } => {
                if let Some(i) = self.learner_slot(e) {
                    self.learning[i].value(k, value);
                }
                Vec::new()
            }
        };
        self.learners[e.0 as usize] = learners;
        self.send_all(nic, e, out);
    }

    /// Algorithm 3, Task 2: proposes what clients sent, or a null message once Delta passed.
    fn coordinate<N: Nic>(&mut self, nic: &mut N) -> bool {
        let now = nic.now();
        let mut worked = false;
        let ensembles: Vec<EnsembleId> = self.coordinating.keys().copied().collect();
        for e in ensembles {
            let c = self.coordinating.get_mut(&e).expect("listed");
            let mut outs = Vec::new();
            while c.paxos.ready() {
                let Some(value) = c.waiting.pop_front() else {
                    break;
                };
                let (_, out) = c.paxos.propose(value).expect("ready");
                c.timer.proposed(now);
                outs.extend(out);
            }
            if c.paxos.ready() {
                if let Some(null) = c.timer.due(now, &mut self.stamper) {
                    let (_, out) = c.paxos.propose(null).expect("ready");
                    outs.extend(out);
                }
            }
            if !outs.is_empty() {
                nic.work(Work::Order, outs.len() as u64);
                worked = true;
                self.send_all(nic, e, outs);
            }
        }
        worked
    }

    /// Algorithm 3, Task 4 and Algorithm 4, Task 2: decisions into the merge, the merge into
    /// deliveries of what is addressed to this group, a response to each client.
    fn learn<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        for i in 0..self.learning.len() {
            while let Some((_, v)) = self.learning[i].next_decided() {
                self.merge.decided(i, v);
                worked = true;
            }
        }
        while let Some(v) = self.merge.next_delivery() {
            worked = true;
            if !Mapping::addressed(v.dests, self.group) {
                continue;
            }
            nic.work(Work::Deliver, 1);
            let client = ProcessId(v.id.client);
            self.deliveries.push_back(Delivery {
                msg: v.id,
                dst: v.dests,
                payload: v.payload.unwrap_or_default(),
            });
            self.send(nic, client, &Packet::Response { id: v.id });
        }
        worked
    }
}

impl<N: Nic> Process<N> for RidgeServer {
    fn regions(&self) -> Vec<RegionSpec> {
        self.cfg.mesh().regions().to_vec()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut worked = false;
        if !self.started {
            // Algorithm 2, Task 1 ahead of any value (section 3: Phase 1 pre-executed).
            self.started = true;
            worked = true;
            let ensembles: Vec<EnsembleId> = self.coordinating.keys().copied().collect();
            for e in ensembles {
                let quorum = self.cfg.quorum(e);
                let c = self.coordinating.get_mut(&e).expect("listed");
                let out = c.paxos.start(Round::ZERO, 0, quorum);
                c.timer.proposed(nic.now());
                self.send_all(nic, e, out);
            }
        }
        worked |= self.drain_backlog(nic);
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(from) = self.mesh.recv(nic, &mut buf).expect("ring reads") {
            worked = true;
            nic.work(Work::Decode, 1);
            // A malformed packet is dropped: it cannot come from a correct process.
            if let Ok(p) = Packet::decode(&buf) {
                self.on_packet(nic, from, p);
            }
        }
        self.buf = buf;
        worked |= self.coordinate(nic);
        worked |= self.learn(nic);
        let wake = self.coordinating.values().map(|c| c.timer.deadline()).min();
        Progress::worked(worked).wake_at(wake)
    }
}

impl Server for RidgeServer {
    fn group(&self) -> GroupId {
        self.group
    }

    fn poll_delivery(&mut self) -> Option<Delivery> {
        self.deliveries.pop_front()
    }
}
