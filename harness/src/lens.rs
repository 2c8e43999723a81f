//! A paper figure under several software profiles ("lenses"): `none` (no software cost, the
//! model every earlier result was made with), `measured` (our code on this machine) and the
//! paper prototype's fitted profile. Each lens gets its own directory with the figure's CSV,
//! plots and full summary; the figure's `summary.md` puts every published claim's measurement
//! and verdict under each lens side by side and names the claims whose verdict changes.

use crate::protocols::PaperFigure;
use crate::verdict::{self, cell, verdict_text, Claim, Counts};
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
        let dir = out.join(&s.name);
        (f.make)(&crate::protocols::Making {
            out: &dir,
            commit,
            quick,
            software: s,
            progress: &progress,
        })?;
        if quick {
            mark_quick(&dir.join("summary.md"))?;
        }
        Ok(())
    })?;
    // The lenses in their order, then any other profile made this time.
    let mut names: Vec<String> = lenses(f).into_iter().map(String::from).collect();
    for s in &all {
        if !names.contains(&s.name) {
            names.push(s.name.clone());
        }
    }
    let present = present(out, &names)?;
    let software: Vec<Software> = present
        .iter()
        .map(|l| {
            all.iter()
                .find(|s| s.name == l.name)
                .cloned()
                .map_or_else(|| Software::load(&l.name).map_err(|e| e.to_string()), Ok)
        })
        .collect::<Result<_, _>>()?;
    let pngs = crate::reproduce::pngs(&out.join(f.software)).unwrap_or_default();
    let md = merge(f, commit, &present, &software, &pngs);
    crate::figure::write(&out.join("summary.md"), &md)
}

/// What a quick run's summaries say under their titles.
pub(crate) const QUICK: &str = "> **Quick run** (`--quick`): fewer points and shorter runs, a \
     smoke test. Not for publication: its verdicts are not the figure's.";

/// Marks the summary at `path` as a quick run's: ` (quick)` after its title and [`QUICK`]
/// under it, so neither a reader nor the merged summary can take it for a full run.
fn mark_quick(path: &Path) -> Result<(), String> {
    let md = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (title, rest) = md.split_once('\n').unwrap_or((&md, ""));
    crate::figure::write(path, &format!("{title} (quick)\n\n{QUICK}\n{rest}"))
}

/// One software profile's results of a figure: its summary and its claims.
pub(crate) struct Lens {
    pub(crate) name: String,
    pub(crate) summary: String,
    pub(crate) claims: Vec<Claim>,
}

/// The lenses of `names` made under `dir` (those with a summary), in that order, with their
/// claims records.
pub(crate) fn present(dir: &Path, names: &[String]) -> Result<Vec<Lens>, String> {
    let mut v = Vec::new();
    for name in names {
        let Ok(summary) = std::fs::read_to_string(dir.join(name).join("summary.md")) else {
            continue;
        };
        v.push(Lens {
            name: name.clone(),
            summary,
            claims: verdict::read(&dir.join(name))?,
        });
    }
    Ok(v)
}

/// The claims under every lens side by side, in the order the last lens lists them (then any
/// only the others have): a claims table with a rule column and a measurement and verdict
/// column per lens, and the claims whose verdict changes with the lens.
pub(crate) fn claims_table(present: &[Lens]) -> (String, Vec<String>) {
    let mut words: Vec<&str> = Vec::new();
    for lens in present.iter().rev() {
        for c in &lens.claims {
            if !words.contains(&c.words.as_str()) {
                words.push(&c.words);
            }
        }
    }
    let mut md = String::from("| published claim | rule |");
    for l in present {
        let _ = write!(md, " measured, `{}` | verdict |", l.name);
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|---|".repeat(present.len()));
    md.push('\n');
    let mut changed = Vec::new();
    for w in words {
        let of = |l: &'_ Lens| l.claims.iter().find(|c| c.words == w).cloned();
        let rule = present
            .iter()
            .rev()
            .find_map(of)
            .map(|c| c.rule.describe())
            .unwrap_or_default();
        let _ = write!(md, "| {} | {} |", cell(w), cell(&rule));
        let mut seen = Vec::new();
        for l in present {
            match of(l) {
                Some(c) => {
                    let _ = write!(md, " {} | {} |", cell(&c.measured), cell(&verdict_text(&c)));
                    seen.push(c.verdict);
                }
                None => md.push_str(" - | - |"),
            }
        }
        md.push('\n');
        seen.dedup();
        if seen.len() > 1 {
            changed.push(w.to_string());
        }
    }
    (md, changed)
}

/// The figure's summary over its lenses: `present` in lens order, `software` the matching
/// profiles, `pngs` the plots of the paper prototype's lens.
pub(crate) fn merge(
    f: &PaperFigure,
    commit: &str,
    present: &[Lens],
    software: &[Software],
    pngs: &[String],
) -> String {
    let title = present
        .iter()
        .rev()
        .find_map(|l| l.summary.lines().next())
        .unwrap_or("# ")
        .trim_start_matches("# ");
    let mut md = format!("# {title}, under {} software profiles\n\n", present.len());
    if present.iter().any(|l| l.summary.contains(QUICK)) {
        let _ = writeln!(md, "{QUICK}\n");
    }
    let _ = writeln!(
        md,
        "`harness figure {}` (commit {commit}) makes this figure once per software profile, each \
         in its own directory with its CSV files, plots, full summary (the hardware profile, \
         the discussion of every miss) and `claims.csv` (every claim as a record: words, rule, \
         measurement, interval, verdict). A software profile prices the work the protocol's \
         code reports (scans, decodes, copies, ordering, deliveries); `none` prices nothing, as \
         every result before software profiles. The paper prototype's profile comes last: its \
         verdicts are the ones the results index counts.\n",
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
    if present.iter().all(|l| l.claims.is_empty()) {
        md.push_str("\nThe per-profile summaries state no claims (see each one).\n");
        if let Some(l) = present.last() {
            if l.summary.contains(crate::figure::NO_CLAIMS) {
                let _ = writeln!(md, "\n{}.", crate::figure::NO_CLAIMS);
            }
        }
    } else {
        md.push_str("\n## The paper's claims under each software profile\n\n");
        md.push_str(crate::verdict::RULES);
        md.push_str("\n\n");
        let (table, changed) = claims_table(present);
        md.push_str(&table);
        md.push_str(
            "\nVerdicts per profile (reproduced / not reproduced / inconclusive / by construction):",
        );
        for l in present {
            let _ = write!(md, " `{}` {};", l.name, Counts::of(&l.claims).slashed());
        }
        md.pop();
        md.push_str(".\n\n");
        if changed.is_empty() {
            md.push_str("No claim's verdict depends on the software profile.\n");
        } else {
            md.push_str("Claims whose verdict changes with the software profile:\n\n");
            for w in changed {
                let _ = writeln!(md, "- {w}");
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Measure, Verdict};

    fn lens(name: &str, title: &str, fast: bool, median: f64) -> Lens {
        Lens {
            name: name.into(),
            summary: format!("# {title}\n\nintro\n"),
            claims: vec![
                Claim::trend("fast", "A above B", "2x".into(), fast),
                Claim::number("median ~7 us", 7.0, "us", Measure::point(median)),
                Claim::by_construction("copies", "0".into(), "not modelled"),
            ],
        }
    }

    /// A figure whose paper prototype has a software profile of its own.
    fn a_figure_with_a_priced_prototype() -> &'static PaperFigure {
        crate::protocols::figures()
            .find(|f| !["none", "measured"].contains(&f.software))
            .expect("a paper prototype with a fitted profile")
    }

    #[test]
    fn the_merged_summary_shows_each_claim_under_each_profile_and_names_the_flips() {
        let f = a_figure_with_a_priced_prototype();
        let paper = f.software;
        assert_eq!(lenses(f), ["none", "measured", paper]);
        let present = vec![
            lens("none", "X Fig. 1", true, 5.0),
            lens(paper, "X Fig. 1", true, 7.5),
        ];
        let software = vec![Software::none(), Software::load(paper).unwrap()];
        let md = merge(f, "abc", &present, &software, &["fig1.png".into()]);
        assert!(
            md.starts_with("# X Fig. 1, under 2 software profiles\n"),
            "{md}"
        );
        assert!(
            md.contains("| median ~7 us | number: 7.00 us ± 25% (5.25 .. 8.75) | 5.00 us | not reproduced | 7.50 us | reproduced |"),
            "{md}"
        );
        assert!(
            md.contains("changes with the software profile:\n\n- median ~7 us\n"),
            "{md}"
        );
        assert!(!md.contains("- fast\n"), "{md}");
        assert!(
            md.contains(&format!("`none` 1 / 1 / 0 / 1; `{paper}` 2 / 0 / 0 / 1.")),
            "{md}"
        );
        assert!(
            md.contains(&format!("![fig1.png]({paper}/fig1.png)")),
            "{md}"
        );
    }

    /// The lenses are read back from their directories: summary and `claims.csv`.
    #[test]
    fn present_lenses_are_read_with_their_claims_records() {
        let dir = std::env::temp_dir().join(format!("lens-{}", std::process::id()));
        let l = lens("none", "X", false, 9.0);
        std::fs::create_dir_all(dir.join("none")).unwrap();
        std::fs::write(dir.join("none/summary.md"), &l.summary).unwrap();
        verdict::write(&dir.join("none"), &l.claims).unwrap();
        let names = ["none".to_string(), "measured".to_string()];
        let got = present(&dir, &names).unwrap();
        assert_eq!(got.len(), 1, "only the lenses made are present");
        assert_eq!(got[0].claims[0].verdict, Verdict::NotReproduced);
        assert_eq!(got[0].claims.len(), 3);
        std::fs::remove_file(dir.join("none").join(verdict::FILE)).unwrap();
        let err = present(&dir, &names).err().unwrap();
        assert!(err.contains("make it again"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every figure is made under `none` and `measured`, and under its paper prototype's
    /// profile, last, each once: a prototype whose profile is one of the two (RDMC's is
    /// `measured`) has two lenses.
    #[test]
    fn every_figure_has_its_prototypes_lens_last_and_the_two_of_every_figure() {
        let mut two = 0;
        for f in crate::protocols::figures() {
            let l = lenses(f);
            assert!(l.contains(&"none") && l.contains(&"measured"), "{}", f.name);
            assert_eq!(l.last(), Some(&f.software), "{}", f.name);
            let mut once = l.clone();
            once.sort();
            once.dedup();
            assert_eq!(once.len(), l.len(), "{}: {l:?}", f.name);
            two += usize::from(l.len() == 2);
        }
        assert!(two > 0, "a figure whose prototype is measured");
    }
}
