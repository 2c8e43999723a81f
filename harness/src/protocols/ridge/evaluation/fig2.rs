//! Ridge Fig. 2: throughput scaling with 1 to 8 groups, single-group messages, Ridge beside the ring.

use super::*;

/// `harness figure ridge-fig2`: groups of four servers (3 acceptors per ensemble), single-group
/// messages, 1 to 8 groups; Ridge beside the ring baseline (Multi-Ring Paxos's scheme: one
/// ensemble per group), throughput normalised by one group's.
pub(crate) fn fig2(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, quick, software, progress) = m.parts();
    let groups: &[usize] = if quick { &[1, 2] } else { &[1, 2, 4, 8] };
    let disseminations = [Dissemination::Ridge, Dissemination::Ring];
    let setups = setups(quick, &disseminations, groups, |groups| (groups, 4));
    let (profile, curves) = measure_all(out, commit, software, quick, &setups, progress)?;
    let base = |c: &Curve| -> f64 {
        curves
            .iter()
            .find(|o| {
                o.setup.groups == 1
                    && o.setup.size == c.setup.size
                    && o.setup.dissemination == c.setup.dissemination
            })
            .map_or(f64::NAN, Curve::max_msgs)
    };
    let csv = curves_csv(commit, software, &curves, &["groups", "normalised"], |c| {
        vec![
            c.setup.groups.to_string(),
            format!("{:.3}", c.max_msgs() / base(c)),
        ]
    });
    write(&out.join("fig2.csv"), &csv)?;
    let plots = Plots {
        caption: caption("Ridge Fig. 2", &profile, software, "groups of 4 servers"),
        curves: &curves,
        disseminations: &disseminations,
        axis: Axis {
            x: |s| s.groups,
            label: "groups",
            scale: XScale::Log2,
        },
    };
    plots.draw(
        out,
        "scaling.png",
        "maximum throughput normalised by one group's",
        "throughput / one group's",
        // A ratio of two maxima: no interval is estimated for it.
        &|c| (c.max_msgs() / base(c), None),
    )?;
    plots.draw_latency(out)?;
    let (md, claims) = fig2_summary(&curves, &profile, software, commit, &base);
    verdict::write(out, &claims)?;
    write(&out.join("summary.md"), &md)
}

/// Fig. 2's summary and claims: the curves' table (throughput normalised by one group's, by
/// `base`), the scaling claims, the comparison with the ring, and the discussion.
pub(super) fn fig2_summary(
    curves: &[Curve],
    profile: &Profile,
    software: &Software,
    commit: &str,
    base: &dyn Fn(&Curve) -> f64,
) -> (String, Vec<Claim>) {
    let mut md = String::from(
        "# Ridge Fig. 2 (multicast: scaling with groups), reproduced on the simulator\n\n",
    );
    let _ = writeln!(
        md,
        "Commit {commit}. {}Groups of 4 servers (pure learners), every ensemble with 3 \
         acceptors of its own (section 6.1); every message to one group drawn at random; clients doubled from 1 while throughput grows \
         by 5% or more (up to 128 per group for 200 B, 32 for larger messages, 512 in all: \
         a maximum still growing there is a lower bound, marked). The ring \
         baseline runs one ring per ensemble, Multi-Ring Paxos's scheme. `throughput.csv` has \
         every run, `fig2.csv` every curve; `scaling.png`, `latency.png`.\n",
        profile_line(profile, software)
    );
    md += &curves_table(curves, &["groups", "normalised"], |c| {
        vec![
            c.setup.groups.to_string(),
            format!("{:.2}", c.max_msgs() / base(c)),
        ]
    });
    md.push_str("\n## Claims\n\n");
    let mut claims = scaling_claims(curves, base);
    claims.extend(similar_scalability_claim(curves, base));
    md.push_str(&verdict::table(&claims));
    md.push_str(&fig2_discussion(profile, software));
    (md, claims)
}

/// The paper's scaling with 8 groups (when 8 were measured): Ridge's throughput ~8x one
/// group's for 64 KB messages, ~4x for 8 KB and 200 B; a lower bound when the largest maximum
/// is one.
fn scaling_claims(curves: &[Curve], base: &dyn Fn(&Curve) -> f64) -> Vec<Claim> {
    let most = curves.iter().map(|c| c.setup.groups).max().unwrap_or(1);
    let scale = |size: usize, d: Dissemination| {
        curves
            .iter()
            .find(|c| c.setup.size == size && c.setup.dissemination == d && c.setup.groups == most)
            .map(|c| c.max_msgs() / base(c))
    };
    let mut claims = Vec::new();
    // A scaling whose largest maximum is a lower bound is one too.
    let capped = |size: usize| {
        curves.iter().any(|c| {
            c.setup.size == size
                && c.setup.dissemination == Dissemination::Ridge
                && c.setup.groups == most
                && c.capped()
        })
    };
    if most == 8 {
        if let Some(s) = scale(64 << 10, Dissemination::Ridge) {
            claims.push(Claim::factor(
                "64 KB: Ridge's throughput scales ~8x with 8 groups (nearly ideal)",
                8.0,
                Measure::point(s).capped(capped(64 << 10)),
            ));
        }
        for size in [8 << 10, 200] {
            if let Some(s) = scale(size, Dissemination::Ridge) {
                claims.push(Claim::factor(
                    &format!(
                        "{}: Ridge's throughput scales ~4x with 8 groups",
                        size_label(size)
                    ),
                    4.0,
                    Measure::point(s).capped(capped(size)),
                ));
            }
        }
    }
    claims
}

/// The paper's "very similar scalability": the ring's normalised throughput within 15% of
/// Ridge's at every size and group count above one (no claim when no pair was measured).
fn similar_scalability_claim(curves: &[Curve], base: &dyn Fn(&Curve) -> f64) -> Option<Claim> {
    let pairs: Vec<(f64, f64)> = curves
        .iter()
        .filter(|c| c.setup.dissemination == Dissemination::Ridge && c.setup.groups > 1)
        .filter_map(|c| {
            let ring = curves.iter().find(|o| {
                o.setup.dissemination == Dissemination::Ring
                    && o.setup.size == c.setup.size
                    && o.setup.groups == c.setup.groups
            })?;
            Some((c.max_msgs() / base(c), ring.max_msgs() / base(ring)))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let worst = pairs
        .iter()
        .map(|(a, b)| (b / a - 1.0).abs())
        .fold(0.0, f64::max);
    Some(Claim::trend(
        "Ridge and Multi-Ring Paxos (ring) have very similar scalability in all cases",
        "the ring's normalised throughput within 15% of Ridge's in every case",
        format!(
            "{} cases; the ring's normalised throughput differs from Ridge's by {:.0}% at most",
            pairs.len(),
            worst * 100.0
        ),
        worst <= 0.15,
    ))
}

/// What Fig. 2's summary says after its claims: Spread not compared, and the discussion (the
/// fabric of `profile`, the ring's `e_all`, the software bullet).
fn fig2_discussion(profile: &Profile, software: &Software) -> String {
    format!(
        "\nNot compared: Spread.\n\n## Discussion\n\n- **The fabric.** `{}` declares no \
         switch limits: groups share nothing but the clients' machines, each its own process \
         here, so a group's links and CPUs are its own and aggregate throughput can scale \
         with groups as far as the clients saturate them. The paper's clients and switches \
         were shared.\n- **The ring's `e_all`.** Every server learns `e_all` (the paper's `r_all`), whose \
         null message every Delta travels a ring through all 4n servers, and each group's \
         deliveries wait for its next timestamp: the ring's latency grows with the groups \
         and its throughput stops scaling. Multi-Ring Paxos merges rings round-robin with \
         skip messages, not by timestamp; the ring baseline shares Ridge's merge, so it \
         stands for Multi-Ring Paxos's dissemination only.\n{}",
        profile.name,
        software_bullet(software, String::new())
    )
}
