//! Software profiles: what the simulator charges for the work a protocol reports
//! ([`crate::Work`]), separate from the hardware profile. Versioned TOML files like hardware
//! profiles, each number documented with its source in the file; chosen with `--software` in
//! the harness. Costs are declared numbers, so runs stay deterministic and never depend on the
//! machine that simulates them.

use super::posting::{Discipline, Posting};
use super::profile::{load_text, ProfileError};
use crate::time::Nanos;
use crate::work::Work;
use serde::Deserialize;

/// The software profiles shipped with the workbench, by name.
pub const SOFTWARE: &[(&str, &str)] = &[
    ("none", include_str!("../../../software/none.toml")),
    ("measured", include_str!("../../../software/measured.toml")),
    (
        "ramcast-java",
        include_str!("../../../software/ramcast-java.toml"),
    ),
    ("tram-cpp", include_str!("../../../software/tram-cpp.toml")),
    (
        "ridge-java",
        include_str!("../../../software/ridge-java.toml"),
    ),
    (
        "heron-java",
        include_str!("../../../software/heron-java.toml"),
    ),
];

/// The software profile used when none is named: no software cost, the model every result
/// before software profiles was made with.
pub const DEFAULT_SOFTWARE: &str = "none";

/// The largest price of one unit of work a profile may declare: a second. Larger ones are
/// typos, and would overflow the simulator's clock.
const MAX_PRICE: u64 = 1_000_000_000;

/// What a software profile's costs were calibrated on.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoftwareCalibration {
    /// The one declared number (a published measurement, or this machine's timings) and where
    /// it comes from.
    pub source: String,
    /// The machine a measured profile was timed on (CPU model and cores).
    #[serde(default)]
    pub machine: Option<String>,
    /// The workbench commit that produced the profile.
    #[serde(default)]
    pub commit: Option<String>,
    /// The day it was produced (UTC, YYYY-MM-DD).
    #[serde(default)]
    pub date: Option<String>,
    /// For a profile fitted to a published number: how.
    #[serde(default)]
    pub fit: Option<SoftwareFit>,
}

/// How a paper prototype's profile was fitted to its one published number: a shape (another
/// profile's per-message prices) scaled by one factor until the simulation gives the number.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoftwareFit {
    /// The profile whose per-message prices were scaled (name and version).
    pub shape: String,
    /// The factor found.
    pub scale: f64,
    /// The published number.
    pub published: f64,
    /// What the simulation gives with the fitted prices.
    pub simulated: f64,
    /// The unit of both.
    pub unit: String,
    /// Whether the copy price was scaled too (a prototype whose gap to our code is per byte:
    /// serialisation and stream copies); otherwise copies keep the shape's price.
    #[serde(default)]
    pub copies_scaled: bool,
    /// Whether only the row price was fitted (an application over a multicast layer whose
    /// prices were fitted already): `scale` is then the row price in units of
    /// [`ROW_PRICE_UNIT_NS`], and every other price is the shape's.
    #[serde(default)]
    pub rows_only: bool,
}

/// The unit of a rows-only fit's `scale`, in nanoseconds per row ([`SoftwareFit::rows_only`]).
pub const ROW_PRICE_UNIT_NS: f64 = 100.0;

/// The price of one unit of each kind of [`Work`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkCosts {
    /// [`Work::Scan`], per slot looked at.
    pub scan_ns: u64,
    /// [`Work::Decode`], per message.
    pub decode_ns: u64,
    /// [`Work::Copy`], per byte, in picoseconds.
    pub copy_ps_per_byte: u64,
    /// [`Work::Order`], per message.
    pub order_ns: u64,
    /// [`Work::Deliver`], per message.
    pub deliver_ns: u64,
    /// [`Work::Row`], per row (absent from profiles written before it: free).
    #[serde(default)]
    pub row_ns: u64,
}

impl WorkCosts {
    /// The CPU time of `units` of `kind` (copies rounded to the nearest nanosecond; an absurd
    /// price saturates rather than wrapping into a short time).
    pub fn of(&self, kind: Work, units: u64) -> Nanos {
        let per_unit = |ns: u64| ns.saturating_mul(units);
        Nanos(match kind {
            Work::Scan => per_unit(self.scan_ns),
            Work::Decode => per_unit(self.decode_ns),
            Work::Copy => per_unit(self.copy_ps_per_byte).saturating_add(500) / 1_000,
            Work::Order => per_unit(self.order_ns),
            Work::Deliver => per_unit(self.deliver_ns),
            Work::Row => per_unit(self.row_ns),
        })
    }

    /// Whether every cost is zero.
    pub fn is_free(&self) -> bool {
        *self == WorkCosts::default()
    }
}

/// A software profile.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Software {
    /// Short name (`none`).
    pub name: String,
    /// Version of its numbers; bump on any change so results name what produced them.
    pub version: u32,
    /// What software it models.
    pub description: String,
    /// What its costs were calibrated on.
    pub calibration: SoftwareCalibration,
    /// The price of each kind of work.
    pub costs: WorkCosts,
    /// How its processes post ops to several targets and wait for completions (absent from
    /// profiles written before disciplines: collective, never waiting).
    #[serde(default)]
    pub posting: Posting,
}

impl Software {
    /// A built-in software profile by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<Software, ProfileError> {
        let text = load_text("software profile", SOFTWARE, name_or_path)?;
        Software::parse(name_or_path, &text)
    }

    /// Parses a software profile from TOML text; `source_name` names it in errors.
    pub fn parse(source_name: &str, text: &str) -> Result<Software, ProfileError> {
        let s: Software = toml::from_str(text).map_err(|e| ProfileError::Malformed {
            source_name: source_name.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let c = &s.costs;
        for (field, value) in [
            ("costs.scan_ns", c.scan_ns),
            ("costs.decode_ns", c.decode_ns),
            ("costs.copy_ps_per_byte", c.copy_ps_per_byte),
            ("costs.order_ns", c.order_ns),
            ("costs.deliver_ns", c.deliver_ns),
            ("costs.row_ns", c.row_ns),
        ] {
            if value > MAX_PRICE {
                return Err(ProfileError::Invalid {
                    source_name: source_name.to_string(),
                    field,
                    value: value.to_string(),
                    why: "a price per unit of work must be at most 1 s (10^9 ns or ps)",
                });
            }
        }
        if let Some(f) = s
            .calibration
            .fit
            .as_ref()
            .filter(|f| f.rows_only && f.copies_scaled)
        {
            return Err(ProfileError::Invalid {
                source_name: source_name.to_string(),
                field: "calibration.fit",
                value: format!(
                    "rows_only = {}, copies_scaled = {}",
                    f.rows_only, f.copies_scaled
                ),
                why: "a fit sets either the row price alone or scales the shape's prices, not both",
            });
        }
        Ok(s)
    }

    /// This profile as `protocol` runs under it: the discipline of every process is the one
    /// [`Posting::of`] gives that protocol.
    pub fn for_protocol(&self, protocol: &str) -> Software {
        let mut s = self.clone();
        s.posting.discipline = self.posting.of(protocol);
        s
    }

    /// The profile of no software cost. Parsed once: every [`super::SimConfig::new`] takes it.
    pub fn none() -> Software {
        static NONE: std::sync::OnceLock<Software> = std::sync::OnceLock::new();
        NONE.get_or_init(|| Software::load(DEFAULT_SOFTWARE).expect("built-in"))
            .clone()
    }

    /// The profile as TOML that [`Software::parse`] reads back, each number with the comment
    /// saying what it prices; `header` (comment lines) says where the file comes from.
    pub fn to_toml(&self, header: &str) -> String {
        let q = |s: &str| toml::Value::String(s.to_string()).to_string();
        let mut t = String::new();
        for line in header.lines() {
            t.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
        }
        t.push_str(&format!(
            "name = {}\nversion = {}\ndescription = {}\n\n[calibration]\nsource = {}\n",
            q(&self.name),
            self.version,
            q(&self.description),
            q(&self.calibration.source)
        ));
        let c = &self.calibration;
        for (key, value) in [
            ("machine", &c.machine),
            ("commit", &c.commit),
            ("date", &c.date),
        ] {
            if let Some(v) = value {
                t.push_str(&format!("{key} = {}\n", q(v)));
            }
        }
        if let Some(f) = &c.fit {
            t.push_str(&format!(
                "\n# {}\n\
                 [calibration.fit]\nshape = {}\nscale = {:?}\npublished = {:?}\nsimulated = {:?}\nunit = {}\n",
                if f.rows_only {
                    "The prices of `shape`, and a row price of `scale` x 100 ns."
                } else if f.copies_scaled {
                    "Every price of `shape` but the scan's, copies included, times `scale`."
                } else {
                    "Per-message prices of `shape` times `scale`; copies and scans keep the shape's."
                },
                q(&f.shape),
                f.scale,
                f.published,
                f.simulated,
                q(&f.unit)
            ));
            if f.copies_scaled {
                t.push_str("copies_scaled = true\n");
            }
            if f.rows_only {
                t.push_str("rows_only = true\n");
            }
        }
        let k = &self.costs;
        t.push_str(&format!(
            "\n# Price per unit of each kind of work a protocol reports (transport::Work).\n\
             [costs]\n\
             # Per slot, log entry or buffer position a scan looks at.\nscan_ns = {}\n\
             # Per message taken out of memory and checked.\ndecode_ns = {}\n\
             # Per payload byte copied in memory, in picoseconds.\ncopy_ps_per_byte = {}\n\
             # Per message whose place in the order is decided here.\norder_ns = {}\n\
             # Per message handed to the application.\ndeliver_ns = {}\n",
            k.scan_ns, k.decode_ns, k.copy_ps_per_byte, k.order_ns, k.deliver_ns
        ));
        // Written only when priced, so profiles from before rows existed read the same.
        if k.row_ns > 0 {
            t.push_str(&format!(
                "# Per application row read or written.\nrow_ns = {}\n",
                k.row_ns
            ));
        }
        // Written only when declared, so profiles from before disciplines read the same.
        if self.posting != Posting::default() {
            let p = &self.posting;
            t.push_str(&format!(
                "\n# How a process posts ops to several targets and awaits their completions:\n\
                 # collective (back to back, never waits), batch (back to back, then awaits them\n\
                 # all), each (awaits every completion before the next post) or window:N (at most\n\
                 # N outstanding).\n\
                 [posting]\ndiscipline = {}\n",
                q(&p.discipline.to_string())
            ));
            if let Some(source) = &p.source {
                t.push_str(&format!("source = {}\n", q(source)));
            }
            if !p.protocols.is_empty() {
                t.push_str("\n# Protocols whose prototype posts otherwise.\n[posting.protocols]\n");
                for (protocol, d) in &p.protocols {
                    t.push_str(&format!("{protocol} = {}\n", q(&d.to_string())));
                }
            }
        }
        t
    }

    /// A one-line summary, printed at the start of a run.
    pub fn describe(&self) -> String {
        let c = &self.costs;
        let mut d = format!(
            "software={} v{} scan={}ns decode={}ns copy={}ps/B order={}ns deliver={}ns",
            self.name,
            self.version,
            c.scan_ns,
            c.decode_ns,
            c.copy_ps_per_byte,
            c.order_ns,
            c.deliver_ns
        );
        // Named only when priced: the multicast protocols' reports stay as they were.
        if c.row_ns > 0 {
            d.push_str(&format!(" row={}ns", c.row_ns));
        }
        // Named only where a process waits: collective reports stay as they were.
        if self.posting.discipline != Discipline::Collective {
            d.push_str(&format!(" posting={}", self.posting.discipline));
        }
        for (protocol, discipline) in &self.posting.protocols {
            d.push_str(&format!(" posting[{protocol}]={discipline}"));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_and_none_is_free() {
        for (name, _) in SOFTWARE {
            assert_eq!(&Software::load(name).unwrap().name, name);
        }
        assert!(Software::none().costs.is_free());
    }

    #[test]
    fn bad_software_profiles_are_refused_with_the_reason() {
        let e = Software::load("no-such").unwrap_err().to_string();
        assert!(
            e.contains("unknown software profile `no-such`") && e.contains("none"),
            "{e}"
        );
        let text = SOFTWARE[0].1.replace("scan_ns", "scan_nanos");
        let e = Software::parse("typo.toml", &text).unwrap_err().to_string();
        assert!(e.contains("scan_nanos") && e.contains("line"), "{e}");
        let text = SOFTWARE[0].1.replace("order_ns = 0", "order_ns = -3");
        assert!(Software::parse("negative.toml", &text).is_err());
        let text = SOFTWARE[0]
            .1
            .replace("order_ns = 0", "order_ns = 5000000000");
        let e = Software::parse("huge.toml", &text).unwrap_err().to_string();
        assert!(
            e.contains("costs.order_ns") && e.contains("at most 1 s"),
            "{e}"
        );
        let text = format!("{}row_ns = 5000000000\n", SOFTWARE[0].1);
        let e = Software::parse("huge-row.toml", &text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("costs.row_ns") && e.contains("at most 1 s"),
            "{e}"
        );
    }

    #[test]
    fn a_profile_written_as_toml_reads_back_the_same() {
        let mut s = Software::none();
        s.name = "fitted \"java\"".into();
        s.version = 3;
        s.calibration.machine = Some("2 x Xeon".into());
        s.calibration.commit = Some("abc123".into());
        s.calibration.date = Some("2026-11-23".into());
        s.calibration.fit = Some(SoftwareFit {
            shape: "measured v1".into(),
            scale: 12.5,
            published: 250_000.0,
            simulated: 249_100.0,
            unit: "msg/s".into(),
            copies_scaled: false,
            rows_only: false,
        });
        s.costs = WorkCosts {
            scan_ns: 2,
            decode_ns: 31,
            copy_ps_per_byte: 95,
            order_ns: 40,
            deliver_ns: 9,
            row_ns: 0,
        };
        let text = s.to_toml("");
        assert!(!text.contains("row_ns"), "{text}");
        assert_eq!(Software::parse("written", &text).unwrap(), s);
        s.costs.row_ns = 120;
        assert!(s.describe().ends_with(" row=120ns"), "{}", s.describe());
        let text = s.to_toml("made by a test\n\nsecond line");
        assert!(
            text.starts_with("# made by a test\n#\n# second line\n"),
            "{text}"
        );
        assert_eq!(Software::parse("written", &text).unwrap(), s);
        s.calibration.fit.as_mut().unwrap().copies_scaled = true;
        let text = s.to_toml("");
        assert!(text.contains("copies included"), "{text}");
        assert_eq!(Software::parse("written", &text).unwrap(), s);
        let f = s.calibration.fit.as_mut().unwrap();
        (f.copies_scaled, f.rows_only) = (false, true);
        let text = s.to_toml("");
        assert!(text.contains("row price of `scale` x 100 ns"), "{text}");
        assert_eq!(Software::parse("written", &text).unwrap(), s);
        s.posting = Posting {
            discipline: Discipline::EACH,
            protocols: [("tram".to_string(), "window:4".parse().unwrap())].into(),
            source: Some("TRAM section 3, \"awaited collectively\"".into()),
        };
        let text = s.to_toml("");
        assert!(
            text.contains("[posting.protocols]\ntram = \"window:4\""),
            "{text}"
        );
        assert_eq!(Software::parse("written", &text).unwrap(), s);
        assert!(
            s.describe()
                .ends_with(" posting=each posting[tram]=window:4"),
            "{}",
            s.describe()
        );
        assert_eq!(
            s.for_protocol("tram").posting.discipline.to_string(),
            "window:4"
        );
        assert_eq!(
            s.for_protocol("ramcast").posting.discipline,
            Discipline::EACH
        );
        s.posting = Posting::default();
        let both = text.replace("rows_only = true", "rows_only = true\ncopies_scaled = true");
        let e = Software::parse("both", &both).unwrap_err().to_string();
        assert!(
            e.contains("calibration.fit") && e.contains("not both"),
            "{e}"
        );
        assert_eq!(
            Software::parse("none", &Software::none().to_toml("")).unwrap(),
            Software::none()
        );
    }

    #[test]
    fn costs_are_per_unit_and_copies_round_to_the_nanosecond() {
        let c = WorkCosts {
            scan_ns: 7,
            decode_ns: 100,
            copy_ps_per_byte: 250,
            order_ns: 300,
            deliver_ns: 50,
            row_ns: 80,
        };
        assert_eq!(c.of(Work::Scan, 3), Nanos(21));
        assert_eq!(c.of(Work::Row, 4), Nanos(320));
        assert_eq!(c.of(Work::Copy, 64), Nanos(16));
        assert_eq!(c.of(Work::Copy, 3), Nanos(1));
        assert_eq!(c.of(Work::Deliver, 0), Nanos::ZERO);
        assert_eq!(c.of(Work::Order, u64::MAX), Nanos(u64::MAX));
        assert!(!c.is_free());
    }
}
