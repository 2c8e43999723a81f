//! A Heron client (Algorithm 9, lines 1-3): multicasts each request to the partitions it
//! involves and waits for its response, one request at a time (closed loop).
//!
//! Replicas answer in the client's response region, one slot per server of the run, so a
//! replica's answer never overwrites another's; the request returns once a replica of every
//! partition it involves answered (how the thesis's clients measure latency, section 5.3). It keeps its history (invocations and responses, with times) for the
//! linearizability checks.

use crate::app::Application;
use crate::config::Config;
use crate::wire;
use hdrhistogram::Histogram;
use multicast::workload::{latency_histogram, section_of, Latencies, SECTIONS};
use multicast::{Client, DestSet, Membership};
use std::sync::Arc;
use transport::slot::SlotCodec;
use transport::{LocalAddr, Nanos, Nic, Process, Progress, Purpose, RegionId, RegionSpec, Rng};

/// The codec of a response slot.
pub(crate) fn response_codec(cfg: &Config) -> SlotCodec {
    SlotCodec::new(SlotCodec::encoded_len(cfg.max_response)).expect("a valid slot size")
}

/// The client's response region.
pub(crate) fn responses(cfg: &Config) -> RegionId {
    RegionId(cfg.client_region_base)
}

/// How long a client waits before retrying a multicast the layer refused (buffers full).
const RETRY: Nanos = Nanos(1_000);

/// One request of a client's history (serde: a tcp node reports it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Call {
    /// The client's sequence number for it.
    pub seq: u32,
    /// The request.
    pub request: Vec<u8>,
    /// When the client issued it.
    pub invoked: Nanos,
    /// The response and when it came, if it did.
    pub returned: Option<(Nanos, Vec<u8>)>,
}

/// When a client issues requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Requests completed before this time are not counted in [`HeronClient::completed`];
    /// clients start over the first half of the warm-up.
    pub warmup_end: Nanos,
    /// No request is issued from this time on.
    pub stop_at: Nanos,
}

/// A closed-loop Heron client over multicast client `C`.
#[derive(Debug)]
pub struct HeronClient<C, A> {
    mcast: C,
    app: Arc<A>,
    cfg: Arc<Config>,
    index: usize,
    rng: Rng,
    window: Window,
    codec: SlotCodec,
    seq: u32,
    /// The request in flight.
    current: Option<Current>,
    retry_at: Option<Nanos>,
    /// Every request issued, kept when recording (tests, checks).
    history: Option<Vec<Call>>,
    completed: u64,
    latency_sum: Nanos,
    /// Latencies after the warm-up, per kind of request and single or multi-partition.
    latency: Vec<[Latencies; 2]>,
    /// The same per section of the window, as counts and sums ([`Tally`]).
    sections: Vec<Vec<[Tally; 2]>>,
    idle: bool,
    /// When the first request is issued: drawn over the first half of the warm-up, as every
    /// closed-loop client of the workbench ([`multicast::workload::staggered_start`]).
    start_at: Nanos,
}

/// A client's request in flight.
#[derive(Debug)]
struct Current {
    /// Its history entry.
    call: Call,
    /// Its partitions, worked out once: every poll looks for their answers.
    dst: DestSet,
    /// Whether the multicast went out.
    sent: bool,
    /// Whether the multicast layer completed it (its client takes one multicast at a time).
    multicast_done: bool,
}

/// Requests completed and their latencies summed, in nanoseconds: what one section of the
/// measurement window needs for the intervals of a rate and of a mean (sectioning, see
/// [`multicast::workload::Section`]; quantiles would need a histogram per section, kind and
/// span, ~200 KB each, for every point a figure keeps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    /// Requests completed.
    pub completed: u64,
    /// Their latencies summed, nanoseconds.
    pub latency_ns: u64,
}

impl Tally {
    /// Adds `o`'s requests.
    pub fn add(&mut self, o: &Tally) {
        self.completed += o.completed;
        self.latency_ns += o.latency_ns;
    }
}

/// The latencies of `clients` ([`HeronClient::latencies`]) summed up in histograms, per kind of
/// request (`kinds` of them) and single or multi-partition.
pub fn latency_histograms<'a>(
    kinds: usize,
    clients: impl IntoIterator<Item = &'a [[Latencies; 2]]>,
) -> Vec<[Histogram<u64>; 2]> {
    let clients: Vec<_> = clients.into_iter().collect();
    (0..kinds)
        .map(|k| [0, 1].map(|span| latency_histogram(clients.iter().map(|c| &c[k][span]))))
        .collect()
}

impl<C, A: Application> HeronClient<C, A> {
    /// Client `index` of `cfg`; its requests are drawn from a stream derived from `seed`.
    /// `record` keeps its history ([`HeronClient::history`]).
    pub fn new(
        mcast: C,
        app: Arc<A>,
        cfg: Arc<Config>,
        index: usize,
        seed: u64,
        window: Window,
        record: bool,
    ) -> HeronClient<C, A> {
        let id = cfg.client(index);
        let latency = vec![Default::default(); app.kinds().len()];
        let sections = vec![vec![Default::default(); app.kinds().len()]; SECTIONS];
        let mut rng = Rng::derive(seed, Purpose::Workload, id.0 as u64);
        HeronClient {
            start_at: multicast::workload::staggered_start(window.warmup_end, &mut rng),
            mcast,
            app,
            codec: response_codec(&cfg),
            cfg,
            index,
            rng,
            window,
            seq: 0,
            current: None,
            retry_at: None,
            history: record.then(Vec::new),
            completed: 0,
            latency_sum: Nanos::ZERO,
            latency,
            sections,
            idle: false,
        }
    }

    /// Every request issued, in order, with its response if it came; the request in flight
    /// at the end is the last entry if its multicast went out (it may or may not take effect).
    ///
    /// # Panics
    /// If the client was built without recording.
    pub fn history(&self) -> Vec<Call> {
        let mut h = self
            .history
            .clone()
            .expect("a client built with record keeps its history");
        if let Some(c) = self.current.as_ref().filter(|c| c.sent) {
            h.push(c.call.clone());
        }
        h
    }

    /// Requests that completed after the warm-up, and their mean latency.
    pub fn completed(&self) -> (u64, Nanos) {
        let mean = match self.completed {
            0 => Nanos::ZERO,
            n => Nanos(self.latency_sum.0 / n),
        };
        (self.completed, mean)
    }

    /// Latencies of the requests completed after the warm-up: per kind of request
    /// ([`Application::kinds`]), single-partition then multi-partition.
    pub fn latencies(&self) -> &[[Latencies; 2]] {
        &self.latency
    }

    /// Per section of the window ([`SECTIONS`] of them, by when each request was issued), per
    /// kind of request, single then multi-partition: what completed.
    pub fn sections(&self) -> &[Vec<[Tally; 2]>] {
        &self.sections
    }

    /// The multicast client underneath.
    pub fn multicast(&self) -> &C {
        &self.mcast
    }

    /// Looks for answers to the request in flight in the slots of its partitions' servers (a
    /// server of any other partition never executes it, so never writes its sequence number):
    /// the request returns once one replica of every partition it involves answered (the
    /// thesis's clients measure latency that way, section 5.3), with the first answer.
    fn read_responses<N: Nic>(&mut self, nic: &mut N) -> bool {
        let Some(Current { call, dst, .. }) = &mut self.current else {
            return false;
        };
        if call.returned.is_some() {
            return false;
        }
        let mut first = None;
        let mut every = true;
        let mut buf = Vec::new();
        for g in dst.groups() {
            let mut answered = false;
            for server in self.cfg.members(g) {
                // Where the server writes its answer (`coordination`): its own slot.
                let at = LocalAddr::new(
                    responses(&self.cfg),
                    server.index() * self.codec.slot_bytes(),
                );
                if let Ok(Ok(range)) = self.codec.read(nic, at, call.seq, &mut buf) {
                    first.get_or_insert_with(|| buf[range].to_vec());
                    answered = true;
                }
            }
            every &= answered;
        }
        match first {
            Some(response) if every => {
                call.returned = Some((nic.now(), response));
                true
            }
            _ => false,
        }
    }
}

impl<N: Nic, C: Client<N>, A: Application> Process<N> for HeronClient<C, A> {
    fn regions(&self) -> Vec<RegionSpec> {
        let mut r = self.mcast.regions();
        debug_assert_eq!(r.len(), self.cfg.client_region_base as usize);
        r.push(
            RegionSpec::new(self.cfg.servers() * self.codec.slot_bytes())
                .with_default(transport::Access::Write),
        );
        r
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let below = self.mcast.poll(nic);
        let mut worked = false;
        while self.mcast.poll_completed().is_some() {
            if let Some(c) = &mut self.current {
                c.multicast_done = true;
            }
            worked = true;
        }
        worked |= self.read_responses(nic);
        let now = nic.now();
        if let Some(Current {
            call,
            dst,
            multicast_done: true,
            ..
        }) = &self.current
        {
            if let Some((at, _)) = &call.returned {
                if *at >= self.window.warmup_end {
                    self.completed += 1;
                    let took = *at - call.invoked;
                    self.latency_sum += took;
                    let kind = self.app.kind_of(&call.request);
                    let multi = dst.len() > 1;
                    self.latency[kind][multi as usize].record(took.as_nanos().max(1));
                    let w = self.window;
                    if let Some(i) = section_of(call.invoked, w.warmup_end, w.stop_at) {
                        let t = &mut self.sections[i][kind][multi as usize];
                        t.completed += 1;
                        t.latency_ns += took.as_nanos();
                    }
                }
                let call = self.current.take().expect("checked").call;
                if let Some(h) = &mut self.history {
                    h.push(call);
                }
                worked = true;
            }
        }
        if self.current.is_none() && now >= self.start_at && now < self.window.stop_at {
            self.seq += 1;
            let request = self
                .app
                .generate(self.index, u64::from(self.seq - 1), &mut self.rng);
            let dst = DestSet::of(self.app.destinations(&request)).expect("partitions are groups");
            let call = Call {
                seq: self.seq,
                request,
                invoked: now,
                returned: None,
            };
            self.current = Some(Current {
                call,
                dst,
                sent: false,
                multicast_done: false,
            });
            worked = true;
        }
        if let Some(Current {
            call,
            dst,
            sent: sent @ false,
            ..
        }) = &mut self.current
        {
            if self.retry_at.is_none_or(|t| now >= t) {
                let payload = wire::encode(self.index as u32, call.seq, &call.request);
                match self.mcast.try_multicast(nic, *dst, &payload) {
                    Ok(_) => {
                        *sent = true;
                        self.retry_at = None;
                        worked = true;
                    }
                    Err(
                        multicast::MulticastError::Full { .. }
                        | multicast::MulticastError::InFlight,
                    ) => {
                        self.retry_at = Some(now + RETRY);
                    }
                    Err(e) => panic!("request {} of client {} refused: {e}", call.seq, self.index),
                }
            }
        }
        self.idle = self.current.is_none() && now >= self.window.stop_at;
        let start = (self.seq == 0 && now < self.start_at).then_some(self.start_at);
        let wake = [self.retry_at, self.mcast.deadline(), start]
            .into_iter()
            .flatten()
            .min();
        below.merge(Progress::worked(worked).wake_at(wake))
    }

    fn done(&self) -> bool {
        self.idle
    }
}
