//! Fitting a paper prototype's software profile to ONE published number of its paper: the
//! per-message prices of a shape profile (`measured`, our code's relative costs) times one
//! factor, found by bisection on the simulated number. Copies and scans keep the shape's
//! prices: a byte copy is `memcpy` and a scan reads a slot's header word from registered
//! memory, in Java and C++ alike over RDMA, while the per-message work (objects, queues, bounds
//! checks, the JVM) is what separates a prototype from our code. Scaling the scan with the
//! rest made every client's slot cost ~12x a memory read on every poll, which alone moved
//! RamCast's one-group scaling from 5.2x to 2.27x at 8 groups and its 1-client median from
//! 7.6 to 11.1 us (issue 45).
//! A prototype whose one published number is a bandwidth of large messages (Ridge's Java over
//! TCP) can only differ from our code per byte there, and scales its copies too
//! ([`Prices::WithCopies`]). An application over a multicast layer whose prices were fitted
//! already (Heron over RamCast's Java prototype) keeps the layer's prices and fits its row price
//! alone ([`Prices::Rows`]).
//!
//! One factor fitted to one number: every other number of the paper stays a validation target.

use transport::runtime::sim::{
    Posting, Software, SoftwareCalibration, SoftwareFit, WorkCosts, ROW_PRICE_UNIT_NS,
};

/// A paper prototype's software profile and the one published number it is fitted to.
#[derive(Debug)]
pub struct PaperSoftware {
    /// The profile's name (`ramcast-java`).
    pub name: &'static str,
    /// What prototype it models.
    pub description: &'static str,
    /// The published number, what it is and where it is published.
    pub target: &'static str,
    /// The published value.
    pub published: f64,
    /// Its unit.
    pub unit: &'static str,
    /// The profile whose prices it starts from, unless `--shape` names another.
    pub shape: &'static str,
    /// Which prices the factor sets (see the module docs).
    pub prices: Prices,
    /// How its processes post to several targets and await completions: declared from the
    /// paper's text, never fitted; the fit simulates with it.
    pub posting: DeclaredPosting,
    /// Simulates the target's experiment with a software profile and returns the number the
    /// paper reports; it must fall as prices rise (a throughput) or rise with them (a latency).
    pub simulate: Simulate,
}

/// A prototype's write discipline as its paper describes it (see [`Posting`]).
#[derive(Debug)]
pub struct DeclaredPosting {
    /// The discipline of every protocol not in `protocols` (`collective`, `batch`, `each`,
    /// `window:N`).
    pub discipline: &'static str,
    /// Protocols whose prototype posts otherwise, by `--protocol` name.
    pub protocols: &'static [(&'static str, &'static str)],
    /// The paper's words the choice rests on.
    pub source: &'static str,
}

impl DeclaredPosting {
    /// As a software profile declares it.
    pub fn posting(&self) -> Result<Posting, String> {
        Ok(Posting {
            discipline: self.discipline.parse()?,
            protocols: self
                .protocols
                .iter()
                .map(|(p, d)| Ok((p.to_string(), d.parse()?)))
                .collect::<Result<_, String>>()?,
            source: Some(self.source.to_string()),
        })
    }
}

/// Which prices of the shape one factor sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prices {
    /// The per-message prices, scaled; copies and scans keep the shape's prices.
    PerMessage,
    /// Every price but the scan's, copies included, scaled.
    WithCopies,
    /// Only the row price, set to the factor times [`ROW_PRICE_UNIT_NS`]; every other price is
    /// the shape's.
    Rows,
}

/// How a [`PaperSoftware`] simulates its target: with a software profile, reporting progress.
pub type Simulate = fn(&Software, &(dyn Fn(&str) + Sync)) -> Result<f64, String>;

/// The smallest and largest factor tried.
const SCALES: (f64, f64) = (1.0 / 16.0, 256.0);
/// Bisection steps at most; each halves the factor's range in log space.
const STEPS: usize = 24;
/// A fit closer than this to the published number stops early.
const TOLERANCE: f64 = 0.005;

/// `shape`'s prices set by `scale` as `prices` says: per-message prices times `scale` (rounded
/// to the nanosecond; a scan keeps its price), copies too for [`Prices::WithCopies`] (rounded
/// to the picosecond); or only the row price, `scale` times [`ROW_PRICE_UNIT_NS`].
pub fn scaled(shape: &WorkCosts, scale: f64, prices: Prices) -> WorkCosts {
    if prices == Prices::Rows {
        return WorkCosts {
            row_ns: (scale * ROW_PRICE_UNIT_NS).round() as u64,
            ..*shape
        };
    }
    let copies = prices == Prices::WithCopies;
    let s = |ns: u64| (ns as f64 * scale).round() as u64;
    WorkCosts {
        scan_ns: shape.scan_ns,
        decode_ns: s(shape.decode_ns),
        copy_ps_per_byte: if copies {
            s(shape.copy_ps_per_byte)
        } else {
            shape.copy_ps_per_byte
        },
        order_ns: s(shape.order_ns),
        deliver_ns: s(shape.deliver_ns),
        row_ns: s(shape.row_ns),
    }
}

/// The factor whose `value(factor)` is nearest `target`, by bisection in log space between
/// `SCALES`; `value` must be monotonic. Returns the factor and its value, or why the target
/// is out of reach.
pub fn bisect(
    target: f64,
    mut value: impl FnMut(f64) -> Result<f64, String>,
) -> Result<(f64, f64), String> {
    let (mut lo, mut hi) = SCALES;
    let (v_lo, v_hi) = (value(lo)?, value(hi)?);
    let between = |v: f64| (v_lo - v) * (v_hi - v) <= 0.0;
    if !between(target) {
        return Err(format!(
            "the target {target} is out of reach: scaling the prices by {lo} gives {v_lo:.1}, by {hi} gives {v_hi:.1}"
        ));
    }
    let rising = v_hi > v_lo;
    let mut best = if (v_lo - target).abs() < (v_hi - target).abs() {
        (lo, v_lo)
    } else {
        (hi, v_hi)
    };
    for _ in 0..STEPS {
        // Close enough, or the factor's range no longer changes a rounded price.
        if ((best.1 - target) / target).abs() <= TOLERANCE || hi / lo < 1.0 + 1e-4 {
            break;
        }
        let mid = (lo * hi).sqrt();
        let v = value(mid)?;
        if (v - target).abs() < (best.1 - target).abs() {
            best = (mid, v);
        }
        if (v < target) == rising {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(best)
}

/// Fits `paper`'s profile on `shape`; `version` is the new profile's, `commit` and `date`
/// stamp it.
pub fn fit(
    paper: &PaperSoftware,
    shape: &Software,
    version: u32,
    commit: &str,
    date: &str,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Software, String> {
    let posting = paper.posting.posting()?;
    let priced = |scale: f64| Software {
        name: paper.name.to_string(),
        version,
        description: paper.description.to_string(),
        calibration: SoftwareCalibration {
            source: format!(
                "{}: {} {} (every other published number is a validation target)",
                paper.target, paper.published, paper.unit
            ),
            machine: None,
            commit: Some(commit.to_string()),
            date: Some(date.to_string()),
            fit: None,
        },
        costs: scaled(&shape.costs, scale, paper.prices),
        posting: posting.clone(),
    };
    let (scale, simulated) = bisect(paper.published, |scale| {
        let v = (paper.simulate)(&priced(scale), progress)?;
        progress(&format!(
            "scale {scale:>10.4}: {} -> {v:.1} {}",
            priced(scale).describe(),
            paper.unit
        ));
        Ok(v)
    })?;
    let mut s = priced(scale);
    s.calibration.fit = Some(SoftwareFit {
        shape: format!("{} v{}", shape.name, shape.version),
        scale,
        published: paper.published,
        simulated,
        unit: paper.unit.to_string(),
        copies_scaled: paper.prices == Prices::WithCopies,
        rows_only: paper.prices == Prices::Rows,
    });
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisection_finds_the_factor_of_a_falling_and_of_a_rising_curve() {
        let (k, v) = bisect(250.0, |k| Ok(1000.0 / (1.0 + k))).unwrap();
        assert!((v - 250.0).abs() / 250.0 <= TOLERANCE, "{k} {v}");
        assert!((k - 3.0).abs() < 0.05, "{k}");
        let (k, v) = bisect(7.0, |k| Ok(5.0 + 0.1 * k)).unwrap();
        assert!(
            (v - 7.0).abs() / 7.0 <= TOLERANCE && (k - 20.0).abs() < 0.5,
            "{k} {v}"
        );
    }

    #[test]
    fn a_target_out_of_reach_is_refused_with_both_ends() {
        let e = bisect(5.0, |k| Ok(100.0 + k)).unwrap_err();
        assert!(e.contains("out of reach") && e.contains("256"), "{e}");
    }

    #[test]
    fn scaling_multiplies_per_message_prices_and_keeps_the_copy_and_scan_prices() {
        let shape = WorkCosts {
            scan_ns: 2,
            decode_ns: 30,
            copy_ps_per_byte: 90,
            order_ns: 41,
            deliver_ns: 10,
            row_ns: 0,
        };
        let c = scaled(&shape, 2.5, Prices::PerMessage);
        assert_eq!(
            (
                c.scan_ns,
                c.decode_ns,
                c.copy_ps_per_byte,
                c.order_ns,
                c.deliver_ns
            ),
            (2, 75, 90, 103, 25)
        );
        assert_eq!(
            scaled(&shape, 2.5, Prices::WithCopies).copy_ps_per_byte,
            225
        );
        let rows = scaled(&shape, 2.5, Prices::Rows);
        assert_eq!(
            rows,
            WorkCosts {
                row_ns: 250,
                ..shape
            }
        );
    }
}
