//! The `upgrade` binary: parse arguments, run a verb, render errors, exit.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::FromArgMatches;
use cuda_upgrade::cli::{
    self, ApplyFormat, Cli, ColorChoice, Command, DiffFormat, FactsFormat, IndexCommand,
    IndexFormat, LockFormat, PlanFormat, ValidateFormat,
};
use cuda_upgrade::commands::{self, CommandError, ExitStatus};
use cuda_upgrade::exec::Reporter;
use cuda_upgrade::printer::{Printer, Verbosity};
use cuda_upgrade::{report, settings};

fn main() -> ExitCode {
    // `--version` names the embedded snapshot and rules (`-V` stays short).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let parsed = cli::command_for(args.get(1..).unwrap_or_default())
        .long_version(commands::long_version())
        .try_get_matches_from(&args)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(error) => {
            let status = if error.use_stderr() {
                ExitStatus::InvalidInput
            } else {
                ExitStatus::Success
            };
            // clap renders help, version and usage errors itself.
            let _ = error.print();
            // A usage error of a command line that asked for JSON is JSON on stdout too.
            let args: Vec<String> = std::env::args().collect();
            let asked_json = args
                .windows(2)
                .any(|pair| pair[0] == "--format" && pair[1] == "json")
                || args.iter().any(|arg| arg == "--format=json");
            if error.use_stderr() && asked_json {
                let value = serde_json::json!({
                    "ok": false,
                    "exit": status.code(),
                    "error": error
                        .to_string()
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .trim_start_matches("error: "),
                });
                let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
                text.push('\n');
                let _ = Printer::new().out(&text);
            }
            return status.into();
        }
    };
    let verbosity = match (cli.quiet, cli.verbose) {
        (true, _) => Verbosity::Quiet,
        (false, true) => Verbosity::Verbose,
        (false, false) => Verbosity::Normal,
    };
    let terminal = std::io::stderr().is_terminal();
    let color = match cli.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => settings::auto_color(terminal),
    };
    let printer = if terminal && verbosity != Verbosity::Quiet {
        Printer::with_reporter(Box::new(Spinner::new()))
    } else {
        Printer::new()
    };
    let mut printer = printer.configured(verbosity, color);
    // `plan --detailed-exitcode` keeps 2 for "changes": every error exits 1.
    let detailed = match &cli.command {
        Command::Plan(args) => args.detailed_exitcode,
        Command::Status(args) => args.detailed_exitcode,
        _ => false,
    };
    // Every verb asked for `--format json` prints an object on stdout even on failure.
    let json = wants_json(&cli.command);
    match commands::run(cli, &mut printer) {
        Ok(status) => status.into(),
        Err(error) => {
            let error = error.verbose(printer.verbose());
            let _ = printer.error(&report::error_chain(&error));
            if let Some(hint) = error.hint() {
                let _ = printer.problems(&format!("hint: {hint}\n"));
            }
            let status = if detailed {
                ExitStatus::Failure
            } else {
                error.exit_status()
            };
            if json {
                let _ = printer.out(&error_json(&error, status));
            }
            status.into()
        }
    }
}

/// Whether the verb was asked for `--format json`.
fn wants_json(command: &Command) -> bool {
    match command {
        Command::Plan(args) => args.format == PlanFormat::Json,
        Command::Apply(args) => args.format == ApplyFormat::Json,
        Command::Status(args) => args.format == ApplyFormat::Json,
        Command::Verify(args) => args.format == ApplyFormat::Json,
        Command::Rollback(args) => args.format == ApplyFormat::Json,
        Command::AbiCheck(args) => args.format == ApplyFormat::Json,
        Command::Probe(args) => args.format == FactsFormat::Json,
        Command::Lock(args) => args.format == LockFormat::Json,
        Command::Validate(args) => args.format == ValidateFormat::Json,
        Command::Diff(args) => args.format == DiffFormat::Json,
        Command::Index(IndexCommand::Snapshot(args)) => args.format == IndexFormat::Json,
        Command::Index(IndexCommand::Hash(args)) => args.format == IndexFormat::Json,
        Command::Index(IndexCommand::DefaultUrl(args)) => args.format == IndexFormat::Json,
        Command::Init(_)
        | Command::Export(_)
        | Command::Completion(_)
        | Command::Schema
        | Command::Man => false,
    }
}

/// The JSON a verb asked for `--format json` prints on stdout when it fails, so that a
/// machine reading stdout always gets an object: `{"ok": false, "exit": 3, "error": "…",
/// "resolved": false, "report": {…}}` (`resolved` and `report` when the manifest cannot
/// be resolved).
fn error_json(error: &CommandError, exit: ExitStatus) -> String {
    let mut value = serde_json::json!({
        "ok": false,
        "exit": exit.code(),
        "error": report::error_chain(error),
    });
    if let (CommandError::Unresolvable { report, .. }, Some(object)) =
        (error, value.as_object_mut())
    {
        object.insert("resolved".to_string(), serde_json::Value::Bool(false));
        object.insert(
            "report".to_string(),
            serde_json::to_value(report).unwrap_or_default(),
        );
    }
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// Progress on a terminal: a spinner with the current step.
struct Spinner {
    bar: indicatif::ProgressBar,
}

impl Spinner {
    fn new() -> Self {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.enable_steady_tick(Duration::from_millis(120));
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        Self { bar }
    }
}

impl Reporter for Spinner {
    fn step(&self, message: &str) {
        self.bar
            .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        self.bar.set_message(message.to_string());
    }

    fn done(&self) {
        self.bar
            .set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
}
