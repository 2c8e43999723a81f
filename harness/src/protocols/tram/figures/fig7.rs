//! TRAM Fig. 7: payloads of 64 B to 16 KB to all 8 groups.

use super::*;

/// TRAM Fig. 7: payload size, 8 destinations; breadth for latency, depth for throughput.
pub(crate) fn fig7(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, quick, software, _) = m.parts();
    let profile = Profile::load(crate::testbed::TRAM).map_err(|e| e.to_string())?;
    let sizes: Vec<f64> = if quick {
        vec![64.0, 16384.0]
    } else {
        vec![64.0, 256.0, 1024.0, 4096.0, 16384.0]
    };
    let ctx = Ctx::start(m, &profile)?;
    let duration = ctx.duration;
    let (cells, rows) = measure_fig7(&ctx, &sizes)?;
    crate::experiment::write_summary(&out.join("runs.csv"), &rows)?;
    write(&out.join("points.csv"), &points_csv(&cells, "size_bytes"))?;
    let labels = [
        "TRAM (breadth latency, depth throughput)".to_string(),
        "RamCast".to_string(),
    ];
    plot_fig7(out, &cells, &labels)?;
    let mut md = String::from("# TRAM Fig. 7 (payload size), reproduced on the simulator\n\n");
    md.push_str(&note(&profile, commit, "tram-fig7", duration));
    md.push_str("\nMessages to all 8 groups. TRAM latency uses the breadth tree, TRAM throughput the depth tree, as in the paper.\n\n");
    md.push_str(&table(&cells, &sizes, &labels, "payload (B)", &|_| {
        "RamCast".to_string()
    }));
    md.push_str("\n## The paper's claims\n\n");
    let claims = fig7_claims(&cells, &labels[0], &sizes);
    md.push_str(&verdict::table(&claims));
    md.push_str(&fig7_notes(&profile, software, &cells, &labels[0], &sizes));
    write(&out.join("summary.md"), &md)?;
    verdict::write(out, &claims)
}

/// Fig. 7's points at each payload size, all 8 groups as destinations: TRAM's latency from
/// the breadth tree and its throughput from the depth tree (the paper's choice), beside
/// RamCast's; and every run's row.
fn measure_fig7(
    ctx: &Ctx<'_>,
    sizes: &[f64],
) -> Result<(Vec<Cell>, Vec<crate::experiment::SummaryRow>), String> {
    let knobs = |x: f64| Knobs {
        replicas: 3,
        size: x as usize,
        dest: DestPolicy::All,
    };
    let (mut cells, mut rows) = sweep(
        ctx,
        sizes,
        &[
            Variant::tram("breadth"),
            Variant::Ramcast { dest_tree: None },
        ],
        knobs,
        false,
    )?;
    let (tput, r) = sweep(
        ctx,
        sizes,
        &[Variant::tram("depth"), Variant::Ramcast { dest_tree: None }],
        knobs,
        true,
    )?;
    rows.extend(r);
    // Latency from the breadth runs, throughput from the depth runs (the paper's choice).
    for c in &mut cells {
        let from = if c.variant == "RamCast" {
            "RamCast"
        } else {
            "TRAM depth"
        };
        if let Some(t) = get(&tput, from, c.x) {
            (c.tput, c.capped) = (t.tput, t.capped);
        }
        if c.variant != "RamCast" {
            c.variant = "TRAM (breadth latency, depth throughput)".into();
        }
    }
    Ok((cells, rows))
}

/// `fig7.png`: the 1-client median latency and the maximum throughput of each of `labels`
/// against the payload.
fn plot_fig7(out: &std::path::Path, cells: &[Cell], labels: &[String]) -> Result<(), String> {
    // Both panels put the payload along x, in bytes.
    let payload_panel = |title: &str, y_label: &str, series: fn(&[Cell], &str) -> Series| {
        let mut p = panel(
            title,
            "payload",
            y_label,
            labels.iter().map(|l| series(cells, l)).collect(),
        );
        p.x = plot::XScale::Bytes;
        p
    };
    plot::draw_png(
        &out.join("fig7.png"),
        "TRAM Fig. 7 on sim (r320-cx3): 8 groups x 3 replicas, messages to all 8 groups",
        &[
            payload_panel(
                "latency, 1 client (TRAM: breadth)",
                "median latency (us)",
                p50_series,
            ),
            payload_panel(
                "throughput at saturation (TRAM: depth)",
                "max throughput (k msg/s)",
                tput_series,
            ),
        ],
    )
}

/// Fig. 7's discussion ([`crate::protocols::tram::figure_notes::fig7`]) on TRAM's (`tram`) and
/// RamCast's points at the smallest and the largest payload; empty if one is missing.
fn fig7_notes(
    profile: &Profile,
    software: &Software,
    cells: &[Cell],
    tram: &str,
    sizes: &[f64],
) -> String {
    let (first, last) = (sizes[0], *sizes.last().expect("sizes"));
    let cell = |v: &str, x: f64| get(cells, v, x);
    let (Some(tl), Some(rl), Some(ts), Some(rs)) = (
        cell(tram, last),
        cell("RamCast", last),
        cell(tram, first),
        cell("RamCast", first),
    ) else {
        return String::new();
    };
    crate::protocols::tram::figure_notes::fig7(
        profile,
        software,
        &crate::protocols::tram::figure_notes::Fig7 {
            large: last as usize,
            tput_large: (tl.tput, rl.tput),
            p50_small: (ts.p50, rs.p50),
            p50_large: (tl.p50, rl.p50),
        },
    )
}

/// Fig. 7's claims (section 8.4): TRAM's maximum (`tram`, the depth tree's) against RamCast's
/// at the smallest and the largest payload. The paper quotes no number, so an ordering and a
/// trend; a maximum still growing at the client cap leaves the trend undecided.
pub(super) fn fig7_claims(cells: &[Cell], tram: &str, sizes: &[f64]) -> Vec<Claim> {
    let (first, last) = (sizes[0], *sizes.last().expect("sizes"));
    let pair = |x: f64| Some((get(cells, tram, x)?, get(cells, "RamCast", x)?));
    let (Some((ts, rs)), Some((tl, rl))) = (pair(first), pair(last)) else {
        return Vec::new();
    };
    let (a, b) = (ts.tput / rs.tput, tl.tput / rl.tput);
    vec![
        Outcome::above(ts.max(), rs.max()).ordering(
            "TRAM ahead at small payloads",
            &format!(
                "TRAM's maximum above RamCast's at {}",
                size_label(first as usize)
            ),
            format!(
                "TRAM / RamCast throughput at {}: {a:.2}",
                size_label(first as usize)
            ),
        ),
        Claim::trend(
            "the gap closes, converging around 16 KB",
            &format!(
                "TRAM / RamCast maximum closer to 1 at {} than at {}, and within 25% of 1 there",
                size_label(last as usize),
                size_label(first as usize)
            ),
            format!(
                "TRAM / RamCast throughput at {}: {b:.2} (from {a:.2})",
                size_label(last as usize)
            ),
            (b - 1.0).abs() < (a - 1.0).abs() && (b - 1.0).abs() < 0.25,
        )
        .undecided_if([ts, rs, tl, rl].iter().any(|c| c.capped), UNDECIDED),
    ]
}
