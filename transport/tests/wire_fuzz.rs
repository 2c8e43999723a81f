//! The tcp runtime's frame decoder, fuzzed: valid frame streams mutated (bit flips, byte
//! overwrites with boundary values, truncation, splices, duplicated ranges, lying length
//! prefixes) and pure junk, fed to `wire::fuzz`, which must never panic or overrun.
//!
//! CI runs it for 2 seconds; `TCP_FUZZ_SECS=600 cargo test --release -p transport --test
//! wire_fuzz -- --nocapture` is the soak, and prints how many inputs it tried.

use std::time::{Duration, Instant};
use transport::runtime::tcp::wire::{self, Frame, Hello, Welcome, WireOp, WireStatus};
use transport::{ProcessId, Rng};

fn corpus() -> Vec<u8> {
    let data = [0x5Au8; 300];
    let frames = [
        Frame::Hello(Hello {
            from: ProcessId(2),
            to: ProcessId(0),
            qp: 1,
            regions: vec![4096, 64, 8],
            table: 77,
            nonce: [3; 16],
        }),
        Frame::Welcome(Welcome {
            from: ProcessId(0),
            regions: vec![8],
            nonce: [4; 16],
            mac: [5; 32],
        }),
        Frame::Proof([6; 32]),
        Frame::Request {
            seq: 1,
            op: WireOp::Write {
                region: 0,
                offset: 4088,
                data: &data,
                imm: Some(1),
            },
        },
        Frame::Request {
            seq: 2,
            op: WireOp::Read {
                region: 1,
                offset: 0,
                len: 64,
            },
        },
        Frame::Request {
            seq: 3,
            op: WireOp::CompareSwap {
                region: 0,
                offset: 8,
                expect: 0,
                swap: u64::MAX,
            },
        },
        Frame::Request {
            seq: 4,
            op: WireOp::FetchAdd {
                region: 0,
                offset: 16,
                add: 1,
            },
        },
        Frame::Request {
            seq: 5,
            op: WireOp::Send { data: &data[..17] },
        },
        Frame::Request {
            seq: 6,
            op: WireOp::Reconnect,
        },
        Frame::Response {
            seq: 2,
            status: WireStatus::Success,
            value: Some(9),
            data: &data[..64],
        },
    ];
    let mut out = Vec::new();
    for f in &frames {
        wire::encode(f, &mut out);
    }
    out
}

const BOUNDARY: [u8; 6] = [0, 1, 0x7F, 0x80, 0xFE, 0xFF];

fn mutate(rng: &mut Rng, base: &[u8], out: &mut Vec<u8>) {
    out.clear();
    if rng.chance(0.05) {
        // Pure junk.
        let n = rng.below(512) as usize;
        out.resize(n, 0);
        rng.fill_bytes(out);
        return;
    }
    let start = rng.below(base.len() as u64) as usize;
    let end = (start + 1 + rng.below(1024) as usize).min(base.len());
    out.extend_from_slice(&base[start..end]);
    for _ in 0..=rng.below(8) {
        if out.is_empty() {
            break;
        }
        let i = rng.below(out.len() as u64) as usize;
        match rng.below(6) {
            0 => out[i] ^= 1 << rng.below(8),
            1 => out[i] = BOUNDARY[rng.below(BOUNDARY.len() as u64) as usize],
            2 => out.truncate(i),
            3 => {
                let j = (i + rng.below(64) as usize).min(out.len());
                let copy = out[i..j].to_vec();
                out.splice(i..i, copy);
            }
            4 if i + 4 <= out.len() => {
                // A length prefix (or any u32) that lies.
                let v = [
                    0u32,
                    1,
                    7,
                    wire::MAX_FRAME as u32,
                    wire::MAX_FRAME as u32 + 1,
                    u32::MAX,
                ][rng.below(6) as usize];
                out[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            _ => {
                let extra = rng.below(16) as usize;
                let at = out.len();
                out.resize(at + extra, 0);
                rng.fill_bytes(&mut out[at..]);
            }
        }
    }
}

#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the soak runs for a wall-clock budget"
)]
fn the_frame_decoder_survives_mutated_and_junk_input() {
    let secs: f64 = std::env::var("TCP_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let base = corpus();
    // The corpus itself decodes whole.
    assert_eq!(wire::fuzz(&base), 10);
    let mut rng = Rng::from_seed(0xF022);
    let mut input = Vec::new();
    let started = Instant::now();
    let budget = Duration::from_secs_f64(secs);
    let (mut inputs, mut frames) = (0u64, 0u64);
    while started.elapsed() < budget {
        for _ in 0..1000 {
            mutate(&mut rng, &base, &mut input);
            frames += wire::fuzz(&input) as u64;
            inputs += 1;
        }
    }
    println!(
        "wire fuzz: {inputs} inputs in {:.1} s, {frames} frames decoded from them, 0 crashes",
        started.elapsed().as_secs_f64()
    );
    assert!(inputs > 0);
}
