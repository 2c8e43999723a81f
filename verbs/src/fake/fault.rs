//! Test hooks: faults the fabric injects, as data it consults (no callbacks into the runtime),
//! and the counters it keeps.

use super::qp::TransitionKind;
use std::time::Duration;

/// Names a device instance in a hook: by the name it was opened with (every instance of that
/// name), or by open order (0 is the first `open` on the fabric).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSel {
    /// Every instance opened under this name.
    Name(String),
    /// The `k`-th instance opened (from 0).
    NthOpen(usize),
}

impl DeviceSel {
    /// Whether instance `k`, opened as `name`, is selected.
    pub(super) fn selects(&self, k: usize, name: &str) -> bool {
        match self {
            DeviceSel::Name(n) => n == name,
            DeviceSel::NthOpen(i) => *i == k,
        }
    }
}

/// Counters of a device instance, or of the whole fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `poll` calls on completion queues.
    pub poll_cq_calls: u64,
    /// Packets transmitted (requests, responses, ACKs and NAKs).
    pub packets: u64,
    /// Packets dropped silently at arrival.
    pub dropped: u64,
    /// Retransmissions after an ACK timeout.
    pub retries: u64,
    /// RNR NAKs sent.
    pub rnr_naks: u64,
    /// Successful memory registrations.
    pub reg_mr: u64,
}

/// The faults planned so far (each `fail_next` and `delay_modify` fires once).
#[derive(Debug, Default)]
pub(super) struct FaultPlan {
    /// Verbs whose next call fails, with the errno.
    pub(super) fail: Vec<(&'static str, i32)>,
    /// A sleep before the next transition of a kind on a device, outside the lock.
    pub(super) delays: Vec<(DeviceSel, TransitionKind, Duration)>,
    /// Devices whose receive queues answer every incoming send with an RNR NAK.
    pub(super) frozen: Vec<DeviceSel>,
}

impl FaultPlan {
    /// Takes the planned failure of `verb`, if any.
    pub(super) fn take_failure(&mut self, verb: &'static str) -> Option<i32> {
        let at = self.fail.iter().position(|(v, _)| *v == verb)?;
        Some(self.fail.remove(at).1)
    }

    /// Takes the planned delay of a `kind` transition on instance `k` (`name`), if any.
    pub(super) fn take_delay(
        &mut self,
        k: usize,
        name: &str,
        kind: TransitionKind,
    ) -> Option<Duration> {
        let at = self
            .delays
            .iter()
            .position(|(sel, t, _)| *t == kind && sel.selects(k, name))?;
        Some(self.delays.remove(at).2)
    }

    /// Whether instance `k`'s receive queues are frozen.
    pub(super) fn frozen(&self, k: usize, name: &str) -> bool {
        self.frozen.iter().any(|sel| sel.selects(k, name))
    }
}
