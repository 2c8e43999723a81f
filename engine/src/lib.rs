//! The workbench's engine: what every command and figure of the harness runs, measures and
//! judges with, whatever the protocol. A protocol implements the interface of [`protocol`]
//! (its configuration, processes, memory and counters); [`runtime`] is the one driver that runs
//! any set of processes on the simulator, on threads, over loopback TCP or on an RDMA device;
//! [`experiment`] runs a deployment with closed-loop clients through it, and [`cluster`] as one
//! OS process per node over TCP; [`totals`] says what a run will hold before it is built;
//! [`figure`] measures points and saturation sweeps on all cores, [`plot`] draws them,
//! [`stats`] summarises latency samples and gives rates and means their confidence intervals,
//! and [`verdict`] holds the papers' claims as records, each judged by the rule the paper's
//! words call for; [`probes`] times each kind of work of the workspace's code on this machine
//! and [`fit`] fits a paper prototype's software profile to one published number; [`perftest`]
//! and [`access`] measure the transport itself (write latency and bandwidth, access changes
//! and reconnects) on any runtime;
//! [`progress`] shows long work on a terminal.
//!
//! It names no protocol and no command: the harness's registry lists the protocols, and its
//! commands parse the command line and call in here.

#![deny(missing_docs)]
#![deny(unsafe_code)]
#![allow(
    clippy::disallowed_methods,
    reason = "the engine measures and reports the wall-clock time of runs, and runs threads and OS processes"
)]

pub mod access;
pub mod cluster;
pub mod experiment;
pub mod figure;
pub mod fit;
pub mod perftest;
pub mod plot;
pub mod probes;
pub mod progress;
pub mod protocol;
pub mod runtime;
pub mod stats;
pub mod totals;
pub mod verdict;
