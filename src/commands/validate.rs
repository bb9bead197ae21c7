//! `upgrade validate MANIFEST...`: load each manifest and report every located problem.

use crate::cli::{ValidateArgs, ValidateFormat};
use crate::commands::{CommandError, ExitStatus};
use crate::manifest::{self, ManifestError};
use crate::printer::Printer;
use crate::report;

/// Validate every manifest named; exit 2 if any is invalid.
pub fn run(args: &ValidateArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let mut results = Vec::new();
    for path in &args.manifests {
        let outcome = match manifest::validate_file(path) {
            Ok(_) => report::validate::Outcome::Valid,
            Err(ManifestError::Invalid { diagnostics, .. }) => {
                report::validate::Outcome::Invalid(diagnostics)
            }
            Err(error) => report::validate::Outcome::Unreadable(report::error_chain(&error)),
        };
        results.push((path.display().to_string(), outcome));
    }
    let all_valid = results
        .iter()
        .all(|(_, outcome)| matches!(outcome, report::validate::Outcome::Valid));
    match args.format {
        ValidateFormat::Text => {
            let (out, err) = report::validate::text(&results);
            printer.out(&out).map_err(CommandError::Output)?;
            printer.problems(&err).map_err(CommandError::Output)?;
        }
        ValidateFormat::Json => printer
            .out(&report::validate::json(&results))
            .map_err(CommandError::Output)?,
    }
    Ok(if all_valid {
        ExitStatus::Success
    } else {
        ExitStatus::InvalidInput
    })
}
