//! The NIC thread ([`super::LocalConfig::nic_thread`]): remote ops complete asynchronously, as on
//! a real NIC, instead of synchronously at post.
//!
//! A post queues the op on its queue pair (one per sender, peer and [`Qp`]); one extra thread
//! executes queued ops and hands their completions to the poster. It takes the next op from a
//! queue pair drawn at random among those with ops waiting, so ops of one queue pair still land
//! in post order (RC) while ops of different queue pairs, even of one sender to one peer, land
//! in any order, and an op may land long after its poster moved on. Synchronous execution
//! cannot show a protocol that either.
//!
//! A refused op puts its queue pair in error, and the ops queued behind it are flushed. A
//! reconnect starts a new epoch of the peer's queue pairs: ops posted before it and not yet
//! executed are flushed, as a queue pair reset flushes its outstanding work requests. Ops of a
//! crashed sender still queued are dropped without completion.
//!
//! A sender holds at most [`SEND_QUEUE_DEPTH`] ops not yet executed, across its queue pairs: a
//! post beyond that waits until the NIC thread takes one, as a poster retrying a full send queue
//! (`ibv_post_send`'s `ENOMEM`) would. Without the bound, a process that posts faster than the one
//! NIC thread executes (a busy-polling reader on a loaded machine) queued gigabytes and the run
//! fell ever further behind its wall-time schedule.

use super::{execute, Shared};
use crate::nic::{Completion, Op, Qp, Status, WrId};
use crate::process::ProcessId;
use crate::queue_pair::QpState;
use crate::rng::Rng;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The most ops one sender may have queued and not yet executed; a post beyond it waits.
pub const SEND_QUEUE_DEPTH: usize = 256;

/// A queue pair: the sender and `peer * Qp::COUNT + qp`.
type QpKey = (u32, usize);

/// An op waiting on its queue pair.
#[derive(Debug)]
struct Queued {
    wr: WrId,
    op: Op,
    /// The queue pair's epoch when it was posted.
    epoch: u64,
}

/// One queue pair as the NIC thread sees it: its queued ops, its error state and epoch.
#[derive(Debug, Default)]
struct Queue {
    ops: VecDeque<Queued>,
    state: QpState,
}

/// Every queue pair's queued ops and state, and which have ops waiting.
#[derive(Debug, Default)]
pub(super) struct NicQueues {
    qps: BTreeMap<QpKey, Queue>,
    /// The queue pairs with ops waiting, each once (drawn from at random).
    ready: Vec<QpKey>,
    /// Per sender, its ops queued and not yet taken.
    queued: Vec<usize>,
    /// Set by tests and fault injection: the NIC executes nothing while held.
    pub(super) held: bool,
}

impl NicQueues {
    /// Queues `op` of `me` (already validated) on its queue pair.
    pub(super) fn post(&mut self, me: ProcessId, wr: WrId, op: Op) {
        let key = (me.0, op.peer().index() * Qp::COUNT + op.qp().index());
        let qp = self.qps.entry(key).or_default();
        if qp.ops.is_empty() {
            self.ready.push(key);
        }
        let epoch = qp.state.epoch();
        qp.ops.push_back(Queued { wr, op, epoch });
        let i = me.index();
        if self.queued.len() <= i {
            self.queued.resize(i + 1, 0);
        }
        self.queued[i] += 1;
    }

    /// Whether `me`'s send queue is full: its next post waits ([`SEND_QUEUE_DEPTH`]).
    pub(super) fn full(&self, me: ProcessId) -> bool {
        self.queued.get(me.index()).copied().unwrap_or(0) >= SEND_QUEUE_DEPTH
    }

    /// A reconnect of `me` to `peer`: both queue pairs leave error, and what they still hold is
    /// flushed when its turn comes.
    pub(super) fn reconnect(&mut self, me: ProcessId, peer: ProcessId) {
        for q in 0..Qp::COUNT {
            let qp = self
                .qps
                .entry((me.0, peer.index() * Qp::COUNT + q))
                .or_default();
            qp.state.reconnect();
        }
    }

    /// Takes the next op of a queue pair drawn at random, with whether it must be flushed.
    fn next(&mut self, rng: &mut Rng) -> Option<(QpKey, Queued, bool)> {
        if self.ready.is_empty() {
            return None;
        }
        let i = rng.below(self.ready.len() as u64) as usize;
        let key = self.ready[i];
        let qp = self.qps.get_mut(&key).expect("ready queue pairs exist");
        let op = qp.ops.pop_front().expect("ready queue pairs hold ops");
        if qp.ops.is_empty() {
            self.ready.swap_remove(i);
        }
        self.queued[key.0 as usize] -= 1;
        let flush = !qp.state.executes(op.epoch);
        Some((key, op, flush))
    }

    fn ended(&mut self, key: QpKey, epoch: u64, status: Status) {
        let qp = self.qps.get_mut(&key).expect("exists");
        qp.state.failed(epoch, status);
    }
}

/// The NIC thread's loop: executes queued ops until the run stops.
pub(super) fn run(shared: &Shared, mut rng: Rng) {
    let mut queues = shared.nic.lock().expect("nic lock");
    while !shared.stop.load(Ordering::Relaxed) {
        let next = if queues.held {
            None
        } else {
            queues.next(&mut rng)
        };
        let Some(((sender, _), q, flush)) = next else {
            // Posts and `stop_all` signal; the timeout only bounds a missed signal.
            queues = shared
                .nic_signal
                .wait_timeout(queues, Duration::from_millis(1))
                .expect("nic lock")
                .0;
            continue;
        };
        if queues.queued[sender as usize] == SEND_QUEUE_DEPTH - 1 {
            // Its send queue was full: a poster waiting on it may go on.
            shared.nic_drained.notify_all();
        }
        let me = ProcessId(sender);
        let poster = &shared.procs[sender as usize];
        if poster.crashed.load(Ordering::SeqCst) {
            continue;
        }
        // Execute without the lock: posts and other queue pairs go on meanwhile.
        drop(queues);
        let (status, value) = if flush {
            (Status::Flushed, None)
        } else {
            execute(shared, me, &q.op, true)
        };
        queues = shared.nic.lock().expect("nic lock");
        let key = (sender, q.op.peer().index() * Qp::COUNT + q.op.qp().index());
        queues.ended(key, q.epoch, status);
        if status != Status::Success || q.op.signaled() {
            poster.cq.lock().expect("cq lock").push_back(Completion {
                wr: q.wr,
                kind: q.op.kind(),
                peer: q.op.peer(),
                status,
                value,
            });
            shared.notify(sender as usize);
        }
    }
}
