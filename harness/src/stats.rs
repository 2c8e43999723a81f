//! Summaries of latency samples, with perftest's definitions: t_typical is the median, the
//! percentiles are nearest-rank over the sorted samples.

/// A summary of latency samples in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LatencySummary {
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) typical: f64,
    pub(crate) avg: f64,
    pub(crate) stdev: f64,
    pub(crate) p99: f64,
    pub(crate) p999: f64,
}

impl LatencySummary {
    /// Summarises `samples` (microseconds); `None` when there are none.
    pub(crate) fn of(samples: &[f64]) -> Option<LatencySummary> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
