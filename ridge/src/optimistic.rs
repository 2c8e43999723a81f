//! Section 4.5: optimistic deliveries. A multicaster also sends its message straight to the
//! learners of the ensemble; a learner delivers it optimistically once its own clock reads the
//! message's timestamp plus a wait ("based on the estimated latency and clock skews"), in
//! timestamp order, and later delivers it atomically when its DECISION, an id only, names it
//! ([`Optimism::copy`]). A mistake is an `i`-th
//! optimistic delivery that is not the `i`-th atomic one; the checker judges the atomic
//! deliveries only, the mistake rate is a reported figure.

use crate::value::{Timestamp, Value};
use multicast::MsgId;
use std::collections::{BTreeMap, VecDeque};

/// The microseconds of a timestamp's clock reading.
pub fn clock_us(ts: Timestamp) -> u64 {
    ts.0 >> Timestamp::SENDER_BITS
}

/// Messages held until a clock reads their timestamp plus a wait, then released in timestamp
/// order: the learner's optimistic queue, and the coordinator's (condition (b) of section 4.5:
/// it waits before proposing, so messages received out of order are proposed in timestamp
/// order).
#[derive(Clone, Debug)]
pub struct Holding {
    wait_us: u64,
    held: BTreeMap<(Timestamp, MsgId), Value>,
}

impl Holding {
    /// Holds each message `wait_us` past its timestamp.
    pub fn new(wait_us: u64) -> Holding {
        Holding {
            wait_us,
            held: BTreeMap::new(),
        }
    }

    /// Holds `value` (a second copy of the same message is ignored).
    pub fn hold(&mut self, value: Value) {
        self.held.entry((value.ts, value.id)).or_insert(value);
    }

    /// The messages due when the clock reads `now_us`, in timestamp order.
    pub fn due(&mut self, now_us: u64) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(entry) = self.held.first_entry() {
            if clock_us(entry.key().0).saturating_add(self.wait_us) > now_us {
                break;
            }
            out.push(entry.remove());
        }
        out
    }

    /// The clock reading at which the next message is due.
    pub fn deadline_us(&self) -> Option<u64> {
        self.held
            .keys()
            .next()
            .map(|(ts, _)| clock_us(*ts).saturating_add(self.wait_us))
    }

    /// Every message held, in timestamp order (to hand to another coordinator).
    pub fn drain(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.held).into_values().collect()
    }

    /// Messages held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

/// What a learner's optimistic deliveries came to, beside its atomic ones. Latencies are read
/// on the learner's clock against the sender's timestamp (exact with synchronised clocks; off
/// by the two clocks' difference otherwise), summed over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Optimistic deliveries.
    pub delivered: u64,
    /// Of which mistakes: the `i`-th optimistic delivery not the `i`-th atomic one.
    pub mistakes: u64,
    /// The optimistic deliveries' latencies, summed, in microseconds.
    pub optimistic_us: u64,
    /// Atomic deliveries.
    pub atomic: u64,
    /// Their latencies, summed, in microseconds.
    pub atomic_us: u64,
}

impl Tally {
    /// Adds another learner's.
    pub fn merge(&mut self, o: &Tally) {
        self.delivered += o.delivered;
        self.mistakes += o.mistakes;
        self.optimistic_us += o.optimistic_us;
        self.atomic += o.atomic;
        self.atomic_us += o.atomic_us;
    }

    /// The mean latency of optimistic and of atomic deliveries, in microseconds.
    pub fn mean_us(&self) -> (f64, f64) {
        let mean = |sum: u64, n: u64| sum as f64 / n.max(1) as f64;
        (
            mean(self.optimistic_us, self.delivered),
            mean(self.atomic_us, self.atomic),
        )
    }
}

/// A learner's optimistic side: what it delivered optimistically, set against its atomic
/// deliveries position by position.
#[derive(Clone, Debug)]
pub struct Optimism {
    holding: Holding,
    /// Deliveries of one kind not yet set against the other kind's.
    optimistic: VecDeque<MsgId>,
    atomic: VecDeque<MsgId>,
    tally: Tally,
    /// Messages seen (multicasters' copies, or values of Phase 2 for a learner in the quorum)
    /// by id until their instance is decided here, at most `keep`, the oldest going first:
    /// with optimistic deliveries on, decisions carry ids only and a learner pairs each with
    /// the message it saw (section 4.5).
    copies: BTreeMap<MsgId, Value>,
    arrivals: VecDeque<MsgId>,
    keep: usize,
    /// Messages decided and addressed here, not yet delivered atomically: their timestamps
    /// as multicast (the merge may raise a timestamp to keep its ensemble's order; latency is
    /// counted from the multicaster's).
    stamped: BTreeMap<MsgId, u64>,
    /// Per multicaster, the lowest sequence number not yet held: a message seen twice (its
    /// copy and its Phase 2, or a client's retry) is delivered optimistically once.
    fresh: BTreeMap<u32, u64>,
    /// Every optimistic delivery in order, if kept ([`Optimism::keep_log`]).
    log: Option<Vec<MsgId>>,
}

impl Optimism {
    /// Delivers each message `wait_us` after its timestamp, by the learner's clock; keeps at
    /// most `keep` messages for decisions to come.
    pub fn new(wait_us: u64, keep: usize) -> Optimism {
        Optimism {
            holding: Holding::new(wait_us),
            optimistic: VecDeque::new(),
            atomic: VecDeque::new(),
            tally: Tally::default(),
            copies: BTreeMap::new(),
            arrivals: VecDeque::new(),
            keep: keep.max(1),
            fresh: BTreeMap::new(),
            stamped: BTreeMap::new(),
            log: None,
        }
    }

    /// Keeps every optimistic delivery (the run's log; it grows with the run).
    pub fn keep_log(&mut self) {
        self.log.get_or_insert_with(Vec::new);
    }

    /// The optimistic deliveries in order, if kept.
    pub fn log(&self) -> Option<&[MsgId]> {
        self.log.as_deref()
    }

    /// A message of one of this learner's ensembles, seen before its decision: kept for the
    /// decision, and held for optimistic delivery if `addressed` to this learner's group.
    pub fn received(&mut self, value: Value, addressed: bool) {
        let id = value.id;
        if let std::collections::btree_map::Entry::Vacant(slot) = self.copies.entry(id) {
            slot.insert(value.clone());
            self.arrivals.push_back(id);
            while self.arrivals.len() > self.keep {
                let old = self.arrivals.pop_front().expect("over the bound");
                self.copies.remove(&old);
            }
        }
        let fresh = self.fresh.entry(id.client).or_insert(0);
        if addressed && id.seq >= *fresh {
            *fresh = id.seq + 1;
            self.holding.hold(value);
        }
    }

    /// The message with id `id`, if seen and not yet decided.
    pub fn copy(&self, id: MsgId) -> Option<&Value> {
        self.copies.get(&id)
    }

    /// Message `value` was decided here: its copy is no longer needed; if `addressed` here,
    /// its timestamp is kept for its atomic delivery's latency.
    pub fn decided(&mut self, value: &Value, addressed: bool) {
        self.copies.remove(&value.id);
        if addressed {
            self.stamped.insert(value.id, clock_us(value.ts));
        }
    }

    /// Delivers optimistically what is due when the learner's clock reads `now_us`; returns
    /// how many.
    pub fn deliver(&mut self, now_us: u64) -> usize {
        let due = self.holding.due(now_us);
        for v in &due {
            self.optimistic.push_back(v.id);
            self.tally.delivered += 1;
            self.tally.optimistic_us += now_us.saturating_sub(clock_us(v.ts));
            if let Some(log) = self.log.as_mut() {
                log.push(v.id);
            }
        }
        self.compare();
        due.len()
    }

    /// The learner delivered `id`, timestamped `ts` by the merge, atomically when its clock
    /// read `now_us`.
    pub fn atomic(&mut self, id: MsgId, ts: Timestamp, now_us: u64) {
        self.atomic.push_back(id);
        self.tally.atomic += 1;
        let stamped = self.stamped.remove(&id).unwrap_or(clock_us(ts));
        self.tally.atomic_us += now_us.saturating_sub(stamped);
        self.compare();
    }

    fn compare(&mut self) {
        while let (Some(o), Some(a)) = (self.optimistic.front(), self.atomic.front()) {
            if o != a {
                self.tally.mistakes += 1;
            }
            self.optimistic.pop_front();
            self.atomic.pop_front();
        }
    }

    /// The clock reading at which the next optimistic delivery is due.
    pub fn deadline_us(&self) -> Option<u64> {
        self.holding.deadline_us()
    }

    /// What its deliveries came to so far.
    pub fn tally(&self) -> Tally {
        self.tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multicast::DestSet;

    fn v(client: u32, us: u64) -> Value {
        Value {
            id: MsgId { client, seq: us },
            ts: Timestamp::new(us, client),
            dests: DestSet::EMPTY,
            payload: Some(bytes::Bytes::from_static(b"x")),
        }
    }

    #[test]
    fn messages_are_released_in_timestamp_order_once_the_wait_passed() {
        let mut h = Holding::new(100);
        h.hold(v(2, 50));
        h.hold(v(1, 20));
        h.hold(v(1, 20));
        assert_eq!(h.len(), 2);
        assert_eq!(h.deadline_us(), Some(120));
        assert!(h.due(119).is_empty());
        let out: Vec<u64> = h.due(150).iter().map(|v| clock_us(v.ts)).collect();
        assert_eq!(out, vec![20, 50]);
        assert!(h.is_empty());
    }

    #[test]
    fn a_mistake_is_a_position_where_the_two_orders_differ() {
        let mut o = Optimism::new(0, 16);
        // A late copy: 1 arrives after 2 was delivered optimistically.
        o.received(v(2, 20), true);
        o.deliver(100);
        o.received(v(1, 10), true);
        o.deliver(100);
        // The atomic order is by timestamp: 1 then 2.
        o.atomic(v(1, 10).id, v(1, 10).ts, 300);
        o.atomic(v(2, 20).id, v(2, 20).ts, 300);
        let t = o.tally();
        assert_eq!((t.delivered, t.mistakes), (2, 2));
        o.received(v(3, 30), true);
        o.deliver(100);
        o.atomic(v(3, 30).id, v(3, 30).ts, 330);
        let t = o.tally();
        assert_eq!((t.delivered, t.mistakes, t.atomic), (3, 2, 3));
        // Optimistic at 100 us for timestamps 20, 10, 30; atomic at 300, 300, 330.
        assert_eq!(
            (t.optimistic_us, t.atomic_us),
            (80 + 90 + 70, 290 + 280 + 300)
        );
        assert_eq!(t.mean_us(), (80.0, 290.0));
    }

    #[test]
    fn a_message_seen_twice_is_delivered_once_and_kept_until_decided() {
        let mut o = Optimism::new(0, 2);
        o.received(v(1, 10), true);
        // Its Phase 2 after the copy, and a message for another group.
        o.received(v(1, 10), true);
        o.received(v(2, 20), false);
        assert_eq!(o.deliver(100), 1);
        assert!(o.copy(v(1, 10).id).is_some() && o.copy(v(2, 20).id).is_some());
        o.decided(&v(1, 10), true);
        assert!(o.copy(v(1, 10).id).is_none());
        // At most `keep` messages: the oldest goes first.
        o.received(v(3, 30), true);
        o.received(v(4, 40), true);
        assert!(o.copy(v(2, 20).id).is_none() && o.copy(v(4, 40).id).is_some());
    }
}
