//! The runtimes that drive processes: `sim` (discrete-event, deterministic), `local` (threads and
//! real shared memory in one OS process) and `tcp` (one OS process per node, RDMA semantics over
//! TCP). The `verbs` runtime, on real RDMA devices, is a crate of its own (native dependencies).

pub mod fault_text;
#[cfg(feature = "local")]
pub mod local;
#[cfg(any(feature = "local", feature = "tcp"))]
pub mod shared_memory;
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(feature = "tcp")]
pub mod tcp;

use crate::{Nanos, Nic, ProcessId};

/// A run that has ended, as a runtime leaves it: its processes, what their memories hold, who
/// crashed, and the time. Judges of a run (oracles, liveness checks) take this, so one judge
/// serves the simulator and real threads alike.
pub trait Ended {
    /// The processes that ran.
    type Process;
    /// The runtime's NIC, through which a process's memory is inspected.
    type Nic: Nic;
    /// The processes, in id order, as the run left them.
    fn processes(&self) -> &[Self::Process];
    /// Process `p`'s NIC.
    fn nic(&self, p: ProcessId) -> &Self::Nic;
    /// Whether `p` crashed (or stopped by itself) before the run ended.
    fn crashed(&self, p: ProcessId) -> bool;
    /// The runtime's clock now, no earlier than anything the run did.
    fn now(&self) -> Nanos;
}
