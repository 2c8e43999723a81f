//! Validity (RamCast 2.2): if a correct process multicasts m, then eventually all correct
//! processes q in g, for g in m.dst, deliver m. Checked at the end of a run: every multicast of
//! a correct client must have been delivered by every correct destination process.

use super::{correct_destinations, DeliveredSets, Property, Violation};
use crate::DeliveryLog;

/// The first (message, process) pair, in id order, that breaks validity.
pub fn check(log: &DeliveryLog) -> Option<Violation> {
    let sets = DeliveredSets::of(log);
    for m in log.multicasts.values() {
        if !log.is_correct(m.client) {
            continue;
        }
        for q in correct_destinations(log, m.msg) {
            if !sets.delivered(q, m.msg) {
                return Some(Violation {
                    property: Property::Validity,
                    messages: vec![m.msg],
                    processes: vec![m.client, q],
                    detail: format!(
                        "correct client {} multicast {} to {} but correct destination {q} never delivered it",
                        m.client, m.msg, m.dst
                    ),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::ProcessId;

    #[test]
    fn missing_delivery_at_a_correct_destination_is_a_violation() {
        let mut l = log(&[(1, "0;1")]);
        deliver(&mut l, 0, &[1]);
        deliver(&mut l, 1, &[1]);
        deliver(&mut l, 2, &[1]);
        let v = check(&l).unwrap();
        assert_eq!(v.property, Property::Validity);
        assert_eq!(
            (v.messages, v.processes),
            (vec![m(1)], vec![ProcessId(9), ProcessId(3)])
        );
        deliver(&mut l, 3, &[1]);
        assert!(check(&l).is_none());
    }
}
