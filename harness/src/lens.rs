//! A paper figure under several software profiles ("lenses"): `none` (no software cost, the
//! model every earlier result was made with), `measured` (our code on this machine) and the
//! paper prototype's fitted profile. Each lens gets its own directory with the figure's CSV,
//! plots and full summary; the figure's `summary.md` puts every published claim's measurement
//! and verdict under each lens side by side and names the claims whose verdict changes.

use crate::figure::{verdicts, CLAIM_HEAD};
use crate::protocols::PaperFigure;
use std::fmt::Write as _;
use std::path::Path;
use transport::runtime::sim::Software;

/// The software profiles a figure is made under, in the order its summary shows them: from no
/// cost to the paper prototype's, which comes last (its verdicts are the figure's headline).
pub(crate) fn lenses(f: &PaperFigure) -> Vec<&'static str> {
    let mut v = vec!["none", "measured"];
    v.retain(|&l| l != f.software);
    v.push(f.software);
    v
}

/// Makes `f` under each of `software` (every lens when empty) into `out/<profile>/`, then
/// rewrites `out/summary.md` over every lens present there.
pub(crate) fn make(
    f: &PaperFigure,
    out: &Path,
    commit: &str,
    quick: bool,
    software: &[Software],
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(), String> {
    let all: Vec<Software> = if software.is_empty() {
        lenses(f)
            .into_iter()
            .map(Software::load)
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?
    } else {
        software.to_vec()
    };
    // The lenses side by side: the points of one fill the cores while another's last sweep
    // runs. Each writes only its own directory, so the outputs are those of one after another.
    crate::figure::in_parallel(&all, |s| {
        progress(&format!("{} under software {}", f.name, s.describe()));
        let progress = |line: &str| progress(&format!("[{}] {line}", s.name));
        (f.make)(&out.join(&s.name), commit, quick, s, &progress)
    })?;
    // The lenses in their order, then any other profile made this time.
    let mut names: Vec<String> = lenses(f).into_iter().map(String::from).collect();
    for s in &all {
        if !names.contains(&s.name) {
            names.push(s.name.clone());
        }
    }
    let present: Vec<(String, String)> = names
        .into_iter()
        .filter_map(|name| {
            let text = std::fs::read_to_string(out.join(&name).join("summary.md")).ok()?;
            Some((name, text))
        })
        .collect();
    let software: Vec<Software> = present
        .iter()
        .map(|(n, _)| {
            all.iter()
                .find(|s| &s.name == n)
                .cloned()
                .map_or_else(|| Software::load(n).map_err(|e| e.to_string()), Ok)
        })
        .collect::<Result<_, _>>()?;
    let pngs = crate::reproduce::pngs(&out.join(f.software)).unwrap_or_default();
    let md = merge(f, commit, &present, &software, &pngs);
    crate::figure::write(&out.join("summary.md"), &md)
}

/// A claims row split into statement, measurement and verdict.
fn cells(row: &str) -> (&str, &str, &str) {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut it = inner.rsplitn(3, '|');
    let verdict = it.next().unwrap_or("").trim();
    let measured = it.next().unwrap_or("").trim();
    let statement = it.next().unwrap_or("").trim();
    (statement, measured, verdict)
}

/// The short verdict (`holds by construction (why)` shortened to `by construction`).
fn short(verdict: &str) -> &str {
    if verdict.starts_with(crate::figure::BY_CONSTRUCTION) {
        "by construction"
    } else {
        verdict
    }
}

/// The figure's summary over its lenses: `present` holds (profile name, its summary) in lens
/// order, `software` the matching profiles, `pngs` the plots of the paper prototype's lens.
pub(crate) fn merge(
    f: &PaperFigure,
    commit: &str,
    present: &[(String, String)],
    software: &[Software],
    pngs: &[String],
) -> String {
    let title = present
        .iter()
        .rev()
        .find_map(|(_, s)| s.lines().next())
        .unwrap_or("# ")
        .trim_start_matches("# ");
    let mut md = format!("# {title}, under {} software profiles\n\n", present.len());
    let _ = writeln!(
        md,
        "`harness figure {}` (commit {commit}) makes this figure once per software profile, each \
         in its own directory with its CSV files, plots and full summary (the hardware profile, \
         the discussion of every miss). A software profile prices the work the protocol's code \
         reports (scans, decodes, copies, ordering, deliveries); `none` prices nothing, as every \
         result before software profiles. The paper prototype's profile comes last: its verdicts \
         are the ones the results index counts.\n",
        f.name
    );
    for s in software {
        let _ = writeln!(
            md,
            "- [`{0}`]({0}/summary.md) v{1}: {2}. Prices: {3}. Calibrated on: {4}",
            s.name,
            s.version,
            s.description,
            s.describe(),
            s.calibration.source
        );
    }
    // Claims in the order the last lens lists them, then any only the others have.
    let rows: Vec<Vec<(&str, &str, &str)>> = present
        .iter()
        .map(|(_, s)| verdicts(s).1.into_iter().map(cells).collect())
        .collect();
    let mut statements: Vec<&str> = Vec::new();
    for lens in rows.iter().rev() {
        for (st, _, _) in lens {
            if !statements.contains(st) {
                statements.push(st);
            }
        }
    }
    if statements.is_empty() {
        md.push_str("\nThe per-profile summaries state no claims table (see each one).\n");
        if let Some((_, s)) = present.last() {
            if s.contains(crate::figure::NO_CLAIMS) {
                let _ = writeln!(md, "\n{}.", crate::figure::NO_CLAIMS);
            }
        }
    } else {
        md.push_str("\n## The paper's claims under each software profile\n\n| published claim |");
        for (name, _) in present {
            let _ = write!(md, " measured, `{name}` | verdict |");
        }
        md.push_str("\n|---|");
        md.push_str(&"---|---|".repeat(present.len()));
        md.push('\n');
        let mut changed = Vec::new();
        for st in &statements {
            let _ = write!(md, "| {st} |");
            let mut seen: Vec<&str> = Vec::new();
            for lens in &rows {
                match lens.iter().find(|r| r.0 == *st) {
                    Some((_, m, v)) => {
                        let _ = write!(md, " {m} | {v} |");
                        seen.push(short(v));
                    }
                    None => md.push_str(" - | - |"),
                }
            }
            md.push('\n');
            seen.dedup();
            if seen.len() > 1 {
                changed.push(*st);
            }
        }
        md.push_str("\nVerdicts per profile (reproduced / not reproduced / by construction):");
        for ((name, s), _) in present.iter().zip(&rows) {
            let [y, n, b] = verdicts(s).0;
            let _ = write!(md, " `{name}` {y} / {n} / {b};");
        }
        md.pop();
        md.push_str(".\n\n");
        if changed.is_empty() {
            md.push_str("No claim's verdict depends on the software profile.\n");
        } else {
            md.push_str("Claims whose verdict changes with the software profile:\n\n");
            for st in changed {
                let _ = writeln!(md, "- {st}");
            }
        }
    }
    if !pngs.is_empty() {
        let _ = writeln!(md, "\n## Plots under `{}`\n", f.software);
        for p in pngs {
            let _ = writeln!(md, "![{p}]({}/{p})", f.software);
        }
    }
    md
}

/// The header of the claims table of a summary (the lens table's, or [`CLAIM_HEAD`]).
pub(crate) fn claims_head(summary: &str) -> String {
    let mut lines = summary.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("| published claim |") {
            return format!("{l}\n{}\n", lines.next().unwrap_or("|---|---|---|"));
        }
    }
    CLAIM_HEAD.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::{claim, claim_by_construction};

    fn summary(title: &str, fast: bool, flat: bool) -> String {
        let mut s = format!("# {title}\n\nintro\n\n{CLAIM_HEAD}");
        claim(&mut s, "fast", "2x".into(), fast);
        claim(&mut s, "flat", "-40%".into(), flat);
        claim_by_construction(&mut s, "copies", "0".into(), "not modelled");
        s
    }

    #[test]
    fn the_merged_summary_shows_each_claim_under_each_profile_and_names_the_flips() {
        let f = &crate::protocols::ramcast::figures::FIGURES[0];
        assert_eq!(lenses(f), ["none", "measured", "ramcast-java"]);
        let present = vec![
            ("none".to_string(), summary("X Fig. 1", true, false)),
            ("ramcast-java".to_string(), summary("X Fig. 1", true, true)),
        ];
        let software = vec![Software::none(), Software::load("ramcast-java").unwrap()];
        let md = merge(f, "abc", &present, &software, &["fig1.png".into()]);
        assert!(
            md.starts_with("# X Fig. 1, under 2 software profiles\n"),
            "{md}"
        );
        assert!(
            md.contains("| flat | -40% | not reproduced | -40% | reproduced |"),
            "{md}"
        );
        assert!(
            md.contains("changes with the software profile:\n\n- flat\n"),
            "{md}"
        );
        assert!(!md.contains("- fast\n"), "{md}");
        assert!(
            md.contains("`none` 1 / 1 / 1; `ramcast-java` 2 / 0 / 1."),
            "{md}"
        );
        assert!(md.contains("![fig1.png](ramcast-java/fig1.png)"), "{md}");
        // The index counts the last lens (the paper prototype's) and heads its rows right.
        assert_eq!(verdicts(&md).0, [2, 0, 1]);
        assert!(claims_head(&md).starts_with("| published claim | measured, `none` |"));
    }

    #[test]
    fn a_figure_whose_prototype_is_measured_has_two_lenses() {
        let f = crate::protocols::figures()
            .find(|f| f.name == "rdmc-fig4")
            .unwrap();
        assert_eq!(lenses(f), ["none", "measured"]);
    }
}
