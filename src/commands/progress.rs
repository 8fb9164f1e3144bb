//! Progress of long runs (`bench`, `compare --run`, `study`) on standard error: a bar when
//! standard error is a terminal, nothing at all when it is piped or redirected, so that logs
//! and scripts see only the results and the notes.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A count of jobs done, drawn on a terminal.
pub struct Progress(ProgressBar);

impl Progress {
    /// A bar for `jobs` jobs, drawn only when standard error is a terminal.
    pub fn new(jobs: u64) -> Progress {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(jobs), target);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed_precise} (eta {eta}) {msg}")
        {
            bar.set_style(style);
        }
        Progress(bar)
    }

    /// Says which job runs now.
    pub fn start(&self, job: String) {
        self.0.set_message(job);
    }

    /// Counts a job as done.
    pub fn done(&self) {
        self.0.inc(1);
    }

    /// Prints a line on standard error above the bar.
    pub fn note(&self, line: &str) {
        self.0.suspend(|| eprintln!("{line}"));
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
