//! The hardware profile each protocol runs on unless told otherwise: the testbed of its paper.
//! `run`, `check`, `figure` and `compare` all take it from here, so a protocol's default is
//! declared once.

/// RamCast's testbed: CloudLab xl170 nodes, ConnectX-4 (RamCast section 5).
pub(crate) const RAMCAST: &str = ramcast::TESTBED;
/// TRAM's testbed: Dell R320 nodes, ConnectX-3 at 56 Gb/s (TRAM section 5.1).
pub(crate) const TRAM: &str = tram::TESTBED;
/// `compare`'s default profile: TRAM's testbed, on which the TRAM paper compares TRAM with
/// RamCast.
pub(crate) const COMPARE: &str = TRAM;
/// RDMC's most recent testbed, Fractus at 100 Gb/s (its figures also use Stampede and Sierra,
/// each named in their summaries).
pub(crate) const RDMC: &str = rdmc::TESTBED;
/// Ridge's testbed: a 1 Gb/s switched LAN with 133 us ping round trips (Ridge section 6.1).
pub(crate) const RIDGE: &str = ridge::TESTBED;
/// Heron's testbed: CloudLab XL170 nodes, ConnectX-4 (the Heron thesis, section 5.3).
pub(crate) const HERON: &str = heron::TESTBED;
