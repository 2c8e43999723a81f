//! The work a protocol does besides posting ops and polling for them, as it reports it to its
//! runtime ([`crate::Nic::work`]): the simulator prices it with a software profile
//! ([`crate::runtime::sim::Software`]), so a busy process polls later, as a real one would; real
//! runtimes spend real CPU time and ignore the reports.
//!
//! The taxonomy is shared by every protocol and kept small. A protocol reports what its
//! algorithm does, never what a speed-up of this implementation skips: a poll that scans every
//! pending slot reports every one, even where the simulator's change hint let the code look at
//! none ([`crate::changes`]), so the modelled time never depends on the hint.

/// A kind of work, priced per unit by a software profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Work {
    /// A slot, log entry or buffer position a scan looks at (one unit each), whether or not it
    /// holds news.
    Scan,
    /// A message or entry taken out of memory and checked: header, length, checksum (one unit
    /// per message).
    Decode,
    /// Payload bytes the protocol copies in memory (one unit per byte): into a buffer, a log,
    /// or out to the application. Bytes the NIC moves by RDMA cost no CPU and are not reported.
    Copy,
    /// A message whose place in the order is decided at this process (one unit per message):
    /// a timestamp proposed or fixed, a log position assigned.
    Order,
    /// A message handed to the application (one unit per message).
    Deliver,
    /// A row of a replicated application's state read or written (one unit per row): the
    /// application's own work, beyond the bytes copied (Heron's objects, TPC-C's rows).
    Row,
}

impl Work {
    /// Every kind, in the order software profiles list them.
    pub const ALL: [Work; 6] = [
        Work::Scan,
        Work::Decode,
        Work::Copy,
        Work::Order,
        Work::Deliver,
        Work::Row,
    ];
}
