//! Version choice where several locks are valid: which one the resolver picks, as uv
//! picks it, on small universes written inline (`package version: requirements`).

use std::collections::BTreeMap;
use std::str::FromStr;

use cuda_upgrade::index::tags::{Arch, Glibc};
use cuda_upgrade::index::{DistFile, IndexContents, Release, Universe};
use cuda_upgrade::resolve::{
    self, Implementation, Origin, Request, ResolveOptions, RootRequirement, TargetEnvironment,
};
use cuda_upgrade::rules::RuleSet;
use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{PackageName, Requirement};

/// A universe of pure wheels from `(package, version, requirements)` rows.
fn universe(rows: &[(&str, &str, &[&str])]) -> Universe {
    let mut packages: BTreeMap<PackageName, Vec<Release>> = BTreeMap::new();
    for (name, version, requires) in rows {
        packages
            .entry(PackageName::from_str(name).unwrap())
            .or_default()
            .push(Release {
                provides_extra: Vec::new(),
                version: Version::from_str(version).unwrap(),
                requires_dist: requires
                    .iter()
                    .map(|text| Requirement::from_str(text).unwrap())
                    .collect(),
                requires_python: None,
                files: vec![DistFile {
                    filename: format!("{name}-{version}-py3-none-any.whl"),
                    sha256: None,
                    yanked: None,
                    requires_python: None,
                    size: None,
                }],
                provenance: None,
            });
    }
    Universe {
        snapshot: None,
        indexes: vec![IndexContents {
            name: "inline".to_string(),
            packages,
            unusable: Default::default(),
        }],
    }
}

/// The lock's `name==version` pins for the root `requirements`.
fn lock(rows: &[(&str, &str, &[&str])], requirements: &[&str]) -> Vec<String> {
    lock_in(&universe(rows), requirements)
}

/// [`lock`] over a universe built (and changed) by the test.
fn lock_in(universe: &Universe, requirements: &[&str]) -> Vec<String> {
    let request = Request {
        name: "choice".to_string(),
        file: "choice.yaml".to_string(),
        requirements: requirements
            .iter()
            .map(|text| RootRequirement {
                requirement: Requirement::from_str(text).unwrap(),
                index: None,
                git: None,
                origin: Origin {
                    file: "choice.yaml".to_string(),
                    span: None,
                },
            })
            .collect(),
        overrides: Vec::new(),
        constraints: Vec::new(),
        indexes: Vec::new(),
        requires_python: None::<VersionSpecifiers>,
        options: ResolveOptions::default(),
    };
    let environment = TargetEnvironment {
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
    };
    let rules = RuleSet::embedded().unwrap();
    let lock = resolve::resolve(&request, universe, &environment, &rules)
        .unwrap_or_else(|error| panic!("{error}"));
    lock.packages
        .iter()
        .map(|package| format!("{}=={}", package.name, package.version))
        .collect()
}

/// A stable release wins over a newer pre-release nobody asked for.
#[test]
fn a_stable_release_comes_before_a_newer_prerelease() {
    let rows: &[(&str, &str, &[&str])] = &[
        ("app", "1.0", &["lib"]),
        ("lib", "1.0", &[]),
        ("lib", "2.0", &[]),
        ("lib", "3.0rc1", &[]),
    ];
    assert_eq!(lock(rows, &["app"]), ["app==1.0", "lib==2.0"]);
}

/// A dependency's range that only pre-releases satisfy is met by the newest of them, as
/// uv does (`sglang 0.5.23` needs `flash-attn-4>=4.0.0b18`, whose releases from there on
/// are betas): the release that asks is not walked down instead.
#[test]
fn a_prerelease_is_chosen_when_no_stable_release_is_left_in_the_range() {
    let rows: &[(&str, &str, &[&str])] = &[
        ("app", "1.0", &["kernels>=0.1"]),
        ("app", "2.0", &["kernels>=4.0.0b18"]),
        ("kernels", "0.1", &[]),
        ("kernels", "4.0.0b18", &[]),
        ("kernels", "4.0.0b40", &[]),
    ];
    assert_eq!(lock(rows, &["app"]), ["app==2.0", "kernels==4.0.0b40"]);
}

/// A file's `Requires-Python` upper bound is not applied, as uv does not apply it:
/// `scipy 1.10.1` (`>=3.8,<3.12`) is chosen on 3.12 over `1.9.3` (`>=3.8`), and a lower
/// bound still rules a release out.
#[test]
fn a_requires_python_upper_bound_does_not_rule_a_release_out() {
    let rows: &[(&str, &str, &[&str])] = &[
        ("app", "1.0", &["lib"]),
        ("lib", "1.0", &[]),
        ("lib", "2.0", &[]),
        ("lib", "3.0", &[]),
    ];
    let mut universe = universe(rows);
    let lib = PackageName::from_str("lib").unwrap();
    for release in universe.indexes[0].packages.get_mut(&lib).unwrap() {
        let requires = match release.version.to_string().as_str() {
            "2.0" => ">=3.8,<3.12",
            "3.0" => ">=3.13",
            _ => ">=3.8",
        };
        release.files[0].requires_python = Some(VersionSpecifiers::from_str(requires).unwrap());
    }
    assert_eq!(lock_in(&universe, &["app"]), ["app==1.0", "lib==2.0"]);
}

/// Among packages with several candidates, the one met first is decided first, as uv
/// decides: `plot<3.8` (the manifest's first requirement) takes 3.7.5 and its `num<2`,
/// rather than `num` (fewer candidates) taking 2.5 and `plot` walking down to a release
/// without the cap (`matplotlib<3.8` with `h5py<3.10`: uv's 3.7.5, not 3.7.2).
#[test]
fn the_package_met_first_is_decided_first() {
    let rows: &[(&str, &str, &[&str])] = &[
        ("plot", "3.7.2", &["num"]),
        ("plot", "3.7.3", &["num"]),
        ("plot", "3.7.4", &["num"]),
        ("plot", "3.7.5", &["num<2"]),
        ("h5", "3.9", &["num>=1.17"]),
        ("num", "1.26", &[]),
        ("num", "2.5", &[]),
    ];
    assert_eq!(
        lock(rows, &["plot<3.8", "h5<3.10"]),
        ["h5==3.9", "num==1.26", "plot==3.7.5"]
    );
}
