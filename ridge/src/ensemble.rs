//! Algorithm 3, Task 2: an ensemble's coordinator between its proposers and Paxos. It proposes
//! each message it receives in the next instance, and, when no message came for `delta`, a null
//! message with a fresh timestamp (lines 14-19), so that learners merging this ensemble with
//! busier ones are never held back by it for more than about `delta`.

use crate::clock::Stamper;
use crate::value::Value;
use multicast::MsgId;
use transport::Nanos;

/// The coordinator's Delta timer and its null messages.
#[derive(Clone, Debug)]
pub struct NullTimer {
    delta: Nanos,
    deadline: Nanos,
    /// This coordinator's process id, the id of its null messages.
    me: u32,
    /// Null messages made so far (their sequence numbers).
    nulls: u64,
}

impl NullTimer {
    /// A timer of period `delta` for coordinator `me`, set at `now` (line 8).
    pub fn new(me: u32, delta: Nanos, now: Nanos) -> NullTimer {
        NullTimer {
            delta,
            deadline: now.saturating_add(delta),
            me,
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
            seq: self.nulls,
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
        let mut t = NullTimer::new(0, us(1_000), Nanos::ZERO);
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
}
