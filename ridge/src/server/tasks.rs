//! What a server does on each poll besides receiving: follow the coordinator oracle and take
//! over (section 4.4.1, 4.4.2), propose (Algorithm 3, Task 2), learn and deliver (Algorithm 3,
//! Task 4; Algorithm 4, Task 2), fill gaps (section 4.4.3), announce the rounds it leads, and
//! when it must next wake.

use super::RidgeServer;
use crate::mapping::EnsembleId;
use crate::optimistic::Optimism;
use crate::paxos::{Msg, Round};
use crate::wire::Packet;
use multicast::Delivery;
use std::collections::BTreeMap;
use transport::{Nanos, Nic, ProcessId, Work};

impl RidgeServer {
    /// Section 4.4.1 and 4.4.2: follows the coordinator oracle of every ensemble this server
    /// accepts for; takes over when it names this server; runs a new round when the quorum
    /// holds a suspect or proposals went undecided for too long.
    pub(super) fn watch<N: Nic>(&mut self, nic: &mut N) -> bool {
        let now = nic.now();
        let suspect = self.detector.timeout();
        let mut worked = false;
        let ensembles: Vec<EnsembleId> = self.seats.keys().copied().collect();
        for e in ensembles {
            let slot = self.learner_slot(e).expect("an acceptor learns");
            let learned = self.learning[slot].next();
            let detector = &self.detector;
            let seat = self.seats.get_mut(&e).expect("listed");
            let expected = seat.omega.expected();
            if expected != seat.rank {
                let leads = &seat.leads;
                seat.omega
                    .observe(leads[expected], now, suspect, |r| leads[r]);
            }
            if seat.omega.expected() != seat.rank {
                continue;
            }
            let active = seat.paxos.active();
            let quorum_suspected = seat
                .paxos
                .quorum()
                .iter()
                .any(|&a| a != self.me && detector.suspects(a, now));
            let pending = !seat.paxos.ready() || seat.paxos.undecided() > 0;
            let patience = Nanos(suspect.as_nanos() << seat.backoff.min(2));
            let quiet = now.saturating_sub(seat.progress_at);
            let stalled = pending && quiet > Nanos(patience.as_nanos() * 2);
            let recent = quiet <= patience;
            if active && !stalled && !(quorum_suspected && pending && !recent) {
                continue;
            }
            // A quorum chain: this server, then the acceptors after it in rank order that it
            // does not suspect (suspects only if too few are left).
            let n = seat.acceptors.len();
            let mut chain = vec![self.me];
            let others: Vec<ProcessId> = (1..n)
                .map(|i| seat.acceptors[(seat.rank + i) % n])
                .collect();
            let fine = others.iter().filter(|&&a| !detector.suspects(a, now));
            let rest = others.iter().filter(|&&a| detector.suspects(a, now));
            chain.extend(fine.chain(rest).take(n / 2).copied());
            if active || seat.highest != Round::ZERO {
                seat.restarts += 1;
            }
            if active {
                seat.backoff += 1;
            }
            let out = seat.paxos.start(seat.highest, learned, chain);
            seat.highest = seat.paxos.c_rnd();
            seat.progress_at = now;
            seat.timer.proposed(now);
            worked = true;
            self.send_all(nic, e, out);
        }
        worked
    }

    /// Algorithm 3, Task 2: proposes what clients sent, or a null message once Delta passed.
    pub(super) fn coordinate<N: Nic>(&mut self, nic: &mut N) -> bool {
        let now = nic.now();
        let mut worked = false;
        if self.backlogged(now) {
            return false;
        }
        let ensembles: Vec<EnsembleId> = self.seats.keys().copied().collect();
        for e in ensembles {
            let seat = self.seats.get_mut(&e).expect("listed");
            if !seat.paxos.ready() {
                continue;
            }
            if let Some(h) = seat.holding.as_mut() {
                seat.waiting
                    .extend(h.due(self.stamper.clock().local_us(now)));
            }
            let mut outs = Vec::new();
            let mut proposed = Vec::new();
            while let Some(value) = seat.waiting.pop_front() {
                let (k, out) = seat.paxos.propose(value).expect("ready");
                seat.timer.proposed(now);
                outs.extend(out);
                proposed.push(k);
            }
            if let Some(null) = seat.timer.due(now, &mut self.stamper) {
                let (k, out) = seat.paxos.propose(null).expect("ready");
                outs.extend(out);
                proposed.push(k);
            }
            if self.cfg.trace {
                self.trace
                    .proposed
                    .extend(proposed.into_iter().map(|k| ((e, k), now)));
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
    /// deliveries of what is addressed to this group ([`RidgeServer::deliver`]).
    pub(super) fn learn<N: Nic>(&mut self, nic: &mut N) -> bool {
        let now = nic.now();
        let mut worked = false;
        for i in 0..self.learning.len() {
            let e = self.subs[i];
            while let Some((k, v)) = self.learning[i].next_decided() {
                self.filling[i].progress_at = now;
                if self.cfg.trace {
                    self.trace.learned.insert((e, k), now);
                }
                if let Some(seat) = self.seats.get_mut(&e) {
                    let (mine, displaced) = seat.paxos.learned(k, v.key());
                    seat.waiting.extend(displaced);
                    // Only decisions of its own proposals are its round's progress; catching
                    // up on older ones is not (seed 887: a coordinator whose Phase 1a was lost
                    // kept waiting while it learned what it had missed).
                    if mine {
                        seat.progress_at = now;
                        seat.backoff = 0;
                    }
                }
                let addressed = self.addressed(&v);
                if let Some(o) = self.optimism.as_mut() {
                    o.decided(e, &v, addressed);
                }
                if self.group.is_some() {
                    self.merge.decided(i, v);
                }
                worked = true;
            }
            if let Some(seat) = self.seats.get_mut(&e) {
                let below = self.learning[i]
                    .next()
                    .saturating_sub(self.cfg.retain as u64);
                seat.acceptor.trim(below);
            }
        }
        let delivered = self.deliver(nic);
        worked || delivered
    }

    /// The merge's output: what is addressed to this group delivered (once per client
    /// message), and a response to each client.
    fn deliver<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        while let Some(v) = self.merge.next_delivery() {
            worked = true;
            if !self.addressed(&v) {
                continue;
            }
            let client = ProcessId(v.id.client);
            let mapping = self.cfg.mapping();
            let ensemble = mapping.ensemble_of(v.dests);
            let seen = self.delivered.entry(v.id.client).or_insert(0);
            let duplicate = *seen > v.id.seq;
            if !duplicate {
                *seen = v.id.seq + 1;
                if let Some(o) = self.optimism.as_mut() {
                    o.atomic(v.id, v.ts, self.stamper.clock().local_us(nic.now()));
                }
                nic.work(Work::Deliver, 1);
                // The merge's key: the timestamp, then the group's own ensemble before
                // `e_all` (Task 4's tie-break; a message two groups deliver is `e_all`'s).
                let all = ensemble == Some(mapping.all());
                self.deliveries.push_back(Delivery {
                    msg: v.id,
                    dst: v.dests,
                    payload: v.payload.unwrap_or_default(),
                    order: Some(v.ts.0 << 1 | u64::from(all)),
                });
            }
            let coordinator = ensemble.and_then(|e| {
                let seat = self.seats.get(&e)?;
                Some((e.0, seat.acceptors[seat.omega.expected()]))
            });
            self.send(
                nic,
                client,
                &Packet::Response {
                    id: v.id,
                    coordinator,
                },
            );
        }
        worked
    }

    /// Section 4.4.3: a learner whose ensemble has a gap, or has been silent for longer than
    /// Delta and a suspicion timeout, asks one of its acceptors (in turn) what was decided.
    pub(super) fn fill_gaps<N: Nic>(&mut self, nic: &mut N) -> bool {
        let now = nic.now();
        let suspect = self.detector.timeout();
        let mut worked = false;
        for i in 0..self.learning.len() {
            let f = &self.filling[i];
            let quiet = now.saturating_sub(f.progress_at);
            let stuck = (self.learning[i].gap() && quiet > suspect)
                || quiet > suspect.saturating_add(self.cfg.delta);
            if !stuck || now.saturating_sub(f.asked_at) <= suspect {
                continue;
            }
            let e = self.subs[i];
            let Some(to) = self.fill_source(i, now) else {
                // The acceptors not suspected that were asked have all trimmed it since.
                if self.lost(i) {
                    self.halt_lost(i);
                    return worked;
                }
                continue;
            };
            self.filling[i].asked_at = now;
            self.filling[i].asks += 1;
            let from = self.learning[i].next();
            self.send(nic, to, &Packet::paxos(e, Msg::Fetch { from }));
            worked = true;
        }
        worked
    }

    /// Four times per suspicion timeout, a coordinator tells the other acceptors of the
    /// ensembles it leads that it does ([`Packet::Lead`], one packet per peer).
    pub(super) fn lead<N: Nic>(&mut self, nic: &mut N) {
        let now = nic.now();
        let every = Nanos(self.cfg.timing.suspect.as_nanos() / 4);
        if now < self.lead_at.saturating_add(every) {
            return;
        }
        let mut to: BTreeMap<ProcessId, Vec<(u16, Round)>> = BTreeMap::new();
        for (&e, seat) in &self.seats {
            if !seat.paxos.active() {
                continue;
            }
            for &a in seat.acceptors.iter().filter(|&&a| a != self.me) {
                to.entry(a).or_default().push((e.0, seat.paxos.c_rnd()));
            }
        }
        self.lead_at = now;
        for (p, leads) in to {
            self.send(nic, p, &Packet::Lead { leads });
        }
    }

    /// The earliest time this server has something to do if nothing arrives.
    pub(super) fn next_timer(&self, now: Nanos) -> Nanos {
        let tick = now.saturating_add(self.cfg.timing.heartbeat);
        let nulls = self
            .seats
            .values()
            .filter(|s| s.paxos.ready())
            .map(|s| s.timer.deadline());
        // Optimistic deliveries and held requests fall due by this server's clock.
        let clock = self.stamper.clock();
        let held = self
            .seats
            .values()
            .filter_map(|s| s.holding.as_ref()?.deadline_us())
            .chain(self.optimism.as_ref().and_then(Optimism::deadline_us))
            .map(|us| clock.when(us));
        nulls
            .chain(held)
            .chain(self.detector.deadline())
            .chain([tick])
            .min()
            .expect("not empty")
    }
}
