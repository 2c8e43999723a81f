//! RDMC (Behrens, Birman, Jha, Tremel, 2016): reliable bulk multicast built from RDMA unicasts.
//!
//! A message is cut into fixed-size blocks that members relay to each other following a
//! dissemination [`schedule`]: sequential send, chain send, binomial tree, or the binomial
//! pipeline of the paper's Appendix A. [`node::RdmcNode`] is the library of the paper's Fig. 1
//! (`create_group`, `destroy_group`, `send_message`, upcalls for incoming and completed
//! messages and for failures) as a sans-IO process; [`wire`] holds its control messages.
//!
//! # Choices the paper leaves open
//! - **The first block's relay is fixed.** A receiver asks for its first block before it knows
//!   the message size, so it must know who sends it: every schedule keeps a member's first
//!   relay the same for every block count (tested for all algorithms), and that relay sends the
//!   size (`Size`) just before the first block on the same queue pair.
//! - **Flow control.** `Ready(msg, step)` is the paper's `ready_for_block`: a block is written
//!   only after its receiver said that step's receive is posted, so a fast relay never
//!   overwrites a block a slow receiver still needs. `Ready(FIRST)` says the receive buffer is
//!   free for the next message, which is how messages queued at the root go out in order.
//! - **Immediates** carry the block number (32 bits): a message may have up to 2^32 blocks of
//!   any size; there is no 16-bit limit as in the reference code.
//! - **Failure detection.** A failed operation, or a probe (`Probe`, a two-sided send) to a peer
//!   this member has waited on for the probe interval, marks the peer failed; the detector and
//!   every member that learns it tell everyone else, so all survivors get the upcall even when
//!   the detector crashes next. A failed group stops; a partial message is never delivered.
//! - **Buffers.** Each group has one receive region of its largest message, declared sparse so
//!   the simulator keeps synthetic blocks as descriptors (hundreds of MB at hundreds of members
//!   cost no memory); `local` holds the real bytes. A receiver's completed message is copied
//!   out of the buffer into the upcall, or, with [`node::Handoff::Lend`], left there for the
//!   application to read in place until it releases it (the paper's completion callback); the
//!   root's upcall hands back what it sent. A lent message is never overwritten: every block
//!   written to a member answers a `Ready` of that member, the first of the next message's
//!   only after the release and the later ones only after that message started, and each
//!   message's writes match its receive steps one for one, so none is still in flight at
//!   completion. While it holds a buffer, a member keeps probing its first relay, as while it
//!   waits for the next message, so a root that dies meanwhile is detected; the group's next
//!   message waits for the release.
//! - **Work reports** ([`transport::Work`], priced by the simulator's software profile): a
//!   `Decode` per block arrival (blocks land by RDMA, no copy) and a `Deliver` per message
//!   completed.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

/// Seeded checking runs of RDMC under injected faults (`harness check`) ([`sweep`]).
#[cfg(any(test, feature = "check"))]
pub mod check;
pub mod member;
pub mod node;
pub mod schedule;
pub mod wire;

pub use node::{Delivered, Event, GroupConfig, Handoff, RdmcError, RdmcNode};
pub use schedule::{Algorithm, Step, Transfer};

/// The hardware profile of RDMC's most recent testbed, on which its runs and checks default:
/// Fractus at 100 Gb/s (its figures also use Stampede and Sierra, each named in their
/// summaries).
pub const TESTBED: &str = "fractus-100g";
