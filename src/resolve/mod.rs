//! The resolver: decides whether a manifest's stack can work on a node, and either
//! pins every package (a [`Lock`]) or explains why not (a [`ConflictReport`]).
//!
//! PubGrub over the [`Universe`](crate::index::Universe) with index policy, PEP 440
//! semantics (local labels, pre/post/dev releases), PEP 508 markers for the node,
//! extras, `Requires-Python`, wheel tags, yanked files, overrides and constraints, and
//! the rules of `manifests/rules/` as extra dependencies on virtual packages that
//! stand for the node (`python`, `glibc`, `cuda-driver`, `gpu-arch`, `cuda-toolkit`,
//! `cuda-runtime`). It reads indexes only through the universe: no I/O here. Live
//! resolution (`live`) fills the universe lazily: a resolution that asks for what is
//! not there yet stops with a miss, the index client fetches it, and it runs again.

mod cause;
mod compare;
mod conflict;
mod environment;
mod error;
mod evidence;
pub mod export;
mod findings;
pub mod inputs;
mod live;
mod lock;
mod lock_match;
mod names;
mod node;
mod package;
mod provider;
pub mod ranges;
mod relax;
mod report;
mod request;
mod unusable;
mod version_identity;

use std::collections::BTreeMap;
use std::str::FromStr;

pub use cause::{Cause, RuleCause, Unavailable, VersionRange};
pub use compare::{Outcome, resolution_entries};
pub use conflict::{Conflict, ConflictReport, Fact};
pub use environment::{FactsFile, Implementation, TargetEnvironment};
pub use error::ResolveError;
pub use live::{LiveError, LiveResolution, live_settings, resolve_live};
pub use lock::{
    FindingKind, LOCK_SCHEMA, Lock, LockFinding, LockedPackage, LockedSource, lock_path_beside,
};
pub use lock_match::LockDifference;
pub use package::{ResolverPackage, VirtualPackage};
pub use ranges::show_range;
pub use relax::Relaxation;
pub use request::{
    IndexPolicy, ManifestPin, Origin, PackageSelection, PrereleaseMode, Request, ResolveOptions,
    RootRequirement,
};
pub use version_identity::same_version;

use pep440_rs::Version;
use pubgrub::PubGrubError;

use crate::index::Universe;
use crate::index::filename::DistFileName;
use crate::rules::RuleSet;
use crate::text::Line;
use provider::{Halt, Provider};

/// Resolve `request` against `universe` for the node `environment`, applying `rules`.
///
/// Returns the lock, or [`ResolveError::Unresolvable`] with a report in domain words.
pub fn resolve(
    request: &Request,
    universe: &Universe,
    environment: &TargetEnvironment,
    rules: &RuleSet,
) -> Result<Lock, ResolveError> {
    match resolve_within(request, universe, None, environment, rules) {
        Ok(lock) => Ok(lock),
        Err(Stop::Failed(error)) => Err(error),
        // A complete universe has nothing pending, so nothing is ever missed.
        Err(Stop::Missing(miss)) => Err(ResolveError::Solver {
            message: format!("a complete universe missed {miss}"),
        }),
    }
}

/// Why [`resolve_within`] stopped without a lock.
#[derive(Debug)]
enum Stop {
    /// The resolution failed: the manifest cannot be resolved, or bad input.
    Failed(ResolveError),
    /// The universe being filled lacks what the resolution asked for.
    Missing(live::Miss),
}

impl From<ResolveError> for Stop {
    fn from(error: ResolveError) -> Self {
        Self::Failed(error)
    }
}

/// [`resolve`] over a universe that may still be filling (`pending`).
fn resolve_within(
    request: &Request,
    universe: &Universe,
    pending: Option<&live::Pending>,
    environment: &TargetEnvironment,
    rules: &RuleSet,
) -> Result<Lock, Stop> {
    let gaps = rules.gaps(
        environment.toolkit.as_ref(),
        environment.cuda_runtime.as_ref(),
        &environment.gpu_archs,
    );
    if !gaps.is_empty() {
        return Err(ResolveError::Rules {
            manifest: request.file.clone(),
            gaps,
        }
        .into());
    }
    let markers = environment.markers()?;
    // Exact pins narrowed to their one candidate find the same resolutions with far less
    // backtracking; a failure is resolved again below for the report in written ranges.
    let mut early = Vec::new();
    let (narrowed, outcome) = solve(
        |early| {
            Provider::new(request, universe, environment, rules, markers.clone(), &[])
                .narrowing()
                .filling(pending)
                .deciding_early(early)
        },
        &mut early,
    );
    match outcome {
        Ok(selection) => return Ok(lock_from(&narrowed, selection, request, environment)?),
        Err(PubGrubError::ErrorRetrievingDependencies { source, .. }) => {
            return Err(missing(source));
        }
        Err(_) => {}
    }
    let mut relaxed: Vec<Relaxation> = Vec::new();
    let mut found: Vec<(u8, ConflictReport)> = Vec::new();
    for round in 0..MAX_CONFLICTS {
        let (provider, outcome) = solve(
            |early| {
                Provider::new(
                    request,
                    universe,
                    environment,
                    rules,
                    markers.clone(),
                    &relaxed,
                )
                .filling(pending)
                .deciding_early(early)
            },
            &mut early,
        );
        match outcome {
            Ok(selection) if round == 0 => {
                return Ok(lock_from(&provider, selection, request, environment)?);
            }
            Err(PubGrubError::ErrorRetrievingDependencies { source, .. }) => {
                return Err(missing(source));
            }
            Ok(_) => break,
            Err(PubGrubError::NoSolution(tree)) => {
                let evidence = evidence::Evidence::gather(&provider, &tree);
                let report = report::conflict_report(&evidence, &tree, &request.name);
                let causes = relax::candidates(&tree, &|package, dependency| {
                    evidence.edges_between(package, dependency)
                });
                let rank = causes.first().map_or(0, Relaxation::rank);
                found.push((rank, report));
                // A rule covers every edge of its kind (one runtime mismatch pulls in many
                // `-cu12` wheels), so it is set aside before a single metadata pin.
                let next = causes
                    .into_iter()
                    .filter(|cause| !relaxed.contains(cause))
                    .min_by_key(|cause| matches!(cause, Relaxation::Metadata { .. }));
                match next {
                    Some(cause) => relaxed.push(cause),
                    None => break,
                }
            }
            Err(error) if round == 0 => {
                return Err(ResolveError::Solver {
                    message: error.to_string(),
                }
                .into());
            }
            Err(_) => break,
        }
    }
    Err(ResolveError::Unresolvable {
        manifest: request.file.clone(),
        report: Box::new(merge_conflicts(found)),
    }
    .into())
}

/// What one pubgrub run gives.
type Solved<'a> =
    Result<pubgrub::SelectedDependencies<ResolverPackage, Version>, PubGrubError<Provider<'a>>>;

/// Run pubgrub over the providers `make` builds until a run is not halted by a package
/// walked down: each such package is decided early in the next run (`provider::walk`),
/// so there is at most one run more than there are packages.
fn solve<'a>(
    make: impl Fn(Vec<ResolverPackage>) -> Provider<'a>,
    early: &mut Vec<ResolverPackage>,
) -> (Provider<'a>, Solved<'a>) {
    loop {
        let provider = make(early.clone());
        let root = provider.root().clone();
        let outcome = pubgrub::resolve(&provider, root, Version::new([0]));
        if let Err(PubGrubError::ErrorChoosingVersion {
            source: Halt::Walked(package),
            ..
        }) = &outcome
            && !early.contains(package)
        {
            early.push(package.clone());
            continue;
        }
        return (provider, outcome);
    }
}

/// The stop for a provider's halt while reading dependencies.
fn missing(halt: Halt) -> Stop {
    match halt {
        Halt::Missing(miss) => Stop::Missing(miss),
        Halt::Walked(package) => Stop::Failed(ResolveError::Solver {
            message: format!("`{package}` was walked down while its dependencies were read"),
        }),
    }
}

/// At most this many independent conflicts are looked for in one report.
const MAX_CONFLICTS: usize = 5;

/// One report from the conflicts of each round, the one to change first first; a later
/// round's facts already told are left out, and a round with nothing new is dropped.
fn merge_conflicts(mut found: Vec<(u8, ConflictReport)>) -> ConflictReport {
    found.sort_by_key(|(rank, _)| *rank);
    let mut reports = found.into_iter().map(|(_, report)| report);
    let Some(mut first) = reports.next() else {
        return ConflictReport {
            manifest: String::new(),
            facts: Vec::new(),
            hints: Vec::new(),
            more: Vec::new(),
        };
    };
    let mut told: std::collections::HashSet<Fact> = first.facts.iter().cloned().collect();
    let mut hinted: std::collections::HashSet<String> = first.hints.iter().cloned().collect();
    for report in reports {
        let facts: Vec<Fact> = report
            .facts
            .into_iter()
            .filter(|fact| told.insert(fact.clone()))
            .collect();
        let hints: Vec<String> = report
            .hints
            .into_iter()
            .filter(|hint| hinted.insert(hint.clone()))
            .collect();
        if !facts.is_empty() {
            first.more.push(Conflict { facts, hints });
        }
    }
    first
}

/// `version` as the file chosen for it spells it, e.g. `2.0.0` for a release recorded
/// as `2` whose file is `cffi-2.0.0-….whl`. The universe keys releases by version, and
/// PEP 440 holds `2` equal to `2.0.0`, so a release may carry any spelling of its
/// version (a snapshot's `version` field, the first of its files a listing met); the
/// lock names it as it was published. `version` itself when the file name gives no
/// version or another one.
fn as_the_file_spells_it(version: Version, filename: &str) -> Version {
    match crate::index::filename::DistFilename::parse(filename) {
        Ok(parsed) if *parsed.version() == version => parsed.version().clone(),
        _ => version,
    }
}

/// The lock of a successful resolution.
fn lock_from(
    provider: &Provider<'_>,
    selection: pubgrub::SelectedDependencies<ResolverPackage, Version>,
    request: &Request,
    environment: &TargetEnvironment,
) -> Result<Lock, ResolveError> {
    let mut extras: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut chosen: BTreeMap<String, (pep508_rs::PackageName, Version)> = BTreeMap::new();
    for (package, version) in selection {
        match package {
            ResolverPackage::Package(name) => {
                chosen.insert(name.to_string(), (name, version));
            }
            ResolverPackage::Extra(name, extra) => {
                extras
                    .entry(name.to_string())
                    .or_default()
                    .push(extra.to_string());
            }
            ResolverPackage::Root(_) | ResolverPackage::Virtual(_) => {}
        }
    }
    let findings = findings::examine(
        provider,
        &findings::Chosen {
            versions: &chosen,
            extras: &extras,
        },
        request,
        environment,
    )
    .map_err(|report| ResolveError::Unresolvable {
        manifest: request.file.clone(),
        report,
    })?;
    let mut packages = Vec::new();
    let unwritable = |what: &str, error: &dyn std::fmt::Display| ResolveError::Solver {
        message: format!("{what} cannot be written into a lock: {error}"),
    };
    let line = |text: String| Line::new(text).map_err(|error| unwritable("a value", &error));
    for (key, (name, version)) in chosen {
        let mut package_extras: Vec<pep508_rs::ExtraName> = extras
            .remove(&key)
            .unwrap_or_default()
            .iter()
            .filter_map(|extra| pep508_rs::ExtraName::from_str(extra).ok())
            .collect();
        package_extras.sort();
        let mut version = version;
        let source = match provider.git_source(&name) {
            // The lock is shown and saved: never the URL's credentials.
            Some(git) => LockedSource::Git {
                url: line(crate::manifest::redact_url(&git.url))?,
                rev: line(git.rev.clone())?,
                subdirectory: git.subdirectory.clone().map(line).transpose()?,
            },
            None => {
                let release =
                    provider
                        .release(&name, &version)
                        .ok_or_else(|| ResolveError::Solver {
                            message: format!("`{name} {version}` was chosen but is not recorded"),
                        })?;
                let file = provider
                    .choose_file(&name, release)
                    .map_err(|(reason, _)| ResolveError::Solver {
                        message: format!("`{name} {version}` was chosen but {reason}"),
                    })?;
                version = as_the_file_spells_it(version, &file.file.filename);
                LockedSource::Index {
                    index: line(provider.index_name_of(&name).unwrap_or_default())?,
                    file: DistFileName::new(file.file.filename.clone())
                        .map_err(|error| unwritable("a file name", &error))?,
                    sha256: file.file.sha256.clone(),
                }
            }
        };
        packages.push(LockedPackage {
            also_on_explicit: provider
                .explicit_holders(&name)
                .into_iter()
                .map(line)
                .collect::<Result<_, _>>()?,
            name,
            version,
            extras: package_extras,
            source,
        });
    }
    Ok(Lock {
        schema: LOCK_SCHEMA,
        manifest: Line::escaping(&request.name),
        manifest_sha256: None,
        inputs: None,
        assumed: environment.to_facts(),
        packages,
        findings,
    })
}
