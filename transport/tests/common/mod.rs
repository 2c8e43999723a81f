//! What the torn-landing tests share: a reader that decodes a slot as writes land in it, on any
//! runtime, and counts what it made of each entry.

use transport::slot::{Reject, SlotCodec};
use transport::{LocalAddr, Nic, Synthetic};

/// What a reader made of the entries it decoded: accepted, refused as torn, and accepted with a
/// payload other than the one its sequence number defines (a torn entry accepted: never).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Entries accepted.
    pub(crate) accepted: u64,
    /// Entries refused as torn.
    pub(crate) torn: u64,
    /// Entries accepted with the wrong payload.
    pub(crate) bad: u64,
}

impl Tally {
    /// Decodes the entry at `at` with `codec` (into `buf`), expecting whichever sequence number
    /// its header announces now, and counts the outcome; an entry whose sequence number is
    /// `seq` carries the synthetic payload of `payload_bytes` seeded by `seq`. A slot never
    /// written (sequence number 0) counts as nothing.
    pub(crate) fn read<N: Nic>(
        &mut self,
        nic: &N,
        codec: &SlotCodec,
        at: LocalAddr,
        payload_bytes: usize,
        buf: &mut Vec<u8>,
    ) {
        let seq = nic.load_u64(at).unwrap() as u32;
        if seq == 0 {
            return;
        }
        match codec.read(nic, at, seq, buf).unwrap() {
            Ok(range) => {
                self.accepted += 1;
                if !Synthetic::new(seq as u64, payload_bytes as u64).verify(0, &buf[range]) {
                    self.bad += 1;
                }
            }
            Err(Reject::Torn) => self.torn += 1,
            Err(Reject::NotYet) => {}
        }
    }
}
