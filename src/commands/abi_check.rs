//! `upgrade abi-check (--local | --host H | DIR)`: the ABI check of an environment's
//! native extensions (see [`crate::abi`]). Exit 0 when nothing is missing, 1 with the
//! report when something is, 2 when the directory is not an environment.

use std::time::Instant;

use crate::abi::{self, Report};
use crate::cli::{AbiCheckArgs, ApplyFormat};
use crate::commands::{CommandError, ExitStatus, node, runtime};
use crate::exec;
use crate::printer::Printer;

/// Read the environment, check it, print the report.
pub fn run(args: &AbiCheckArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let (name, report) = match &args.directory {
        Some(directory) => {
            let started = Instant::now();
            let environment = abi::tree::directory(directory)?;
            let outcome = abi::check(&environment);
            let report = Report::new(&environment, &outcome, started.elapsed().as_secs_f64());
            (directory.display().to_string(), report)
        }
        None => {
            let selection = node::selection(&args.node, &args.ssh);
            runtime()?.block_on(async {
                let transport = exec::connect(&selection).await?;
                let (report, _) = abi::node::report(&transport, &args.python).await?;
                Ok::<_, CommandError>((transport.name().to_string(), report))
            })?
        }
    };
    let text = match args.format {
        ApplyFormat::Text => report.text(&name),
        ApplyFormat::Json => report
            .json()
            .map_err(|error| CommandError::Output(error.into()))?,
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(if report.ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
