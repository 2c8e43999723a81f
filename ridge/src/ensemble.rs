//! Algorithm 3, Task 2: an ensemble's coordinator between its proposers and Paxos. It proposes
//! each message it receives in the next instance, and, when no message came for `delta`, a null
//! message with a fresh timestamp (lines 14-19), so that learners merging this ensemble with
//! busier ones are never held back by it for more than about `delta`.

use crate::clock::Stamper;
use crate::mapping::EnsembleId;
use crate::value::Value;
use multicast::MsgId;
use transport::Nanos;

/// Where a null message's sequence number holds its ensemble: bits 48 to 62 (ensembles number
/// at most 65, and bit 63 is [`crate::paxos::GAP_FILLER`]'s), the count of nulls below.
pub const NULL_ENSEMBLE_SHIFT: u32 = 48;

/// The coordinator's Delta timer and its null messages.
#[derive(Clone, Debug)]
pub struct NullTimer {
    delta: Nanos,
    deadline: Nanos,
    /// This coordinator's process id, the `client` of its null messages' ids.
    me: u32,
    /// The ensemble coordinated, in its null messages' sequence numbers: a process that
    /// coordinates two ensembles (group 0's rank 0 coordinates `e_0` and `e_all`) would
    /// otherwise give two different null messages one id.
    ensemble: u64,
    /// Null messages made so far (their sequence numbers).
    nulls: u64,
}

impl NullTimer {
    /// A timer of period `delta` for coordinator `me` of ensemble `e`, set at `now` (line 8).
    pub fn new(me: u32, e: EnsembleId, delta: Nanos, now: Nanos) -> NullTimer {
        NullTimer {
            delta,
            deadline: now.saturating_add(delta),
            me,
            ensemble: u64::from(e.0) << NULL_ENSEMBLE_SHIFT,
            nulls: 0,
        }
    }

    /// When a null message is due if nothing is proposed before.
    pub fn deadline(&self) -> Nanos {
        self.deadline
    }

    /// A message was proposed at `now` (lines 12-13: stop the timer, set it again).
    pub fn proposed(&mut self, now: Nanos) {
        self.deadline = now.saturating_add(self.delta);
    }

    /// The null message to propose at `now`, if the timer expired (lines 14-19); re-arms it.
    pub fn due(&mut self, now: Nanos, stamper: &mut Stamper) -> Option<Value> {
        if now < self.deadline {
            return None;
        }
        let id = MsgId {
            client: self.me,
            seq: self.ensemble | self.nulls,
        };
        self.nulls += 1;
        self.deadline = now.saturating_add(self.delta);
        Some(Value::null(id, stamper.stamp(now)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;

    #[test]
    fn an_idle_coordinator_proposes_a_null_every_delta_and_a_proposal_resets_the_timer() {
        let us = |x: u64| Nanos(x * 1_000);
        let mut stamper = Stamper::new(0, Clock::EXACT);
        let mut t = NullTimer::new(0, EnsembleId(0), us(1_000), Nanos::ZERO);
        assert!(t.due(us(999), &mut stamper).is_none());
        let a = t.due(us(1_000), &mut stamper).expect("due");
        assert!(a.is_null());
        assert_eq!(t.deadline(), us(2_000));
        t.proposed(us(1_500));
        assert!(
            t.due(us(2_000), &mut stamper).is_none(),
            "a proposal restarted it"
        );
        let b = t.due(us(2_500), &mut stamper).expect("due");
        assert!(b.ts > a.ts && b.id != a.id);
    }

    /// Pins R1 (review): ids named one content only per ensemble. Null ids were the
    /// coordinator's process and a per-timer count, so p0, coordinating `e_0` and `e_all`,
    /// gave its first null message of each the same id with different timestamps, and a
    /// learner paired a DECISION of one with its copy of the other (seen in Phase 2).
    #[test]
    fn null_ids_of_two_ensembles_never_collide() {
        let mut stamper = Stamper::new(0, Clock::EXACT);
        let delta = Nanos(1_000);
        let mut own = NullTimer::new(0, EnsembleId(0), delta, Nanos::ZERO);
        let mut all = NullTimer::new(0, EnsembleId(2), delta, Nanos::ZERO);
        let mut ids = std::collections::BTreeSet::new();
        for i in 1..=3 {
            for t in [&mut own, &mut all] {
                let null = t.due(Nanos(i * 1_000), &mut stamper).expect("due");
                assert!(ids.insert(null.id), "{} issued twice", null.id);
                assert!(null.id.seq < crate::paxos::GAP_FILLER);
            }
        }
    }
}
