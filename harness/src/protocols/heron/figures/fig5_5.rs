//! Fig. 5.5: each TPC-C transaction alone at one client, its latency CDF, single- and
//! multi-partition apart.

use super::*;

/// A row of Figure 5.5's `latency_cdf.csv`.
#[derive(serde::Serialize)]
pub(super) struct KindCdfRow<'a> {
    pub(super) kind: &'a str,
    #[serde(serialize_with = "crate::stats::precision::fixed::<3, _>")]
    pub(super) latency_us: f64,
    #[serde(serialize_with = "crate::stats::precision::fixed::<6, _>")]
    pub(super) fraction: f64,
}

/// Figure 5.5's transaction types, in the thesis's order.
pub(super) const KINDS: [Kind; 5] = [
    Kind::NewOrder,
    Kind::Payment,
    Kind::OrderStatus,
    Kind::Delivery,
    Kind::StockLevel,
];

/// One transaction type alone, 1 client, on Figure 5.5's partitions.
pub(super) fn one_kind(
    profile: &Profile,
    software: &Software,
    kind: Kind,
    duration: Nanos,
) -> Result<(Setup, Outcome), String> {
    let s = setup(
        profile,
        software,
        heron::Config::new(FIG5_5_PARTITIONS, 3, 1),
        Workload::Tpcc(tpcc(FIG5_5_PARTITIONS, CAPACITY_ONE_CLIENT).with_mix(Mix::only(kind))),
        duration,
    );
    measure(s)
}

/// Figure 5.5.
pub(super) fn fig5_5(m: &Making<'_>) -> Result<(), String> {
    let (out, commit, quick, software, progress) = m.parts();
    let profile = start(out)?;
    let duration = Nanos(if quick { 5_000_000 } else { 20_000_000 });
    let measured = crate::figure::in_parallel(&KINDS, |&kind| {
        let (s, o) = one_kind(&profile, software, kind, duration)?;
        progress(&format!(
            "  {}: single-partition {:.1} us, multi-partition {}",
            o.kinds[kind as usize],
            mean_us(&o, Some(0)),
            if o.latencies(Some(1)).is_empty() {
                "none".to_string()
            } else {
                format!("{:.1} us", mean_us(&o, Some(1)))
            }
        ));
        Ok((s, o))
    })?;
    let cdfs: Vec<Vec<(f64, f64)>> = measured
        .iter()
        .map(|(_, o)| crate::figure::cdf_points(&o.latencies(None)))
        .collect();
    let (means, intervals) = fig5_5_means(&measured);
    write_fig5_5_csv(out, commit, &measured, &cdfs)?;
    plot_fig5_5(out, &means, &intervals, cdfs)?;
    let mut md = fig5_5_head(commit, software, duration);
    md += &fig5_5_table(&means);
    let claims = fig5_5_claims(&means, &intervals);
    md.push_str("\n## Claims\n\n");
    md.push_str(&verdict::table(&claims));
    let undelivered = tpcc(FIG5_5_PARTITIONS, CAPACITY_ONE_CLIENT)
        .scale()
        .new_orders;
    md += &fig5_5_discussion(software, undelivered);
    verdict::write(out, &claims)?;
    write(&out.join("summary.md"), &md)
}

/// A transaction type's mean latency alone (us): its name, single-partition, and
/// multi-partition when any ran.
type KindMean = (&'static str, f64, Option<f64>);

/// Each transaction type's mean latency alone (us), single-partition and multi-partition when
/// any ran, and their 95% intervals (single then multi-partition), in [`KINDS`]'s order.
fn fig5_5_means(measured: &[(Setup, Outcome)]) -> (Vec<KindMean>, Vec<[Interval; 2]>) {
    // (name, single mean, multi mean or NaN)
    let mut means: Vec<(&str, f64, Option<f64>)> = Vec::new();
    // Their 95% intervals, single then multi-partition.
    let mut intervals: Vec<[Interval; 2]> = Vec::new();
    for (kind, (_, o)) in KINDS.iter().zip(measured) {
        let name = o.kinds[*kind as usize];
        let one = mean_us(o, Some(0));
        let m = (!o.latencies(Some(1)).is_empty()).then(|| mean_us(o, Some(1)));
        let ci = [
            o.mean_ci(one, Some(*kind as usize), Some(0)),
            m.and_then(|m| o.mean_ci(m, Some(*kind as usize), Some(1))),
        ];
        intervals.push(ci);
        means.push((name, one, m));
    }
    (means, intervals)
}

/// Figure 5.5's CSV files: `summary.csv` (a row per run) and `latency_cdf.csv` (each
/// transaction type's CDF, `cdfs` in [`KINDS`]'s order).
fn write_fig5_5_csv(
    out: &Path,
    commit: &str,
    measured: &[(Setup, Outcome)],
    cdfs: &[Vec<(f64, f64)>],
) -> Result<(), String> {
    let mut rows = Vec::new();
    let mut cdf_csv = Vec::new();
    for ((kind, (s, o)), points) in KINDS.iter().zip(measured).zip(cdfs) {
        let name = o.kinds[*kind as usize];
        rows.extend(s.rows(o, name, commit));
        cdf_csv.extend(points.iter().map(|&(latency_us, fraction)| KindCdfRow {
            kind: name,
            latency_us,
            fraction,
        }));
    }
    crate::experiment::write_rows(&out.join("summary.csv"), &rows)?;
    write_rows(&out.join("latency_cdf.csv"), &cdf_csv)
}

/// `fig5.5.png`: each transaction type's average latency, single- and multi-partition with
/// their intervals, and its latency CDF (all in [`KINDS`]'s order).
fn plot_fig5_5(
    out: &Path,
    means: &[(&str, f64, Option<f64>)],
    intervals: &[[Interval; 2]],
    cdfs: Vec<Vec<(f64, f64)>>,
) -> Result<(), String> {
    let (mut single, mut multi) = (Vec::new(), Vec::new());
    for (i, ((_, one, m), ci)) in means.iter().zip(intervals).enumerate() {
        let x = (i + 1) as f64;
        single.push((x, *one, ci[0]));
        if let Some(m) = m {
            multi.push((x, *m, ci[1]));
        }
    }
    let cdfs = means
        .iter()
        .zip(cdfs)
        .map(|((name, ..), points)| Series::new(*name, points))
        .collect();
    plot::draw_png(
        &out.join("fig5.5.png"),
        &format!(
            "Heron Fig. 5.5 on sim (xl170-cx4): each TPC-C transaction alone, 1 client, {FIG5_5_PARTITIONS} partitions x 3 replicas"
        ),
        &[
            panel(
                "average latency: 1 new-order, 2 payment, 3 order-status, 4 delivery, 5 stock-level",
                "transaction type",
                "latency (us)",
                vec![
                    Series::with_errors("single-partition", single),
                    Series::with_errors("multi-partition", multi),
                ],
            ),
            panel("latency CDF", "latency (us)", "fraction", cdfs),
        ],
    )
}

/// The head of Figure 5.5's summary: the preamble and the runs.
fn fig5_5_head(commit: &str, software: &Software, duration: Nanos) -> String {
    let mut md = String::new();
    preamble(
        &mut md,
        "Heron Fig. 5.5 (latency per TPC-C transaction)",
        "heron-fig5.5",
        commit,
        software,
    );
    let _ = writeln!(
        md,
        "Each transaction type alone: one client in a closed loop for {duration} after a 10% \
         warm-up, {FIG5_5_PARTITIONS} partitions (the thesis does not say how many), TPC-C's own \
         remote order lines (1%) and remote payments (15%). Files: `summary.csv`, \
         `latency_cdf.csv`, `fig5.5.png`.\n"
    );
    md
}

/// Figure 5.5's tables: each transaction type's means (`means` in [`KINDS`]'s order), then the
/// thesis's quoted latencies beside them.
fn fig5_5_table(means: &[(&str, f64, Option<f64>)]) -> String {
    let mut md =
        String::from("| transaction | single-partition | multi-partition |\n|---|---|---|\n");
    for (name, one, m) in means {
        let _ = writeln!(
            md,
            "| {name} | {one:.1} us | {} |",
            m.map_or("-".into(), |m| format!("{m:.1} us"))
        );
    }
    let get = |k: Kind| means[k as usize];
    md.push('\n');
    md.push_str(TABLE_HEAD);
    for (what, published, kind) in [
        ("Order-Status", 16.5, Kind::OrderStatus),
        ("Delivery", 17.6, Kind::Delivery),
        (
            "single-partition New-Order (read off the figure)",
            19.0,
            Kind::NewOrder,
        ),
    ] {
        crate::figure::row(&mut md, what, published, get(kind).1, "us");
    }
    if let Some(m) = get(Kind::NewOrder).2 {
        crate::figure::row(
            &mut md,
            "multi-partition New-Order (read off the figure)",
            35.0,
            m,
            "us",
        );
    }
    md
}

/// Figure 5.5's discussion: one price per row, why Delivery alone is light (its queue of
/// `undelivered` orders per district drains), multi-partition costs, and the software cost.
fn fig5_5_discussion(software: &Software, undelivered: u64) -> String {
    let mut md = format!(
        "\n## Discussion\n\n\
         - **One price per row.** The profile charges every row read or written alike, fitted on \
         Figure 5.4's New-Order execution; a transaction's cost follows its row count. \
         Stock-Level reads up to 20 orders' lines and their stock rows, hence its cost.\n\
         - **Delivery alone drains its queue.** A client is bound to one warehouse, and a \
         Delivery delivers the oldest undelivered order of each of its ten districts (clause \
         2.7.4). The database starts with {undelivered} undelivered orders per district (the \
         specification's 900 of 3,000, scaled), and no New-Order adds any in this run, so after \
         {undelivered} Deliveries, within the warm-up, every Delivery finds none and reads the \
         district rows only. The thesis's one-client-per-type runs drain the queue too (after \
         900 Deliveries at full scale), which may be why it calls Delivery light-weight; the \
         thesis does not say.\n\
         - **Multi-partition transactions** add the coordination the `heron-fig5.4` summary \
         discusses, and one-sided reads of the other partition's rows.\n",
    );
    md.push_str(&crate::figure::software_bullet(
        software,
        "- **Software cost.** Under `none` no CPU time is charged: every transaction costs its \
         RDMA operations only, and the light ones sit at RamCast's single-group latency.\n"
            .into(),
    ));
    md
}

/// Figure 5.5's claims, from each transaction type's mean latency alone (us), single-partition
/// and multi-partition when any ran, in [`KINDS`]'s order. The quoted latencies are judged as
/// numbers, each on its own (the ~19 and ~35 us read off the figure too); the comparisons as
/// orderings, undecided where a multi-partition mean is missing.
pub(super) fn fig5_5_claims(
    means: &[(&str, f64, Option<f64>)],
    ci: &[[Interval; 2]],
) -> Vec<Claim> {
    let get = |k: Kind| means[k as usize];
    // A mean with its interval where known (`span` 0 single-, 1 multi-partition).
    let at =
        |k: Kind, span: usize, v: f64| Measure::within(v, ci.get(k as usize).and_then(|c| c[span]));
    let (os, d, sl) = (
        get(Kind::OrderStatus).1,
        get(Kind::Delivery).1,
        get(Kind::StockLevel).1,
    );
    let mut claims = vec![
        Claim::number(
            "Order-Status: 16.5 us",
            16.5,
            "us",
            at(Kind::OrderStatus, 0, os),
        ),
        Claim::number("Delivery: 17.6 us", 17.6, "us", at(Kind::Delivery, 0, d)),
        Claim::ordering(
            "Stock-Level is a heavy local transaction: slower than Order-Status and Delivery",
            "Stock-Level's mean above Order-Status's and Delivery's",
            format!("{sl:.1} us against {os:.1} and {d:.1} us"),
            sl > os && sl > d,
        )
        .undecided_if(
            at(Kind::StockLevel, 0, sl).overlaps(&at(Kind::OrderStatus, 0, os))
                || at(Kind::StockLevel, 0, sl).overlaps(&at(Kind::Delivery, 0, d)),
            "the means' intervals overlap",
        ),
    ];
    let split = [Kind::NewOrder, Kind::Payment].map(get);
    let missing = split.iter().any(|(_, _, m)| m.is_none());
    claims.push(
        Claim::ordering(
            "multi-partition New-Orders and Payments take longer than single-partition ones",
            "each type's multi-partition mean above its single-partition mean",
            split
                .iter()
                .map(|(name, one, m)| {
                    m.map_or(format!("{name}: no multi-partition one"), |m| {
                        format!("{name} {one:.1} -> {m:.1} us")
                    })
                })
                .collect::<Vec<_>>()
                .join("; "),
            split.iter().all(|(_, one, m)| m.is_some_and(|m| m > *one)),
        )
        .undecided_if(missing, "a type ran no multi-partition transaction")
        .undecided_if(
            [Kind::NewOrder, Kind::Payment].iter().any(|&k| {
                let (_, one, m) = get(k);
                m.is_some_and(|m| at(k, 0, one).overlaps(&at(k, 1, m)))
            }),
            "a type's single- and multi-partition means' intervals overlap",
        ),
    );
    let (_, one, multi) = get(Kind::NewOrder);
    claims.push(Claim::number(
        "single-partition transactions ~19 us (New-Order, read off the figure)",
        19.0,
        "us",
        at(Kind::NewOrder, 0, one),
    ));
    claims.push(match multi {
        Some(m) => Claim::number(
            "multi-partition transactions ~35 us (New-Order, read off the figure)",
            35.0,
            "us",
            at(Kind::NewOrder, 1, m),
        ),
        None => Claim::trend(
            "multi-partition transactions ~35 us (New-Order, read off the figure)",
            "a multi-partition New-Order's mean, within 25% of 35 us",
            "none measured".into(),
            false,
        )
        .undecided_if(true, "the run had no multi-partition New-Order"),
    });
    claims
}
