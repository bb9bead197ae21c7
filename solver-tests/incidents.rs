//! Our own resolver scenarios: each seed incident and its variants, as data under
//! `solver-tests/scenarios/NAME/` (`manifest.yaml` or a `manifest:` path, optional
//! `facts.json`, and `scenario.yaml` with the expected outcome). Every unresolvable
//! scenario must name its cause (`mentions:`), and its report is snapshotted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cuda_upgrade::index::Snapshot;
use cuda_upgrade::manifest;
use cuda_upgrade::resolve::{self, Request, ResolveError, TargetEnvironment};
use cuda_upgrade::rules::RuleSet;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    description: String,
    #[serde(default)]
    manifest: Option<String>,
    #[serde(default)]
    facts: Option<String>,
    expect: Expect,
    #[serde(default)]
    mentions: Vec<String>,
    #[serde(default)]
    packages: BTreeMap<String, String>,
    #[serde(default)]
    absent: Vec<String>,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Expect {
    Resolvable,
    Unresolvable,
    /// Refused before resolving: a value no rule table covers (the error names the table).
    Refused,
}

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("solver-tests/scenarios")
}

/// Relative to the crate root, so reports name stable paths.
fn relative(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let normalized: PathBuf = path.components().fold(PathBuf::new(), |mut built, part| {
        match part {
            std::path::Component::ParentDir => {
                built.pop();
            }
            other => built.push(other),
        }
        built
    });
    normalized
        .strip_prefix(root)
        .unwrap_or(&normalized)
        .display()
        .to_string()
}

#[test]
fn seed_incidents() {
    let snapshot = Snapshot::embedded().unwrap();
    let rules = RuleSet::embedded().unwrap();
    let mut names: Vec<PathBuf> = fs_err::read_dir(scenarios_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 9, "scenarios: {names:?}");
    for directory in names {
        let name = directory.file_name().unwrap().to_string_lossy().to_string();
        let scenario: Scenario = serde_yaml_ng::from_str(
            &fs_err::read_to_string(directory.join("scenario.yaml")).unwrap(),
        )
        .unwrap();
        let manifest_path = directory.join(scenario.manifest.as_deref().unwrap_or("manifest.yaml"));
        let file = relative(&manifest_path);
        let text = fs_err::read_to_string(&manifest_path).unwrap();
        let manifest = manifest::load_str(&text, &file, None).unwrap();
        let environment = match &scenario.facts {
            Some(facts) => {
                let path = directory.join(facts);
                TargetEnvironment::parse_facts(
                    &fs_err::read_to_string(&path).unwrap(),
                    &relative(&path),
                )
                .unwrap()
            }
            None => TargetEnvironment::from_manifest(&manifest).unwrap(),
        };
        let request = Request::from_manifest(&manifest, &file);
        let outcome = resolve::resolve(&request, &snapshot.universe, &environment, &rules);
        match (outcome, &scenario.expect) {
            (Ok(lock), Expect::Resolvable) => {
                for (package, version) in &scenario.packages {
                    let found = lock
                        .package(package)
                        .map(|locked| locked.version.to_string());
                    assert_eq!(
                        found.as_deref(),
                        Some(version.as_str()),
                        "{name}: {package}"
                    );
                }
                for fragment in &scenario.absent {
                    let found: Vec<&str> = lock
                        .packages
                        .iter()
                        .map(|locked| locked.name.as_ref())
                        .filter(|locked| locked.contains(fragment.as_str()))
                        .collect();
                    assert!(found.is_empty(), "{name}: unexpected {found:?}");
                }
                let text = lock.text();
                for mention in &scenario.mentions {
                    assert!(
                        text.contains(mention.as_str()),
                        "{name}: lock lacks `{mention}`:\n{text}"
                    );
                }
                insta::assert_snapshot!(format!("lock-{name}"), text, &scenario.description);
            }
            (Err(ResolveError::Unresolvable { report, .. }), Expect::Unresolvable) => {
                let text = report.to_string();
                for mention in &scenario.mentions {
                    assert!(
                        text.contains(mention.as_str()),
                        "{name}: report lacks `{mention}`:\n{text}"
                    );
                }
                insta::assert_snapshot!(format!("incident-{name}"), text, &scenario.description);
            }
            (Err(error @ ResolveError::Rules { .. }), Expect::Refused) => {
                let text = error.to_string();
                for mention in &scenario.mentions {
                    assert!(
                        text.contains(mention.as_str()),
                        "{name}: error lacks `{mention}`:\n{text}"
                    );
                }
                insta::assert_snapshot!(format!("refused-{name}"), text, &scenario.description);
            }
            (Ok(lock), Expect::Unresolvable | Expect::Refused) => {
                panic!("{name}: expected unresolvable, got {}", lock.text())
            }
            (Err(error), _) => panic!("{name}: {error}: {error:?}"),
        }
    }
}

/// The diff's resolution section for the seed upgrade: CUDA 12.8 baseline → CUDA 13.
#[test]
fn diff_of_the_seed_upgrade_names_its_hazards() {
    let snapshot = Snapshot::embedded().unwrap();
    let rules = RuleSet::embedded().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let load = |file: &str| manifest::load_file(&root.join(file)).unwrap();
    let old = load("manifests/cuda12.8-baseline.yaml");
    let new = load("manifests/sglang-0.5.9-cu130.yaml");
    let outcome = |manifest: &manifest::Manifest, file: &str| {
        let environment = TargetEnvironment::from_manifest(manifest).unwrap();
        resolve::resolve(
            &Request::from_manifest(manifest, file),
            &snapshot.universe,
            &environment,
            &rules,
        )
    };
    let entries = resolve::resolution_entries(
        &old,
        &new,
        Some(&outcome(&old, "old.yaml")),
        Some(&outcome(&new, "new.yaml")),
        &rules,
    );
    let subjects: Vec<String> = entries
        .iter()
        .map(|entry| format!("{:?} {}", entry.section, entry.subject))
        .collect();
    for expected in [
        "Resolution torch",
        "Resolution nvidia-cublas-cu12",
        "Hazards cuda-toolkit",
        "Hazards driver minimum",
        "Hazards triton",
        "Hazards cuda-runtime",
    ] {
        assert!(
            subjects.iter().any(|subject| subject == expected),
            "{expected} in {subjects:?}"
        );
    }
}
