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
//! An entry of `state_sync_mem` is `[status u64 | tmp u64 | attempt u64 | responder u64 |
//! seal u64]`: status 1 asks for the objects updated from request `tmp` on, status 0 says a
//! transfer up to `tmp` is done. The laggard and the responders all write it, so a reader takes
//! it only when sealed (see the crate docs, "Memory protocol"): a torn entry, the laggard's new
//! attempt beside a responder's old `tmp`, would otherwise end the wait with the wrong cut-off
//! and skip, or execute twice, the requests between. Each attempt names its responder: the replicas after the laggard in rank
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
//! one responder land in order (one queue pair, and a write flushed by a queue pair in error is
//! made again in post order with those after it, see `HeronServer::write`), so its completion
//! entry lands after its objects.
//!
//! The laggard still checks what it installs, as it would bytes from the network: the area's
//! directory `[count | attempt | rid | (offset, len) x count | seal]` must name the attempt and
//! cut-off the entry announced, list whole slots of the object store in ascending order, and
//! carry the seal of itself and of every staged slot's seal; every staged slot must be whole.
//! Anything else is refused ([`Refused`]), and the laggard asks again.
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
use crate::seal::{seal, sealed, word, SEAL};
use crate::server::{Asked, HeronServer};
use crate::store::Layout;
use multicast::Membership;
use std::collections::BTreeSet;
use transport::{LocalAddr, Nanos, Nic, RemoteAddr, Work};

/// Bytes of an entry of `state_sync_mem`: four words and their seal.
pub(crate) const ENTRY: usize = 32 + SEAL;

/// Bytes of a directory before its `(offset, len)` pairs: count, attempt, cut-off.
const HEAD: usize = 24;

/// The largest write of a transfer: adjacent object slots are sent together up to this many
/// bytes, as the thesis's prototype sends its transfers in RDMA writes of 32 KB ("which has
/// better performance than smaller payload sizes for the same amount of data", section
/// 5.3.5). A slot larger than this goes in one write of its own.
pub(crate) const TRANSFER_WRITE: usize = 32 * 1024;

/// Status of an entry: a transfer is asked for.
const ASKED: u64 = 1;
/// Status of an entry: the transfer is done (line 17's 0).
const DONE: u64 = 0;

/// Bytes of one responder's area: a mirror of the object store, then the directory: its head,
/// `(offset, len)` pairs for at most every row, and its seal.
pub(crate) fn area(layout: &Layout) -> usize {
    layout.len() + HEAD + 16 * layout.rows() + SEAL
}

/// Why a laggard refused the transfer staged for it: the area does not hold what a responder
/// staged for the attempt the laggard waits for (garbage, or writes that have not all landed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The entry names no other replica of the partition.
    Responder {
        /// The rank named.
        rank: u64,
    },
    /// The directory lists more slots than the object store has rows.
    Count {
        /// Slots listed.
        count: u64,
        /// Rows of the object store.
        rows: u64,
    },
    /// The directory is of another attempt or cut-off than the entry announces.
    Stale {
        /// The directory's attempt.
        attempt: u64,
        /// The directory's cut-off.
        rid: u64,
    },
    /// A pair of the directory is not a slot of the object store after the one before.
    NotASlot {
        /// Its place in the directory.
        index: u64,
        /// The offset it gives.
        offset: u64,
        /// The length it gives.
        len: u64,
    },
    /// The slot staged at `offset` is not whole.
    Torn {
        /// The slot's offset.
        offset: usize,
    },
    /// The directory's seal matches neither it nor the slots staged.
    Seal,
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
    fn words(&self) -> [u64; 4] {
        [self.status, self.tmp, self.attempt, self.responder]
    }

    /// The entry's bytes, sealed.
    fn bytes(&self) -> [u8; ENTRY] {
        let words = self.words();
        let mut out = [0; ENTRY];
        for (i, w) in words.into_iter().chain([seal(words)]).enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// The entry `bytes` hold, if sealed.
    fn read(bytes: &[u8; ENTRY]) -> Option<Entry> {
        let w = |i: usize| word(&bytes[i * 8..i * 8 + 8]);
        sealed(bytes).then(|| Entry {
            status: w(0),
            tmp: w(1),
            attempt: w(2),
            responder: w(3),
        })
    }
}

impl<S, A: Application> HeronServer<S, A> {
    /// Entry `rank` of this replica's `state_sync_mem`; `None` while it is torn (being
    /// written, by the laggard or a responder).
    fn entry(&self, nic: &impl Nic, rank: usize) -> Option<Entry> {
        let mut bytes = [0; ENTRY];
        nic.read_local(LocalAddr::new(self.regions.state, rank * ENTRY), &mut bytes)
            .expect("own region");
        Entry::read(&bytes)
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
        let done = self
            .entry(nic, me)
            .filter(|e| e.status == DONE && e.attempt == asked.attempt && e.tmp >= run.req.tmp);
        if let Some(e) = done {
            match self.install(nic, e) {
                Ok(()) => {
                    self.counters.transfer_ns += (nic.now() - asked.since).as_nanos();
                    return (true, None);
                }
                // Nothing was installed: ask again, the next responder.
                Err(_) => {
                    self.counters.transfers_refused += 1;
                    let deadline = self.ask(nic);
                    return (true, Some(deadline));
                }
            }
        }
        if nic.now() >= asked.deadline {
            let deadline = self.ask(nic);
            return (true, Some(deadline));
        }
        (false, Some(asked.deadline))
    }

    /// Copies the objects staged for the transfer `done` announces into the object store and
    /// skips every request up to its cut-off (line 6), once the staged area checks out (see
    /// the module docs); otherwise installs nothing and says why. Each slot is written whole:
    /// a reader takes it only once it is sealed again.
    fn install<N: Nic>(&mut self, nic: &mut N, done: Entry) -> Result<(), Refused> {
        let staged = self.staged(nic, done)?;
        for (offset, bytes) in &staged {
            nic.write_local(LocalAddr::new(self.regions.objects, *offset), bytes)
                .expect("own region");
            nic.work(Work::Copy, bytes.len() as u64);
            self.counters.transfer_bytes += bytes.len() as u64;
        }
        let rid = done.tmp;
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
        Ok(())
    }

    /// The slots staged for the transfer `done` announces, `(offset, bytes)`, read from the
    /// responder's area after checking its directory (nothing is read or allocated past what
    /// the object store could hold).
    fn staged(&self, nic: &impl Nic, done: Entry) -> Result<Vec<(usize, Vec<u8>)>, Refused> {
        let me = self.cfg.rank_of(self.me) as u64;
        if done.responder >= self.cfg.replicas as u64 || done.responder == me {
            return Err(Refused::Responder {
                rank: done.responder,
            });
        }
        let base = done.responder as usize * area(&self.layout);
        let stage = |at: usize| LocalAddr::new(self.regions.stage, base + at);
        let dir = self.layout.len();
        let load = |at: usize| nic.load_u64(stage(dir + at)).expect("own region");
        let (count, attempt, rid) = (load(0), load(8), load(16));
        let rows = self.layout.rows() as u64;
        if count > rows {
            return Err(Refused::Count { count, rows });
        }
        if (attempt, rid) != (done.attempt, done.tmp) {
            return Err(Refused::Stale { attempt, rid });
        }
        let mut words = vec![count, attempt, rid];
        let mut staged: Vec<(usize, Vec<u8>)> = Vec::with_capacity(count as usize);
        for index in 0..count {
            let at = HEAD + 16 * index as usize;
            let (offset, len) = (load(at), load(at + 8));
            let after = staged.last().map_or(0, |(o, b)| o + b.len());
            let slot = usize::try_from(offset)
                .ok()
                .and_then(|o| self.layout.slot_at(o))
                .filter(|&(o, l)| l as u64 == len && o >= after);
            let Some((offset, len)) = slot else {
                return Err(Refused::NotASlot { index, offset, len });
            };
            words.extend([offset as u64, len as u64]);
            staged.push((offset, vec![0; len]));
        }
        for (offset, bytes) in &mut staged {
            nic.read_local(stage(*offset), bytes).expect("own region");
            if !Layout::whole(bytes) {
                return Err(Refused::Torn { offset: *offset });
            }
        }
        words.extend(staged.iter().map(|(_, b)| word(&b[b.len() - SEAL..])));
        if load(HEAD + 16 * count as usize) != seal(words) {
            return Err(Refused::Seal);
        }
        Ok(staged)
    }

    /// Lines 8-17, at every replica: serves each transfer that names this replica, once its
    /// objects reflect the laggard's request and its log covers it.
    pub(crate) fn serve_transfers<N: Nic>(&mut self, nic: &mut N) -> (bool, Option<Nanos>) {
        let me = self.cfg.rank_of(self.me);
        nic.work(Work::Scan, self.cfg.replicas as u64 - 1);
        let mut worked = false;
        for k in (0..self.cfg.replicas).filter(|&k| k != me) {
            let Some(e) = self.entry(nic, k) else {
                continue;
            };
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
        let mut words = vec![slots.len() as u64, e.attempt, self.applied];
        words.extend(slots.iter().flat_map(|&(at, len)| [at as u64, len as u64]));
        // Adjacent slots go together, in writes of at most `TRANSFER_WRITE` bytes.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &(at, len) in &slots {
            match runs.last_mut() {
                Some((start, end)) if *end == at && at + len - *start <= TRANSFER_WRITE => {
                    *end = at + len
                }
                _ => runs.push((at, at + len)),
            }
        }
        let mut seals = slots.iter().peekable();
        for (start, end) in runs {
            let mut bytes = vec![0; end - start];
            nic.read_local(LocalAddr::new(self.regions.objects, start), &mut bytes)
                .expect("own region");
            // The seal of each slot of the run, its last word, goes into the directory's.
            while let Some(&(at, len)) = seals.next_if(|&&(at, _)| at < end) {
                let last = at + len - start;
                words.push(word(&bytes[last - SEAL..last]));
            }
            self.write(
                nic,
                RemoteAddr::new(laggard, self.regions.stage, base + start),
                &bytes,
            );
        }
        let sealed_with = seal(words.iter().copied());
        words.truncate(3 + 2 * slots.len());
        words.push(sealed_with);
        let directory: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{writes_to, Fixture, Pairs};
    use crate::server::RETRY;
    use transport::{Op, OpKind, Status};

    /// A laggard (replica 0 of partition 0, lagging in request 100, its first attempt naming
    /// replica 1) and its responder (replica 1, which applied requests 110, 120 and 130 on
    /// keys 0, 2 and 0), which has just served the attempt: the writes it posted to the
    /// laggard, in post order, not landed yet.
    struct Transfer {
        laggard: Fixture,
        responder: Fixture,
        writes: Vec<(RemoteAddr, Vec<u8>)>,
    }

    fn served() -> Transfer {
        let mut responder = Fixture::new(0, 1);
        for (tmp, key) in [(110, 0), (120, 2), (130, 0)] {
            responder.deliver(tmp, &[key]);
        }
        responder.run();
        assert_eq!(responder.server.applied, 130);
        let mut laggard = Fixture::new(0, 0);
        laggard.lag(100);
        for (dst, bytes) in writes_to(&laggard.ops(), responder.server.me) {
            responder.land_write(dst, &bytes);
        }
        responder.ops();
        responder.server.serve_transfers(&mut responder.nic);
        let writes = writes_to(&responder.ops(), laggard.server.me);
        Transfer {
            laggard,
            responder,
            writes,
        }
    }

    impl Transfer {
        /// Whether the laggard installed a transfer.
        fn installed(&self) -> bool {
            self.laggard.server.counters.transfers_received > 0
        }

        /// The laggard's object slot of `key`, and the responder's.
        fn slots(&self, key: u64) -> (Vec<u8>, Vec<u8>) {
            let (at, len) = self.laggard.server.layout.slot(Pairs::oid(key), key / 2);
            let read = |f: &Fixture| {
                let mut slot = vec![0; len];
                f.nic
                    .read_local(LocalAddr::new(f.server.regions.objects, at), &mut slot)
                    .expect("own region");
                slot
            };
            (read(&self.laggard), read(&self.responder))
        }

        /// The completion entry the laggard waits for, as it reads it now.
        fn done(&self) -> Entry {
            self.laggard
                .server
                .entry(&self.laggard.nic, 0)
                .expect("sealed")
        }
    }

    /// H3: while the completion entry is landing over the laggard's request (its words in
    /// any order), the laggard neither installs nor gives up on the attempt: it waits. Once
    /// the entry is whole it installs up to the responder's cut-off, 130.
    #[test]
    fn a_torn_state_sync_entry_never_ends_the_wait() {
        let mut objects = served().writes;
        let (dst, done) = objects.pop().expect("writes");
        assert_eq!(
            dst.region,
            Fixture::new(0, 0).server.regions.state,
            "the entry goes last"
        );
        let mut acted = Vec::new();
        for mask in 0..1u64 << (ENTRY / 8) {
            let mut t = served();
            for (dst, bytes) in &objects {
                t.laggard.land_write(*dst, bytes);
            }
            t.laggard.land_words(dst, &done, mask);
            let whole = t.laggard.server.entry(&t.laggard.nic, 0)
                == Entry::read(&done.clone().try_into().expect("an entry"));
            t.laggard.run();
            let c = t.laggard.server.counters;
            if whole {
                assert!(t.installed(), "mask {mask:#b}");
                assert_eq!(t.laggard.server.last_req, 130);
            } else if c.transfers_received > 0 || c.transfers_refused > 0 || c.transfers_asked > 1 {
                acted.push((
                    mask,
                    c.transfers_received,
                    c.transfers_refused,
                    t.laggard.server.last_req,
                ));
            }
        }
        assert!(
            acted.is_empty(),
            "torn entries acted on (mask, installed, refused, last_req): {acted:?}"
        );
    }

    /// H2: writes of a serve flushed by a queue pair in error go out again in the order they
    /// were first posted (the objects, the directory, then the completion entry), and the
    /// laggard installs what the responder holds.
    #[test]
    fn a_serve_flushed_by_a_reset_queue_pair_is_written_again_in_post_order() {
        serve_failed_then_written_again(Status::Flushed);
    }

    /// A serve whose first write the laggard refused (its staging area revoked: the queue pair
    /// breaks, the rest is flushed) goes out again whole, the refused write included, in post
    /// order. Only flushed writes were written again before, so the refused object was lost,
    /// and the completion entry written after it could cover stale bytes.
    #[test]
    fn a_serve_whose_first_write_is_refused_is_written_again_whole() {
        serve_failed_then_written_again(Status::AccessDenied);
    }

    /// Fails every write of a serve, the first with `first` and the rest flushed, retries, and
    /// checks that the laggard gets them again in post order and installs what the responder
    /// holds.
    fn serve_failed_then_written_again(first: Status) {
        let mut t = served();
        let laggard = t.laggard.server.me;
        let posted: Vec<RemoteAddr> = t.writes.iter().map(|(dst, _)| *dst).collect();
        assert!(posted.len() >= 3, "objects, directory, entry: {posted:?}");
        let failed: Vec<_> = t.responder.server.written.keys().copied().collect();
        for (i, wr) in failed.into_iter().enumerate() {
            let peer = t.responder.server.written[&wr].process;
            let status = if i == 0 { first } else { Status::Flushed };
            t.responder.complete(wr, OpKind::Write, peer, status);
        }
        t.responder.server.take_completions(&mut t.responder.nic);
        t.responder.nic.set_now(RETRY);
        t.responder.server.retry_writes(&mut t.responder.nic);
        let again = writes_to(&t.responder.ops(), laggard);
        let order: Vec<RemoteAddr> = again.iter().map(|(dst, _)| *dst).collect();
        assert_eq!(order, posted, "not all written again, or out of post order");
        for (dst, bytes) in &again {
            t.laggard.land_write(*dst, bytes);
        }
        t.laggard.run();
        assert!(t.installed());
        for key in [0, 2] {
            let (mine, theirs) = t.slots(key);
            assert_eq!(mine, theirs, "key {key}");
        }
    }

    /// H2: a completion entry (and directory) landed before the objects it covers is not
    /// installed: the laggard refuses the staged area, keeps its objects, and asks again.
    #[test]
    fn a_completion_entry_landed_before_its_objects_is_refused_and_asked_again() {
        let mut t = served();
        let before: Vec<_> = [0, 2].map(|key| t.slots(key).0).to_vec();
        let n = t.writes.len();
        for (dst, bytes) in &t.writes[n - 2..] {
            t.laggard.land_write(*dst, bytes);
        }
        t.laggard.run();
        let c = t.laggard.server.counters;
        assert_eq!((c.transfers_received, c.transfers_refused), (0, 1));
        assert_eq!([0, 2].map(|key| t.slots(key).0).to_vec(), before);
        let asked = t.laggard.server.running.as_ref().and_then(|r| r.asked);
        assert_eq!(asked.map(|a| a.attempt), Some(2), "asks again");
        let again = t.laggard.ops();
        assert!(again.iter().any(|(_, op)| matches!(op, Op::Write { dst, .. } if dst.region == t.laggard.server.regions.state)));
    }

    /// H2: a staged area that is not what the responder staged for the attempt is refused,
    /// with the reason, before anything is allocated or written by its say-so.
    #[test]
    fn garbage_staged_directories_are_refused_with_a_reason() {
        let mut t = served();
        for (dst, bytes) in t.writes.clone() {
            t.laggard.land_write(dst, &bytes);
        }
        let done = t.done();
        let layout = t.laggard.server.layout.clone();
        let stage = t.laggard.server.regions.stage;
        let base = area(&layout);
        let dir = base + layout.len();
        let good = {
            let mut bytes = vec![0; area(&layout) - layout.len()];
            t.laggard
                .nic
                .read_local(LocalAddr::new(stage, dir), &mut bytes)
                .expect("own region");
            bytes
        };
        assert_eq!(word(&good[..8]), 2, "two slots staged");
        let (first, slot) = (word(&good[24..32]) as usize, word(&good[32..40]));
        let rows = layout.rows() as u64;
        let with = |at: usize, w: u64| {
            let mut d = good.clone();
            d[at..at + 8].copy_from_slice(&w.to_le_bytes());
            d
        };
        let swapped = {
            let mut d = good.clone();
            d[24..40].copy_from_slice(&good[40..56]);
            d[40..56].copy_from_slice(&good[24..40]);
            d
        };
        let cases: Vec<(&str, Vec<u8>, Entry, Refused)> = vec![
            (
                "count past the rows",
                with(0, rows + 1),
                done,
                Refused::Count {
                    count: rows + 1,
                    rows,
                },
            ),
            (
                "count of garbage",
                with(0, u64::MAX),
                done,
                Refused::Count {
                    count: u64::MAX,
                    rows,
                },
            ),
            (
                "another attempt",
                with(8, 7),
                done,
                Refused::Stale {
                    attempt: 7,
                    rid: 130,
                },
            ),
            (
                "another cut-off",
                with(16, 120),
                done,
                Refused::Stale {
                    attempt: 1,
                    rid: 120,
                },
            ),
            (
                "inside a slot",
                with(24, first as u64 + 8),
                done,
                Refused::NotASlot {
                    index: 0,
                    offset: first as u64 + 8,
                    len: slot,
                },
            ),
            (
                "wrong length",
                with(32, slot + 8),
                done,
                Refused::NotASlot {
                    index: 0,
                    offset: first as u64,
                    len: slot + 8,
                },
            ),
            (
                "past the store",
                with(24, u64::MAX),
                done,
                Refused::NotASlot {
                    index: 0,
                    offset: u64::MAX,
                    len: slot,
                },
            ),
            (
                "out of order",
                swapped,
                done,
                Refused::NotASlot {
                    index: 1,
                    offset: first as u64,
                    len: slot,
                },
            ),
            ("seal", with(HEAD + 32, 1), done, Refused::Seal),
            (
                "no such responder",
                good.clone(),
                Entry {
                    responder: 7,
                    ..done
                },
                Refused::Responder { rank: 7 },
            ),
            (
                "itself",
                good.clone(),
                Entry {
                    responder: 0,
                    ..done
                },
                Refused::Responder { rank: 0 },
            ),
        ];
        for (case, directory, entry, reason) in cases {
            t.laggard.land(stage, dir, &directory);
            assert_eq!(
                t.laggard.server.staged(&t.laggard.nic, entry).err(),
                Some(reason),
                "{case}"
            );
        }
        // A staged slot torn under a good directory.
        t.laggard.land(stage, dir, &good);
        let mut torn = vec![0; slot as usize];
        t.laggard
            .nic
            .read_local(LocalAddr::new(stage, base + first), &mut torn)
            .expect("own region");
        torn[8] ^= 1;
        t.laggard.land(stage, base + first, &torn);
        assert_eq!(
            t.laggard.server.staged(&t.laggard.nic, done).err(),
            Some(Refused::Torn { offset: first })
        );
        // Refused through the wait: nothing installed, asked again.
        t.laggard.run();
        let c = t.laggard.server.counters;
        assert_eq!((c.transfers_received, c.transfers_refused), (0, 1));
    }
}
