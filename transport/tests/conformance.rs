//! The conformance suite ([`transport::conformance`]) on every runtime of this crate: sim, local,
//! local with its NIC thread, and tcp. The `conformance!` macro instantiates each check once per
//! runtime, as a test of its own.

use std::time::Duration;
use transport::conformance::*;
use transport::runtime::local::{LocalConfig, LocalNic, LocalRuntime};
use transport::runtime::sim::{Fault, Profile, Sim, SimConfig, SimNic};
use transport::runtime::tcp::{TcpConfig, TcpNic, TcpRuntime};
use transport::*;

/// Declares a [`Runner`] `$name` for the runtime whose NIC is `$nic`: `$body` runs the suite's
/// processes `$procs`, crashing `$crash` if it is given, and hands them back. The trait's
/// signature is the same for every runtime, so only the body is written out.
macro_rules! runner {
    ($(#[$doc:meta])* $name:ident on $nic:ty, |$procs:ident, $crash:ident| $body:block) => {
        $(#[$doc])*
        struct $name;
        impl Runner for $name {
            type Nic = $nic;
            fn run<P: Process<Self::Nic> + Send>(
                $procs: Vec<P>,
                $crash: Option<(ProcessId, Nanos)>,
            ) -> Vec<P> $body
        }
    };
}

runner!(OnSim on SimNic, |procs, crash| {
    let mut cfg = SimConfig::new(11, Profile::load("r320-cx3").unwrap());
    if let Some((process, at)) = crash {
        cfg.faults.push(Fault::Crash { at, process });
    }
    let mut sim = Sim::new(cfg, procs);
    sim.run(Some(Nanos::from_secs(5)));
    sim.into_processes()
});

fn run_local<P>(cfg: LocalConfig, procs: Vec<P>, crash: Option<(ProcessId, Nanos)>) -> Vec<P>
where
    P: Process<LocalNic> + Send,
{
    let rt = LocalRuntime::new(cfg, procs);
    if let Some((p, _)) = crash {
        rt.control().crash(p);
    }
    rt.run(Duration::from_secs(20)).processes
}

runner!(OnLocal on LocalNic, |procs, crash| {
    run_local(LocalConfig::default(), procs, crash)
});

runner!(OnNicThread on LocalNic, |procs, crash| {
    let cfg = LocalConfig {
        nic_thread: true,
        ..LocalConfig::default()
    };
    run_local(cfg, procs, crash)
});

runner!(
    /// Every node its own sockets, over loopback: the code a cluster of OS processes runs.
    OnTcp on TcpNic, |procs, crash| {
        let rt = TcpRuntime::new(TcpConfig::default(), procs).expect("loopback sockets");
        if let Some((p, _)) = crash {
            rt.control().crash(p);
        }
        rt.run(Duration::from_secs(20)).processes
    }
);

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sim { $( #[test] fn $name() { transport::conformance::$name::<super::OnSim>(); } )* }
        mod local { $( #[test] fn $name() { transport::conformance::$name::<super::OnLocal>(); } )* }
        mod nic_thread { $( #[test] fn $name() { transport::conformance::$name::<super::OnNicThread>(); } )* }
        mod tcp { $( #[test] fn $name() { transport::conformance::$name::<super::OnTcp>(); } )* }
    };
}

conformance!(
    writes_land_in_post_order,
    revoke_stops_later_writes_until_regranted,
    atomics_reads_sends_and_immediates,
    ops_to_a_crashed_peer_fail,
    bad_ops_are_rejected_without_effect,
    synthetic_payload_lands_intact,
    large_writes_land_intact,
);
