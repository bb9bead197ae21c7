//! The lock: the resolution of a manifest for one node, as data.
//!
//! Exact versions, the index each package comes from, the file chosen for the node
//! (the best compatible wheel, or an sdist), its sha256, git sources with their rev,
//! and the node values the resolution assumed. Installed with `--no-deps
//! --require-hashes`, nothing can be swapped. JSON form (`schema: 1`):
//!
//! ```json
//! {
//!   "schema": 1,
//!   "manifest": "sglang-0.5.9-cuda13",
//!   "manifest_sha256": "3f1c…",
//!   "assumed": { "python": "3.12", "implementation": "cpython", "glibc": "2.35",
//!                "arch": "x86_64", "driver": "580.82.07", "gpu_arch": ["sm_90"],
//!                "toolkit": "13.0.1", "cuda_runtime": "13.0" },
//!   "packages": [
//!     { "name": "torch", "version": "2.9.1+cu130", "source": "index",
//!       "index": "pytorch-cu130",
//!       "file": "torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
//!       "sha256": "…" },
//!     { "name": "sglang", "version": "0.5.9", "source": "git",
//!       "url": "https://github.com/sgl-project/sglang", "rev": "v0.5.9",
//!       "subdirectory": "python" }
//!   ]
//! }
//! ```

use std::path::{Component, Path};

use pep440_rs::Version;
use pep508_rs::{ExtraName, PackageName};
use serde::{Deserialize, Deserializer, Serialize};

use super::environment::FactsFile;
use crate::index::filename::DistFileName;
use crate::manifest::Sha256;
use crate::text::Line;

/// The only lock schema this build writes.
pub const LOCK_SCHEMA: u32 = 1;

/// Where the lock of the manifest at `manifest` lives: `NAME.lock.json` beside
/// `NAME.yaml` (also for a `REV:PATH` path read from git), e.g.
/// `manifests/x.yaml` → `manifests/x.lock.json`.
pub fn lock_path_beside(manifest: &Path) -> std::path::PathBuf {
    let stem = manifest
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    manifest.with_file_name(format!("{stem}.lock.json"))
}

/// A resolved manifest for one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    /// Always [`LOCK_SCHEMA`].
    pub schema: u32,
    /// The manifest's name, e.g. `sglang-0.5.9-cuda13`.
    pub manifest: Line,
    /// The sha256 of the manifest file it was resolved from: `plan --lock` and
    /// `apply --lock` refuse the lock for any other manifest (or an edited one). Locks
    /// written before it was recorded have none and are refused there too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_sha256: Option<Sha256>,
    /// The node values the resolution assumed (the virtual packages' versions).
    pub assumed: FactsFile,
    /// What the resolution depended on in the manifest: the lock is fresh while the
    /// manifest still says the same (comments and `env`, `verify`, `service` or
    /// `ldconfig` edits do not change it). Locks written before it was recorded have none
    /// and are stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<super::inputs::LockInputs>,
    /// Every package of the closure, by name.
    pub packages: Vec<LockedPackage>,
    /// What a reviewer should know about the resolution: several CUDA majors, a wheel
    /// whose runtime differs from the system toolkit's, a package assumed
    /// CUDA-independent, an sdist the node will build, a top-level package kept below
    /// its newest release and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<LockFinding>,
}

/// One finding of a resolution, e.g. a warning that CUDA 12 and CUDA 13 wheels share
/// the environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockFinding {
    /// How much it matters.
    pub kind: FindingKind,
    /// The package it is about, e.g. `torch`; none for the whole environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<PackageName>,
    /// One sentence, e.g. ``several CUDA majors in one environment: …``.
    pub message: Line,
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FindingKind {
    /// The stack may not work as it is (several CUDA majors, a toolkit of another major
    /// than a wheel's).
    Warning,
    /// It works, with a documented limit (a driver older than a wheel's CUDA update).
    Hazard,
    /// Worth knowing (an assumption, a build on the node, why not the newest release).
    Note,
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Warning => "warning",
            Self::Hazard => "hazard",
            Self::Note => "note",
        })
    }
}

/// One pinned package, e.g. `torch 2.9.1+cu130` from `pytorch-cu130`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockedPackage {
    /// Normalized name, e.g. `torch`.
    pub name: PackageName,
    /// Exact version, e.g. `2.9.1+cu130`.
    pub version: Version,
    /// Extras the closure uses, e.g. `[srt]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extras: Vec<ExtraName>,
    /// Where it comes from.
    #[serde(flatten)]
    pub source: LockedSource,
    /// Explicit indexes that also serve this package although it came from another
    /// index, e.g. `[pytorch-cu130]` for a `triton` from `default` (a review hazard).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_on_explicit: Vec<Line>,
}

impl LockedPackage {
    /// The index, file and sha256 of a package that comes from an index; `None` for a
    /// git checkout.
    pub fn index_file(&self) -> Option<(&Line, &DistFileName, &Option<Sha256>)> {
        match &self.source {
            LockedSource::Index {
                index,
                file,
                sha256,
            } => Some((index, file, sha256)),
            LockedSource::Git { .. } => None,
        }
    }

    /// The extras as a requirement writes them, e.g. `[srt]`; nothing without extras.
    pub fn extras_suffix(&self) -> String {
        if self.extras.is_empty() {
            String::new()
        } else {
            let extras: Vec<&str> = self.extras.iter().map(ExtraName::as_ref).collect();
            format!("[{}]", extras.join(","))
        }
    }
}

/// Where a locked package comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum LockedSource {
    /// A file from a named index.
    Index {
        /// e.g. `pytorch-cu130`.
        index: Line,
        /// e.g. `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        file: DistFileName,
        /// The file's sha256, when recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<Sha256>,
    },
    /// A git checkout built on the node. A lock read from a file must name the very
    /// source its manifest names (`plan --lock`, `apply --lock` check it).
    Git {
        /// e.g. `https://github.com/sgl-project/sglang`.
        #[serde(deserialize_with = "not_an_option")]
        url: Line,
        /// e.g. `v0.5.9`.
        #[serde(deserialize_with = "not_an_option")]
        rev: Line,
        /// e.g. `python`.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "inside_the_repository"
        )]
        subdirectory: Option<Line>,
    },
}

impl LockedSource {
    /// What is installed, for people: `FILE sha256:HASH` (`unknown` without one), or
    /// `git URL@REV` with ` (SUBDIRECTORY)`.
    pub fn artifact(&self) -> String {
        match self {
            LockedSource::Index { file, sha256, .. } => format!(
                "{file} sha256:{}",
                sha256.as_ref().map_or("unknown", Sha256::as_str)
            ),
            LockedSource::Git {
                url,
                rev,
                subdirectory,
            } => format!(
                "git {url}@{rev}{}",
                subdirectory
                    .as_deref()
                    .map(|subdirectory| format!(" ({subdirectory})"))
                    .unwrap_or_default()
            ),
        }
    }
}

impl Lock {
    /// The locked package of this name.
    pub fn package(&self, name: &str) -> Option<&LockedPackage> {
        self.packages
            .iter()
            .find(|package| package.name.as_ref() == name)
    }

    /// Read a lock from its JSON text (what `upgrade lock --format json` writes), each
    /// value through the checks its type makes (names, versions, one-component file
    /// names, 64-hex digests, one-line text), e.g. a version holding a line break is
    /// refused at its line and column.
    pub fn from_json(text: &str) -> Result<Self, LockReadError> {
        if !text.trim_start().starts_with('{') {
            return Err(LockReadError::NotJson);
        }
        let lock: Lock = serde_json::from_str(text).map_err(|error| LockReadError::Value {
            line: error.line(),
            column: error.column(),
            error,
        })?;
        if lock.schema != LOCK_SCHEMA {
            return Err(LockReadError::Schema(lock.schema));
        }
        Ok(lock)
    }

    /// Read the lock in `path`; see [`Lock::from_json`]. The caller names the path.
    pub fn read(path: &Path) -> Result<Self, LockReadError> {
        let text = fs_err::read_to_string(path).map_err(LockReadError::Io)?;
        Self::from_json(&text)
    }

    /// Plain text: one line per package, then the assumed node values.
    pub fn text(&self) -> String {
        let mut out = format!(
            "# lock of `{}` ({} packages)\n",
            self.manifest,
            self.packages.len()
        );
        let assumed = &self.assumed;
        let optional = |value: Option<String>| value.unwrap_or_else(|| "none".to_string());
        out.push_str(&format!(
            "# assumed: python {} ({}), glibc {}, {}, driver {}, gpu {}, toolkit {}, cuda runtime {}\n",
            assumed.python,
            match assumed.implementation {
                super::environment::Implementation::Cpython => "cpython",
            },
            assumed.glibc,
            assumed.arch,
            optional(assumed.driver.as_ref().map(ToString::to_string)),
            assumed
                .gpu_arch
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            optional(assumed.toolkit.as_ref().map(ToString::to_string)),
            optional(assumed.cuda_runtime.as_ref().map(ToString::to_string)),
        ));
        if let Some(sha256) = &self.manifest_sha256 {
            out.push_str(&format!("# manifest sha256: {sha256}\n"));
        }
        for finding in &self.findings {
            out.push_str(&format!("# {}: {}\n", finding.kind, finding.message));
        }
        for package in &self.packages {
            let origin = match &package.source {
                LockedSource::Index { index, .. } => format!("{index}: "),
                LockedSource::Git { .. } => String::new(),
            };
            out.push_str(&format!(
                "{}{}=={}  # {origin}{}\n",
                package.name,
                package.extras_suffix(),
                package.version,
                package.source.artifact()
            ));
        }
        out
    }
}

/// Why a lock's text is not a lock this build reads.
#[derive(Debug, thiserror::Error)]
pub enum LockReadError {
    /// The file could not be read.
    #[error("it cannot be read")]
    Io(#[source] std::io::Error),
    /// Not JSON at all, e.g. the text form.
    #[error(
        "it is not a JSON lock (the text form is for people); write one with `upgrade lock MANIFEST --format json -o FILE`"
    )]
    NotJson,
    /// A value is missing, of the wrong kind, or refused by its type's checks.
    #[error("{}", crate::text::text_value(&.error.to_string()))]
    Value {
        /// From 1.
        line: usize,
        /// From 1.
        column: usize,
        /// What serde said, e.g. `invalid version`: shown only escaped, never as a
        /// cause of its own.
        error: serde_json::Error,
    },
    /// Another schema.
    #[error("lock schema {0} is not {LOCK_SCHEMA}, the one this build reads")]
    Schema(u32),
}

/// A one-line value a program must never read as an option: no leading `-`, e.g. a
/// git URL or revision.
fn not_an_option<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Line, D::Error> {
    let line = Line::deserialize(deserializer)?;
    if line.is_empty() || line.starts_with('-') {
        return Err(serde::de::Error::custom(format!(
            "`{line}` is empty or starts with `-`, which a program would read as an option"
        )));
    }
    Ok(line)
}

/// A path inside a repository: relative, without `..`, e.g. `python`.
fn inside_the_repository<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Line>, D::Error> {
    let Some(line) = Option::<Line>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let path = Path::new(line.as_str());
    if line.is_empty()
        || path.is_absolute()
        || path
            .components()
            .any(|component| matches!(component, Component::ParentDir))
    {
        return Err(serde::de::Error::custom(format!(
            "`{line}` is not a path inside the repository (relative, without `..`)"
        )));
    }
    Ok(Some(line))
}
