//! RDMC (Behrens, Birman, Jha, Tremel, 2016): reliable bulk multicast built from RDMA unicasts.
//!
//! A message is cut into fixed-size blocks that members relay to each other following a
//! dissemination [`schedule`]: sequential send, chain send, binomial tree, or the binomial
//! pipeline of the paper's Appendix A.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod schedule;

pub use schedule::{Algorithm, Step, Transfer};
