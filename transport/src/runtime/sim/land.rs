//! An op at its target: the access check, its effect on the target's memory (at one instant,
//! or piece by piece under tearing), and what goes back: read responses and acknowledgements.

use super::tear::{Landing, Moved};
use super::{failed, qp_of, Event, InFlight, Sim, SimNic};
use crate::nic::{Completion, Op, OpKind, Recv, Status};
use crate::process::{Process, ProcessId};
use crate::region::{LocalAddr, RegionId};
use crate::time::Nanos;

impl<P: Process<SimNic>> Sim<P> {
    pub(super) fn land(&mut self, slot: u32) -> u32 {
        let f = self.take(slot);
        let (s, d) = (f.src, f.posted.op.peer().0);
        if f.lost {
            // Its sender crashed first; nobody is left to see a completion.
            return d;
        }
        let now = self.now;
        // The acknowledgement travels back one way; completions of a queue pair keep post
        // order even where the latency varies.
        let k = qp_of(d, &f.posted.op);
        let ack = self.ack_time(s, d, k);
        if self.cpus[d as usize].crashed {
            let c = failed(&f.posted, ProcessId(d), Status::PeerUnreachable);
            let t = now + Nanos(self.cfg.profile.nic.unreachable_timeout_ns);
            self.complete(s, t, c);
            return d;
        }
        let qp = self.nics[s as usize].qps[k];
        if !qp.state.executes(f.epoch) {
            let c = failed(&f.posted, ProcessId(d), Status::Flushed);
            self.complete(s, ack, c);
            return d;
        }
        let src = ProcessId(s);
        let mem = &mut self.nics[d as usize].memory;
        let (allowed, region) = match &f.posted.op {
            Op::Write { dst, .. } => (mem.access(dst.region, src).can_write(), dst.region),
            Op::Read { src: at, .. } => (mem.access(at.region, src).can_read(), at.region),
            Op::CompareSwap { dst, .. } | Op::FetchAdd { dst, .. } => {
                (mem.access(dst.region, src).can_atomic(), dst.region)
            }
            _ => (true, RegionId(0)),
        };
        if !allowed {
            self.nics[s as usize].qps[k]
                .state
                .failed(f.epoch, Status::AccessDenied);
            let c = failed(&f.posted, ProcessId(d), Status::AccessDenied);
            self.complete(s, ack, c);
            self.digest.fold(0xDE41 ^ region.0 as u64);
            return d;
        }
        if f.spread > Nanos::ZERO {
            return self.start_landing(f);
        }
        let mut value = None;
        match &f.posted.op {
            Op::Write { dst, data, imm, .. } => {
                let at = LocalAddr::new(dst.region, dst.offset);
                mem.write_data(at, data).expect("validated at post");
                if let Some(imm) = imm {
                    self.nics[d as usize].rq.push_back(Recv::Immediate {
                        from: src,
                        imm: *imm,
                        at,
                        len: data.len(),
                    });
                }
                self.wake(d, now);
            }
            Op::Send { data, .. } => {
                self.nics[d as usize].rq.push_back(Recv::Message {
                    from: src,
                    data: data.clone(),
                });
                self.wake(d, now);
            }
            Op::Read { src: at, len, .. } => {
                let mut buf = vec![0; *len];
                mem.read(LocalAddr::new(at.region, at.offset), &mut buf)
                    .expect("validated at post");
                return self.respond(f, buf);
            }
            Op::CompareSwap { dst, expect, swap } => {
                let at = LocalAddr::new(dst.region, dst.offset);
                let old = mem.load_u64(at).expect("validated at post");
                if old == *expect {
                    mem.store_u64(at, *swap).expect("validated at post");
                    self.wake(d, now);
                }
                value = Some(old);
            }
            Op::FetchAdd { dst, add } => {
                let at = LocalAddr::new(dst.region, dst.offset);
                let old = mem.load_u64(at).expect("validated at post");
                mem.store_u64(at, old.wrapping_add(*add))
                    .expect("validated at post");
                self.wake(d, now);
                value = Some(old);
            }
            Op::SetAccess { .. } | Op::Reconnect { .. } => unreachable!("not network ops"),
        }
        if f.posted.op.signaled() {
            let c = Completion {
                wr: f.posted.wr,
                kind: f.posted.op.kind(),
                peer: ProcessId(d),
                status: Status::Success,
                value,
            };
            self.complete(s, ack, c);
        }
        d
    }

    /// When the acknowledgement of an op of queue pair `k` from `s` that lands at `d` now gets
    /// back: one way, and never before an earlier one of the pair (completions keep post order).
    fn ack_time(&mut self, s: u32, d: u32, k: usize) -> Nanos {
        let back = self.now + self.one_way(d, s);
        let qp = &mut self.nics[s as usize].qps[k];
        let ack = back.max(qp.last_ack + Nanos(1));
        qp.last_ack = ack;
        ack
    }

    /// Sends back a READ's response, `buf`: it serialises on the target's egress and the
    /// reader's ingress, after the pair's earlier responses.
    fn respond(&mut self, f: InFlight, buf: Vec<u8>) -> u32 {
        let (s, d) = (f.src, f.posted.op.peer().0);
        let k = qp_of(d, &f.posted.op);
        let wire = self.wire.serialisation(buf.len());
        let start = self.now.max(self.cpus[d as usize].egress_free);
        self.cpus[d as usize].egress_free = start + wire;
        let arrive = start + self.one_way(d, s);
        let ingress = &mut self.cpus[s as usize].ingress_free;
        let back = arrive.max(*ingress) + wire;
        *ingress = back;
        let qp = &mut self.nics[s as usize].qps[k];
        let back = back.max(qp.last_read + Nanos(1));
        qp.last_read = back;
        let slot = self.alloc(f);
        self.read_data.insert(slot, buf);
        self.schedule(back, Event::ReadReturn { slot });
        d
    }

    /// Starts a torn op that passed its checks: its first piece now, the others at instants
    /// drawn over its spread (see [`super::tear`]).
    fn start_landing(&mut self, mut f: InFlight) -> u32 {
        let d = f.posted.op.peer().0;
        let tearing = self.cfg.tearing.expect("ops spread only under tearing");
        let (at, moved) = match &f.posted.op {
            Op::Write { dst, data, .. } => (
                LocalAddr::new(dst.region, dst.offset),
                Moved::Write(data.clone()),
            ),
            Op::Read { src, len, .. } => (
                LocalAddr::new(src.region, src.offset),
                Moved::Read(vec![0; *len]),
            ),
            _ => unreachable!("only writes and reads span several words"),
        };
        f.landing = true;
        let (from, span) = (ProcessId(f.src), self.now..self.now + f.spread);
        let slot = self.alloc(f);
        let mut landing = Landing::plan(&tearing, slot, from, at, moved, span, &mut self.tear_rng);
        let nic = &mut self.nics[d as usize];
        landing.step(&mut nic.memory);
        let next = landing.times.pop_front().expect("a torn op has two pieces");
        let wakes = landing.writes();
        nic.landings.push(landing);
        self.stats.torn_ops += 1;
        if wakes {
            self.wake(d, self.now);
        }
        self.schedule(next, Event::Piece { slot });
        d
    }

    /// The next piece of a torn op; after its last, the op completes as an untorn one would.
    pub(super) fn piece(&mut self, slot: u32) -> u32 {
        let f = self.inflight[slot as usize]
            .as_ref()
            .expect("a landing op stays in flight");
        let (s, d) = (f.src, f.posted.op.peer().0);
        let nic = &mut self.nics[d as usize];
        let i = nic
            .landings
            .iter()
            .position(|l| l.slot == slot)
            .expect("its target keeps a landing op");
        if self.cpus[d as usize].crashed {
            // The target's NIC died with it: the rest never lands, the sender hears nothing.
            nic.landings.remove(i);
            let f = self.take(slot);
            let c = failed(&f.posted, ProcessId(d), Status::PeerUnreachable);
            let t = self.now + Nanos(self.cfg.profile.nic.unreachable_timeout_ns);
            self.complete(s, t, c);
            return d;
        }
        let landing = &mut nic.landings[i];
        landing.step(&mut nic.memory);
        let (next, wakes) = (landing.times.pop_front(), landing.writes());
        if wakes {
            self.wake(d, self.now);
        }
        if let Some(t) = next {
            self.schedule(t, Event::Piece { slot });
            return d;
        }
        let landing = self.nics[d as usize].landings.remove(i);
        let f = self.take(slot);
        match landing.moved {
            Moved::Read(buf) => self.respond(f, buf),
            Moved::Write(_) => {
                if let Op::Write {
                    dst,
                    data,
                    imm: Some(imm),
                    ..
                } = &f.posted.op
                {
                    self.nics[d as usize].rq.push_back(Recv::Immediate {
                        from: ProcessId(s),
                        imm: *imm,
                        at: LocalAddr::new(dst.region, dst.offset),
                        len: data.len(),
                    });
                }
                if f.posted.op.signaled() {
                    let ack = self.ack_time(s, d, qp_of(d, &f.posted.op));
                    let c = Completion {
                        wr: f.posted.wr,
                        kind: f.posted.op.kind(),
                        peer: ProcessId(d),
                        status: Status::Success,
                        value: None,
                    };
                    self.complete(s, ack, c);
                }
                d
            }
        }
    }

    pub(super) fn read_return(&mut self, slot: u32) -> u32 {
        let f = self.take(slot);
        let data = self.read_data.remove(&slot).expect("read data kept");
        let s = f.src;
        if let Op::Read { into, signaled, .. } = &f.posted.op {
            if !self.cpus[s as usize].crashed {
                self.nics[s as usize]
                    .memory
                    .write(*into, &data)
                    .expect("validated at post");
                if *signaled {
                    let c = Completion {
                        wr: f.posted.wr,
                        kind: OpKind::Read,
                        peer: f.posted.op.peer(),
                        status: Status::Success,
                        value: None,
                    };
                    self.nics[s as usize].cq.push_back(c);
                }
                self.wake(s, self.now);
            }
        }
        s
    }
}
