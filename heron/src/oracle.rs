//! The sequential oracle: replays the agreed order of requests on one copy of the state and
//! judges every replica and every client against it.
//!
//! Heron is linearizable if there is one order of requests that explains every response and
//! respects real time (section 5.1.3). The order to test is the multicast layer's: requests by
//! timestamp. The oracle checks that
//! - every replica that executed a request executed it under the same timestamp, and no two
//!   requests of one partition share one. Requests of disjoint partitions may: the multicast
//!   layer's order timestamps need only be unique where a server delivers both messages
//!   ([`multicast::Delivery::order`]), as Ridge's are (each ensemble's coordinator moves a
//!   timestamp to `last + 1`, so two ensembles can name the same one); such requests touch
//!   disjoint objects and commute, and the replay takes them in request order;
//! - every response a replica computed, and every response a client received, is the one the
//!   sequential replay gives;
//! - the multicast order extends to one that respects real time: the per-partition orders (by
//!   timestamp) and the real-time precedence between requests (one completed before the other
//!   was issued) have no cycle. The timestamp order itself need not respect real time:
//!   requests to disjoint partitions are ordered by unrelated clocks, and commute;
//! - every replica's objects equal the replay's state of its partition at the point the replica
//!   reached (its last applied request).

use crate::app::{Application, ObjectId};
use crate::client::Call;
use crate::server::Executed;
use multicast::GroupId;
use std::collections::BTreeMap;
use std::fmt;
use transport::{Nanos, ProcessId};

/// A replica as the oracle sees it after a run.
#[derive(Clone, Debug)]
pub struct ReplicaView<'a> {
    /// Its process.
    pub process: ProcessId,
    /// Its partition.
    pub group: GroupId,
    /// What it executed.
    pub executed: &'a [Executed],
    /// The timestamp its objects are current to.
    pub applied: u64,
    /// Its objects' current values; `None` for a replica that crashed (it is judged on the
    /// responses it computed only).
    pub state: Option<BTreeMap<ObjectId, Vec<u8>>>,
}

/// A client's history.
#[derive(Clone, Debug)]
pub struct ClientView {
    /// Its index.
    pub client: u32,
    /// Its requests.
    pub calls: Vec<Call>,
}

/// A request: client index and sequence number.
pub type RequestId = (u32, u32);

/// One way a run is not linearizable, with its witness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two replicas executed one request under different timestamps.
    Timestamps {
        /// The request.
        request: RequestId,
        /// The two timestamps.
        tmps: (u64, u64),
    },
    /// Two requests of one partition were executed under one timestamp.
    SharedTimestamp {
        /// The timestamp.
        tmp: u64,
        /// The two requests.
        requests: (RequestId, RequestId),
    },
    /// A replica computed a response the replay does not.
    ReplicaResponse {
        /// The replica.
        process: ProcessId,
        /// The request.
        request: RequestId,
    },
    /// A client received a response the replay does not give.
    ClientResponse {
        /// The request.
        request: RequestId,
    },
    /// A client received a response for a request no replica executed.
    Unexecuted {
        /// The request.
        request: RequestId,
    },
    /// No order explains the run: the multicast order (each partition's requests by
    /// timestamp) and real time (a request that completed before another was issued precedes
    /// it) form a cycle through these requests.
    RealTime {
        /// The requests of one cycle, in order.
        cycle: Vec<RequestId>,
    },
    /// A replica's object differs from the replay's state at the point it reached.
    State {
        /// The replica.
        process: ProcessId,
        /// The object.
        object: ObjectId,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Timestamps { request, tmps } => write!(
                f,
                "request {request:?} executed under timestamps {} and {}",
                tmps.0, tmps.1
            ),
            Violation::SharedTimestamp { tmp, requests } => write!(
                f,
                "requests {:?} and {:?} share timestamp {tmp}",
                requests.0, requests.1
            ),
            Violation::ReplicaResponse { process, request } => write!(
                f,
                "{process} computed a response to {request:?} the sequential replay does not"
            ),
            Violation::ClientResponse { request } => write!(
                f,
                "the client of {request:?} received a response the sequential replay does not give"
            ),
            Violation::Unexecuted { request } => write!(
                f,
                "the client of {request:?} received a response, yet no replica executed it"
            ),
            Violation::RealTime { cycle } => write!(
                f,
                "the multicast order and real time form a cycle through {cycle:?}"
            ),
            Violation::State { process, object } => write!(
                f,
                "{process}'s value of {object:?} differs from the replay at the point it reached"
            ),
        }
    }
}

/// What the oracle checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Requests replayed.
    pub requests: usize,
    /// Replica responses compared.
    pub replica_responses: usize,
    /// Client responses compared.
    pub client_responses: usize,
    /// Replica states compared.
    pub states: usize,
}

/// Replays the order the replicas agreed on and checks every replica and client against it.
pub fn check<A: Application>(
    app: &A,
    partitions: usize,
    replicas: &[ReplicaView<'_>],
    clients: &[ClientView],
) -> Result<Report, Vec<Violation>> {
    let mut bad = Vec::new();
    let mut report = Report::default();
    // The agreed order.
    let mut tmp_of: BTreeMap<RequestId, u64> = BTreeMap::new();
    let mut order: BTreeMap<(u64, RequestId), &[u8]> = BTreeMap::new();
    for r in replicas {
        for e in r.executed {
            let id = (e.client, e.seq);
            match tmp_of.insert(id, e.tmp) {
                Some(t) if t != e.tmp => bad.push(Violation::Timestamps {
                    request: id,
                    tmps: (t, e.tmp),
                }),
                _ => {}
            }
            order.insert((e.tmp, id), &e.body);
        }
    }
    let mut previous: Option<(u64, RequestId, Vec<GroupId>)> = None;
    for (&(tmp, id), body) in &order {
        let dst = app.destinations(body);
        if let Some((t, other, shared)) = &previous {
            if *t == tmp && shared.iter().any(|g| dst.contains(g)) {
                bad.push(Violation::SharedTimestamp {
                    tmp,
                    requests: (*other, id),
                });
            }
        }
        // Every partition of the requests at this timestamp so far: a later one that shares
        // any of them is a violation.
        previous = match previous {
            Some((t, other, mut shared)) if t == tmp => {
                shared.extend(dst);
                Some((t, other, shared))
            }
            _ => Some((tmp, id, dst)),
        };
    }
    // The replay, with the state compared to each replica's at the point it reached.
    let mut state: BTreeMap<ObjectId, Vec<u8>> = BTreeMap::new();
    for g in 0..partitions {
        app.populate(GroupId(g as u8), &mut |o, v| {
            state.insert(o, v);
        });
    }
    let mut at_point: BTreeMap<u64, Vec<&ReplicaView<'_>>> = BTreeMap::new();
    for r in replicas.iter().filter(|r| r.state.is_some()) {
        at_point.entry(r.applied).or_default().push(r);
    }
    compare(&state, 0, &mut at_point, &mut report, &mut bad);
    let mut expected: BTreeMap<RequestId, Vec<u8>> = BTreeMap::new();
    let mut replay = order.iter().peekable();
    while let Some((&(tmp, id), body)) = replay.next() {
        let execution = crate::app::execute_on(app, &mut state, body);
        expected.insert(id, execution.response);
        report.requests += 1;
        // A replica that reached `tmp` applied every request at it (of its partition).
        if replay.peek().is_none_or(|((next, _), _)| *next != tmp) {
            compare(&state, tmp, &mut at_point, &mut report, &mut bad);
        }
    }
    for r in replicas {
        for e in r.executed {
            report.replica_responses += 1;
            if expected.get(&(e.client, e.seq)) != Some(&e.response) {
                bad.push(Violation::ReplicaResponse {
                    process: r.process,
                    request: (e.client, e.seq),
                });
            }
        }
    }
    // Client responses, then the real-time order against the multicast order.
    let mut times: Vec<(Nanos, bool, RequestId)> = Vec::new();
    for c in clients {
        for call in &c.calls {
            let id = (c.client, call.seq);
            let executed = tmp_of.contains_key(&id);
            if let Some((at, response)) = &call.returned {
                report.client_responses += 1;
                if !executed {
                    bad.push(Violation::Unexecuted { request: id });
                    continue;
                }
                if expected.get(&id) != Some(response) {
                    bad.push(Violation::ClientResponse { request: id });
                }
                times.push((*at, true, id));
            }
            if executed {
                times.push((call.invoked, false, id));
            }
        }
    }
    let per_partition: Vec<Vec<RequestId>> = (0..partitions)
        .map(|g| {
            order
                .iter()
                .filter(|(_, body)| app.destinations(body).contains(&GroupId(g as u8)))
                .map(|(&(_, id), _)| id)
                .collect()
        })
        .collect();
    if let Some(cycle) = real_time_cycle(&per_partition, times) {
        bad.push(Violation::RealTime { cycle });
    }
    if bad.is_empty() {
        Ok(report)
    } else {
        Err(bad)
    }
}

/// Compares the replicas that reached `upto` with the replay's `state` there.
fn compare(
    state: &BTreeMap<ObjectId, Vec<u8>>,
    upto: u64,
    at_point: &mut BTreeMap<u64, Vec<&ReplicaView<'_>>>,
    report: &mut Report,
    bad: &mut Vec<Violation>,
) {
    for r in at_point.remove(&upto).into_iter().flatten() {
        report.states += 1;
        for (o, v) in r.state.iter().flatten() {
            if state.get(o).is_none_or(|want| want != v) {
                bad.push(Violation::State {
                    process: r.process,
                    object: *o,
                });
            }
        }
    }
}

/// A cycle of the graph whose edges are each partition's order (consecutive requests of
/// `per_partition`) and real-time precedence (`times`: completions, `true`, and invocations,
/// `false`, of requests), if it has one. Real time enters through a chain of one node per
/// event in time order, invocations before completions at equal times (precedence is strict):
/// a completion feeds its event's node, an invocation's node feeds its request, so a request
/// reaches every request invoked after it completed in O(events) edges.
fn real_time_cycle(
    per_partition: &[Vec<RequestId>],
    mut times: Vec<(Nanos, bool, RequestId)>,
) -> Option<Vec<RequestId>> {
    let mut index: BTreeMap<RequestId, usize> = BTreeMap::new();
    let mut ids: Vec<Option<RequestId>> = Vec::new();
    let mut node = |id: RequestId, ids: &mut Vec<Option<RequestId>>| {
        *index.entry(id).or_insert_with(|| {
            ids.push(Some(id));
            ids.len() - 1
        })
    };
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for order in per_partition {
        for w in order.windows(2) {
            let (a, b) = (node(w[0], &mut ids), node(w[1], &mut ids));
            edges.push((a, b));
        }
    }
    times.sort_unstable();
    let mut previous = None;
    for (_, completion, id) in times {
        let r = node(id, &mut ids);
        ids.push(None);
        let t = ids.len() - 1;
        if let Some(p) = previous {
            edges.push((p, t));
        }
        previous = Some(t);
        edges.push(if completion { (r, t) } else { (t, r) });
    }
    // Kahn's algorithm; what is left lies on or behind a cycle.
    let n = ids.len();
    let mut indegree = vec![0usize; n];
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut into: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in &edges {
        indegree[b] += 1;
        out[a].push(b);
        into[b].push(a);
    }
    let mut ready: Vec<usize> = (0..n).filter(|&v| indegree[v] == 0).collect();
    let mut left = n;
    while let Some(v) = ready.pop() {
        left -= 1;
        for &w in &out[v] {
            indegree[w] -= 1;
            if indegree[w] == 0 {
                ready.push(w);
            }
        }
    }
    if left == 0 {
        return None;
    }
    // Walk back along edges between nodes left: every one has a predecessor left, so the walk
    // repeats a node, and the stretch between the repeats is a cycle.
    let mut at = (0..n).find(|&v| indegree[v] > 0).expect("nodes left");
    let mut seen = vec![usize::MAX; n];
    let mut path = Vec::new();
    while seen[at] == usize::MAX {
        seen[at] = path.len();
        path.push(at);
        at = *into[at]
            .iter()
            .find(|&&p| indegree[p] > 0)
            .expect("a predecessor left");
    }
    let mut cycle: Vec<RequestId> = path[seen[at]..].iter().filter_map(|&v| ids[v]).collect();
    cycle.reverse();
    Some(cycle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::KeyValue;

    /// Request `(client, 1)`: add `delta` to `key`, ordered at `tmp`; its response is the value
    /// before.
    fn executed(client: u32, tmp: u64, key: u64, delta: i64, before: i64) -> Executed {
        Executed {
            tmp,
            client,
            seq: 1,
            body: KeyValue::request(&[key], delta),
            response: before.to_le_bytes().to_vec(),
        }
    }

    fn call(e: &Executed, invoked: u64, returned: u64) -> ClientView {
        ClientView {
            client: e.client,
            calls: vec![Call {
                seq: e.seq,
                request: e.body.clone(),
                invoked: Nanos(invoked),
                returned: Some((Nanos(returned), e.response.clone())),
            }],
        }
    }

    fn replica(executed: &[Executed], applied: u64, key0: i64) -> ReplicaView<'_> {
        let mut state = BTreeMap::new();
        state.insert(ObjectId { table: 0, key: 0 }, key0.to_le_bytes().to_vec());
        state.insert(ObjectId { table: 0, key: 2 }, 0i64.to_le_bytes().to_vec());
        ReplicaView {
            process: ProcessId(0),
            group: GroupId(0),
            executed,
            applied,
            state: Some(state),
        }
    }

    /// Client 0 adds 1 to key 0 at timestamp 10, client 1 reads key 0 at 20 and sees 1.
    fn good() -> Vec<Executed> {
        vec![executed(0, 10, 0, 1, 0), executed(1, 20, 0, 0, 1)]
    }

    fn verdict(
        log: &[Executed],
        key0: i64,
        clients: &[ClientView],
    ) -> Result<Report, Vec<Violation>> {
        let app = KeyValue::new(2, 4, 0.0);
        check(&app, 2, &[replica(log, 20, key0)], clients)
    }

    #[test]
    fn a_correct_history_passes() {
        let log = good();
        let clients = [call(&log[0], 0, 5), call(&log[1], 6, 9)];
        let r = verdict(&log, 1, &clients).expect("linearizable");
        assert_eq!(
            (
                r.requests,
                r.replica_responses,
                r.client_responses,
                r.states
            ),
            (2, 2, 2, 1)
        );
    }

    #[test]
    fn a_wrong_response_is_named() {
        let mut log = good();
        let mut clients = vec![call(&log[0], 0, 5), call(&log[1], 6, 9)];
        clients[1].calls[0].returned = Some((Nanos(9), 7i64.to_le_bytes().to_vec()));
        assert_eq!(
            verdict(&log, 1, &clients),
            Err(vec![Violation::ClientResponse { request: (1, 1) }])
        );
        log[1].response = 0i64.to_le_bytes().to_vec();
        let clients = [call(&log[0], 0, 5), call(&log[1], 6, 9)];
        let v = verdict(&log, 1, &clients).unwrap_err();
        assert!(v.contains(&Violation::ReplicaResponse {
            process: ProcessId(0),
            request: (1, 1)
        }));
    }

    #[test]
    fn a_read_ordered_before_a_write_that_completed_earlier_is_a_real_time_cycle() {
        // The write completed at 5, the read was issued at 6, yet the read is ordered first
        // (and saw the old value): no order explains it.
        let log = vec![executed(1, 10, 0, 0, 0), executed(0, 20, 0, 1, 0)];
        let clients = [call(&log[1], 0, 5), call(&log[0], 6, 9)];
        let v = verdict(&log, 1, &clients).unwrap_err();
        assert_eq!(
            v,
            vec![Violation::RealTime {
                cycle: vec![(0, 1), (1, 1)]
            }]
        );
    }

    #[test]
    fn requests_on_disjoint_partitions_may_be_ordered_against_real_time() {
        // Key 0 lives in partition 0, key 1 in partition 1: they commute, and their timestamps
        // come from unrelated clocks.
        let log = vec![executed(1, 10, 1, 1, 0), executed(0, 20, 0, 1, 0)];
        let clients = [call(&log[1], 0, 5), call(&log[0], 6, 9)];
        let app = KeyValue::new(2, 4, 0.0);
        let r = check(&app, 2, &[replica(&log, 20, 1)], &clients);
        assert!(r.is_ok(), "{r:?}");
    }

    #[test]
    fn requests_on_disjoint_partitions_may_share_a_timestamp() {
        // Ridge's ensembles can stamp two messages alike; key 1 (partition 1) is replayed
        // after key 0's request of client 1, and partition 0's replica at timestamp 10 is
        // compared once both are in.
        let log = vec![executed(0, 10, 1, 1, 0), executed(1, 10, 0, 1, 0)];
        let clients = [call(&log[0], 0, 5), call(&log[1], 0, 5)];
        let app = KeyValue::new(2, 4, 0.0);
        let r = check(&app, 2, &[replica(&log, 10, 1)], &clients).expect("linearizable");
        assert_eq!((r.requests, r.states), (2, 1));
    }

    #[test]
    fn diverging_state_and_shared_timestamps_are_named() {
        let log = good();
        let v = verdict(&log, 5, &[]).unwrap_err();
        assert_eq!(
            v,
            vec![Violation::State {
                process: ProcessId(0),
                object: ObjectId { table: 0, key: 0 }
            }]
        );
        let log = vec![executed(0, 10, 0, 1, 0), executed(1, 10, 0, 0, 1)];
        let v = verdict(&log, 1, &[]).unwrap_err();
        assert!(v.contains(&Violation::SharedTimestamp {
            tmp: 10,
            requests: ((0, 1), (1, 1))
        }));
    }
}
