//! How a run gets the lock of its manifest, decided once from the flags
//! ([`ResolutionSettings`]): the lock beside the manifest (or `--lock FILE`) when it is
//! fresh for the manifest and holds on the node, else a resolution: on `--snapshot`, on
//! the embedded snapshot when it records every package the manifest names (the shipped
//! stacks), else live against the manifest's indexes through the cache (`--offline`:
//! the cache only). `--locked` and `--frozen` mean what they mean to uv.

use std::path::{Path, PathBuf};

use super::{ConvergeError, LiveOptions, Prepared};
use crate::manifest::Manifest;
use crate::resolve::inputs::LockInputs;
use crate::resolve::{Lock, TargetEnvironment};

/// What the lock file is to a run (`--locked`, `--frozen`, neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockMode {
    /// Use it when fresh and holding on the node; resolve otherwise.
    #[default]
    Auto,
    /// It must be there, fresh and holding; never resolve.
    Locked,
    /// Use it as it is (it must hold on the node); never resolve.
    Frozen,
}

/// Where a resolution reads the indexes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Source {
    /// The embedded snapshot when it records every package the manifest names, else live.
    #[default]
    Auto,
    /// This snapshot file (`--snapshot`).
    Snapshot(PathBuf),
    /// The manifest's indexes (`--live`).
    Live,
}

/// A run's resolution settings, from the flags and environment variables of any verb.
#[derive(Debug, Clone)]
pub struct ResolutionSettings {
    /// `--locked`, `--frozen` or neither.
    pub mode: LockMode,
    /// `--lock FILE`; `None`: `NAME.lock.json` beside the manifest.
    pub lock_file: Option<PathBuf>,
    /// `--snapshot`, `--live` or neither.
    pub source: Source,
    /// The index client, pip's interpreter and the live limits (also `--offline`).
    pub live: LiveOptions,
    /// `--rules DIR`: each rule file it holds replaces the embedded table.
    pub rules: Option<PathBuf>,
}

/// Where a run's lock came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOrigin {
    /// The lock file, fresh and holding.
    File(PathBuf),
    /// The lock file under `--frozen`, holding but stale: each input that changed.
    Frozen(PathBuf, Vec<String>),
    /// A resolution: `on` says where; `set_aside` why the lock file was not used.
    Resolved {
        /// e.g. the embedded snapshot.
        on: ResolvedOn,
        /// e.g. `it is stale: package torch: ==2.8.0 → ==2.9.0`.
        set_aside: Option<String>,
    },
}

/// What a resolution read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolvedOn {
    /// The snapshot embedded in the binary.
    Embedded,
    /// A snapshot file.
    Snapshot(PathBuf),
    /// The manifest's indexes.
    Live,
}

impl std::fmt::Display for ResolvedOn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolvedOn::Embedded => write!(f, "the embedded snapshot"),
            ResolvedOn::Snapshot(path) => write!(f, "snapshot `{}`", path.display()),
            ResolvedOn::Live => write!(f, "the manifest's indexes (live)"),
        }
    }
}

impl LockOrigin {
    /// One line for stderr where it tells something, e.g. `lock:
    /// manifests/x.lock.json (fresh)`; `None` for the usual resolution of a manifest
    /// without a lock on the embedded snapshot.
    pub fn note(&self) -> Option<String> {
        match self {
            LockOrigin::File(path) => Some(format!("lock: {} (fresh)", path.display())),
            LockOrigin::Frozen(path, changes) => Some(format!(
                "lock: {} (--frozen: used as it is, though stale: {})",
                path.display(),
                changes.join("; ")
            )),
            LockOrigin::Resolved {
                on: ResolvedOn::Live,
                set_aside: None,
            } => Some(format!("resolved on {}", ResolvedOn::Live)),
            LockOrigin::Resolved {
                set_aside: None, ..
            } => None,
            LockOrigin::Resolved {
                on,
                set_aside: Some(why),
            } => Some(format!("resolved on {on}: the lock {why}")),
        }
    }
}

/// The lock file a run reads: its path and, when it exists, its contents.
#[derive(Debug, Clone)]
pub struct LockFile {
    /// e.g. `manifests/x.lock.json`.
    pub path: PathBuf,
    /// `None` when there is no file.
    pub lock: Option<Lock>,
}

impl LockFile {
    /// Read the lock at `path` when it is there; an unreadable or malformed one is an
    /// error naming it.
    pub fn read(path: PathBuf) -> Result<Self, ConvergeError> {
        let lock = match path.try_exists() {
            Ok(true) => Some(super::read_lock(&path)?),
            Ok(false) => None,
            Err(error) => {
                return Err(ConvergeError::LockRefused {
                    path,
                    reason: error.to_string(),
                });
            }
        };
        Ok(Self { path, lock })
    }
}

/// Why `lock` is stale for `manifest`, one phrase per input that changed; empty when it
/// is fresh. A lock without recorded inputs (an earlier build's) is stale.
pub fn stale(manifest: &Manifest, lock: &Lock) -> Vec<String> {
    let mut out = match &lock.inputs {
        None => vec!["records no inputs (written by an earlier build)".to_string()],
        Some(inputs) => inputs.changes(&LockInputs::of(manifest)),
    };
    if let Some(reason) = super::pinned::git_differs(manifest, lock) {
        out.push(reason);
    }
    out
}

/// The command that writes a fresh lock of `prepared` where the run reads it.
pub fn refresh_command(prepared: &Prepared) -> String {
    let quote = |path: &Path| crate::shell::quote(&path.display().to_string());
    let mut command = format!("upgrade lock {}", quote(&prepared.path));
    if prepared.settings.lock_file.is_some() {
        command.push_str(&format!(" --lock {}", quote(&prepared.lock_file.path)));
    }
    command
}

/// The lock the run installs on a node of `environment`: the lock file as the mode
/// says, else a resolution.
pub fn lock_for(
    prepared: &Prepared,
    environment: &TargetEnvironment,
    node: &str,
) -> Result<(Lock, LockOrigin), ConvergeError> {
    let file = &prepared.lock_file;
    let refused = |reason: String| ConvergeError::LockRefused {
        path: file.path.clone(),
        reason,
    };
    let mode = prepared.settings.mode;
    let Some(lock) = &file.lock else {
        if mode == LockMode::Auto {
            let (lock, on) = resolve(prepared, environment)?;
            let set_aside = None;
            return Ok((lock, LockOrigin::Resolved { on, set_aside }));
        }
        return Err(refused(format!(
            "there is no lock file; `{}` writes it",
            refresh_command(prepared)
        )));
    };
    let changes = stale(&prepared.manifest, lock);
    let mismatches = lock.mismatches(environment);
    // `--frozen` takes a stale lock as it is (and says so); it must still hold.
    let changes = match mode {
        LockMode::Frozen if mismatches.is_empty() && !changes.is_empty() => {
            let origin = LockOrigin::Frozen(file.path.clone(), changes);
            return Ok((lock.clone(), origin));
        }
        LockMode::Frozen => Vec::new(),
        LockMode::Auto | LockMode::Locked => changes,
    };
    let why = match (changes.is_empty(), mismatches.is_empty()) {
        (true, true) => return Ok((lock.clone(), LockOrigin::File(file.path.clone()))),
        (false, _) => format!(
            "is stale for `{}`: {}; `{}` refreshes it",
            prepared.path.display(),
            changes.join("; "),
            refresh_command(prepared)
        ),
        (true, false) => format!(
            "does not hold on `{node}`: {}; lock for this node (`upgrade probe --format json` gives facts for `upgrade lock --facts`)",
            mismatches.join("; ")
        ),
    };
    if mode != LockMode::Auto {
        return Err(refused(format!("it {why}")));
    }
    let (lock, on) = resolve(prepared, environment)?;
    Ok((
        lock,
        LockOrigin::Resolved {
            on,
            set_aside: Some(why),
        },
    ))
}

/// Resolve the manifest for `environment` as the settings say (never the lock file),
/// stamped with the manifest's digest and inputs.
///
/// Nodes alike in every fact the resolver reads get the same lock: each distinct
/// environment is resolved once a run (a fleet's nodes share it), live or not.
pub fn resolve(
    prepared: &Prepared,
    environment: &TargetEnvironment,
) -> Result<(Lock, ResolvedOn), ConvergeError> {
    let known = prepared.shared.locks.lock().ok().and_then(|locks| {
        locks
            .iter()
            .find(|(seen, _)| seen == environment)
            .map(|(_, resolved)| resolved.as_ref().clone())
    });
    if let Some(resolved) = known {
        return Ok(resolved);
    }
    let (lock, on, _) = resolve_reporting(prepared, environment)?;
    if let Ok(mut locks) = prepared.shared.locks.lock() {
        locks.push((
            environment.clone(),
            std::sync::Arc::new((lock.clone(), on.clone())),
        ));
    }
    Ok((lock, on))
}

/// [`resolve`], with the live resolution's summary (what was fetched) when it was live.
pub fn resolve_reporting(
    prepared: &Prepared,
    environment: &TargetEnvironment,
) -> Result<(Lock, ResolvedOn, Option<String>), ConvergeError> {
    let on = source_for(prepared)?;
    let rules = prepared.rules();
    let (mut lock, summary) = match &on {
        ResolvedOn::Live => {
            let (lock, resolution) = super::live_lock(
                &prepared.path,
                &prepared.manifest,
                environment,
                rules,
                &prepared.settings.live,
            )?;
            (lock, Some(resolution.to_string()))
        }
        ResolvedOn::Embedded | ResolvedOn::Snapshot(_) => {
            (super::lock_on_snapshot(prepared, environment)?, None)
        }
    };
    stamp(prepared, &mut lock);
    Ok((lock, on, summary))
}

/// Record the manifest's digest and inputs in a lock made from it.
pub fn stamp(prepared: &Prepared, lock: &mut Lock) {
    lock.manifest_sha256 = Some(prepared.sha256.clone());
    lock.inputs = Some(LockInputs::of(&prepared.manifest));
}

/// Where this run resolves: `--snapshot`, `--live`, else the embedded snapshot when it
/// records the manifest's packages, else live.
fn source_for(prepared: &Prepared) -> Result<ResolvedOn, ConvergeError> {
    if let Some(on) = prepared.shared.on.get() {
        return Ok(on.clone());
    }
    let on = match &prepared.settings.source {
        Source::Snapshot(path) => ResolvedOn::Snapshot(path.clone()),
        Source::Live => ResolvedOn::Live,
        Source::Auto => {
            // Read once: when it serves, the resolution reads this very universe.
            let embedded = super::universe_for(&prepared.path, None)?;
            match crate::index::snapshot::covers(&embedded, &prepared.manifest) {
                Ok(()) => {
                    let _ = prepared.universe.set(std::sync::Arc::new(embedded));
                    ResolvedOn::Embedded
                }
                Err(_) => ResolvedOn::Live,
            }
        }
    };
    Ok(prepared.shared.on.get_or_init(|| on).clone())
}
