//! A member of an RDMC run as the workbench drives it: the protocol's node with an application
//! that checks every message it receives against what its root sent (in place when lent, a
//! chunk at a time), and what it ended with. Runs (`harness run --protocol rdmc`, the figures)
//! and the checking sweep ([`crate::check`]) use the same member, so every measured transfer is
//! also a checked one.

use crate::{Algorithm, Delivered, Event, GroupConfig, Handoff, RdmcNode};
use std::collections::BTreeMap;
use std::sync::Arc;
use transport::{Data, LocalAddr, Nanos, Nic, Process, ProcessId, Progress, RegionSpec, Synthetic};

/// Group `root` over `nodes` nodes: node `root` first, then the others in order after it;
/// with `racks` > 1 (hybrid algorithms) the nodes are split into that many contiguous racks.
pub fn rooted_group(
    nodes: usize,
    root: usize,
    algorithm: Algorithm,
    racks: usize,
    block_size: usize,
    buffer_bytes: usize,
) -> GroupConfig {
    let members: Vec<ProcessId> = (0..nodes)
        .map(|i| ProcessId(((root + i) % nodes) as u32))
        .collect();
    let racks = if algorithm.uses_racks() {
        members
            .iter()
            .map(|p| (p.0 as usize * racks / nodes) as u32)
            .collect()
    } else {
        Vec::new()
    };
    GroupConfig {
        id: root as u32,
        members,
        algorithm,
        racks,
        block_size,
        buffer_bytes,
    }
}

/// One member's view of one message.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct MemberTime {
    /// The member.
    pub process: ProcessId,
    /// The group.
    pub group: u32,
    /// The message's sequence number in the group.
    pub msg: u64,
    /// Of the time since it started on the message, waiting before its sends could go.
    pub waiting: Nanos,
    /// When its first block landed (see [`Event::Completed`]).
    pub first_block: Nanos,
    /// When its last block landed.
    pub last_block: Nanos,
    /// When it completed there.
    pub at: Nanos,
}

/// The content of message `msg` of group `group`.
pub fn payload(seed: u64, group: u32, msg: u64, size: usize) -> Synthetic {
    let id = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(u64::from(group) << 32 | msg);
    Synthetic::new(id, size as u64)
}

/// Whether `data` is `want`, every byte (a synthetic descriptor: the same descriptor).
pub fn intact(data: &Data, want: &Synthetic) -> bool {
    match data {
        Data::Synthetic(s) => s == want,
        Data::Bytes(b) => b.len() as u64 == want.len && want.verify(0, b),
        Data::Inline(i) => i.len() as u64 == want.len && want.verify(0, i),
    }
}

/// Whether the `len` bytes at `at` in `nic`'s memory are `want`, read `chunk` bytes at a time.
pub fn lent_intact<N: Nic>(
    nic: &N,
    at: LocalAddr,
    len: usize,
    want: &Synthetic,
    chunk: usize,
) -> bool {
    want.len == len as u64
        && (0..len).step_by(chunk).all(|from| {
            let n = chunk.min(len - from);
            let piece = LocalAddr::new(at.region, at.offset + from);
            nic.read_data(piece, n)
                .is_ok_and(|d| intact(&d, &want.window(from as u64, n as u64)))
        })
}

/// Whether `data` has `want`'s length and its first and last 4 KiB.
pub fn ends_intact(data: &Data, want: &Synthetic) -> bool {
    let len = data.len();
    let n = len.min(4096);
    len as u64 == want.len
        && [0, len - n]
            .into_iter()
            .all(|at| intact(&data.window(at, n), &want.window(at as u64, n as u64)))
}

/// Bytes of a lent message read and checked at a time where payloads are real bytes: small
/// enough to stay in cache, so checking reads the receive buffer once and writes nothing back
/// to memory (a whole-message copy wrote it and read it again; checking in place took a 4-node
/// tcp run from ~310 to ~290 ms per 256 MiB message).
pub const CHECK_CHUNK: usize = 1 << 20;

/// A node running the RDMC library with an application that checks every upcall: each
/// completed message against the content its root sent, in sequence per group, none after the
/// group failed. It is done when every group it belongs to has completed all its messages or
/// failed. Receivers are lent their messages ([`Handoff::Lend`]), check them in the receive
/// buffer and release it.
#[derive(Debug)]
pub struct Member {
    /// The protocol's node.
    pub node: RdmcNode,
    me: ProcessId,
    /// Bytes of a lent message read per check step ([`CHECK_CHUNK`]; the simulator reads a
    /// message whole, as one synthetic descriptor).
    chunk: usize,
    /// The content of every message of every group, by (group, sequence number).
    expected: Arc<BTreeMap<(u32, u64), Synthetic>>,
    /// Messages completed so far per group.
    completed: BTreeMap<u32, u64>,
    /// Its completions, in order.
    pub done: Vec<MemberTime>,
    /// Completions whose content differed from what the root sent.
    pub corrupt: usize,
    /// Completions out of sequence (a gap, a duplicate, a reordering) or of no sent message.
    pub out_of_order: usize,
    /// Completions after the group's failure upcall.
    pub after_failure: usize,
    /// Failure upcalls: (group, failed member's index in it).
    pub failed: Vec<(u32, usize)>,
}

impl Member {
    /// `node` (member `me`), expecting the messages of `expected` in the groups it belongs to,
    /// checking lent messages `chunk` bytes at a time.
    pub fn new(
        node: RdmcNode,
        me: ProcessId,
        expected: Arc<BTreeMap<(u32, u64), Synthetic>>,
        chunk: usize,
    ) -> Member {
        let completed = node.group_ids().into_iter().map(|g| (g, 0)).collect();
        Member {
            node: node.with_handoff(Handoff::Lend),
            me,
            chunk,
            expected,
            completed,
            done: Vec::new(),
            corrupt: 0,
            out_of_order: 0,
            after_failure: 0,
            failed: Vec::new(),
        }
    }

    /// Messages sent in group `g`.
    fn messages_of(&self, g: u32) -> u64 {
        self.expected.range((g, 0)..=(g, u64::MAX)).count() as u64
    }

    /// Whether group `g` completed all its messages here.
    pub fn complete(&self, g: u32) -> bool {
        self.completed.get(&g).copied().unwrap_or(0) >= self.messages_of(g)
    }

    /// The groups this member belongs to.
    pub fn groups(&self) -> impl Iterator<Item = u32> + '_ {
        self.completed.keys().copied()
    }

    /// Whether message `msg` of `group`, as its upcall handed it over, is what its root sent
    /// (`None`: no such message was sent). A lent message is read where it lies, then released.
    fn check<N: Nic>(&mut self, nic: &N, group: u32, msg: u64, data: Delivered) -> Option<bool> {
        let want = self.expected.get(&(group, msg)).copied();
        match data {
            // A root's upcall hands back the bytes it sent: its ends tell one message from
            // another, and reading all of it would take the cores its receivers still relay on.
            Delivered::Data(d) if self.me.0 == group => want.map(|w| ends_intact(&d, &w)),
            Delivered::Data(d) => want.map(|w| intact(&d, &w)),
            Delivered::Lent { at, len } => {
                let whole = want.map(|w| lent_intact(nic, at, len, &w, self.chunk));
                self.node
                    .release(group, msg)
                    .expect("the message just lent");
                whole
            }
        }
    }

    fn record(
        &mut self,
        group: u32,
        msg: u64,
        intact: Option<bool>,
        at: Nanos,
        waiting: Nanos,
        blocks: (Nanos, Nanos),
    ) {
        if self.failed.iter().any(|f| f.0 == group) {
            self.after_failure += 1;
        }
        let next = self.completed.entry(group).or_insert(0);
        if msg != *next {
            self.out_of_order += 1;
        }
        *next += 1;
        match intact {
            Some(true) => {}
            Some(false) => self.corrupt += 1,
            None => self.out_of_order += 1,
        }
        self.done.push(MemberTime {
            process: self.me,
            group,
            msg,
            waiting,
            first_block: blocks.0,
            last_block: blocks.1,
            at,
        });
    }
}

/// What a member's run adds to the experiment's result (what a tcp node reports).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct MemberOutcome {
    /// Its completions corrupt, out of sequence, or after a failure upcall.
    pub corrupt: usize,
    /// Its failure upcalls.
    pub failures: usize,
    /// The groups whose failure upcall it got.
    pub failed_groups: Vec<u32>,
    /// Its completions.
    pub done: Vec<MemberTime>,
}

impl Member {
    /// This member's share of the result.
    pub fn outcome(&self) -> MemberOutcome {
        MemberOutcome {
            corrupt: self.corrupt + self.out_of_order + self.after_failure,
            failures: self.failed.len(),
            failed_groups: self.failed.iter().map(|&(g, _)| g).collect(),
            done: self.done.clone(),
        }
    }
}

impl<N: Nic> Process<N> for Member {
    fn regions(&self) -> Vec<RegionSpec> {
        <RdmcNode as Process<N>>::regions(&self.node)
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let progress = self.node.poll(nic);
        while let Some(e) = self.node.poll_event() {
            match e {
                Event::Incoming { .. } => {}
                Event::Completed {
                    group,
                    msg,
                    data,
                    at,
                    waiting,
                    first_block,
                    last_block,
                    ..
                } => {
                    let intact = self.check(nic, group, msg, data);
                    self.record(group, msg, intact, at, waiting, (first_block, last_block));
                }
                Event::Failed { group, member } => self.failed.push((group, member)),
            }
        }
        progress
    }

    fn done(&self) -> bool {
        self.groups()
            .all(|g| self.complete(g) || self.failed.iter().any(|f| f.0 == g))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use transport::runtime::sim::{Profile, Sim, SimConfig};

    /// A message checked where it lies, chunk by chunk, is found corrupt by one byte in any
    /// chunk, and found intact only whole and of the right length.
    #[test]
    fn a_lent_message_is_checked_in_every_chunk() {
        struct Probe {
            want: Synthetic,
            verdicts: Vec<bool>,
        }
        impl<N: Nic> Process<N> for Probe {
            fn regions(&self) -> Vec<RegionSpec> {
                vec![RegionSpec::new(4096)]
            }
            fn poll(&mut self, nic: &mut N) -> Progress {
                if !self.verdicts.is_empty() {
                    return Progress::worked(false);
                }
                let at = LocalAddr::new(transport::RegionId(0), 8);
                let len = self.want.len as usize;
                nic.write_local(at, &self.want.to_vec()).unwrap();
                let other = payload(3, 0, 2, len);
                for chunk in [100, 1000, usize::MAX] {
                    self.verdicts
                        .push(lent_intact(nic, at, len, &self.want, chunk));
                    self.verdicts
                        .push(!lent_intact(nic, at, len - 1, &self.want, chunk));
                    self.verdicts
                        .push(!lent_intact(nic, at, len, &other, chunk));
                }
                for flip in [8, 8 + 1500, 8 + len - 1] {
                    let piece = LocalAddr::new(at.region, flip);
                    let mut b = [0u8];
                    nic.read_local(piece, &mut b).unwrap();
                    nic.write_local(piece, &[b[0] ^ 1]).unwrap();
                    self.verdicts
                        .push(!lent_intact(nic, at, len, &self.want, 1000));
                    nic.write_local(piece, &b).unwrap();
                }
                Progress::worked(true)
            }
        }
        let probe = Probe {
            want: payload(3, 0, 1, 2500),
            verdicts: Vec::new(),
        };
        let mut sim = Sim::new(
            SimConfig::new(1, Profile::load("fractus-100g").unwrap()),
            vec![probe],
        );
        sim.run(Some(Nanos(1_000_000)));
        assert_eq!(sim.processes()[0].verdicts, [true; 12]);
    }

    /// A wrong payload is caught: the check is not vacuous.
    #[test]
    fn a_corrupted_message_is_detected() {
        let want = payload(1, 0, 0, 1000);
        assert!(intact(&Data::Synthetic(want), &want));
        assert!(!intact(&Data::Synthetic(payload(1, 0, 1, 1000)), &want));
        let mut bytes = want.to_vec();
        assert!(intact(&Data::Bytes(bytes.clone().into()), &want));
        bytes[999] ^= 1;
        assert!(!intact(&Data::Bytes(bytes.into()), &want));
        assert!(!intact(&Data::Synthetic(payload(1, 0, 0, 999)), &want));
        // A root checks the ends of what it sent: another message, a changed last byte or
        // another length are told apart.
        let bytes = Data::Bytes(want.to_vec().into());
        assert!(ends_intact(&bytes, &want));
        assert!(!ends_intact(
            &Data::Bytes(payload(1, 0, 1, 1000).to_vec().into()),
            &want
        ));
        let mut last = want.to_vec();
        last[999] ^= 1;
        assert!(!ends_intact(&Data::Bytes(last.into()), &want));
        assert!(!ends_intact(&Data::Synthetic(payload(1, 0, 0, 999)), &want));
    }
}
