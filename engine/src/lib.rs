//! The workbench's measurement engine: what every command and figure of the harness measures
//! and judges with, whatever the protocol. [`stats`] summarises latency samples (perftest's
//! definitions) and gives rates and means their confidence intervals; [`verdict`] holds the
//! papers' claims as records, each judged by the rule the paper's words call for.
//!
//! It names no protocol and no command: a protocol reaches it only through what it measured.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod stats;
pub mod verdict;
