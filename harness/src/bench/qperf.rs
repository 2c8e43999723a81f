//! A yardstick nobody here wrote: `qperf` (Debian's package) measuring a raw TCP
//! request-response (`tcp_lat`) and stream (`tcp_bw`) of the same sizes on loopback, beside
//! `bench transport --runtime tcp` in the same run. qperf reports half the round trip as its
//! latency, as perftest (and our `t_typical`) do. (sockperf was tried first; it refuses
//! messages above 64 KB.)

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A qperf server on a loopback port, killed when dropped.
pub(crate) struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn missing(e: std::io::Error) -> String {
    format!("cannot run qperf ({e}): install it (`scripts/bench-deps.sh`, or Debian's `apt-get install qperf`) or leave out --qperf")
}

impl Server {
    /// Starts a qperf server on a free loopback port and waits until it listens.
    pub(crate) fn start() -> Result<Server, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = Command::new("qperf")
            .args(["-lp", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(missing)?;
        let server = Server { child, port };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", server.port)).is_err() {
            if started.elapsed() > Duration::from_secs(5) {
                return Err("the qperf server did not start listening within 5 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// One-way latency (half the round trip) of `bytes`-byte messages in us, and the stream
    /// bandwidth in Gb/s, each measured for `secs` seconds.
    pub(crate) fn measure(&self, bytes: usize, secs: u64) -> Result<(f64, f64), String> {
        let o = Command::new("qperf")
            .args([
                "127.0.0.1",
                "-lp",
                &self.port.to_string(),
                "--use_bits_per_sec",
                "-m",
                &bytes.to_string(),
                "-t",
                &secs.max(1).to_string(),
                "tcp_lat",
                "tcp_bw",
            ])
            .output()
            .map_err(missing)?;
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        if !o.status.success() {
            return Err(format!("qperf -m {bytes} failed: {text}"));
        }
        let lat = quantity(&text, "latency")
            .and_then(|(v, unit)| {
                Some(
                    v * match unit.as_str() {
                        "ns" => 1e-3,
                        "us" => 1.0,
                        "ms" => 1e3,
                        "sec" => 1e6,
                        _ => return None,
                    },
                )
            })
            .ok_or_else(|| format!("no latency in qperf's output: {text}"))?;
        let bw = quantity(&text, "bw")
            .and_then(|(v, unit)| {
                Some(
                    v * match unit.as_str() {
                        "bits/sec" => 1e-9,
                        "Kb/sec" => 1e-6,
                        "Mb/sec" => 1e-3,
                        "Gb/sec" => 1.0,
                        "Tb/sec" => 1e3,
                        _ => return None,
                    },
                )
            })
            .ok_or_else(|| format!("no bandwidth in qperf's output: {text}"))?;
        Ok((lat, bw))
    }
}

/// `name  =  12.5 us` in `text`: the value and its unit.
fn quantity(text: &str, name: &str) -> Option<(f64, String)> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        if k.trim() != name {
            return None;
        }
        let mut parts = v.split_whitespace();
        let value = parts.next()?.parse().ok()?;
        Some((value, parts.next()?.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qperf_lines_parse() {
        let out = "tcp_lat:\n    latency  =  1.25 ms\ntcp_bw:\n    bw  =  6.81 Gb/sec\n";
        assert_eq!(quantity(out, "latency"), Some((1.25, "ms".into())));
        assert_eq!(quantity(out, "bw"), Some((6.81, "Gb/sec".into())));
        assert_eq!(quantity(out, "msg_rate"), None);
    }
}
