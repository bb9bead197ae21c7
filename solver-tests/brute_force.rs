//! Brute-force cross-check on small random universes (the idea of pubgrub's
//! `tests/sat_dependency_provider.rs`): the resolver finds a solution exactly when an
//! exhaustive search over every assignment does, and every lock it returns is valid.

use std::collections::BTreeMap;
use std::str::FromStr;

use cuda_upgrade::index::tags::{Arch, Glibc};
use cuda_upgrade::index::{DistFile, IndexContents, Release, Universe};
use cuda_upgrade::resolve::{
    self, Implementation, Origin, Request, ResolveError, ResolveOptions, RootRequirement,
    TargetEnvironment,
};
use cuda_upgrade::rules::RuleSet;
use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{PackageName, Requirement};
use proptest::prelude::*;

const NAMES: [&str; 4] = ["a", "b", "c", "d"];
const VERSIONS: [u64; 3] = [1, 2, 3];

/// A requirement on package `index` with a specifier kind and operand.
#[derive(Debug, Clone)]
struct Dependency {
    package: usize,
    kind: u8,
    operand: u64,
}

impl Dependency {
    fn text(&self) -> String {
        let name = NAMES[self.package];
        match self.kind {
            0 => name.to_string(),
            1 => format!("{name}=={}", self.operand),
            2 => format!("{name}>={}", self.operand),
            3 => format!("{name}<{}", self.operand),
            _ => format!("{name}!={}", self.operand),
        }
    }

    fn admits(&self, version: u64) -> bool {
        match self.kind {
            0 => true,
            1 => version == self.operand,
            2 => version >= self.operand,
            3 => version < self.operand,
            _ => version != self.operand,
        }
    }
}

fn dependency() -> impl Strategy<Value = Dependency> {
    (0..NAMES.len(), 0u8..5, 1u64..4).prop_map(|(package, kind, operand)| Dependency {
        package,
        kind,
        operand,
    })
}

/// `universe[package][version index]` = that release's dependencies, or `None` when the
/// release does not exist.
type Model = Vec<Vec<Option<Vec<Dependency>>>>;

fn model() -> impl Strategy<Value = Model> {
    prop::collection::vec(
        prop::collection::vec(
            prop::option::weighted(0.8, prop::collection::vec(dependency(), 0..3)),
            VERSIONS.len(),
        ),
        NAMES.len(),
    )
}

fn universe(model: &Model) -> Universe {
    let mut packages = BTreeMap::new();
    for (package, releases) in model.iter().enumerate() {
        let mut list = Vec::new();
        for (slot, release) in releases.iter().enumerate() {
            let Some(dependencies) = release else {
                continue;
            };
            let version = VERSIONS[slot];
            list.push(Release {
                provides_extra: Vec::new(),
                version: Version::from_str(&version.to_string()).unwrap(),
                requires_dist: dependencies
                    .iter()
                    .filter(|dependency| dependency.package != package)
                    .map(|dependency| Requirement::from_str(&dependency.text()).unwrap())
                    .collect(),
                requires_python: None,
                files: vec![DistFile {
                    filename: format!("{}-{version}-py3-none-any.whl", NAMES[package]),
                    sha256: None,
                    yanked: None,
                    requires_python: None,
                    size: None,
                }],
                provenance: None,
            });
        }
        packages.insert(PackageName::from_str(NAMES[package]).unwrap(), list);
    }
    Universe {
        snapshot: None,
        indexes: vec![IndexContents {
            name: "random".to_string(),
            packages,
            unusable: Default::default(),
        }],
    }
}

/// Whether `assignment` (`None` = not installed, `Some(slot)`) satisfies everything.
fn valid(model: &Model, root: &[Dependency], assignment: &[Option<usize>]) -> bool {
    let satisfied = |dependency: &Dependency| {
        assignment[dependency.package].is_some_and(|slot| dependency.admits(VERSIONS[slot]))
    };
    if !root.iter().all(satisfied) {
        return false;
    }
    assignment
        .iter()
        .enumerate()
        .all(|(package, slot)| match slot {
            None => true,
            Some(slot) => match &model[package][*slot] {
                None => false,
                Some(dependencies) => dependencies
                    .iter()
                    .filter(|dependency| dependency.package != package)
                    .all(satisfied),
            },
        })
}

fn exhaustive(model: &Model, root: &[Dependency]) -> bool {
    let choices = VERSIONS.len() + 1;
    let total = choices.pow(NAMES.len() as u32);
    (0..total).any(|mut code| {
        let assignment: Vec<Option<usize>> = (0..NAMES.len())
            .map(|_| {
                let choice = code % choices;
                code /= choices;
                (choice > 0).then(|| choice - 1)
            })
            .collect();
        valid(model, root, &assignment)
    })
}

fn environment() -> TargetEnvironment {
    TargetEnvironment {
        python: Version::from_str("3.12").unwrap(),
        implementation: Implementation::Cpython,
        glibc: Glibc {
            major: 2,
            minor: 35,
        },
        arch: Arch::X86_64,
        driver: None,
        gpu_archs: Vec::new(),
        toolkit: None,
        cuda_runtime: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn resolver_agrees_with_exhaustive_search(model in model(), root in prop::collection::vec(dependency(), 1..3)) {
        let request = Request {
            name: "random".to_string(),
            file: "random".to_string(),
            requirements: root
                .iter()
                .map(|dependency| RootRequirement {
                    requirement: Requirement::from_str(&dependency.text()).unwrap(),
                    index: None,
                    git: None,
                    origin: Origin { file: "random".to_string(), span: None },
                })
                .collect(),
            overrides: Vec::new(),
            constraints: Vec::new(),
            indexes: Vec::new(),
            requires_python: None::<VersionSpecifiers>,
            options: ResolveOptions::default(),
        };
        let rules = RuleSet::embedded().unwrap();
        let outcome = resolve::resolve(&request, &universe(&model), &environment(), &rules);
        let expected = exhaustive(&model, &root);
        match outcome {
            Ok(lock) => {
                let assignment: Vec<Option<usize>> = NAMES
                    .iter()
                    .map(|name| {
                        lock.package(name).map(|package| {
                            VERSIONS
                                .iter()
                                .position(|version| version.to_string() == package.version.to_string())
                                .unwrap()
                        })
                    })
                    .collect();
                prop_assert!(valid(&model, &root, &assignment), "invalid lock {:?}", assignment);
                prop_assert!(expected);
            }
            Err(ResolveError::Unresolvable { .. }) => prop_assert!(!expected, "missed a solution"),
            Err(error) => prop_assert!(false, "{}", error),
        }
    }
}
