//! The only place that writes to the terminal: command output on stdout, diagnostics
//! and progress on stderr. How progress looks is the binary's choice (a
//! [`Reporter`]); the library only says what it is doing.

use std::io::Write;

use crate::exec::{QuietReporter, Reporter};

/// Writes command output to stdout and diagnostics to stderr.
pub struct Printer {
    reporter: Box<dyn Reporter>,
}

impl Default for Printer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Printer")
    }
}

impl Printer {
    /// A printer on this process's stdout and stderr, without progress.
    pub fn new() -> Self {
        Self {
            reporter: Box::new(QuietReporter),
        }
    }

    /// A printer that reports progress through `reporter`.
    pub fn with_reporter(reporter: Box<dyn Reporter>) -> Self {
        Self { reporter }
    }

    /// Write `text` to stdout as is.
    pub fn out(&mut self, text: &str) -> std::io::Result<()> {
        self.reporter.done();
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }

    /// Write `text` to the file `path` (replaced whole: a temporary file beside it, then
    /// renamed), or to stdout when `path` is `None` (`-o FILE` of the verbs).
    pub fn out_to(&mut self, path: Option<&std::path::Path>, text: &str) -> std::io::Result<()> {
        let Some(path) = path else {
            return self.out(text);
        };
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(".tmp");
        fs_err::write(&temporary, text)?;
        fs_err::rename(&temporary, path)
    }

    /// Write `text` to stderr as is.
    pub fn err(&mut self, text: &str) -> std::io::Result<()> {
        self.reporter.done();
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(text.as_bytes())?;
        stderr.flush()
    }

    /// Show what is being done now, e.g. `node0: toolkit — …`.
    pub fn progress(&mut self, message: &str) {
        self.reporter.step(message);
    }

    /// The progress reporter, for library calls that say what they are doing.
    pub fn reporter(&self) -> &dyn Reporter {
        self.reporter.as_ref()
    }

    /// The current work is over.
    pub fn progress_done(&mut self) {
        self.reporter.done();
    }
}
