//! The papers' claims as records. Each [`Claim`] holds the paper's words, the rule it is judged
//! by ([`Rule`]: a number within a tolerance, a factor within a band on its exponent, a bound, an
//! ordering, a trend), what we measured (a value, its 95% interval when the figure has one, and
//! whether it is only a lower bound), and the [`Verdict`] the rule gives. The verdict of a
//! numeric rule is computed here, from the rule and the measurement, never by the figure: a
//! figure states what it measured and which rule the paper's words call for.
//!
//! A figure writes its claims to `claims.csv` beside its `summary.md` ([`write()`]); the summary
//! shows them as a table with a rule column ([`table`]), and the lens summary and the results
//! index are rendered from the records ([`read`]), not parsed back from markdown.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// The tolerance of a quoted number: within 25% of it counts as reproduced.
pub const TOLERANCE: f64 = 0.25;

/// The band of a quoted factor, on its exponent: a measured factor `m` reproduces a published
/// `p` when `ln m / ln p` is within 25% of 1, and never more narrowly than within
/// [`FACTOR_FLOOR`] of `p`. A band on the factor itself would be loose for factors above 1 (a
/// scaling factor of 1.13 is within 25% of 1.37, though it gains a third of what the paper's
/// does) and tight for large ones; the floor keeps factors near 1 ("does not scale": 0.98)
/// from a band narrower than any measurement's noise.
pub const FACTOR_BAND: f64 = 0.25;

/// The narrowest band of a quoted factor: ±10% of it (on a log scale).
pub const FACTOR_FLOOR: f64 = 0.10;

/// The file a figure's claims are written to, in the directory of its summary.
pub const FILE: &str = "claims.csv";

/// How a claim is judged.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    /// A number the paper quotes, reproduced within a relative `tolerance`.
    Number {
        /// The paper's number.
        published: f64,
        /// Its unit.
        unit: String,
        /// The relative difference that still reproduces it.
        tolerance: f64,
    },
    /// A factor (a ratio, a speed-up, a scaling) the paper quotes, reproduced when the
    /// exponent is within `band` ([`FACTOR_BAND`]).
    Factor {
        /// The paper's factor.
        published: f64,
        /// The band on the exponent that still reproduces it.
        band: f64,
    },
    /// A bound the paper states ("more than 3x", "under 3%"): the measurement on its side.
    AtLeast {
        /// The bound.
        bound: f64,
        /// Its unit.
        unit: String,
    },
    /// See [`Rule::AtLeast`].
    AtMost {
        /// The bound.
        bound: f64,
        /// Its unit.
        unit: String,
    },
    /// An ordering between measured things ("A above B"), with the test applied.
    Ordering(String),
    /// A trend or a shape the paper describes without a number, with the test applied.
    Trend(String),
    /// A claim the model cannot contradict; the text says why.
    ByConstruction(String),
}

/// A claim's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The measurement meets the rule.
    Reproduced,
    /// It does not.
    NotReproduced,
    /// The measurement's interval straddles the rule's threshold, or the figure could not
    /// decide (its `why` says).
    Inconclusive,
    /// The measured maximum is a lower bound (the sweep stopped at its client cap still
    /// growing) and the bound does not decide the rule.
    LowerBound,
    /// The model cannot contradict the claim: agreement is no evidence.
    ByConstruction,
}

impl Verdict {
    /// The verdict as the tables and `claims.csv` write it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::NotReproduced => "not reproduced",
            Verdict::Inconclusive => "inconclusive",
            Verdict::LowerBound => "lower bound: inconclusive",
            Verdict::ByConstruction => "by construction",
        }
    }

    fn parse(s: &str) -> Option<Verdict> {
        [
            Verdict::Reproduced,
            Verdict::NotReproduced,
            Verdict::Inconclusive,
            Verdict::LowerBound,
            Verdict::ByConstruction,
        ]
        .into_iter()
        .find(|v| v.label() == s)
    }
}

/// What was measured for a numeric rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Measure {
    /// The value.
    pub value: f64,
    /// The 95% confidence interval of `value`, when the figure has one.
    pub ci95: Option<(f64, f64)>,
    /// `value` is a maximum the sweep did not reach: the truth is at least `value`.
    pub lower_bound: bool,
    /// What the number is, when the claim's words do not say it (`"p95 at 8 groups"`).
    pub detail: String,
}

impl Measure {
    /// A measured value without an interval.
    pub fn point(value: f64) -> Measure {
        Measure {
            value,
            ci95: None,
            lower_bound: false,
            detail: String::new(),
        }
    }

    /// A measured value with its 95% confidence interval.
    #[cfg(test)]
    pub fn ci(value: f64, lo: f64, hi: f64) -> Measure {
        Measure {
            ci95: Some((lo, hi)),
            ..Measure::point(value)
        }
    }

    /// A measured value with its 95% interval when there is one.
    pub fn within(value: f64, ci95: Option<(f64, f64)>) -> Measure {
        Measure {
            ci95,
            ..Measure::point(value)
        }
    }

    /// The ratio `num / den` of two positive measurements, its interval the widest the two
    /// intervals allow (`num_lo / den_hi` .. `num_hi / den_lo`; none unless both have one and
    /// the denominator's excludes zero, where the ratio is unbounded).
    /// A lower-bound numerator makes the ratio a lower bound.
    pub fn ratio(num: &Measure, den: &Measure) -> Measure {
        Measure {
            value: num.value / den.value,
            ci95: num
                .ci95
                .zip(den.ci95.filter(|(dl, _)| *dl > 0.0))
                .map(|((nl, nh), (dl, dh))| (nl / dh, nh / dl)),
            lower_bound: num.lower_bound,
            detail: String::new(),
        }
    }

    /// Whether the intervals of `self` and `o` overlap (without intervals: whether the values
    /// are equal), so that an ordering of the two rests on noise.
    pub fn overlaps(&self, o: &Measure) -> bool {
        let (a, b) = (
            self.ci95.unwrap_or((self.value, self.value)),
            o.ci95.unwrap_or((o.value, o.value)),
        );
        a.0 <= b.1 && b.0 <= a.1
    }

    /// The same measurement in another unit: value and interval multiplied by `k`.
    pub fn scaled(mut self, k: f64) -> Measure {
        self.value *= k;
        self.ci95 = self.ci95.map(|(lo, hi)| (lo * k, hi * k));
        self
    }

    /// Marks the value a lower bound when `capped` (a maximum still growing at the cap).
    pub fn capped(mut self, capped: bool) -> Measure {
        self.lower_bound = capped;
        self
    }

    /// Says what the value is.
    pub fn detail(mut self, detail: impl Into<String>) -> Measure {
        self.detail = detail.into();
        self
    }
}

/// One claim of a paper, judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    /// The paper's words, with its number where it quotes one.
    pub words: String,
    /// The rule it is judged by.
    pub rule: Rule,
    /// What we measured, as the tables show it.
    pub measured: String,
    /// The measured value and its interval, for numeric rules.
    pub value: Option<Measure>,
    /// What the rule gives.
    pub verdict: Verdict,
    /// Why the verdict is by construction or inconclusive, when it is.
    pub why: String,
}

impl Claim {
    /// A quoted number (`published`, in `unit`), judged within [`TOLERANCE`].
    pub fn number(words: &str, published: f64, unit: &str, m: Measure) -> Claim {
        Claim::numeric(
            words,
            Rule::Number {
                published,
                unit: unit.into(),
                tolerance: TOLERANCE,
            },
            m,
        )
    }

    /// A quoted factor, judged on its exponent within [`FACTOR_BAND`].
    pub fn factor(words: &str, published: f64, m: Measure) -> Claim {
        Claim::numeric(
            words,
            Rule::Factor {
                published,
                band: FACTOR_BAND,
            },
            m,
        )
    }

    /// A stated lower bound: the measurement at least `bound`.
    pub fn at_least(words: &str, bound: f64, unit: &str, m: Measure) -> Claim {
        let unit = unit.into();
        Claim::numeric(words, Rule::AtLeast { bound, unit }, m)
    }

    /// A stated upper bound: the measurement at most `bound`.
    pub fn at_most(words: &str, bound: f64, unit: &str, m: Measure) -> Claim {
        let unit = unit.into();
        Claim::numeric(words, Rule::AtMost { bound, unit }, m)
    }

    /// An ordering between measured things: `rule` says what is compared, `holds` the result.
    pub fn ordering(words: &str, rule: &str, measured: String, holds: bool) -> Claim {
        Claim::tested(words, Rule::Ordering(rule.into()), measured, holds)
    }

    /// A trend or shape without a quoted number: `rule` says the test, `holds` the result.
    pub fn trend(words: &str, rule: &str, measured: String, holds: bool) -> Claim {
        Claim::tested(words, Rule::Trend(rule.into()), measured, holds)
    }

    /// A claim about something the model does not model (`why`): it holds, as no evidence.
    pub fn by_construction(words: &str, measured: String, why: &str) -> Claim {
        Claim {
            words: words.into(),
            rule: Rule::ByConstruction(why.into()),
            measured,
            value: None,
            verdict: Verdict::ByConstruction,
            why: why.into(),
        }
    }

    /// Makes an ordering or a trend inconclusive when `undecided` (its test rests on values
    /// whose intervals overlap, or on a maximum that is only a lower bound), saying `why`.
    pub fn undecided_if(mut self, undecided: bool, why: &str) -> Claim {
        if undecided && self.verdict != Verdict::ByConstruction {
            self.verdict = Verdict::Inconclusive;
            self.why = why.into();
        }
        self
    }

    fn tested(words: &str, rule: Rule, measured: String, holds: bool) -> Claim {
        Claim {
            words: words.into(),
            rule,
            measured,
            value: None,
            verdict: if holds {
                Verdict::Reproduced
            } else {
                Verdict::NotReproduced
            },
            why: String::new(),
        }
    }

    fn numeric(words: &str, rule: Rule, m: Measure) -> Claim {
        let (lo, hi) = rule.accepted().expect("a numeric rule accepts an interval");
        let accepts = |x: f64| lo <= x && x <= hi;
        let (verdict, why) = if m.lower_bound {
            // The truth lies in [value, infinity).
            if hi.is_infinite() && accepts(m.value) {
                (Verdict::Reproduced, String::new())
            } else if m.value > hi {
                (Verdict::NotReproduced, String::new())
            } else {
                (
                    Verdict::LowerBound,
                    "the maximum was still growing at the client cap".into(),
                )
            }
        } else if let Some((l, h)) = m.ci95 {
            if accepts(l) && accepts(h) {
                (Verdict::Reproduced, String::new())
            } else if h < lo || l > hi {
                (Verdict::NotReproduced, String::new())
            } else {
                (
                    Verdict::Inconclusive,
                    "the 95% interval straddles the rule's threshold".into(),
                )
            }
        } else if accepts(m.value) {
            (Verdict::Reproduced, String::new())
        } else {
            (Verdict::NotReproduced, String::new())
        };
        Claim {
            words: words.into(),
            measured: measured_text(&rule, &m),
            rule,
            value: Some(m),
            verdict,
            why,
        }
    }
}

impl Rule {
    /// The values a numeric rule accepts, as a closed interval (`None` for the others).
    fn accepted(&self) -> Option<(f64, f64)> {
        Some(match *self {
            Rule::Number {
                published,
                tolerance,
                ..
            } => {
                let (a, b) = (published * (1.0 - tolerance), published * (1.0 + tolerance));
                (a.min(b), a.max(b))
            }
            Rule::Factor { published, band } => {
                let half = (band * published.ln().abs()).max(FACTOR_FLOOR.ln_1p());
                (published * (-half).exp(), published * half.exp())
            }
            Rule::AtLeast { bound, .. } => (bound, f64::INFINITY),
            Rule::AtMost { bound, .. } => (f64::NEG_INFINITY, bound),
            _ => return None,
        })
    }

    /// The rule in words, as the tables' rule column shows it.
    pub fn describe(&self) -> String {
        match self {
            Rule::Number {
                published,
                unit,
                tolerance,
            } => {
                let (lo, hi) = self.accepted().expect("numeric");
                format!(
                    "number: {}{} ± {:.0}% ({} .. {})",
                    num(*published),
                    sp(unit),
                    tolerance * 100.0,
                    num(lo),
                    num(hi)
                )
            }
            Rule::Factor { published, band } => {
                let (lo, hi) = self.accepted().expect("numeric");
                format!(
                    "factor: {}x, exponent ± {:.0}%, at least ± {:.0}% ({}x .. {}x)",
                    num(*published),
                    band * 100.0,
                    FACTOR_FLOOR * 100.0,
                    num(lo),
                    num(hi)
                )
            }
            Rule::AtLeast { bound, unit } => format!("bound: at least {}{}", num(*bound), sp(unit)),
            Rule::AtMost { bound, unit } => format!("bound: at most {}{}", num(*bound), sp(unit)),
            Rule::Ordering(r) => format!("ordering: {r}"),
            Rule::Trend(r) => format!("trend: {r}"),
            Rule::ByConstruction(_) => "none: the model cannot contradict it".into(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Rule::Number { .. } => "number",
            Rule::Factor { .. } => "factor",
            Rule::AtLeast { .. } => "at least",
            Rule::AtMost { .. } => "at most",
            Rule::Ordering(_) => "ordering",
            Rule::Trend(_) => "trend",
            Rule::ByConstruction(_) => "by construction",
        }
    }
}

/// `unit` with a leading space, or nothing (`%` without one).
fn sp(unit: &str) -> String {
    if unit.is_empty() || unit == "%" {
        unit.to_string()
    } else {
        format!(" {unit}")
    }
}

/// A number at the precision a table wants: three significant digits, no fewer integer ones.
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 || a == 0.0 || !x.is_finite() {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The measured column of a numeric claim: the value and unit, its interval, what it is.
fn measured_text(rule: &Rule, m: &Measure) -> String {
    let (unit, x) = match rule {
        Rule::Number { unit, .. } | Rule::AtLeast { unit, .. } | Rule::AtMost { unit, .. } => {
            (sp(unit), "")
        }
        _ => (String::new(), "x"),
    };
    let mut s = format!(
        "{}{}{x}{unit}",
        if m.lower_bound { "at least " } else { "" },
        num(m.value)
    );
    if let Some((lo, hi)) = m.ci95 {
        let _ = write!(s, " [{}, {}]", num(lo), num(hi));
    }
    if !m.detail.is_empty() {
        let _ = write!(s, " ({})", m.detail);
    }
    s
}

/// The verdict column: the verdict, and why when it is by construction or inconclusive.
pub fn verdict_text(c: &Claim) -> String {
    if c.why.is_empty() {
        c.verdict.label().to_string()
    } else {
        format!("{} ({})", c.verdict.label(), c.why)
    }
}

/// The head of a claims table.
pub const TABLE_HEAD: &str = "| published claim | rule | measured | verdict |\n|---|---|---|---|\n";

/// What the claims are judged by, as the tables' preamble says it.
pub const RULES: &str =
    "Rules: a quoted number is reproduced within 25% of it (with an interval, the whole 95% \
         interval within; an interval that straddles the threshold is inconclusive); a quoted \
         factor when its exponent is within 25% (ln measured / ln published in 0.75 .. 1.25), the band \
         never narrower than ±10% of the factor; a \
         maximum still growing at the client cap is a lower bound, which decides only a rule it \
         already passes or fails; trends and orderings by the test in the rule column; claims \
         about what the model does not model hold by construction and count as no evidence.";

/// A summary's claims table: what the claims are judged by, then one row per claim.
pub fn table(claims: &[Claim]) -> String {
    let mut md = format!("{RULES}\n\n{TABLE_HEAD}");
    for c in claims {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            cell(&c.words),
            cell(&c.rule.describe()),
            cell(&c.measured),
            cell(&verdict_text(c))
        );
    }
    md
}

/// Text safe in a markdown table cell.
pub fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// How many claims got each verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Reproduced.
    pub reproduced: usize,
    /// Not reproduced.
    pub not_reproduced: usize,
    /// Inconclusive, lower bounds included.
    pub inconclusive: usize,
    /// By construction.
    pub by_construction: usize,
}

impl Counts {
    /// Counts `claims`.
    pub fn of(claims: &[Claim]) -> Counts {
        let mut n = Counts::default();
        for c in claims {
            match c.verdict {
                Verdict::Reproduced => n.reproduced += 1,
                Verdict::NotReproduced => n.not_reproduced += 1,
                Verdict::Inconclusive | Verdict::LowerBound => n.inconclusive += 1,
                Verdict::ByConstruction => n.by_construction += 1,
            }
        }
        n
    }

    /// All claims counted.
    pub fn total(&self) -> usize {
        self.reproduced + self.not_reproduced + self.inconclusive + self.by_construction
    }

    /// Adds `o`.
    pub fn add(&mut self, o: Counts) {
        self.reproduced += o.reproduced;
        self.not_reproduced += o.not_reproduced;
        self.inconclusive += o.inconclusive;
        self.by_construction += o.by_construction;
    }

    /// `reproduced / not / inconclusive / by construction`, as the index writes it.
    pub fn slashed(&self) -> String {
        format!(
            "{} / {} / {} / {}",
            self.reproduced, self.not_reproduced, self.inconclusive, self.by_construction
        )
    }
}

/// A row of `claims.csv`.
#[derive(Serialize, Deserialize)]
struct Row {
    claim: String,
    kind: String,
    rule: String,
    published: Option<f64>,
    unit: String,
    tolerance: Option<f64>,
    measured: String,
    value: Option<f64>,
    ci95_lo: Option<f64>,
    ci95_hi: Option<f64>,
    lower_bound: bool,
    verdict: String,
    why: String,
}

impl Row {
    fn of(c: &Claim) -> Row {
        let (published, unit, tolerance) = match &c.rule {
            Rule::Number {
                published,
                unit,
                tolerance,
            } => (Some(*published), unit.clone(), Some(*tolerance)),
            Rule::Factor { published, band } => (Some(*published), String::new(), Some(*band)),
            Rule::AtLeast { bound, unit } | Rule::AtMost { bound, unit } => {
                (Some(*bound), unit.clone(), None)
            }
            _ => (None, String::new(), None),
        };
        let m = c.value.as_ref();
        Row {
            claim: c.words.clone(),
            kind: c.rule.kind().into(),
            rule: match &c.rule {
                Rule::Ordering(r) | Rule::Trend(r) | Rule::ByConstruction(r) => r.clone(),
                r => r.describe(),
            },
            published,
            unit,
            tolerance,
            measured: c.measured.clone(),
            value: m.map(|m| m.value),
            ci95_lo: m.and_then(|m| m.ci95).map(|c| c.0),
            ci95_hi: m.and_then(|m| m.ci95).map(|c| c.1),
            lower_bound: m.is_some_and(|m| m.lower_bound),
            verdict: c.verdict.label().into(),
            why: c.why.clone(),
        }
    }

    fn claim(self) -> Result<Claim, String> {
        let need = |x: Option<f64>| x.ok_or(format!("claim `{}`: a number is missing", self.claim));
        let rule = match self.kind.as_str() {
            "number" => Rule::Number {
                published: need(self.published)?,
                unit: self.unit.clone(),
                tolerance: need(self.tolerance)?,
            },
            "factor" => Rule::Factor {
                published: need(self.published)?,
                band: need(self.tolerance)?,
            },
            "at least" => Rule::AtLeast {
                bound: need(self.published)?,
                unit: self.unit.clone(),
            },
            "at most" => Rule::AtMost {
                bound: need(self.published)?,
                unit: self.unit.clone(),
            },
            "ordering" => Rule::Ordering(self.rule.clone()),
            "trend" => Rule::Trend(self.rule.clone()),
            "by construction" => Rule::ByConstruction(self.rule.clone()),
            k => return Err(format!("claim `{}`: unknown rule kind `{k}`", self.claim)),
        };
        let verdict = Verdict::parse(&self.verdict).ok_or(format!(
            "claim `{}`: unknown verdict `{}`",
            self.claim, self.verdict
        ))?;
        Ok(Claim {
            value: self.value.map(|value| Measure {
                value,
                ci95: self.ci95_lo.zip(self.ci95_hi),
                lower_bound: self.lower_bound,
                detail: String::new(),
            }),
            words: self.claim,
            rule,
            measured: self.measured,
            verdict,
            why: self.why,
        })
    }
}

/// Writes `claims` to `dir/claims.csv` (a header only when the paper states none).
pub fn write(dir: &Path, claims: &[Claim]) -> Result<(), String> {
    let path = dir.join(FILE);
    let err = |e: csv::Error| format!("{}: {e}", path.display());
    let mut w = csv::Writer::from_path(&path).map_err(err)?;
    if claims.is_empty() {
        w.write_record([
            "claim",
            "kind",
            "rule",
            "published",
            "unit",
            "tolerance",
            "measured",
            "value",
            "ci95_lo",
            "ci95_hi",
            "lower_bound",
            "verdict",
            "why",
        ])
        .map_err(err)?;
    }
    for c in claims {
        w.serialize(Row::of(c)).map_err(err)?;
    }
    w.flush().map_err(|e| format!("{}: {e}", path.display()))
}

/// The claims a figure wrote to `dir/claims.csv`.
pub fn read(dir: &Path) -> Result<Vec<Claim>, String> {
    let path = dir.join(FILE);
    let mut r = csv::Reader::from_path(&path).map_err(|e| {
        format!(
            "{}: {e} (a figure made before claims were records: make it again with `harness \
             figure`)",
            path.display()
        )
    })?;
    r.deserialize::<Row>()
        .map(|row| {
            row.map_err(|e| format!("{}: {e}", path.display()))?
                .claim()
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_judged_by_its_tolerance_and_an_interval_that_straddles_it_is_inconclusive() {
        let c = |m| Claim::number("p95 with 8 groups: ~150 us", 150.0, "us", m).verdict;
        assert_eq!(c(Measure::point(120.0)), Verdict::Reproduced);
        assert_eq!(c(Measure::point(20.2)), Verdict::NotReproduced);
        assert_eq!(c(Measure::ci(150.0, 140.0, 160.0)), Verdict::Reproduced);
        assert_eq!(c(Measure::ci(110.0, 100.0, 120.0)), Verdict::Inconclusive);
        assert_eq!(c(Measure::ci(50.0, 40.0, 60.0)), Verdict::NotReproduced);
        let full = Claim::number("x", 150.0, "us", Measure::ci(110.0, 100.0, 120.0));
        assert_eq!(full.measured, "110 us [100, 120]");
        assert_eq!(full.rule.describe(), "number: 150 us ± 25% (112 .. 188)");
        assert!(verdict_text(&full).starts_with("inconclusive (the 95% interval"));
    }

    /// The band is on the exponent: 1.13 does not reproduce a scaling factor of 1.37 (it gains
    /// 39% of the paper's growth in log terms), 1.30 does; a large factor gets a wide band.
    #[test]
    fn a_factor_is_judged_on_its_exponent() {
        let c = |p, m| Claim::factor("scaling", p, Measure::point(m)).verdict;
        assert_eq!(c(1.37, 1.13), Verdict::NotReproduced);
        assert_eq!(c(1.37, 1.30), Verdict::Reproduced);
        assert_eq!(c(8.0, 2.27), Verdict::NotReproduced);
        assert_eq!(c(8.0, 5.2), Verdict::Reproduced);
        assert_eq!(c(8.0, 13.0), Verdict::Reproduced);
        assert_eq!(c(8.0, 14.0), Verdict::NotReproduced);
        // Near 1 the floor holds: "does not scale" (0.98) is met by 1.00, not by 1.13.
        assert_eq!(c(0.98, 1.00), Verdict::Reproduced);
        assert_eq!(c(0.98, 0.90), Verdict::Reproduced);
        assert_eq!(c(0.98, 1.13), Verdict::NotReproduced);
    }

    /// A capped maximum decides only what its lower bound decides.
    #[test]
    fn a_lower_bound_decides_only_what_it_already_passes_or_fails() {
        let m = |v| Measure::point(v).capped(true);
        let n = |v| Claim::number("max ~250 k", 250.0, "k msg/s", m(v)).verdict;
        assert_eq!(n(100.0), Verdict::LowerBound);
        assert_eq!(n(250.0), Verdict::LowerBound, "could still grow past 312.5");
        assert_eq!(n(400.0), Verdict::NotReproduced);
        let at_least = |v| Claim::at_least("more than 3x", 3.0, "", m(v)).verdict;
        assert_eq!(at_least(3.5), Verdict::Reproduced);
        assert_eq!(at_least(2.0), Verdict::LowerBound);
        let at_most = |v| Claim::at_most("under 3%", 3.0, "%", m(v)).verdict;
        assert_eq!(at_most(4.0), Verdict::NotReproduced);
        assert_eq!(at_most(1.0), Verdict::LowerBound);
        assert_eq!(
            Claim::number("x", 250.0, "k msg/s", m(100.0)).measured,
            "at least 100 k msg/s"
        );
    }

    #[test]
    fn ratios_take_the_widest_interval_and_overlaps_are_seen() {
        let r = Measure::ratio(&Measure::ci(8.0, 6.0, 10.0), &Measure::ci(2.0, 1.0, 4.0));
        assert_eq!((r.value, r.ci95), (4.0, Some((1.5, 10.0))));
        assert_eq!(
            Measure::ratio(&Measure::point(8.0), &Measure::ci(2.0, 1.0, 4.0)).ci95,
            None
        );
        assert!(
            Measure::ratio(&Measure::point(8.0).capped(true), &Measure::point(2.0)).lower_bound
        );
        assert!(Measure::ci(5.0, 4.0, 6.0).overlaps(&Measure::ci(6.5, 5.9, 7.0)));
        assert!(!Measure::ci(5.0, 4.0, 6.0).overlaps(&Measure::ci(6.5, 6.1, 7.0)));
        assert!(!Measure::point(5.0).overlaps(&Measure::point(5.1)));
    }

    #[test]
    fn trends_and_orderings_carry_their_test_and_can_be_undecided() {
        let t = Claim::trend("falls", "each point below the last", "3, 2, 1".into(), true);
        assert_eq!(t.verdict, Verdict::Reproduced);
        assert_eq!(t.rule.describe(), "trend: each point below the last");
        let o = Claim::ordering("A above B", "A's max / B's max > 1", "1.02".into(), true)
            .undecided_if(true, "the intervals overlap");
        assert_eq!(verdict_text(&o), "inconclusive (the intervals overlap)");
        let b = Claim::by_construction("no copies", "0".into(), "copies are not modelled")
            .undecided_if(true, "ignored");
        assert_eq!(
            verdict_text(&b),
            "by construction (copies are not modelled)"
        );
    }

    #[test]
    fn claims_round_trip_through_their_csv_and_render_with_a_rule_column() {
        let claims = vec![
            Claim::number(
                "median ~7 us",
                7.0,
                "us",
                Measure::ci(11.1, 10.9, 11.3).detail("1 group, 1 client"),
            ),
            Claim::factor("scaling 1.37x, a, b", 1.37, Measure::point(1.13)),
            Claim::at_least("more than 3x", 3.0, "", Measure::point(2.0).capped(true)),
            Claim::at_most("under 3%", 3.0, "%", Measure::point(0.5)),
            Claim::ordering("A | B", "A > B", "1.2 vs 1.1".into(), false),
            Claim::trend("grows", "each above the last", "1, 2".into(), true)
                .undecided_if(true, "overlap"),
            Claim::by_construction("no GC", "-".into(), "GC not modelled"),
        ];
        let dir = std::env::temp_dir().join(format!("verdict-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, &claims).unwrap();
        let back = read(&dir).unwrap();
        // The detail lives in the measured text; everything else comes back as it was.
        let strip = |v: &[Claim]| -> Vec<Claim> {
            v.iter()
                .cloned()
                .map(|mut c| {
                    if let Some(m) = c.value.as_mut() {
                        m.detail.clear();
                    }
                    c
                })
                .collect()
        };
        assert_eq!(strip(&back), strip(&claims));
        assert_eq!(
            Counts::of(&back),
            Counts {
                reproduced: 1,
                not_reproduced: 3,
                inconclusive: 2,
                by_construction: 1
            }
        );
        assert_eq!(Counts::of(&back).slashed(), "1 / 3 / 2 / 1");
        write(&dir, &[]).unwrap();
        assert!(read(&dir).unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
        let md = table(&claims);
        assert!(md.contains(
            "| median ~7 us | number: 7.00 us ± 25% (5.25 .. 8.75) | 11.1 us [10.9, 11.3] (1 group, 1 client) | not reproduced |"
        ), "{md}");
        assert!(md.contains("| A \\| B | ordering: A > B |"), "{md}");
        assert!(md.contains("| bound: at least 3.00 | at least 2.00 | lower bound: inconclusive (the maximum was still growing at the client cap) |"), "{md}");
    }
}
