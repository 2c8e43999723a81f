//! A Ridge server: a learner of its group's ensemble and of `e_all` (Algorithm 3, Task 4 and
//! Algorithm 4, Task 2), and, where the deployment says so ([`crate::config`]), an acceptor
//! (Algorithm 2, Tasks 2 and 4) and a candidate coordinator (Algorithm 2, Tasks 1 and 3;
//! Algorithm 3, Task 2) of them, with section 4.4's failure handling. The same type plays a
//! dedicated acceptor ([`RidgeServer::acceptor`]): acceptor, candidate coordinator and learner
//! of one ensemble, serving no group, delivering nothing.
//!
//! # Failures (section 4.4), and the choices where the paper is silent
//! - **Coordinator (4.4.1).** The acceptors of an ensemble run [`multicast::Omega`] over their
//!   ranks, fed by [`crate::failure::Detector`]'s packet counts: an acceptor whose oracle names
//!   it starts Phase 1 with a round above every round it has seen, from the first instance it
//!   has not learned. A coordinator that meets a higher round of another (a Phase 1a, a Phase 2
//!   or a [`Msg::Reject`]) resigns, hands its undecided values to the owner of that round and
//!   trusts it.
//! - **Acceptor in Q (4.4.2).** A coordinator whose quorum holds a suspected acceptor, or whose
//!   proposals went undecided for two suspicion timeouts, runs Phase 1 and Phase 2 again in a
//!   higher round for every instance it has not learned, with a chain of acceptors it does not
//!   suspect. A departure: the paper re-executes with Algorithm 1's Phase 2 (2a to every
//!   acceptor); here Phase 2 keeps the chain, over a quorum chosen without the suspect. Both
//!   are Paxos; the chain needs no second code path, and the coordinator knows whom it
//!   suspects (which is what triggers the fallback in the paper too).
//! - **Distributor (4.4.3).** The last acceptor passes over learners it suspects
//!   ([`crate::paxos::Balancer`]); learners missing decisions (a gap, or an ensemble silent
//!   for longer than Delta and a suspicion timeout) ask the ensemble's acceptors, one at a
//!   time in turn, what was decided ([`Msg::Fetch`]); acceptors are learners here (dedicated
//!   ones too), and answer from the decisions they keep ([`crate::config::Config::retain`]).
//!   A learner asks the acceptors it does not suspect first (a paused acceptor asked first
//!   cost a learner a suspicion timeout while the others trimmed past it). Told that the
//!   decision it lacks next is no longer kept, it asks the next acceptor it does not suspect
//!   at once, and halts once every acceptor of the ensemble it does not suspect has told it
//!   so (it fell further behind than any live peer keeps; waiting for a suspected one, which
//!   may have crashed, could leave it stuck for good).
//! - **Clients.** A client that gets no answer asks all the ensemble's acceptors; an
//!   acceptor passes a request on to the coordinator it trusts and, if the request came from
//!   the client, names that coordinator to it ([`Packet::Redirect`]), so the client's next
//!   requests go there: with dedicated acceptors, or `e_all`'s in the first group, no
//!   answering server may be an acceptor, and a client following answers alone kept asking
//!   a crashed coordinator (review R2; [`crate::client`]). A request may therefore be
//!   decided twice: learners deliver a client's message once, by sequence number, and answer
//!   the duplicate so the client completes. A client's messages reach a group in the order it
//!   sent them (it sends the next once the previous one was delivered), so "this sequence
//!   number or an earlier one was delivered" is "this message was delivered".
//! - **Optimistic deliveries (4.5).** With [`Config::optimistic`], a learner delivers the
//!   multicaster's copy once its clock reads the timestamp plus the wait ([`crate::optimistic`]),
//!   and a coordinator holds requests as long, proposing them in timestamp order. As in the paper,
//!   Ridge's last acceptor then sends no value (no DISTRIBUTE), only the decided value's key: a
//!   learner pairs each DECISION with the message it saw if that message is the one named (the
//!   copy, or the request and Phase 2 for the acceptors, which the multicaster sends no copy), and
//!   fills from the acceptors what it lacks (see [`crate::optimistic`] for why an id alone is not
//!   enough). Departures: the copy is best effort (the paper's is a reliable multicast), so a
//!   learner may miss an optimistic delivery and fetch the value, never miss an atomic one; and the
//!   ring and direct baselines keep carrying values.
//! - **Bounded memory.** Votes are trimmed [`crate::config::Config::retain`] instances behind
//!   what the acceptor learned; learners keep as many decisions. Packets to a peer whose ring
//!   is full wait in the mesh's outbox ([`crate::config::Config::outbox`] of them), then in
//!   this server's overflow queue for that peer, which is dropped (and counted) once the peer
//!   is suspected: a crashed or paused peer holds at most a suspicion timeout's worth of
//!   packets, a live one is never dropped to (seed 29). A coordinator whose overflow towards
//!   any live peer reaches an outbox proposes no new value in any ensemble it coordinates
//!   until that queue is shorter (backpressure, as a full ring makes an RDMA sender wait; the
//!   paper is silent): the ensemble goes at the pace of its slowest live acceptor rather than
//!   leaving it behind without bound. A distributor
//!   does not hold the coordinator back: a learner outside the quorum that is slower than the
//!   rest (Ridge's and the ring's dissemination) still falls behind while the load lasts, and
//!   catches up after. Each message has
//!   a recovery path: Phase 1 and 2 messages by the coordinator's fallback, decisions and
//!   values by gap filling, requests and responses by the client's retry.
//!
//! The server's state, its construction and its poll live here; what it does with what
//! arrives in `receive`, and its other tasks of a poll in `tasks`.

use crate::clock::{Clock, Stamper};
use crate::config::{Config, Placement};
use crate::ensemble::NullTimer;
use crate::failure::Detector;
use crate::mapping::{EnsembleId, Mapping};
use crate::merge::Merge;
use crate::optimistic::{Holding, Optimism};
use crate::paxos::{Acceptor, Coordinator, Instance, Learning, Msg, Out, Round};
use crate::value::Value;
use crate::wire::Packet;
use multicast::{Delivery, GroupId, Membership, MsgId, Omega, Server};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use transport::mesh::{Mesh, MeshError};
use transport::{Nanos, Nic, Process, ProcessId, Progress, Purpose, RegionSpec, Rng, Work};

mod receive;
mod tasks;

/// What a server is to an ensemble it is an acceptor of.
#[derive(Debug)]
struct Seat {
    acceptor: Acceptor,
    /// Its rank among the ensemble's acceptors.
    rank: usize,
    acceptors: Vec<ProcessId>,
    /// Which rank coordinates, in this acceptor's view.
    omega: Omega,
    /// Per rank, signs that it coordinates in the newest round seen ([`Packet::Lead`], its
    /// Phase 1a and Phase 2): the beats the oracle watches.
    leads: Vec<u64>,

    paxos: Coordinator,
    timer: NullTimer,
    /// Values to propose once Phase 1 completes (clients' requests, displaced proposals).
    waiting: VecDeque<Value>,
    /// With optimistic deliveries, requests held until their timestamp plus the wait
    /// (section 4.5, condition (b)).
    holding: Option<Holding>,
    /// When this coordinator last started a round or learned a decision.
    progress_at: Nanos,
    /// The highest round seen in the ensemble.
    highest: Round,
    /// Rounds started after the first (fallbacks and takeovers).
    restarts: u64,
    /// Rounds started in a row without a decision learned in between: each doubles the time
    /// the next one waits (up to 4 times), so a coordinator whose rounds fail over a congested
    /// link is not buried under its own Phase 1a. (Up to 32 times, a coordinator whose Phase
    /// 2a went to peers it suspected behind slow links waited out the whole liveness phase
    /// after they recovered: `harness check --protocol ridge`, pinned seed 51.)
    backoff: u32,
}

/// A learner's gap-filling state for one ensemble.
#[derive(Clone, Debug, Default)]
struct Filling {
    /// When the ensemble last delivered a decision here.
    progress_at: Nanos,
    /// When this learner last asked, and how many times in all.
    asked_at: Nanos,
    asks: u64,
    /// The acceptors that answered [`Msg::Trimmed`] for the decision this learner needs next,
    /// and that instance.
    trimmed: (Instance, Vec<ProcessId>),
}

/// When a server proposed (as coordinator) and learned each instance of each ensemble, if
/// [`Config::trace`] asks for it.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// `(ensemble, instance)` to when this server proposed it.
    pub proposed: BTreeMap<(EnsembleId, Instance), Nanos>,
    /// `(ensemble, instance)` to when this server learned it decided.
    pub learned: BTreeMap<(EnsembleId, Instance), Nanos>,
}

/// A Ridge server, or a dedicated acceptor ([`RidgeServer::acceptor`]).
#[derive(Debug)]
pub struct RidgeServer {
    cfg: Arc<Config>,
    /// The group served; `None` for a dedicated acceptor, which delivers nothing.
    group: Option<GroupId>,
    me: ProcessId,
    mesh: Mesh,
    /// Every ensemble's learners, by ensemble index (looked up for each Phase 2 and
    /// DISTRIBUTE, so built once).
    learners: Vec<Vec<ProcessId>>,
    /// The ensembles learned from, in merge order: the group's own, then `e_all` if any.
    subs: Vec<EnsembleId>,
    learning: Vec<Learning>,
    filling: Vec<Filling>,
    merge: Merge,
    seats: BTreeMap<EnsembleId, Seat>,
    detector: Detector,
    stamper: Stamper,
    /// Per client, the highest sequence number delivered (duplicates are answered, not
    /// delivered again).
    delivered: BTreeMap<u32, u64>,
    deliveries: VecDeque<Delivery>,
    /// Packets from this process to itself, handled in the same poll.
    local: VecDeque<Packet>,
    /// Per peer, packets that found its ring and outbox full (see [`Self::drain_overflow`]).
    overflow: BTreeMap<ProcessId, VecDeque<Vec<u8>>>,
    /// When this server last sent its [`Packet::Lead`]s.
    lead_at: Nanos,
    started: bool,
    /// Why this server halted, once it has.
    halt: Option<String>,
    /// With [`Config::trace`]: when this server proposed and learned each instance.
    trace: Trace,
    /// With [`Config::optimistic`]: the optimistic deliveries (section 4.5).
    optimism: Option<Optimism>,
    /// Packets dropped at a full outbox, and decisions learned through gap filling.
    dropped: u64,
    filled: u64,
    buf: Vec<u8>,
}

impl RidgeServer {
    /// Replica `rank` of group `g`; its clock is drawn from `seed` within the configured skew.
    pub fn new(cfg: Arc<Config>, g: GroupId, rank: usize, seed: u64) -> RidgeServer {
        let me = cfg.server(g, rank);
        let subs = cfg.mapping().subscriptions(g);
        RidgeServer::build(cfg, me, Some(g), subs, seed)
    }

    /// Dedicated acceptor `i` (auxiliary process `i`, [`crate::config::Placement::Dedicated`]):
    /// an acceptor and candidate coordinator of one ensemble, which learns that ensemble's
    /// decisions to answer gap fills and delivers nothing.
    pub fn acceptor(cfg: Arc<Config>, i: usize, seed: u64) -> RidgeServer {
        let me = cfg.auxiliary(i);
        let (e, _) = cfg.dedicated(i);
        RidgeServer::build(cfg, me, None, vec![e], seed)
    }

    fn build(
        cfg: Arc<Config>,
        me: ProcessId,
        group: Option<GroupId>,
        subs: Vec<EnsembleId>,
        seed: u64,
    ) -> RidgeServer {
        let mapping = cfg.mapping();
        let streams = subs.len();
        let ensembles: Vec<EnsembleId> = (0..mapping.ensembles())
            .map(|e| EnsembleId(e as u16))
            .collect();
        let clock = Clock::draw(
            cfg.skew,
            &mut Rng::derive(seed, Purpose::Protocol, me.0 as u64),
        );
        let mut peers = BTreeSet::new();
        let mut seats = BTreeMap::new();
        for &e in &ensembles {
            let ens = cfg.ensemble(e);
            let accepts = ens.acceptors.iter().position(|&a| a == me);
            if accepts.is_some() || ens.learners.contains(&me) {
                peers.extend(ens.acceptors.iter().copied());
            }
            let Some(rank) = accepts else { continue };
            peers.extend(ens.learners.iter().copied());
            assert!(
                subs.contains(&e),
                "an acceptor learns its ensemble (it answers gap fills)"
            );
            let mut acceptor = Acceptor::with(me, cfg.dissemination);
            if cfg.optimistic.is_some() {
                acceptor = acceptor.ids_only();
            }
            if cfg.placement == Placement::Dedicated {
                acceptor = acceptor.sparing(ens.acceptors.clone());
            }
            let seat = Seat {
                acceptor,
                rank,
                omega: Omega::new(ens.acceptors.len()),
                leads: vec![0; ens.acceptors.len()],
                paxos: Coordinator::with(me, ens.clone(), cfg.dissemination),
                timer: NullTimer::new(me.0, e, cfg.delta, Nanos::ZERO),
                waiting: VecDeque::new(),
                holding: cfg.optimistic.map(|w| Holding::new(w.as_nanos() / 1_000)),
                progress_at: Nanos::ZERO,
                highest: Round::ZERO,
                restarts: 0,
                backoff: 0,
                acceptors: ens.acceptors,
            };
            seats.insert(e, seat);
        }
        peers.remove(&me);
        let learners = ensembles
            .iter()
            .map(|&e| cfg.ensemble(e).learners)
            .collect();
        RidgeServer {
            mesh: Mesh::new(cfg.mesh(), me).expect("a server is a member of the mesh"),
            learners,
            group,
            me,
            subs,
            learning: vec![Learning::new(cfg.retain); streams],
            filling: vec![Filling::default(); streams],
            merge: Merge::new(streams),
            seats,
            detector: Detector::new(
                cfg.processes(),
                peers.into_iter().collect(),
                cfg.timing.heartbeat,
                cfg.timing.suspect,
            ),
            stamper: Stamper::new(me.0, clock),
            delivered: BTreeMap::new(),
            deliveries: VecDeque::new(),
            local: VecDeque::new(),
            overflow: BTreeMap::new(),
            lead_at: Nanos::ZERO,
            started: false,
            halt: None,
            trace: Trace::default(),
            optimism: cfg.optimistic.map(|w| {
                let mut o = Optimism::new(w.as_nanos() / 1_000, cfg.retain);
                if cfg.log_optimistic {
                    o.keep_log();
                }
                o
            }),
            dropped: 0,
            filled: 0,
            buf: Vec::new(),
            cfg,
        }
    }

    /// Whether this server ever started a round after the first one of an ensemble it
    /// coordinates (a takeover or a fallback).
    pub fn restarted(&self) -> bool {
        self.seats.values().any(|s| s.restarts > 0)
    }

    /// With [`Config::optimistic`]: optimistic deliveries so far, how many were mistakes (the
    /// `i`-th optimistic delivery not the `i`-th atomic one), and both kinds' latencies.
    pub fn optimistic(&self) -> Option<crate::optimistic::Tally> {
        self.optimism.as_ref().map(Optimism::tally)
    }

    /// With [`Config::log_optimistic`]: this server's optimistic deliveries, in order.
    pub fn optimistic_log(&self) -> Option<&[MsgId]> {
        self.optimism.as_ref()?.log()
    }

    /// What [`Config::trace`] recorded (empty without it).
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Packets dropped because a peer did not drain its ring.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Decisions learned from other learners' answers (gaps filled).
    pub fn filled(&self) -> u64 {
        self.filled
    }

    /// The largest packet payload a vote or decision batch may take.
    fn budget(&self) -> usize {
        self.mesh
            .capacity()
            .saturating_sub(crate::config::OVERHEAD_BYTES)
    }

    fn send<N: Nic>(&mut self, nic: &mut N, to: ProcessId, packet: &Packet) {
        if to == self.me {
            // A role of this process talking to another of its roles.
            self.local.push_back(packet.clone());
            return;
        }
        let bytes = packet.encode();
        nic.work(Work::Copy, bytes.len() as u64);
        self.post(nic, to, &bytes);
    }

    /// Puts a packet's bytes on their way to `to` (a peer): into the mesh, or behind what
    /// overflows towards it; copied only when it has to wait behind them.
    fn post<N: Nic>(&mut self, nic: &mut N, to: ProcessId, bytes: &[u8]) {
        self.detector.sent(to, nic.now());
        if let Some(q) = self.overflow.get_mut(&to) {
            q.push_back(bytes.to_vec());
            return;
        }
        match self.mesh.send(nic, to, bytes) {
            Ok(_) => {}
            Err(MeshError::Full { .. }) => {
                self.overflow
                    .entry(to)
                    .or_default()
                    .push_back(bytes.to_vec());
            }
            Err(e) => panic!("a server's own packet was refused: {e}"),
        }
    }

    /// Whether a peer this server does not suspect has fallen so far behind that proposing
    /// more would only lengthen the queue towards it: an outbox of packets or more overflow
    /// towards it (a client, a learner, an acceptor: any peer, and every ensemble this server
    /// coordinates waits). A coordinator then holds its clients' values until the peer drains, as a
    /// full ring makes an RDMA sender wait; a suspected peer's queue is dropped instead
    /// ([`Self::drain_overflow`]). Without it, a live acceptor slower than the others (a
    /// thread starved of a core) fell behind without bound: the majority decided without it,
    /// 5,000 Phase 2a waited towards it and it had not caught up when the run ended
    /// (`check --runtime local --protocol ridge`, seed 2002).
    fn backlogged(&self, now: Nanos) -> bool {
        self.overflow
            .iter()
            .any(|(&p, q)| q.len() >= self.cfg.outbox && !self.detector.suspects(p, now))
    }

    /// Moves overflowing packets into the mesh as peers drain; drops those for a peer it
    /// suspects (silent for a suspicion timeout: crashed or paused), so memory stays bounded
    /// by what a live peer takes in a timeout. Returns whether a packet moved.
    fn drain_overflow<N: Nic>(&mut self, nic: &mut N) -> bool {
        let now = nic.now();
        let mut worked = self.mesh.flush(nic).expect("own packets fit");
        let peers: Vec<ProcessId> = self.overflow.keys().copied().collect();
        for p in peers {
            let q = self.overflow.get_mut(&p).expect("listed");
            if self.detector.suspects(p, now) {
                self.dropped += q.len() as u64;
                q.clear();
            }
            while let Some(bytes) = q.front() {
                match self.mesh.send(nic, p, bytes) {
                    Ok(_) => {
                        q.pop_front();
                        worked = true;
                    }
                    Err(MeshError::Full { .. }) => break,
                    Err(e) => panic!("a server's own packet was refused: {e}"),
                }
            }
            if q.is_empty() {
                self.overflow.remove(&p);
            }
        }
        worked
    }

    /// Sends `out`. A fan-out (a DECISION to every learner, a distributor's VALUE, an
    /// acceptor's 2b) is encoded once and its copy charged once, as a server serialises a
    /// message once and writes the same buffer to every peer; each peer still costs a post.
    fn send_all<N: Nic>(&mut self, nic: &mut N, e: EnsembleId, out: Out) {
        let mut encoded: Option<(Msg, Vec<u8>)> = None;
        for (to, msg) in out {
            if to == self.me {
                self.local.push_back(Packet::paxos(e, msg));
                continue;
            }
            let bytes = match encoded {
                Some((ref last, ref bytes)) if *last == msg => bytes,
                _ => {
                    let bytes = Packet::paxos(e, msg.clone()).encode();
                    nic.work(Work::Copy, bytes.len() as u64);
                    &encoded.insert((msg, bytes)).1
                }
            };
            self.post(nic, to, bytes);
        }
    }

    /// Whether `value` is addressed to this server's group (never to a dedicated acceptor).
    fn addressed(&self, value: &Value) -> bool {
        self.group
            .is_some_and(|g| Mapping::addressed(value.dests, g))
    }

    /// Section 4.4.3: the acceptor that learner slot `i` asks next for the decision it needs,
    /// in turn among the other acceptors of its ensemble that have not answered that they
    /// trimmed it, those it does not suspect first (a paused acceptor asked first cost a
    /// learner a suspicion timeout while the others trimmed past it: seed 2002 on threads).
    /// Suspected ones are asked only while none has answered so; after that, none left
    /// unsuspected means the learner has lost the decision ([`Self::lost`]): waiting for a
    /// suspected acceptor that crashed would leave it stuck for good, looking correct (review:
    /// `check --protocol ridge`, seed 5 with `retain=16`, `kill:1`, `pause:4`).
    fn fill_source(&self, i: usize, now: Nanos) -> Option<ProcessId> {
        let (filling, next) = (&self.filling[i], self.learning[i].next());
        let trimmed: &[ProcessId] = if filling.trimmed.0 == next {
            &filling.trimmed.1
        } else {
            &[]
        };
        let left: Vec<ProcessId> = self
            .cfg
            .ensemble(self.subs[i])
            .acceptors
            .into_iter()
            .filter(|&a| a != self.me && !trimmed.contains(&a))
            .collect();
        let live: Vec<ProcessId> = left
            .iter()
            .copied()
            .filter(|&a| !(self.detector.watches(a) && self.detector.suspects(a, now)))
            .collect();
        let pool = match (live.is_empty(), trimmed.is_empty()) {
            (false, _) => live,
            (true, true) => left,
            (true, false) => Vec::new(),
        };
        pool.get(filling.asks as usize % pool.len().max(1)).copied()
    }

    /// Whether learner slot `i` has been told, for the decision it needs next, that it is
    /// trimmed: with no acceptor left to ask ([`Self::fill_source`]), it halts.
    fn lost(&self, i: usize) -> bool {
        let (filling, next) = (&self.filling[i], self.learning[i].next());
        filling.trimmed.0 == next && !filling.trimmed.1.is_empty()
    }

    /// Halts learner slot `i`'s server: the decision it needs next is trimmed everywhere it
    /// could still ask.
    fn halt_lost(&mut self, i: usize) {
        self.halt = Some(format!(
            "decision {} of ensemble {} is trimmed at every acceptor it could ask, or they are suspected: it cannot learn what it missed",
            self.learning[i].next(),
            self.subs[i].0
        ));
    }

    fn learner_slot(&self, e: EnsembleId) -> Option<usize> {
        self.subs.iter().position(|&s| s == e)
    }
}

impl<N: Nic> Process<N> for RidgeServer {
    fn regions(&self) -> Vec<RegionSpec> {
        self.cfg.mesh().regions().to_vec()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if self.halt.is_some() {
            return Progress::worked(false);
        }
        // Failed writes (to a crashed peer) need no handling here: the detector notices.
        while nic.poll_completion().is_some() {}
        let mut worked = false;
        let now = nic.now();
        if !self.started {
            // Algorithm 2, Task 1 ahead of any value (section 3: Phase 1 pre-executed), by
            // each ensemble's initial coordinator (the oracles' rank 0).
            self.started = true;
            worked = true;
            for s in self.seats.values_mut() {
                s.progress_at = now;
            }
            for f in &mut self.filling {
                f.progress_at = now;
            }
        }
        worked |= self.drain_overflow(nic);
        worked |= self.receive(nic);
        worked |= self.watch(nic);
        worked |= self.coordinate(nic);
        worked |= self.receive(nic);
        worked |= self.learn(nic);
        if let Some(o) = self.optimism.as_mut() {
            let delivered = o.deliver(self.stamper.clock().local_us(nic.now()));
            nic.work(Work::Deliver, delivered as u64);
            worked |= delivered > 0;
        }
        worked |= self.fill_gaps(nic);
        if self.halt.is_some() {
            return Progress::worked(false);
        }
        self.lead(nic);
        for p in self.detector.due(nic.now()) {
            self.send(nic, p, &Packet::Heartbeat);
        }
        Progress::worked(worked).wake_at(Some(self.next_timer(nic.now())))
    }
}

impl Server for RidgeServer {
    fn group(&self) -> GroupId {
        self.group
            .expect("a dedicated acceptor serves no group (it is an auxiliary process)")
    }

    fn poll_delivery(&mut self) -> Option<Delivery> {
        self.deliveries.pop_front()
    }

    fn halt_reason(&self) -> Option<&str> {
        self.halt.as_deref()
    }
}

/// The instance an ensemble's learners have all reached, for tests and reports.
impl RidgeServer {
    /// Per subscribed ensemble, the next instance this server will learn.
    pub fn learned(&self) -> Vec<(EnsembleId, Instance)> {
        self.subs
            .iter()
            .zip(&self.learning)
            .map(|(&e, l)| (e, l.next()))
            .collect()
    }

    /// One line of state for failure reports.
    pub fn describe(&self) -> String {
        let seats: Vec<String> = self
            .seats
            .iter()
            .map(|(e, s)| {
                format!(
                    "e{}: rank {} trusts {} promised {:?} c_rnd {:?} quorum {:?} ready {} waiting {} undecided {} votes {} restarts {}",
                    e.0,
                    s.rank,
                    s.omega.expected(),
                    s.acceptor.rnd(),
                    s.paxos.c_rnd(),
                    s.paxos.quorum(),
                    s.paxos.ready(),
                    s.waiting.len(),
                    s.paxos.undecided(),
                    s.acceptor.votes(),
                    s.restarts
                )
            })
            .collect();
        format!(
            "learned {:?} halted {} dropped {} filled {} outbox {}; {}",
            self.learned(),
            self.halt.is_some(),
            self.dropped,
            self.filled,
            self.mesh.queued() + self.overflow.values().map(VecDeque::len).sum::<usize>(),
            seats.join("; ")
        )
    }
}

#[cfg(test)]
mod tests;
