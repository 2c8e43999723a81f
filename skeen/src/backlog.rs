//! Packets a full mesh refused, kept per peer and sent on later polls: the backpressure of
//! servers and clients alike (why never a drop, and why the backlog is bounded, is in
//! [`crate::server`]'s docs).

use std::collections::{BTreeMap, VecDeque};
use transport::mesh::{Mesh, MeshError};
use transport::{Nic, ProcessId};

/// Packets refused by a full mesh, per peer, sent again on later polls.
#[derive(Debug, Default)]
pub struct Backlog {
    waiting: BTreeMap<ProcessId, VecDeque<Vec<u8>>>,
    /// Packets waiting now, the most that ever waited at once, and how many ever waited.
    held: usize,
    peak: usize,
    deferred: u64,
}

impl Backlog {
    /// Sends `bytes` to `to`, or queues it behind what already waits for `to` (so a peer's
    /// packets keep their order) or when the mesh is full.
    pub(crate) fn send<N: Nic>(
        &mut self,
        mesh: &mut Mesh,
        nic: &mut N,
        to: ProcessId,
        bytes: Vec<u8>,
    ) {
        if let Some(q) = self.waiting.get_mut(&to) {
            q.push_back(bytes);
            self.hold();
            return;
        }
        match mesh.send(nic, to, &bytes) {
            Ok(_) => {}
            Err(MeshError::Full { .. }) => {
                self.waiting.entry(to).or_default().push_back(bytes);
                self.hold();
            }
            // Packets are built here to fit a slot (a multicast's payload was checked by its
            // client) and peers are mesh members: anything else is a bug.
            Err(e) => panic!("packet to {to} refused: {e}"),
        }
    }

    fn hold(&mut self) {
        self.held += 1;
        self.peak = self.peak.max(self.held);
        self.deferred += 1;
    }

    /// Sends what waits, peer by peer, until a peer's mesh is full again; returns whether a
    /// packet went.
    pub(crate) fn flush<N: Nic>(&mut self, mesh: &mut Mesh, nic: &mut N) -> bool {
        let mut moved = 0;
        self.waiting.retain(|&to, q| {
            while let Some(bytes) = q.front() {
                match mesh.send(nic, to, bytes) {
                    Ok(_) => {
                        q.pop_front();
                        moved += 1;
                    }
                    Err(MeshError::Full { .. }) => break,
                    Err(e) => panic!("packet to {to} refused: {e}"),
                }
            }
            !q.is_empty()
        });
        self.held -= moved;
        moved > 0
    }

    /// The start of every Skeen poll, a server's or a client's: completions drained, the mesh's
    /// outbox and then this backlog sent on as far as rings have room, and the mesh handed the
    /// runtime's change hint whole (nothing else in a Skeen process reads memory). Returns
    /// whether a packet went.
    ///
    /// Ring writes are unsignaled, so a completion reports a failed write, to a crashed peer:
    /// Skeen does not tolerate one (crate docs), and that peer's messages stay blocked.
    pub(crate) fn start_poll<N: Nic>(&mut self, mesh: &mut Mesh, nic: &mut N) -> bool {
        while nic.poll_completion().is_some() {}
        let mut worked = mesh.flush(nic).expect("own packets fit");
        worked |= self.flush(mesh, nic);
        mesh.observe_changes(nic);
        worked
    }

    /// Packets that ever waited (a measure of backpressure).
    pub fn deferred(&self) -> u64 {
        self.deferred
    }

    /// The most packets that ever waited at once (a client's at most its multicast's
    /// destination count, a server's at most `clients * groups`: see [`crate::server`]).
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Packets waiting now.
    pub fn held(&self) -> usize {
        debug_assert_eq!(
            self.held,
            self.waiting.values().map(VecDeque::len).sum::<usize>()
        );
        self.held
    }
}
