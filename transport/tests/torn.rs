//! Torn writes on the local runtime: a writer thread overwrites one 4 KB slot continuously while a
//! reader thread decodes it. The reader must see torn entries (the runtime really lands writes
//! word by word) and must never accept one: every accepted entry's payload is exactly the
//! content its sequence number defines.

mod common;

use common::Tally;
use std::time::Duration;
use transport::runtime::local::{LocalConfig, LocalRuntime};
use transport::slot::SlotCodec;
use transport::*;

const SLOT_BYTES: usize = 4096;
const PAYLOAD: usize = SLOT_BYTES - 16;

#[derive(Default)]
struct TornRig {
    seq: u32,
    tally: Tally,
    buf: Vec<u8>,
}

impl<N: Nic> Process<N> for TornRig {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(SLOT_BYTES).with_default(Access::Write)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let codec = SlotCodec::new(SLOT_BYTES).unwrap();
        if nic.id() == ProcessId(0) {
            // Writer: entry `seq` carries the synthetic payload seeded by `seq`.
            self.seq = self.seq.wrapping_add(1).max(1);
            let payload = Synthetic::new(self.seq as u64, PAYLOAD as u64).to_vec();
            codec.encode(self.seq, &payload, &mut self.buf).unwrap();
            let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
            nic.post_write(dst, &self.buf, WriteFlags::NONE).unwrap();
            return Progress::worked(true);
        }
        // Reader: expect whatever seq the header announces now, then decode.
        let at = LocalAddr::new(RegionId(0), 0);
        self.tally.read(nic, &codec, at, PAYLOAD, &mut self.buf);
        Progress::worked(true)
    }

    fn done(&self) -> bool {
        // The writer counts as done after 50k entries but keeps writing until the reader is.
        self.seq >= 50_000 || self.tally.accepted >= 2_000 && self.tally.torn >= 20
    }
}

#[test]
fn concurrent_reader_never_accepts_a_torn_entry() {
    let cfg = LocalConfig {
        threads: 2,
        ..LocalConfig::default()
    };
    let run = LocalRuntime::new(cfg, vec![TornRig::default(), TornRig::default()])
        .run(Duration::from_secs(30));
    let reader = &run.processes[1].tally;
    assert_eq!(reader.bad, 0, "accepted {} torn entries", reader.bad);
    assert!(
        reader.accepted >= 2_000,
        "too few accepted: {}",
        reader.accepted
    );
    assert!(
        reader.torn >= 20,
        "the reader never observed a torn entry ({} accepted): writes are not landing word by word",
        reader.accepted
    );
}
