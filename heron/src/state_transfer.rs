//! Algorithm 11: state transfer. A replica that lags (its remote reads find only versions at or
//! after its request) asks the other replicas of its partition for the objects updated since;
//! one of them, chosen deterministically, sends them and tells every replica the transfer is
//! done and up to which request; the laggard then skips every request up to that point.
//!
//! | line | where |
//! |---|---|
//! | 2-4, the request written into every replica's `state_sync_mem` | `HeronServer::ask` |
//! | 5-6, wait for status 0, `last_req <- rid` | `HeronServer::await_transfer`, `HeronServer::install` |
//! | 10, the responder chosen deterministically | `HeronServer::responder` |
//! | 12-15, the objects updated since the request, written into the laggard (adjacent slots together, in writes of up to 32 KB as the thesis's prototype) | `HeronServer::serve` |
//! | 16-17, `<last_req, 0>` written into every replica | `HeronServer::serve` |
//! | 18-19, another responder after a timeout | `HeronServer::await_transfer` |
//!
//! An entry of `state_sync_mem` is `[status u64 | tmp u64 | attempt u64 | responder u64]`:
//! status 1 asks for the objects updated from request `tmp` on, status 0 says a transfer up to
//! `tmp` is done. Each attempt names its responder: the replicas after the laggard in rank
//! order, one after another, a new attempt after [`crate::Config::transfer_timeout`] (line 19's
//! timeout, kept by the laggard rather than by every other replica, so that exactly one replica
//! is named at a time), doubled at every attempt of one lag: a transfer that takes longer than
//! the timeout (a TPC-C laggard behind by a few dozen requests is sent about a thousand rows)
//! was otherwise cut off at every attempt and the laggard asked forever (regression test
//! `tpcc_under_faults_stays_linearizable_and_consistent`, seed 19).
//!
//! Departure, for safety: the responder writes the objects into an area of the laggard's memory
//! that only it writes (one area per replica of the partition, with a directory of the slots it
//! holds), and the laggard copies them into its object store once it reads the completion of the
//! attempt it is waiting for. Written straight into the object store as in line 15, the objects
//! of an abandoned attempt (a slow responder that served after the laggard had moved on to the
//! next one, and had already executed newer requests) could land over newer versions. Writes of
//! one responder land in order (one queue pair), so its completion entry lands after its
//! objects.
//!
//! The responder serves only once its own objects reflect the request (it applied it), and only
//! from a complete log: a replica that itself installed a transfer knows which objects changed
//! only after that point. The log keeps `(tmp, object)` for every local write (it is never
//! trimmed: a long run keeps 16 bytes per write; trimming below what every replica applied is
//! left for when runs get long enough to matter).
//!
//! A laggard that installed a transfer up to `rid` writes `<rid, 2>` into every server's
//! coordination memory: it will not execute the requests it skipped, and a replica waiting in
//! phase 4 of one of them may need it for its majority (regression test
//! `a_laggard_that_skipped_a_request_lets_phase_4_of_it_end`).

use crate::app::Application;
use crate::server::{Asked, HeronServer};
use crate::store::Layout;
use multicast::Membership;
use std::collections::BTreeSet;
use transport::{LocalAddr, Nanos, Nic, RemoteAddr, Work};

/// Bytes of an entry of `state_sync_mem`.
pub(crate) const ENTRY: usize = 32;

/// The largest write of a transfer: adjacent object slots are sent together up to this many
/// bytes, as the thesis's prototype sends its transfers in RDMA writes of 32 KB ("which has
/// better performance than smaller payload sizes for the same amount of data", section
/// 5.3.5). A slot larger than this goes in one write of its own.
pub(crate) const TRANSFER_WRITE: usize = 32 * 1024;

/// Status of an entry: a transfer is asked for.
const ASKED: u64 = 1;
/// Status of an entry: the transfer is done (line 17's 0).
const DONE: u64 = 0;

/// Bytes of one responder's area: a mirror of the object store, a count and `(offset, len)`
/// pairs for at most every row.
pub(crate) fn area(layout: &Layout) -> usize {
    layout.len() + 8 + 16 * layout.rows()
}

/// An entry of `state_sync_mem`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    status: u64,
    tmp: u64,
    attempt: u64,
    responder: u64,
}

impl Entry {
    fn bytes(&self) -> [u8; ENTRY] {
        let mut out = [0; ENTRY];
        for (i, w) in [self.status, self.tmp, self.attempt, self.responder]
            .into_iter()
            .enumerate()
        {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

impl<S, A: Application> HeronServer<S, A> {
    /// Entry `rank` of this replica's `state_sync_mem`. The attempt word is loaded first:
    /// words land in ascending order, so a new attempt implies the status and timestamp beside
    /// it are that attempt's.
    fn entry(&self, nic: &impl Nic, rank: usize) -> Entry {
        let at = |w: usize| LocalAddr::new(self.regions.state, rank * ENTRY + w * 8);
        let word = |w: usize| nic.load_u64(at(w)).expect("own region");
        let attempt = word(2);
        Entry {
            status: word(0),
            tmp: word(1),
            attempt,
            responder: word(3),
        }
    }

    /// Writes `entry` as entry `rank` of every replica of the partition (this one included).
    fn broadcast<N: Nic>(&mut self, nic: &mut N, rank: usize, entry: Entry) {
        let cfg = self.cfg.clone();
        for q in cfg.members(self.group) {
            let dst = RemoteAddr::new(q, self.regions.state, rank * ENTRY);
            self.write(nic, dst, &entry.bytes());
        }
    }

    /// Line 10: the replica that serves attempt `attempt` of the replica of rank `laggard`.
    fn responder(&self, laggard: usize, attempt: u64) -> usize {
        let n = self.cfg.replicas;
        let k = ((attempt - 1) % (n as u64 - 1)) as usize;
        (laggard + 1 + k) % n
    }

    /// Lines 2-4: asks for the objects updated from the running request on, naming the next
    /// responder.
    fn ask<N: Nic>(&mut self, nic: &mut N) -> Nanos {
        let now = nic.now();
        let run = self.running.as_mut().expect("running");
        self.attempts += 1;
        // Each attempt of one lag waits twice as long as the one before: a transfer larger
        // than the timeout allows still completes (cut off at every attempt, it never would).
        let tries = run.asked.map_or(0, |a| a.tries) + 1;
        let deadline = now + Nanos(self.cfg.transfer_timeout.as_nanos() << (tries - 1).min(10));
        run.asked = Some(Asked {
            attempt: self.attempts,
            deadline,
            tries,
            since: run.asked.map_or(now, |a| a.since),
        });
        let me = self.cfg.rank_of(self.me);
        let entry = Entry {
            status: ASKED,
            tmp: run.req.tmp,
            attempt: self.attempts,
            responder: self.responder(me, self.attempts) as u64,
        };
        self.counters.transfers_asked += 1;
        self.broadcast(nic, me, entry);
        deadline
    }

    /// Lines 5-6 and 18-19: waits for the transfer asked for, installs it, or asks the next
    /// responder once the timeout passes.
    pub(crate) fn await_transfer<N: Nic>(&mut self, nic: &mut N) -> (bool, Option<Nanos>) {
        // Reads of the abandoned execution may still return; they only free their buffers.
        self.returned.clear();
        let run = self.running.as_ref().expect("running");
        let Some(asked) = run.asked else {
            let deadline = self.ask(nic);
            return (true, Some(deadline));
        };
        let me = self.cfg.rank_of(self.me);
        let e = self.entry(nic, me);
        if e.status == DONE && e.attempt == asked.attempt && e.tmp >= run.req.tmp {
            self.install(nic, e.responder as usize, e.tmp);
            self.counters.transfer_ns += (nic.now() - asked.since).as_nanos();
            return (true, None);
        }
        if nic.now() >= asked.deadline {
            let deadline = self.ask(nic);
            return (true, Some(deadline));
        }
        (false, Some(asked.deadline))
    }

    /// Copies the objects responder `from` staged into the object store and skips every request
    /// up to `rid` (line 6). Each slot is invalidated first (both tags at the largest
    /// timestamp, which no reader accepts), then written whole.
    fn install<N: Nic>(&mut self, nic: &mut N, from: usize, rid: u64) {
        let area = area(&self.layout);
        let base = from * area;
        let stage = |at: usize| LocalAddr::new(self.regions.stage, base + at);
        let dir = self.layout.len();
        let count = nic.load_u64(stage(dir)).expect("own region") as usize;
        let invalid = u64::MAX.to_le_bytes();
        for i in 0..count {
            let offset = nic.load_u64(stage(dir + 8 + 16 * i)).expect("own region") as usize;
            let len = nic.load_u64(stage(dir + 16 + 16 * i)).expect("own region") as usize;
            let mut slot = vec![0; len];
            nic.read_local(stage(offset), &mut slot)
                .expect("own region");
            let to = LocalAddr::new(self.regions.objects, offset);
            for half in [0, len / 2] {
                nic.write_local(to.add(half), &invalid).expect("own region");
            }
            for half in [len / 2, 0] {
                nic.write_local(to.add(half + 8), &slot[half + 8..half + len / 2])
                    .expect("own region");
            }
            for half in [0, len / 2] {
                nic.write_local(to.add(half), &slot[half..half + 8])
                    .expect("own region");
            }
            nic.work(Work::Copy, len as u64);
            self.counters.transfer_bytes += len as u64;
        }
        self.last_req = self.last_req.max(rid);
        self.applied = rid;
        self.log_from = rid;
        self.updates.clear();
        self.counters.transfers_received += 1;
        self.running = None;
        // The requests up to `rid` it skips are executed, as far as coordination goes: every
        // replica waiting in phase 4 of one of them may count it (a laggard that goes on with
        // single-partition requests only would otherwise never say so, and a partition with f
        // crashed replicas would wait for it forever).
        let cfg = self.cfg.clone();
        for q in (0..cfg.servers()).map(|i| transport::ProcessId(i as u32)) {
            self.write_coord_into(nic, q, rid, crate::coordination::Stage::Executed);
        }
    }

    /// Lines 8-17, at every replica: serves each transfer that names this replica, once its
    /// objects reflect the laggard's request and its log covers it.
    pub(crate) fn serve_transfers<N: Nic>(&mut self, nic: &mut N) -> (bool, Option<Nanos>) {
        let me = self.cfg.rank_of(self.me);
        nic.work(Work::Scan, self.cfg.replicas as u64 - 1);
        let mut worked = false;
        for k in (0..self.cfg.replicas).filter(|&k| k != me) {
            let e = self.entry(nic, k);
            if e.status == ASKED
                && e.responder as usize == me
                && self.applied >= e.tmp
                && e.tmp > self.log_from
            {
                self.serve(nic, k, e);
                worked = true;
            }
        }
        (worked, None)
    }

    /// Lines 12-17: writes every object updated from request `e.tmp` on into this replica's
    /// area at the laggard of rank `k`, then the directory, then `<applied, 0>` into every
    /// replica's entry for `k`.
    fn serve<N: Nic>(&mut self, nic: &mut N, k: usize, e: Entry) {
        let laggard = self.cfg.server(self.group, k);
        let base = self.cfg.rank_of(self.me) * area(&self.layout);
        let from = self.updates.partition_point(|&(t, _)| t < e.tmp);
        let objects: BTreeSet<_> = self.updates[from..].iter().map(|&(_, o)| o).collect();
        let mut slots: Vec<(usize, usize)> = objects
            .iter()
            .map(|o| self.layout.slot(*o, self.app.row_of(*o)))
            .collect();
        slots.sort_unstable();
        let mut directory = (slots.len() as u64).to_le_bytes().to_vec();
        for &(at, len) in &slots {
            directory.extend_from_slice(&(at as u64).to_le_bytes());
            directory.extend_from_slice(&(len as u64).to_le_bytes());
        }
        // Adjacent slots go together, in writes of at most `TRANSFER_WRITE` bytes.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (at, len) in slots {
            match runs.last_mut() {
                Some((start, end)) if *end == at && at + len - *start <= TRANSFER_WRITE => {
                    *end = at + len
                }
                _ => runs.push((at, at + len)),
            }
        }
        for (start, end) in runs {
            let mut bytes = vec![0; end - start];
            nic.read_local(LocalAddr::new(self.regions.objects, start), &mut bytes)
                .expect("own region");
            self.write(
                nic,
                RemoteAddr::new(laggard, self.regions.stage, base + start),
                &bytes,
            );
        }
        let dir = RemoteAddr::new(laggard, self.regions.stage, base + self.layout.len());
        self.write(nic, dir, &directory);
        let done = Entry {
            status: DONE,
            tmp: self.applied,
            attempt: e.attempt,
            responder: self.cfg.rank_of(self.me) as u64,
        };
        self.broadcast(nic, k, done);
        self.counters.transfers_served += 1;
        self.counters.objects_sent += objects.len() as u64;
    }
}
