//! What to resolve: the root requirements, overrides, constraints, index order and
//! options, built from a manifest (or, in tests, from a scenario).

use std::collections::BTreeSet;
use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{MarkerTree, PackageName, Requirement, VersionOrUrl};

use crate::cuda::CudaWheelPolicy;
use crate::manifest::yaml::Span;
use crate::manifest::{GitSource, Manifest, PackageOrigin, Prereleases};

/// A named index and whether it is explicit, in priority order, e.g. `pytorch-cu130`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexPolicy {
    /// e.g. `pytorch-cu130`.
    pub name: String,
    /// An explicit index serves only the packages that name it.
    pub explicit: bool,
}

/// Where a root requirement was written, e.g. `manifests/x.yaml:30:3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
    pub file: String,
    /// e.g. `30:3`; `None` when the requirement was not written in a file.
    pub span: Option<Span>,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.span {
            Some(span) => write!(f, "{}:{span}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// A direct requirement of the root, e.g. `torch==2.9.1+cu130` from `pytorch-cu130`.
#[derive(Debug, Clone, PartialEq)]
pub struct RootRequirement {
    /// e.g. `torch==2.9.1+cu130`.
    pub requirement: Requirement,
    /// The index it must come from, e.g. `pytorch-cu130`.
    pub index: Option<String>,
    /// A git source (the version is the one the checkout builds).
    pub git: Option<GitSource>,
    /// Where it was written.
    pub origin: Origin,
}

/// An override or a constraint, e.g. `flashinfer-python==0.6.4`.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestPin {
    /// e.g. `flashinfer-python==0.6.4`.
    pub requirement: Requirement,
    /// Where it was written.
    pub origin: Origin,
}

/// Which packages a build policy names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PackageSelection {
    /// None.
    #[default]
    None,
    /// Every package.
    All,
    /// These, e.g. `[flash-attn]`.
    Packages(BTreeSet<PackageName>),
}

impl PackageSelection {
    /// Whether `name` is selected.
    pub fn contains(&self, name: &PackageName) -> bool {
        match self {
            Self::None => false,
            Self::All => true,
            Self::Packages(names) => names.contains(name),
        }
    }
}

/// When pre-releases may be chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrereleaseMode {
    /// For a package a root requirement names a pre-release for, or whose every release
    /// is a pre-release; for any other package only when no stable release is left in
    /// the range the resolution asks for, e.g. `flash-attn-4>=4.0.0b18` where every
    /// release from 4.0.0b18 on is a beta (uv's and pip's default).
    #[default]
    IfNecessaryOrExplicit,
    /// For every package.
    Allow,
}

/// Resolver switches, e.g. which packages may not be built from source.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResolveOptions {
    /// Pre-release policy.
    pub prereleases: PrereleaseMode,
    /// Packages that must come as wheels (no sdist builds).
    pub no_build: PackageSelection,
    /// Packages that must come as sdists.
    pub no_binary: PackageSelection,
    /// Which CUDA majors the wheels may carry (`target.cuda_wheels`).
    pub cuda_wheels: CudaWheelPolicy,
}

/// Everything to resolve.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The root's name in reports, e.g. `sglang-0.5.9-cuda13`.
    pub name: String,
    /// The file the root comes from, e.g. `manifests/sglang-0.5.9-cu130.yaml`.
    pub file: String,
    /// Direct requirements.
    pub requirements: Vec<RootRequirement>,
    /// Requirements that replace every requirement on their package.
    pub overrides: Vec<ManifestPin>,
    /// Requirements that narrow their package when it is in the closure.
    pub constraints: Vec<ManifestPin>,
    /// Indexes in priority order.
    pub indexes: Vec<IndexPolicy>,
    /// The root's own `Requires-Python`, e.g. `>=3.12`.
    pub requires_python: Option<VersionSpecifiers>,
    /// Switches.
    pub options: ResolveOptions,
}

impl Request {
    /// The index each root requirement is pinned to, by name, e.g. `torch` →
    /// `pytorch-cu130`.
    pub fn index_pins(&self) -> std::collections::BTreeMap<PackageName, String> {
        self.requirements
            .iter()
            .filter_map(|root| {
                root.index
                    .as_ref()
                    .map(|index| (root.requirement.name.clone(), index.clone()))
            })
            .collect()
    }

    /// The request a manifest makes; `file` names it in reports.
    pub fn from_manifest(manifest: &Manifest, file: &str) -> Self {
        let origin = |span| Origin {
            file: file.to_string(),
            span: Some(span),
        };
        let requirements = manifest
            .packages
            .iter()
            .map(|package| {
                let extras = package
                    .extras
                    .iter()
                    .filter_map(|extra| pep508_rs::ExtraName::from_str(extra).ok())
                    .collect();
                let (specifiers, index, git) = match &package.origin {
                    PackageOrigin::Index { specifiers, index } => {
                        (specifiers.clone(), index.clone(), None)
                    }
                    PackageOrigin::Git(git) => {
                        // Without `version:` the checkout's version is unknown; the
                        // provider then has no metadata to read and says so.
                        let specifiers = git
                            .version
                            .as_ref()
                            .map(exact)
                            .unwrap_or_else(VersionSpecifiers::empty);
                        (specifiers, None, Some(git.clone()))
                    }
                };
                RootRequirement {
                    requirement: Requirement {
                        name: package.name.clone(),
                        extras,
                        version_or_url: Some(VersionOrUrl::VersionSpecifier(specifiers)),
                        marker: MarkerTree::TRUE,
                        origin: None,
                    },
                    index,
                    git,
                    origin: origin(package.span),
                }
            })
            .collect();
        let pins = |pins: &[crate::manifest::Pin]| {
            pins.iter()
                .map(|pin| ManifestPin {
                    requirement: pin.requirement.clone(),
                    origin: origin(pin.span),
                })
                .collect()
        };
        Self {
            name: manifest.name.clone(),
            file: file.to_string(),
            requirements,
            overrides: pins(&manifest.overrides),
            constraints: pins(&manifest.constraints),
            indexes: manifest
                .indexes
                .iter()
                .map(|index| IndexPolicy {
                    name: index.name.clone(),
                    explicit: index.explicit,
                })
                .collect(),
            requires_python: None,
            options: ResolveOptions {
                prereleases: match manifest.prereleases {
                    Prereleases::IfNecessaryOrExplicit => PrereleaseMode::IfNecessaryOrExplicit,
                    Prereleases::Allow => PrereleaseMode::Allow,
                },
                cuda_wheels: manifest.target.cuda_wheels.unwrap_or_default(),
                ..ResolveOptions::default()
            },
        }
    }
}

/// `==VERSION`, e.g. `==0.5.9`.
fn exact(version: &Version) -> VersionSpecifiers {
    VersionSpecifiers::from_iter([pep440_rs::VersionSpecifier::equals_version(version.clone())])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(extra: &str) -> Request {
        let text = format!(
            "schema: 1\nname: m\n{extra}target:\n  python: /opt/env/bin/python3\n  cuda_wheels: toolkit\npackages:\n  torch: \"==2.9.1\"\n"
        );
        let manifest = crate::manifest::load_str(&text, "m.yaml", None).unwrap();
        Request::from_manifest(&manifest, "m.yaml")
    }

    #[test]
    fn the_manifest_sets_the_prerelease_and_cuda_wheel_policies() {
        let default = request("");
        assert_eq!(
            default.options.prereleases,
            PrereleaseMode::IfNecessaryOrExplicit
        );
        assert_eq!(default.options.cuda_wheels, CudaWheelPolicy::Toolkit);
        assert_eq!(
            request("prereleases: allow\n").options.prereleases,
            PrereleaseMode::Allow
        );
        assert!(
            crate::manifest::load_str(
                "schema: 1\nname: m\nprereleases: yes\ntarget: { python: /opt/p }\n",
                "m.yaml",
                None
            )
            .is_err()
        );
    }
}
