//! The leader oracle Ω both RamCast (Algorithm 3, "failure detector") and TRAM (Step 2.1,
//! "oracle") use: a sticky next-rank oracle over heartbeat words.
//!
//! A group's leader writes an increasing counter into its followers' memory on a timer. Every
//! member expects one rank to lead. A member that sees the expected leader's counter stand still
//! for a suspicion timeout expects the next rank from then on (ranks in a ring, so the oracle
//! never goes back to a rank it gave up until it has tried every other); a member that expects
//! itself runs for leadership. The oracle reads memory only through the heartbeat words its
//! owner hands it, so it is the same on every runtime.

use transport::Nanos;

/// One member's oracle: the rank it expects to lead, that rank's last heartbeat, and since when
/// that heartbeat stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Omega {
    replicas: usize,
    expected: usize,
    last: u64,
    since: Nanos,
}

impl Omega {
    /// An oracle of a group of `replicas` that expects rank 0 (the initial leader).
    pub fn new(replicas: usize) -> Omega {
        Omega {
            replicas,
            expected: 0,
            last: 0,
            since: Nanos::ZERO,
        }
    }

    /// The rank expected to lead.
    pub fn expected(&self) -> usize {
        self.expected
    }

    /// When the expected leader becomes suspect if its heartbeat does not change before.
    pub fn deadline(&self, suspect: Nanos) -> Nanos {
        self.since.saturating_add(suspect)
    }

    /// Looks at `beat`, the expected leader's heartbeat word, at `now`. A new value restarts its
    /// timeout; a value that stood still for `suspect` makes the oracle expect the next rank,
    /// whose heartbeat word `beat_of` reads so that only later changes count for it. Returns
    /// whether the oracle moved on.
    pub fn observe(
        &mut self,
        beat: u64,
        now: Nanos,
        suspect: Nanos,
        beat_of: impl FnOnce(usize) -> u64,
    ) -> bool {
        if beat != self.last {
            self.last = beat;
            self.since = now;
        }
        if now < self.deadline(suspect) {
            return false;
        }
        self.expected = (self.expected + 1) % self.replicas;
        self.since = now;
        self.last = beat_of(self.expected);
        true
    }

    /// Expects `rank` from `now` on (a leader made itself known, or this member stepped down),
    /// giving it a full timeout. `beat` is its heartbeat word as it stands, if the caller wants
    /// changes counted from it; `None` keeps comparing with the last word seen.
    pub fn expect(&mut self, rank: usize, now: Nanos, beat: Option<u64>) {
        self.expected = rank;
        self.since = now;
        if let Some(b) = beat {
            self.last = b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUSPECT: Nanos = Nanos(100);

    #[test]
    fn a_beating_leader_is_never_suspected_and_a_silent_one_is_after_the_timeout() {
        let mut o = Omega::new(3);
        for t in 1..10u64 {
            assert!(!o.observe(t, Nanos(t * 90), SUSPECT, |_| unreachable!()));
        }
        assert_eq!(o.deadline(SUSPECT), Nanos(810 + 100));
        assert!(!o.observe(9, Nanos(909), SUSPECT, |_| 0));
        assert!(o.observe(9, Nanos(910), SUSPECT, |r| 40 + r as u64));
        assert_eq!(o.expected(), 1);
        // The next rank's word as it stood at the switch is not a beat.
        assert!(!o.observe(41, Nanos(1000), SUSPECT, |_| 0));
        assert!(o.observe(41, Nanos(1010), SUSPECT, |_| 0));
        assert!(o.observe(0, Nanos(1110), SUSPECT, |_| 0));
        assert_eq!(o.expected(), 0, "ranks in a ring");
    }

    #[test]
    fn expecting_a_rank_gives_it_a_full_timeout() {
        let mut o = Omega::new(3);
        o.expect(2, Nanos(500), Some(7));
        assert_eq!((o.expected(), o.deadline(SUSPECT)), (2, Nanos(600)));
        assert!(!o.observe(7, Nanos(599), SUSPECT, |_| 0));
        // Without a word, the last one seen stays the reference.
        o.expect(1, Nanos(600), None);
        assert!(!o.observe(7, Nanos(650), SUSPECT, |_| 0));
        assert!(o.observe(7, Nanos(700), SUSPECT, |_| 0));
        assert_eq!(o.expected(), 2);
    }
}
