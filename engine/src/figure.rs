//! What every paper figure and `harness compare` share: measuring a point, saturation sweeps
//! (clients doubled until throughput grows by less than 5%, or a cap), points measured on all
//! cores, latency CDFs, panels, and the side-by-side and claims tables of the summaries. Each
//! protocol's figures live in its folder of the harness.

use crate::experiment::{Experiment, Measured};
use crate::plot::{self, Panel, Series};
use hdrhistogram::Histogram;
use rayon::prelude::*;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use transport::runtime::sim::Software;
use transport::Nanos;

/// One measured point of a saturation sweep.
#[allow(
    missing_debug_implementations,
    reason = "a measurement's histograms are not worth printing"
)]
pub struct Point {
    /// The experiment.
    pub e: Experiment,
    /// What it measured.
    pub m: Measured,
}

/// The precision a figure point is measured to: the 95% intervals of its throughput, median
/// and p95 latency each within this fraction of the estimate.
pub const PRECISION: f64 = 0.05;

/// How far [`measure`] stretches a point's window to reach [`PRECISION`]: at most this many
/// times the figure's.
pub const MAX_STRETCH: u64 = 16;

/// Runs one point of a figure, its window doubled until its throughput, median and p95 are
/// each known within [`PRECISION`] at 95% (by sectioning: see `multicast::workload::Section`;
/// [`Measured::throughput_ci`])
/// or the window is [`MAX_STRETCH`] times the figure's: a fixed window short against the
/// point's latency holds a few requests per client and would report their lumps as a number.
/// A point whose intervals are still wider says so in its CSV columns.
///
/// A point that completed no multicast is stretched like an imprecise one (a closed loop whose
/// latency is near the window can complete none in it: Ridge's direct dissemination of 64 KB to
/// 32 learners on 1 Gb/s, about 110 ms a message, completed none in `ridge-fig1`'s 200 ms
/// window under `measured`, and 67 in 2 s); one that completes none even in the longest window
/// is refused: a collapse (every leader replaced under load, say) must stop the figure, not
/// vanish into a maximum.
pub fn measure(e: &Experiment) -> Result<Measured, String> {
    let mut e = e.clone();
    let cap = e.duration.as_nanos().saturating_mul(MAX_STRETCH);
    loop {
        let m = e.run();
        if m.delivered == 0 && e.duration.as_nanos() < cap {
            e.duration = Nanos(e.duration.as_nanos() * 2);
            continue;
        }
        if m.delivered == 0 {
            return Err(format!(
                "a figure point completed no multicast in its window ({} group(s) changed \
                 leader): {}\nThe figure would hide a collapse; replay it with `harness run` \
                 and fix the cause.",
                m.leader_changes,
                e.summary_row(&m, "-")
            ));
        }
        if precise(&m) || e.duration.as_nanos() >= cap {
            return Ok(m);
        }
        e.duration = Nanos(e.duration.as_nanos() * 2);
    }
}

/// Whether `m`'s throughput (its interval spans the window's quantisation too), median and
/// p95 are each known within [`PRECISION`].
fn precise(m: &Measured) -> bool {
    let within = |x: f64, ci: Option<(f64, f64)>| {
        ci.is_some_and(|(lo, hi)| (hi - lo) / 2.0 <= PRECISION * x.abs())
    };
    let (p50, p50_ci) = m.latency_ci(0.5);
    let (p95, p95_ci) = m.latency_ci(0.95);
    within(m.throughput, m.throughput_ci()) && within(p50, p50_ci) && within(p95, p95_ci)
}

/// Doubles the clients from 1 until throughput grows by less than 5%; returns every point.
pub fn saturate(
    mk: impl Fn(usize) -> Experiment + Sync,
    max_clients: usize,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Point>, String> {
    doubling(
        measures_ahead(),
        1,
        max_clients,
        |clients| {
            let e = mk(clients);
            measure(&e).map(|m| Point { e, m })
        },
        |points| match points {
            [.., a, b] => b.m.throughput > a.m.throughput * 1.05,
            _ => true,
        },
        |clients, Point { e, m }| {
            progress(&format!(
                "  groups={} size={} dest={} clients={clients}: {:.0} msg/s, p50 {:.2} us, window {}, leader changes {}",
                e.deploy.shape().0,
                e.size,
                e.dest,
                m.throughput,
                m.latency.value_at_quantile(0.5) as f64 / 1000.0,
                m.window,
                m.leader_changes
            ))
        },
    )
}

/// Worker threads, on as many cores, from which a [`doubling`] sweep measures two doublings at
/// once.
pub const AHEAD_THREADS: usize = 8;

/// Whether a [`doubling`] sweep on the current pool measures ahead: the pool has
/// [`AHEAD_THREADS`] threads and the machine as many cores (`--jobs 8` on 2 cores measured
/// ahead and lost: `figure tram-fig7` 56.7 s against 19.7 s).
pub fn measures_ahead() -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    rayon::current_num_threads().min(cores) >= AHEAD_THREADS
}

/// A sweep that doubles its clients: measures `first`, `2 first`, ... up to `cap`, as long
/// as `more` says the points so far call for another, and returns the points. `kept` sees
/// each point and its clients in order as the sweep takes it (its progress line).
///
/// With `ahead` (callers pass [`measures_ahead`]), the point after the one being measured is
/// offered to the pool as well (`rayon::join`): a free thread measures it alongside, and the
/// sweep throws it away if it stops first. A sweep of doublings otherwise runs one point
/// after another, and its last points are the longest: on a many-core machine, Heron's Table
/// 5.1 waited minutes on one 16-partition sweep while every other core sat idle. On fewer
/// threads, where every core has work of its own, a point measured ahead only delays that
/// work (`figure heron-table5.1` on 2 cores: 481 s with it, 437 s without), so the next point
/// waits until it is known to be wanted. Which points are kept, and so every output, is the
/// same either way: an error or a panic at a point measured ahead fails the sweep only if the
/// sweep then keeps that point, as it would have without measuring ahead.
pub fn doubling<P: Send>(
    ahead: bool,
    first: usize,
    cap: usize,
    measure: impl Fn(usize) -> Result<P, String> + Sync,
    more: impl Fn(&[P]) -> bool + Sync,
    kept: impl Fn(usize, &P),
) -> Result<Vec<P>, String> {
    let mut points: Vec<P> = Vec::new();
    let mut clients = first;
    // The point of `clients`, measured alongside the one before it; a panic in it is held
    // until the sweep knows whether it keeps the point.
    let mut early: Option<std::thread::Result<Result<P, String>>> = None;
    while clients <= cap {
        match early.take() {
            Some(p) => points.push(p.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?),
            None if ahead && clients.saturating_mul(2) <= cap => {
                let settled = AtomicBool::new(false);
                let wanted = AtomicBool::new(false);
                let (now, next) = rayon::join(
                    || {
                        let r = measure(clients).map(|p| points.push(p));
                        wanted.store(r.is_ok() && more(&points), Ordering::SeqCst);
                        settled.store(true, Ordering::SeqCst);
                        r
                    },
                    // Run at once if a free thread took it; by this thread after the point
                    // above, only if the sweep goes on.
                    || {
                        let skip = settled.load(Ordering::SeqCst) && !wanted.load(Ordering::SeqCst);
                        // Unwind safety: a point that panicked is either thrown away or its
                        // panic resumed on this thread, never used.
                        (!skip).then(|| {
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                measure(clients * 2)
                            }))
                        })
                    },
                );
                now?;
                early = next;
            }
            None => points.push(measure(clients)?),
        }
        kept(clients, points.last().expect("just pushed"));
        if !more(&points) {
            break;
        }
        clients = clients.saturating_mul(2);
    }
    Ok(points)
}

/// Measures `curve(item)` for every item on the current worker pool (every core, unless a
/// [`worker_pool`] runs the caller) and returns the results in the items' order: a figure
/// comes out byte-identical on one thread or many (each run is its own simulation,
/// deterministic from its seed).
///
/// Items start in their order, each on the first thread that comes free, so a list that puts
/// its longest items first ends with short ones and leaves no core idle behind a long tail
/// ([`in_parallel_longest_first`]). Calls nest: a thread waiting for the other items of an
/// outer call takes items of an inner one.
pub fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    curve: impl Fn(&T) -> Result<R, String> + Sync,
) -> Result<Vec<R>, String> {
    let order: Vec<usize> = (0..items.len()).collect();
    in_order(items, &order, curve)
}

/// [`in_parallel`], starting the items in decreasing order of `cost` (a guess at each one's
/// run time; ties keep the items' order), the results still in the items' order.
pub fn in_parallel_longest_first<T: Sync, R: Send>(
    items: &[T],
    cost: impl Fn(&T) -> u64,
    curve: impl Fn(&T) -> Result<R, String> + Sync,
) -> Result<Vec<R>, String> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&items[i])));
    in_order(items, &order, curve)
}

/// Runs `curve` on `items[i]` for each `i` of `order`, started in that order as threads come
/// free (`par_bridge` hands out one item at a time), and returns the results in the items'
/// order.
fn in_order<T: Sync, R: Send>(
    items: &[T],
    order: &[usize],
    curve: impl Fn(&T) -> Result<R, String> + Sync,
) -> Result<Vec<R>, String> {
    let mut done: Vec<(usize, R)> = order
        .iter()
        .par_bridge()
        .map(|&i| curve(&items[i]).map(|r| (i, r)))
        .collect::<Result<_, _>>()?;
    done.sort_unstable_by_key(|&(i, _)| i);
    Ok(done.into_iter().map(|(_, r)| r).collect())
}

/// A pool of `jobs` worker threads for figure points (`None`: every core). Work started
/// inside its `install` runs [`in_parallel`] on it.
pub use sweep::worker_pool;

/// Whether the last doubling of clients grew throughput by less than 5% (false: the sweep hit
/// its client cap still growing, and the maximum is a lower bound).
pub fn saturated(points: &[Point]) -> bool {
    match points {
        [.., a, b] => b.m.throughput <= a.m.throughput * 1.05,
        _ => false,
    }
}

/// A figure label for a maximum: marked when the sweep stopped at its client cap still growing.
pub fn max_label(points: &[Point]) -> String {
    match points.last() {
        Some(p) if !saturated(points) => {
            format!(
                " (still growing at {} clients: a lower bound)",
                p.e.deploy.shape().2
            )
        }
        _ => String::new(),
    }
}

/// The largest throughput of a sweep (msg/s).
pub fn max_throughput(points: &[Point]) -> f64 {
    points.iter().map(|p| p.m.throughput).fold(0.0, f64::max)
}

/// The maximum throughput of a sweep (msg/s) as a claim's measurement, with the interval of
/// its knee band ([`crate::stats::plateau`]), a lower bound when the sweep stopped still
/// growing.
pub fn max_measure(points: &[Point]) -> crate::verdict::Measure {
    let v: Vec<_> = points
        .iter()
        .map(|p| (p.m.throughput, p.m.throughput_ci()))
        .collect();
    let (max, ci) = crate::stats::plateau(&v);
    crate::verdict::Measure::within(max, ci).capped(!saturated(points))
}

/// A latency quantile of one run (us) as a claim's measurement, with its interval.
pub fn latency_measure(m: &Measured, q: f64) -> crate::verdict::Measure {
    let (v, ci) = m.latency_ci(q);
    crate::verdict::Measure::within(v, ci)
}

/// Quantile `q` of a latency histogram in nanoseconds, in microseconds.
pub fn us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

/// The CDF of a latency histogram, starting at fraction 0 at the smallest value.
pub fn cdf_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let total = h.len().max(1) as f64;
    let mut seen = 0;
    let mut points = vec![(h.min() as f64 / 1000.0, 0.0)];
    points.extend(h.iter_recorded().map(|v| {
        seen += v.count_at_value();
        (v.value_iterated_to() as f64 / 1000.0, seen as f64 / total)
    }));
    points
}

/// `64 B`, `4K`.
pub fn size_label(size: usize) -> String {
    if size < 1024 {
        format!("{size} B")
    } else {
        plot::human_bytes(size as f64)
    }
}

/// A panel with linear axes.
pub fn panel(title: &str, x: &str, y: &str, series: Vec<Series>) -> Panel {
    Panel {
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        log_y: false,
        x: crate::plot::XScale::Linear,
        series,
    }
}

/// Writes `text` to `path`; an error names the file.
pub fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes a CSV file of `head` and `rows`, each row's cells already formatted (for rows
/// whose cells a serialized struct cannot give: some left empty, numbers at a set precision).
pub fn write_records<const N: usize>(
    path: &Path,
    head: [&str; N],
    rows: impl IntoIterator<Item = [String; N]>,
) -> Result<(), String> {
    let mut w = csv::Writer::from_path(path).map_err(|e| e.to_string())?;
    w.write_record(head).map_err(|e| e.to_string())?;
    for r in rows {
        w.write_record(r).map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())
}

/// A markdown table's head: its columns, then the line under them.
pub fn table_head<S: std::fmt::Display>(columns: impl IntoIterator<Item = S>) -> String {
    let mut head = String::from("|");
    let mut under = String::from("|");
    for c in columns {
        let _ = write!(head, " {c} |");
        under.push_str("---|");
    }
    format!("{head}\n{under}\n")
}

/// A row of the side-by-side table.
pub fn row(out: &mut String, what: &str, published: f64, measured: f64, unit: &str) {
    let _ = writeln!(
        out,
        "| {what} | {published:.1} {unit} | {measured:.1} {unit} | {:.2} |",
        measured / published
    );
}

/// What a summary says when the paper states no claim about the figure (the results index
/// then says so instead of counting verdicts).
pub const NO_CLAIMS: &str =
    "The paper states no number or claim for these figures beyond showing them";

/// The head of a published-against-measured table.
pub const TABLE_HEAD: &str =
    "| what | published | measured | measured / published |\n|---|---|---|---|\n";

/// A discussion bullet about software cost: `free` (written for the model without software
/// cost) under `none`; under a priced profile, what this run charges and what it was calibrated
/// on, since `free`'s explanation does not hold for this run.
pub fn software_bullet(software: &Software, free: String) -> String {
    if software.costs.is_free() {
        return free;
    }
    format!(
        "- **Software cost.** This run charges `{}` v{}: {} ({}; calibrated on: {}). The \
         explanations that `none/summary.md` gives for the gaps left by a model without software \
         cost do not apply here: every claim above is judged on this run's own measurements.\n",
        software.name,
        software.version,
        software.description,
        software.describe(),
        software.calibration.source
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--jobs`: a pool of one runs a figure's points on one thread, and any pool returns
    /// them in the items' order.
    #[test]
    fn worker_pools_bound_the_threads_and_keep_the_order() {
        let items: Vec<u64> = (0..64).collect();
        let run = |jobs| {
            worker_pool(Some(jobs)).unwrap().install(|| {
                let threads = rayon::current_num_threads();
                let out = in_parallel(&items, |&i| Ok((i * i, rayon::current_thread_index())));
                (threads, out.unwrap())
            })
        };
        let (one, serial) = run(1);
        let (three, parallel) = run(3);
        assert_eq!((one, three), (1, 3));
        assert!(serial.iter().all(|&(_, t)| t == Some(0)));
        let squares = |v: &[(u64, Option<usize>)]| v.iter().map(|p| p.0).collect::<Vec<_>>();
        assert_eq!(squares(&serial), squares(&parallel));
        assert_eq!(
            squares(&serial),
            items.iter().map(|i| i * i).collect::<Vec<_>>()
        );
        assert!(worker_pool(None).is_ok());
    }

    /// `in_parallel_longest_first` starts the costliest item first (ties in the items' order)
    /// and still returns the results in the items' order; nested calls finish on any pool.
    #[test]
    fn longest_items_start_first_and_results_keep_the_items_order() {
        let items: Vec<u64> = vec![3, 9, 1, 9, 4];
        let run = |jobs| {
            worker_pool(Some(jobs)).unwrap().install(|| {
                let started = std::sync::Mutex::new(Vec::new());
                let out = in_parallel_longest_first(
                    &items,
                    |&c| c,
                    |&c| {
                        started.lock().unwrap().push(c);
                        let inner: Vec<u64> = (0..c).collect();
                        let sum: u64 = in_parallel(&inner, |&i| Ok(i)).unwrap().iter().sum();
                        Ok((c, sum))
                    },
                );
                (out.unwrap(), started.into_inner().unwrap())
            })
        };
        let (serial, started) = run(1);
        assert_eq!(started, [9, 9, 4, 3, 1]);
        let want: Vec<(u64, u64)> = items.iter().map(|&c| (c, c * (c - 1) / 2)).collect();
        assert_eq!(serial, want);
        assert_eq!(run(3).0, want);
        let failed = worker_pool(Some(2)).unwrap().install(|| {
            in_parallel(&items, |&c| {
                if c == 4 {
                    Err(format!("item {c}"))
                } else {
                    Ok(c)
                }
            })
        });
        assert_eq!(failed, Err("item 4".to_string()));
    }

    /// A doubling sweep keeps the same points whether it measures ahead or not, hands them to
    /// `kept` in order, and fails only on a point it keeps. Not measuring ahead, it measures
    /// exactly the points it keeps; measuring ahead on a pool of [`AHEAD_THREADS`], the next
    /// doubling runs alongside the current one.
    #[test]
    fn doubling_keeps_the_same_points_on_any_pool_and_measures_ahead_on_many_threads() {
        use std::sync::{Condvar, Mutex};
        use std::time::Duration;
        // Throughput grows until 8 clients, then stays flat: the sweep stops at 16, the first
        // of a pair (16, 32) that many threads measure together.
        let rate = |c: usize| c.min(8) as u64;
        let more = |points: &[(usize, u64)]| match points {
            [.., a, b] => b.1 > a.1,
            _ => true,
        };
        // Whether point 2 started while point 1 was still being measured. With many threads,
        // points 1 and 16 each wait (bounded) for their next doubling to start, so the point
        // measured past the stop (32) is measured, and a failure there is seen.
        let sweep = |jobs: usize, fail_at: usize, panic_at: usize| {
            let measured = Mutex::new(Vec::new());
            let kept = Mutex::new(Vec::new());
            let started = (Mutex::new(Vec::new()), Condvar::new());
            let overlapped = Mutex::new(false);
            let out = worker_pool(Some(jobs)).unwrap().install(|| {
                // On any machine: measuring ahead needs free threads, not free cores.
                doubling(
                    jobs >= AHEAD_THREADS,
                    1,
                    1024,
                    |c| {
                        measured.lock().unwrap().push(c);
                        let (begun, cv) = &started;
                        begun.lock().unwrap().push(c);
                        cv.notify_all();
                        if (c == 1 || c == 16) && jobs >= AHEAD_THREADS {
                            // Wait (bounded) for point 2c to start on another thread.
                            let g = cv
                                .wait_timeout_while(
                                    begun.lock().unwrap(),
                                    Duration::from_secs(20),
                                    |b| !b.contains(&(2 * c)),
                                )
                                .unwrap();
                            if c == 1 {
                                *overlapped.lock().unwrap() = !g.1.timed_out();
                            }
                        }
                        if c == fail_at {
                            return Err(format!("point {c}"));
                        }
                        assert_ne!(c, panic_at, "point {c} panics");
                        Ok((c, rate(c)))
                    },
                    more,
                    |c, p| kept.lock().unwrap().push((c, *p)),
                )
            });
            let mut measured = measured.into_inner().unwrap();
            measured.sort_unstable();
            (
                out,
                kept.into_inner().unwrap(),
                measured,
                overlapped.into_inner().unwrap(),
            )
        };
        let want: Vec<(usize, u64)> = [1, 2, 4, 8, 16].map(|c| (c, rate(c))).to_vec();
        let (out, kept, measured, _) = sweep(1, 0, 0);
        assert_eq!(out.unwrap(), want);
        let kept_pairs: Vec<(usize, (usize, u64))> = want.iter().map(|&p| (p.0, p)).collect();
        assert_eq!(kept, kept_pairs, "kept sees every point in order");
        assert_eq!(measured, [1, 2, 4, 8, 16], "nothing measured ahead");
        let (out, kept, measured, overlapped) = sweep(AHEAD_THREADS, 0, 0);
        assert_eq!(out.unwrap(), want);
        assert_eq!(kept, kept_pairs);
        assert!(overlapped, "point 2 ran alongside point 1");
        assert_eq!(
            measured,
            [1, 2, 4, 8, 16, 32],
            "exactly one point past the stop is measured"
        );
        // A point the sweep keeps fails it, by error or panic; one measured ahead and thrown
        // away does neither.
        for jobs in [1, AHEAD_THREADS] {
            assert_eq!(sweep(jobs, 4, 0).0, Err("point 4".to_string()));
            assert_eq!(sweep(jobs, 32, 0).0.unwrap(), want);
            let panicked =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sweep(jobs, 0, 4)));
            assert!(
                panicked.is_err(),
                "a panic at a kept point reaches the caller"
            );
            assert_eq!(sweep(jobs, 0, 32).0.unwrap(), want);
        }
        // A pool of fewer threads never measures ahead, whatever the cores.
        let small = AHEAD_THREADS - 1;
        assert!(!worker_pool(Some(small)).unwrap().install(measures_ahead));
    }
}
