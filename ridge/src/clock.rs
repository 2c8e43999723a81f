//! A process's local clock, which Ridge's timestamps come from (Algorithm 3, lines 3 and 16:
//! "unique timestamp based on local clock").
//!
//! The merge delivers a message once every ensemble has shown a later timestamp, so how far
//! the processes' clocks disagree moves latency (the paper synchronised them with NTP, section
//! 6.1, "for better results"). The runtime's time is one global clock; each process reads it
//! through its own offset and drift, drawn from the run's seed, so skew is part of the
//! experiment and replays exactly.

use crate::value::Timestamp;
use transport::{Nanos, Rng};

/// How far local clocks may disagree: offsets uniform in `±max_offset`, drifts uniform in
/// `±max_drift_ppm` parts per million.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Skew {
    /// Largest offset from true time.
    pub max_offset: Nanos,
    /// Largest rate error, parts per million.
    pub max_drift_ppm: f64,
}

impl Skew {
    /// Perfectly synchronised clocks.
    pub const NONE: Skew = Skew {
        max_offset: Nanos::ZERO,
        max_drift_ppm: 0.0,
    };
}

/// One process's clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clock {
    /// Added to true time, nanoseconds (may be negative).
    offset_ns: i64,
    /// Rate error: local time runs `1 + drift` times as fast as true time.
    drift: f64,
}

impl Clock {
    /// A clock with no offset and no drift.
    pub const EXACT: Clock = Clock {
        offset_ns: 0,
        drift: 0.0,
    };

    /// A clock drawn from `rng` within `skew`.
    pub fn draw(skew: Skew, rng: &mut Rng) -> Clock {
        let spread = |max: f64, rng: &mut Rng| (rng.unit_f64() * 2.0 - 1.0) * max;
        Clock {
            offset_ns: spread(skew.max_offset.as_nanos() as f64, rng).round() as i64,
            drift: spread(skew.max_drift_ppm, rng) / 1e6,
        }
    }

    /// Local time, microseconds, at true time `now` (never below zero).
    pub fn local_us(&self, now: Nanos) -> u64 {
        let t = now.as_nanos() as f64 * (1.0 + self.drift) + self.offset_ns as f64;
        (t.max(0.0) / 1_000.0) as u64
    }

    /// The first true time at which this clock reads `local_us` or more (a timer's wake-up).
    pub fn when(&self, local_us: u64) -> Nanos {
        let t = (local_us as f64 * 1_000.0 - self.offset_ns as f64) / (1.0 + self.drift);
        let mut at = Nanos(t.max(0.0).ceil() as u64);
        // Floating-point rounding: step to the first nanosecond that reads it.
        while self.local_us(at) < local_us {
            at = Nanos(at.as_nanos() + 1);
        }
        at
    }
}

/// A process's source of unique, increasing timestamps (Algorithm 3, line 3): its local clock
/// in microseconds and its id, moved past the last one handed out when the clock has not
/// advanced (two messages in one microsecond, or a clock behind what it already gave).
#[derive(Clone, Copy, Debug)]
pub struct Stamper {
    sender: u32,
    clock: Clock,
    last: Timestamp,
}

impl Stamper {
    /// Timestamps of process `sender` on `clock`.
    pub fn new(sender: u32, clock: Clock) -> Stamper {
        Stamper {
            sender,
            clock,
            last: Timestamp::default(),
        }
    }

    /// The clock it reads.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The next timestamp at true time `now`.
    pub fn stamp(&mut self, now: Nanos) -> Timestamp {
        let mut ts = Timestamp::new(self.clock.local_us(now), self.sender);
        if ts <= self.last {
            // The next microsecond of this sender: its id stays in the low bits.
            ts = Timestamp::new((self.last.0 >> Timestamp::SENDER_BITS) + 1, self.sender);
        }
        self.last = ts;
        ts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use transport::Purpose;

    #[test]
    fn a_senders_timestamps_are_unique_and_increase_even_when_its_clock_stands() {
        let mut s = Stamper::new(3, Clock::EXACT);
        let a = s.stamp(Nanos(5_000));
        let b = s.stamp(Nanos(5_000));
        let c = s.stamp(Nanos(5_400));
        let d = s.stamp(Nanos(9_000));
        assert!(a < b && b < c && c < d, "{a:?} {b:?} {c:?} {d:?}");
        for t in [a, b, c, d] {
            assert_eq!(t.0 & 0xffff, 3, "the sender's id stays in the low bits");
        }
        assert_eq!(d, Timestamp::new(9, 3));
    }

    #[test]
    fn clocks_drawn_from_a_seed_stay_within_the_skew_and_replay() {
        let skew = Skew {
            max_offset: Nanos(50_000),
            max_drift_ppm: 100.0,
        };
        let draw = |seed| Clock::draw(skew, &mut Rng::derive(seed, Purpose::Protocol, 7));
        assert_eq!(draw(1), draw(1));
        let now = Nanos(1_000_000_000);
        for seed in 0..50 {
            let c = draw(seed);
            let err = c.local_us(now) as f64 - 1e6;
            // At most 50 us of offset plus 100 ppm of one second (100 us).
            assert!(err.abs() <= 150.0 + 1.0, "seed {seed}: {err} us");
        }
        let none = Clock::draw(Skew::NONE, &mut Rng::derive(1, Purpose::Protocol, 7));
        assert_eq!(none.local_us(now), 1_000_000);
    }
}
