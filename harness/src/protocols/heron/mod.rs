//! Heron (the Heron thesis, chapter 5) in the harness: so far `check` only (Heron over RamCast
//! with the key-value store); `run`, `compare`, TPC-C and the figures are the next steps of
//! issue 15. Heron is not an atomic multicast protocol, so it has no line in [`super::REGISTRY`].

pub(crate) mod check;
