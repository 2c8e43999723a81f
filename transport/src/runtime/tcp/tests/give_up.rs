//! Peers given up (one that never answers, a node that is gone) and links re-dialled when the
//! process reconnects, refused while the peer holds the old connection; a peer that keeps
//! reading is never given up.

use super::*;

/// A peer that accepts TCP and never answers: the node gives it up when the connect timeout
/// passes (its handshakes time out and are retried until then), starts, and ops to it fail
/// `PeerUnreachable` instead of hanging the node.
#[test]
fn a_peer_that_never_answers_is_given_up() {
    #[derive(Default)]
    struct Poster {
        status: Option<crate::Status>,
    }
    impl<N: Nic> Process<N> for Poster {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(0) && self.status.is_none() {
                if let Some(c) = nic.poll_completion() {
                    self.status = Some(c.status);
                } else {
                    let _ = nic.post_write(
                        RemoteAddr::new(ProcessId(1), RegionId(0), 0),
                        &7u64.to_le_bytes(),
                        WriteFlags::SIGNALED,
                    );
                }
            }
            Progress::worked(false)
        }
        fn done(&self) -> bool {
            self.status.is_some()
        }
    }
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    // Accepts and holds every connection, says nothing.
    let held = std::thread::spawn(move || {
        let mut held = Vec::new();
        silent.set_nonblocking(true).unwrap();
        let until = Instant::now() + Duration::from_secs(4);
        while Instant::now() < until {
            if let Ok((s, _)) = silent.accept() {
                held.push(s);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        held.len()
    });
    let cfg = TcpConfig {
        connect_timeout: Duration::from_millis(1500),
        bounds: Bounds {
            handshake: Duration::from_millis(300),
            ..Bounds::default()
        },
        ..TcpConfig::default()
    };
    let specs = vec![
        Process::<TcpNic>::regions(&Poster::default()),
        Process::<TcpNic>::regions(&Poster::default()),
    ];
    let listener = listen(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let addrs = vec![listener.local_addr().unwrap(), silent_addr];
    let started = Instant::now();
    let run = run_node(
        &cfg,
        ProcessId(0),
        &specs,
        addrs,
        listener,
        Poster::default(),
        Duration::from_millis(300),
        None,
    )
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "the node hung");
    assert_eq!(run.process.status, Some(crate::Status::PeerUnreachable));
    logged(&run.events, "no finished handshake");
    assert!(held.join().unwrap() >= 2, "the handshake was not retried");
}

/// A link given up while its peer lives (here: a partition holds node 0's writes until they
/// pass [`Bounds::requests`], as a queue pair whose retries ran out) comes back when the process
/// reconnects: the engine re-dials it with backoff, as a new queue-pair epoch, and writes
/// posted after the reconnect land once the partition heals. A write posted between two
/// reconnects of the re-dial is flushed by the second.
#[test]
fn a_link_given_up_is_re_dialled_when_the_process_reconnects() {
    use crate::Status;
    const BULK: usize = 64 << 10;
    #[derive(Default)]
    struct Redial {
        lost: Option<Status>,
        /// A write posted between two reconnects during the re-dial, and how it ended.
        between: Option<(crate::WrId, Option<Status>)>,
        reconnects: u32,
        reconnected: bool,
        marker: Option<Status>,
        seen: u64,
    }
    impl<N: Nic> Process<N> for Redial {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8 + BULK).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(1) {
                self.seen = nic.load_u64(LocalAddr::new(RegionId(0), 0)).unwrap();
                return Progress::worked(false);
            }
            let peer = ProcessId(1);
            while let Some(c) = nic.poll_completion() {
                match c.kind {
                    crate::OpKind::Reconnect => {
                        self.reconnects += 1;
                        self.reconnected = self.reconnects == 2;
                    }
                    _ if self.between.is_some_and(|b| b.0 == c.wr) => {
                        self.between = Some((c.wr, Some(c.status)));
                    }
                    _ if c.status != Status::Success && self.lost.is_none() => {
                        self.lost = Some(c.status);
                        nic.reconnect(peer).unwrap();
                        let dst = RemoteAddr::new(peer, RegionId(0), 0);
                        let wr = nic.post_write(dst, &[2; 8], WriteFlags::SIGNALED).unwrap();
                        self.between = Some((wr, None));
                        nic.reconnect(peer).unwrap();
                    }
                    _ if self.reconnected => self.marker = Some(c.status),
                    _ => {}
                }
            }
            if self.lost.is_none() && nic.now() >= Nanos(20_000_000) {
                // Bulk writes into the partition until the link is given up.
                let dst = RemoteAddr::new(peer, RegionId(0), 8);
                nic.post_write(dst, &[1; BULK], WriteFlags::SIGNALED)
                    .unwrap();
            }
            if self.reconnected && self.marker.is_none() && nic.now() >= Nanos(400_000_000) {
                let dst = RemoteAddr::new(peer, RegionId(0), 0);
                nic.post_write(dst, &7u64.to_le_bytes(), WriteFlags::SIGNALED)
                    .unwrap();
                self.marker = Some(Status::Flushed); // until its completion says otherwise
            }
            Progress::worked(false).wake_at(Some(nic.now() + Nanos(1_000_000)))
        }
        fn done(&self) -> bool {
            self.marker == Some(Status::Success) || self.seen == 7
        }
    }
    let cfg = partitioned(
        0,
        1,
        300,
        Bounds {
            requests: 1 << 20,
            stall: Duration::ZERO,
            ..Bounds::default()
        },
    );
    let run = pair::<Redial>(cfg, Duration::from_secs(20));
    let (p0, p1) = (&run.processes[0], &run.processes[1]);
    let why = format!("{:?} {:?}", run.stops, run.events);
    assert_eq!(p0.lost, Some(Status::PeerUnreachable), "{why}");
    assert!(p0.reconnected, "{why}");
    let flushed = p0.between.and_then(|b| b.1);
    assert_eq!(
        flushed,
        Some(Status::Flushed),
        "the second reconnect flushes it: {why}"
    );
    assert_eq!(p0.marker, Some(Status::Success), "{why}");
    assert_eq!(p1.seen, 7, "{why}");
    let events = run.events[0].join("\n");
    assert!(events.contains("past the bound"), "{events}");
    assert!(
        events.contains("re-dialled (queue pair epoch 2)"),
        "{events}"
    );
}

/// A reconnect to a peer whose node is gone re-dials it, is refused (no listener), and
/// completes `PeerUnreachable` at once, as do later ops: nothing waits for the connect timeout.
#[test]
fn a_reconnect_to_a_node_that_is_gone_fails_at_once() {
    use crate::{OpKind, Status};
    #[derive(Default)]
    struct Survivor {
        stop: bool,
        lost: bool,
        reconnect: Option<(Status, Nanos)>,
        after: Option<Status>,
    }
    impl<N: Nic> Process<N> for Survivor {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(1) {
                self.stop = nic.now() >= Nanos(30_000_000);
                return Progress::worked(false).wake_at(Some(Nanos(30_000_000)));
            }
            let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
            while let Some(c) = nic.poll_completion() {
                match c.kind {
                    OpKind::Reconnect => {
                        self.reconnect = Some((c.status, nic.now()));
                        nic.post_write(dst, &[1; 8], WriteFlags::SIGNALED).unwrap();
                    }
                    _ if !self.lost => {
                        self.lost = true;
                        nic.reconnect(ProcessId(1)).unwrap();
                    }
                    _ if self.reconnect.is_some() => self.after = Some(c.status),
                    _ => {}
                }
            }
            if !self.lost && nic.now() >= Nanos(100_000_000) {
                nic.post_write(dst, &[1; 8], WriteFlags::SIGNALED).unwrap();
            }
            Progress::worked(false).wake_at(Some(nic.now() + Nanos(1_000_000)))
        }
        fn done(&self) -> bool {
            self.after.is_some()
        }
        fn stopped(&self) -> bool {
            self.stop
        }
    }
    let run = pair::<Survivor>(TcpConfig::default(), Duration::from_secs(20));
    let p0 = &run.processes[0];
    let why = format!("{:?} {:?}", run.stops, run.events);
    let (status, at) = p0
        .reconnect
        .unwrap_or_else(|| panic!("no reconnect: {why}"));
    assert_eq!(status, Status::PeerUnreachable, "{why}");
    assert!(at < Nanos(2_000_000_000), "the re-dial waited {at}: {why}");
    assert_eq!(p0.after, Some(Status::PeerUnreachable), "{why}");
    logged(&run.events[0], "refused the re-dial");
}

/// A re-dial that races the peer still holding the old connection (found by review). Node 1's
/// responses to node 0 are partitioned, so its end of the data connection backs up past
/// [`Bounds::responses`] and stops reading; node 0's writes then back up past
/// [`Bounds::requests`] and node 0 gives the link up while node 1 lives and, reading nothing,
/// never sees the close. Node 1 refuses the re-dial as a second claimant: that is one failed
/// attempt, retried with backoff, and the reconnect completes `Success` only once node 1 admitted
/// a connection (it answers the admission request behind the proof), after the partition heals;
/// a write posted after it lands.
#[test]
fn a_re_dial_refused_while_the_peer_holds_the_old_connection_is_tried_again() {
    use crate::{OpKind, Status};
    const BULK: usize = 64 << 10;
    #[derive(Default)]
    struct Racer {
        reads: bool,
        lost: Option<Status>,
        reconnect: Option<Status>,
        marker: Option<Status>,
        marker_posted: bool,
        seen: u64,
    }
    impl<N: Nic> Process<N> for Racer {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(8 + 4 * BULK).with_default(Access::ReadWrite)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(1) {
                self.seen = nic.load_u64(LocalAddr::new(RegionId(0), 0)).unwrap();
                return Progress::worked(false).wake_at(Some(nic.now() + Nanos(1_000_000)));
            }
            let peer = ProcessId(1);
            while let Some(c) = nic.poll_completion() {
                match c.kind {
                    OpKind::Reconnect => self.reconnect = Some(c.status),
                    _ if c.status != Status::Success && self.lost.is_none() => {
                        self.lost = Some(c.status);
                        nic.reconnect(peer).unwrap();
                    }
                    _ if self.marker_posted => self.marker = Some(c.status),
                    _ => {}
                }
            }
            if self.lost.is_none() && nic.now() >= Nanos(20_000_000) {
                if !self.reads {
                    // Read responses held by the partition: node 1's connection pauses.
                    for k in 0..4 {
                        let src = RemoteAddr::new(peer, RegionId(0), 8 + k * BULK);
                        nic.post_read(src, BULK, LocalAddr::new(RegionId(0), 8 + k * BULK), false)
                            .unwrap();
                    }
                    self.reads = true;
                }
                for _ in 0..16 {
                    let dst = RemoteAddr::new(peer, RegionId(0), 8);
                    nic.post_write(dst, &[1; BULK], WriteFlags::NONE).unwrap();
                }
            }
            if self.reconnect.is_some() && !self.marker_posted && nic.now() >= Nanos(900_000_000) {
                let dst = RemoteAddr::new(peer, RegionId(0), 0);
                nic.post_write(dst, &7u64.to_le_bytes(), WriteFlags::SIGNALED)
                    .unwrap();
                self.marker_posted = true;
            }
            Progress::worked(false).wake_at(Some(nic.now() + Nanos(1_000_000)))
        }
        fn done(&self) -> bool {
            self.marker.is_some() || self.seen == 7
        }
    }
    let cfg = partitioned(
        1,
        0,
        600,
        Bounds {
            responses: 64 << 10,
            requests: 1 << 20,
            stall: Duration::ZERO,
            ..Bounds::default()
        },
    );
    let run = pair::<Racer>(cfg, Duration::from_secs(10));
    let p0 = &run.processes[0];
    let why = format!(
        "lost {:?} reconnect {:?} marker {:?}; {:?} {:?}",
        p0.lost, p0.reconnect, p0.marker, run.stops, run.events
    );
    assert_eq!(p0.lost, Some(Status::PeerUnreachable), "{why}");
    assert_eq!(p0.reconnect, Some(Status::Success), "{why}");
    // The reconnect said the queue pair is back and the peer lives: a later write must land.
    assert_eq!(p0.marker, Some(Status::Success), "{why}");
    // The race happened: node 1 refused a re-dial while it held the old connection.
    logged(&run.events[1], "second connection");
}

/// A peer that keeps reading is never given up, however far ahead its initiator posts: 64
/// writes of 1 MiB posted at once, 64 MiB ahead of a 4 MiB [`Bounds::requests`], all land
/// (`bench transport --sizes 8388608` posts 1 GiB ahead and failed with the byte bound alone).
#[test]
fn a_peer_that_keeps_reading_is_not_given_up_however_far_ahead_the_posts_are() {
    use crate::Status;
    const MIB: usize = 1 << 20;
    #[derive(Default)]
    struct Ahead {
        posted: bool,
        target: bool,
        done: u32,
        failed: Option<Status>,
    }
    impl<N: Nic> Process<N> for Ahead {
        fn regions(&self) -> Vec<RegionSpec> {
            vec![RegionSpec::new(MIB).with_default(Access::Write)]
        }
        fn poll(&mut self, nic: &mut N) -> Progress {
            if nic.id() == ProcessId(1) {
                self.target = true;
                return Progress::worked(false);
            }
            if !self.posted {
                let payload = bytes::Bytes::from(vec![3u8; MIB]);
                for _ in 0..64 {
                    let dst = RemoteAddr::new(ProcessId(1), RegionId(0), 0);
                    let op = crate::Op::Write {
                        dst,
                        data: crate::Data::Bytes(payload.clone()),
                        imm: None,
                        flags: WriteFlags::SIGNALED,
                    };
                    nic.post(op).unwrap();
                }
                self.posted = true;
            }
            while let Some(c) = nic.poll_completion() {
                match c.status {
                    Status::Success => self.done += 1,
                    s => self.failed = Some(s),
                }
            }
            Progress::worked(false)
        }
        fn done(&self) -> bool {
            self.target || self.done == 64 || self.failed.is_some()
        }
    }
    let cfg = bounded(Bounds {
        requests: 4 * MIB,
        ..Bounds::default()
    });
    let run = pair::<Ahead>(cfg, Duration::from_secs(60));
    let p0 = &run.processes[0];
    let why = format!("{:?} {:?}", run.stops, run.events);
    assert_eq!(p0.failed, None, "{why}");
    assert_eq!(p0.done, 64, "{why}");
}
