//! The only place that writes to the terminal.

use std::io::Write;

/// Writes command output to stdout and diagnostics to stderr.
#[derive(Debug, Default)]
pub struct Printer {
    _private: (),
}

impl Printer {
    /// A printer on this process's stdout and stderr.
    pub fn new() -> Self {
        Self::default()
    }

    /// Write `text` to stdout as is.
    pub fn out(&mut self, text: &str) -> std::io::Result<()> {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }

    /// Write `text` to stderr as is.
    pub fn err(&mut self, text: &str) -> std::io::Result<()> {
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(text.as_bytes())?;
        stderr.flush()
    }
}
