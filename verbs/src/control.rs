//! The control channel between verbs nodes: how the messages of [`crate::bootstrap`] (hellos,
//! reconnects, new rkeys) travel, beside the RDMA data path.
//!
//! Two implementations of [`Control`]:
//! - [`Mailboxes`]: the nodes of one OS process (`rdma::VerbsRuntime`, with the `rdma` feature) hand messages
//!   over in memory; a node is crashed by a flag;
//! - [`TcpControl`]: nodes in separate OS processes or hosts, at the addresses of the tcp
//!   runtime's cluster file. Each node opens one TCP stream to every node (itself included),
//!   sends its hello first and later messages after it, and reads every node's stream on a
//!   thread of its own. A stream that ends means its node is gone (crashed or exited), which is
//!   how a reconnect to a dead peer ends `PeerUnreachable`.
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
    /// retried until `timeout`, so nodes may start in any order; every hello is checked
    /// ([`check_hello`]: route and deployment `table`).
    pub fn connect(
        me: ProcessId,
        listener: &TcpListener,
        addrs: &[SocketAddr],
        hellos: &[Message],
        table: u64,
        timeout: Duration,
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
        let accept = std::thread::spawn(move || accept_all(&accepting, n, deadline, timeout));
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
/// `deadline`: a peer that never connects, or connects and says nothing, is an error when it
/// passes, not a wait without end. (The listener is non-blocking meanwhile: a clone shares its
/// socket, so the caller's copy is switched back before returning.)
fn accept_all(
    listener: &TcpListener,
    n: usize,
    deadline: Instant,
    timeout: Duration,
) -> std::io::Result<Vec<(Message, TcpStream)>> {
    listener.set_nonblocking(true)?;
    let mut got = Vec::with_capacity(n);
    let result = loop {
        if got.len() == n {
            break Ok(());
        }
        let (mut s, _) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    break Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "{} of {n} nodes connected within {timeout:?} (is every node of the cluster file started?)",
                            got.len()
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(e) => break Err(e),
        };
        match read_hello(&mut s, deadline.saturating_duration_since(Instant::now())) {
            Ok(hello) => got.push((hello, s)),
            Err(e) => break Err(e),
        }
    };
    listener.set_nonblocking(false)?;
    result.map(|()| got)
}

/// Reads an accepted stream's preamble and hello, waiting at most `left`.
fn read_hello(s: &mut TcpStream, left: Duration) -> std::io::Result<Message> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
    let mut p = [0u8; 8];
    s.read_exact(&mut p)?;
    check_preamble(&p).map_err(invalid)?;
    let hello = read_message(s)?;
    s.set_read_timeout(None)?;
    Ok(hello)
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
                    TcpControl::connect(me, &l, &addrs, &hellos, 42, Duration::from_secs(10))
                        .unwrap()
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
        let e = TcpControl::connect(ProcessId(0), &l, &addrs, &[h], 42, Duration::from_secs(5))
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
            ));
        });
        let got = rx
            .recv_timeout(timeout + Duration::from_secs(5))
            .expect("connect returned within its timeout and a margin");
        let e = got.expect_err("one of two nodes never connected");
        assert!(e.to_string().contains("1 of 2 nodes connected"), "{e}");
        assert!(began.elapsed() >= timeout);
        drop(silent);
    }
}
