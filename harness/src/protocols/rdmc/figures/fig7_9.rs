//! RDMC Figs. 7-9: pipeline bandwidth against group size on three testbeds.

use super::*;

/// Runs of one curve: (group size, row) per point.
pub(super) type Points = Vec<(f64, Row)>;

/// Bandwidth against group size for several sizes on one profile; returns (size, points).
pub(super) fn size_curves(
    ctx: &mut Ctx<'_>,
    profile: &Profile,
    algorithm: Algorithm,
    groups: &[usize],
    sizes: &[usize],
) -> Result<Vec<(usize, Points)>, String> {
    let mut curves = Vec::new();
    for &size in sizes {
        let mut pts = Vec::new();
        for &n in groups {
            let (row, _) = ctx.run(&spec(profile, algorithm, n, size))?;
            pts.push((n as f64, row));
        }
        curves.push((size, pts));
    }
    Ok(curves)
}

pub(super) fn at(pts: &[(f64, Row)], n: usize) -> Option<&Row> {
    pts.iter().find(|p| p.0 == n as f64).map(|p| &p.1)
}

pub(super) fn gbps_series(label: &str, pts: &[(f64, Row)]) -> Series {
    row_series(label, pts, |r| r.gbps_mean)
}

/// `y` of each run of a curve, against its x.
pub(super) fn row_series(label: &str, pts: &[(f64, Row)], y: impl Fn(&Row) -> f64) -> Series {
    series(label, pts.iter().map(|(x, r)| (*x, y(r))).collect())
}

pub(super) fn table(md: &mut String, head: &str, curves: &[(String, Points)], f: fn(&Row) -> f64) {
    md.push_str(&table_head(
        std::iter::once(head).chain(curves.iter().map(|(l, _)| l.as_str())),
    ));
    let mut xs: Vec<f64> = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for x in xs {
        let _ = write!(md, "| {x} |");
        for (_, pts) in curves {
            match pts.iter().find(|p| p.0 == x) {
                Some((_, r)) => {
                    let _ = write!(md, " {:.2} |", f(r));
                }
                None => md.push_str(" - |"),
            }
        }
        md.push('\n');
    }
}

/// RDMC Figs. 7-9: pipeline bandwidth against group size on Sierra, Stampede and Fractus.
pub(crate) fn fig7_9(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, quick, software, progress) = m.parts();
    let mut ctx = Ctx::start(out, commit, software, progress)?;
    let sizes: Vec<usize> = if quick {
        vec![MB, 16 * MB]
    } else {
        vec![MB, 8 * MB, 64 * MB, 256 * MB]
    };
    let clusters = clusters(quick);
    let mut panels = Vec::new();
    let mut results = Vec::new();
    for (fig, name, groups) in &clusters {
        let profile = load(name)?;
        let curves = size_curves(
            &mut ctx,
            &profile,
            Algorithm::BinomialPipeline,
            groups,
            &sizes,
        )?;
        let mut p = groups_panel(
            &format!("{fig}: {name}"),
            "bandwidth (Gb/s)",
            curves
                .iter()
                .map(|(s, pts)| gbps_series(&show_bytes(*s), pts))
                .collect(),
        );
        p.log_y = false;
        panels.push(p);
        results.push((*fig, profile, curves));
    }
    let big = *sizes.last().expect("sizes");
    let largest = *clusters[0].2.last().expect("groups");
    let shares = uplink_shares(&mut ctx, &results[0].1, largest, big)?;
    write_rows(&out.join("runs.csv"), &ctx.rows)?;
    plot::draw_png(
        &out.join("fig7-9.png"),
        &format!("RDMC Figs. 7-9 on sim: binomial pipeline, 1 MB blocks, commit {commit}"),
        &panels,
    )?;
    let refs: Vec<&Profile> = results.iter().map(|r| &r.1).collect();
    let mut md = String::from(
        "# RDMC Figs. 7-9 (bandwidth against group size), reproduced on the simulator\n\n",
    );
    md.push_str(&note(&refs, "rdmc-fig7-9", commit));
    for (fig, profile, curves) in &results {
        let _ = write!(md, "\n## {fig}: {} (Gb/s)\n\n", profile.name);
        let named: Vec<(String, Points)> = curves
            .iter()
            .map(|(s, p)| (show_bytes(*s), p.clone()))
            .collect();
        table(&mut md, "group", &named, |r| r.gbps_mean);
    }
    md.push_str("\n## The paper's claims\n\n");
    let claims = fig7_9_claims(&results, largest, big);
    md.push_str(&verdict::table(&claims));
    verdict::write(out, &claims)?;
    md += &sierra_md(&results[0], largest, big, &shares);
    write(&out.join("summary.md"), &md)
}

/// A cluster's curves: its figure, its profile, and a curve per message size.
type Cluster<'a> = (&'a str, Profile, Vec<(usize, Points)>);

/// Figs. 7-9's claims, from the clusters in the figures' order (Sierra, Stampede, Fractus):
/// Sierra's largest group (`largest` nodes) at the largest message (`big` bytes), Fractus up
/// to 8 nodes, and all three's bandwidth against unicast.
fn fig7_9_claims(results: &[Cluster<'_>], largest: usize, big: usize) -> Vec<Claim> {
    let mut claims = Vec::new();
    let sierra = &results[0].2;
    let sierra_big = &sierra.last().expect("sizes").1;
    if let (Some(two), Some(last)) = (at(sierra_big, 2), at(sierra_big, largest)) {
        claims.push(Claim::number(
            &format!("Sierra, {largest} nodes, {}: ~6 Gb/s", show_bytes(big)),
            6.0,
            "Gb/s",
            Measure::point(last.gbps_mean),
        ));
        claims.push(Claim::factor(
            &format!("{} replicas take ~4x the time of 1", largest - 1),
            4.0,
            Measure::point(last.latency_us_mean / two.latency_us_mean)
                .detail(format!("{largest} nodes over 2")),
        ));
    }
    let fractus_big = &results[2].2.last().expect("sizes").1;
    if let (Some(two), Some(eight)) = (at(fractus_big, 2), at(fractus_big, 8)) {
        let r = eight.gbps_mean / two.gbps_mean;
        claims.push(Claim::trend(
            "100 Gb/s Fractus: pipeline near unicast bandwidth up to 8 nodes",
            "8 nodes at least 90% of 2 nodes' bandwidth",
            format!(
                "{}: 8 nodes {:.1} Gb/s = {r:.2} of 2 nodes",
                show_bytes(big),
                eight.gbps_mean
            ),
            r >= 0.9,
        ));
    }
    let stable: Vec<String> = results
        .iter()
        .filter_map(|(_, profile, curves)| {
            let pts = &curves.last()?.1;
            let two = at(pts, 2)?.gbps_mean;
            let eight = at(pts, 8)?.gbps_mean;
            let top = pts.iter().map(|p| p.1.gbps_mean).fold(0.0, f64::max);
            Some((profile.name.clone(), eight / two, top <= two))
        })
        .map(|(name, r, top)| format!("{name}: 8 nodes {r:.2} of unicast, unicast highest: {top}"))
        .collect();
    let holds = results.iter().all(|(_, _, curves)| {
        let pts = &curves.last().expect("sizes").1;
        match (at(pts, 2), at(pts, 8)) {
            (Some(two), Some(eight)) => {
                eight.gbps_mean >= 0.9 * two.gbps_mean
                    && pts.iter().all(|p| p.1.gbps_mean <= two.gbps_mean)
            }
            _ => false,
        }
    });
    claims.push(Claim::trend(
        &format!(
            "on all three clusters bandwidth is highest for unicast and stays high and fairly stable up to 8 nodes ({})",
            show_bytes(big)
        ),
        "on every cluster, no group above 2 nodes' bandwidth and 8 nodes at least 90% of it",
        stable.join("; "),
        holds,
    ));
    claims
}

/// Why Sierra's large groups are not reproduced on the profile, and the runs of its largest
/// point with a `share` of the uplinks left (`shares`: share, profile, run).
fn sierra_md(
    (_, sierra_profile, sierra): &Cluster<'_>,
    largest: usize,
    big: usize,
    shares: &[(f64, Profile, Row)],
) -> String {
    let mut md = String::new();
    let sierra_big = &sierra.last().expect("sizes").1;
    if let (Some(two), Some(nominal), Some(f)) = (
        at(sierra_big, 2),
        at(sierra_big, largest),
        sierra_profile.fabric.as_ref(),
    ) {
        let per_rack = largest.div_ceil(f.racks.min(largest));
        let _ = write!(
            md,
            "\nWhy Sierra's large groups are not reproduced on the profile: its fabric is a full \
             fat tree, and {largest} nodes spread over {} racks put at most {per_rack} in a rack, \
             whose transfers need at most {:.0} Gb/s of the rack's {} Gb/s of uplinks. The \
             uplinks never saturate; crossing racks only adds two switch latencies, and the \
             pipeline stays within (k + L) / k of unicast ({:.2} Gb/s at {largest} nodes, \
             {:.2}x the time of 2 nodes). The paper attributes the drop to load the model does \
             not generate: other jobs' traffic on the shared fabric, TOR latency up to 20 us, \
             bandwidth as low as 3 Gb/s.\n\n\
             ## Sierra: the share of the uplinks the published number implies\n\n\
             The same point ({largest} nodes, {}) with only a share of every rack's uplinks left \
             to the experiment, the rest taken by traffic the model does not simulate. A \
             sensitivity beside the profile, not a calibration: the profile keeps the full \
             fabric, and no verdict above uses these rows (they are in `runs.csv`, `fabric` \
             column).\n\n\
             | uplink share | uplinks per rack | oversubscription | bandwidth | time vs 2 nodes |\n\
             |---|---|---|---|---|\n",
            f.racks,
            per_rack as f64 * sierra_profile.nic.link_gbps,
            f.uplink_gbps.unwrap_or(0.0),
            nominal.gbps_mean,
            nominal.latency_us_mean / two.latency_us_mean,
            show_bytes(big),
        );
        // (share, uplinks per rack, oversubscription, the run)
        let fabric_of = |p: &Profile| {
            let f = p.fabric.as_ref().expect("declared");
            let up = f.uplink_gbps.unwrap_or(0.0);
            (up, f.oversubscription(p.nic.link_gbps).unwrap_or(0.0))
        };
        let mut points = vec![(1.0, fabric_of(sierra_profile), nominal)];
        points.extend(
            shares
                .iter()
                .map(|(share, p, row)| (*share, fabric_of(p), row)),
        );
        for (share, (up, over), row) in &points {
            let _ = writeln!(
                md,
                "| 1/{:.0} | {up} Gb/s | {over:.0}:1 | {:.2} Gb/s | {:.2}x |",
                1.0 / share,
                row.gbps_mean,
                row.latency_us_mean / two.latency_us_mean
            );
        }
        let published = 6.0;
        let _ = writeln!(
            md,
            "\n{}",
            match points.iter().position(|(_, _, r)| r.gbps_mean <= published) {
                Some(0) => "The full fabric already gives the published ~6 Gb/s or less.".into(),
                Some(i) => format!(
                    "The published ~6 Gb/s lies between 1/{:.0} and 1/{:.0} of the uplinks left \
                     to the experiment ({:.0}:1 to {:.0}:1 oversubscription for its traffic).",
                    1.0 / points[i - 1].0,
                    1.0 / points[i].0,
                    points[i - 1].1 .1,
                    points[i].1 .1,
                ),
                None => format!(
                    "Even 1/{:.0} of the uplinks leaves more than the published ~6 Gb/s.",
                    1.0 / points.last().expect("nominal").0
                ),
            }
        );
    }
    md
}

/// The clusters of Figs. 7-9: figure, profile, and the group sizes its curves run.
fn clusters(quick: bool) -> [(&'static str, &'static str, Vec<usize>); 3] {
    if quick {
        [
            ("Fig. 7", "sierra-qdr", vec![2, 3, 8, 64]),
            ("Fig. 8", "stampede-fdr", vec![2, 5, 16]),
            ("Fig. 9", "fractus-100g", vec![2, 3, 8]),
        ]
    } else {
        [
            (
                "Fig. 7",
                "sierra-qdr",
                vec![2, 3, 4, 8, 16, 32, 64, 128, 256, 512],
            ),
            ("Fig. 8", "stampede-fdr", vec![2, 3, 4, 8, 16, 32, 64, 128]),
            ("Fig. 9", "fractus-100g", vec![2, 3, 4, 5, 6, 8, 10, 12, 16]),
        ]
    }
}

/// Sierra's largest point (`largest` nodes, `big` bytes) again with less and less of each
/// rack's uplinks left to the experiment: how much of other jobs' traffic (which the model
/// does not generate) the published number implies. A sensitivity beside the profile, not a
/// calibration of it. Returns (share, profile, run) per share of [`UPLINK_SHARES`].
fn uplink_shares(
    ctx: &mut Ctx<'_>,
    sierra_profile: &Profile,
    largest: usize,
    big: usize,
) -> Result<Vec<(f64, Profile, Row)>, String> {
    let mut shares = Vec::new();
    if let Some(up) = sierra_profile.fabric.as_ref().and_then(|f| f.uplink_gbps) {
        for share in UPLINK_SHARES {
            let mut p = sierra_profile.clone();
            p.fabric.as_mut().expect("declared").uplink_gbps = Some(up * share);
            let (row, _) = ctx.run(&spec(&p, Algorithm::BinomialPipeline, largest, big))?;
            shares.push((share, p, row));
        }
    }
    Ok(shares)
}
