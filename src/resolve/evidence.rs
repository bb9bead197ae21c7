//! The facts a conflict report needs, gathered once from the provider after a failed
//! resolution: for each package the derivation tree names, the versions that exist, the
//! index that serves it, explicit indexes that hold it, hidden pre-releases, a git
//! source, close names; the recorded edges between the packages of the tree, their
//! dependents, and the node's values of the virtual packages.
//!
//! The report and the search for independent conflicts read this plain data, never the
//! provider, so each can be understood (and tested) on its own.

use std::collections::{BTreeMap, BTreeSet};

use pep440_rs::Version;
use pep508_rs::PackageName;
use pubgrub::{DerivationTree, External, Ranges};

use super::cause::Edge;
pub use super::cause::Tree;
use super::environment::TargetEnvironment;
use super::package::{ResolverPackage, VirtualPackage};
use super::provider::Provider;
use crate::index::UnusableFiles;
use crate::manifest::GitSource;
use crate::rules::RuleSet;

/// What the resolver knew about the packages of a failed resolution.
#[derive(Debug, Clone)]
pub struct Evidence<'p> {
    /// The manifest file, e.g. `manifests/sglang-0.5.9-cu130.yaml`.
    pub manifest_file: String,
    /// The node the resolution was for.
    pub environment: &'p TargetEnvironment,
    /// The rules it applied.
    pub rules: &'p RuleSet,
    /// The snapshot the universe was read from, e.g.
    /// `manifests/snapshots/sglang-0.5.9-cu130.json`; `None` for live indexes.
    pub snapshot: Option<String>,
    /// The node's value of each virtual package of the tree, e.g. `13.0.1` for `cuda-toolkit`.
    pub virtual_values: BTreeMap<VirtualPackage, Version>,
    /// Every recorded edge from a package of the tree (at some version) to another.
    pub edges: Vec<(ResolverPackage, Version, Edge)>,
    /// The recorded dependents of the packages of the tree, e.g. `torch 2.9.1` for
    /// `nvidia-cublas-cu12`.
    pub dependents: BTreeMap<ResolverPackage, Vec<(ResolverPackage, Version)>>,
    /// Per package name.
    pub packages: BTreeMap<PackageName, PackageEvidence>,
}

/// What the resolver knew about one package, e.g. `torch`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PackageEvidence {
    /// The versions it could choose from, newest first.
    pub versions: Vec<Version>,
    /// The index that serves it, e.g. `pytorch-cu130`; `None` when none may.
    pub index: Option<String>,
    /// The index the manifest binds it to, e.g. `pytorch-cu130`.
    pub index_pin: Option<String>,
    /// Explicit indexes that have it although the manifest does not bind it there, each
    /// with its versions there, newest first.
    pub explicit_holders: Vec<(String, Vec<Version>)>,
    /// Whether an override replaces every requirement on it.
    pub has_override: bool,
    /// Its git source, when the manifest builds it from git.
    pub git: Option<GitSource>,
    /// Close project names when no index may serve it, e.g. `torchaudio` for
    /// `torchaudoi`: from the index it is bound to, else from every index.
    pub suggestions: Vec<PackageName>,
    /// Releases its index lists with no file for this node, newest first, e.g.
    /// `tensorflow 2.9.1` (wheels for `cp37`–`cp310`) on CPython 3.12.
    pub unusable: Vec<(Version, UnusableFiles)>,
}

impl<'p> Evidence<'p> {
    /// Read from `provider` what the report of `tree` needs.
    pub fn gather(provider: &'p Provider<'_>, tree: &Tree) -> Self {
        let mut gatherer = Gatherer::default();
        gatherer.visit(tree);
        let Gatherer { pairs, packages } = gatherer;
        let mut edges = Vec::new();
        let mut dependents: BTreeMap<ResolverPackage, Vec<(ResolverPackage, Version)>> =
            BTreeMap::new();
        let mut names: BTreeSet<PackageName> = BTreeSet::new();
        let mut virtual_values = BTreeMap::new();
        for (package, dependency) in &pairs {
            for (version, edge) in provider.edges_between(package, dependency) {
                edges.push((package.clone(), version, edge));
            }
            let found = provider.dependents_of(package);
            for (dependent, _) in &found {
                if let Some(name) = name_of(dependent) {
                    names.insert(name.clone());
                }
            }
            dependents.insert(package.clone(), found);
        }
        for package in &packages {
            match package {
                ResolverPackage::Virtual(virtual_package) => {
                    if let Some(value) = provider.virtual_value(virtual_package) {
                        virtual_values.insert(virtual_package.clone(), value);
                    }
                }
                ResolverPackage::Package(name) | ResolverPackage::Extra(name, _) => {
                    names.insert(name.clone());
                }
                ResolverPackage::Root(_) => {}
            }
        }
        let packages = names
            .into_iter()
            .map(|name| {
                let facts = package_evidence(provider, &name);
                (name, facts)
            })
            .collect();
        Self {
            manifest_file: provider.manifest_file().to_string(),
            environment: provider.environment(),
            rules: provider.rules(),
            snapshot: provider.universe().snapshot.clone(),
            virtual_values,
            edges,
            dependents,
            packages,
        }
    }

    /// Every recorded edge from `package` (any version) to `dependency`, newest first.
    pub fn edges_between(
        &self,
        package: &ResolverPackage,
        dependency: &ResolverPackage,
    ) -> Vec<(Version, Edge)> {
        let mut found: Vec<(Version, Edge)> = self
            .edges
            .iter()
            .filter(|(from, _, edge)| from == package && edge.dependency == *dependency)
            .map(|(_, version, edge)| (version.clone(), edge.clone()))
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0));
        found
    }

    /// The recorded dependents of `dependency`.
    pub fn dependents_of(&self, dependency: &ResolverPackage) -> &[(ResolverPackage, Version)] {
        self.dependents
            .get(dependency)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// What is known of `name`; empty for a name the tree does not hold.
    pub fn package(&self, name: &PackageName) -> &PackageEvidence {
        static NOTHING: PackageEvidence = PackageEvidence {
            versions: Vec::new(),
            index: None,
            index_pin: None,
            explicit_holders: Vec::new(),
            has_override: false,
            git: None,
            suggestions: Vec::new(),
            unusable: Vec::new(),
        };
        self.packages.get(name).unwrap_or(&NOTHING)
    }

    /// The versions that exist of a package of the tree (of its base for an extra);
    /// empty for the root and the virtual packages.
    pub fn versions_of(&self, package: &ResolverPackage) -> &[Version] {
        match name_of(package) {
            Some(name) => &self.package(name).versions,
            None => &[],
        }
    }
}

impl PackageEvidence {
    /// The explicit indexes that hold it, by name.
    pub fn holder_names(&self) -> Vec<String> {
        self.explicit_holders
            .iter()
            .map(|(index, _)| index.clone())
            .collect()
    }
}

fn name_of(package: &ResolverPackage) -> Option<&PackageName> {
    match package {
        ResolverPackage::Package(name) | ResolverPackage::Extra(name, _) => Some(name),
        ResolverPackage::Root(_) | ResolverPackage::Virtual(_) => None,
    }
}

fn package_evidence(provider: &Provider<'_>, name: &PackageName) -> PackageEvidence {
    let index = provider.index_name_of(name);
    let index_pin = provider.index_pin(name).map(str::to_string);
    let git = provider.git_source(name).cloned();
    let everything = Ranges::full();
    let explicit_holders = provider
        .explicit_holders(name)
        .into_iter()
        .map(|holder| {
            let versions = provider.versions_on(&holder, name, &everything);
            (holder, versions)
        })
        .collect();
    let suggestions = if index.is_none() && git.is_none() {
        let universe = provider.universe();
        let on_pinned = index_pin
            .as_deref()
            .and_then(|pinned| universe.index(pinned))
            .map(|contents| super::names::closest(name, contents.packages.keys()))
            .unwrap_or_default();
        if on_pinned.is_empty() {
            super::names::closest(name, universe.project_names())
        } else {
            on_pinned
        }
    } else {
        Vec::new()
    };
    let unusable = index
        .as_deref()
        .and_then(|index| provider.universe().index(index))
        .and_then(|contents| contents.unusable.get(name))
        .map(|releases| {
            releases
                .iter()
                .rev()
                .map(|(version, files)| (version.clone(), files.clone()))
                .collect()
        })
        .unwrap_or_default();
    PackageEvidence {
        versions: provider.candidate_versions(name),
        index,
        index_pin,
        explicit_holders,
        has_override: provider.has_override(name),
        git,
        suggestions,
        unusable,
    }
}

/// Collects the packages and the dependency pairs of a tree.
#[derive(Default)]
struct Gatherer {
    pairs: BTreeSet<(ResolverPackage, ResolverPackage)>,
    packages: BTreeSet<ResolverPackage>,
}

impl Gatherer {
    fn visit(&mut self, tree: &Tree) {
        match tree {
            DerivationTree::Derived(derived) => {
                self.visit(&derived.cause1);
                self.visit(&derived.cause2);
            }
            DerivationTree::External(external) => match external {
                External::NotRoot(package, _)
                | External::NoVersions(package, _)
                | External::Custom(package, _, _) => {
                    self.packages.insert(package.clone());
                }
                External::FromDependencyOf(package, _, dependency, _) => {
                    self.packages.insert(package.clone());
                    self.packages.insert(dependency.clone());
                    self.pairs.insert((package.clone(), dependency.clone()));
                }
            },
        }
    }
}
