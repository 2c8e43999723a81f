//! Torn landings on the simulator (issue 44): under a [`Tearing`] multi-word writes and reads
//! are carried out piece by piece, interleaved with everything else, within what RDMA allows
//! (no aligned 8-byte word tears, a queue pair's ops stay in post order, an access change is
//! final). Without one, every op lands at one instant.

use transport::runtime::sim::{
    check_determinism, Determinism, Fault, PieceOrder, Profile, Sim, SimConfig, SimNic, Tearing,
};
mod common;

use common::Tally;
use transport::slot::SlotCodec;
use transport::*;

/// Words of the entry the writer rewrites: every word of version `v` holds `v`.
const WORDS: usize = 8;
const ENTRY: LocalAddr = LocalAddr::new(RegionId(0), 0);

fn tearing(order: PieceOrder) -> Option<Tearing> {
    Some(Tearing {
        piece_bytes: 8,
        order,
        window: Nanos(4_000),
    })
}

fn entry(v: u64) -> Vec<u8> {
    (0..WORDS).flat_map(|_| v.to_le_bytes()).collect()
}

fn words(nic: &impl Nic, at: LocalAddr) -> Vec<u64> {
    (0..WORDS)
        .map(|w| {
            nic.load_u64(LocalAddr::new(at.region, at.offset + 8 * w))
                .unwrap()
        })
        .collect()
}

/// What a reader saw of an entry: whole versions, mixes of two, and mixes that are not an
/// ascending prefix of the newer version (only an any-order landing makes those).
#[derive(Debug, Default)]
struct Seen {
    whole: u64,
    mixed: u64,
    unordered: u64,
}

impl Seen {
    fn record(&mut self, w: &[u64]) {
        if w.iter().all(|&x| x == w[0]) {
            self.whole += 1;
            return;
        }
        self.mixed += 1;
        // Ascending order leaves a prefix of newer words over a suffix of older ones.
        if w.windows(2).any(|p| p[0] < p[1]) {
            self.unordered += 1;
        }
    }
}

/// p0 writes versions 1..=VERSIONS of the entry into p1's region, one after another (each after
/// the previous one's completion); p1 looks at the entry on every landing.
#[derive(Default)]
struct Writes {
    next: u64,
    seen: Seen,
}

const VERSIONS: u64 = 300;

impl<N: Nic> Process<N> for Writes {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(64).with_default(Access::Write)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == ProcessId(1) {
            let w = words(nic, ENTRY);
            self.seen.record(&w);
            return Progress::IDLE;
        }
        let mut done = self.next == 0;
        while let Some(c) = nic.poll_completion() {
            assert_eq!(c.status, Status::Success);
            done = true;
        }
        if done && self.next < VERSIONS {
            self.next += 1;
            let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
            nic.post_write(dst, &entry(self.next), WriteFlags::SIGNALED)
                .unwrap();
        }
        Progress::IDLE
    }

    fn done(&self) -> bool {
        self.next >= VERSIONS
    }
}

/// A run of two `P`s, each starting from its default, with `seed`, landings torn as `tear`
/// says and `faults`: every test here is one of these.
fn two<P: Process<SimNic> + Default>(
    seed: u64,
    tear: Option<Tearing>,
    faults: Vec<Fault>,
) -> Sim<P> {
    let mut cfg = SimConfig::new(seed, Profile::load("r320-cx3").unwrap());
    cfg.tearing = tear;
    cfg.faults = faults;
    Sim::new(cfg, (0..2).map(|_| P::default()).collect())
}

/// p0's link to p1 delayed by `delay` (give or take `jitter`) for the first 50 ms.
fn delayed_link(delay: Nanos, jitter: Nanos) -> Vec<Fault> {
    vec![Fault::LinkDelay {
        at: Nanos::ZERO,
        from: ProcessId(0),
        to: ProcessId(1),
        duration: Nanos(50_000_000),
        delay,
        jitter,
    }]
}

fn run_writes(tear: Option<Tearing>) -> (Seen, u64) {
    let mut sim = two::<Writes>(3, tear, vec![]);
    sim.run(None);
    let torn = sim.stats().torn_ops;
    (sim.into_processes().remove(1).seen, torn)
}

#[test]
fn without_tearing_a_write_lands_at_one_instant() {
    let (seen, torn) = run_writes(None);
    assert_eq!(seen.mixed, 0, "{seen:?}");
    assert!(seen.whole >= VERSIONS, "{seen:?}");
    assert_eq!(torn, 0);
}

#[test]
fn a_torn_write_is_seen_half_landed_in_ascending_order() {
    let (seen, torn) = run_writes(tearing(PieceOrder::Ascending));
    assert_eq!(torn, VERSIONS);
    assert!(seen.mixed > VERSIONS, "{seen:?}");
    assert_eq!(seen.unordered, 0, "ascending pieces left a gap: {seen:?}");
}

#[test]
fn a_torn_write_in_any_order_is_seen_with_gaps() {
    let (seen, _) = run_writes(tearing(PieceOrder::Any));
    assert!(seen.unordered > VERSIONS / 2, "{seen:?}");
}

/// p1 rewrites its own entry (all words `v`, by local stores) every 100 ns; p0 reads it
/// remotely, one read after another, and records what each read returned.
#[derive(Default)]
struct Reads {
    v: u64,
    reads: u64,
    seen: Seen,
}

impl<N: Nic> Process<N> for Reads {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(128).with_default(Access::Read)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == ProcessId(1) {
            self.v += 1;
            nic.write_local(ENTRY, &entry(self.v)).unwrap();
            return Progress::IDLE.wake_at(Some(nic.now() + Nanos(100)));
        }
        let into = LocalAddr::new(RegionId(0), 64);
        let mut start = self.reads == 0;
        while nic.poll_completion().is_some() {
            let w = words(nic, into);
            self.seen.record(&w);
            start = true;
        }
        if start && self.reads < 200 {
            self.reads += 1;
            let src = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
            nic.post_read(src, 8 * WORDS, into, true).unwrap();
        }
        Progress::IDLE
    }

    fn done(&self) -> bool {
        self.v > 0 && self.reads >= 200
    }
}

fn run_reads(tear: Option<Tearing>) -> Seen {
    let mut sim = two::<Reads>(5, tear, vec![]);
    sim.run(Some(Nanos(10_000_000)));
    sim.into_processes().remove(0).seen
}

#[test]
fn a_torn_read_straddles_its_owners_writes() {
    let whole = run_reads(None);
    assert_eq!(whole.mixed, 0, "{whole:?}");
    let torn = run_reads(tearing(PieceOrder::Ascending));
    assert!(torn.mixed > 20, "{torn:?}");
    // Read in ascending order while the owner counts up: older words come first, so a torn
    // read is newer at its end, never at its start.
    assert_eq!(torn.unordered, torn.mixed, "{torn:?}");
}

/// p0 writes ever newer versions of the entry (a window of several in flight on one queue
/// pair) and then one word behind them at offset 64; p1 checks at every landing that the word
/// never lands while the version written before it is still landing.
#[derive(Default)]
struct Order {
    posted: u64,
    violations: u64,
    checks: u64,
}

impl<N: Nic> Process<N> for Order {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(128).with_default(Access::Write)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == ProcessId(1) {
            let flag = nic.load_u64(LocalAddr::new(RegionId(0), 64)).unwrap();
            let w = words(nic, ENTRY);
            self.checks += 1;
            // The flag `v` follows version `v`: when it is up, version `v` has landed whole.
            if flag > 0 && w.iter().any(|&x| x < flag) {
                self.violations += 1;
            }
            return Progress::IDLE;
        }
        while nic.poll_completion().is_some() {}
        if self.posted < 100 {
            self.posted += 1;
            let v = self.posted;
            nic.post_write(
                RemoteAddr::new(ProcessId(1), RegionId(0), 0),
                &entry(v),
                WriteFlags::NONE,
            )
            .unwrap();
            nic.post_write(
                RemoteAddr::new(ProcessId(1), RegionId(0), 64),
                &v.to_le_bytes(),
                WriteFlags::SIGNALED,
            )
            .unwrap();
            return Progress::IDLE.wake_at(Some(nic.now() + Nanos(200)));
        }
        Progress::IDLE
    }

    fn done(&self) -> bool {
        self.posted >= 100
    }
}

/// Runs [`Order`] under `faults` with pieces landing in either order: p1 checked often and
/// never saw the flag ahead of the version before it.
fn assert_next_op_lands_after_the_last_piece(faults: Vec<Fault>) {
    for order in [PieceOrder::Ascending, PieceOrder::Any] {
        let mut sim = two::<Order>(9, tearing(order), faults.clone());
        sim.run(None);
        let p1 = &sim.processes()[1];
        assert!(p1.checks > 200, "{order:?}: {} checks", p1.checks);
        assert_eq!(p1.violations, 0, "{order:?}");
    }
}

#[test]
fn a_queue_pairs_next_op_lands_after_the_last_piece() {
    assert_next_op_lands_after_the_last_piece(vec![]);
}

/// p0 posts a burst of writes to p1 at once, each spanning several words, and records when the
/// last one completed.
#[derive(Default)]
struct Burst {
    posted: bool,
    completed: u64,
    last_done: Nanos,
}

const BURST: u64 = 20;

impl<N: Nic> Process<N> for Burst {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(64).with_default(Access::Write)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == ProcessId(1) {
            return Progress::IDLE;
        }
        while let Some(c) = nic.poll_completion() {
            assert_eq!(c.status, Status::Success);
            self.completed += 1;
            self.last_done = nic.now();
        }
        if !self.posted {
            self.posted = true;
            for v in 1..=BURST {
                let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
                nic.post_write(dst, &entry(v), WriteFlags::SIGNALED)
                    .unwrap();
            }
        }
        Progress::IDLE
    }

    fn done(&self) -> bool {
        self.completed == BURST
    }
}

/// When the burst's last write completed, over a link delayed by `delay` from the start.
fn burst_over_delayed_link(tear: Option<Tearing>, delay: Nanos) -> Nanos {
    let mut sim = two::<Burst>(13, tear, delayed_link(delay, Nanos::ZERO));
    sim.run(Some(Nanos(100_000_000)));
    let p0 = &sim.processes()[0];
    assert_eq!(p0.completed, BURST);
    p0.last_done
}

/// A delayed link delays each op once: torn ops queue behind each other's pieces on the queue
/// pair (at most a window each), never behind each other's link delay. Before the fix each
/// torn op carried the delay into the pair's order, so a burst of 20 over a 200 us link took
/// 20 delays (4 ms) instead of one.
#[test]
fn a_link_delay_is_not_compounded_by_torn_ops_queued_behind_each_other() {
    let delay = Nanos(200_000);
    let whole = burst_over_delayed_link(None, delay);
    assert!(whole > delay, "the delay did not apply: {whole:?}");
    for order in [PieceOrder::Ascending, PieceOrder::Any] {
        let torn = burst_over_delayed_link(tearing(order), delay);
        let bound = whole + Nanos(BURST * 4_000);
        assert!(
            torn <= bound,
            "{order:?}: the burst took {torn:?}, more than {bound:?} (untorn {whole:?})"
        );
    }
}

/// [`Order`] over a delayed link: the link keeps the pair's order up to each op's last piece.
#[test]
fn over_a_delayed_link_the_next_op_still_lands_after_the_last_piece() {
    assert_next_op_lands_after_the_last_piece(delayed_link(Nanos(50_000), Nanos(5_000)));
}

/// p0 writes versions back to back; p1 revokes p0's access at the first landing it sees half
/// done, and from then on its entry must never change: the pieces still pending landed before
/// the revoke took effect.
#[derive(Default)]
struct Revoke {
    next: u64,
    revoked: Option<Vec<u64>>,
    /// The entry was half landed when p1 revoked.
    was_mixed: bool,
    changed_after: u64,
}

impl<N: Nic> Process<N> for Revoke {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(64).with_default(Access::Write)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if nic.id() == ProcessId(1) {
            let w = words(nic, ENTRY);
            match &self.revoked {
                Some(at) => self.changed_after += u64::from(*at != w),
                None if w.iter().any(|&x| x != w[0]) => {
                    self.was_mixed = true;
                    nic.set_access(RegionId(0), ProcessId(0), Access::None)
                        .unwrap();
                    let after = words(nic, ENTRY);
                    assert!(
                        after.iter().all(|&x| x == after[0]),
                        "the revoke left a half-landed entry: {after:?}"
                    );
                    self.revoked = Some(after);
                }
                None => {}
            }
            return Progress::IDLE;
        }
        while nic.poll_completion().is_some() {}
        if self.next < 50 {
            self.next += 1;
            let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
            nic.post_write(dst, &entry(self.next), WriteFlags::NONE)
                .unwrap();
            return Progress::IDLE.wake_at(Some(nic.now() + Nanos(300)));
        }
        Progress::IDLE
    }
}

#[test]
fn an_access_change_lands_the_pending_pieces_first() {
    let mut sim = two::<Revoke>(11, tearing(PieceOrder::Any), vec![]);
    sim.run(Some(Nanos(1_000_000)));
    let p1 = &sim.processes()[1];
    assert!(
        p1.was_mixed,
        "no write was half landed: the test proves nothing"
    );
    assert_eq!(p1.changed_after, 0, "a piece landed after the revoke");
}

/// The slot codec on torn landings in any order: entries overwritten continuously, decoded at
/// every landing, never accepted torn (its CRC catches what the canary alone would not).
#[derive(Default)]
struct SlotRig {
    seq: u32,
    tally: Tally,
    buf: Vec<u8>,
}

const SLOT_BYTES: usize = 512;

impl<N: Nic> Process<N> for SlotRig {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(SLOT_BYTES).with_default(Access::Write)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let codec = SlotCodec::new(SLOT_BYTES).unwrap();
        let payload = SLOT_BYTES - 16;
        if nic.id() == ProcessId(0) {
            while nic.poll_completion().is_some() {}
            if self.seq < 400 {
                self.seq += 1;
                let data = Synthetic::new(self.seq as u64, payload as u64).to_vec();
                codec.encode(self.seq, &data, &mut self.buf).unwrap();
                let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
                nic.post_write(dst, &self.buf, WriteFlags::NONE).unwrap();
                return Progress::IDLE.wake_at(Some(nic.now() + Nanos(500)));
            }
            return Progress::IDLE;
        }
        self.tally.read(nic, &codec, ENTRY, payload, &mut self.buf);
        Progress::IDLE
    }
}

#[test]
fn the_slot_codec_never_accepts_a_torn_landing() {
    for (seed, order) in [(1, PieceOrder::Ascending), (2, PieceOrder::Any)] {
        let mut sim = two::<SlotRig>(seed, tearing(order), vec![]);
        sim.run(Some(Nanos(2_000_000)));
        let r = &sim.processes()[1].tally;
        assert_eq!(r.bad, 0, "{order:?}: accepted {} torn entries", r.bad);
        assert!(r.torn > 50, "{order:?}: never saw a torn entry");
        assert!(r.accepted > 50, "{order:?}: accepted only {}", r.accepted);
    }
}

#[test]
fn a_torn_run_replays_from_its_seed() {
    let build = || two::<Reads>(21, tearing(PieceOrder::Any), vec![]);
    assert!(matches!(
        check_determinism(build, Some(Nanos(2_000_000))),
        Determinism::Identical(_)
    ));
}
