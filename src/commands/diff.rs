//! `upgrade diff OLD NEW`: the semantic diff of two manifests.

use crate::cli::{DiffArgs, DiffFormat};
use crate::commands::{CommandError, ExitStatus};
use crate::converge;
use crate::index::Snapshot;
use crate::manifest::{self, Manifest, ManifestSource};
use crate::printer::Printer;
use crate::report;
use crate::resolve::{self, TargetEnvironment};
use crate::rules::{DriverTable, RuleSet};

/// Print the diff; with `--exit-code`, exit 1 when the manifests differ.
pub fn run(args: &DiffArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let old = manifest::load(&ManifestSource::parse(&args.old))?;
    let new = manifest::load(&ManifestSource::parse(&args.new))?;
    let drivers = DriverTable::embedded()?;
    let mut diff = manifest::diff(&old, &new, &args.old, &args.new, &drivers);
    if !diff.is_empty() {
        // Resolve each side offline on the embedded snapshot, for its own target; a
        // side that cannot be resolved is shown as a hazard, never an error.
        let rules = RuleSet::embedded()?;
        let snapshot = Snapshot::embedded()?;
        let outcome = |manifest: &Manifest, name: &str| {
            TargetEnvironment::from_manifest(manifest).and_then(|environment| {
                converge::resolve_lock(manifest, name, &environment, &snapshot.universe, &rules)
            })
        };
        let old_outcome = outcome(&old, &args.old);
        let new_outcome = outcome(&new, &args.new);
        diff.entries.extend(resolve::resolution_entries(
            &old,
            &new,
            &old_outcome,
            &new_outcome,
            &rules,
        ));
    }
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
