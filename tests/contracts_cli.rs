//! Contracts a new user relies on: self-contradictions are `validate` errors located at
//! the key to change, every verb asked for `--format json` prints an object on stdout
//! when it fails, every timeout flag takes a duration, and `diff` shows every target
//! setting that changes what `apply` does.
//!
//! See: issue 19 — `toolkit.version: "13.0.2"` with the 13.0.1 runfile passed
//! `validate` and `plan`, `target.driver: 580.82.07` with toolkit 13.1 passed
//! `validate`, only `plan` and `status` printed JSON on failure, `--timeout` took only
//! seconds, and `diff` did not show `target.env_scope`. Each test here failed before.
mod common;

use std::path::{Path, PathBuf};

use common::cli::{H200_FACTS, stderr, stdout, upgrade, venv_manifest};

const RUNFILE_13_0_1: &str = "https://developer.download.nvidia.com/compute/cuda/13.0.1/local_installers/cuda_13.0.1_580.82.07_linux.run";

/// A manifest with `driver` and a runfile toolkit of `version` from `url`.
fn toolkit_manifest(dir: &Path, name: &str, driver: &str, version: &str, url: &str) -> PathBuf {
    venv_manifest(
        dir,
        name,
        &format!(
            "  driver: \"{driver}\"\ntoolkit:\n  version: \"{version}\"\n  prefix: /usr/local/cuda-13.0\n  installer: runfile\n  source:\n    url: {url}\n    sha256: {}\n",
            "ab".repeat(32)
        ),
    )
}

/// A toolkit version its runfile contradicts is an error at `toolkit.version`, in
/// `validate` and in every verb that loads the manifest.
#[test]
fn a_toolkit_version_its_runfile_contradicts_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = toolkit_manifest(dir.path(), "m", "580.95.05", "13.0.2", RUNFILE_13_0_1);
    let output = upgrade(&["validate", manifest.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    let text = stderr(&output);
    assert!(
        text.contains("m.yaml:10:12: error: `toolkit.version` `13.0.2` contradicts `toolkit.source.url`: the runfile `cuda_13.0.1_580.82.07_linux.run` installs CUDA 13.0.1"),
        "{text}"
    );
    let output = upgrade(&["plan", manifest.to_str().unwrap(), "--facts", H200_FACTS]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("contradicts `toolkit.source.url`"),
        "{}",
        stderr(&output)
    );
    // The runfile's own release validates.
    let fine = toolkit_manifest(dir.path(), "fine", "580.95.05", "13.0.1", RUNFILE_13_0_1);
    let output = upgrade(&["validate", fine.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// `target.driver` below the toolkit's minimum driver (the rules table the resolver
/// reads) is a `validate` error at `target.driver`, with the row's source.
#[test]
fn a_driver_below_the_toolkits_minimum_is_a_validate_error() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = toolkit_manifest(
        dir.path(),
        "m",
        "580.82.07",
        "13.1",
        "https://developer.download.nvidia.com/compute/cuda/13.1.0/local_installers/cuda_13.1.0_590.44.01_linux.run",
    );
    let output = upgrade(&["validate", "--format", "json", manifest.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let diagnostics = json["files"][0]["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{json}");
    assert_eq!(diagnostics[0]["line"], 8, "{json}");
    let message = diagnostics[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "`target.driver` `580.82.07` is below the driver CUDA 13.1 (`toolkit.version`) needs: 590.44.01 (manifests/rules/cuda-driver.yaml: "
        ),
        "{message}"
    );
}

/// Every verb asked for `--format json` prints `{"ok": false, "exit": N, "error": …}`
/// on stdout when it fails, usage errors included.
#[test]
fn every_json_verb_prints_an_object_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let missing = missing.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["lock", missing],
        vec!["apply", missing, "--local", "--yes"],
        vec!["verify", missing, "--local"],
        vec!["abi-check", "/nonexistent/site-packages"],
        vec!["diff", missing, missing],
        vec!["index", "hash", missing],
        vec![
            "index",
            "default-url",
            "--pip-python",
            "/nonexistent/python3",
        ],
        // A usage error: clap's own, as an object too.
        vec!["probe", "--local", "--command-timeout", "0"],
    ];
    for case in cases {
        let mut args = case.clone();
        args.extend(["--format", "json"]);
        let output = upgrade(&args);
        assert_ne!(output.status.code(), Some(0), "{case:?}");
        let json: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|error| panic!("{case:?}: {error}: {:?}", stdout(&output)));
        assert_eq!(json["ok"], false, "{case:?}: {json}");
        assert_eq!(
            json["exit"].as_i64(),
            output.status.code().map(i64::from),
            "{case:?}"
        );
        assert!(!json["error"].as_str().unwrap().is_empty(), "{case:?}");
    }
    // A manifest that cannot be resolved: the report, and `resolved: false` as before.
    let manifest = dir.path().join("impossible.yaml");
    std::fs::write(
        &manifest,
        "schema: 1\nname: impossible\nupgrade: \">=0.1\"\ntarget:\n  python: /opt/v/bin/python3\nindexes:\n  - name: local\n    url: http://127.0.0.1:9/simple/\npackages:\n  torch: \"==9.9.9\"\n",
    )
    .unwrap();
    let snapshot = dir.path().join("snapshot.json");
    std::fs::write(
        &snapshot,
        r#"{"schema": 1, "recorded": "2026-12-03", "how": "by hand", "universe": {"indexes": [{"name": "local", "packages": {}}]}}"#,
    )
    .unwrap();
    let output = upgrade(&[
        "lock",
        manifest.to_str().unwrap(),
        "--snapshot",
        snapshot.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["resolved"], false, "{json}");
    assert_eq!(json["exit"], 3, "{json}");
    assert!(json["report"].is_object(), "{json}");
}

/// `--timeout`, `--connect-timeout` and `--command-timeout` take durations (`90s`,
/// `5m`) and plain seconds alike; zero and words are refused naming the flag.
#[test]
fn every_timeout_flag_takes_a_duration() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("m.yaml");
    std::fs::write(
        &manifest,
        "schema: 1\nname: m\nupgrade: \">=0.1\"\ntarget:\n  python: /opt/torch/.venv/bin/python3\n",
    )
    .unwrap();
    let manifest = manifest.to_str().unwrap();
    for (timeout, connect, command) in [("5m", "90s", "20m"), ("90", "2.5", "600")] {
        let output = upgrade(&[
            "lock",
            manifest,
            "--timeout",
            timeout,
            "--connect-timeout",
            connect,
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let output = upgrade(&[
            "plan",
            manifest,
            "--facts",
            H200_FACTS,
            "--command-timeout",
            command,
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    for (flag, value) in [
        ("--timeout", "0"),
        ("--timeout", "soon"),
        ("--connect-timeout", "0s"),
        ("--timeout", "169h"),
    ] {
        let output = upgrade(&["lock", manifest, flag, value]);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}");
        assert!(stderr(&output).contains(flag), "{}", stderr(&output));
    }
}

/// `diff` shows a change of `target.env_scope` and `target.keep_unlocked_packages`
/// (each changes what `apply` does on the node) and of a variable's `override`.
#[test]
fn diff_shows_env_scope_and_kept_packages() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.yaml");
    let new = dir.path().join("new.yaml");
    std::fs::write(
        &old,
        "schema: 1\nname: m\ntarget:\n  python: /opt/v/bin/python3\nenv:\n  NCCL_DEBUG: WARN\n",
    )
    .unwrap();
    std::fs::write(
        &new,
        "schema: 1\nname: m\ntarget:\n  python: /opt/v/bin/python3\n  env_scope: interpreter\n  keep_unlocked_packages: true\nenv:\n  NCCL_DEBUG:\n    value: WARN\n    override: true\n",
    )
    .unwrap();
    let output = upgrade(&["diff", old.to_str().unwrap(), new.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        text.contains("  ~ target.env_scope: environment → interpreter\n      every environment of the base interpreter sees the `env` variables\n"),
        "{text}"
    );
    assert!(
        text.contains("  ~ target.keep_unlocked_packages: false → true\n      `apply` keeps packages the lock does not name\n"),
        "{text}"
    );
    assert!(
        text.contains("  ~ NCCL_DEBUG: WARN → WARN (override)\n"),
        "{text}"
    );
    let output = upgrade(&[
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let json = stdout(&output);
    assert!(json.contains("\"target.env_scope\""), "{json}");
    assert!(json.contains("\"target.keep_unlocked_packages\""), "{json}");
}
