//! The runtime's failure handling, node by node on the fake fabric with its manual clock: each
//! test sets up the interleaving a review found unsafe (issue 48, findings 1, 2, 4 and 5) and
//! asserts the model's promise, whichever mechanism keeps it.

use super::*;
use crate::completion::Health;
use crate::control::Mailboxes;
use crate::fake::{Fabric, FakeConfig, FakeCtx};
use crate::provider::QueuePair as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use transport::{Access, Data, LocalAddr, Nic, Op, Qp, RegionId, RegionSpec, RemoteAddr, Status};
use transport::{OpKind, WriteFlags};

const A: ProcessId = ProcessId(0);
const B: ProcessId = ProcessId(1);
const R0: RegionId = RegionId(0);

type Node = VerbsNic<FakeCtx>;

/// Nodes with `regions` each, opened on `fabric` and connected (the bootstrap runs on threads,
/// as it waits for every node; the test then steps the nodes itself).
fn connected(fabric: &Fabric, n: usize, regions: Vec<RegionSpec>) -> Vec<Node> {
    let specs = vec![regions; n];
    let mailboxes = Arc::new(Mailboxes::new(n));
    let cfg = VerbsConfig {
        recv_depth: 4,
        recv_size: 4096,
        staging: 256 << 10,
        chunk: 64 << 10,
        ..VerbsConfig::default()
    };
    let start = Instant::now();
    std::thread::scope(|s| {
        let opening: Vec<_> = (0..n)
            .map(|i| {
                let (fabric, cfg, specs) = (fabric, &cfg, &specs);
                let control: Arc<dyn Control> = mailboxes.clone();
                s.spawn(move || {
                    let me = ProcessId(i as u32);
                    let mut nic = VerbsNic::open(fabric, me, cfg, specs, control, start)
                        .expect("the fake device opens");
                    nic.bootstrap_in_process().expect("the nodes connect");
                    nic
                })
            })
            .collect();
        opening.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Lets the fabric and the nodes run until nothing moves: the fabric delivers what is due,
/// every node answers its mail and takes its completions.
fn settle(fabric: &Fabric, nodes: &mut [Node]) {
    for _ in 0..50 {
        fabric.settle();
        for n in nodes.iter_mut() {
            n.service_mail();
            n.poll_device();
        }
    }
}

/// Every completion `node` has, in order.
fn completions(node: &mut Node) -> Vec<Completion> {
    std::iter::from_fn(|| node.poll_completion()).collect()
}

fn write(to: ProcessId, len: usize) -> Op {
    Op::Write {
        dst: RemoteAddr::new(to, R0, 0),
        data: Data::Bytes(vec![0xAB; len].into()),
        imm: None,
        flags: WriteFlags::SIGNALED,
    }
}

fn revoke(peer: ProcessId) -> Op {
    Op::SetAccess {
        region: R0,
        peer,
        access: Access::None,
    }
}

/// The bytes of `node`'s region 0.
fn memory(node: &Node, len: usize) -> Vec<u8> {
    let mut buf = vec![0; len];
    node.read_local(LocalAddr::new(R0, 0), &mut buf).unwrap();
    buf
}

/// Whether, after `revoking` returned (or failed loudly), a write of B to A's region is kept
/// out: the promise of finding 1, for either path of an access change.
fn a_failed_revoke_is_never_recorded(mut nodes: Vec<Node>, fabric: &Fabric) {
    let revoked = catch_unwind(AssertUnwindSafe(|| nodes[0].post(revoke(B))));
    if revoked.is_err() {
        return; // it failed loudly: the node stopped with the reason
    }
    nodes[1].post(write(A, 64)).unwrap();
    settle(fabric, &mut nodes);
    let done = completions(&mut nodes[1]);
    assert!(
        memory(&nodes[0], 64).iter().all(|&b| b == 0),
        "a revoke whose verb failed was recorded as done, and the peer's write landed ({done:?})"
    );
}

/// Finding 1, fast path: the queue-pair change of a revoke fails.
#[test]
fn a_revoke_whose_queue_pair_change_fails_is_not_recorded() {
    let fabric = Fabric::new(FakeConfig::manual());
    let nodes = connected(
        &fabric,
        2,
        vec![RegionSpec::new(4096).with_default(Access::ReadWrite)],
    );
    fabric.fail_next("ibv_modify_qp", 5);
    a_failed_revoke_is_never_recorded(nodes, &fabric);
}

/// Finding 1, slow path: a region whose access changes alone is registered again, and the
/// registration fails.
#[test]
fn a_revoke_whose_registration_fails_is_not_recorded() {
    let fabric = Fabric::new(FakeConfig::manual());
    let region = RegionSpec::new(4096).with_default(Access::ReadWrite);
    let nodes = connected(&fabric, 2, vec![region.clone(), region]);
    fabric.fail_next("ibv_reg_mr", 12);
    a_failed_revoke_is_never_recorded(nodes, &fabric);
}

/// Finding 2: a revoke is a fence. B's 64 KiB write (16 packets) has one packet landed when A
/// revokes B's access; once `SetAccess` returns, none of the other 15 may land, on a device
/// that checks access at a message's first packet only (mlx5).
#[test]
fn no_write_lands_after_a_revoke_returns() {
    let fabric = Fabric::new(FakeConfig::manual());
    let len = 64 << 10;
    let mut nodes = connected(
        &fabric,
        2,
        vec![RegionSpec::new(len).with_default(Access::ReadWrite)],
    );
    let qpn = nodes[1].peers[A.index()].links[Qp::Data.index()]
        .qp
        .qp_num();
    fabric.hold(qpn, 1);
    nodes[1].post(write(A, len)).unwrap();
    fabric.settle();
    let mtu = nodes[0].info.mtu as usize;
    assert!(
        memory(&nodes[0], mtu).iter().all(|&b| b == 0xAB),
        "the first packet landed"
    );
    nodes[0].post(revoke(B)).unwrap();
    fabric.release(qpn);
    settle(&fabric, &mut nodes);
    let landed = memory(&nodes[0], len)[mtu..]
        .iter()
        .filter(|&&b| b != 0)
        .count();
    assert_eq!(
        landed, 0,
        "bytes of the peer's write landed after the revoke returned"
    );
}

/// Finding 4: B's write to A's read-only region is refused, which breaks A's end too (the
/// responder's queue pair goes to ERR). A must learn it, so that its own reconnect resets the
/// pair: after it, A's send reaches B.
#[test]
fn an_owner_whose_pair_broke_under_a_refused_write_resets_on_its_own_reconnect() {
    let fabric = Fabric::new(FakeConfig::manual());
    let mut nodes = connected(
        &fabric,
        2,
        vec![RegionSpec::new(4096).with_default(Access::Read)],
    );
    nodes[1].post(write(A, 64)).unwrap();
    settle(&fabric, &mut nodes);
    let refused = completions(&mut nodes[1]);
    assert!(
        refused.iter().any(|c| c.status == Status::AccessDenied),
        "{refused:?}"
    );
    nodes[0].post(Op::Reconnect { peer: B }).unwrap();
    settle(&fabric, &mut nodes);
    let send = nodes[0]
        .post(Op::Send {
            to: B,
            data: bytes::Bytes::from_static(b"after the refusal"),
            signaled: true,
        })
        .unwrap();
    settle(&fabric, &mut nodes);
    let done = completions(&mut nodes[0]);
    let sent = done
        .iter()
        .find(|c| c.wr == send)
        .expect("the send completed");
    assert_eq!(sent.status, Status::Success, "{done:?}");
    assert!(
        matches!(nodes[1].poll_recv(), Some(transport::Recv::Message { .. })),
        "B received the send"
    );
}

/// Finding 5: A's fetch-and-add executed at B, and its completion waits unpolled in A's
/// queue when B resets the pair. A must not call it flushed (a process that posts it again
/// would add twice): it completes with its old value, or the word is unchanged.
#[test]
fn a_reset_by_the_peer_never_calls_an_executed_atomic_flushed() {
    let fabric = Fabric::new(FakeConfig::manual());
    let mut nodes = connected(
        &fabric,
        2,
        vec![RegionSpec::new(64).with_default(Access::ReadWrite)],
    );
    let add = nodes[0]
        .post(Op::FetchAdd {
            dst: RemoteAddr::new(B, R0, 0),
            add: 1,
        })
        .unwrap();
    fabric.settle();
    // B saw its pair to A break (how does not matter here), so its reconnect resets both ends.
    for link in &mut nodes[1].peers[A.index()].links {
        link.health = Health::Broken(Status::Flushed);
    }
    nodes[1].post(Op::Reconnect { peer: A }).unwrap();
    settle(&fabric, &mut nodes);
    let done = completions(&mut nodes[0]);
    let faa = done
        .iter()
        .find(|c| c.wr == add && c.kind == OpKind::FetchAdd)
        .expect("the fetch-and-add completed");
    let word = nodes[1].load_u64(LocalAddr::new(R0, 0)).unwrap();
    match faa.status {
        Status::Success => assert_eq!((faa.value, word), (Some(0), 1)),
        other => assert_eq!(word, 0, "the add executed, yet it completed {other:?}"),
    }
}
