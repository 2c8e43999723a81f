//! Algorithm 3, Task 4: a learner's deterministic merge of the ensembles it subscribes to.
//!
//! Each ensemble's decisions arrive in instance order ([`crate::paxos::Learning`]). A
//! decision whose timestamp is not above the last one taken from its ensemble is raised to
//! just above it (lines 31-33), so within an ensemble timestamp order is instance order; the
//! learner then delivers the lowest timestamp among the ensembles' heads once every ensemble
//! has one (lines 37-41): no later decision of any ensemble can have a lower timestamp. Null
//! messages (lines 15-17) move an idle ensemble's head forward and are never delivered.
//!
//! Choices where the paper is silent:
//! - line 31 compares with `<`; we raise a timestamp *equal* to the last one too, since two
//!   messages of one ensemble with one timestamp would leave their order to chance;
//! - the paper assumes timestamps unique across the system, but raising one can make it equal
//!   to another ensemble's: ties are broken by the ensemble's index, the same at every learner.

use crate::value::{Timestamp, Value};
use std::collections::VecDeque;

/// One learner's merge over the ensembles it subscribes to (indices `0..n` of its
/// subscription list).
#[derive(Clone, Debug)]
pub struct Merge {
    /// Per subscribed ensemble: the last timestamp taken (`last_ts_e`) and the decisions taken
    /// and not yet merged (`gap_free`), in instance order.
    streams: Vec<(Timestamp, VecDeque<Value>)>,
}

impl Merge {
    /// A merge over `ensembles` subscribed ensembles (line 24-27).
    pub fn new(ensembles: usize) -> Merge {
        Merge {
            streams: vec![(Timestamp::default(), VecDeque::new()); ensembles],
        }
    }

    /// The next decision of subscribed ensemble `e` (lines 30-36: decisions must come in
    /// instance order, which [`crate::paxos::Learning`] gives).
    pub fn decided(&mut self, e: usize, mut value: Value) {
        let (last, queue) = &mut self.streams[e];
        if value.ts <= *last {
            value.ts = last.next();
        }
        *last = value.ts;
        queue.push_back(value);
    }

    /// The next value to deliver, if every ensemble has a decision waiting (lines 37-41),
    /// with its final timestamp; null messages are consumed and skipped.
    pub fn next_delivery(&mut self) -> Option<Value> {
        loop {
            if self.streams.iter().any(|(_, q)| q.is_empty()) {
                return None;
            }
            let (e, _) = self
                .streams
                .iter()
                .enumerate()
                .map(|(e, (_, q))| (e, q.front().expect("non-empty").ts))
                .min_by_key(|&(e, ts)| (ts, e))
                .expect("at least one ensemble");
            let v = self.streams[e].1.pop_front().expect("non-empty");
            if !v.is_null() {
                return Some(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use multicast::{DestSet, MsgId};
    use proptest::prelude::*;

    fn v(client: u32, seq: u64, ts: u64) -> Value {
        Value {
            id: MsgId { client, seq },
            ts: Timestamp(ts),
            dests: DestSet::EMPTY,
            payload: Some(Bytes::from_static(b"m")),
        }
    }

    #[test]
    fn the_lowest_head_goes_first_once_every_ensemble_has_one() {
        let mut m = Merge::new(2);
        m.decided(0, v(1, 0, 10));
        assert_eq!(
            m.next_delivery(),
            None,
            "ensemble 1 may still decide below 10"
        );
        m.decided(1, v(2, 0, 5));
        assert_eq!(m.next_delivery().map(|x| x.id.client), Some(2));
        assert_eq!(m.next_delivery(), None);
        // A null message lets the waiting one through and is not delivered.
        m.decided(1, Value::null(MsgId { client: 9, seq: 0 }, Timestamp(20)));
        assert_eq!(m.next_delivery().map(|x| x.id.client), Some(1));
        assert_eq!(m.next_delivery(), None);
    }

    #[test]
    fn a_decision_below_its_ensembles_last_timestamp_is_raised_above_it() {
        let mut m = Merge::new(1);
        m.decided(0, v(1, 0, 10));
        m.decided(0, v(1, 1, 7));
        m.decided(0, v(1, 2, 11));
        let ts: Vec<u64> = std::iter::from_fn(|| m.next_delivery())
            .map(|x| x.ts.0)
            .collect();
        assert_eq!(ts, vec![10, 11, 12]);
    }

    proptest! {
        /// Learners that subscribe to the same ensembles deliver the same sequence, whatever the
        /// interleaving in which the ensembles' decisions reach them, with strictly increasing
        /// final timestamps and every non-null decision once (streams ended by a null each, as
        /// the coordinators' Delta timers would).
        #[test]
        fn learners_deliver_one_order_whatever_the_arrival_interleaving(
            streams in proptest::collection::vec(
                proptest::collection::vec((0u64..50, any::<bool>()), 0..12), 1..5),
            picks_a in proptest::collection::vec(any::<prop::sample::Index>(), 0..80),
            picks_b in proptest::collection::vec(any::<prop::sample::Index>(), 0..80),
        ) {
            let values: Vec<Vec<Value>> = streams.iter().enumerate().map(|(e, s)| {
                let mut out: Vec<Value> = s.iter().enumerate().map(|(i, &(ts, null))| {
                    let id = MsgId { client: e as u32, seq: i as u64 };
                    if null { Value::null(id, Timestamp(ts)) } else { v(e as u32, i as u64, ts) }
                }).collect();
                out.push(Value::null(MsgId { client: e as u32, seq: 999 }, Timestamp(1_000)));
                out
            }).collect();
            let run = |picks: &[prop::sample::Index]| {
                let mut m = Merge::new(values.len());
                let mut next = vec![0usize; values.len()];
                let mut out = Vec::new();
                let feed = |e: usize, m: &mut Merge, next: &mut Vec<usize>| {
                    if next[e] < values[e].len() {
                        m.decided(e, values[e][next[e]].clone());
                        next[e] += 1;
                    }
                };
                for p in picks {
                    feed(p.index(values.len()), &mut m, &mut next);
                    out.extend(std::iter::from_fn(|| m.next_delivery()));
                }
                for e in 0..values.len() {
                    while next[e] < values[e].len() {
                        feed(e, &mut m, &mut next);
                    }
                }
                out.extend(std::iter::from_fn(|| m.next_delivery()));
                out
            };
            let (a, b) = (run(&picks_a), run(&picks_b));
            prop_assert_eq!(&a, &b);
            prop_assert!(a.windows(2).all(|w| (w[0].ts, w[0].id.client) < (w[1].ts, w[1].id.client)));
            let expected = values.iter().flatten().filter(|x| !x.is_null()).count();
            prop_assert_eq!(a.len(), expected);
        }
    }
}
