//! The client and server roles every atomic multicast protocol of the workbench plays, and the
//! [`Node`] that lets a runtime drive servers and clients of one protocol side by side.
//!
//! Protocols never write files: a server hands out what it delivered as data
//! ([`Server::poll_delivery`]), a client what completed ([`Client::poll_completed`]); the harness
//! turns both into logs and statistics.

use crate::workload::{ClosedLoop, LoadSpec};
use crate::{DestSet, GroupId, Membership, MsgId};
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Arc;
use transport::{Nanos, Nic, Process, Progress, Purpose, RegionSpec, Rng};

/// A message a server delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The message.
    pub msg: MsgId,
    /// Its destination groups.
    pub dst: DestSet,
    /// Its bytes.
    pub payload: Bytes,
    /// The protocol's order timestamp, where it has one: the same for the message at every
    /// server that delivers it, and increasing along every server's deliveries, so that two
    /// messages compare in the order any server delivering both delivered them (what Heron's
    /// request timestamps need). RamCast's final timestamp, Ridge's merged one; `None` for a
    /// protocol that orders without one (TRAM). The delivery log checks it.
    pub order: Option<u64>,
}

/// A multicast whose client has the responses it waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completed {
    /// The message.
    pub msg: MsgId,
    /// When it was multicast.
    pub sent_at: Nanos,
    /// Time from the multicast to the first response of every destination group (the papers'
    /// latency).
    pub latency: Nanos,
}

impl Completed {
    /// Multicast `msg`, sent at `sent_at`, whose last awaited response arrived at `now`.
    pub fn at(msg: MsgId, sent_at: Nanos, now: Nanos) -> Completed {
        Completed {
            msg,
            sent_at,
            latency: now.saturating_sub(sent_at),
        }
    }
}

/// A client's multicast in flight until a server of every destination group has answered it
/// (the papers' latency ends at the last group's first answer). A closed-loop client keeps
/// one at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outstanding {
    /// The message.
    pub msg: MsgId,
    /// Its destination groups.
    pub dst: DestSet,
    /// When it was multicast.
    pub sent_at: Nanos,
    /// Destination groups whose answer came.
    answered: DestSet,
}

impl Outstanding {
    /// Multicast `msg` to `dst` at `sent_at`, no answer yet.
    pub fn new(msg: MsgId, dst: DestSet, sent_at: Nanos) -> Outstanding {
        Outstanding {
            msg,
            dst,
            sent_at,
            answered: DestSet::EMPTY,
        }
    }

    /// Takes group `g`'s answer to message `msg`; returns whether every destination group has
    /// now answered. An answer to another message (a late one to an earlier multicast) or
    /// from a group not among the destinations counts for nothing.
    pub fn answer(&mut self, msg: MsgId, g: GroupId) -> bool {
        if msg != self.msg || !self.dst.contains(g) {
            return false;
        }
        self.answered = self.answered.with(g);
        self.answered == self.dst
    }

    /// The multicast completed by an answer that arrived at `now`.
    pub fn completed(&self, now: Nanos) -> Completed {
        Completed::at(self.msg, self.sent_at, now)
    }
}

/// Why a multicast was refused. Nothing was sent when one of these is returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MulticastError {
    /// The destination set is empty.
    #[error("the destination set is empty: name at least one group")]
    NoDestination,
    /// The destination set names a group the configuration does not have.
    #[error("destination group {group} does not exist (the configuration has groups 0..{groups})")]
    UnknownGroup {
        /// The group named.
        group: GroupId,
        /// Groups configured.
        groups: usize,
    },
    /// The message does not fit in a buffer slot.
    #[error("message of {len} bytes does not fit in a slot (at most {max} bytes for {dst_groups} destination group(s)); raise the slot size")]
    TooLarge {
        /// Message length.
        len: usize,
        /// The largest message for this destination set.
        max: usize,
        /// Destination groups (their slot pointers share the slot).
        dst_groups: usize,
    },
    /// The client already has a multicast in flight (clients are closed-loop: one at a time).
    #[error("a multicast is already in flight; wait for its completion")]
    InFlight,
    /// A destination buffer has no free slot until servers report deliveries (backpressure).
    #[error("no free slot in the buffers of group {group} yet; poll and retry")]
    Full {
        /// The group whose buffers are full.
        group: GroupId,
    },
}

impl MulticastError {
    /// Checks a destination set against `groups` configured groups: empty, or naming a group
    /// that does not exist, is an error every protocol's client reports the same way.
    pub fn check_destinations(dst: DestSet, groups: usize) -> Result<(), MulticastError> {
        if dst.is_empty() {
            return Err(MulticastError::NoDestination);
        }
        match dst.groups().find(|g| g.0 as usize >= groups) {
            Some(group) => Err(MulticastError::UnknownGroup { group, groups }),
            None => Ok(()),
        }
    }

    /// Checks a payload of `len` bytes against `max`, the largest a slot holds for `dst`: a
    /// larger one is refused the same way by every protocol's client.
    pub fn check_size(len: usize, max: usize, dst: DestSet) -> Result<(), MulticastError> {
        if len > max {
            return Err(MulticastError::TooLarge {
                len,
                max,
                dst_groups: dst.len(),
            });
        }
        Ok(())
    }
}

/// A server replica of an atomic multicast protocol.
pub trait Server {
    /// The group the server belongs to.
    fn group(&self) -> GroupId;
    /// The next delivered message, in delivery order.
    fn poll_delivery(&mut self) -> Option<Delivery>;
    /// Why the server stopped itself, if it did: it can no longer take part correctly (for
    /// example it was excluded while unresponsive and its buffers were recycled, or its memory
    /// holds what no correct peer writes). It counts as faulty in the run's log, and the runtime
    /// treats it as crashed ([`Process::stopped`]). The sentence names what the server found,
    /// so a report can tell a recycled buffer from a forged write.
    fn halt_reason(&self) -> Option<&str> {
        None
    }
    /// True if the server stopped itself ([`Server::halt_reason`]).
    fn halted(&self) -> bool {
        self.halt_reason().is_some()
    }
}

/// What [`Client::try_multicast`] returns: the message's id, or why nothing was sent.
pub type MulticastResult = Result<MsgId, MulticastError>;

/// A client of an atomic multicast protocol.
pub trait Client<N: Nic>: Process<N> {
    /// Multicasts `payload` to the groups of `dst`; returns the message id.
    fn try_multicast(&mut self, nic: &mut N, dst: DestSet, payload: &[u8]) -> MulticastResult;
    /// The next multicast that completed.
    fn poll_completed(&mut self) -> Option<Completed>;
    /// The earliest time the client wants to be polled again for a reason that arose outside
    /// its `poll` (a refused multicast that started a timer), if any.
    fn deadline(&self) -> Option<Nanos> {
        None
    }
}

/// A server wrapped for a run: drains its deliveries after every poll, counting them and, when
/// asked, keeping their ids for the delivery log.
#[derive(Debug)]
pub struct ServerNode<S> {
    /// The protocol's server.
    pub server: S,
    /// Messages delivered so far.
    pub delivered: u64,
    /// Delivered ids in order, with their order timestamps, when logging.
    pub log: Option<Vec<(MsgId, Option<u64>)>>,
    /// The latest deliveries' payloads are dropped; this keeps the last one for inspection.
    pub last: Option<Delivery>,
    drained: VecDeque<Delivery>,
}

impl<S> ServerNode<S> {
    /// Wraps `server`; `log` keeps every delivered id.
    pub fn new(server: S, log: bool) -> ServerNode<S> {
        ServerNode {
            server,
            delivered: 0,
            log: log.then(Vec::new),
            last: None,
            drained: VecDeque::new(),
        }
    }
}

impl<N: Nic, S: Server + Process<N>> Process<N> for ServerNode<S> {
    fn regions(&self) -> Vec<RegionSpec> {
        self.server.regions()
    }

    fn stopped(&self) -> bool {
        self.server.halted()
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let progress = self.server.poll(nic);
        while let Some(d) = self.server.poll_delivery() {
            self.drained.push_back(d);
        }
        while let Some(d) = self.drained.pop_front() {
            self.delivered += 1;
            if let Some(log) = &mut self.log {
                log.push((d.msg, d.order));
            }
            self.last = Some(d);
        }
        progress
    }
}

/// One process of a multicast run: a server or a closed-loop client of the same protocol, or
/// one of the protocol's auxiliary processes ([`Membership::auxiliary_count`]).
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "a run keeps its nodes in one Vec and polls a client on every step: a box would \
              put a pointer chase on that path to save ~230 bytes per server"
)]
pub enum Node<S, C> {
    /// A server replica.
    Server(ServerNode<S>),
    /// A closed-loop client.
    Client(ClosedLoop<C>),
    /// An auxiliary process, played by the protocol's server type: it orders, belongs to no
    /// group and delivers nothing (the log checks that it does not).
    Auxiliary(ServerNode<S>),
}

impl<N: Nic, S: Server + Process<N>, C: Client<N>> Process<N> for Node<S, C> {
    fn regions(&self) -> Vec<RegionSpec> {
        match self {
            Node::Server(s) | Node::Auxiliary(s) => Process::<N>::regions(s),
            Node::Client(c) => Process::<N>::regions(c),
        }
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        match self {
            Node::Server(s) | Node::Auxiliary(s) => s.poll(nic),
            Node::Client(c) => c.poll(nic),
        }
    }

    fn done(&self) -> bool {
        match self {
            Node::Server(_) | Node::Auxiliary(_) => false,
            Node::Client(c) => Process::<N>::done(c),
        }
    }

    fn stopped(&self) -> bool {
        match self {
            Node::Server(s) | Node::Auxiliary(s) => Process::<N>::stopped(s),
            Node::Client(_) => false,
        }
    }
}

/// Every process of a run of `cfg`: servers first, group by group and rank by rank
/// (`server(g, rank)`), then closed-loop clients (`client(i)`) running `load`. Every process
/// gets a handle on one shared copy of `cfg`, so `server` and `client` can be a protocol's
/// constructors. Client `i`'s workload stream derives from `seed` and its process id, so
/// protocols deployed on the same membership draw the same destinations and sizes (what
/// `harness compare` relies on). `log` keeps deliveries and multicasts for the delivery log.
/// For a membership with auxiliary processes, [`deploy_with_auxiliaries`].
pub fn deploy<M: Membership + Clone, S, C>(
    cfg: &M,
    load: LoadSpec,
    seed: u64,
    log: bool,
    server: impl Fn(Arc<M>, GroupId, usize) -> S,
    client: impl Fn(Arc<M>, usize) -> C,
) -> Vec<Node<S, C>> {
    assert_eq!(
        cfg.auxiliary_count(),
        0,
        "a membership with auxiliary processes deploys with deploy_with_auxiliaries"
    );
    deploy_with_auxiliaries(cfg, load, seed, log, server, client, |_, _| {
        unreachable!("no auxiliary process")
    })
}

/// [`deploy`], followed by the membership's auxiliary processes (`auxiliary(i)`).
pub fn deploy_with_auxiliaries<M: Membership + Clone, S, C>(
    cfg: &M,
    load: LoadSpec,
    seed: u64,
    log: bool,
    server: impl Fn(Arc<M>, GroupId, usize) -> S,
    client: impl Fn(Arc<M>, usize) -> C,
    auxiliary: impl Fn(Arc<M>, usize) -> S,
) -> Vec<Node<S, C>> {
    let cfg = Arc::new(cfg.clone());
    let mut nodes = Vec::with_capacity(cfg.processes());
    for g in 0..cfg.group_count() {
        for r in 0..cfg.replica_count() {
            nodes.push(Node::Server(ServerNode::new(
                server(cfg.clone(), GroupId(g as u8), r),
                log,
            )));
        }
    }
    for i in 0..cfg.client_count() {
        let id = cfg.client(i);
        let rng = Rng::derive(seed, Purpose::Workload, id.0 as u64);
        nodes.push(Node::Client(ClosedLoop::new(
            client(cfg.clone(), i),
            id,
            load.clone(),
            rng,
            log,
        )));
    }
    for i in 0..cfg.auxiliary_count() {
        nodes.push(Node::Auxiliary(ServerNode::new(
            auxiliary(cfg.clone(), i),
            log,
        )));
    }
    nodes
}

/// Builds the delivery log of a finished run from its nodes: node `i` is process `i`;
/// `faulty(p)` says whether `p` crashed at any time (a halted server is faulty too).
pub fn collect_log<S: Server, C>(
    nodes: &[Node<S, C>],
    faulty: impl Fn(transport::ProcessId) -> bool,
) -> crate::DeliveryLog {
    let mut log = crate::DeliveryLog::default();
    for (i, node) in nodes.iter().enumerate() {
        let p = transport::ProcessId(i as u32);
        log_node(&mut log, p, node, faulty(p));
    }
    log
}

/// Adds process `p`, played by `node`, to `log`: its role, whether it stayed correct (not
/// `faulty` and not halted), what it delivered or multicast. A run whose nodes live in
/// different OS processes builds each node's part where it ran and merges them
/// ([`crate::DeliveryLog::merge`]).
pub fn log_node<S: Server, C>(
    log: &mut crate::DeliveryLog,
    p: transport::ProcessId,
    node: &Node<S, C>,
    faulty: bool,
) {
    use crate::log::Member;
    match node {
        Node::Server(s) | Node::Auxiliary(s) => {
            let member = match node {
                Node::Server(_) => Member::Group(s.server.group()),
                _ => Member::Auxiliary,
            };
            // An auxiliary process's deliveries are integrity violations the checker names.
            log.add_process(p, member, !faulty && !s.server.halted());
            for &(m, order) in s.log.iter().flatten() {
                log.deliver(p, m);
                if let Some(t) = order {
                    log.stamp(p, m, t);
                }
            }
        }
        Node::Client(c) => {
            log.add_process(p, Member::Client, !faulty);
            for &m in c.log.iter().flatten() {
                log.add_multicast(m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use transport::ProcessId;

    /// A multicast to groups 0 and 2 completes on the first answer of each; a late answer to
    /// an earlier message, or one from a group it was not sent to, counts for nothing.
    #[test]
    fn an_outstanding_multicast_completes_on_every_destinations_answer() {
        let (msg, late) = (MsgId::new(ProcessId(7), 1), MsgId::new(ProcessId(7), 0));
        let dst = DestSet::of([GroupId(0), GroupId(2)]).unwrap();
        let mut m = Outstanding::new(msg, dst, Nanos(100));
        assert!(!m.answer(late, GroupId(0)));
        assert!(!m.answer(msg, GroupId(1)));
        assert!(!m.answer(msg, GroupId(2)));
        assert!(!m.answer(msg, GroupId(2)));
        assert!(m.answer(msg, GroupId(0)));
        assert_eq!(
            m.completed(Nanos(350)),
            Completed::at(msg, Nanos(100), Nanos(350))
        );
        assert_eq!(m.completed(Nanos(350)).latency, Nanos(250));
    }
}
