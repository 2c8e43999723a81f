//! Uniform agreement (RamCast 2.2): if a process (correct or not) delivers m, then eventually all
//! correct processes q in g, for g in m.dst, deliver m.

use super::{correct_destinations, DeliveredSets, Property, Violation};
use crate::DeliveryLog;
use std::collections::BTreeMap;

/// The first delivered message (in id order) some correct destination never delivered, with the
/// first process that delivered it and the first correct destination that did not.
pub fn check(log: &DeliveryLog) -> Option<Violation> {
    let sets = DeliveredSets::of(log);
    let mut first_deliverer = BTreeMap::new();
    for (&p, seq) in &log.deliveries {
        for &m in seq {
            first_deliverer.entry(m).or_insert(p);
        }
    }
    for (&m, &p) in &first_deliverer {
        for q in correct_destinations(log, m) {
            if !sets.delivered(q, m) {
                return Some(Violation {
                    property: Property::UniformAgreement,
                    messages: vec![m],
                    processes: vec![p, q],
                    detail: format!("{p} delivered {m} but correct destination {q} never did"),
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
    use crate::{Member, ProcessId};

    #[test]
    fn a_delivery_by_a_crashed_process_binds_the_correct_ones() {
        let mut l = log(&[(1, "1")]);
        l.add_process(ProcessId(2), Member::Group(crate::GroupId(1)), false);
        deliver(&mut l, 2, &[1]);
        let v = check(&l).unwrap();
        assert_eq!(v.processes, vec![ProcessId(2), ProcessId(3)]);
        deliver(&mut l, 3, &[1]);
        assert!(check(&l).is_none());
    }
}
