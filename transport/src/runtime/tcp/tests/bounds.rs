//! What a peer can make a node hold for it: reads throttled by backpressure, writes answered
//! together, and idle, slot-hogging or half-sent connections timed out.

use super::*;

/// A peer that sends reads and never takes the answers: once its responses back up, the node
/// stops reading its requests (they wait in the peer's own socket), so the peer's writes
/// block after a few megabytes of kernel buffers instead of growing the node without bound.
/// Then it reads, and every request it sent is answered, in order.
#[test]
fn a_flood_of_reads_is_throttled_and_nothing_is_lost() {
    let cfg = bounded(Bounds {
        responses: 64 << 10,
        ..Bounds::default()
    });
    against_node_0(cfg, |addr, table, secret| {
        let mut raw = RawPeer::connect(addr).unwrap();
        as_p1(&mut raw, table, secret);
        raw.stream
            .set_write_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let (mut seq, mut sent, mut frame_len) = (0u64, 0usize, 0);
        let mut blocked = false;
        while sent < 64 << 20 {
            let mut batch = Vec::new();
            for _ in 0..4096 {
                let op = WireOp::Read {
                    region: 0,
                    offset: 0,
                    len: 64,
                };
                wire::encode(&Frame::Request { seq, op }, &mut batch);
                seq += 1;
            }
            frame_len = batch.len() / 4096;
            match raw.stream.write(&batch) {
                Ok(n) if n == batch.len() => sent += n,
                Ok(n) => {
                    // A partial write: the rest of the batch is dropped, so the node sees a
                    // half frame; only whole frames count.
                    sent += n;
                    blocked = true;
                    break;
                }
                Err(_) => {
                    blocked = true;
                    break;
                }
            }
        }
        assert!(
            blocked,
            "the node took {} MiB of requests it could not answer",
            sent >> 20
        );
        assert!(sent < 48 << 20, "{} MiB before backpressure", sent >> 20);
        // Every whole request is answered, in order, once the peer reads.
        let whole = (sent / frame_len) as u64;
        raw.stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        for expect in 0..whole {
            match raw.next_frame() {
                Some(Frame::Response { seq, status, .. }) => {
                    assert_eq!(seq, expect);
                    assert_eq!(status, WireStatus::Success);
                }
                other => panic!("response {expect} of {whole}: {other:?}"),
            }
        }
    });
}

/// Writes are acknowledged by batch (a response to request `n` answers every earlier write),
/// but a read between them gets its own answer with its bytes, in order.
#[test]
fn writes_are_acknowledged_together_and_reads_one_by_one() {
    against_node_0(TcpConfig::default(), |addr, table, secret| {
        let mut raw = RawPeer::connect(addr).unwrap();
        as_p1(&mut raw, table, secret);
        let mut batch = Vec::new();
        for seq in 0..100u64 {
            let op = if seq == 50 {
                WireOp::Read {
                    region: 0,
                    offset: 0,
                    len: 8,
                }
            } else {
                granted_write()
            };
            wire::encode(&Frame::Request { seq, op }, &mut batch);
        }
        raw.stream.write_all(&batch).unwrap();
        let mut answered = Vec::new();
        while answered.last() != Some(&99) {
            match raw.next_frame() {
                Some(Frame::Response {
                    seq, status, data, ..
                }) => {
                    assert_eq!(status, WireStatus::Success, "response {seq}");
                    assert_eq!(data.len(), if seq == 50 { 8 } else { 0 }, "response {seq}");
                    answered.push(seq);
                }
                other => panic!("after responses {answered:?}: {other:?}"),
            }
        }
        assert!(
            answered.contains(&50),
            "the read was passed over: {answered:?}"
        );
        assert!(answered.windows(2).all(|w| w[0] < w[1]), "{answered:?}");
    });
}

/// Node 0 with at most 8 handshakes in progress, each given `deadline` to finish.
fn eight_handshakes(deadline: Duration) -> TcpConfig {
    bounded(Bounds {
        handshakes: 8,
        handshake: deadline,
        ..Bounds::default()
    })
}

/// Connections that never say anything: past the cap on handshakes in progress the oldest are
/// closed as newer ones come, and the rest when the handshake's deadline passes.
#[test]
fn idle_connections_are_capped_and_timed_out() {
    let cfg = eight_handshakes(Duration::from_millis(400));
    let (_, events) = against_node_0(cfg, |addr, _, _| {
        // Let node 0's own connections to itself finish their handshakes first.
        std::thread::sleep(Duration::from_millis(100));
        let mut idle: Vec<TcpStream> = (0..30).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let closed = |s: &mut TcpStream, wait: u64| {
            s.set_read_timeout(Some(Duration::from_millis(wait)))
                .unwrap();
            let mut buf = [0u8; 64];
            // The node's preamble first, then end of stream once it closes.
            loop {
                match s.read(&mut buf) {
                    Ok(0) => return true,
                    Ok(_) => continue,
                    Err(_) => return false,
                }
            }
        };
        // The oldest make room for the newer ones: at most 8 are left waiting.
        let refused = idle
            .iter_mut()
            .map(|s| closed(s, 50))
            .filter(|&c| c)
            .count();
        assert!(
            refused >= 30 - 8,
            "only {refused} of 30 idle connections closed at once"
        );
        std::thread::sleep(Duration::from_millis(500));
        let all = idle
            .iter_mut()
            .map(|s| closed(s, 200))
            .filter(|&c| c)
            .count();
        assert_eq!(all, 30, "idle connections outlived the handshake deadline");
    });
    logged(&events, "evicted: 8 handshakes in progress");
    logged(&events, "no finished handshake within");
}

/// An outsider holding every handshake slot with idle sockets (it needs no secret for that)
/// does not lock a peer out: the peer's connection evicts the oldest idle one and proves
/// itself. Refusing the newest connection instead kept real nodes out of a run for as long as
/// the outsider kept its sockets open.
#[test]
fn idle_sockets_holding_every_handshake_slot_do_not_lock_a_peer_out() {
    let cfg = eight_handshakes(Duration::from_secs(30));
    let (_, events) = against_node_0(cfg, |addr, table, secret| {
        std::thread::sleep(Duration::from_millis(100));
        let idle: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(100));
        let mut raw = RawPeer::connect(addr).unwrap();
        let welcome = as_p1(&mut raw, table, secret);
        assert!(matches!(welcome, Frame::Welcome(_)), "{welcome:?}");
        drop(idle);
    });
    logged(&events, "evicted");
}

/// A proven peer that sends half a frame and stalls is closed when the frame's deadline passes.
#[test]
fn a_frame_left_half_sent_is_timed_out() {
    let cfg = bounded(Bounds {
        frame: Duration::from_millis(300),
        ..Bounds::default()
    });
    let (_, events) = against_node_0(cfg, |addr, table, secret| {
        let mut raw = RawPeer::connect(addr).unwrap();
        as_p1(&mut raw, table, secret);
        let mut frame = Vec::new();
        wire::encode(
            &Frame::Request {
                seq: 0,
                op: granted_write(),
            },
            &mut frame,
        );
        raw.stream.write_all(&frame[..frame.len() / 2]).unwrap();
        assert_eq!(raw.next_frame(), None, "the node kept a stalled frame");
    });
    logged(&events, "a frame half received");
}
