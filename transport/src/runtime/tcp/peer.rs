//! A peer driven by hand: a blocking socket that speaks the wire format frame by frame, for
//! hostile-peer tests and probes. It does what a correct node never would (claims any id,
//! sends any request, stops reading, stalls mid-frame), so the node under test can be seen to
//! refuse it.

use super::auth::{self, Secret};
use super::wire::{self, Frame, Hello, WireOp, WireStatus};
use crate::process::ProcessId;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A raw connection to one node.
#[derive(Debug)]
pub struct RawPeer {
    /// The socket (set timeouts on it, write bytes by hand).
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl RawPeer {
    /// Connects to `addr`, reads time out after 5 s.
    pub fn connect(addr: SocketAddr) -> io::Result<RawPeer> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(RawPeer {
            stream,
            buf: Vec::new(),
        })
    }

    /// Sends one frame.
    pub fn send(&mut self, frame: &Frame<'_>) -> io::Result<()> {
        let mut out = Vec::new();
        wire::encode(frame, &mut out);
        self.stream.write_all(&out)
    }

    /// The next frame (its payload copied out), or `None` once the node closed the connection
    /// or the read timed out.
    pub fn next_frame(&mut self) -> Option<Frame<'static>> {
        loop {
            if let Some((f, used)) = wire::decode(&self.buf).ok()? {
                let owned: Frame<'static> = match f {
                    Frame::Hello(h) => Frame::Hello(h),
                    Frame::Welcome(w) => Frame::Welcome(w),
                    Frame::Proof(p) => Frame::Proof(p),
                    Frame::Response {
                        seq,
                        status,
                        value,
                        data,
                    } => Frame::Response {
                        seq,
                        status,
                        value,
                        data: Vec::leak(data.to_vec()),
                    },
                    // A node never sends requests on a connection it accepted.
                    Frame::Request { .. } => return None,
                };
                self.buf.drain(..used);
                return Some(owned);
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The preamble both ways, then a hello as `from` to `to` on queue pair `qp` declaring
    /// `regions` for a run whose region table digest is `table`, and a proof under `secret`.
    /// Returns the node's welcome (or whatever it sent instead).
    #[allow(
        clippy::too_many_arguments,
        reason = "a hello's fields, each named at the call"
    )]
    pub fn handshake(
        &mut self,
        from: ProcessId,
        to: ProcessId,
        qp: u8,
        regions: Vec<u64>,
        table: u64,
        secret: &Secret,
    ) -> io::Result<Option<Frame<'static>>> {
        self.stream.write_all(&wire::preamble())?;
        let mut pre = [0u8; wire::PREAMBLE_LEN];
        self.stream.read_exact(&mut pre)?;
        wire::check_preamble(&pre).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let hello = Hello {
            from,
            to,
            qp,
            regions,
            table,
            nonce: auth::nonce(),
        };
        self.send(&Frame::Hello(hello.clone()))?;
        let welcome = self.next_frame();
        if let Some(Frame::Welcome(w)) = &welcome {
            self.send(&Frame::Proof(auth::proof_tag(secret, &hello, w)))?;
        }
        Ok(welcome)
    }

    /// Sends request `seq` and waits for its response's status (`None`: the node closed the
    /// connection instead).
    pub fn request(&mut self, seq: u64, op: WireOp<'_>) -> Option<WireStatus> {
        self.send(&Frame::Request { seq, op }).ok()?;
        match self.next_frame()? {
            Frame::Response { seq: s, status, .. } if s == seq => Some(status),
            _ => None,
        }
    }
}
