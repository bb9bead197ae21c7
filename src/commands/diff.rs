//! `upgrade diff OLD NEW`: the semantic diff of two manifests.
//!
//! The resolution part compares the locks beside the two manifests (`NAME.lock.json`
//! beside `NAME.yaml`, read from git for `REV:PATH`). A side without a lock is resolved
//! on the snapshot when the snapshot records its packages, and is left out otherwise;
//! either way a note says so. Nothing here reaches the network or runs pip.

use std::path::{Path, PathBuf};

use crate::cli::{DiffArgs, DiffFormat};
use crate::commands::{CommandError, ExitStatus};
use crate::converge::{self, LockMode};
use crate::index::{Snapshot, snapshot};
use crate::manifest::{self, GitFile, Manifest, ManifestDiff, ManifestSource};
use crate::printer::Printer;
use crate::report;
use crate::resolve::{self, Lock, Outcome, TargetEnvironment};
use crate::rules::RuleSet;

/// Print the diff; with `--exit-code`, exit 1 when the manifests differ.
pub fn run(args: &DiffArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    // Each side without a lock is resolved on this snapshot when it records it; a diff
    // never reaches an index, whatever `--live` says.
    let settings = super::resolution(&args.resolution)?;
    if let Some(path) = &args.resolution.lock {
        return Err(converge::ConvergeError::LockRefused {
            path: path.clone(),
            reason: "`diff` reads the lock beside each manifest (from the same revision for `REV:PATH`), not one named file".to_string(),
        }
        .into());
    }
    let snapshot = match &args.resolution.snapshot {
        Some(path) => Snapshot::read(path)?,
        None => Snapshot::embedded()?,
    };
    let rules = RuleSet::load(args.resolution.rules.as_deref())?;
    let diff = semantic_diff(&args.old, &args.new, &snapshot, &rules, settings.mode)?;
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

/// The diff of the manifests `old` and `new` (paths or `REV:PATH`, as given on the
/// command line), with the resolution part from the locks beside them; a side without
/// a lock is resolved on `snapshot` with `rules` when [`snapshot::covers`] it. Under
/// `--locked` each side must have a lock that is fresh for it, under `--frozen` a lock
/// (an error naming the lock and the command that writes it otherwise).
fn semantic_diff(
    old: &str,
    new: &str,
    snapshot: &Snapshot,
    rules: &RuleSet,
    mode: LockMode,
) -> Result<ManifestDiff, CommandError> {
    let old_side = Side::read(old)?;
    let new_side = Side::read(new)?;
    for side in [&old_side, &new_side] {
        side.required(mode)?;
    }
    let mut diff = manifest::diff(
        &old_side.manifest,
        &new_side.manifest,
        old,
        new,
        &rules.drivers,
    );
    let both_locked = old_side.lock.is_some() && new_side.lock.is_some();
    if diff.is_empty() && !both_locked {
        return Ok(diff);
    }
    let old_outcome = old_side.outcome(snapshot, rules, &mut diff.notes);
    let new_outcome = new_side.outcome(snapshot, rules, &mut diff.notes);
    diff.entries.extend(resolve::resolution_entries(
        &old_side.manifest,
        &new_side.manifest,
        old_outcome.as_ref(),
        new_outcome.as_ref(),
        rules,
    ));
    diff.entries.sort_by_key(|entry| entry.section);
    Ok(diff)
}

/// One side of the diff: the manifest, and the lock beside it if there is one.
struct Side {
    /// As given on the command line, e.g. `HEAD:m.yaml`.
    argument: String,
    /// The manifest's path, for `upgrade lock PATH`.
    path: PathBuf,
    manifest: Manifest,
    lock: Option<Lock>,
    /// What changed in the manifest since the lock was resolved (empty: fresh).
    stale: Vec<String>,
}

impl Side {
    fn read(argument: &str) -> Result<Self, CommandError> {
        let source = ManifestSource::parse(argument);
        let (manifest, _) = manifest::load_with_text(&source)?;
        let lock = lock_beside(&source)?;
        let stale = lock
            .as_ref()
            .map(|lock| converge::stale(&manifest, lock))
            .unwrap_or_default();
        let path = match &source {
            ManifestSource::Path(path) => path.clone(),
            ManifestSource::GitRevision { path, .. } => PathBuf::from(path),
        };
        Ok(Self {
            argument: argument.to_string(),
            path,
            manifest,
            lock,
            stale,
        })
    }

    /// Under `--locked` the lock beside this side must be there and fresh, under
    /// `--frozen` there; an error naming it and the command that writes it otherwise.
    fn required(&self, mode: LockMode) -> Result<(), CommandError> {
        let why = match (&self.lock, mode) {
            (_, LockMode::Auto) => return Ok(()),
            (None, _) => "there is no lock file; `{command}` writes it".to_string(),
            (Some(_), LockMode::Locked) if !self.stale.is_empty() => format!(
                "it is stale for `{}`: {}; `{{command}}` refreshes it",
                self.argument,
                self.stale.join("; ")
            ),
            (Some(_), _) => return Ok(()),
        };
        let command = format!(
            "upgrade lock {}",
            crate::shell::quote(&self.path.display().to_string())
        );
        let lock = resolve::lock_path_beside(&self.path);
        let path = match ManifestSource::parse(&self.argument) {
            ManifestSource::GitRevision { rev, .. } => {
                PathBuf::from(format!("{rev}:{}", lock.display()))
            }
            ManifestSource::Path(_) => lock,
        };
        Err(converge::ConvergeError::LockRefused {
            path,
            reason: why.replace("{command}", &command),
        }
        .into())
    }

    /// The lock beside the manifest; without one, the resolution on `snapshot` when it
    /// records the manifest's packages, else nothing. Each is told in `notes` once.
    fn outcome(
        &self,
        snapshot: &Snapshot,
        rules: &RuleSet,
        notes: &mut Vec<String>,
    ) -> Option<Outcome> {
        let (argument, path) = (&self.argument, self.path.display());
        if let Some(lock) = &self.lock {
            if !self.stale.is_empty() {
                notes.push(format!(
                    "the lock beside `{argument}` is stale ({}); `upgrade lock {path}` refreshes it",
                    self.stale.join("; ")
                ));
            }
            return Some(Ok(lock.clone()));
        }
        let missing = format!("no lock beside `{argument}`; `upgrade lock {path}` writes it");
        match snapshot::covers(&snapshot.universe, &self.manifest) {
            Ok(()) => {
                notes.push(format!(
                    "{missing} (compared here as resolved on {})",
                    snapshot::place(&snapshot.universe)
                ));
                // Resolved for its own target; a side that cannot be resolved is shown
                // as a hazard, never an error.
                Some(
                    TargetEnvironment::from_manifest(&self.manifest).and_then(|environment| {
                        converge::resolve_lock(
                            &self.manifest,
                            argument,
                            &environment,
                            &snapshot.universe,
                            rules,
                        )
                    }),
                )
            }
            Err(unrecorded) => {
                notes.push(format!(
                    "{missing} ({unrecorded}, so its locked closure is not compared)"
                ));
                None
            }
        }
    }
}

/// The lock beside the manifest `source` names (`NAME.lock.json` beside `NAME.yaml`; for
/// `REV:PATH`, the lock at `REV` beside `PATH`), or `None` when there is none. A lock
/// that cannot be read is an error naming it.
pub fn lock_beside(source: &ManifestSource) -> Result<Option<Lock>, CommandError> {
    let unreadable = |path: PathBuf, message: String| CommandError::LockFile { path, message };
    match source {
        ManifestSource::Path(path) => {
            let lock = resolve::lock_path_beside(path);
            if !lock.exists() {
                return Ok(None);
            }
            Lock::read(&lock)
                .map(Some)
                .map_err(|error| unreadable(lock, crate::text::error_chain(&error)))
        }
        ManifestSource::GitRevision { rev, path } => {
            let lock = resolve::lock_path_beside(Path::new(path));
            let lock = lock.to_string_lossy();
            let named = PathBuf::from(format!("{rev}:{lock}"));
            let bytes = match manifest::read_git_file(rev, &lock)? {
                GitFile::Found(bytes) => bytes,
                GitFile::Missing(_) => return Ok(None),
            };
            let text = String::from_utf8(bytes).map_err(|error| {
                unreadable(
                    named.clone(),
                    format!("it is not UTF-8 text ({})", error.utf8_error()),
                )
            })?;
            Lock::from_json(&text)
                .map(Some)
                .map_err(|error| unreadable(named, crate::text::error_chain(&error)))
        }
    }
}
