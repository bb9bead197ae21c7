//! The manifest's JSON Schema (issue 20): `upgrade schema` prints the committed
//! `manifests/schema.json`; a real validator (the `jsonschema` package from the Python
//! index, installed by `scripts/tool-venv` under the target directory) accepts every
//! shipped and test manifest, and rejects the structural mistakes of the
//! malformed-manifest corpus, each of which the loader rejects too.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const JSONSCHEMA: &str = "jsonschema==4.26.0";

const VALIDATE: &str = r#"
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
validator = Draft202012Validator(schema)
for path in sys.argv[2:]:
    errors = sorted(validator.iter_errors(json.load(open(path))), key=lambda e: list(e.path))
    print(path + "\t" + ("ok" if not errors else "invalid: " + errors[0].message[:200]))
"#;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn yaml_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "yaml") {
            found.push(path);
        }
    }
}

/// Every manifest (a YAML file with `schema: 1` and a `target`) under the given folders.
fn manifests(folders: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for folder in folders {
        yaml_files(&root().join(folder), &mut found);
    }
    found.retain(|path| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines().any(|line| line == "schema: 1")
            && text.lines().any(|line| line.starts_with("target:"))
    });
    found.sort();
    found
}

/// The validator's verdict on each file: `ok` or `invalid: …`.
fn validate(files: &[PathBuf]) -> BTreeMap<PathBuf, String> {
    let python = common::cli::tool_python("jsonschema", JSONSCHEMA);
    let json_dir = tempfile::tempdir().unwrap();
    let mut args = Vec::new();
    let mut back = BTreeMap::new();
    for (number, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(file).unwrap();
        let value: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        let json = json_dir.path().join(format!("{number}.json"));
        std::fs::write(&json, serde_json::to_string(&value).unwrap()).unwrap();
        back.insert(json.display().to_string(), file.clone());
        args.push(json);
    }
    let output = Command::new(python)
        .arg("-c")
        .arg(VALIDATE)
        .arg(root().join("manifests/schema.json"))
        .args(&args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let (json, verdict) = line.split_once('\t').unwrap();
            (back[json].clone(), verdict.to_string())
        })
        .collect()
}

#[test]
fn upgrade_schema_prints_the_committed_schema() {
    let output = Command::new(env!("CARGO_BIN_EXE_upgrade"))
        .arg("schema")
        .output()
        .unwrap();
    assert!(output.status.success());
    let committed = std::fs::read_to_string(root().join("manifests/schema.json")).unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), committed);
}

#[test]
fn every_shipped_and_test_manifest_is_valid_under_the_schema() {
    let files = manifests(&[
        "manifests",
        "examples",
        "tests/fixtures",
        "solver-tests/scenarios",
    ]);
    assert!(files.len() >= 20, "{files:?}");
    for (file, verdict) in validate(&files) {
        assert_eq!(verdict, "ok", "{}", file.display());
    }
}

/// The corpus's structural mistakes, which a schema can see (the rest are specifiers,
/// paths, URLs and references that only the loader checks).
const STRUCTURAL: &[&str] = &[
    "bad-env-name.yaml",
    "bad-gpu-arch.yaml",
    "bad-installer.yaml",
    "bare-version.yaml",
    "benchmark-bad-better.yaml",
    "duration-no-unit.yaml",
    "env-value-and-from-env.yaml",
    "git-without-rev.yaml",
    "missing-name.yaml",
    "nonhex-sha256.yaml",
    "override-empty-reason.yaml",
    "override-without-reason.yaml",
    "relative-python.yaml",
    "rev-without-git.yaml",
    "runfile-without-source.yaml",
    "service-both.yaml",
    "service-command-without-log.yaml",
    "short-sha256.yaml",
    "unknown-top-key.yaml",
    "unknown-verify-key.yaml",
    "wrong-schema.yaml",
    "wrong-type-bool.yaml",
    "wrong-type-packages.yaml",
];

#[test]
fn schema_and_loader_agree_on_the_malformed_corpus() {
    let mut corpus = Vec::new();
    yaml_files(&root().join("tests/manifests/invalid"), &mut corpus);
    corpus.sort();
    // Files that are not one YAML document reach no schema: the loader alone refuses them.
    corpus.retain(|path| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_yaml_ng::from_str::<serde_json::Value>(&text).ok())
            .is_some()
    });
    let verdicts = validate(&corpus);
    for (file, verdict) in &verdicts {
        let name = file.file_name().unwrap().to_str().unwrap();
        // The loader refuses every file of the corpus.
        let loaded = Command::new(env!("CARGO_BIN_EXE_upgrade"))
            .arg("validate")
            .arg(file)
            .output()
            .unwrap();
        assert_eq!(loaded.status.code(), Some(2), "the loader accepts {name}");
        if STRUCTURAL.contains(&name) {
            assert!(verdict.starts_with("invalid"), "the schema accepts {name}");
        }
    }
    for name in STRUCTURAL {
        assert!(
            verdicts.keys().any(|file| file.ends_with(name)),
            "{name} is not in the corpus"
        );
    }
}
