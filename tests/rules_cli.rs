//! Rules a user extends: `validate` checks `toolkit.version` and `target.gpu_arch`
//! against the rule tables and names the nearest known values; a rules directory (the
//! manifest's `rules:`, relative to the manifest, or `validate --rules DIR`) adds rows
//! that `validate` and `lock` then use; a malformed rule file is refused with its
//! `file:line`.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::{Path, PathBuf};

use common::cli::{stderr, stdout, upgrade, upgrade_in};

/// CUDA 13.4.0: no embedded table lists it (`cuda-updates.yaml` says it was not found in
/// a source checked), its release line 13.4 has an architecture row.
const UPDATE_ROW: &str = "schema: 1\nupdates:\n  - update: \"13.4.0\"\n    nvcc: \"13.4.48\"\n    source: https://docs.nvidia.com/cuda/archive/13.4.0/cuda-toolkit-release-notes/index.html\n    checked: the site's toolkit, a test value\n";

/// Its driver minimum, a test value.
const DRIVER_ROW: &str = "schema: 1\ndriver_minimums:\n  - toolkit: \"13.4.0\"\n    driver: \"595.45.04\"\n    source: https://docs.nvidia.com/cuda/archive/13.4.0/cuda-toolkit-release-notes/index.html\n";

/// `DIR/stack/NAME.yaml` with toolkit 13.4.0 on `driver`, `rules` written after `name`
/// when given, and `DIR/stack/site-rules/` holding `files`.
fn stack(dir: &Path, name: &str, rules: Option<&str>, driver: &str) -> PathBuf {
    let stack = dir.join("stack");
    std::fs::create_dir_all(&stack).unwrap();
    let rules = rules.map_or(String::new(), |rules| format!("rules: {rules}\n"));
    let path = stack.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "schema: 1\nname: {name}\n{rules}target:\n  python: /opt/e/bin/python3\n  python_version: \"3.12\"\n  glibc: \"2.35\"\n  driver: \"{driver}\"\n  gpu_arch: [sm_90]\ntoolkit:\n  version: \"13.4.0\"\n  prefix: /usr/local/cuda-13.4\n  installer: apt\n  package: cuda-toolkit-13-4\n"
        ),
    )
    .unwrap();
    path
}

fn site_rules(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    let rules = dir.join("stack/site-rules");
    std::fs::create_dir_all(&rules).unwrap();
    for (name, text) in files {
        std::fs::write(rules.join(name), text).unwrap();
    }
    rules
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn validate_refuses_an_unreleased_toolkit_and_an_unknown_gpu_with_the_nearest_known() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    std::fs::write(
        &path,
        "schema: 1\nname: m\ntarget:\n  python: /opt/e/bin/python3\n  gpu_arch: [sm_90, sm_91]\ntoolkit:\n  version: \"12.7.0\"\n  prefix: /usr/local/cuda-12.7\n  installer: apt\n  package: cuda-toolkit-12-8\n",
    )
    .unwrap();
    let output = upgrade(&["validate", arg(&path)]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    let file = path.display();
    assert!(
        err.contains(&format!(
            "{file}:7:12: error: toolkit 12.7.0 is not a CUDA release the rules know; nearest: 12.6.3, 12.8.0"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{file}:5:21: error: sm_91: not a GPU architecture the rules know; nearest: sm_90, sm_100"
        )),
        "{err}"
    );
    // Each says where a row goes: the user's rules directory, never the embedded files.
    assert!(err.contains("add a row to `cuda-updates.yaml`"), "{err}");
    assert!(err.contains("add a row to `cuda-arch.yaml`"), "{err}");
    assert!(
        err.contains("`rules:` key (or `upgrade validate --rules DIR`)"),
        "{err}"
    );
    assert!(!err.contains("manifests/rules/"), "{err}");
    // The apt hint names only a package of a release line the tables know.
    assert!(!err.contains("cuda-toolkit-12-7"), "{err}");
    assert!(
        err.contains("hint: write a 12.8 version, e.g. `12.8.1`\n"),
        "{err}"
    );
    // The JSON output carries the same, located.
    let output = upgrade(&["validate", "--format", "json", arg(&path)]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let diagnostics = report["files"][0]["diagnostics"].as_array().unwrap();
    assert!(diagnostics.iter().any(|d| {
        d["line"] == 5
            && d["column"] == 21
            && d["message"]
                .as_str()
                .unwrap()
                .starts_with("sm_91: not a GPU architecture")
    }));
}

#[test]
fn a_user_rules_directory_makes_a_release_known_to_validate_and_lock() {
    let dir = tempfile::tempdir().unwrap();
    let rules = site_rules(
        dir.path(),
        &[
            ("cuda-updates.yaml", UPDATE_ROW),
            ("cuda-driver.yaml", DRIVER_ROW),
        ],
    );
    // Without rules: validate names the nearest releases, lock the table to extend.
    let plain = stack(dir.path(), "plain", None, "595.45.04");
    let output = upgrade(&["validate", arg(&plain)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "toolkit 13.4.0 is not a CUDA release the rules know; nearest: 13.3.1, 13.4.1"
        ),
        "{}",
        stderr(&output)
    );
    let output = upgrade(&["lock", arg(&plain)]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("CUDA toolkit 13.4.0 has no row in `cuda-driver.yaml`")
            && stderr(&output).contains("add a row to `cuda-driver.yaml` in a rules directory named by the manifest's `rules:` key"),
        "{}",
        stderr(&output)
    );
    // `validate --rules DIR` lays the directory over the tables.
    let output = upgrade(&["validate", arg(&plain), "--rules", arg(&rules)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The manifest's `rules:` is relative to the manifest, wherever `upgrade` runs.
    let keyed = stack(dir.path(), "keyed", Some("site-rules"), "595.45.04");
    for cwd in [Path::new(env!("CARGO_MANIFEST_DIR")), dir.path()] {
        let output = upgrade_in(cwd, &["validate", arg(&keyed)]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    // `lock`, offline on the embedded snapshot, resolves with the user's rows.
    let output = upgrade(&["lock", arg(&keyed)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("driver 595.45.04, gpu sm_90, toolkit 13.4.0"),
        "{}",
        stdout(&output)
    );
    // … and applies them: the user's driver minimum refuses an older driver.
    let old = stack(dir.path(), "old-driver", Some("site-rules"), "580.82.07");
    let output = upgrade(&["lock", arg(&old)]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("CUDA toolkit 13.4.0 needs driver 595.45.04 or newer"),
        "{}",
        stderr(&output)
    );
    // validate reads the same row for `target.driver`.
    let output = upgrade(&["validate", arg(&old)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output)
            .contains("is below the driver CUDA 13.4.0 (`toolkit.version`) needs: 595.45.04"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_malformed_user_rule_file_is_refused_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let rules = site_rules(
        dir.path(),
        &[(
            "cuda-driver.yaml",
            "schema: 1\ndriver_minimums:\n  - toolkit: \"13.4.0\"\n    drive: \"595.45.04\"\n",
        )],
    );
    let file = rules.join("cuda-driver.yaml");
    let keyed = stack(dir.path(), "keyed", Some("site-rules"), "595.45.04");
    // validate: located at `rules:`, naming the rule file's line and column.
    let output = upgrade(&["validate", arg(&keyed)]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "{}:3:8: error: the rules do not load: {}:4:5: invalid rule file: driver_minimums[0]: unknown field `drive`",
            keyed.display(),
            file.display()
        )),
        "{err}"
    );
    // Nothing is checked against tables that did not load.
    assert!(!err.contains("not a CUDA release"), "{err}");
    // lock: the same error.
    let output = upgrade(&["lock", arg(&keyed)]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains(&format!("{}:4:5: invalid rule file", file.display())),
        "{}",
        stderr(&output)
    );
    // `--rules DIR`: an error of the command, before any manifest.
    let output = upgrade(&[
        "validate",
        "manifests/sglang-0.5.9-cu130.yaml",
        "--rules",
        arg(&rules),
    ]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains(&format!("{}:4:5: invalid rule file", file.display())),
        "{}",
        stderr(&output)
    );
    // A row that breaks a check of the file: its line.
    std::fs::write(
        &file,
        format!(
            "{DRIVER_ROW}  - toolkit: \"13.4.0\"\n    driver: \"596.10\"\n    source: a test\n"
        ),
    )
    .unwrap();
    let output = upgrade(&["validate", arg(&keyed)]);
    assert!(
        stderr(&output).contains(&format!(
            "{}:6: invalid rule file: toolkit `13.4.0` is listed twice",
            file.display()
        )),
        "{}",
        stderr(&output)
    );
    // A file the directory may not hold is named.
    std::fs::write(&file, DRIVER_ROW).unwrap();
    std::fs::write(rules.join("cuda-drivers.yaml"), DRIVER_ROW).unwrap();
    let output = upgrade(&["validate", arg(&keyed)]);
    assert!(
        stderr(&output).contains("cuda-drivers.yaml: not a rule file this build reads; a rules directory holds only abi-pins.yaml, cuda-arch.yaml, cuda-driver.yaml, cuda-runtime.yaml, cuda-updates.yaml"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_missing_rules_directory_is_located_at_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let keyed = stack(dir.path(), "keyed", Some("site-rules"), "595.45.04");
    for verb in ["validate", "lock"] {
        let output = upgrade(&[verb, arg(&keyed)]);
        assert_ne!(output.status.code(), Some(0));
        // `validate` says `error:` after the location; the other verbs list the problems.
        let err = stderr(&output).replace(": error: ", ": ");
        assert!(
            err.contains(&format!(
                "{}:3:8: rules directory `site-rules` does not exist (looked for `{}`)",
                keyed.display(),
                dir.path().join("stack/site-rules").display()
            )),
            "{verb}: {err}"
        );
    }
}
