//! Section 4.5: optimistic deliveries. A multicaster also sends its message straight to the
//! learners of the ensemble; a learner delivers it optimistically once its own clock reads the
//! message's timestamp plus a wait ("based on the estimated latency and clock skews"), in
//! timestamp order, and later delivers it atomically when its DECISION, which carries no
//! value, names it ([`Optimism::copy`]). A mistake is an `i`-th optimistic delivery that is
//! not the `i`-th atomic one; the checker judges the atomic deliveries only, the mistake rate
//! is a reported figure.
//!
//! # Pairing a DECISION with a copy
//! **Invariant:** a learner takes for instance `k` of ensemble `e` only a value whose
//! [`Key`] (id, timestamp, destinations) is the one `k`'s DECISION carries, the key of the
//! value the acceptors decided. The merge orders by timestamp and delivers by destinations,
//! so every learner then merges the same stream of `e` and delivers one message with one
//! final timestamp. (The paper's DECISION names an id; review R1 found that ids did not name
//! one content here, and replicas of a group delivered a message with different timestamps,
//! about one seed in 3,300 of `harness check --protocol ridge`.)
//!
//! **Why it holds:**
//! - the DECISION carries the key ([`crate::paxos::Msg::Decision`]), and
//!   [`crate::paxos::Learning`] keeps, and hands out, only values with the decided key: a
//!   copy of other content under the id is never paired; the learner waits for the value
//!   (a later copy, the Phase 2 it votes on, a VALUE) or fetches it from the acceptors after
//!   a suspicion timeout (section 4.4.3's gap filling). This alone makes pairing safe;
//! - ids name one content, so that it costs nothing in practice: a client's request goes out
//!   before its copies, so a multicast refused for backpressure leaves no copy behind and its
//!   sequence number is free for the next one ([`crate::client`]); a retry resends the same
//!   value; null messages' ids carry their ensemble ([`crate::ensemble::NULL_ENSEMBLE_SHIFT`]:
//!   a process coordinating `e_0` and `e_all` gave its first null of each the same id); a
//!   gap filler's id names its coordinator and instance, and its content is always the same
//!   null (timestamp 0);
//! - copies are kept by ensemble and id, so a copy is only ever looked up in its own
//!   ensemble.
//!
//! **Bounded memory:** a copy goes when its message is decided, with those of the
//! multicaster's earlier messages in the ensemble (a client's messages are first decided in
//! the order it sent them); a copy of a message older than the multicaster's last one decided
//! here is not kept (a late copy of that last one is, for a retry decided again, until the
//! next is decided); null messages, which are distributed, are not kept; and at most `keep`
//! copies are, the oldest going first. A copy dropped too early costs a fetch, never safety. The DECISION grows by 16 bytes (timestamp and destinations, 8 each) on the wire.

use crate::mapping::EnsembleId;
use crate::value::{Key, Timestamp, Value};
use multicast::MsgId;
use std::collections::btree_map::Entry;
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
    /// The names of its fields as a runner's counters ([`multicast::Observed::counters`]), in
    /// field order.
    pub const COUNTERS: [&'static str; 5] = [
        "optimistic.delivered",
        "optimistic.mistakes",
        "optimistic.latency_us",
        "optimistic.atomic",
        "optimistic.atomic_latency_us",
    ];

    /// Its fields as named counters ([`Tally::COUNTERS`]).
    pub fn counters(&self) -> [(&'static str, u64); 5] {
        let n = Tally::COUNTERS;
        [
            (n[0], self.delivered),
            (n[1], self.mistakes),
            (n[2], self.optimistic_us),
            (n[3], self.atomic),
            (n[4], self.atomic_us),
        ]
    }

    /// The tally that named counters ([`Tally::counters`], summed over learners) add up to, if
    /// `get` has all of them.
    pub fn from_counters(get: impl Fn(&str) -> Option<u64>) -> Option<Tally> {
        let c = |i: usize| get(Tally::COUNTERS[i]);
        Some(Tally {
            delivered: c(0)?,
            mistakes: c(1)?,
            optimistic_us: c(2)?,
            atomic: c(3)?,
            atomic_us: c(4)?,
        })
    }

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
    /// Messages seen (multicasters' copies, requests, values of Phase 2 for a learner in the
    /// quorum) by ensemble and id until their instance is decided here, at most `keep`, the
    /// oldest going first: with optimistic deliveries on, decisions carry no values and a
    /// learner pairs each with the message it saw (section 4.5), if its key matches.
    copies: BTreeMap<(EnsembleId, MsgId), Value>,
    arrivals: VecDeque<(EnsembleId, MsgId)>,
    keep: usize,
    /// Per ensemble and multicaster, the highest sequence number decided here: copies below
    /// it are of messages the multicaster completed before its last one was sent, not kept.
    /// A late copy of the last one (a retry's request or Phase 2) is, since the retry may be
    /// decided again; it goes when the multicaster's next message in the ensemble is decided.
    settled: BTreeMap<(EnsembleId, u32), u64>,
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
            settled: BTreeMap::new(),
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

    /// A message of this learner's ensemble `e`, seen before its decision: kept for the
    /// decision, and held for optimistic delivery if `addressed` to this learner's group. Null
    /// messages are not kept: nobody multicasts a copy of one, so they are distributed.
    pub fn received(&mut self, e: EnsembleId, value: Value, addressed: bool) {
        let id = value.id;
        let settled = self
            .settled
            .get(&(e, id.client))
            .is_some_and(|&s| id.seq < s);
        if !value.is_null() && !settled {
            if let Entry::Vacant(slot) = self.copies.entry((e, id)) {
                slot.insert(value.clone());
                self.arrivals.push_back((e, id));
                while self.arrivals.len() > self.keep {
                    let old = self.arrivals.pop_front().expect("over the bound");
                    self.copies.remove(&old);
                }
            }
        }
        let fresh = self.fresh.entry(id.client).or_insert(0);
        if addressed && id.seq >= *fresh {
            *fresh = id.seq + 1;
            self.holding.hold(value);
        }
    }

    /// The message of ensemble `e` that `key` names, if seen and not yet decided; `None` if the
    /// copy held under its id is of other content (never paired: the learner waits for the
    /// value or fetches it).
    pub fn copy(&self, e: EnsembleId, key: Key) -> Option<&Value> {
        self.copies.get(&(e, key.id)).filter(|v| v.key() == key)
    }

    /// Message `value` of ensemble `e` was decided here: its copy and those of the
    /// multicaster's earlier messages in `e` (a client's messages are first decided in the
    /// order it sent them) are no longer needed; if `addressed` here, its timestamp is kept
    /// for its atomic delivery's latency.
    pub fn decided(&mut self, e: EnsembleId, value: &Value, addressed: bool) {
        let MsgId { client, seq } = value.id;
        if !value.is_null() {
            let settled = self.settled.entry((e, client)).or_insert(seq);
            *settled = (*settled).max(seq);
            let (first, last) = ((e, MsgId { client, seq: 0 }), (e, value.id));
            while let Some(&k) = self.copies.range(first..=last).next().map(|(k, _)| k) {
                self.copies.remove(&k);
            }
        }
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

    const E: EnsembleId = EnsembleId(0);
    const ALL: EnsembleId = EnsembleId(1);

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
        o.received(E, v(2, 20), true);
        o.deliver(100);
        o.received(E, v(1, 10), true);
        o.deliver(100);
        // The atomic order is by timestamp: 1 then 2.
        o.atomic(v(1, 10).id, v(1, 10).ts, 300);
        o.atomic(v(2, 20).id, v(2, 20).ts, 300);
        let t = o.tally();
        assert_eq!((t.delivered, t.mistakes), (2, 2));
        o.received(E, v(3, 30), true);
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
        o.received(E, v(1, 10), true);
        // Its Phase 2 after the copy, and a message for another group.
        o.received(E, v(1, 10), true);
        o.received(E, v(2, 20), false);
        assert_eq!(o.deliver(100), 1);
        assert!(o.copy(E, v(1, 10).key()).is_some() && o.copy(E, v(2, 20).key()).is_some());
        o.decided(E, &v(1, 10), true);
        assert!(o.copy(E, v(1, 10).key()).is_none());
        // At most `keep` messages: the oldest goes first.
        o.received(E, v(3, 30), true);
        o.received(E, v(4, 40), true);
        assert!(o.copy(E, v(2, 20).key()).is_none() && o.copy(E, v(4, 40).key()).is_some());
    }

    #[test]
    fn copies_are_kept_per_ensemble_and_only_the_named_content_is_paired() {
        let mut o = Optimism::new(0, 16);
        let a = v(1, 10);
        // Another content under the same id: the refused multicast R1 describes.
        let b = Value {
            ts: Timestamp::new(11, 1),
            ..a.clone()
        };
        o.received(E, a.clone(), false);
        o.received(ALL, b.clone(), false);
        assert_eq!(o.copy(E, a.key()), Some(&a));
        assert_eq!(o.copy(ALL, b.key()), Some(&b));
        assert_eq!(o.copy(E, b.key()), None, "a copy of other content");
        assert_eq!(o.copy(ALL, a.key()), None, "another ensemble's copy");
        // Deciding it in one ensemble leaves the other's copy.
        o.decided(E, &a, false);
        assert_eq!(o.copy(E, a.key()), None);
        assert_eq!(o.copy(ALL, b.key()), Some(&b));
    }

    #[test]
    fn copies_of_messages_decided_already_are_dropped_and_not_kept_again() {
        let mut o = Optimism::new(0, 16);
        // Null messages are distributed: never kept.
        let null = Value::null(MsgId { client: 7, seq: 0 }, Timestamp::new(5, 7));
        o.received(E, null.clone(), false);
        assert_eq!(o.copy(E, null.key()), None);
        // A copy of a message the client sent before the one decided (lost, say) goes with the
        // decision, and a late copy of it is not kept.
        let (first, second, third) = (v(1, 10), v(1, 11), v(1, 12));
        o.received(E, first.clone(), false);
        o.received(E, second.clone(), false);
        o.received(E, third.clone(), false);
        o.decided(E, &second, false);
        assert_eq!(o.copy(E, first.key()), None);
        assert_eq!(o.copy(E, second.key()), None);
        assert_eq!(o.copy(E, third.key()), Some(&third));
        o.received(E, first.clone(), false);
        assert_eq!(o.copy(E, first.key()), None);
        // A late copy of the one decided last may serve a retry decided again, until the
        // client's next message is decided.
        o.received(E, second.clone(), false);
        assert_eq!(o.copy(E, second.key()), Some(&second));
        o.decided(E, &third, false);
        assert!(o.copies.is_empty());
    }
}
