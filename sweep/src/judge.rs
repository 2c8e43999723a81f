//! The verdicts on one run: safety (the delivery log), progress after the faults, halts.

use super::schedule::{impairs, Phases};
use super::tally::Outcome;
use multicast::{check, collect_log, GroupId, Membership, Node, Server};
use transport::runtime::sim::Fault;
use transport::{Nanos, ProcessId};

/// The shared verdict of a multicast run: halts judged, progress after the faults judged, then
/// the delivery log against the five properties. `nodes` are the run's processes (node `i` is
/// process `i`), `crashed` says who crashed, `faults` is the schedule.
pub fn judge<S: Server, C>(
    nodes: &[Node<S, C>],
    crashed: impl Fn(ProcessId) -> bool,
    faults: &[Fault],
    phases: &Phases,
    m: &impl Membership,
    out: &mut Outcome,
) {
    judge_progress(nodes, &crashed, faults, phases, out);
    let halted: Vec<ProcessId> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| match n {
            Node::Server(s) | Node::Auxiliary(s) if s.server.halted() => Some(ProcessId(i as u32)),
            _ => None,
        })
        .collect();
    out.halted = halted.len() as u64;
    out.violations
        .extend(judge_halts(&halted, &crashed, faults, m));
    let log = collect_log(nodes, &crashed);
    out.violations
        .extend(check(&log).into_iter().map(|v| v.to_string()));
    out.log = Some(log);
}

/// Liveness after failures: every correct client keeps multicasting through the liveness phase,
/// and must complete at least one multicast it started after the last fault stopped acting
/// (validity then requires every correct destination to deliver each of them). Counts, per
/// fault, the completed multicasts started after it.
pub(super) fn judge_progress<S, C>(
    nodes: &[Node<S, C>],
    crashed: &impl Fn(ProcessId) -> bool,
    faults: &[Fault],
    phases: &Phases,
    out: &mut Outcome,
) {
    let ends: Vec<Nanos> = faults.iter().map(Fault::end).collect();
    out.after_each = vec![0; faults.len()];
    for n in nodes {
        let Node::Client(c) = n else { continue };
        let done = c.completions.as_deref().unwrap_or_default();
        for (k, &end) in ends.iter().enumerate() {
            out.after_each[k] += done.iter().filter(|d| d.sent_at >= end).count() as u64;
        }
        let after = done
            .iter()
            .filter(|d| d.sent_at >= phases.last_fault)
            .count() as u64;
        out.post_fault += after;
        if after == 0 && !crashed(c.id) && c.error.is_none() {
            out.violations.push(format!(
                "liveness after faults: correct client {} completed no multicast started after the last fault ended at {} (it multicast until {})",
                c.id, phases.last_fault, phases.load_end
            ));
        }
    }
}

/// Halts are outcomes, not crashes. A server halts when it was excluded while unresponsive and
/// finds its buffers recycled; only the schedule can make a correct server unresponsive (see
/// `impairs`), so a halt without such a fault is a failure. And a
/// group tolerates f faulty members: crashed and halted together must not exceed f.
pub fn judge_halts(
    halted: &[ProcessId],
    crashed: &impl Fn(ProcessId) -> bool,
    faults: &[Fault],
    m: &impl Membership,
) -> Vec<String> {
    let mut violations = Vec::new();
    for &p in halted {
        if !faults.iter().any(|f| impairs(f, p)) {
            violations.push(format!(
                "{p} halted, yet the schedule never paused, slowed or delayed it: a correct server stopped"
            ));
        }
    }
    for g in 0..m.group_count() {
        let g = GroupId(g as u8);
        let out: Vec<ProcessId> = (0..m.replica_count())
            .map(|r| m.server(g, r))
            .filter(|&p| crashed(p) || halted.contains(&p))
            .collect();
        if out.len() > m.f() {
            violations.push(format!(
                "group {g}: {} of its {} members crashed or halted ({}), more than f = {}",
                out.len(),
                m.replica_count(),
                out.iter()
                    .map(|p| format!(
                        "{p}{}",
                        if halted.contains(p) {
                            " halted"
                        } else {
                            " crashed"
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                m.f()
            ));
        }
    }
    violations
}
