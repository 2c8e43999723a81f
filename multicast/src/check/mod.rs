//! The checker: one module per property of atomic multicast, each returning the smallest witness
//! of a violation it finds in a [`DeliveryLog`], and one for the order timestamps of the
//! protocols that have them ([`order_timestamps`]).

pub mod acyclic_order;
pub mod agreement;
pub mod integrity;
pub mod order_timestamps;
pub mod prefix_order;
pub mod validity;

use crate::{DeliveryLog, MsgId, ProcessId};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The five properties (RamCast section 2.2), and the consistency of order timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Property {
    /// A correct client's multicast is delivered by every correct destination process.
    Validity,
    /// Each process delivers a message at most once, only if it is a destination, and only if
    /// the message was multicast.
    Integrity,
    /// A message delivered by any process is delivered by every correct destination process.
    UniformAgreement,
    /// Two destination processes of two messages never deliver them in conflicting orders.
    UniformPrefixOrder,
    /// The relation "some process delivers m before m'" has no cycle.
    UniformAcyclicOrder,
    /// A message's order timestamp is the same everywhere and timestamps increase along every
    /// process's deliveries (protocols that have them; [`crate::Delivery::order`]).
    OrderTimestamps,
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Property::Validity => "validity",
            Property::Integrity => "uniform integrity",
            Property::UniformAgreement => "uniform agreement",
            Property::UniformPrefixOrder => "uniform prefix order",
            Property::UniformAcyclicOrder => "uniform acyclic order",
            Property::OrderTimestamps => "order timestamps",
        })
    }
}

/// A violated property and its witness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which property.
    pub property: Property,
    /// The messages of the witness.
    pub messages: Vec<MsgId>,
    /// The processes of the witness.
    pub processes: Vec<ProcessId>,
    /// The witness in words.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} violated: {}", self.property, self.detail)
    }
}

/// Checks every property; returns at most one violation (the smallest witness) per property.
pub fn check(log: &DeliveryLog) -> Vec<Violation> {
    [
        validity::check(log),
        integrity::check(log),
        agreement::check(log),
        prefix_order::check(log),
        acyclic_order::check(log),
        order_timestamps::check(log),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The set of messages each process delivered, built once per check (logs of long runs hold
/// millions of deliveries).
struct DeliveredSets(BTreeMap<ProcessId, BTreeSet<MsgId>>);

impl DeliveredSets {
    fn of(log: &DeliveryLog) -> DeliveredSets {
        DeliveredSets(
            log.deliveries
                .iter()
                .map(|(&p, s)| (p, s.iter().copied().collect()))
                .collect(),
        )
    }

    /// Whether `p` delivered `m`.
    fn delivered(&self, p: ProcessId, m: MsgId) -> bool {
        self.0.get(&p).is_some_and(|s| s.contains(&m))
    }
}

/// The correct server processes whose group is among `m`'s destinations.
fn correct_destinations(log: &DeliveryLog, m: MsgId) -> Vec<ProcessId> {
    let Some(mc) = log.multicasts.get(&m) else {
        return Vec::new();
    };
    log.processes
        .keys()
        .copied()
        .filter(|&p| log.is_correct(p) && log.group_of(p).is_some_and(|g| mc.dst.contains(g)))
        .collect()
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Hand-made logs: three groups of two servers, one client.
    use crate::*;

    pub(crate) fn m(seq: u64) -> MsgId {
        MsgId { client: 9, seq }
    }

    /// Servers p0,p1 in g0; p2,p3 in g1; p4,p5 in g2; client p9. `multicasts` gives each message
    /// its destination set.
    pub(crate) fn log(multicasts: &[(u64, &str)]) -> DeliveryLog {
        let mut log = DeliveryLog::default();
        for p in 0..6 {
            log.add_process(ProcessId(p), Member::Group(GroupId((p / 2) as u8)), true);
        }
        log.add_process(ProcessId(9), Member::Client, true);
        for &(seq, dst) in multicasts {
            log.add_multicast(Multicast {
                client: ProcessId(9),
                msg: m(seq),
                dst: dst.parse().unwrap(),
                completed: true,
            });
        }
        log
    }

    pub(crate) fn deliver(log: &mut DeliveryLog, p: u32, seqs: &[u64]) {
        for &s in seqs {
            log.deliver(ProcessId(p), m(s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use crate::{GroupId, Member, Multicast};

    /// A correct run: two messages to overlapping groups, delivered in one order everywhere.
    #[test]
    fn a_correct_log_has_no_violation() {
        let mut l = log(&[(1, "0;1"), (2, "1;2")]);
        deliver(&mut l, 0, &[1]);
        deliver(&mut l, 1, &[1]);
        deliver(&mut l, 2, &[1, 2]);
        deliver(&mut l, 3, &[1, 2]);
        deliver(&mut l, 4, &[2]);
        deliver(&mut l, 5, &[2]);
        assert_eq!(check(&l), vec![]);
    }

    /// Each hand-made violation is reported as exactly its property.
    #[test]
    fn each_violation_is_named() {
        let props = |l: &DeliveryLog| check(l).iter().map(|v| v.property).collect::<Vec<_>>();
        // Validity (and agreement is not concerned: nobody delivered m1).
        let l = log(&[(1, "0")]);
        assert_eq!(props(&l), vec![Property::Validity]);
        // Integrity: a message delivered twice (no other property concerned... the duplicate
        // also forms a delivery cycle m1 < m1 only if something sits between; here it does not).
        let mut l = log(&[(1, "0")]);
        deliver(&mut l, 0, &[1, 1]);
        deliver(&mut l, 1, &[1]);
        assert_eq!(props(&l), vec![Property::Integrity]);
        // Uniform agreement: a crashed process delivered m1, a correct destination did not.
        let mut l = log(&[(1, "0")]);
        l.add_process(ProcessId(0), Member::Group(GroupId(0)), false);
        l.add_multicast(Multicast {
            client: ProcessId(9),
            msg: m(1),
            dst: "0".parse().unwrap(),
            completed: false,
        });
        l.add_process(ProcessId(9), Member::Client, false);
        deliver(&mut l, 0, &[1]);
        assert_eq!(props(&l), vec![Property::UniformAgreement]);
        // Integrity: an auxiliary process (it orders, belongs to no group) delivered.
        let mut l = log(&[(1, "0")]);
        deliver(&mut l, 0, &[1]);
        deliver(&mut l, 1, &[1]);
        l.add_process(ProcessId(20), Member::Auxiliary, true);
        assert_eq!(props(&l), vec![]);
        deliver(&mut l, 20, &[1]);
        assert_eq!(props(&l), vec![Property::Integrity]);
    }
}

#[cfg(test)]
mod properties {
    use super::fixtures::*;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Logs built from one global order (each process delivers, in that order, a prefix of
        /// the messages addressed to its group) never violate integrity, prefix order or
        /// acyclic order; when no process lags, validity and agreement hold too. Guards against
        /// false alarms on the shapes real protocols produce.
        #[test]
        fn logs_from_a_global_order_are_safe(
            dsts in proptest::collection::vec(1u8..8, 1..12),
            lags in proptest::collection::vec(0usize..4, 6),
            lagging in any::<bool>(),
        ) {
            let spec: Vec<(u64, String)> = dsts
                .iter()
                .enumerate()
                .map(|(i, bits)| {
                    let groups: Vec<String> =
                        (0..3).filter(|g| bits & (1 << g) != 0).map(|g| g.to_string()).collect();
                    (i as u64 + 1, groups.join(";"))
                })
                .collect();
            let spec_ref: Vec<(u64, &str)> = spec.iter().map(|(s, d)| (*s, d.as_str())).collect();
            let mut l = log(&spec_ref);
            for p in 0..6u32 {
                let g = crate::GroupId((p / 2) as u8);
                let mine: Vec<u64> = spec_ref
                    .iter()
                    .filter(|(_, d)| d.parse::<crate::DestSet>().unwrap().contains(g))
                    .map(|(s, _)| *s)
                    .collect();
                let keep = if lagging { mine.len().saturating_sub(lags[p as usize]) } else { mine.len() };
                deliver(&mut l, p, &mine[..keep]);
            }
            let found: Vec<Property> = check(&l).iter().map(|v| v.property).collect();
            for p in [Property::Integrity, Property::UniformPrefixOrder, Property::UniformAcyclicOrder] {
                prop_assert!(!found.contains(&p), "false alarm: {:?}", check(&l));
            }
            if !lagging {
                prop_assert!(found.is_empty(), "false alarm: {:?}", check(&l));
            }
        }
    }
}
