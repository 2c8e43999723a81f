//! Fig. 5.4: the latency breakdown of New-Order (coordination, execution, ordering) at 1, 2 and
//! 4 partitions, and the software profile's fit to its execution stage.

use super::*;

/// Figure 5.4's four workloads: label (no commas: it is a CSV field), partitions, partitions
/// every New-Order spans (`None`: TPC-C's own 1% remote order lines).
pub(super) const FIG5_4: [(&str, usize, Option<usize>); 4] = [
    ("1 WH", 1, Some(1)),
    ("2 WH (New-Orders over 2)", 2, Some(2)),
    ("4 WH (New-Orders over 4)", 4, Some(4)),
    ("TPC-C New-Order (4 WH)", 4, None),
];

/// Average latency broken into ordering, coordination and execution (us).
#[derive(Clone, Copy, Debug)]
pub(super) struct Breakdown {
    pub(super) total: f64,
    pub(super) ordering: f64,
    pub(super) coordination: f64,
    pub(super) execution: f64,
}

pub(super) fn breakdown(o: &Outcome) -> Breakdown {
    let c = o.counters();
    let per = |ns: u64| ns as f64 / c.executed.max(1) as f64 / 1e3;
    let (coordination, execution) = (per(c.coordinating_ns), per(c.executing_ns));
    let total = mean_us(o, None);
    Breakdown {
        total,
        ordering: total - coordination - execution,
        coordination,
        execution,
    }
}

/// One workload of Figure 5.4, 1 client, measured.
pub(super) fn fig5_4_point(
    profile: &Profile,
    software: &Software,
    (partitions, spanning): (usize, Option<usize>),
    duration: Nanos,
) -> Result<(Setup, Outcome, Breakdown), String> {
    let mut t = tpcc(partitions, CAPACITY_ONE_CLIENT).with_mix(Mix::only(Kind::NewOrder));
    if let Some(k) = spanning {
        t = t.spanning(k);
    }
    let s = setup(
        profile,
        software,
        heron::Config::new(partitions, 3, 1),
        Workload::Tpcc(t),
        duration,
    );
    let (s, o) = measure(s)?;
    let b = breakdown(&o);
    Ok((s, o, b))
}

/// Figure 5.4's execution stage of a New-Order over 2 partitions (us): the number `heron-java`
/// is fitted to.
pub(crate) fn new_order_execution(
    software: &Software,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<f64, String> {
    let profile = testbed()?;
    let (_, _, b) = fig5_4_point(&profile, software, (2, Some(2)), Nanos(20_000_000))?;
    progress(&format!(
        "  New-Order over 2 partitions, 1 client: execution {:.2} us of {:.2} us",
        b.execution, b.total
    ));
    Ok(b.execution)
}

/// A row of Figure 5.4's `breakdown.csv`: a workload's mean latency and its stages.
#[derive(serde::Serialize)]
pub(super) struct BreakdownRow<'a> {
    pub(super) workload: &'a str,
    pub(super) partitions: usize,
    pub(super) spanning: String,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    pub(super) mean_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    pub(super) ordering_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    pub(super) coordination_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    pub(super) execution_us: f64,
    pub(super) software: &'a str,
    pub(super) commit: &'a str,
}

/// A row of Figure 5.4's `latency_cdf.csv`.
#[derive(serde::Serialize)]
pub(super) struct CdfRow<'a> {
    pub(super) workload: &'a str,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    pub(super) latency_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<6, _>")]
    pub(super) fraction: f64,
}

/// Figure 5.4.
pub(super) fn fig5_4(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, quick, software, progress) = m.parts();
    let profile = start(out)?;
    let duration = Nanos(if quick { 5_000_000 } else { 20_000_000 });
    let measured = crate::figure::in_parallel(&FIG5_4, |&(label, partitions, spanning)| {
        let (s, o, b) = fig5_4_point(&profile, software, (partitions, spanning), duration)?;
        progress(&format!(
            "  {label}: {:.1} us = ordering {:.1} + coordination {:.1} + execution {:.1}",
            b.total, b.ordering, b.coordination, b.execution
        ));
        Ok((s, o, b))
    })?;
    let cdfs: Vec<Vec<(f64, f64)>> = measured
        .iter()
        .map(|(_, o, _)| crate::figure::cdf_points(&o.latencies(None)))
        .collect();
    write_fig5_4_csv(out, commit, software, &measured, &cdfs)?;
    let breakdowns: Vec<Breakdown> = measured.iter().map(|m| m.2).collect();
    plot_fig5_4(out, &breakdowns, cdfs)?;
    let mut md = fig5_4_head(commit, software, duration);
    md += &fig5_4_table(&breakdowns);
    let tpcc_multi = {
        let o = &measured[3].1;
        let (s, m) = (o.latencies(Some(0)).len(), o.latencies(Some(1)).len());
        100.0 * m as f64 / (s + m).max(1) as f64
    };
    let claims = fig5_4_claims(&breakdowns, tpcc_multi, fitted(software));
    md.push_str("\n## Claims\n\n");
    md.push_str(&verdict::table(&claims));
    md += &fig5_4_discussion(&profile, software, breakdowns[1]);
    verdict::write(out, &claims)?;
    write(&out.join("summary.md"), &md)
}

/// Figure 5.4's CSV files: `summary.csv` (a row per run), `breakdown.csv` (each workload's
/// stages) and `latency_cdf.csv` (each workload's CDF, `cdfs` in [`FIG5_4`]'s order).
fn write_fig5_4_csv(
    out: &Path,
    commit: &str,
    software: &Software,
    measured: &[(Setup, Outcome, Breakdown)],
    cdfs: &[Vec<(f64, f64)>],
) -> Result<(), String> {
    let mut rows = Vec::new();
    let mut csv = Vec::new();
    let mut cdf_csv = Vec::new();
    for (((label, partitions, spanning), (s, o, b)), points) in
        FIG5_4.iter().zip(measured).zip(cdfs)
    {
        rows.extend(s.rows(o, label, commit));
        csv.push(BreakdownRow {
            workload: label,
            partitions: *partitions,
            spanning: spanning.map_or("tpcc".into(), |k| k.to_string()),
            mean_us: b.total,
            ordering_us: b.ordering,
            coordination_us: b.coordination,
            execution_us: b.execution,
            software: &software.name,
            commit,
        });
        cdf_csv.extend(points.iter().map(|&(latency_us, fraction)| CdfRow {
            workload: label,
            latency_us,
            fraction,
        }));
    }
    crate::experiment::write_rows(&out.join("summary.csv"), &rows)?;
    write_rows(&out.join("breakdown.csv"), &csv)?;
    write_rows(&out.join("latency_cdf.csv"), &cdf_csv)
}

/// `fig5.4.png`: the stages against partitions for the three workloads spanning every
/// partition, and every workload's latency CDF (`cdfs` in [`FIG5_4`]'s order).
fn plot_fig5_4(
    out: &Path,
    breakdowns: &[Breakdown],
    cdfs: Vec<Vec<(f64, f64)>>,
) -> Result<(), String> {
    let cdfs = FIG5_4
        .iter()
        .zip(cdfs)
        .map(|((label, ..), points)| Series::new(*label, points))
        .collect();
    // The stages against partitions, for the three workloads spanning every partition.
    let spanning: Vec<(f64, Breakdown)> = FIG5_4
        .iter()
        .zip(breakdowns)
        .filter(|(w, _)| w.2.is_some())
        .map(|(w, b)| (w.1 as f64, *b))
        .collect();
    let stage = |name: &str, f: fn(&Breakdown) -> f64| {
        Series::new(name, spanning.iter().map(|(p, b)| (*p, f(b))).collect())
    };
    plot::draw_png(
        &out.join("fig5.4.png"),
        "Heron Fig. 5.4 on sim (xl170-cx4): New-Order, 1 client, 3 replicas per partition",
        &[
            panel(
                "average latency by stage, New-Orders over every partition",
                "partitions",
                "latency (us)",
                vec![
                    stage("total", |b| b.total),
                    stage("ordering", |b| b.ordering),
                    stage("execution", |b| b.execution),
                    stage("coordination", |b| b.coordination),
                ],
            ),
            panel("latency CDF", "latency (us)", "fraction", cdfs),
        ],
    )
}

/// The head of Figure 5.4's summary: the preamble, the run and what ordering is.
fn fig5_4_head(commit: &str, software: &Software, duration: Nanos) -> String {
    let mut md = String::new();
    preamble(
        &mut md,
        "Heron Fig. 5.4 (New-Order latency breakdown)",
        "heron-fig5.4",
        commit,
        software,
    );
    let _ = writeln!(
        md,
        "One client issues New-Orders in a closed loop for {duration} after a 10% warm-up. \
         Ordering is the latency left after the replica's coordination and execution (the \
         multicast and the response's write). Files: `summary.csv`, `breakdown.csv`, \
         `latency_cdf.csv`, `fig5.4.png`.\n"
    );
    md
}

/// Figure 5.4's tables: each workload's stages (`b` in [`FIG5_4`]'s order), then the thesis's
/// quoted stages beside the 2-partition workload's.
fn fig5_4_table(b: &[Breakdown]) -> String {
    let mut md = String::from(
        "| workload | mean | ordering | coordination | execution |\n|---|---|---|---|---|\n",
    );
    for ((label, ..), b) in FIG5_4.iter().zip(b) {
        let _ = writeln!(
            md,
            "| {label} | {:.1} us | {:.1} us | {:.1} us | {:.1} us |",
            b.total, b.ordering, b.coordination, b.execution
        );
    }
    md.push('\n');
    md.push_str(TABLE_HEAD);
    let two = b[1];
    for (what, published, measured) in [
        ("New-Order latency (2 WH, over both)", 35.4, two.total),
        ("ordering", 18.0, two.ordering),
        ("execution", 16.0, two.execution),
        ("coordination", 2.0, two.coordination),
    ] {
        crate::figure::row(&mut md, what, published, measured, "us");
    }
    md
}

/// Figure 5.4's discussion: where coordination parts from the thesis (a one-way write of
/// `profile` per phase), what ordering and execution hold, and the software cost; `two` is the
/// 2-partition workload's breakdown.
fn fig5_4_discussion(profile: &Profile, software: &Software, two: Breakdown) -> String {
    let mut md = String::new();
    let lat = profile.calibration.write_lat_us;
    let _ = writeln!(
        md,
        "\n## Discussion\n\n\
         - **Coordination is where the model and the thesis part.** A phase of Algorithm 9 ends \
         when a majority of every involved partition has written its entry; replicas that reach \
         a phase together wait one one-way RDMA write for each other ({lat} us, ib_write_lat of \
         `{}`), so two phases cost at least {:.1} us unless a replica finds the others' entries \
         already there when it checks. Measured: {:.1} us at 2 partitions. The thesis's ~2 us is \
         below that floor: its replicas must mostly find the entries already there, or its \
         breakdown counts only part of the wait (it does not say how the stages were timed). \
         Under a priced profile a replica's checks also share its one simulated core with \
         RamCast's own polling and message handling (every check is charged as a scan of the \
         entries it reads), where the prototype runs Heron's and RamCast's threads on a \
         ten-core machine. Without the gap (coordination at the thesis's 2 us) the 2-partition \
         New-Order would take {:.1} us against the published 35.4.\n\
         - **Ordering** is the latency left after the replica's coordination and execution, \
         averaged over every replica; the client takes the first response of each partition, \
         so a replica slower than the first one moves time from ordering into the other \
         stages. The one-client multicast itself is RamCast's, under RamCast's fitted prices.\n\
         - **Execution** prices every row read or written (the Java prototype deserialises \
         Stock and Customer rows and serialises them back); remote rows also cost a one-sided \
         read. At 1 partition every row is local.\n",
        profile.name,
        2.0 * lat,
        two.coordination,
        two.total - two.coordination + 2.0
    );
    md.push_str(&crate::figure::software_bullet(
        software,
        "- **Software cost.** Under `none` no CPU time is charged: ordering and execution are \
         RDMA round trips and waits only, so both fall short of the Java prototype's.\n"
            .into(),
    ));
    md
}

/// Figure 5.4's claims, from the breakdowns of [`FIG5_4`]'s workloads (in its order), the
/// share (%) of TPC-C's New-Orders that were multi-partition, and whether the software
/// profile's row price was fitted to the execution stage. The quoted stages are judged as
/// numbers on the 2-partition workload the module docs read the 35.4 us as; the execution
/// stage holds by construction under a profile fitted to it.
pub(super) fn fig5_4_claims(b: &[Breakdown], tpcc_multi: f64, fitted: bool) -> Vec<Claim> {
    let (one, two, four) = (b[0], b[1], b[2]);
    let us = |v: f64| Measure::point(v).detail("2 WH, every New-Order over both");
    let mut claims = vec![
        Claim::number(
            "New-Order with 1 client: 35.4 us on average",
            35.4,
            "us",
            us(two.total),
        ),
        Claim::number("of which ordering ~18 us", 18.0, "us", us(two.ordering)),
        if fitted {
            Claim::by_construction(
                "and execution ~16 us",
                format!("{:.1} us", two.execution),
                "this software profile's row price is fitted to it",
            )
        } else {
            Claim::number("and execution ~16 us", 16.0, "us", us(two.execution))
        },
        Claim::number(
            "coordination is about 2 us",
            2.0,
            "us",
            us(two.coordination),
        ),
    ];
    let worst = b.iter().map(|b| b.coordination).fold(0.0, f64::max);
    claims.push(Claim::at_most(
        "coordination is never above 3 us in any workload",
        3.0,
        "us",
        Measure::point(worst).detail("the most of the four workloads"),
    ));
    claims.push(Claim::ordering(
        "from 1 WH to 4 WH every stage becomes more expensive (ordering: more destinations; execution: more remote reads)",
        "each stage's mean at 4 WH above its mean at 1 WH",
        format!(
            "ordering {:.1} -> {:.1} us, execution {:.1} -> {:.1} us, coordination {:.1} -> {:.1} us",
            one.ordering, four.ordering, one.execution, four.execution, one.coordination, four.coordination
        ),
        four.ordering > one.ordering
            && four.execution > one.execution
            && four.coordination > one.coordination,
    ));
    claims.push(Claim::by_construction(
        "in TPC-C about 10% of New-Orders are multi-partition",
        format!("{tpcc_multi:.1}% (4 WH)"),
        "clause 2.4.1.5's 1% remote order lines over 5-15 lines, drawn by the generator",
    ));
    claims
}
