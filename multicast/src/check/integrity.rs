//! Uniform integrity (RamCast 2.2 and Proposition 1): for any process p and message m, p delivers
//! m at most once, and only if p is in a group of m.dst and m was previously multicast.

use super::{Property, Violation};
use crate::DeliveryLog;
use std::collections::BTreeSet;

/// The first delivery, in process then delivery order, that breaks integrity.
pub fn check(log: &DeliveryLog) -> Option<Violation> {
    for (&p, seq) in &log.deliveries {
        let mut seen = BTreeSet::new();
        for (index, &m) in seq.iter().enumerate() {
            let why = if !seen.insert(m) {
                Some(format!("{p} delivered {m} twice (again at index {index})"))
            } else {
                match log.multicasts.get(&m) {
                    None => Some(format!("{p} delivered {m}, which was never multicast")),
                    Some(mc) => match log.group_of(p) {
                        Some(g) if mc.dst.contains(g) => None,
                        Some(g) => Some(format!(
                            "{p} of {g} delivered {m}, addressed to {} only",
                            mc.dst
                        )),
                        None => Some(format!("{p} is not a server but delivered {m}")),
                    },
                }
            };
            if let Some(detail) = why {
                return Some(Violation {
                    property: Property::Integrity,
                    messages: vec![m],
                    processes: vec![p],
                    detail,
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
    use crate::{MsgId, ProcessId};

    #[test]
    fn duplicates_strangers_and_inventions_are_caught() {
        let mut l = log(&[(1, "0")]);
        deliver(&mut l, 0, &[1, 1]);
        assert!(check(&l).unwrap().detail.contains("twice"));

        let mut l = log(&[(1, "0")]);
        deliver(&mut l, 2, &[1]);
        let v = check(&l).unwrap();
        assert!(v.detail.contains("addressed to 0 only"), "{}", v.detail);
        assert_eq!(v.processes, vec![ProcessId(2)]);

        let mut l = log(&[]);
        l.deliver(ProcessId(0), MsgId { client: 7, seq: 3 });
        assert!(check(&l).unwrap().detail.contains("never multicast"));
    }
}
