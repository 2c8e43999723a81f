//! Hardware cost profiles of the simulator: versioned TOML files, each number documented with
//! its source in the file itself.

use crate::nic::NicLimits;
use crate::time::Nanos;
use serde::Deserialize;
use std::path::Path;
use std::sync::LazyLock;

/// The profiles shipped with the workbench, by name.
pub const BUILTIN: &[(&str, &str)] = &[
    ("r320-cx3", include_str!("../../../profiles/r320-cx3.toml")),
    (
        "xl170-cx4",
        include_str!("../../../profiles/xl170-cx4.toml"),
    ),
    (
        "fractus-100g",
        include_str!("../../../profiles/fractus-100g.toml"),
    ),
    (
        "sierra-qdr",
        include_str!("../../../profiles/sierra-qdr.toml"),
    ),
    (
        "stampede-fdr",
        include_str!("../../../profiles/stampede-fdr.toml"),
    ),
    ("lan-1g", include_str!("../../../profiles/lan-1g.toml")),
    ("cx6-hdr", include_str!("../../../profiles/cx6-hdr.toml")),
    ("softroce", include_str!("../../../profiles/softroce.toml")),
];

/// The profile used when none is named.
pub const DEFAULT_PROFILE: &str = "r320-cx3";

/// Errors loading a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// No built-in profile has that name and no such file exists.
    #[error(
        "unknown {what} `{name}`: built-in {what}s are {known}; or give a path to a .toml file"
    )]
    Unknown {
        /// What kind of profile (`profile`, `software profile`).
        what: &'static str,
        /// The name given.
        name: String,
        /// The built-in names, comma-separated.
        known: String,
    },
    /// The TOML is malformed or a field is missing, unknown or of the wrong type.
    #[error("profile `{source_name}` is malformed: {message}")]
    Malformed {
        /// The profile's name or path.
        source_name: String,
        /// The parser's message, naming the field, line and column.
        message: String,
    },
    /// A value is outside its meaningful range.
    #[error("profile `{source_name}`: field `{field}` = {value} is invalid: {why}")]
    Invalid {
        /// The profile's name or path.
        source_name: String,
        /// The field.
        field: &'static str,
        /// The value.
        value: String,
        /// The rule it breaks.
        why: &'static str,
    },
    /// The file could not be read.
    #[error("cannot read the profile: {error}")]
    Io {
        /// The path.
        path: String,
        /// What went wrong (the OS error, or a file too large or not text).
        error: String,
    },
}

/// The TOML text of the built-in profile `name_or_path` of `builtin`, or of the file at that
/// path; `what` names the kind of profile in errors.
pub(crate) fn load_text(
    what: &'static str,
    builtin: &[(&str, &str)],
    name_or_path: &str,
) -> Result<String, ProfileError> {
    if let Some((_, text)) = builtin.iter().find(|(n, _)| *n == name_or_path) {
        return Ok(text.to_string());
    }
    let path = Path::new(name_or_path);
    if name_or_path.ends_with(".toml") || path.exists() {
        return crate::input::read_capped(path).map_err(|error| ProfileError::Io {
            path: name_or_path.to_string(),
            error,
        });
    }
    Err(ProfileError::Unknown {
        what,
        name: name_or_path.to_string(),
        known: builtin
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Names of the built-in profiles.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(n, _)| *n).collect()
}

/// The published numbers a profile was calibrated on (nothing else is tuned).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// ib_write_lat (half round trip of a 64-byte inline write ping-pong), microseconds.
    pub write_lat_us: f64,
    /// ib_write_bw for large messages, Gb/s.
    pub write_bw_gbps: f64,
    /// Where the two numbers come from.
    pub source: String,
}

/// The NIC and link part of the cost model.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicCosts {
    /// One-way latency of a small inline write from the sender NIC taking the work request to the
    /// bytes being visible at the target, excluding serialisation, posting and polling costs.
    pub write_latency_ns: u64,
    /// Largest inline payload.
    pub inline_max_bytes: usize,
    /// Extra latency of a non-inline write: the NIC's DMA read of the source buffer.
    pub dma_read_ns: u64,
    /// Link bandwidth per direction, Gb/s (egress and ingress serialise separately).
    pub link_gbps: f64,
    /// The NIC's message-rate limit, million work requests per second per port.
    pub msg_rate_mpps: f64,
    /// CPU cost to post one work request (build the WQE, ring the doorbell).
    pub post_ns: u64,
    /// CPU cost to poll one completion.
    pub completion_ns: u64,
    /// Time to bring a queue pair from error back to ready (reset, re-exchange, RTR, RTS).
    pub reconnect_ns: u64,
    /// The range `reconnect_ns` is known to within, where a profile declares one: what a
    /// permission change costs the writer it locks out (its refused write puts the queue pair
    /// in error; it writes again only after a reconnect). Figures that depend on it show both
    /// bounds.
    #[serde(default)]
    pub reconnect_range: Option<ReconnectRange>,
    /// What changing a peer's access to a region costs the process that changes it (it is busy
    /// that long; the change is in effect at once), with its documented range. Without one an
    /// access change is free.
    #[serde(default)]
    pub permission_change: Option<PermissionChange>,
    /// Time until an op to a dead peer fails (RC transport retry timeout).
    pub unreachable_timeout_ns: u64,
    /// Largest two-sided message.
    pub send_max_bytes: usize,
    /// The NIC's total send + receive rate, Gb/s, where a published two-way limit is below
    /// twice `link_gbps`: every multi-packet op books it at both ends, so a NIC sending and
    /// receiving at once shares it. Without one, egress and ingress each run at `link_gbps`.
    #[serde(default)]
    pub duplex_gbps: Option<f64>,
    /// The distribution of the one-way latency, if declared; without one every op takes
    /// exactly `write_latency_ns`.
    #[serde(default)]
    pub write_latency_dist: Option<LatencyDist>,
}

/// The documented range of a profile's `reconnect_ns`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconnectRange {
    /// Lower bound, nanoseconds.
    pub low_ns: u64,
    /// Upper bound, nanoseconds.
    pub high_ns: u64,
    /// Where the bounds come from.
    pub source: String,
}

/// The cost of one access change ([`NicCosts::permission_change`]) and its documented range.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionChange {
    /// The cost the simulator charges, nanoseconds.
    pub ns: u64,
    /// Lower bound, nanoseconds.
    pub low_ns: u64,
    /// Upper bound, nanoseconds.
    pub high_ns: u64,
    /// Where the bounds come from.
    pub source: String,
}

/// A declared distribution of the one-way write latency, in the terms `ib_write_lat` reports
/// (minimum, typical = median, 99th and 99.9th percentiles of the half round trip). The
/// simulator keeps the calibrated `write_latency_ns` as the median and draws each op's
/// deviation from it from the seeded RNG: the quantile function through these points, linear
/// from the minimum to the median and an exponential tail above it (the top 0.1% at the 99.9th
/// percentile). Ops of one queue pair still land, and complete, in post order.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyDist {
    /// Minimum, microseconds.
    pub t_min_us: f64,
    /// Typical (median), microseconds.
    pub t_typical_us: f64,
    /// 99th percentile, microseconds.
    pub p99_us: f64,
    /// 99.9th percentile, microseconds.
    pub p999_us: f64,
    /// Where the numbers come from.
    pub source: String,
}

impl LatencyDist {
    /// The deviation from the median at quantile `u` in [0, 1), nanoseconds (negative below
    /// the median).
    pub fn deviation_ns(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        // Above the median the tail is exponential through the declared percentiles: the
        // latency grows linearly in -ln(1 - q), so most draws stay near the median as on a
        // real NIC, instead of spreading evenly up to the 99th percentile.
        let [at_median, at_p99, at_p999] = *TAIL_AT_DECLARED;
        let between = |u: f64, (x0, t0): (f64, f64), (x1, t1): (f64, f64)| {
            t0 + (t1 - t0) * (tail(u) - x0) / (x1 - x0)
        };
        let at = if u <= 0.5 {
            self.t_min_us + (self.t_typical_us - self.t_min_us) * u / 0.5
        } else if u <= 0.99 {
            between(u, (at_median, self.t_typical_us), (at_p99, self.p99_us))
        } else if u <= 0.999 {
            between(u, (at_p99, self.p99_us), (at_p999, self.p999_us))
        } else {
            self.p999_us
        };
        (at - self.t_typical_us) * 1_000.0
    }
}

/// The tail's coordinate of quantile `q`: -ln(1 - q).
fn tail(q: f64) -> f64 {
    -(1.0 - q).ln()
}

/// [`tail`] at the declared quantiles (0.5, 0.99, 0.999), computed once: a draw takes one
/// logarithm instead of three (the simulator draws one per op and per acknowledgement).
static TAIL_AT_DECLARED: LazyLock<[f64; 3]> =
    LazyLock::new(|| [tail(0.5), tail(0.99), tail(0.999)]);

/// Where processes sit in a [`Fabric`]: process `i` is host `i` of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Racks fill in order: hosts `0..hosts_per_rack` share the first rack, and so on (a
    /// scheduler that keeps a job together).
    Packed,
    /// Round robin over every rack: host `i` sits in rack `i % racks` (a batch scheduler that
    /// scatters a job over a busy cluster).
    Spread,
}

/// A two-level fabric: hosts attach to a top-of-rack (leaf) switch, racks reach each other
/// through a spine. An op between two racks crosses two more switches than one within a rack
/// (leaf, spine, leaf against one leaf; the calibrated latency is within a rack), and a
/// multi-packet op also passes through its source rack's uplinks and its target rack's
/// downlinks, each carrying `uplink_gbps` in total per direction for the whole rack, booked in
/// issue order like a NIC's ingress. Without a fabric every pair of hosts is one hop apart
/// through a switch that never congests.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fabric {
    /// Hosts under one top-of-rack switch.
    pub hosts_per_rack: usize,
    /// Racks in the cluster (where [`Placement::Spread`] scatters a run).
    pub racks: usize,
    /// Total bandwidth of one rack's uplinks to the spine, Gb/s per direction; required where
    /// `racks > 1`. Its ratio to `hosts_per_rack * nic.link_gbps` is the oversubscription.
    #[serde(default)]
    pub uplink_gbps: Option<f64>,
    /// Latency of one switch, nanoseconds: a cross-rack op takes `2 * switch_ns` longer.
    pub switch_ns: u64,
    /// Where a run's processes sit.
    pub placement: Placement,
    /// Where the numbers come from.
    pub source: String,
}

impl Fabric {
    /// The rack of process `i`. A run larger than the fabric wraps around: its racks then hold
    /// more than `hosts_per_rack` hosts each.
    pub fn rack_of(&self, i: usize) -> usize {
        match self.placement {
            Placement::Packed => (i / self.hosts_per_rack) % self.racks,
            Placement::Spread => i % self.racks,
        }
    }

    /// A one-word summary: `RACKSxHOSTS/PLACEMENT/uplink=..Gb/s/switch=..ns`.
    pub fn describe(&self) -> String {
        format!(
            "{}x{}/{:?}/uplink={}/switch={}ns",
            self.racks,
            self.hosts_per_rack,
            self.placement,
            self.uplink_gbps
                .map_or("none".into(), |u| format!("{u}Gb/s")),
            self.switch_ns
        )
        .to_lowercase()
    }

    /// What the rack's hosts can send at once over its uplink bandwidth (1.0: full bisection).
    pub fn oversubscription(&self, link_gbps: f64) -> Option<f64> {
        self.uplink_gbps
            .map(|u| self.hosts_per_rack as f64 * link_gbps / u)
    }
}

/// The per-process CPU part of the cost model.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuCosts {
    /// Fixed cost of one `poll` call of a process (its loop iteration and memory checks).
    pub poll_ns: u64,
}

/// A hardware profile.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Short name (`r320-cx3`).
    pub name: String,
    /// Version of this profile's numbers; bump on any change so results name what produced them.
    pub version: u32,
    /// What hardware it models.
    pub description: String,
    /// The declared calibration targets.
    pub calibration: Calibration,
    /// NIC and link costs.
    pub nic: NicCosts,
    /// CPU costs.
    pub cpu: CpuCosts,
    /// The racks and switches between the hosts, if declared ([`Fabric`]).
    #[serde(default)]
    pub fabric: Option<Fabric>,
}

impl Profile {
    /// A built-in profile by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        let text = load_text("profile", BUILTIN, name_or_path)?;
        Profile::parse(name_or_path, &text)
    }

    /// The TOML text of a built-in profile by name, or of a file by path (to derive a new
    /// profile from, keeping its comments' sources in view).
    pub fn text(name_or_path: &str) -> Result<String, ProfileError> {
        load_text("profile", BUILTIN, name_or_path)
    }

    /// Parses and validates a profile from TOML text; `source_name` names it in errors.
    pub fn parse(source_name: &str, text: &str) -> Result<Profile, ProfileError> {
        let p: Profile = toml::from_str(text).map_err(|e| ProfileError::Malformed {
            source_name: source_name.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let invalid = |field, value: String, why| ProfileError::Invalid {
            source_name: source_name.to_string(),
            field,
            value,
            why,
        };
        if !(p.nic.link_gbps.is_finite() && p.nic.link_gbps > 0.0) {
            return Err(invalid(
                "nic.link_gbps",
                p.nic.link_gbps.to_string(),
                "must be a positive number",
            ));
        }
        if !(p.nic.msg_rate_mpps.is_finite() && p.nic.msg_rate_mpps > 0.0) {
            return Err(invalid(
                "nic.msg_rate_mpps",
                p.nic.msg_rate_mpps.to_string(),
                "must be a positive number",
            ));
        }
        if let Some(duplex) = p.nic.duplex_gbps {
            if !(duplex.is_finite() && duplex >= p.nic.link_gbps) {
                return Err(invalid(
                    "nic.duplex_gbps",
                    duplex.to_string(),
                    "must be at least nic.link_gbps (one direction alone reaches the link rate)",
                ));
            }
        }
        if let Some(d) = &p.nic.write_latency_dist {
            let ordered = [d.t_min_us, d.t_typical_us, d.p99_us, d.p999_us];
            if !ordered.iter().all(|x| x.is_finite() && *x > 0.0)
                || ordered.windows(2).any(|w| w[0] > w[1])
            {
                return Err(invalid(
                    "nic.write_latency_dist",
                    format!("{ordered:?}"),
                    "needs 0 < t_min_us <= t_typical_us <= p99_us <= p999_us",
                ));
            }
        }
        if let Some(f) = &p.fabric {
            if f.hosts_per_rack == 0 || f.racks == 0 {
                return Err(invalid(
                    "fabric",
                    format!("hosts_per_rack = {}, racks = {}", f.hosts_per_rack, f.racks),
                    "hosts_per_rack and racks must be positive",
                ));
            }
            match f.uplink_gbps {
                Some(u) if !(u.is_finite() && u > 0.0) => {
                    return Err(invalid(
                        "fabric.uplink_gbps",
                        u.to_string(),
                        "must be a positive number",
                    ))
                }
                None if f.racks > 1 => {
                    return Err(invalid(
                        "fabric.uplink_gbps",
                        "missing".into(),
                        "a fabric of several racks needs the racks' uplink bandwidth",
                    ))
                }
                _ => {}
            }
        }
        if let Some(r) = &p.nic.reconnect_range {
            if !(r.low_ns <= p.nic.reconnect_ns && p.nic.reconnect_ns <= r.high_ns) {
                return Err(invalid(
                    "nic.reconnect_range",
                    format!("[{}, {}]", r.low_ns, r.high_ns),
                    "must hold nic.reconnect_ns: low_ns <= reconnect_ns <= high_ns",
                ));
            }
        }
        if let Some(c) = &p.nic.permission_change {
            if !(c.low_ns <= c.ns && c.ns <= c.high_ns) {
                return Err(invalid(
                    "nic.permission_change",
                    format!("ns = {} in [{}, {}]", c.ns, c.low_ns, c.high_ns),
                    "needs low_ns <= ns <= high_ns",
                ));
            }
        }
        if p.nic.send_max_bytes == 0 {
            return Err(invalid(
                "nic.send_max_bytes",
                "0".into(),
                "must be positive",
            ));
        }
        Ok(p)
    }

    /// Wire time of `bytes` on one link direction.
    pub fn serialisation(&self, bytes: usize) -> Nanos {
        Nanos::from_f64(bytes as f64 * 8.0 / self.nic.link_gbps)
    }

    /// Minimum gap between two work requests leaving one NIC (the message-rate limit).
    pub fn wr_gap(&self) -> Nanos {
        Nanos::from_f64(1_000.0 / self.nic.msg_rate_mpps)
    }

    /// The limits a process sees.
    pub fn limits(&self) -> NicLimits {
        NicLimits {
            inline_max: self.nic.inline_max_bytes,
            send_max: self.nic.send_max_bytes,
        }
    }

    /// A one-line summary of the derived parameters, printed at the start of a run.
    pub fn describe(&self) -> String {
        format!(
            "profile={} v{} write_latency={}ns inline_max={}B link={}Gb/s msg_rate={}Mpps post={}ns completion={}ns poll={}ns reconnect={}ns",
            self.name,
            self.version,
            self.nic.write_latency_ns,
            self.nic.inline_max_bytes,
            self.nic.link_gbps,
            self.nic.msg_rate_mpps,
            self.nic.post_ns,
            self.nic.completion_ns,
            self.cpu.poll_ns,
            self.nic.reconnect_ns
        ) + &self
            .fabric
            .as_ref()
            .map_or(String::new(), |f| format!(" fabric={}", f.describe()))
    }
}

/// Wire costs precomputed from a profile in integer picoseconds, for the simulator's hot path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WireCosts {
    ps_per_byte: u64,
    /// Per byte of the two-way limit, where the profile declares one.
    duplex_ps_per_byte: Option<u64>,
    /// Per byte of a rack's uplinks, where the profile declares a fabric of several racks.
    uplink_ps_per_byte: Option<u64>,
    /// The extra latency of an op between racks (two more switches).
    cross_rack: Nanos,
    pub(crate) wr_gap: Nanos,
    /// Wire time of one full packet ([`MTU_BYTES`]).
    pub(crate) packet: Nanos,
}

/// The path MTU of the modelled fabrics (InfiniBand and RoCE NICs run 4096-byte packets).
pub(crate) const MTU_BYTES: usize = 4096;

impl WireCosts {
    pub(crate) fn of(p: &Profile) -> WireCosts {
        WireCosts {
            ps_per_byte: (8_000.0 / p.nic.link_gbps).round() as u64,
            duplex_ps_per_byte: p.nic.duplex_gbps.map(|g| (8_000.0 / g).round() as u64),
            uplink_ps_per_byte: p
                .fabric
                .as_ref()
                .and_then(|f| f.uplink_gbps)
                .map(|g| (8_000.0 / g).round().max(1.0) as u64),
            cross_rack: Nanos(p.fabric.as_ref().map_or(0, |f| 2 * f.switch_ns)),
            wr_gap: p.wr_gap(),
            packet: Nanos(0),
        }
        .with_packet()
    }

    fn with_packet(mut self) -> WireCosts {
        self.packet = self.serialisation(MTU_BYTES);
        self
    }

    /// Time `bytes` take of the NIC's two-way limit, where the profile declares one.
    #[inline]
    pub(crate) fn duplex(&self, bytes: usize) -> Option<Nanos> {
        self.duplex_ps_per_byte
            .map(|ps| Nanos((bytes as u64 * ps + 500) / 1_000))
    }

    /// Time `bytes` take of a rack's uplinks, where the profile declares them.
    #[inline]
    pub(crate) fn uplink(&self, bytes: usize) -> Option<Nanos> {
        self.uplink_ps_per_byte
            .map(|ps| Nanos((bytes as u64 * ps + 500) / 1_000))
    }

    /// The extra latency of the switches an op crosses: none within a rack, two between racks.
    #[inline]
    pub(crate) fn hops(&self, cross_rack: bool) -> Nanos {
        if cross_rack {
            self.cross_rack
        } else {
            Nanos::ZERO
        }
    }

    /// Wire time of `bytes`, rounded to the nearest nanosecond.
    #[inline]
    pub(crate) fn serialisation(&self, bytes: usize) -> Nanos {
        Nanos((bytes as u64 * self.ps_per_byte + 500) / 1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_distribution_is_a_quantile_function_around_the_median() {
        let p = Profile::load("r320-cx3").unwrap();
        let d = p.nic.write_latency_dist.expect("declared");
        assert_eq!(d.deviation_ns(0.5), 0.0);
        assert!((d.deviation_ns(0.0) - (d.t_min_us - d.t_typical_us) * 1e3).abs() < 1e-6);
        assert!((d.deviation_ns(0.99) - (d.p99_us - d.t_typical_us) * 1e3).abs() < 1e-6);
        assert_eq!(d.deviation_ns(0.9999), d.deviation_ns(0.999));
        let qs: Vec<f64> = (0..=100)
            .map(|i| d.deviation_ns(i as f64 / 100.0))
            .collect();
        assert!(qs.windows(2).all(|w| w[0] <= w[1]), "not monotonic: {qs:?}");
        let text = crate::runtime::sim::profile::BUILTIN
            .iter()
            .find(|(n, _)| *n == "r320-cx3")
            .unwrap()
            .1
            .replace("p99_us = 1.88", "p99_us = 0.5");
        let e = Profile::parse("bad.toml", &text).unwrap_err().to_string();
        assert!(
            e.contains("nic.write_latency_dist") && e.contains("t_min_us <= t_typical_us"),
            "{e}"
        );
    }

    #[test]
    fn every_builtin_parses() {
        for (name, _) in BUILTIN {
            let p = Profile::load(name).unwrap();
            assert_eq!(&p.name, name, "file name and `name` field must agree");
        }
    }

    #[test]
    fn unknown_profile_lists_the_known_ones() {
        let e = Profile::load("no-such").unwrap_err().to_string();
        assert!(
            e.contains("unknown profile `no-such`") && e.contains("r320-cx3"),
            "{e}"
        );
    }

    #[test]
    fn malformed_profile_names_field_and_line() {
        let text = BUILTIN[0]
            .1
            .replace("link_gbps = ", "link_gbps = \"fast\" #");
        let e = Profile::parse("bad.toml", &text).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("line"), "{e}");
        assert!(e.contains("link_gbps") || e.contains("invalid type"), "{e}");

        let text = BUILTIN[0].1.replace("poll_ns", "pol_ns");
        let e = Profile::parse("typo.toml", &text).unwrap_err().to_string();
        assert!(e.contains("pol_ns") && e.contains("line"), "{e}");

        let text = BUILTIN[0]
            .1
            .replace("msg_rate_mpps = ", "msg_rate_mpps = 0.0 #");
        let e = Profile::parse("zero.toml", &text).unwrap_err().to_string();
        assert!(e.contains("nic.msg_rate_mpps"), "{e}");
    }
}
