//! The transport conformance suite ([`transport::conformance`]) through the verbs runtime: the
//! same checks the simulator, `local` and `tcp` pass.
//!
//! On the fake fabric ([`verbs::fake`]) it runs everywhere, in every CI run: every line of the
//! runtime but the library calls themselves, against a model of RC queue pairs that drops
//! packets to queue pairs not yet ready, breaks both ends on a refused request and lands writes
//! packet by packet. On a real device it runs only where one is named
//! (`RDMA_DEVICE=rxe0 cargo test -p verbs --features rdma`; `scripts/softroce.sh` makes a
//! SoftRoCE one); anywhere else, and in a build without the `rdma` feature, that test prints the
//! "no RDMA device" line that says why and skips.

use std::time::Duration;
use transport::conformance::Runner;
use transport::{Nanos, Process, ProcessId};
use verbs::fake::{Fabric, FakeConfig, FakeCtx};
use verbs::rdma::{Provider, VerbsConfig, VerbsNic, VerbsRuntime};

/// Runs `procs` on `provider`'s device named by `device` (the suite's crash at once).
fn run_on<V: Provider, P: Process<VerbsNic<V::Ctx>> + Send>(
    provider: V,
    device: verbs::DeviceChoice,
    procs: Vec<P>,
    crash: Option<(ProcessId, Nanos)>,
) -> Vec<P> {
    let cfg = VerbsConfig {
        device,
        ..VerbsConfig::default()
    };
    let rt = VerbsRuntime::new(provider, cfg, procs).expect("the device was found before");
    if let Some((p, _)) = crash {
        rt.control().crash(p);
    }
    rt.run(Duration::from_secs(20)).processes
}

/// Every node a thread of this test, on one device of an in-memory fabric.
struct OnFake;

impl Runner for OnFake {
    type Nic = VerbsNic<FakeCtx>;
    fn run<P: Process<Self::Nic> + Send>(
        procs: Vec<P>,
        crash: Option<(ProcessId, Nanos)>,
    ) -> Vec<P> {
        let fabric = Fabric::new(FakeConfig::default());
        run_on(fabric, verbs::DeviceChoice::default(), procs, crash)
    }
}

fn run_suite<R: Runner>() {
    for (name, check) in transport::conformance::all::<R>() {
        println!("{name} ...");
        check();
        println!("{name} ok");
    }
}

#[test]
fn the_conformance_suite_passes_on_the_fake_fabric() {
    run_suite::<OnFake>();
}

#[cfg(feature = "rdma")]
mod on_device {
    use super::*;
    use verbs::rdma::DeviceNic;
    use verbs::sideway::Sideway;

    /// Every node a thread of this test, all on the named device.
    pub(super) struct OnVerbs;

    impl Runner for OnVerbs {
        type Nic = DeviceNic;
        fn run<P: Process<DeviceNic> + Send>(
            procs: Vec<P>,
            crash: Option<(ProcessId, Nanos)>,
        ) -> Vec<P> {
            let device = verbs::DeviceChoice::from_env().expect("RDMA_* variables");
            run_on(Sideway, device, procs, crash)
        }
    }
}

#[test]
fn the_conformance_suite_passes_on_the_named_device() {
    let device = match verbs::device::for_tests() {
        Ok((_, info)) => info,
        Err(no) => {
            println!("{no}");
            println!("skipped: the transport conformance suite on verbs");
            return;
        }
    };
    println!("running on {device}");
    #[cfg(feature = "rdma")]
    run_suite::<on_device::OnVerbs>();
}
