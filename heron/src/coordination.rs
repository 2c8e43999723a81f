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

/// A coordination state: the request was delivered (phase 2) or executed (phase 4). Each is a
/// word of its own in a coordination entry (see [`ENTRY`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Delivered = 0,
    Executed = 1,
}

/// What a coordination entry says of its writer `q`: the last request `q` took, and the last
/// one it executed (or skipped, having installed a state transfer past it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Coord {
    pub(crate) delivered: u64,
    pub(crate) executed: u64,
}

impl Coord {
    /// Line 14 (with the departure above): `q` took the request `tmp` or a later one.
    pub(crate) fn delivered(&self, tmp: u64) -> bool {
        self.delivered.max(self.executed) >= tmp
    }

    /// Line 20: `q` executed `tmp` (or skipped it), or took a later request.
    pub(crate) fn executed(&self, tmp: u64) -> bool {
        self.executed >= tmp || self.delivered > tmp
    }
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

    /// `write_coord(q, p, <tmp, stage>)`: `tmp` into the word of `stage`, alone.
    pub(crate) fn write_coord_into<N: Nic>(
        &mut self,
        nic: &mut N,
        q: transport::ProcessId,
        tmp: u64,
        stage: Stage,
    ) {
        let at = self.me.index() * ENTRY + 8 * stage as usize;
        self.write(
            nic,
            RemoteAddr::new(q, self.regions.coord, at),
            &tmp.to_le_bytes(),
        );
    }

    /// `coord_mem[q]` as this replica sees it now. Each word is loaded whole, and each only
    /// grows, so what it says stays true whenever the other was loaded.
    pub(crate) fn coord_entry(&self, nic: &impl Nic, q: transport::ProcessId) -> Coord {
        let at = |stage: Stage| {
            LocalAddr::new(self.regions.coord, q.index() * ENTRY + 8 * stage as usize)
        };
        Coord {
            delivered: nic.load_u64(at(Stage::Delivered)).expect("own region"),
            executed: nic.load_u64(at(Stage::Executed)).expect("own region"),
        }
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
                    let c = self.coord_entry(nic, q);
                    match stage {
                        Stage::Delivered => c.delivered(tmp),
                        Stage::Executed => c.executed(tmp),
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

#[cfg(test)]
mod tests {
    use super::Stage;
    use crate::fixture::{writes_to, Fixture};
    use crate::server::Phase;
    use transport::{ProcessId, RemoteAddr};

    /// What replica `rank` of partition `g` writes into `to`'s coordination memory when it
    /// writes `<tmp, stage>` for each of `entries`, in order.
    fn coord_writes(
        (g, rank): (u8, usize),
        to: ProcessId,
        entries: &[(u64, Stage)],
    ) -> Vec<(RemoteAddr, Vec<u8>)> {
        let mut q = Fixture::new(g, rank);
        for &(tmp, stage) in entries {
            q.server.write_coord_into(&mut q.nic, to, tmp, stage);
        }
        writes_to(&q.ops(), to)
    }

    /// Replica 0 of partition 0 in phase 4 of request 100 (keys 0 and 1, both partitions),
    /// with a majority of partition 0 and one replica of partition 1 executed: replica 0 of
    /// partition 1 decides whether a majority of partition 1 is in.
    fn finishing() -> Fixture {
        let mut f = Fixture::new(0, 0);
        f.deliver(100, &[0, 1]);
        f.run();
        let run = f.server.running.as_mut().expect("request 100 taken");
        run.phase = Phase::Finish;
        run.response = Some(Vec::new());
        let me = f.server.me;
        f.server
            .write_coord_into(&mut f.nic, me, 100, Stage::Executed);
        for peer in [(0, 1), (1, 1)] {
            for (dst, bytes) in coord_writes(peer, me, &[(100, Stage::Executed)]) {
                f.land_write(dst, &bytes);
            }
        }
        f.ops();
        f
    }

    /// Whether phase 4 counted a majority of every involved partition.
    fn majority(f: &Fixture) -> bool {
        f.server
            .running
            .as_ref()
            .is_none_or(|r| r.phase != Phase::Finish || r.majority_at.is_some())
    }

    /// H4: a replica that executed request 50 and then took request 100 never counts as
    /// having executed 100 in another replica's phase 4, however the words of its writes
    /// have landed when that replica looks (every write before whole, any words of the one
    /// landing).
    #[test]
    fn a_torn_coordination_entry_never_ends_phase_4_early() {
        let q = (1, 0);
        let me = Fixture::new(0, 0).server.me;
        let writes = coord_writes(q, me, &[(50, Stage::Executed), (100, Stage::Delivered)]);
        let mut early = Vec::new();
        for landing in 0..writes.len() {
            let (dst, bytes) = &writes[landing];
            for mask in 0..1u64 << (bytes.len() / 8) {
                let mut f = finishing();
                for (dst, bytes) in &writes[..landing] {
                    f.land_write(*dst, bytes);
                }
                f.land_words(*dst, bytes, mask);
                f.run();
                if majority(&f) {
                    early.push((landing, mask));
                }
            }
        }
        assert!(
            early.is_empty(),
            "phase 4 ended on (write, words landed): {early:?}"
        );
        // Once it executes 100, it counts.
        let mut f = finishing();
        for (dst, bytes) in writes
            .iter()
            .chain(&coord_writes(q, me, &[(100, Stage::Executed)]))
        {
            f.land_write(*dst, bytes);
        }
        f.run();
        assert!(majority(&f));
    }
}
