//! A Skeen deployment: one server process per group (not replicated, as in the paper's
//! baseline), the clients, and the shape of the message rings they talk over.
//!
//! Processes are numbered as every protocol of the workbench numbers them
//! ([`multicast::Membership`]): group `g`'s server is process `g`, then the clients. Every
//! process is a member of one message mesh ([`transport::mesh`]), whose two regions are each
//! process's regions 0 and 1.

use crate::wire::HEADER_BYTES;
use multicast::{DestSet, GroupId, Membership, MAX_GROUPS};
use transport::mesh::MeshLayout;
use transport::ring::RingConfig;
use transport::slot::{CANARY_BYTES, HEADER_BYTES as SLOT_HEADER_BYTES};
use transport::ProcessId;

/// Bytes of a ring slot that frame its entry (the slot codec's header and canary words).
const SLOT_FRAMING_BYTES: usize = SLOT_HEADER_BYTES + CANARY_BYTES;

/// A Skeen deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Multicast groups, one server process each.
    pub groups: usize,
    /// Closed-loop clients.
    pub clients: usize,
    /// Slots of every ring of the mesh (at least 2).
    pub ring_slots: u32,
    /// Bytes per ring slot: the largest message plus the packet header
    /// ([`crate::wire::HEADER_BYTES`]) and the slot's framing must fit.
    pub slot_bytes: usize,
    /// Packets per peer that wait in the mesh's outbox for room in the peer's ring. Beyond it a
    /// process keeps the packet in a backlog of its own and sends it on a later poll (never a
    /// drop; the backlog is bounded by the multicasts in flight, see [`crate::server`]).
    pub outbox: usize,
}

/// A configuration that cannot run, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No group, or more than a destination set can name.
    #[error("groups must be 1..={MAX_GROUPS} (got {0})")]
    Groups(usize),
    /// The ring shape is invalid or a slot holds no payload.
    #[error("ring of {slots} slots of {slot_bytes} bytes: need at least 2 slots and slots of a multiple of 8 bytes with room for the {HEADER_BYTES}-byte header and a payload")]
    Ring {
        /// Slots.
        slots: u32,
        /// Bytes per slot.
        slot_bytes: usize,
    },
    /// The mesh's outbox must hold at least one packet.
    #[error("outbox must be at least 1")]
    Outbox,
}

impl Config {
    /// `groups` groups and `clients` clients, with 16-slot rings of 4 KiB and an outbox of 64
    /// packets per peer.
    pub fn new(groups: usize, clients: usize) -> Config {
        Config {
            groups,
            clients,
            ring_slots: 16,
            slot_bytes: 4096,
            outbox: 64,
        }
    }

    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.groups == 0 || self.groups > MAX_GROUPS {
            return Err(ConfigError::Groups(self.groups));
        }
        if self.ring_slots < 2
            || RingConfig::new(self.ring_slots, self.slot_bytes).is_err()
            || self.max_payload() == 0
        {
            return Err(ConfigError::Ring {
                slots: self.ring_slots,
                slot_bytes: self.slot_bytes,
            });
        }
        if self.outbox == 0 {
            return Err(ConfigError::Outbox);
        }
        Ok(())
    }

    /// The largest payload a client may multicast: a slot's capacity less the packet header
    /// (the same for any number of destination groups: a message carries its destination set
    /// as one bitmask).
    pub fn max_payload(&self) -> usize {
        RingConfig::new(self.ring_slots.max(1), self.slot_bytes)
            .ok()
            .and_then(|r| r.validate().ok())
            .map_or(0, |codec| codec.capacity().saturating_sub(HEADER_BYTES))
    }

    /// The smallest slot size that carries a payload of `size` bytes: the payload, the packet
    /// header and the slot's framing (a header and a canary word), rounded up to the slot
    /// codec's multiple of 8.
    pub fn slot_bytes_for(size: usize) -> usize {
        (size + HEADER_BYTES + SLOT_FRAMING_BYTES).next_multiple_of(8)
    }

    /// Whether `dst` names only groups of this deployment: a server refuses a multicast to any
    /// other (its proposal would go to a client, or to no process, and the message would be
    /// held pending forever, blocking the group).
    pub fn has_groups(&self, dst: DestSet) -> bool {
        !dst.is_empty() && dst.groups().all(|g| (g.0 as usize) < self.groups)
    }

    /// Group `g`'s server.
    pub fn server_of(&self, g: GroupId) -> ProcessId {
        self.server(g, 0)
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

    /// One process per group: the paper's Skeen is not replicated.
    fn replica_count(&self) -> usize {
        1
    }

    fn client_count(&self) -> usize {
        self.clients
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server takes multicasts only to groups of its deployment.
    #[test]
    fn destinations_outside_the_deployment_are_not_its_groups() {
        let cfg = Config::new(2, 4);
        let set = |gs: &[u8]| DestSet::of(gs.iter().map(|&g| GroupId(g))).unwrap();
        assert!(cfg.has_groups(set(&[0, 1])));
        assert!(
            !cfg.has_groups(set(&[0, 5])),
            "group 5 is client 3's process id"
        );
        assert!(!cfg.has_groups(set(&[40])));
    }

    #[test]
    fn processes_are_servers_by_group_then_clients() {
        let cfg = Config::new(3, 2);
        cfg.validate().unwrap();
        assert_eq!(cfg.server_of(GroupId(2)), ProcessId(2));
        assert_eq!(cfg.client(1), ProcessId(4));
        assert_eq!(cfg.group_of(ProcessId(1)), Some(GroupId(1)));
        assert_eq!(cfg.group_of(ProcessId(3)), None);
        assert_eq!(cfg.f(), 0);
        assert_eq!(cfg.mesh().members.len(), 5);
    }

    #[test]
    fn bad_shapes_are_refused_with_the_fix() {
        assert_eq!(Config::new(0, 1).validate(), Err(ConfigError::Groups(0)));
        let mut cfg = Config::new(1, 1);
        cfg.ring_slots = 1;
        assert!(matches!(cfg.validate(), Err(ConfigError::Ring { .. })));
        cfg.ring_slots = 2;
        cfg.slot_bytes = 24;
        assert!(matches!(cfg.validate(), Err(ConfigError::Ring { .. })));
        cfg.slot_bytes = 64;
        cfg.validate().unwrap();
        assert_eq!(cfg.max_payload(), 64 - 16 - HEADER_BYTES);
        cfg.outbox = 0;
        assert_eq!(cfg.validate(), Err(ConfigError::Outbox));
    }

    #[test]
    fn slot_bytes_for_a_size_fit_it_exactly() {
        for size in [0, 1, 7, 64, 1000, 4096, 65_536] {
            let mut cfg = Config::new(2, 1);
            cfg.slot_bytes = Config::slot_bytes_for(size);
            cfg.validate().unwrap();
            assert!(
                cfg.max_payload() >= size && cfg.max_payload() < size + 8,
                "{size}"
            );
        }
    }
}
