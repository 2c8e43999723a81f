//! Issue 46: a tcp run with a node halted by a forged write exits non-zero, naming the halt.
//!
//! An insider (a peer holding the cluster secret) once wrote 35 KB of garbage into a RamCast
//! replica's `M` region; the replica halted, yet the run printed "0 violations" and exited 0.
//! Here the test is that insider against a real `harness run --runtime tcp`: it takes over the
//! id of a client the run killed, and writes a lapped header into every message slot of a
//! follower's `M`. The run must fail and say which node halted and why.

#![allow(
    clippy::disallowed_methods,
    reason = "the test plays a node in real time: a thread reads the run's output meanwhile"
)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use transport::runtime::tcp::peer::RawPeer;
use transport::runtime::tcp::wire::{Frame, WireOp, WireStatus};
use transport::runtime::tcp::Secret;
use transport::ProcessId;

/// The run: one group of 3 (nodes 0-2; 0 leads), clients p3 and p4; p4 killed at 1 s.
const RUN: &[&str] = &[
    "--protocol",
    "ramcast",
    "--groups",
    "1",
    "--clients",
    "2",
    "--duration",
    "3s",
];
const NODES: usize = 5;
const VICTIM: u32 = 1;
const IMPERSONATED: u32 = 4;
const SECRET: &str = "insider-test-secret-0123456789";

/// `n` loopback ports free now, below the kernel's ephemeral range (the nodes' outgoing
/// connections draw source ports from that range), starting where this process's id says so
/// concurrent runs differ.
fn free_ports(n: usize) -> Vec<u16> {
    let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let span = u32::from(low - 20_000);
    let start = std::process::id().wrapping_mul(131) % span;
    (0..span)
        .map(|k| (20_000 + (start + k) % span) as u16)
        .filter(|&p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        .take(n)
        .collect()
}

/// The deployment's region table digest and node `id`'s region lengths, from the hidden
/// `harness region-table`, which builds them as every node does.
fn region_table(id: u32) -> (u64, Vec<u64>) {
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("region-table")
        .args(RUN)
        .output()
        .expect("run harness region-table");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let digest = out
        .lines()
        .find_map(|l| l.strip_prefix("table 0x"))
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .unwrap_or_else(|| panic!("no digest: {out}"));
    let lens = out
        .lines()
        .find_map(|l| l.strip_prefix(&format!("node {id} ")))
        .and_then(|l| l.split_once(": "))
        .map(|(_, lens)| lens.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or_else(|| panic!("no node {id}: {out}"));
    (digest, lens)
}

/// Connects to `addr` as `from` and completes the handshake, retrying while the node still
/// holds the killed process's connection (a second claimant is refused while the first lives).
fn connect_as(from: u32, to: u32, addr: SocketAddr, digest: u64, lens: &[u64]) -> RawPeer {
    let secret = Secret::new(SECRET.as_bytes()).unwrap();
    for _ in 0..50 {
        let mut raw = RawPeer::connect(addr).expect("the victim listens");
        let welcome = raw
            .handshake(
                ProcessId(from),
                ProcessId(to),
                0,
                lens.to_vec(),
                digest,
                &secret,
            )
            .expect("handshake");
        assert!(matches!(welcome, Some(Frame::Welcome(_))), "{welcome:?}");
        // The node closes the connection at once when it refuses the proof or the claim; a
        // read of nothing within the timeout means it admitted us.
        raw.stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut byte = [0u8; 1];
        let closed = matches!(std::io::Read::read(&mut raw.stream, &mut byte), Ok(0));
        raw.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        if !closed {
            return raw;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{addr} never admitted p{from}");
}

/// The end-to-end forged write. About 10 s on 2 cores (debug build).
#[test]
fn a_forged_write_that_halts_a_replica_fails_the_tcp_run_naming_the_halt() {
    let dir = std::env::temp_dir().join(format!("harness-forged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ports = free_ports(NODES);
    assert_eq!(ports.len(), NODES, "free ports");
    let addrs: Vec<SocketAddr> = ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}").parse().unwrap())
        .collect();
    let hosts = dir.join("hosts.toml");
    let mut text = format!("secret = \"{SECRET}\"\n");
    for a in &addrs {
        text += &format!("\n[[node]]\naddr = \"{a}\"\n");
    }
    std::fs::write(&hosts, text).unwrap();
    let (digest, lens) = region_table(IMPERSONATED);
    let (_, victim_lens) = region_table(VICTIM);

    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("run")
        .args(RUN)
        .args(["--runtime", "tcp", "--fault"])
        .arg(format!("kill:{IMPERSONATED}@1s"))
        .arg("--cluster")
        .arg(&hosts)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start harness run");
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            all += &line;
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    // Once p4 is dead, its id is free: take it.
    let killed = format!("SIGKILL node {IMPERSONATED} (client)");
    while !lines
        .recv_timeout(Duration::from_secs(30))
        .expect("the run never killed the client")
        .contains(&killed)
    {}
    let victim = VICTIM as usize;
    let mut raw = connect_as(IMPERSONATED, VICTIM, addrs[victim], digest, &lens);
    // M (region 0) holds clients x 16 slots of one stride each; every slot's header word now
    // announces entry 2^30, a lap no client reaches. The victim may halt after the first
    // write lands, and a halted node is crashed to its peers: it closes the connection.
    let (clients, slots) = (2u64, 16u64);
    let stride = victim_lens[0] / (clients * slots);
    let landed = (0..clients * slots)
        .map_while(|k| {
            let forged = WireOp::Write {
                region: 0,
                offset: k * stride,
                data: &(1u64 << 30).to_le_bytes(),
                imm: None,
            };
            raw.request(k, forged)
        })
        .inspect(|status| assert_eq!(*status, WireStatus::Success))
        .count();
    assert!(landed > 0, "no forged write landed");

    let status = child.wait().unwrap();
    let out = reader.join().unwrap();
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    println!("exit {status}\n--- stdout\n{out}--- stderr\n{err}");
    assert_eq!(status.code(), Some(2), "the run did not fail: {out}{err}");
    assert!(
        err.contains("node 1 (server g0) halted, yet no fault paused or cut it off"),
        "{err}"
    );
    assert!(
        err.contains("holds entry 1073741824")
            && err.contains("a peer wrote what no client writes"),
        "the halt's reason is missing: {err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
