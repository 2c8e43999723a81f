//! An ib_write_lat / ib_write_bw equivalent for any runtime: what `harness bench transport`,
//! `bench access` and `calibrate hardware` measure the transport with.
//!
//! Latency follows ib_write_lat: a write ping-pong between two processes, each polling the last
//! byte of its buffer for the peer's write; the reported latency is half the round trip.
//! Bandwidth follows ib_write_bw: one process posts signaled writes back to back with at most
//! `tx_depth` outstanding; bandwidth is bytes over the time from the first post to the last
//! completion. Writes up to the NIC's inline limit are posted inline, as perftest does.

use crate::runtime::{Drivable, Drive, Runtime};
use crate::stats::LatencySummary;
use bytes::Bytes;
use transport::runtime::local::LocalNic;
use transport::runtime::sim::{Profile, SimNic, Software};
use transport::*;

/// The largest message perftest's `-a` covers (8 MiB); also the largest size accepted.
pub const MAX_BYTES: usize = 8 << 20;

/// The sizes of `--all`: every power of two from 2 B to 8 MiB.
pub fn all_sizes() -> Vec<usize> {
    (1..=23).map(|k| 1usize << k).collect()
}

const BUF: RegionId = RegionId(0);

/// Which test a process pair runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A write ping-pong (ib_write_lat).
    Latency,
    /// A stream of writes (ib_write_bw).
    Bandwidth,
}

/// The shape of one measurement, as perftest's flags give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Message size.
    pub bytes: usize,
    /// Warm-up round trips (latency only).
    pub warmup: u64,
    /// Measured iterations.
    pub iterations: u64,
    /// Outstanding writes (bandwidth).
    pub tx_depth: u64,
    /// One signaled write in this many (bandwidth).
    pub cq_mod: u64,
}

/// One side of a perftest-style pair: process 0 is the initiator, process 1 the responder.
#[derive(Debug)]
pub struct Perf {
    mode: Mode,
    /// Process 0: posts pings (latency) or the write stream (bandwidth).
    initiator: bool,
    bytes: usize,
    warmup: u64,
    iterations: u64,
    tx_depth: u64,
    /// Payloads whose last byte is tag 1 and tag 2 (latency alternates them; bandwidth uses 0).
    payloads: [Bytes; 2],
    i: u64,
    waiting: bool,
    t_start: Nanos,
    /// Half round trips (latency) in microseconds.
    pub samples: Vec<f64>,
    posted: u64,
    cq_mod: u64,
    /// (time, ops completed so far) at each completion drained (bandwidth).
    pub completions: Vec<(Nanos, u64)>,
    completed: u64,
    /// When the first write of the stream was posted (bandwidth).
    pub t_first: Nanos,
    /// Why the test stopped early, if it did.
    pub error: Option<String>,
}

impl Perf {
    /// The pair of processes for one test: the initiator (process 0) and the responder.
    pub fn pair(mode: Mode, p: Params) -> [Perf; 2] {
        [true, false].map(|initiator| Perf::new(mode, initiator, p))
    }

    fn new(mode: Mode, initiator: bool, p: Params) -> Perf {
        let Params {
            bytes,
            warmup,
            iterations,
            tx_depth,
            cq_mod,
        } = p;
        let payload = |tag: u8| {
            let mut v = vec![0u8; bytes];
            v[bytes - 1] = tag;
            Bytes::from(v)
        };
        Perf {
            mode,
            initiator,
            bytes,
            warmup: if mode == Mode::Latency { warmup } else { 0 },
            iterations,
            tx_depth,
            payloads: [payload(1), payload(2)],
            i: 0,
            waiting: false,
            t_start: Nanos::ZERO,
            samples: Vec::new(),
            posted: 0,
            cq_mod: cq_mod.clamp(1, tx_depth),
            completions: Vec::new(),
            completed: 0,
            t_first: Nanos::ZERO,
            error: None,
        }
    }

    fn total(&self) -> u64 {
        self.warmup + self.iterations
    }

    fn tag(i: u64) -> u8 {
        1 + (i % 2) as u8
    }

    fn flags<N: Nic>(&self, nic: &N) -> WriteFlags {
        if self.bytes <= nic.limits().inline_max {
            WriteFlags::NONE.inline()
        } else {
            WriteFlags::NONE
        }
    }

    fn post<N: Nic>(&mut self, nic: &mut N, tag_index: usize, flags: WriteFlags) {
        let peer = ProcessId(1 - nic.id().0);
        let data = Data::Bytes(self.payloads[tag_index].clone());
        if let Err(e) = nic.post_write_data(RemoteAddr::new(peer, BUF, 0), data, flags) {
            self.error = Some(e.to_string());
        }
    }

    fn last_byte<N: Nic>(&self, nic: &N) -> u8 {
        let mut b = [0u8; 1];
        nic.read_local(LocalAddr::new(BUF, self.bytes - 1), &mut b)
            .expect("buffer in bounds");
        b[0]
    }

    fn poll_latency<N: Nic>(&mut self, nic: &mut N) -> Progress {
        let initiator = self.initiator;
        let flags = self.flags(nic);
        let mut worked = false;
        loop {
            if self.i == self.total() {
                return Progress::worked(worked);
            }
            let tag = Self::tag(self.i);
            if initiator && !self.waiting {
                self.t_start = nic.now();
                self.post(nic, (tag - 1) as usize, flags);
                self.waiting = true;
                worked = true;
            }
            if self.last_byte(nic) != tag {
                return Progress::worked(worked);
            }
            if initiator {
                if self.i >= self.warmup {
                    let rtt = nic.now() - self.t_start;
                    self.samples.push(rtt.as_us_f64() / 2.0);
                }
                self.waiting = false;
            } else {
                self.post(nic, (tag - 1) as usize, flags);
            }
            self.i += 1;
            worked = true;
        }
    }

    fn poll_bandwidth<N: Nic>(&mut self, nic: &mut N) -> Progress {
        if !self.initiator {
            return Progress::IDLE;
        }
        let mut worked = false;
        while let Some(c) = nic.poll_completion() {
            if c.status != Status::Success {
                self.error = Some(format!("write failed: {c:?}"));
            }
            // One signaled write stands for the unsignaled ones posted before it (perftest's
            // --cq-mod): on an RC queue pair they completed first.
            self.completed = (self.completed + self.cq_mod).min(self.posted);
            self.completions.push((nic.now(), self.completed));
            worked = true;
        }
        while self.posted < self.iterations && self.posted - self.completed < self.tx_depth {
            if self.posted == 0 {
                self.t_first = nic.now();
            }
            let mut flags = self.flags(nic);
            let last = self.posted + 1 == self.iterations;
            if (self.posted + 1) % self.cq_mod == 0 || last {
                flags = flags.signaled();
            }
            self.post(nic, 0, flags);
            self.posted += 1;
            worked = true;
        }
        Progress::worked(worked)
    }
}

impl<N: Nic> Process<N> for Perf {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(self.bytes).with_default(Access::Write)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        if self.error.is_some() {
            return Progress::IDLE;
        }
        match self.mode {
            Mode::Latency => self.poll_latency(nic),
            Mode::Bandwidth => self.poll_bandwidth(nic),
        }
    }

    fn done(&self) -> bool {
        self.error.is_some()
            || match self.mode {
                Mode::Latency => self.i == self.total(),
                // The responder of a bandwidth test is passive: its NIC does all the work.
                Mode::Bandwidth => !self.initiator || self.completed == self.iterations,
            }
    }
}

/// Where a pair runs: a runtime of the engine's driver, with what a measurement reports of it.
#[derive(Clone, Debug)]
pub struct Rig {
    /// The runtime (tcp: both nodes as threads of this process over loopback, each with its
    /// own sockets and NIC thread; verbs: both on the device the environment names).
    pub runtime: Runtime,
    /// The seed of the runtime's streams.
    pub seed: u64,
    /// The simulator's hardware model (sim only).
    pub profile: Option<Profile>,
    /// The inline limit writes are measured with: the profile's on the simulator, what the
    /// device grants on verbs, the runtime's default elsewhere.
    pub inline_max: usize,
    /// What a report names as the profile: the simulator's, the device, or `-`.
    pub profile_name: String,
}

impl Rig {
    /// The simulator with `profile`.
    pub fn sim(profile: Profile, seed: u64) -> Rig {
        Rig {
            runtime: Runtime::Sim,
            seed,
            inline_max: profile.nic.inline_max_bytes,
            profile_name: profile.name.clone(),
            profile: Some(profile),
        }
    }

    /// Real threads, loopback sockets or a device (the caller sets what the device grants).
    pub fn real(runtime: Runtime, seed: u64) -> Rig {
        Rig {
            runtime,
            seed,
            profile: None,
            inline_max: NicLimits::default().inline_max,
            profile_name: "-".into(),
        }
    }

    /// The runtime's name.
    pub fn name(&self) -> &'static str {
        self.runtime.name()
    }

    /// Runs `procs` to completion (or a 300 s limit) and hands them back.
    pub fn run<P: Drivable>(&self, procs: Vec<P>) -> Result<Vec<P>, String> {
        let drive = Drive {
            runtime: self.runtime,
            seed: self.seed,
            profile: self.profile.as_ref(),
            software: &Software::none(),
            faults: &[],
            limits: NicLimits::default(),
            until: None,
            limit: std::time::Duration::from_secs(300),
        };
        Ok(drive.run(procs)?.processes)
    }

    /// Runs a pair to completion and returns the initiator.
    pub fn run_pair(&self, pair: [Perf; 2]) -> Result<Perf, String> {
        let mut out = self.run(pair.into())?;
        let initiator = out.swap_remove(0);
        if let Some(e) = &initiator.error {
            return Err(e.clone());
        }
        if !Process::<SimNic>::done(&initiator) || !Process::<LocalNic>::done(&initiator) {
            return Err("the run ended before the test finished (time limit)".into());
        }
        Ok(initiator)
    }
}

/// Measures one size: the latency ping-pong, then the bandwidth stream.
pub fn measure(rt: &Rig, p: Params) -> Result<(LatencySummary, f64, f64, f64), String> {
    let lat = rt.run_pair(Perf::pair(Mode::Latency, p))?;
    let summary = LatencySummary::of(&lat.samples).ok_or("no latency samples")?;
    let bw = rt.run_pair(Perf::pair(Mode::Bandwidth, Params { warmup: 0, ..p }))?;
    let (avg, peak, rate) = bandwidth(&bw, p.bytes, p.tx_depth);
    Ok((summary, avg, peak, rate))
}

/// Average and peak bandwidth (Gb/s) and message rate (Mpps) of a bandwidth run. The peak is the
/// best bandwidth between two completions at least `max(iterations / 10, tx_depth)` ops apart,
/// so a burst of completions drained in one poll cannot inflate it.
fn bandwidth(run: &Perf, bytes: usize, tx_depth: u64) -> (f64, f64, f64) {
    let Some(&(last, n)) = run.completions.last() else {
        return (0.0, 0.0, 0.0);
    };
    let gbps = |ops: u64, dt: Nanos| ops as f64 * bytes as f64 * 8.0 / dt.as_nanos().max(1) as f64;
    let span = last - run.t_first;
    let avg = gbps(n, span);
    let rate = n as f64 * 1e3 / span.as_nanos().max(1) as f64;
    let window = (n / 10).max(tx_depth).min(n);
    let mut peak = avg;
    let mut lo = 0;
    for &(t, done) in &run.completions {
        while lo + 1 < run.completions.len()
            && done.saturating_sub(run.completions[lo + 1].1) >= window
        {
            lo += 1;
        }
        let (t0, d0) = run.completions[lo];
        if done.saturating_sub(d0) >= window && t > t0 {
            peak = peak.max(gbps(done - d0, t - t0));
        }
    }
    (avg, peak, rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: Runtime = Runtime::Local {
        threads: 0,
        nic_thread: false,
    };

    /// Every built-in profile reproduces the two numbers it declares as its calibration: the
    /// 64-byte ping-pong's typical half round trip and the 8 MiB write bandwidth, within 5%,
    /// between two hosts of one rack.
    /// (Virtual time: deterministic model outputs, not wall-clock timings.)
    #[test]
    fn builtin_profiles_reproduce_their_calibration() {
        for name in transport::runtime::sim::builtin_names() {
            let mut profile = Profile::load(name).unwrap();
            // The calibration is of two hosts under one switch; a fabric places processes 0
            // and 1 in different racks when it spreads a run.
            profile.fabric = None;
            let cal = profile.calibration.clone();
            let rt = Rig::sim(profile, 1);
            let p = |bytes, iterations, warmup| Params {
                bytes,
                warmup,
                iterations,
                tx_depth: 128,
                cq_mod: 100,
            };
            // Enough round trips for a stable median where a latency distribution is declared.
            let (lat, ..) = measure(&rt, p(64, 1000, 100)).unwrap();
            let (_, bw, ..) = measure(&rt, p(8 << 20, 20, 0)).unwrap();
            let lat_err = (lat.typical - cal.write_lat_us).abs() / cal.write_lat_us;
            let bw_err = (bw - cal.write_bw_gbps).abs() / cal.write_bw_gbps;
            assert!(
                lat_err < 0.05,
                "{name}: {} us vs {} us",
                lat.typical,
                cal.write_lat_us
            );
            assert!(
                bw_err < 0.05,
                "{name}: {bw} Gb/s vs {} Gb/s",
                cal.write_bw_gbps
            );
        }
    }

    /// Measures `bytes` on `rt` (`warmup` round trips, then `iterations`; 16 writes
    /// outstanding, one in 4 signaled) and asserts the measurement completed: ordered positive
    /// latencies, some bandwidth and some message rate.
    fn completes(rt: &Rig, bytes: usize, warmup: u64, iterations: u64) {
        let p = Params {
            bytes,
            warmup,
            iterations,
            tx_depth: 16,
            cq_mod: 4,
        };
        let (lat, bw, _, rate) = measure(rt, p).unwrap();
        assert!(lat.min > 0.0 && lat.min <= lat.typical && lat.typical <= lat.max);
        assert!(bw > 0.0 && rate > 0.0);
    }

    /// Local runtime sanity: a ping-pong completes and yields one sample per iteration.
    #[test]
    fn local_ping_pong_completes() {
        completes(&Rig::real(LOCAL, 0), 64, 20, 200);
    }

    /// The same over the tcp runtime, reads and large writes included.
    #[test]
    fn tcp_ping_pong_and_stream_complete() {
        let rt = Rig::real(Runtime::Tcp, 0);
        for bytes in [64, 3 << 20] {
            completes(&rt, bytes, 5, 50);
        }
    }
}
