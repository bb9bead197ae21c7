//! Why the resolver holds each dependency and why it refuses a release: the causes the
//! provider records as it hands dependencies to pubgrub, read by the conflict report and
//! by the search for independent conflicts.
//!
//! Plain data below the provider, the report and `relax`, so that none of them needs
//! another to name a cause.

use std::fmt;

use pep440_rs::Version;
use pep508_rs::Requirement;
use pubgrub::{DerivationTree, Ranges};

use super::package::ResolverPackage;
use super::request::{ManifestPin, RootRequirement};
use crate::index::tags::Glibc;
use crate::rules::{
    AbiPin, ArchSupport, CUDA_RUNTIME_FILE, DriverMinimum, MajorRule, RuntimeGap, VersionLock,
};

/// The version set of every package: one range type for pubgrub and PEP 440.
pub type VersionRange = Ranges<Version>;

/// Why a dependency exists.
#[derive(Debug, Clone, PartialEq)]
pub enum Cause {
    /// A root requirement written in the manifest.
    Manifest(RootRequirement),
    /// An override that replaced a requirement.
    Override(ManifestPin),
    /// A constraint that narrowed a requirement.
    Constraint(ManifestPin),
    /// The dependent release's own `Requires-Dist`, e.g. `flashinfer_python==0.6.3`.
    Metadata(Requirement),
    /// The dependent release's `Requires-Python`, e.g. `>=3.10`.
    RequiresPython(String),
    /// The root's `Requires-Python`.
    RootRequiresPython(String),
    /// `pkg[extra]` needs `pkg` at the same version.
    ExtraBase,
    /// The release's wheels are manylinux wheels for at least this glibc.
    WheelGlibc(Glibc),
    /// The manifest installs a toolkit.
    Toolkit,
    /// The manifest's stack links a CUDA runtime.
    Runtime,
    /// A rule from `manifests/rules/`.
    Rule(RuleCause),
}

/// A rule that adds a dependency, with its source.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleCause {
    /// Toolkit → minimum driver.
    Driver(DriverMinimum),
    /// A CUDA runtime of one major → its driver floor under minor version compatibility.
    MinorVersion(MajorRule),
    /// Toolkit → supported GPU architectures.
    Arch(ArchSupport),
    /// A local label names the runtime's major, e.g. `+cu130` → CUDA 13, and JIT paths
    /// need a toolkit of that major (`==13.*`).
    LocalLabel {
        /// e.g. `cu130`.
        label: String,
        /// e.g. `==13.*`.
        runtime: String,
        /// Where the label is documented.
        source: String,
        /// Where the same-major toolkit requirement is documented.
        jit_source: String,
    },
    /// A wheel family carries a runtime of one major, e.g. `nvidia-*-cu12` → `==12.*`.
    Family {
        /// e.g. `nvidia-*-cu12`.
        pattern: String,
        /// e.g. `==12.*`.
        runtime: String,
        /// Where it is documented.
        source: String,
    },
    /// A native ABI pin.
    AbiPin(Box<AbiPin>),
    /// A version lock, e.g. flashinfer-cubin follows flashinfer-python.
    VersionLock(VersionLock),
}

/// One recorded edge: `dependent version` needs `dependency` in `range` because of `cause`.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// e.g. `torch`.
    pub dependency: ResolverPackage,
    /// e.g. `==2.9.1`.
    pub range: VersionRange,
    /// Why.
    pub cause: Cause,
}

/// Why a release cannot be used on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// No wheel fits the node's interpreter and platform, and no sdist may be built.
    NoCompatibleFile {
        /// e.g. `cp311-cp311-manylinux_2_28_x86_64`.
        tags: Vec<String>,
        /// Whether an sdist exists but is not allowed (`no_build`).
        sdist_refused: bool,
    },
    /// Every usable file is yanked and the root does not pin this version exactly.
    Yanked {
        /// The index's reason, e.g. `broken build`.
        reason: String,
    },
    /// A git source whose version has no recorded metadata in any index.
    NoMetadata {
        /// e.g. `https://github.com/sgl-project/sglang`.
        url: String,
    },
    /// A `+cuXYZ` build of a CUDA major no runtime rule gives a driver floor for.
    NoRuntimeRule(RuntimeGap),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCompatibleFile {
                tags,
                sdist_refused,
            } => {
                if tags.is_empty() {
                    f.write_str("it has no wheel")?;
                } else {
                    write!(f, "no wheel fits this node (wheels: {})", tags.join(", "))?;
                }
                if *sdist_refused {
                    f.write_str(" and building its sdist is not allowed")?;
                } else {
                    f.write_str(" and it has no sdist")?;
                }
                Ok(())
            }
            Self::Yanked { reason } if reason.is_empty() => f.write_str("it is yanked"),
            Self::Yanked { reason } => {
                write!(f, "it is yanked (`{}`)", crate::text::text_value(reason))
            }
            Self::NoMetadata { url } => write!(
                f,
                "no index records the metadata of this version to stand in for the checkout of `{url}`"
            ),
            Self::NoRuntimeRule(RuntimeGap::UnknownMajor(major)) => write!(
                f,
                "its local label names CUDA {major}, which has no row under `majors:` in `{CUDA_RUNTIME_FILE}`"
            ),
        }
    }
}

/// A failed resolution's derivation tree.
pub type Tree = DerivationTree<ResolverPackage, VersionRange, Unavailable>;
