//! A Ridge deployment: groups of servers, the ensembles over them, clients, and the tunables.
//!
//! Where the acceptors run is [`Config::placement`]:
//!
//! - [`Placement::Dedicated`], the paper's evaluation (section 6.1: "each Paxos group had 3
//!   acceptors ... the servers were pure learners"): every ensemble has [`Config::acceptors`]
//!   (`2f + 1`) processes of its own, the first its initial coordinator. They are the
//!   membership's auxiliary processes ([`multicast::Membership::auxiliary_count`]), numbered
//!   after the clients, ensemble by ensemble. Servers learn only. A choice where the paper is
//!   silent: the acceptors learn their ensemble's decisions too (after the servers, in
//!   [`crate::paxos::Ensemble::learners`]), because learners fill their gaps by asking the
//!   acceptors (section 4.4.3) and an acceptor outside the quorum would otherwise not know
//!   the value; the load balancer picks one as a distributor only when every server outside
//!   the quorum is suspected ([`crate::paxos::Acceptor::sparing`]), so distributors are the
//!   servers, as in the paper.
//! - [`Placement::Colocated`] (the default, and what every run before dedicated acceptors
//!   did): group `g`'s ensemble `e_g` has the group's first [`Config::acceptors`] servers as
//!   acceptors, coordinated by its rank 0, and all the group's servers as learners; `e_all`
//!   has as many acceptors, the servers `(g, r)` taken round robin over the groups (`i`-th
//!   acceptor: group `i % groups`, rank `i / groups`; [`AllAcceptors::Spread`]) or group 0's
//!   first ones ([`AllAcceptors::FirstGroup`]), coordinated by the first, and every server as
//!   learner. A group then needs at least `2f + 1` servers where the paper's had one, and the
//!   servers of the quorum chain receive each value from the chain rather than from a
//!   distributor; every process still receives each value once, so section 5's throughput
//!   argument is unchanged (section 4.3 provides for learners that are acceptors).
//!
//! Every process of the run is a member of one message mesh ([`transport::mesh`]).
//!
//! Spread acceptors share `e_all`'s load among the groups, but `e_all` then tolerates f faulty
//! acceptors in all, not f per group: f + 1 groups each losing one member (each within its own
//! f) can leave it without a majority, and no Paxos decides without one. `harness check`, whose
//! faults respect f per group, therefore runs `FirstGroup`.

use crate::clock::Skew;
use crate::mapping::{EnsembleId, Mapping};
use crate::paxos::{Dissemination, Ensemble};
use multicast::{GroupId, Membership, MAX_GROUPS};
use transport::mesh::MeshLayout;
use transport::ring::RingConfig;
use transport::{Nanos, ProcessId};

/// Bytes a message needs besides its payload (ids, timestamps, rounds, the quorum), with room.
pub const OVERHEAD_BYTES: usize = 512;

/// What the decisions a learner keeps for others (and the votes an acceptor keeps) may take
/// per ensemble, counted in full slots: [`Config::retain_within_budget`].
pub const RETAIN_BYTES: usize = 64 << 20;

/// A Ridge deployment.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Multicast groups `n` (ensembles `e_0 .. e_(n-1)` and `e_all`).
    pub groups: usize,
    /// Servers per group: the learners of the group's ensemble.
    pub replicas: usize,
    /// Acceptors per ensemble, `2f + 1`: processes of their own, or a group's first
    /// `acceptors` servers, the others learners only ([`Config::placement`]); `e_all` has as
    /// many. The paper's evaluation runs 3 (section 6.1).
    pub acceptors: usize,
    /// Where the acceptors run (see the module docs).
    pub placement: Placement,
    /// Closed-loop clients.
    pub clients: usize,
    /// Delta: an idle coordinator proposes a null message this long after its last proposal
    /// (Algorithm 3, lines 8-19; the paper's experiments use 1 ms).
    pub delta: Nanos,
    /// Slots of every ring of the mesh.
    pub ring_slots: u32,
    /// Bytes per ring slot: the largest message plus [`OVERHEAD_BYTES`] must fit.
    pub slot_bytes: usize,
    /// How far the processes' clocks may disagree.
    pub skew: Skew,
    /// Failure-detector and retry timing (section 4.4). [`Config::new`] sets [`Timing::SIM`],
    /// which suits short messages; with slots of tens of kilobytes on a 1 Gb/s link a
    /// distributor's burst outlasts its suspicion timeout and coordinators depose each other
    /// without end (64 KB on `lan-1g`: 3 values decided in 200 ms). Size it with
    /// [`Timing::for_link`], as the harness does.
    pub timing: Timing,
    /// Decisions a learner keeps per ensemble to fill other learners' gaps (section 4.4.3);
    /// an acceptor forgets its votes this far behind what it learned. A learner that falls
    /// further behind than every peer keeps cannot catch up and halts.
    pub retain: usize,
    /// Packets per peer that wait in the mesh's outbox for room in its ring. A client whose
    /// outbox towards the coordinator is full is refused (backpressure); a server queues more
    /// in an overflow it drops only once the peer is suspected (see [`crate::server`]). Every
    /// message has a recovery path, so a drop costs time, never safety.
    pub outbox: usize,
    /// Where `e_all`'s acceptors are.
    pub all_acceptors: AllAcceptors,
    /// How Phase 2 disseminates (Ridge's, or one of the evaluation's baselines).
    pub dissemination: Dissemination,
    /// Section 4.5's optimistic deliveries, with the wait: a multicaster also sends its message
    /// to the ensemble's learners, which deliver it optimistically once their clock reads its
    /// timestamp plus the wait; coordinators wait as long before proposing. `None`: off.
    pub optimistic: Option<Nanos>,
    /// With optimistic deliveries, keep each server's in order for the run's delivery log
    /// ([`crate::RidgeServer::optimistic_log`]; it grows with the run).
    pub log_optimistic: bool,
    /// Record when each instance was proposed and learned ([`crate::RidgeServer::trace`]),
    /// for counting rounds in section 5's model; the record grows with the run.
    pub trace: bool,
}

/// Where the ensembles' acceptors run (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// On the groups' servers.
    #[default]
    Colocated,
    /// On processes of their own, the servers learning only (the paper's evaluation).
    Dedicated,
}

impl Placement {
    /// Every placement, by name.
    pub const ALL: [(&'static str, Placement); 2] = [
        ("colocated", Placement::Colocated),
        ("dedicated", Placement::Dedicated),
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        crate::named::name_of(&Self::ALL, self)
    }
}

impl std::str::FromStr for Placement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        crate::named::by_name(&Self::ALL, s).ok_or_else(|| {
                format!("unknown acceptor placement `{s}`: colocated (on the servers) or dedicated (processes of their own)")
            })
    }
}

/// Where `e_all`'s acceptors are, when colocated (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllAcceptors {
    /// Round robin over the groups: the `i`-th is rank `i / groups` of group `i % groups`.
    Spread,
    /// Group 0's servers.
    FirstGroup,
}

impl AllAcceptors {
    /// Every choice, by name.
    pub const ALL: [(&'static str, AllAcceptors); 2] = [
        ("spread", AllAcceptors::Spread),
        ("first-group", AllAcceptors::FirstGroup),
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        crate::named::name_of(&Self::ALL, self)
    }
}

impl std::str::FromStr for AllAcceptors {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        crate::named::by_name(&Self::ALL, s).ok_or_else(|| {
            format!("unknown place for e_all's acceptors `{s}`: spread or first-group")
        })
    }
}

/// Failure-detector and retry timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// A process that sent a peer nothing for this long sends it a heartbeat.
    pub heartbeat: Nanos,
    /// A peer heard nothing from for this long is suspected (coordinator replacement, another
    /// quorum, another distributor, gap filling).
    pub suspect: Nanos,
    /// A client that got no answer this long after sending asks every acceptor of the
    /// ensemble, which pass the request on to the coordinator they trust.
    pub retry: Nanos,
}

impl Timing {
    /// Defaults for the simulator: well above the message delays of its profiles (66 us one
    /// way on `lan-1g`) and the queueing of a saturated ensemble.
    pub const SIM: Timing = Timing {
        heartbeat: Nanos(100_000),
        suspect: Nanos(1_000_000),
        retry: Nanos(4_000_000),
    };

    /// [`Timing::SIM`] stretched for a deployment whose largest ensemble has `servers`
    /// learners (every server, colocated; the servers and the acceptors, dedicated) on a link
    /// where one
    /// full slot takes `slot_wire` on the wire and posting a message costs `post`. A process
    /// sends heartbeats to each idle peer once a period; the period keeps their posting under
    /// a twentieth of its time (with 32 servers on `lan-1g`, 100 us heartbeats would take more
    /// than half of a coordinator's). A distributor puts each value on the wire once per other
    /// learner, back to back, and a peer hears nothing else from it meanwhile (a NIC's egress
    /// is one queue): a suspicion timeout shorter than a few such bursts suspects every busy
    /// distributor, and each replaced coordinator's successor in turn. So the timeout outlasts
    /// ten heartbeat periods and four bursts of `servers` full slots; client retries keep
    /// their ratio to it. Small deployments with short messages keep [`Timing::SIM`].
    pub fn for_link(slot_wire: Nanos, post: Nanos, servers: usize) -> Timing {
        let sim = Timing::SIM;
        let n = servers as u64;
        let heartbeat = sim
            .heartbeat
            .as_nanos()
            .max(post.as_nanos().saturating_mul(n).saturating_mul(20));
        let suspect = sim
            .suspect
            .as_nanos()
            .max(heartbeat.saturating_mul(10))
            .max(slot_wire.as_nanos().saturating_mul(n).saturating_mul(4));
        Timing {
            heartbeat: Nanos(heartbeat),
            suspect: Nanos(suspect),
            retry: Nanos(sim.retry.as_nanos().max(suspect.saturating_mul(4))),
        }
    }

    /// Defaults for real threads sharing few cores: a descheduled thread must not look dead.
    pub const WALL: Timing = Timing {
        heartbeat: Nanos(5_000_000),
        suspect: Nanos(200_000_000),
        retry: Nanos(1_000_000_000),
    };
}

/// A configuration that cannot run, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No group, or more than a destination set can name.
    #[error("groups must be 1..={MAX_GROUPS} (got {0})")]
    Groups(usize),
    /// A group needs a server.
    #[error("replicas must be at least 1 (got 0)")]
    Replicas,
    /// Acceptors must be an odd number (2f + 1), at least 1, and, colocated, servers of the
    /// group.
    #[error("acceptors must be odd (2f + 1), at least 1 and, colocated, at most the {replicas} replicas of a group (got {acceptors}; --placement dedicated runs them apart)")]
    Acceptors {
        /// Acceptors per ensemble.
        acceptors: usize,
        /// Servers per group.
        replicas: usize,
    },
    /// Delta must be positive.
    #[error("delta must be positive")]
    Delta,
    /// The failure-detector timing cannot work.
    #[error("timing: need 0 < heartbeat < suspect and a positive retry (got heartbeat {heartbeat}, suspect {suspect}, retry {retry})")]
    Timing {
        /// The heartbeat period.
        heartbeat: Nanos,
        /// The suspicion timeout.
        suspect: Nanos,
        /// The client's retry timeout.
        retry: Nanos,
    },
    /// Learners must keep at least one decision for others.
    #[error("retain must be at least 1 (decisions kept to fill other learners' gaps)")]
    Retain,
    /// The ring shape is invalid or a slot holds no message.
    #[error("ring of {slots} slots of {slot_bytes} bytes: need at least 2 slots and more than {OVERHEAD_BYTES} bytes per slot")]
    Ring {
        /// Slots.
        slots: u32,
        /// Bytes per slot.
        slot_bytes: usize,
    },
}

impl Config {
    /// `groups` groups of `replicas` servers and `clients` clients, with the paper's Delta
    /// (1 ms), 16-slot rings of 4 KiB, synchronised clocks; every server an acceptor of its
    /// group's ensemble when `replicas` is odd, all but the last when it is even.
    pub fn new(groups: usize, replicas: usize, clients: usize) -> Config {
        Config {
            groups,
            replicas,
            acceptors: replicas.saturating_sub(1) | 1,
            placement: Placement::Colocated,
            clients,
            delta: Nanos(1_000_000),
            ring_slots: 16,
            slot_bytes: 4096,
            skew: Skew::NONE,
            timing: Timing::SIM,
            retain: 4096,
            outbox: 1024,
            all_acceptors: AllAcceptors::Spread,
            dissemination: Dissemination::Ridge,
            trace: false,
            optimistic: None,
            log_optimistic: false,
        }
    }

    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.groups == 0 || self.groups > MAX_GROUPS {
            return Err(ConfigError::Groups(self.groups));
        }
        if self.replicas == 0 {
            return Err(ConfigError::Replicas);
        }
        let colocated = self.placement == Placement::Colocated;
        if self.acceptors % 2 == 0 || (colocated && self.acceptors > self.replicas) {
            return Err(ConfigError::Acceptors {
                acceptors: self.acceptors,
                replicas: self.replicas,
            });
        }
        if self.delta == Nanos::ZERO {
            return Err(ConfigError::Delta);
        }
        let t = self.timing;
        if t.heartbeat == Nanos::ZERO || t.heartbeat >= t.suspect || t.retry == Nanos::ZERO {
            return Err(ConfigError::Timing {
                heartbeat: t.heartbeat,
                suspect: t.suspect,
                retry: t.retry,
            });
        }
        if self.retain == 0 {
            return Err(ConfigError::Retain);
        }
        let ring = RingConfig::new(self.ring_slots, self.slot_bytes);
        if self.ring_slots < 2 || ring.is_err() || self.max_payload() == 0 {
            return Err(ConfigError::Ring {
                slots: self.ring_slots,
                slot_bytes: self.slot_bytes,
            });
        }
        Ok(())
    }

    /// [`Config::retain`] cut so that as many full slots fit in [`RETAIN_BYTES`] (at least
    /// 64): counted in decisions alone, 4096 decisions of 64 KB messages held 268 MB per
    /// learner and ensemble, and Fig. 2's 32 learners 18 GB. Short messages keep the count.
    pub fn retain_within_budget(mut self) -> Config {
        self.retain = self
            .retain
            .min((RETAIN_BYTES / self.slot_bytes.max(1)).max(64));
        self
    }

    /// The largest payload a client may multicast.
    pub fn max_payload(&self) -> usize {
        RingConfig::new(self.ring_slots.max(1), self.slot_bytes)
            .ok()
            .and_then(|r| r.validate().ok())
            .map_or(0, |codec| codec.capacity().saturating_sub(OVERHEAD_BYTES))
    }

    /// The groups-to-ensembles mapping.
    pub fn mapping(&self) -> Mapping {
        Mapping::new(self.groups)
    }

    /// Ensemble `e`'s acceptors and learners.
    pub fn ensemble(&self, e: EnsembleId) -> Ensemble {
        let e = e.0 as usize;
        if self.placement == Placement::Dedicated {
            let acceptors: Vec<ProcessId> = (0..self.acceptors)
                .map(|i| self.auxiliary(e * self.acceptors + i))
                .collect();
            let servers: Vec<ProcessId> = if e < self.groups {
                self.members(GroupId(e as u8)).collect()
            } else {
                (0..self.servers()).map(|p| ProcessId(p as u32)).collect()
            };
            return Ensemble {
                learners: servers
                    .into_iter()
                    .chain(acceptors.iter().copied())
                    .collect(),
                acceptors,
            };
        }
        if e < self.groups {
            let members: Vec<ProcessId> = self.members(GroupId(e as u8)).collect();
            return Ensemble {
                acceptors: members[..self.acceptors].to_vec(),
                learners: members,
            };
        }
        let acceptors = match self.all_acceptors {
            AllAcceptors::Spread => (0..self.acceptors)
                .map(|i| {
                    self.server(
                        GroupId((i % self.groups) as u8),
                        (i / self.groups) % self.acceptors,
                    )
                })
                .collect(),
            AllAcceptors::FirstGroup => self.members(GroupId(0)).take(self.acceptors).collect(),
        };
        Ensemble {
            acceptors,
            learners: (0..self.servers()).map(|p| ProcessId(p as u32)).collect(),
        }
    }

    /// The ensemble and rank of a dedicated acceptor (auxiliary process `i`).
    pub fn dedicated(&self, i: usize) -> (EnsembleId, usize) {
        (EnsembleId((i / self.acceptors) as u16), i % self.acceptors)
    }

    /// Ensemble `e`'s coordinator: its first acceptor.
    pub fn coordinator(&self, e: EnsembleId) -> ProcessId {
        self.ensemble(e).acceptors[0]
    }

    /// The quorum chain of ensemble `e`: its first `f + 1` acceptors.
    pub fn quorum(&self, e: EnsembleId) -> Vec<ProcessId> {
        let ens = self.ensemble(e);
        ens.acceptors[..ens.quorum_size()].to_vec()
    }

    /// The message mesh every process of the run belongs to (its regions are each process's
    /// regions 0 and 1).
    pub fn mesh(&self) -> MeshLayout {
        let ring = RingConfig::new(self.ring_slots, self.slot_bytes).expect("validated");
        MeshLayout::whole_run(self.processes(), ring, self.outbox)
    }
}

impl Membership for Config {
    fn group_count(&self) -> usize {
        self.groups
    }

    fn replica_count(&self) -> usize {
        self.replicas
    }

    fn client_count(&self) -> usize {
        self.clients
    }

    /// Dedicated acceptors, [`Config::acceptors`] per ensemble.
    fn auxiliary_count(&self) -> usize {
        match self.placement {
            Placement::Colocated => 0,
            Placement::Dedicated => self.mapping().ensembles() * self.acceptors,
        }
    }

    /// A group tolerates as many crashes as its ensemble: `f` of its `2f + 1` acceptors
    /// (learners beyond them are not counted on, so a fault drawer stays within the
    /// acceptors' bound; with dedicated acceptors, as many of its learners).
    fn f(&self) -> usize {
        self.acceptors / 2
    }

    fn quorum(&self) -> usize {
        self.acceptors / 2 + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ensembles_cover_the_groups_and_e_all_spreads_its_acceptors() {
        let cfg = Config::new(3, 3, 2);
        cfg.validate().unwrap();
        let e1 = cfg.ensemble(EnsembleId(1));
        assert_eq!(e1.acceptors, vec![ProcessId(3), ProcessId(4), ProcessId(5)]);
        assert_eq!(e1.learners, e1.acceptors);
        let all = cfg.ensemble(cfg.mapping().all());
        assert_eq!(
            all.acceptors,
            vec![ProcessId(0), ProcessId(3), ProcessId(6)]
        );
        assert_eq!(all.learners.len(), 9);
        assert_eq!(cfg.quorum(EnsembleId(2)), vec![ProcessId(6), ProcessId(7)]);
        assert_eq!(cfg.mesh().members.len(), 11);
    }

    #[test]
    fn extra_servers_are_learners_only() {
        let cfg = Config::new(2, 4, 1);
        cfg.validate().unwrap();
        assert_eq!(
            (cfg.acceptors, cfg.f(), Membership::quorum(&cfg)),
            (3, 1, 2)
        );
        let e1 = cfg.ensemble(EnsembleId(1));
        assert_eq!(e1.acceptors, vec![ProcessId(4), ProcessId(5), ProcessId(6)]);
        assert_eq!(e1.learners.len(), 4);
        let all = cfg.ensemble(cfg.mapping().all());
        assert_eq!(
            all.acceptors,
            vec![ProcessId(0), ProcessId(4), ProcessId(1)]
        );
        assert_eq!(all.learners.len(), 8);
    }

    #[test]
    fn dedicated_acceptors_are_processes_of_their_own_after_the_clients() {
        let mut cfg = Config::new(2, 1, 3);
        cfg.placement = Placement::Dedicated;
        cfg.acceptors = 3;
        cfg.validate().unwrap();
        // 2 servers, 3 clients (p2..p4), then 3 ensembles of 3 acceptors: p5.. p13.
        assert_eq!((cfg.auxiliary_count(), cfg.processes()), (9, 14));
        let e1 = cfg.ensemble(EnsembleId(1));
        assert_eq!(
            e1.acceptors,
            vec![ProcessId(8), ProcessId(9), ProcessId(10)]
        );
        // The server first, then the acceptors, which learn to answer gap fills.
        assert_eq!(e1.learners[0], ProcessId(1));
        assert_eq!(&e1.learners[1..], &e1.acceptors[..]);
        let all = cfg.ensemble(cfg.mapping().all());
        assert_eq!(all.acceptors[0], ProcessId(11));
        assert_eq!(all.learners.len(), 2 + 3);
        assert_eq!(cfg.coordinator(EnsembleId(0)), ProcessId(5));
        assert_eq!(cfg.dedicated(4), (EnsembleId(1), 1));
        assert_eq!(cfg.group_of(ProcessId(8)), None);
        assert_eq!(cfg.client_index(ProcessId(8)), None);
        assert_eq!(cfg.mesh().members.len(), 14);
        // One group: no e_all, one ensemble's acceptors.
        let mut one = Config::new(1, 1, 1);
        one.placement = Placement::Dedicated;
        one.acceptors = 3;
        assert_eq!(one.auxiliary_count(), 3);
        assert_eq!("dedicated".parse(), Ok(Placement::Dedicated));
        assert!("apart"
            .parse::<Placement>()
            .unwrap_err()
            .contains("colocated"));
    }

    #[test]
    fn timeouts_outlast_a_distributors_burst_and_keep_the_defaults_otherwise() {
        // 64 B messages in 1 KiB slots on 1 Gb/s (8.7 us a slot), 2 us posts, 2 servers.
        assert_eq!(Timing::for_link(Nanos(8_700), Nanos(2_000), 2), Timing::SIM);
        // 64 KB messages in 128 KiB slots (1.1 ms a slot), 8 servers: 35 ms.
        let t = Timing::for_link(Nanos(1_100_000), Nanos(2_000), 8);
        assert_eq!(t.suspect, Nanos(35_200_000));
        assert!(t.heartbeat < t.suspect && t.retry > t.suspect, "{t:?}");
        // 32 servers: heartbeats every 1.28 ms, suspicion after 12.8 ms.
        let t = Timing::for_link(Nanos(8_700), Nanos(2_000), 32);
        assert_eq!(
            (t.heartbeat, t.suspect),
            (Nanos(1_280_000), Nanos(12_800_000))
        );
    }

    #[test]
    fn impossible_configurations_say_what_to_change() {
        let bad = |f: fn(&mut Config)| {
            let mut c = Config::new(2, 3, 1);
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert!(bad(|c| c.groups = 0).contains("groups must be"));
        assert!(bad(|c| c.acceptors = 2).contains("odd"));
        assert!(bad(|c| c.acceptors = 5).contains("at most the 3 replicas"));
        assert!(bad(|c| c.acceptors = 4).contains("odd"));
        let mut apart = Config::new(2, 1, 1);
        apart.placement = Placement::Dedicated;
        apart.acceptors = 5;
        apart.validate().unwrap();
        assert!(bad(|c| c.replicas = 0).contains("at least 1"));
        assert!(bad(|c| c.slot_bytes = 256).contains("bytes per slot"));
        assert!(bad(|c| c.delta = Nanos::ZERO).contains("delta"));
        assert!(bad(|c| c.timing.heartbeat = c.timing.suspect).contains("heartbeat < suspect"));
        assert!(bad(|c| c.retain = 0).contains("retain"));
        let mut big = Config::new(1, 3, 1);
        big.slot_bytes = 128 << 10;
        assert_eq!(big.clone().retain_within_budget().retain, 512);
        big.slot_bytes = 2048;
        assert_eq!(big.retain_within_budget().retain, 4096);
    }
}
