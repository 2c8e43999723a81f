//! Plain (single-threaded) memory of one process: its regions' bytes and access tables.
//!
//! Used by the simulator and the recording NIC. The local runtime has its own word-atomic shared
//! memory; both check bounds with the same [`crate::nic::check_bounds`] rules.

use crate::nic::{Data, OpError};
use crate::process::ProcessId;
use crate::region::{Access, LocalAddr, RegionId, RegionSpec};

#[derive(Clone, Debug)]
struct RegionMem {
    bytes: Vec<u8>,
    declared: Vec<Access>,
    access: Vec<Access>,
}

/// The regions of one process.
#[derive(Clone, Debug)]
pub struct Memory {
    owner: ProcessId,
    regions: Vec<RegionMem>,
}

impl Memory {
    /// Zeroed regions as declared by `specs`, for a run of `processes` processes.
    pub fn new(owner: ProcessId, specs: &[RegionSpec], processes: usize) -> Memory {
        Memory {
            owner,
            regions: specs
                .iter()
                .map(|s| {
                    let table = s.access_table(processes);
                    RegionMem {
                        bytes: vec![0; s.len],
                        declared: table.clone(),
                        access: table,
                    }
                })
                .collect(),
        }
    }

    fn range(&self, region: RegionId, offset: usize, len: usize) -> Result<usize, OpError> {
        let r = self
            .regions
            .get(region.index())
            .ok_or(OpError::UnknownRegion {
                process: self.owner,
                region,
            })?;
        match offset.checked_add(len) {
            Some(end) if end <= r.bytes.len() => Ok(end),
            _ => Err(OpError::OutOfBounds {
                process: self.owner,
                region,
                offset,
                len,
                region_len: r.bytes.len(),
            }),
        }
    }

    /// The bytes of `region` (panics if it does not exist; for tests and reports).
    pub fn bytes(&self, region: RegionId) -> &[u8] {
        &self.regions[region.index()].bytes
    }

    /// Copies `buf.len()` bytes at `at` into `buf`.
    pub fn read(&self, at: LocalAddr, buf: &mut [u8]) -> Result<(), OpError> {
        let end = self.range(at.region, at.offset, buf.len())?;
        buf.copy_from_slice(&self.regions[at.region.index()].bytes[at.offset..end]);
        Ok(())
    }

    /// Writes `data` at `at`.
    pub fn write(&mut self, at: LocalAddr, data: &[u8]) -> Result<(), OpError> {
        let end = self.range(at.region, at.offset, data.len())?;
        self.regions[at.region.index()].bytes[at.offset..end].copy_from_slice(data);
        Ok(())
    }

    /// Writes a write op's payload at `at`.
    pub fn write_data(&mut self, at: LocalAddr, data: &Data) -> Result<(), OpError> {
        let end = self.range(at.region, at.offset, data.len())?;
        data.copy_to(
            0,
            &mut self.regions[at.region.index()].bytes[at.offset..end],
        );
        Ok(())
    }

    /// Loads the aligned word at `at`.
    pub fn load_u64(&self, at: LocalAddr) -> Result<u64, OpError> {
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        let mut w = [0u8; 8];
        self.read(at, &mut w)?;
        Ok(u64::from_le_bytes(w))
    }

    /// Stores the aligned word at `at`.
    pub fn store_u64(&mut self, at: LocalAddr, value: u64) -> Result<(), OpError> {
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        self.write(at, &value.to_le_bytes())
    }

    /// The access `peer` has to `region` now.
    pub fn access(&self, region: RegionId, peer: ProcessId) -> Access {
        self.regions
            .get(region.index())
            .and_then(|r| r.access.get(peer.index()).copied())
            .unwrap_or(Access::None)
    }

    /// Sets `peer`'s access to `region`.
    pub fn set_access(
        &mut self,
        region: RegionId,
        peer: ProcessId,
        access: Access,
    ) -> Result<(), OpError> {
        self.range(region, 0, 0)?;
        if let Some(a) = self.regions[region.index()].access.get_mut(peer.index()) {
            *a = access;
        }
        Ok(())
    }

    /// Restores `peer`'s access to `region` to what the region declared at start.
    pub fn restore_access(&mut self, region: RegionId, peer: ProcessId) {
        if let Some(r) = self.regions.get_mut(region.index()) {
            if let (Some(a), Some(d)) =
                (r.access.get_mut(peer.index()), r.declared.get(peer.index()))
            {
                *a = *d;
            }
        }
    }

    /// Number of regions.
    pub fn region_count(&self) -> usize {
        self.regions.len()
    }

    /// Total bytes of all regions.
    pub fn total_bytes(&self) -> usize {
        self.regions.iter().map(|r| r.bytes.len()).sum()
    }
}
