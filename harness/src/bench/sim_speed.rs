//! `harness bench sim`: how many simulated events per second the simulator processes, on an
//! all-to-all ping workload: every process keeps one ping outstanding to every other process
//! (a write-with-immediate), answered by a pong; each pong triggers the next ping.

use bytes::Bytes;
use transport::runtime::sim::{Profile, Sim, SimConfig};
use transport::*;

const PING: u32 = 1 << 31;

/// One all-to-all pinger.
#[derive(Debug)]
pub(crate) struct AllToAll {
    n: usize,
    started: bool,
    /// Round trips completed.
    pub(crate) pongs: u64,
}

impl AllToAll {
    pub(crate) fn new(n: usize) -> AllToAll {
        AllToAll {
            n,
            started: false,
            pongs: 0,
        }
    }

    fn write_imm<N: Nic>(nic: &mut N, to: ProcessId, imm: u32) {
        let op = Op::Write {
            dst: RemoteAddr::new(to, RegionId(0), 8 * nic.id().index()),
            data: Data::Bytes(Bytes::from_static(&[7; 8])),
            imm: Some(imm),
            flags: WriteFlags::NONE.inline(),
        };
        nic.post(op).expect("valid ping");
    }
}

impl<N: Nic> Process<N> for AllToAll {
    fn regions(&self) -> Vec<RegionSpec> {
        vec![RegionSpec::new(8 * self.n).with_default(Access::Write)]
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut worked = false;
        if !self.started {
            self.started = true;
            for p in 0..self.n as u32 {
                if p != nic.id().0 {
                    Self::write_imm(nic, ProcessId(p), PING);
                }
            }
            worked = true;
        }
        while let Some(r) = nic.poll_recv() {
            worked = true;
            if let Recv::Immediate { from, imm, .. } = r {
                if imm & PING != 0 {
                    Self::write_imm(nic, from, 0);
                } else {
                    self.pongs += 1;
                    Self::write_imm(nic, from, PING);
                }
            }
        }
        Progress::worked(worked)
    }
}

/// The outcome of one speed run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Speed {
    pub(crate) events: u64,
    pub(crate) polls: u64,
    pub(crate) ops: u64,
    pub(crate) round_trips: u64,
    pub(crate) wall_s: f64,
    pub(crate) virtual_time: Nanos,
}

/// Runs `n` all-to-all pingers for `duration` of virtual time.
pub(crate) fn run(profile: &Profile, seed: u64, n: usize, duration: Nanos) -> Speed {
    let procs = (0..n).map(|_| AllToAll::new(n)).collect();
    let mut sim = Sim::new(SimConfig::new(seed, profile.clone()), procs);
    let t = std::time::Instant::now();
    sim.run(Some(duration));
    let wall_s = t.elapsed().as_secs_f64();
    let stats = sim.stats();
    Speed {
        events: stats.events,
        polls: stats.polls,
        ops: stats.ops,
        round_trips: sim.processes().iter().map(|p| p.pongs).sum(),
        wall_s,
        virtual_time: sim.now(),
    }
}
