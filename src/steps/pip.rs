//! The pip pins step: make the environment equal the lock — install exactly the
//! locked files with `--no-deps --require-hashes` from each file's own index, and
//! remove what the lock does not name.
//!
//! Versions compare by PEP 440 ([`same_version`]) with their local labels: `2.0.0`
//! installed where the lock says `2` is a match, `2.9.1` installed where the lock says
//! `2.9.1+cu130` is drift (the default-torch swap), not a match.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::facts::NodeFacts;
use crate::manifest::has_credentials;
use crate::resolve::{Lock, LockedSource, same_version};
use crate::transport::{INSTALL_BOUND, NodeCommand};

use super::{
    Action, Delivery, FetchMode, Installer, Operation, Placement, SECRETS_DIR, STAGING_DIR, Step,
    StepKind, Verification, WHEELS_DIR,
};

/// Packages that belong to the environment itself and are never removed.
pub const TOOLING: &[&str] = &["pip", "setuptools", "wheel"];

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

/// One package the pip step changes, e.g. `torch` from `2.11.0+cu130` to `2.9.1+cu130`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackageChange {
    /// e.g. `torch`.
    pub name: String,
    /// The installed version; `None` for a new package, `"direct URL"` for a package
    /// installed from a URL or a checkout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The locked version; `None` for a removal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// What the pip step does to the environment's packages, package by package: every
/// list complete (a plan's text may shorten them, its JSON never does).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PackageDiff {
    /// Packages the environment does not have.
    pub install: Vec<PackageChange>,
    /// Packages replaced by a later version (PEP 440 order; a `+cuXYZ` build of the
    /// same release counts as later), or whose installed version cannot be compared.
    pub upgrade: Vec<PackageChange>,
    /// Packages replaced by an earlier version.
    pub downgrade: Vec<PackageChange>,
    /// Packages installed that the lock does not name: `pip uninstall` removes them.
    pub remove: Vec<PackageChange>,
}

/// How many packages each list of a [`PackageDiff`] holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PackageCounts {
    /// New packages.
    pub install: usize,
    /// Later versions.
    pub upgrade: usize,
    /// Earlier versions.
    pub downgrade: usize,
    /// Removed packages.
    pub remove: usize,
}

impl std::fmt::Display for PackageCounts {
    /// e.g. `3 to install, 1 to upgrade, 1 to downgrade, 113 to remove`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} to install, {} to upgrade, {} to downgrade, {} to remove",
            self.install, self.upgrade, self.downgrade, self.remove
        )
    }
}

impl PackageDiff {
    /// The lists' lengths.
    pub fn counts(&self) -> PackageCounts {
        PackageCounts {
            install: self.install.len(),
            upgrade: self.upgrade.len(),
            downgrade: self.downgrade.len(),
            remove: self.remove.len(),
        }
    }

    /// `true` when the step changes no package.
    pub fn is_empty(&self) -> bool {
        self.counts() == PackageCounts::default()
    }

    fn add(&mut self, name: &str, installed: Option<&Option<String>>, locked: &str) {
        let change = |from: Option<String>| PackageChange {
            name: name.to_string(),
            from,
            to: Some(locked.to_string()),
        };
        match installed {
            None => self.install.push(change(None)),
            Some(None) => self.upgrade.push(change(Some("direct URL".to_string()))),
            Some(Some(version)) => {
                let older = match (
                    version.parse::<pep440_rs::Version>(),
                    locked.parse::<pep440_rs::Version>(),
                ) {
                    (Ok(installed), Ok(locked)) => locked < installed,
                    _ => false,
                };
                if older {
                    self.downgrade.push(change(Some(version.clone())));
                } else {
                    self.upgrade.push(change(Some(version.clone())));
                }
            }
        }
    }
}

/// The pip step with the package diff it makes.
#[derive(Debug, Clone)]
pub struct PipPlan {
    /// The step.
    pub step: Step,
    /// What it does to each package.
    pub packages: PackageDiff,
}

/// Plan the step. `index_urls` maps each index name of the lock to its URL;
/// `hash_command` is the command that records missing digests (the step blocks with it,
/// plus `--package NAME`, when a locked file has no sha256). With
/// [`FetchMode::Controller`] the node reaches no index: the controller sends it the
/// files and pip installs them with `--no-index --find-links`. Installed packages the
/// lock does not name are removed unless `keep_unlocked` (`target.keep_unlocked_packages`).
pub fn plan(
    lock: &Lock,
    python: &Path,
    facts: &NodeFacts,
    index_urls: &BTreeMap<String, String>,
    hash_command: &str,
    keep_unlocked: bool,
    delivery: &Delivery,
) -> Result<PipPlan, PipError> {
    let Delivery { fetch, installer } = delivery;
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
    let mut sent: Vec<Operation> = Vec::new();
    let mut packages = PackageDiff::default();
    for package in &lock.packages {
        keep.insert(package.name.as_ref());
        let Some((index, file, sha256)) = package.index_file() else {
            continue;
        };
        let name = package.name.to_string();
        let version = package.version.to_string();
        expected.push((name.clone(), version.clone()));
        if installed
            .get(&name)
            .and_then(Option::as_deref)
            .is_some_and(|installed| same_version(installed, &version))
        {
            continue;
        }
        packages.add(&name, installed.get(&name), &version);
        let Some(sha256) = sha256 else {
            unhashed.push(PipError::MissingHash {
                package: name,
                version,
                file: file.to_string(),
            });
            install.push(format!("{}=={}", package.name, package.version));
            continue;
        };
        let Some(index_url) = index_urls.get(index.as_str()) else {
            return Err(PipError::UnknownIndex {
                package: name,
                index: index.to_string(),
            });
        };
        sent.push(Operation::FetchIndexFile {
            index: index.to_string(),
            index_url: index_url.clone(),
            project: name,
            file: file.to_string(),
            sha256: sha256.clone(),
            path: PathBuf::from(WHEELS_DIR).join(file.as_str()),
        });
        install.push(format!("{}=={}", package.name, package.version));
        by_index.entry(index.as_str()).or_default().push(format!(
            "{}=={} --hash=sha256:{sha256}\n",
            package.name, package.version
        ));
    }
    let remove: Vec<String> = installed
        .keys()
        .filter(|name| !keep_unlocked && !keep.contains(name.as_str()))
        .cloned()
        .collect();
    packages.remove = remove
        .iter()
        .map(|name| PackageChange {
            name: name.clone(),
            from: Some(
                installed
                    .get(name)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| "direct URL".to_string()),
            ),
            to: None,
        })
        .collect();
    let python_text = python.display().to_string();
    let mut operations = Vec::new();
    if *fetch == FetchMode::Controller && !by_index.is_empty() {
        let file = PathBuf::from(STAGING_DIR).join("requirements-sent.txt");
        let lines: String = by_index.values().flatten().map(String::as_str).collect();
        operations.extend(sent);
        operations.push(Operation::staged(file.clone(), lines.into_bytes()));
        operations.push(Operation::Run(
            installer
                .install(None, &python_text)
                .args(["--no-index", "--find-links", WHEELS_DIR, "-r"])
                .arg(file.display().to_string())
                .bounded(INSTALL_BOUND),
        ));
        by_index.clear();
    }
    for (index, lines) in &by_index {
        let file = PathBuf::from(STAGING_DIR).join(format!("requirements-{index}.txt"));
        operations.push(Operation::staged(file.clone(), lines.concat().into_bytes()));
        let url = index_urls
            .get(*index)
            .map(String::as_str)
            .unwrap_or_default();
        operations.extend(install_from(installer, &python_text, index, url, &file));
    }
    if !remove.is_empty() {
        operations.push(Operation::Run(installer.uninstall(&python_text, &remove)));
    }
    if !operations.is_empty()
        && let Some(send) = installer.send()
    {
        operations.insert(0, send);
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
        (false, _, _) | (true, false, _) => (Action::Change, packages.counts().to_string()),
    };
    let blocked = (!unhashed.is_empty()).then(|| missing_hashes(&unhashed, hash_command));
    let step = Step {
        kind: StepKind::PipPins,
        subject: python_text.clone(),
        action,
        reason,
        operations,
        blocked,
        verification: Some(Verification::PackagesMatch {
            python: python.to_path_buf(),
            installer: installer.clone(),
            expected,
            absent: remove,
            pip_check: !lock
                .packages
                .iter()
                .any(|package| matches!(package.source, LockedSource::Git { .. })),
        }),
    };
    Ok(PipPlan { step, packages })
}

/// Reads the index URL from the root-only file `$1`, removes the file, and runs the
/// rest of its arguments with the URL in `PIP_INDEX_URL` (pip) and `UV_INDEX_URL` (uv):
/// a URL with credentials never appears on a command line of the node (visible to
/// every user in `ps`).
const WITH_INDEX_SCRIPT: &str = r#"set -eu
file=$1; shift
PIP_INDEX_URL=$(cat -- "$file")
rm -f -- "$file"
UV_INDEX_URL=$PIP_INDEX_URL
export PIP_INDEX_URL UV_INDEX_URL
exec "$@"
"#;

/// The operations that install the requirements file `requirements` from `url`, e.g.
/// `python -m pip install --no-deps --require-hashes … --index-url URL -r FILE`. A URL
/// with credentials (`https://user:token@…`, `?token=…`) is written to a root-only file
/// under [`SECRETS_DIR`] and reaches pip through its environment instead.
fn install_from(
    installer: &Installer,
    python: &str,
    index: &str,
    url: &str,
    requirements: &Path,
) -> Vec<Operation> {
    let requirements = requirements.display().to_string();
    if !has_credentials(url) {
        return vec![Operation::Run(
            installer
                .install(None, python)
                .arg("--index-url")
                .arg(url.to_string())
                .arg("-r")
                .arg(requirements)
                .bounded(INSTALL_BOUND),
        )];
    }
    let secret = PathBuf::from(SECRETS_DIR).join(format!("pip-index-{index}.url"));
    let wrapper = NodeCommand::new("sh")
        .arg("-c")
        .script("pip-index-from-file", WITH_INDEX_SCRIPT)
        .arg("pip-index")
        .arg(secret.display().to_string());
    vec![
        Operation::Upload {
            path: secret,
            placement: Placement::Secret,
            content: url.as_bytes().to_vec(),
        },
        Operation::Run(
            installer
                .install(Some(wrapper), python)
                .arg("-r")
                .arg(requirements)
                .bounded(INSTALL_BOUND),
        ),
    ]
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

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "s3cr3t-t0ken";

    /// The H200 fixture's facts with `freeze` as its installed packages.
    fn facts_with(freeze: &str) -> NodeFacts {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/facts/h200.facts.json"
        ))
        .unwrap_or_else(|error| panic!("{error}"));
        let mut facts: NodeFacts =
            serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}"));
        facts.packages =
            crate::facts::parse_pip_freeze(freeze).unwrap_or_else(|error| panic!("{error}"));
        facts
    }

    /// A lock of index packages `(name, version, file)`, each hashed.
    fn lock_of(packages: &[(&str, &str, &str)]) -> Lock {
        let packages: Vec<String> = packages
            .iter()
            .map(|(name, version, file)| {
                format!(
                    r#"{{"name": "{name}", "version": "{version}", "source": "index", "index": "local", "file": "{file}", "sha256": "{}"}}"#,
                    "ab".repeat(32)
                )
            })
            .collect();
        serde_json::from_str(&format!(
            r#"{{"schema": 1, "manifest": "m", "assumed": {{"python": "3.12.3", "implementation": "cpython", "glibc": "2.39", "arch": "x86_64", "gpu_arch": []}}, "packages": [{}]}}"#,
            packages.join(", ")
        ))
        .unwrap_or_else(|error| panic!("{error}"))
    }

    /// One version identity: the lock and the environment spell the same releases
    /// otherwise (`2` and `2.0.0`, `1.0a1` and `1.0.0a1`, a local label's case and
    /// separators), and the step installs nothing; another release is still an upgrade.
    #[test]
    fn a_release_spelled_otherwise_is_installed() {
        let facts = facts_with(
            "cffi==2.0.0\neggs==1.0.0a1\nham==1.0.post0\nlocal==1.0+ubuntu.1\ntorch==2.9.1+CU130\n",
        );
        let index_urls: BTreeMap<String, String> = [(
            "local".to_string(),
            "https://index.example.invalid/simple".to_string(),
        )]
        .into();
        let plan_of = |lock: &Lock| {
            plan(
                lock,
                Path::new("/opt/env/bin/python3"),
                &facts,
                &index_urls,
                "upgrade index hash m.yaml",
                false,
                &Delivery {
                    fetch: FetchMode::Node,
                    installer: Installer::Pip,
                },
            )
            .unwrap_or_else(|error| panic!("{error}"))
        };
        let same = lock_of(&[
            ("cffi", "2", "cffi-2-py3-none-any.whl"),
            ("eggs", "1.0a1", "eggs-1.0a1-py3-none-any.whl"),
            ("ham", "1.0-post0", "ham-1.0.post0-py3-none-any.whl"),
            (
                "local",
                "1.0+UBUNTU-1",
                "local-1.0+ubuntu.1-py3-none-any.whl",
            ),
            (
                "torch",
                "2.9.1.0+cu130",
                "torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
            ),
        ]);
        let planned = plan_of(&same);
        assert_eq!(planned.step.action, Action::NoOp, "{:?}", planned.packages);
        assert!(planned.step.operations.is_empty());
        let other = lock_of(&[
            ("cffi", "2.0.1", "cffi-2.0.1-py3-none-any.whl"),
            ("eggs", "1.0a1", "eggs-1.0a1-py3-none-any.whl"),
            ("ham", "1.0.post0", "ham-1.0.post0-py3-none-any.whl"),
            (
                "local",
                "1.0+ubuntu.1",
                "local-1.0+ubuntu.1-py3-none-any.whl",
            ),
            (
                "torch",
                "2.9.1",
                "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl",
            ),
        ]);
        let planned = plan_of(&other);
        let upgraded: Vec<(&str, Option<&str>)> = planned
            .packages
            .upgrade
            .iter()
            .chain(&planned.packages.downgrade)
            .map(|change| (change.name.as_str(), change.to.as_deref()))
            .collect();
        assert_eq!(
            upgraded,
            [("cffi", Some("2.0.1")), ("torch", Some("2.9.1"))],
            "{:?}",
            planned.packages
        );
    }

    /// See: issue 9 — an index URL with credentials never reaches a command line.
    #[test]
    fn index_credentials_stay_off_the_command_line() {
        let requirements = Path::new("/var/tmp/cuda-upgrade/requirements-private.txt");
        for url in [
            format!("https://user:{TOKEN}@index.example.invalid/simple"),
            format!("https://index.example.invalid/simple?token={TOKEN}"),
        ] {
            let operations = install_from(
                &Installer::Pip,
                "/opt/env/bin/python3",
                "private",
                &url,
                requirements,
            );
            let [
                Operation::Upload {
                    path,
                    placement: Placement::Secret,
                    content,
                },
                Operation::Run(command),
            ] = operations.as_slice()
            else {
                panic!("unexpected operations: {operations:?}");
            };
            assert!(path.starts_with(SECRETS_DIR));
            assert_eq!(content, url.as_bytes());
            assert!(!command.render().contains(TOKEN), "{}", command.render());
            assert!(!command.display().contains(TOKEN));
            assert!(!command.render().contains("--index-url"));
        }
    }

    #[test]
    fn a_plain_index_url_is_an_argument() {
        let url = "https://download.example.invalid/whl/cu130";
        let operations = install_from(
            &Installer::Pip,
            "/opt/env/bin/python3",
            "cu130",
            url,
            Path::new("/var/tmp/r.txt"),
        );
        let [Operation::Run(command)] = operations.as_slice() else {
            panic!("unexpected operations: {operations:?}");
        };
        assert!(command.render().contains(&format!("--index-url {url}")));
    }

    /// The wrapper really hands the URL over through the environment: run it locally,
    /// with a child that reports its own command line and `PIP_INDEX_URL`.
    #[test]
    fn the_wrapper_passes_the_url_through_the_environment() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let file = dir.path().join("pip-index-x.url");
        let url = format!("https://user:{TOKEN}@index.example.invalid/simple");
        std::fs::write(&file, &url).unwrap_or_else(|error| panic!("{error}"));
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(WITH_INDEX_SCRIPT)
            .arg("pip-index")
            .arg(&file)
            .args([
                "sh",
                "-c",
                r#"tr '\0' ' ' < /proc/$$/cmdline; echo; printf '%s' "$PIP_INDEX_URL""#,
            ])
            .output()
            .unwrap_or_else(|error| panic!("{error}"));
        let text = String::from_utf8_lossy(&output.stdout);
        let (cmdline, environment) = text.split_once('\n').unwrap_or_default();
        assert!(!cmdline.contains(TOKEN), "{cmdline}");
        assert_eq!(environment, url);
        assert!(!file.exists(), "the secret file is removed before pip runs");
    }
}
