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

use serde::{Deserialize, Serialize};

use super::environment::FactsFile;

/// The only lock schema this build writes.
pub const LOCK_SCHEMA: u32 = 1;

/// A resolved manifest for one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    /// Always [`LOCK_SCHEMA`].
    pub schema: u32,
    /// The manifest's name, e.g. `sglang-0.5.9-cuda13`.
    pub manifest: String,
    /// The sha256 of the manifest file it was resolved from: `plan --lock` and
    /// `apply --lock` refuse the lock for any other manifest (or an edited one). Locks
    /// written before it was recorded have none and are refused there too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_sha256: Option<String>,
    /// The node values the resolution assumed (the virtual packages' versions).
    pub assumed: FactsFile,
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
    pub package: Option<String>,
    /// One sentence, e.g. ``several CUDA majors in one environment: …``.
    pub message: String,
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
    pub name: String,
    /// Exact version, e.g. `2.9.1+cu130`.
    pub version: String,
    /// Extras the closure uses, e.g. `[srt]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extras: Vec<String>,
    /// Where it comes from.
    #[serde(flatten)]
    pub source: LockedSource,
    /// Explicit indexes that also serve this package although it came from another
    /// index, e.g. `[pytorch-cu130]` for a `triton` from `default` (a review hazard).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_on_explicit: Vec<String>,
}

impl LockedPackage {
    /// The index, file and sha256 of a package that comes from an index; `None` for a
    /// git checkout.
    pub fn index_file(&self) -> Option<(&String, &String, &Option<String>)> {
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
            format!("[{}]", self.extras.join(","))
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
        index: String,
        /// e.g. `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        file: String,
        /// The file's sha256, when recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
    },
    /// A git checkout built on the node.
    Git {
        /// e.g. `https://github.com/sgl-project/sglang`.
        url: String,
        /// e.g. `v0.5.9`.
        rev: String,
        /// e.g. `python`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subdirectory: Option<String>,
    },
}

impl LockedSource {
    /// What is installed, for people: `FILE sha256:HASH` (`unknown` without one), or
    /// `git URL@REV` with ` (SUBDIRECTORY)`.
    pub fn artifact(&self) -> String {
        match self {
            LockedSource::Index { file, sha256, .. } => {
                format!("{file} sha256:{}", sha256.as_deref().unwrap_or("unknown"))
            }
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
        self.packages.iter().find(|package| package.name == name)
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
