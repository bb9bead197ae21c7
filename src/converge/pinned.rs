//! What a node installs without resolving: a saved plan's lock (`apply PLAN`) or a lock
//! file (`plan --lock FILE`, `apply --lock FILE`, fleets too), each checked before use.
//!
//! A saved plan is refused when the node's facts changed since it was made. A lock is
//! refused when it was made from another manifest or an edited one (its
//! `manifest_sha256` is not the manifest's), when it records no manifest digest (made
//! by an earlier build), and when the node does not offer what its resolution assumed
//! (interpreter line, machine, glibc, driver, GPU architectures, CUDA runtime).

use std::path::Path;

use super::{ConvergeError, Prepared, SavedPlan};
use crate::facts::NodeFacts;
use crate::resolve::{Lock, TargetEnvironment};

/// The lock an apply installs as it is, and where it came from.
#[derive(Debug, Clone, Copy)]
pub enum Saved<'a> {
    /// `upgrade apply PLAN`: the plan's lock, for the facts it was made from.
    Plan(&'a SavedPlan),
    /// `--lock FILE`: a lock, for any node where it holds.
    Lock(&'a Lock),
}

impl Saved<'_> {
    /// The lock to install.
    pub fn lock(&self) -> &Lock {
        match self {
            Saved::Plan(plan) => &plan.lock,
            Saved::Lock(lock) => lock,
        }
    }

    /// Refuse it when it does not fit this node now (`path` names the file).
    pub fn check(
        &self,
        prepared: &Prepared,
        facts: &NodeFacts,
        node: &str,
        path: &Path,
    ) -> Result<(), ConvergeError> {
        match self {
            Saved::Plan(saved) => {
                let digest = facts.digest()?.to_string();
                if digest != saved.facts_digest {
                    return Err(ConvergeError::StalePlan {
                        path: path.to_path_buf(),
                        reason: format!(
                            "the facts of `{node}` changed since the plan was made ({} → {digest})",
                            saved.facts_digest
                        ),
                    });
                }
                Ok(())
            }
            Saved::Lock(lock) => check_lock(prepared, facts, lock, node, path),
        }
    }
}

/// Read a lock file: the JSON `upgrade lock --format json` writes.
pub fn read_lock(path: &Path) -> Result<Lock, ConvergeError> {
    let refused = |reason: String| ConvergeError::LockRefused {
        path: path.to_path_buf(),
        reason,
    };
    Lock::read(path).map_err(|error| refused(crate::text::error_chain(&error)))
}

/// The command that writes a fresh lock of `prepared` to `path`.
pub fn refresh_command(prepared: &Prepared, path: &Path) -> String {
    let quote = |path: &Path| crate::shell::quote(&path.display().to_string());
    format!(
        "`upgrade lock {} --format json -o {}` (with the `--facts` or `--snapshot` it was made with)",
        quote(&prepared.path),
        quote(path)
    )
}

/// Refuse `lock` (read from `path`) unless it was made from this very manifest and
/// holds on the node of `facts`.
pub fn check_lock(
    prepared: &Prepared,
    facts: &NodeFacts,
    lock: &Lock,
    node: &str,
    path: &Path,
) -> Result<(), ConvergeError> {
    let refused = |reason: String| ConvergeError::LockRefused {
        path: path.to_path_buf(),
        reason,
    };
    match &lock.manifest_sha256 {
        None => {
            return Err(refused(format!(
                "it records no manifest digest (written by an earlier build), so nothing proves it was made from `{}`; refresh it: {}",
                prepared.path.display(),
                refresh_command(prepared, path)
            )));
        }
        Some(locked) if *locked != prepared.sha256 => {
            return Err(refused(format!(
                "it was made from a manifest with sha256 {locked}, but `{}` has sha256 {} (another manifest, or edited since); refresh it: {}",
                prepared.path.display(),
                prepared.sha256,
                refresh_command(prepared, path)
            )));
        }
        Some(_) => {}
    }
    if let Some(reason) = git_differs(&prepared.manifest, lock) {
        return Err(refused(format!(
            "{reason}, although it records the manifest's digest (a lock is read as input: it was edited by hand); refresh it: {}",
            refresh_command(prepared, path)
        )));
    }
    let environment = TargetEnvironment::from_node(&prepared.manifest, facts)?;
    let mismatches = lock.mismatches(&environment);
    if !mismatches.is_empty() {
        return Err(refused(format!(
            "it does not hold on `{node}`: {}; lock for this node (`upgrade probe --format json` gives facts for `upgrade lock --facts`)",
            mismatches.join("; ")
        )));
    }
    Ok(())
}

/// How the lock's git sources differ from the manifest's, if they do: every package the
/// manifest builds from git is locked to that very repository, revision and
/// subdirectory (credentials masked), and the lock builds nothing else from git.
fn git_differs(manifest: &crate::manifest::Manifest, lock: &Lock) -> Option<String> {
    use crate::manifest::PackageOrigin;
    use crate::resolve::LockedSource;
    for package in &lock.packages {
        let wanted = manifest
            .packages
            .iter()
            .find_map(|wanted| match &wanted.origin {
                PackageOrigin::Git(git) if wanted.name == package.name => Some(git),
                _ => None,
            });
        match (&package.source, wanted) {
            (
                LockedSource::Git {
                    url,
                    rev,
                    subdirectory,
                },
                Some(git),
            ) => {
                let same = *url == crate::manifest::redact_url(&git.url)
                    && *rev == git.rev
                    && subdirectory.as_ref().map(|line| line.as_str())
                        == git.subdirectory.as_deref();
                if !same {
                    return Some(format!(
                        "it builds `{}` from `{}` at `{}`, but the manifest names `{}` at `{}`",
                        package.name,
                        url,
                        rev,
                        crate::manifest::redact_url(&git.url),
                        crate::text::text_value(&git.rev)
                    ));
                }
            }
            (LockedSource::Git { url, .. }, None) => {
                return Some(format!(
                    "it builds `{}` from git (`{url}`), which the manifest does not",
                    package.name
                ));
            }
            (LockedSource::Index { .. }, Some(_)) => {
                return Some(format!(
                    "it installs `{}` from an index, but the manifest builds it from git",
                    package.name
                ));
            }
            (LockedSource::Index { .. }, None) => {}
        }
    }
    None
}
