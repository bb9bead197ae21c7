//! The only place that writes to the terminal: command output on stdout, diagnostics
//! and progress on stderr. How progress looks is the binary's choice (a
//! [`Reporter`]); the library only says what it is doing.
//!
//! The global flags mean the same for every verb here: `-q` keeps only errors and the
//! result (no progress, nothing from [`Printer::err`]), `-v` asks verbs for every detail
//! ([`Printer::verbose`]), and `--color` decides whether [`Printer::error`] styles its
//! `error:` (clap styles help and usage errors by the same choice).

use std::io::{IsTerminal, Write};

use crate::exec::{QuietReporter, Reporter};
use crate::text::terminal_text;

/// Writes command output to stdout and diagnostics to stderr.
pub struct Printer {
    reporter: Box<dyn Reporter>,
    verbosity: Verbosity,
    color: bool,
}

/// How much a verb says (`-q`, `-v`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Verbosity {
    /// `-q`: errors and the result only.
    Quiet,
    /// The default.
    #[default]
    Normal,
    /// `-v`: every detail.
    Verbose,
}

/// Red and bold, then back to normal (SGR).
const ERROR_STYLE: (&str, &str) = ("\u{1b}[1;31m", "\u{1b}[0m");

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
        Self::with_reporter(Box::new(QuietReporter))
    }

    /// A printer that reports progress through `reporter`.
    pub fn with_reporter(reporter: Box<dyn Reporter>) -> Self {
        Self {
            reporter,
            verbosity: Verbosity::Normal,
            color: false,
        }
    }

    /// This printer saying as much as `verbosity` asks, styling errors when `color`.
    pub fn configured(self, verbosity: Verbosity, color: bool) -> Self {
        Self {
            verbosity,
            color,
            ..self
        }
    }

    /// `true` with `-v`: verbs print every detail (e.g. every package of a plan).
    pub fn verbose(&self) -> bool {
        self.verbosity == Verbosity::Verbose
    }

    /// `true` with `-q`: no progress and no notes.
    pub fn quiet(&self) -> bool {
        self.verbosity == Verbosity::Quiet
    }

    /// Write `error: MESSAGE` to stderr, `error:` in bold red with colour.
    pub fn error(&mut self, message: &str) -> std::io::Result<()> {
        let (start, end) = if self.color { ERROR_STYLE } else { ("", "") };
        self.stderr(&format!("{start}error:{end} {}\n", terminal_text(message)))
    }

    /// Write `text` to stdout: as is into a pipe or a file, and, on a terminal, with
    /// every character that could drive the terminal escaped ([`terminal_text`]).
    pub fn out(&mut self, text: &str) -> std::io::Result<()> {
        self.reporter.done();
        let mut stdout = std::io::stdout().lock();
        if stdout.is_terminal() {
            stdout.write_all(terminal_text(text).as_bytes())?;
        } else {
            stdout.write_all(text.as_bytes())?;
        }
        stdout.flush()
    }

    /// Write `text` to the file `path` (replaced whole: a temporary file beside it, then
    /// renamed), or to stdout when `path` is `None` (`-o FILE` of the verbs).
    pub fn out_to(&mut self, path: Option<&std::path::Path>, text: &str) -> std::io::Result<()> {
        let Some(path) = path else {
            return self.out(text);
        };
        crate::local_file::write_atomic(path, text.as_bytes())
    }

    /// Write a note or a progress line to stderr, e.g. `wrote lock.json`; nothing
    /// with `-q`.
    pub fn err(&mut self, text: &str) -> std::io::Result<()> {
        if self.quiet() {
            return Ok(());
        }
        self.problems(text)
    }

    /// Write what is wrong to stderr (escaped for a terminal), e.g. `validate`'s located errors; also with
    /// `-q`.
    pub fn problems(&mut self, text: &str) -> std::io::Result<()> {
        self.stderr(&terminal_text(text))
    }

    /// Write text already made safe for a terminal to stderr.
    fn stderr(&mut self, text: &str) -> std::io::Result<()> {
        self.reporter.done();
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(text.as_bytes())?;
        stderr.flush()
    }

    /// Show what is being done now, e.g. `node0: toolkit — …`.
    pub fn progress(&mut self, message: &str) {
        self.reporter.step(&terminal_text(message));
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
