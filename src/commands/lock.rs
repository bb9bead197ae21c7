//! `upgrade lock MANIFEST`: resolve a manifest for a node, offline by default.
//!
//! The universe is the snapshot embedded in the binary unless `--snapshot` names
//! another, with the digests recorded beside the manifest (`NAME.hashes.json`, written
//! by `upgrade index hash`) laid over it; the node is the manifest's `target` and `toolkit` unless `--facts` names a
//! facts file; each `--find-links DIR` adds an open index of local files after the manifest's.
//! With `--live` the universe is what resolving against the manifest's indexes visits
//! (`converge::live_lock`), and a line on stderr says what was fetched.
//! Prints or writes the lock; exits 3 with the conflict report when the
//! manifest cannot be resolved (short; `--verbose` prints all of it).

use crate::cli::{LockArgs, LockFormat};
use crate::commands::{CommandError, ExitStatus};
use crate::converge::{self, ConvergeError};
use crate::index::find_links::read_find_links;
use crate::manifest;
use crate::printer::Printer;
use crate::resolve::{IndexPolicy, Lock, Request, ResolveError, TargetEnvironment};
use crate::rules::RuleSet;

/// Run `upgrade lock`.
pub fn run(args: &LockArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let manifest = manifest::load_file(&args.manifest)?;
    let file = args.manifest.display().to_string();
    let environment = super::node::environment(&manifest, args.facts.as_deref())?;
    let rules = RuleSet::embedded()?;
    let resolved = match super::live_options(&args.live)? {
        Some(options) => {
            match converge::live_lock(&args.manifest, &manifest, &environment, &rules, &options) {
                Ok((lock, resolution)) => {
                    printer
                        .err(&format!("{resolution}\n"))
                        .map_err(CommandError::Output)?;
                    Ok(lock)
                }
                Err(ConvergeError::Resolve(error)) => Err(error),
                Err(other) => return Err(other.into()),
            }
        }
        None => resolve_offline(args, &manifest, &file, &environment, &rules, printer)?,
    };
    let lock = match resolved {
        Ok(lock) => lock,
        Err(ResolveError::Unresolvable { manifest, report }) => {
            if args.format == LockFormat::Json {
                let document = serde_json::json!({ "resolved": false, "report": report });
                let mut text = serde_json::to_string_pretty(&document)
                    .map_err(|error| CommandError::Output(error.into()))?;
                text.push('\n');
                printer.out(&text).map_err(CommandError::Output)?;
            }
            return Err(CommandError::Unresolvable {
                manifest,
                report,
                verbose: printer.verbose(),
            });
        }
        Err(other) => return Err(other.into()),
    };
    let text = match args.format {
        LockFormat::Text => lock.text(),
        LockFormat::Json => {
            let mut text = serde_json::to_string_pretty(&lock)
                .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            text
        }
    };
    printer
        .out_to(args.output.as_deref(), &text)
        .map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}

/// The lock from the snapshot and the `--find-links` directories.
fn resolve_offline(
    args: &LockArgs,
    manifest: &manifest::Manifest,
    file: &str,
    environment: &TargetEnvironment,
    rules: &RuleSet,
    printer: &mut Printer,
) -> Result<Result<Lock, ResolveError>, CommandError> {
    let mut universe = converge::universe_for(&args.manifest, args.snapshot.as_deref())?;
    let mut request = Request::from_manifest(manifest, file);
    for (position, dir) in args.find_links.iter().enumerate() {
        let name = match position {
            0 => "find-links".to_string(),
            _ => format!("find-links-{}", position + 1),
        };
        let found = read_find_links(dir, &name)?;
        for note in &found.notes {
            printer
                .err(&format!("{}: {note}\n", dir.display()))
                .map_err(CommandError::Output)?;
        }
        universe.indexes.push(found.contents);
        request.indexes.push(IndexPolicy {
            name,
            explicit: false,
        });
    }
    Ok(crate::resolve::resolve(
        &request,
        &universe,
        environment,
        rules,
    ))
}
