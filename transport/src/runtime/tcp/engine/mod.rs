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
//!
//! The event loop, reading frames and writing queued bytes live here; a connection's life in
//! [`connection`], its handshake in [`handshake`], and the two halves of the NIC in
//! [`initiator`] and [`target`].

#![allow(
    clippy::disallowed_methods,
    reason = "the NIC thread is where real time enters the tcp runtime (connect retries)"
)]

use super::auth::Secret;
use super::buffers::{ReadBuf, WriteQueue};
use super::faults::{Held, LinkFault};
use super::wire::{self, Frame, Hello, Welcome, WireStatus, PREAMBLE_LEN};
use super::{Bounds, NodeShared};
use crate::nic::{Op, Qp, Status, WrId};
use crate::process::ProcessId;
use crate::queue_pair::SendQueue;
use crate::region::LocalAddr;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod connection;
mod handshake;
mod initiator;
mod target;

use connection::stalled;

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
}

/// Reconnects waiting for their queue pairs: op -> answers still due, and the worst status so
/// far.
type Reconnects = BTreeMap<WrId, (usize, Status)>;

/// Where a read request's bytes go, and how many there are.
type ReadInto = Option<(LocalAddr, usize)>;
