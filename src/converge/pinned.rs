//! What a node installs without resolving: a saved plan's lock (`apply PLAN`), refused
//! when the node's facts changed since it was made; reading lock files; and how a
//! lock's git sources may differ from the manifest's (a hand-edited lock).

use std::path::Path;

use super::{ConvergeError, SavedPlan};
use crate::facts::NodeFacts;
use crate::resolve::Lock;

/// The lock an apply installs as it is: a saved plan's.
#[derive(Debug, Clone, Copy)]
pub enum Saved<'a> {
    /// `upgrade apply PLAN`: the plan's lock, for the facts it was made from.
    Plan(&'a SavedPlan),
}

impl Saved<'_> {
    /// The lock to install.
    pub fn lock(&self) -> &Lock {
        match self {
            Saved::Plan(plan) => &plan.lock,
        }
    }

    /// Refuse it when it does not fit this node now (`path` names the file).
    pub fn check(&self, facts: &NodeFacts, node: &str, path: &Path) -> Result<(), ConvergeError> {
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

/// How the lock's git sources differ from the manifest's, if they do: every package the
/// manifest builds from git is locked to that very repository, revision and
/// subdirectory (credentials masked), and the lock builds nothing else from git.
pub(super) fn git_differs(manifest: &crate::manifest::Manifest, lock: &Lock) -> Option<String> {
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
