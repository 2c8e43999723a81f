//! Algorithm 10: execution. A replica reads every object of the request's read set - its own
//! partition's from its memory, other partitions' by a one-sided read from a replica that
//! coordinated in phase 2 - executes the request, and writes the new versions of its own
//! partition's objects.
//!
//! | line | where |
//! |---|---|
//! | 2-3, the object's partition | `HeronServer::execute` |
//! | 4-10, object addresses | [`crate::store::Layout`] (see the crate docs, "Object addresses") |
//! | 12-14, local values | `HeronServer::read_local` |
//! | 16-23, remote reads, another process on failure | `HeronServer::read_remote`, `HeronServer::take_reads` |
//! | 24-28, the valid version | [`crate::store::valid`] |
//! | 29-30, state loss | `HeronServer::lag`, then [`crate::state_transfer`] |
//! | 33-35, writes | `HeronServer::write_objects` |
//!
//! A replica remembers the processes a read failed at (they crashed) and reads from others
//! while any coordinated; line 17 draws among all of them. A read fails only after the NIC's
//! retry timeout, so a read not back within [`crate::Config::read_timeout`] is not waited for
//! alone: the object is also read from another replica that coordinated (the first valid
//! answer counts, the late one only frees its buffer). Without this, one replica's crash held
//! every partition reading from it for the retry timeout (10 ms in the simulator's profiles):
//! `harness check --protocol heron` found clients with no request answered between a
//! replica's crash and the end of their load.
//!
//! Every row read (locally or remotely) and every row written is reported as
//! [`transport::Work::Row`], beside the bytes copied, so a software profile prices the
//! application's work per row (issue 15: execution cost through the profile, not wall time).
//!
//! The remote reads of a request are issued together rather than one after another (line 2's
//! loop): each still goes to a replica that coordinated, and the request executes only once
//! every value is in.

use crate::app::{Application, ObjectId};
use crate::coordination::Stage;
use crate::seal::SEAL;
use crate::server::{HeronServer, Inflight, Phase, READ_SLOTS};
use crate::store::{valid, Version};
use multicast::Membership;
use transport::{LocalAddr, Nanos, Nic, RemoteAddr, Status, Work};

impl<S, A: Application> HeronServer<S, A> {
    /// Phase 3: gathers the read set, then executes and writes. Returns whether anything
    /// happened, and when a read in flight is due.
    pub(crate) fn execute<N: Nic>(&mut self, nic: &mut N) -> (bool, Option<Nanos>) {
        let mut worked = self.take_reads(nic);
        if self.lagging() {
            return (true, None);
        }
        let tmp = self.running.as_ref().expect("running").req.tmp;
        let now = nic.now();
        let timeout = self.cfg.read_timeout;
        // Round after round of reads, as long as the application asks for more. The read set
        // only grows (at its end), and so do the reads within this call: every object before
        // `read_upto` was read in an earlier round, and each round looks only at what the one
        // before added (a Stock-Level reads some 600 objects in three rounds).
        let mut read_upto = 0;
        loop {
            let run = self.running.as_ref().expect("running");
            // An object is missing until read, or while every read of it is overdue.
            let missing: Vec<ObjectId> = run.read_set[read_upto..]
                .iter()
                .copied()
                .filter(|o| {
                    !run.reads.contains_key(o)
                        && !self
                            .inflight
                            .values()
                            .any(|x| x.tmp == tmp && x.oid == *o && now < x.posted + timeout)
                })
                .collect();
            for oid in missing {
                if self.app.replicated(oid) || self.app.partition_of(oid) == self.group {
                    worked |= self.read_local(nic, oid);
                } else {
                    worked |= self.read_remote(nic, oid);
                }
                if self.lagging() {
                    return (true, None);
                }
            }
            let run = self.running.as_mut().expect("running");
            if run.read_set[read_upto..]
                .iter()
                .any(|o| !run.reads.contains_key(o))
            {
                let due = self
                    .inflight
                    .values()
                    .filter(|x| x.tmp == tmp && !run.reads.contains_key(&x.oid))
                    .map(|x| x.posted + timeout)
                    .filter(|&at| at > now)
                    .min();
                return (worked, due);
            }
            read_upto = run.read_set.len();
            let more = crate::app::next_reads(&*self.app, &run.req.body, run.req.dst, &run.reads);
            if more.is_empty() {
                break;
            }
            run.read_set.extend(more);
            worked = true;
        }
        let run = self.running.as_ref().expect("running");
        let execution = self.app.execute(&run.req.body, &run.reads);
        self.write_objects(nic, &execution.writes);
        // Recorded as soon as it is executed: its writes are in the state from now on, whether
        // or not phase 4 ever ends.
        let run = self.running.as_ref().expect("running");
        if let Some(log) = &mut self.record {
            log.push(crate::server::Executed {
                tmp: run.req.tmp,
                client: run.req.client,
                seq: run.req.seq,
                body: run.req.body.clone(),
                response: execution.response.clone(),
            });
        }
        let run = self.running.as_mut().expect("running");
        run.response = Some(execution.response);
        self.counters.executed += 1;
        let now = nic.now();
        self.counters.executing_ns += now.saturating_sub(run.since).as_nanos();
        run.since = now;
        if run.req.dst.len() == 1 {
            self.respond(nic);
        } else {
            self.counters.multi += 1;
            run.phase = Phase::Finish;
            let req = run.req.clone();
            self.write_coord(nic, &req, Stage::Executed);
        }
        (true, None)
    }

    /// Lines 12-14: a value of this replica's own partition.
    fn read_local<N: Nic>(&mut self, nic: &mut N, oid: ObjectId) -> bool {
        let (at, len) = self.layout.slot(oid, self.app.row_of(oid));
        let slot = self.read_own(nic, LocalAddr::new(self.regions.objects, at), len);
        nic.work(Work::Copy, len as u64);
        nic.work(Work::Row, 1);
        self.accept(oid, self.layout.versions(oid, &slot));
        self.recycle(slot);
        true
    }

    /// Lines 16-21: reads `oid` from a replica of its partition that coordinated for the
    /// request, chosen at random among those not already asked for it; waits if none can be
    /// read from yet (or the read buffer is full).
    fn read_remote<N: Nic>(&mut self, nic: &mut N, oid: ObjectId) -> bool {
        let run = self.running.as_ref().expect("running");
        let tmp = run.req.tmp;
        let Some(buffer) =
            (0..READ_SLOTS).find(|b| !self.inflight.values().any(|x| x.buffer == *b))
        else {
            return false;
        };
        let h = self.app.partition_of(oid);
        let asked: Vec<_> = self
            .inflight
            .values()
            .filter(|x| x.tmp == tmp && x.oid == oid)
            .map(|x| x.from)
            .collect();
        let candidates: Vec<_> = self
            .cfg
            .members(h)
            .filter(|&q| {
                !run.failed.contains(&q)
                    && !asked.contains(&q)
                    && self.coord_entry(nic, q).delivered(tmp)
            })
            .collect();
        // A process a read already failed at has crashed (objects are readable by every
        // server, so a read fails only at a crashed peer): ask it again only if no one else
        // coordinated. An RDMA read to a crashed peer fails after the transport's retry
        // timeout (milliseconds), so each one costs that much.
        let alive: Vec<_> = candidates
            .iter()
            .copied()
            .filter(|q| !self.unreachable.contains(q))
            .collect();
        let candidates = if alive.is_empty() { candidates } else { alive };
        if candidates.is_empty() {
            return false;
        }
        let q = candidates[nic.rng().below(candidates.len() as u64) as usize];
        let (at, len) = self.layout.slot(oid, self.app.row_of(oid));
        let into = LocalAddr::new(self.regions.reads, buffer * self.layout.max_slot());
        let Ok(wr) = nic.post_read(
            RemoteAddr::new(q, self.regions.objects, at),
            len,
            into,
            true,
        ) else {
            return false;
        };
        self.upper.insert(wr);
        self.counters.remote_reads += 1;
        self.counters.late_reads += !asked.is_empty() as u64;
        self.inflight.insert(
            wr,
            Inflight {
                tmp,
                oid,
                from: q,
                buffer,
                posted: nic.now(),
            },
        );
        true
    }

    /// Lines 21-23: the remote reads that returned; a failed one marks its process if it
    /// crashed, and the object is read again (elsewhere, if it crashed). A read of a request
    /// this replica no longer runs (it was covered by a state transfer) is dropped.
    pub(crate) fn take_reads<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        while let Some((c, read)) = self.returned.pop_front() {
            let Some(run) = self.running.as_mut().filter(|r| r.req.tmp == read.tmp) else {
                continue;
            };
            worked = true;
            match c.status {
                Status::Success => {}
                Status::PeerUnreachable => {
                    run.failed.insert(read.from);
                    self.unreachable.insert(read.from);
                    self.counters.failed_reads += 1;
                    continue;
                }
                // The queue pair was reset under it: read again.
                _ => continue,
            }
            // Not executing any more, or already read from another replica.
            if run.phase != Phase::Execute || run.reads.contains_key(&read.oid) {
                continue;
            }
            let (_, len) = self.layout.slot(read.oid, self.app.row_of(read.oid));
            let at = LocalAddr::new(self.regions.reads, read.buffer * self.layout.max_slot());
            let slot = self.read_own(nic, at, len);
            nic.work(Work::Row, 1);
            match self.layout.open(read.oid, &slot) {
                Some(versions) => self.accept(read.oid, versions),
                // Read while its owner wrote it: the object is still missing, so it is read
                // again (see `crate::store`).
                None => self.counters.torn_reads += 1,
            }
            self.recycle(slot);
        }
        worked
    }

    /// Whether the running request found that this replica lags.
    fn lagging(&self) -> bool {
        self.running
            .as_ref()
            .is_some_and(|r| r.phase == Phase::Transfer)
    }

    /// Lines 24-32: keeps the valid version of `oid` among the two versions of its slot, or
    /// finds that this replica lags.
    fn accept(&mut self, oid: ObjectId, versions: [Version<'_>; 2]) {
        let run = self.running.as_mut().expect("running");
        match valid(&versions, run.req.tmp) {
            Some(v) => {
                run.reads.insert(oid, v.to_vec());
            }
            None => self.lag(),
        }
    }

    /// Line 30: every version read is at or after the request, so the replicas read from have
    /// moved past what this replica must see: it asks its partition for a state transfer
    /// ([`crate::state_transfer`]).
    fn lag(&mut self) {
        let run = self.running.as_mut().expect("running");
        run.phase = Phase::Transfer;
    }

    /// Lines 33-35: writes the new version of each of this partition's objects the request
    /// wrote, over the older version, and the slot's new seal (see [`crate::store`]).
    ///
    /// # Panics
    /// If the application writes an object of a replicated table or outside the request's
    /// destinations, or a value longer than its table's.
    fn write_objects<N: Nic>(&mut self, nic: &mut N, writes: &[(ObjectId, Vec<u8>)]) {
        let run = self.running.as_ref().expect("running");
        let (tmp, dst) = (run.req.tmp, run.req.dst);
        let group = self.group;
        for (k, (oid, value)) in writes.iter().enumerate() {
            // An object written twice takes the last value: one version per request, or a
            // second write would leave both versions tagged with this request.
            if writes[k + 1..].iter().any(|(o, _)| o == oid) {
                continue;
            }
            assert!(
                !self.app.replicated(*oid) && dst.contains(self.app.partition_of(*oid)),
                "the application wrote {oid:?}, of a replicated table or outside the request's destinations"
            );
            assert!(
                value.len() <= self.layout.value_bytes(*oid),
                "value of {} bytes for {oid:?}, whose table holds {}",
                value.len(),
                self.layout.value_bytes(*oid)
            );
            if self.app.partition_of(*oid) != group {
                continue;
            }
            self.updates.push((tmp, *oid));
            let (at, len) = self.layout.slot(*oid, self.app.row_of(*oid));
            let base = LocalAddr::new(self.regions.objects, at);
            let mut slot = self.read_own(nic, base, len);
            let version = self.layout.rewrite(&mut slot, tmp, value);
            // The version, then the seal: in whatever order their words become visible, a
            // reader takes the slot only once both are whole.
            nic.write_local(base.add(version.start), &slot[version.clone()])
                .expect("own region");
            nic.write_local(base.add(len - SEAL), &slot[len - SEAL..])
                .expect("own region");
            self.recycle(slot);
            nic.work(Work::Copy, self.layout.value_bytes(*oid) as u64);
            nic.work(Work::Row, 1);
        }
        self.applied = tmp;
    }
}

#[cfg(test)]
mod tests {
    use crate::fixture::{Fixture, Pairs};
    use crate::seal::reseal;
    use crate::server::Phase;
    use transport::{LocalAddr, OpKind, RemoteAddr, Status, WrId};

    /// A slot of the fixture's application: version `a` then version `b`, each `(tag, [x|y])`,
    /// sealed.
    fn slot(a: (u64, [u64; 2]), b: (u64, [u64; 2])) -> Vec<u8> {
        let mut out: Vec<u8> = [a, b]
            .iter()
            .flat_map(|&(tag, [x, y])| [tag, x, y])
            .chain([0])
            .flat_map(|w| w.to_le_bytes())
            .collect();
        reseal(&mut out);
        out
    }

    /// `base` with the words of `range` (bytes) taken from `from`: a read that saw those words
    /// at another instant.
    fn torn(base: &[u8], from: &[u8], range: std::ops::Range<usize>) -> Vec<u8> {
        let mut out = base.to_vec();
        out[range.clone()].copy_from_slice(&from[range]);
        out
    }

    /// Replica 0 of partition 0 executing request 100 on keys 0 (its own) and 1 (partition
    /// 1's, read from a replica that coordinated), its remote read in flight.
    fn reading() -> Fixture {
        let mut f = Fixture::new(0, 0);
        f.deliver(100, &[0, 1]);
        f.run();
        let coord = f.server.regions.coord;
        for (g, rank) in [(0, 1), (1, 0), (1, 1)] {
            let q = f.process(g, rank);
            f.land(
                coord,
                q.index() * crate::server::ENTRY,
                &100u64.to_le_bytes(),
            );
        }
        f.ops();
        f.run();
        f
    }

    /// The one read posted since the last look: `(wr, from, into)`.
    fn in_flight(f: &mut Fixture) -> (WrId, RemoteAddr, LocalAddr) {
        let reads = f.reads();
        let [read] = reads[..] else {
            panic!("not one read posted: {reads:?}");
        };
        read
    }

    /// Lands `bytes` as the data of `read` and completes it.
    fn answer(f: &mut Fixture, (wr, src, into): (WrId, RemoteAddr, LocalAddr), bytes: &[u8]) {
        f.land(into.region, into.offset, bytes);
        f.complete(wr, OpKind::Read, src.process, Status::Success);
        f.run();
    }

    /// What the running request read of key 1, and whether it lags.
    fn outcome(f: &Fixture) -> (Option<Vec<u8>>, bool) {
        match &f.server.running {
            Some(run) => (
                run.reads.get(&Pairs::oid(1)).cloned(),
                run.phase == Phase::Transfer,
            ),
            None => panic!("request 100 is still running"),
        }
    }

    /// H1: a slot read while its owner writes it, in any order of its words, is never taken:
    /// not its value (future, stale or half-new), and not as a reason to lag. The reader reads
    /// it again, and takes the valid version once the slot is whole.
    #[test]
    fn a_torn_object_slot_is_read_again_never_taken() {
        // Versions 150 and 30; request 200 replaces 30. Request 100 must take 30.
        let before = slot((150, [150, 150]), (30, [30, 30]));
        let after = slot((150, [150, 150]), (200, [200, 200]));
        // Versions 30 and 20; request 40 replaces 20: request 100 must take 30 or 40.
        let early = slot((30, [30, 30]), (20, [20, 20]));
        let early_after = slot((30, [30, 30]), (40, [40, 40]));
        // Versions 30 and 50; 150 replaces 30, then 200 replaces 50: request 100 must take 50.
        let first = slot((30, [30, 30]), (50, [50, 50]));
        let last = slot((150, [150, 150]), (200, [200, 200]));
        let cases = [
            ("old tag, new value (future)", torn(&before, &after, 32..48)),
            ("old tag, half-new value", torn(&before, &after, 32..40)),
            ("new tag, old value (lag)", torn(&before, &after, 24..32)),
            (
                "new tag, old value (stale)",
                torn(&early, &early_after, 24..32),
            ),
            ("new version, old seal", torn(&before, &after, 24..48)),
            (
                "one version before a write, the other after the next",
                torn(&first, &last, 24..48),
            ),
        ];
        let mut taken = Vec::new();
        for (case, bytes) in cases {
            let mut f = reading();
            let read = in_flight(&mut f);
            answer(&mut f, read, &bytes);
            let (value, lags) = outcome(&f);
            if value.is_some() || lags {
                taken.push((case, value.map(|v| Pairs::words(&v)), lags));
                continue;
            }
            assert_eq!(f.server.counters.torn_reads, 1, "{case}");
            let again = in_flight(&mut f);
            answer(&mut f, again, &before);
            assert_eq!(outcome(&f), (Some(Pairs::value(30, 30)), false), "{case}");
        }
        assert!(
            taken.is_empty(),
            "torn reads taken (value, lags): {taken:#?}"
        );
    }
}
