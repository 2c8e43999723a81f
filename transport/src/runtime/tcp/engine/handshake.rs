//! The handshake that proves a connection: the initiator's hello, the acceptor's welcome
//! and the initiator's proof ([`auth`]), after which the link is up.

use super::initiator::reconnect_answered;
use super::{Engine, LinkState, Phase, ADMISSION};
use crate::nic::{OpKind, Qp, Status};
use crate::queue_pair::Piece;
use crate::runtime::tcp::auth;
use crate::runtime::tcp::wire::{self, Frame, Hello, Mac, Welcome, WireOp};

impl Engine {
    pub(super) fn send_hello(&mut self, c: usize, l: usize) {
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

    /// Acceptor: checks a hello and answers with a welcome.
    pub(super) fn greet(&mut self, c: usize, hello: Hello) -> Result<(), String> {
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
    pub(super) fn admit(
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
    pub(super) fn welcomed(&mut self, c: usize, l: usize, w: Welcome) -> Result<(), String> {
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
    pub(super) fn up(&mut self, l: usize) {
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
}
