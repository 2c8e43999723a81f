//! The closed-loop client workload of the papers, shared by every multicast protocol: multicast
//! one message, wait for the first response of every destination group, record the latency,
//! multicast the next.

use crate::log::Multicast;
use crate::role::{Client, Completed, MulticastError};
use crate::tree::Tree;
use crate::{DestSet, GroupId, MsgId};
use hdrhistogram::Histogram;
use std::fmt;
use std::str::FromStr;
use transport::{Nanos, Nic, Process, ProcessId, Progress, RegionSpec, Rng};

/// How a client picks each message's destination groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DestPolicy {
    /// One group, drawn uniformly per message.
    Single,
    /// Every group.
    All,
    /// `k` distinct groups, drawn uniformly per message.
    Random(usize),
    /// Between `lo` and `hi` distinct groups (both included), the count drawn uniformly per
    /// message, then the groups: single- and multi-group messages mixed in one run (counts
    /// of groups, at most [`crate::MAX_GROUPS`], held small so a client stays small).
    Between(u8, u8),
    /// Always the same group (the papers' "each client talks to its group" set-ups).
    Fixed(GroupId),
    /// `k` groups forming a connected part of the overlay tree (TRAM's "genuine" workload);
    /// needs the run's [`Tree`].
    Adjacent(usize),
}

impl DestPolicy {
    /// Draws a destination set among `groups` groups (`tree` is the overlay, for
    /// [`DestPolicy::Adjacent`]; [`DestPolicy::validate`] makes sure it is there).
    pub fn draw(&self, groups: usize, tree: Option<&Tree>, rng: &mut Rng) -> DestSet {
        let pick = |rng: &mut Rng, k: usize| {
            // A partial Fisher-Yates shuffle over the group ids: k distinct groups.
            let mut ids: Vec<u8> = (0..groups as u8).collect();
            for i in 0..k {
                let j = i + rng.below((groups - i) as u64) as usize;
                ids.swap(i, j);
            }
            DestSet::of(ids[..k].iter().map(|&g| GroupId(g))).expect("groups <= 64")
        };
        match *self {
            DestPolicy::Single => pick(rng, 1),
            DestPolicy::All => pick(rng, groups),
            DestPolicy::Random(k) => pick(rng, k.min(groups)),
            DestPolicy::Between(lo, hi) => {
                let hi = (hi as usize).min(groups);
                let lo = (lo as usize).min(hi);
                let k = lo + rng.below((hi - lo) as u64 + 1) as usize;
                pick(rng, k)
            }
            DestPolicy::Fixed(g) => DestSet::of([g]).expect("group < 64"),
            DestPolicy::Adjacent(k) => tree.expect("validated").draw_adjacent(k, rng),
        }
    }

    /// Checks the policy against the number of groups and the overlay tree, if any.
    pub fn validate(&self, groups: usize, tree: Option<&Tree>) -> Result<(), String> {
        match *self {
            DestPolicy::Random(k) | DestPolicy::Adjacent(k) if k == 0 || k > groups => {
                Err(format!("--dest {self} needs 1 <= {k} <= groups ({groups})"))
            }
            DestPolicy::Between(lo, hi) if lo == 0 || lo > hi || hi as usize > groups => Err(
                format!("--dest {self} needs 1 <= {lo} <= {hi} <= groups ({groups})"),
            ),
            DestPolicy::Adjacent(_) if tree.is_none() => Err(format!(
                "--dest {self} draws groups adjacent in an overlay tree; only tree-based \
                 protocols (tram) have one"
            )),
            DestPolicy::Fixed(g) if g.0 as usize >= groups => Err(format!(
                "destination group {g} does not exist (groups 0..{groups})"
            )),
            _ => Ok(()),
        }
    }

    /// The most destination groups one message can have among `groups` (what a slot must
    /// hold room for).
    pub fn max_groups(&self, groups: usize) -> usize {
        match *self {
            DestPolicy::All => groups,
            DestPolicy::Random(k) | DestPolicy::Adjacent(k) => k.min(groups),
            DestPolicy::Between(_, hi) => (hi as usize).min(groups),
            DestPolicy::Single | DestPolicy::Fixed(_) => 1,
        }
    }
}

impl fmt::Display for DestPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DestPolicy::Single => write!(f, "single"),
            DestPolicy::All => write!(f, "all"),
            DestPolicy::Random(k) => write!(f, "random:{k}"),
            DestPolicy::Between(lo, hi) => write!(f, "random:{lo}..{hi}"),
            DestPolicy::Fixed(g) => write!(f, "group:{}", g.0),
            DestPolicy::Adjacent(k) => write!(f, "adjacent:{k}"),
        }
    }
}

impl FromStr for DestPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "`{s}` is not a destination policy: use single, all, random:K, random:A..B, adjacent:K or group:G"
            )
        };
        match s {
            "single" => Ok(DestPolicy::Single),
            "all" => Ok(DestPolicy::All),
            _ => {
                if let Some(k) = s.strip_prefix("random:") {
                    match k.split_once("..") {
                        Some((lo, hi)) => match (lo.parse(), hi.parse()) {
                            (Ok(lo), Ok(hi)) => Ok(DestPolicy::Between(lo, hi)),
                            _ => Err(bad()),
                        },
                        None => k.parse().map(DestPolicy::Random).map_err(|_| bad()),
                    }
                } else if let Some(k) = s.strip_prefix("adjacent:") {
                    k.parse().map(DestPolicy::Adjacent).map_err(|_| bad())
                } else if let Some(g) = s.strip_prefix("group:") {
                    g.parse()
                        .map(|g| DestPolicy::Fixed(GroupId(g)))
                        .map_err(|_| bad())
                } else {
                    Err(bad())
                }
            }
        }
    }
}

/// The schedule and shape of a closed-loop client's load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadSpec {
    /// Destination policy.
    pub dest: DestPolicy,
    /// Number of groups in the run.
    pub groups: usize,
    /// The overlay tree, for tree-based protocols ([`DestPolicy::Adjacent`] draws from it).
    pub tree: Option<std::sync::Arc<Tree>>,
    /// Message size in bytes.
    pub size: usize,
    /// Latencies of messages multicast before this time are not recorded (warm-up). Clients
    /// start at times drawn over the first half of the warm-up ([`staggered_start`]).
    pub warmup_end: Nanos,
    /// No multicast starts at or after this time.
    pub stop_at: Nanos,
}

/// When a closed-loop client of a run whose warm-up ends at `warmup_end` issues its first
/// request: a time drawn uniformly from the first half of the warm-up (at once when there is
/// none). Clients started together stay in step, so counts in a window come in multiples of
/// the client count and a sweep's plateau can be an artefact of the lockstep; started apart,
/// they reach the window as a steady stream, with the second half of the warm-up left for the
/// last of them to settle.
pub fn staggered_start(warmup_end: Nanos, rng: &mut Rng) -> Nanos {
    match warmup_end.as_nanos() / 2 {
        0 => Nanos::ZERO,
        span => Nanos(rng.below(span)),
    }
}

/// How many sections a measurement window is cut into for its confidence intervals (see
/// [`Section`]).
pub const SECTIONS: usize = 10;

/// What a client measured in one of the [`SECTIONS`] equal parts of the measurement window,
/// by the time each multicast was sent. The window's own numbers are the point estimates; the
/// spread of the sections' numbers gives their 95% intervals (sectioning: batch means whose
/// estimate is the whole window's).
#[derive(Clone, Debug, Default)]
pub struct Section {
    /// Multicasts sent in this section that completed.
    pub completed: u64,
    /// Their latencies.
    pub latencies: Latencies,
}

/// The section of `[warmup_end, stop_at)` that `sent_at` falls in, if any.
pub fn section_of(sent_at: Nanos, warmup_end: Nanos, stop_at: Nanos) -> Option<usize> {
    if sent_at < warmup_end || sent_at >= stop_at {
        return None;
    }
    let (t, w) = (
        (sent_at - warmup_end).as_nanos() as u128,
        (stop_at - warmup_end).as_nanos() as u128,
    );
    Some((t * SECTIONS as u128 / w) as usize)
}

/// An empty histogram of latencies in nanoseconds, the range and precision every latency of
/// the workbench is kept at: 1 ns to 60 s, 3 significant digits (record with
/// `saturating_record`: a value beyond the range counts as its top).
pub fn empty_latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// The latencies one client measured, in nanoseconds: the samples themselves while they take
/// less memory than a histogram, then a histogram ([`latency_histogram`] sums clients up).
///
/// Why not a histogram from the start: one of this range and precision is 216 KB, which
/// `Histogram::new` writes in full; a run of a thousand Heron clients (ten histograms each)
/// spent half its wall time zeroing the pages. Why not only samples: a long run would keep
/// 8 bytes per request without bound.
#[derive(Clone, Debug, Default)]
pub struct Latencies {
    samples: Vec<u64>,
    histogram: Option<Histogram<u64>>,
}

impl Latencies {
    /// Samples kept before they move into a histogram: about the histogram's 27,000 counters.
    const MAX_SAMPLES: usize = 27_000;

    /// Records one latency.
    pub fn record(&mut self, ns: u64) {
        match &mut self.histogram {
            Some(h) => h.saturating_record(ns),
            None => {
                self.samples.push(ns);
                if self.samples.len() >= Self::MAX_SAMPLES {
                    let mut h = empty_latency_histogram();
                    for ns in self.samples.drain(..) {
                        h.saturating_record(ns);
                    }
                    self.samples = Vec::new();
                    self.histogram = Some(h);
                }
            }
        }
    }

    /// Latencies recorded.
    pub fn len(&self) -> u64 {
        self.samples.len() as u64 + self.histogram.as_ref().map_or(0, |h| h.len())
    }

    /// Whether none was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds every latency recorded to `h` (of [`latency_histogram`]'s range).
    pub fn add_to(&self, h: &mut Histogram<u64>) {
        for &ns in &self.samples {
            h.saturating_record(ns);
        }
        if let Some(mine) = &self.histogram {
            h.add(mine).expect("the same range");
        }
    }
}

/// One histogram (1 ns to 60 s, 3 significant digits) of every latency of `clients`.
pub fn latency_histogram<'a>(clients: impl IntoIterator<Item = &'a Latencies>) -> Histogram<u64> {
    let mut h = empty_latency_histogram();
    for c in clients {
        c.add_to(&mut h);
    }
    h
}

/// A closed-loop client around a protocol's [`Client`].
#[derive(Debug)]
pub struct ClosedLoop<C> {
    /// The protocol client.
    pub client: C,
    /// The client's process id (the `client` of its message ids).
    pub id: ProcessId,
    spec: LoadSpec,
    rng: Rng,
    payload: Vec<u8>,
    in_flight: bool,
    /// Latencies of multicasts started in the measurement window.
    pub latencies: Latencies,
    /// Multicasts completed that started in the measurement window.
    pub completed_in_window: u64,
    /// The same, per section of the window ([`SECTIONS`] of them).
    pub sections: Vec<Section>,
    /// When this client issues its first multicast ([`staggered_start`]).
    pub start_at: Nanos,
    /// Every multicast this client started, when logging.
    pub log: Option<Vec<Multicast>>,
    /// Every completion, with when it was multicast and its latency, when logging.
    pub completions: Option<Vec<Completed>>,
    /// A refusal other than backpressure or in-flight (a configuration error), if any.
    pub error: Option<MulticastError>,
    finished: bool,
}

impl<C> ClosedLoop<C> {
    /// A client `id` running `spec`, with its own workload stream `rng` (which first draws
    /// the client's [`staggered_start`]).
    pub fn new(client: C, id: ProcessId, spec: LoadSpec, mut rng: Rng, log: bool) -> ClosedLoop<C> {
        ClosedLoop {
            start_at: staggered_start(spec.warmup_end, &mut rng),
            sections: vec![Section::default(); SECTIONS],
            client,
            id,
            payload: vec![0; spec.size],
            spec,
            rng,
            in_flight: false,
            latencies: Latencies::default(),
            completed_in_window: 0,
            log: log.then(Vec::new),
            completions: log.then(Vec::new),
            error: None,
            finished: false,
        }
    }
}

impl<N: Nic, C: Client<N>> Process<N> for ClosedLoop<C> {
    fn regions(&self) -> Vec<RegionSpec> {
        self.client.regions()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut progress = self.client.poll(nic);
        while let Some(done) = self.client.poll_completed() {
            self.in_flight = false;
            progress.did_work = true;
            if let Some(log) = &mut self.log {
                if let Some(m) = log.iter_mut().rev().find(|m| m.msg == done.msg) {
                    m.completed = true;
                }
            }
            if let Some(c) = &mut self.completions {
                c.push(done);
            }
            if let Some(i) = section_of(done.sent_at, self.spec.warmup_end, self.spec.stop_at) {
                let ns = done.latency.as_nanos().max(1);
                self.completed_in_window += 1;
                self.latencies.record(ns);
                self.sections[i].completed += 1;
                self.sections[i].latencies.record(ns);
            }
        }
        let now = nic.now();
        if self.in_flight || self.error.is_some() {
            return progress;
        }
        if now < self.start_at {
            return progress.wake_at(Some(self.start_at));
        }
        if now >= self.spec.stop_at {
            self.finished = true;
            return progress;
        }
        let dst = self
            .spec
            .dest
            .draw(self.spec.groups, self.spec.tree.as_deref(), &mut self.rng);
        // The payload names its message so a delivered copy can be checked by eye in a dump.
        let seq = self.log.as_ref().map_or(0, |l| l.len() as u64);
        for (b, v) in self.payload.iter_mut().zip(seq.to_le_bytes()) {
            *b = v;
        }
        match self.client.try_multicast(nic, dst, &self.payload) {
            Ok(msg) => {
                self.in_flight = true;
                progress.did_work = true;
                if let Some(log) = &mut self.log {
                    log.push(Multicast {
                        client: self.id,
                        msg,
                        dst,
                        completed: false,
                    });
                }
            }
            Err(MulticastError::Full { .. } | MulticastError::InFlight) => {
                // Backpressure: retry when something lands, or when the client's own timer
                // (for example evicting a silent member) is due.
                progress = progress.wake_at(self.client.deadline());
            }
            Err(e) => self.error = Some(e),
        }
        progress
    }

    fn done(&self) -> bool {
        self.finished || self.error.is_some()
    }
}

impl MsgId {
    /// The id of a client's `seq`-th multicast.
    pub const fn new(client: ProcessId, seq: u64) -> MsgId {
        MsgId {
            client: client.0,
            seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts spread over the first half of the warm-up, none without one; sections split the
    /// window evenly and leave out what was sent outside it.
    #[test]
    fn clients_start_apart_and_sections_cut_the_window_evenly() {
        let mut rng = Rng::from_seed(7);
        let starts: Vec<u64> = (0..1000)
            .map(|_| staggered_start(Nanos(200_000), &mut rng).as_nanos())
            .collect();
        assert!(starts.iter().all(|&s| s < 100_000));
        assert!(starts.iter().any(|&s| s < 10_000) && starts.iter().any(|&s| s > 90_000));
        assert_eq!(staggered_start(Nanos::ZERO, &mut rng), Nanos::ZERO);
        let (w, stop) = (Nanos(1_000), Nanos(2_000));
        assert_eq!(section_of(Nanos(999), w, stop), None);
        assert_eq!(section_of(Nanos(1_000), w, stop), Some(0));
        assert_eq!(section_of(Nanos(1_099), w, stop), Some(0));
        assert_eq!(section_of(Nanos(1_100), w, stop), Some(1));
        assert_eq!(section_of(Nanos(1_999), w, stop), Some(SECTIONS - 1));
        assert_eq!(section_of(Nanos(2_000), w, stop), None);
    }

    /// Clients below, at and past the samples' limit, summed, give the histogram that
    /// recording every latency into one gives, out-of-range ones counted at the top.
    #[test]
    fn latencies_sum_up_like_one_histogram_whether_kept_as_samples_or_not() {
        let mut rng = Rng::from_seed(5);
        let mut direct = empty_latency_histogram();
        let clients: Vec<Latencies> = [10, Latencies::MAX_SAMPLES, 3 * Latencies::MAX_SAMPLES + 7]
            .iter()
            .map(|&n| {
                let mut l = Latencies::default();
                for i in 0..n {
                    let ns = if i == 3 {
                        90_000_000_000
                    } else {
                        1 + rng.below(5_000_000)
                    };
                    l.record(ns);
                    direct.saturating_record(ns);
                }
                assert_eq!(l.len(), n as u64);
                assert_eq!(l.histogram.is_some(), n >= Latencies::MAX_SAMPLES);
                l
            })
            .collect();
        let summed = latency_histogram(&clients);
        assert_eq!(summed, direct);
        assert_eq!(summed.max(), direct.max());
        assert!(latency_histogram([]).is_empty());
    }

    #[test]
    fn policies_parse_and_draw_the_right_number_of_distinct_groups() {
        let mut rng = Rng::from_seed(3);
        for (s, k) in [("single", 1), ("all", 5), ("random:3", 3), ("group:4", 1)] {
            let p: DestPolicy = s.parse().unwrap();
            assert_eq!(p.to_string(), s);
            for _ in 0..50 {
                let d = p.draw(5, None, &mut rng);
                assert_eq!(d.len(), k, "{s}");
                assert!(d.groups().all(|g| g.0 < 5));
            }
        }
        assert!("random:x".parse::<DestPolicy>().is_err());
        assert!("random:1..x".parse::<DestPolicy>().is_err());
        assert!(DestPolicy::Random(6).validate(5, None).is_err());
        // A range mixes single- and multi-group messages, every count within it.
        let mixed: DestPolicy = "random:1..3".parse().unwrap();
        assert_eq!(mixed, DestPolicy::Between(1, 3));
        assert_eq!(mixed.to_string(), "random:1..3");
        assert_eq!(mixed.max_groups(5), 3);
        let mut counts = [0; 4];
        for _ in 0..300 {
            let d = mixed.draw(5, None, &mut rng);
            counts[d.len()] += 1;
            assert!(d.groups().all(|g| g.0 < 5));
        }
        assert!(
            counts[1] > 50 && counts[2] > 50 && counts[3] > 50,
            "{counts:?}"
        );
        assert!(mixed.validate(3, None).is_ok());
        for bad in [(0, 2), (3, 2), (1, 6)] {
            let p = DestPolicy::Between(bad.0, bad.1);
            assert!(p.validate(5, None).is_err(), "{p}");
        }
        assert!(DestPolicy::Fixed(GroupId(5)).validate(5, None).is_err());
        let adjacent: DestPolicy = "adjacent:3".parse().unwrap();
        assert_eq!(adjacent.to_string(), "adjacent:3");
        assert!(adjacent.validate(8, None).unwrap_err().contains("tree"));
        let tree = Tree::preset("base").unwrap();
        assert!(adjacent.validate(8, Some(&tree)).is_ok());
        assert_eq!(adjacent.draw(8, Some(&tree), &mut rng).len(), 3);
    }
}
