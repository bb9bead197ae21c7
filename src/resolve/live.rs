//! Live resolution: the resolver over a universe filled only with what it visits.
//!
//! The universe starts empty. A project the resolution meets is looked up on the
//! indexes its policy allows, and each version it lists enters as a stand-in that has
//! its files but no metadata yet ([`Pending`]). Asking for the dependencies of a
//! stand-in (one with a file for this node), or meeting a project not looked up yet,
//! stops the resolution with a [`Miss`]; the lazy fetcher
//! ([`LiveIndex`](crate::index::client::live::LiveIndex)) fetches it while it keeps
//! reading ahead, and the resolution runs again on the fuller universe. PubGrub is
//! deterministic, so each run repeats the last one up to its miss and goes further.
//!
//! What comes out is the universe the resolution visited: every release whose
//! dependencies it read, and nothing else. The lock is the ordinary resolution of that
//! universe, so a snapshot of it resolves offline to the same lock.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::time::Duration;

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{PackageName, VersionOrUrl};

use super::conflict::{ConflictReport, Fact};
use super::environment::TargetEnvironment;
use super::error::ResolveError;
use super::request::Request;
use super::{Stop, resolve_within};
use crate::index::client::explore::TargetPlatform;
use crate::index::client::live::{LiveEvent, LiveIndex, LiveSummary};
use crate::index::client::{ClientError, ExploreSettings};
use crate::index::{IndexContents, Release, Universe};
use crate::rules::RuleSet;

/// What a universe being filled does not hold yet, and what the resolution read.
#[derive(Debug, Default)]
pub struct Pending {
    /// Projects looked up, found or not.
    looked_up: HashSet<PackageName>,
    /// Releases present as stand-ins: files, no metadata yet.
    unread: HashSet<(PackageName, Version)>,
    /// Releases whose dependencies the resolution read.
    visited: RefCell<BTreeSet<(PackageName, Version)>>,
    /// Stand-ins whose sdist's metadata build failed, with why: the resolution stops on
    /// one it asks for, as uv and pip stop on a failed build (uv does not stop on one
    /// it only read ahead, nor does this).
    build_failed: HashMap<(PackageName, Version), String>,
}

impl Pending {
    /// Whether `name` has been looked up.
    pub(crate) fn is_looked_up(&self, name: &PackageName) -> bool {
        self.looked_up.contains(name)
    }

    /// Whether `name version` is a stand-in without metadata.
    pub(crate) fn is_unread(&self, name: &PackageName, version: &Version) -> bool {
        self.unread.contains(&(name.clone(), version.clone()))
    }

    /// Note that the resolution read the dependencies of `name version`.
    pub(crate) fn visit(&self, name: &PackageName, version: &Version) {
        self.visited
            .borrow_mut()
            .insert((name.clone(), version.clone()));
    }
}

/// What a resolution over a filling universe asked for and did not find.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Miss {
    /// Projects not looked up yet, e.g. `[numpy, packaging]`.
    #[error("the project pages of {}", names(.0))]
    Projects(Vec<PackageName>),
    /// A release whose metadata is not read yet, e.g. `torch 2.9.1`.
    #[error("the metadata of `{0} {1}`")]
    Release(PackageName, Version),
}

fn names(names: &[PackageName]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a live resolution visited.
#[derive(Debug)]
pub struct LiveResolution {
    /// Every release whose dependencies the resolution read, per index; resolve it
    /// with [`super::resolve`] for the lock.
    pub universe: Universe,
    /// Why the manifest cannot be resolved, when it cannot (told from the live universe,
    /// which also knows the versions that were never read).
    pub failure: Option<ResolveError>,
    /// What was fetched.
    pub summary: LiveSummary,
    /// How many times the resolution ran.
    pub runs: usize,
}

impl fmt::Display for LiveResolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let visited: usize = self
            .universe
            .indexes
            .iter()
            .flat_map(|index| index.packages.values())
            .map(Vec::len)
            .sum();
        write!(
            f,
            "resolved live: {} projects looked up, {} releases read, {visited} visited, {} runs",
            self.summary.projects, self.summary.releases, self.runs
        )
    }
}

/// Failed to resolve live.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// An index could not answer.
    #[error("Failed to resolve `{manifest}` live")]
    Client {
        /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
        manifest: String,
        /// Why.
        #[source]
        source: ClientError,
    },
    /// The resolution asked twice running for something fetching did not bring.
    #[error("Failed to resolve `{manifest}` live: it still lacks {miss} after fetching it")]
    Unsettled {
        /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
        manifest: String,
        /// What it lacks.
        miss: Miss,
    },
    /// The node's values do not form a marker environment.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
}

/// How long a run waits, once what it missed is here, for the read-ahead still in
/// flight ([`LiveIndex::settle`]): on the baseline stack, 50 ms took 1.9–2.1 s cold
/// where waiting for all of it took 2.6–2.8 s.
const READ_AHEAD_GRACE: Duration = Duration::from_millis(50);

/// A package's releases read at once when the resolver walks down its versions: at
/// most `2^5 = 32`.
const MAX_BATCH_SHIFT: u32 = 5;

/// The first batch of a package walked down below a release already read: `2^2 = 4`
/// (`numba-cuda` 0.30.4 to 0.30.0 took three runs of about 0.2 s each, one release at
/// a time).
const FIRST_WALK_SHIFT: u32 = 2;

/// What the lazy fetcher is told of the node `environment` for a live resolution: its
/// markers, interpreter and platform, dependencies followed, the newest match of each
/// requirement read ahead (as the resolver tries first); no overrides or constraints,
/// sdists kept, and bounds the caller sets.
pub fn live_settings(
    environment: &TargetEnvironment,
    max_projects: usize,
    max_releases: usize,
) -> Result<ExploreSettings, ResolveError> {
    let python = environment.python.release();
    let python_version = Version::new([
        python.first().copied().unwrap_or(3),
        python.get(1).copied().unwrap_or(0),
        python.get(2).copied().unwrap_or(0),
    ]);
    Ok(ExploreSettings {
        markers: environment.markers()?,
        python_version,
        platform: Some(TargetPlatform {
            glibc: (environment.glibc.major, environment.glibc.minor),
            arch: environment.arch.as_str().to_string(),
        }),
        transitive: true,
        max_projects,
        // Read ahead: the newest match of each requirement, as the resolver tries first.
        max_versions: 1,
        max_releases,
        only_indexes: None,
        overrides: Vec::new(),
        constraints: Vec::new(),
        wheels_only: false,
    })
}

/// Resolve `request` for `environment` over what `live` fetches; see the module
/// documentation.
pub fn resolve_live(
    request: &Request,
    live: &LiveIndex,
    environment: &TargetEnvironment,
    rules: &RuleSet,
) -> Result<LiveResolution, LiveError> {
    let client_error = |source| LiveError::Client {
        manifest: request.file.clone(),
        source,
    };
    let markers = environment.markers()?;
    let roots: Vec<(PackageName, Option<VersionSpecifiers>)> = request
        .requirements
        .iter()
        .map(|root| &root.requirement)
        .filter(|requirement| requirement.evaluate_markers(&markers, &[]))
        .map(|requirement| {
            let specifiers = match &requirement.version_or_url {
                Some(VersionOrUrl::VersionSpecifier(specifiers)) => Some(specifiers.clone()),
                Some(VersionOrUrl::Url(_)) => None,
                None => Some(VersionSpecifiers::empty()),
            };
            (requirement.name.clone(), specifiers)
        })
        .collect();
    // The roots' pages and newest matching releases, before the first run asks.
    for requirement in &request.requirements {
        let requirement = &requirement.requirement;
        if !requirement.extras.is_empty() && requirement.evaluate_markers(&markers, &[]) {
            live.want_extras(&requirement.name, &requirement.extras);
        }
    }
    live.want_projects(&roots);

    let mut universe = Universe {
        indexes: live
            .index_names()
            .into_iter()
            .map(|name| IndexContents {
                name,
                packages: BTreeMap::new(),
                unusable: BTreeMap::new(),
            })
            .collect(),
        snapshot: None,
    };
    let mut pending = Pending::default();
    let mut last: Option<Miss> = None;
    let mut walked: HashMap<PackageName, u32> = HashMap::new();
    let mut runs = 0;
    let failure = loop {
        for event in live.drain() {
            absorb(&mut universe, &mut pending, event);
        }
        runs += 1;
        let miss = match resolve_within(request, &universe, Some(&pending), environment, rules) {
            Ok(_) => break None,
            Err(Stop::Failed(error)) => break Some(error),
            Err(Stop::Missing(miss)) => miss,
        };
        if let Miss::Release(name, version) = &miss
            && let Some(reason) = pending.build_failed.get(&(name.clone(), version.clone()))
        {
            break Some(build_failed(request, name, version, reason));
        }
        if last.as_ref() == Some(&miss) {
            return Err(LiveError::Unsettled {
                manifest: request.file.clone(),
                miss,
            });
        }
        match &miss {
            Miss::Projects(names) => {
                let wants: Vec<(PackageName, Option<VersionSpecifiers>)> =
                    names.iter().map(|name| (name.clone(), None)).collect();
                live.want_projects(&wants);
                live.wait_projects(names).map_err(client_error)?;
            }
            Miss::Release(name, version) => {
                // A package missed below a release already read is being walked down:
                // read four of its next versions at once, then twice as many each time.
                let below_read = universe
                    .indexes
                    .iter()
                    .filter_map(|contents| contents.packages.get(name))
                    .flatten()
                    .any(|known| {
                        known.version > *version && !pending.is_unread(name, &known.version)
                    });
                let misses = walked.entry(name.clone()).or_insert(if below_read {
                    FIRST_WALK_SHIFT
                } else {
                    0
                });
                let count = 1_usize << (*misses).min(MAX_BATCH_SHIFT);
                *misses += 1;
                live.want_releases_from(name, version, count);
                live.wait_release(name, version).map_err(client_error)?;
            }
        }
        // What is read ahead is what the next run asks for: run once it is here, or
        // once waiting for it costs more than a run.
        live.settle(READ_AHEAD_GRACE).map_err(client_error)?;
        last = Some(miss);
    };
    Ok(LiveResolution {
        universe: visited(&universe, &pending),
        failure,
        summary: live.summary(),
        runs,
    })
}

/// Lay one fetched answer into the filling universe.
fn absorb(universe: &mut Universe, pending: &mut Pending, event: LiveEvent) {
    match event {
        LiveEvent::Listed {
            name,
            found,
            unusable,
        } => {
            if let Some((index, versions)) = found
                && let Some(contents) = universe.indexes.get_mut(index)
            {
                let releases = versions
                    .into_iter()
                    .map(|(version, files)| {
                        pending.unread.insert((name.clone(), version.clone()));
                        Release {
                            provides_extra: Vec::new(),
                            version,
                            requires_dist: Vec::new(),
                            requires_python: None,
                            files,
                            provenance: None,
                        }
                    })
                    .collect();
                contents.packages.insert(name.clone(), releases);
                if !unusable.is_empty() {
                    contents.unusable.insert(name.clone(), unusable);
                }
            }
            pending.looked_up.insert(name);
        }
        LiveEvent::Read {
            name,
            index,
            release,
        } => {
            let key = (name.clone(), release.version.clone());
            let slot = universe
                .indexes
                .get_mut(index)
                .and_then(|contents| contents.packages.get_mut(&name))
                .and_then(|releases| {
                    releases
                        .iter_mut()
                        .find(|known| known.version == release.version)
                });
            if let Some(slot) = slot {
                *slot = release;
                pending.unread.remove(&key);
            }
        }
        LiveEvent::Unreadable {
            name,
            version,
            build_failure: Some(reason),
            ..
        } => {
            // Kept as a stand-in: the resolution stops if it asks for it.
            pending.build_failed.insert((name, version), reason);
        }
        LiveEvent::Unreadable {
            name,
            index,
            version,
            build_failure: None,
        } => {
            if let Some(releases) = universe
                .indexes
                .get_mut(index)
                .and_then(|contents| contents.packages.get_mut(&name))
            {
                releases.retain(|known| known.version != version);
            }
            pending.unread.remove(&(name, version));
        }
    }
}

/// The resolution asked for `name version`, whose sdist's metadata build failed: it
/// stops there, as uv (`Failed to build`) and pip (`metadata-generation-failed`) do,
/// rather than walking down to older releases that may not build either.
fn build_failed(
    request: &Request,
    name: &PackageName,
    version: &Version,
    reason: &str,
) -> ResolveError {
    ResolveError::Unresolvable {
        manifest: request.file.clone(),
        report: Box::new(ConflictReport {
            manifest: request.name.clone(),
            facts: vec![Fact::plain(format!(
                "the resolution needs the dependencies of `{name} {version}`, which offers only an sdist: {reason}"
            ))],
            hints: vec![format!(
                "uv and pip stop here too: leave the release out (`{name}: \"!={version}\"`), pin a release with a wheel for this node, or fix the build"
            )],
            more: Vec::new(),
        }),
    }
}

/// The releases of `universe` whose dependencies the resolution read, and of the
/// projects kept, the releases listed without a file for the node (for reports).
fn visited(universe: &Universe, pending: &Pending) -> Universe {
    let visited = pending.visited.borrow();
    let indexes = universe
        .indexes
        .iter()
        .map(|contents| {
            let packages: BTreeMap<PackageName, Vec<Release>> = contents
                .packages
                .iter()
                .filter_map(|(name, releases)| {
                    let kept: Vec<Release> = releases
                        .iter()
                        .filter(|release| {
                            visited.contains(&(name.clone(), release.version.clone()))
                                && !pending.is_unread(name, &release.version)
                        })
                        .cloned()
                        .collect();
                    (!kept.is_empty()).then(|| (name.clone(), kept))
                })
                .collect();
            let unusable = contents
                .unusable
                .iter()
                .filter(|(name, _)| packages.contains_key(*name))
                .map(|(name, releases)| (name.clone(), releases.clone()))
                .collect();
            IndexContents {
                name: contents.name.clone(),
                packages,
                unusable,
            }
        })
        .collect();
    Universe {
        indexes,
        snapshot: None,
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use pep508_rs::Requirement;

    use super::*;
    use crate::index::DistFile;
    use crate::resolve::request::{IndexPolicy, Origin, ResolveOptions, RootRequirement};

    fn name(text: &str) -> PackageName {
        PackageName::from_str(text).unwrap()
    }

    fn version(text: &str) -> Version {
        Version::from_str(text).unwrap()
    }

    fn file(filename: &str) -> DistFile {
        DistFile {
            filename: filename.to_string(),
            sha256: None,
            yanked: None,
            requires_python: None,
            size: None,
        }
    }

    fn listed(package: &str, versions: &[(&str, &str)]) -> LiveEvent {
        LiveEvent::Listed {
            name: name(package),
            found: Some((
                0,
                versions
                    .iter()
                    .map(|(listed, filename)| (version(listed), vec![file(filename)]))
                    .collect(),
            )),
            unusable: BTreeMap::new(),
        }
    }

    fn read(package: &str, listed: &str, filename: &str, requires: &[&str]) -> LiveEvent {
        LiveEvent::Read {
            name: name(package),
            index: 0,
            release: Release {
                provides_extra: Vec::new(),
                version: version(listed),
                requires_dist: requires
                    .iter()
                    .map(|text| Requirement::from_str(text).unwrap())
                    .collect(),
                requires_python: None,
                files: vec![file(filename)],
                provenance: None,
            },
        }
    }

    /// `app 1.0` needs `lib`; `lib 2.0` has only a Windows wheel, `lib 1.0` a pure one.
    #[test]
    fn a_filling_universe_stops_at_what_it_lacks() {
        let request = Request {
            name: "live".to_string(),
            file: "live.yaml".to_string(),
            requirements: vec![RootRequirement {
                requirement: Requirement::from_str("app").unwrap(),
                index: None,
                git: None,
                origin: Origin {
                    file: "live.yaml".to_string(),
                    span: None,
                },
            }],
            overrides: Vec::new(),
            constraints: Vec::new(),
            indexes: vec![IndexPolicy {
                name: "default".to_string(),
                explicit: false,
            }],
            requires_python: None,
            options: ResolveOptions::default(),
        };
        let environment = TargetEnvironment::parse_facts(
            r#"{"python": "3.12.3", "implementation": "cpython", "glibc": "2.35", "arch": "x86_64", "gpu_arch": []}"#,
            "facts.json",
        )
        .unwrap();
        let rules = RuleSet::embedded().unwrap();
        let mut universe = Universe {
            indexes: vec![IndexContents {
                name: "default".to_string(),
                packages: BTreeMap::new(),
                unusable: BTreeMap::new(),
            }],
            snapshot: None,
        };
        let mut pending = Pending::default();
        let missed = |universe: &Universe, pending: &Pending| match resolve_within(
            &request,
            universe,
            Some(pending),
            &environment,
            &rules,
        ) {
            Err(Stop::Missing(miss)) => Some(miss),
            Ok(_) => None,
            Err(Stop::Failed(error)) => panic!("{error}"),
        };

        assert_eq!(
            missed(&universe, &pending),
            Some(Miss::Projects(vec![name("app")]))
        );
        absorb(
            &mut universe,
            &mut pending,
            listed("app", &[("1.0", "app-1.0-py3-none-any.whl")]),
        );
        assert_eq!(
            missed(&universe, &pending),
            Some(Miss::Release(name("app"), version("1.0")))
        );
        absorb(
            &mut universe,
            &mut pending,
            read("app", "1.0", "app-1.0-py3-none-any.whl", &["lib"]),
        );
        assert_eq!(
            missed(&universe, &pending),
            Some(Miss::Projects(vec![name("lib")]))
        );
        absorb(
            &mut universe,
            &mut pending,
            listed(
                "lib",
                &[
                    ("1.0", "lib-1.0-py3-none-any.whl"),
                    ("2.0", "lib-2.0-cp312-cp312-win_amd64.whl"),
                ],
            ),
        );
        // `lib 2.0` is refused from its files alone; only `lib 1.0` is read.
        assert_eq!(
            missed(&universe, &pending),
            Some(Miss::Release(name("lib"), version("1.0")))
        );
        absorb(
            &mut universe,
            &mut pending,
            read("lib", "1.0", "lib-1.0-py3-none-any.whl", &[]),
        );
        assert_eq!(missed(&universe, &pending), None);

        let recorded = visited(&universe, &pending);
        let releases: Vec<String> = recorded.indexes[0]
            .packages
            .iter()
            .flat_map(|(name, releases)| {
                releases
                    .iter()
                    .map(move |release| format!("{name}=={}", release.version))
            })
            .collect();
        assert_eq!(releases, ["app==1.0", "lib==1.0"]);
        let lock = super::super::resolve(&request, &recorded, &environment, &rules).unwrap();
        let pins: Vec<String> = lock
            .packages
            .iter()
            .map(|package| format!("{}=={}", package.name, package.version))
            .collect();
        assert_eq!(pins, ["app==1.0", "lib==1.0"]);
    }
}
