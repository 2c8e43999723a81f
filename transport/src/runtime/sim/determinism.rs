//! Seed replay: the running [`Digest`] of a run's events, the per-event trace, and
//! [`check_determinism`], which runs a seed twice and names the first event at which the runs
//! diverge.

use super::{Sim, SimNic};
use crate::process::Process;
use crate::time::Nanos;
use std::fmt;

/// One processed event of the trace, for divergence reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Position in the run's event sequence.
    pub index: u64,
    /// Virtual time.
    pub time: Nanos,
    /// The process concerned.
    pub process: u32,
    /// Event kind.
    pub kind: &'static str,
    /// The running digest after this event.
    pub digest: u64,
}

impl fmt::Display for TraceRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "event #{} at {} ({} on p{}) digest {:016x}",
            self.index, self.time, self.kind, self.process, self.digest
        )
    }
}

/// The running hash of a run's events, ops and RNG draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(pub u64);

impl Digest {
    /// Folds one value in (FxHash's rotate-xor-multiply: cheap enough for every event, and any
    /// difference in a folded value changes every later digest).
    #[inline]
    pub(super) fn fold(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517C_C1B7_2722_0A95);
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// The outcome of running one seed twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Determinism {
    /// Both runs produced the same trace; the digest they share.
    Identical(Digest),
    /// The runs diverged; the first differing event of each (None where a run had ended).
    Diverged {
        /// First run's event at the divergence.
        first: Option<TraceRecord>,
        /// Second run's event at the divergence.
        second: Option<TraceRecord>,
    },
}

/// Builds and runs the same simulation twice (`build` must construct it from its arguments
/// only) and compares the event traces, reporting the first divergence. The second run
/// withholds the change hint ([`super::SimConfig::exact_changes`]), so one check covers both: that a
/// seed replays, and that the hint only saves wall time.
pub fn check_determinism<P, F>(mut build: F, limit: Option<Nanos>) -> Determinism
where
    P: Process<SimNic>,
    F: FnMut() -> Sim<P>,
{
    let mut traces = Vec::new();
    let mut digests = Vec::new();
    for run in 0..2 {
        let mut sim = build();
        if run == 1 {
            sim.withhold_changes();
        }
        sim.cfg.record_trace = true;
        sim.run(limit);
        digests.push(sim.digest());
        traces.push(std::mem::take(&mut sim.trace));
    }
    let (a, b) = (&traces[0], &traces[1]);
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        if x != y {
            return Determinism::Diverged {
                first: x.copied(),
                second: y.copied(),
            };
        }
    }
    if digests[0] != digests[1] {
        return Determinism::Diverged {
            first: a.last().copied(),
            second: b.last().copied(),
        };
    }
    Determinism::Identical(digests[0])
}
