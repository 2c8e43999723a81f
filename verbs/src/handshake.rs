//! Re-establishing the queue pairs between two nodes after an error: who resets, who connects
//! to what, and when a process's `Reconnect` completes.
//!
//! An RC queue pair's packet sequence numbers cannot be re-synchronised from one end, so a
//! reconnect resets the queue pairs at both ends, each with fresh sequence numbers (a new
//! *incarnation* of its endpoint), and each end connects to the other's new endpoint. The two
//! ends exchange [`crate::bootstrap::Message::Reconnect`] and
//! [`crate::bootstrap::Message::Accepted`], in order per direction (one mailbox or one TCP
//! stream per pair), and either end may start at any time, both at once included.
//!
//! [`Handshake`] is one end's state for one peer, as a sans-IO state machine: each event
//! returns the [`Action`]s the runtime performs, in order. The rules that keep both ends
//! consistent: an end resets only when it starts a reconnect or answers one while not waiting;
//! an end that is waiting answers the peer's `Reconnect` without resetting again (its new
//! endpoint is already on its way); an `Accepted` counts only if it answers this end's current
//! incarnation (it names the incarnation it connected to) and the end still waits; any other is
//! stale and ignored. The property test drives two ends through random interleavings and checks
//! that, once nothing is in flight, each end is connected to the other's latest endpoint (it
//! found the stale-`Accepted` case: an answer to an earlier incarnation connected an end to an
//! endpoint its peer had already reset).

use transport::{Status, WrId};

/// What the runtime does for one event, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Reset this end's queue pairs to the peer (failing what was outstanding) and bring them
    /// to INIT with fresh sequence numbers: a new incarnation of this end's endpoint.
    Reset,
    /// Connect this end's queue pairs to the endpoint the peer sent with the message being
    /// handled.
    Connect,
    /// Send the peer a `Reconnect` with this end's current endpoint.
    SendReconnect,
    /// Send the peer an `Accepted` with this end's current endpoint.
    SendAccepted,
    /// Complete these `Reconnect` ops of the process with this status.
    Complete(Vec<WrId>, Status),
}

/// One end's reconnect state towards one peer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Handshake {
    /// Reset and waiting for the peer's endpoint, with the process's ops to complete then.
    waiting: Option<Vec<WrId>>,
}

impl Handshake {
    /// Whether this end reset its queue pairs and waits for the peer's endpoint.
    pub fn waiting(&self) -> bool {
        self.waiting.is_some()
    }

    /// The process asks to reconnect (`wr`: its op, `None` when the runtime itself needs it);
    /// `up`: whether this end's queue pairs to the peer are ready to send.
    pub fn reconnect(&mut self, wr: Option<WrId>, up: bool) -> Vec<Action> {
        match &mut self.waiting {
            // One handshake at a time: this op ends with the one under way.
            Some(wrs) => {
                wrs.extend(wr);
                Vec::new()
            }
            // The peer's reconnect re-established the pair already.
            None if up => match wr {
                Some(wr) => vec![Action::Complete(vec![wr], Status::Success)],
                None => Vec::new(),
            },
            None => {
                self.waiting = Some(wr.into_iter().collect());
                vec![Action::Reset, Action::SendReconnect]
            }
        }
    }

    /// The peer's `Reconnect` arrived (its endpoint is a fresh incarnation).
    pub fn on_reconnect(&mut self) -> Vec<Action> {
        match self.waiting.take() {
            None => vec![Action::Reset, Action::Connect, Action::SendAccepted],
            Some(wrs) => {
                let mut a = vec![Action::Connect, Action::SendAccepted];
                if !wrs.is_empty() {
                    a.push(Action::Complete(wrs, Status::Success));
                }
                a
            }
        }
    }

    /// The peer's `Accepted` arrived; `current`: it answers this end's current incarnation.
    pub fn on_accepted(&mut self, current: bool) -> Vec<Action> {
        match self.waiting.take() {
            // Stale: both ends started at once and the peer's `Reconnect` connected this end,
            // or it answers an incarnation this end has reset since.
            None => Vec::new(),
            Some(wrs) if !current => {
                self.waiting = Some(wrs);
                Vec::new()
            }
            Some(wrs) => {
                let mut a = vec![Action::Connect];
                if !wrs.is_empty() {
                    a.push(Action::Complete(wrs, Status::Success));
                }
                a
            }
        }
    }

    /// The peer is gone: the ops waiting end unreachable.
    pub fn peer_gone(&mut self) -> Vec<Action> {
        match self.waiting.take() {
            Some(wrs) if !wrs.is_empty() => vec![Action::Complete(wrs, Status::PeerUnreachable)],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[test]
    fn one_end_reconnects_and_the_other_answers() {
        let (mut a, mut b) = (Handshake::default(), Handshake::default());
        assert_eq!(
            a.reconnect(Some(WrId(1)), false),
            vec![Action::Reset, Action::SendReconnect]
        );
        assert!(a.waiting());
        assert_eq!(
            b.on_reconnect(),
            vec![Action::Reset, Action::Connect, Action::SendAccepted]
        );
        assert_eq!(
            a.on_accepted(false),
            vec![],
            "an answer to an older incarnation"
        );
        assert!(a.waiting());
        assert_eq!(
            a.on_accepted(true),
            vec![
                Action::Connect,
                Action::Complete(vec![WrId(1)], Status::Success)
            ]
        );
        // The peer was re-established by that: its own reconnect completes at once.
        assert_eq!(
            b.reconnect(Some(WrId(9)), true),
            vec![Action::Complete(vec![WrId(9)], Status::Success)]
        );
    }

    #[test]
    fn a_second_reconnect_waits_for_the_first_and_a_gone_peer_ends_both() {
        let mut a = Handshake::default();
        a.reconnect(Some(WrId(1)), false);
        assert_eq!(a.reconnect(Some(WrId(2)), false), vec![]);
        assert_eq!(
            a.peer_gone(),
            vec![Action::Complete(
                vec![WrId(1), WrId(2)],
                Status::PeerUnreachable
            )]
        );
        assert!(!a.waiting());
    }

    /// One end of a simulated pair: its endpoint's incarnation, what it is connected to, and
    /// whether its queue pairs are up.
    #[derive(Default)]
    struct End {
        hs: Handshake,
        incarnation: u32,
        connected_to: Option<u32>,
        up: bool,
        completed: Vec<(WrId, Status)>,
    }

    #[derive(Clone, Copy, Debug)]
    enum Msg {
        /// The sender's incarnation.
        Reconnect(u32),
        /// The sender's incarnation, and the receiver's it connected to.
        Accepted(u32, u32),
    }

    impl End {
        /// Performs `actions`; `their` is the incarnation the handled message carried.
        fn perform(&mut self, actions: Vec<Action>, their: Option<u32>, out: &mut VecDeque<Msg>) {
            for a in actions {
                match a {
                    Action::Reset => {
                        self.incarnation += 1;
                        self.up = false;
                        self.connected_to = None;
                    }
                    Action::Connect => {
                        self.connected_to = their;
                        self.up = true;
                    }
                    Action::SendReconnect => out.push_back(Msg::Reconnect(self.incarnation)),
                    Action::SendAccepted => out.push_back(Msg::Accepted(
                        self.incarnation,
                        self.connected_to.expect("answers after connecting"),
                    )),
                    Action::Complete(wrs, s) => {
                        self.completed.extend(wrs.into_iter().map(|w| (w, s)))
                    }
                }
            }
        }

        fn deliver(&mut self, m: Msg, out: &mut VecDeque<Msg>) {
            match m {
                Msg::Reconnect(i) => {
                    let a = self.hs.on_reconnect();
                    self.perform(a, Some(i), out)
                }
                Msg::Accepted(i, answers) => {
                    let a = self.hs.on_accepted(answers == self.incarnation);
                    self.perform(a, Some(i), out)
                }
            }
        }
    }

    proptest! {
        /// Whatever the interleaving of breaks, reconnects and deliveries, once nothing is in
        /// flight both ends are up, each connected to the other's latest endpoint, and every
        /// reconnect op completed successfully exactly once.
        #[test]
        fn both_ends_always_meet_at_each_others_latest_endpoint(
            steps in proptest::collection::vec(0u8..6, 1..60),
        ) {
            let mut ends = [End::default(), End::default()];
            for e in &mut ends {
                e.up = true;
                e.connected_to = Some(0);
            }
            // Messages in flight towards end 0 and towards end 1, each in order.
            let mut wires: [VecDeque<Msg>; 2] = Default::default();
            let mut next_wr = 0u64;
            let mut issued = 0usize;
            for s in steps {
                let (me, other) = ((s % 2) as usize, 1 - (s % 2) as usize);
                match s / 2 {
                    // This end's pair breaks and its process reconnects.
                    0 => {
                        ends[me].up = false;
                        next_wr += 1;
                        issued += 1;
                        let a = ends[me].hs.reconnect(Some(WrId(next_wr)), false);
                        let mut out = VecDeque::new();
                        ends[me].perform(a, None, &mut out);
                        wires[other].extend(out);
                    }
                    // The process reconnects while its pair may be up.
                    1 => {
                        next_wr += 1;
                        issued += 1;
                        let up = ends[me].up;
                        let a = ends[me].hs.reconnect(Some(WrId(next_wr)), up);
                        let mut out = VecDeque::new();
                        ends[me].perform(a, None, &mut out);
                        wires[other].extend(out);
                    }
                    // One message towards this end is delivered.
                    _ => {
                        if let Some(m) = wires[me].pop_front() {
                            let mut out = VecDeque::new();
                            ends[me].deliver(m, &mut out);
                            wires[other].extend(out);
                        }
                    }
                }
            }
            // Drain everything in flight.
            while !(wires[0].is_empty() && wires[1].is_empty()) {
                for me in 0..2 {
                    if let Some(m) = wires[me].pop_front() {
                        let mut out = VecDeque::new();
                        ends[me].deliver(m, &mut out);
                        wires[1 - me].extend(out);
                    }
                }
            }
            for me in 0..2 {
                let other = 1 - me;
                prop_assert!(!ends[me].hs.waiting(), "end {} still waiting", me);
                prop_assert!(ends[me].up, "end {} not up", me);
                prop_assert_eq!(ends[me].connected_to, Some(ends[other].incarnation),
                    "end {} connected to a stale incarnation", me);
            }
            let mut done: Vec<WrId> = ends.iter().flat_map(|e| e.completed.iter().map(|c| c.0)).collect();
            prop_assert!(ends.iter().all(|e| e.completed.iter().all(|c| c.1 == Status::Success)));
            done.sort();
            done.dedup();
            prop_assert_eq!(done.len(), issued, "a reconnect op completed twice or never");
        }
    }
}
