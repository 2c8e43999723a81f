//! `harness reproduce`: every paper figure in one command, a table of wall and CPU times and
//! verdicts, and `results/README.md`, the index of every figure under the results directory.

use crate::experiment::process_cpu;
use crate::protocols::{self, PaperFigure};
use crate::verdict::Counts;
use crate::COMMIT;
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use transport::runtime::sim::Software;

/// A figure the harness can reproduce: its name (also its directory) and what it shows.
#[derive(Clone, Debug)]
pub(crate) struct Figure {
    pub(crate) name: String,
    pub(crate) about: String,
}

/// What one figure's reproduction took and found.
#[derive(Clone, Debug)]
pub(crate) struct Done {
    pub(crate) name: String,
    pub(crate) wall_s: f64,
    /// CPU seconds this process spent on it, every thread, user and system (`None` where the
    /// platform does not tell). Figures run one after another, so the difference is theirs.
    pub(crate) cpu_s: Option<f64>,
    /// The verdicts of its claims under the paper prototype's software profile.
    pub(crate) verdicts: Counts,
}

/// Makes a figure in a directory, reporting progress lines.
pub(crate) type Make<'a> = &'a dyn Fn(&Figure, &Path, &(dyn Fn(&str) + Sync)) -> Result<(), String>;

/// Makes each of `wanted` under `root/NAME` with `make`, one after another, behind a progress
/// bar; then rewrites `root/README.md` over every figure of `all` present under `root`.
pub(crate) fn reproduce(
    wanted: &[Figure],
    all: &[Figure],
    root: &Path,
    make: Make<'_>,
) -> Result<Vec<Done>, String> {
    let bar = ProgressBar::new(wanted.len() as u64).with_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut done = Vec::new();
    for f in wanted {
        bar.set_message(f.name.clone());
        let start = Instant::now();
        let cpu_start = process_cpu();
        let progress = |line: &str| bar.set_message(format!("{}: {line}", f.name));
        make(f, &root.join(&f.name), &progress)?;
        let lens = paper_figure(&f.name).software;
        let claims = crate::verdict::read(&root.join(&f.name).join(lens))?;
        done.push(Done {
            name: f.name.clone(),
            wall_s: start.elapsed().as_secs_f64(),
            cpu_s: process_cpu()
                .zip(cpu_start)
                .map(|(end, start)| end.saturating_sub(start).as_secs_f64()),
            verdicts: Counts::of(&claims),
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let mut present = Vec::new();
    for f in all {
        let dir = root.join(&f.name);
        if dir.join("summary.md").exists() {
            // The plots of the paper prototype's software profile, as the summary shows them.
            let pf = paper_figure(&f.name);
            let pngs = pngs(&dir.join(pf.software))
                .unwrap_or_default()
                .into_iter()
                .map(|p| format!("{}/{p}", pf.software))
                .collect();
            let names: Vec<String> = crate::lens::lenses(pf)
                .into_iter()
                .map(String::from)
                .collect();
            present.push((f.clone(), crate::lens::present(&dir, &names), pngs));
        }
    }
    let index = index(&present);
    std::fs::write(root.join("README.md"), index)
        .map_err(|e| format!("cannot write {}: {e}", root.join("README.md").display()))?;
    Ok(done)
}

/// The default results directory: a quick run never lands among the published results.
fn results_dir(quick: bool) -> &'static str {
    if quick {
        "results-quick"
    } else {
        "results"
    }
}

/// `harness figure NAME`.
pub(crate) fn figure_command(a: crate::FigureArgs) -> Result<ExitCode, String> {
    let f = paper_figure(&a.name);
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(results_dir(a.make.quick)).join(f.name));
    let software = load_all(&a.make.software)?;
    println!(
        "harness figure {}: runtime=sim profile={} software={} seed=1 commit={COMMIT} out={}",
        f.name,
        f.profile,
        if software.is_empty() {
            crate::lens::lenses(f).join(",")
        } else {
            software
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
                .join(",")
        },
        out.display()
    );
    let pool = a.make.pool()?;
    pool.install(|| {
        crate::lens::make(f, &out, COMMIT, a.make.quick, &software, &|line: &str| {
            println!("{line}")
        })
    })?;
    println!("wrote {}/summary.md", out.display());
    Ok(ExitCode::SUCCESS)
}

/// The software profiles named on the command line.
fn load_all(names: &[String]) -> Result<Vec<Software>, String> {
    names
        .iter()
        .map(|n| Software::load(n).map_err(|e| e.to_string()))
        .collect()
}

/// The registered figure `name` (the command line only takes registered names).
fn paper_figure(name: &str) -> &'static PaperFigure {
    protocols::figures()
        .find(|f| f.name == name)
        .expect("clap takes only registered figure names")
}

/// `harness reproduce`.
pub(crate) fn reproduce_command(a: crate::ReproduceArgs) -> Result<ExitCode, String> {
    let figure = |f: &PaperFigure| Figure {
        name: f.name.to_string(),
        about: f.about.to_string(),
    };
    let wanted: Vec<Figure> = if a.all {
        protocols::figures().map(figure).collect()
    } else {
        a.names.iter().map(|n| figure(paper_figure(n))).collect()
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(results_dir(a.make.quick)));
    println!(
        "harness reproduce: {} figures, runtime=sim seed=1 commit={COMMIT} out={}{}",
        wanted.len(),
        out.display(),
        if a.make.quick { " (quick)" } else { "" }
    );
    let all: Vec<Figure> = protocols::figures().map(figure).collect();
    let software = load_all(&a.make.software)?;
    let make = |f: &Figure, out: &Path, progress: &(dyn Fn(&str) + Sync)| {
        crate::lens::make(
            paper_figure(&f.name),
            out,
            COMMIT,
            a.make.quick,
            &software,
            progress,
        )
    };
    let pool = a.make.pool()?;
    let done = pool.install(|| reproduce(&wanted, &all, &out, &make))?;
    print!("{}", times_table(&done));
    println!("wrote {}", out.join("README.md").display());
    Ok(ExitCode::SUCCESS)
}

/// The final table: per figure its wall time, its CPU time and the cores busy on average (CPU
/// over wall: what more cores could give it), its verdicts; then the totals.
fn times_table(done: &[Done]) -> String {
    let cpu = |c: Option<f64>| c.map_or("-".to_string(), |c| format!("{c:.1}"));
    let cores = |c: Option<f64>, wall: f64| {
        c.filter(|_| wall > 0.0)
            .map_or("-".to_string(), |c| format!("{:.1}", c / wall))
    };
    let mut t = format!(
        "{:<16} {:>8} {:>8} {:>6}  {:>10} {:>14} {:>12} {:>16}\n",
        "figure",
        "wall s",
        "CPU s",
        "cores",
        "reproduced",
        "not reproduced",
        "inconclusive",
        "by construction"
    );
    let row = |t: &mut String, name: &str, wall: f64, c: Option<f64>, v: Counts| {
        let _ = writeln!(
            t,
            "{name:<16} {wall:>8.1} {:>8} {:>6}  {:>10} {:>14} {:>12} {:>16}",
            cpu(c),
            cores(c, wall),
            v.reproduced,
            v.not_reproduced,
            v.inconclusive,
            v.by_construction
        );
    };
    for d in done {
        row(&mut t, &d.name, d.wall_s, d.cpu_s, d.verdicts);
    }
    let wall = done.iter().map(|d| d.wall_s).sum();
    let cpu_total = done.iter().map(|d| d.cpu_s).sum::<Option<f64>>();
    let mut sums = Counts::default();
    for d in done {
        sums.add(d.verdicts);
    }
    row(&mut t, "total", wall, cpu_total, sums);
    t
}

/// The PNG files of a figure's directory, sorted.
pub(crate) fn pngs(dir: &Path) -> Result<Vec<String>, String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".png"))
        .collect();
    v.sort();
    Ok(v)
}

/// A figure of the results index: what it is, its lenses as read back (an error when a lens
/// was made before claims were records), and its plots.
pub(crate) type Indexed = (Figure, Result<Vec<crate::lens::Lens>, String>, Vec<String>);

/// The results index: per figure, its command, plots and verdict counts under the paper
/// prototype's software profile, then every claim under every profile, rendered from the
/// figures' `claims.csv` records. Holds nothing that changes between two runs of one commit
/// (no wall times).
pub(crate) fn index(figures: &[Indexed]) -> String {
    let mut md = String::from(
        "# Results\n\nGenerated by `harness reproduce` (every figure: `harness reproduce --all`; one: \
         `harness figure NAME`). Each figure runs on the simulator, deterministically: one commit \
         gives the same files. Its directory holds CSV files with every parameter, the plots, and \
         `summary.md`, which puts the papers' numbers beside ours and gives a verdict per \
         published claim; `claims.csv` holds the same claims as records (words, rule, \
         measurement, interval, verdict). Each figure is made under several software profiles \
         (`none`: no software cost; `measured`: our code on the calibration machine; the paper \
         prototype's, fitted to published numbers), each in its own subdirectory; its \
         `summary.md` gives every claim's verdict under each, and the counts below are the paper \
         prototype's (the last column of each table). `transport/` holds the RDMA write \
         microbenchmark of the README's main command.\n\n",
    );
    md.push_str(crate::verdict::RULES);
    md.push_str(
        "\n\n| figure | what | command | plots | claims reproduced / not / inconclusive / by construction |\n|---|---|---|---|---|\n",
    );
    let mut total = Counts::default();
    for (f, lenses, pngs) in figures {
        let counts = match lenses {
            Err(_) => "no claims records: make it again with `harness figure`".to_string(),
            Ok(l) => match l.last() {
                Some(last) if !last.claims.is_empty() => {
                    let c = Counts::of(&last.claims);
                    total.add(c);
                    c.slashed()
                }
                _ => "none published".to_string(),
            },
        };
        let plots: Vec<String> = pngs
            .iter()
            .map(|p| format!("[{p}]({}/{p})", f.name))
            .collect();
        let _ = writeln!(
            md,
            "| [{0}]({0}/summary.md) | {1} | `harness figure {0}` | {2} | {counts} |",
            f.name,
            f.about,
            plots.join(" ")
        );
    }
    let _ = writeln!(
        md,
        "| total | | | | {} of {} claims |",
        total.slashed(),
        total.total()
    );
    md.push_str("\n## Published targets no figure judges\n\n| target | why not |\n|---|---|\n");
    for (target, why) in crate::protocols::uncovered() {
        let _ = writeln!(md, "| {target} | {why} |");
    }
    md.push_str("\n## Claims and verdicts\n");
    for (f, lenses, _) in figures {
        let Ok(lenses) = lenses else { continue };
        if lenses.iter().all(|l| l.claims.is_empty()) {
            continue;
        }
        let _ = write!(
            md,
            "\n### {}\n\n{}",
            f.name,
            crate::lens::claims_table(lenses).0
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_counts_each_verdict_and_lists_the_claims() {
        use crate::lens::Lens;
        use crate::verdict::{Claim, Measure};
        let lens = |name: &str, fast: bool| Lens {
            name: name.into(),
            summary: "# X\n".into(),
            claims: vec![
                Claim::trend("fast", "A above B", "2x".into(), fast),
                Claim::number("flat", 1.0, "", Measure::point(1.6)),
                Claim::by_construction("copies", "0".into(), "not modelled"),
            ],
        };
        let f = |n: &str| Figure {
            name: n.into(),
            about: format!("{n} about"),
        };
        let md = index(&[
            (
                f("x-fig1"),
                Ok(vec![lens("none", false), lens("x-java", true)]),
                vec!["x-java/fig1.png".into()],
            ),
            (f("x-fig2"), Err("old".into()), vec![]),
            (f("x-fig3"), Ok(vec![]), vec![]),
        ]);
        assert!(
            md.contains("| [x-fig1](x-fig1/summary.md) | x-fig1 about | `harness figure x-fig1` | [x-java/fig1.png](x-fig1/x-java/fig1.png) | 1 / 1 / 0 / 1 |"),
            "{md}"
        );
        assert!(
            md.contains("| x-fig2 about | `harness figure x-fig2` |  | no claims records"),
            "{md}"
        );
        assert!(
            md.contains("| x-fig3 about | `harness figure x-fig3` |  | none published |"),
            "{md}"
        );
        assert!(
            md.contains("| total | | | | 1 / 1 / 0 / 1 of 3 claims |"),
            "{md}"
        );
        assert!(
            md.contains("| fast | trend: A above B | 2x | not reproduced | 2x | reproduced |"),
            "{md}"
        );
        assert!(
            md.contains("| copies | none: the model cannot contradict it | 0 | by construction (not modelled) |"),
            "{md}"
        );
        assert!(!md.contains("### x-fig3"), "{md}");
        // Every target left out is listed with its reason.
        assert!(md.contains("## Published targets no figure judges"), "{md}");
        // ... in registry order.
        let mut at = 0;
        for (target, why) in crate::protocols::uncovered() {
            let row = format!("| {target} | {why} |");
            let found = md
                .find(&row)
                .unwrap_or_else(|| panic!("{row} missing: {md}"));
            assert!(found > at, "{row} out of registry order");
            at = found;
        }
    }

    #[test]
    fn the_times_table_gives_cpu_time_and_cores_busy_and_sums_them() {
        let done = |name: &str, wall_s, cpu_s, v: [usize; 4]| Done {
            name: name.into(),
            wall_s,
            cpu_s,
            verdicts: Counts {
                reproduced: v[0],
                not_reproduced: v[1],
                inconclusive: v[2],
                by_construction: v[3],
            },
        };
        let table = times_table(&[
            done("a-fig1", 10.0, Some(35.0), [2, 1, 1, 0]),
            done("b-fig2", 5.0, Some(5.0), [0, 0, 0, 1]),
        ]);
        let rows: Vec<Vec<&str>> = table
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows.len(), 4, "{table}");
        assert_eq!(
            rows[1],
            ["a-fig1", "10.0", "35.0", "3.5", "2", "1", "1", "0"]
        );
        assert_eq!(rows[2], ["b-fig2", "5.0", "5.0", "1.0", "0", "0", "0", "1"]);
        assert_eq!(
            rows[3],
            ["total", "15.0", "40.0", "2.7", "2", "1", "1", "1"]
        );
        // Where the platform does not tell, the CPU columns say so, the total too.
        let table = times_table(&[
            done("a-fig1", 10.0, Some(35.0), [1, 0, 0, 0]),
            done("b-fig2", 5.0, None, [1, 0, 0, 0]),
        ]);
        let total: Vec<&str> = table.lines().last().unwrap().split_whitespace().collect();
        assert_eq!(
            total,
            ["total", "15.0", "-", "-", "2", "0", "0", "0"],
            "{table}"
        );
    }
}
