//! The tcp runtime across hosts, on one machine: every node in a network namespace of its own,
//! each joined by a veth pair to a bridge in a switch namespace, addresses only inside the
//! namespaces. A 3-group RamCast run with a node per namespace, its delivery log checked.
//!
//! Needs root and iproute2 (`ip netns`); where the environment forbids namespaces the test
//! prints why and passes without running (the line starts with `skipped:`).

use std::process::Command;

/// 3 groups of 3 servers and 3 clients.
const NODES: usize = 12;

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// The namespaces and links of one test run, removed when dropped.
struct Fabric {
    tag: String,
}

impl Fabric {
    fn switch(&self) -> String {
        format!("{}sw", self.tag)
    }
    fn node(&self, i: usize) -> String {
        format!("{}n{i}", self.tag)
    }

    /// Builds the switch namespace with its bridge and one namespace per node.
    fn build(tag: String) -> Result<Fabric, String> {
        let f = Fabric { tag };
        let sw = f.switch();
        ip(&["netns", "add", &sw])?;
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &sw, "link", "set", "br0", "up"])?;
        for i in 0..NODES {
            let ns = f.node(i);
            let (inside, outside) = (format!("{}e{i}", f.tag), format!("{}p{i}", f.tag));
            ip(&["netns", "add", &ns])?;
            ip(&[
                "link", "add", &inside, "type", "veth", "peer", "name", &outside,
            ])?;
            ip(&["link", "set", &inside, "netns", &ns])?;
            ip(&["link", "set", &outside, "netns", &sw])?;
            ip(&["-n", &sw, "link", "set", &outside, "master", "br0"])?;
            ip(&["-n", &sw, "link", "set", &outside, "up"])?;
            let addr = format!("10.79.0.{}/24", i + 1);
            ip(&["-n", &ns, "addr", "add", &addr, "dev", &inside])?;
            ip(&["-n", &ns, "link", "set", &inside, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(f)
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of each veth pair, and with it the pair.
        for i in 0..NODES {
            let _ = ip(&["netns", "del", &self.node(i)]);
        }
        let _ = ip(&["netns", "del", &self.switch()]);
    }
}

#[test]
fn a_ramcast_run_with_one_node_per_network_namespace_checks_its_log() {
    let tag = format!("wb{}", std::process::id() % 100_000);
    let fabric = match Fabric::build(tag) {
        Ok(f) => f,
        Err(why) => {
            println!("skipped: network namespaces are not available here: {why}");
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("harness-netns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut hosts = String::new();
    for i in 0..NODES {
        hosts.push_str(&format!(
            "[[node]]\naddr = \"10.79.0.{}:7100\"\nexec = [\"ip\", \"netns\", \"exec\", \"{}\"]\n\n",
            i + 1,
            fabric.node(i)
        ));
    }
    let cluster = dir.join("hosts.toml");
    std::fs::write(&cluster, hosts).unwrap();
    let log = dir.join("log");
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args([
            "run",
            "--protocol",
            "ramcast",
            "--runtime",
            "tcp",
            "--groups",
            "3",
            "--clients",
            "3",
            "--dest",
            "random:2",
            "--duration",
            "1s",
            "--cluster",
            cluster.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    println!("{out}");
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("12 processes"), "{out}");
    assert!(out.contains("; 0 violations"), "{out}");
    assert!(!out.contains("delivered 0 multicasts"), "{out}");
    drop(fabric);
    let _ = std::fs::remove_dir_all(&dir);
}
