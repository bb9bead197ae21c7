//! `upgrade validate MANIFEST... [--rules DIR]`: load each manifest and report every
//! located problem, checking its values against the rule tables (embedded, the
//! manifest's `rules:` directory, then `--rules DIR`).

use crate::cli::{ValidateArgs, ValidateFormat};
use crate::commands::{CommandError, ExitStatus};
use crate::manifest::{self, ManifestError};
use crate::printer::Printer;
use crate::report;
use crate::rules::RuleSet;

/// Validate every manifest named; exit 2 if any is invalid.
pub fn run(args: &ValidateArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    // `--rules DIR` is one for every manifest: a directory that does not load is an
    // error of the command, not of each file.
    if let Some(dir) = &args.rules {
        RuleSet::load(Some(dir.as_path()))?;
    }
    let mut results = Vec::new();
    for path in &args.manifests {
        let outcome = match manifest::validate_file(path, args.rules.as_deref()) {
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
