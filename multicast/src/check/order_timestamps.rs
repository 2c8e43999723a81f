//! Order timestamps ([`crate::Delivery::order`]), for the protocols that have them: not one of
//! the five properties, but what such a protocol promises and what Heron builds on. A message
//! carries the same timestamp at every process that delivered it with one, and every process's
//! timestamps increase strictly along its deliveries, so any two messages compare in the order
//! every process delivering both delivered them.

use super::{Property, Violation};
use crate::{DeliveryLog, MsgId, ProcessId};
use std::collections::BTreeMap;

/// The first disagreement on a message's timestamp, else the first process whose timestamps
/// do not increase along its deliveries.
pub fn check(log: &DeliveryLog) -> Option<Violation> {
    let mut first: BTreeMap<MsgId, (ProcessId, u64)> = BTreeMap::new();
    for (&(p, m), &t) in &log.orders {
        match first.get(&m) {
            Some(&(q, u)) if u != t => {
                return Some(Violation {
                    property: Property::OrderTimestamps,
                    messages: vec![m],
                    processes: vec![q, p],
                    detail: format!("{q} delivered {m} with timestamp {u}, {p} with {t}"),
                });
            }
            Some(_) => {}
            None => {
                first.insert(m, (p, t));
            }
        }
    }
    for (&p, seq) in &log.deliveries {
        let mut last: Option<(MsgId, u64)> = None;
        for &m in seq {
            let Some(&t) = log.orders.get(&(p, m)) else {
                continue;
            };
            if let Some((prev, u)) = last.filter(|&(_, u)| t <= u) {
                return Some(Violation {
                    property: Property::OrderTimestamps,
                    messages: vec![prev, m],
                    processes: vec![p],
                    detail: format!(
                        "{p} delivered {prev} (timestamp {u}) before {m} (timestamp {t})"
                    ),
                });
            }
            last = Some((m, t));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn timestamps_must_agree_and_increase() {
        let stamped = |stamps: &[(u32, u64, u64)]| {
            let mut l = log(&[(1, "0;1"), (2, "0;1")]);
            deliver(&mut l, 0, &[1, 2]);
            deliver(&mut l, 2, &[1, 2]);
            for &(p, msg, t) in stamps {
                l.stamp(ProcessId(p), m(msg), t);
            }
            check(&l).map(|v| v.detail)
        };
        assert_eq!(
            stamped(&[(0, 1, 10), (0, 2, 20), (2, 1, 10), (2, 2, 20)]),
            None
        );
        // Without timestamps (TRAM) there is nothing to check.
        assert_eq!(stamped(&[]), None);
        let disagree = stamped(&[(0, 1, 10), (2, 1, 11)]).unwrap();
        assert!(
            disagree.contains("timestamp 10") && disagree.contains("with 11"),
            "{disagree}"
        );
        let backwards = stamped(&[(0, 1, 20), (0, 2, 10)]).unwrap();
        assert!(backwards.contains("before"), "{backwards}");
        let equal = stamped(&[(0, 1, 10), (0, 2, 10)]).unwrap();
        assert!(equal.contains("before"), "{equal}");
    }
}
