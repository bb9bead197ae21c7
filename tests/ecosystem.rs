//! Real ML stacks replayed offline against uv's recorded answers.
//!
//! Each directory of `solver-tests/ecosystem/` is one stack: `plain.yaml` and
//! `toolkit.yaml` (the same packages with a system CUDA toolkit), the index responses
//! their live resolution read (`snapshot-plain.json`, `snapshot-toolkit.json`) and what
//! `uv pip compile` answered for the same platform (`uv.json`), all recorded by
//! `solver-tests/ecosystem/compare.py --record`. Every stack is resolved from its
//! snapshot; its top-level pins must equal uv's unless `differences.yaml` lists it:
//! under `known` (wrong today: the replay fails once it agrees, so the entry is removed)
//! or under `exceptions` (differs on purpose, with the rule that says so).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cuda_upgrade::index::Snapshot;
use cuda_upgrade::manifest;
use cuda_upgrade::resolve::{self, Request, ResolveError, TargetEnvironment};
use cuda_upgrade::rules::RuleSet;
use pep440_rs::Version;
use serde::Deserialize;

const VARIANTS: [&str; 2] = ["plain", "toolkit"];

/// `uv.json`: what uv answered for the stack's packages.
#[derive(Deserialize)]
struct UvAnswer {
    /// Normalized name → version; `None` when uv failed.
    top_level: Option<BTreeMap<String, Option<String>>>,
    /// uv's error when it failed.
    error: Option<String>,
}

/// `differences.yaml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Differences {
    /// `STACK/VARIANT` → why ours differs from uv today.
    #[serde(default)]
    known: BTreeMap<String, String>,
    /// `STACK/VARIANT` → the sourced rule that makes ours differ on purpose.
    #[serde(default)]
    exceptions: BTreeMap<String, Exception>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "read for review; the replay only needs the key")]
struct Exception {
    reason: String,
    source: String,
}

fn ecosystem_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("solver-tests/ecosystem")
}

fn same_version(ours: Option<&str>, uv: Option<&str>) -> bool {
    match (ours, uv) {
        (Some(ours), Some(uv)) => match (ours.parse::<Version>(), uv.parse::<Version>()) {
            (Ok(ours), Ok(uv)) => ours == uv,
            _ => ours == uv,
        },
        (None, None) => true,
        _ => false,
    }
}

/// Our top-level pins for `names` from the stack's snapshot, or why there are none.
fn replay(
    stack: &Path,
    variant: &str,
    names: &[String],
) -> Result<BTreeMap<String, String>, String> {
    let manifest_path = stack.join(format!("{variant}.yaml"));
    let file = format!(
        "solver-tests/ecosystem/{}/{variant}.yaml",
        stack
            .file_name()
            .map(|name| name.to_string_lossy())
            .unwrap_or_default()
    );
    let text = fs_err::read_to_string(&manifest_path).map_err(|error| error.to_string())?;
    let manifest = manifest::load_str(&text, &file, None).map_err(|error| error.to_string())?;
    let snapshot_path = stack.join(format!("snapshot-{variant}.json"));
    assert!(
        snapshot_path.exists(),
        "{} is missing: record it with `solver-tests/ecosystem/compare.py --record`",
        snapshot_path.display()
    );
    let snapshot = Snapshot::read(&snapshot_path).map_err(|error| error.to_string())?;
    let environment =
        TargetEnvironment::from_manifest(&manifest).map_err(|error| error.to_string())?;
    let request = Request::from_manifest(&manifest, &file);
    let rules = RuleSet::embedded().map_err(|error| error.to_string())?;
    match resolve::resolve(&request, &snapshot.universe, &environment, &rules) {
        Ok(lock) => Ok(names
            .iter()
            .filter_map(|name| {
                lock.package(name)
                    .map(|locked| (name.clone(), locked.version.to_string()))
            })
            .collect()),
        Err(ResolveError::Unresolvable { .. }) => Err("unresolvable".to_string()),
        Err(other) => Err(format!("{other}")),
    }
}

fn pins_text(pins: &BTreeMap<String, Option<String>>) -> String {
    pins.iter()
        .map(|(name, version)| format!("{name} {}", version.as_deref().unwrap_or("—")))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn real_stacks_resolve_as_uv_resolves_them() {
    let root = ecosystem_dir();
    let differences: Differences =
        serde_yaml_ng::from_str(&fs_err::read_to_string(root.join("differences.yaml")).unwrap())
            .unwrap();
    let mut stacks: Vec<PathBuf> = fs_err::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("plain.yaml").exists())
        .collect();
    stacks.sort();
    assert!(stacks.len() >= 25, "stacks: {stacks:?}");
    let mut agree = 0;
    let mut failures = Vec::new();
    let mut keys_seen = Vec::new();
    for stack in &stacks {
        let name = stack.file_name().unwrap().to_string_lossy().to_string();
        let uv: UvAnswer =
            serde_json::from_str(&fs_err::read_to_string(stack.join("uv.json")).unwrap()).unwrap();
        for variant in VARIANTS {
            let key = format!("{name}/{variant}");
            keys_seen.push(key.clone());
            let Some(uv_top) = &uv.top_level else {
                let ours = replay(stack, variant, &[]);
                println!(
                    "{key}: uv failed ({}); ours: {}",
                    uv.error
                        .as_deref()
                        .unwrap_or("?")
                        .lines()
                        .last()
                        .unwrap_or(""),
                    if ours.is_ok() { "resolves" } else { "fails" }
                );
                continue;
            };
            let names: Vec<String> = uv_top.keys().cloned().collect();
            let ours = replay(stack, variant, &names);
            let equal = match &ours {
                Ok(pins) => uv_top.iter().all(|(package, version)| {
                    same_version(pins.get(package).map(String::as_str), version.as_deref())
                }),
                Err(_) => false,
            };
            let ours_text = match &ours {
                Ok(pins) => pins_text(
                    &pins
                        .iter()
                        .map(|(k, v)| (k.clone(), Some(v.clone())))
                        .collect(),
                ),
                Err(why) => why.clone(),
            };
            let line = format!("{key}: ours {ours_text}; uv {}", pins_text(uv_top));
            if equal {
                agree += 1;
            }
            if differences.exceptions.contains_key(&key) {
                println!("{line} (exception)");
            } else if let Some(why) = differences.known.get(&key) {
                println!("{line} (known: {why})");
                if equal {
                    failures.push(format!(
                        "{line}: now equal to uv, remove `{key}` from differences.yaml"
                    ));
                }
            } else if !equal {
                failures.push(format!(
                    "{line}: differs from uv and differences.yaml does not list it"
                ));
            }
        }
    }
    for key in differences
        .known
        .keys()
        .chain(differences.exceptions.keys())
    {
        if !keys_seen.contains(key) {
            failures.push(format!(
                "differences.yaml names `{key}`, which is no stack/variant"
            ));
        }
    }
    println!(
        "ecosystem: {agree}/{} stack variants equal to uv",
        keys_seen.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
