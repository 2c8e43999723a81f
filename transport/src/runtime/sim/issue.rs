//! An op leaving its sender: the cost model's bookings (the sender's egress, the two-way
//! limit, the fabric's uplinks, the receiver's ingress), latency draws and injected link
//! delay, which together decide when it lands and when its completion is about due.

use super::nic::Posted;
use super::{failed, qp_of, qp_range, Event, InFlight, Sim, SimNic};
use crate::nic::{Completion, Op, OpKind, Qp, Status};
use crate::process::{Process, ProcessId};
use crate::time::Nanos;

impl<P: Process<SimNic>> Sim<P> {
    /// Issues a posted op; a network op returns when its completion is about due (see
    /// [`super::posting`]).
    pub(super) fn issue(&mut self, s: u32, posted: Posted) -> Option<Nanos> {
        let kind = posted.op.kind();
        self.digest
            .fold(posted.at.0 ^ (kind as u64) << 56 ^ (posted.op.peer().0 as u64) << 32);
        self.digest.fold(posted.op.wire_bytes() as u64);
        let d = posted.op.peer().0;
        match posted.op {
            Op::SetAccess { .. } => {}
            Op::Reconnect { .. } => {
                // Both queue pairs to the peer are re-established.
                let mut ready = Nanos::ZERO;
                for k in qp_range(d) {
                    let qp = &mut self.nics[s as usize].qps[k];
                    qp.state.reconnect();
                    qp.ready_at =
                        posted.at.max(qp.ready_at) + Nanos(self.cfg.profile.nic.reconnect_ns);
                    ready = ready.max(qp.ready_at);
                }
                let c = Completion {
                    wr: posted.wr,
                    kind: OpKind::Reconnect,
                    peer: ProcessId(d),
                    status: Status::Success,
                    value: None,
                };
                self.complete(s, ready, c);
            }
            _ => return Some(self.issue_network(s, d, posted)),
        }
        None
    }

    /// Issues a network op and returns when its completion is about due: at once if its queue
    /// pair is in error, else one calibrated latency (and a read's response) after it lands.
    fn issue_network(&mut self, s: u32, d: u32, posted: Posted) -> Nanos {
        self.stats.ops += 1;
        let k = qp_of(d, &posted.op);
        let qp = self.nics[s as usize].qps[k];
        let Ok(epoch) = qp.state.admit() else {
            let c = failed(&posted, ProcessId(d), Status::Flushed);
            let at = posted.at;
            self.complete(s, at, c);
            return at;
        };
        let prof = &self.cfg.profile;
        let bytes = posted.op.wire_bytes();
        let wire = self.wire.serialisation(bytes);
        let dma = match &posted.op {
            Op::Write { flags, .. } if !flags.inline && bytes > 0 => Nanos(prof.nic.dma_read_ns),
            Op::Send { data, .. } if data.len() > prof.nic.inline_max_bytes => {
                Nanos(prof.nic.dma_read_ns)
            }
            _ => Nanos::ZERO,
        };
        let gap = wire.max(self.wire.wr_gap);
        let t0 = posted.at.max(qp.ready_at) + dma;
        // Ports move packets, not whole ops: an op of one packet interleaves with larger ones
        // queued ahead of it (the NIC schedules queue pairs per packet, the switch interleaves
        // senders per packet), so it waits at most one packet behind them, and only behind the
        // other single-packet ops in full; larger ops queue whole. Nothing overtakes an earlier
        // op of its own queue pair. Control queue pairs run at a higher service level (an IB SL
        // mapped to its own virtual lane, a RoCE traffic class): their ops wait only for the
        // packet on the wire and for other control ops, never behind data.
        let packet = self.wire.packet;
        let class = posted.op.qp().index();
        let small = wire <= packet || posted.op.qp() == Qp::Control;
        let cpu = &mut self.cpus[s as usize];
        let start = if small {
            let s0 =
                (t0 + cpu.egress_free.saturating_sub(t0).min(packet)).max(cpu.egress_small[class]);
            cpu.egress_small[class] = s0 + gap;
            s0
        } else {
            t0.max(cpu.egress_free)
        }
        .max(qp.egress_end);
        cpu.egress_free = cpu.egress_free.max(t0) + gap;
        // A two-way limit: a transfer also passes through the sender's and the receiver's
        // shared send + receive budget, booked in issue order like the ingress (single-packet
        // ops, a negligible share of bytes, do not book it). It lands no earlier than both
        // bookings end.
        let duplex = if small { None } else { self.wire.duplex(bytes) };
        let sent = duplex.map(|dw| {
            cpu.duplex_free = cpu.duplex_free.max(start) + dw;
            cpu.duplex_free
        });
        // The receiver's ingress is accounted in issue order, which approximates arrival order
        // without an extra event per op. Each op takes at least 1 ns of it and lands after the
        // previous op of its queue pair, so no tie-break policy can reorder a pair (RC order).
        // An injected link delay is added after that accounting, so a slow link delays its own
        // traffic without blocking other senders' at the receiver.
        let arrive = start + self.one_way(s, d);
        // Between racks a transfer also passes through the source rack's uplinks and the
        // target rack's downlinks, shared by the whole rack and booked the same way.
        let uplink = match self.wire.uplink(bytes) {
            Some(uw) if !small && self.crosses_racks(s, d) => {
                let (rs, rd) = (self.cpus[s as usize].rack, self.cpus[d as usize].rack);
                let up = &mut self.uplinks[rs as usize].up_free;
                *up = (*up).max(start) + uw;
                let up_done = *up;
                let down = &mut self.uplinks[rd as usize].down_free;
                *down = (*down).max(arrive) + uw;
                Some((up_done + (arrive - start)).max(*down))
            }
            _ => None,
        };
        let cpu = &mut self.cpus[d as usize];
        let occupy = wire.max(Nanos(1));
        let land = if small {
            let l = (arrive + cpu.ingress_free.saturating_sub(arrive).min(packet))
                .max(cpu.ingress_small[class])
                + occupy;
            cpu.ingress_small[class] = l;
            l
        } else {
            arrive.max(cpu.ingress_free) + occupy
        }
        .max(qp.last_land + Nanos(1));
        cpu.ingress_free = cpu.ingress_free.max(arrive) + occupy;
        let land = match (duplex, sent) {
            (Some(dw), Some(sent)) => {
                cpu.duplex_free = cpu.duplex_free.max(arrive) + dw;
                land.max(cpu.duplex_free).max(sent + (arrive - start))
            }
            _ => land,
        };
        let land = uplink.map_or(land, |u| land.max(u));
        // A torn op's pieces land over a span drawn now, so the queue pair's next op lands
        // after its last piece.
        let spread = match (&self.cfg.tearing, &posted.op) {
            (Some(t), Op::Write { dst, data, .. }) if t.tears(dst.offset, data.len()) => {
                Nanos(self.tear_rng.below(t.window.0) + 1)
            }
            (Some(t), Op::Read { src, len, .. }) if t.tears(src.offset, *len) => {
                Nanos(self.tear_rng.below(t.window.0) + 1)
            }
            _ => Nanos::ZERO,
        };
        // The pair's order is kept before an injected link delay is added (the delayed link
        // keeps its own), so `last_land` must not include the delay: folded in, every later op
        // of the pair would add the delay again on top of it (issue 44 item 2: a 1 ms delay
        // grew by 1 ms per torn op, and queue pairs fell seconds behind).
        let q = &mut self.nics[s as usize].qps[k];
        q.egress_end = start + gap;
        q.last_land = land + spread;
        let land = self.delay_on_link(s, d, land, spread);
        let response = match &posted.op {
            Op::Read { len, .. } => self.wire.serialisation(*len),
            _ => Nanos::ZERO,
        };
        let completes = land
            + spread
            + Nanos(self.cfg.profile.nic.write_latency_ns)
            + self.wire.hops(self.crosses_racks(s, d))
            + response;
        let slot = self.alloc(InFlight {
            src: s,
            posted,
            epoch,
            lost: false,
            spread,
            landing: false,
        });
        self.schedule(land, Event::Land { slot });
        completes
    }

    /// The one-way latency of the next op from `s` to `d`: the profile's, with a deviation
    /// drawn from its declared distribution if it has one, and two more switches between racks.
    pub(super) fn one_way(&mut self, s: u32, d: u32) -> Nanos {
        let base = self.cfg.profile.nic.write_latency_ns;
        let base = match &self.cfg.profile.nic.write_latency_dist {
            None => Nanos(base),
            Some(dist) => {
                let dev = dist.deviation_ns(self.latency_rng.unit_f64());
                Nanos((base as f64 + dev).round().max(0.0) as u64)
            }
        };
        base + self.wire.hops(self.crosses_racks(s, d))
    }

    /// Whether `s` and `d` sit in different racks of the profile's fabric.
    fn crosses_racks(&self, s: u32, d: u32) -> bool {
        self.cpus[s as usize].rack != self.cpus[d as usize].rack
    }

    /// Applies injected link delay to an op of `from -> to` that would land at `land` without
    /// it, keeping the pair's RC order: while a fault on the pair is active, or any of its
    /// delayed ops is still in flight, each op lands strictly after the pair's previous one
    /// has finished landing (its last piece, `spread` after its first, under tearing).
    fn delay_on_link(&mut self, from: u32, to: u32, mut land: Nanos, spread: Nanos) -> Nanos {
        if self.links.is_empty() {
            return land;
        }
        let now = self.now;
        self.links.retain(|l| l.until > now || l.last_land >= now);
        for k in 0..self.links.len() {
            let l = &self.links[k];
            if l.from.0 != from || l.to.0 != to {
                continue;
            }
            if l.until > now {
                land += l.delay;
                if l.jitter.0 > 0 {
                    land += Nanos(self.sched_rng.below(l.jitter.0 + 1));
                }
            }
            let l = &mut self.links[k];
            land = land.max(l.last_land + Nanos(1));
            l.last_land = land + spread;
        }
        land
    }
}
