//! The lazy fetcher behind live resolution: project pages and release metadata fetched
//! only when the resolver asks for them, concurrently, through the index client and
//! its cache.
//!
//! The resolver runs on the caller's thread and asks synchronously: it names the
//! projects or the release it lacks ([`LiveIndex::want_projects`],
//! [`LiveIndex::want_releases_from`]), blocks until they are answered
//! ([`LiveIndex::wait_projects`], [`LiveIndex::wait_release`], [`LiveIndex::settle`]),
//! and takes what arrived as [`LiveEvent`]s ([`LiveIndex::drain`]). Meanwhile tasks on
//! the fetcher's own runtime run ahead of it, the way the resolver will go: once a
//! release's metadata is read, the project pages of its dependencies are fetched, and
//! for each dependency the metadata of the newest version that matches the requirement
//! (the version the resolver tries first), with the extras asked for it: a requirement
//! such as `flashinfer-python[cu13]` also follows the `extra == "cu13"` requirements of
//! what is read for `flashinfer-python`, now or later. Requests in flight are bounded by
//! the client.
//!
//! The index policy and the file filters are the explorer's ([`super::explore`]): a
//! package pinned to an index is looked up only there, any other on the non-explicit
//! indexes in order; files that cannot install on the target are left out; overrides
//! replace and constraints narrow the specifiers a read-ahead follows.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{ExtraName, PackageName, Requirement};
use tokio::runtime::Handle;

use super::explore::{
    Constraints, ExploreSettings, IndexSource, Listing, Overrides, allowed_indexes,
    look_up_project, manifest_pins, select_versions, specifiers_of,
};
use super::{ClientError, IndexClient, IndexLocation, dist_file};
use crate::index::model::{DistFile, Release, UnusableFiles};

/// A project's versions with their files usable on the target, oldest first.
pub type ListedVersions = Vec<(Version, Vec<DistFile>)>;

/// What arrived from the indexes since the last [`LiveIndex::drain`].
#[derive(Debug, Clone, PartialEq)]
pub enum LiveEvent {
    /// A project was looked up: the index that has it (by position) and its files
    /// usable on the target by version, oldest first; `None` when no allowed index has it.
    Listed {
        /// e.g. `torch`.
        name: PackageName,
        /// e.g. `(0, [(2.9.1, [torch-2.9.1-cp312-….whl])])`.
        found: Option<(usize, ListedVersions)>,
        /// Its releases listed with no file usable on the target, e.g. `tensorflow
        /// 2.9.1` for CPython 3.12.
        unusable: BTreeMap<Version, UnusableFiles>,
    },
    /// A release's metadata was read.
    Read {
        /// e.g. `torch`.
        name: PackageName,
        /// The index position it was read from.
        index: usize,
        /// The release, files included.
        release: Release,
    },
    /// A release's metadata cannot be had (an sdist only, a broken wheel).
    Unreadable {
        /// e.g. `legacy`.
        name: PackageName,
        /// The index position.
        index: usize,
        /// e.g. `0.1`.
        version: Version,
        /// Why its sdist's metadata could not be built, when that is why; `None` for
        /// metadata that does not parse.
        build_failure: Option<String>,
    },
}

/// What a live run fetched, for its report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveSummary {
    /// Projects looked up, e.g. `170`.
    pub projects: usize,
    /// Releases whose metadata was read, e.g. `180`.
    pub releases: usize,
    /// What was left out and why, e.g. ``skipped `legacy 0.1`: …``.
    pub notes: Vec<String>,
}

/// The lazy fetcher; see the module documentation.
pub struct LiveIndex {
    shared: Arc<Shared>,
    /// The fetcher's own runtime, so that waiting never holds up a worker its tasks need.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for LiveIndex {
    fn drop(&mut self) {
        // Read-ahead still in flight is abandoned; dropping a runtime may not block
        // when the caller is itself on a runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

struct Shared {
    client: IndexClient,
    handle: Handle,
    indexes: Vec<IndexSource>,
    settings: ExploreSettings,
    pins: BTreeMap<PackageName, String>,
    overrides: Overrides,
    constraints: Constraints,
    wait_limit: Duration,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Every project asked for: `None` while it is looked up, then its listing (`None`
    /// inside when no allowed index has it).
    projects: HashMap<PackageName, Option<Option<Listing>>>,
    /// Every release asked for: whether its metadata has been answered.
    releases: HashMap<(PackageName, Version), bool>,
    /// Specifiers met on a project still being looked up; the newest version matching
    /// each is read ahead once its page is here.
    ahead: HashMap<PackageName, Vec<VersionSpecifiers>>,
    events: Vec<LiveEvent>,
    notes: Vec<String>,
    /// The first error that stops the run.
    failure: Option<ClientError>,
    releases_read: usize,
    /// The extras asked for each project so far, e.g. `cu13` for `flashinfer-python`.
    extras: HashMap<PackageName, Vec<ExtraName>>,
    /// The requirements of every release read, by project: followed again when an
    /// extra is asked for that project later.
    requirements: HashMap<PackageName, Vec<Vec<Requirement>>>,
}

impl LiveIndex {
    /// A fetcher over `indexes` (highest priority first) for the target of `settings`
    /// (markers, interpreter, platform, limits, overrides, constraints), with `pins`
    /// (package → index name) from the manifest, on a runtime of its own with two
    /// workers; no wait lasts longer than `wait_limit`.
    pub fn new(
        client: IndexClient,
        indexes: Vec<IndexSource>,
        settings: ExploreSettings,
        pins: BTreeMap<PackageName, String>,
        wait_limit: Duration,
    ) -> Result<Self, ClientError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("live-index")
            .enable_all()
            .build()
            .map_err(ClientError::Runtime)?;
        let (overrides, constraints) = manifest_pins(&settings);
        let handle = runtime.handle().clone();
        Ok(Self {
            runtime: Some(runtime),
            shared: Arc::new(Shared {
                client,
                handle,
                indexes,
                settings,
                pins,
                overrides,
                constraints,
                wait_limit,
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
            }),
        })
    }

    /// The index names, in the order the events' positions refer to.
    pub fn index_names(&self) -> Vec<String> {
        self.shared
            .indexes
            .iter()
            .map(|index| index.location.name.clone())
            .collect()
    }

    /// Look these projects up (those not asked for yet); with a specifier, also read
    /// the newest matching version ahead of the resolver.
    pub fn want_projects(&self, wants: &[(PackageName, Option<VersionSpecifiers>)]) {
        let mut state = self.shared.lock();
        for (name, specifiers) in wants {
            match specifiers {
                Some(specifiers) => {
                    self.shared
                        .read_ahead(&mut state, name.clone(), specifiers.clone());
                }
                None => self.shared.start_project(&mut state, name),
            }
        }
    }

    /// Read ahead, for `name`, the requirements that `extras` bring as well, e.g.
    /// `cu13` for the root requirement `flashinfer-python[cu13]`.
    pub fn want_extras(&self, name: &PackageName, extras: &[ExtraName]) {
        let mut state = self.shared.lock();
        self.shared.want_extras(&mut state, name, extras);
    }

    /// Read the metadata of `name version` and of the `count - 1` versions listed just
    /// below it, newest first: the resolver walking down a package's versions
    /// (backtracking) finds the next ones read. Of the versions below, only those with a
    /// wheel are read ahead: an sdist-only one may need a metadata build (minutes), which
    /// only the resolver asking for it is worth.
    pub fn want_releases_from(&self, name: &PackageName, version: &Version, count: usize) {
        let mut state = self.shared.lock();
        let below: Vec<Version> = match state.projects.get(name) {
            Some(Some(Some(listing))) => listing
                .versions
                .range(..=version.clone())
                .rev()
                .take(count)
                .filter(|(listed, _)| *listed == version || listing.has_wheel_metadata(listed))
                .map(|(listed, _)| listed.clone())
                .collect(),
            _ => vec![version.clone()],
        };
        for listed in below {
            self.shared.start_release(&mut state, name, &listed);
        }
    }

    /// Wait until every one of `names` has been looked up.
    pub fn wait_projects(&self, names: &[PackageName]) -> Result<(), ClientError> {
        self.wait(
            |state| {
                names
                    .iter()
                    .all(|name| matches!(state.projects.get(name), Some(Some(_))))
            },
            || match names {
                [one] => format!("the project page of `{one}`"),
                _ => format!("the project pages of {} packages", names.len()),
            },
        )
    }

    /// Wait until the metadata of `name version` has been answered.
    pub fn wait_release(&self, name: &PackageName, version: &Version) -> Result<(), ClientError> {
        let key = (name.clone(), version.clone());
        self.wait(
            |state| state.releases.get(&key).copied().unwrap_or(true),
            || format!("the metadata of `{name} {version}`"),
        )
    }

    /// Wait until nothing asked for is in flight any more, reading ahead included, or
    /// until `grace` has passed, whichever comes first: the resolver runs again once
    /// for the answers that come together, but never waits long for a read-ahead it
    /// may not need (a run takes milliseconds; a chain of read-ahead fetches, each
    /// waiting for the one before, can take a second).
    pub fn settle(&self, grace: Duration) -> Result<(), ClientError> {
        self.wait_until(
            |state| {
                state.projects.values().all(Option::is_some)
                    && state.releases.values().all(|answered| *answered)
            },
            Instant::now() + grace.min(self.shared.wait_limit),
        )
        .map(|_| ())
    }

    /// What arrived since the last call, in arrival order.
    pub fn drain(&self) -> Vec<LiveEvent> {
        std::mem::take(&mut self.shared.lock().events)
    }

    /// Counts and notes so far.
    pub fn summary(&self) -> LiveSummary {
        let state = self.shared.lock();
        let mut notes = state.notes.clone();
        notes.sort();
        notes.dedup();
        LiveSummary {
            projects: state.projects.len(),
            releases: state.releases_read,
            notes,
        }
    }

    fn wait(
        &self,
        done: impl Fn(&State) -> bool,
        what: impl Fn() -> String,
    ) -> Result<(), ClientError> {
        if self.wait_until(done, Instant::now() + self.shared.wait_limit)? {
            return Ok(());
        }
        Err(ClientError::Stalled {
            what: what(),
            seconds: self.shared.wait_limit.as_secs(),
        })
    }

    /// Wait until `done` or `deadline`: whether `done` held; a fetch's failure first.
    fn wait_until(
        &self,
        done: impl Fn(&State) -> bool,
        deadline: Instant,
    ) -> Result<bool, ClientError> {
        let mut state = self.shared.lock();
        loop {
            if let Some(error) = state.failure.take() {
                return Err(error);
            }
            if done(&state) {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, deadline - now)
                .map_or_else(|poisoned| poisoned.into_inner().0, |(state, _)| state);
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Start looking `name` up unless it was asked for already.
    fn start_project(self: &Arc<Self>, state: &mut State, name: &PackageName) {
        if state.projects.contains_key(name) {
            return;
        }
        if state.projects.len() >= self.settings.max_projects {
            state.failure.get_or_insert(ClientError::Limit {
                limit: self.settings.max_projects,
                what: "projects",
                flag: "--max-projects",
            });
            self.changed.notify_all();
            return;
        }
        let pinned = self.pins.get(name).map(String::as_str);
        let positions = match allowed_indexes(&self.indexes, &self.settings, name, pinned) {
            Ok(positions) => positions,
            Err(note) => {
                state.notes.push(note);
                Vec::new()
            }
        };
        if positions.is_empty() {
            self.answer_project(state, name.clone(), None);
            return;
        }
        state.projects.insert(name.clone(), None);
        let locations: Vec<(usize, IndexLocation)> = positions
            .into_iter()
            .map(|position| (position, self.indexes[position].location.clone()))
            .collect();
        let shared = Arc::clone(self);
        let name = name.clone();
        self.handle.spawn(async move {
            let found = look_up_project(&shared.client, &locations, &name, &shared.settings).await;
            let mut state = shared.lock();
            match found {
                Ok(Some(listing)) => {
                    shared.answer_project(&mut state, name, Some(listing));
                }
                Ok(None) => {
                    state
                        .notes
                        .push(format!("skipped `{name}`: no allowed index has it"));
                    shared.answer_project(&mut state, name, None);
                }
                Err(error) => {
                    state.failure.get_or_insert(error);
                    state.projects.insert(name, Some(None));
                    shared.changed.notify_all();
                }
            }
        });
    }

    /// Note the `extras` asked for `name`; a new one has the requirements of the
    /// releases of `name` already read followed again.
    fn want_extras(self: &Arc<Self>, state: &mut State, name: &PackageName, extras: &[ExtraName]) {
        let known = state.extras.entry(name.clone()).or_default();
        let before = known.len();
        for extra in extras {
            if !known.contains(extra) {
                known.push(extra.clone());
            }
        }
        if known.len() == before {
            return;
        }
        let read = state.requirements.get(name).cloned().unwrap_or_default();
        for requirements in read {
            self.follow(state, name, &requirements);
        }
    }

    /// Read ahead the requirements of a release of `name` that apply on the target with
    /// the extras asked for `name`, with their own extras.
    fn follow(
        self: &Arc<Self>,
        state: &mut State,
        name: &PackageName,
        requirements: &[Requirement],
    ) {
        let extras = state.extras.get(name).cloned().unwrap_or_default();
        for requirement in requirements {
            if !requirement.evaluate_markers(&self.settings.markers, &extras) {
                continue;
            }
            if !requirement.extras.is_empty() {
                self.want_extras(state, &requirement.name, &requirement.extras);
            }
            if let Some(specifiers) = specifiers_of(requirement) {
                self.read_ahead(state, requirement.name.clone(), specifiers);
            }
        }
    }

    /// Record a project's listing, then read ahead what was wished for it.
    fn answer_project(
        self: &Arc<Self>,
        state: &mut State,
        name: PackageName,
        listing: Option<Listing>,
    ) {
        let found = listing.as_ref().map(|listing| {
            let versions = listing
                .versions
                .iter()
                .map(|(version, files)| (version.clone(), files.iter().map(dist_file).collect()))
                .collect();
            (listing.index, versions)
        });
        state.events.push(LiveEvent::Listed {
            name: name.clone(),
            found,
            unusable: listing.as_ref().map(Listing::unusable).unwrap_or_default(),
        });
        state.projects.insert(name.clone(), Some(listing));
        for specifiers in state.ahead.remove(&name).unwrap_or_default() {
            self.read_ahead(state, name.clone(), specifiers);
        }
        self.changed.notify_all();
    }

    /// Read the newest version of `name` matching `specifiers` (an override replaces
    /// them, constraints narrow them) once its page is here.
    fn read_ahead(
        self: &Arc<Self>,
        state: &mut State,
        name: PackageName,
        specifiers: VersionSpecifiers,
    ) {
        let specifiers = self.overrides.get(&name).cloned().unwrap_or(specifiers);
        let newest: Vec<Version> = match state.projects.get(&name) {
            // The newest match is what the resolver tries first, so it is read even when
            // only its sdist can give its metadata (a build, bounded in number at once):
            // the build then runs beside the other fetches, not after them. Walking down
            // (`want_releases_from`) reads ahead only what needs no build.
            Some(Some(Some(listing))) => select_versions(
                &listing.versions,
                &[&specifiers],
                self.constraints.get(&name).map(Vec::as_slice),
                1,
            ),
            Some(Some(None)) => return,
            Some(None) | None => {
                state
                    .ahead
                    .entry(name.clone())
                    .or_default()
                    .push(specifiers);
                self.start_project(state, &name);
                return;
            }
        };
        for version in newest {
            self.start_release(state, &name, &version);
        }
    }

    /// Start reading the metadata of `name version` unless it was asked for already.
    fn start_release(self: &Arc<Self>, state: &mut State, name: &PackageName, version: &Version) {
        let key = (name.clone(), version.clone());
        if state.releases.contains_key(&key) {
            return;
        }
        let Some(Some(Some(listing))) = state.projects.get(name) else {
            return;
        };
        let Some(files) = listing.versions.get(version).cloned() else {
            return;
        };
        let stand_in = listing.stand_in(version).cloned();
        let index = listing.index;
        if state.releases_read >= self.settings.max_releases {
            state.failure.get_or_insert(ClientError::Limit {
                limit: self.settings.max_releases,
                what: "releases",
                flag: "--max-releases",
            });
            self.changed.notify_all();
            return;
        }
        state.releases_read += 1;
        state.releases.insert(key.clone(), false);
        let location = self.indexes[index].location.clone();
        let shared = Arc::clone(self);
        let (name, version) = key;
        self.handle.spawn(async move {
            let outcome = shared
                .client
                .fetch_release(&location, &version, &files, stand_in.as_ref())
                .await;
            let mut state = shared.lock();
            state.releases.insert((name.clone(), version.clone()), true);
            match outcome {
                Ok(release) => {
                    let requirements = release.requires_dist.clone();
                    state
                        .requirements
                        .entry(name.clone())
                        .or_default()
                        .push(requirements.clone());
                    state.events.push(LiveEvent::Read {
                        name: name.clone(),
                        index,
                        release,
                    });
                    shared.follow(&mut state, &name, &requirements);
                }
                Err(
                    error @ (ClientError::Metadata { .. }
                    | ClientError::SdistMetadata { .. }
                    | ClientError::SdistBuild { .. }
                    | ClientError::Zip { .. }),
                ) => {
                    state.notes.push(format!(
                        "skipped `{name} {version}`: {}",
                        crate::text::error_chain(&error).replace('\n', " ")
                    ));
                    let build_failure = match &error {
                        ClientError::SdistBuild { reason, .. } => Some(reason.clone()),
                        _ => None,
                    };
                    state.events.push(LiveEvent::Unreadable {
                        name,
                        index,
                        version,
                        build_failure,
                    });
                }
                Err(error) => {
                    state.failure.get_or_insert(error);
                }
            }
            shared.changed.notify_all();
        });
    }
}
