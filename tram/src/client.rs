//! The client: Algorithm 1.
//!
//! A client writes its message into its own `HM` buffer on every replica of the lca of the
//! message's destinations (Steps 1.3-1.6) and waits for a response from each destination group:
//! a server that delivers the message writes the message's sequence number (+1) into the
//! client's `RESP` word for that server. The latency of a multicast is the time until every
//! destination group answered, as in RamCast, so the two protocols are measured alike.
//!
//! Buffer reuse: clients are closed-loop (one multicast in flight), and a slot is written again
//! only `hm_slots` multicasts later to the same lca. By then the message in it completed, so
//! some destination delivered it, so the lca ordered it: it sits in a quorum of the lca's logs
//! with its position, and no present or future leader of the lca reads that slot again
//! ([`crate::catchup`] resets `slot_in` past it). No message is ever overwritten unread.

use crate::config::Config;
use crate::layout::{local, remote, Hm, Layout, HM, RESP};
use multicast::{
    Client, Completed, DestSet, GroupId, Membership, MsgId, MulticastError, MulticastResult,
};
use std::collections::VecDeque;
use std::sync::Arc;
use transport::{Nanos, Nic, Process, ProcessId, Progress, RegionSpec, Work, WriteFlags};

#[derive(Clone, Copy, Debug)]
struct InFlight {
    seq: u64,
    dst: DestSet,
    sent_at: Nanos,
    answered: DestSet,
}

/// A TRAM client.
#[derive(Debug)]
pub struct TramClient {
    cfg: Arc<Config>,
    layout: Layout,
    me: ProcessId,
    index: usize,
    /// `slot[g]` of Algorithm 1: the next position in this client's buffer at group `g`.
    slot: Vec<u64>,
    next_seq: u64,
    in_flight: Option<InFlight>,
    completed: VecDeque<Completed>,
    scratch: Vec<u8>,
    entry: Vec<u8>,
}

impl TramClient {
    /// Client `index` of `cfg`.
    pub fn new(cfg: Arc<Config>, index: usize) -> TramClient {
        TramClient {
            layout: Layout::new(&cfg, cfg.tree.root()),
            me: cfg.client(index),
            index,
            slot: vec![0; cfg.group_count()],
            next_seq: 0,
            in_flight: None,
            completed: VecDeque::new(),
            scratch: Vec::new(),
            entry: Vec::new(),
            cfg,
        }
    }

    fn read_responses<N: Nic>(&mut self, nic: &mut N) -> bool {
        let Some(f) = &mut self.in_flight else {
            return false;
        };
        let mut worked = false;
        for g in f.dst.groups() {
            if f.answered.contains(g) {
                continue;
            }
            let answered = self.cfg.members(g).any(|p| {
                nic.work(Work::Scan, 1);
                nic.load_u64(local(RESP, Layout::response(p)))
                    .expect("own region")
                    > f.seq
            });
            if answered {
                f.answered = f.answered.with(g);
                worked = true;
            }
        }
        if f.answered == f.dst {
            let now = nic.now();
            self.completed
                .push_back(Completed::at(MsgId::new(self.me, f.seq), f.sent_at, now));
            self.in_flight = None;
        }
        worked
    }
}

impl<N: Nic> Process<N> for TramClient {
    fn regions(&self) -> Vec<RegionSpec> {
        Layout::client_regions(&self.cfg)
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        // Only failed writes complete (to a crashed replica); they need nothing but draining.
        let mut worked = false;
        while nic.poll_completion().is_some() {
            worked = true;
        }
        Progress::worked(self.read_responses(nic) || worked)
    }
}

impl<N: Nic> Client<N> for TramClient {
    fn try_multicast(&mut self, nic: &mut N, dst: DestSet, payload: &[u8]) -> MulticastResult {
        MulticastError::check_destinations(dst, self.cfg.group_count())?;
        MulticastError::check_size(payload.len(), Layout::max_message(self.cfg.slot_bytes), dst)?;
        if self.in_flight.is_some() {
            return Err(MulticastError::InFlight);
        }
        // Step 1.3: the lca of the destinations.
        let lca: GroupId = self.cfg.tree.lca(dst);
        let seq = self.next_seq;
        let pos = self.slot[lca.0 as usize];
        self.scratch.clear();
        Hm {
            client: self.index as u32,
            seq,
            dst,
            val: payload,
        }
        .encode(&mut self.scratch);
        self.layout
            .hm_codec
            .encode(pos as u32, &self.scratch, &mut self.entry)
            .expect("size checked above");
        nic.work(Work::Copy, self.entry.len() as u64);
        let at = self
            .layout
            .hm_slot(self.layout.client_buffer(self.index), pos);
        let flags = WriteFlags::NONE.inline_if_fits(self.entry.len(), nic.limits());
        // Steps 1.4-1.5: write the message into this client's buffer on every lca replica.
        for p in self.cfg.members(lca) {
            // A failed write (a crashed replica) is reported as a completion and needs nothing:
            // the other replicas have the message.
            let _ = nic.post_write(remote(p, HM, at), &self.entry, flags);
        }
        // Step 1.6.
        self.slot[lca.0 as usize] += 1;
        self.next_seq += 1;
        self.in_flight = Some(InFlight {
            seq,
            dst,
            sent_at: nic.now(),
            answered: DestSet::EMPTY,
        });
        Ok(MsgId::new(self.me, seq))
    }

    fn poll_completed(&mut self) -> Option<Completed> {
        self.completed.pop_front()
    }
}
