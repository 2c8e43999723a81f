//! Region images: the bytes a region starts with, built once and installed into the memory of
//! every process that starts from them ([`crate::Nic::install_image`]).
//!
//! Why: the replicas of a Heron partition start from the same database. TPC-C's population of
//! one warehouse is 75,000 rows in an 11 MB region; generating it and writing it row by row in
//! every replica took a third of a 16-partition simulation. An image is generated once per
//! partition; the simulator installs it by sharing its pages, copying a page only when a
//! process first writes into it. Other runtimes write its bytes.

use std::sync::Arc;

/// log2 of [`PAGE`].
pub(crate) const PAGE_SHIFT: u32 = 12;
/// Bytes of one page of an image, and of a paged region of the simulator's memory.
pub(crate) const PAGE: usize = 1 << PAGE_SHIFT;

/// Calls `each(page, offset in page, range of the span)` for every page `[offset, offset +
/// len)` touches, in order: the one walk of images and of the simulator's paged regions.
pub(crate) fn page_spans(
    offset: usize,
    len: usize,
    mut each: impl FnMut(usize, usize, std::ops::Range<usize>),
) {
    let mut at = offset;
    let end = offset + len;
    while at < end {
        let page = at >> PAGE_SHIFT;
        let within = at & (PAGE - 1);
        let take = (PAGE - within).min(end - at);
        each(page, within, at - offset..at - offset + take);
        at += take;
    }
}

/// The bytes of a region, in pages that clones and memories share; a page never written reads
/// as zero.
#[derive(Clone, Debug, Default)]
pub struct RegionImage {
    len: usize,
    pages: Vec<Option<Arc<[u8]>>>,
}

impl RegionImage {
    /// An image of `len` zero bytes.
    pub fn zeroed(len: usize) -> RegionImage {
        RegionImage {
            len,
            pages: vec![None; len.div_ceil(PAGE)],
        }
    }

    /// Bytes of the region it images.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it images an empty region.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes `data` at `offset` (a page shared with a clone is copied first).
    ///
    /// # Panics
    /// If the bytes do not fit in the image: an image is built from its owner's own layout.
    pub fn write(&mut self, offset: usize, data: &[u8]) {
        offset
            .checked_add(data.len())
            .filter(|&end| end <= self.len)
            .unwrap_or_else(|| {
                panic!(
                    "{} bytes at {offset} do not fit in an image of {} bytes",
                    data.len(),
                    self.len
                )
            });
        page_spans(offset, data.len(), |page, within, span| {
            let slot = &mut self.pages[page];
            if slot.as_mut().is_none_or(|p| Arc::get_mut(p).is_none()) {
                // Missing, or shared with a clone: this image's own copy.
                *slot = Some(match slot {
                    Some(p) => Arc::from(&p[..]),
                    None => vec![0; PAGE].into(),
                });
            }
            let bytes = Arc::get_mut(slot.as_mut().expect("made above")).expect("own");
            bytes[within..within + span.len()].copy_from_slice(&data[span]);
        });
    }

    /// The pages that hold bytes, as `(offset, bytes)` in offset order; the last page of a
    /// region whose length is not a multiple of the page size is cut to it.
    pub fn pages(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.pages.iter().enumerate().filter_map(|(i, p)| {
            let offset = i << PAGE_SHIFT;
            p.as_deref()
                .map(|bytes| (offset, &bytes[..PAGE.min(self.len - offset)]))
        })
    }

    /// The shared pages, one per [`PAGE`] bytes of the region (each [`PAGE`] bytes long).
    pub(crate) fn shared(&self) -> &[Option<Arc<[u8]>>] {
        &self.pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_read_back_across_pages_and_clones_do_not_see_later_writes() {
        let mut a = RegionImage::zeroed(PAGE * 2 + 100);
        a.write(PAGE - 2, &[1, 2, 3, 4]);
        let b = a.clone();
        a.write(PAGE * 2 + 99, &[9]);
        a.write(PAGE, &[7]);
        let flat = |img: &RegionImage| {
            let mut out = vec![0u8; img.len()];
            for (o, bytes) in img.pages() {
                out[o..o + bytes.len()].copy_from_slice(bytes);
            }
            out
        };
        let (fa, fb) = (flat(&a), flat(&b));
        assert_eq!(&fa[PAGE - 2..PAGE + 2], &[1, 2, 7, 4]);
        assert_eq!(fa[PAGE * 2 + 99], 9);
        assert_eq!(&fb[PAGE - 2..PAGE + 2], &[1, 2, 3, 4]);
        assert_eq!(fb[PAGE * 2 + 99], 0);
        assert_eq!(
            b.pages().count(),
            2,
            "the untouched third page holds nothing"
        );
        assert_eq!(a.pages().last().map(|(_, p)| p.len()), Some(100));
    }

    #[test]
    #[should_panic(expected = "do not fit")]
    fn a_write_past_the_end_is_refused() {
        RegionImage::zeroed(10).write(8, &[0; 3]);
    }
}
