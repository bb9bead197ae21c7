//! The node a resolution is for: interpreter, platform, driver, GPUs, toolkit, runtime.
//!
//! Built from a manifest's `target` and `toolkit` when planning without a node, or
//! from a small JSON facts file (`--facts FILE`) until `upgrade probe`'s node facts
//! are mapped onto it. This module owns those two constructors and the marker
//! environment for PEP 508 markers; it does not probe anything.
//!
//! The facts file (every key required unless marked optional):
//!
//! ```json
//! {
//!   "python": "3.12.3",
//!   "implementation": "cpython",
//!   "glibc": "2.39",
//!   "arch": "x86_64",
//!   "driver": "580.159.04",
//!   "gpu_arch": ["sm_90"],
//!   "toolkit": "13.0.2",
//!   "cuda_runtime": "13.0"
//! }
//! ```
//!
//! `driver`, `toolkit` and `cuda_runtime` are optional (a node without a GPU or a
//! toolkit); `cuda_runtime` defaults to the toolkit's release line.

use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::{MarkerEnvironment, MarkerEnvironmentBuilder};
use serde::{Deserialize, Serialize};

use super::error::ResolveError;
use crate::cuda::{CudaVersion, DriverVersion, GpuArch};
use crate::index::tags::{Arch, Glibc, Platform};
use crate::manifest::Manifest;

/// The Python implementation, e.g. `cpython`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Implementation {
    /// CPython, the only implementation these stacks run on.
    Cpython,
}

/// What the resolver assumes about the node, e.g. CPython 3.12 on glibc 2.35 x86_64,
/// driver 580.82.07, `[sm_90, sm_100]`, toolkit 13.0.1, runtime 13.0.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetEnvironment {
    /// The interpreter's full version, e.g. `3.12.3` (or `3.12` when only that is known).
    pub python: Version,
    /// e.g. `cpython`.
    pub implementation: Implementation,
    /// e.g. `2.35`.
    pub glibc: Glibc,
    /// e.g. `x86_64`.
    pub arch: Arch,
    /// The NVIDIA driver, e.g. `580.82.07`; `None` on a node without one.
    pub driver: Option<DriverVersion>,
    /// The GPUs' architectures, e.g. `[sm_90, sm_120]`.
    pub gpu_archs: Vec<GpuArch>,
    /// The CUDA toolkit present after the change, e.g. `13.0.1`.
    pub toolkit: Option<CudaVersion>,
    /// The CUDA runtime the stack links, e.g. `13.0`.
    pub cuda_runtime: Option<CudaVersion>,
}

/// The JSON form of a [`TargetEnvironment`] read by `--facts FILE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactsFile {
    /// e.g. `3.12.3`.
    #[serde(deserialize_with = "dotted_python")]
    pub python: String,
    /// e.g. `cpython`.
    pub implementation: Implementation,
    /// e.g. `2.39`.
    #[serde(deserialize_with = "dotted_glibc")]
    pub glibc: String,
    /// e.g. `x86_64`.
    pub arch: Arch,
    /// e.g. `580.159.04`.
    #[serde(default)]
    pub driver: Option<DriverVersion>,
    /// e.g. `["sm_90"]`.
    pub gpu_arch: Vec<GpuArch>,
    /// e.g. `13.0.2`.
    #[serde(default)]
    pub toolkit: Option<CudaVersion>,
    /// e.g. `13.0`.
    #[serde(default)]
    pub cuda_runtime: Option<CudaVersion>,
}

/// The interpreter assumed when a manifest names none, e.g. `3.12`.
const DEFAULT_PYTHON: &str = "3.12";
/// The glibc assumed when a manifest names none: Ubuntu 22.04's, e.g. `2.35`.
const DEFAULT_GLIBC: Glibc = Glibc {
    major: 2,
    minor: 35,
};

impl TargetEnvironment {
    /// The environment a manifest describes: `target.python_version`, `target.glibc`,
    /// `target.driver`, `target.gpu_arch`, and the toolkit it installs; x86_64.
    pub fn from_manifest(manifest: &Manifest) -> Result<Self, ResolveError> {
        let python_text = manifest
            .target
            .python_version
            .as_deref()
            .unwrap_or(DEFAULT_PYTHON);
        let python = parse_python(python_text)?;
        let glibc = match &manifest.target.glibc {
            Some(text) => parse_glibc(text)?,
            None => DEFAULT_GLIBC,
        };
        let toolkit = manifest
            .toolkit
            .as_ref()
            .map(|toolkit| toolkit.version.clone());
        Ok(Self {
            python,
            implementation: Implementation::Cpython,
            glibc,
            arch: Arch::X86_64,
            driver: manifest.target.driver.clone(),
            gpu_archs: manifest.target.gpu_arch.clone(),
            cuda_runtime: toolkit.as_ref().map(CudaVersion::release),
            toolkit,
        })
    }

    /// The environment a facts file describes.
    pub fn from_facts(facts: FactsFile) -> Result<Self, ResolveError> {
        let cuda_runtime = facts
            .cuda_runtime
            .or_else(|| facts.toolkit.as_ref().map(CudaVersion::release));
        Ok(Self {
            python: parse_python(&facts.python)?,
            implementation: facts.implementation,
            glibc: parse_glibc(&facts.glibc)?,
            arch: facts.arch,
            driver: facts.driver,
            gpu_archs: facts.gpu_arch,
            toolkit: facts.toolkit,
            cuda_runtime,
        })
    }

    /// The node after the change: the facts' interpreter, platform, driver and GPUs, with
    /// the toolkit the manifest installs (and its runtime) in place of the node's own.
    pub fn with_manifest_toolkit(mut self, manifest: &Manifest) -> Self {
        if let Some(toolkit) = &manifest.toolkit {
            self.cuda_runtime = Some(toolkit.version.release());
            self.toolkit = Some(toolkit.version.clone());
        }
        self
    }

    /// Read a facts file's JSON text; `file` names it in errors.
    pub fn parse_facts(text: &str, file: &str) -> Result<Self, ResolveError> {
        let facts: FactsFile =
            serde_json::from_str(text).map_err(|source| ResolveError::Facts {
                file: file.to_string(),
                source,
            })?;
        Self::from_facts(facts)
    }

    /// The facts file form of this environment.
    pub fn to_facts(&self) -> FactsFile {
        FactsFile {
            python: self.python.to_string(),
            implementation: self.implementation,
            glibc: self.glibc.to_string(),
            arch: self.arch,
            driver: self.driver.clone(),
            gpu_arch: self.gpu_archs.clone(),
            toolkit: self.toolkit.clone(),
            cuda_runtime: self.cuda_runtime.clone(),
        }
    }

    /// The interpreter's `(major, minor)`, e.g. `(3, 12)`.
    pub fn python_minor(&self) -> (u32, u32) {
        let release = self.python.release();
        let part = |index: usize| {
            release
                .get(index)
                .and_then(|value| u32::try_from(*value).ok())
                .unwrap_or(0)
        };
        (part(0), part(1))
    }

    /// Wheel-tag compatibility for this node.
    pub fn platform(&self) -> Platform {
        Platform {
            python: self.python_minor(),
            glibc: self.glibc,
            arch: self.arch,
        }
    }

    /// The PEP 508 marker environment, e.g. `sys_platform == "linux"`,
    /// `python_version == "3.12"`.
    pub fn markers(&self) -> Result<MarkerEnvironment, ResolveError> {
        Self::linux_markers(&self.python, self.arch.as_str())
            .map_err(|message| ResolveError::Environment { message })
    }

    /// The PEP 508 markers of CPython `python` on Linux on `machine` (e.g. `x86_64`):
    /// `python_version` is its first two parts, `python_full_version` three (`.0` added
    /// to a version of two). `Err` says why the builder refused them.
    pub fn linux_markers(python: &Version, machine: &str) -> Result<MarkerEnvironment, String> {
        let release = python.release();
        let part = |index: usize| {
            release
                .get(index)
                .and_then(|value| u32::try_from(*value).ok())
                .unwrap_or(0)
        };
        let python_version = format!("{}.{}", part(0), part(1));
        let python_full_version = if release.len() >= 3 {
            python.to_string()
        } else {
            format!("{python_version}.0")
        };
        MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
            implementation_name: "cpython",
            implementation_version: &python_full_version,
            os_name: "posix",
            platform_machine: machine,
            platform_python_implementation: "CPython",
            platform_release: "",
            platform_system: "Linux",
            platform_version: "",
            python_full_version: &python_full_version,
            python_version: &python_version,
            sys_platform: "linux",
        })
        .map_err(|error| error.to_string())
    }
}

/// A facts file's (or a lock's) interpreter version as read: a PEP 440 version of ASCII
/// letters, digits, `.` and `+` (no space, no line break), e.g. `3.12.3` or `3.14.0rc1`;
/// it is written into exported markers.
fn dotted_python<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let text = String::deserialize(deserializer)?;
    let plain = !text.is_empty()
        && text.len() <= 32
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'+');
    if plain && Version::from_str(&text).is_ok() {
        Ok(text)
    } else {
        Err(serde::de::Error::custom(format!(
            "`{}` is not a Python version (e.g. `3.12.3`)",
            crate::text::text_value(&text)
        )))
    }
}

/// A facts file's (or a lock's) glibc as read, e.g. `2.39`.
fn dotted_glibc<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let text = String::deserialize(deserializer)?;
    match Glibc::from_str(&text) {
        Ok(_) if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') => Ok(text),
        _ => Err(serde::de::Error::custom(format!(
            "`{}` is not a glibc version (`MAJOR.MINOR`)",
            crate::text::text_value(&text)
        ))),
    }
}

fn parse_python(text: &str) -> Result<Version, ResolveError> {
    Version::from_str(text.trim()).map_err(|error| ResolveError::Environment {
        message: format!("`{text}` is not a Python version: {error}"),
    })
}

fn parse_glibc(text: &str) -> Result<Glibc, ResolveError> {
    Glibc::from_str(text).map_err(|message| ResolveError::Environment { message })
}
