//! What a run asks of a device, counted before anything is made: queue pairs, registrations,
//! completion-queue entries and locked memory. A run the device or the locked-memory limit
//! cannot hold is refused up front with the numbers and the fix, instead of failing half-way
//! through a node's setup with a bare `ENOMEM`; a send queue deeper than the completion queue
//! can hold is made shallower to fit (the runtime's backlog waits for room either way).

use super::VerbsConfig;
use crate::provider::DeviceCaps;
use transport::{Qp, RegionSpec};

/// The page the kernel pins memory by.
const PAGE: u64 = 4096;

/// The fewest work requests a send queue may be left with: below this, selective signalling
/// (a hidden signal every half queue, [`crate::signal`]) and write pieces have no room to work.
const MIN_SEND_DEPTH: usize = 16;

/// What one OS process of a run registers and creates on its device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Budget {
    /// Queue pairs.
    pub(super) queue_pairs: u64,
    /// Memory registrations.
    pub(super) registrations: u64,
    /// Bytes pinned, page by page, every registration counted (the kernel charges each
    /// registration of the same memory again).
    pub(super) locked: u64,
    /// Nodes counted.
    pub(super) nodes: u64,
}

/// Pages a registration of `len` bytes pins at most (an unaligned start spans one more).
fn pinned(len: usize) -> u64 {
    (len as u64).div_ceil(PAGE) * PAGE + PAGE
}

impl Budget {
    /// Node `me` of a run of `specs.len()` nodes with `cfg`: its regions registered once for
    /// local use and once per peer, and per peer and queue-pair kind a staging ring and
    /// receive buffers.
    pub(super) fn node(cfg: &VerbsConfig, specs: &[Vec<RegionSpec>], me: usize) -> Budget {
        let n = specs.len() as u64;
        let regions: u64 = specs[me].iter().map(|r| pinned(r.len)).sum();
        let per_link = [cfg.staging, cfg.staging / 16]
            .iter()
            .map(|&staging| pinned(staging) + pinned(cfg.recv_depth * cfg.recv_size))
            .sum::<u64>();
        Budget {
            queue_pairs: n * Qp::COUNT as u64,
            registrations: specs[me].len() as u64 * (n + 1) + n * Qp::COUNT as u64 * 2,
            locked: regions * (n + 1) + n * per_link,
            nodes: 1,
        }
    }

    /// Every node of `specs` in one process (the in-process runtime).
    pub(super) fn all(cfg: &VerbsConfig, specs: &[Vec<RegionSpec>]) -> Budget {
        (0..specs.len()).fold(Budget::default(), |sum, me| {
            let b = Budget::node(cfg, specs, me);
            Budget {
                queue_pairs: sum.queue_pairs + b.queue_pairs,
                registrations: sum.registrations + b.registrations,
                locked: sum.locked + b.locked,
                nodes: sum.nodes + 1,
            }
        })
    }

    /// Whether `device` (its limits `caps`) and the locked-memory limit `memlock` (`None`:
    /// unlimited, or the process may lock any amount) hold this budget: the first shortfall,
    /// with the numbers and the fix.
    pub(super) fn check(
        &self,
        device: &str,
        caps: &DeviceCaps,
        memlock: Option<u64>,
    ) -> Result<(), String> {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        if let Some(limit) = memlock.filter(|&l| self.locked > l) {
            return Err(format!(
                "the run registers about {:.1} MiB of locked memory ({} node(s) in this process) but RLIMIT_MEMLOCK allows {:.1} MiB: raise it (`ulimit -l unlimited` in the shell, `prlimit --pid $$ --memlock=unlimited:unlimited`, LimitMEMLOCK=infinity for a systemd service, or `--ulimit memlock=-1` for docker), or make the run smaller (fewer nodes per process, smaller staging rings and receive buffers)",
                mib(self.locked),
                self.nodes,
                mib(limit)
            ));
        }
        let over = |what: &str, need: u64, max: u32| {
            Err(format!(
                "the run needs {need} {what} on {device} ({} node(s) in this process) but the device allows {max} (ibv_devinfo -v lists its limits): run fewer nodes per process",
                self.nodes
            ))
        };
        if self.queue_pairs > caps.max_qp as u64 {
            return over("queue pairs", self.queue_pairs, caps.max_qp);
        }
        if self.registrations > caps.max_mr as u64 {
            return over("memory registrations", self.registrations, caps.max_mr);
        }
        Ok(())
    }
}

/// `cfg` with queue depths the device holds: each queue within `max_qp_wr`, and the node's one
/// completion queue (every send and receive queue of its `n` peers' queue pairs, plus slack)
/// within `max_cqe`, by making send queues shallower. An error names the limit when even the
/// shallowest useful queues do not fit.
pub(super) fn fit(cfg: &VerbsConfig, caps: &DeviceCaps, n: usize) -> Result<VerbsConfig, String> {
    let wr = caps.max_qp_wr as usize;
    if cfg.recv_depth > wr {
        return Err(format!(
            "{} receive buffers per queue pair, but the device's queues hold {wr} (max_qp_wr)",
            cfg.recv_depth
        ));
    }
    // A message is staged whole, and a staged piece takes at most half its ring.
    let control_ring = cfg.staging / 16;
    if cfg.recv_size > control_ring / 2 {
        return Err(format!(
            "receive buffers of {} bytes do not fit the control queue pairs' staging rings ({control_ring} bytes, 1/16 of `staging`, hold pieces of half that): make `staging` at least {} bytes or the buffers smaller",
            cfg.recv_size,
            cfg.recv_size * 32
        ));
    }
    let queues = n * Qp::COUNT;
    let cqe = (caps.max_cqe as usize).saturating_sub(CQ_SLACK);
    let by_cq = (cqe / queues).saturating_sub(cfg.recv_depth);
    let send_depth = cfg.send_depth.min(wr).min(by_cq);
    if send_depth < MIN_SEND_DEPTH.min(cfg.send_depth) {
        return Err(format!(
            "a completion queue for {n} peers x {} queue pairs x ({MIN_SEND_DEPTH} sends + {} receives) needs {} entries, but the device allows {} (max_cqe): run fewer nodes, or fewer receive buffers",
            Qp::COUNT,
            cfg.recv_depth,
            queues * (MIN_SEND_DEPTH + cfg.recv_depth) + CQ_SLACK,
            caps.max_cqe
        ));
    }
    Ok(VerbsConfig {
        send_depth,
        ..cfg.clone()
    })
}

/// Completion-queue entries beyond one per work request the queues can hold.
pub(super) const CQ_SLACK: usize = 64;

/// The entries of the completion queue of a node with `n` peers and `cfg`'s depths.
pub(super) fn cq_entries(cfg: &VerbsConfig, n: usize) -> u32 {
    (n * Qp::COUNT * (cfg.send_depth + cfg.recv_depth) + CQ_SLACK) as u32
}

/// This process's locked-memory limit, `None` when it may lock any amount (the limit is
/// unlimited, or it holds `CAP_IPC_LOCK`, which the kernel's pinning does not charge), read from
/// `/proc/self` (Linux, where every RDMA stack runs).
pub fn memlock_limit() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let cap_ipc_lock = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 14) != 0);
    if cap_ipc_lock {
        return None;
    }
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_memlock(&limits)
}

/// The soft limit of "Max locked memory" in `/proc/self/limits`, in bytes.
fn parse_memlock(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))?;
    let soft = line["Max locked memory".len()..]
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::AtomicCap;

    fn caps() -> DeviceCaps {
        DeviceCaps {
            phys_port_cnt: 1,
            max_qp: 1 << 16,
            max_qp_wr: 1 << 14,
            max_sge: 32,
            max_cq: 1 << 14,
            max_cqe: 32767,
            max_mr: 1 << 16,
            max_mr_size: u64::MAX,
            max_qp_rd_atom: 128,
            max_qp_init_rd_atom: 128,
            atomic_cap: AtomicCap::Hca,
            max_inline: 256,
            firmware: String::new(),
        }
    }

    fn specs(n: usize, len: usize) -> Vec<Vec<RegionSpec>> {
        vec![vec![RegionSpec::new(len)]; n]
    }

    #[test]
    fn every_registration_of_a_region_is_counted_and_pages_round_up() {
        let cfg = VerbsConfig {
            staging: 64 << 10,
            recv_depth: 4,
            recv_size: 4096,
            ..VerbsConfig::default()
        };
        let b = Budget::node(&cfg, &specs(3, 100), 0);
        assert_eq!(b.queue_pairs, 6);
        // One region x (3 peers + local) + 3 peers x 2 queue pairs x (staging, receives).
        assert_eq!(b.registrations, 4 + 12);
        let region = 2 * PAGE; // 100 bytes: one page, and one more if it straddles
        let data = (16 + 1) * PAGE + (4 + 1) * PAGE;
        let control = (1 + 1) * PAGE + (4 + 1) * PAGE;
        assert_eq!(b.locked, 4 * region + 3 * (data + control));
        assert_eq!(Budget::all(&cfg, &specs(3, 100)).locked, 3 * b.locked);
    }

    #[test]
    fn a_budget_over_the_memlock_limit_names_both_and_the_fix() {
        let cfg = VerbsConfig::default();
        let b = Budget::all(&cfg, &specs(4, 1 << 20));
        let e = b.check("rxe0", &caps(), Some(8 << 20)).unwrap_err();
        assert!(e.contains("RLIMIT_MEMLOCK allows 8.0 MiB"), "{e}");
        assert!(e.contains("ulimit -l"), "{e}");
        assert!(b.check("rxe0", &caps(), None).is_ok());
        let few = DeviceCaps {
            max_mr: 10,
            ..caps()
        };
        let e = b.check("rxe0", &few, None).unwrap_err();
        assert!(e.contains("memory registrations on rxe0"), "{e}");
    }

    #[test]
    fn send_queues_shrink_to_fit_the_completion_queue_or_the_run_is_refused() {
        let cfg = VerbsConfig::default();
        // rxe's 32767 entries hold 60 peers at the default depths (256 + 16).
        assert_eq!(fit(&cfg, &caps(), 60).unwrap().send_depth, 256);
        let fitted = fit(&cfg, &caps(), 100).unwrap();
        assert!(cq_entries(&fitted, 100) <= 32767);
        assert_eq!(fitted.send_depth, (32767 - 64) / 200 - 16);
        let e = fit(&cfg, &caps(), 2000).unwrap_err();
        assert!(e.contains("max_cqe"), "{e}");
        let shallow = DeviceCaps {
            max_qp_wr: 128,
            ..caps()
        };
        assert_eq!(fit(&cfg, &shallow, 2).unwrap().send_depth, 128);
    }

    #[test]
    fn the_soft_memlock_limit_is_read_from_proc_limits() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \nMax locked memory         8388608              8388608              bytes     \n";
        assert_eq!(parse_memlock(limits), Some(8 << 20));
        let unlimited =
            "Max locked memory         unlimited            unlimited            bytes     \n";
        assert_eq!(parse_memlock(unlimited), None);
    }
}
