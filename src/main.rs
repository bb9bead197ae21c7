//! The `upgrade` binary: parse arguments, run a verb, render errors, exit.

use std::process::ExitCode;

use clap::Parser;
use cuda_upgrade::cli::Cli;
use cuda_upgrade::commands::{self, ExitStatus};
use cuda_upgrade::printer::Printer;
use cuda_upgrade::report;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let status = if error.use_stderr() {
                ExitStatus::InvalidInput
            } else {
                ExitStatus::Success
            };
            // clap renders help, version and usage errors itself.
            let _ = error.print();
            return status.into();
        }
    };
    let mut printer = Printer::new();
    match commands::run(cli, &mut printer) {
        Ok(status) => status.into(),
        Err(error) => {
            let _ = printer.err(&format!("error: {}\n", report::error_chain(&error)));
            error.exit_status().into()
        }
    }
}
