//! The pubgrub dependency provider over a [`Universe`]: index policy, candidate
//! versions, file selection, markers, extras, overrides, constraints and rules.
//!
//! Every dependency the provider hands to pubgrub is recorded with its [`Cause`] (a
//! manifest line, a release's metadata, a rule with its source), and every release it
//! refuses carries an [`Unavailable`] reason, so the conflict report can speak in
//! domain words. This module owns no output; `report` renders.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::rc::Rc;
use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::{MarkerEnvironment, PackageName, VersionOrUrl};
use pubgrub::{
    Dependencies, DependencyConstraints, DependencyProvider, PackageResolutionStatistics, Ranges,
};

use super::environment::TargetEnvironment;
use super::live::{Miss, Pending};
use super::package::{ResolverPackage, VirtualPackage};
use super::ranges::{specifiers_name_prerelease, specifiers_to_ranges};
use super::relax::Relaxation;
use super::request::{ManifestPin, PrereleaseMode, Request};
use crate::cuda::CudaWheelPolicy;
use crate::index::filename::DistFilename;
use crate::index::tags::{Glibc, Platform, TagRank};
use crate::index::{DistFile, Release, Universe};
use crate::manifest::GitSource;
use crate::rules::RuleSet;

mod edges;
mod walk;

pub use walk::Halt;
use walk::Walks;

use super::cause::{Edge, Unavailable, VersionRange};

/// Why a release has no file for this node, and the glibc its wheels would need when
/// only a newer glibc is missing.
type Refusal = (Unavailable, Option<Glibc>);

/// The file chosen for a release.
#[derive(Debug, Clone, PartialEq)]
pub struct ChosenFile {
    /// The file.
    pub file: DistFile,
    /// The wheel's rank, `None` for an sdist.
    pub rank: Option<TagRank>,
}

/// One candidate version of a package.
#[derive(Debug, Clone)]
struct Candidate<'a> {
    version: Version,
    release: &'a Release,
}

/// Where a package's candidates come from.
#[derive(Debug, Clone)]
pub(crate) enum PackageSource {
    /// An index, by position in the universe.
    Index(usize),
    /// A git checkout; metadata from the same version in this index, if any.
    Git(GitSource, Option<usize>),
    /// No index may serve it.
    Missing,
}

#[derive(Debug)]
struct Candidates<'a> {
    source: PackageSource,
    /// Newest first.
    versions: Vec<Candidate<'a>>,
    /// Whether pre-releases rank with stable releases; otherwise one is chosen only when
    /// no stable release is left in the range.
    prereleases_allowed: bool,
}

impl<'a> Candidates<'a> {
    /// The candidates inside `range`'s outer bounds, newest first, found by binary search
    /// on the sorted versions; callers still test each against `range`'s gaps.
    fn bounded(&self, range: &VersionRange) -> &[Candidate<'a>] {
        let Some((lower, upper)) = range.bounding_range() else {
            return &[];
        };
        let below_upper = |version: &Version| match upper {
            Bound::Included(upper) => version <= upper,
            Bound::Excluded(upper) => version < upper,
            Bound::Unbounded => true,
        };
        let above_lower = |version: &Version| match lower {
            Bound::Included(lower) => version >= lower,
            Bound::Excluded(lower) => version > lower,
            Bound::Unbounded => true,
        };
        let start = self
            .versions
            .partition_point(|candidate| !below_upper(&candidate.version));
        let end = self
            .versions
            .partition_point(|candidate| above_lower(&candidate.version));
        self.versions.get(start..end.max(start)).unwrap_or_default()
    }

    /// The candidate at exactly `version`.
    fn get(&self, version: &Version) -> Option<&Candidate<'a>> {
        self.versions
            .binary_search_by(|candidate| version.cmp(&candidate.version))
            .ok()
            .and_then(|position| self.versions.get(position))
    }

    /// The candidates in `range`, newest first.
    fn within<'r>(&'r self, range: &'r VersionRange) -> impl Iterator<Item = &'r Candidate<'a>> {
        self.bounded(range)
            .iter()
            .filter(move |candidate| range.contains(&candidate.version))
    }
}

/// The provider.
pub struct Provider<'a> {
    request: &'a Request,
    universe: &'a Universe,
    environment: &'a TargetEnvironment,
    rules: &'a RuleSet,
    markers: MarkerEnvironment,
    platform: Platform,
    root: ResolverPackage,
    overrides: HashMap<PackageName, Vec<&'a ManifestPin>>,
    constraints: HashMap<PackageName, Vec<&'a ManifestPin>>,
    explicit_prereleases: HashSet<PackageName>,
    exact_root_pins: HashMap<PackageName, VersionRange>,
    index_pins: HashMap<PackageName, String>,
    git: HashMap<PackageName, GitSource>,
    candidates: RefCell<HashMap<PackageName, Rc<Candidates<'a>>>>,
    edges: RefCell<HashMap<(ResolverPackage, Version), Vec<Edge>>>,
    relaxed: &'a [Relaxation],
    /// Whether a dependency range that holds one candidate is handed to pubgrub as that
    /// one version ([`Provider::narrowing`]).
    narrow: bool,
    /// What a universe being filled by live resolution does not hold yet; `None` for a
    /// complete universe.
    pending: Option<&'a Pending>,
    /// The versions tried per package, and the packages decided early ([`walk`]).
    walks: Walks,
    /// The order in which packages were first met as dependencies (the manifest's
    /// requirements first, in its order): among packages of one class, the first met is
    /// decided first, as uv decides them.
    discovered: RefCell<HashMap<ResolverPackage, usize>>,
}

impl<'a> Provider<'a> {
    /// A provider for one request on one node.
    pub fn new(
        request: &'a Request,
        universe: &'a Universe,
        environment: &'a TargetEnvironment,
        rules: &'a RuleSet,
        markers: MarkerEnvironment,
        relaxed: &'a [Relaxation],
    ) -> Self {
        let mut overrides: HashMap<PackageName, Vec<&ManifestPin>> = HashMap::new();
        for pin in &request.overrides {
            overrides
                .entry(pin.requirement.name.clone())
                .or_default()
                .push(pin);
        }
        let mut constraints: HashMap<PackageName, Vec<&ManifestPin>> = HashMap::new();
        for pin in &request.constraints {
            constraints
                .entry(pin.requirement.name.clone())
                .or_default()
                .push(pin);
        }
        let mut explicit_prereleases = HashSet::new();
        let mut exact_root_pins: HashMap<PackageName, VersionRange> = HashMap::new();
        let mut index_pins = HashMap::new();
        let mut git = HashMap::new();
        let direct = request
            .requirements
            .iter()
            .map(|requirement| &requirement.requirement)
            .chain(request.overrides.iter().map(|pin| &pin.requirement))
            .chain(request.constraints.iter().map(|pin| &pin.requirement));
        for requirement in direct {
            if let Some(VersionOrUrl::VersionSpecifier(specifiers)) = &requirement.version_or_url {
                if specifiers_name_prerelease(specifiers) {
                    explicit_prereleases.insert(requirement.name.clone());
                }
                let exact = specifiers.iter().any(|specifier| {
                    matches!(
                        specifier.operator(),
                        pep440_rs::Operator::Equal | pep440_rs::Operator::ExactEqual
                    )
                });
                if exact {
                    let range = specifiers_to_ranges(specifiers);
                    exact_root_pins
                        .entry(requirement.name.clone())
                        .and_modify(|existing: &mut VersionRange| {
                            *existing = existing.union(&range);
                        })
                        .or_insert(range);
                }
            }
        }
        for requirement in &request.requirements {
            if let Some(index) = &requirement.index {
                index_pins.insert(requirement.requirement.name.clone(), index.clone());
            }
            if let Some(source) = &requirement.git {
                git.insert(requirement.requirement.name.clone(), source.clone());
            }
        }
        Self {
            request,
            universe,
            environment,
            rules,
            markers,
            platform: environment.platform(),
            root: ResolverPackage::Root(request.name.clone()),
            overrides,
            constraints,
            explicit_prereleases,
            exact_root_pins,
            index_pins,
            git,
            candidates: RefCell::new(HashMap::new()),
            edges: RefCell::new(HashMap::new()),
            relaxed,
            narrow: false,
            pending: None,
            walks: Walks::default(),
            discovered: RefCell::new(HashMap::new()),
        }
    }

    /// The same provider, deciding `early` (packages an earlier resolution walked down)
    /// before the ordinary packages.
    pub fn deciding_early(mut self, early: Vec<ResolverPackage>) -> Self {
        self.walks = Walks::new(early);
        self
    }

    /// The same provider over a universe that live resolution is still filling: asking
    /// for what `pending` says is not there yet stops the resolution with a [`Miss`].
    pub fn filling(mut self, pending: Option<&'a Pending>) -> Self {
        self.pending = pending;
        self
    }

    /// The same provider, handing pubgrub a dependency range that holds exactly one
    /// candidate as that one version, e.g. `==2.9.1` (`[2.9.1, 2.9.1.post0.dev0)`) as
    /// `2.9.1+cu130` when that is the only build the package's index has.
    ///
    /// Both ranges admit the same candidates, so the same resolutions exist; but once
    /// that version is ruled out, pubgrub sees the narrowed range as empty at once,
    /// while the wide one still looks open and costs a decision, a conflict and a
    /// one-level backtrack per dependent to close. A failed resolution is told from a
    /// provider without narrowing, whose derivation tree and recorded edges hold the
    /// written ranges, so a narrowing provider records no edges.
    pub fn narrowing(mut self) -> Self {
        self.narrow = true;
        self
    }

    /// `range` of `dependency` as pubgrub is handed it: the one candidate it holds when
    /// narrowing and there is exactly one, else `range` itself.
    fn handed_range(&self, dependency: &ResolverPackage, range: VersionRange) -> VersionRange {
        let (ResolverPackage::Package(name) | ResolverPackage::Extra(name, _)) = dependency else {
            return range;
        };
        if !self.narrow {
            return range;
        }
        let candidates = self.candidates(name);
        let only = {
            let mut inside = candidates.within(&range);
            match (inside.next(), inside.next()) {
                (Some(only), None) => Some(only.version.clone()),
                _ => None,
            }
        };
        only.map_or(range, Ranges::singleton)
    }

    /// The root package.
    pub fn root(&self) -> &ResolverPackage {
        &self.root
    }

    /// Every recorded edge from `package` (any version) to `dependency`.
    pub fn edges_between(
        &self,
        package: &ResolverPackage,
        dependency: &ResolverPackage,
    ) -> Vec<(Version, Edge)> {
        let mut found: Vec<(Version, Edge)> = self
            .edges
            .borrow()
            .iter()
            .filter(|((from, _), _)| from == package)
            .flat_map(|((_, version), edges)| {
                edges
                    .iter()
                    .filter(|edge| edge.dependency == *dependency)
                    .map(|edge| (version.clone(), edge.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0));
        found
    }

    /// The packages whose recorded dependencies name `dependency`, e.g. `torch 2.9.1`
    /// for `nvidia-cublas-cu12`.
    pub fn dependents_of(&self, dependency: &ResolverPackage) -> Vec<(ResolverPackage, Version)> {
        let mut found: Vec<(ResolverPackage, Version)> = self
            .edges
            .borrow()
            .iter()
            .filter(|(_, edges)| edges.iter().any(|edge| edge.dependency == *dependency))
            .map(|((package, version), _)| (package.clone(), version.clone()))
            .collect();
        found.sort();
        found
    }

    /// The index a package is served from, by name, e.g. `pytorch-cu130`.
    pub fn index_name_of(&self, name: &PackageName) -> Option<String> {
        match self.candidates(name).source {
            PackageSource::Index(position) => Some(self.universe.indexes[position].name.clone()),
            PackageSource::Git(..) | PackageSource::Missing => None,
        }
    }

    /// Explicit indexes that have `name` although the manifest does not pin it there.
    pub fn explicit_holders(&self, name: &PackageName) -> Vec<String> {
        if self.index_pins.contains_key(name) {
            return Vec::new();
        }
        self.request
            .indexes
            .iter()
            .filter(|policy| policy.explicit)
            .filter(|policy| {
                self.universe
                    .index(&policy.name)
                    .is_some_and(|index| index.packages.contains_key(name))
            })
            .map(|policy| policy.name.clone())
            .collect()
    }

    /// Whether an override replaces every requirement on `name`.
    pub fn has_override(&self, name: &PackageName) -> bool {
        self.overrides.contains_key(name)
    }

    /// Versions of `name` in `range` that the named index has, newest first, e.g.
    /// `2.9.1+cu130` on `pytorch-cu130`.
    pub fn versions_on(
        &self,
        index: &str,
        name: &PackageName,
        range: &VersionRange,
    ) -> Vec<Version> {
        let mut found: Vec<Version> = self
            .universe
            .index(index)
            .and_then(|contents| contents.packages.get(name))
            .map(|releases| {
                releases
                    .iter()
                    .map(|release| release.version.clone())
                    .filter(|version| range.contains(version))
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        found.reverse();
        found
    }

    /// The index a package is pinned to in the manifest, e.g. `pytorch-cu130`.
    pub fn index_pin(&self, name: &PackageName) -> Option<&str> {
        self.index_pins.get(name).map(String::as_str)
    }

    /// Every version of `name` the provider may choose from, newest first, e.g. for
    /// writing a range in terms of the releases that exist.
    pub fn candidate_versions(&self, name: &PackageName) -> Vec<Version> {
        self.candidates(name)
            .versions
            .iter()
            .map(|candidate| candidate.version.clone())
            .collect()
    }

    /// The git source of a package, if the manifest builds it from git.
    pub fn git_source(&self, name: &PackageName) -> Option<&GitSource> {
        self.git.get(name)
    }

    /// The manifest file being resolved, e.g. `manifests/sglang-0.5.9-cu130.yaml`.
    pub fn manifest_file(&self) -> &str {
        &self.request.file
    }

    /// The universe this resolution reads.
    pub fn universe(&self) -> &Universe {
        self.universe
    }

    /// The rules this resolution applies.
    pub fn rules(&self) -> &RuleSet {
        self.rules
    }

    /// The node this resolution is for.
    pub fn environment(&self) -> &TargetEnvironment {
        self.environment
    }

    /// The release of `name version` the provider reads.
    pub fn release(&self, name: &PackageName, version: &Version) -> Option<&'a Release> {
        self.candidates(name)
            .get(version)
            .map(|candidate| candidate.release)
    }

    /// Every recorded version of `name` on the index it comes from, newest first.
    pub fn release_versions(&self, name: &PackageName) -> Vec<Version> {
        self.candidates(name)
            .versions
            .iter()
            .map(|candidate| candidate.version.clone())
            .collect()
    }

    /// Whether the pre-release policy lets `name version` be chosen: a final release
    /// always, a pre-release or dev release only where the policy allows it.
    pub fn prerelease_allowed(&self, name: &PackageName, version: &Version) -> bool {
        !version.any_prerelease() || self.candidates(name).prereleases_allowed
    }

    /// The dependencies `name`'s `release` adds on this node (requirements, rules,
    /// virtual packages), or why it cannot be used.
    pub fn release_dependencies(
        &self,
        name: &PackageName,
        release: &Release,
    ) -> Result<Vec<Edge>, Unavailable> {
        self.release_edges(name, None, release)
    }

    /// The best file of a release for this node, or why there is none; the second
    /// value is the glibc its wheels would need when only a newer glibc is missing.
    pub fn choose_file(
        &self,
        name: &PackageName,
        release: &Release,
    ) -> Result<ChosenFile, Refusal> {
        self.best_file(name, release)
            .map(|(file, rank)| ChosenFile {
                file: file.clone(),
                rank,
            })
    }

    /// [`Provider::choose_file`] without copying the file out of the release.
    fn best_file<'r>(
        &self,
        name: &PackageName,
        release: &'r Release,
    ) -> Result<(&'r DistFile, Option<TagRank>), Refusal> {
        let exact_pin = self
            .exact_root_pins
            .get(name)
            .is_some_and(|range| range.contains(&release.version));
        let no_binary = self.request.options.no_binary.contains(name);
        let no_build = self.request.options.no_build.contains(name);
        let python = &self.environment.python;
        let mut best: Option<(&DistFile, TagRank)> = None;
        let mut sdist: Option<&DistFile> = None;
        let mut wheels: Vec<&DistFile> = Vec::new();
        let mut sdist_exists = false;
        let mut yanked_reason: Option<String> = None;
        let mut glibc_needed: Option<Glibc> = None;
        for file in &release.files {
            let Ok(parsed) = DistFilename::parse(&file.filename) else {
                continue;
            };
            if let Some(requires_python) = &file.requires_python
                && !crate::index::requires_python::admits(requires_python, python)
            {
                continue;
            }
            let usable_yank = match &file.yanked {
                Some(reason) if !exact_pin => {
                    yanked_reason.get_or_insert_with(|| reason.clone());
                    false
                }
                _ => true,
            };
            match parsed {
                DistFilename::Wheel(wheel) => {
                    wheels.push(file);
                    if no_binary {
                        continue;
                    }
                    match self.platform.best_rank(&wheel.tags) {
                        Some(rank) if usable_yank => {
                            if best.is_none_or(|(_, chosen)| chosen < rank) {
                                best = Some((file, rank));
                            }
                        }
                        Some(_) => {}
                        None => {
                            let relaxed = Platform {
                                glibc: Glibc {
                                    major: self.platform.glibc.major,
                                    minor: u32::MAX,
                                },
                                ..self.platform.clone()
                            };
                            if usable_yank && relaxed.best_rank(&wheel.tags).is_some() {
                                let needed = wheel
                                    .tags
                                    .iter()
                                    .filter_map(|tag| manylinux_glibc(&tag.platform))
                                    .min();
                                if let Some(needed) = needed {
                                    glibc_needed = Some(
                                        glibc_needed.map_or(needed, |known| known.min(needed)),
                                    );
                                }
                            }
                        }
                    }
                }
                DistFilename::Sdist(_) => {
                    sdist_exists = true;
                    if usable_yank && !no_build && sdist.is_none() {
                        sdist = Some(file);
                    }
                }
            }
        }
        if let Some((file, rank)) = best {
            return Ok((file, Some(rank)));
        }
        if let Some(sdist) = sdist {
            return Ok((sdist, None));
        }
        if let Some(reason) = yanked_reason {
            return Err((Unavailable::Yanked { reason }, None));
        }
        // The wheels' tags are spelled out only for the refusal.
        let mut tags: Vec<String> = wheels
            .iter()
            .filter_map(|file| match DistFilename::parse(&file.filename) {
                Ok(DistFilename::Wheel(wheel)) => Some(wheel.tags),
                Ok(DistFilename::Sdist(_)) | Err(_) => None,
            })
            .flatten()
            .map(|tag| tag.to_string())
            .collect();
        tags.sort();
        tags.dedup();
        Err((
            Unavailable::NoCompatibleFile {
                tags,
                sdist_refused: sdist_exists && no_build,
            },
            glibc_needed,
        ))
    }

    fn candidates(&self, name: &PackageName) -> Rc<Candidates<'a>> {
        if let Some(found) = self.candidates.borrow().get(name) {
            return Rc::clone(found);
        }
        let built = Rc::new(self.build_candidates(name));
        self.candidates
            .borrow_mut()
            .insert(name.clone(), Rc::clone(&built));
        built
    }

    /// The index policy: a package pinned to an index comes only from it; any other
    /// package from the first non-explicit index that has it at all.
    fn source_of(&self, name: &PackageName) -> PackageSource {
        let position_of = |index_name: &str| {
            self.universe
                .indexes
                .iter()
                .position(|index| index.name == index_name)
        };
        let first_open = || {
            self.request
                .indexes
                .iter()
                .filter(|policy| !policy.explicit)
                .filter_map(|policy| position_of(&policy.name))
                .find(|position| self.universe.indexes[*position].packages.contains_key(name))
        };
        if let Some(source) = self.git.get(name) {
            return PackageSource::Git(source.clone(), first_open());
        }
        if let Some(pinned) = self.index_pins.get(name) {
            return match position_of(pinned) {
                Some(position) if self.universe.indexes[position].packages.contains_key(name) => {
                    PackageSource::Index(position)
                }
                _ => PackageSource::Missing,
            };
        }
        // Without index policies (a universe used directly), every index is open.
        if self.request.indexes.is_empty() {
            return self
                .universe
                .indexes
                .iter()
                .position(|index| index.packages.contains_key(name))
                .map_or(PackageSource::Missing, PackageSource::Index);
        }
        first_open().map_or(PackageSource::Missing, PackageSource::Index)
    }

    fn build_candidates(&self, name: &PackageName) -> Candidates<'a> {
        let source = self.source_of(name);
        let releases: Vec<&'a Release> = match &source {
            PackageSource::Index(position) => self.universe.indexes[*position]
                .packages
                .get(name)
                .map(|releases| releases.iter().collect())
                .unwrap_or_default(),
            PackageSource::Git(git, position) => {
                let version = git.version.clone();
                position
                    .and_then(|position| self.universe.indexes[position].packages.get(name))
                    .map(|releases| {
                        releases
                            .iter()
                            .filter(|release| Some(&release.version) == version.as_ref())
                            .collect()
                    })
                    .unwrap_or_default()
            }
            PackageSource::Missing => Vec::new(),
        };
        let mut versions: Vec<Candidate<'a>> = releases
            .into_iter()
            .map(|release| Candidate {
                version: release.version.clone(),
                release,
            })
            .collect();
        versions.sort_by(|a, b| b.version.cmp(&a.version));
        versions.dedup_by(|a, b| a.version == b.version);
        let prereleases_allowed = self.request.options.prereleases == PrereleaseMode::Allow
            || self.explicit_prereleases.contains(name)
            || versions
                .iter()
                .all(|candidate| candidate.version.any_prerelease());
        Candidates {
            source,
            versions,
            prereleases_allowed,
        }
    }

    /// The node's value of a virtual package, e.g. `13.0.1` for `cuda-toolkit`.
    pub fn virtual_value(&self, package: &VirtualPackage) -> Option<Version> {
        self.virtual_version(package)
    }

    fn virtual_version(&self, package: &VirtualPackage) -> Option<Version> {
        let parse = |text: String| Version::from_str(&text).ok();
        match package {
            VirtualPackage::Python => Some(self.environment.python.clone()),
            VirtualPackage::Glibc => parse(self.environment.glibc.to_string()),
            VirtualPackage::CudaDriver => self
                .environment
                .driver
                .as_ref()
                .and_then(|driver| parse(driver.to_string())),
            VirtualPackage::GpuArch(arch) => parse(arch.compute_capability()),
            VirtualPackage::CudaToolkit => self
                .environment
                .toolkit
                .as_ref()
                .and_then(|toolkit| parse(toolkit.to_string())),
            VirtualPackage::CudaRuntime => match self.request.options.cuda_wheels {
                CudaWheelPolicy::Toolkit => self
                    .environment
                    .cuda_runtime
                    .as_ref()
                    .and_then(|runtime| parse(runtime.to_string())),
                CudaWheelPolicy::Major(major) => Some(Version::new([u64::from(major)])),
                // Chosen by the resolver among the majors with a driver floor.
                CudaWheelPolicy::OneMajor | CudaWheelPolicy::Any => None,
            },
        }
    }
}

/// The glibc a manylinux platform tag needs, e.g. `manylinux_2_28_x86_64` → `2.28`.
fn manylinux_glibc(platform: &str) -> Option<Glibc> {
    let legacy = |minor| Some(Glibc { major: 2, minor });
    if platform.starts_with("manylinux1_") {
        return legacy(5);
    }
    if platform.starts_with("manylinux2010_") {
        return legacy(12);
    }
    if platform.starts_with("manylinux2014_") {
        return legacy(17);
    }
    let rest = platform.strip_prefix("manylinux_")?;
    let mut parts = rest.splitn(3, '_');
    Some(Glibc {
        major: parts.next()?.parse().ok()?,
        minor: parts.next()?.parse().ok()?,
    })
}

impl DependencyProvider for Provider<'_> {
    type P = ResolverPackage;
    type V = Version;
    type VS = VersionRange;
    type M = Unavailable;
    type Priority = (u8, u32, Reverse<usize>);
    type Err = Halt;

    fn prioritize(
        &self,
        package: &ResolverPackage,
        range: &VersionRange,
        statistics: &PackageResolutionStatistics,
    ) -> Self::Priority {
        match package {
            ResolverPackage::Root(_) => (5, 0, Reverse(0)),
            ResolverPackage::Virtual(_) => (4, 0, Reverse(0)),
            ResolverPackage::Package(name) | ResolverPackage::Extra(name, _) => {
                let candidates = self.candidates(name);
                let count = candidates.within(range).count();
                // One candidate, then the packages walked down before (uv's order:
                // singletons, then "conflict early"), then the others; within a class,
                // the one with more conflicts, then the one met first (uv decides in
                // discovery order: `matplotlib<3.8` before the `numpy` it brings, so
                // 3.7.5 with `numpy<2`, not `numpy` 2 first and matplotlib walked down).
                let class = if count <= 1 {
                    3
                } else if self.walks.is_early(package) {
                    2
                } else {
                    1
                };
                let order = self
                    .discovered
                    .borrow()
                    .get(package)
                    .copied()
                    .unwrap_or(usize::MAX);
                (class, statistics.conflict_count(), Reverse(order))
            }
        }
    }

    fn choose_version(
        &self,
        package: &ResolverPackage,
        range: &VersionRange,
    ) -> Result<Option<Version>, Halt> {
        Ok(match package {
            ResolverPackage::Root(_) => Some(Version::new([0])).filter(|v| range.contains(v)),
            ResolverPackage::Virtual(VirtualPackage::CudaRuntime)
                if self.request.options.cuda_wheels == CudaWheelPolicy::OneMajor =>
            {
                self.rules
                    .runtimes
                    .majors()
                    .into_iter()
                    .map(|major| Version::new([u64::from(major)]))
                    .find(|version| range.contains(version))
            }
            ResolverPackage::Virtual(virtual_package) => self
                .virtual_version(virtual_package)
                .filter(|version| range.contains(version)),
            ResolverPackage::Package(name) | ResolverPackage::Extra(name, _) => {
                // Stable releases first; a pre-release only when the policy allows them or
                // no stable release is left in the range (uv's `if-necessary`).
                let candidates = self.candidates(name);
                let mut fallback = None;
                let mut chosen = None;
                for candidate in candidates.within(range) {
                    if candidates.prereleases_allowed || !candidate.version.any_prerelease() {
                        chosen = Some(candidate);
                        break;
                    }
                    fallback.get_or_insert(candidate);
                }
                let chosen = chosen
                    .or(fallback)
                    .map(|candidate| candidate.version.clone());
                if let Some(version) = &chosen {
                    self.walks.try_version(package, version)?;
                }
                chosen
            }
        })
    }

    fn get_dependencies(
        &self,
        package: &ResolverPackage,
        version: &Version,
    ) -> Result<Dependencies<ResolverPackage, VersionRange, Unavailable>, Halt> {
        let mut edges = match package {
            ResolverPackage::Root(_) => self.root_edges(),
            ResolverPackage::Virtual(virtual_package) => {
                self.virtual_edges(virtual_package, version)
            }
            ResolverPackage::Package(name) | ResolverPackage::Extra(name, _) => {
                let extra = match package {
                    ResolverPackage::Extra(_, extra) => Some(extra),
                    _ => None,
                };
                let candidates = self.candidates(name);
                let Some(candidate) = candidates.get(version) else {
                    return Ok(Dependencies::Unavailable(Unavailable::NoCompatibleFile {
                        tags: Vec::new(),
                        sdist_refused: false,
                    }));
                };
                if let PackageSource::Git(git, None) = &candidates.source {
                    return Ok(Dependencies::Unavailable(Unavailable::NoMetadata {
                        url: crate::manifest::redact_url(&git.url),
                    }));
                }
                if let Some(pending) = self.pending {
                    if pending.is_unread(name, version) {
                        // A release with no file for this node needs no metadata to refuse.
                        if extra.is_none()
                            && let Err((unavailable, None)) =
                                self.best_file(name, candidate.release)
                        {
                            return Ok(Dependencies::Unavailable(unavailable));
                        }
                        return Err(Miss::Release(name.clone(), version.clone()).into());
                    }
                    pending.visit(name, version);
                }
                match self.release_edges(name, extra, candidate.release) {
                    Ok(edges) => edges,
                    Err(unavailable) => return Ok(Dependencies::Unavailable(unavailable)),
                }
            }
        };
        if let Some(pending) = self.pending {
            let mut unlisted: Vec<PackageName> = edges
                .iter()
                .filter_map(|edge| match &edge.dependency {
                    ResolverPackage::Package(name) | ResolverPackage::Extra(name, _)
                        if !pending.is_looked_up(name) =>
                    {
                        Some(name.clone())
                    }
                    _ => None,
                })
                .collect();
            if !unlisted.is_empty() {
                unlisted.sort();
                unlisted.dedup();
                return Err(Miss::Projects(unlisted).into());
            }
        }
        // Causes set aside to find the conflict behind the first one (`relax`).
        edges.retain(|edge| {
            !self
                .relaxed
                .iter()
                .any(|relaxation| relaxation.drops(package, edge))
        });
        let mut merged: Vec<(ResolverPackage, VersionRange)> = Vec::new();
        for edge in &edges {
            if edge.dependency == *package {
                // A package that requires itself adds nothing.
                continue;
            }
            match merged
                .iter_mut()
                .find(|(dependency, _)| *dependency == edge.dependency)
            {
                Some((_, range)) => *range = range.intersection(&edge.range),
                None => merged.push((edge.dependency.clone(), edge.range.clone())),
            }
        }
        {
            let mut discovered = self.discovered.borrow_mut();
            for (dependency, _) in &merged {
                let next = discovered.len();
                discovered.entry(dependency.clone()).or_insert(next);
            }
        }
        let constraints: DependencyConstraints<ResolverPackage, VersionRange> = merged
            .into_iter()
            .map(|(dependency, range)| {
                let range = self.handed_range(&dependency, range);
                (dependency, range)
            })
            .collect();
        // A narrowing provider is never asked for a report, so it keeps no edges.
        if !self.narrow {
            self.edges
                .borrow_mut()
                .insert((package.clone(), version.clone()), edges);
        }
        Ok(Dependencies::Available(constraints))
    }
}
