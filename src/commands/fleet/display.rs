//! A fleet run's progress: on a terminal one line a node, redrawn (and a line as each
//! batch starts); otherwise plain lines on stderr. Every line also goes to the node's
//! log in the run directory.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::commands::CommandError;
use crate::fleet::{FleetNode, FleetProgress};
use crate::report::{self, text_value};
use crate::text::terminal_text;

/// A fleet's progress on stderr and in per-node logs.
pub struct FleetDisplay {
    started: Instant,
    dir: PathBuf,
    /// On a terminal: one line a node, redrawn.
    bars: Option<(
        indicatif::MultiProgress,
        Mutex<HashMap<String, indicatif::ProgressBar>>,
    )>,
    logs: Mutex<HashMap<String, fs_err::File>>,
    /// `-q`: the logs only.
    quiet: bool,
}

impl FleetDisplay {
    /// Progress of a run logging into `dir`; `terminal`: redrawn lines; `quiet` (`-q`):
    /// nothing on stderr, the logs only.
    pub fn new(dir: &Path, terminal: bool, quiet: bool) -> Result<Self, CommandError> {
        fs_err::create_dir_all(dir).map_err(CommandError::Output)?;
        Ok(Self {
            started: Instant::now(),
            dir: dir.to_path_buf(),
            bars: (terminal && !quiet)
                .then(|| (indicatif::MultiProgress::new(), Mutex::new(HashMap::new()))),
            logs: Mutex::new(HashMap::new()),
            quiet,
        })
    }

    /// Append a line to `host`'s log (`DIR/HOST.log`); a log that cannot be written is
    /// skipped (the summary still says how the node ended).
    fn log(&self, host: &str, line: &str) {
        let Ok(mut logs) = self.logs.lock() else {
            return;
        };
        if !logs.contains_key(host) {
            let path = self.dir.join(format!("{host}.log"));
            if let Ok(file) = fs_err::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                logs.insert(host.to_string(), file);
            }
        }
        if let Some(file) = logs.get_mut(host) {
            let _ = writeln!(
                file,
                "[{:>7.1}s] {line}",
                self.started.elapsed().as_secs_f64()
            );
        }
    }

    fn bar(&self, host: &str) -> Option<indicatif::ProgressBar> {
        let (multi, bars) = self.bars.as_ref()?;
        let mut bars = bars.lock().ok()?;
        Some(
            bars.entry(host.to_string())
                .or_insert_with(|| {
                    let bar = multi.add(indicatif::ProgressBar::new_spinner());
                    if let Ok(style) = indicatif::ProgressStyle::with_template(
                        "{spinner} {prefix} {elapsed:>4} {wide_msg}",
                    ) {
                        bar.set_style(style);
                    }
                    bar.set_prefix(text_value(host));
                    bar.enable_steady_tick(Duration::from_millis(200));
                    bar
                })
                .clone(),
        )
    }

    /// Run `ask` (a question on the terminal) with the redrawn lines out of its way.
    pub fn suspend<T>(&self, ask: impl FnOnce() -> T) -> T {
        match &self.bars {
            Some((multi, _)) => multi.suspend(ask),
            None => ask(),
        }
    }

    /// Clear the redrawn lines.
    pub fn close(&self) {
        if let Some((multi, _)) = &self.bars {
            let _ = multi.clear();
        }
    }
}

impl FleetProgress for FleetDisplay {
    fn step(&self, host: &str, what: &str) {
        self.log(host, what);
        match self.bar(host) {
            Some(bar) => bar.set_message(text_value(what)),
            None if self.quiet => {}
            None => eprintln!(
                "[{:>7.1}s] {}: {}",
                self.started.elapsed().as_secs_f64(),
                text_value(host),
                text_value(what)
            ),
        }
    }

    fn batch(&self, batch: usize, of: usize, hosts: &[&str]) {
        let line = terminal_text(&report::fleet::batch_line(batch, of, hosts)).into_owned();
        match &self.bars {
            Some((multi, _)) => {
                let _ = multi.println(&line);
            }
            None if self.quiet => {}
            None => eprintln!("[{:>7.1}s] {line}", self.started.elapsed().as_secs_f64()),
        }
    }

    fn finished(&self, node: &FleetNode) {
        let line = terminal_text(&report::fleet::node_line(node)).into_owned();
        self.log(&node.host, &line);
        for step in &node.steps {
            self.log(
                &node.host,
                &format!(
                    "  {} {}: {}",
                    step.outcome,
                    step.kind,
                    text_value(&step.reason)
                ),
            );
        }
        if let Some(detail) = &node.detail {
            for detail_line in detail.lines() {
                self.log(&node.host, &format!("  | {}", text_value(detail_line)));
            }
        }
        match self.bar(&node.host) {
            Some(bar) => bar.finish_with_message(line),
            None if self.quiet => {}
            None => eprintln!(
                "[{:>7.1}s] {}: {line}",
                self.started.elapsed().as_secs_f64(),
                text_value(&node.host)
            ),
        }
    }
}
