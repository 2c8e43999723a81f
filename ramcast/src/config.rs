//! A RamCast deployment: groups, replicas, clients, buffer geometry and failure-detector timing,
//! and the process ids the runtime assigns to each role.

use multicast::{check_limits, LimitError, Membership};
use transport::Nanos;

/// Timeouts of the failure detectors, in the runtime's nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// A leader (or candidate) writes its heartbeat counter into its group's memory this often.
    pub heartbeat: Nanos,
    /// A follower suspects the leader it expects when the leader's heartbeat has not changed for
    /// this long (Task 7's "suspect").
    pub suspect: Nanos,
    /// A server relays a message that stayed undecided this long (Task 10's client suspicion).
    pub relay: Nanos,
    /// A blocked client stops waiting for a server whose last-delivered report has not moved for
    /// this long, and recycles its buffer slots without it.
    pub evict: Nanos,
}

impl Timing {
    /// Defaults for the simulator (microsecond-scale RDMA, no scheduling noise).
    pub const SIM: Timing = Timing {
        heartbeat: Nanos(20_000),
        suspect: Nanos(300_000),
        relay: Nanos(1_000_000),
        evict: Nanos(20_000_000),
    };

    /// The simulator's timing for measurements (figures, `harness run`, `compare`): [`Timing::SIM`]
    /// with the leader suspected after 5 ms and Task 10's client suspicion at 20 ms, as
    /// `evict`. A saturated closed loop queues for milliseconds: 256 clients of 16 KB messages
    /// to 8 groups under `tram-cpp` queue a leader's heartbeat past 300 us (a leader change in
    /// a failure-free run), and relaying a live client's message is not free under load: it
    /// goes to every destination and loads every server. With `SIM`'s timing, RamCast with 128
    /// clients of 16 KB messages to 8 groups under `tram-cpp` made 536 k relays of 12 KB in a
    /// 16 ms run, held 13 GB in sends in flight and took 36 s for a 32 ms run: the relays, not
    /// the protocol, were what such a point measured. Fault sweeps keep `SIM`'s timeouts so
    /// that recovery fits their short runs.
    pub const MEASURE: Timing = Timing {
        suspect: Nanos(5_000_000),
        relay: Nanos(20_000_000),
        ..Timing::SIM
    };

    /// Defaults for real threads sharing few cores: a descheduled thread must not look dead.
    pub const WALL: Timing = Timing {
        heartbeat: Nanos(1_000_000),
        suspect: Nanos(200_000_000),
        relay: Nanos(500_000_000),
        evict: Nanos(5_000_000_000),
    };
}

/// A RamCast deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Number of groups (1..=64).
    pub groups: usize,
    /// Replicas per group, 2f+1 (odd).
    pub replicas: usize,
    /// Number of clients.
    pub clients: usize,
    /// Bytes of one message slot in a buffer M (header, message, canary), a multiple of 8.
    pub slot_bytes: usize,
    /// Slots per client buffer (the circular buffers of section 3.7).
    pub slots: usize,
    /// One signaled write in this many, per peer (selective signaling, section 4).
    pub signal_every: u32,
    /// Failure-detector timing.
    pub timing: Timing,
}

/// Why a configuration is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Groups out of range.
    #[error("groups must be 1..=64, got {0}")]
    Groups(usize),
    /// Replicas, clients or slot size out of the shared bounds.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// Bad slot count.
    #[error("slots per client must be 2..=65536, got {0}")]
    Slots(usize),
}

impl Config {
    /// A deployment with the simulator's timing, 1 KiB slots, 16 slots per client.
    pub fn new(groups: usize, replicas: usize, clients: usize) -> Config {
        Config {
            groups,
            replicas,
            clients,
            slot_bytes: 1024,
            slots: 16,
            signal_every: 32,
            timing: Timing::SIM,
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=64).contains(&self.groups) {
            return Err(ConfigError::Groups(self.groups));
        }
        check_limits(self.replicas, self.clients, self.slot_bytes)?;
        if !(2..=65536).contains(&self.slots) {
            return Err(ConfigError::Slots(self.slots));
        }
        Ok(())
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use multicast::GroupId;
    use transport::ProcessId;

    #[test]
    fn ids_map_both_ways_and_bad_configs_say_why() {
        let c = Config::new(3, 3, 2);
        assert!(c.validate().is_ok());
        assert_eq!(c.server(GroupId(2), 1), ProcessId(7));
        assert_eq!(c.group_of(ProcessId(7)), Some(GroupId(2)));
        assert_eq!(c.rank_of(ProcessId(7)), 1);
        assert_eq!(c.client(1), ProcessId(10));
        assert_eq!(c.client_index(ProcessId(10)), Some(1));
        assert_eq!(c.group_of(ProcessId(10)), None);
        assert_eq!((c.f(), c.quorum()), (1, 2));
        let bad = Config {
            replicas: 4,
            ..c.clone()
        };
        assert_eq!(
            bad.validate(),
            Err(ConfigError::Limit(LimitError::Replicas(4)))
        );
        let bad = Config { groups: 65, ..c };
        assert!(bad.validate().unwrap_err().to_string().contains("1..=64"));
    }
}
