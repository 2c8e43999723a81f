//! Section 4.4's failure detection: a process suspects a peer it has heard nothing from for a
//! while. Any packet counts as a sign of life, and a process that sent a peer nothing for a
//! heartbeat period sends it a heartbeat, so under load the detector costs no extra message.
//!
//! Who watches whom: each process watches the acceptors and learners of every ensemble it is
//! an acceptor or learner of (a coordinator its quorum, the last acceptor its distributors,
//! learners the acceptors they fill gaps from). Who coordinates is not this detector's call:
//! the acceptors' [`multicast::Omega`] watches signs that a process *leads* (see
//! [`crate::server`]), since a live process that stopped coordinating must not be trusted.

use transport::{Nanos, ProcessId};

/// One process's view of its peers' liveness.
#[derive(Clone, Debug)]
pub struct Detector {
    /// The processes watched and sent heartbeats to.
    peers: Vec<ProcessId>,
    /// Per process id: when the last packet from it came.
    heard_at: Vec<Nanos>,
    /// Per process id: when this process last sent it something.
    sent_at: Vec<Nanos>,
    heartbeat: Nanos,
    suspect: Nanos,
}

impl Detector {
    /// A detector over `processes` ids watching `peers`, with a heartbeat every `heartbeat`
    /// and suspicion after `suspect` of silence; everyone counts as heard at time zero.
    pub fn new(
        processes: usize,
        peers: Vec<ProcessId>,
        heartbeat: Nanos,
        suspect: Nanos,
    ) -> Detector {
        Detector {
            peers,
            heard_at: vec![Nanos::ZERO; processes],
            sent_at: vec![Nanos::ZERO; processes],
            heartbeat,
            suspect,
        }
    }

    /// A packet from `p` arrived at `now`.
    pub fn heard(&mut self, p: ProcessId, now: Nanos) {
        if let Some(i) = self.index(p) {
            self.heard_at[i] = now;
        }
    }

    /// A packet went to `p` at `now`.
    pub fn sent(&mut self, p: ProcessId, now: Nanos) {
        if let Some(i) = self.index(p) {
            self.sent_at[i] = now;
        }
    }

    /// Whether `p` has been silent for longer than the suspicion timeout at `now`.
    pub fn suspects(&self, p: ProcessId, now: Nanos) -> bool {
        self.index(p)
            .is_some_and(|i| now.saturating_sub(self.heard_at[i]) > self.suspect)
    }

    /// Whether `p` is watched (a peer): only a peer's silence says anything, since only peers
    /// are sent heartbeats.
    pub fn watches(&self, p: ProcessId) -> bool {
        self.peers.contains(&p)
    }

    /// The peers owed a heartbeat at `now` (sent nothing for a heartbeat period).
    pub fn due(&self, now: Nanos) -> Vec<ProcessId> {
        self.peers
            .iter()
            .copied()
            .filter(|&p| self.sent_at[p.0 as usize].saturating_add(self.heartbeat) <= now)
            .collect()
    }

    /// When the next heartbeat is due if nothing is sent before.
    pub fn deadline(&self) -> Option<Nanos> {
        self.peers
            .iter()
            .map(|p| self.sent_at[p.0 as usize].saturating_add(self.heartbeat))
            .min()
    }

    /// The suspicion timeout.
    pub fn timeout(&self) -> Nanos {
        self.suspect
    }

    fn index(&self, p: ProcessId) -> Option<usize> {
        let i = p.0 as usize;
        (i < self.heard_at.len()).then_some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_past_the_timeout_is_suspected_and_idle_links_owe_heartbeats() {
        let us = |x: u64| Nanos(x * 1000);
        let mut d = Detector::new(3, vec![ProcessId(1), ProcessId(2)], us(10), us(100));
        assert!(!d.suspects(ProcessId(1), us(100)));
        assert!(d.suspects(ProcessId(1), us(101)));
        d.heard(ProcessId(1), us(90));
        assert!(!d.suspects(ProcessId(1), us(150)) && d.suspects(ProcessId(2), us(150)));
        d.sent(ProcessId(1), us(5));
        assert_eq!(d.due(us(10)), vec![ProcessId(2)]);
        assert_eq!(d.deadline(), Some(us(10)));
        assert_eq!(d.due(us(15)).len(), 2);
        assert!(d.watches(ProcessId(1)) && !d.watches(ProcessId(0)));
    }
}
