//! Becoming leader: the leader-election oracle, Algorithm 3 (`become_leader`), Step 2.7
//! (checking permissions) and Step 4.1 (reading a quorum of logs).
//!
//! The oracle (section 2.1's `leader(g)`) is a heartbeat failure detector with a sticky choice:
//! a replica expects the leader it granted; when that leader's heartbeat has not changed for
//! `timing.suspect`, it expects the next rank, cyclically. Once suspicions stop, every correct
//! replica expects the same correct process, which is all the oracle must give. A replica that
//! expects itself and does not lead runs Step 2.1. Safety never depends on the oracle: two
//! replicas may both believe they lead, and permissions let at most one write a quorum.
//! Heartbeats go on the control queue pair ([`transport::Qp::Control`]): queued behind a
//! backlog of log writes they would make a busy leader look dead.
//!
//! Timestamps are `counter << 8 | rank`, unique system-wide within a group and increasing per
//! candidate (Step 3.1).

use crate::layout::{local, remote, Layout, CTL, LOG, PERM_ACK_BYTES, PERM_ACK_PAYLOAD, SCRATCH};
use crate::ordering::Lead;
use crate::replica::{Role, TramServer};
use multicast::Membership;
use transport::{Access, Nanos, Nic, ProcessId, Qp};

/// Answer words of `perm_ack`.
const ACK: u64 = 1;
const NACK: u64 = 2;

/// A candidacy in progress (Algorithm 3, then Step 4.1).
#[derive(Debug)]
pub(crate) struct Candidacy {
    /// The timestamp proposed.
    pub(crate) ts: u64,
    /// Per rank: `(granted, their STD or, if refused, their tmp)`.
    pub(crate) answers: Vec<Option<(bool, u64)>>,
    /// When it started (a candidacy without enough answers is retried).
    started: Nanos,
    /// Step 4.1: `Some` once permissions are in: per rank, its log read.
    reads: Option<Vec<Read>>,
}

/// A candidate's read of one replica's log (Step 4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// Not posted (the replica has not granted yet).
    Unasked,
    /// Posted.
    InFlight,
    /// Completed (`true`) or failed.
    Done(bool),
}

impl TramServer {
    /// Step 2.1 / Algorithm 3, Step 3.1: propose a higher timestamp to every replica.
    pub(crate) fn start_candidacy<N: Nic>(&mut self, nic: &mut N) {
        let ts = ((self.tmp >> 8) + 1) << 8 | self.rank as u64;
        self.tmp = ts;
        // The candidate grants itself (see `crate::replica`): nobody else may write its log.
        let peers: Vec<(usize, ProcessId)> = self.peers().collect();
        for &(_, p) in &peers {
            let _ = nic.set_access(LOG, p, Access::None);
        }
        self.leader = Some(self.rank);
        let mut answers = vec![None; self.cfg.replicas];
        answers[self.rank] = Some((true, self.std));
        for &(_, p) in &peers {
            let at = self.layout.perm(self.rank);
            self.write_word(nic, p, at, &ts.to_le_bytes());
        }
        self.role = Role::Candidate(Candidacy {
            ts,
            answers,
            started: nic.now(),
            reads: None,
        });
        self.beat_timer.disarm();
    }

    /// Steps 3.2-3.3 and 4.1, one poll's worth.
    pub(crate) fn campaign<N: Nic>(&mut self, nic: &mut N) -> bool {
        let quorum = self.cfg.quorum();
        let now = nic.now();
        let worked = self.collect_answers(nic);
        let Role::Candidate(c) = &mut self.role else {
            return worked;
        };
        let acks = c.answers.iter().flatten().filter(|a| a.0).count();
        let answered = c.answers.iter().flatten().count();
        // A candidacy that neither wins nor loses (answers or reads lost to crashed or slow
        // replicas) is retried with a higher timestamp.
        let timed_out = now >= c.started.saturating_add(self.cfg.timing.suspect);
        if c.reads.is_none() {
            if acks >= quorum {
                // Step 3.3: OK. Step 4.1 reads the log of every replica that granted, as the
                // grants come in.
                let mut reads = vec![Read::Unasked; self.cfg.replicas];
                reads[self.rank] = Read::Done(true);
                c.reads = Some(reads);
                self.post_reads(nic);
                return true;
            }
            if answered >= quorum || timed_out {
                // Step 3.3: NOK. Learn the highest timestamp refused with, back off, retry.
                let highest = c
                    .answers
                    .iter()
                    .flatten()
                    .filter(|a| !a.0)
                    .map(|a| a.1)
                    .max();
                self.tmp = self.tmp.max(highest.unwrap_or(0));
                // Refused: another candidate holds a higher timestamp, defer to it.
                self.give_up(now, highest.is_some());
                return true;
            }
            return worked;
        }
        self.post_reads(nic);
        let Role::Candidate(c) = &mut self.role else {
            return worked;
        };
        let reads = c.reads.as_ref().expect("reading");
        let ok = reads.iter().filter(|r| **r == Read::Done(true)).count();
        let possible = ok
            + (0..self.cfg.replicas)
                .filter(|&r| reads[r] == Read::InFlight || c.answers[r].is_none())
                .count();
        if ok >= quorum {
            let copies: Vec<usize> = (0..self.cfg.replicas)
                .filter(|&r| r != self.rank && reads[r] == Read::Done(true))
                .collect();
            let answers = c.answers.clone();
            let ts = c.ts;
            self.reigns += 1;
            self.role = Role::Leader(Box::new(Lead::new(self, ts, &answers, copies, now)));
            return true;
        }
        if possible < quorum {
            // Step 4.1: fewer than a quorum of logs: someone else took over.
            self.give_up(now, true);
            return true;
        }
        if timed_out {
            self.give_up(now, false);
            return true;
        }
        worked
    }

    /// Step 3.2: answers to this candidacy's timestamp, from `perm_ack`.
    fn collect_answers<N: Nic>(&mut self, nic: &N) -> bool {
        let Role::Candidate(c) = &mut self.role else {
            return false;
        };
        let mut worked = false;
        for r in 0..self.cfg.replicas {
            if c.answers[r].is_none() {
                c.answers[r] = perm_answer(&self.layout, nic, &mut self.buf, r, c.ts);
                worked |= c.answers[r].is_some();
            }
        }
        worked
    }

    /// Step 4.1: reads the log of each replica that granted and is not read yet.
    fn post_reads<N: Nic>(&mut self, nic: &mut N) {
        let Role::Candidate(Candidacy {
            answers,
            reads: Some(reads),
            ..
        }) = &mut self.role
        else {
            return;
        };
        let bytes = self.layout.log_bytes();
        for r in 0..reads.len() {
            if reads[r] != Read::Unasked || !answers[r].is_some_and(|a| a.0) {
                continue;
            }
            let p = self.cfg.server(self.group, r);
            let into = local(SCRATCH, self.layout.scratch(r));
            reads[r] = match nic.post_read(remote(p, LOG, 0), bytes, into, true) {
                Ok(wr) => {
                    self.inflight.insert(wr, (r, 0));
                    Read::InFlight
                }
                Err(_) => Read::Done(false),
            };
        }
    }

    /// A log read completed (`ok`) or failed.
    pub(crate) fn on_log_read(&mut self, rank: usize, ok: bool) {
        if let Role::Candidate(Candidacy {
            reads: Some(reads), ..
        }) = &mut self.role
        {
            reads[rank] = Read::Done(ok);
        }
    }

    /// Ends a failed candidacy or reign: back to following, a new candidacy later if the oracle
    /// still names this replica. With `defer` (someone else took over: a refused write, a
    /// higher timestamp), the oracle first expects the next rank: without it, a deposed leader
    /// never suspects itself and would take the group back at once, a leader change for
    /// nothing.
    pub(crate) fn give_up(&mut self, now: Nanos, defer: bool) {
        self.role = Role::Follower;
        self.leader = None;
        self.retry_at = now.saturating_add(self.cfg.timing.heartbeat);
        self.beat_timer.disarm();
        if defer && self.cfg.replicas > 1 {
            // Seen as changed at the next look: the expected leader gets a full timeout.
            let next = (self.rank + 1) % self.cfg.replicas;
            self.omega.expect(next, now, Some(u64::MAX));
        }
    }

    /// Step 2.7: answer requests for permission; grant a higher timestamp (revoking everyone
    /// else's access to the log), refuse a lower one.
    pub(crate) fn check_permissions<N: Nic>(&mut self, nic: &mut N) -> bool {
        let mut worked = false;
        for r in 0..self.cfg.replicas {
            if r == self.rank {
                continue;
            }
            let ts = nic
                .load_u64(local(CTL, self.layout.perm(r)))
                .expect("own region");
            if ts == 0 || ts == self.perm_seen[r] {
                continue;
            }
            self.perm_seen[r] = ts;
            worked = true;
            let candidate = self.cfg.server(self.group, r);
            let answer = if ts > self.tmp {
                self.tmp = ts;
                let peers: Vec<(usize, ProcessId)> = self.peers().collect();
                for (q, p) in peers {
                    let access = if q == r {
                        Access::ReadWrite
                    } else {
                        Access::None
                    };
                    let _ = nic.set_access(LOG, p, access);
                }
                if !matches!(self.role, Role::Follower) {
                    self.role = Role::Follower;
                    self.beat_timer.disarm();
                }
                self.leader = Some(r);
                self.omega
                    .expect(r, nic.now(), Some(self.heartbeat_of(nic, r)));
                [ACK, self.std, ts]
            } else if ts < self.tmp {
                [NACK, self.tmp, ts]
            } else {
                continue;
            };
            self.answer(nic, candidate, answer);
        }
        worked
    }

    /// Writes `[ack, value, ts]` into `perm_ack` of `candidate`, as a slot-codec entry (see
    /// [`perm_answer`]).
    pub(crate) fn answer<N: Nic>(&mut self, nic: &mut N, candidate: ProcessId, answer: [u64; 3]) {
        let mut payload = [0u8; PERM_ACK_PAYLOAD];
        for (i, w) in answer.iter().enumerate() {
            payload[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        let mut entry = Vec::with_capacity(PERM_ACK_BYTES);
        self.layout
            .perm_ack_codec
            .encode(answer[2] as u32, &payload, &mut entry)
            .expect("an answer fits its slot");
        let at = self.layout.perm_ack(self.rank);
        self.write_word(nic, candidate, at, &entry);
    }

    /// After a reconnect to the leader this replica granted: the grant may have been flushed
    /// with the broken queue pair, and the leader streams nothing to a replica it has no grant
    /// from, so the grant is written again (with the current `STD`, where the stream starts).
    pub(crate) fn answer_again<N: Nic>(&mut self, nic: &mut N, peer: ProcessId) {
        let granted = self.cfg.group_of(peer) == Some(self.group)
            && self.leader == Some(self.cfg.rank_of(peer))
            && matches!(self.role, Role::Follower);
        if granted {
            self.answer(nic, peer, [ACK, self.std, self.tmp]);
        }
    }

    fn heartbeat_of<N: Nic>(&self, nic: &N, rank: usize) -> u64 {
        heartbeat_word(nic, &self.layout, rank)
    }

    /// The oracle and heartbeats; returns whether it did work and when it wants to run again.
    pub(crate) fn failure_detector<N: Nic>(&mut self, nic: &mut N) -> (bool, Option<Nanos>) {
        let now = nic.now();
        let timing = self.cfg.timing;
        let mut worked = false;
        if !matches!(self.role, Role::Follower) {
            if self.beat_timer.deadline().is_none() || self.beat_timer.fire(now) {
                self.beat += 1;
                let peers: Vec<ProcessId> = self.peers().map(|(_, p)| p).collect();
                let at = self.layout.heartbeat(self.rank);
                for p in peers {
                    // On the control queue pair: a heartbeat queued behind a backlog of log
                    // writes would look like a dead leader under load.
                    self.write_word_on(nic, p, at, &self.beat.to_le_bytes(), Qp::Control);
                }
                self.beat_timer.arm_at(now.saturating_add(timing.heartbeat));
                self.on_heartbeat(nic);
                worked = true;
            }
            return (worked, self.beat_timer.deadline());
        }
        if self.omega.expected() != self.rank {
            let beat = self.heartbeat_of(nic, self.omega.expected());
            // Suspecting the expected leader moves on to the next rank.
            let layout = &self.layout;
            worked |= self.omega.observe(beat, now, timing.suspect, |r| {
                heartbeat_word(nic, layout, r)
            });
        }
        if self.omega.expected() == self.rank {
            // Step 2.1: leader(g) = s and s does not lead.
            if now >= self.retry_at {
                self.start_candidacy(nic);
                return (true, Some(now));
            }
            return (worked, Some(self.retry_at));
        }
        (worked, Some(self.omega.deadline(timing.suspect)))
    }
}

/// Replica `rank`'s answer to timestamp `ts` in this replica's `perm_ack`, `(granted, value)`,
/// once all of it has landed (`buf` is scratch).
///
/// The answer spans three words, and a replica writes its slot again (to its candidate's next
/// timestamp, or to the same one after a reconnect) while the previous answer is still there.
/// RDMA makes each aligned 8-byte word atomic but orders none of a write's words before
/// another (the verbs specification leaves placement within a message unspecified), so the
/// timestamp word having landed says nothing about the other two: a refusal's `tmp` could be
/// taken for a grant's `STD`, or a refusal for a grant. The answer is therefore a slot-codec
/// entry ([`transport::slot`]), accepted only when its CRC covers what was read, whatever
/// subset of its words has landed.
pub(crate) fn perm_answer<N: Nic>(
    layout: &Layout,
    nic: &N,
    buf: &mut Vec<u8>,
    rank: usize,
    ts: u64,
) -> Option<(bool, u64)> {
    let at = local(CTL, layout.perm_ack(rank));
    let range = layout
        .perm_ack_codec
        .read(nic, at, ts as u32, buf)
        .expect("own region")
        .ok()?;
    let answer = &buf[range];
    let word = |i: usize| u64::from_le_bytes(answer[8 * i..8 * i + 8].try_into().expect("a word"));
    // The codec's `seq` carries the timestamp's low half only.
    if answer.len() != PERM_ACK_PAYLOAD || word(2) != ts {
        return None;
    }
    match word(0) {
        ACK => Some((true, word(1))),
        NACK => Some((false, word(1))),
        _ => None,
    }
}

/// Replica `rank`'s heartbeat word in this replica's `CTL`.
fn heartbeat_word<N: Nic>(nic: &N, layout: &Layout, rank: usize) -> u64 {
    nic.load_u64(local(CTL, layout.heartbeat(rank)))
        .expect("own region")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use multicast::{GroupId, Tree};
    use std::sync::Arc;
    use transport::recording::RecordingNic;
    use transport::{LocalAddr, Op, Process, RegionSpec};

    /// Every process's regions, for scripted NICs.
    fn specs(cfg: &Arc<Config>) -> Vec<Vec<RegionSpec>> {
        let mut specs: Vec<Vec<RegionSpec>> = (0..cfg.group_count())
            .flat_map(|g| (0..cfg.replicas).map(move |r| (g, r)))
            .map(|(g, r)| {
                let s = TramServer::new(cfg.clone(), GroupId(g as u8), r);
                Process::<RecordingNic>::regions(&s)
            })
            .collect();
        specs.extend((0..cfg.clients).map(|i| {
            let c = crate::TramClient::new(cfg.clone(), i);
            Process::<RecordingNic>::regions(&c)
        }));
        specs
    }

    /// The one write `answer` posts: where it goes in the candidate and what it carries.
    fn answer_write(
        replica: &mut TramServer,
        nic: &mut RecordingNic,
        to: ProcessId,
        answer: [u64; 3],
    ) -> (LocalAddr, Vec<u8>) {
        replica.answer(nic, to, answer);
        let ops = nic.take_ops();
        let [(_, Op::Write { dst, data, .. })] = &ops[..] else {
            panic!("one write expected, got {ops:?}");
        };
        (
            LocalAddr::new(dst.region, dst.offset),
            data.to_bytes().to_vec(),
        )
    }

    /// Regression (issue 44, `harness check --protocol tram --torn always`, words in any order):
    /// replica 1 refused the candidate's first timestamp with its `tmp`, then granted the
    /// second with its `STD`. Whatever subset of the grant's words has landed over the
    /// refusal, the candidate takes either nothing or exactly the grant. Taking the timestamp
    /// word for the whole answer made a refusal's `tmp` the follower's `STD` (the leader then
    /// recycled log slots the follower had not delivered, and the follower halted) or a
    /// refusal of the new timestamp.
    #[test]
    fn a_torn_answer_to_a_candidate_is_never_taken() {
        let cfg = Arc::new(Config::new(Tree::preset("simple").unwrap(), 3, 1));
        let g = GroupId(0);
        let specs = specs(&cfg);
        let (cand, rep) = (cfg.server(g, 0), cfg.server(g, 1));
        let mut cnic = RecordingNic::new(cand, specs.clone(), 1);
        let mut rnic = RecordingNic::new(rep, specs, 1);
        let mut candidate = TramServer::new(cfg.clone(), g, 0);
        let mut replica = TramServer::new(cfg.clone(), g, 1);

        candidate.start_candidacy(&mut cnic);
        let first = candidate.tmp;
        // Replica 1 granted replica 2 at 0x302 meanwhile: it refuses, telling that timestamp.
        let refused_with = 0x302;
        let (at, refusal) =
            answer_write(&mut replica, &mut rnic, cand, [NACK, refused_with, first]);
        cnic.memory_mut().write(at, &refusal).unwrap();
        assert!(candidate.collect_answers(&cnic));
        let Role::Candidate(c) = &candidate.role else {
            panic!("a candidate");
        };
        assert_eq!(c.answers[1], Some((false, refused_with)));

        // The candidate retries above it; replica 1 grants, at STD 7.
        candidate.tmp = refused_with;
        candidate.start_candidacy(&mut cnic);
        let second = candidate.tmp;
        let (at2, grant) = answer_write(&mut replica, &mut rnic, cand, [ACK, 7, second]);
        assert_eq!(at, at2);
        let words = grant.len() / 8;
        for landed in 0u32..1 << words {
            cnic.memory_mut().write(at, &refusal).unwrap();
            for w in (0..words).filter(|w| landed & 1 << w != 0) {
                let word = LocalAddr::new(at.region, at.offset + 8 * w);
                cnic.memory_mut()
                    .write(word, &grant[8 * w..8 * w + 8])
                    .unwrap();
            }
            if let Role::Candidate(c) = &mut candidate.role {
                c.answers[1] = None;
            }
            candidate.collect_answers(&cnic);
            let Role::Candidate(c) = &candidate.role else {
                panic!("a candidate");
            };
            let all = landed == (1 << words) - 1;
            match c.answers[1] {
                None => assert!(!all, "the whole grant was not taken"),
                Some(a) => assert_eq!(
                    a,
                    (true, 7),
                    "words {landed:#b} of the grant landed over the refusal: taken as {a:?}"
                ),
            }
        }
    }
}
