//! RDMC's figures (Behrens et al., 2016, section 5) on the simulator: bulk transfers with
//! synthetic payloads that every receiver verifies, on profiles modelled after the paper's
//! clusters (Sierra, Stampede, 100 Gb/s Fractus). Each figure writes `runs.csv` (one row per
//! run, every parameter), PNG charts and `summary.md` with the published claims beside ours.

use crate::experiment::write_rows;
use crate::figure::{panel, table_head, write, NO_CLAIMS};
use crate::plot::{self, Series, XScale};
use crate::protocols::rdmc::{show_bytes, BulkResult, BulkSpec, Row};
use crate::protocols::Making;
use crate::protocols::PaperFigure;
use crate::runtime::Runtime;
use crate::verdict::{self, Claim, Measure};
use rdmc::Algorithm;
use std::fmt::Write as _;
use std::path::Path;
use transport::runtime::sim::{Profile, Software};
use transport::Nanos;

mod fig10_15;
mod fig4;
mod fig6;
mod fig7_9;
pub(crate) use fig10_15::*;
pub(crate) use fig4::*;
pub(crate) use fig6::*;
pub(crate) use fig7_9::*;

const MB: usize = 1 << 20;

/// Runs experiments of one figure and keeps their rows.
struct Ctx<'a> {
    commit: &'a str,
    software: &'a Software,
    progress: &'a (dyn Fn(&str) + Sync),
    rows: Vec<Row>,
}

impl<'a> Ctx<'a> {
    /// A figure writing into `out` (created if missing), charging `software`'s prices.
    fn start(
        out: &Path,
        commit: &'a str,
        software: &'a Software,
        progress: &'a (dyn Fn(&str) + Sync),
    ) -> Result<Ctx<'a>, String> {
        std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
        Ok(Ctx {
            commit,
            software,
            progress,
            rows: Vec::new(),
        })
    }

    /// Runs `s` with the figure's software profile; a run in which any receiver missed a
    /// message or got it corrupted is an error.
    fn run(&mut self, s: &BulkSpec) -> Result<(Row, BulkResult), String> {
        let mut s = s.clone();
        s.software = self.software.clone();
        let r = s.run()?;
        let row = s.row(&r, self.commit);
        if !r.clean() {
            return Err(format!(
                "{} n={} {}: {} corrupt, {} missing, {} failures",
                s.algorithm,
                s.nodes,
                show_bytes(s.size),
                r.corrupt,
                r.missing,
                r.failures
            ));
        }
        (self.progress)(&format!(
            "  {} {} n={} senders={} {} block {}: {:.2} Gb/s, {:.1} us",
            s.profile.name,
            s.algorithm,
            s.nodes,
            s.senders,
            show_bytes(s.size),
            show_bytes(s.block_size),
            row.gbps_mean,
            row.latency_us_mean
        ));
        self.rows.push(row.clone());
        Ok((row, r))
    }
}

fn spec(profile: &Profile, algorithm: Algorithm, nodes: usize, size: usize) -> BulkSpec {
    BulkSpec {
        algorithm,
        nodes,
        size,
        block_size: MB,
        senders: 1,
        racks: 1,
        messages: 1,
        runtime: Runtime::Sim,
        profile: profile.clone(),
        software: Software::none(),
        seed: 1,
        timeout: Nanos(3_600_000_000_000),
    }
}

fn load(name: &str) -> Result<Profile, String> {
    Profile::load(name).map_err(|e| e.to_string())
}

/// What every summary says first: the profiles, how they were calibrated, how we measure.
fn note(profiles: &[&Profile], name: &str, commit: &str) -> String {
    let mut s = String::new();
    for p in profiles {
        let _ = writeln!(
            s,
            "Profile `{}` v{} (simulator, seed 1), calibrated on two numbers only: write latency {} us and write bandwidth {} Gb/s ({}).",
            p.name, p.version, p.calibration.write_lat_us, p.calibration.write_bw_gbps, p.calibration.source
        );
        if let Some(duplex) = p.nic.duplex_gbps {
            let _ = writeln!(
                s,
                "\n`{}` also declares the paper's two-way limit, {duplex} Gb/s of send + receive \
                 per NIC (RDMC section 4.1: \"the full two-way limit seems to be around \
                 165Gbps\"). A member that relays while it receives (pipeline, chain) then gets \
                 about half of it each way, ~{:.0} Gb/s against {} Gb/s of unicast. The paper's \
                 own Figs. 9 and 11 show near-unicast pipelines on these NICs, which one shared \
                 two-way budget cannot give; either the limit bites only with more flows per \
                 NIC (Figs. 13-14, every member a root) or the unicast baseline was itself lower. \
                 The model keeps the published limit, and the claims it moves are reported as \
                 they come out.",
                p.name,
                duplex / 2.0,
                p.nic.link_gbps
            );
        }
        if let Some(f) = &p.fabric {
            let _ = writeln!(
                s,
                "\n`{}` also declares its fabric: {} racks of {} hosts under top-of-rack \
                 switches joined by a spine, a run's nodes placed {}, {} of uplinks per rack \
                 and direction ({}), {} ns per switch (a node in another rack is two switches \
                 further). Source: {}.",
                p.name,
                f.racks,
                f.hosts_per_rack,
                match f.placement {
                    transport::runtime::sim::Placement::Packed => "rack by rack",
                    transport::runtime::sim::Placement::Spread => "round robin over every rack",
                },
                f.uplink_gbps
                    .map_or("no uplinks".into(), |u| format!("{u} Gb/s")),
                f.oversubscription(p.nic.link_gbps)
                    .map_or("one switch".into(), |o| format!(
                        "{o:.2}:1 oversubscription at the calibrated host rate"
                    )),
                f.switch_ns,
                f.source
            );
        }
    }
    let _ = write!(
        s,
        "\nEvery RDMC number below is a validation target; nothing was tuned against it. Command: \
         `harness figure {name}` (commit {commit}). As in the paper, the root submits the message \
         at time zero and bandwidth is the message size over the time until every receiver has \
         had its completion upcall, whatever the number of receivers; 1 MB blocks unless said \
         otherwise. Every receiver checked the content it got against the root's (synthetic) \
         payload; every run is a row of `runs.csv`.\n\nThe simulator models each NIC's egress and \
         ingress at the profile's bandwidth, per-op latency and CPU costs, packet interleaving \
         of small messages, and, where a profile declares one, a two-level fabric (switch \
         latency, rack uplinks shared by the rack's transfers). It has no traffic of other \
         jobs and no load-dependent switch latency: claims that the paper attributes to those \
         are not expected to reproduce.\n"
    );
    s
}

/// A panel against group size, on a log2 axis (groups of 2 to 512).
fn groups_panel(title: &str, y: &str, series: Vec<Series>) -> plot::Panel {
    let mut p = panel(title, "group size", y, series);
    p.x = XScale::Log2;
    p
}

fn series(label: &str, points: Vec<(f64, f64)>) -> Series {
    Series::new(label, points)
}

/// RDMC's figures, each panel on the profile of the cluster the paper ran it on.
pub(crate) const FIGURES: &[PaperFigure] = &[
    PaperFigure {
        name: "rdmc-fig4",
        about: "RDMC Fig. 4/5: time breakdown of one 256 MB transfer to a group of 4 (stampede-fdr)",
        profile: PER_PANEL,
        software: "measured",
        make: fig4,
    },
    PaperFigure {
        name: "rdmc-fig6",
        about: "RDMC Fig. 6: bandwidth against block size, 4..256 MB, group of 4 (stampede-fdr)",
        profile: PER_PANEL,
        software: "measured",
        make: fig6,
    },
    PaperFigure {
        name: "rdmc-fig7-9",
        about: "RDMC Figs. 7-9: pipeline bandwidth against group size on sierra-qdr (to 512 nodes), stampede-fdr and fractus-100g",
        profile: PER_PANEL,
        software: "measured",
        make: fig7_9,
    },
    PaperFigure {
        name: "rdmc-fig10-11",
        about: "RDMC Figs. 10-11: sequential, chain, tree and pipeline against each other, 8 and 256 MB",
        profile: PER_PANEL,
        software: "measured",
        make: fig10_11,
    },
    PaperFigure {
        name: "rdmc-fig12",
        about: "RDMC Fig. 12: latency against group size, pipeline and sequential (sierra-qdr)",
        profile: PER_PANEL,
        software: "measured",
        make: fig12,
    },
    PaperFigure {
        name: "rdmc-fig13-14",
        about: "RDMC Figs. 13-14: concurrent senders, each member a root (fractus-100g)",
        profile: PER_PANEL,
        software: "measured",
        make: fig13_14,
    },
    PaperFigure {
        name: "rdmc-fig15",
        about: "RDMC Fig. 15: 1-byte messages per second against group size (fractus-100g)",
        profile: PER_PANEL,
        software: "measured",
        make: fig15,
    },
];

/// What `harness figure` announces as an RDMC figure's profile.
const PER_PANEL: &str = "per panel, named in summary.md";
