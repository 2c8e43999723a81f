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
use transport::slot::Reject;
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
                self.halt = Some(format!(
                    "recovering as leader, it found a later lap in a log (its own or a copy) where entry {i} was due: it was evicted long ago and cannot lead without what it missed"
                ));
                return true;
            }
            // Step 4.2: the entry with the highest timestamp.
            match self.slot_entry(nic, at, i) {
                Ok(e) => {
                    if best
                        .as_ref()
                        .is_none_or(|b: &crate::layout::LogEntry| e.tmp > b.tmp)
                    {
                        best = Some(e);
                    }
                }
                Err(Reject::NotYet) => {}
                Err(Reject::Torn) => {
                    // The copy caught entry i being rewritten: the replica granted a higher
                    // timestamp whose leader writes its log, so this copy no longer tells what
                    // it held when it granted this reign, and this reign can no longer write
                    // that log either. Reading it as empty could lose a decided entry.
                    self.give_up(nic.now(), true);
                    return true;
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

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::layout::{Hm, LogEntry, Out};
    use crate::ordering::Lead;
    use crate::replica::{scratch_slot, Role, TramServer};
    use multicast::{DestSet, GroupId, Membership, Tree};
    use std::sync::Arc;
    use transport::recording::RecordingNic;
    use transport::slot::Reject;
    use transport::{LocalAddr, Nanos, Nic, Process};

    /// A new leader whose Step 4.1 copy of replica 1's log caught entry 0 half rewritten (by a
    /// leader replica 1 granted after this one) does not take index 0 for empty: that could
    /// drop a decided entry. It gives its reign up.
    #[test]
    fn a_torn_copy_of_a_log_ends_the_reign() {
        let cfg = Arc::new(Config::new(Tree::preset("simple").unwrap(), 3, 1));
        let g = GroupId(0);
        let me = cfg.server(g, 0);
        let specs: Vec<_> = (0..cfg.group_count())
            .flat_map(|g| (0..cfg.replicas).map(move |r| (g, r)))
            .map(|(g, r)| {
                Process::<RecordingNic>::regions(&TramServer::new(cfg.clone(), GroupId(g as u8), r))
            })
            .chain(
                (0..cfg.clients).map(|i| {
                    Process::<RecordingNic>::regions(&crate::TramClient::new(cfg.clone(), i))
                }),
            )
            .collect();
        let mut nic = RecordingNic::new(me, specs, 1);
        let mut s = TramServer::new(cfg.clone(), g, 0);

        let entry = |tmp: u64, val: &[u8]| {
            let mut hm = Vec::new();
            Hm {
                client: 0,
                seq: 0,
                dst: DestSet::of([g]).unwrap(),
                val,
            }
            .encode(&mut hm);
            let e = LogEntry {
                tmp,
                source: 0,
                src_pos: 0,
                outs: vec![Out::default(); s.children.len()],
                hm,
            };
            let (mut payload, mut slot) = (Vec::new(), Vec::new());
            e.encode(&mut payload);
            s.layout.log_codec.encode(0, &payload, &mut slot).unwrap();
            slot
        };
        let (old, new) = (entry(0x100, b"decided"), entry(0x302, b"another"));
        // Every word of the new entry but the one holding the payload's end has landed.
        let mut torn = new.clone();
        let w = old.len() - 16;
        torn[w..w + 8].copy_from_slice(&old[w..w + 8]);
        let at = scratch_slot(&s.layout, 1, 0);
        nic.memory_mut().write(at, &torn).unwrap();
        assert_eq!(s.slot_entry(&nic, at, 0), Err(Reject::Torn));
        // A slot never written is empty, not a torn entry 0 (every reign starts at index 0).
        let never = scratch_slot(&s.layout, 2, 0);
        assert_eq!(s.slot_entry(&nic, never, 0), Err(Reject::NotYet));

        let ts = 0x201;
        s.tmp = ts;
        let answers = [Some((true, 0)), Some((true, 0)), None];
        let lead = Lead::new(&mut s, ts, &answers, vec![1], Nanos::ZERO);
        s.role = Role::Leader(Box::new(lead));
        s.recover_next(&mut nic);
        assert!(!s.is_leader(), "the reign went on as if index 0 were empty");
        let own = LocalAddr::new(crate::layout::LOG, s.layout.log_slot(0));
        assert_eq!(
            nic.load_u64(own).unwrap(),
            0,
            "nothing was proposed at index 0"
        );
    }
}
