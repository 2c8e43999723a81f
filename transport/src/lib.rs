//! The RDMA model every protocol of the workbench is written against, and the runtimes that
//! drive it.
//!
//! A protocol participant is a [`Process`]: a deterministic state machine that owns no thread,
//! socket or clock. A runtime calls [`Process::poll`] with a [`Nic`], the process's view of its
//! RDMA NIC and its own memory. The same process code runs on every runtime:
//!
//! | runtime | time | use |
//! |---|---|---|
//! | [`runtime::sim`] | virtual ns, deterministic from a seed | paper figures at any scale, fault injection, replay |
//! | [`runtime::local`] | wall clock, real threads and shared memory | memory-ordering bugs, software cost |
//! | [`runtime::tcp`] | each node's wall clock, one OS process per node, TCP between them | clusters without RDMA, real crashes (`kill -9`) |
//!
//! # Writing a process
//!
//! ```
//! use transport::{Nic, Process, Progress, RegionSpec, Access, RegionId, LocalAddr, RemoteAddr,
//!                 ProcessId, WriteFlags};
//! use transport::runtime::sim::{Sim, SimConfig, SimNic, Profile};
//!
//! /// Writes one word into its peer's region; the peer counts the word when it lands.
//! struct Hello { peer: ProcessId, sent: bool, seen: u64 }
//!
//! impl<N: Nic> Process<N> for Hello {
//!     fn regions(&self) -> Vec<RegionSpec> {
//!         vec![RegionSpec::new(8).with_default(Access::Write)]
//!     }
//!     fn poll(&mut self, nic: &mut N) -> Progress {
//!         let mut worked = false;
//!         if !self.sent {
//!             let dst = RemoteAddr::new(self.peer, RegionId(0), 0);
//!             nic.post_write(dst, &42u64.to_le_bytes(), WriteFlags::NONE.inline()).unwrap();
//!             self.sent = true;
//!             worked = true;
//!         }
//!         self.seen = nic.load_u64(LocalAddr::new(RegionId(0), 0)).unwrap();
//!         Progress::worked(worked)
//!     }
//!     fn done(&self) -> bool { self.seen == 42 }
//! }
//!
//! let profile = Profile::load("r320-cx3").unwrap();
//! let procs = vec![
//!     Hello { peer: ProcessId(1), sent: false, seen: 0 },
//!     Hello { peer: ProcessId(0), sent: false, seen: 0 },
//! ];
//! let mut sim = Sim::new(SimConfig::new(7, profile), procs);
//! sim.run(None);
//! assert!(sim.processes().iter().all(|p| p.seen == 42));
//! ```
//!
//! # Building blocks
//! [`slot`] (entries with canaries), [`ring`] (SPSC message ring with credits), [`payload`]
//! (synthetic, seed-regenerated payloads), [`image`] (a region's starting bytes, built once
//! and installed in many processes), [`recording`] (a NIC for exact-op unit tests), [`queue_pair`]
//! (one queue pair's rules, kept once for every runtime).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod bits;
pub mod changes;
pub mod chaos;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod image;
pub mod input;
pub mod memory;
pub mod mesh;
pub mod nic;
pub mod payload;
pub mod process;
pub mod queue_pair;
pub mod recording;
pub mod region;
pub mod ring;
pub mod rng;
pub mod runtime;
pub mod slot;
pub mod time;
pub mod work;

pub use changes::{Changes, Extent, Tracked};
pub use image::RegionImage;
pub use nic::{
    Completion, Data, Inline, Nic, NicLimits, Op, OpError, OpKind, Qp, Recv, Status, WrId,
    WriteFlags,
};
pub use payload::Synthetic;
pub use process::{Process, ProcessId, Progress};
pub use region::{Access, LocalAddr, RegionId, RegionSpec, RegionTable, RemoteAddr};
pub use rng::{Purpose, Rng};
pub use time::{Nanos, Timer};
pub use work::Work;
