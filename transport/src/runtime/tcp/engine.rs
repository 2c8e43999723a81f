//! The NIC thread of a tcp node: one event loop (mio) that owns every socket of the node.
//!
//! It plays both halves of an RDMA NIC. As initiator it takes the ops its process posted,
//! numbers them per connection, sends them, and turns the responses into completions: for every
//! signaled op, for every failed one, and `PeerUnreachable` for everything outstanding when a
//! connection to a peer breaks (its process died). As target it applies peers' requests to the
//! node's registered regions, after checking bounds and the peer's access under the same lock
//! `set_access` takes, and answers in order (writes and sends a batch at a time: [`wire`]'s
//! acknowledgement rule). A request outside the regions, a frame that
//! does not decode, or anything out of turn closes that connection with a logged reason; no byte
//! outside a grant is ever touched.
//!
//! One connection per (initiator, target, queue pair): a connection is a queue pair's FIFO, and
//! the control queue pair's heartbeats never wait behind bulk data in a TCP stream. After an
//! access error the target answers `Flushed` to everything on that connection until the
//! initiator's reconnect request arrives, as an RDMA queue pair in error flushes its work
//! requests; the initiator also flushes ops posted after it learnt of the error without sending
//! them.

#![allow(
    clippy::disallowed_methods,
    reason = "the NIC thread is where real time enters the tcp runtime (connect retries)"
)]

use super::auth::{self, Secret};
use super::buffers::{ReadBuf, WriteQueue};
use super::faults::{Held, LinkFault};
use super::wire::{self, Frame, Hello, Mac, Welcome, WireOp, WireStatus, CHUNK, PREAMBLE_LEN};
use super::{Bounds, NodeShared};
use crate::nic::{Completion, Data, Op, OpKind, Qp, Status, WrId};
use crate::process::ProcessId;
use crate::queue_pair::{Piece, Retired, SendQueue};
use crate::region::{Access, LocalAddr};
use crate::runtime::shared_memory::SharedRegion;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(0);
pub(super) const WAKER: Token = Token(1);
const FIRST_CONN: usize = 2;
/// Pause between two connection attempts to a peer that is not listening yet; a re-dial
/// starts with it and doubles it after each failed attempt, up to [`MAX_BACKOFF`].
const RETRY: Duration = Duration::from_millis(20);
/// The longest pause between two attempts of a re-dial.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How often the loop looks for connections past their deadlines: the deadlines are hundreds
/// of milliseconds or more, and the scan touches every connection, so not on every turn.
const REAP_EVERY: Duration = Duration::from_millis(20);
/// Write payloads from this size up go to the socket from the process's own buffer (a
/// vectored write) instead of being copied into the frame; smaller ones are cheaper to copy.
const SHARE_AT_LEAST: usize = 16 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LinkState {
    Connecting,
    /// A re-dialled link whose proof is sent: up once the peer answers the reconnect request
    /// sent behind it ([`ADMISSION`]), which it reads only after it admitted the connection.
    /// A peer still holding the old connection refuses the new one as a second claimant; that
    /// is one failed attempt of the re-dial, not the peer's end.
    Admitting,
    Ready,
    Down,
}

/// The request id of the reconnect request that proves a re-dialled link admitted (never a
/// process's: those count up from 0).
const ADMISSION: WrId = WrId(u64::MAX);

/// This node's side of one queue pair towards one peer: the connection it initiated.
#[derive(Debug)]
struct Link {
    peer: ProcessId,
    qp: usize,
    state: LinkState,
    conn: Option<usize>,
    retry_at: Option<Instant>,
    /// Connection attempts go on until then; past it the peer is given up.
    connect_by: Instant,
    /// The pause after the next failed attempt.
    backoff: Duration,
    /// Reconnects re-dialling this link after it went down (the process reconnected to a peer
    /// it had lost): each completes once the link is up again or given up. Empty while the
    /// node starts.
    redialling: Vec<WrId>,
    /// Ops posted before the link was ready, in post order.
    waiting: VecDeque<(WrId, Op)>,
    /// The queue pair's state and its requests on the wire ([`crate::queue_pair`]): their
    /// wire ids are the frames' sequence numbers.
    sq: SendQueue<ReadInto>,
    /// The hello this node sent on the current connection (the auth transcript).
    hello: Option<Hello>,
    /// Why the last attempt at start failed, if the peer closed it (the reason given up).
    last_failure: Option<String>,
    /// Given up at start: the peer did not answer within the connect timeout. Its own
    /// connections are refused from then on, until this node's process reconnects to it: a
    /// queue pair has two ends, and a peer that came up late must not go on using a link this
    /// node has written off (it would wait on this node forever, while this node treats it
    /// as crashed).
    lost_at_start: bool,
}

#[derive(Debug)]
enum Phase {
    /// Waiting for the peer's preamble.
    Preamble,
    /// Initiator: waiting for the welcome. Acceptor: waiting for the hello.
    Greeting,
    /// Acceptor: waiting for the initiator's proof.
    Proof {
        hello: Hello,
        welcome: Welcome,
    },
    Ready,
}

#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    /// `Some(link)` for a connection this node initiated.
    link: Option<usize>,
    /// The initiator, once its hello is accepted (acceptor side).
    peer: Option<ProcessId>,
    phase: Phase,
    rbuf: ReadBuf,
    /// What waits for the socket.
    out: WriteQueue,
    /// The target end of the queue pair is in error (acceptor side).
    error: bool,
    /// The last write or send done and not answered yet (acceptor side): one response after a
    /// batch of frames answers it and every earlier one ([`wire`]'s acknowledgement rule).
    unanswered: Option<u64>,
    /// Whether the connection attempt has completed (initiator side).
    connected: bool,
    /// What the fault layer holds back ([`super::faults`]).
    held: Held,
    /// When the connection was accepted or its connect began: the handshake's deadline runs
    /// from here.
    opened: Instant,
    /// Since when a frame has been half received, if one is.
    partial_since: Option<Instant>,
    /// Requests are not read while this connection's responses back up
    /// ([`Bounds::responses`]).
    paused: bool,
    /// When the socket last took a byte of what waits for it (or the connection opened).
    progressed: Instant,
}

impl Conn {
    /// Bytes queued and not yet written.
    fn backlog(&self) -> usize {
        self.out.backlog()
    }

    fn proven(&self) -> bool {
        matches!(self.phase, Phase::Ready)
    }
}

pub(super) struct Engine {
    shared: Arc<NodeShared>,
    poll: Poll,
    listener: TcpListener,
    addrs: Vec<SocketAddr>,
    conns: Vec<Option<Conn>>,
    links: Vec<Link>,
    /// Reconnects waiting for their queue pairs' answers: op -> answers still due, and the
    /// worst status so far.
    reconnects: Reconnects,
    connect_timeout: Duration,
    secret: Secret,
    /// The one proven connection (acceptor side) per initiator and queue pair, indexed as
    /// `links`: a second claimant is refused while the first is live.
    proven: Vec<Option<usize>>,
    /// A synthetic payload's chunk, reused.
    chunk: Vec<u8>,
    /// The network faults this node's sends suffer, and the draws they make.
    faults: Vec<LinkFault>,
    rng: crate::Rng,
    bounds: Bounds,
    /// When [`Engine::reap`] runs next.
    next_reap: Instant,
}

impl Engine {
    pub(super) fn new(
        shared: Arc<NodeShared>,
        poll: Poll,
        listener: std::net::TcpListener,
        addrs: Vec<SocketAddr>,
        down: &[bool],
        cfg: &super::TcpConfig,
    ) -> io::Result<Engine> {
        listener.set_nonblocking(true)?;
        let mut listener = TcpListener::from_std(listener);
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let now = Instant::now();
        // Peers build their part before they listen: the deadline counts from the run's time
        // zero when that lies ahead (a launcher sets it after the slowest node's building).
        let zero = cfg
            .start_at
            .and_then(|t| t.duration_since(std::time::SystemTime::now()).ok())
            .map_or(now, |ahead| now + ahead);
        let links = (0..addrs.len())
            .flat_map(|p| (0..Qp::COUNT).map(move |qp| (p, qp)))
            .map(|(p, qp)| Link {
                peer: ProcessId(p as u32),
                qp,
                state: if down[p] {
                    LinkState::Down
                } else {
                    LinkState::Connecting
                },
                conn: None,
                retry_at: Some(now),
                connect_by: zero + cfg.connect_timeout,
                backoff: RETRY,
                redialling: Vec::new(),
                waiting: VecDeque::new(),
                sq: SendQueue::unbounded(),
                hello: None,
                last_failure: None,
                lost_at_start: false,
            })
            .collect::<Vec<_>>();
        let proven = vec![None; links.len()];
        Ok(Engine {
            poll,
            listener,
            addrs,
            conns: Vec::new(),
            links,
            reconnects: BTreeMap::new(),
            connect_timeout: cfg.connect_timeout,
            secret: cfg.secret.clone(),
            proven,
            chunk: Vec::new(),
            rng: crate::Rng::derive(cfg.seed, crate::Purpose::Faults, u64::from(shared.me.0)),
            faults: cfg.faults.clone(),
            bounds: cfg.bounds,
            next_reap: now,
            shared,
        })
    }

    fn me(&self) -> ProcessId {
        self.shared.me
    }

    /// Runs until the node stops; then closes every connection (peers see the node gone).
    pub(super) fn run(mut self) {
        let mut events = Events::with_capacity(256);
        loop {
            if self.shared.stop.load(Ordering::SeqCst) {
                return;
            }
            self.connect_due();
            self.take_posts();
            self.flush_all();
            let now = Instant::now();
            if now >= self.next_reap {
                self.reap();
                self.next_reap = now + REAP_EVERY;
            }
            self.check_ready();
            // Sleep until a socket, the process or a retry needs us. The process checks
            // `nic_sleeping` after queueing a post, so one of the two sees the other.
            self.shared.nic_sleeping.store(true, Ordering::SeqCst);
            let timeout =
                if !self.shared.outbox_is_empty() || self.shared.stop.load(Ordering::SeqCst) {
                    Some(Duration::ZERO)
                } else {
                    let held = self
                        .conns
                        .iter()
                        .flatten()
                        .filter_map(|c| c.held.next_release());
                    self.links
                        .iter()
                        .filter(|l| l.state == LinkState::Connecting && l.conn.is_none())
                        .filter_map(|l| l.retry_at)
                        .chain(held)
                        .chain(self.deadlines())
                        .min()
                        .map(|t| t.saturating_duration_since(Instant::now()))
                };
            let polled = self.poll.poll(&mut events, timeout);
            self.shared.nic_sleeping.store(false, Ordering::SeqCst);
            if let Err(e) = polled {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.shared
                        .log(format!("event loop failed: {e}; the node stops"));
                    self.shared.stop.store(true, Ordering::SeqCst);
                    return;
                }
            }
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    Token(t) => self.service(t - FIRST_CONN),
                }
            }
        }
    }

    /// Marks the node ready once every link is connected or given up on.
    fn check_ready(&mut self) {
        if !self.shared.ready.load(Ordering::SeqCst)
            && self.links.iter().all(|l| l.state != LinkState::Connecting)
        {
            self.shared.set_ready();
        }
    }

    fn connect_due(&mut self) {
        let now = Instant::now();
        for l in 0..self.links.len() {
            let link = &self.links[l];
            if link.state != LinkState::Connecting
                || link.conn.is_some()
                || link.retry_at.is_some_and(|t| t > now)
            {
                continue;
            }
            if now >= link.connect_by {
                let (peer, addr) = (link.peer, self.addrs[link.peer.index()]);
                let reason = match &link.last_failure {
                    None => format!("{peer} did not answer at {addr} within the connect timeout"),
                    Some(why) => format!(
                        "{peer} at {addr} ended every handshake until the connect timeout (the last: {why}; its own log says why: another deployment or secret?)"
                    ),
                };
                if self.links[l].redialling.is_empty() {
                    self.links[l].lost_at_start = true;
                    // A connection the peer made meanwhile goes too: one queue pair, both ends.
                    if let Some(theirs) = self.proven[l].take() {
                        let why = format!(
                            "this node gave {} up at start (its own connection did not come up in time)",
                            self.links[l].peer
                        );
                        self.close(theirs, &why);
                    }
                }
                self.give_up(l, &reason);
                continue;
            }
            match TcpStream::connect(self.addrs[link.peer.index()]) {
                Ok(stream) => {
                    let c = self.add_conn(stream, Some(l));
                    self.links[l].conn = c;
                }
                Err(e) => self.attempt_failed(l, &e),
            }
        }
    }

    /// A connection attempt of link `l` failed with `e`: tried again after the link's backoff,
    /// which doubles while it re-dials. A re-dialled peer that refuses the connection has no
    /// listener any more: its node is gone, and the link is given up at once (while the node
    /// starts, a refusal only means the peer is not listening yet).
    fn attempt_failed(&mut self, l: usize, e: &io::Error) {
        let link = &mut self.links[l];
        link.conn = None;
        let redial = !link.redialling.is_empty();
        if redial && e.kind() == io::ErrorKind::ConnectionRefused {
            let reason = format!("{} refused the re-dial: its node is gone", link.peer);
            self.give_up(l, &reason);
            return;
        }
        // Never past the deadline: the peer is given up when it passes, not at the next try.
        link.retry_at = Some((Instant::now() + link.backoff).min(link.connect_by));
        if redial {
            link.backoff = (link.backoff * 2).min(MAX_BACKOFF);
        }
    }

    fn add_conn(&mut self, mut stream: TcpStream, link: Option<usize>) -> Option<usize> {
        let i = self
            .conns
            .iter()
            .position(Option::is_none)
            .unwrap_or_else(|| {
                self.conns.push(None);
                self.conns.len() - 1
            });
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            Token(FIRST_CONN + i),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            self.shared.log(format!("cannot watch a socket: {e}"));
            return None;
        }
        let _ = stream.set_nodelay(true);
        let mut out = WriteQueue::default();
        let opened = Instant::now();
        out.append(|v| v.extend_from_slice(&wire::preamble()));
        self.conns[i] = Some(Conn {
            stream,
            link,
            peer: None,
            phase: Phase::Preamble,
            rbuf: ReadBuf::default(),
            out,
            error: false,
            unanswered: None,
            connected: link.is_none(),
            held: Held::default(),
            opened,
            partial_since: None,
            paused: false,
            progressed: opened,
        });
        Some(i)
    }

    /// When the next connection deadline falls: a handshake or a half-received frame.
    fn deadlines(&self) -> impl Iterator<Item = Instant> + '_ {
        let b = self.bounds;
        self.conns.iter().flatten().filter_map(move |c| {
            let handshake = (!c.proven()).then_some(c.opened + b.handshake);
            let frame = c.partial_since.map(|t| t + b.frame);
            handshake.into_iter().chain(frame).min()
        })
    }

    /// Closes connections past their deadline: a handshake not finished in
    /// [`Bounds::handshake`], a frame half received for [`Bounds::frame`]. An initiated
    /// connection's handshake is tried again until the connect timeout.
    fn reap(&mut self) {
        let now = Instant::now();
        let b = self.bounds;
        for c in 0..self.conns.len() {
            let Some(conn) = self.conns[c].as_ref() else {
                continue;
            };
            if !conn.proven() && now >= conn.opened + b.handshake {
                let reason = format!(
                    "no finished handshake within {:?} (phase {:?})",
                    b.handshake, conn.phase
                );
                match conn.link {
                    Some(l) if now < self.links[l].connect_by => {
                        self.shared.log(format!(
                            "{}: connection to {} dropped: {reason}; trying again",
                            self.me(),
                            self.links[l].peer
                        ));
                        self.drop_conn(c);
                        let timed_out = io::Error::from(io::ErrorKind::TimedOut);
                        self.attempt_failed(l, &timed_out);
                    }
                    _ => self.close(c, &reason),
                }
            } else if conn.partial_since.is_some_and(|t| now >= t + b.frame) {
                let reason = format!("a frame half received for {:?}", b.frame);
                self.close(c, &reason);
            } else if let Some(reason) = stalled(conn, &b) {
                let l = conn.link.expect("only a link stalls");
                self.drop_conn(c);
                self.give_up(l, &reason);
            }
        }
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, from)) => {
                    let accepted = self.conns.iter().flatten().filter(|c| c.link.is_none());
                    let (open, greeting) =
                        accepted.fold((0, 0), |(o, g), c| (o + 1, g + usize::from(!c.proven())));
                    let refuse = if open >= self.bounds.connections {
                        Some(format!("{open} connections open, the most allowed"))
                    } else {
                        None
                    };
                    if refuse.is_none() && greeting >= self.bounds.handshakes {
                        // The oldest unproven connection makes room: refusing the newest
                        // instead let anyone holding `handshakes` idle sockets lock every
                        // peer out until the handshake deadline, again and again. A peer
                        // that holds the secret proves itself within a round trip, so it is
                        // never the oldest for long.
                        let oldest = self
                            .conns
                            .iter()
                            .enumerate()
                            .filter_map(|(i, c)| c.as_ref().map(|c| (i, c)))
                            .filter(|(_, c)| c.link.is_none() && !c.proven())
                            .min_by_key(|(_, c)| c.opened)
                            .map(|(i, _)| i);
                        if let Some(c) = oldest {
                            let why = format!(
                                "evicted: {greeting} handshakes in progress, the most allowed, and a newer connection came"
                            );
                            self.close(c, &why);
                        }
                    }
                    match refuse {
                        // Dropping the stream closes it: the peer sees the refusal at once.
                        Some(why) => self.shared.log(format!(
                            "{}: connection from {from} refused at accept: {why}",
                            self.me()
                        )),
                        None => {
                            self.add_conn(stream, None);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    self.shared.log(format!("accept failed: {e}"));
                    return;
                }
            }
        }
    }

    /// Handles readiness of connection `c`.
    fn service(&mut self, c: usize) {
        let Some(conn) = self.conns.get_mut(c).and_then(Option::as_mut) else {
            return;
        };
        if !conn.connected {
            match conn.stream.take_error() {
                Ok(None) if conn.stream.peer_addr().is_ok() => {
                    conn.connected = true;
                    let l = conn.link.expect("initiated");
                    self.send_hello(c, l);
                }
                Ok(None) => return, // still connecting
                failed => {
                    // Refused or unreachable: try again until the connect timeout.
                    let e = match failed {
                        Ok(Some(e)) | Err(e) => e,
                        Ok(None) => io::Error::from(io::ErrorKind::NotConnected),
                    };
                    let l = conn.link.expect("initiated");
                    self.drop_conn(c);
                    self.attempt_failed(l, &e);
                    return;
                }
            }
        }
        if let Err(reason) = self.read_from(c) {
            self.close(c, &reason);
            return;
        }
        self.flush(c);
    }

    fn send_hello(&mut self, c: usize, l: usize) {
        let peer = self.links[l].peer;
        let hello = Hello {
            from: self.me(),
            to: peer,
            qp: self.links[l].qp as u8,
            regions: self.shared.own_region_lens(),
            table: self.shared.table_digest,
            nonce: auth::nonce(),
        };
        let conn = self.conns[c].as_mut().expect("live");
        conn.out
            .append(|v| wire::encode(&Frame::Hello(hello.clone()), v));
        self.links[l].hello = Some(hello);
    }

    /// Reads what the socket has and handles every whole frame; `Err` closes the connection.
    /// While the connection's responses back up past [`Bounds::responses`], it stops (frames
    /// stay in `rbuf`, bytes in the socket) and `flush` resumes it once they drain: a peer
    /// cannot make the node hold more than one bound's worth for it.
    fn read_from(&mut self, c: usize) -> Result<(), String> {
        loop {
            self.handle_frames(c)?;
            let Some(conn) = self.conns[c].as_mut() else {
                return Ok(());
            };
            if conn.paused {
                return Ok(());
            }
            match conn.rbuf.fill(&mut conn.stream) {
                Ok(0) => return Err("the peer closed the connection".into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("connection failed: {e}")),
            }
        }
    }

    /// Handles the whole frames in connection `c`'s `rbuf`, pausing it when its responses back
    /// up; keeps the rest, and notes since when a frame is half received.
    fn handle_frames(&mut self, c: usize) -> Result<(), String> {
        let mut rbuf = std::mem::take(&mut self.conns[c].as_mut().expect("live").rbuf);
        let mut at = 0;
        let result = loop {
            let conn = self.conns[c].as_mut().expect("live");
            // Only a target's responses pause it: an initiator always reads its answers, or two
            // nodes each waiting for the other to drain would both stop.
            conn.paused = conn.link.is_none() && conn.backlog() > self.bounds.responses;
            if conn.paused {
                break Ok(());
            }
            if matches!(conn.phase, Phase::Preamble) {
                let Some(p) = rbuf.data().get(at..at + PREAMBLE_LEN) else {
                    break Ok(());
                };
                if let Err(e) = wire::check_preamble(p.try_into().expect("8 bytes")) {
                    break Err(e.to_string());
                }
                at += PREAMBLE_LEN;
                conn.phase = Phase::Greeting;
                continue;
            }
            let max = match conn.phase {
                Phase::Ready => wire::MAX_FRAME,
                _ => wire::MAX_GREETING,
            };
            match wire::decode_within(&rbuf.data()[at..], max) {
                Ok(None) => break Ok(()),
                Err(e) => break Err(e.to_string()),
                Ok(Some((frame, used))) => {
                    at += used;
                    if let Err(e) = self.handle(c, frame) {
                        break Err(e);
                    }
                    if self.conns[c].is_none() {
                        return Ok(());
                    }
                }
            }
        };
        rbuf.consume(at);
        if let Some(conn) = self.conns[c].as_mut() {
            if let Some(seq) = conn.unanswered.take() {
                let f = Frame::Response {
                    seq,
                    status: WireStatus::Success,
                    value: None,
                    data: &[],
                };
                conn.out.append(|v| wire::encode(&f, v));
            }
            // Whole frames held back by backpressure wait on this node, not on the peer.
            conn.partial_since = match (rbuf.is_empty() || conn.paused, conn.partial_since) {
                (true, _) => None,
                (false, Some(t)) if at == 0 => Some(t),
                (false, _) => Some(Instant::now()),
            };
            conn.rbuf = rbuf;
        }
        result
    }

    fn handle(&mut self, c: usize, frame: Frame<'_>) -> Result<(), String> {
        let conn = self.conns[c].as_mut().expect("live");
        let phase = std::mem::replace(&mut conn.phase, Phase::Ready);
        match (conn.link, phase, frame) {
            (Some(l), Phase::Greeting, Frame::Welcome(w)) => self.welcomed(c, l, w),
            (None, Phase::Greeting, Frame::Hello(h)) => self.greet(c, h),
            (None, Phase::Proof { hello, welcome }, Frame::Proof(mac)) => {
                self.admit(c, &hello, &welcome, &mac)
            }
            (
                Some(l),
                Phase::Ready,
                Frame::Response {
                    seq,
                    status,
                    value,
                    data,
                },
            ) => self.answered(l, seq, status, value, data),
            (None, Phase::Ready, Frame::Request { seq, op }) => {
                let peer = self.conns[c].as_ref().and_then(|c| c.peer).expect("ready");
                self.apply(c, peer, seq, op)
            }
            (_, phase, frame) => Err(format!("unexpected {frame} while {phase:?}")),
        }
    }

    /// Acceptor: checks a hello and answers with a welcome.
    fn greet(&mut self, c: usize, hello: Hello) -> Result<(), String> {
        let n = self.addrs.len();
        if hello.to != self.me() {
            return Err(format!(
                "hello meant for {}, but this node is {}: the cluster files differ",
                hello.to,
                self.me()
            ));
        }
        if hello.from.index() >= n || hello.qp as usize >= Qp::COUNT {
            return Err(format!(
                "hello from {} on queue pair {}: the run has {n} nodes and {} queue pairs per peer",
                hello.from,
                hello.qp,
                Qp::COUNT
            ));
        }
        if hello.table != self.shared.table_digest {
            return Err(format!(
                "{} runs another deployment (region table digest {:#x}, here {:#x}): start every node from the same configuration",
                hello.from, hello.table, self.shared.table_digest
            ));
        }
        let expected = self.shared.region_lens(hello.from);
        if hello.regions != expected {
            return Err(format!(
                "{} declares regions {:?}, this node expects {:?}",
                hello.from, hello.regions, expected
            ));
        }
        let nonce = auth::nonce();
        let welcome = Welcome {
            from: self.me(),
            regions: self.shared.own_region_lens(),
            mac: auth::welcome_tag(&self.secret, &hello, &nonce),
            nonce,
        };
        let conn = self.conns[c].as_mut().expect("live");
        conn.out
            .append(|v| wire::encode(&Frame::Welcome(welcome.clone()), v));
        conn.phase = Phase::Proof { hello, welcome };
        Ok(())
    }

    /// Acceptor: admits the initiator of connection `c` once it proved it holds the secret,
    /// as the one connection of its claimed id and queue pair. A claim to be this node must
    /// come from this node's own link (its hello's nonce is one this node drew).
    fn admit(
        &mut self,
        c: usize,
        hello: &Hello,
        welcome: &Welcome,
        mac: &Mac,
    ) -> Result<(), String> {
        let who = hello.from;
        if !auth::proof_holds(&self.secret, hello, welcome, mac) {
            return Err(format!(
                "a peer claiming to be {who} does not hold the cluster secret: refused"
            ));
        }
        let slot = who.index() * Qp::COUNT + hello.qp as usize;
        if who == self.me() && self.links[slot].hello.as_ref().map(|h| h.nonce) != Some(hello.nonce)
        {
            return Err(format!(
                "a peer claims to be this node ({who}) on queue pair {}: refused",
                hello.qp
            ));
        }
        if self.links[slot].lost_at_start {
            return Err(format!(
                "{who} connected on queue pair {} after this node had given it up at start (it did not answer within the connect timeout): refused until this node's process reconnects to it",
                hello.qp
            ));
        }
        if let Some(first) = self.proven[slot].filter(|&f| f != c && self.conns[f].is_some()) {
            return Err(format!(
                "a second connection claims to be {who} on queue pair {} while its first (connection {first}) is live: refused",
                hello.qp
            ));
        }
        self.proven[slot] = Some(c);
        self.conns[c].as_mut().expect("live").peer = Some(who);
        Ok(())
    }

    /// Initiator: checks the welcome, proves itself, and sends what waited.
    fn welcomed(&mut self, c: usize, l: usize, w: Welcome) -> Result<(), String> {
        let link = &self.links[l];
        let hello = link.hello.clone().expect("hello sent first");
        if w.from != link.peer {
            return Err(format!(
                "{} answered at {}'s address: the cluster files differ",
                w.from, link.peer
            ));
        }
        let expected = self.shared.region_lens(link.peer);
        if w.regions != expected {
            return Err(format!(
                "{} declares regions {:?}, this node expects {:?}",
                w.from, w.regions, expected
            ));
        }
        if !auth::welcome_holds(&self.secret, &hello, &w) {
            return Err(format!(
                "the node answering as {} does not hold the cluster secret: refused",
                w.from
            ));
        }
        let proof = auth::proof_tag(&self.secret, &hello, &w);
        let conn = self.conns[c].as_mut().expect("live");
        conn.out.append(|v| wire::encode(&Frame::Proof(proof), v));
        if !self.links[l].redialling.is_empty() {
            self.links[l].state = LinkState::Admitting;
            let op = WireOp::Reconnect;
            let kind = OpKind::Reconnect;
            self.send_request(l, Piece::whole(ADMISSION, kind, false), op);
            return Ok(());
        }
        self.up(l);
        Ok(())
    }

    /// Link `l` is up: the reconnects that re-dialled it complete, and the ops waiting for it
    /// go out.
    fn up(&mut self, l: usize) {
        let link = &mut self.links[l];
        link.state = LinkState::Ready;
        // A later give-up (a re-dial's deadline) names its own attempts, not these.
        link.last_failure = None;
        let waiting = std::mem::take(&mut link.waiting);
        let redialled = std::mem::take(&mut link.redialling);
        if !redialled.is_empty() {
            let (p, epoch) = (link.peer, link.sq.state().epoch());
            self.shared.log(format!(
                "{}: link to {p} re-dialled (queue pair epoch {epoch})",
                self.me()
            ));
        }
        for wr in redialled {
            let peer = self.links[l].peer;
            reconnect_answered(
                &mut self.reconnects,
                &self.shared,
                wr,
                peer,
                Status::Success,
            );
        }
        for (wr, op) in waiting {
            self.dispatch(wr, op);
        }
    }

    /// Target: applies request `seq` of `peer` and queues its response.
    fn apply(&mut self, c: usize, peer: ProcessId, seq: u64, op: WireOp<'_>) -> Result<(), String> {
        let shared = self.shared.clone();
        let conn = self.conns[c].as_mut().expect("live");
        let respond = |conn: &mut Conn, status, value, data: &[u8]| {
            let f = Frame::Response {
                seq,
                status,
                value,
                data,
            };
            conn.unanswered = None;
            conn.out.append(|v| wire::encode(&f, v));
        };
        if matches!(op, WireOp::Reconnect) {
            conn.error = false;
            respond(conn, WireStatus::Success, None, &[]);
            return Ok(());
        }
        if conn.error {
            respond(conn, WireStatus::Flushed, None, &[]);
            return Ok(());
        }
        let p = peer.index();
        let mut read = Vec::new();
        let deferrable = matches!(op, WireOp::Write { .. } | WireOp::Send { .. });
        let (allowed, value) = match op {
            WireOp::Write {
                region,
                offset,
                data,
                imm,
            } => {
                let r = shared.checked(peer, region, offset, data.len(), false)?;
                let off = offset as usize;
                let ok = r.guarded(p, Access::can_write, |r| r.write(off, data));
                if ok.is_some() {
                    if let Some(imm) = imm {
                        shared.deliver(crate::nic::Recv::Immediate {
                            from: peer,
                            imm,
                            at: LocalAddr::new(crate::RegionId(region), off),
                            len: data.len(),
                        });
                    }
                    shared.notify();
                }
                (ok.is_some(), None)
            }
            WireOp::Read {
                region,
                offset,
                len,
            } => {
                let len = len as usize;
                if len > CHUNK {
                    return Err(format!("read of {len} bytes exceeds a chunk of {CHUNK}"));
                }
                let r = shared.checked(peer, region, offset, len, false)?;
                read.resize(len, 0);
                let ok = r.guarded(p, Access::can_read, |r| r.read(offset as usize, &mut read));
                (ok.is_some(), None)
            }
            WireOp::CompareSwap {
                region,
                offset,
                expect,
                swap,
            } => {
                let r = shared.checked(peer, region, offset, 8, true)?;
                let cas = |r: &SharedRegion| match r.word(offset as usize).compare_exchange(
                    expect,
                    swap,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(v) | Err(v) => v,
                };
                let old = r.guarded(p, Access::can_atomic, cas);
                if old.is_some() {
                    shared.notify();
                }
                (old.is_some(), old)
            }
            WireOp::FetchAdd {
                region,
                offset,
                add,
            } => {
                let r = shared.checked(peer, region, offset, 8, true)?;
                let faa =
                    |r: &SharedRegion| r.word(offset as usize).fetch_add(add, Ordering::AcqRel);
                let old = r.guarded(p, Access::can_atomic, faa);
                if old.is_some() {
                    shared.notify();
                }
                (old.is_some(), old)
            }
            WireOp::Send { data } => {
                if data.len() > shared.limits.send_max {
                    return Err(format!(
                        "send of {} bytes exceeds the largest message of {}",
                        data.len(),
                        shared.limits.send_max
                    ));
                }
                shared.deliver(crate::nic::Recv::Message {
                    from: peer,
                    data: bytes::Bytes::copy_from_slice(data),
                });
                shared.notify();
                (true, None)
            }
            WireOp::Reconnect => unreachable!("handled above"),
        };
        if allowed && deferrable {
            // Answered with the batch it arrived in (`handle_frames`): a stream of writes
            // costs one response per read of the socket, not one per write.
            conn.unanswered = Some(seq);
        } else if allowed {
            respond(conn, WireStatus::Success, value, &read);
        } else {
            conn.error = true;
            respond(conn, WireStatus::AccessDenied, None, &[]);
        }
        Ok(())
    }

    /// Initiator: the answer to request `seq` of link `l` (see [`answer`]).
    fn answered(
        &mut self,
        l: usize,
        seq: u64,
        status: WireStatus,
        value: Option<u64>,
        data: &[u8],
    ) -> Result<(), String> {
        let (link, shared, reconnects) = self.link_parts(l);
        let peer = link.peer;
        let status = match status {
            WireStatus::Success => Status::Success,
            WireStatus::AccessDenied => Status::AccessDenied,
            WireStatus::Flushed => Status::Flushed,
        };
        let mut admitted = false;
        answer(&mut link.sq, seq, status, data.len(), |r| {
            if r.piece.op == ADMISSION {
                admitted = true;
                return;
            }
            if r.piece.kind == OpKind::Reconnect {
                reconnect_answered(reconnects, shared, r.piece.op, peer, r.status);
                return;
            }
            let answered = r.id == seq;
            if let (Some((into, _)), Status::Success, true) = (r.piece.tag, r.status, answered) {
                shared.regions[into.region.index()].write(into.offset, data);
                shared.notify();
            }
            if r.report {
                shared.complete(Completion {
                    wr: r.piece.op,
                    kind: r.piece.kind,
                    peer,
                    status: r.status,
                    value: value.filter(|_| answered && r.status == Status::Success),
                });
            }
        })?;
        if admitted && self.links[l].state == LinkState::Admitting {
            self.up(l);
        }
        Ok(())
    }

    fn take_posts(&mut self) {
        for (wr, op) in self.shared.take_outbox() {
            self.dispatch(wr, op);
        }
    }

    /// Routes a posted op to its link: sent, held until the link is up, or failed at once.
    fn dispatch(&mut self, wr: WrId, op: Op) {
        let peer = op.peer();
        if let Op::Reconnect { .. } = op {
            let mut due = 0;
            for qp in 0..Qp::COUNT {
                let l = peer.index() * Qp::COUNT + qp;
                self.links[l].sq.reconnect();
                match self.links[l].state {
                    LinkState::Ready => {
                        let piece = Piece::whole(wr, OpKind::Reconnect, false);
                        self.send_request(l, piece, WireOp::Reconnect);
                        due += 1;
                    }
                    LinkState::Down => {
                        // Lost earlier (a broken connection, a peer given up): dialled again,
                        // as a new queue pair; ops posted from now on wait for it.
                        let link = &mut self.links[l];
                        let now = Instant::now();
                        link.state = LinkState::Connecting;
                        link.retry_at = Some(now);
                        link.connect_by = now + self.connect_timeout;
                        link.backoff = RETRY;
                        link.redialling.push(wr);
                        link.lost_at_start = false;
                        due += 1;
                    }
                    LinkState::Connecting | LinkState::Admitting => {
                        // Another reconnect during a re-dial: what waits was posted before
                        // it, and a reconnect flushes what it finds queued.
                        let link = &mut self.links[l];
                        link.redialling.push(wr);
                        let (p, flushed) = (link.peer, std::mem::take(&mut link.waiting));
                        for (w, op) in flushed {
                            self.shared.complete(Completion {
                                wr: w,
                                kind: op.kind(),
                                peer: p,
                                status: Status::Flushed,
                                value: None,
                            });
                        }
                        due += 1;
                    }
                }
            }
            if due == 0 {
                self.shared.complete(Completion {
                    wr,
                    kind: OpKind::Reconnect,
                    peer,
                    status: Status::Success,
                    value: None,
                });
            } else {
                self.reconnects.insert(wr, (due, Status::Success));
            }
            return;
        }
        let l = peer.index() * Qp::COUNT + op.qp().index();
        let link = &mut self.links[l];
        let fail = match link.state {
            LinkState::Down => Some(Status::PeerUnreachable),
            LinkState::Connecting | LinkState::Admitting => {
                link.waiting.push_back((wr, op));
                return;
            }
            LinkState::Ready if link.sq.state().in_error() => Some(Status::Flushed),
            LinkState::Ready => None,
        };
        if let Some(status) = fail {
            self.shared.complete(Completion {
                wr,
                kind: op.kind(),
                peer,
                status,
                value: None,
            });
            return;
        }
        let kind = op.kind();
        let signaled = op.signaled();
        // A request of this op: its last one carries the op's success.
        let request = |last, tag| Piece {
            last,
            tag,
            ..Piece::whole(wr, kind, signaled)
        };
        match op {
            Op::Write { dst, data, imm, .. } => {
                let len = data.len();
                let mut at = 0;
                loop {
                    let n = CHUNK.min(len - at);
                    let last = at + n == len;
                    if let (Data::Bytes(b), true) = (&data, n >= SHARE_AT_LEAST) {
                        let imm = if last { imm } else { None };
                        let payload = b.slice(at..at + n);
                        self.send_shared_write(l, request(last, None), dst, at, payload, imm);
                        at += n;
                        if last {
                            break;
                        }
                        continue;
                    }
                    let mut chunk = std::mem::take(&mut self.chunk);
                    let bytes: &[u8] = match &data {
                        Data::Bytes(b) => &b[at..at + n],
                        Data::Inline(i) => &i[at..at + n],
                        Data::Synthetic(_) => {
                            chunk.resize(n, 0);
                            data.copy_to(at, &mut chunk);
                            &chunk
                        }
                    };
                    let op = WireOp::Write {
                        region: dst.region.0,
                        offset: (dst.offset + at) as u64,
                        data: bytes,
                        imm: if last { imm } else { None },
                    };
                    self.send_request(l, request(last, None), op);
                    self.chunk = chunk;
                    at += n;
                    if last {
                        break;
                    }
                }
            }
            Op::Read { src, len, into, .. } => {
                let mut at = 0;
                loop {
                    let n = CHUNK.min(len - at);
                    let last = at + n == len;
                    let op = WireOp::Read {
                        region: src.region.0,
                        offset: (src.offset + at) as u64,
                        len: n as u32,
                    };
                    self.send_request(l, request(last, Some((into.add(at), n))), op);
                    at += n;
                    if last {
                        break;
                    }
                }
            }
            Op::CompareSwap { dst, expect, swap } => {
                let op = WireOp::CompareSwap {
                    region: dst.region.0,
                    offset: dst.offset as u64,
                    expect,
                    swap,
                };
                self.send_request(l, request(true, None), op);
            }
            Op::FetchAdd { dst, add } => {
                let op = WireOp::FetchAdd {
                    region: dst.region.0,
                    offset: dst.offset as u64,
                    add,
                };
                self.send_request(l, request(true, None), op);
            }
            Op::Send { data, .. } => {
                self.send_request(l, request(true, None), WireOp::Send { data: &data });
            }
            Op::SetAccess { .. } | Op::Reconnect { .. } => unreachable!("handled by the caller"),
        }
    }

    /// Numbers request `piece` of link `l` and records it as outstanding.
    fn track(&mut self, l: usize, piece: Piece<ReadInto>) -> u64 {
        let (seq, _) = self.links[l]
            .sq
            .admit(piece)
            .expect("bounded in bytes, not requests");
        seq
    }

    /// Sends request `piece` of link `l`, `op` on the wire.
    fn send_request(&mut self, l: usize, piece: Piece<ReadInto>, op: WireOp<'_>) {
        let seq = self.track(l, piece);
        let c = self.links[l].conn.expect("a ready link has its connection");
        let conn = self.conns[c].as_mut().expect("live");
        conn.out
            .append(|v| wire::encode(&Frame::Request { seq, op }, v));
    }

    /// [`Engine::send_request`] for a write chunk whose payload is queued where the process
    /// put it rather than copied into the frame.
    fn send_shared_write(
        &mut self,
        l: usize,
        piece: Piece<ReadInto>,
        dst: crate::RemoteAddr,
        at: usize,
        payload: bytes::Bytes,
        imm: Option<u32>,
    ) {
        let seq = self.track(l, piece);
        let link = &self.links[l];
        let c = link.conn.expect("a ready link has its connection");
        let out = &mut self.conns[c].as_mut().expect("live").out;
        let (region, offset) = (dst.region.0, (dst.offset + at) as u64);
        let mut tail = Vec::new();
        out.append(|v| {
            tail = wire::encode_write_around(seq, region, offset, payload.len(), imm, v);
        });
        out.share(payload);
        out.append(|v| v.extend_from_slice(&tail));
    }

    fn flush_all(&mut self) {
        for c in 0..self.conns.len() {
            if self.conns[c]
                .as_ref()
                .is_some_and(|c| c.out.backlog() > 0 && c.connected)
            {
                self.flush(c);
            }
        }
    }

    /// Writes what the socket takes now, of what the fault layer lets go; the rest waits for
    /// the next writable event or release. A connection paused for backpressure whose
    /// responses drained is read again here, and what that answers written at once: nothing
    /// else would wake the loop for it.
    fn flush(&mut self, c: usize) {
        while self.write_out(c) {
            if let Err(reason) = self.read_from(c) {
                self.close(c, &reason);
                return;
            }
        }
    }

    /// One round of [`Engine::flush`]; `true` when it resumed reading a paused connection.
    fn write_out(&mut self, c: usize) -> bool {
        let me = self.shared.me;
        let Some(conn) = self.conns[c].as_mut() else {
            return false;
        };
        if !conn.connected {
            return false;
        }
        let limit = if self.faults.is_empty() {
            conn.out.backlog()
        } else {
            let peer = conn.link.map(|l| self.links[l].peer).or(conn.peer);
            let now = Instant::now();
            let t = self
                .shared
                .zero
                .get()
                .map(|z| now.saturating_duration_since(*z));
            let queued = conn.out.sent() + conn.out.backlog() as u64;
            let free = conn
                .held
                .releasable(queued, &self.faults, me, peer, now, t, &mut self.rng);
            (free - conn.out.sent()) as usize
        };
        let mut written = 0;
        let result = loop {
            if written >= limit {
                break Ok(());
            }
            match conn.out.write_to(&mut conn.stream, limit - written) {
                Ok(0) => break Err("the connection accepts no more bytes".to_string()),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(format!("connection failed: {e}")),
            }
        };
        if written > 0 {
            conn.progressed = Instant::now();
        }
        let backlog = conn.backlog();
        let result = result.and_then(|()| match stalled(conn, &self.bounds) {
            Some(reason) => Err(reason),
            None => Ok(()),
        });
        let resume = conn.paused && backlog <= self.bounds.responses / 2;
        if let Err(reason) = result {
            self.close(c, &reason);
            return false;
        }
        if resume {
            conn.paused = false;
        }
        resume
    }

    fn drop_conn(&mut self, c: usize) {
        if let Some(mut conn) = self.conns[c].take() {
            let _ = self.poll.registry().deregister(&mut conn.stream);
        }
        for p in self.proven.iter_mut().filter(|p| **p == Some(c)) {
            *p = None;
        }
    }

    /// Closes connection `c` for `reason`; if this node initiated it, the peer is gone for good.
    fn close(&mut self, c: usize, reason: &str) {
        let Some(conn) = self.conns[c].as_ref() else {
            return;
        };
        let (link, peer) = (conn.link, conn.peer);
        match link {
            Some(l) => {
                let p = self.links[l].peer;
                self.shared
                    .log(format!("{}: link to {p} closed: {reason}", self.me()));
                self.drop_conn(c);
                let starting = !self.shared.ready.load(Ordering::SeqCst);
                let link = &mut self.links[l];
                if starting && link.redialling.is_empty() {
                    // While the node starts, a connection the peer closed (it refused the
                    // handshake, or was not ready) is one failed attempt: tried again until
                    // the connect timeout, then given up with this reason.
                    link.state = LinkState::Connecting;
                    link.last_failure = Some(reason.to_string());
                    let closed = io::Error::from(io::ErrorKind::ConnectionAborted);
                    self.attempt_failed(l, &closed);
                    // A peer that refuses is asked less and less often.
                    let link = &mut self.links[l];
                    link.backoff = (link.backoff * 2).min(MAX_BACKOFF);
                } else if link.state != LinkState::Ready && !link.redialling.is_empty() {
                    // A re-dial's connection closed before the peer admitted it: one failed
                    // attempt (its only request, the admission probe, goes with it).
                    link.sq.fail_all(Status::PeerUnreachable, |_| {});
                    link.state = LinkState::Connecting;
                    let refused = io::Error::from(io::ErrorKind::ConnectionAborted);
                    self.attempt_failed(l, &refused);
                } else {
                    self.link_down(l);
                }
            }
            None => {
                let who = peer.map_or("an unidentified peer".to_string(), |p| p.to_string());
                self.shared.log(format!(
                    "{}: connection from {who} closed: {reason}",
                    self.me()
                ));
                self.drop_conn(c);
            }
        }
    }

    /// Link `l` beside what completing its ops needs: the completion queue and the
    /// reconnects in progress (borrowed apart from the engine).
    fn link_parts(&mut self, l: usize) -> (&mut Link, &NodeShared, &mut Reconnects) {
        (&mut self.links[l], &self.shared, &mut self.reconnects)
    }

    /// Link `l`'s connection attempts end without a connection, for `reason`.
    fn give_up(&mut self, l: usize, reason: &str) {
        let p = self.links[l].peer;
        self.shared
            .log(format!("{}: link to {p} given up: {reason}", self.me()));
        // One entry per peer (a link per queue pair, and re-dials given up again and again).
        let mut given_up = self.shared.given_up.lock().expect("given-up lock");
        if !given_up.iter().any(|(q, _)| *q == p) {
            given_up.push((p, reason.to_string()));
        }
        drop(given_up);
        self.link_down(l);
    }

    /// The peer of link `l` is gone: everything outstanding or waiting fails, and so will
    /// everything posted to it later.
    fn link_down(&mut self, l: usize) {
        let (link, shared, reconnects) = self.link_parts(l);
        link.state = LinkState::Down;
        link.conn = None;
        let peer = link.peer;
        let redialled = link.redialling.drain(..).map(|wr| (wr, OpKind::Reconnect));
        let waiting = link.waiting.drain(..).map(|(wr, op)| (wr, op.kind()));
        let mut failed: Vec<(WrId, OpKind)> = Vec::new();
        link.sq.fail_all(Status::PeerUnreachable, |r| {
            if r.report && r.piece.op != ADMISSION {
                failed.push((r.piece.op, r.piece.kind));
            }
        });
        for (wr, kind) in failed.into_iter().chain(redialled).chain(waiting) {
            if kind == OpKind::Reconnect {
                let lost = Status::PeerUnreachable;
                reconnect_answered(reconnects, shared, wr, peer, lost);
                continue;
            }
            shared.complete(Completion {
                wr,
                kind,
                peer,
                status: Status::PeerUnreachable,
                value: None,
            });
        }
    }
}

/// Why connection `conn` (this node's own) is given up, if it is: past [`Bounds::requests`] of
/// requests unsent, and the peer took no byte for [`Bounds::stall`].
fn stalled(conn: &Conn, bounds: &Bounds) -> Option<String> {
    let backlog = conn.backlog();
    let still = conn.progressed.elapsed();
    (conn.link.is_some() && backlog > bounds.requests && still >= bounds.stall).then(|| {
        format!(
            "the peer left {} MiB of requests unread, past the bound of {} MiB, and took nothing for {:?}: given up, as a queue pair whose retries ran out",
            backlog >> 20,
            bounds.requests >> 20,
            still
        )
    })
}

/// Reconnects waiting for their queue pairs: op -> answers still due, and the worst status so
/// far.
type Reconnects = BTreeMap<WrId, (usize, Status)>;

/// Where a read request's bytes go, and how many there are.
type ReadInto = Option<(LocalAddr, usize)>;

/// One queue pair of reconnect `wr` towards `peer` is re-established (`Success`) or lost
/// (`PeerUnreachable`: its connection broke, or its re-dial was given up). The reconnect
/// completes once every queue pair has answered: `PeerUnreachable` if any was lost.
fn reconnect_answered(
    reconnects: &mut Reconnects,
    shared: &NodeShared,
    wr: WrId,
    peer: ProcessId,
    status: Status,
) {
    let (due, worst) = reconnects.get_mut(&wr).expect("reconnect tracked");
    *due -= 1;
    if status != Status::Success {
        *worst = status;
    }
    if *due == 0 {
        let status = *worst;
        reconnects.remove(&wr);
        shared.complete(Completion {
            wr,
            kind: OpKind::Reconnect,
            peer,
            status,
            value: None,
        });
    }
}

/// Initiator, without sockets: the answer to request `seq` of a queue pair, `status` with
/// `data_len` bytes of read data, checked against what is outstanding and retired through
/// `retired` ([`SendQueue::retire`]). Earlier requests still outstanding are retired as done
/// ([`wire`]'s acknowledgement rule), which only writes and sends may be; an answer that passes
/// over anything else, answers nothing outstanding, or brings a read the wrong number of bytes
/// is the peer breaking the protocol: the caller closes the connection with the reason.
fn answer(
    sq: &mut SendQueue<ReadInto>,
    seq: u64,
    status: Status,
    data_len: usize,
    retired: impl FnMut(Retired<ReadInto>),
) -> Result<(), String> {
    let implied = |k: OpKind| matches!(k, OpKind::Write | OpKind::WriteImm | OpKind::Send);
    if let Some((id, _)) = sq
        .pending()
        .take_while(|(id, _)| *id < seq)
        .find(|(_, p)| !implied(p.kind))
    {
        return Err(format!(
            "response {seq} passes over request {id}, which needs its own answer"
        ));
    }
    let Some(piece) = sq.get(seq) else {
        return Err(format!("response {seq} answers no request in order"));
    };
    if let (Some((_, len)), Status::Success) = (piece.tag, status) {
        if data_len != len {
            return Err(format!(
                "read response of {data_len} bytes for a read of {len}"
            ));
        }
    }
    sq.retire(seq, status, retired);
    Ok(())
}

/// The initiator's side of a peer that answers out of turn, without sockets: [`answer`] on a
/// queue pair's requests.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::RegionId;

    /// A queue pair holding, in order: `kinds`, op `i` signalled, one piece each; reads of 8
    /// bytes into region 0.
    fn queue(kinds: &[OpKind]) -> SendQueue<ReadInto> {
        let mut sq = SendQueue::unbounded();
        for (i, &kind) in kinds.iter().enumerate() {
            let tag = (kind == OpKind::Read).then(|| (LocalAddr::new(RegionId(0), 0), 8));
            let piece = Piece {
                tag,
                ..Piece::whole(WrId(i as u64), kind, true)
            };
            sq.admit(piece).unwrap();
        }
        sq
    }

    /// Answers `seq` and returns the completions the process would see, as (op, status).
    fn reports(
        sq: &mut SendQueue<ReadInto>,
        seq: u64,
        status: Status,
        data_len: usize,
    ) -> Result<Vec<(u64, Status)>, String> {
        let mut out = Vec::new();
        answer(sq, seq, status, data_len, |r| {
            if r.report {
                out.push((r.piece.op.0, r.status));
            }
        })?;
        Ok(out)
    }

    #[test]
    fn one_answer_acknowledges_every_earlier_write_and_send() {
        use OpKind::*;
        let mut sq = queue(&[Write, Send, WriteImm, Write]);
        let got = reports(&mut sq, 3, Status::Success, 0).unwrap();
        let done = vec![
            (0, Status::Success),
            (1, Status::Success),
            (2, Status::Success),
        ];
        assert_eq!(got, [done, vec![(3, Status::Success)]].concat());
        assert_eq!(sq.outstanding(), 0);
    }

    #[test]
    fn an_answer_passing_over_a_read_or_an_atomic_is_refused_and_retires_nothing() {
        use OpKind::*;
        for kind in [Read, CompareSwap, FetchAdd, Reconnect] {
            let mut sq = queue(&[Write, kind, Write]);
            let err = reports(&mut sq, 2, Status::Success, 0).unwrap_err();
            assert!(err.contains("passes over request 1"), "{kind:?}: {err}");
            assert_eq!(sq.outstanding(), 3, "{kind:?}: nothing retired");
        }
    }

    #[test]
    fn an_answer_to_nothing_outstanding_or_a_short_read_is_refused() {
        use OpKind::*;
        let err = reports(&mut queue(&[Write]), 1, Status::Success, 0).unwrap_err();
        assert!(err.contains("answers no request"), "{err}");
        let mut sq = queue(&[Read]);
        let err = reports(&mut sq, 0, Status::Success, 7).unwrap_err();
        assert!(err.contains("7 bytes for a read of 8"), "{err}");
        assert_eq!(
            reports(&mut sq, 0, Status::Success, 8),
            Ok(vec![(0, Status::Success)])
        );
        let err = reports(&mut sq, 0, Status::Success, 8).unwrap_err();
        assert!(err.contains("answers no request"), "answered twice: {err}");
    }

    #[test]
    fn a_refusal_flushes_the_queue_pair_until_a_reconnect_and_old_answers_leave_it_alone() {
        use OpKind::*;
        let mut sq = queue(&[Write, Write, Read]);
        assert_eq!(
            reports(&mut sq, 0, Status::AccessDenied, 0),
            Ok(vec![(0, Status::AccessDenied)])
        );
        assert!(sq.state().in_error());
        sq.reconnect();
        // The target flushes what it received before the reconnect: reported, but the re-made
        // queue pair stays out of error.
        assert_eq!(
            reports(&mut sq, 1, Status::Flushed, 0),
            Ok(vec![(1, Status::Flushed)])
        );
        assert_eq!(
            reports(&mut sq, 2, Status::Flushed, 0),
            Ok(vec![(2, Status::Flushed)])
        );
        assert!(!sq.state().in_error());
    }
}
