//! The client op by op on a recording NIC: nothing drains its rings, so backpressure is
//! scripted by sending, and answers are landed in its memory by hand.

use multicast::{Client, DestSet, Membership, MsgId, MulticastError};
use ridge::wire::Packet;
use ridge::{Config, RidgeClient};
use std::sync::Arc;
use transport::mesh::Mesh;
use transport::recording::RecordingNic;
use transport::{LocalAddr, Nanos, Nic, Op, Process, ProcessId};

/// One group of five servers, three of them acceptors (`p0` coordinates, the quorum is `p0`,
/// `p1`; copies go to `p2`, `p3`, `p4`), one client (`p5`), optimistic deliveries on, and
/// rings of two slots with an outbox of one: three packets fill a channel.
fn config() -> Arc<Config> {
    let mut cfg = Config::new(1, 5, 1);
    cfg.acceptors = 3;
    cfg.optimistic = Some(Nanos(100_000));
    cfg.ring_slots = 2;
    cfg.outbox = 1;
    cfg.validate().unwrap();
    Arc::new(cfg)
}

fn nic(cfg: &Config, p: ProcessId) -> RecordingNic {
    let regions = cfg.mesh().regions().to_vec();
    RecordingNic::new(p, vec![regions; cfg.processes()], 1)
}

/// The processes the ops write to, in post order.
fn targets(nic: &mut RecordingNic) -> Vec<u32> {
    nic.take_ops()
        .into_iter()
        .filter_map(|(_, op)| match op {
            Op::Write { dst, .. } => Some(dst.process.0),
            _ => None,
        })
        .collect()
}

/// Server `from` answers message `id`: its packet's writes land in the client's memory.
fn answer(cfg: &Config, client: &mut RecordingNic, from: ProcessId, id: MsgId) {
    let mut server = nic(cfg, from);
    let mut mesh = Mesh::new(cfg.mesh(), from).unwrap();
    let response = Packet::Response {
        id,
        coordinator: None,
    };
    mesh.send(&mut server, client.id(), &response.encode())
        .unwrap();
    for (_, op) in server.take_ops() {
        if let Op::Write { dst, data, .. } = op {
            assert_eq!(dst.process, client.id());
            let at = LocalAddr::new(dst.region, dst.offset);
            client.memory_mut().write_data(at, &data).unwrap();
        }
    }
}

/// Group 0, where every multicast of these tests goes.
fn g0() -> DestSet {
    "0".parse().unwrap()
}

/// The client (`p5`) on its NIC, having multicast a first message to group 0: that message's
/// id.
fn client_with_a_multicast(cfg: &Arc<Config>) -> (RidgeClient, RecordingNic, MsgId) {
    let mut c = RidgeClient::new(cfg.clone(), 0, 1);
    let mut n = nic(cfg, cfg.client(0));
    let first = c.try_multicast(&mut n, g0(), b"one").unwrap();
    (c, n, first)
}

/// The client asks again at each of `retries` retry timeouts; then p3 answers `first`, which
/// completes. The ops posted until then are dropped.
fn retry_then_answer(
    cfg: &Config,
    c: &mut RidgeClient,
    n: &mut RecordingNic,
    first: MsgId,
    retries: u64,
) {
    for i in 1..=retries {
        n.set_now(Nanos(i * cfg.timing.retry.as_nanos()));
        Process::poll(c, n);
    }
    answer(cfg, n, ProcessId(3), first);
    Process::poll(c, n);
    let done = Client::<RecordingNic>::poll_completed(c);
    assert_eq!(done.map(|d| d.msg), Some(first));
    n.take_ops();
}

/// Pins R1 (review): a client refused `Full` kept its sequence number, and the workload sent
/// another message (new timestamp, new destinations) under the same id; the refused one's
/// copies had already gone to the learners, which paired the id's DECISION with them. The
/// request now goes first: a refused multicast posts nothing, so its id names no content.
#[test]
fn a_refused_multicast_sends_no_copies() {
    let cfg = config();
    let (mut c, mut n, first) = client_with_a_multicast(&cfg);
    let mut posted = targets(&mut n);
    posted.sort_unstable();
    assert_eq!(posted, vec![0, 2, 3, 4], "the request and three copies");
    // Unanswered, the client asks every acceptor again and again: their channels fill.
    retry_then_answer(&cfg, &mut c, &mut n, first, 3);
    let e = c.try_multicast(&mut n, g0(), b"two").unwrap_err();
    assert!(matches!(e, MulticastError::Full { .. }), "{e}");
    assert_eq!(
        targets(&mut n),
        Vec::<u32>::new(),
        "a refused multicast posted"
    );
}

/// Pins R2 (review): a client asked the same acceptor first until an answer named another,
/// so once its channel to a crashed one was full (nobody drains a crashed process's ring)
/// every multicast was refused, for good. A request the first choice cannot take now goes to
/// the next acceptor, which passes it on.
#[test]
fn a_request_the_first_acceptor_cannot_take_goes_to_the_next() {
    let cfg = config();
    let (mut c, mut n, first) = client_with_a_multicast(&cfg);
    // Two retries: p0's channel (the request and two retries) is full, p1's has room in its
    // outbox.
    retry_then_answer(&cfg, &mut c, &mut n, first, 2);
    c.try_multicast(&mut n, g0(), b"two").unwrap();
    assert_eq!(
        targets(&mut n),
        vec![3, 4],
        "the copies (p2's channel is full)"
    );
    // p1 drains its ring: the request waiting for it goes out.
    let credit = LocalAddr::new(cfg.mesh().credits, 8);
    n.memory_mut().store_u64(credit, 2).unwrap();
    Process::poll(&mut c, &mut n);
    assert_eq!(targets(&mut n), vec![1], "the request went to p1");
}
