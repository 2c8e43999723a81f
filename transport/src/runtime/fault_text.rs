//! The text form of a scheduled fault, `KIND:WHO@AT[+SPAN][=VALUE]`, shared by the simulator's
//! faults ([`crate::runtime::sim::Fault`]) and the harness's faults of processes and links on
//! real runtimes (`--fault kill:0@3s`), so a schedule reads the same whichever runtime it
//! is for. Each reader gives `KIND`, `WHO` and `VALUE` their meaning; this module only splits
//! the text and reads the times, exactly (see [`Nanos::from_str`](std::str::FromStr)).

use crate::time::Nanos;

/// A fault's text split into its parts; the times are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultText<'a> {
    /// What happens (`kill`, `pause`, `delay`, ...).
    pub kind: &'a str,
    /// To whom: a process, or `FROM>TO` for a link, as the kind defines.
    pub who: &'a str,
    /// When it starts.
    pub at: Nanos,
    /// How long it lasts, for a fault that ends.
    pub span: Option<Nanos>,
    /// The kind's parameter (a delay, a probability, a factor), the text after `=`.
    pub value: Option<&'a str>,
}

impl<'a> FaultText<'a> {
    /// Splits `s`; an error says which part is missing or which time does not read.
    pub fn parse(s: &'a str) -> Result<FaultText<'a>, String> {
        let (kind, rest) = s
            .split_once(':')
            .ok_or_else(|| format!("`{s}` has no `KIND:`"))?;
        let (who, when) = rest
            .split_once('@')
            .ok_or_else(|| format!("`{s}` has no `@TIME`"))?;
        let (when, value) = match when.split_once('=') {
            Some((w, v)) => (w, Some(v)),
            None => (when, None),
        };
        let (at, span) = match when.split_once('+') {
            Some((at, span)) => (at, Some(span.parse()?)),
            None => (when, None),
        };
        Ok(FaultText {
            kind,
            who,
            at: at.parse()?,
            span,
            value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_splits_into_kind_who_time_span_and_value() {
        let t = FaultText::parse("delay:0>3,4@1s+2.5ms=5us~1us").unwrap();
        assert_eq!(
            t,
            FaultText {
                kind: "delay",
                who: "0>3,4",
                at: Nanos(1_000_000_000),
                span: Some(Nanos(2_500_000)),
                value: Some("5us~1us"),
            }
        );
        let t = FaultText::parse("kill:2@750us").unwrap();
        assert_eq!((t.at, t.span, t.value), (Nanos(750_000), None, None));
        for (bad, says) in [
            ("kill", "no `KIND:`"),
            ("kill:2", "no `@TIME`"),
            ("kill:2@soon", "not a duration"),
            ("pause:2@1s+", "not a duration"),
        ] {
            let err = FaultText::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
