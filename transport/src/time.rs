//! Time as the runtimes see it: nanoseconds, virtual in the simulator and wall-clock elsewhere.
//!
//! Protocol code never touches `std::time`; it gets [`Nanos`] from `Nic::now` and returns
//! deadlines in [`crate::Progress::wake_at`]. Keeping one crate-owned type makes every timeout
//! meaningful under both clocks and keeps seed replay exact.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::str::FromStr;

/// A point in time or a duration, in nanoseconds since the runtime started.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Time zero: the start of a run.
    pub const ZERO: Nanos = Nanos(0);
    /// The far future; never reached by a run.
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// `us` microseconds.
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }

    /// `ms` milliseconds.
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }

    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }

    /// A fractional number of nanoseconds, rounded to the nearest integer (negative clamps to 0).
    pub fn from_f64(ns: f64) -> Nanos {
        // `+ 0.5` then truncation rounds non-negative values without a libm call (hot in the sim).
        Nanos((ns.max(0.0) + 0.5) as u64)
    }

    /// The value in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The value in microseconds, as a float (for reports).
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1_000.0
    }

    /// The value in seconds, as a float (for reports).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_sub(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at [`Nanos::MAX`].
    pub fn saturating_add(self, d: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(d.0))
    }

    /// The value in its exact text form, which [`Nanos::from_str`] reads back to the same
    /// nanosecond: the largest unit not above it (`s`, `ms`, `us`, `ns`) and only the decimals
    /// it needs (`1377.509us` is `1.377509ms`, `2s`, `0ns`). [`fmt::Display`] rounds seconds to
    /// microseconds, for reports.
    pub fn exact(self) -> impl fmt::Display {
        ExactNanos(self)
    }
}

/// The text units of a duration, largest first: suffix and nanoseconds.
const UNITS: [(&str, u64); 4] = [
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// [`Nanos::exact`].
struct ExactNanos(Nanos);

impl fmt::Display for ExactNanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0 .0;
        let (unit, scale) = UNITS
            .into_iter()
            .find(|&(_, scale)| ns >= scale)
            .unwrap_or(("ns", 1));
        let (whole, part) = (ns / scale, ns % scale);
        if part == 0 {
            return write!(f, "{whole}{unit}");
        }
        let digits = scale.ilog10() as usize;
        let fraction = format!("{part:0digits$}");
        write!(f, "{whole}.{}{unit}", fraction.trim_end_matches('0'))
    }
}

impl FromStr for Nanos {
    type Err = String;

    /// Reads a duration with its unit, exactly: `10s`, `1.5ms`, `672.473us`, `1500ns`. A
    /// value finer than a nanosecond, or past [`Nanos::MAX`], is refused rather than rounded,
    /// so a schedule written as text replays to the nanosecond.
    fn from_str(s: &str) -> Result<Nanos, String> {
        let bad = || {
            format!("`{s}` is not a duration: use a number with s, ms, us or ns, like 10s or 500ms")
        };
        let t = s.trim();
        // "ms", "us" and "ns" before "s", which ends each of them.
        let (num, scale) = UNITS[1..]
            .iter()
            .chain(&UNITS[..1])
            .find_map(|&(unit, scale)| t.strip_suffix(unit).map(|n| (n.trim(), scale)))
            .ok_or_else(bad)?;
        let (whole, fraction) = num.split_once('.').unwrap_or((num, ""));
        let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
            return Err(bad());
        }
        let fraction = fraction.trim_end_matches('0');
        let places = scale.ilog10() as usize;
        if fraction.len() > places {
            return Err(format!(
                "`{s}` is finer than a nanosecond: use at most {places} decimals with this unit"
            ));
        }
        let too_long = || format!("`{s}` is longer than a run can be");
        let whole: u64 = match whole {
            "" => 0,
            w => w.parse().map_err(|_| too_long())?,
        };
        let part: u64 = match fraction {
            "" => 0,
            x => x.parse::<u64>().map_err(|_| bad())? * 10u64.pow((places - x.len()) as u32),
        };
        whole
            .checked_mul(scale)
            .and_then(|w| w.checked_add(part))
            .map(Nanos)
            .ok_or_else(too_long)
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        self.saturating_add(rhs)
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        *self = *self + rhs;
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        self.saturating_sub(rhs)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1_000_000_000 {
            write!(f, "{:.6}s", self.as_secs_f64())
        } else if self.0 >= 1_000 {
            write!(f, "{:.3}us", self.as_us_f64())
        } else {
            write!(f, "{}ns", self.0)
        }
    }
}

/// A one-shot timer a process keeps in its state: arm it, ask whether it fired, and fold its
/// deadline into [`crate::Progress::wake_at`] so the runtime wakes the process in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timer {
    deadline: Option<Nanos>,
}

impl Timer {
    /// A disarmed timer.
    pub const fn new() -> Timer {
        Timer { deadline: None }
    }

    /// Arms (or re-arms) the timer to fire at `deadline`.
    pub fn arm_at(&mut self, deadline: Nanos) {
        self.deadline = Some(deadline);
    }

    /// Disarms the timer.
    pub fn disarm(&mut self) {
        self.deadline = None;
    }

    /// The armed deadline, if any.
    pub fn deadline(&self) -> Option<Nanos> {
        self.deadline
    }

    /// True once, when `now` has reached the deadline; the timer is disarmed by firing.
    pub fn fire(&mut self, now: Nanos) -> bool {
        match self.deadline {
            Some(d) if now >= d => {
                self.deadline = None;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value reads back from its exact text form to the nanosecond, across every unit.
    #[test]
    fn the_exact_text_form_reads_back_to_the_nanosecond() {
        let mut rng = crate::rng::Rng::derive(7, crate::rng::Purpose::Workload, 0);
        let mut values = vec![
            0,
            1,
            999,
            1_000,
            1_001,
            999_999_999,
            1_000_000_000,
            u64::MAX,
        ];
        values.extend((0..2_000).map(|i| rng.below(10u64.pow(1 + i % 12))));
        for ns in values {
            let text = Nanos(ns).exact().to_string();
            assert_eq!(text.parse::<Nanos>(), Ok(Nanos(ns)), "{text}");
        }
        assert_eq!(Nanos(1_377_509).exact().to_string(), "1.377509ms");
        assert_eq!(Nanos(2_000_000_000).exact().to_string(), "2s");
        assert_eq!(Nanos(672_473).exact().to_string(), "672.473us");
    }

    /// Units, decimals and spaces as people write them; anything inexact or unitless refused
    /// with what to write instead.
    #[test]
    fn durations_parse_exactly_or_say_why_not() {
        for (text, ns) in [
            ("10s", 10_000_000_000),
            ("1.5ms", 1_500_000),
            (" 500 us", 500_000),
            ("1500ns", 1_500),
            (".5us", 500),
            ("2.000s", 2_000_000_000),
        ] {
            assert_eq!(text.parse::<Nanos>(), Ok(Nanos(ns)), "{text}");
        }
        for (text, says) in [
            ("10", "not a duration"),
            ("ms", "not a duration"),
            ("-1s", "not a duration"),
            ("1e3ms", "not a duration"),
            ("1.5ns", "finer than a nanosecond"),
            ("0.0000000001s", "finer than a nanosecond"),
            ("99999999999999s", "longer than a run"),
        ] {
            let err = text.parse::<Nanos>().unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
