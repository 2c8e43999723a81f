//! Who is who in a multicast deployment: servers first, `groups` groups of `replicas` each in
//! rank order, then the clients, then the protocol's auxiliary processes if it has any (processes
//! that take part in ordering but belong to no group and deliver nothing: Ridge's dedicated
//! acceptors). Every protocol of the workbench numbers its processes this way, so logs, fault
//! schedules and the harness speak about the same ids.

use crate::GroupId;
use transport::ProcessId;

/// A deployment's shape and the process ids it implies. Implementors give the three counts (and
/// a fourth, [`Membership::auxiliary_count`], if they have auxiliary processes); everything else
/// is derived.
pub trait Membership {
    /// Number of groups.
    fn group_count(&self) -> usize;
    /// Replicas per group, 2f+1.
    fn replica_count(&self) -> usize;
    /// Number of clients.
    fn client_count(&self) -> usize;

    /// Number of auxiliary processes: they take part in ordering, belong to no group and
    /// deliver nothing (Ridge's dedicated acceptors); none unless a protocol says so.
    fn auxiliary_count(&self) -> usize {
        0
    }

    /// f: crashes each group tolerates.
    fn f(&self) -> usize {
        self.replica_count() / 2
    }

    /// A quorum: f+1.
    fn quorum(&self) -> usize {
        self.replica_count() / 2 + 1
    }

    /// Number of server processes.
    fn servers(&self) -> usize {
        self.group_count() * self.replica_count()
    }

    /// Number of processes of the run: servers first, then clients, then auxiliaries.
    fn processes(&self) -> usize {
        self.servers() + self.client_count() + self.auxiliary_count()
    }

    /// The process id of replica `rank` of group `g`.
    fn server(&self, g: GroupId, rank: usize) -> ProcessId {
        ProcessId((g.0 as usize * self.replica_count() + rank) as u32)
    }

    /// The process id of client `i`.
    fn client(&self, i: usize) -> ProcessId {
        ProcessId((self.servers() + i) as u32)
    }

    /// The process id of auxiliary process `i`.
    fn auxiliary(&self, i: usize) -> ProcessId {
        ProcessId((self.servers() + self.client_count() + i) as u32)
    }

    /// The group of a server, `None` for a client or an auxiliary process.
    fn group_of(&self, p: ProcessId) -> Option<GroupId> {
        (p.index() < self.servers()).then(|| GroupId((p.index() / self.replica_count()) as u8))
    }

    /// A server's rank in its group.
    fn rank_of(&self, p: ProcessId) -> usize {
        p.index() % self.replica_count()
    }

    /// The client index of a client process.
    fn client_index(&self, p: ProcessId) -> Option<usize> {
        p.index()
            .checked_sub(self.servers())
            .filter(|&i| i < self.client_count())
    }

    /// The members of group `g`, in rank order.
    fn members(&self, g: GroupId) -> impl Iterator<Item = ProcessId> {
        let (base, n) = (g.0 as usize * self.replica_count(), self.replica_count());
        (base..base + n).map(|p| ProcessId(p as u32))
    }

    /// The initial leader of group `g` (rank 0).
    fn initial_leader(&self, g: GroupId) -> ProcessId {
        self.server(g, 0)
    }
}
