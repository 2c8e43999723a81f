//! Bringing a node's queue pairs up and back: opening the node (memory, registrations, queue
//! pairs in INIT), INIT -> RTR -> RTS against a peer's endpoint, the bootstrap's hellos, and
//! the reconnect handshake's actions (reset, connect, answer) as control messages arrive.

use super::budget;
use super::device::{open_device, register};
use super::link::{Link, Peer, Waiting};
use super::memory::Memory;
use super::{AccessTimings, VerbsConfig, VerbsNic, HEADER};
use crate::access::{AccessBook, Rights};
use crate::bootstrap::{Endpoint, Message, RemoteRegion};
use crate::completion::Health;
use crate::control::Control;
use crate::handshake::{Action, Handshake};
use crate::provider::{Address, Context, MemoryRegion, Provider, QueuePair, Transition};
use crate::signal;
use crate::staging::Staging;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use transport::runtime::shared_memory::Words;
use transport::{
    NicLimits, OpKind, ProcessId, Purpose, Qp, RegionId, RegionSpec, RegionTable, Rng, Status, WrId,
};

/// Reads and atomics in flight per queue pair, asked of the device (which may allow fewer).
const RD_ATOMIC: u32 = 16;

/// A node's registrations of its `regions`: each once for local use, and once per node of
/// the `n` with the rights `book` gives that node (`[region][peer]`).
#[allow(clippy::type_complexity, reason = "the two tables, named in the docs")]
fn register_regions<C: Context>(
    ctx: &C,
    regions: &[Words],
    book: &AccessBook,
    n: usize,
) -> Result<(Vec<C::Mr>, Vec<Vec<C::Mr>>), String> {
    let local = regions
        .iter()
        .map(|m| register(ctx, m, Rights::NONE))
        .collect::<Result<Vec<_>, _>>()?;
    let per_peer = regions
        .iter()
        .enumerate()
        .map(|(r, mem)| {
            (0..n)
                .map(|p| {
                    let rights = book.registered(RegionId(r as u16), ProcessId(p as u32));
                    register(ctx, mem, rights)
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((local, per_peer))
}

/// Why a control message cannot be acted on by node `me` of a run whose region table is
/// `table`, if it cannot: addressed elsewhere, regions that are not the sender's as the table
/// declares them (an op would address memory the sender does not have), or an endpoint no
/// queue pair can connect to. Messages cross hosts: nothing in them is trusted.
fn invalid(m: &Message, me: ProcessId, table: &RegionTable) -> Option<String> {
    let (from, to) = m.route();
    if to != me || from.index() >= table.processes() {
        return Some(format!("routed {from} -> {to}"));
    }
    let (regions, endpoint) = match m {
        Message::Hello {
            regions, endpoint, ..
        }
        | Message::Reconnect {
            regions, endpoint, ..
        }
        | Message::Accepted {
            regions, endpoint, ..
        } => (regions, Some(endpoint)),
        Message::Rekey { regions, .. } => (regions, None),
        Message::Ready { .. } => return None,
    };
    let declared = (0..)
        .take_while(|&r| table.len_of(from, RegionId(r)).is_some())
        .count();
    let fits = regions.iter().enumerate().all(|(r, region)| {
        table
            .len_of(from, RegionId(r as u16))
            .is_some_and(|len| region.len as usize >= len)
    });
    if regions.len() != declared || !fits {
        return Some(format!(
            "{} regions, not the {declared} {from} declared",
            regions.len()
        ));
    }
    let e = endpoint?;
    let mtu = (256..=4096).contains(&e.mtu) && e.mtu.is_power_of_two();
    if !mtu || e.rd_atomic == 0 || e.psn.iter().any(|&psn| psn >= 1 << 24) {
        return Some(format!(
            "an endpoint no queue pair connects to (MTU {}, {} reads in flight, PSNs {:?})",
            e.mtu, e.rd_atomic, e.psn
        ));
    }
    None
}

/// The buffer index of a drain's marker receive (never a real buffer: fewer than this are
/// posted per queue pair).
pub(super) const MARKER: usize = 0xFFFF;

/// How long a queue pair moved to ERR may take to complete what it holds (a device flushes
/// in microseconds; this bounds a broken one).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

impl<C: Context> VerbsNic<C> {
    /// Sets up node `me` of a run whose processes declared `specs` on the device `provider`
    /// opens: memory, registrations, queue pairs in INIT, receive buffers.
    pub(super) fn open<V: Provider<Ctx = C>>(
        provider: &V,
        me: ProcessId,
        cfg: &VerbsConfig,
        specs: &[Vec<RegionSpec>],
        control: Arc<dyn Control>,
        start: Instant,
    ) -> Result<VerbsNic<C>, String> {
        let (ctx, info, caps) = open_device(provider, &cfg.device).map_err(|e| e.to_string())?;
        // Before anything is registered: a node across hosts is refused here with the numbers
        // (an in-process run checked all its nodes together already).
        budget::Budget::node(cfg, specs, me.index()).check(
            &info.name,
            &caps,
            provider.memlock_limit(),
        )?;
        let n = specs.len();
        let cfg = &budget::fit(cfg, &caps, n)?;
        let cq = ctx
            .create_cq(budget::cq_entries(cfg, n))
            .map_err(|e| e.to_string())?;
        let mine = &specs[me.index()];
        let book = AccessBook::new(mine, n);
        let regions: Vec<Words> = mine.iter().map(|s| Words::new(s.len)).collect();
        let (local_mrs, peer_mrs) = register_regions(&ctx, &regions, &book, n)?;
        let rng = Rng::derive(cfg.seed, Purpose::Protocol, me.0 as u64);
        let mut psns = Rng::derive(cfg.seed, Purpose::Scheduler, 1 << 32 | me.0 as u64);
        let mut inline = cfg.inline.min(caps.max_inline);
        let mut peers = Vec::with_capacity(n);
        for p in 0..n {
            let links = (0..Qp::COUNT)
                .map(|q| Link::open(&ctx, &cq, cfg, q, &mut inline, &mut psns))
                .collect::<Result<Vec<_>, _>>()?;
            peers.push(Peer {
                links,
                remote: Vec::new(),
                hs: Handshake::default(),
                down: control.crashed(ProcessId(p as u32)),
                confirmed: true,
            });
        }
        let limits = NicLimits {
            inline_max: inline as usize,
            send_max: cfg.recv_size - HEADER,
        };
        let mut nic = VerbsNic {
            me,
            cfg: cfg.clone(),
            info,
            caps,
            limits,
            rng,
            psns,
            start,
            next_wr: 0,
            control,
            book,
            cq_out: VecDeque::new(),
            rq_out: VecDeque::new(),
            early: VecDeque::new(),
            timings: AccessTimings::default(),
            peers,
            local_mrs,
            peer_mrs,
            memory: Memory {
                table: RegionTable::new(specs),
                regions,
                me,
            },
            cq,
            ctx,
        };
        for p in 0..n {
            for q in 0..Qp::COUNT {
                nic.init_link(ProcessId(p as u32), q)?;
            }
        }
        Ok(nic)
    }

    /// Brings a reset queue pair to INIT with the peer's access flags and posts its receive
    /// buffers.
    fn init_link(&mut self, p: ProcessId, q: usize) -> Result<(), String> {
        let access = self.book.flags(p);
        let (port, depth, size) = (
            self.cfg.device.port,
            self.cfg.recv_depth,
            self.cfg.recv_size,
        );
        let link = &mut self.peers[p.index()].links[q];
        link.qp
            .modify(&Transition::Init { port, access })
            .map_err(|e| format!("queue pair to {p} to INIT: {e}"))?;
        link.post_recvs(p, q, 0..depth, size)
    }

    /// Moves an INIT queue pair to RTR and RTS against the peer's endpoint: the path MTU the
    /// smaller of both ports', reads and atomics in flight within what each side accepts.
    fn connect_link(&mut self, p: ProcessId, q: usize, theirs: &Endpoint) -> Result<(), String> {
        if theirs.roce_v2 != self.info.roce_v2 {
            let family = |v2: bool| {
                if v2 {
                    "RoCE v2"
                } else {
                    "InfiniBand or RoCE v1"
                }
            };
            return Err(format!(
                "queue pair to {p}: its GID is {}, this node's {} (RDMA_GID_INDEX picks the GID: use the same family on every host)",
                family(theirs.roce_v2),
                family(self.info.roce_v2)
            ));
        }
        let address = Address {
            dest_lid: theirs.lid,
            port: self.cfg.device.port,
            sgid_index: self.info.gid_index,
            dgid: theirs.gid,
            hop_limit: 64,
        };
        let rtr = Transition::Rtr {
            path_mtu: self.info.mtu.min(theirs.mtu),
            dest_qpn: theirs.qpn[q],
            rq_psn: theirs.psn[q],
            max_dest_rd_atomic: self.rd_atomic_accepted(),
            min_rnr_timer: 12,
            address,
        };
        let issued = (self.caps.max_qp_init_rd_atom.min(RD_ATOMIC) as u8).min(theirs.rd_atomic);
        let access = self.book.flags(p);
        let link = &mut self.peers[p.index()].links[q];
        let rts = Transition::Rts {
            sq_psn: link.psn,
            timeout: self.cfg.ack_timeout,
            retry_cnt: self.cfg.retry_cnt,
            rnr_retry: 7,
            max_rd_atomic: issued,
        };
        // The flags may have changed since the pair was reset (INIT -> INIT).
        link.qp
            .modify(&Transition::Access(access))
            .map_err(|e| format!("queue pair to {p}: its access flags in INIT: {e}"))?;
        link.qp
            .modify(&rtr)
            .map_err(|e| format!("queue pair to {p} to RTR: {e}"))?;
        link.qp
            .modify(&rts)
            .map_err(|e| format!("queue pair to {p} to RTS: {e}"))?;
        link.health = Health::Up;
        Ok(())
    }

    /// Reads and atomics this node accepts in flight per queue pair.
    fn rd_atomic_accepted(&self) -> u8 {
        self.caps.max_qp_rd_atom.min(RD_ATOMIC) as u8
    }

    /// This node's queue pairs for `p`.
    fn endpoint(&self, p: ProcessId) -> Endpoint {
        let links = &self.peers[p.index()].links;
        let mut e = Endpoint {
            lid: self.info.lid,
            gid: self.info.gid,
            mtu: self.info.mtu,
            roce_v2: self.info.roce_v2,
            rd_atomic: self.rd_atomic_accepted(),
            ..Endpoint::default()
        };
        for (q, l) in links.iter().enumerate() {
            e.qpn[q] = l.qp.qp_num();
            e.psn[q] = l.psn;
        }
        // Every reset moves both queue pairs to the peer together.
        e.incarnation = links[Qp::Data.index()].epoch as u32;
        e
    }

    /// This node's regions as `p` addresses them.
    pub(super) fn regions_for(&self, p: ProcessId) -> Vec<RemoteRegion> {
        self.memory
            .regions
            .iter()
            .zip(&self.peer_mrs)
            .map(|(mem, mrs)| RemoteRegion {
                addr: mem.addr() as u64,
                len: mem.capacity() as u64,
                rkey: mrs[p.index()].rkey(),
            })
            .collect()
    }

    /// The hello this node sends each node that is not down (in id order, itself included).
    pub(super) fn hellos(&self) -> Vec<Message> {
        let digest = self.memory.table.digest();
        (0..self.peers.len() as u32)
            .map(ProcessId)
            .filter(|p| !self.peers[p.index()].down)
            .map(|p| Message::Hello {
                from: self.me.0,
                to: p.0,
                table: digest,
                endpoint: self.endpoint(p),
                regions: self.regions_for(p),
            })
            .collect()
    }

    /// Connects every queue pair to the endpoints of the hellos received (checked), and marks
    /// the pairs to nodes that are down unreachable.
    pub(super) fn connect_hellos(&mut self, hellos: Vec<Message>) -> Result<(), String> {
        let digest = self.memory.table.digest();
        for m in hellos {
            let (from, _) = m.route();
            crate::bootstrap::check_hello(&m, self.me, from, digest).map_err(|e| e.to_string())?;
            if let Some(why) = invalid(&m, self.me, &self.memory.table) {
                return Err(format!("{}: the hello from {from}: {why}", self.me));
            }
            if let Message::Hello {
                endpoint, regions, ..
            } = m
            {
                for q in 0..Qp::COUNT {
                    self.connect_link(from, q, &endpoint)?;
                }
                self.peers[from.index()].remote = regions;
            }
        }
        for peer in &mut self.peers {
            if peer.down {
                for l in &mut peer.links {
                    l.health = Health::Broken(Status::PeerUnreachable);
                }
            }
        }
        Ok(())
    }

    /// The start barrier ([`Message::Ready`]): tells every live node this node's queue pairs
    /// are connected, then waits until every live node has said so too (or crashed), so the
    /// process posts nothing towards a queue pair not yet ready to receive. Other messages
    /// that arrive meanwhile (a fast peer's first reconnect or rekey) are kept for
    /// [`VerbsNic::service_mail`].
    pub(super) fn await_ready(&mut self) -> Result<(), String> {
        let n = self.peers.len();
        let mut waiting: Vec<bool> = self.peers.iter().map(|p| !p.down).collect();
        for p in (0..n).filter(|&p| waiting[p]) {
            self.control.send(Message::Ready {
                from: self.me.0,
                to: p as u32,
                answers: 0,
            });
        }
        // Readies that came before the hellos were all in.
        let mut kept = VecDeque::new();
        for m in self.early.drain(..) {
            match m {
                Message::Ready { from, .. } => waiting[from as usize] = false,
                other => kept.push_back(other),
            }
        }
        self.early = kept;
        let deadline = Instant::now() + self.cfg.connect_timeout;
        loop {
            for (p, w) in waiting.iter_mut().enumerate() {
                *w &= !self.control.crashed(ProcessId(p as u32));
            }
            let left = waiting.iter().filter(|&&w| w).count();
            if left == 0 {
                return Ok(());
            }
            match self.control.take(self.me) {
                Some(Message::Ready { from, .. }) => waiting[from as usize] = false,
                Some(m) => self.early.push_back(m),
                None if Instant::now() > deadline => {
                    return Err(format!(
                        "{}: {left} of the live nodes not ready after {:?}",
                        self.me, self.cfg.connect_timeout
                    ))
                }
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }

    /// The bootstrap inside one OS process: hellos through the mailboxes.
    pub(super) fn bootstrap_in_process(&mut self) -> Result<(), String> {
        for h in self.hellos() {
            self.control.send(h);
        }
        let live = self.peers.iter().filter(|p| !p.down).count();
        let deadline = Instant::now() + self.cfg.connect_timeout;
        let mut got = Vec::with_capacity(live);
        while got.len() < live {
            match self.control.take(self.me) {
                Some(m @ Message::Hello { .. }) => got.push(m),
                // A fast peer's `Ready` (or later message) may come before the last hello.
                Some(m) => self.early.push_back(m),
                None if Instant::now() > deadline => {
                    return Err(format!(
                        "{}: {} of {live} hellos after {:?}",
                        self.me,
                        got.len(),
                        self.cfg.connect_timeout
                    ))
                }
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        self.connect_hellos(got)?;
        self.await_ready()
    }

    /// Resets the queue pairs to `p` and brings them back to INIT with fresh sequence
    /// numbers: everything outstanding or waiting towards `p` fails as the pair's health says,
    /// except what the device had already executed ([`VerbsNic::drain_link`]).
    fn reset_links(&mut self, p: ProcessId) {
        for q in 0..Qp::COUNT {
            let link = &mut self.peers[p.index()].links[q];
            let status = link.health.flushed();
            // What never reached the device fails as it is; what did is drained first.
            let backlog: Vec<Waiting> = link.backlog.drain(..).collect();
            for w in backlog {
                self.complete(w.wr, w.op.kind(), p, status);
            }
            self.drain_link(p, q);
            let link = &mut self.peers[p.index()].links[q];
            let status = link.health.flushed();
            let retired = signal::fail_all(&mut link.sq, status);
            link.staging = Staging::new(link.staging.capacity());
            link.epoch += 1;
            link.sq.reconnect();
            link.psn = (self.psns.next_u64() & 0xFF_FFFF) as u32;
            if let Err(e) = link.qp.modify(&Transition::Reset) {
                eprintln!("verbs {}: resetting the queue pair to {p}: {e}", self.me);
            }
            for r in retired.reports {
                self.report(p, &r, None);
            }
            if let Err(e) = self.init_link(p, q) {
                eprintln!("verbs {}: {e}", self.me);
                self.peers[p.index()].links[q].health = Health::Broken(Status::PeerUnreachable);
            }
        }
    }

    /// Moves the queue pair to `p` to ERR and polls until the device has completed every work
    /// request posted on it. An op the peer already executed (a fetch-and-add whose completion
    /// was not yet polled) completes with its success and value; only what did not execute is
    /// flushed. Reporting it all `Flushed` at once would tell the process an executed atomic
    /// had no effect, and a process that posts it again would apply it twice. ERR is also the
    /// fence: nothing the peer sends lands through the queue pair once it is there.
    pub(super) fn drain_link(&mut self, p: ProcessId, q: usize) {
        let size = self.cfg.recv_size;
        let link = &mut self.peers[p.index()].links[q];
        if let Err(e) = link.qp.modify(&Transition::Error) {
            // A device that cannot move a queue pair to ERR has failed: nothing it holds will
            // complete, and what is outstanding is reported as the health says.
            eprintln!(
                "verbs {}: moving the queue pair to {p} to ERR: {e}",
                self.me
            );
            return;
        }
        // The receive queue too (as the kernel's `ib_drain_rq`): a marker receive flushes
        // after every receive before it, so once its completion is in, a message the peer saw
        // delivered has been handed to the process under this incarnation, not dropped as
        // one of an older one (or cleaned from the queue by the reset, as mlx5 does).
        link.rq_drained = false;
        if let Err(e) = link.post_recvs(p, q, MARKER..MARKER + 1, size) {
            eprintln!("verbs {}: the drain marker to {p}: {e}", self.me);
            link.rq_drained = true;
        }
        let deadline = Instant::now() + DRAIN_LIMIT;
        loop {
            let link = &self.peers[p.index()].links[q];
            if link.sq.outstanding() == 0 && link.rq_drained {
                return;
            }
            if Instant::now() > deadline {
                eprintln!(
                    "verbs {}: the queue pair to {p} in ERR still holds {} work requests after {DRAIN_LIMIT:?}: they are reported flushed",
                    self.me,
                    link.sq.outstanding()
                );
                return;
            }
            if !self.poll_device() {
                std::thread::yield_now();
            }
        }
    }

    fn connect_all(&mut self, p: ProcessId, endpoint: &Endpoint, regions: Vec<RemoteRegion>) {
        for q in 0..Qp::COUNT {
            if let Err(e) = self.connect_link(p, q, endpoint) {
                eprintln!("verbs {}: {e}", self.me);
                let link = &mut self.peers[p.index()].links[q];
                link.health = Health::Broken(Status::PeerUnreachable);
                // A pair that reached RTR before failing would receive: broken means in ERR.
                let _ = link.qp.modify(&Transition::Error);
            }
        }
        self.peers[p.index()].remote = regions;
    }

    /// Performs a handshake's actions towards `p`; `theirs`: the endpoint and regions of the
    /// message being handled.
    pub(super) fn perform(
        &mut self,
        p: ProcessId,
        actions: Vec<Action>,
        theirs: Option<(&Endpoint, &[RemoteRegion])>,
    ) {
        for a in actions {
            match a {
                Action::Reset => self.reset_links(p),
                Action::Connect => {
                    let (endpoint, regions) = theirs.expect("a connect answers a message");
                    self.connect_all(p, endpoint, regions.to_vec());
                    // The peer may post as soon as it knows these pairs listen.
                    self.control.send(Message::Ready {
                        from: self.me.0,
                        to: p.0,
                        answers: endpoint.incarnation,
                    });
                }
                Action::SendReconnect => self.control.send(Message::Reconnect {
                    from: self.me.0,
                    to: p.0,
                    endpoint: self.endpoint(p),
                    regions: self.regions_for(p),
                }),
                Action::SendAccepted => self.control.send(Message::Accepted {
                    from: self.me.0,
                    to: p.0,
                    answers: theirs.expect("an answer to a message").0.incarnation,
                    endpoint: self.endpoint(p),
                    regions: self.regions_for(p),
                }),
                Action::Complete(wrs, status) => {
                    for wr in wrs {
                        self.complete(wr, OpKind::Reconnect, p, status);
                    }
                }
            }
        }
    }

    pub(super) fn reconnect(&mut self, p: ProcessId, wr: WrId) {
        let peer = &mut self.peers[p.index()];
        if peer.down || self.control.crashed(p) {
            self.complete(wr, OpKind::Reconnect, p, Status::PeerUnreachable);
            return;
        }
        let up = peer.links.iter().all(|l| l.health == Health::Up);
        let actions = peer.hs.reconnect(Some(wr), up);
        self.perform(p, actions, None);
    }

    /// Answers reconnects from peers and completes this node's own, and ends what waits for
    /// peers that crashed: what the node's loop does every round.
    pub(super) fn service_mail(&mut self) {
        self.read_mail();
        self.sweep_crashed();
    }

    /// Handles every control message that has come (what `Nic::post` does first, so an op
    /// acts on what peers sent before its cause reached this node).
    pub(super) fn read_mail(&mut self) {
        while let Some(m) = self
            .early
            .pop_front()
            .or_else(|| self.control.take(self.me))
        {
            let p = m.route().0;
            if let Some(why) = invalid(&m, self.me, &self.memory.table) {
                eprintln!("verbs {}: a control message dropped: {why}", self.me);
                continue;
            }
            match m {
                Message::Reconnect {
                    endpoint, regions, ..
                } => {
                    // This end connects first: the peer's pairs are still in INIT until it
                    // handles the answer, so nothing is posted before its `Ready`.
                    self.peers[p.index()].confirmed = false;
                    let actions = self.peers[p.index()].hs.on_reconnect();
                    self.perform(p, actions, Some((&endpoint, &regions)));
                }
                Message::Accepted {
                    endpoint,
                    regions,
                    answers,
                    ..
                } => {
                    // The peer connected before it answered: its pairs listen already.
                    let current = answers == self.endpoint(p).incarnation;
                    let actions = self.peers[p.index()].hs.on_accepted(current);
                    if current {
                        self.peers[p.index()].confirmed = true;
                    }
                    self.perform(p, actions, Some((&endpoint, &regions)));
                }
                Message::Ready { answers, .. } => {
                    if answers == self.endpoint(p).incarnation && !self.peers[p.index()].confirmed {
                        self.peers[p.index()].confirmed = true;
                        for q in 0..Qp::COUNT {
                            self.drain_backlog(p, q);
                        }
                    }
                }
                Message::Rekey { regions, .. } => self.peers[p.index()].remote = regions,
                Message::Hello { .. } => {}
            }
        }
    }

    /// Ends what waits for peers that crashed meanwhile.
    fn sweep_crashed(&mut self) {
        // Reconnects to peers that crashed meanwhile end unreachable, as does what waits for
        // a crashed peer's `Ready`, and all that follows.
        for i in 0..self.peers.len() {
            let p = ProcessId(i as u32);
            let peer = &self.peers[i];
            if (peer.hs.waiting() || !peer.confirmed) && self.control.crashed(p) {
                let actions = self.peers[i].hs.peer_gone();
                self.perform(p, actions, None);
                self.peers[i].confirmed = true;
                let mut backlog = Vec::new();
                for link in &mut self.peers[i].links {
                    link.health = Health::Broken(Status::PeerUnreachable);
                    backlog.extend(link.backlog.drain(..));
                }
                for w in backlog {
                    self.complete(w.wr, w.op.kind(), p, Status::PeerUnreachable);
                }
            }
        }
    }
}
