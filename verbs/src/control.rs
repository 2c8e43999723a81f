//! The control channel between verbs nodes: how the messages of [`crate::bootstrap`] (hellos,
//! reconnects, new rkeys) travel, beside the RDMA data path.
//!
//! Two implementations of [`Control`]:
//! - [`Mailboxes`]: the nodes of one OS process (`rdma::VerbsRuntime`, with the `rdma` feature) hand messages
//!   over in memory; a node is crashed by a flag;
//! - [`TcpControl`]: nodes in separate OS processes or hosts, at the addresses of the tcp
//!   runtime's cluster file. Each node opens one TCP stream to every node (itself included),
//!   proves it holds the cluster secret (the tcp runtime's challenge-response: the acceptor
//!   answers the initiator's nonce with its own and an HMAC tag, the initiator proves itself
//!   with a tag over the same transcript), sends its hello first and later messages after it,
//!   and reads every node's stream on a thread of its own. A stream that ends means its node is
//!   gone (crashed or exited), which is how a reconnect to a dead peer ends `PeerUnreachable`.
//!   A peer without the secret is refused before anything it sends is read.
//!
//! Per pair and direction, messages arrive in the order they were sent (one mailbox, or one
//! stream), which the reconnect handshake needs ([`crate::handshake`]).

use crate::bootstrap::{check_hello, check_preamble, encode, preamble, read_message};
use crate::bootstrap::{BootstrapError, Message};
use std::collections::VecDeque;
use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use transport::runtime::tcp::{nonce, Secret};
use transport::ProcessId;

/// A node's side of the control channel.
pub trait Control: Send + Sync + fmt::Debug {
    /// Sends `m` to the node its route names.
    fn send(&self, m: Message);
    /// The next message for this node, if any.
    fn take(&self, me: ProcessId) -> Option<Message>;
    /// Whether node `p` is gone (crashed, exited, or never started).
    fn crashed(&self, p: ProcessId) -> bool;
}

/// The control channel of the nodes of one OS process.
#[derive(Debug)]
pub struct Mailboxes {
    boxes: Vec<Mutex<VecDeque<Message>>>,
    crashed: Vec<AtomicBool>,
}

impl Mailboxes {
    /// Empty mailboxes for `n` nodes.
    pub fn new(n: usize) -> Mailboxes {
        Mailboxes {
            boxes: (0..n).map(|_| Mutex::new(VecDeque::new())).collect(),
            crashed: (0..n).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Marks node `p` crashed.
    pub fn crash(&self, p: ProcessId) {
        self.crashed[p.index()].store(true, Ordering::Release);
    }
}

impl Control for Mailboxes {
    fn send(&self, m: Message) {
        let to = m.route().1.index();
        self.boxes[to].lock().expect("mailbox").push_back(m);
    }

    fn take(&self, me: ProcessId) -> Option<Message> {
        self.boxes[me.index()].lock().expect("mailbox").pop_front()
    }

    fn crashed(&self, p: ProcessId) -> bool {
        self.crashed[p.index()].load(Ordering::Acquire)
    }
}

/// The control channel of a node in its own OS process, over TCP. Dropping it closes the
/// node's streams: its peers see it gone.
#[derive(Debug)]
pub struct TcpControl {
    /// The stream to each node, this node's messages to it.
    out: Vec<Mutex<TcpStream>>,
    /// What the reading threads fill (they hold this, not the streams out).
    incoming: Arc<Incoming>,
}

/// Messages read from every node's stream, and which streams have ended.
#[derive(Debug)]
struct Incoming {
    inbox: Mutex<VecDeque<Message>>,
    gone: Vec<AtomicBool>,
}

impl TcpControl {
    /// Connects node `me` (listening on `listener`, its address in `addrs`) to every node:
    /// sends `hellos[p]` to node `p` first on its stream, and returns the channel and the
    /// hello each node sent this one, in process-id order (its own included). Connections are
    /// retried until `timeout`, so nodes may start in any order; every stream proves both ends
    /// hold `secret` first, and every hello is checked ([`check_hello`]: route and deployment
    /// `table`).
    #[allow(
        clippy::too_many_arguments,
        reason = "the bootstrap's inputs, each named once"
    )]
    pub fn connect(
        me: ProcessId,
        listener: &TcpListener,
        addrs: &[SocketAddr],
        hellos: &[Message],
        table: u64,
        timeout: Duration,
        secret: &Secret,
    ) -> Result<(Arc<TcpControl>, Vec<Message>), BootstrapError> {
        assert_eq!(hellos.len(), addrs.len(), "one hello per node");
        let n = addrs.len();
        let deadline = Instant::now() + timeout;
        let io_at = |peer: ProcessId| {
            let addr = addrs[peer.index()];
            move |source| BootstrapError::Io { peer, addr, source }
        };
        // Accept on a thread of its own while this one connects out: every node does both.
        let accepting = listener.try_clone().map_err(io_at(me))?;
        let proving = secret.clone();
        let accept =
            std::thread::spawn(move || accept_all(&accepting, n, deadline, timeout, &proving));
        let mut out = Vec::with_capacity(n);
        for (p, (&addr, hello)) in addrs.iter().zip(hellos).enumerate() {
            let peer = ProcessId(p as u32);
            let mut stream = loop {
                match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                    Ok(s) => break s,
                    Err(e) if Instant::now() >= deadline => return Err(io_at(peer)(e)),
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            };
            stream.set_nodelay(true).map_err(io_at(peer))?;
            stream.write_all(&preamble()).map_err(io_at(peer))?;
            let left = deadline.saturating_duration_since(Instant::now());
            stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .map_err(io_at(peer))?;
            prove(&mut stream, me, peer, secret)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                        std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("it took the connection but did not answer within {timeout:?} (is a node of this cluster listening there?)"),
                        )
                    }
                    _ => e,
                })
                .map_err(io_at(peer))?;
            stream.set_read_timeout(None).map_err(io_at(peer))?;
            stream.write_all(&encode(hello)).map_err(io_at(peer))?;
            out.push(Mutex::new(stream));
        }
        let mut got = accept
            .join()
            .expect("the accepting thread does not panic")
            .map_err(io_at(me))?;
        got.sort_by_key(|(m, _)| m.route().0);
        for (p, (m, _)) in got.iter().enumerate() {
            check_hello(m, me, ProcessId(p as u32), table)?;
        }
        let incoming = Arc::new(Incoming {
            inbox: Mutex::new(VecDeque::new()),
            gone: (0..n).map(|_| AtomicBool::new(false)).collect(),
        });
        let mut hellos_in = Vec::with_capacity(n);
        for (p, (hello, stream)) in got.into_iter().enumerate() {
            hellos_in.push(hello);
            let incoming = Arc::clone(&incoming);
            std::thread::spawn(move || incoming.read_from(ProcessId(p as u32), stream));
        }
        Ok((Arc::new(TcpControl { out, incoming }), hellos_in))
    }
}

/// Accepts `n` streams on `listener` and reads each one's preamble and hello, all before
/// `deadline`: a peer that never connects is an error when it passes, not a wait without end.
/// A stream that fails its handshake (another program, a node of another cluster, one without
/// the secret) is dropped and named in that error, and does not stop the others being
/// accepted; none may hold the acceptor longer than [`HANDSHAKE`]. (The listener is
/// non-blocking meanwhile: a clone shares its socket, so the caller's copy is switched back
/// before returning.)
fn accept_all(
    listener: &TcpListener,
    n: usize,
    deadline: Instant,
    timeout: Duration,
    secret: &Secret,
) -> std::io::Result<Vec<(Message, TcpStream)>> {
    listener.set_nonblocking(true)?;
    let (mut got, mut refused) = (Vec::with_capacity(n), Vec::new());
    let result = loop {
        if got.len() == n {
            break Ok(());
        }
        let (mut s, from) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let why = if refused.is_empty() {
                        String::new()
                    } else {
                        format!("; refused: {}", refused.join("; "))
                    };
                    break Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "{} of {n} nodes connected within {timeout:?} (is every node of the cluster file started?){why}",
                            got.len()
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(e) => break Err(e),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        match read_hello(&mut s, left.min(HANDSHAKE), secret) {
            Ok(hello) => got.push((hello, s)),
            Err(e) => refused.push(format!("{from}: {e}")),
        }
    };
    listener.set_nonblocking(false)?;
    result.map(|()| got)
}

/// The longest an accepted stream may take to prove itself and send its hello: an honest node
/// answers in a round trip, and a silent one must not keep the others waiting.
const HANDSHAKE: Duration = Duration::from_secs(5);

/// Reads an accepted stream's preamble, admits its initiator if it holds `secret`, and reads
/// its hello, waiting at most `left` in all.
fn read_hello(s: &mut TcpStream, left: Duration, secret: &Secret) -> std::io::Result<Message> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
    let mut p = [0u8; 8];
    s.read_exact(&mut p)?;
    check_preamble(&p).map_err(invalid)?;
    admit(s, secret)?;
    let hello = read_message(s)?;
    s.set_read_timeout(None)?;
    Ok(hello)
}

/// The label of the acceptor's tag.
const WELCOME: &[u8] = b"rdmawb verbs control welcome";
/// The label of the initiator's proof.
const PROOF: &[u8] = b"rdmawb verbs control proof";

/// What both tags of one stream's handshake cover: who dials whom, and both nonces.
fn transcript(from: u32, to: u32, theirs: &[u8; 16], ours: &[u8; 16]) -> Vec<u8> {
    [&from.to_le_bytes()[..], &to.to_le_bytes(), theirs, ours].concat()
}

fn refused(why: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, why)
}

/// The initiator's side: sends who it is and a nonce, checks the acceptor's tag (it holds the
/// secret), and proves it holds the secret too.
fn prove(s: &mut TcpStream, me: ProcessId, to: ProcessId, secret: &Secret) -> std::io::Result<()> {
    let mine = nonce();
    let mut hello = Vec::with_capacity(24);
    hello.extend_from_slice(&me.0.to_le_bytes());
    hello.extend_from_slice(&to.0.to_le_bytes());
    hello.extend_from_slice(&mine);
    s.write_all(&hello)?;
    let mut welcome = [0u8; 48];
    s.read_exact(&mut welcome)?;
    let theirs: [u8; 16] = welcome[..16].try_into().expect("16 bytes");
    let t = transcript(me.0, to.0, &mine, &theirs);
    if !secret.verify(WELCOME, &t, &welcome[16..]) {
        return Err(refused(format!(
            "the node answering as {to} does not hold the cluster secret: refused"
        )));
    }
    s.write_all(&secret.tag(PROOF, &t))
}

/// The acceptor's side: answers the initiator's nonce with its own and its tag, and admits
/// the initiator only if its proof holds.
fn admit(s: &mut TcpStream, secret: &Secret) -> std::io::Result<()> {
    let mut hello = [0u8; 24];
    s.read_exact(&mut hello)?;
    let word = |at: usize| u32::from_le_bytes(hello[at..at + 4].try_into().expect("4 bytes"));
    let (from, to) = (word(0), word(4));
    let theirs: [u8; 16] = hello[8..].try_into().expect("16 bytes");
    let mine = nonce();
    let t = transcript(from, to, &theirs, &mine);
    s.write_all(&[&mine[..], &secret.tag(WELCOME, &t)].concat())?;
    let mut proof = [0u8; 32];
    s.read_exact(&mut proof)?;
    if !secret.verify(PROOF, &t, &proof) {
        return Err(refused(format!(
            "a peer claiming to be node {from} does not hold the cluster secret: refused"
        )));
    }
    Ok(())
}

impl Incoming {
    /// Reads node `p`'s stream until it ends, then marks `p` gone.
    fn read_from(&self, p: ProcessId, mut stream: TcpStream) {
        while let Ok(m) = read_message(&mut stream) {
            if m.route().0 == p {
                self.inbox.lock().expect("inbox").push_back(m);
            }
        }
        self.gone[p.index()].store(true, Ordering::Release);
    }
}

fn invalid(e: BootstrapError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e)
}

impl Control for TcpControl {
    fn send(&self, m: Message) {
        let to = m.route().1.index();
        let mut s = self.out[to].lock().expect("stream");
        // A write to a gone node fails; its stream's reader has marked it (or will).
        let _ = s.write_all(&encode(&m));
    }

    fn take(&self, _me: ProcessId) -> Option<Message> {
        self.incoming.inbox.lock().expect("inbox").pop_front()
    }

    fn crashed(&self, p: ProcessId) -> bool {
        self.incoming.gone[p.index()].load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::{Endpoint, RemoteRegion};

    fn hello(from: u32, to: u32) -> Message {
        Message::Hello {
            from,
            to,
            table: 42,
            endpoint: Endpoint {
                qpn: [from * 10 + to, 1],
                ..Endpoint::default()
            },
            regions: vec![RemoteRegion {
                addr: 4096 * from as u64,
                len: 64,
                rkey: to,
            }],
        }
    }

    fn secret() -> Secret {
        Secret::new([7u8; 32].to_vec()).unwrap()
    }

    fn rekey(from: u32, to: u32, rkey: u32) -> Message {
        Message::Rekey {
            from,
            to,
            regions: vec![RemoteRegion {
                addr: 0,
                len: 8,
                rkey,
            }],
        }
    }

    #[test]
    fn mailboxes_keep_order_per_receiver_and_crash_flags() {
        let m = Mailboxes::new(2);
        m.send(rekey(0, 1, 1));
        m.send(rekey(0, 1, 2));
        assert_eq!(m.take(ProcessId(1)), Some(rekey(0, 1, 1)));
        assert_eq!(m.take(ProcessId(1)), Some(rekey(0, 1, 2)));
        assert_eq!(m.take(ProcessId(0)), None);
        assert!(!m.crashed(ProcessId(1)));
        m.crash(ProcessId(1));
        assert!(m.crashed(ProcessId(1)));
    }

    fn wait_for(mut f: impl FnMut() -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Three nodes over loopback: each gets every hello, then later messages in order, and
    /// sees a node whose channel closed as gone.
    #[test]
    fn three_nodes_exchange_hellos_then_messages_and_see_a_node_go() {
        let listeners: Vec<TcpListener> = (0..3)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
        let threads: Vec<_> = listeners
            .into_iter()
            .enumerate()
            .map(|(me, l)| {
                let addrs = addrs.clone();
                std::thread::spawn(move || {
                    let hellos: Vec<Message> = (0..3).map(|to| hello(me as u32, to)).collect();
                    let me = ProcessId(me as u32);
                    let timeout = Duration::from_secs(10);
                    TcpControl::connect(me, &l, &addrs, &hellos, 42, timeout, &secret()).unwrap()
                })
            })
            .collect();
        let mut nodes: Vec<(Arc<TcpControl>, Vec<Message>)> =
            threads.into_iter().map(|t| t.join().unwrap()).collect();
        for (me, (_, got)) in nodes.iter().enumerate() {
            let want: Vec<Message> = (0..3).map(|from| hello(from, me as u32)).collect();
            assert_eq!(got, &want, "node {me}");
        }
        for k in 0..5 {
            nodes[0].0.send(rekey(0, 2, k));
        }
        let c2 = Arc::clone(&nodes[2].0);
        let mut got = Vec::new();
        assert!(wait_for(|| {
            got.extend(c2.take(ProcessId(2)));
            got.len() == 5
        }));
        assert_eq!(got, (0..5).map(|k| rekey(0, 2, k)).collect::<Vec<_>>());
        assert!(!c2.crashed(ProcessId(1)));
        // Node 1 goes: its streams close with its channel.
        let (c1, _) = nodes.remove(1);
        drop(c1);
        assert!(
            wait_for(|| c2.crashed(ProcessId(1))),
            "node 2 never saw node 1 go"
        );
        assert!(!c2.crashed(ProcessId(0)));
    }

    #[test]
    fn a_hello_from_another_deployment_is_refused() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addrs = vec![l.local_addr().unwrap()];
        let mut h = hello(0, 0);
        if let Message::Hello { table, .. } = &mut h {
            *table = 7;
        }
        let timeout = Duration::from_secs(5);
        let e = TcpControl::connect(ProcessId(0), &l, &addrs, &[h], 42, timeout, &secret())
            .unwrap_err();
        assert!(e.to_string().contains("another deployment"), "{e}");
    }

    /// A peer that takes this node's connection but never connects back (hung, or another
    /// program on its port) ends the bootstrap with an error when the timeout passes, instead
    /// of a wait without end.
    #[test]
    fn connect_gives_up_on_a_peer_that_never_connects_back() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let addrs = vec![l.local_addr().unwrap(), silent.local_addr().unwrap()];
        let hellos = [hello(0, 0), hello(0, 1)];
        let began = Instant::now();
        let timeout = Duration::from_millis(500);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(TcpControl::connect(
                ProcessId(0),
                &l,
                &addrs,
                &hellos,
                42,
                timeout,
                &secret(),
            ));
        });
        let got = rx
            .recv_timeout(timeout + Duration::from_secs(5))
            .expect("connect returned within its timeout and a margin");
        let e = got
            .expect_err("one of two nodes never connected")
            .to_string();
        assert!(
            e.contains("did not answer within") || e.contains("1 of 2 nodes connected"),
            "{e}"
        );
        assert!(began.elapsed() >= timeout);
        drop(silent);
    }

    /// A node that does not hold the cluster secret gets nothing from the others, and the
    /// bootstrap says why on both sides.
    #[test]
    fn a_node_without_the_cluster_secret_is_refused() {
        let listeners: Vec<TcpListener> = (0..2)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
        let secrets = [secret(), Secret::new([9u8; 32].to_vec()).unwrap()];
        let outcomes: Vec<String> = std::thread::scope(|s| {
            let nodes: Vec<_> = listeners
                .iter()
                .zip(&secrets)
                .enumerate()
                .map(|(me, (l, secret))| {
                    let addrs = &addrs;
                    s.spawn(move || {
                        let hellos: Vec<Message> = (0..2).map(|to| hello(me as u32, to)).collect();
                        let timeout = Duration::from_secs(2);
                        let me = ProcessId(me as u32);
                        match TcpControl::connect(me, l, addrs, &hellos, 42, timeout, secret) {
                            Ok(_) => "connected".to_string(),
                            Err(e) => e.to_string(),
                        }
                    })
                })
                .collect();
            nodes.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for o in &outcomes {
            assert!(
                o.contains("does not hold the cluster secret"),
                "{outcomes:?}"
            );
        }
    }
}
