//! What the harness's command-line tests share: running the binary and reading what it said.
//! Each test crate uses what it needs; the rest is unused there.
#![allow(dead_code, reason = "each test crate uses some of the helpers")]

use std::process::{Command, Output};

/// A scratch directory of this test process (named after it, so parallel test runs do not
/// meet), removed when the test ends, passed or failed.
pub(crate) struct Scratch(std::path::PathBuf);

pub(crate) fn scratch(name: &str) -> Scratch {
    Scratch(std::env::temp_dir().join(format!("{name}-{}", std::process::id())))
}

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .expect("run harness")
}

/// A command line's words, as a shell would split one without quotes.
pub(crate) fn args(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs `line`'s words, then `more` (paths and other values not written out).
pub(crate) fn harness_with(line: &str, more: &[&str]) -> Output {
    let mut all = args(line);
    all.extend_from_slice(more);
    harness(&all)
}

/// Runs `line`'s words and then `path`, the value of the line's last flag (`--out`, `--log`).
pub(crate) fn harness_into(line: &str, path: &std::path::Path) -> Output {
    harness_with(line, &[path.to_str().expect("a UTF-8 path")])
}

/// Runs `line`'s words and then a fresh scratch directory named after `name` (the value of
/// the line's last flag, `--out` or `--log`), and asserts the command succeeded. Returns the
/// directory, for the test to read what the run wrote there, and what the command said.
pub(crate) fn succeeds_into(name: &str, line: &str) -> (Scratch, Output) {
    let dir = scratch(name);
    let o = harness_into(line, &dir);
    succeeded(&o);
    (dir, o)
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `args` and asserts the command is refused, its error saying `says`; returns what it
/// said, for a test that wants more of it.
pub(crate) fn refused(args: &[&str], says: &str) -> Output {
    let o = harness(args);
    assert!(!o.status.success(), "{args:?} was accepted");
    assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    o
}

/// Runs each command line of `cases` (its words as [`args`] splits them) and asserts it is
/// refused, its error saying the text paired with it.
pub(crate) fn each_refused(cases: &[(&str, &str)]) {
    for &(line, says) in cases {
        refused(&args(line), says);
    }
}

/// Asserts the command succeeded, printing all it said if not.
pub(crate) fn succeeded(o: &Output) {
    assert!(o.status.success(), "{}{}", stdout(o), stderr(o));
}

/// Asserts the command succeeded and its standard output says each of `what`.
pub(crate) fn succeeded_printing(o: &Output, what: &[&str]) {
    succeeded(o);
    for w in what {
        prints(o, w);
    }
}

/// Runs `harness verify` on the delivery log in `log` and asserts that the log holds: the
/// command succeeds and reports no violation.
pub(crate) fn verifies(log: &std::path::Path) {
    let o = harness(&["verify", "--log", log.to_str().unwrap()]);
    succeeded(&o);
    prints(&o, "0 violations");
}

/// Asserts the command's standard error says `what` (printing all of it if not).
pub(crate) fn says(o: &Output, what: &str) {
    assert!(stderr(o).contains(what), "{}", stderr(o));
}

/// Asserts the command's standard output says `what` (printing all of it if not).
pub(crate) fn prints(o: &Output, what: &str) {
    assert!(stdout(o).contains(what), "{}", stdout(o));
}

/// Asserts the command's standard output does not say `what` (printing all of it if it does).
pub(crate) fn never_prints(o: &Output, what: &str) {
    assert!(!stdout(o).contains(what), "{}", stdout(o));
}
