//! packse scenarios as resolver tests: each JSON file becomes a one-index universe, a
//! request and a node; the outcome is compared with packse's expectation.
//!
//! Single-environment scenarios must all agree. Universal scenarios (a lock for every
//! platform at once, uv's mode) are resolved for the scenario's stated environment —
//! CPython on Linux x86_64 — and reported apart, each disagreement with its reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use cuda_upgrade::index::tags::{Arch, Glibc};
use cuda_upgrade::index::{DistFile, IndexContents, Release, Universe};
use cuda_upgrade::resolve::{
    self, Implementation, Origin, PackageSelection, PrereleaseMode, Request, ResolveError,
    ResolveOptions, RootRequirement, TargetEnvironment,
};
use cuda_upgrade::rules::RuleSet;
use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{PackageName, Requirement};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Scenario {
    name: String,
    root: Vec<String>,
    python: String,
    options: Options,
    packages: BTreeMap<String, BTreeMap<String, VersionRecord>>,
    expected: Expected,
}

#[derive(Debug, Default, Deserialize)]
struct Options {
    #[serde(default)]
    universal: bool,
    #[serde(default)]
    prereleases: bool,
    #[serde(default)]
    no_build: Vec<String>,
    #[serde(default)]
    no_binary: Vec<String>,
    #[serde(default)]
    python_platform: Option<String>,
    #[serde(default)]
    python: Option<String>,
}

#[derive(Debug, Deserialize)]
struct VersionRecord {
    requires: Vec<String>,
    extras: BTreeMap<String, Vec<String>>,
    requires_python: Option<String>,
    sdist: bool,
    wheels: Vec<String>,
    yanked: bool,
}

#[derive(Debug, Deserialize)]
struct Expected {
    satisfiable: bool,
    packages: BTreeMap<String, String>,
}

fn packse_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("solver-tests/packse")
}

/// A requirement of extra `extra`: the requirement with `extra == "…"` added to its markers.
fn with_extra(requirement: &str, extra: &str) -> String {
    match requirement.split_once(';') {
        Some((base, marker)) => format!("{base} ; ({marker}) and extra == \"{extra}\""),
        None => format!("{requirement} ; extra == \"{extra}\""),
    }
}

fn universe(scenario: &Scenario) -> Universe {
    let mut packages = BTreeMap::new();
    for (name, versions) in &scenario.packages {
        let package = PackageName::from_str(name).unwrap();
        let file_stem = package.as_dist_info_name().to_string();
        let mut releases = Vec::new();
        for (version, record) in versions {
            let mut requires_dist: Vec<Requirement> = record
                .requires
                .iter()
                .map(|text| Requirement::from_str(text).unwrap())
                .collect();
            for (extra, requirements) in &record.extras {
                for text in requirements {
                    requires_dist.push(Requirement::from_str(&with_extra(text, extra)).unwrap());
                }
            }
            let yanked = record.yanked.then(String::new);
            let mut files: Vec<DistFile> = record
                .wheels
                .iter()
                .map(|tag| DistFile {
                    filename: format!("{file_stem}-{version}-{tag}.whl"),
                    sha256: None,
                    yanked: yanked.clone(),
                    requires_python: None,
                    size: None,
                })
                .collect();
            if record.sdist {
                files.push(DistFile {
                    filename: format!("{file_stem}-{version}.tar.gz"),
                    sha256: None,
                    yanked: yanked.clone(),
                    requires_python: None,
                    size: None,
                });
            }
            releases.push(Release {
                provides_extra: record
                    .extras
                    .keys()
                    .map(|extra| pep508_rs::ExtraName::from_str(extra).unwrap())
                    .collect(),
                version: Version::from_str(version).unwrap(),
                requires_dist,
                requires_python: record
                    .requires_python
                    .as_deref()
                    .map(|text| VersionSpecifiers::from_str(text).unwrap()),
                files,
                provenance: None,
            });
        }
        packages.insert(package, releases);
    }
    Universe {
        snapshot: None,
        indexes: vec![IndexContents {
            name: "packse".to_string(),
            packages,
            unusable: Default::default(),
        }],
    }
}

fn selection(names: &[String]) -> PackageSelection {
    if names.is_empty() {
        PackageSelection::None
    } else if names.iter().any(|name| name == ":all:") {
        PackageSelection::All
    } else {
        PackageSelection::Packages(
            names
                .iter()
                .map(|name| PackageName::from_str(name).unwrap())
                .collect(),
        )
    }
}

fn request(scenario: &Scenario) -> Request {
    Request {
        name: scenario.name.clone(),
        file: format!("{}.json", scenario.name),
        requirements: scenario
            .root
            .iter()
            .map(|text| RootRequirement {
                requirement: Requirement::from_str(text).unwrap(),
                index: None,
                git: None,
                origin: Origin {
                    file: format!("{}.json", scenario.name),
                    span: None,
                },
            })
            .collect(),
        overrides: Vec::new(),
        constraints: Vec::new(),
        indexes: Vec::new(),
        // packse checks its scenarios with `pip install`-style requirements: the root's
        // `Requires-Python` belongs to the wrapper package packse builds, not to them.
        requires_python: None,
        options: ResolveOptions {
            prereleases: if scenario.options.prereleases {
                PrereleaseMode::Allow
            } else {
                PrereleaseMode::IfNecessaryOrExplicit
            },
            no_build: selection(&scenario.options.no_build),
            no_binary: selection(&scenario.options.no_binary),
            ..ResolveOptions::default()
        },
    }
}

fn environment(scenario: &Scenario) -> TargetEnvironment {
    let python = scenario
        .options
        .python
        .clone()
        .unwrap_or_else(|| scenario.python.clone());
    let glibc = match scenario.options.python_platform.as_deref() {
        Some("x86_64-manylinux2014") => Glibc {
            major: 2,
            minor: 17,
        },
        _ => Glibc {
            major: 2,
            minor: 35,
        },
    };
    TargetEnvironment {
        python: Version::from_str(&python).unwrap(),
        implementation: Implementation::Cpython,
        glibc,
        arch: Arch::X86_64,
        driver: None,
        gpu_archs: Vec::new(),
        toolkit: None,
        cuda_runtime: None,
    }
}

/// Why a universal scenario's expectation does not hold for its one environment
/// (CPython on Linux x86_64): universal mode locks every platform at once.
/// Scenarios whose packse expectation (unsatisfiable: no stable release in range and no
/// explicit opt-in) predates uv 0.12, which chooses the newest pre-release in the range
/// when no stable release is left in it ("Support transitive pre-release dependencies",
/// astral-sh/uv#19993); the pins are those of uv's own `pip_install_scenarios.rs` since,
/// and the ones uv 0.13 picks on the Python index (`sglang 0.5.23` needs
/// `flash-attn-4>=4.0.0b18`, betas only). packse's files stay as converted.
const TRANSITIVE_PRERELEASES: &[(&str, &[(&str, &str)])] = &[
    ("package-only-prereleases-in-range", &[("a", "1.0.0a1")]),
    (
        "transitive-package-only-prereleases-in-range",
        &[("a", "0.1.0"), ("b", "1.0.0a1")],
    ),
    (
        "transitive-prerelease-and-stable-dependency",
        &[("a", "1.0.0"), ("b", "1.0.0"), ("c", "2.0.0b1")],
    ),
    (
        "transitive-prerelease-and-stable-dependency-many-versions",
        &[("a", "1.0.0"), ("b", "1.0.0"), ("c", "2.0.0b9")],
    ),
    (
        "transitive-prerelease-and-stable-dependency-many-versions-holes",
        &[("a", "1.0.0"), ("b", "1.0.0"), ("c", "2.0.0b4")],
    ),
];

const UNIVERSAL_REASONS: &[(&str, &str)] = &[
    (
        "conflict-in-fork",
        "both root requirements are for `os1`/`os2`; on Linux nothing is required, so the empty resolution is right; packse expects the conflict inside one universal fork",
    ),
    (
        "fork-non-local-fork-marker-direct",
        "on Linux only `a` applies (`b` is for darwin), so `c<2` is satisfiable; the universal resolver fails because it does not fork on the indirect markers",
    ),
    (
        "fork-non-local-fork-marker-transitive",
        "on Linux only `a`'s `c<2.0.0` applies (`b`'s is for darwin), so `c 1.0.0` works; the universal resolver fails because it does not fork on the transitive markers",
    ),
    (
        "preferences-dependent-forking-conflicting",
        "for Linux alone cleaver 1.0.0 with foo 1.0.0 and bar 2.0.0 is valid; the universal failure comes from the non-Linux fork",
    ),
    (
        "specific-architecture",
        "`b` has only cp313 wheels and no sdist, so a CPython 3.12 node cannot install it; universal mode does not check that the target interpreter can install `b`",
    ),
    (
        "wrong-backtracking-basic",
        "a 2.0.0, b 1.0.0, too-old 1.0.0 is a valid resolution; packse expects uv's conflict-driven re-prioritisation (decide `b` before `a` after repeated conflicts) to find b 2.0.9",
    ),
];

/// Single-environment scenarios where uv installs a release that lacks an extra the
/// root asks for (with a warning), and `upgrade` refuses the same choice: the manifest's
/// extra would be silently dropped. Each agrees when the report names exactly the
/// release packse expects, i.e. the resolver chose uv's version and did not backtrack.
const MISSING_EXTRA_IS_AN_ERROR: &[&str] = &["extra-does-not-exist-backtrack", "missing-extra"];

/// `None` when the outcome agrees with packse, else the reason it does not.
fn check(scenario: &Scenario, rules: &RuleSet) -> Option<String> {
    if MISSING_EXTRA_IS_AN_ERROR.contains(&scenario.name.as_str()) {
        let outcome = resolve::resolve(
            &request(scenario),
            &universe(scenario),
            &environment(scenario),
            rules,
        );
        return match outcome {
            Err(ResolveError::Unresolvable { report, .. }) => {
                let named = scenario.expected.packages.iter().all(|(name, version)| {
                    let wanted = format!(
                        "`{} {}` has no extra",
                        PackageName::from_str(name).unwrap(),
                        Version::from_str(version).unwrap()
                    );
                    report
                        .facts
                        .iter()
                        .any(|fact| fact.full.starts_with(&wanted))
                });
                (!named).then(|| {
                    format!(
                        "the missing extra names another release: {}",
                        report
                            .facts
                            .iter()
                            .map(|fact| fact.full.as_str())
                            .collect::<Vec<_>>()
                            .join(" / ")
                    )
                })
            }
            Ok(_) => {
                Some("a root extra the chosen release lacks was dropped, not refused".to_string())
            }
            Err(error) => Some(format!("resolver error: {error}")),
        };
    }
    let outcome = resolve::resolve(
        &request(scenario),
        &universe(scenario),
        &environment(scenario),
        rules,
    );
    match (outcome, scenario.expected.satisfiable) {
        (Ok(lock), true) => {
            let mismatches: Vec<String> = scenario
                .expected
                .packages
                .iter()
                .filter_map(|(name, version)| {
                    let name = PackageName::from_str(name).unwrap().to_string();
                    let found = lock
                        .package(&name)
                        .map(|package| package.version.to_string());
                    let wanted = Version::from_str(version).unwrap().to_string();
                    (found.as_deref() != Some(wanted.as_str())).then(|| {
                        format!(
                            "{name}: expected {wanted}, got {}",
                            found.unwrap_or("nothing".into())
                        )
                    })
                })
                .collect();
            let extra: Vec<String> = if scenario.expected.packages.is_empty() {
                Vec::new()
            } else {
                lock.packages
                    .iter()
                    .filter(|package| {
                        !scenario
                            .expected
                            .packages
                            .keys()
                            .any(|name| PackageName::from_str(name).unwrap() == package.name)
                    })
                    .map(|package| format!("{} {} not expected", package.name, package.version))
                    .collect()
            };
            let all: Vec<String> = mismatches.into_iter().chain(extra).collect();
            (!all.is_empty()).then(|| all.join("; "))
        }
        (Ok(lock), false) if lock.packages.is_empty() => {
            Some("expected unsatisfiable, resolved to nothing (no requirement applies)".to_string())
        }
        (Ok(lock), false) => Some(format!(
            "expected unsatisfiable, resolved to {}",
            lock.packages
                .iter()
                .map(|package| format!("{}=={}", package.name, package.version))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        (Err(ResolveError::Unresolvable { report, .. }), true) => Some(format!(
            "expected satisfiable, got: {}",
            report
                .facts
                .iter()
                .map(|fact| fact.full.as_str())
                .collect::<Vec<_>>()
                .join(" / ")
        )),
        (Err(ResolveError::Unresolvable { .. }), false) => None,
        (Err(error), _) => Some(format!("resolver error: {error}")),
    }
}

#[test]
fn packse_scenarios() {
    let rules = RuleSet::embedded().unwrap();
    let mut files: Vec<PathBuf> = fs_err::read_dir(packse_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .collect();
    files.sort();
    let (mut single, mut single_agree, mut universal, mut universal_agree) = (0, 0, 0, 0);
    let mut disagreements = Vec::new();
    for file in files {
        let text = fs_err::read_to_string(&file).unwrap();
        let mut scenario: Scenario = serde_json::from_str(&text).unwrap();
        if let Some((_, pins)) = TRANSITIVE_PRERELEASES
            .iter()
            .find(|(name, _)| *name == scenario.name)
        {
            scenario.expected = Expected {
                satisfiable: true,
                packages: pins
                    .iter()
                    .map(|(name, version)| ((*name).to_string(), (*version).to_string()))
                    .collect(),
            };
        }
        let verdict = check(&scenario, &rules);
        if scenario.options.universal {
            universal += 1;
            universal_agree += usize::from(verdict.is_none());
        } else {
            single += 1;
            single_agree += usize::from(verdict.is_none());
        }
        if let Some(reason) = verdict {
            let kind = if scenario.options.universal {
                "universal"
            } else {
                "single"
            };
            let why = UNIVERSAL_REASONS
                .iter()
                .find(|(name, _)| *name == scenario.name)
                .map(|(_, why)| format!("\n      why: {why}"))
                .unwrap_or_default();
            disagreements.push(format!("  {} ({kind}): {reason}{why}", scenario.name));
        }
    }
    println!(
        "packse: {single_agree}/{single} agree; {universal_agree}/{universal} universal agree for their environment"
    );
    for line in &disagreements {
        println!("{line}");
    }
    assert_eq!(single, 109);
    assert_eq!(universal, 41);
    assert_eq!(
        single_agree,
        single,
        "single-environment disagreements:\n{}",
        disagreements.join("\n")
    );
}
