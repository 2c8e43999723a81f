//! Who may hold a link: the cluster secret, a peer given up at start and coming up late, a
//! peer that refuses the handshake, second claimants and self-claims.

use super::*;

#[test]
fn without_the_cluster_secret_a_peer_is_refused() {
    let (target, events) = against_node_0(TcpConfig::default(), |addr, table, _| {
        let mut raw = RawPeer::connect(addr).unwrap();
        // A guessed secret: the node answers its welcome, then closes before any request
        // is applied.
        assert!(matches!(
            as_p1(&mut raw, table, &Secret::random()),
            Frame::Welcome(_)
        ));
        assert_eq!(raw.request(0, granted_write()), None);
    });
    assert_eq!(target.seen[0], vec![PATTERN; 64]);
    logged(
        &events,
        "claiming to be p1 does not hold the cluster secret",
    );
}

/// Node 0 on its own with `connect_timeout`, p1 at `p1`, for `limit`: its address, the run's
/// region table and secret, and the run.
fn node_0_alone(
    connect_timeout: Duration,
    p1: SocketAddr,
    limit: Duration,
) -> (
    SocketAddr,
    RegionTable,
    Secret,
    std::thread::JoinHandle<NodeRun<Either>>,
) {
    let cfg = TcpConfig {
        connect_timeout,
        ..TcpConfig::default()
    };
    let procs = [Either::T(Target::default()), Either::A(Absent)];
    let specs: Vec<_> = procs.iter().map(Process::<TcpNic>::regions).collect();
    let table = RegionTable::new(&specs);
    let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let node0 = listener.local_addr().unwrap();
    let [target, _] = procs;
    let secret = cfg.secret.clone();
    let run = std::thread::spawn(move || {
        run_node(
            &cfg,
            ProcessId(0),
            &specs,
            vec![node0, p1],
            listener,
            target,
            limit,
            None,
        )
        .unwrap()
    });
    (node0, table, secret, run)
}

/// A peer that comes up after this node gave it up at start (the connect timeout passed) is
/// refused, with the reason, instead of being served while this node treats it as crashed:
/// otherwise it would wait on this node for ever (an RDMC root whose members had written it
/// off waited for a `ready_for_block` that never came).
#[test]
fn a_peer_given_up_at_start_is_refused_when_it_comes_up_late() {
    // p1's address: a port nobody listens on while node 0 starts.
    let absent = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let p1 = absent.local_addr().unwrap();
    drop(absent);
    let (node0, table, secret, run) =
        node_0_alone(Duration::from_millis(200), p1, Duration::from_millis(1500));
    std::thread::sleep(Duration::from_millis(700));
    let mut raw = RawPeer::connect(node0).unwrap();
    as_p1(&mut raw, &table, &secret);
    let mut sink = Vec::new();
    let _ = raw.stream.read_to_end(&mut sink);
    let run = run.join().unwrap();
    assert!(
        run.given_up
            .iter()
            .any(|(p, why)| *p == ProcessId(1) && why.contains("did not answer")),
        "{:?}",
        run.given_up
    );
    assert!(
        run.events
            .iter()
            .any(|e| e
                .contains("p1 connected on queue pair 0 after this node had given it up at start")),
        "{:?}",
        run.events
    );
}

/// A peer that closes every connection during the handshake at start (as a node of another
/// deployment, or without the secret, does) is tried again until the connect timeout, then
/// given up with the reason of the last attempt: the node does not start as if all were well.
#[test]
fn a_peer_that_refuses_the_handshake_at_start_is_given_up() {
    // p1: accepts and closes every connection at once (a refusing peer).
    let refuser = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p1 = refuser.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in refuser.incoming() {
            drop(s);
        }
    });
    let (_, _, _, run) = node_0_alone(Duration::from_millis(2000), p1, Duration::from_millis(300));
    let run = run.join().unwrap();
    logged(&run.events, "link to p1 closed");
    assert!(
        run.given_up.iter().any(|(p, why)| *p == ProcessId(1)
            && why.contains("ended every handshake until the connect timeout (the last: ")),
        "given_up {:?}, events {:?}",
        run.given_up,
        run.events
    );
}

/// A holder of the secret may connect as p1 once per queue pair: a second claimant is refused
/// while the first is live, and nobody may claim to be node 0 itself.
#[test]
fn a_second_claimant_and_a_self_claim_are_refused() {
    let (target, events) = against_node_0(TcpConfig::default(), |addr, table, secret| {
        let mut first = RawPeer::connect(addr).unwrap();
        as_p1(&mut first, table, secret);
        assert_eq!(first.request(0, granted_write()), Some(WireStatus::Success));
        let mut second = RawPeer::connect(addr).unwrap();
        as_p1(&mut second, table, secret);
        assert_eq!(
            second.request(0, granted_write()),
            None,
            "a second p1 was served"
        );
        let mut me = RawPeer::connect(addr).unwrap();
        me.handshake(
            ProcessId(0),
            ProcessId(0),
            0,
            vec![64, 64],
            table.digest(),
            secret,
        )
        .unwrap();
        assert_eq!(
            me.request(0, granted_write()),
            None,
            "a second p0 was served"
        );
        // The first connection still works.
        assert_eq!(first.request(1, granted_write()), Some(WireStatus::Success));
    });
    let mut expect = vec![PATTERN; 64];
    expect[..8].copy_from_slice(&[9; 8]);
    assert_eq!(target.seen[0], expect);
    logged(
        &events,
        "a second connection claims to be p1 on queue pair 0",
    );
    logged(
        &events,
        "a peer claims to be this node (p0) on queue pair 0",
    );
}

/// Two nodes that both hold the secret talk; the run's processes see each other's writes.
#[test]
fn nodes_holding_the_secret_connect() {
    #[derive(Default)]
    struct Ping {
        sent: bool,
        got: u64,
    }
    impl<N: Nic> Process<N> for Ping {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            let peer = ProcessId(1 - nic.id().0);
            if !self.sent {
                nic.post_write(
                    RemoteAddr::new(peer, RegionId(0), 0),
                    &7u64.to_le_bytes(),
                    WriteFlags::NONE,
                )
                .unwrap();
                self.sent = true;
            }
            self.got = nic.load_u64(LocalAddr::new(RegionId(0), 0)).unwrap();
            Progress::worked(false)
        }
        fn done(&self) -> bool {
            self.got == 7
        }
    }
    let cfg = TcpConfig {
        secret: Secret::new(*b"sixteen bytes!!!").unwrap(),
        ..TcpConfig::default()
    };
    let run = pair::<Ping>(cfg, Duration::from_secs(20));
    assert!(run.processes.iter().all(|p| p.got == 7), "{:?}", run.events);
    assert!(run.stops.iter().all(|s| *s == TcpStop::AllDone));
}
