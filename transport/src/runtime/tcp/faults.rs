//! The userspace network fault layer: delays, losses and partitions between nodes, injected
//! where a node's NIC thread writes to a connection (this kernel has network namespaces but no
//! netem, and the layer works the same on any host).
//!
//! RDMA's reliable connections never lose a message the application sees: a lost packet is
//! retransmitted, and everything behind it on the queue pair waits. So every effect here
//! delays bytes, in order: a [`LinkEffect::Delay`] holds what a node sends to a peer for a
//! while, a [`LinkEffect::Loss`] holds a send one retransmission timeout
//! ([`RETRANSMIT`]) with some probability, and a [`LinkEffect::Partition`] holds everything
//! until the partition heals (the NIC retransmitting all along; the retry budget of real NICs,
//! after which the queue pair breaks, is not modelled). Protocols see what they would see on
//! a fabric: late completions, silent peers, false suspicions.
//!
//! Bytes are stamped when the NIC thread finds them queued (once per pass of its event loop),
//! so the frames one pass queued to a peer travel together.

use crate::{ProcessId, Rng};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How late a lost send arrives: one retransmission timeout.
pub const RETRANSMIT: Duration = Duration::from_millis(1);

/// What a [`LinkFault`] does to the bytes it covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinkEffect {
    /// Every send arrives this much later.
    Delay(Duration),
    /// Each send is lost with this probability and arrives [`RETRANSMIT`] later.
    Loss(f64),
    /// Nothing arrives before the fault ends.
    Partition,
}

/// A fault on the links from some nodes to others, during `[at, at + span)` of the nodes' clock
/// (from time zero, [`super::TcpConfig::start_at`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LinkFault {
    /// When it starts.
    pub at: Duration,
    /// How long it lasts.
    pub span: Duration,
    /// The senders it covers.
    pub from: Vec<ProcessId>,
    /// The receivers it covers.
    pub to: Vec<ProcessId>,
    /// What it does.
    pub effect: LinkEffect,
}

impl LinkFault {
    fn covers(&self, from: ProcessId, to: ProcessId, t: Duration) -> bool {
        self.from.contains(&from)
            && self.to.contains(&to)
            && t >= self.at
            && t < self.at + self.span
    }
}

/// Holds a connection's outgoing bytes as the faults say, in order.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// Bytes queued so far (an absolute count, not an offset into the buffer).
    stamped: u64,
    /// Bytes free to go.
    free: u64,
    /// Queued bytes still held: (when they may go, the count they end at), in order.
    until: VecDeque<(Instant, u64)>,
}

impl Held {
    /// With `queued` bytes queued in all (an absolute count), how many may have been written
    /// by `now`: new bytes from `from` to `to` are stamped with what `faults` do at the nodes'
    /// clock `t`, and never go before bytes queued earlier.
    #[allow(
        clippy::too_many_arguments,
        reason = "one stamping's inputs, named at the call"
    )]
    pub(super) fn releasable(
        &mut self,
        queued: u64,
        faults: &[LinkFault],
        from: ProcessId,
        to: Option<ProcessId>,
        now: Instant,
        t: Option<Duration>,
        rng: &mut Rng,
    ) -> u64 {
        if queued > self.stamped {
            let mut go = now;
            if let (Some(to), Some(t)) = (to, t) {
                for f in faults.iter().filter(|f| f.covers(from, to, t)) {
                    let hold = match f.effect {
                        LinkEffect::Delay(d) => d,
                        LinkEffect::Loss(p) if rng.chance(p) => RETRANSMIT,
                        LinkEffect::Loss(_) => Duration::ZERO,
                        LinkEffect::Partition => f.at + f.span - t,
                    };
                    go = go.max(now + hold);
                }
            }
            if let Some(&(last, _)) = self.until.back() {
                go = go.max(last);
            }
            self.until.push_back((go, queued));
            self.stamped = queued;
        }
        while let Some(&(go, end)) = self.until.front() {
            if go > now {
                break;
            }
            self.free = end;
            self.until.pop_front();
        }
        self.free
    }

    /// When the next held bytes may go.
    pub(super) fn next_release(&self) -> Option<Instant> {
        self.until.front().map(|&(go, _)| go)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Purpose;

    fn fault(effect: LinkEffect) -> LinkFault {
        LinkFault {
            at: Duration::from_millis(10),
            span: Duration::from_millis(20),
            from: vec![ProcessId(0)],
            to: vec![ProcessId(1)],
            effect,
        }
    }

    #[test]
    fn held_bytes_go_late_and_in_order() {
        let mut rng = Rng::derive(1, Purpose::Faults, 0);
        let now = Instant::now();
        let ms = Duration::from_millis;
        let (p0, p1) = (ProcessId(0), Some(ProcessId(1)));
        let faults = [fault(LinkEffect::Delay(ms(5)))];
        let mut h = Held::default();
        // Before the fault: free at once.
        assert_eq!(
            h.releasable(100, &faults, p0, p1, now, Some(ms(1)), &mut rng),
            100
        );
        // During it: held 5 ms.
        assert_eq!(
            h.releasable(150, &faults, p0, p1, now, Some(ms(12)), &mut rng),
            100
        );
        assert_eq!(h.next_release(), Some(now + ms(5)));
        // Other directions are not covered, but wait behind the held bytes (one connection).
        assert_eq!(
            h.releasable(
                170,
                &faults,
                ProcessId(1),
                Some(ProcessId(0)),
                now,
                Some(ms(12)),
                &mut rng
            ),
            100
        );
        assert_eq!(
            h.releasable(170, &faults, p0, p1, now + ms(5), Some(ms(17)), &mut rng),
            170
        );
        // A partition holds until it heals.
        let cut = [fault(LinkEffect::Partition)];
        let mut h = Held::default();
        assert_eq!(
            h.releasable(10, &cut, p0, p1, now, Some(ms(15)), &mut rng),
            0
        );
        assert_eq!(h.next_release(), Some(now + ms(15)));
        // An unknown peer (a handshake not yet done) or no clock yet: nothing applies.
        let mut h = Held::default();
        assert_eq!(
            h.releasable(10, &cut, p0, None, now, Some(ms(15)), &mut rng),
            10
        );
        assert_eq!(h.releasable(20, &cut, p0, p1, now, None, &mut rng), 20);
    }

    #[test]
    fn losses_hold_about_their_share_of_sends_one_retransmission_timeout() {
        let mut rng = Rng::derive(2, Purpose::Faults, 0);
        let now = Instant::now();
        let faults = [fault(LinkEffect::Loss(0.25))];
        let mut held = 0;
        for i in 1..=1000u64 {
            let mut h = Held::default();
            let t = Some(Duration::from_millis(15));
            if h.releasable(
                i,
                &faults,
                ProcessId(0),
                Some(ProcessId(1)),
                now,
                t,
                &mut rng,
            ) == 0
            {
                assert_eq!(h.next_release(), Some(now + RETRANSMIT));
                held += 1;
            }
        }
        assert!((200..300).contains(&held), "{held} of 1000 lost");
    }
}
