//! Progress reporting for long work on nodes. The library says what it is doing;
//! the binary decides how to show it (a spinner on a terminal, nothing otherwise).

/// Receives progress of work on nodes.
pub trait Reporter: Send + Sync {
    /// A step started, e.g. `node0: toolkit — no toolkit in /usr/local/cuda-13.0`.
    fn step(&self, message: &str);
    /// The current work is over.
    fn done(&self);
}

/// Shows nothing (not a terminal, or `--format json`).
#[derive(Debug, Default)]
pub struct QuietReporter;

impl Reporter for QuietReporter {
    fn step(&self, _message: &str) {}
    fn done(&self) {}
}
