//! A TRAM deployment: the overlay tree, replicas per group, clients, buffer geometry and
//! failure-detector timing. Process ids follow [`multicast::Membership`]: servers first, then
//! clients.

use multicast::{check_limits, GroupId, LimitError, Membership, Tree};
use transport::Nanos;

/// Timeouts of the failure detector and of log recycling, in the runtime's nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// A leader writes its heartbeat counter into its group's memory this often.
    pub heartbeat: Nanos,
    /// A replica suspects the leader it follows when the leader's heartbeat has not changed for
    /// this long; the leader-election oracle then names the next rank.
    pub suspect: Nanos,
    /// A leader whose log is full stops waiting for a member whose delivery report has not moved
    /// for this long, and recycles log slots without it (see [`crate::replica`]).
    pub evict: Nanos,
}

impl Timing {
    /// Defaults for the simulator (microsecond-scale RDMA, no scheduling noise).
    pub const SIM: Timing = Timing {
        heartbeat: Nanos(20_000),
        suspect: Nanos(300_000),
        evict: Nanos(5_000_000),
    };

    /// Defaults for real threads sharing few cores: a descheduled thread must not look dead.
    pub const WALL: Timing = Timing {
        heartbeat: Nanos(1_000_000),
        suspect: Nanos(200_000_000),
        evict: Nanos(2_000_000_000),
    };
}

/// A TRAM deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The overlay tree; its groups are the deployment's groups.
    pub tree: Tree,
    /// Replicas per group, 2f+1 (odd).
    pub replicas: usize,
    /// Number of clients.
    pub clients: usize,
    /// Bytes of one slot of an `HM` buffer (slot header, message header, message, canary), a
    /// multiple of 8. A log slot is this plus the log entry's own fields.
    pub slot_bytes: usize,
    /// Slots of each `HM` buffer (one buffer per client and one for the parent).
    pub hm_slots: usize,
    /// Slots of the circular `LOG`.
    pub log_slots: usize,
    /// Failure-detector timing.
    pub timing: Timing,
}

/// Why a configuration is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Replicas, clients or slot size out of the shared bounds.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// Bad HM slot count.
    #[error("HM slots per buffer must be 2..=65536, got {0}")]
    HmSlots(usize),
    /// Bad LOG slot count.
    #[error("LOG slots must be 4..=65536, got {0}")]
    LogSlots(usize),
}

impl Config {
    /// A deployment over `tree` with the simulator's timing, 256-byte slots, 16 slots per `HM`
    /// buffer and 64 log slots.
    pub fn new(tree: Tree, replicas: usize, clients: usize) -> Config {
        Config {
            tree,
            replicas,
            clients,
            slot_bytes: 256,
            hm_slots: 16,
            log_slots: 64,
            timing: Timing::SIM,
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_limits(self.replicas, self.clients, self.slot_bytes)?;
        if !(2..=65536).contains(&self.hm_slots) {
            return Err(ConfigError::HmSlots(self.hm_slots));
        }
        if !(4..=65536).contains(&self.log_slots) {
            return Err(ConfigError::LogSlots(self.log_slots));
        }
        Ok(())
    }

    /// The children of `g` in the tree, in increasing order (index `i` is child `i` in log
    /// entries and credit words).
    pub fn children(&self, g: GroupId) -> Vec<GroupId> {
        self.tree.children(g).collect()
    }
}

impl Membership for Config {
    fn group_count(&self) -> usize {
        self.tree.groups()
    }
    fn replica_count(&self) -> usize {
        self.replicas
    }
    fn client_count(&self) -> usize {
        self.clients
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configs_say_why() {
        let c = Config::new(Tree::preset("base").unwrap(), 3, 2);
        assert!(c.validate().is_ok());
        assert_eq!(c.group_count(), 8);
        assert_eq!(c.children(GroupId(1)), [GroupId(2), GroupId(3)]);
        let bad = Config {
            replicas: 2,
            ..c.clone()
        };
        assert_eq!(
            bad.validate(),
            Err(ConfigError::Limit(LimitError::Replicas(2)))
        );
        let bad = Config { log_slots: 2, ..c };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("LOG slots"));
    }
}
