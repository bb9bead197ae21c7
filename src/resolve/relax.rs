//! Finding every independent conflict: which cause of a failed resolution to set aside so
//! that resolving again finds the next one, and in what order a person should act on them.
//!
//! A cause set aside is a rule or a metadata pin, never the manifest's own lines or the
//! node's values: the later conflicts are those that would remain once the first is fixed.

use std::collections::BTreeSet;

use pep508_rs::PackageName;
use pubgrub::{DerivationTree, External};

use pep440_rs::Version;

use super::cause::{Cause, Edge, RuleCause, Tree};
use super::package::ResolverPackage;

/// A cause that resolving again ignores, to find the conflict behind it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Relaxation {
    /// `dependent`'s metadata requirement on `dependency`, e.g. torchvision's `torch==2.9.1`.
    Metadata {
        /// e.g. `torchvision`.
        dependent: PackageName,
        /// e.g. `torch`.
        dependency: PackageName,
    },
    /// The native ABI pins of a package, e.g. sgl-kernel 0.3.21 → torch 2.9.1.
    AbiPin(PackageName),
    /// The version lock of a package, e.g. flashinfer-cubin follows flashinfer-python.
    VersionLock(PackageName),
    /// The runtime rules (`+cuXYZ` labels, wheel families).
    Runtime,
    /// The GPU architecture rules.
    Arch,
    /// The driver rules (toolkit minimums, minor-version floors).
    Driver,
}

impl Relaxation {
    /// What a person should change first sorts first: package choices in the manifest,
    /// then the CUDA build, then the node (GPUs, then the driver, the costliest).
    pub fn rank(&self) -> u8 {
        match self {
            Self::Metadata { .. } => 1,
            Self::AbiPin(_) | Self::VersionLock(_) => 2,
            Self::Runtime => 3,
            Self::Arch => 4,
            Self::Driver => 5,
        }
    }

    /// Whether this relaxation drops `edge` of `package`.
    pub fn drops(&self, package: &ResolverPackage, edge: &Edge) -> bool {
        match (&edge.cause, self) {
            (
                Cause::Metadata(requirement),
                Self::Metadata {
                    dependent,
                    dependency,
                },
            ) => {
                matches!(package, ResolverPackage::Package(name) | ResolverPackage::Extra(name, _) if name == dependent)
                    && requirement.name == *dependency
            }
            (Cause::Rule(rule), _) => Self::of_rule(package, rule).as_ref() == Some(self),
            _ => false,
        }
    }

    fn of_rule(package: &ResolverPackage, rule: &RuleCause) -> Option<Self> {
        let _ = package;
        Some(match rule {
            RuleCause::Driver(_) | RuleCause::MinorVersion(_) => Self::Driver,
            RuleCause::Arch(_) => Self::Arch,
            RuleCause::LocalLabel { .. } | RuleCause::Family { .. } => Self::Runtime,
            RuleCause::AbiPin(pin) => Self::AbiPin(pin.package.clone()),
            RuleCause::VersionLock(lock) => Self::VersionLock(lock.package.clone()),
        })
    }

    fn of_edge(package: &ResolverPackage, edge: &Edge) -> Option<Self> {
        match &edge.cause {
            Cause::Metadata(requirement) => match package {
                ResolverPackage::Package(name) | ResolverPackage::Extra(name, _) => {
                    Some(Self::Metadata {
                        dependent: name.clone(),
                        dependency: requirement.name.clone(),
                    })
                }
                ResolverPackage::Root(_) | ResolverPackage::Virtual(_) => None,
            },
            Cause::Rule(rule) => Self::of_rule(package, rule),
            _ => None,
        }
    }
}

/// The recorded edges from a package (at any version) to a dependency, e.g. what the
/// evidence gathered after a failed resolution holds.
pub type EdgesBetween<'f> = dyn Fn(&ResolverPackage, &ResolverPackage) -> Vec<(Version, Edge)> + 'f;

/// The causes of a failed resolution that could be set aside, most actionable first;
/// `edges` gives the recorded edges behind each dependency of the tree.
pub fn candidates(tree: &Tree, edges: &EdgesBetween<'_>) -> Vec<Relaxation> {
    let mut found = BTreeSet::new();
    collect(edges, tree, &mut found);
    let mut found: Vec<Relaxation> = found.into_iter().collect();
    found.sort_by_key(Relaxation::rank);
    found
}

fn collect(edges: &EdgesBetween<'_>, tree: &Tree, found: &mut BTreeSet<Relaxation>) {
    match tree {
        DerivationTree::Derived(derived) => {
            collect(edges, &derived.cause1, found);
            collect(edges, &derived.cause2, found);
        }
        DerivationTree::External(External::FromDependencyOf(package, range, dependency, _)) => {
            for (version, edge) in edges(package, dependency) {
                if range.contains(&version)
                    && let Some(relaxation) = Relaxation::of_edge(package, &edge)
                {
                    found.insert(relaxation);
                }
            }
        }
        DerivationTree::External(_) => {}
    }
}
