//! `upgrade diff OLD NEW`: the semantic diff of two manifests.

use crate::cli::{DiffArgs, DiffFormat};
use crate::commands::{CommandError, ExitStatus};
use crate::manifest::{self, ManifestSource};
use crate::printer::Printer;
use crate::report;
use crate::rules::DriverTable;

/// Print the diff; with `--exit-code`, exit 1 when the manifests differ.
pub fn run(args: &DiffArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let old = manifest::load(&ManifestSource::parse(&args.old))?;
    let new = manifest::load(&ManifestSource::parse(&args.new))?;
    let drivers = DriverTable::embedded()?;
    let diff = manifest::diff(&old, &new, &args.old, &args.new, &drivers);
    let text = match args.format {
        DiffFormat::Text => report::diff::text(&diff),
        DiffFormat::Markdown => report::diff::markdown(&diff),
        DiffFormat::Json => report::diff::json(&diff),
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(if args.exit_code && !diff.is_empty() {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
