//! The progress bar of long commands (sweeps, benchmarks).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps with elapsed time and a message.
pub fn bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} {msg}")
            .expect("valid template"),
    );
    bar
}
