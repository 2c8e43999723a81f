//! Algorithm 9: coordination. A replica takes delivered requests one at a time, in delivery
//! order; a single-partition request executes at once, a multi-partition one between two
//! coordination rounds with the replicas of every involved partition.
//!
//! | line | where |
//! |---|---|
//! | 1-3, the client multicasts | [`crate::client`] |
//! | 6-7, skip what a state transfer covered | `HeronServer::take` |
//! | 8-10, single partition | `HeronServer::take`, then [`crate::execution`] |
//! | 12-14, phase 2 | `HeronServer::take`, `HeronServer::coordinated` |
//! | 16, phase 3 | [`crate::execution`] |
//! | 18-20, phase 4 | `HeronServer::finish`, `HeronServer::coordinated` |
//! | 22, respond | `HeronServer::respond` |
//!
//! Departure, for liveness: phase 2 counts a replica whose entry holds the request's timestamp
//! *or a later one* (line 14 says "equal"). A replica can only be past the request if it
//! finished it, which took a majority of this replica's partition; without the departure a
//! replica outside that majority would wait forever for entries already overwritten. Reading
//! from a replica that is past the request stays safe: Algorithm 10 accepts only a version older
//! than the request, and finds none if the replica is too far ahead (this replica then lags).

use crate::app::Application;
use crate::server::{earliest, HeronServer, Phase, Running, ENTRY};
use crate::wire::Request;
use multicast::Membership;
use std::collections::{BTreeMap, BTreeSet};
use transport::{LocalAddr, Nanos, Nic, RemoteAddr, Work};

/// A coordination state: the request was delivered (phase 2) or executed (phase 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Delivered = 1,
    Executed = 2,
}

impl<S, A: Application> HeronServer<S, A> {
    /// Moves the current request as far as it can go now; returns whether anything happened
    /// and when to look again if it waits on a clock.
    pub(crate) fn step<N: Nic>(&mut self, nic: &mut N) -> (bool, Option<Nanos>) {
        let Some(run) = &self.running else {
            return (self.take(nic), None);
        };
        match run.phase {
            Phase::Coordinate => match self.coordinated(nic, Stage::Delivered) {
                Ok(()) => {
                    let now = nic.now();
                    let run = self.running.as_mut().expect("running");
                    self.counters.coordinating_ns += now.saturating_sub(run.since).as_nanos();
                    run.since = now;
                    run.phase = Phase::Execute;
                    (true, None)
                }
                Err(wake) => (false, wake),
            },
            Phase::Execute => self.execute(nic),
            Phase::Transfer => self.await_transfer(nic),
            Phase::Finish => match self.coordinated(nic, Stage::Executed) {
                Ok(()) => {
                    self.respond(nic);
                    (true, None)
                }
                Err(wake) => (false, wake),
            },
        }
    }

    /// Lines 5-14: takes the next delivered request, skips it if a state transfer covered it,
    /// and for a multi-partition request writes `<tmp, 1>` into every involved replica's
    /// coordination memory.
    fn take<N: Nic>(&mut self, nic: &mut N) -> bool {
        let Some(req) = self.queue.pop_front() else {
            return false;
        };
        nic.work(Work::Deliver, 1);
        if req.tmp <= self.last_req {
            self.counters.skipped += 1;
            return true;
        }
        self.last_req = req.tmp;
        let multi = req.dst.len() > 1 && !self.cfg.order_only;
        if multi {
            self.write_coord(nic, &req, Stage::Delivered);
        }
        self.running = Some(Running {
            read_set: self.app.read_set(&req.body),
            req,
            phase: if multi {
                Phase::Coordinate
            } else {
                Phase::Execute
            },
            majority_at: None,
            since: nic.now(),
            reads: BTreeMap::new(),
            failed: BTreeSet::new(),
            response: None,
            asked: None,
        });
        if self.cfg.order_only {
            self.running.as_mut().expect("just taken").response = Some(Vec::new());
            self.respond(nic);
        }
        true
    }

    /// `write_coord(q, p, <r.tmp, stage>)` for every replica `q` of every involved partition.
    pub(crate) fn write_coord<N: Nic>(&mut self, nic: &mut N, req: &Request, stage: Stage) {
        let cfg = self.cfg.clone();
        for h in req.dst.groups() {
            for q in cfg.members(h) {
                self.write_coord_into(nic, q, req.tmp, stage);
            }
        }
    }

    /// `write_coord(q, p, <tmp, stage>)`.
    pub(crate) fn write_coord_into<N: Nic>(
        &mut self,
        nic: &mut N,
        q: transport::ProcessId,
        tmp: u64,
        stage: Stage,
    ) {
        let mut entry = [0u8; ENTRY];
        entry[..8].copy_from_slice(&(stage as u64).to_le_bytes());
        entry[8..].copy_from_slice(&tmp.to_le_bytes());
        let at = self.me.index() * ENTRY;
        self.write(nic, RemoteAddr::new(q, self.regions.coord, at), &entry);
    }

    /// `coord_mem[q]` as this replica sees it now: `(stage, tmp)`.
    pub(crate) fn coord_entry(&self, nic: &impl Nic, q: transport::ProcessId) -> (u64, u64) {
        let at = |w: usize| LocalAddr::new(self.regions.coord, q.index() * ENTRY + w);
        let stage = nic.load_u64(at(0)).expect("own region");
        let tmp = nic.load_u64(at(8)).expect("own region");
        (stage, tmp)
    }

    /// Lines 14 and 20: whether a majority of every involved partition reached `stage` for the
    /// current request (or went past it), and, in phase 4, then either every replica did or the
    /// extra wait ran out (the thesis: "only the second coordination phase needs to use this
    /// additional delay in order to keep replicas in sync", section 5.3.5). `Err` carries the
    /// deadline of the extra wait, if it is running.
    fn coordinated<N: Nic>(&mut self, nic: &mut N, stage: Stage) -> Result<(), Option<Nanos>> {
        let run = self.running.as_ref().expect("running");
        let tmp = run.req.tmp;
        let (mut majority, mut all) = (true, true);
        let mut scanned = 0;
        for h in run.req.dst.groups() {
            let reached = self
                .cfg
                .members(h)
                .filter(|&q| {
                    scanned += 1;
                    let (s, t) = self.coord_entry(nic, q);
                    match stage {
                        Stage::Delivered => t >= tmp,
                        Stage::Executed => (t == tmp && s == Stage::Executed as u64) || t > tmp,
                    }
                })
                .count();
            majority &= reached >= self.cfg.majority();
            all &= reached == self.cfg.replicas;
        }
        nic.work(Work::Scan, scanned);
        if !majority {
            return Err(None);
        }
        if stage == Stage::Delivered {
            return Ok(());
        }
        let now = nic.now();
        let run = self.running.as_mut().expect("running");
        let since = *run.majority_at.get_or_insert(now);
        let until = since + self.cfg.extra_wait;
        if all || now >= until {
            if !all {
                self.counters.waited_out += 1;
            }
            let waited = now.saturating_sub(since);
            if waited > Nanos::ZERO {
                self.counters.delayed += 1;
                self.counters.delay_ns += waited.as_nanos();
            }
            run.majority_at = None;
            Ok(())
        } else {
            Err(earliest(None, Some(until)))
        }
    }

    /// Line 22: every replica that executes a request writes the response into its own slot of
    /// the client's response region; the request is done here.
    pub(crate) fn respond<N: Nic>(&mut self, nic: &mut N) {
        let run = self.running.take().expect("running");
        if run.phase == Phase::Finish {
            self.counters.coordinating_ns += nic.now().saturating_sub(run.since).as_nanos();
        }
        let response = run.response.expect("executed");
        let codec = crate::client::response_codec(&self.cfg);
        let mut slot = Vec::new();
        codec
            .encode(run.req.seq, &response, &mut slot)
            .expect("the application's response fits max_response");
        let client = self.cfg.client(run.req.client as usize);
        let at = self.me.index() * codec.slot_bytes();
        let region = crate::client::responses(&self.cfg);
        self.write(nic, RemoteAddr::new(client, region, at), &slot);
    }
}
