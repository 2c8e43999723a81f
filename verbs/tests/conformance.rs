//! The transport conformance suite ([`transport::conformance`]) on a real RDMA device, through
//! the verbs runtime: the same checks the simulator, `local` and `tcp` pass.
//!
//! Runs only where a device is named (`RDMA_DEVICE=rxe0 cargo test -p verbs --features rdma`;
//! `scripts/softroce.sh` makes a SoftRoCE one). Anywhere else, and in a build without the
//! `rdma` feature, each check prints the "no RDMA device" line that says why and skips.

#[cfg(feature = "rdma")]
mod on_device {
    use std::time::Duration;
    use transport::conformance::Runner;
    use transport::{Nanos, Process, ProcessId};
    use verbs::rdma::{DeviceNic as VerbsNic, VerbsConfig, VerbsRuntime};
    use verbs::sideway::Sideway;

    /// Every node a thread of this test, all on the named device.
    pub(super) struct OnVerbs;

    impl Runner for OnVerbs {
        type Nic = VerbsNic;
        fn run<P: Process<VerbsNic> + Send>(
            procs: Vec<P>,
            crash: Option<(ProcessId, Nanos)>,
        ) -> Vec<P> {
            let cfg = VerbsConfig {
                device: verbs::DeviceChoice::from_env().expect("RDMA_* variables"),
                ..VerbsConfig::default()
            };
            let rt = VerbsRuntime::new(Sideway, cfg, procs).expect("the device was found before");
            if let Some((p, _)) = crash {
                rt.control().crash(p);
            }
            rt.run(Duration::from_secs(20)).processes
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
    for (name, check) in transport::conformance::all::<on_device::OnVerbs>() {
        println!("{name} ...");
        check();
        println!("{name} ok");
    }
}
