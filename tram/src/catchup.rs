//! A new leader's catch-up: Algorithm 4 (`group_catchup`) and Algorithm 5 (`tree_catchup`).
//!
//! Algorithm 4 walks the log from the first entry this replica has not delivered (every entry
//! below it is decided and in its own log). For each index it takes, among its own log and the
//! copies read from a quorum in Step 4.1, the entry with the highest timestamp (Step 4.2), and
//! if there is one re-replicates it under its own timestamp (4.3) through the same path as a new
//! entry ([`crate::ordering`]), then delivers it (4.4) and moves on (4.5). The first index no
//! copy holds ends the walk: it is the `FUO` the new leader orders new messages at.
//!
//! Algorithm 5 with finite buffers: `slot_in` already points past every decided message of each
//! source (delivering an entry advances it, Step 5.1), and `slot_out`/`credit` were carried by
//! the entries. The new leader then writes again, into each child's buffer, every message of its
//! log whose position there is at or above the child's credit (5.2-5.3): the old leader may have
//! died before forwarding it. Positions below the credit are decided at the child, and their
//! slots may hold later messages already, so they are never written again; the credit recorded
//! in each entry makes sure a new leader knows at least the credit the old one recycled with.

use crate::layout::{local, LOG};
use crate::replica::{scratch_slot, Role, TramServer};
use transport::Nic;

impl TramServer {
    /// Algorithm 4, one index: propose the highest-timestamp entry at `FUO`, or finish.
    pub(crate) fn recover_next<N: Nic>(&mut self, nic: &mut N) -> bool {
        let i = self.fuo;
        let Role::Leader(l) = &self.role else {
            return false;
        };
        let copies = l.catchup.clone().expect("catching up");
        let ts = l.ts;
        let mut best = None;
        let mut places = vec![local(LOG, self.layout.log_slot(i))];
        places.extend(copies.iter().map(|&r| scratch_slot(&self.layout, r, i)));
        for at in places {
            if self.lapped(nic, at, i) {
                // A replica holds a later lap of this slot: this one was evicted long ago and
                // cannot lead without the entries it missed.
                self.halted = true;
                return true;
            }
            // Step 4.2: the entry with the highest timestamp.
            if let Some(e) = self.slot_entry(nic, at, i) {
                if best
                    .as_ref()
                    .is_none_or(|b: &crate::layout::LogEntry| e.tmp > b.tmp)
                {
                    best = Some(e);
                }
            }
        }
        match best {
            Some(mut e) => {
                // Step 4.3: re-replicate it under this reign's timestamp.
                e.tmp = ts;
                self.propose(nic, e, true);
            }
            None => self.tree_catchup(nic),
        }
        true
    }

    /// Algorithm 5: re-forward what children may have missed; the reign then orders new
    /// messages.
    fn tree_catchup<N: Nic>(&mut self, nic: &mut N) {
        let slots = self.layout.log_slots();
        let first = self.fuo.saturating_sub(slots);
        for i in first..self.fuo {
            let Some(e) = self.own_entry(nic, i) else {
                continue;
            };
            for x in 0..self.children.len() {
                if e.outs[x].pos >= self.credit[x] {
                    self.forward(nic, &e, Some(x));
                }
            }
        }
        if let Role::Leader(l) = &mut self.role {
            l.catchup = None;
        }
    }
}
