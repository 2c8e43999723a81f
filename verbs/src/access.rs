//! The model's per-region, per-peer access on a real NIC: memory-region rights intersected
//! with queue-pair access flags, and which of the two a change must touch.
//!
//! The model lets a process change what one peer may do to one of its regions
//! ([`transport::Op::SetAccess`]), effective before the call returns. A NIC checks two things
//! for every incoming request: the rights of the memory region its rkey names, and the access
//! flags of the queue pair it arrived on. This runtime registers every region once per peer
//! (that peer alone learns the rkey), so a region's rights can differ per peer, and holds one
//! queue pair per peer and kind ([`transport::Qp`]), whose flags cover every region of that
//! peer. What a peer may do to a region is the intersection of the two.
//!
//! A change takes one of two paths, as in Mu (Aguilera et al., OSDI 2020):
//! - **fast**: only the peer's queue-pair flags change (`ibv_modify_qp` with
//!   `IBV_QP_ACCESS_FLAGS`, a few microseconds, nothing torn down). Possible when one set of
//!   flags, cut with the registered rights, gives every region of that peer what it should have:
//!   revoking all of a peer's rights, or granting back what a revocation took;
//! - **slow**: the regions whose registered rights cannot give the wanted access through any
//!   flags are registered again with exactly that access (new rkeys; the old registration is
//!   gone before the call returns), and the peer is sent the new rkeys
//!   ([`crate::bootstrap::Message::Rekey`]). Only the peer's ops to those regions are
//!   affected: one still in flight with the old rkey is refused, which breaks its queue pair
//!   until it reconnects, as a refused op does in the model.
//!
//! [`AccessBook`] keeps the three tables (wanted, registered, flags) and plans each change;
//! the invariant, tested over random change sequences, is that after a plan is applied every
//! (region, peer) gets exactly the wanted access.

use transport::{Access, ProcessId, RegionId, RegionSpec};

/// Remote rights, as the `IBV_ACCESS_REMOTE_*` bits of a memory region or queue pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rights(u8);

impl Rights {
    /// No remote access.
    pub const NONE: Rights = Rights(0);
    /// `IBV_ACCESS_REMOTE_READ`.
    pub const READ: Rights = Rights(1);
    /// `IBV_ACCESS_REMOTE_WRITE`.
    pub const WRITE: Rights = Rights(2);
    /// `IBV_ACCESS_REMOTE_ATOMIC`.
    pub const ATOMIC: Rights = Rights(4);

    /// The rights a region with model access `a` needs: atomics only with read-write, as the
    /// model's [`Access::can_atomic`] says.
    pub const fn of(a: Access) -> Rights {
        Rights(
            ((a.can_read() as u8) * Rights::READ.0)
                | ((a.can_write() as u8) * Rights::WRITE.0)
                | ((a.can_atomic() as u8) * Rights::ATOMIC.0),
        )
    }

    /// Both sets of rights.
    pub const fn union(self, other: Rights) -> Rights {
        Rights(self.0 | other.0)
    }

    /// The rights in both.
    pub const fn intersect(self, other: Rights) -> Rights {
        Rights(self.0 & other.0)
    }

    /// Whether remote reads are allowed.
    pub const fn read(self) -> bool {
        self.0 & Rights::READ.0 != 0
    }

    /// Whether remote writes are allowed.
    pub const fn write(self) -> bool {
        self.0 & Rights::WRITE.0 != 0
    }

    /// Whether remote atomics are allowed.
    pub const fn atomic(self) -> bool {
        self.0 & Rights::ATOMIC.0 != 0
    }
}

/// What applying one access change takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// The peer already has exactly that access.
    Unchanged,
    /// Fast path: set the peer's queue-pair flags to `flags`.
    QpFlags {
        /// The peer.
        peer: ProcessId,
        /// The new flags of every queue pair to it.
        flags: Rights,
    },
    /// Slow path: register these regions again for the peer with these rights, set the
    /// flags, and re-establish the queue pairs to the peer so it learns the new rkeys.
    Reregister {
        /// The peer.
        peer: ProcessId,
        /// Regions to register again, with their new rights.
        regions: Vec<(RegionId, Rights)>,
        /// The new flags of every queue pair to it.
        flags: Rights,
    },
}

/// The access tables of one process (see the module docs).
#[derive(Clone, Debug)]
pub struct AccessBook {
    peers: usize,
    /// `[region * peers + peer]`: what the model says the peer may do.
    wanted: Vec<Rights>,
    /// `[region * peers + peer]`: the rights the peer's registration of the region carries.
    registered: Vec<Rights>,
    /// `[peer]`: the flags of the queue pairs to the peer.
    flags: Vec<Rights>,
}

impl AccessBook {
    /// The tables at start: every region registered per peer with its declared access, and
    /// each peer's flags the union of what its regions need.
    pub fn new(regions: &[RegionSpec], peers: usize) -> AccessBook {
        let mut wanted = Vec::with_capacity(regions.len() * peers);
        for spec in regions {
            wanted.extend(spec.access_table(peers).into_iter().map(Rights::of));
        }
        let mut book = AccessBook {
            peers,
            registered: wanted.clone(),
            wanted,
            flags: vec![Rights::NONE; peers],
        };
        for p in 0..peers {
            book.flags[p] = book.union_for(p);
        }
        book
    }

    fn regions(&self) -> usize {
        self.wanted.len() / self.peers.max(1)
    }

    fn union_for(&self, peer: usize) -> Rights {
        (0..self.regions()).fold(Rights::NONE, |acc, r| {
            acc.union(self.wanted[r * self.peers + peer])
        })
    }

    /// The rights `peer`'s registration of `region` carries (what to register it with).
    pub fn registered(&self, region: RegionId, peer: ProcessId) -> Rights {
        self.registered[region.index() * self.peers + peer.index()]
    }

    /// The flags of the queue pairs to `peer`.
    pub fn flags(&self, peer: ProcessId) -> Rights {
        self.flags[peer.index()]
    }

    /// What `peer` can do to `region` now: registered rights cut by the queue-pair flags.
    pub fn effective(&self, region: RegionId, peer: ProcessId) -> Rights {
        self.registered(region, peer).intersect(self.flags(peer))
    }

    /// How to give `peer` access `access` to `region` (nothing changes until [`Self::apply`]).
    pub fn plan(&self, region: RegionId, peer: ProcessId, access: Access) -> Plan {
        let (r, p, n) = (region.index(), peer.index(), self.peers);
        let want = |q: usize| {
            if q == r {
                Rights::of(access)
            } else {
                self.wanted[q * n + p]
            }
        };
        let flags = (0..self.regions()).fold(Rights::NONE, |acc, q| acc.union(want(q)));
        let stale: Vec<(RegionId, Rights)> = (0..self.regions())
            .filter(|&q| self.registered[q * n + p].intersect(flags) != want(q))
            .map(|q| (RegionId(q as u16), want(q)))
            .collect();
        if !stale.is_empty() {
            Plan::Reregister {
                peer,
                regions: stale,
                flags,
            }
        } else if flags != self.flags[p] {
            Plan::QpFlags { peer, flags }
        } else {
            // Every region already gives exactly what is wanted: only the record changes.
            Plan::Unchanged
        }
    }

    /// Records a change as done: `plan` must be what [`Self::plan`] returned for it.
    pub fn apply(&mut self, region: RegionId, peer: ProcessId, access: Access, plan: &Plan) {
        let n = self.peers;
        self.wanted[region.index() * n + peer.index()] = Rights::of(access);
        match plan {
            Plan::Unchanged => {}
            Plan::QpFlags { peer, flags } => self.flags[peer.index()] = *flags,
            Plan::Reregister {
                peer,
                regions,
                flags,
            } => {
                for &(q, rights) in regions {
                    self.registered[q.index() * n + peer.index()] = rights;
                }
                self.flags[peer.index()] = *flags;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: ProcessId = ProcessId(1);
    const Q: ProcessId = ProcessId(2);
    const M: RegionId = RegionId(0);
    const T: RegionId = RegionId(1);

    /// Two regions as RamCast's server has them: `M` writable by all, `T` by the leader `P`.
    fn ramcast_like() -> AccessBook {
        AccessBook::new(
            &[
                RegionSpec::new(64).with_default(Access::Write),
                RegionSpec::new(64).grant(P, Access::Write),
            ],
            3,
        )
    }

    fn change(book: &mut AccessBook, r: RegionId, p: ProcessId, a: Access) -> Plan {
        let plan = book.plan(r, p, a);
        book.apply(r, p, a, &plan);
        plan
    }

    #[test]
    fn rights_follow_the_model() {
        assert_eq!(Rights::of(Access::None), Rights::NONE);
        assert_eq!(Rights::of(Access::Read), Rights::READ);
        assert_eq!(Rights::of(Access::Write), Rights::WRITE);
        let rw = Rights::of(Access::ReadWrite);
        assert!(rw.read() && rw.write() && rw.atomic());
        assert!(!Rights::of(Access::Write).atomic());
    }

    #[test]
    fn initial_flags_are_the_union_of_a_peers_regions() {
        let b = ramcast_like();
        assert_eq!(b.flags(P), Rights::WRITE);
        assert_eq!(b.effective(T, P), Rights::WRITE);
        assert_eq!(b.effective(T, Q), Rights::NONE);
        assert_eq!(b.effective(M, Q), Rights::WRITE);
    }

    #[test]
    fn revoking_everything_of_a_peer_and_granting_it_back_is_fast() {
        let mut b = AccessBook::new(&[RegionSpec::new(8).grant(P, Access::ReadWrite)], 3);
        let revoke = change(&mut b, M, P, Access::None);
        assert_eq!(
            revoke,
            Plan::QpFlags {
                peer: P,
                flags: Rights::NONE
            }
        );
        assert_eq!(b.effective(M, P), Rights::NONE);
        // The registration still carries the rights: granting back is flags again.
        assert_eq!(b.registered(M, P), Rights::of(Access::ReadWrite));
        let grant = change(&mut b, M, P, Access::ReadWrite);
        assert!(matches!(grant, Plan::QpFlags { .. }), "{grant:?}");
        assert_eq!(b.effective(M, P), Rights::of(Access::ReadWrite));
        assert_eq!(change(&mut b, M, P, Access::ReadWrite), Plan::Unchanged);
    }

    #[test]
    fn a_leader_change_on_one_region_of_several_is_slow() {
        // RamCast's followers revoke T from the old leader while M stays writable: no flags
        // can cut T without cutting M, so T is registered again.
        let mut b = ramcast_like();
        let revoke = change(&mut b, T, P, Access::None);
        assert_eq!(
            revoke,
            Plan::Reregister {
                peer: P,
                regions: vec![(T, Rights::NONE)],
                flags: Rights::WRITE
            }
        );
        assert_eq!(b.effective(T, P), Rights::NONE);
        assert_eq!(b.effective(M, P), Rights::WRITE);
        let grant = change(&mut b, T, Q, Access::Write);
        assert!(
            matches!(grant, Plan::Reregister { peer: Q, .. }),
            "{grant:?}"
        );
        assert_eq!(b.effective(T, Q), Rights::WRITE);
    }

    #[test]
    fn widening_flags_re_registers_a_region_the_flags_were_cutting() {
        // Fast revoke of read-only T, then a write grant on M widens the flags to WRITE: T's
        // registration must not come back through them.
        let mut b = AccessBook::new(
            &[
                RegionSpec::new(8),
                RegionSpec::new(8).grant(P, Access::ReadWrite),
            ],
            2,
        );
        assert!(matches!(
            change(&mut b, T, P, Access::None),
            Plan::QpFlags { .. }
        ));
        let plan = change(&mut b, M, P, Access::Write);
        match &plan {
            Plan::Reregister { regions, .. } => {
                assert!(regions.contains(&(T, Rights::NONE)), "{plan:?}")
            }
            other => panic!("expected a re-registration, got {other:?}"),
        }
        assert_eq!(b.effective(T, P), Rights::NONE);
        assert_eq!(b.effective(M, P), Rights::WRITE);
    }

    fn access() -> impl Strategy<Value = Access> {
        prop_oneof![
            Just(Access::None),
            Just(Access::Read),
            Just(Access::Write),
            Just(Access::ReadWrite)
        ]
    }

    proptest! {
        /// After every applied plan each (region, peer) has exactly what the model says.
        #[test]
        fn every_plan_gives_exactly_the_wanted_access(
            initial in proptest::collection::vec(access(), 3),
            changes in proptest::collection::vec((0u16..3, 0u32..3, access()), 0..40),
        ) {
            let specs: Vec<RegionSpec> =
                initial.iter().map(|&a| RegionSpec::new(8).with_default(a)).collect();
            let mut b = AccessBook::new(&specs, 3);
            let mut model: Vec<Access> =
                (0..9).map(|i| initial[i / 3]).collect();
            for (r, p, a) in changes {
                let (r, p) = (RegionId(r), ProcessId(p));
                let plan = b.plan(r, p, a);
                b.apply(r, p, a, &plan);
                model[r.index() * 3 + p.index()] = a;
                for q in 0..3u16 {
                    for s in 0..3u32 {
                        prop_assert_eq!(
                            b.effective(RegionId(q), ProcessId(s)),
                            Rights::of(model[q as usize * 3 + s as usize]),
                            "after {:?}", plan
                        );
                    }
                }
            }
        }
    }
}
