//! The harness as a researcher runs it: bad input gives a clear error and a non-zero exit; good
//! input writes the promised CSV columns and a PNG; the checker passes on the transport model.

mod common;

use common::*;

#[test]
fn sizes_out_of_range_are_rejected() {
    for bad in ["0", "8388609", "-3", "big"] {
        let o = harness(&["bench", "transport", &format!("--sizes={bad}")]);
        assert!(!o.status.success(), "--sizes {bad} accepted");
        let e = stderr(&o);
        assert!(
            e.contains("out of range") || e.contains("not a size"),
            "{e}"
        );
    }
}

#[test]
fn unknown_profile_names_the_known_ones() {
    let o = harness(&args("bench transport --profile nonesuch"));
    assert_eq!(o.status.code(), Some(2));
    says(&o, "unknown profile `nonesuch`");
    says(&o, "r320-cx3");
}

#[test]
fn malformed_profile_file_names_field_and_line() {
    let dir = scratch("harness-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    let good = transport::runtime::sim::BUILTIN[0].1;
    std::fs::write(
        &path,
        good.replace("link_gbps = 50.0", "link_gbps = \"fifty\""),
    )
    .unwrap();
    let o = harness(&["bench", "transport", "--profile", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    for what in ["bad.toml", "line", "link_gbps"] {
        says(&o, what);
    }
}

/// Asserts the header line of the CSV text `csv` names every one of `columns`.
fn has_columns(csv: &str, columns: &[&str]) {
    let header = csv.lines().next().unwrap_or_default();
    for col in columns {
        assert!(
            header.split(',').any(|c| c == *col),
            "missing column {col} in {header}"
        );
    }
}

#[test]
fn csv_has_every_column_and_png_is_written() {
    let dir = scratch("harness-out");
    let csv = dir.join("t.csv");
    let png = dir.join("t.png");
    let o = harness_with(
        "bench transport --sizes 64,4096 --iterations 100 --csv",
        &[csv.to_str().unwrap(), "--png", png.to_str().unwrap()],
    );
    succeeded_printing(&o, &["t_typical[usec]"]);
    let text = std::fs::read_to_string(&csv).unwrap();
    has_columns(
        &text,
        &[
            "runtime",
            "profile",
            "bytes",
            "iterations",
            "t_min_us",
            "t_max_us",
            "t_typical_us",
            "t_avg_us",
            "t_stdev_us",
            "t_p99_us",
            "t_p999_us",
            "bw_avg_gbps",
            "msg_rate_mpps",
        ],
    );
    assert_eq!(text.lines().count(), 3, "one row per size");
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
}

#[test]
fn chaos_check_passes_with_determinism() {
    let o = harness(&args(
        "check --protocol chaos --seeds 12 --check-determinism",
    ));
    succeeded_printing(&o, &["0 violations", "12 runs"]);
}

#[test]
fn verify_reads_a_delivery_log_and_names_the_violated_property() {
    let dir = scratch("harness-verify");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("processes.csv"),
        "process,group,correct\n0,0,true\n1,1,true\n9,client,true\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("multicasts.csv"),
        "client,msg,dst,completed\n9,c9:1,0;1,true\n9,c9:2,0;1,true\n",
    )
    .unwrap();
    let ordered = "process,group,index,msg,dst\n0,0,0,c9:1,0;1\n0,0,1,c9:2,0;1\n1,1,0,c9:1,0;1\n1,1,1,c9:2,0;1\n";
    std::fs::write(dir.join("deliveries.csv"), ordered).unwrap();
    verifies(&dir);

    let swapped = "process,group,index,msg,dst\n0,0,0,c9:1,0;1\n0,0,1,c9:2,0;1\n1,1,0,c9:2,0;1\n1,1,1,c9:1,0;1\n";
    std::fs::write(dir.join("deliveries.csv"), swapped).unwrap();
    let o = harness(&["verify", "--log", dir.to_str().unwrap()]);
    assert!(!o.status.success());
    prints(&o, "uniform prefix order violated");

    let o = harness(&["verify", "--log", "/nonexistent/dir"]);
    assert_eq!(o.status.code(), Some(2));
    says(&o, "processes.csv");

    // A log that recorded nothing vouches for nothing: refused, not "0 violations".
    std::fs::write(dir.join("multicasts.csv"), "client,msg,dst,completed\n").unwrap();
    std::fs::write(dir.join("deliveries.csv"), "process,group,index,msg,dst\n").unwrap();
    let o = harness(&["verify", "--log", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    says(&o, "nothing to verify");
}

/// Runs `line`, which ends in `--out`, in a scratch directory named after `name`: its results
/// in `out/`, its delivery log in `log/`. Asserts the run succeeded with no violation and that
/// `harness verify` agrees on the log it wrote; returns the scratch directory and what the
/// run said.
fn run_and_verify(name: &str, line: &str) -> (Scratch, std::process::Output) {
    let dir = scratch(name);
    let (out, log) = (dir.join("out"), dir.join("log"));
    let o = harness_with(
        line,
        &[out.to_str().unwrap(), "--log", log.to_str().unwrap()],
    );
    succeeded_printing(&o, &["0 violations"]);
    verifies(&log);
    (dir, o)
}

#[test]
fn ramcast_run_writes_summary_cdf_and_a_log_that_verifies() {
    let (dir, _) = run_and_verify(
        "harness-run",
        "run --protocol ramcast --groups 2 --clients 3 --dest random:2 --duration 1ms --out",
    );
    let out = dir.join("out");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header = lines.next().unwrap();
    assert!(header.ends_with(
        "delivered,throughput_msgs_per_s,throughput_ci95_lo,throughput_ci95_hi,lat_p50_us,\
         lat_p50_ci95_lo,lat_p50_ci95_hi,lat_p95_us,lat_p95_ci95_lo,lat_p95_ci95_hi,lat_p99_us,\
         leader_changes"
    ));
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(row.len(), header.split(',').count());
    let delivered = header.split(',').position(|h| h == "delivered").unwrap();
    assert!(
        row[delivered].parse::<u64>().unwrap() > 0,
        "nothing delivered: {summary}"
    );
    // Every estimate lies inside its own 95% interval (sectioning centres it there).
    let col = |name: &str| -> f64 {
        let i = header.split(',').position(|h| h == name).unwrap();
        row[i]
            .parse()
            .unwrap_or_else(|e| panic!("{name}: {e}: {summary}"))
    };
    for v in ["throughput_msgs_per_s", "lat_p50_us", "lat_p95_us"] {
        let stem = v.trim_end_matches("_msgs_per_s").trim_end_matches("_us");
        let (lo, hi) = (
            col(&format!("{stem}_ci95_lo")),
            col(&format!("{stem}_ci95_hi")),
        );
        assert!(lo <= col(v) && col(v) <= hi, "{v}: {summary}");
    }
    assert!(
        std::fs::read_to_string(out.join("latency_cdf.csv"))
            .unwrap()
            .lines()
            .count()
            > 1
    );
}

#[test]
fn ramcast_run_rejects_bad_configurations_clearly() {
    each_refused(&[
        (
            "run --protocol ramcast --size 5000 --slot-bytes 1024",
            "does not fit a slot",
        ),
        (
            "run --protocol ramcast --dest random:3 --groups 2",
            "random:3",
        ),
        ("run --protocol ramcast --replicas 4", "odd"),
        ("run --protocol ramcast --duration 0s", "positive"),
    ]);
}

/// Issue 46's run: 64 groups and 4096 clients pass every flag check but declare 72 GiB of
/// regions (and on tcp fork 4288 node processes). Every runtime refuses it before allocating
/// anything, with the estimate and the flags to lower. On a machine with that much memory to
/// spare, 64 times the slots per client stand in for it, so the test never starts the run.
#[test]
fn a_run_larger_than_the_machine_is_refused_before_it_starts() {
    let available_kb: u64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m
                .lines()
                .find(|l| l.starts_with("MemAvailable:"))?
                .to_owned();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0);
    let slots = if available_kb < 80 << 20 {
        "16"
    } else {
        "1024"
    };
    for runtime in ["sim", "local", "tcp"] {
        let line = format!(
            "run --protocol ramcast --groups 64 --clients 4096 --slots {slots} --duration 1s \
             --runtime {runtime}"
        );
        let o = harness(&args(&line));
        assert_eq!(o.status.code(), Some(2), "{runtime}: {}", stderr(&o));
        says(&o, "GiB of memory");
        says(&o, "lower --clients (4096), --groups (64)");
        says(&o, "--ignore-limits runs it anyway");
        assert!(stdout(&o).is_empty(), "{runtime} started: {}", stdout(&o));
    }
}

#[test]
fn tram_run_on_a_custom_tree_writes_a_log_that_verifies() {
    let (dir, o) = run_and_verify(
        "harness-tram",
        "run --protocol tram --tree [-1,0,0,1] --clients 3 --dest adjacent:2 --duration 1ms --out",
    );
    prints(&o, "tree=[-1,0,0,1]");
    let summary = std::fs::read_to_string(dir.join("out/summary.csv")).unwrap();
    let row = summary.lines().nth(1).unwrap();
    assert!(row.starts_with("tram,[-1;0;0;1],sim,r320-cx3,"), "{row}");
}

#[test]
fn ridge_run_with_optimistic_deliveries_reports_mistakes_and_logs_them_apart() {
    let (dir, o) = succeeds_into("harness-ridge", "run --protocol ridge --groups 2 --clients 4 --dest random:2 --duration 20ms --optimistic 500us --log");
    prints(&o, "optimistic deliveries");
    prints(&o, "mistakes");
    prints(&o, "0 violations");
    let opt = std::fs::read_to_string(dir.join("optimistic.csv")).unwrap();
    assert_eq!(opt.lines().next(), Some("process,index,client,seq"));
    assert!(opt.lines().count() > 10, "{opt}");
    // The checker's log holds the atomic deliveries only, and verifies.
    verifies(&dir);
    // Ridge's flags are refused elsewhere, with the reason.
    each_refused(&[
        ("run --protocol ramcast --optimistic 1ms", "--optimistic"),
        ("run --protocol ramcast --acceptors 3", "--acceptors"),
    ]);
    // Acceptors per ensemble: odd, and servers of the group.
    for (replicas, acceptors) in [("3", "2"), ("3", "5")] {
        let line = format!("run --protocol ridge --replicas {replicas} --acceptors {acceptors}");
        let r = refused(&args(&line), "acceptors must be odd");
        says(&r, "at most the 3");
    }
    // Dedicated acceptors: processes of their own, more than a group's servers allowed; the
    // log names them auxiliary and checks they delivered nothing.
    let log = dir.join("dedicated");
    let r = harness_into("run --protocol ridge --groups 2 --replicas 1 --placement dedicated --acceptors 5 --dest random:2 --duration 10ms --log", &log);
    succeeded_printing(
        &r,
        &[
            "5 acceptors per ensemble, processes of their own (p3..p17)",
            "0 violations",
        ],
    );
    let processes = std::fs::read_to_string(log.join("processes.csv")).unwrap();
    assert!(processes.contains("\n17,auxiliary,true"), "{processes}");
    each_refused(&[
        ("run --protocol ridge --placement apart", "colocated"),
        ("run --protocol tram --placement dedicated", "--placement"),
    ]);
}

#[test]
fn tram_run_rejects_bad_trees_and_flags_clearly() {
    each_refused(&[
        ("run --protocol tram --tree [-1,2,1]", "cycle"),
        ("run --protocol tram --tree [-1,-1,0]", "both roots"),
        ("run --protocol tram --tree [-1,7]", "not a group"),
        (
            "run --protocol tram --tree depth --groups 3",
            "does not match the tree",
        ),
        (
            "run --protocol ramcast --tree base",
            "--tree is not for --protocol ramcast: it is tram's",
        ),
        (
            "run --protocol ramcast --dest adjacent:2 --groups 3",
            "tree-based protocols",
        ),
    ]);
}

#[test]
fn rdmc_run_verifies_every_delivery_and_writes_its_parameters() {
    let (dir, o) = succeeds_into("harness-rdmc", "run --protocol rdmc --nodes 13 --size 3MB --block-size 256KB --senders 2 --messages 2 --out");
    prints(
        &o,
        "algorithm=pipeline nodes=13 size=3 MiB block=256 KiB (12 blocks)",
    );
    prints(
        &o,
        "verified: 48 of 48 receiver deliveries intact; 0 corrupt, 0 missing",
    );
    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(row.len(), header.len());
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("nodes"), "13");
    assert_eq!(col("transfers"), "4");
    assert!(col("gbps_mean").parse::<f64>().unwrap() > 0.0);
}

#[test]
fn rdmc_run_refuses_flags_that_do_not_apply() {
    each_refused(&[
        (
            "run --protocol rdmc --tree base",
            "--tree is not for --protocol rdmc: it is tram's",
        ),
        (
            "run --protocol ramcast --nodes 8",
            "--nodes is not for --protocol ramcast: it is rdmc's",
        ),
        (
            "run --protocol rdmc --algorithm hybrid-chain",
            "needs --racks",
        ),
        (
            "run --protocol rdmc --algorithm fastest",
            "unknown algorithm `fastest`",
        ),
        (
            "run --protocol rdmc --senders 5",
            "--senders 5 must be between 1 and --nodes (4)",
        ),
    ]);
    // A size with a space in it, one word to the shell.
    refused(
        &["run", "--protocol", "rdmc", "--size", "12 parsecs"],
        "is not a size",
    );
}

#[test]
fn rdmc_figure_quick_writes_csv_png_and_summary() {
    let (dir, _) = succeeds_into("harness-rdmc-fig", "figure rdmc-fig10-11 --quick --out");
    // One directory per software profile (RDMC's prototype is priced as `measured`), and a
    // summary that puts each claim's verdict under both side by side.
    for lens in ["none", "measured"] {
        for f in ["runs.csv", "fig10-11.png", "summary.md", "claims.csv"] {
            assert!(dir.join(lens).join(f).exists(), "{lens}/{f} missing");
        }
        let md = std::fs::read_to_string(dir.join(lens).join("summary.md")).unwrap();
        assert!(md.contains("| published claim | rule | measured | verdict |"));
        // A quick run says so under its title: it is a smoke test, not the figure.
        let title = md.lines().next().unwrap();
        assert!(title.ends_with(" (quick)"), "{title}");
        assert!(md.contains("**Quick run** (`--quick`)"), "{md}");
        // The records hold what the table shows: every claim with a rule and a verdict.
        let claims = std::fs::read_to_string(dir.join(lens).join("claims.csv")).unwrap();
        assert!(claims.starts_with("claim,kind,rule,"), "{claims}");
        assert!(claims.lines().count() > 1, "{claims}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains(
            "| published claim | rule | measured, `none` | verdict | measured, `measured` | verdict |"
        ),
        "{md}"
    );
    assert!(md.lines().next().unwrap().contains("(quick)"), "{md}");
    assert!(md.contains("**Quick run** (`--quick`)"), "{md}");
    let runs = std::fs::read_to_string(dir.join("measured/runs.csv")).unwrap();
    assert!(
        runs.lines().nth(1).unwrap().contains(",measured,"),
        "{runs}"
    );
}

/// `check --seed N` prints the run as one line; `--replay LINE` runs exactly that run (the
/// same events), and a line with a misspelt parameter is refused with what to do.
#[test]
fn a_run_printed_by_check_replays_from_its_line() {
    let seeded = stdout(&harness(&args("check --protocol tram --seed 3")));
    let line = seeded
        .lines()
        .find(|l| l.starts_with("seed=3 "))
        .unwrap_or_else(|| panic!("{seeded}"));
    assert!(line.contains(" fault="), "{line}");
    let replayed = harness_with("check --protocol tram --replay", &[line]);
    succeeded(&replayed);
    let events = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("1 runs in"))
            .map(|l| l.split("failed; ").nth(1).unwrap_or_default().to_string())
    };
    assert_eq!(events(&stdout(&replayed)), events(&seeded), "{seeded}");
    let bad = harness_with(
        "check --protocol tram --replay",
        &[&line.replace("tree=", "tre=")],
    );
    assert!(!bad.status.success());
    says(&bad, "no `tree=`");
    says(&bad, "--seed N");
    let chaos = harness(&["check", "--replay", line]);
    says(&chaos, "chaos run replays from its seed");
}

#[test]
fn a_bad_shard_or_an_unwritable_report_fails_before_the_sweep() {
    for bad in ["3/3", "1", "a/b"] {
        let o = harness_with("check --protocol rdmc --shard", &[bad]);
        assert_eq!(o.status.code(), Some(2), "--shard {bad} accepted");
        says(&o, "must be K/N");
    }
    let o = refused(
        &args("check --protocol rdmc --seeds 1 --report /nonexistent-dir/report.toml"),
        "--report /nonexistent-dir/report.toml",
    );
    assert!(
        !stdout(&o).contains("runs in"),
        "the sweep ran before the error"
    );
}

#[test]
fn calibrate_refuses_an_output_directory_that_does_not_exist_before_timing_anything() {
    for line in [
        "calibrate software --out /nonexistent-dir/m.toml",
        "calibrate paper tram-cpp --out /nonexistent-dir/t.toml",
    ] {
        let o = harness(&args(line));
        assert_eq!(o.status.code(), Some(2), "{line}");
        says(&o, "no such directory");
        never_prints(&o, "timing each kind");
        never_prints(&o, "scale ");
    }
    let o = harness(&args("calibrate paper ramcast-java --shape nope"));
    says(&o, "unknown software profile `nope`");
}

#[test]
fn heron_tpcc_run_reports_every_transaction_and_its_consistency() {
    let (dir, o) = succeeds_into(
        "harness-heron",
        "run --protocol heron --groups 2 --clients 4 --duration 3ms --capacity 200 --out",
    );
    prints(&o, "TPC-C consistency conditions 3.3.2.1-3.3.2.12: hold");
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    has_columns(
        &csv,
        &[
            "workload",
            "partitions",
            "capacity",
            "kind",
            "span",
            "p99_us",
            "commit",
        ],
    );
    for kind in [
        "new-order",
        "payment",
        "order-status",
        "delivery",
        "stock-level",
    ] {
        assert!(csv.contains(&format!(",{kind},single,")), "{csv}");
    }
    assert!(csv.contains(",new-order,multi,"), "{csv}");
}

/// Every file under `dir`, by path relative to it, with its bytes.
fn files_under(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn heron_figure_quick_breaks_latency_down_under_each_software_profile_on_any_threads() {
    let dir = scratch("harness-heron-fig");
    let one = scratch("harness-heron-fig1");
    // Three threads, more than CI's cores: the lenses and their points interleave.
    for (out, jobs) in [(&dir, "3"), (&one, "1")] {
        let o = harness_with(
            "figure heron-fig5.4 --quick --jobs",
            &[jobs, "--out", out.to_str().unwrap()],
        );
        succeeded(&o);
    }
    // The same bytes in every file, plots included, as when one thread makes one lens after
    // another.
    let (many, serial) = (files_under(&dir), files_under(&one));
    assert_eq!(
        many.keys().collect::<Vec<_>>(),
        serial.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &many {
        assert!(
            bytes == &serial[name],
            "{name} differs between --jobs 3 and 1"
        );
    }
    let _ = std::fs::remove_dir_all(&one);
    for lens in ["none", "measured", "heron-java"] {
        for f in [
            "summary.csv",
            "breakdown.csv",
            "latency_cdf.csv",
            "fig5.4.png",
            "summary.md",
        ] {
            assert!(dir.join(lens).join(f).exists(), "{lens}/{f} missing");
        }
    }
    // The stages add up to the mean, and heron-java's execution is the number it is fitted to.
    let csv = std::fs::read_to_string(dir.join("heron-java/breakdown.csv")).unwrap();
    let two = csv
        .lines()
        .find(|l| l.starts_with("2 WH"))
        .expect("the 2-partition row");
    let v: Vec<f64> = two
        .split(',')
        .skip(3)
        .take(4)
        .map(|x| x.parse().unwrap())
        .collect();
    assert!((v[1] + v[2] + v[3] - v[0]).abs() < 0.01, "{two}");
    assert!((v[3] - 16.0).abs() < 1.0, "{two}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("by construction (this software profile's row price is fitted to it)"),
        "{md}"
    );
}

#[test]
fn heron_run_refuses_flags_that_do_not_apply() {
    each_refused(&[
        (
            "run --protocol heron --duration 1ms --size 64",
            "--size is not for --protocol heron",
        ),
        ("run --protocol heron --duration 1ms --replicas 4", "2f+1"),
        (
            "run --protocol heron --duration 1ms --app kv --scale 10",
            "use them with --app tpcc",
        ),
        ("run --protocol heron --duration 1ms --scale 0", "--scale 1"),
        (
            "run --protocol heron --duration 1ms --capacity 10",
            "starts with 30 orders",
        ),
    ]);
    let o = harness(&["run", "--app", "tpcc"]);
    says(&o, "--app is not for --protocol ramcast: it is heron's");
}

#[test]
fn compare_runs_heron_over_ramcast_and_ridge_and_refuses_tram_and_mixes() {
    let (dir, _) = succeeds_into("harness-heron-over", "compare --protocols heron:ramcast,heron:ridge --groups 2 --duration 3ms --max-clients 2 --name t --out");
    let out = dir.join("t");
    for f in ["runs.csv", "latency_cdf.csv", "compare.png", "summary.md"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert!(runs.contains(",ramcast,tpcc,sim,xl170-cx4,"), "{runs}");
    assert!(runs.contains(",ridge,tpcc,sim,xl170-cx4,"), "{runs}");
    // One client over Ridge waits for the idle ensembles' null messages (Delta, 1 ms); over
    // RamCast it takes tens of microseconds.
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let one = |m: &str| -> f64 {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {m} |")))
            .unwrap_or_else(|| panic!("no {m} row: {md}"));
        row.split('|')
            .nth(2)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    assert!(one("ramcast") < 100.0 && one("ridge") > 500.0, "{md}");
    each_refused(&[
        (
            "compare --protocols heron:tram",
            "TRAM orders along its tree without one",
        ),
        (
            "compare --protocols heron,ramcast",
            "not an atomic multicast",
        ),
    ]);
}

#[test]
fn heron_fig5_6_quick_transfers_exactly_the_lagged_objects_and_grows_with_them() {
    let (dir, _) = succeeds_into(
        "harness-heron-fig56",
        "figure heron-fig5.6 --quick --software none --out",
    );
    let csv = std::fs::read_to_string(dir.join("none/summary.csv")).unwrap();
    // size,blobs,bytes,seed,transfer_us,...: every point installed its objects' slots exactly
    // (the figure refuses a point that did not), and more bytes take longer.
    let rows: Vec<(u64, u64, f64)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[4].parse().unwrap(),
            )
        })
        .collect();
    // Whole blobs, each a staging slot's payload (a sealed slot keeps a few bytes of its 32 KB
    // for the seal), as many as the nominal size needs.
    let per_blob = rows[1].1 / rows[1].0;
    assert_eq!(rows[0].1, 0, "{csv}");
    for (nominal, &(blobs, bytes, _)) in [64 * 1024u64, 640 * 1024].iter().zip(&rows[1..]) {
        assert_eq!(bytes, blobs * per_blob, "{csv}");
        assert_eq!(blobs, nominal.div_ceil(32 * 1024), "{csv}");
        assert!(bytes * 1000 >= nominal * 999, "{csv}");
    }
    let rows: Vec<(u64, f64)> = rows.iter().map(|r| (r.1, r.2)).collect();
    assert!(
        rows[0].1 > 0.0 && rows[0].1 < rows[1].1 && rows[1].1 < rows[2].1,
        "{csv}"
    );
    assert!(dir.join("none/fig5.6.png").exists());
}

/// On a machine without an RDMA device (this project's CI), every verbs command says so, with
/// the reason, and fails; none pretends to have measured something. A verbs cluster of a
/// protocol that does not launch on one is refused with what to use instead.
#[test]
fn verbs_commands_without_a_device_say_so() {
    for line in [
        "run --protocol ramcast --runtime verbs --duration 10ms",
        "run --protocol ramcast --runtime verbs --cluster hosts.toml --duration 10ms",
        "run --protocol rdmc --runtime verbs --size 1MB",
        "bench transport --runtime verbs --sizes 64",
        "bench access --runtime verbs",
        "calibrate hardware --runtime verbs",
    ] {
        refused(&args(line), "no RDMA device");
    }
    refused(
        &args("run --protocol rdmc --runtime verbs --cluster hosts.toml"),
        "does not run on a verbs cluster yet",
    );
    refused(
        &args("run --protocol heron --runtime verbs"),
        "use --runtime local or tcp",
    );
    let o = harness(&args("run --runtime verbs --nic-thread"));
    says(&o, "--runtime local");
}

/// `text` with every commit stamp (12 hex digits, maybe `-dirty`) replaced, so outputs of two
/// builds compare on their numbers.
fn without_commits(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let hex = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            .count();
        let starts_word = out
            .chars()
            .last()
            .is_none_or(|p| !p.is_ascii_alphanumeric());
        let after = rest.as_bytes().get(hex).copied();
        if hex == 12 && starts_word && !after.is_some_and(|b| b.is_ascii_alphanumeric()) {
            out.push_str("COMMIT");
            rest = rest[hex..].strip_prefix("-dirty").unwrap_or(&rest[hex..]);
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Every comparison in `results/compare/` is what today's code produces from the command its
/// summary names (commit stamps aside): `reproduce` does not write comparisons, so nothing else
/// notices when a model change leaves one behind. The comparisons of at most 2 ms per point run
/// by default; `HARNESS_ALL_COMPARISONS=1` runs the longer ones too (minutes).
#[test]
fn published_comparisons_are_what_the_code_produces() {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/compare");
    let all = std::env::var_os("HARNESS_ALL_COMPARISONS").is_some();
    let out = scratch("harness-published");
    let mut dirs: Vec<_> = std::fs::read_dir(&results)
        .expect("results/compare")
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let mut checked = 0;
    for dir in dirs {
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        let command = summary
            .split("Command: `harness ")
            .nth(1)
            .and_then(|s| s.split('`').next())
            .unwrap_or_else(|| panic!("{name}: the summary names no command"));
        let args: Vec<&str> = command.split_whitespace().collect();
        let duration = args
            .iter()
            .position(|a| *a == "--duration")
            .and_then(|i| args[i + 1].strip_suffix("us"))
            .and_then(|d| d.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{name}: no --duration in `{command}`"));
        if duration > 2000.0 && !all {
            continue;
        }
        let o = out.to_str().unwrap();
        let mut run = args.clone();
        run.extend(["--name", &name, "--out", o]);
        let r = harness(&run);
        assert!(r.status.success(), "{name}: {}{}", stdout(&r), stderr(&r));
        for f in ["runs.csv", "latency_cdf.csv", "summary.md"] {
            let read =
                |p: std::path::PathBuf| without_commits(&std::fs::read_to_string(p).unwrap());
            assert!(
                read(dir.join(f)) == read(out.join(&name).join(f)),
                "results/compare/{name}/{f} is not what `harness {command}` produces now: \
                 regenerate it with that command (add --name {name})"
            );
        }
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} comparisons checked");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn commit_stamps_are_masked_and_nothing_else() {
    assert_eq!(
        without_commits("a,4c676517f210,b (commit 51545bc1a2b3-dirty). 4c676517f2101 cafe"),
        "a,COMMIT,b (commit COMMIT). 4c676517f2101 cafe"
    );
}
