//! `upgrade lock MANIFEST`: resolve a manifest for a node, offline by default.
//!
//! The universe is the snapshot embedded in the binary unless `--snapshot` names
//! another, with the digests recorded beside the manifest (`NAME.hashes.json`, written
//! by `upgrade index hash`) laid over it; the node is the manifest's `target` and `toolkit` unless `--facts` names a
//! facts file; each `--find-links DIR` adds an open index of local files after the manifest's.
//! With `--live` the universe is what resolving against the manifest's indexes visits
//! (`converge::live_lock`), and a line on stderr says what was fetched.
//! Prints or writes the lock (with the manifest's sha256, which `plan --lock` and
//! `apply --lock` check); exits 3 with the conflict report when the
//! manifest cannot be resolved (short; `--verbose` prints all of it).
//!
//! `--check [--lock FILE]` resolves the same way and compares with the lock file
//! (`NAME.lock.json` beside the manifest by default): exit 0 when it matches, 4 when
//! the manifest or the indexes no longer give it, each difference printed.

use std::path::PathBuf;

use crate::cli::{LockArgs, LockFormat};
use crate::commands::{CommandError, ExitStatus};
use crate::converge::{self, ConvergeError};
use crate::index::find_links::read_find_links;
use crate::manifest;
use crate::printer::Printer;
use crate::resolve::{IndexPolicy, Lock, Request, ResolveError, TargetEnvironment};
use crate::rules::RuleSet;
use crate::text::text_value;

/// Run `upgrade lock`.
pub fn run(args: &LockArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    // Read before resolving: a missing or unreadable lock is an error, not a difference.
    let locked = match args.check {
        true => Some(converge::read_lock(&lock_path(args))?),
        false => None,
    };
    let prepared = converge::load(&args.manifest)?;
    let manifest = &prepared.manifest;
    let file = args.manifest.display().to_string();
    let environment = super::node::environment(manifest, args.facts.as_deref())?;
    let rules = RuleSet::load(manifest.rules.as_deref())?;
    let resolved = match super::live_options(&args.live)? {
        Some(options) => {
            match converge::live_lock(&args.manifest, manifest, &environment, &rules, &options) {
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
        None => resolve_offline(args, manifest, &file, &environment, &rules, printer)?,
    };
    let mut lock = match resolved {
        Ok(lock) => lock,
        // With `--format json`, `main` prints `{"ok": false, "resolved": false, "report": …}`.
        Err(ResolveError::Unresolvable { manifest, report }) => {
            return Err(CommandError::Unresolvable {
                manifest,
                report,
                verbose: printer.verbose(),
            });
        }
        Err(other) => return Err(other.into()),
    };
    lock.manifest_sha256 = Some(prepared.sha256.clone());
    if let Some(locked) = locked {
        return check(args, &locked, &lock, printer);
    }
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

/// The lock file `--check` compares: `--lock`, else `NAME.lock.json` beside the manifest.
fn lock_path(args: &LockArgs) -> PathBuf {
    args.lock
        .clone()
        .unwrap_or_else(|| crate::resolve::lock_path_beside(&args.manifest))
}

/// `--check`: print what differs between the lock file and `now`; exit 4 when anything does.
fn check(
    args: &LockArgs,
    locked: &Lock,
    now: &Lock,
    printer: &mut Printer,
) -> Result<ExitStatus, CommandError> {
    let path = lock_path(args);
    let differences = locked.differences(now);
    let text = match args.format {
        LockFormat::Json => {
            let document = serde_json::json!({
                "lock": path,
                "manifest": args.manifest,
                "matches": differences.is_empty(),
                "differences": differences,
            });
            let mut text = serde_json::to_string_pretty(&document)
                .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            text
        }
        LockFormat::Text if differences.is_empty() => format!(
            "{}: matches `{}` ({} packages)\n",
            text_value(&path.display().to_string()),
            text_value(&args.manifest.display().to_string()),
            now.packages.len()
        ),
        LockFormat::Text => {
            let mut text = format!(
                "{}: out of date with `{}`: {} difference{}\n",
                text_value(&path.display().to_string()),
                text_value(&args.manifest.display().to_string()),
                differences.len(),
                if differences.len() == 1 { "" } else { "s" }
            );
            for difference in &differences {
                text.push_str(&format!("  {}\n", text_value(&difference.to_string())));
            }
            text.push_str(&format!(
                "refresh it: upgrade lock {} --format json -o {} (with the same `--facts`, `--snapshot` or `--live`)\n",
                crate::shell::quote(&args.manifest.display().to_string()),
                crate::shell::quote(&path.display().to_string())
            ));
            text
        }
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(if differences.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::LockOutdated
    })
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
