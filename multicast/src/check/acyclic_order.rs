//! Uniform acyclic order (RamCast 2.2 and Proposition 5): the relation m < m' iff some process
//! delivers m before m' is acyclic.
//!
//! The relation is the transitive closure of "delivered right after" at each process, so a cycle
//! exists exactly when the graph of consecutive deliveries has one. A depth-first search finds
//! one; the witness lists its messages and, for each step, a process that delivered in that order.

use super::{Property, Violation};
use crate::{DeliveryLog, MsgId, ProcessId};
use std::collections::BTreeMap;

/// A cycle of the delivery order, if any.
pub fn check(log: &DeliveryLog) -> Option<Violation> {
    // Nodes: messages in id order; edges: consecutive deliveries, each with a witness process.
    let mut index: BTreeMap<MsgId, usize> = BTreeMap::new();
    for seq in log.deliveries.values() {
        for &m in seq {
            let n = index.len();
            index.entry(m).or_insert(n);
        }
    }
    let mut ids = vec![MsgId::default(); index.len()];
    for (&m, &i) in &index {
        ids[i] = m;
    }
    let mut edges: Vec<BTreeMap<usize, ProcessId>> = vec![BTreeMap::new(); ids.len()];
    for (&p, seq) in &log.deliveries {
        for w in seq.windows(2) {
            let (a, b) = (index[&w[0]], index[&w[1]]);
            // A message delivered twice in a row is integrity's violation, not a cycle.
            if a != b {
                edges[a].entry(b).or_insert(p);
            }
        }
    }
    let cycle = find_cycle(&edges)?;
    let messages: Vec<MsgId> = cycle.iter().map(|&i| ids[i]).collect();
    let mut processes = Vec::new();
    let mut steps = Vec::new();
    for k in 0..cycle.len() {
        let (a, b) = (cycle[k], cycle[(k + 1) % cycle.len()]);
        let p = edges[a][&b];
        processes.push(p);
        steps.push(format!("{p} delivers {} before {}", ids[a], ids[b]));
    }
    Some(Violation {
        property: Property::UniformAcyclicOrder,
        messages,
        processes,
        detail: format!("delivery order has a cycle: {}", steps.join("; ")),
    })
}

/// Iterative depth-first search; returns the nodes of one cycle in edge order.
fn find_cycle(edges: &[BTreeMap<usize, ProcessId>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnStack,
        Done,
    }
    let mut mark = vec![Mark::New; edges.len()];
    for root in 0..edges.len() {
        if mark[root] != Mark::New {
            continue;
        }
        let mut stack: Vec<(usize, Vec<usize>)> =
            vec![(root, edges[root].keys().copied().collect())];
        mark[root] = Mark::OnStack;
        while let Some((node, pending)) = stack.last_mut() {
            let node = *node;
            match pending.pop() {
                Some(next) => match mark[next] {
                    Mark::OnStack => {
                        let from = stack
                            .iter()
                            .position(|(n, _)| *n == next)
                            .expect("on stack");
                        return Some(stack[from..].iter().map(|(n, _)| *n).collect());
                    }
                    Mark::New => {
                        mark[next] = Mark::OnStack;
                        stack.push((next, edges[next].keys().copied().collect()));
                    }
                    Mark::Done => {}
                },
                None => {
                    mark[node] = Mark::Done;
                    stack.pop();
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    /// The classic three-group cycle: each pair of groups agrees, yet m1 < m2 < m3 < m1. Prefix
    /// order holds (no two processes share two of the messages); only acyclicity catches it.
    #[test]
    fn a_cycle_across_three_groups_is_caught() {
        let mut l = log(&[(1, "0;1"), (2, "1;2"), (3, "2;0")]);
        deliver(&mut l, 0, &[3, 1]);
        deliver(&mut l, 1, &[3, 1]);
        deliver(&mut l, 2, &[1, 2]);
        deliver(&mut l, 3, &[1, 2]);
        deliver(&mut l, 4, &[2, 3]);
        deliver(&mut l, 5, &[2, 3]);
        let v = check(&l).unwrap();
        assert_eq!(v.property, Property::UniformAcyclicOrder);
        let mut ms = v.messages.clone();
        ms.sort();
        assert_eq!(ms, vec![m(1), m(2), m(3)]);
        assert_eq!(v.processes.len(), 3);
        assert!(super::super::prefix_order::check(&l).is_none());
        assert_eq!(
            super::super::check(&l)
                .iter()
                .map(|v| v.property)
                .collect::<Vec<_>>(),
            vec![Property::UniformAcyclicOrder]
        );
    }

    #[test]
    fn a_consistent_order_has_no_cycle() {
        let mut l = log(&[(1, "0;1"), (2, "1;2"), (3, "2;0")]);
        deliver(&mut l, 0, &[1, 3]);
        deliver(&mut l, 2, &[1, 2]);
        deliver(&mut l, 4, &[2, 3]);
        assert!(check(&l).is_none());
    }
}
