//! Plain (single-threaded) memory of one process: its regions' bytes and access tables.
//!
//! Used by the simulator and the recording NIC. The local runtime has its own word-atomic shared
//! memory; both check bounds with the same [`crate::nic::check_bounds`] rules.

use crate::changes::Changes;
use crate::image::{page_spans, RegionImage, PAGE, PAGE_SHIFT};
use crate::nic::{Data, OpError};
use crate::process::ProcessId;
use crate::region::{Access, LocalAddr, RegionId, RegionSpec};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a region holds: its bytes, or (sparse) the payloads written into it by offset, never
/// overlapping; bytes no extent covers read as zero.
#[derive(Clone, Debug)]
enum Store {
    Dense(Pages),
    Sparse(BTreeMap<usize, Data>),
}

/// A dense region's bytes: one zeroed buffer up to [`Pages::FLAT_MAX`] bytes, above it pages
/// allocated on first write (a page never written reads as zero). Why pages for large
/// regions: Ridge's meshes declare a ring per ordered pair of processes (34 processes with
/// 64 KB slots declare over a gigabyte) and touch a few of them. A zeroed allocation maps the
/// kernel's zero page on the first read of an empty ring and copies it on the first write, a
/// fault that shoots down the TLBs of every thread running a figure's other points: half of
/// `figure ridge-fig1`'s wall time went to the kernel before pages. Why not pages for all:
/// the extra indirection on every word made RamCast's runs (small regions, read word by word)
/// 10% slower. A simulation speed-up only: the bytes read are the same.
#[derive(Clone, Debug)]
enum Pages {
    Flat(Vec<u8>),
    Paged(PageTable),
}

/// log2 of [`CHUNK_PAGES`].
const CHUNK_SHIFT: u32 = 6;
/// Pages per chunk of a [`PageTable`].
const CHUNK_PAGES: usize = 1 << CHUNK_SHIFT;

/// A paged region's pages, in chunks of [`CHUNK_PAGES`] made on the first write into one. Why
/// two levels: with one entry per page, a Ridge run with 64 KB slots (a 660 MB mesh inbox in
/// each of 315 processes) spent a third of its time allocating, faulting in and dropping about
/// 160,000 empty entries per process. The chunks' table is zeroed memory the kernel maps
/// lazily.
#[derive(Clone, Debug)]
struct PageTable(Vec<Option<Box<[Option<Page>; CHUNK_PAGES]>>>);

impl PageTable {
    fn new(pages: usize) -> PageTable {
        PageTable(vec![None; pages.div_ceil(CHUNK_PAGES)])
    }

    /// Page `page`, if it was ever written.
    fn get(&self, page: usize) -> Option<&Page> {
        self.0[page >> CHUNK_SHIFT].as_ref()?[page & (CHUNK_PAGES - 1)].as_ref()
    }

    /// Page `page`'s entry, its chunk made if missing.
    fn entry(&mut self, page: usize) -> &mut Option<Page> {
        let chunk = self.0[page >> CHUNK_SHIFT]
            .get_or_insert_with(|| Box::new([const { None }; CHUNK_PAGES]));
        &mut chunk[page & (CHUNK_PAGES - 1)]
    }
}

/// One page of a paged region: its own, or shared with a [`RegionImage`] it was installed
/// from until the first write into it copies it.
#[derive(Clone, Debug)]
enum Page {
    Own(Box<[u8]>),
    Shared(Arc<[u8]>),
}

impl Page {
    fn bytes(&self) -> &[u8] {
        match self {
            Page::Own(b) => b,
            Page::Shared(a) => a,
        }
    }

    /// The page's bytes to write into: a missing page is zeroed, a shared one copied.
    fn own(slot: &mut Option<Page>) -> &mut [u8] {
        if !matches!(slot, Some(Page::Own(_))) {
            let bytes = match slot {
                Some(Page::Shared(a)) => Box::from(&a[..]),
                _ => vec![0; PAGE].into_boxed_slice(),
            };
            *slot = Some(Page::Own(bytes));
        }
        match slot {
            Some(Page::Own(b)) => b,
            _ => unreachable!("made own above"),
        }
    }
}

impl Pages {
    /// The largest region kept in one buffer.
    const FLAT_MAX: usize = 1 << 20;

    fn new(len: usize) -> Pages {
        if len <= Self::FLAT_MAX {
            Pages::Flat(vec![0; len])
        } else {
            Self::paged(len)
        }
    }

    fn paged(len: usize) -> Pages {
        Pages::Paged(PageTable::new(len.div_ceil(PAGE)))
    }

    fn read(&self, offset: usize, buf: &mut [u8]) {
        match self {
            Pages::Flat(bytes) => buf.copy_from_slice(&bytes[offset..offset + buf.len()]),
            Pages::Paged(pages) => page_spans(offset, buf.len(), |page, within, span| {
                let out = &mut buf[span];
                match pages.get(page) {
                    Some(p) => out.copy_from_slice(&p.bytes()[within..within + out.len()]),
                    None => out.fill(0),
                }
            }),
        }
    }

    /// The aligned word at `offset` (no call into memcpy).
    fn word(&self, offset: usize) -> [u8; 8] {
        match self {
            Pages::Flat(bytes) => bytes[offset..offset + 8].try_into().expect("a word"),
            Pages::Paged(pages) => {
                let within = offset & (PAGE - 1);
                match pages.get(offset >> PAGE_SHIFT) {
                    Some(p) => p.bytes()[within..within + 8]
                        .try_into()
                        .expect("an aligned word"),
                    None => [0; 8],
                }
            }
        }
    }

    fn write(&mut self, offset: usize, data: &Data) {
        self.write_with(offset, data.len(), |from, out| data.copy_to(from, out));
    }

    fn write_bytes(&mut self, offset: usize, data: &[u8]) {
        self.write_with(offset, data.len(), |from, out| {
            out.copy_from_slice(&data[from..from + out.len()])
        });
    }

    /// Writes `len` bytes at `offset`, `fill(from, out)` copying the source's bytes from `from`
    /// on into `out`.
    fn write_with(&mut self, offset: usize, len: usize, fill: impl Fn(usize, &mut [u8])) {
        match self {
            Pages::Flat(bytes) => fill(0, &mut bytes[offset..offset + len]),
            Pages::Paged(pages) => page_spans(offset, len, |page, within, span| {
                let p = Page::own(pages.entry(page));
                fill(span.start, &mut p[within..within + span.len()]);
            }),
        }
    }

    /// Lays `image` (at most this region's length) over the start of the region: each page it
    /// holds replaces the region's; pages it never wrote are left as they are.
    fn install(&mut self, image: &RegionImage) {
        match self {
            Pages::Flat(_) => {
                for (offset, bytes) in image.pages() {
                    self.write_bytes(offset, bytes);
                }
            }
            Pages::Paged(pages) => {
                for (page, shared) in image.shared().iter().enumerate() {
                    if let Some(p) = shared {
                        *pages.entry(page) = Some(Page::Shared(p.clone()));
                    }
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
struct RegionMem {
    len: usize,
    store: Store,
    declared: Vec<Access>,
    access: Vec<Access>,
}

impl RegionMem {
    /// Extents overlapping `[start, end)`, as `(offset, data)`.
    fn overlapping(map: &BTreeMap<usize, Data>, start: usize, end: usize) -> Vec<(usize, Data)> {
        let first = map
            .range(..=start)
            .next_back()
            .filter(|(o, d)| **o + d.len() > start)
            .map(|(o, _)| *o)
            .unwrap_or(start);
        map.range(first..end)
            .map(|(o, d)| (*o, d.clone()))
            .collect()
    }

    fn write(&mut self, offset: usize, data: &Data) {
        match &mut self.store {
            Store::Dense(pages) => pages.write(offset, data),
            Store::Sparse(map) => {
                let end = offset + data.len();
                // Cut what the write overlaps, keeping the parts outside it.
                for (o, d) in Self::overlapping(map, offset, end) {
                    map.remove(&o);
                    if o < offset {
                        map.insert(o, d.window(0, offset - o));
                    }
                    if o + d.len() > end {
                        map.insert(end, d.window(end - o, o + d.len() - end));
                    }
                }
                if !data.is_empty() {
                    map.insert(offset, data.clone());
                }
            }
        }
    }

    fn read(&self, offset: usize, buf: &mut [u8]) {
        match &self.store {
            Store::Dense(pages) => pages.read(offset, buf),
            Store::Sparse(map) => {
                buf.fill(0);
                let end = offset + buf.len();
                for (o, d) in Self::overlapping(map, offset, end) {
                    let from = o.max(offset);
                    let to = (o + d.len()).min(end);
                    d.copy_to(from - o, &mut buf[from - offset..to - offset]);
                }
            }
        }
    }

    /// `[offset, offset + len)` as one payload: synthetic if sparse extents of one synthetic
    /// stream cover it contiguously, else bytes.
    fn data(&self, offset: usize, len: usize) -> Data {
        if let Store::Sparse(map) = &self.store {
            let end = offset + len;
            let parts = Self::overlapping(map, offset, end);
            let mut at = offset;
            let mut merged: Option<crate::payload::Synthetic> = None;
            let mut ok = len > 0;
            for (o, d) in &parts {
                let Data::Synthetic(s) = d else {
                    ok = false;
                    break;
                };
                let from = at.max(*o);
                if from != at || *o > at {
                    ok = false;
                    break;
                }
                let take = (o + d.len()).min(end) - from;
                let w = s.window((from - o) as u64, take as u64);
                merged = match merged {
                    None => Some(w),
                    Some(m) if m.seed == w.seed && m.start + m.len == w.start => {
                        Some(crate::payload::Synthetic {
                            len: m.len + w.len,
                            ..m
                        })
                    }
                    Some(_) => {
                        ok = false;
                        break;
                    }
                };
                at = from + take;
            }
            if ok && at == end {
                if let Some(m) = merged {
                    return Data::Synthetic(m);
                }
            }
        }
        let mut buf = vec![0; len];
        self.read(offset, &mut buf);
        Data::Bytes(buf.into())
    }
}

/// The regions of one process.
#[derive(Clone, Debug)]
pub struct Memory {
    owner: ProcessId,
    regions: Vec<RegionMem>,
    /// Every write since the last [`Memory::take_changes`].
    changes: Changes,
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
                        len: s.len,
                        store: if s.sparse {
                            Store::Sparse(BTreeMap::new())
                        } else {
                            Store::Dense(Pages::new(s.len))
                        },
                        declared: table.clone(),
                        access: table,
                    }
                })
                .collect(),
            changes: Changes::exact(),
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
            Some(end) if end <= r.len => Ok(end),
            _ => Err(OpError::OutOfBounds {
                process: self.owner,
                region,
                offset,
                len,
                region_len: r.len,
            }),
        }
    }

    /// A copy of all of `region`'s bytes (panics if it does not exist; for tests and reports).
    pub fn bytes(&self, region: RegionId) -> Vec<u8> {
        let r = &self.regions[region.index()];
        let mut buf = vec![0; r.len];
        r.read(0, &mut buf);
        buf
    }

    /// Copies `buf.len()` bytes at `at` into `buf`.
    pub fn read(&self, at: LocalAddr, buf: &mut [u8]) -> Result<(), OpError> {
        self.range(at.region, at.offset, buf.len())?;
        self.regions[at.region.index()].read(at.offset, buf);
        Ok(())
    }

    /// The `len` bytes at `at` as a payload (see [`crate::Nic::read_data`]).
    pub fn read_data(&self, at: LocalAddr, len: usize) -> Result<Data, OpError> {
        self.range(at.region, at.offset, len)?;
        Ok(self.regions[at.region.index()].data(at.offset, len))
    }

    /// Writes `data` at `at`.
    pub fn write(&mut self, at: LocalAddr, data: &[u8]) -> Result<(), OpError> {
        self.range(at.region, at.offset, data.len())?;
        match &mut self.regions[at.region.index()].store {
            Store::Dense(pages) => pages.write_bytes(at.offset, data),
            Store::Sparse(_) => {
                let data = Data::copied(data);
                self.regions[at.region.index()].write(at.offset, &data);
            }
        }
        self.changes.record(at.region, at.offset, data.len());
        Ok(())
    }

    /// Lays `image` over the start of `region` (see [`crate::Nic::install_image`]): each page
    /// the image holds is written, shared with the image until this memory first writes into
    /// it.
    pub fn install(&mut self, region: RegionId, image: &RegionImage) -> Result<(), OpError> {
        self.range(region, 0, image.len())?;
        let r = &mut self.regions[region.index()];
        match &mut r.store {
            Store::Dense(pages) => pages.install(image),
            Store::Sparse(_) => {
                for (offset, bytes) in image.pages() {
                    r.write(offset, &Data::copied(bytes));
                }
            }
        }
        for (offset, bytes) in image.pages() {
            self.changes.record(region, offset, bytes.len());
        }
        Ok(())
    }

    /// Writes a write op's payload at `at`.
    pub fn write_data(&mut self, at: LocalAddr, data: &Data) -> Result<(), OpError> {
        self.range(at.region, at.offset, data.len())?;
        self.regions[at.region.index()].write(at.offset, data);
        self.changes.record(at.region, at.offset, data.len());
        Ok(())
    }

    /// Moves the record of what was written since the last call into `into` (see
    /// [`crate::changes`]).
    pub fn take_changes(&mut self, into: &mut Changes) {
        self.changes.take_into(into);
    }

    /// Loads the aligned word at `at`.
    pub fn load_u64(&self, at: LocalAddr) -> Result<u64, OpError> {
        // The polling loops' hot path, one bounds check: a dense region, in bounds, aligned.
        if let Some(RegionMem {
            len,
            store: Store::Dense(pages),
            ..
        }) = self.regions.get(at.region.index())
        {
            if at.offset % 8 == 0 && at.offset < len.saturating_sub(7) {
                return Ok(u64::from_le_bytes(pages.word(at.offset)));
            }
        }
        if at.offset % 8 != 0 {
            return Err(OpError::Misaligned { offset: at.offset });
        }
        self.range(at.region, at.offset, 8)?;
        let mut w = [0u8; 8];
        self.regions[at.region.index()].read(at.offset, &mut w);
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

    /// Total bytes of all regions (as declared; sparse regions hold less).
    pub fn total_bytes(&self) -> usize {
        self.regions.iter().map(|r| r.len).sum()
    }
}

/// The [`crate::Nic`] methods that read a field or go to a [`Memory`] (`id`, `regions`, `rng`,
/// `limits`, `read_local`, `write_local`, `load_u64`, `store_u64`), for a NIC that keeps its
/// process id in a field `id`, the run's region table in `table`, its limits in `limits`, its
/// protocol stream in `rng` and its process's memory in `memory`: written once for the
/// recording NIC and the simulator's. Invoked inside the NIC's `impl Nic`, which adds what
/// differs between them (`now`, posting, draining).
macro_rules! memory_nic_methods {
    () => {
        fn id(&self) -> $crate::ProcessId {
            self.id
        }

        fn regions(&self) -> &$crate::RegionTable {
            &self.table
        }

        fn rng(&mut self) -> &mut $crate::Rng {
            &mut self.rng
        }

        fn limits(&self) -> $crate::NicLimits {
            self.limits
        }

        fn read_local(&self, at: $crate::LocalAddr, buf: &mut [u8]) -> Result<(), $crate::OpError> {
            self.memory.read(at, buf)
        }

        fn write_local(
            &mut self,
            at: $crate::LocalAddr,
            data: &[u8],
        ) -> Result<(), $crate::OpError> {
            self.memory.write(at, data)
        }

        fn load_u64(&self, at: $crate::LocalAddr) -> Result<u64, $crate::OpError> {
            self.memory.load_u64(at)
        }

        fn store_u64(&mut self, at: $crate::LocalAddr, value: u64) -> Result<(), $crate::OpError> {
            self.memory.store_u64(at, value)
        }
    };
}
pub(crate) use memory_nic_methods;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::Synthetic;
    use proptest::prelude::*;

    proptest! {
        /// Pages read back exactly what a flat zeroed buffer does, across page boundaries,
        /// whatever the order of writes (bytes and synthetic payloads) and reads, from an
        /// installed image or from zero; so does the flat form. Writes after an install never
        /// reach the image. Half the regions span two chunks of the page table, with the
        /// accesses around the chunks' boundary.
        #[test]
        fn pages_read_like_one_flat_buffer(
            paged: bool,
            two_chunks: bool,
            len in 1usize..(5 * PAGE),
            image_writes in prop::collection::vec((any::<usize>(), 0usize..(2 * PAGE), any::<u64>()), 0..4),
            ops in prop::collection::vec((any::<bool>(), any::<usize>(), 0usize..(2 * PAGE), any::<u64>()), 1..40),
        ) {
            let (len, around) = if two_chunks {
                (len + CHUNK_PAGES * PAGE, (CHUNK_PAGES - 2) * PAGE)
            } else {
                (len, 0)
            };
            let pick = |at: usize| (around + at % (6 * PAGE)) % len;
            let mut flat = vec![0u8; len];
            let mut pages = if paged { Pages::paged(len) } else { Pages::new(len) };
            let mut image = RegionImage::zeroed(len);
            for (at, n, seed) in image_writes {
                let at = pick(at);
                let bytes = Data::Synthetic(Synthetic::new(seed, n.min(len - at) as u64)).to_bytes();
                image.write(at, &bytes);
                flat[at..at + bytes.len()].copy_from_slice(&bytes);
            }
            let imaged = flat.clone();
            pages.install(&image);
            for (write, at, n, seed) in ops {
                let at = pick(at);
                let n = n.min(len - at);
                if write {
                    let data = Data::Synthetic(Synthetic::new(seed, n as u64));
                    data.copy_to(0, &mut flat[at..at + n]);
                    if seed % 2 == 0 {
                        pages.write(at, &data);
                    } else {
                        pages.write_bytes(at, &data.to_bytes());
                    }
                } else {
                    let mut got = vec![1u8; n];
                    pages.read(at, &mut got);
                    prop_assert_eq!(&got[..], &flat[at..at + n]);
                    let word = at & !7;
                    if word + 8 <= len {
                        prop_assert_eq!(&pages.word(word)[..], &flat[word..word + 8]);
                    }
                }
            }
            let mut all = vec![1u8; len];
            pages.read(0, &mut all);
            prop_assert_eq!(all, flat);
            let mut still = vec![0u8; len];
            for (at, bytes) in image.pages() {
                still[at..at + bytes.len()].copy_from_slice(bytes);
            }
            prop_assert_eq!(still, imaged);
        }
    }

    #[test]
    fn an_installed_image_reads_back_in_every_store_and_reports_its_pages_as_changed() {
        let len = 3 * PAGE + 10;
        let mut image = RegionImage::zeroed(len);
        image.write(PAGE - 3, b"abcdef");
        image.write(3 * PAGE + 2, b"xy");
        let specs = [
            RegionSpec::new(len),
            RegionSpec::new(len).sparse(),
            RegionSpec::new(Pages::FLAT_MAX + PAGE),
        ];
        let mut m = Memory::new(ProcessId(0), &specs, 1);
        for r in [RegionId(0), RegionId(1)] {
            m.write(LocalAddr::new(r, 2 * PAGE), b"kept").unwrap();
            m.install(r, &image).unwrap();
            let mut got = vec![0; len];
            m.read(LocalAddr::new(r, 0), &mut got).unwrap();
            assert_eq!(
                &got[2 * PAGE..2 * PAGE + 4],
                b"kept",
                "a page the image never wrote stays"
            );
            assert_eq!(&got[..4], [0; 4]);
            assert_eq!(&got[PAGE - 3..PAGE + 3], b"abcdef");
            assert_eq!(&got[3 * PAGE..], b"\0\0xy\0\0\0\0\0\0");
        }
        let mut changes = Changes::exact();
        m.take_changes(&mut changes);
        let imaged: Vec<_> = changes
            .extents()
            .iter()
            .filter(|e| e.len > 4)
            .map(|e| (e.offset, e.len))
            .collect();
        assert_eq!(imaged, [(0, PAGE), (PAGE, PAGE), (3 * PAGE, 10)].repeat(2));
        // A larger region takes the image at its start; a smaller one refuses it.
        m.install(RegionId(2), &image).unwrap();
        let mut got = [0; 6];
        m.read(LocalAddr::new(RegionId(2), PAGE - 3), &mut got)
            .unwrap();
        assert_eq!(&got, b"abcdef");
        let mut small = Memory::new(ProcessId(0), &[RegionSpec::new(len - 1)], 1);
        assert!(matches!(
            small.install(RegionId(0), &image),
            Err(OpError::OutOfBounds { .. })
        ));
        // An empty image (an application without objects) fits any region.
        small.install(RegionId(0), &RegionImage::zeroed(0)).unwrap();
    }

    #[test]
    fn sparse_regions_read_like_dense_ones_and_keep_synthetic_payloads_synthetic() {
        let spec = RegionSpec::new(100);
        let mut dense = Memory::new(ProcessId(0), std::slice::from_ref(&spec), 1);
        let mut sparse = Memory::new(ProcessId(0), &[spec.sparse()], 1);
        let s = Synthetic::new(9, 100);
        let at = |o: usize| LocalAddr::new(RegionId(0), o);
        // Blocks of one stream out of order, an overlapping byte write, a rewrite.
        for m in [&mut dense, &mut sparse] {
            m.write_data(at(40), &Data::Synthetic(s.window(40, 30)))
                .unwrap();
            m.write_data(at(0), &Data::Synthetic(s.window(0, 40)))
                .unwrap();
            m.write_data(at(70), &Data::Synthetic(s.window(70, 30)))
                .unwrap();
            m.write(at(10), b"hello").unwrap();
            m.write_data(at(70), &Data::Synthetic(s.window(70, 30)))
                .unwrap();
        }
        let mut a = vec![0; 100];
        let mut b = vec![0; 100];
        dense.read(at(0), &mut a).unwrap();
        sparse.read(at(0), &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(&b[10..15], b"hello");
        // Past the byte write, the stream comes back as one synthetic payload.
        assert_eq!(
            sparse.read_data(at(15), 85).unwrap(),
            Data::Synthetic(s.window(15, 85))
        );
        // Across the byte write it is bytes, equal to the dense region's.
        assert_eq!(sparse.read_data(at(0), 100).unwrap().to_bytes(), a);
        assert!(sparse.read_data(at(90), 20).is_err());
    }
}
