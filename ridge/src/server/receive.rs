//! What arrives at a server: packets by kind, clients' requests (Algorithm 3, line 4), the
//! rounds it sees (section 4.4.1), and Paxos messages, one handler per kind (Algorithm 2's
//! acceptor and coordinator, Algorithm 3's and 4's learner, section 4.4.3's gap filling).

use super::{RidgeServer, Seat};
use crate::mapping::EnsembleId;
use crate::optimistic::Holding;
use crate::paxos::{distribute, relay, Instance, Msg, Out, Round};
use crate::value::{Key, Value};
use crate::wire::Packet;
use transport::{Nanos, Nic, ProcessId, Work};

impl RidgeServer {
    /// Handles what arrived, and what this process sent itself, until neither is left.
    pub(super) fn receive<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        // Nothing else in this process polls memory (Heron above Ridge does not): the mesh
        // takes the change hint whole.
        self.mesh.observe_changes(nic);
        let mut buf = std::mem::take(&mut self.buf);
        while self.halt.is_none() {
            if let Some(p) = self.local.pop_front() {
                self.on_packet(nic, self.me, p);
            } else if let Some(from) = self.mesh.recv(nic, &mut buf).expect("ring reads") {
                self.detector.heard(from, nic.now());
                nic.work(Work::Decode, 1);
                // A malformed packet is dropped: it cannot come from a correct process.
                if let Ok(p) = Packet::decode(&buf) {
                    self.on_packet(nic, from, p);
                }
            } else {
                break;
            }
            worked = true;
        }
        self.buf = buf;
        worked
    }

    fn on_packet<N: Nic>(&mut self, nic: &mut N, from: ProcessId, packet: Packet) {
        match packet {
            Packet::Request {
                e,
                value,
                forwarded,
            } => self.on_request(nic, from, EnsembleId(e), value, forwarded),
            Packet::Paxos { e, msg } => self.on_paxos(nic, from, EnsembleId(e), msg),
            Packet::Lead { leads } => {
                for (e, rnd) in leads {
                    self.saw_round(nic, EnsembleId(e), rnd);
                }
            }
            Packet::Optimistic { e, value } => self.seen(EnsembleId(e), &value),
            Packet::Response { .. } | Packet::Redirect { .. } | Packet::Heartbeat => {}
        }
    }

    /// Section 4.5: a message of ensemble `e` seen before its decision (the multicaster's
    /// copy, a request, a Phase 2): kept for its DECISION, which completes an instance waiting
    /// for this very content, and held for optimistic delivery if addressed to this server's
    /// group.
    fn seen(&mut self, e: EnsembleId, value: &Value) {
        let (i, addressed) = (self.learner_slot(e), self.addressed(value));
        let (Some(o), Some(i)) = (self.optimism.as_mut(), i) else {
            return;
        };
        o.received(e, value.clone(), addressed);
        if let Some(k) = self.learning[i].awaiting(value.key()) {
            self.learning[i].value(k, value.clone());
        }
    }

    /// A client's message (Algorithm 3, line 4), or one passed on by another acceptor.
    fn on_request<N: Nic>(
        &mut self,
        nic: &mut N,
        from: ProcessId,
        e: EnsembleId,
        value: Value,
        forwarded: bool,
    ) {
        self.seen(e, &value);
        let Some(seat) = self.seats.get_mut(&e) else {
            // Only acceptors are asked: a request elsewhere is malformed.
            return;
        };
        if seat.paxos.active() || seat.omega.expected() == seat.rank {
            if let Some(h) = seat.holding.as_mut() {
                h.hold(value);
            } else if seat.waiting.iter().all(|w| w.id != value.id) {
                seat.waiting.push_back(value);
            }
        } else if !forwarded {
            let to = seat.acceptors[seat.omega.expected()];
            let e = e.0;
            self.send(
                nic,
                to,
                &Packet::Request {
                    e,
                    value,
                    forwarded: true,
                },
            );
            // The client asked an acceptor that does not coordinate: its next requests go to
            // the coordinator rather than each waiting for a retry (section 4.4.1).
            let coordinator = to;
            self.send(nic, from, &Packet::Redirect { e, coordinator });
        }
    }

    /// Section 4.4.1: round `rnd` is live in `e`. If it is the newest round seen, its owner
    /// coordinates: that counts as its beat, and a coordinator of a lower round resigns, hands
    /// what it holds to the owner and trusts it.
    fn saw_round<N: Nic>(&mut self, nic: &mut N, e: EnsembleId, rnd: Round) {
        let now = nic.now();
        let Some(seat) = self.seats.get_mut(&e) else {
            return;
        };
        if rnd < seat.highest {
            // A deposed coordinator's late message: it says nothing about who leads now.
            return;
        }
        seat.highest = rnd;
        let owner = rnd.owner();
        let Some(rank) = seat.acceptors.iter().position(|&a| a == owner) else {
            return;
        };
        seat.leads[rank] += 1;
        if owner == self.me || rnd <= seat.paxos.c_rnd() {
            return;
        }
        if seat.omega.expected() != rank {
            let beat = seat.leads[rank];
            seat.omega.expect(rank, now, Some(beat));
        }
        if !seat.paxos.active() {
            return;
        }
        let mut handed = seat.paxos.resign();
        handed.extend(seat.waiting.drain(..));
        handed.extend(
            seat.holding
                .as_mut()
                .map(Holding::drain)
                .unwrap_or_default(),
        );
        for value in handed {
            self.send(
                nic,
                owner,
                &Packet::Request {
                    e: e.0,
                    value,
                    forwarded: true,
                },
            );
        }
    }

    /// A Paxos message of ensemble `e` from `from`, handled by kind; what it makes this server
    /// send is sent.
    pub(super) fn on_paxos<N: Nic>(
        &mut self,
        nic: &mut N,
        from: ProcessId,
        e: EnsembleId,
        msg: Msg,
    ) {
        let now = nic.now();
        let learners = std::mem::take(&mut self.learners[e.0 as usize]);
        let out = match msg {
            Msg::Phase1a { rnd, from: k } => {
                self.saw_round(nic, e, rnd);
                let budget = self.budget();
                self.seats
                    .get_mut(&e)
                    .map_or(Vec::new(), |s| s.acceptor.on_phase1a(from, rnd, k, budget))
            }
            Msg::Phase1b {
                rnd,
                low,
                votes,
                last,
                ..
            } => self.seats.get_mut(&e).map_or(Vec::new(), |s| {
                s.on_phase1b(now, from, rnd, low, votes, last)
            }),
            Msg::Reject { rnd, promised } => self.on_reject(nic, e, rnd, promised),
            Msg::Phase2 {
                k,
                rnd,
                value,
                quorum,
                count,
            } => self.on_phase2(nic, e, &learners, k, rnd, value, quorum, count),
            Msg::Decision { k, key } => self.on_decision(e, k, key),
            Msg::Distribute { k, value, quorum } => {
                self.on_distribute(e, &learners, k, value, quorum)
            }
            Msg::Value { k, value } => {
                if let Some(i) = self.learner_slot(e) {
                    self.learning[i].value(k, value);
                }
                Vec::new()
            }
            Msg::Relay { k, value, quorum } => self.on_relay(nic, e, &learners, k, value, quorum),
            Msg::Phase2a { k, rnd, value } => {
                self.saw_round(nic, e, rnd);
                self.seats.get_mut(&e).map_or(Vec::new(), |s| {
                    s.acceptor.on_phase2a(&learners, k, rnd, value)
                })
            }
            Msg::Accepted { k, rnd, value } => {
                let majority = self.cfg.acceptors / 2 + 1;
                if let Some(i) = self.learner_slot(e) {
                    self.learning[i].accepted(from, k, rnd, value, majority);
                }
                Vec::new()
            }
            Msg::Fetch { from: k } => self.on_fetch(from, e, k),
            Msg::Decided { k, values } => self.on_decided(nic, from, e, k, values),
            Msg::Trimmed { low } => self.on_trimmed(nic, from, e, low),
        };
        self.learners[e.0 as usize] = learners;
        self.send_all(nic, e, out);
    }

    /// Coordinator: its round `rnd` refused for the newer round `promised`.
    fn on_reject<N: Nic>(
        &mut self,
        nic: &mut N,
        e: EnsembleId,
        rnd: Round,
        promised: Round,
    ) -> Out {
        // Its current round refused: the promise is another coordinator's newer round,
        // to outbid or (below) to follow.
        if let Some(s) = self.seats.get_mut(&e) {
            if let Some(p) = s.paxos.on_reject(rnd, promised) {
                s.highest = s.highest.max(p);
            }
        }
        self.saw_round(nic, e, promised);
        Vec::new()
    }

    /// Acceptor in a chain: Phase 2 of instance `k` in round `rnd`, its vote passed on along
    /// `quorum` (the value also learned, and seen for section 4.5).
    #[allow(clippy::too_many_arguments)]
    fn on_phase2<N: Nic>(
        &mut self,
        nic: &mut N,
        e: EnsembleId,
        learners: &[ProcessId],
        k: Instance,
        rnd: Round,
        value: Value,
        quorum: Vec<ProcessId>,
        count: usize,
    ) -> Out {
        let now = nic.now();
        if let Some(i) = self.learner_slot(e) {
            self.learning[i].value(k, value.clone());
        }
        self.seen(e, &value);
        self.saw_round(nic, e, rnd);
        let detector = &self.detector;
        self.seats.get_mut(&e).map_or(Vec::new(), |s| {
            s.acceptor
                .on_phase2(learners, k, rnd, value, quorum, count, |l| {
                    detector.watches(l) && detector.suspects(l, now)
                })
        })
    }

    /// Learner: instance `k` decided the value with `key`.
    fn on_decision(&mut self, e: EnsembleId, k: Instance, key: Key) -> Out {
        if let Some(i) = self.learner_slot(e) {
            self.learning[i].decided(k, key);
            // Section 4.5: the key names a message seen before (no value sent); a copy
            // of other content under its id is not it.
            if let Some(v) = self.optimism.as_ref().and_then(|o| o.copy(e, key)) {
                self.learning[i].value(k, v.clone());
            }
        }
        Vec::new()
    }

    /// Distributing learner: instance `k`'s value, learned and sent on to the learners
    /// outside `quorum`.
    fn on_distribute(
        &mut self,
        e: EnsembleId,
        learners: &[ProcessId],
        k: Instance,
        value: Value,
        quorum: Vec<ProcessId>,
    ) -> Out {
        let out = distribute(self.me, learners, k, &value, &quorum);
        if let Some(i) = self.learner_slot(e) {
            self.learning[i].value(k, value);
        }
        out
    }

    /// Acceptor (a learner too): `from` asks for the decisions from `k` on, answered from the
    /// ones kept, up to a packet's budget.
    fn on_fetch(&mut self, from: ProcessId, e: EnsembleId, k: Instance) -> Out {
        let budget = self.budget();
        self.learner_slot(e)
            .and_then(|i| self.learning[i].answer(k, budget))
            .map(|m| (from, m))
            .into_iter()
            .collect()
    }

    /// Learner on the ring: instance `k`'s value, learned and passed on to the next learner.
    fn on_relay<N: Nic>(
        &mut self,
        nic: &mut N,
        e: EnsembleId,
        learners: &[ProcessId],
        k: Instance,
        value: Value,
        quorum: Vec<ProcessId>,
    ) -> Out {
        if let Some(i) = self.learner_slot(e) {
            self.learning[i].value(k, value.clone());
        }
        let (detector, now) = (&self.detector, nic.now());
        // Only a watched learner (an acceptor, for a learner) can be suspected: the
        // others never send this one heartbeats, and the ring flows away from them.
        relay(self.me, learners, k, value, quorum, |l| {
            detector.watches(l) && detector.suspects(l, now)
        })
    }

    /// Learner filling a gap: decisions from `k` on, as acceptor `from` answered a fetch.
    fn on_decided<N: Nic>(
        &mut self,
        nic: &mut N,
        from: ProcessId,
        e: EnsembleId,
        k: Instance,
        values: Vec<Value>,
    ) -> Out {
        let Some(i) = self.learner_slot(e) else {
            return Vec::new();
        };
        let end = k + values.len() as Instance;
        let filled_any = end > self.learning[i].next();
        for (k, value) in (k..).zip(values) {
            if k >= self.learning[i].next() {
                self.filled += 1;
            }
            self.learning[i].fill(k, value);
        }
        // Catching up: while a gap remains past this batch, ask the acceptor that
        // answered for the next batch at once rather than after another suspicion
        // timeout (seed 595: a learner the ring passed by caught up one batch a
        // millisecond, too slowly to finish before the run ended). The batch is not
        // handed out yet (that happens in `deliver`), so the gap is looked for past
        // its end: comparing `next` before and after never saw progress, and a learner
        // paused 1 s caught up one batch a suspicion timeout until its peers trimmed
        // past it (the tcp runtime's pause-then-kill run).
        match self.learning[i].first_gap_from(end) {
            Some(missing) if filled_any => {
                self.filling[i].asked_at = nic.now();
                vec![(from, Msg::Fetch { from: missing })]
            }
            _ => Vec::new(),
        }
    }

    /// Learner filling a gap: acceptor `from` keeps decisions from `low` on only.
    fn on_trimmed<N: Nic>(
        &mut self,
        nic: &mut N,
        from: ProcessId,
        e: EnsembleId,
        low: Instance,
    ) -> Out {
        let Some(i) = self
            .learner_slot(e)
            .filter(|&i| low > self.learning[i].next())
        else {
            return Vec::new();
        };
        // The decision this learner needs next is gone from `from`. Another acceptor
        // may still keep it (one that learned less): ask the next one at once, and
        // halt only once every acceptor it does not suspect has trimmed it (see the module
        // docs). Halting on the first answer lost a server whenever one acceptor ran ahead of
        // the others.
        let next = self.learning[i].next();
        let now = nic.now();
        let filling = &mut self.filling[i];
        if filling.trimmed.0 != next {
            filling.trimmed = (next, Vec::new());
        }
        if !filling.trimmed.1.contains(&from) {
            filling.trimmed.1.push(from);
        }
        match self.fill_source(i, now) {
            Some(to) => {
                let filling = &mut self.filling[i];
                filling.asked_at = now;
                filling.asks += 1;
                vec![(to, Msg::Fetch { from: next })]
            }
            None => {
                self.halt_lost(i);
                Vec::new()
            }
        }
    }
}

impl Seat {
    /// Coordinator: a promise for round `rnd` (Phase 1b); values it displaces wait to be
    /// proposed again, first.
    fn on_phase1b(
        &mut self,
        now: Nanos,
        from: ProcessId,
        rnd: Round,
        low: Instance,
        votes: Vec<(Instance, Round, Value)>,
        last: bool,
    ) -> Out {
        if rnd == self.paxos.c_rnd() {
            // Promises arriving are progress, however slowly they come.
            self.progress_at = now;
        }
        let (out, displaced) = self.paxos.on_phase1b(from, rnd, low, votes, last);
        for v in displaced.into_iter().rev() {
            self.waiting.push_front(v);
        }
        out
    }
}
