//! `harness bench transport`'s rows: one per message size ([`engine::perftest`] measures
//! them).

pub(crate) use engine::perftest::*;

/// One row of results: one message size.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Row {
    pub(crate) runtime: String,
    pub(crate) profile: String,
    pub(crate) bytes: usize,
    pub(crate) iterations: u64,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) t_min_us: f64,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) t_max_us: f64,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) t_typical_us: f64,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) t_avg_us: f64,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) t_stdev_us: f64,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) t_p99_us: f64,
    #[serde(serialize_with = "crate::stats::precision::us")]
    pub(crate) t_p999_us: f64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) bw_peak_gbps: f64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) bw_avg_gbps: f64,
    #[serde(serialize_with = "crate::stats::precision::rate")]
    pub(crate) msg_rate_mpps: f64,
    pub(crate) warmup: u64,
    pub(crate) tx_depth: u64,
    pub(crate) cq_mod: u64,
    pub(crate) inline: bool,
    pub(crate) threads: usize,
    pub(crate) seed: u64,
    pub(crate) commit: String,
    /// qperf's `tcp_lat` of this size in the same run (`--qperf`), half the round trip.
    #[serde(serialize_with = "crate::stats::precision::opt_us")]
    pub(crate) qperf_lat_us: Option<f64>,
    /// qperf's `tcp_bw` of this size in the same run (`--qperf`).
    #[serde(serialize_with = "crate::stats::precision::opt_rate")]
    pub(crate) qperf_bw_gbps: Option<f64>,
    /// `t_typical_us` over `qperf_lat_us`: at most 1.5 is the tcp runtime's target.
    #[serde(serialize_with = "crate::stats::precision::opt_rate")]
    pub(crate) lat_ratio_vs_qperf: Option<f64>,
    /// `bw_avg_gbps` over `qperf_bw_gbps`: at least 0.7 is the tcp runtime's target.
    #[serde(serialize_with = "crate::stats::precision::opt_rate")]
    pub(crate) bw_ratio_vs_qperf: Option<f64>,
}
