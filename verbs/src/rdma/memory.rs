//! What a node leaves when its run ends ([`NodeMemory`]): its regions, readable as through its
//! NIC once its queue pairs and registrations are gone, so a run's memories can be inspected
//! afterwards (Heron reads its replicas' objects back), as on the simulator and `local`.

use super::{Context, VerbsNic};
use std::time::Instant;
pub(super) use transport::runtime::shared_memory::SharedMemory;
use transport::runtime::shared_memory::Words;
use transport::{
    Completion, LocalAddr, Nanos, Nic, NicLimits, Op, OpError, ProcessId, Purpose, Recv,
    RegionSpec, RegionTable, Rng, WrId,
};

/// A node's regions and the table every access to them is checked against.
#[derive(Debug)]
pub(super) struct Memory {
    pub(super) me: ProcessId,
    pub(super) table: RegionTable,
    pub(super) regions: Vec<Words>,
}

impl SharedMemory for Memory {
    fn check(&self, at: LocalAddr, len: usize) -> Result<&Words, OpError> {
        transport::nic::check_bounds(&self.table, self.me, at.region, at.offset, len)?;
        Ok(&self.regions[at.region.index()])
    }
}

/// The [`Nic`] methods a node's memory answers alike during the run ([`VerbsNic`]) and after
/// it ([`NodeMemory`]): both hold a [`Memory`], their limits and their random stream.
macro_rules! memory_methods {
    () => {
        fn id(&self) -> ProcessId {
            self.memory.me
        }

        fn regions(&self) -> &transport::RegionTable {
            &self.memory.table
        }

        fn rng(&mut self) -> &mut transport::Rng {
            &mut self.rng
        }

        fn limits(&self) -> transport::NicLimits {
            self.limits
        }

        fn read_local(&self, at: LocalAddr, buf: &mut [u8]) -> Result<(), OpError> {
            SharedMemory::read_shared(&self.memory, at, buf)
        }

        fn write_local(&mut self, at: LocalAddr, data: &[u8]) -> Result<(), OpError> {
            SharedMemory::write_shared(&self.memory, at, data)
        }

        fn load_u64(&self, at: LocalAddr) -> Result<u64, OpError> {
            SharedMemory::load_shared(&self.memory, at)
        }

        fn store_u64(&mut self, at: LocalAddr, value: u64) -> Result<(), OpError> {
            SharedMemory::store_shared(&self.memory, at, value)
        }
    };
}
pub(super) use memory_methods;

/// A node's memory after the run: reads and local writes work, ops are refused as from a
/// crashed process.
#[derive(Debug)]
pub struct NodeMemory {
    memory: Memory,
    limits: NicLimits,
    rng: Rng,
    start: Instant,
}

impl NodeMemory {
    /// The memory of node `me` of a run whose processes declared `specs`, never started (it
    /// crashed before the run): its regions as declared, zero.
    pub(super) fn untouched(me: ProcessId, specs: &[Vec<RegionSpec>], start: Instant) -> Self {
        NodeMemory {
            memory: Memory {
                me,
                table: RegionTable::new(specs),
                regions: specs[me.index()]
                    .iter()
                    .map(|s| Words::new(s.len))
                    .collect(),
            },
            limits: NicLimits {
                inline_max: 0,
                send_max: 0,
            },
            rng: Rng::derive(0, Purpose::Protocol, me.0 as u64),
            start,
        }
    }
}

impl<C: Context> VerbsNic<C> {
    /// The node's memory, its queue pairs, registrations and device released first (in that
    /// order, so nothing lands in memory after it is handed on).
    pub(super) fn into_memory(self) -> NodeMemory {
        let VerbsNic {
            limits,
            rng,
            start,
            peers,
            local_mrs,
            peer_mrs,
            memory,
            cq,
            ctx,
            ..
        } = self;
        drop((peers, local_mrs, peer_mrs, cq, ctx));
        NodeMemory {
            memory,
            limits,
            rng,
            start,
        }
    }
}

impl Nic for NodeMemory {
    memory_methods!();

    fn now(&self) -> Nanos {
        Nanos(self.start.elapsed().as_nanos() as u64)
    }

    fn post(&mut self, _: Op) -> Result<WrId, OpError> {
        Err(OpError::Crashed)
    }

    fn poll_completion(&mut self) -> Option<Completion> {
        None
    }

    fn poll_recv(&mut self) -> Option<Recv> {
        None
    }
}
