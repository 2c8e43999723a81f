//! Failure detection and its upcalls, as the module [`super`] describes them under
//! **Failures**: probing a silent peer a step waits on, probing the first relay of a group that
//! waits for its next message or whose application holds the last one (the period doubling
//! while it stays so), and telling every other member once a member is known failed.

use super::{Event, Group, RdmcNode};
use crate::wire::Ctl;
use transport::{Nanos, Nic, ProcessId};

/// An idle group's probe period grows up to this many probe intervals.
const IDLE_BACKOFF: u64 = 1024;

impl RdmcNode {
    /// Marks member `member` of group `gi` failed: upcall, tell the others.
    pub(super) fn fail<N: Nic>(&mut self, nic: &mut N, gi: usize, member: usize) {
        let g = &mut self.groups[gi];
        if g.failed {
            return;
        }
        g.failed = true;
        g.cur = None;
        g.queue.clear();
        let id = g.cfg.id;
        let others: Vec<ProcessId> = g
            .cfg
            .members
            .iter()
            .enumerate()
            .filter(|&(i, &p)| i != member && p != self.me)
            .map(|(_, &p)| p)
            .collect();
        self.events.push_back(Event::Failed { group: id, member });
        for p in others {
            if !self.dead.contains(&p) {
                self.send_ctl(
                    nic,
                    p,
                    Ctl::Failed {
                        group: id,
                        member: member as u32,
                    },
                );
            }
        }
    }

    /// `peer` failed: every group we share with it fails.
    pub(super) fn peer_failed<N: Nic>(&mut self, nic: &mut N, peer: ProcessId) {
        self.dead.insert(peer);
        for gi in 0..self.groups.len() {
            if let Some(m) = self.groups[gi].cfg.members.iter().position(|&p| p == peer) {
                self.fail(nic, gi, m);
            }
        }
    }

    /// Probes `peer` when this member has waited on it for a probe interval.
    pub(super) fn maybe_probe<N: Nic>(
        &mut self,
        nic: &mut N,
        gi: usize,
        peer: Option<usize>,
        now: Nanos,
    ) -> bool {
        let probe = self.probe;
        let g = &mut self.groups[gi];
        let (Some(c), Some(peer)) = (&mut g.cur, peer) else {
            return false;
        };
        if now < c.since.saturating_add(probe) || now < c.probed.saturating_add(probe) {
            return false;
        }
        c.probed = now;
        let to = g.cfg.members[peer];
        self.send_ctl(nic, to, Ctl::Probe);
        true
    }

    /// Whether group `g` waits for its next message: a receiver that said it is ready, or
    /// whose application holds the last one.
    pub(super) fn idle_waiting(g: &Group) -> bool {
        !g.failed && g.cur.is_none() && (g.asked_first || g.lent.is_some()) && g.me != 0
    }

    /// Probes the first relay of an idle group whose probe period passed, so a crash between
    /// messages (a root that dies with messages still queued) is detected too: the members
    /// next to the dead one fail, and their failure notices reach everyone. The period doubles
    /// while the group stays idle, up to [`IDLE_BACKOFF`] probe intervals, so an idle group
    /// costs little.
    pub(super) fn probe_idle<N: Nic>(&mut self, nic: &mut N, gi: usize) -> bool {
        let now = nic.now();
        let g = &mut self.groups[gi];
        if !Self::idle_waiting(g) || now < g.idle_probed.saturating_add(g.idle_period) {
            return false;
        }
        g.idle_probed = now;
        g.idle_period = Nanos(
            (g.idle_period.as_nanos() * 2).min(self.probe.as_nanos().saturating_mul(IDLE_BACKOFF)),
        );
        let relay = g.cfg.members[g.first_relay.expect("a receiver")];
        self.send_ctl(nic, relay, Ctl::Probe);
        true
    }

    /// When this member next needs to look at its timers.
    pub(super) fn next_deadline(&self) -> Option<Nanos> {
        let busy = self
            .groups
            .iter()
            .filter_map(|g| g.cur.as_ref())
            .map(|c| c.since.max(c.probed).saturating_add(self.probe));
        let idle = self
            .groups
            .iter()
            .filter(|g| Self::idle_waiting(g))
            .map(|g| g.idle_probed.saturating_add(g.idle_period));
        busy.chain(idle).min()
    }
}
