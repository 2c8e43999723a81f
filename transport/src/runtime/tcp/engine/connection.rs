//! A link's connection over its life: dialling (retries with backoff until the connect
//! timeout), accepting, the deadlines a connection must meet, and closing it, down to giving
//! its peer up and failing everything outstanding towards it.

use super::initiator::reconnect_answered;
use super::{Conn, Engine, Link, LinkState, Phase, Reconnects, ADMISSION, FIRST_CONN, MAX_BACKOFF};
use crate::nic::{Completion, OpKind, Status, WrId};
use crate::runtime::tcp::buffers::{ReadBuf, WriteQueue};
use crate::runtime::tcp::faults::Held;
use crate::runtime::tcp::wire;
use crate::runtime::tcp::{Bounds, NodeShared};
use mio::net::TcpStream;
use mio::{Interest, Token};
use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

impl Engine {
    pub(super) fn connect_due(&mut self) {
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
    pub(super) fn attempt_failed(&mut self, l: usize, e: &io::Error) {
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
    pub(super) fn deadlines(&self) -> impl Iterator<Item = Instant> + '_ {
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
    pub(super) fn reap(&mut self) {
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

    pub(super) fn accept(&mut self) {
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

    pub(super) fn drop_conn(&mut self, c: usize) {
        if let Some(mut conn) = self.conns[c].take() {
            let _ = self.poll.registry().deregister(&mut conn.stream);
        }
        for p in self.proven.iter_mut().filter(|p| **p == Some(c)) {
            *p = None;
        }
    }

    /// Closes connection `c` for `reason`; if this node initiated it, the peer is gone for good.
    pub(super) fn close(&mut self, c: usize, reason: &str) {
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
    pub(super) fn link_parts(&mut self, l: usize) -> (&mut Link, &NodeShared, &mut Reconnects) {
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
pub(super) fn stalled(conn: &Conn, bounds: &Bounds) -> Option<String> {
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
