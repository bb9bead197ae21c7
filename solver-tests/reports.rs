//! How conflict reports read on a package with many releases: ranges written against
//! the versions that exist, no line with more than three intervals, `{:#}` for all.

use std::collections::BTreeMap;
use std::str::FromStr;

use cuda_upgrade::index::{DistFile, IndexContents, Release, Universe};
use cuda_upgrade::manifest;
use cuda_upgrade::resolve::{self, Request, ResolveError, TargetEnvironment};
use cuda_upgrade::rules::RuleSet;
use pep440_rs::Version;
use pep508_rs::{PackageName, Requirement};

fn release(name: &str, version: &str, requires: &[&str]) -> Release {
    Release {
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
    }
}

/// Sixty `vllm` releases (with post releases between them, as vllm has), each
/// requiring a `torch` the manifest rules out.
fn universe() -> (Universe, Vec<String>) {
    let mut versions = Vec::new();
    for minor in 5..25 {
        versions.push(format!("0.{minor}.2"));
        versions.push(format!("0.{minor}.3"));
        versions.push(format!("0.{minor}.3.post1"));
    }
    assert_eq!(versions.len(), 60);
    let vllm = versions
        .iter()
        .map(|version| release("vllm", version, &["torch==2.9.1"]))
        .collect();
    let torch = vec![
        release("torch", "2.8.0", &[]),
        release("torch", "2.9.1", &[]),
    ];
    let mut packages = BTreeMap::new();
    packages.insert(PackageName::from_str("vllm").unwrap(), vllm);
    packages.insert(PackageName::from_str("torch").unwrap(), torch);
    let universe = Universe {
        snapshot: None,
        indexes: vec![IndexContents {
            name: "default".to_string(),
            packages,
            unusable: Default::default(),
        }],
    };
    (universe, versions)
}

const MANIFEST: &str = "schema: 1
name: vllm-on-old-torch
target:
  python: /opt/ml-env/bin/python3
  python_version: \"3.12\"
indexes:
  - name: default
packages:
  vllm: \">=0.5.2\"
  torch: \"==2.8.0\"
";

/// See: issue 16 — the old report wrote the sixty releases as a union of sixty ranges
/// (`==0.5.2 or ==0.5.3 or ==0.5.3.post1 or …`); the new one writes one interval.
#[test]
fn a_union_over_sixty_releases_reads_as_one_interval() {
    let (universe, _) = universe();
    let manifest = manifest::load_str(MANIFEST, "vllm.yaml", None).unwrap();
    let environment = TargetEnvironment::from_manifest(&manifest).unwrap();
    let request = Request::from_manifest(&manifest, "vllm.yaml");
    let rules = RuleSet::embedded().unwrap();
    let outcome = resolve::resolve(&request, &universe, &environment, &rules);
    let Err(ResolveError::Unresolvable { report, .. }) = outcome else {
        panic!("expected a conflict, got {outcome:?}");
    };
    let short = report.to_string();
    let verbose = format!("{report:#}");
    for text in [&short, &verbose] {
        for line in text.lines() {
            assert!(
                line.matches(" or ").count() < 3,
                "a line with more than three intervals: {line}\n{text}"
            );
        }
    }
    assert!(
        short.contains("every release of `vllm` from 0.5.2 requires `torch==2.9.1`"),
        "{short}"
    );
    insta::assert_snapshot!("report-vllm-sixty-releases", short);
}

/// A union whose gaps hold existing releases keeps one interval per run, and the short
/// report counts what it leaves out of a line.
#[test]
fn runs_of_releases_are_intervals_and_long_lines_are_counted() {
    let (_, versions) = universe();
    let existing: Vec<Version> = versions
        .iter()
        .map(|version| Version::from_str(version).unwrap())
        .collect();
    // Every third release: twenty runs of one release each.
    let mut range = pubgrub::Ranges::empty();
    for version in existing.iter().step_by(3) {
        range = range.union(&pubgrub::Ranges::singleton(version.clone()));
    }
    let short = resolve::ranges::show_existing(&range, &existing, Some(3));
    assert_eq!(short, "==0.5.2 or ==0.6.2 or ==0.7.2 or … (17 more)");
    // Releases 0.5.2 to 0.9.3.post1 with the gaps between them: one interval.
    let mut range = pubgrub::Ranges::empty();
    for version in &existing[..15] {
        range = range.union(&pubgrub::Ranges::singleton(version.clone()));
    }
    assert_eq!(
        resolve::ranges::show_existing(&range, &existing, Some(3)),
        ">=0.5.2, <0.10.2"
    );
}
