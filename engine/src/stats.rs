//! Summaries of latency samples, with perftest's definitions: t_typical is the median, the
//! percentiles are nearest-rank over the sorted samples.

/// A summary of latency samples in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencySummary {
    /// The smallest sample.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// The median.
    pub typical: f64,
    /// The mean.
    pub avg: f64,
    /// The standard deviation.
    pub stdev: f64,
    /// The 99th percentile (nearest rank).
    pub p99: f64,
    /// The 99.9th percentile (nearest rank).
    pub p999: f64,
}

impl LatencySummary {
    /// Summarises `samples` (microseconds); `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<LatencySummary> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len() as f64;
        let avg = s.iter().sum::<f64>() / n;
        let var = s.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n;
        let rank = |q: f64| s[(((q * n).ceil() as usize).max(1) - 1).min(s.len() - 1)];
        Some(LatencySummary {
            min: s[0],
            max: s[s.len() - 1],
            typical: s[s.len() / 2],
            avg,
            stdev: var.sqrt(),
            p99: rank(0.99),
            p999: rank(0.999),
        })
    }
}

/// CSV columns written at the precision they were measured to, without the floating-point
/// noise of the arithmetic that derived them (`1.3009999999999993`, `6.66e-16`). Used as
/// `#[serde(serialize_with = ...)]` on result rows.
pub mod precision {
    /// A time in microseconds, measured in nanoseconds and halved for perftest's half round
    /// trips (means and deviations of such): four decimals, a tenth of a nanosecond.
    pub fn us<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(super::round_dp(*x, 4))
    }

    /// A rate derived from counts and nanosecond spans (Gb/s, messages per second): six
    /// significant digits.
    pub fn rate<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(super::round_sig(*x, 6))
    }

    /// A fraction of samples (a CDF's ordinate): six decimals.
    pub fn fraction<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(super::round_dp(*x, 6))
    }

    /// [`rate`], or an empty field.
    pub fn opt_rate<S: serde::Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => rate(x, s),
            None => s.serialize_none(),
        }
    }

    /// [`us`], or an empty field.
    pub fn opt_us<S: serde::Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => us(x, s),
            None => s.serialize_none(),
        }
    }

    /// Exactly `DP` decimals, as `format!("{x:.3}")` writes them for 3 (`1.500`): a figure's own
    /// columns, written as they were before they went through the `csv` crate. Used as
    /// `serialize_with = "crate::stats::precision::fixed::<3, _>"`.
    pub fn fixed<const DP: usize, S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:.*}", DP, x))
    }

    /// As `format!("{x}")` writes it (`22544`, where the `csv` crate writes `22544.0`).
    pub fn display<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(x)
    }
}

/// `x` rounded to `dp` decimals (never `-0`).
pub fn round_dp(x: f64, dp: i32) -> f64 {
    let m = 10f64.powi(dp);
    (x * m).round() / m + 0.0
}

/// `x` rounded to `digits` significant digits.
pub fn round_sig(x: f64, digits: usize) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    format!("{:.*e}", digits - 1, x)
        .parse()
        .expect("a formatted float parses")
}

/// Mean and 95% confidence interval of the mean (normal approximation over independent rounds:
/// each round draws its own latencies).
pub fn mean_ci(v: &[f64]) -> (f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let half = 1.96 * (var / n).sqrt();
    (mean, mean - half, mean + half)
}

/// The two-sided 95% quantile of Student's t with `df` degrees of freedom (1.96 beyond 30).
pub fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

/// The 95% interval of `point`, an estimate over a whole measurement window, by sectioning:
/// `sections` holds the same estimate over each of equal parts of the window, and the
/// interval is `point` ± t(n-1) × their standard deviation / √n (Asmussen and Glynn,
/// *Stochastic Simulation*, III.5: batch means whose point estimate is the whole run's, which
/// suits quantiles, whose mean over batches is biased). `None` with fewer than two sections.
pub fn sectioning(point: f64, sections: &[f64]) -> Option<(f64, f64)> {
    let n = sections.len();
    if n < 2 {
        return None;
    }
    let mean = sections.iter().sum::<f64>() / n as f64;
    let var = sections.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t95(n - 1) * (var / n as f64).sqrt();
    Some((point - half, point + half))
}

/// The 95% interval of a closed loop's rate `point` (per second) over a window of `window_s`
/// seconds, from how many completed in each of its equal sections ([`sectioning`]), widened
/// by the window's quantisation: a closed-loop client's count in a window is off by less than
/// one request, so the rate by less than `clients / window_s`. At saturation a closed loop can
/// settle into a period, every section holding the same count: the sections' spread is then
/// zero and only the quantisation is left.
pub fn rate_ci(
    point: f64,
    window_s: f64,
    clients: usize,
    counts: impl IntoIterator<Item = u64>,
) -> Option<(f64, f64)> {
    let v: Vec<f64> = counts.into_iter().map(|c| c as f64).collect();
    let per = window_s / v.len().max(1) as f64;
    let rates: Vec<f64> = v.iter().map(|c| c / per).collect();
    let q = clients as f64 / window_s;
    sectioning(point, &rates).map(|(lo, hi)| ((lo - q).max(0.0), hi + q))
}

/// A sweep's maximum and its 95% interval, from each point's `(value, interval)`: the interval
/// spans those of every point within 5% of the maximum (the knee band). At saturation several
/// points share one true maximum, and the highest measured is the one noise pushed up: its
/// own interval alone would cover the plateau less often than 95%. `None` when the highest
/// point has no interval.
pub fn plateau(points: &[(f64, Option<(f64, f64)>)]) -> (f64, Option<(f64, f64)>) {
    let Some(&(max, best)) = points.iter().max_by(|a, b| a.0.total_cmp(&b.0)) else {
        return (0.0, None);
    };
    let ci = best.map(|_| {
        points
            .iter()
            .filter(|(v, _)| *v >= 0.95 * max)
            .map(|&(v, ci)| ci.unwrap_or((v, v)))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (l, h)| {
                (lo.min(l), hi.max(h))
            })
    });
    (max, ci)
}

/// Least-squares slope and R² of `points`.
pub fn linear_fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let syy: f64 = points.iter().map(|(_, y)| (y - my).powi(2)).sum();
    let slope = sxy / sxx;
    let r2 = if syy == 0.0 {
        1.0
    } else {
        sxy * sxy / (sxx * syy)
    };
    (slope, r2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_numbers_lose_their_arithmetic_noise() {
        assert_eq!(round_dp(1.3009999999999993, 4).to_string(), "1.301");
        assert_eq!(round_dp(0.5473669999999994, 4).to_string(), "0.5474");
        assert_eq!(round_dp(0.3675, 4).to_string(), "0.3675");
        assert_eq!(round_dp(6.661338147750939e-16, 4).to_string(), "0");
        assert_eq!(round_dp(4425.486999999999, 4).to_string(), "4425.487");
        assert_eq!(
            round_sig(0.000013035212643535648, 6).to_string(),
            "0.0000130352"
        );
        assert_eq!(round_sig(94.95820692777903, 6).to_string(), "94.9582");
        assert_eq!(round_sig(0.0, 6), 0.0);
    }

    #[test]
    fn a_line_fits_exactly_and_an_interval_straddles_its_mean() {
        let (slope, r2) = linear_fit(&[(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]);
        assert!((slope - 2.0).abs() < 1e-9 && (r2 - 1.0).abs() < 1e-9);
        let (_, r2) = linear_fit(&[(1.0, 1.0), (2.0, 3.0), (3.0, 2.0)]);
        assert!(r2 < 0.5, "{r2}");
        let (m, lo, hi) = mean_ci(&[1.0, 3.0]);
        // sd sqrt(2), n 2: half-width 1.96.
        assert!(m == 2.0 && (lo - 0.04).abs() < 1e-9 && (hi - 3.96).abs() < 1e-9);
    }

    /// A maximum's interval spans the knee band's, and a rate's never goes below zero.
    #[test]
    fn a_plateau_spans_the_knee_band_and_rates_stay_positive() {
        let points = [
            (50.0, Some((45.0, 55.0))),
            (97.0, Some((90.0, 99.0))),
            (100.0, Some((98.0, 102.0))),
        ];
        assert_eq!(plateau(&points), (100.0, Some((90.0, 102.0))));
        assert_eq!(plateau(&[(100.0, None)]), (100.0, None));
        assert_eq!(plateau(&[]), (0.0, None));
        // 100 clients over 1 ms: the quantisation alone is 100 k/s, more than the rate.
        let (lo, _) = rate_ci(2_000.0, 1e-3, 100, [2u64; 10]).unwrap();
        assert_eq!(lo, 0.0);
    }

    #[test]
    fn sectioning_centres_on_the_whole_window_and_widens_with_the_spread() {
        assert_eq!(t95(9), 2.262);
        assert_eq!(t95(100), 1.96);
        assert_eq!(sectioning(5.0, &[5.0]), None);
        assert_eq!(sectioning(5.0, &[5.0; 10]), Some((5.0, 5.0)));
        // Sections 4 and 6 alternating: sd 1.054, n 10: half-width 2.262 * 0.3333.
        let s: Vec<f64> = (0..10)
            .map(|i| if i % 2 == 0 { 4.0 } else { 6.0 })
            .collect();
        let (lo, hi) = sectioning(5.2, &s).unwrap();
        assert!((hi - lo - 2.0 * 2.262 / 3.0).abs() < 1e-9, "{lo} {hi}");
        assert!(((lo + hi) / 2.0 - 5.2).abs() < 1e-9);
    }

    #[test]
    fn summary_of_known_samples() {
        let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
        let s = LatencySummary::of(&samples).unwrap();
        assert_eq!((s.min, s.max, s.typical), (1.0, 1000.0, 501.0));
        assert_eq!((s.p99, s.p999), (990.0, 999.0));
        assert!((s.avg - 500.5).abs() < 1e-9);
        assert!((s.stdev - 288.675).abs() < 1e-3);
        assert!(LatencySummary::of(&[]).is_none());
    }
}
