//! The pip pins step: make the environment equal the lock — install exactly the
//! locked files with `--no-deps --require-hashes` from each file's own index, and
//! remove what the lock does not name.
//!
//! Versions compare with their local labels: `2.9.1` installed where the lock says
//! `2.9.1+cu130` is drift (the default-torch swap), not a match.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::facts::NodeFacts;
use crate::resolve::{Lock, LockedSource};
use crate::transport::NodeCommand;

use super::{Action, Operation, STAGING_DIR, Step, StepKind, Verification};

/// Packages that belong to the environment itself and are never removed.
const TOOLING: &[&str] = &["pip", "setuptools", "wheel"];

/// Failed to plan the pip step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipError {
    /// A locked file has no sha256, so it cannot be installed with `--require-hashes`.
    #[error("`{package}=={version}`: the lock has no sha256 for `{file}`")]
    MissingHash {
        /// e.g. `torchaudio`.
        package: String,
        /// e.g. `2.9.1+cu130`.
        version: String,
        /// e.g. `torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        file: String,
    },
    /// The lock names an index the caller has no URL for.
    #[error("Failed to pin `{package}`: no URL is known for index `{index}`")]
    UnknownIndex {
        /// e.g. `torch`.
        package: String,
        /// e.g. `pytorch-cu130`.
        index: String,
    },
}

/// Plan the step. `index_urls` maps each index name of the lock to its URL;
/// `hash_command` is the command that records missing digests (the step blocks with it,
/// plus `--package NAME`, when a locked file has no sha256).
pub fn plan(
    lock: &Lock,
    python: &Path,
    facts: &NodeFacts,
    index_urls: &BTreeMap<String, String>,
    hash_command: &str,
) -> Result<Step, PipError> {
    let installed: BTreeMap<String, Option<String>> = facts
        .packages
        .iter()
        .map(|package| {
            (
                package.name.to_string(),
                package.version.as_ref().map(ToString::to_string),
            )
        })
        .collect();
    let mut by_index: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut install: Vec<String> = Vec::new();
    let mut expected: Vec<(String, String)> = Vec::new();
    let mut keep: BTreeSet<&str> = TOOLING.iter().copied().collect();
    let mut unhashed: Vec<PipError> = Vec::new();
    for package in &lock.packages {
        keep.insert(package.name.as_str());
        let LockedSource::Index {
            index,
            file,
            sha256,
        } = &package.source
        else {
            continue;
        };
        expected.push((package.name.clone(), package.version.clone()));
        if installed.get(&package.name).and_then(Option::as_deref) == Some(package.version.as_str())
        {
            continue;
        }
        let Some(sha256) = sha256.as_ref() else {
            unhashed.push(PipError::MissingHash {
                package: package.name.clone(),
                version: package.version.clone(),
                file: file.clone(),
            });
            install.push(format!("{}=={}", package.name, package.version));
            continue;
        };
        if !index_urls.contains_key(index) {
            return Err(PipError::UnknownIndex {
                package: package.name.clone(),
                index: index.clone(),
            });
        }
        let was = match installed.get(&package.name) {
            Some(Some(version)) => format!(" (was {version})"),
            Some(None) => " (was a direct URL install)".to_string(),
            None => String::new(),
        };
        install.push(format!("{}=={}{was}", package.name, package.version));
        by_index.entry(index.as_str()).or_default().push(format!(
            "{}=={} --hash=sha256:{sha256}\n",
            package.name, package.version
        ));
    }
    let remove: Vec<String> = installed
        .keys()
        .filter(|name| !keep.contains(name.as_str()))
        .cloned()
        .collect();
    let python_text = python.display().to_string();
    let mut operations = Vec::new();
    for (index, lines) in &by_index {
        let file = PathBuf::from(STAGING_DIR).join(format!("requirements-{index}.txt"));
        operations.push(Operation::staged(file.clone(), lines.concat().into_bytes()));
        operations.push(Operation::Run(
            NodeCommand::new(python_text.clone())
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--no-deps",
                    "--require-hashes",
                    "--no-input",
                ])
                .args([
                    "--disable-pip-version-check",
                    "--no-cache-dir",
                    "--index-url",
                ])
                .arg_url(index_urls.get(*index).cloned().unwrap_or_default())
                .arg("-r")
                .arg(file.display().to_string()),
        ));
    }
    if !remove.is_empty() {
        operations.push(Operation::Run(
            NodeCommand::new(python_text.clone())
                .args([
                    "-m",
                    "pip",
                    "uninstall",
                    "-y",
                    "--disable-pip-version-check",
                ])
                .args(remove.iter().cloned()),
        ));
    }
    let (action, reason) = match (install.is_empty(), remove.is_empty(), installed.is_empty()) {
        (true, true, _) => (
            Action::NoOp,
            format!(
                "the environment equals the lock ({} packages)",
                expected.len()
            ),
        ),
        (false, true, true) => (
            Action::Create,
            format!("install {} packages", install.len()),
        ),
        (false, _, _) | (true, false, _) => (
            Action::Change,
            format!(
                "{} to install{}, {} to remove{}",
                install.len(),
                summary(&install),
                remove.len(),
                summary(&remove)
            ),
        ),
    };
    let blocked = (!unhashed.is_empty()).then(|| missing_hashes(&unhashed, hash_command));
    Ok(Step {
        kind: StepKind::PipPins,
        subject: python_text.clone(),
        action,
        reason,
        operations,
        blocked,
        verification: Some(Verification::PackagesMatch {
            python: python.to_path_buf(),
            expected,
            absent: remove,
            pip_check: !lock
                .packages
                .iter()
                .any(|package| matches!(package.source, LockedSource::Git { .. })),
        }),
    })
}

/// Why the step blocks on files without a sha256, ending in the one command that
/// records them, e.g. ``…; record it with: upgrade index hash m.yaml --package torchaudio``.
fn missing_hashes(unhashed: &[PipError], hash_command: &str) -> String {
    let packages: String = unhashed
        .iter()
        .filter_map(|error| match error {
            PipError::MissingHash { package, .. } => Some(format!(" --package {package}")),
            PipError::UnknownIndex { .. } => None,
        })
        .collect();
    let (it, them) = if unhashed.len() == 1 {
        ("it", "it")
    } else {
        ("they", "them")
    };
    format!(
        "{}, so {it} cannot be installed with `--require-hashes`; record {them} with: {hash_command}{packages}",
        unhashed
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    )
}

fn summary(items: &[String]) -> String {
    match items.len() {
        0 => String::new(),
        1..=6 => format!(" ({})", items.join(", ")),
        n => format!(" ({}, and {} more)", items[..5].join(", "), n - 5),
    }
}
