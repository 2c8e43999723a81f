//! A [`Nic`] that records every op and lets a test script completions, receives, memory and time:
//! for unit tests that assert the exact ops one `poll` posted.

use crate::memory::{memory_nic_methods, Memory};
use crate::nic::{validate, Completion, Nic, NicLimits, Op, OpError, Recv, WrId};
use crate::process::ProcessId;
use crate::region::{RegionSpec, RegionTable};
use crate::rng::{Purpose, Rng};
use crate::time::Nanos;
use std::collections::VecDeque;

/// A scripted NIC: ops are validated exactly as a runtime would and recorded, never executed.
#[derive(Debug)]
pub struct RecordingNic {
    id: ProcessId,
    table: RegionTable,
    limits: NicLimits,
    memory: Memory,
    now: Nanos,
    rng: Rng,
    next_wr: u64,
    ops: Vec<(WrId, Op)>,
    completions: VecDeque<Completion>,
    recvs: VecDeque<Recv>,
}

impl RecordingNic {
    /// The NIC of process `id` in a run whose processes declared `specs` (index = process id).
    pub fn new(id: ProcessId, specs: Vec<Vec<RegionSpec>>, seed: u64) -> RecordingNic {
        let memory = Memory::new(id, &specs[id.index()], specs.len());
        RecordingNic {
            id,
            table: RegionTable::new(&specs),
            limits: NicLimits::default(),
            memory,
            now: Nanos::ZERO,
            rng: Rng::derive(seed, Purpose::Protocol, id.0 as u64),
            next_wr: 0,
            ops: Vec::new(),
            completions: VecDeque::new(),
            recvs: VecDeque::new(),
        }
    }

    /// Sets the NIC limits reported to the process.
    pub fn set_limits(&mut self, limits: NicLimits) {
        self.limits = limits;
    }

    /// Sets the time the process will observe.
    pub fn set_now(&mut self, now: Nanos) {
        self.now = now;
    }

    /// Takes the ops recorded since the last call, in post order.
    pub fn take_ops(&mut self) -> Vec<(WrId, Op)> {
        std::mem::take(&mut self.ops)
    }

    /// Queues a completion for the process to drain.
    pub fn push_completion(&mut self, c: Completion) {
        self.completions.push_back(c);
    }

    /// Queues a receive for the process to drain.
    pub fn push_recv(&mut self, r: Recv) {
        self.recvs.push_back(r);
    }

    /// The process's memory (to script what remote writes would have landed).
    pub fn memory_mut(&mut self) -> &mut Memory {
        &mut self.memory
    }

    /// The process's memory.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }
}

impl Nic for RecordingNic {
    memory_nic_methods!();

    fn now(&self) -> Nanos {
        self.now
    }

    fn post(&mut self, op: Op) -> Result<WrId, OpError> {
        validate(&op, self.id, &self.table, &self.limits)?;
        if let Some((region, peer, access)) = op.access_change() {
            self.memory.set_access(region, peer, access)?;
        }
        let wr = WrId(self.next_wr);
        self.next_wr += 1;
        self.ops.push((wr, op));
        Ok(wr)
    }

    fn poll_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    fn poll_recv(&mut self) -> Option<Recv> {
        self.recvs.pop_front()
    }
}
