//! What an access change and a reconnect cost on a runtime (`harness bench access`): the
//! numbers a leader change that revokes a deposed leader's writes depends on.
//!
//! Process 0 owns region `A`, writable by process 1 (and, for the slow path, region `B` too,
//! so that changing `A` alone cannot be a change of process 1's queue-pair flags on `verbs`).
//! Each round, process 0 revokes process 1's access to `A` and tells it; process 1 writes into
//! `A`, is refused, reconnects and says so; process 0 grants the access back. Process 0 times
//! every `set_access` call, process 1 every reconnect (from its post to its completion), on
//! their own clocks (the simulator's on `sim`, which prices both from its profile).

use crate::perftest::Rig;
use crate::stats::LatencySummary;
use transport::*;

const A: RegionId = RegionId(0);
const P0: ProcessId = ProcessId(0);
const P1: ProcessId = ProcessId(1);

/// One side of the probe.
#[derive(Debug)]
pub struct AccessProbe {
    /// Process 0 also grants `B`, so that a change of `A` takes `verbs`' slow path.
    slow: bool,
    rounds: u64,
    round: u64,
    /// Process 0: waiting for process 1's "reconnected".
    revoked: bool,
    /// Process 1: a write posted into the revoked region, and the reconnect after its refusal.
    writing: bool,
    reconnect_at: Option<Nanos>,
    /// Process 0: every `set_access` call, microseconds.
    pub changes: Vec<f64>,
    /// Process 1: every reconnect, microseconds.
    pub reconnects: Vec<f64>,
    /// Why the probe stopped early, if it did.
    pub error: Option<String>,
}

impl AccessProbe {
    /// The two processes of a probe of `rounds` rounds.
    pub fn pair(slow: bool, rounds: u64) -> Vec<AccessProbe> {
        (0..2)
            .map(|_| AccessProbe {
                slow,
                rounds,
                round: 0,
                revoked: false,
                writing: false,
                reconnect_at: None,
                changes: Vec::new(),
                reconnects: Vec::new(),
                error: None,
            })
            .collect()
    }

    fn change<N: Nic>(&mut self, nic: &mut N, access: Access) {
        let t0 = nic.now();
        if let Err(e) = nic.set_access(A, P1, access) {
            self.error = Some(format!("set_access: {e}"));
        }
        self.changes
            .push(nic.now().saturating_sub(t0).as_nanos() as f64 / 1000.0);
    }
}

impl<N: Nic> Process<N> for AccessProbe {
    fn regions(&self) -> Vec<RegionSpec> {
        let mut r = vec![RegionSpec::new(64).grant(P1, Access::Write)];
        if self.slow {
            r.push(RegionSpec::new(64).grant(P1, Access::Write));
        }
        r
    }

    fn poll(&mut self, nic: &mut N) -> Progress {
        let mut worked = false;
        if nic.id() == P0 {
            if !self.revoked && self.round < self.rounds {
                self.change(nic, Access::None);
                if let Err(e) = nic.send(P1, b"revoked", false) {
                    self.error = Some(format!("send: {e}"));
                }
                self.revoked = true;
                worked = true;
            }
            while nic.poll_recv().is_some() {
                self.change(nic, Access::Write);
                self.round += 1;
                self.revoked = false;
                worked = true;
            }
            while nic.poll_completion().is_some() {}
            return Progress::worked(worked);
        }
        if nic.poll_recv().is_some() {
            // Revoked: this write must be refused.
            if let Err(e) = nic.post_write(RemoteAddr::new(P0, A, 0), &[1; 8], WriteFlags::SIGNALED)
            {
                self.error = Some(format!("write: {e}"));
            }
            self.writing = true;
            worked = true;
        }
        while let Some(c) = nic.poll_completion() {
            worked = true;
            match (c.kind, c.status) {
                (OpKind::Write, Status::AccessDenied) if self.writing => {
                    self.writing = false;
                    self.reconnect_at = Some(nic.now());
                    if let Err(e) = nic.reconnect(P0) {
                        self.error = Some(format!("reconnect: {e}"));
                    }
                }
                (OpKind::Reconnect, Status::Success) => {
                    if let Some(t0) = self.reconnect_at.take() {
                        self.reconnects
                            .push(nic.now().saturating_sub(t0).as_nanos() as f64 / 1000.0);
                    }
                    self.round += 1;
                    if let Err(e) = nic.send(P0, b"reconnected", false) {
                        self.error = Some(format!("send: {e}"));
                    }
                }
                (kind, status) => {
                    self.error = Some(format!(
                        "{kind:?} ended {status:?} (a write into the revoked region must be refused, the reconnect succeed)"
                    ))
                }
            }
        }
        Progress::worked(worked)
    }

    fn done(&self) -> bool {
        self.round >= self.rounds || self.error.is_some()
    }
}

/// What one probe measured, microseconds.
#[derive(Debug)]
pub struct AccessCosts {
    /// Every access change of the fast-path probe (one region per peer).
    pub fast: LatencySummary,
    /// Every access change of the slow-path probe (a region among several).
    pub slow: LatencySummary,
    /// Every reconnect after a refused write (both probes).
    pub reconnect: LatencySummary,
}

/// Runs both probes of `rounds` rounds on `runtime`.
pub fn measure(runtime: &Rig, rounds: u64) -> Result<AccessCosts, String> {
    let mut reconnects = Vec::new();
    let mut changes = [Vec::new(), Vec::new()];
    for (k, slow) in [false, true].into_iter().enumerate() {
        let mut out = runtime.run(AccessProbe::pair(slow, rounds))?;
        let (p1, p0) = (out.pop().expect("two"), out.pop().expect("two"));
        if let Some(e) = p0.error.or(p1.error) {
            return Err(format!(
                "the access probe failed on {}: {e}",
                runtime.name()
            ));
        }
        if p1.reconnects.len() < rounds as usize {
            return Err(format!(
                "the access probe ended after {} of {rounds} rounds (time limit)",
                p1.reconnects.len()
            ));
        }
        changes[k] = p0.changes;
        reconnects.extend(p1.reconnects);
    }
    let summary = |s: &[f64]| LatencySummary::of(s).ok_or("no samples");
    Ok(AccessCosts {
        fast: summary(&changes[0])?,
        slow: summary(&changes[1])?,
        reconnect: summary(&reconnects)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use transport::runtime::sim::Profile;

    /// On the simulator the probe reads back what the profile prices (its own model), on
    /// both paths: the probe measures what it says it does.
    #[test]
    fn on_the_simulator_the_probe_reads_back_the_profiles_prices() {
        let mut profile = Profile::load("r320-cx3").unwrap();
        // A price that is not zero, so reading it back means something.
        if let Some(p) = profile.nic.permission_change.as_mut() {
            p.ns = 7_000;
        }
        let rt = Rig::sim(profile.clone(), 1);
        let c = measure(&rt, 5).unwrap();
        let change_us = profile.nic.permission_change.as_ref().map_or(0, |p| p.ns) as f64 / 1000.0;
        assert_eq!(change_us, 7.0);
        assert!((c.fast.typical - change_us).abs() < 0.5, "{c:?}");
        assert!((c.slow.typical - change_us).abs() < 0.5, "{c:?}");
        let reconnect_us = profile.nic.reconnect_ns as f64 / 1000.0;
        assert!(c.reconnect.typical >= reconnect_us, "{c:?}");
        assert!(c.reconnect.typical < reconnect_us * 1.5 + 10.0, "{c:?}");
    }

    #[test]
    fn on_real_threads_and_tcp_every_round_completes() {
        let local = crate::runtime::Runtime::Local {
            threads: 0,
            nic_thread: false,
        };
        for runtime in [local, crate::runtime::Runtime::Tcp] {
            let rt = Rig::real(runtime, 0);
            let c = measure(&rt, 20).unwrap();
            assert!(c.fast.typical >= 0.0 && c.reconnect.typical >= 0.0, "{c:?}");
        }
    }
}
