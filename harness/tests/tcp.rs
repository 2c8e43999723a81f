//! The harness on the tcp runtime, as a researcher runs it: every protocol's nodes as OS
//! processes, faults sent to them and injected on their links, the logs checked; and what a
//! node does when its peers never answer.

mod common;

use common::*;

/// Every atomic multicast protocol on the tcp runtime: each node a child process on loopback,
/// the delivery log merged from the nodes' reports and checked.
#[test]
fn tcp_runs_of_every_multicast_protocol_check_their_logs() {
    for protocol in ["ramcast", "tram", "ridge"] {
        let log = scratch(&format!("harness-tcp-{protocol}"));
        let mut args = vec![
            "run",
            "--protocol",
            protocol,
            "--runtime",
            "tcp",
            "--clients",
            "2",
        ];
        args.extend_from_slice(if protocol == "tram" {
            &["--tree", "[-1,0]", "--dest", "all"][..]
        } else {
            &["--groups", "2", "--dest", "random:2"][..]
        });
        args.extend_from_slice(&["--duration", "300ms", "--log", log.to_str().unwrap()]);
        let o = harness(&args);
        succeeded_printing(&o, &["runtime=tcp", "; 0 violations"]);
        never_prints(&o, "delivered 0 multicasts");
    }
}

/// A leader killed with SIGKILL and a follower stopped with SIGSTOP mid-run: the survivors'
/// log still satisfies every property.
#[test]
fn tcp_run_survives_a_killed_leader_and_a_paused_follower() {
    let log = scratch("harness-tcp-faults");
    let o = harness_into("run --protocol ramcast --runtime tcp --groups 2 --clients 2 --dest random:2 --duration 1s --fault kill:0@400ms --fault pause:4@300ms+300ms --log", &log);
    survived_kill_and_pause(&o);
}

/// Asserts a run under `--fault kill:0@400ms --fault pause:4@300ms+300ms` succeeded, killed
/// and stopped those nodes, and found no violation in its log.
fn survived_kill_and_pause(o: &std::process::Output) {
    succeeded_printing(
        o,
        &[
            "SIGKILL node 0 (server g0)",
            "SIGSTOP node 4 (server g1)",
            "; 0 violations",
        ],
    );
}

/// TRAM and Ridge as the README runs them on tcp, shortened: group 0's leader (TRAM) or its
/// ensembles' coordinator (Ridge) killed, a server of group 1 stopped past its suspicion
/// timeout; the run's log checks, and `harness verify` agrees on the log it wrote.
#[test]
fn tcp_tram_and_ridge_survive_a_killed_leader_and_a_paused_server_and_their_logs_verify() {
    for protocol in ["tram", "ridge"] {
        let log = scratch(&format!("harness-tcp-faults-{protocol}"));
        let mut args = vec!["run", "--protocol", protocol, "--runtime", "tcp"];
        args.extend_from_slice(if protocol == "tram" {
            &["--tree", "[-1,0]"][..]
        } else {
            &["--groups", "2"][..]
        });
        args.extend_from_slice(&[
            "--clients",
            "2",
            "--dest",
            "random:2",
            "--duration",
            "1s",
            "--fault",
            "kill:0@400ms",
            "--fault",
            "pause:4@300ms+300ms",
            "--log",
            log.to_str().unwrap(),
        ]);
        survived_kill_and_pause(&harness(&args));
        verifies(&log);
    }
}

/// RDMC on the tcp runtime: every member a node process; the run ends once all are done, and
/// every receiver's copy is checked against what the root sent.
/// RDMC with a member killed mid-run: the group fails, every survivor is told so, and nothing
/// corrupt, out of sequence or after the failure is delivered (RDMC's promise under failures).
#[test]
fn tcp_rdmc_with_a_killed_member_tells_every_survivor() {
    let o = harness(&args("run --protocol rdmc --runtime tcp --nodes 4 --size 4MB --messages 400 --fault kill:2@700ms"));
    succeeded_printing(
        &o,
        &[
            "0 corrupt",
            "3 failure upcalls",
            "nor were told it failed: 0",
        ],
    );
}

#[test]
fn tcp_rdmc_delivers_every_message_intact() {
    let o = harness(&args(
        "run --protocol rdmc --runtime tcp --nodes 3 --size 3MB --messages 2",
    ));
    succeeded_printing(
        &o,
        &["verified: 4 of 4 receiver deliveries intact; 0 corrupt, 0 missing, 0 failure upcalls"],
    );
}

/// The network fault layer: group 0's leader cut off from every other node for 500 ms (2.5
/// suspicion timeouts), then healed; other links delayed and lossy meanwhile. The group
/// elects another leader, and the log checks.
#[test]
fn tcp_run_survives_a_partitioned_leader_and_slow_lossy_links() {
    let (_log, o) = succeeds_into("harness-tcp-net", "run --protocol ramcast --runtime tcp --groups 2 --clients 2 --dest random:2 --duration 2s --fault partition:0|*@300ms+500ms --fault delay:*>3@200ms+1s=2ms --fault loss:4>*@200ms+1s=0.2 --log");
    prints(&o, "network faults");
    prints(&o, "; 0 violations");
    never_prints(&o, "groups that changed leader 0");
}

/// Heron with every replica and client an OS process: the key-value store over RamCast, a
/// replica of partition 0 (RamCast's leader) killed and one of partition 1 stopped past the
/// suspicion timeout, the run judged by the sequential oracle and by progress after the faults.
/// The clients go on past RamCast's wall-clock eviction: a client whose buffer slots at the
/// killed replica filled up waits 5 s without news from it (`Timing::WALL.evict`) before it
/// recycles them. With the clients stopping sooner (850 ms, then 2.5 s after the last fault)
/// none had a request issued after the last fault answered, and the run was rightly failed.
#[test]
fn tcp_heron_run_is_judged_by_the_oracle_after_a_kill_and_a_pause() {
    let o = harness(&args("run --protocol heron --app kv --runtime tcp --groups 2 --clients 2 --duration 7s --fault kill:0@500ms --fault pause:3@400ms+400ms"));
    succeeded_printing(
        &o,
        &[
            "SIGKILL node 0 (server g0)",
            "SIGSTOP node 3 (server g1)",
            "the sequential oracle replayed",
            "killed p0; 0 violations",
        ],
    );
}

#[test]
fn tcp_flags_are_refused_where_they_do_not_apply() {
    each_refused(&[
        ("run --fault kill:0@1s", "--runtime tcp"),
        (
            "run --protocol heron --runtime tcp --duration 1s --fault kill:0@2s",
            "lengthen --duration so the run shows it recovered",
        ),
        ("run --runtime tcp --nic-thread", "--runtime local"),
        (
            "run --runtime tcp --fault kill:99@1s",
            "the run has nodes 0..",
        ),
        ("run --runtime tcp --fault kill:0", "kill:NODE@TIME"),
    ]);
    let missing = std::env::temp_dir().join("no-such-cluster.toml");
    refused(
        &["node", "--cluster", missing.to_str().unwrap(), "--id", "0"],
        "no-such-cluster.toml",
    );
}

/// A node whose peers never answer fails once the connect timeout has passed, naming each peer
/// it gave up on and why, instead of running alone and exiting 0.
#[test]
fn a_node_whose_peers_never_answer_fails_naming_them() {
    // Ports free now: the client's own, and three where nobody will listen.
    let ports: Vec<u16> = (0..4)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect::<Vec<_>>()
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    let roles = ["server g0", "server g0", "server g0", "client"];
    let mut file = String::from(
        "run = [\"--protocol\", \"ramcast\", \"--runtime\", \"tcp\", \"--groups\", \"1\", \"--clients\", \"1\", \"--duration\", \"200ms\"]\nsecret = \"0123456789abcdef0123\"\n",
    );
    for (port, role) in ports.iter().zip(roles) {
        file.push_str(&format!(
            "[[node]]\naddr = \"127.0.0.1:{port}\"\nrole = \"{role}\"\n"
        ));
    }
    let dir = std::env::temp_dir().join(format!("harness-lonely-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cluster = dir.join("cluster.toml");
    std::fs::write(&cluster, file).unwrap();
    let report = dir.join("node-3.report");
    let o = harness(&[
        "node",
        "--cluster",
        cluster.to_str().unwrap(),
        "--id",
        "3",
        "--report",
        report.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!o.status.success(), "{}", stdout(&o));
    let err = stderr(&o);
    for (peer, port) in ports.iter().enumerate().take(3) {
        let named = format!(
            "node {peer} (p{peer} did not answer at 127.0.0.1:{port} within the connect timeout)"
        );
        assert!(err.contains(&named), "{err}");
    }
    assert!(err.contains("node 3 gave up its links to node 0"), "{err}");
}
