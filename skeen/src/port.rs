//! A Skeen process's end of the mesh, the same for servers and clients: packets go out through
//! the [`Backlog`] (never dropped), come in decoded, and every poll starts the same way.

use crate::backlog::Backlog;
use crate::wire::{Packet, WireError};
use transport::mesh::Mesh;
use transport::{Nic, ProcessId, Work};

/// The mesh, the packets it refused, and the buffer incoming packets are read into.
#[derive(Debug)]
pub(crate) struct Port {
    mesh: Mesh,
    backlog: Backlog,
    buf: Vec<u8>,
}

impl Port {
    /// A port on `mesh`, nothing waiting.
    pub(crate) fn new(mesh: Mesh) -> Port {
        Port {
            mesh,
            backlog: Backlog::default(),
            buf: Vec::new(),
        }
    }

    /// The start of every poll ([`Backlog::start_poll`]); returns whether a packet went.
    pub(crate) fn start_poll<N: Nic>(&mut self, nic: &mut N) -> bool {
        self.backlog.start_poll(&mut self.mesh, nic)
    }

    /// Sends `bytes` to `to`, or keeps them until the mesh has room ([`Backlog::send`]).
    pub(crate) fn send<N: Nic>(&mut self, nic: &mut N, to: ProcessId, bytes: Vec<u8>) {
        self.backlog.send(&mut self.mesh, nic, to, bytes);
    }

    /// The next packet in this process's rings and its sender, decoded (the decoding priced
    /// as one [`Work::Decode`]); `None` once the rings are empty.
    pub(crate) fn recv<N: Nic>(
        &mut self,
        nic: &mut N,
    ) -> Option<(ProcessId, Result<Packet, WireError>)> {
        let from = self.mesh.recv(nic, &mut self.buf).expect("ring reads")?;
        nic.work(Work::Decode, 1);
        Some((from, Packet::decode(&self.buf)))
    }

    /// The packets refused by a full mesh, waiting or ever waited.
    pub(crate) fn backlog(&self) -> &Backlog {
        &self.backlog
    }
}
