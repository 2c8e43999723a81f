//! TRAM Fig. 8: the simple tree with 1 to 7 replicas per group.

use super::*;

/// TRAM Fig. 8: the simple tree, 1..7 replicas per group, single-client latency.
pub(crate) fn fig8(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, quick, _, _) = m.parts();
    let profile = Profile::load(crate::testbed::TRAM).map_err(|e| e.to_string())?;
    let replicas: Vec<f64> = if quick {
        vec![1.0, 7.0]
    } else {
        vec![1.0, 3.0, 5.0, 7.0]
    };
    let ctx = Ctx::start(m, &profile)?;
    let duration = ctx.duration;
    let simple = Variant::tram("simple");
    let mut cells = Vec::new();
    let mut rows = Vec::new();
    for (dest, label) in [
        (DestPolicy::Random(1), "1 destination"),
        (DestPolicy::Random(2), "2 destinations"),
        (DestPolicy::All, "3 destinations"),
    ] {
        let (mut c, r) = sweep(
            &ctx,
            &replicas,
            std::slice::from_ref(&simple),
            |x| Knobs {
                replicas: x as usize,
                size: 64,
                dest,
            },
            false,
        )?;
        for cell in &mut c {
            cell.variant = label.into();
        }
        cells.extend(c);
        rows.extend(r);
    }
    crate::experiment::write_summary(&out.join("runs.csv"), &rows)?;
    write(&out.join("points.csv"), &points_csv(&cells, "replicas"))?;
    let labels = ["1 destination", "2 destinations", "3 destinations"];
    plot::draw_png(
        &out.join("fig8.png"),
        "TRAM Fig. 8 on sim (r320-cx3): simple tree (3 groups), 1 client, 64 B",
        &[panel(
            "latency vs replicas per group",
            "replicas per group",
            "median latency (us)",
            labels.iter().map(|l| p50_series(&cells, l)).collect(),
        )],
    )?;
    let mut md =
        String::from("# TRAM Fig. 8 (replicas per group), reproduced on the simulator\n\n");
    md.push_str(&note(&profile, commit, "tram-fig8", duration));
    md.push_str("\nThe simple tree (a root with two children); destinations drawn uniformly among the 3 groups. Latency only, as in the paper.\n\n| replicas | ");
    md.push_str(&labels.map(|l| format!("{l} p50 / p95 (us)")).join(" | "));
    md.push_str(" |\n|---|---|---|---|\n");
    for &x in &replicas {
        let _ = write!(md, "| {x} |");
        for l in labels {
            if let Some(c) = get(&cells, l, x) {
                let _ = write!(md, " {:.2} / {:.2} |", c.p50, c.p95);
            }
        }
        md.push('\n');
    }
    md.push_str("\n## The paper's claims\n\n");
    let claims = fig8_claims(&cells, &labels, &replicas);
    md.push_str(&verdict::table(&claims));
    if let (Some(one), Some(three)) = (get(&cells, labels[0], 1.0), get(&cells, labels[0], 3.0)) {
        md.push_str(&crate::protocols::tram::figure_notes::fig8(
            &profile, one.p50, three.p50,
        ));
    }
    write(&out.join("summary.md"), &md)?;
    verdict::write(out, &claims)
}

/// Fig. 8's claims (section 8.5): latency almost constant in the replicas, for each number of
/// destinations; a trend, as the paper quotes no number. One replica has no followers and no
/// quorum round trip: replication starts at 3. With a single replica count from 3 (`--quick`)
/// there is no trend to judge.
pub(super) fn fig8_claims(cells: &[Cell], labels: &[&str], replicas: &[f64]) -> Vec<Claim> {
    labels
        .iter()
        .map(|l| {
            let p50s: Vec<f64> = replicas
                .iter()
                .filter(|&&x| x >= 3.0)
                .filter_map(|&x| get(cells, l, x).map(|c| c.p50))
                .collect();
            let (lo, hi) = spread(p50s.iter().copied());
            Claim::trend(
                &format!("latency nearly constant as replicas grow, 3 to 7 ({l})"),
                "highest / lowest median over 3..7 replicas < 1.25",
                format!("median {lo:.2} .. {hi:.2} us (max / min {:.2})", hi / lo),
                hi / lo < 1.25,
            )
            .undecided_if(p50s.len() < 2, "fewer than two replica counts from 3 up")
        })
        .collect()
}
