//! Parser for `python -m pip freeze --all` of the target environment, and the fallback
//! list the interpreter reports through `importlib.metadata` when pip is missing. It
//! records what is installed (names normalized per PEP 503, versions with their local
//! labels); it does not compare the environment with a lock.
//!
//! See: <https://pip.pypa.io/en/stable/cli/pip_freeze/>

use std::path::PathBuf;

use pep440_rs::Version;
use pep508_rs::PackageName;
use serde::{Deserialize, Serialize};

use crate::facts::error::FactsError;
use crate::facts::python::Distribution;
use crate::facts::versions::{package_name, package_version};

/// How a package got into the environment, as `pip freeze` tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum PackageOrigin {
    /// A plain `torch==2.11.0` line: installed from an index or a wheel file.
    Index,
    /// A `name @ URL` line, e.g. `sglang @ file:///src/sglang/python`.
    DirectUrl {
        /// The URL, e.g. `file:///src/sglang/python`.
        url: String,
    },
    /// A `-e LOCATION` line, e.g. `-e git+https://github.com/sgl-project/sglang@3f2a…#egg=sglang`.
    Editable {
        /// The location, e.g. `/src/sglang/python`.
        location: String,
    },
}

/// One installed distribution, e.g. `torch` `2.11.0`, or `torch` `2.9.1+cu130` (the
/// local label is part of the version).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledPackage {
    /// The normalized name, e.g. `nvidia-cudnn-cu13` (from `nvidia_cudnn_cu13`).
    pub name: PackageName,
    /// The version with its local label, e.g. `2.9.1+cu130`; `None` for a direct URL
    /// line, which carries no version, or for a version that is not PEP 440.
    pub version: Option<Version>,
    /// How it was installed.
    pub origin: PackageOrigin,
}

/// Where the package list was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PackagesSource {
    /// `python -m pip freeze --all`.
    PipFreeze,
    /// `importlib.metadata.distributions()` and each one's `direct_url.json`: what the
    /// probe reads now (a saved `pip freeze` still reads as [`Self::PipFreeze`]).
    ImportlibMetadata,
}

/// Reads the name behind an editable location: `#egg=NAME` in a VCS URL.
fn egg_name(location: &str) -> Option<&str> {
    let fragment = location.rsplit_once('#')?.1;
    fragment
        .split('&')
        .find_map(|part| part.strip_prefix("egg="))
        .filter(|name| !name.is_empty())
}

/// Parses `pip freeze --all` output, sorted by name.
///
/// Understands `name==version`, `name===version`, `name @ url`, `-e location` and the
/// `# Editable install with no version control (name==version)` comment pip writes
/// before an editable line without `#egg=`.
pub fn parse_pip_freeze(text: &str) -> Result<Vec<InstalledPackage>, FactsError> {
    let mut packages = Vec::new();
    let mut pending_editable: Option<(String, Option<String>)> = None;
    for (index, raw_line) in text.lines().enumerate() {
        let line = raw_line.trim();
        let on_line = |error: FactsError| error.on_line(index + 1, raw_line);
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            pending_editable = comment
                .rsplit_once('(')
                .and_then(|(_, inner)| inner.strip_suffix(')'))
                .and_then(|inner| inner.split_once("=="))
                .map(|(name, version)| (name.to_string(), Some(version.to_string())));
            continue;
        }
        if let Some(location) = line
            .strip_prefix("-e ")
            .or_else(|| line.strip_prefix("--editable "))
        {
            let location = location.trim();
            let (name, version) = match (egg_name(location), pending_editable.take()) {
                (Some(name), _) => (name.to_string(), None),
                (None, Some((name, version))) => (name, version),
                (None, None) => continue,
            };
            packages.push(InstalledPackage {
                name: package_name(&name).map_err(on_line)?,
                version: version
                    .as_deref()
                    .map(package_version)
                    .transpose()
                    .map_err(on_line)?,
                origin: PackageOrigin::Editable {
                    location: location.to_string(),
                },
            });
            continue;
        }
        pending_editable = None;
        if line.starts_with('-') {
            continue;
        }
        let package = if let Some((name, url)) = line.split_once(" @ ") {
            InstalledPackage {
                name: package_name(name).map_err(on_line)?,
                version: None,
                origin: PackageOrigin::DirectUrl {
                    url: url.trim().to_string(),
                },
            }
        } else if let Some((name, version)) = line.split_once("==") {
            // `===` (arbitrary equality) and legacy versions need not be PEP 440: such a
            // package is kept, without a version, rather than failing the whole probe.
            let version = version.strip_prefix('=').unwrap_or(version);
            InstalledPackage {
                name: package_name(name).map_err(on_line)?,
                version: package_version(version).ok(),
                origin: PackageOrigin::Index,
            }
        } else {
            return Err(FactsError::InvalidLine {
                line: index + 1,
                text: raw_line.to_string(),
            });
        };
        packages.push(package);
    }
    packages.sort_by(|left, right| left.name.cmp(&right.name));
    Ok(packages)
}

/// Builds the package list from `importlib.metadata` pairs, e.g. `["Jinja2", "3.1.6"]`.
pub fn packages_from_distributions(
    distributions: &[Distribution],
) -> Result<Vec<InstalledPackage>, FactsError> {
    let mut packages = distributions
        .iter()
        .map(|distribution| {
            let origin = distribution
                .direct_url
                .as_deref()
                .and_then(origin_from_direct_url)
                .unwrap_or(PackageOrigin::Index);
            Ok(InstalledPackage {
                name: package_name(&distribution.name)?,
                // As `pip freeze` shows it: a direct URL line carries no version.
                version: match origin {
                    PackageOrigin::DirectUrl { .. } => None,
                    _ => package_version(&distribution.version).ok(),
                },
                origin,
            })
        })
        .collect::<Result<Vec<_>, FactsError>>()?;
    packages.sort_by(|left, right| left.name.cmp(&right.name));
    packages.dedup_by(|left, right| left.name == right.name);
    Ok(packages)
}

/// How a distribution was installed, from its `direct_url.json` (PEP 610), as `pip
/// freeze` reads it: editable (`-e LOCATION`), a VCS checkout (`git+URL@COMMIT`), or a
/// URL; `None` when the file is not what PEP 610 says.
///
/// See: <https://packaging.python.org/en/latest/specifications/direct-url-data-structure/>
fn origin_from_direct_url(text: &str) -> Option<PackageOrigin> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let url = value.get("url")?.as_str()?.to_string();
    if value
        .pointer("/dir_info/editable")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
    {
        let location = url
            .strip_prefix("file://")
            .map_or(url.clone(), str::to_string);
        return Some(PackageOrigin::Editable { location });
    }
    if let Some(vcs) = value.get("vcs_info") {
        let kind = vcs.get("vcs")?.as_str()?;
        let commit = vcs.get("commit_id")?.as_str()?;
        return Some(PackageOrigin::DirectUrl {
            url: format!("{kind}+{url}@{commit}"),
        });
    }
    Some(PackageOrigin::DirectUrl { url })
}

/// Finds a package by (any spelling of) its name, e.g. `nvidia_cudnn_cu13`.
pub fn find_package<'a>(
    packages: &'a [InstalledPackage],
    name: &str,
) -> Option<&'a InstalledPackage> {
    let name = package_name(name).ok()?;
    packages.iter().find(|package| package.name == name)
}

/// The editable location as a path when it is one, e.g. `/src/sglang/python`.
pub fn editable_path(package: &InstalledPackage) -> Option<PathBuf> {
    match &package.origin {
        PackageOrigin::Editable { location } if location.starts_with('/') => {
            Some(PathBuf::from(location))
        }
        PackageOrigin::Editable { .. } | PackageOrigin::Index | PackageOrigin::DirectUrl { .. } => {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::test_support::capture;

    #[test]
    fn h200_freeze_has_torch_2_11_0_without_label() {
        let packages = parse_pip_freeze(&capture("pip-freeze.txt")).unwrap();
        assert_eq!(packages.len(), 196);
        let torch = find_package(&packages, "torch").unwrap();
        assert_eq!(torch.version.as_ref().unwrap().to_string(), "2.11.0");
        assert!(!torch.version.as_ref().unwrap().is_local());
        assert_eq!(torch.origin, PackageOrigin::Index);
        let cudnn = find_package(&packages, "nvidia_cudnn_cu13").unwrap();
        assert_eq!(cudnn.name.to_string(), "nvidia-cudnn-cu13");
        assert_eq!(cudnn.version.as_ref().unwrap().to_string(), "9.19.0.56");
        assert_eq!(
            find_package(&packages, "jinja2").unwrap().name.to_string(),
            "jinja2"
        );
        assert_eq!(
            find_package(&packages, "ML-Dtypes")
                .unwrap()
                .name
                .to_string(),
            "ml-dtypes"
        );
    }

    #[test]
    fn freeze_reads_labels_urls_and_editables() {
        let packages = parse_pip_freeze(
            "torch==2.9.1+cu130\n\
             sgl-kernel @ file:///wheels/sgl_kernel-0.3.21%2Bcu130-cp310-abi3-linux_x86_64.whl\n\
             -e git+https://github.com/sgl-project/sglang@3f2a1b#egg=sglang&subdirectory=python\n\
             # Editable install with no version control (flashinfer-python==0.6.4)\n\
             -e /src/flashinfer\n\
             legacy===1.0-custom\n",
        )
        .unwrap();
        let torch = find_package(&packages, "torch").unwrap();
        assert_eq!(torch.version.as_ref().unwrap().to_string(), "2.9.1+cu130");
        assert!(matches!(
            find_package(&packages, "sgl-kernel").unwrap().origin,
            PackageOrigin::DirectUrl { .. }
        ));
        assert!(matches!(
            find_package(&packages, "sglang").unwrap().origin,
            PackageOrigin::Editable { .. }
        ));
        let flashinfer = find_package(&packages, "flashinfer-python").unwrap();
        assert_eq!(flashinfer.version.as_ref().unwrap().to_string(), "0.6.4");
        assert_eq!(
            editable_path(flashinfer),
            Some(PathBuf::from("/src/flashinfer"))
        );
        assert_eq!(find_package(&packages, "legacy").unwrap().version, None);
    }

    #[test]
    fn malformed_freeze_line_is_an_error() {
        assert!(matches!(
            parse_pip_freeze("torch\n"),
            Err(FactsError::InvalidLine { line: 1, .. })
        ));
        assert!(parse_pip_freeze("+torch==2.11.0\n").is_err());
        let legacy = parse_pip_freeze("oldpkg==1.0-custom-build\n").unwrap();
        assert_eq!(legacy[0].version, None);
    }

    #[test]
    fn distributions_fallback_normalizes_and_dedups() {
        let row = |name: &str, version: &str, direct_url: Option<&str>| Distribution {
            name: name.to_string(),
            version: version.to_string(),
            direct_url: direct_url.map(str::to_string),
        };
        let packages = packages_from_distributions(&[
            row("Jinja2", "3.1.6", None),
            row("jinja2", "3.1.6", None),
            row("sglang", "0.5.9", Some(r#"{"url": "file:///var/lib/cuda-upgrade/src/sglang/python", "dir_info": {}}"#)),
            row("flashinfer", "0.6.4", Some(r#"{"url": "https://example.invalid/fi.git", "vcs_info": {"vcs": "git", "commit_id": "3f2a"}}"#)),
            row("mine", "1.0", Some(r#"{"url": "file:///src/mine", "dir_info": {"editable": true}}"#)),
        ])
        .unwrap();
        assert_eq!(packages.len(), 4);
        let origin = |name: &str| find_package(&packages, name).unwrap().origin.clone();
        assert_eq!(
            origin("sglang"),
            PackageOrigin::DirectUrl {
                url: "file:///var/lib/cuda-upgrade/src/sglang/python".to_string()
            }
        );
        assert_eq!(find_package(&packages, "sglang").unwrap().version, None);
        assert_eq!(
            origin("flashinfer"),
            PackageOrigin::DirectUrl {
                url: "git+https://example.invalid/fi.git@3f2a".to_string()
            }
        );
        assert_eq!(
            origin("mine"),
            PackageOrigin::Editable {
                location: "/src/mine".to_string()
            }
        );
        assert_eq!(origin("jinja2"), PackageOrigin::Index);
    }
}
