//! The closure explorer: from root requirements to the [`Universe`] that resolving
//! them needs, fetched live and following `Requires-Dist` for one target
//! environment. This is what `upgrade index snapshot` records.
//!
//! Policy, in the manifest's terms: a package pinned to an index (`index: NAME`) is
//! looked up only there; every other package comes from the first non-explicit index
//! that has it. Per package, every version that matches any specifier met on the way
//! is kept (the newest [`ExploreSettings::max_versions`] per specifier), so the
//! resolver has room to backtrack; overrides replace the specifiers met, constraints
//! narrow them. Files that cannot install on the target (another OS or
//! architecture, another CPython, a newer glibc, an excluding `Requires-Python`) are
//! dropped here as a coarse pre-filter; exact tag matching stays the resolver's job.
//! Exploration is bounded by project and release counts.

use std::collections::{BTreeMap, BTreeSet};

use pep440_rs::{Operator, Version, VersionSpecifiers};
use pep508_rs::{ExtraName, MarkerEnvironment, PackageName, Requirement, VersionOrUrl};
use tokio::task::JoinSet;

use super::simple::LeftOut;
use super::{ClientError, IndexClient, IndexLocation, ProjectFile};
use crate::index::filename::{DistFilename, WheelTag};
use crate::index::model::{IndexContents, Release, Universe, UnusableFiles};

/// An index as the explorer sees it: where, and whether it is explicit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSource {
    /// Name and URL, e.g. `default` at `https://mirror.example/simple/`.
    pub location: IndexLocation,
    /// An explicit index serves only the packages pinned to it.
    pub explicit: bool,
}

/// A manifest's overrides and constraints, as [`ExploreSettings`] takes them.
pub fn manifest_requirements(
    manifest: &crate::manifest::Manifest,
) -> (Vec<Requirement>, Vec<Requirement>) {
    let requirements =
        |pins: &[crate::manifest::Pin]| pins.iter().map(|pin| pin.requirement.clone()).collect();
    (
        requirements(&manifest.overrides),
        requirements(&manifest.constraints),
    )
}

/// A requirement to explore from, e.g. `torch==2.9.1+cu130` pinned to `pytorch-cu130`.
#[derive(Debug, Clone, PartialEq)]
pub struct RootRequest {
    /// Name, extras and specifiers (a URL requirement is not explored).
    pub requirement: Requirement,
    /// The index the package is pinned to, e.g. `pytorch-cu130`.
    pub index: Option<String>,
}

/// The target environment and the bounds of an exploration.
#[derive(Debug, Clone)]
pub struct ExploreSettings {
    /// Marker values of the target, e.g. linux, x86_64, CPython 3.12.
    pub markers: MarkerEnvironment,
    /// The target interpreter's version for `Requires-Python`, e.g. `3.12.0`.
    pub python_version: Version,
    /// The target platform for the coarse file filter; `None` keeps every file.
    pub platform: Option<TargetPlatform>,
    /// Follow `Requires-Dist` (otherwise only the roots are recorded).
    pub transitive: bool,
    /// At most this many projects, e.g. `1000`.
    pub max_projects: usize,
    /// At most this many versions per package and specifier, e.g. `20`.
    pub max_versions: usize,
    /// At most this many releases whose metadata is fetched, e.g. `5000`.
    pub max_releases: usize,
    /// Fetch only from these indexes, e.g. `[default]`; `None` for all.
    pub only_indexes: Option<Vec<String>>,
    /// Requirements that replace every requirement on their package, e.g. `flashinfer-python==0.6.4`.
    pub overrides: Vec<Requirement>,
    /// Requirements that narrow their package when it is in the closure.
    pub constraints: Vec<Requirement>,
    /// Leave every sdist out, as a file that cannot install on the target: nothing is
    /// downloaded or built to read an sdist's metadata (the build requirements the
    /// controller fetches, where nothing of a source may run).
    pub wheels_only: bool,
}

/// A Linux platform as a manylinux tag says it, e.g. `manylinux_2_35_x86_64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPlatform {
    /// glibc `(major, minor)`, e.g. `(2, 35)`.
    pub glibc: (u32, u32),
    /// e.g. `x86_64`.
    pub arch: String,
}

impl TargetPlatform {
    /// Parse `manylinux_X_Y_ARCH`, e.g. `manylinux_2_35_x86_64`.
    pub fn parse(tag: &str) -> Option<Self> {
        let rest = tag.strip_prefix("manylinux_")?;
        let mut parts = rest.splitn(3, '_');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let arch = parts.next()?.to_string();
        (!arch.is_empty()).then_some(Self {
            glibc: (major, minor),
            arch,
        })
    }

    /// Whether a wheel's platform tag can install here, e.g. `manylinux2014_x86_64` yes,
    /// `macosx_11_0_arm64` no.
    pub fn accepts(&self, platform: &str) -> bool {
        if platform == "any" {
            return true;
        }
        let Some(rest) = platform.strip_suffix(self.arch.as_str()) else {
            return false;
        };
        let Some(rest) = rest.strip_suffix('_') else {
            return false;
        };
        let glibc = match rest {
            "linux" => return true,
            "manylinux1" => (2, 5),
            "manylinux2010" => (2, 12),
            "manylinux2014" => (2, 17),
            other => {
                let Some(numbers) = other.strip_prefix("manylinux_") else {
                    return false;
                };
                let Some((major, minor)) = numbers.split_once('_') else {
                    return false;
                };
                match (major.parse::<u32>(), minor.parse::<u32>()) {
                    (Ok(major), Ok(minor)) => (major, minor),
                    _ => return false,
                }
            }
        };
        glibc <= self.glibc
    }
}

/// Progress of an exploration, for a caller that shows it; every method has a no-op
/// default. Called from the exploring task, never concurrently.
pub trait Reporter: Send + Sync {
    /// A project was looked up, e.g. `torch`; `index` is where it was found, if anywhere.
    fn on_project(&self, name: &PackageName, index: Option<&str>) {
        let _ = (name, index);
    }
    /// A release's metadata was read, e.g. `torch 2.9.1+cu130`.
    fn on_release(&self, name: &PackageName, version: &Version) {
        let _ = (name, version);
    }
}

/// A [`Reporter`] that shows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReporter;

impl Reporter for NoReporter {}

/// What an exploration found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exploration {
    /// Every release recorded, per index in the order given.
    pub universe: Universe,
    /// What was skipped and why, e.g. ``skipped `legacy 0.1`: only an sdist without metadata``.
    pub notes: Vec<String>,
    /// Projects looked up.
    pub projects: usize,
    /// Releases whose metadata was fetched.
    pub releases: usize,
}

/// A project as the index that has it lists it for the target.
#[derive(Debug, Clone)]
pub(crate) struct Listing {
    /// Position in the index list.
    pub(crate) index: usize,
    /// Files usable on the target, by version; a release with only sdists stays (its
    /// metadata is read from a stand-in wheel, from the sdist, or built).
    pub(crate) versions: BTreeMap<Version, Vec<ProjectFile>>,
    /// The files left out, by version.
    pub(crate) left_out: BTreeMap<Version, LeftOut>,
}

impl Listing {
    /// A wheel whose metadata stands for `version`'s where its usable files are sdists
    /// (see [`LeftOut::stand_in`]); only one whose page gives the same `Requires-Python`
    /// as those sdists, so that a wheel left out for its Python range never speaks for
    /// them.
    pub(crate) fn stand_in(&self, version: &Version) -> Option<&ProjectFile> {
        let files = self.versions.get(version)?;
        if files
            .iter()
            .any(|file| matches!(file.dist, DistFilename::Wheel(_)))
        {
            return None;
        }
        let stand_in = self.left_out.get(version)?.stand_in.as_ref()?;
        files
            .iter()
            .all(|file| file.requires_python == stand_in.requires_python)
            .then_some(stand_in)
    }

    /// Whether `version`'s metadata can be read without a build: it has a usable wheel
    /// or a stand-in.
    pub(crate) fn has_wheel_metadata(&self, version: &Version) -> bool {
        self.stand_in(version).is_some()
            || self.versions.get(version).is_some_and(|files| {
                files
                    .iter()
                    .any(|file| matches!(file.dist, DistFilename::Wheel(_)))
            })
    }

    /// The releases listed with no file usable on the target, e.g. for a report.
    pub(crate) fn unusable(&self) -> BTreeMap<Version, UnusableFiles> {
        self.left_out
            .iter()
            .filter(|(version, _)| !self.versions.contains_key(*version))
            .map(|(version, left_out)| (version.clone(), left_out.files.clone()))
            .collect()
    }
}

#[derive(Debug, Default)]
struct PackageState {
    pinned: Option<String>,
    specifiers: Vec<VersionSpecifiers>,
    extras: BTreeSet<ExtraName>,
    /// `None`: not looked up yet; `Some(None)`: no allowed index has it.
    listing: Option<Option<Listing>>,
    releases: BTreeMap<Version, Release>,
    failed: BTreeSet<Version>,
    expanded: BTreeMap<Version, BTreeSet<ExtraName>>,
}

/// Explore from `roots` over `indexes` (highest priority first), reporting to
/// `reporter` (e.g. [`NoReporter`]).
pub async fn explore(
    client: &IndexClient,
    indexes: &[IndexSource],
    roots: &[RootRequest],
    settings: &ExploreSettings,
    reporter: &dyn Reporter,
) -> Result<Exploration, ClientError> {
    let (overrides, constraints) = manifest_pins(settings);
    let mut explorer = Explorer {
        client,
        reporter,
        indexes,
        settings,
        packages: BTreeMap::new(),
        notes: Vec::new(),
        releases_fetched: 0,
        overrides,
        constraints,
    };
    let mut dirty = BTreeSet::new();
    for root in roots {
        if !root.requirement.marker.evaluate(&settings.markers, &[]) {
            continue;
        }
        let Some(specifiers) = specifiers_of(&root.requirement) else {
            explorer.notes.push(format!(
                "skipped `{}`: a URL requirement is not looked up on an index",
                root.requirement.name
            ));
            continue;
        };
        let name = root.requirement.name.clone();
        let state = explorer.packages.entry(name.clone()).or_default();
        if root.index.is_some() {
            state.pinned.clone_from(&root.index);
        }
        state.specifiers.push(specifiers);
        state.extras.extend(root.requirement.extras.iter().cloned());
        dirty.insert(name);
    }
    // Every round looks up new packages, fetches newly selected releases and expands
    // them; a package becomes dirty again only when its specifiers or extras grow,
    // which the project and release limits bound.
    while !dirty.is_empty() {
        let batch: Vec<PackageName> = std::mem::take(&mut dirty).into_iter().collect();
        explorer.look_up(&batch).await?;
        explorer.fetch_releases(&batch).await?;
        if settings.transitive {
            dirty = explorer.expand(&batch);
        }
    }
    Ok(explorer.finish())
}

struct Explorer<'a> {
    client: &'a IndexClient,
    reporter: &'a dyn Reporter,
    indexes: &'a [IndexSource],
    settings: &'a ExploreSettings,
    packages: BTreeMap<PackageName, PackageState>,
    notes: Vec<String>,
    releases_fetched: usize,
    overrides: Overrides,
    constraints: Constraints,
}

impl Explorer<'_> {
    /// The indexes that may serve `name`, in the order to try them.
    fn candidates(&mut self, name: &PackageName, pinned: Option<&str>) -> Vec<usize> {
        match allowed_indexes(self.indexes, self.settings, name, pinned) {
            Ok(positions) => positions,
            Err(note) => {
                self.notes.push(note);
                Vec::new()
            }
        }
    }

    async fn look_up(&mut self, batch: &[PackageName]) -> Result<(), ClientError> {
        let mut tasks = JoinSet::new();
        let settings = std::sync::Arc::new(self.settings.clone());
        for name in batch {
            let Some(state) = self.packages.get(name) else {
                continue;
            };
            if state.listing.is_some() {
                continue;
            }
            let pinned = state.pinned.clone();
            let candidates = self.candidates(name, pinned.as_deref());
            if candidates.is_empty() {
                // `candidates` has said why.
                if let Some(state) = self.packages.get_mut(name) {
                    state.listing = Some(None);
                }
                continue;
            }
            let looked_up = self
                .packages
                .values()
                .filter(|state| state.listing.is_some())
                .count()
                + tasks.len();
            if looked_up >= self.settings.max_projects {
                return Err(ClientError::Limit {
                    limit: self.settings.max_projects,
                    what: "projects",
                    flag: "--max-projects",
                });
            }
            let client = self.client.clone();
            let locations: Vec<(usize, IndexLocation)> = candidates
                .into_iter()
                .map(|position| (position, self.indexes[position].location.clone()))
                .collect();
            let name = name.clone();
            let settings = std::sync::Arc::clone(&settings);
            tasks.spawn(async move {
                let found = look_up_project(&client, &locations, &name, &settings).await;
                (name, found)
            });
        }
        while let Some(joined) = tasks.join_next().await {
            let Ok((name, outcome)) = joined else {
                self.notes
                    .push("a project lookup ended abnormally; its project is missing".to_string());
                continue;
            };
            let outcome = outcome?;
            self.reporter.on_project(
                &name,
                outcome
                    .as_ref()
                    .map(|listing| self.indexes[listing.index].location.name.as_str()),
            );
            let listing = outcome;
            if listing.is_none() {
                self.notes
                    .push(format!("skipped `{name}`: no allowed index has it"));
            }
            if let Some(state) = self.packages.get_mut(&name) {
                state.listing = Some(listing);
            }
        }
        Ok(())
    }

    /// The versions of `name` to record: per specifier met, the newest
    /// `max_versions` matching ones.
    fn selected(&self, name: &PackageName, state: &PackageState) -> Vec<Version> {
        let Some(Some(listing)) = &state.listing else {
            return Vec::new();
        };
        let specifiers: Vec<&VersionSpecifiers> = match self.overrides.get(name) {
            Some(specifiers) => vec![specifiers],
            None => state.specifiers.iter().collect(),
        };
        select_versions(
            &listing.versions,
            &specifiers,
            self.constraints.get(name).map(Vec::as_slice),
            self.settings.max_versions,
        )
    }

    async fn fetch_releases(&mut self, batch: &[PackageName]) -> Result<(), ClientError> {
        let mut jobs = Vec::new();
        for name in batch {
            let Some(state) = self.packages.get(name) else {
                continue;
            };
            let Some(Some(listing)) = &state.listing else {
                continue;
            };
            let location = &self.indexes[listing.index].location;
            for version in self.selected(name, state) {
                if state.releases.contains_key(&version) || state.failed.contains(&version) {
                    continue;
                }
                if let Some(files) = listing.versions.get(&version) {
                    let stand_in = listing.stand_in(&version).cloned();
                    jobs.push((
                        name.clone(),
                        location.clone(),
                        version,
                        files.clone(),
                        stand_in,
                    ));
                }
            }
        }
        let mut tasks = JoinSet::new();
        for (name, location, version, files, stand_in) in jobs {
            self.releases_fetched += 1;
            if self.releases_fetched > self.settings.max_releases {
                return Err(ClientError::Limit {
                    limit: self.settings.max_releases,
                    what: "releases",
                    flag: "--max-releases",
                });
            }
            let client = self.client.clone();
            tasks.spawn(async move {
                let outcome = client
                    .fetch_release(&location, &version, &files, stand_in.as_ref())
                    .await;
                (name, version, outcome)
            });
        }
        while let Some(joined) = tasks.join_next().await {
            let Ok((name, version, outcome)) = joined else {
                self.notes
                    .push("a metadata fetch ended abnormally; its release is missing".to_string());
                continue;
            };
            let Some(state) = self.packages.get_mut(&name) else {
                continue;
            };
            match outcome {
                Ok(release) => {
                    self.reporter.on_release(&name, &version);
                    state.releases.insert(version, release);
                }
                Err(
                    error @ (ClientError::Metadata { .. }
                    | ClientError::SdistMetadata { .. }
                    | ClientError::SdistBuild { .. }
                    | ClientError::Zip { .. }),
                ) => {
                    state.failed.insert(version.clone());
                    self.notes.push(format!(
                        "skipped `{name} {version}`: {}",
                        crate::text::error_chain(&error).replace('\n', " ")
                    ));
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Add the dependencies of the batch's selected releases; returns the packages
    /// whose specifiers or extras grew.
    fn expand(&mut self, batch: &[PackageName]) -> BTreeSet<PackageName> {
        let mut additions: Vec<(PackageName, Option<VersionSpecifiers>, Vec<ExtraName>)> =
            Vec::new();
        for name in batch {
            let Some(state) = self.packages.get(name) else {
                continue;
            };
            let extras: Vec<ExtraName> = state.extras.iter().cloned().collect();
            let mut done = Vec::new();
            for version in self.selected(name, state) {
                let Some(release) = state.releases.get(&version) else {
                    continue;
                };
                if state
                    .expanded
                    .get(&version)
                    .is_some_and(|expanded| expanded.is_superset(&state.extras))
                {
                    continue;
                }
                for requirement in &release.requires_dist {
                    if !requirement.evaluate_markers(&self.settings.markers, &extras) {
                        continue;
                    }
                    additions.push((
                        requirement.name.clone(),
                        specifiers_of(requirement),
                        requirement.extras.clone(),
                    ));
                }
                done.push(version);
            }
            if let Some(state) = self.packages.get_mut(name) {
                let extras = state.extras.clone();
                for version in done {
                    state.expanded.insert(version, extras.clone());
                }
            }
        }
        let mut dirty = BTreeSet::new();
        for (name, specifiers, extras) in additions {
            let Some(specifiers) = specifiers else {
                self.notes.push(format!(
                    "skipped a URL requirement on `{name}`: it is not looked up on an index"
                ));
                continue;
            };
            let state = self.packages.entry(name.clone()).or_default();
            let mut grew = state.listing.is_none();
            if !state.specifiers.contains(&specifiers) {
                state.specifiers.push(specifiers);
                grew = true;
            }
            for extra in extras {
                grew |= state.extras.insert(extra);
            }
            if grew {
                dirty.insert(name);
            }
        }
        dirty
    }

    fn finish(mut self) -> Exploration {
        let mut universe = Universe {
            snapshot: None,
            indexes: self
                .indexes
                .iter()
                .map(|index| IndexContents {
                    name: index.location.name.clone(),
                    packages: BTreeMap::new(),
                    unusable: BTreeMap::new(),
                })
                .collect(),
        };
        let projects = self
            .packages
            .values()
            .filter(|state| state.listing.is_some())
            .count();
        for (name, state) in std::mem::take(&mut self.packages) {
            let Some(Some(listing)) = state.listing else {
                continue;
            };
            if state.releases.is_empty() {
                continue;
            }
            let mut releases: Vec<Release> = state.releases.into_values().collect();
            releases.sort_by(|a, b| a.version.cmp(&b.version));
            if let Some(contents) = universe.indexes.get_mut(listing.index) {
                contents.packages.insert(name, releases);
            }
        }
        self.notes.sort();
        self.notes.dedup();
        Exploration {
            universe,
            notes: self.notes,
            projects,
            releases: self.releases_fetched,
        }
    }
}

/// The manifest's overrides (replacing every specifier met on their package) and
/// constraints (narrowing their package), for the target's markers.
pub(crate) fn manifest_pins(settings: &ExploreSettings) -> (Overrides, Constraints) {
    let overrides = settings
        .overrides
        .iter()
        .filter(|requirement| requirement.marker.evaluate(&settings.markers, &[]))
        .filter_map(|requirement| {
            specifiers_of(requirement).map(|specifiers| (requirement.name.clone(), specifiers))
        })
        .collect();
    let mut constraints: Constraints = BTreeMap::new();
    for constraint in &settings.constraints {
        if !constraint.marker.evaluate(&settings.markers, &[]) {
            continue;
        }
        if let Some(specifiers) = specifiers_of(constraint) {
            constraints
                .entry(constraint.name.clone())
                .or_default()
                .push(specifiers);
        }
    }
    (overrides, constraints)
}

/// Overrides by package: the one specifier set that replaces every other.
pub(crate) type Overrides = BTreeMap<PackageName, VersionSpecifiers>;
/// Constraints by package: every set must hold.
pub(crate) type Constraints = BTreeMap<PackageName, Vec<VersionSpecifiers>>;

/// The index policy: the positions of the indexes that may serve `name`, in the order
/// to try them. A package pinned to an index (`pinned`) is looked up only there; any
/// other on every non-explicit index. `Err` says why no index may serve it.
pub(crate) fn allowed_indexes(
    indexes: &[IndexSource],
    settings: &ExploreSettings,
    name: &PackageName,
    pinned: Option<&str>,
) -> Result<Vec<usize>, String> {
    let allowed = |index: &IndexSource| {
        settings
            .only_indexes
            .as_ref()
            .is_none_or(|only| only.contains(&index.location.name))
    };
    match pinned {
        Some(pinned) => {
            let position = indexes
                .iter()
                .position(|index| index.location.name == pinned);
            match position {
                Some(position) if allowed(&indexes[position]) => Ok(vec![position]),
                Some(_) => Err(format!(
                    "skipped `{name}`: it is pinned to index `{pinned}`, which `--only-index` leaves out"
                )),
                None => Err(format!(
                    "skipped `{name}`: it is pinned to index `{pinned}`, which is not configured"
                )),
            }
        }
        None => Ok(indexes
            .iter()
            .enumerate()
            .filter(|(_, index)| !index.explicit && allowed(index))
            .map(|(position, _)| position)
            .collect()),
    }
}

/// Look `name` up on `locations` in order: the first index whose page lists files
/// has it, e.g. index 0 with `torch 2.9.1`'s `cp312` wheels; `None` when none does.
pub(crate) async fn look_up_project(
    client: &IndexClient,
    locations: &[(usize, IndexLocation)],
    name: &PackageName,
    settings: &ExploreSettings,
) -> Result<Option<Listing>, ClientError> {
    let usable = |dist: &DistFilename, requires_python: Option<&VersionSpecifiers>| {
        file_usable(settings, dist, requires_python)
    };
    for (position, location) in locations {
        match client.fetch_project_where(location, name, &usable).await? {
            // An index that lists the project has it, even with no file usable here.
            Some(page) if page.lists_any => {
                let mut versions: BTreeMap<Version, Vec<ProjectFile>> = BTreeMap::new();
                for file in page.files {
                    versions
                        .entry(file.dist.version().clone())
                        .or_default()
                        .push(file);
                }
                return Ok(Some(Listing {
                    index: *position,
                    versions,
                    left_out: page.left_out,
                }));
            }
            Some(_) | None => {}
        }
    }
    Ok(None)
}

/// The coarse file filter: whether a file named `dist` with `requires_python` (its
/// lower bounds, as uv reads it) can install on the target at all.
fn file_usable(
    settings: &ExploreSettings,
    dist: &DistFilename,
    requires_python: Option<&VersionSpecifiers>,
) -> bool {
    if let Some(requires_python) = requires_python
        && !crate::index::requires_python::admits(requires_python, &settings.python_version)
    {
        return false;
    }
    match dist {
        DistFilename::Sdist(_) => !settings.wheels_only,
        DistFilename::Wheel(wheel) => wheel.tags.iter().any(|tag| tag_usable(settings, tag)),
    }
}

fn tag_usable(settings: &ExploreSettings, tag: &WheelTag) -> bool {
    let minor = settings
        .python_version
        .release()
        .get(1)
        .copied()
        .unwrap_or(0);
    let python_ok = if tag.python == "py3" {
        true
    } else if let Some(version) = tag.python.strip_prefix("py3") {
        version
            .parse::<u64>()
            .is_ok_and(|tag_minor| tag_minor <= minor)
    } else if let Some(version) = tag.python.strip_prefix("cp3") {
        version.parse::<u64>().is_ok_and(|tag_minor| {
            if tag.abi == "abi3" {
                tag_minor <= minor
            } else {
                tag_minor == minor
            }
        })
    } else {
        false
    };
    python_ok
        && settings
            .platform
            .as_ref()
            .is_none_or(|platform| platform.accepts(&tag.platform))
}

/// Per specifier set, the newest `max_versions` listed versions that match it
/// (constraints applied, fully yanked releases only for exact pins, pre-releases only
/// when asked for or when nothing else matches), oldest first.
pub(crate) fn select_versions(
    versions: &BTreeMap<Version, Vec<ProjectFile>>,
    specifiers: &[&VersionSpecifiers],
    constraints: Option<&[VersionSpecifiers]>,
    max_versions: usize,
) -> Vec<Version> {
    let mut selected = BTreeSet::new();
    for specifier_set in specifiers {
        let exact_pin = !specifier_set.is_empty()
            && specifier_set.iter().all(|specifier| {
                matches!(specifier.operator(), Operator::Equal | Operator::ExactEqual)
            });
        let asks_pre = specifier_set
            .iter()
            .any(|specifier| specifier.any_prerelease());
        let matching: Vec<&Version> = versions
            .iter()
            .filter(|(version, files)| {
                specifier_set.contains(version)
                    && constraints.is_none_or(|all| all.iter().all(|c| c.contains(version)))
                    && (exact_pin || files.iter().any(|file| file.yanked.is_none()))
            })
            .map(|(version, _)| version)
            .collect();
        let finals: Vec<&Version> = matching
            .iter()
            .copied()
            .filter(|version| asks_pre || !version.any_prerelease())
            .collect();
        let pool = if finals.is_empty() { matching } else { finals };
        selected.extend(pool.into_iter().rev().take(max_versions).cloned());
    }
    selected.into_iter().collect()
}

/// The specifiers of a requirement: `None` for a URL requirement, empty for "any".
pub(crate) fn specifiers_of(requirement: &Requirement) -> Option<VersionSpecifiers> {
    match &requirement.version_or_url {
        None => Some(VersionSpecifiers::empty()),
        Some(VersionOrUrl::VersionSpecifier(specifiers)) => Some(specifiers.clone()),
        Some(VersionOrUrl::Url(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_filter() {
        let platform = TargetPlatform::parse("manylinux_2_35_x86_64").unwrap();
        assert!(platform.accepts("any"));
        assert!(platform.accepts("manylinux2014_x86_64"));
        assert!(platform.accepts("manylinux_2_28_x86_64"));
        assert!(platform.accepts("linux_x86_64"));
        assert!(!platform.accepts("manylinux_2_39_x86_64"));
        assert!(!platform.accepts("manylinux_2_28_aarch64"));
        assert!(!platform.accepts("macosx_11_0_x86_64"));
        assert!(!platform.accepts("win_amd64"));
        assert!(TargetPlatform::parse("win_amd64").is_none());
    }
}
