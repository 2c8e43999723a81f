//! A single-producer single-consumer message ring over one-sided writes, with credit return
//! (the HERD/FaRM pattern), for message-passing protocols and control traffic.
//!
//! The ring lives in the consumer's memory: `slots` slots of the [`SlotCodec`]. The producer
//! writes message `i` (0-based) as entry `seq = i + 1` into slot `i % slots`. The consumer reads
//! slots in order and, every `credit_batch` messages, writes its consumed count into an 8-byte
//! credit word in the producer's memory. The producer never has more than `slots` messages
//! outstanding: when the ring is full, [`RingSender::try_send`] returns [`RingError::Full`] and
//! sends nothing (backpressure, never a silent drop).
//!
//! Choice: credits return in batches of half the ring by default, trading a little producer
//! stall for one credit write per `slots / 2` messages. Batching cannot deadlock: a producer
//! blocked on a full ring has `slots` messages outstanding; once the consumer has read them all
//! it has returned at least `slots - credit_batch + 1` of them.
//!
//! Failed writes (a revoked region, an unreachable peer) surface as completions on the caller's
//! NIC like any other op; the ring posts unsignaled writes and leaves failure handling to its owner.

use crate::nic::{Data, Inline, Nic, OpError, WrId, WriteFlags};
use crate::region::{LocalAddr, RemoteAddr};
use crate::slot::{Reject, SlotCodec, SlotError};

/// Shape of a ring, shared by both ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Number of slots (messages in flight at most).
    pub slots: u32,
    /// Bytes per slot; see [`SlotCodec`].
    pub slot_bytes: usize,
    /// Messages consumed between two credit returns (1..=slots).
    pub credit_batch: u32,
}

impl RingConfig {
    /// A ring of `slots` slots of `slot_bytes`, returning credits every half ring.
    pub fn new(slots: u32, slot_bytes: usize) -> Result<RingConfig, RingError> {
        let cfg = RingConfig {
            slots,
            slot_bytes,
            credit_batch: (slots / 2).max(1),
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the shape.
    pub fn validate(&self) -> Result<SlotCodec, RingError> {
        let codec = SlotCodec::new(self.slot_bytes)?;
        if self.slots == 0 || self.credit_batch == 0 || self.credit_batch > self.slots {
            return Err(RingError::BadShape {
                slots: self.slots,
                credit_batch: self.credit_batch,
            });
        }
        Ok(codec)
    }

    /// Bytes of the ring region at the consumer.
    pub fn ring_bytes(&self) -> usize {
        self.slots as usize * self.slot_bytes
    }

    /// Bytes of the credit word at the producer.
    pub const CREDIT_BYTES: usize = 8;
}

/// Ring errors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// Every slot holds a message the consumer has not returned yet; retry later.
    #[error("ring full: the consumer has not returned credits yet; retry after it consumes")]
    Full,
    /// The message does not fit a slot.
    #[error(transparent)]
    Slot(#[from] SlotError),
    /// The NIC rejected an op or access.
    #[error(transparent)]
    Op(#[from] OpError),
    /// Ring shape invalid.
    #[error(
        "ring shape invalid: {slots} slots, credit batch {credit_batch} (need 1 <= batch <= slots)"
    )]
    BadShape {
        /// Slots given.
        slots: u32,
        /// Batch given.
        credit_batch: u32,
    },
    /// The consumer found a slot in an impossible state (corrupt memory).
    #[error("slot {slot} holds a torn or corrupt entry for message {seq}")]
    Corrupt {
        /// Slot index.
        slot: u32,
        /// Expected seq.
        seq: u32,
    },
}

/// The producer end.
#[derive(Debug)]
pub struct RingSender {
    cfg: RingConfig,
    codec: SlotCodec,
    ring: RemoteAddr,
    credit: LocalAddr,
    sent: u64,
    /// Scratch for encoding entries small enough to be held in the op ([`Inline`]); grows on
    /// first use (a mesh holds a sender and a receiver per ordered pair, most of which never
    /// carry a message, so none reserves a slot up front).
    buf: Vec<u8>,
}

impl RingSender {
    /// A producer writing into the ring at `ring` (consumer memory), reading credits from the
    /// zero-initialised word at `credit` (own memory, writable by the consumer).
    pub fn new(cfg: RingConfig, ring: RemoteAddr, credit: LocalAddr) -> Result<Self, RingError> {
        let codec = cfg.validate()?;
        Ok(RingSender {
            cfg,
            codec,
            ring,
            credit,
            sent: 0,
            buf: Vec::new(),
        })
    }

    /// Messages sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Slots free now, by the credits returned so far.
    pub fn free<N: Nic + ?Sized>(&self, nic: &N) -> Result<u64, RingError> {
        let consumed = nic.load_u64(self.credit)?;
        Ok(self.cfg.slots as u64 - (self.sent - consumed.min(self.sent)))
    }

    /// Writes `msg` into the next slot, or reports [`RingError::Full`] without sending.
    pub fn try_send<N: Nic + ?Sized>(
        &mut self,
        nic: &mut N,
        msg: &[u8],
    ) -> Result<WrId, RingError> {
        if msg.len() > self.codec.capacity() {
            return Err(SlotError::TooLarge {
                len: msg.len(),
                max: self.codec.capacity(),
            }
            .into());
        }
        if self.free(nic)? == 0 {
            return Err(RingError::Full);
        }
        let seq = (self.sent + 1) as u32;
        let slot = (self.sent % self.cfg.slots as u64) as usize;
        let dst = self.ring.add(slot * self.cfg.slot_bytes);
        let len = SlotCodec::encoded_len(msg.len());
        let flags = WriteFlags::NONE.inline_if_fits(len, nic.limits());
        let wr = if len <= Inline::CAPACITY {
            self.codec.encode(seq, msg, &mut self.buf)?;
            nic.post_write(dst, &self.buf, flags)?
        } else {
            // Too large to be held in the op: encoded straight into the op's own buffer rather
            // than into `buf` and then copied (kilobyte messages were copied twice).
            let mut entry = Vec::with_capacity(len);
            self.codec.encode(seq, msg, &mut entry)?;
            nic.post_write_data(dst, Data::Bytes(entry.into()), flags)?
        };
        self.sent += 1;
        Ok(wr)
    }
}

/// The consumer end.
#[derive(Debug)]
pub struct RingReceiver {
    cfg: RingConfig,
    codec: SlotCodec,
    ring: LocalAddr,
    credit: RemoteAddr,
    received: u64,
    returned: u64,
    /// Scratch for [`RingReceiver::ready`]; grows on first use, as the sender's.
    buf: Vec<u8>,
}

impl RingReceiver {
    /// A consumer of the ring at `ring` (own memory, writable by the producer) returning credits
    /// to the word at `credit` (producer memory).
    pub fn new(cfg: RingConfig, ring: LocalAddr, credit: RemoteAddr) -> Result<Self, RingError> {
        let codec = cfg.validate()?;
        Ok(RingReceiver {
            cfg,
            codec,
            ring,
            credit,
            received: 0,
            returned: 0,
            buf: Vec::new(),
        })
    }

    /// Messages received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Whether the next message has fully landed (what [`RingReceiver::try_recv`] would take).
    pub fn ready<N: Nic + ?Sized>(&mut self, nic: &N) -> Result<bool, RingError> {
        let (seq, at) = self.next();
        Ok(self.codec.read(nic, at, seq, &mut self.buf)?.is_ok())
    }

    /// The next message's sequence number and slot.
    fn next(&self) -> (u32, LocalAddr) {
        let slot = (self.received % self.cfg.slots as u64) as usize;
        let at = self.ring.add(slot * self.cfg.slot_bytes);
        ((self.received + 1) as u32, at)
    }

    /// Copies the next message into `out` if it has fully landed; returns whether one did
    /// (`out` holds nothing of use when none did). Returns credits when a batch is complete.
    pub fn try_recv<N: Nic + ?Sized>(
        &mut self,
        nic: &mut N,
        out: &mut Vec<u8>,
    ) -> Result<bool, RingError> {
        let (seq, at) = self.next();
        match self.codec.read_payload(nic, at, seq, out)? {
            Ok(()) => {
                self.received += 1;
                if self.received - self.returned >= self.cfg.credit_batch as u64 {
                    self.returned = self.received;
                    nic.post_write(
                        self.credit,
                        &self.returned.to_le_bytes(),
                        WriteFlags::NONE.inline(),
                    )?;
                }
                Ok(true)
            }
            // A torn entry is one still landing: the producer never overwrites an unreturned slot.
            Err(Reject::NotYet | Reject::Torn) => Ok(false),
        }
    }
}
