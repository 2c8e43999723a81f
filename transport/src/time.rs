//! Time as the runtimes see it: nanoseconds, virtual in the simulator and wall-clock elsewhere.
//!
//! Protocol code never touches `std::time`; it gets [`Nanos`] from `Nic::now` and returns
//! deadlines in [`crate::Progress::wake_at`]. Keeping one crate-owned type makes every timeout
//! meaningful under both clocks and keeps seed replay exact.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time or a duration, in nanoseconds since the runtime started.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
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
