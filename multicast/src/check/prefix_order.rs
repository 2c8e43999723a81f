//! Uniform prefix order (RamCast 2.2 and Proposition 4): for any two messages m, m' and any two
//! processes p in g and q in h with {g, h} a subset of m.dst and of m'.dst, if p delivers m and q
//! delivers m', then p delivers m' before m or q delivers m before m'.
//!
//! Checked pairwise: for processes p (group g) and q (group h), keep of each one's delivery
//! sequence the messages addressed to both g and h. Given integrity, the property holds for p and
//! q exactly when one filtered sequence is a prefix of the other; the first position where they
//! differ names the two messages of a witness.

use super::{Property, Violation};
use crate::{DeliveryLog, MsgId, ProcessId};

fn filtered(log: &DeliveryLog, p: ProcessId, both: impl Fn(MsgId) -> bool) -> Vec<MsgId> {
    log.deliveries
        .get(&p)
        .map(|s| s.iter().copied().filter(|&m| both(m)).collect())
        .unwrap_or_default()
}

/// Of all process pairs, the divergence at the earliest position (then in process order).
pub fn check(log: &DeliveryLog) -> Option<Violation> {
    let servers: Vec<(ProcessId, crate::GroupId)> = log
        .processes
        .keys()
        .filter_map(|&p| log.group_of(p).map(|g| (p, g)))
        .collect();
    let mut best: Option<(usize, Violation)> = None;
    for (i, &(p, g)) in servers.iter().enumerate() {
        for &(q, h) in &servers[i + 1..] {
            let both = |m: MsgId| {
                log.multicasts
                    .get(&m)
                    .is_some_and(|mc| mc.dst.contains(g) && mc.dst.contains(h))
            };
            let (a, b) = (filtered(log, p, both), filtered(log, q, both));
            let Some(k) = a.iter().zip(&b).position(|(x, y)| x != y) else {
                continue;
            };
            if best.as_ref().is_some_and(|(at, _)| *at <= k) {
                continue;
            }
            let (m, m2) = (a[k], b[k]);
            best = Some((
                k,
                Violation {
                    property: Property::UniformPrefixOrder,
                    messages: vec![m, m2],
                    processes: vec![p, q],
                    detail: format!(
                        "{p} delivered {m} and {q} delivered {m2} (both addressed to {g} and {h}), \
                         but {p} did not deliver {m2} before {m} and {q} did not deliver {m} before {m2} \
                         (they diverge at position {k} of their common messages)"
                    ),
                },
            ));
        }
    }
    best.map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn opposite_orders_at_two_groups_are_caught() {
        let mut l = log(&[(1, "0;1"), (2, "0;1")]);
        deliver(&mut l, 0, &[1, 2]);
        deliver(&mut l, 2, &[2, 1]);
        let v = check(&l).unwrap();
        assert_eq!(v.processes, vec![ProcessId(0), ProcessId(2)]);
        assert_eq!(v.messages, vec![m(1), m(2)]);
    }

    /// A gap is a violation too: p delivered m2 without first delivering m1, which q delivered
    /// before m2 (prefix order forbids "holes", not just swaps).
    #[test]
    fn a_skipped_message_is_caught() {
        let mut l = log(&[(1, "0"), (2, "0")]);
        deliver(&mut l, 0, &[1, 2]);
        deliver(&mut l, 1, &[2]);
        assert_eq!(check(&l).unwrap().messages, vec![m(1), m(2)]);
    }

    /// A process that is merely behind is fine, and messages not addressed to both groups
    /// are ignored.
    #[test]
    fn a_lagging_process_is_not_a_violation() {
        let mut l = log(&[(1, "0;1"), (2, "0;1"), (3, "1")]);
        deliver(&mut l, 0, &[1, 2]);
        deliver(&mut l, 2, &[3, 1]);
        assert!(check(&l).is_none());
    }
}
