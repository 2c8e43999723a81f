//! RDMC (Behrens, Birman, Jha, Tremel, 2016): reliable bulk multicast built from RDMA unicasts.
//!
//! A message is cut into fixed-size blocks that members relay to each other following a
//! dissemination [`schedule`]: sequential send, chain send, binomial tree, or the binomial
//! pipeline of the paper's Appendix A. [`node::RdmcNode`] is the library of the paper's Fig. 1
//! (`create_group`, `destroy_group`, `send_message`, upcalls for incoming and completed
//! messages and for failures) as a sans-IO process; [`wire`] holds its control messages.
//!
//! Not yet here (issue 5 continues): the hybrid rack-aware algorithm, synthetic receive
//! buffers for simulated messages of hundreds of MB at hundreds of members, `harness run
//! --protocol rdmc` and the paper's figures.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod node;
pub mod schedule;
pub mod wire;

pub use node::{Event, GroupConfig, RdmcError, RdmcNode};
pub use schedule::{Algorithm, Step, Transfer};
