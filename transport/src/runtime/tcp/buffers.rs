//! A connection's buffers. The socket reads straight into [`ReadBuf`] and frames are decoded
//! where they landed, so a payload is copied once between the kernel and the target region;
//! [`WriteQueue`] sends large payloads from the buffers the process posted (vectored writes),
//! so a posted write is not copied before the kernel takes it.

use bytes::Bytes;
use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};

/// What one read asks the socket for at least: large enough that a stream of small frames
/// arrives in few system calls, small enough to keep idle connections cheap.
const READ_AT_LEAST: usize = 64 * 1024;

/// Received bytes not yet consumed: `buf[start..end]`. `buf` only ever grows (to the largest
/// frame the peer sent plus one read), and bytes move to its front only when the free space at
/// its end runs short, so a half-received megabyte frame is never shifted per read.
#[derive(Debug, Default)]
pub(super) struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl ReadBuf {
    /// The bytes received and not consumed.
    pub(super) fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Whether every received byte has been consumed.
    pub(super) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Drops the first `n` unconsumed bytes.
    pub(super) fn consume(&mut self, n: usize) {
        assert!(n <= self.end - self.start, "consumed more than received");
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// One read from `from` into the free space (made if short); `Ok(0)` is the peer's close.
    pub(super) fn fill(&mut self, from: &mut impl Read) -> io::Result<usize> {
        if self.buf.len() - self.end < READ_AT_LEAST {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() - self.end < READ_AT_LEAST {
                self.buf.resize(self.end + READ_AT_LEAST.max(self.end), 0);
            }
        }
        let n = from.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }
}

/// Segments one vectored write hands the kernel at most.
const IOVECS: usize = 64;

/// One run of queued bytes: encoded frames, or a payload shared with the op that posted it.
#[derive(Debug)]
enum Segment {
    Own(Vec<u8>),
    Shared(Bytes),
}

impl Segment {
    fn bytes(&self) -> &[u8] {
        match self {
            Segment::Own(v) => v,
            Segment::Shared(b) => b,
        }
    }
}

/// Bytes queued for a socket, in order: frames encoded into owned buffers, large payloads
/// referenced where the process put them.
#[derive(Debug, Default)]
pub(super) struct WriteQueue {
    segments: VecDeque<Segment>,
    /// Bytes of the front segment already written.
    head: usize,
    /// Bytes queued and not yet written.
    queued: usize,
    /// Bytes written since the connection opened.
    sent: u64,
}

impl WriteQueue {
    /// Bytes queued and not yet written.
    pub(super) fn backlog(&self) -> usize {
        self.queued
    }

    /// Bytes written since the connection opened.
    pub(super) fn sent(&self) -> u64 {
        self.sent
    }

    /// Appends bytes by hand to the queue's tail (`fill` writes into the buffer it is given).
    pub(super) fn append(&mut self, fill: impl FnOnce(&mut Vec<u8>)) {
        if !matches!(self.segments.back(), Some(Segment::Own(_))) {
            self.segments.push_back(Segment::Own(Vec::new()));
        }
        let Some(Segment::Own(tail)) = self.segments.back_mut() else {
            unreachable!("an owned tail was just ensured")
        };
        let before = tail.len();
        fill(tail);
        self.queued += tail.len() - before;
    }

    /// Queues `payload` without copying it.
    pub(super) fn share(&mut self, payload: Bytes) {
        self.queued += payload.len();
        self.segments.push_back(Segment::Shared(payload));
    }

    /// One vectored write of at most `limit` queued bytes; returns how many the socket took.
    pub(super) fn write_to(&mut self, to: &mut impl Write, limit: usize) -> io::Result<usize> {
        let mut slices = [IoSlice::new(&[]); IOVECS];
        let mut count = 0;
        let mut room = limit.min(self.queued);
        for (i, seg) in self.segments.iter().enumerate().take(IOVECS) {
            if room == 0 {
                break;
            }
            let bytes = &seg.bytes()[if i == 0 { self.head } else { 0 }..];
            let take = bytes.len().min(room);
            slices[count] = IoSlice::new(&bytes[..take]);
            count += 1;
            room -= take;
        }
        if count == 0 {
            return Ok(0);
        }
        let n = to.write_vectored(&slices[..count])?;
        self.advance(n);
        Ok(n)
    }

    /// Drops `n` written bytes off the front. The last owned buffer is kept for reuse.
    fn advance(&mut self, mut n: usize) {
        self.queued -= n;
        self.sent += n as u64;
        while n > 0 {
            let front = self
                .segments
                .front()
                .expect("advanced past the queue")
                .bytes();
            let left = front.len() - self.head;
            if n < left {
                self.head += n;
                return;
            }
            n -= left;
            self.head = 0;
            if self.segments.len() == 1 {
                if let Some(Segment::Own(v)) = self.segments.front_mut() {
                    v.clear();
                    return;
                }
            }
            self.segments.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out its bytes a few at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.1.min(self.0.len()).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn bytes_come_out_in_order_across_reads_and_compactions() {
        let input: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut src = Trickle(&input, 70_000);
        let mut b = ReadBuf::default();
        let mut out = Vec::new();
        loop {
            let n = b.fill(&mut src).unwrap();
            if n == 0 {
                break;
            }
            // Consume all but a ragged remainder, as a decoder leaves a half frame.
            let keep = b.data().len() % 1_000;
            let take = b.data().len() - keep;
            out.extend_from_slice(&b.data()[..take]);
            b.consume(take);
            assert!(b.buf.len() <= 4 * READ_AT_LEAST, "grew to {}", b.buf.len());
        }
        out.extend_from_slice(b.data());
        assert_eq!(out, input);
    }

    #[test]
    fn a_large_frame_is_held_whole() {
        let input = vec![9u8; 3 << 20];
        let mut src = Trickle(&input, 100_000);
        let mut b = ReadBuf::default();
        while b.fill(&mut src).unwrap() > 0 {}
        assert_eq!(b.data().len(), input.len());
        b.consume(input.len());
        assert!(b.is_empty());
    }

    /// A writer that takes at most `max` bytes per call.
    struct Narrow(Vec<u8>, usize);

    impl Write for Narrow {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let n = b.len().min(self.1);
            self.0.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            let mut n = 0;
            for b in bufs {
                let k = self.write(&b[..b.len().min(self.1 - n)])?;
                n += k;
                if n == self.1 {
                    break;
                }
            }
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn queued_bytes_leave_in_order_whatever_the_socket_takes() {
        let mut q = WriteQueue::default();
        let mut expect = Vec::new();
        for i in 0..200u32 {
            let frame: Vec<u8> = (0..(i % 37)).map(|k| (k + i) as u8).collect();
            q.append(|v| v.extend_from_slice(&frame));
            expect.extend_from_slice(&frame);
            if i % 3 == 0 {
                let payload = Bytes::from(vec![i as u8; (i as usize * 131) % 5000]);
                expect.extend_from_slice(&payload);
                q.share(payload);
            }
        }
        assert_eq!(q.backlog(), expect.len());
        let mut out = Narrow(Vec::new(), 777);
        let mut limit = 1;
        while q.backlog() > 0 {
            // The fault layer's limit too may cut a write anywhere.
            let n = q.write_to(&mut out, limit).unwrap();
            assert!(n <= limit);
            limit = limit * 3 % 10_007 + 1;
        }
        assert_eq!(out.0, expect);
        assert_eq!(q.sent(), expect.len() as u64);
        assert_eq!(q.write_to(&mut out, 100).unwrap(), 0);
    }
}
