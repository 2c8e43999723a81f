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
//! | 29-30, state loss | `HeronServer::lag` |
//! | 33-35, writes | `HeronServer::write_objects` |
//!
//! The remote reads of a request are issued together rather than one after another (line 2's
//! loop): each still goes to a replica that coordinated, and the request executes only once
//! every value is in.

use crate::app::{Application, ObjectId};
use crate::coordination::Stage;
use crate::server::{HeronServer, Phase, READ_SLOTS};
use crate::store::valid;
use multicast::Membership;
use transport::{LocalAddr, Nic, RemoteAddr, Status, Work};

impl<S, A: Application> HeronServer<S, A> {
    /// Phase 3: gathers the read set, then executes and writes. Returns whether anything
    /// happened.
    pub(crate) fn execute<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = self.take_reads(nic);
        if self.counters.lagged {
            return worked;
        }
        let run = self.running.as_ref().expect("running");
        let missing: Vec<ObjectId> = run
            .read_set
            .iter()
            .copied()
            .filter(|o| !run.reads.contains_key(o) && !run.inflight.values().any(|x| x.0 == *o))
            .collect();
        for oid in missing {
            if self.app.partition_of(oid) == self.group {
                worked |= self.read_local(nic, oid);
            } else {
                worked |= self.read_remote(nic, oid);
            }
            if self.counters.lagged {
                return true;
            }
        }
        let run = self.running.as_ref().expect("running");
        if run.read_set.iter().any(|o| !run.reads.contains_key(o)) {
            return worked;
        }
        let execution = self.app.execute(&run.req.body, &run.reads);
        self.write_objects(nic, &execution.writes);
        let run = self.running.as_mut().expect("running");
        run.response = Some(execution.response);
        self.counters.executed += 1;
        if run.req.dst.len() == 1 {
            self.respond(nic);
        } else {
            self.counters.multi += 1;
            run.phase = Phase::Finish;
            let req = run.req.clone();
            self.write_coord(nic, &req, Stage::Executed);
        }
        true
    }

    /// Lines 12-14: a value of this replica's own partition.
    fn read_local<N: Nic>(&mut self, nic: &mut N, oid: ObjectId) -> bool {
        let (at, len) = self.layout.slot(oid, self.app.row_of(oid));
        let mut slot = vec![0; len];
        nic.read_local(LocalAddr::new(self.regions.objects, at), &mut slot)
            .expect("own region");
        nic.work(Work::Copy, len as u64);
        self.accept(oid, &slot);
        true
    }

    /// Lines 16-21: reads `oid` from a replica of its partition that coordinated for the
    /// request, chosen at random; waits if none can be read from yet (or the read buffer is
    /// full).
    fn read_remote<N: Nic>(&mut self, nic: &mut N, oid: ObjectId) -> bool {
        let run = self.running.as_ref().expect("running");
        let tmp = run.req.tmp;
        let Some(buffer) = (0..READ_SLOTS).find(|b| !run.inflight.values().any(|x| x.2 == *b))
        else {
            return false;
        };
        let h = self.app.partition_of(oid);
        let candidates: Vec<_> = self
            .cfg
            .members(h)
            .filter(|&q| !run.failed.contains(&q) && self.coord_entry(nic, q).1 >= tmp)
            .collect();
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
        let run = self.running.as_mut().expect("running");
        run.inflight.insert(wr, (oid, q, buffer));
        true
    }

    /// Lines 21-23: the completions of remote reads; a failed one marks its process (it
    /// crashed) and the object is read again elsewhere.
    fn take_reads<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        while let Some(c) = self.completions.pop_front() {
            let Some(run) = self.running.as_mut() else {
                continue;
            };
            let Some((oid, q, buffer)) = run.inflight.remove(&c.wr) else {
                // A coordination or response write: a failure means its target crashed, which
                // the majority rule already tolerates.
                continue;
            };
            worked = true;
            if c.status != Status::Success {
                run.failed.insert(q);
                self.counters.failed_reads += 1;
                continue;
            }
            let (_, len) = self.layout.slot(oid, self.app.row_of(oid));
            let mut slot = vec![0; len];
            let at = LocalAddr::new(self.regions.reads, buffer * self.layout.max_slot());
            nic.read_local(at, &mut slot).expect("own region");
            self.accept(oid, &slot);
            if self.counters.lagged {
                break;
            }
        }
        worked
    }

    /// Lines 24-32: keeps the valid version of `oid` from the bytes of its slot, or finds that
    /// this replica lags.
    fn accept(&mut self, oid: ObjectId, slot: &[u8]) {
        let run = self.running.as_mut().expect("running");
        let versions = self.layout.versions(oid, slot);
        match valid(&versions, run.req.tmp) {
            Some(v) => {
                run.reads.insert(oid, v.to_vec());
            }
            None => self.lag(),
        }
    }

    /// Line 30: every version read is at or after the request, so the replicas read from have
    /// moved past what this replica must see. State transfer (Algorithm 11) is not in yet:
    /// until it is, the replica stops itself, and the runtime treats it as crashed (its
    /// partition keeps a majority as long as no more than f replicas stop).
    fn lag(&mut self) {
        self.counters.lagged = true;
    }

    /// Lines 33-35: writes the new version of each of this partition's objects the request
    /// wrote, over the older version: tag first, then value (see [`crate::store`]).
    ///
    /// # Panics
    /// If the application writes an object outside the request's declared write set, or a
    /// value longer than its table's.
    fn write_objects<N: Nic>(&mut self, nic: &mut N, writes: &[(ObjectId, Vec<u8>)]) {
        let run = self.running.as_ref().expect("running");
        let tmp = run.req.tmp;
        let declared = self.app.write_set(&run.req.body);
        for (oid, value) in writes {
            assert!(
                declared.contains(oid),
                "the application wrote {oid:?}, outside the request's write set {declared:?}"
            );
            assert!(
                value.len() <= self.layout.value_bytes(*oid),
                "value of {} bytes for {oid:?}, whose table holds {}",
                value.len(),
                self.layout.value_bytes(*oid)
            );
            if self.app.partition_of(*oid) != self.group {
                continue;
            }
            let (at, len) = self.layout.slot(*oid, self.app.row_of(*oid));
            let mut slot = vec![0; len];
            let base = LocalAddr::new(self.regions.objects, at);
            nic.read_local(base, &mut slot).expect("own region");
            let (tag, val) = self.layout.older(&self.layout.versions(*oid, &slot), len);
            let mut padded = vec![0; self.layout.value_bytes(*oid)];
            padded[..value.len()].copy_from_slice(value);
            nic.write_local(base.add(tag), &tmp.to_le_bytes())
                .expect("own region");
            nic.write_local(base.add(val), &padded).expect("own region");
            nic.work(Work::Copy, padded.len() as u64);
        }
        self.applied = tmp;
    }
}
