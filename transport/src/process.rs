//! The participant side of the model: a [`Process`] is a deterministic state machine driven by a
//! runtime through one step function, [`Process::poll`].

use crate::nic::Nic;
use crate::region::RegionSpec;
use crate::time::Nanos;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Identifies a process of a run: `0..n`, dense, assigned by the runtime in construction order.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct ProcessId(pub u32);

impl ProcessId {
    /// The id as an index into per-process tables.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}", self.0)
    }
}

/// What one call of [`Process::poll`] reports back to the runtime.
///
/// `did_work` keeps a busy process being polled; `wake_at` is the process's timer: the earliest
/// time it wants to be polled again even if nothing happens to it. A process that did no work
/// and wants no deadline is parked until a write lands in one of its regions, a completion or a
/// receive arrives, or a timer fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Whether the poll changed any state or posted any op.
    pub did_work: bool,
    /// The earliest time the process wants to be polled again, if any.
    pub wake_at: Option<Nanos>,
}

impl Progress {
    /// Nothing done, no deadline: park me.
    pub const IDLE: Progress = Progress {
        did_work: false,
        wake_at: None,
    };

    /// Work was done (or not) and no deadline is wanted.
    pub const fn worked(did_work: bool) -> Progress {
        Progress {
            did_work,
            wake_at: None,
        }
    }

    /// Adds a deadline, keeping the earlier of the current one and `at`.
    pub fn wake_at(self, at: Option<Nanos>) -> Progress {
        let wake_at = match (self.wake_at, at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Progress { wake_at, ..self }
    }

    /// Combines two reports: work if either worked, the earlier deadline.
    pub fn merge(self, other: Progress) -> Progress {
        Progress {
            did_work: self.did_work || other.did_work,
            ..self
        }
        .wake_at(other.wake_at)
    }
}

/// A protocol participant (replica, client, learner...), written once and run on every runtime.
///
/// It owns no thread, socket or clock; everything it observes or does goes through the [`Nic`]
/// handed to [`Process::poll`]. The trait is generic over the `Nic` so runtimes monomorphise the
/// hot path while still allowing `Box<dyn Process<SimNic>>` for heterogeneous runs.
pub trait Process<N: Nic> {
    /// The memory regions this process exposes, queried once before the run starts. Region `i`
    /// of the returned list is `RegionId(i)`.
    fn regions(&self) -> Vec<RegionSpec>;

    /// Does all the work possible without blocking: reads its memory, drains completions and
    /// receives, posts ops. Must not spin waiting for a remote event; return and be polled again.
    fn poll(&mut self, nic: &mut N) -> Progress;

    /// True when this process has finished its part of the run (a client that issued all its
    /// requests). Runs stop early once every process is done; servers usually never are.
    fn done(&self) -> bool {
        false
    }

    /// True once the process stopped itself for good (a replica that can no longer take part
    /// correctly halts). The runtime then treats it as crashed, as a real process that exits:
    /// it is never polled again, peers' ops to it fail as to a crashed process, and what it had
    /// in flight is lost the way a crash loses it.
    fn stopped(&self) -> bool {
        false
    }
}

impl<N: Nic, P: Process<N> + ?Sized> Process<N> for Box<P> {
    fn regions(&self) -> Vec<RegionSpec> {
        (**self).regions()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        (**self).poll(nic)
    }

    fn done(&self) -> bool {
        (**self).done()
    }

    fn stopped(&self) -> bool {
        (**self).stopped()
    }
}
