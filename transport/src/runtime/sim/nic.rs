//! The simulator's [`Nic`]: a process's own memory and queues, plus an outbox of posted ops that
//! the engine prices and schedules after each poll.

use super::software::WorkCosts;
use super::tear::Landing;
use crate::changes::Changes;
use crate::image::RegionImage;
use crate::memory::{memory_nic_methods, Memory};
use crate::nic::{validate, Completion, Nic, NicLimits, Op, OpError, Recv, WrId};
use crate::process::ProcessId;
use crate::queue_pair::QpState;
use crate::region::{LocalAddr, RegionId, RegionTable};
use crate::rng::Rng;
use crate::time::Nanos;
use crate::work::Work;
use std::collections::VecDeque;
use std::sync::Arc;

/// An op accepted during a poll, stamped with the virtual time its doorbell rang.
#[derive(Clone, Debug)]
pub(crate) struct Posted {
    pub(crate) wr: WrId,
    pub(crate) op: Op,
    pub(crate) at: Nanos,
}

/// The sender-side state of the queue pair to one peer.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QueuePair {
    /// Error and epoch ([`crate::queue_pair`]): after a remote error later ops are flushed
    /// until a reconnect, and ops issued under an older epoch are flushed.
    pub(crate) state: QpState,
    /// The queue pair accepts work again at this time (after a reconnect).
    pub(crate) ready_at: Nanos,
    /// When its last op finished leaving the sender's port.
    pub(crate) egress_end: Nanos,
    /// When its last op landed at the peer (ops of one queue pair land in post order).
    pub(crate) last_land: Nanos,
    /// When its last acknowledgement came back, and its last read response: completions of
    /// one queue pair keep post order.
    pub(crate) last_ack: Nanos,
    pub(crate) last_read: Nanos,
}

/// The NIC a simulated process polls with.
#[derive(Debug)]
pub struct SimNic {
    pub(crate) id: ProcessId,
    pub(crate) table: Arc<RegionTable>,
    pub(crate) limits: NicLimits,
    pub(crate) memory: Memory,
    pub(crate) poll_start: Nanos,
    pub(crate) charged: Nanos,
    pub(crate) slow: f64,
    pub(crate) post_ns: u64,
    /// CPU time of one access change (the profile's `permission_change`).
    pub(crate) permission_ns: u64,
    pub(crate) completion_ns: u64,
    /// The software profile's prices.
    pub(crate) work: WorkCosts,
    pub(crate) rng: Rng,
    pub(crate) next_wr: u64,
    pub(crate) outbox: Vec<Posted>,
    pub(crate) cq: VecDeque<Completion>,
    pub(crate) rq: VecDeque<Recv>,
    /// Per peer, its [`crate::Qp::COUNT`] queue pairs, indexed `peer * COUNT + qp`.
    pub(crate) qps: Vec<QueuePair>,
    /// Whether [`Nic::take_changes`] reports the exact changes (else "anything may have
    /// changed", as on other runtimes).
    pub(crate) exact_changes: bool,
    /// Ops landing in this memory piece by piece (torn landings, see [`super::tear`]).
    pub(crate) landings: Vec<Landing>,
}

impl SimNic {
    pub(crate) fn charge(&mut self, ns: u64) {
        self.charged += if self.slow == 1.0 {
            Nanos(ns)
        } else {
            Nanos::from_f64(ns as f64 * self.slow)
        };
    }

    /// Lands at once every piece still pending from `peer` in `region`: an access change is
    /// final, so nothing of that peer may land there after it.
    pub(crate) fn settle(&mut self, region: RegionId, peer: ProcessId) {
        for l in &mut self.landings {
            if l.is_of(region, peer) {
                l.settle(&mut self.memory);
            }
        }
    }

    /// This process's memory (for inspection after or between runs).
    pub fn memory(&self) -> &Memory {
        &self.memory
    }
}

impl Nic for SimNic {
    memory_nic_methods!();

    fn now(&self) -> Nanos {
        self.poll_start + self.charged
    }

    fn read_data(&self, at: LocalAddr, len: usize) -> Result<crate::nic::Data, OpError> {
        self.memory.read_data(at, len)
    }

    fn install_image(&mut self, region: RegionId, image: &RegionImage) -> Result<(), OpError> {
        self.memory.install(region, image)
    }

    fn take_changes(&mut self, into: &mut Changes) {
        self.memory.take_changes(into);
        if !self.exact_changes {
            into.set_unknown();
        }
    }

    fn work(&mut self, kind: Work, units: u64) {
        let ns = self.work.of(kind, units).0;
        if ns > 0 {
            self.charge(ns);
        }
    }

    fn post(&mut self, op: Op) -> Result<WrId, OpError> {
        validate(&op, self.id, &self.table, &self.limits)?;
        if let Some((region, peer, access)) = op.access_change() {
            // Local and synchronous: in effect before any later event is processed; the
            // process is busy for what the profile says a permission change costs.
            self.settle(region, peer);
            self.memory.set_access(region, peer, access)?;
            self.charge(self.permission_ns);
        } else {
            self.charge(self.post_ns);
        }
        let wr = WrId(self.next_wr);
        self.next_wr += 1;
        let at = self.now();
        self.outbox.push(Posted { wr, op, at });
        Ok(wr)
    }

    fn poll_completion(&mut self) -> Option<Completion> {
        let c = self.cq.pop_front()?;
        self.charge(self.completion_ns);
        Some(c)
    }

    fn poll_recv(&mut self) -> Option<Recv> {
        let r = self.rq.pop_front()?;
        self.charge(self.completion_ns);
        Some(r)
    }
}
