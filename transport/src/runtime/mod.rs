//! The runtimes that drive processes: `sim` (discrete-event, deterministic), `local` (threads and
//! real shared memory in one OS process) and `tcp` (one OS process per node, RDMA semantics over
//! TCP). The `verbs` runtime, on real RDMA devices, is a crate of its own (native dependencies).

#[cfg(feature = "local")]
pub mod local;
#[cfg(any(feature = "local", feature = "tcp"))]
pub mod shared_memory;
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(feature = "tcp")]
pub mod tcp;
