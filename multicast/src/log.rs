//! The delivery log of a run, and its CSV form (ARCHITECTURE.md, "Delivery logs"):
//!
//! - `processes.csv`: `process,group,correct` (`group` is `client` for a client, `auxiliary`
//!   for a process that orders but belongs to no group; `correct` is false for a process that
//!   crashed at any time in the run);
//! - `multicasts.csv`: `client,msg,dst,completed` (`msg` like `c3:17`; `dst` the destination
//!   group ids joined by `;`; `completed` whether the client got all its responses);
//! - `deliveries.csv`: `process,group,index,msg,dst,order` (`index` is the 0-based position in
//!   that process's delivery sequence; `order` the protocol's order timestamp, empty where it
//!   has none; logs written before the column read as having none).

use crate::{DestSet, GroupId, MsgId, ProcessId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// What a process is: a member of a group, a client, or an auxiliary process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Member {
    /// A server process of this group.
    Group(GroupId),
    /// A client (multicasts, delivers nothing).
    Client,
    /// Takes part in ordering, belongs to no group, delivers nothing (Ridge's dedicated
    /// acceptors; see [`crate::Membership::auxiliary_count`]).
    Auxiliary,
}

/// One multicast a client issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Multicast {
    /// The client.
    pub client: ProcessId,
    /// The message.
    pub msg: MsgId,
    /// Its destination groups.
    pub dst: DestSet,
    /// Whether the client received every response.
    pub completed: bool,
}

/// Everything the checker needs about a run: who is who, what was multicast, who delivered what
/// in which order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryLog {
    /// Each process's role and whether it stayed correct for the whole run.
    pub processes: BTreeMap<ProcessId, (Member, bool)>,
    /// Multicasts, by message.
    pub multicasts: BTreeMap<MsgId, Multicast>,
    /// Each process's deliveries, in order.
    pub deliveries: BTreeMap<ProcessId, Vec<MsgId>>,
    /// The order timestamp a process delivered a message with, where the protocol has one
    /// ([`crate::Delivery::order`]).
    pub orders: BTreeMap<(ProcessId, MsgId), u64>,
}

/// Errors reading or writing a delivery log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        error: String,
    },
    /// A row is malformed.
    #[error("{path}, line {line}: {message}")]
    Row {
        /// The file.
        path: String,
        /// 1-based line number (the header is line 1).
        line: u64,
        /// What is wrong.
        message: String,
    },
}

#[derive(Serialize, Deserialize)]
struct ProcessRow {
    process: u32,
    group: String,
    correct: bool,
}

#[derive(Serialize, Deserialize)]
struct MulticastRow {
    client: u32,
    msg: String,
    dst: String,
    completed: bool,
}

#[derive(Serialize, Deserialize)]
struct DeliveryRow {
    process: u32,
    group: String,
    index: u64,
    msg: String,
    dst: String,
    #[serde(default)]
    order: Option<u64>,
}

fn member_name(m: Member) -> String {
    match m {
        Member::Group(g) => g.0.to_string(),
        Member::Client => "client".to_string(),
        Member::Auxiliary => "auxiliary".to_string(),
    }
}

impl DeliveryLog {
    /// Adds the processes, multicasts and deliveries of `other`, a log of other processes of
    /// the same run (a node's part, written where it ran).
    pub fn merge(&mut self, other: DeliveryLog) {
        self.processes.extend(other.processes);
        self.multicasts.extend(other.multicasts);
        for (p, ds) in other.deliveries {
            self.deliveries.entry(p).or_default().extend(ds);
        }
        self.orders.extend(other.orders);
    }

    /// Declares process `p`.
    pub fn add_process(&mut self, p: ProcessId, member: Member, correct: bool) {
        self.processes.insert(p, (member, correct));
    }

    /// Records a multicast.
    pub fn add_multicast(&mut self, m: Multicast) {
        self.multicasts.insert(m.msg, m);
    }

    /// Records that `p` delivered `msg` next.
    pub fn deliver(&mut self, p: ProcessId, msg: MsgId) {
        self.deliveries.entry(p).or_default().push(msg);
    }

    /// Records the order timestamp `p` delivered `msg` with.
    pub fn stamp(&mut self, p: ProcessId, msg: MsgId, order: u64) {
        self.orders.insert((p, msg), order);
    }

    /// The group of `p`, if it is a server.
    pub fn group_of(&self, p: ProcessId) -> Option<GroupId> {
        match self.processes.get(&p) {
            Some((Member::Group(g), _)) => Some(*g),
            _ => None,
        }
    }

    /// Whether `p` stayed correct for the whole run (unknown processes are not).
    pub fn is_correct(&self, p: ProcessId) -> bool {
        self.processes.get(&p).is_some_and(|(_, c)| *c)
    }

    /// Writes the three CSV files into `dir` (created if needed).
    pub fn write_csv(&self, dir: &Path) -> Result<(), LogError> {
        std::fs::create_dir_all(dir).map_err(|e| LogError::Io {
            path: dir.display().to_string(),
            error: e.to_string(),
        })?;
        let mut processes = Vec::new();
        for (p, (m, correct)) in &self.processes {
            processes.push(ProcessRow {
                process: p.0,
                group: member_name(*m),
                correct: *correct,
            });
        }
        write_rows(&dir.join("processes.csv"), &processes)?;
        let multicasts: Vec<MulticastRow> = self
            .multicasts
            .values()
            .map(|m| MulticastRow {
                client: m.client.0,
                msg: m.msg.to_string(),
                dst: m.dst.to_string(),
                completed: m.completed,
            })
            .collect();
        write_rows(&dir.join("multicasts.csv"), &multicasts)?;
        let mut deliveries = Vec::new();
        for (p, seq) in &self.deliveries {
            let group = self
                .processes
                .get(p)
                .map_or(String::new(), |(m, _)| member_name(*m));
            for (index, msg) in seq.iter().enumerate() {
                deliveries.push(DeliveryRow {
                    process: p.0,
                    group: group.clone(),
                    index: index as u64,
                    msg: msg.to_string(),
                    dst: self
                        .multicasts
                        .get(msg)
                        .map_or(String::new(), |m| m.dst.to_string()),
                    order: self.orders.get(&(*p, *msg)).copied(),
                });
            }
        }
        write_rows(&dir.join("deliveries.csv"), &deliveries)
    }

    /// Reads the three CSV files from `dir`.
    pub fn read_csv(dir: &Path) -> Result<DeliveryLog, LogError> {
        let mut log = DeliveryLog::default();
        let path = dir.join("processes.csv");
        for (line, row) in read_rows::<ProcessRow>(&path)? {
            let member = match row.group.as_str() {
                "client" => Member::Client,
                "auxiliary" => Member::Auxiliary,
                g => Member::Group(GroupId(g.parse().map_err(|_| LogError::Row {
                    path: path.display().to_string(),
                    line,
                    message: format!(
                        "group `{g}` is neither a group id nor `client` nor `auxiliary`"
                    ),
                })?)),
            };
            log.add_process(ProcessId(row.process), member, row.correct);
        }
        let path = dir.join("multicasts.csv");
        for (line, row) in read_rows::<MulticastRow>(&path)? {
            let bad = |message: String| LogError::Row {
                path: path.display().to_string(),
                line,
                message,
            };
            log.add_multicast(Multicast {
                client: ProcessId(row.client),
                msg: row.msg.parse().map_err(bad)?,
                dst: row.dst.parse().map_err(bad)?,
                completed: row.completed,
            });
        }
        let path = dir.join("deliveries.csv");
        for (line, row) in read_rows::<DeliveryRow>(&path)? {
            let bad = |message: String| LogError::Row {
                path: path.display().to_string(),
                line,
                message,
            };
            let msg: MsgId = row.msg.parse().map_err(bad)?;
            let seq = log.deliveries.entry(ProcessId(row.process)).or_default();
            if row.index != seq.len() as u64 {
                return Err(bad(format!(
                    "index {} of p{} out of sequence (expected {})",
                    row.index,
                    row.process,
                    seq.len()
                )));
            }
            seq.push(msg);
            if let Some(t) = row.order {
                log.stamp(ProcessId(row.process), msg, t);
            }
        }
        Ok(log)
    }
}

fn write_rows<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), LogError> {
    let io = |e: csv::Error| LogError::Io {
        path: path.display().to_string(),
        error: e.to_string(),
    };
    let mut w = csv::Writer::from_path(path).map_err(io)?;
    if rows.is_empty() {
        // Still write the header so an empty log is a valid log.
        w.flush().map_err(|e| LogError::Io {
            path: path.display().to_string(),
            error: e.to_string(),
        })?;
    }
    for r in rows {
        w.serialize(r).map_err(io)?;
    }
    w.flush().map_err(|e| LogError::Io {
        path: path.display().to_string(),
        error: e.to_string(),
    })
}

/// The longest line a log file may have: its rows are a few numbers and a destination list
/// (thousands of groups fit many times over).
const MAX_LINE: usize = 1 << 20;

/// A reader that fails on a line longer than [`MAX_LINE`], so a file that is not a log (a
/// device, a binary) is refused instead of read into memory as one endless row.
struct LineCapped<R> {
    inner: R,
    since_newline: usize,
}

impl<R: std::io::Read> std::io::Read for LineCapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            self.since_newline = if b == b'\n' {
                0
            } else {
                self.since_newline + 1
            };
            if self.since_newline > MAX_LINE {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("a line longer than {MAX_LINE} bytes: not a delivery log"),
                ));
            }
        }
        Ok(n)
    }
}

fn read_rows<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<(u64, T)>, LogError> {
    let file = std::fs::File::open(path).map_err(|e| LogError::Io {
        path: path.display().to_string(),
        error: e.to_string(),
    })?;
    let mut r = csv::Reader::from_reader(LineCapped {
        inner: std::io::BufReader::new(file),
        since_newline: 0,
    });
    // Read the header here: a failure while `deserialize` reads it ends the rows silently.
    r.headers().map_err(|e| LogError::Row {
        path: path.display().to_string(),
        line: 1,
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for row in r.deserialize::<T>() {
        let row = row.map_err(|e| LogError::Row {
            path: path.display().to_string(),
            line: e.position().map_or(0, |p| p.line()),
            message: e.to_string(),
        })?;
        out.push((out.len() as u64 + 2, row));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with an endless line (`/dev/zero`, a binary) is refused, not read into memory.
    #[test]
    fn a_line_longer_than_any_log_row_is_refused() {
        let dir = std::env::temp_dir().join(format!("log-line-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("deliveries.csv");
        let endless = || std::iter::repeat_n(b'0', MAX_LINE + 1);
        // In a row, and in the header (where a failure once ended the rows silently).
        let mut row = b"process,group\n".to_vec();
        row.extend(endless());
        for text in [row, endless().collect()] {
            std::fs::write(&path, &text).unwrap();
            let e = read_rows::<ProcessRow>(&path).err().map(|e| e.to_string());
            let e = e.expect("refused");
            assert!(e.contains("a line longer than 1048576 bytes"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn csv_round_trip_keeps_everything() {
        let mut log = DeliveryLog::default();
        log.add_process(ProcessId(0), Member::Group(GroupId(0)), true);
        log.add_process(ProcessId(1), Member::Group(GroupId(1)), false);
        log.add_process(ProcessId(9), Member::Client, true);
        log.add_process(ProcessId(10), Member::Auxiliary, false);
        let m: MsgId = "c9:1".parse().unwrap();
        log.add_multicast(Multicast {
            client: ProcessId(9),
            msg: m,
            dst: "0;1".parse().unwrap(),
            completed: true,
        });
        log.deliver(ProcessId(0), m);
        log.deliver(ProcessId(1), m);
        log.stamp(ProcessId(1), m, 42);
        let dir = std::env::temp_dir().join(format!("mlog-{}", std::process::id()));
        log.write_csv(&dir).unwrap();
        let header = std::fs::read_to_string(dir.join("deliveries.csv")).unwrap();
        assert!(
            header.starts_with("process,group,index,msg,dst,order\n")
                && header.contains("\n0,0,0,c9:1,0;1,\n1,1,0,c9:1,0;1,42\n"),
            "{header}"
        );
        assert!(std::fs::read_to_string(dir.join("processes.csv"))
            .unwrap()
            .contains("9,client,true\n10,auxiliary,false"));
        assert_eq!(DeliveryLog::read_csv(&dir).unwrap(), log);
    }

    /// A fresh directory `name` (one per test process) holding a delivery log's three files with
    /// these contents, for tests of logs that `write_csv` would not write.
    fn log_dir(
        name: &str,
        processes: &str,
        multicasts: &str,
        deliveries: &str,
    ) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in [
            ("processes.csv", processes),
            ("multicasts.csv", multicasts),
            ("deliveries.csv", deliveries),
        ] {
            std::fs::write(dir.join(file), text).unwrap();
        }
        dir
    }

    /// Logs written before the `order` column read as having no order timestamps.
    #[test]
    fn logs_without_the_order_column_still_read() {
        let dir = log_dir(
            "mlog-old",
            "process,group,correct\n0,0,true\n9,client,true\n",
            "client,msg,dst,completed\n9,c9:1,0,true\n",
            "process,group,index,msg,dst\n0,0,0,c9:1,0\n",
        );
        let log = DeliveryLog::read_csv(&dir).unwrap();
        assert_eq!(log.deliveries[&ProcessId(0)], vec!["c9:1".parse().unwrap()]);
        assert!(log.orders.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn malformed_rows_name_file_and_line() {
        let dir = log_dir(
            "mlog-bad",
            "process,group,correct\n0,0,true\n",
            "client,msg,dst,completed\n5,c5:1,0,true\n5,x,0,true\n",
            "process,group,index,msg,dst\n",
        );
        let e = DeliveryLog::read_csv(&dir).unwrap_err().to_string();
        assert!(
            e.contains("multicasts.csv, line 3") && e.contains("not a message id"),
            "{e}"
        );
    }
}
