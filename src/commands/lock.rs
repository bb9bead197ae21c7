//! `upgrade lock MANIFEST`: resolve a manifest for a node and write its lock beside it.
//!
//! The resolution is the run's ([`crate::converge::resolve_reporting`]): on
//! `--snapshot`, on the embedded snapshot when it records every package the manifest
//! names, else live against its indexes (a line on stderr says what was fetched), with
//! the digests recorded beside the manifest (`NAME.hashes.json`) laid over it; the node
//! is the manifest's `target` and `toolkit` unless `--facts` names a facts file; each
//! `--find-links DIR` adds an open index of local files after the manifest's. The lock
//! (JSON, packages sorted, the manifest's inputs recorded) goes to `NAME.lock.json`
//! beside the manifest (`--lock`, or `-o FILE`; `-o -` prints it only), and its lines
//! to stdout; exit 3 with the conflict report when the manifest cannot be resolved.
//!
//! `--locked` resolves nothing: the lock file must be there and fresh for the manifest
//! (exit 4 naming each input that changed). `--frozen` prints it as it is. `--check`
//! resolves again and compares with the lock file: exit 0 when it matches, 4 when the
//! manifest or the indexes no longer give it, each difference printed.

use std::path::Path;

use crate::cli::{LockArgs, LockFormat};
use crate::commands::{CommandError, ExitStatus};
use crate::converge::{self, ConvergeError, LockMode, Prepared, ResolvedOn};
use crate::index::find_links::read_find_links;
use crate::printer::Printer;
use crate::resolve::{IndexPolicy, Lock, Request, ResolveError, TargetEnvironment};
use crate::text::text_value;

/// Run `upgrade lock`.
pub fn run(args: &LockArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let prepared = converge::load(&args.manifest, super::resolution(&args.resolution)?)?;
    let path = prepared.lock_file.path.clone();
    // `--lock FILE` is where `lock` writes: only `--locked` and `--frozen` read it.
    let mode = match (args.resolution.locked, args.resolution.frozen) {
        (_, true) => LockMode::Frozen,
        (true, false) => LockMode::Locked,
        (false, false) => LockMode::Auto,
    };
    match (mode, &prepared.lock_file.lock) {
        // `--check` resolves and compares, whichever lock file it names.
        _ if args.check => {}
        (LockMode::Locked, Some(lock)) => return fresh(args, &prepared, lock, printer),
        (LockMode::Frozen, Some(lock)) if !args.check => {
            let text = render(lock, args.format)?;
            printer.out(&text).map_err(CommandError::Output)?;
            return Ok(ExitStatus::Success);
        }
        (LockMode::Locked | LockMode::Frozen, None) => {
            let text = format!(
                "{}: no lock file for `{}`; `{}` writes it\n",
                text_value(&path.display().to_string()),
                text_value(&args.manifest.display().to_string()),
                converge::refresh_command(&prepared)
            );
            printer.out(&text).map_err(CommandError::Output)?;
            return Ok(ExitStatus::LockOutdated);
        }
        _ => {}
    }
    // Read before resolving: a missing lock is an error, not a difference.
    let locked = match (args.check, &prepared.lock_file.lock) {
        (true, Some(lock)) => Some(lock.clone()),
        (true, None) => {
            return Err(converge::read_lock(&path).err().map_or_else(
                || CommandError::Output(std::io::Error::other("no lock file")),
                CommandError::from,
            ));
        }
        (false, _) => None,
    };
    let environment = super::node::environment(&prepared.manifest, args.facts.as_deref())?;
    let resolved = match args.find_links.is_empty() {
        true => match converge::resolve_reporting(&prepared, &environment) {
            Ok((lock, on, summary)) => {
                if let Some(summary) = summary {
                    printer
                        .err(&format!("{summary}\n"))
                        .map_err(CommandError::Output)?;
                }
                if on == ResolvedOn::Live && !printer.quiet() {
                    printer
                        .err("resolved live: the embedded snapshot does not record this manifest's packages\n")
                        .map_err(CommandError::Output)?;
                }
                Ok(lock)
            }
            Err(ConvergeError::Resolve(error)) => Err(error),
            Err(other) => return Err(other.into()),
        },
        false => with_find_links(args, &prepared, &environment, printer)?,
    };
    let lock = match resolved {
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
    if let Some(locked) = locked {
        return check(args, &path, &locked, &lock, printer);
    }
    let text = render(&lock, args.format)?;
    match args.output.as_deref() {
        Some(output) if output == Path::new("-") => {
            printer.out(&text).map_err(CommandError::Output)?;
        }
        Some(output) => printer
            .out_to(Some(output), &text)
            .map_err(CommandError::Output)?,
        None => {
            let json = render(&lock, LockFormat::Json)?;
            crate::local_file::write_atomic(&path, json.as_bytes())
                .map_err(CommandError::Output)?;
            printer.out(&text).map_err(CommandError::Output)?;
            printer
                .err(&format!(
                    "wrote {} ({} packages)\n",
                    text_value(&path.display().to_string()),
                    lock.packages.len()
                ))
                .map_err(CommandError::Output)?;
        }
    }
    Ok(ExitStatus::Success)
}

/// The lock as `format` prints it; JSON is what the lock file holds.
fn render(lock: &Lock, format: LockFormat) -> Result<String, CommandError> {
    Ok(match format {
        LockFormat::Text => lock.text(),
        LockFormat::Json => {
            let mut text = serde_json::to_string_pretty(lock)
                .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            text
        }
    })
}

/// `--locked`: whether the lock file is fresh for the manifest, by meaning (no
/// resolution, no network); exit 4 naming each input that changed.
fn fresh(
    args: &LockArgs,
    prepared: &Prepared,
    lock: &Lock,
    printer: &mut Printer,
) -> Result<ExitStatus, CommandError> {
    let path = &prepared.lock_file.path;
    let changes = converge::stale(&prepared.manifest, lock);
    let text = match args.format {
        LockFormat::Json => {
            let mut text = serde_json::to_string_pretty(&serde_json::json!({
                "lock": path,
                "manifest": args.manifest,
                "fresh": changes.is_empty(),
                "changes": changes,
            }))
            .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            text
        }
        LockFormat::Text if changes.is_empty() => format!(
            "{}: fresh for `{}` ({} packages)\n",
            text_value(&path.display().to_string()),
            text_value(&args.manifest.display().to_string()),
            lock.packages.len()
        ),
        LockFormat::Text => {
            let mut text = format!(
                "{}: stale for `{}`: {} change{}\n",
                text_value(&path.display().to_string()),
                text_value(&args.manifest.display().to_string()),
                changes.len(),
                if changes.len() == 1 { "" } else { "s" }
            );
            for change in &changes {
                text.push_str(&format!("  {}\n", text_value(change)));
            }
            text.push_str(&format!(
                "refresh it: {}\n",
                converge::refresh_command(prepared)
            ));
            text
        }
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(if changes.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::LockOutdated
    })
}

/// `--check`: print what differs between the lock file and `now`; exit 4 when anything does.
fn check(
    args: &LockArgs,
    path: &Path,
    locked: &Lock,
    now: &Lock,
    printer: &mut Printer,
) -> Result<ExitStatus, CommandError> {
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
                "refresh it: upgrade lock {} --lock {} (with the same `--facts`, `--snapshot` or `--live`)\n",
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

/// The lock from the run's snapshot (the embedded one unless `--snapshot`) and the
/// `--find-links` directories.
fn with_find_links(
    args: &LockArgs,
    prepared: &Prepared,
    environment: &TargetEnvironment,
    printer: &mut Printer,
) -> Result<Result<Lock, ResolveError>, CommandError> {
    let snapshot = args.resolution.snapshot.as_deref();
    let mut universe = converge::universe_for(&args.manifest, snapshot)?;
    let file = args.manifest.display().to_string();
    let mut request = Request::from_manifest(&prepared.manifest, &file);
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
    Ok(
        crate::resolve::resolve(&request, &universe, environment, prepared.rules()).map(
            |mut lock| {
                converge::stamp(prepared, &mut lock);
                lock
            },
        ),
    )
}
