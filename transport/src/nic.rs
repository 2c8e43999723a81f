//! What a process sees of its RDMA NIC and its own memory: the [`Nic`] trait, the [`Op`] values
//! it accepts, and the [`Completion`]s and [`Recv`]s it returns.

use crate::changes::Changes;
use crate::image::RegionImage;
use crate::payload::Synthetic;
use crate::process::ProcessId;
use crate::region::{Access, LocalAddr, RegionId, RegionTable, RemoteAddr};
use crate::rng::Rng;
use crate::time::Nanos;
use bytes::Bytes;
use std::fmt;

/// Identifies a posted op; returned by every `post_*` and echoed in its [`Completion`].
///
/// Every runtime issues a NIC's ids in increasing order, so an id also says which of two ops
/// was posted first: a protocol tells the failure of an op posted before a reconnect (its
/// queue pair already replaced) from one posted after.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WrId(pub u64);

/// The bytes a write or send carries. Two payloads are equal when they carry the same bytes,
/// held in place or in a buffer alike (a synthetic payload equals only the same descriptor).
#[derive(Clone, Debug, Eq)]
pub enum Data {
    /// Real bytes.
    Bytes(Bytes),
    /// A few bytes held in place (acknowledgements, timestamps, heartbeats): most ops of the
    /// ordering protocols are this small, and a copy into a heap buffer per op cost the
    /// simulator more than the op itself.
    Inline(Inline),
    /// Bytes regenerated from a seed; see [`crate::payload`].
    Synthetic(Synthetic),
}

impl Data {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Data::Bytes(b) => b.len(),
            Data::Inline(i) => i.len(),
            Data::Synthetic(s) => s.len as usize,
        }
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes `[offset, offset + out.len())`.
    pub fn copy_to(&self, offset: usize, out: &mut [u8]) {
        match self {
            Data::Bytes(b) => out.copy_from_slice(&b[offset..offset + out.len()]),
            Data::Inline(i) => out.copy_from_slice(&i[offset..offset + out.len()]),
            Data::Synthetic(s) => s.fill(offset as u64, out),
        }
    }

    /// The bytes `[offset, offset + len)` as a payload of their own (a synthetic payload stays
    /// synthetic).
    pub fn window(&self, offset: usize, len: usize) -> Data {
        match self {
            Data::Bytes(b) => Data::Bytes(b.slice(offset..offset + len)),
            Data::Inline(i) => Data::copied(&i[offset..offset + len]),
            Data::Synthetic(s) => Data::Synthetic(s.window(offset as u64, len as u64)),
        }
    }

    /// The payload as contiguous bytes (materialises a synthetic payload).
    pub fn to_bytes(&self) -> Bytes {
        match self {
            Data::Bytes(b) => b.clone(),
            Data::Inline(i) => Bytes::copy_from_slice(i),
            Data::Synthetic(s) => Bytes::from(s.to_vec()),
        }
    }

    /// A copy of `data`: held in place if it fits [`Inline::CAPACITY`], else in a buffer of
    /// its own.
    pub fn copied(data: &[u8]) -> Data {
        match Inline::new(data) {
            Some(i) => Data::Inline(i),
            None => Data::Bytes(Bytes::copy_from_slice(data)),
        }
    }
}

/// Up to [`Inline::CAPACITY`] bytes stored in the value itself, without an allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Inline {
    len: u8,
    bytes: [u8; Inline::CAPACITY],
}

impl Inline {
    /// The most bytes held in place: a slot-codec entry of 16 payload bytes (RamCast's `T`
    /// entries), and every single word.
    pub const CAPACITY: usize = 32;

    /// `data` held in place, or `None` if it is longer than [`Inline::CAPACITY`].
    pub fn new(data: &[u8]) -> Option<Inline> {
        let mut bytes = [0; Inline::CAPACITY];
        bytes.get_mut(..data.len())?.copy_from_slice(data);
        Some(Inline {
            len: data.len() as u8,
            bytes,
        })
    }
}

impl std::ops::Deref for Inline {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl fmt::Debug for Inline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Inline").field(&&self[..]).finish()
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        match (self, other) {
            (Data::Synthetic(a), Data::Synthetic(b)) => a == b,
            (Data::Synthetic(_), _) | (_, Data::Synthetic(_)) => false,
            (a, b) => a.held() == b.held(),
        }
    }
}

impl Data {
    /// The bytes of a payload held in memory (`None` for a synthetic one).
    fn held(&self) -> Option<&[u8]> {
        match self {
            Data::Bytes(b) => Some(b),
            Data::Inline(i) => Some(i),
            Data::Synthetic(_) => None,
        }
    }
}

impl From<Bytes> for Data {
    fn from(b: Bytes) -> Data {
        Data::Bytes(b)
    }
}

impl From<Synthetic> for Data {
    fn from(s: Synthetic) -> Data {
        Data::Synthetic(s)
    }
}

/// Which of the two queue pairs to a peer carries an op.
///
/// Every process holds two RC queue pairs to each peer. Ops of one queue pair land in post order;
/// ops of different queue pairs are not ordered with each other, and the NIC schedules queue
/// pairs per packet, so a small write on [`Qp::Control`] never waits behind the bulk data queued
/// on [`Qp::Data`]. This is how failure detectors keep heartbeats timely under load (Mu and
/// APUS use a separate queue pair for the same reason). A reconnect re-establishes both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Qp {
    /// The queue pair of a protocol's data and everything not marked otherwise.
    #[default]
    Data,
    /// A second queue pair for small, latency-critical writes (heartbeats).
    Control,
}

impl Qp {
    /// Queue pairs to each peer.
    pub const COUNT: usize = 2;

    /// The index of this queue pair among a peer's [`Qp::COUNT`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Flags of a one-sided write, as `ibv_send_flags`, and the queue pair it goes on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WriteFlags {
    /// Report a completion on success (failures are always reported).
    pub signaled: bool,
    /// Copy the payload into the work request; allowed up to [`NicLimits::inline_max`] bytes and
    /// saves the NIC's DMA read of the source buffer.
    pub inline: bool,
    /// The queue pair to the peer that carries the write.
    pub qp: Qp,
}

impl WriteFlags {
    /// Unsignaled, not inline, on the data queue pair.
    pub const NONE: WriteFlags = WriteFlags {
        signaled: false,
        inline: false,
        qp: Qp::Data,
    };
    /// Signaled, not inline, on the data queue pair.
    pub const SIGNALED: WriteFlags = WriteFlags {
        signaled: true,
        inline: false,
        qp: Qp::Data,
    };

    /// These flags with `inline` set.
    pub const fn inline(self) -> WriteFlags {
        WriteFlags {
            inline: true,
            ..self
        }
    }

    /// These flags with `inline` set if a payload of `len` bytes fits the NIC's
    /// [`NicLimits::inline_max`]: what every writer does to spare the NIC a DMA read of its
    /// buffer wherever the payload allows it.
    pub const fn inline_if_fits(self, len: usize, limits: NicLimits) -> WriteFlags {
        WriteFlags {
            inline: self.inline || len <= limits.inline_max,
            ..self
        }
    }

    /// These flags with `signaled` set.
    pub const fn signaled(self) -> WriteFlags {
        WriteFlags {
            signaled: true,
            ..self
        }
    }

    /// These flags on queue pair `qp`.
    pub const fn on(self, qp: Qp) -> WriteFlags {
        WriteFlags { qp, ..self }
    }
}

/// One effect a process asks of its NIC. Every op is recorded as a value before anything happens:
/// the simulator prices it, checkers observe it, unit tests assert on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// One-sided write into a peer's region; with `imm`, the peer also receives
    /// [`Recv::Immediate`] (RDMA write-with-immediate).
    Write {
        /// Target address.
        dst: RemoteAddr,
        /// The bytes written.
        data: Data,
        /// Immediate value delivered to the target, if any.
        imm: Option<u32>,
        /// Signaling and inlining.
        flags: WriteFlags,
    },
    /// One-sided read of `len` bytes of a peer's region into one of the caller's regions.
    Read {
        /// Source address at the peer.
        src: RemoteAddr,
        /// Bytes to read.
        len: usize,
        /// Where the bytes land locally.
        into: LocalAddr,
        /// Report a completion on success.
        signaled: bool,
    },
    /// Atomic compare-and-swap of an aligned 8-byte word; the completion carries the old value.
    CompareSwap {
        /// Target word (8-byte aligned).
        dst: RemoteAddr,
        /// Expected current value.
        expect: u64,
        /// Value stored if the current value equals `expect`.
        swap: u64,
    },
    /// Atomic fetch-and-add of an aligned 8-byte word; the completion carries the old value.
    FetchAdd {
        /// Target word (8-byte aligned).
        dst: RemoteAddr,
        /// Added (wrapping) to the word.
        add: u64,
    },
    /// Two-sided send: the peer receives [`Recv::Message`].
    Send {
        /// Receiver.
        to: ProcessId,
        /// Message bytes.
        data: Bytes,
        /// Report a completion on success.
        signaled: bool,
    },
    /// Changes the access `peer` has to one of the caller's regions. Takes effect before the
    /// call returns: no op of `peer` that lands later sees the old access.
    SetAccess {
        /// The caller's region.
        region: RegionId,
        /// The peer whose access changes.
        peer: ProcessId,
        /// The new access.
        access: Access,
    },
    /// Re-establishes the queue pair to `peer` after an error; completes with [`OpKind::Reconnect`].
    Reconnect {
        /// The peer.
        peer: ProcessId,
    },
}

impl Op {
    /// The kind of op, as reported in completions.
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Write { imm: None, .. } => OpKind::Write,
            Op::Write { imm: Some(_), .. } => OpKind::WriteImm,
            Op::Read { .. } => OpKind::Read,
            Op::CompareSwap { .. } => OpKind::CompareSwap,
            Op::FetchAdd { .. } => OpKind::FetchAdd,
            Op::Send { .. } => OpKind::Send,
            Op::SetAccess { .. } => OpKind::SetAccess,
            Op::Reconnect { .. } => OpKind::Reconnect,
        }
    }

    /// The region, peer and new access of an access change (`SetAccess`), which every runtime
    /// applies to its own memory when the op is posted; `None` for every other op.
    pub fn access_change(&self) -> Option<(RegionId, ProcessId, Access)> {
        match *self {
            Op::SetAccess {
                region,
                peer,
                access,
            } => Some((region, peer, access)),
            _ => None,
        }
    }

    /// The remote process the op targets (the caller itself for `SetAccess`: it is local).
    pub fn peer(&self) -> ProcessId {
        match self {
            Op::Write { dst, .. } | Op::CompareSwap { dst, .. } | Op::FetchAdd { dst, .. } => {
                dst.process
            }
            Op::Read { src, .. } => src.process,
            Op::Send { to, .. } => *to,
            Op::SetAccess { peer, .. } | Op::Reconnect { peer } => *peer,
        }
    }

    /// The queue pair that carries the op: writes choose theirs, everything else goes on
    /// [`Qp::Data`].
    pub fn qp(&self) -> Qp {
        match self {
            Op::Write { flags, .. } => flags.qp,
            _ => Qp::Data,
        }
    }

    /// Whether a successful op reports a completion (failures always do).
    pub fn signaled(&self) -> bool {
        match self {
            Op::Write { flags, .. } => flags.signaled,
            Op::Read { signaled, .. } | Op::Send { signaled, .. } => *signaled,
            Op::CompareSwap { .. } | Op::FetchAdd { .. } | Op::Reconnect { .. } => true,
            Op::SetAccess { .. } => false,
        }
    }

    /// Bytes the op moves over the wire towards the peer.
    pub fn wire_bytes(&self) -> usize {
        match self {
            Op::Write { data, .. } => data.len(),
            Op::Send { data, .. } => data.len(),
            Op::CompareSwap { .. } | Op::FetchAdd { .. } => 8,
            Op::Read { .. } | Op::SetAccess { .. } | Op::Reconnect { .. } => 0,
        }
    }
}

/// The kind of a completed op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    /// [`Op::Write`] without immediate.
    Write,
    /// [`Op::Write`] with immediate.
    WriteImm,
    /// [`Op::Read`].
    Read,
    /// [`Op::CompareSwap`].
    CompareSwap,
    /// [`Op::FetchAdd`].
    FetchAdd,
    /// [`Op::Send`].
    Send,
    /// [`Op::SetAccess`] (never completes; local and synchronous).
    SetAccess,
    /// [`Op::Reconnect`].
    Reconnect,
}

/// How an op ended, as a work completion's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// The op took effect.
    Success,
    /// The peer had not granted the needed access when the op arrived (remote access error).
    /// The queue pair to that peer is now in error until [`Nic::reconnect`].
    AccessDenied,
    /// The peer did not answer (crashed, or its NIC is gone); the op had no effect.
    PeerUnreachable,
    /// The queue pair to the peer was in error when the op reached the front of it; the op had
    /// no effect. Reconnect, then repost.
    Flushed,
}

/// A work completion: reported for every signaled op, and for every failed op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The op's id.
    pub wr: WrId,
    /// The op's kind.
    pub kind: OpKind,
    /// The peer the op targeted.
    pub peer: ProcessId,
    /// How it ended.
    pub status: Status,
    /// The old value, for successful atomics.
    pub value: Option<u64>,
}

/// Something a peer delivered to the caller's receive queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recv {
    /// A two-sided message.
    Message {
        /// Sender.
        from: ProcessId,
        /// Bytes.
        data: Bytes,
    },
    /// The immediate of a write-with-immediate whose bytes have already landed.
    Immediate {
        /// Writer.
        from: ProcessId,
        /// The immediate value.
        imm: u32,
        /// Where the write landed.
        at: LocalAddr,
        /// How many bytes it wrote.
        len: usize,
    },
}

/// Limits of the (real or modelled) NIC a process may ask about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NicLimits {
    /// The largest payload a write may carry inline.
    pub inline_max: usize,
    /// The largest two-sided message.
    pub send_max: usize,
}

impl Default for NicLimits {
    fn default() -> Self {
        NicLimits {
            inline_max: 256,
            send_max: 1 << 20,
        }
    }
}

/// Why an op or memory access was rejected before anything happened. Nothing is modified when
/// one of these is returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    /// The target process does not exist in this run.
    #[error("{peer} does not exist (the run has {processes} processes)")]
    UnknownProcess {
        /// The process named.
        peer: ProcessId,
        /// Processes in the run.
        processes: usize,
    },
    /// The region does not exist at that process.
    #[error("{process} has no region {region}")]
    UnknownRegion {
        /// The owner named.
        process: ProcessId,
        /// The region named.
        region: RegionId,
    },
    /// The access would touch bytes outside the region.
    #[error("{process}:{region} bytes {offset}..{end} are outside the region of {region_len} bytes", end = offset + len)]
    OutOfBounds {
        /// The owner.
        process: ProcessId,
        /// The region.
        region: RegionId,
        /// First byte.
        offset: usize,
        /// Bytes accessed.
        len: usize,
        /// The region's length.
        region_len: usize,
    },
    /// Atomics and word accesses need an 8-byte-aligned offset.
    #[error("offset {offset} is not 8-byte aligned, as atomics and word accesses require")]
    Misaligned {
        /// The offset given.
        offset: usize,
    },
    /// An inline write larger than the NIC's inline limit.
    #[error("inline write of {len} bytes exceeds the NIC's inline limit of {max} bytes; post it without the inline flag")]
    InlineTooLarge {
        /// Payload length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A send larger than the largest two-sided message.
    #[error("send of {len} bytes exceeds the largest message of {max} bytes")]
    SendTooLarge {
        /// Message length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The calling process has crashed (fault injection); it can do nothing. The tcp and verbs
    /// runtimes return it; the simulator and the local runtime take a crashed process's posts
    /// and drop them (it is never polled again, so it cannot tell).
    #[error("the process has crashed")]
    Crashed,
}

/// Checks that `len` bytes at `offset` of `region` at `process` exist.
pub fn check_bounds(
    table: &RegionTable,
    process: ProcessId,
    region: RegionId,
    offset: usize,
    len: usize,
) -> Result<(), OpError> {
    if process.index() >= table.processes() {
        return Err(OpError::UnknownProcess {
            peer: process,
            processes: table.processes(),
        });
    }
    let region_len = table
        .len_of(process, region)
        .ok_or(OpError::UnknownRegion { process, region })?;
    match offset.checked_add(len) {
        Some(end) if end <= region_len => Ok(()),
        _ => Err(OpError::OutOfBounds {
            process,
            region,
            offset,
            len,
            region_len,
        }),
    }
}

fn check_aligned(offset: usize) -> Result<(), OpError> {
    if offset % 8 == 0 {
        Ok(())
    } else {
        Err(OpError::Misaligned { offset })
    }
}

/// Validates `op`, posted by `me`, against the region table and NIC limits. Every runtime calls
/// this before accepting an op, so all reject exactly the same ops with the same errors.
pub fn validate(
    op: &Op,
    me: ProcessId,
    table: &RegionTable,
    limits: &NicLimits,
) -> Result<(), OpError> {
    match op {
        Op::Write {
            dst, data, flags, ..
        } => {
            if flags.inline && data.len() > limits.inline_max {
                return Err(OpError::InlineTooLarge {
                    len: data.len(),
                    max: limits.inline_max,
                });
            }
            check_bounds(table, dst.process, dst.region, dst.offset, data.len())
        }
        Op::Read { src, len, into, .. } => {
            check_bounds(table, src.process, src.region, src.offset, *len)?;
            check_bounds(table, me, into.region, into.offset, *len)
        }
        Op::CompareSwap { dst, .. } | Op::FetchAdd { dst, .. } => {
            check_aligned(dst.offset)?;
            check_bounds(table, dst.process, dst.region, dst.offset, 8)
        }
        Op::Send { to, data, .. } => {
            check_peer(table, *to)?;
            if data.len() > limits.send_max {
                return Err(OpError::SendTooLarge {
                    len: data.len(),
                    max: limits.send_max,
                });
            }
            Ok(())
        }
        Op::SetAccess { region, peer, .. } => {
            check_peer(table, *peer)?;
            check_bounds(table, me, *region, 0, 0)
        }
        Op::Reconnect { peer } => check_peer(table, *peer),
    }
}

fn check_peer(table: &RegionTable, peer: ProcessId) -> Result<(), OpError> {
    if peer.index() < table.processes() {
        Ok(())
    } else {
        Err(OpError::UnknownProcess {
            peer,
            processes: table.processes(),
        })
    }
}

/// A process's view of its RDMA NIC and its own memory, implemented by every runtime.
///
/// # Ordering and visibility
/// Ops from one process to one peer take effect at the peer in the order they were posted (an RC
/// queue pair). Nothing else is ordered: ops to different peers, or from different senders, may
/// land in any order. A write becomes visible word by word (8-byte aligned words are never torn),
/// never atomically as a whole; detect complete entries with a canary (see [`crate::slot`]).
///
/// # Calling protocol
/// During one [`crate::Process::poll`] a process may call any method any number of times. Ops are
/// accepted or rejected at once ([`OpError`], nothing modified); their outcome arrives later
/// through [`Nic::poll_completion`] (always for failures, for successes only when signaled).
/// `poll_completion` and `poll_recv` drain: call them until they return `None`. Local memory
/// accesses take effect immediately. `now` may advance during a poll as the runtime charges the
/// process's CPU time. Timers are deadlines returned in [`crate::Progress::wake_at`].
pub trait Nic {
    /// This process's id.
    fn id(&self) -> ProcessId;

    /// The region table of the run (every process's region lengths).
    fn regions(&self) -> &RegionTable;

    /// Number of processes in the run; peers are `ProcessId(0..n)`.
    fn processes(&self) -> usize {
        self.regions().processes()
    }

    /// The current time.
    fn now(&self) -> Nanos;

    /// This process's protocol random stream.
    fn rng(&mut self) -> &mut Rng;

    /// The NIC's limits.
    fn limits(&self) -> NicLimits;

    /// Copies bytes of one of this process's regions into `buf`.
    fn read_local(&self, at: LocalAddr, buf: &mut [u8]) -> Result<(), OpError>;

    /// Writes bytes into one of this process's regions.
    fn write_local(&mut self, at: LocalAddr, data: &[u8]) -> Result<(), OpError>;

    /// Lays `image` over the start of `region` (at least as long as the image): every page the
    /// image holds is written at its offset, as [`Nic::write_local`] would (this default);
    /// pages it never wrote are left as they are. How a process starts from a state built once for many
    /// (see [`crate::image`]); the simulator shares the image's pages instead of copying them.
    fn install_image(&mut self, region: RegionId, image: &RegionImage) -> Result<(), OpError> {
        for (offset, bytes) in image.pages() {
            self.write_local(LocalAddr::new(region, offset), bytes)?;
        }
        Ok(())
    }

    /// Loads the aligned 8-byte little-endian word at `at` (never torn).
    fn load_u64(&self, at: LocalAddr) -> Result<u64, OpError>;

    /// Stores an aligned 8-byte little-endian word at `at` (never torn).
    fn store_u64(&mut self, at: LocalAddr, value: u64) -> Result<(), OpError>;

    /// The `len` bytes at `at` as a payload: on a sparse region of the simulator, what was
    /// written there as a synthetic payload comes back synthetic, without materialising it;
    /// elsewhere the bytes are copied.
    fn read_data(&self, at: LocalAddr, len: usize) -> Result<Data, OpError> {
        let mut buf = vec![0; len];
        self.read_local(at, &mut buf)?;
        Ok(Data::Bytes(Bytes::from(buf)))
    }

    /// Moves into `into` what changed in this process's memory since the last call: writes,
    /// atomics and read responses that landed, and its own local writes. Exact on the
    /// simulator; runtimes that cannot tell report "anything may have changed", which is also
    /// this default. A hint for skipping rescans, never a reason to behave differently (see
    /// [`crate::changes`]).
    fn take_changes(&mut self, into: &mut Changes) {
        into.set_unknown();
    }

    /// Reports `units` of work of kind `kind` done in this poll (see [`crate::work`]). The
    /// simulator charges its software profile's price to this poll, so the process's next poll
    /// comes that much later; real runtimes spent the time already, which is this default.
    fn work(&mut self, kind: crate::Work, units: u64) {
        let _ = (kind, units);
    }

    /// Accepts an op (after [`validate`]) and returns its id.
    fn post(&mut self, op: Op) -> Result<WrId, OpError>;

    /// The next completion, if any.
    fn poll_completion(&mut self) -> Option<Completion>;

    /// The next received message or immediate, if any.
    fn poll_recv(&mut self) -> Option<Recv>;

    /// Posts a one-sided write of `data` (copied) to `dst`.
    fn post_write(
        &mut self,
        dst: RemoteAddr,
        data: &[u8],
        flags: WriteFlags,
    ) -> Result<WrId, OpError> {
        self.post_write_data(dst, Data::copied(data), flags)
    }

    /// Posts a one-sided write of `data` (shared, not copied) or a synthetic payload.
    fn post_write_data(
        &mut self,
        dst: RemoteAddr,
        data: Data,
        flags: WriteFlags,
    ) -> Result<WrId, OpError> {
        self.post(Op::Write {
            dst,
            data,
            imm: None,
            flags,
        })
    }

    /// Posts a write-with-immediate: the bytes land, then the peer receives `imm`.
    fn post_write_imm(
        &mut self,
        dst: RemoteAddr,
        data: &[u8],
        imm: u32,
        flags: WriteFlags,
    ) -> Result<WrId, OpError> {
        self.post(Op::Write {
            dst,
            data: Data::copied(data),
            imm: Some(imm),
            flags,
        })
    }

    /// Posts a one-sided read of `len` bytes at `src` into `into`.
    fn post_read(
        &mut self,
        src: RemoteAddr,
        len: usize,
        into: LocalAddr,
        signaled: bool,
    ) -> Result<WrId, OpError> {
        self.post(Op::Read {
            src,
            len,
            into,
            signaled,
        })
    }

    /// Posts a compare-and-swap; the completion's `value` is the word before the op.
    fn post_cas(&mut self, dst: RemoteAddr, expect: u64, swap: u64) -> Result<WrId, OpError> {
        self.post(Op::CompareSwap { dst, expect, swap })
    }

    /// Posts a fetch-and-add; the completion's `value` is the word before the op.
    fn post_fetch_add(&mut self, dst: RemoteAddr, add: u64) -> Result<WrId, OpError> {
        self.post(Op::FetchAdd { dst, add })
    }

    /// Sends a two-sided message.
    fn send(&mut self, to: ProcessId, data: &[u8], signaled: bool) -> Result<WrId, OpError> {
        self.post(Op::Send {
            to,
            data: Bytes::copy_from_slice(data),
            signaled,
        })
    }

    /// Changes `peer`'s access to one of this process's regions; effective before it returns.
    fn set_access(
        &mut self,
        region: RegionId,
        peer: ProcessId,
        access: Access,
    ) -> Result<(), OpError> {
        self.post(Op::SetAccess {
            region,
            peer,
            access,
        })
        .map(|_| ())
    }

    /// Re-establishes the queue pair to `peer` after an error (costly, as on real hardware).
    fn reconnect(&mut self, peer: ProcessId) -> Result<WrId, OpError> {
        self.post(Op::Reconnect { peer })
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Write {
                dst,
                data,
                imm,
                flags,
            } => write!(
                f,
                "write {} bytes to {dst} imm={imm:?} signaled={} inline={}",
                data.len(),
                flags.signaled,
                flags.inline
            ),
            Op::Read { src, len, into, .. } => {
                write!(
                    f,
                    "read {len} bytes from {src} into {}+{}",
                    into.region, into.offset
                )
            }
            Op::CompareSwap { dst, expect, swap } => write!(f, "cas {dst} {expect}->{swap}"),
            Op::FetchAdd { dst, add } => write!(f, "faa {dst} +{add}"),
            Op::Send { to, data, .. } => write!(f, "send {} bytes to {to}", data.len()),
            Op::SetAccess {
                region,
                peer,
                access,
            } => write!(f, "set_access {region} {peer} {access:?}"),
            Op::Reconnect { peer } => write!(f, "reconnect {peer}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_payloads_are_held_in_place_and_read_like_bytes() {
        let word = 7u64.to_le_bytes();
        let small = Data::copied(&word);
        assert!(matches!(small, Data::Inline(_)));
        let full = [9u8; Inline::CAPACITY];
        assert!(matches!(Data::copied(&full), Data::Inline(_)));
        let large = [3u8; Inline::CAPACITY + 1];
        assert!(matches!(Data::copied(&large), Data::Bytes(_)));
        for (data, raw) in [(small, &word[..]), (Data::copied(&large), &large[..])] {
            assert_eq!(data.len(), raw.len());
            assert_eq!(&data.to_bytes()[..], raw);
            let mut out = vec![0; raw.len() - 2];
            data.copy_to(1, &mut out);
            assert_eq!(out, raw[1..raw.len() - 1]);
            assert_eq!(&data.window(2, 3).to_bytes()[..], &raw[2..5]);
        }
        assert_eq!(Data::copied(&[]).len(), 0);
        // Equal bytes are equal payloads, however they are held.
        assert_eq!(
            Data::copied(&word),
            Data::Bytes(Bytes::copy_from_slice(&word))
        );
        assert_ne!(Data::copied(&word), Data::copied(&[0; 8]));
    }
}
