//! Benchmarks: `bench transport` (perftest-style) and `bench sim` (simulator speed).

pub(crate) mod sim_speed;
pub(crate) mod transport;
