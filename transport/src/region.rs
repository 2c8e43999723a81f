//! Memory regions, addresses and per-peer access rights.

use crate::process::ProcessId;
use std::fmt;

/// Identifies one of a process's regions: the index in the list its [`crate::Process::regions`]
/// returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegionId(pub u16);

impl RegionId {
    /// The id as an index into per-region tables.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for RegionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// What a remote peer may do to a region, as the access flags of an RDMA memory region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// No remote access.
    #[default]
    None,
    /// Remote reads only.
    Read,
    /// Remote writes (and atomics) only.
    Write,
    /// Remote reads, writes and atomics.
    ReadWrite,
}

impl Access {
    /// Whether a remote read is allowed.
    pub const fn can_read(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    /// Whether a remote write is allowed.
    pub const fn can_write(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }

    /// Whether a remote atomic (compare-and-swap, fetch-and-add) is allowed: it reads and writes.
    pub const fn can_atomic(self) -> bool {
        matches!(self, Access::ReadWrite)
    }
}

/// The declaration of one region: its size and which peers may access it initially.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionSpec {
    /// Length in bytes.
    pub len: usize,
    /// Access granted to every peer not named in `grants`.
    pub default_access: Access,
    /// Per-peer exceptions to `default_access`.
    pub grants: Vec<(ProcessId, Access)>,
    /// The simulator keeps what is written here as extents (a synthetic payload stays a
    /// descriptor) instead of bytes, so a buffer of hundreds of MB at hundreds of processes
    /// costs what its writes describe. Reads see the same bytes either way; the local runtime
    /// stores bytes regardless.
    pub sparse: bool,
}

impl RegionSpec {
    /// A region of `len` bytes that no peer may access until granted.
    pub fn new(len: usize) -> RegionSpec {
        RegionSpec {
            len,
            default_access: Access::None,
            grants: Vec::new(),
            sparse: false,
        }
    }

    /// Marks the region sparse (see [`RegionSpec::sparse`]).
    pub fn sparse(mut self) -> RegionSpec {
        self.sparse = true;
        self
    }

    /// Sets the access every peer gets by default.
    pub fn with_default(mut self, access: Access) -> RegionSpec {
        self.default_access = access;
        self
    }

    /// Grants `peer` a specific access, overriding the default.
    pub fn grant(mut self, peer: ProcessId, access: Access) -> RegionSpec {
        self.grants.retain(|(p, _)| *p != peer);
        self.grants.push((peer, access));
        self
    }

    /// The initial access table of this region for a run of `processes` processes.
    pub fn access_table(&self, processes: usize) -> Vec<Access> {
        let mut table = vec![self.default_access; processes];
        for &(peer, access) in &self.grants {
            if let Some(slot) = table.get_mut(peer.index()) {
                *slot = access;
            }
        }
        table
    }
}

/// A byte address in one of the caller's own regions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalAddr {
    /// The region.
    pub region: RegionId,
    /// Byte offset inside the region.
    pub offset: usize,
}

impl LocalAddr {
    /// Address `offset` of `region`.
    pub const fn new(region: RegionId, offset: usize) -> LocalAddr {
        LocalAddr { region, offset }
    }

    /// The address `delta` bytes further.
    pub const fn add(self, delta: usize) -> LocalAddr {
        LocalAddr {
            region: self.region,
            offset: self.offset + delta,
        }
    }
}

/// A byte address in a peer's region (the model's `remote_addr` + `rkey`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RemoteAddr {
    /// The process that owns the region.
    pub process: ProcessId,
    /// The region.
    pub region: RegionId,
    /// Byte offset inside the region.
    pub offset: usize,
}

impl RemoteAddr {
    /// Address `offset` of `region` at `process`.
    pub const fn new(process: ProcessId, region: RegionId, offset: usize) -> RemoteAddr {
        RemoteAddr {
            process,
            region,
            offset,
        }
    }

    /// The address `delta` bytes further.
    pub const fn add(self, delta: usize) -> RemoteAddr {
        RemoteAddr {
            offset: self.offset + delta,
            ..self
        }
    }
}

impl fmt::Display for RemoteAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}+{}", self.process, self.region, self.offset)
    }
}

/// The lengths of every process's regions, as exchanged at set-up (on real RDMA: the region
/// descriptors with their rkeys). Used to reject out-of-bounds ops at post time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionTable {
    lens: Vec<Vec<usize>>,
}

impl RegionTable {
    /// A table from each process's region declarations.
    pub fn new(specs: &[Vec<RegionSpec>]) -> RegionTable {
        RegionTable {
            lens: specs
                .iter()
                .map(|regions| regions.iter().map(|r| r.len).collect())
                .collect(),
        }
    }

    /// The number of processes.
    pub fn processes(&self) -> usize {
        self.lens.len()
    }

    /// The length of `region` at `process`, if both exist.
    pub fn len_of(&self, process: ProcessId, region: RegionId) -> Option<usize> {
        self.lens.get(process.index())?.get(region.index()).copied()
    }

    /// A digest of the table: two nodes of a run agree on the deployment iff their digests
    /// match (the tcp and verbs runtimes check it at connect).
    pub fn digest(&self) -> u64 {
        let mut h = crate::rng::mix64(self.processes() as u64);
        for (p, lens) in self.lens.iter().enumerate() {
            for (r, &len) in lens.iter().enumerate() {
                h = crate::rng::mix64(h ^ len as u64 ^ (r as u64) << 48 ^ (p as u64) << 32);
            }
            h = crate::rng::mix64(h ^ 0xE0D);
        }
        h
    }
}
