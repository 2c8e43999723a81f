//! The runtimes that drive processes: `sim` (discrete-event, deterministic) and `local` (threads
//! and real shared memory). Later: `tcp` and `verbs`.

#[cfg(feature = "local")]
pub mod local;
#[cfg(feature = "sim")]
pub mod sim;
