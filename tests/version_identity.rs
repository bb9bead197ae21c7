//! One version identity through the binary: a release spelled otherwise by a snapshot,
//! a manifest pin, a dependency or the installed metadata (`2` and `2.0.0`, `1.0a1` and
//! `1.0.0a1`, a local label's case and separators) is one release. The lock names it as
//! its file does, `lock --check` finds no difference in spelling alone, and the manifest
//! `init --local` writes from a real environment (wheels built here, installed with the
//! venv's own pip) plans all no-op against a lock that spells its versions otherwise.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

#[expect(
    dead_code,
    reason = "the shared fixtures serve the index client's tests too"
)]
mod support;

mod common;

use std::path::Path;
use std::process::Command;

use common::cli::{H200_FACTS, command, stderr, stdout, upgrade, upgrade_ok};

/// A snapshot release of index `default`: `version` as the snapshot records it, its
/// one wheel `{name}-{file_version}-py3-none-any.whl`, requiring `requires`.
fn release(name: &str, version: &str, file_version: &str, requires: &[&str]) -> String {
    let requires: Vec<String> = requires.iter().map(|r| format!("\"{r}\"")).collect();
    format!(
        r#""{name}": [{{"version": "{version}", "requires_dist": [{}], "files": [{{"filename": "{name}-{file_version}-py3-none-any.whl", "sha256": "{}"}}]}}]"#,
        requires.join(", "),
        "ab".repeat(32)
    )
}

/// `DIR/snapshot.json`: index `default` with `releases` (from [`release`]).
fn snapshot(dir: &Path, releases: &[String]) -> std::path::PathBuf {
    let path = dir.join("snapshot.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"schema": 1, "recorded": "2026-12-03", "how": "by hand, for a test",
  "universe": {{"indexes": [{{"name": "default", "packages": {{{}}}}}]}}}}"#,
            releases.join(", ")
        ),
    )
    .unwrap();
    path
}

/// The lock names each release as its file spells it, whatever spelling the snapshot,
/// the manifest's pin and a dependency's requirement use: `cffi==2` pinned, required as
/// `cffi==2` and recorded as `2` is locked `cffi==2.0.0` (its file is
/// `cffi-2.0.0-….whl`), as `numpy==2.0.0` always was. A lock written with the other
/// spelling still matches (`lock --check`).
#[test]
fn the_lock_spells_a_version_as_its_file_does() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = snapshot(
        dir.path(),
        &[
            release("cffi", "2", "2.0.0", &[]),
            release("crypt", "1.0", "1.0", &["cffi==2", "eggs>=1.0a1"]),
            release("eggs", "1.0a1", "1.0.0a1", &[]),
            release("numpy", "2.0.0", "2.0.0", &[]),
        ],
    );
    let manifest = common::cli::venv_manifest(
        dir.path(),
        "spellings",
        "indexes:\n  - name: default\npackages:\n  cffi: \"==2\"\n  crypt: \"==1.0\"\n  numpy: \"==2.0.0\"\n",
    );
    let lock = dir.path().join("spellings.lock.json");
    let manifest_arg = manifest.to_str().unwrap();
    let snapshot_arg = snapshot.to_str().unwrap();
    upgrade_ok(&[
        "lock",
        manifest_arg,
        "--snapshot",
        snapshot_arg,
        "--facts",
        H200_FACTS,
        "--format",
        "json",
        "-o",
        lock.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&lock).unwrap();
    let written: serde_json::Value = serde_json::from_str(&text).unwrap();
    let versions: Vec<(&str, &str)> = written["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| {
            (
                package["name"].as_str().unwrap(),
                package["version"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [
            ("cffi", "2.0.0"),
            ("crypt", "1.0"),
            ("eggs", "1.0.0a1"),
            ("numpy", "2.0.0")
        ],
        "{text}"
    );
    let shown = stdout(&upgrade_ok(&[
        "lock",
        manifest_arg,
        "--snapshot",
        snapshot_arg,
        "--facts",
        H200_FACTS,
    ]));
    assert!(
        shown.contains("cffi==2.0.0  # default: cffi-2.0.0-py3-none-any.whl"),
        "{shown}"
    );

    // A lock that spells the same releases otherwise is no difference.
    let respelled = text
        .replace(r#""version": "2.0.0""#, r#""version": "2""#)
        .replace(r#""version": "1.0.0a1""#, r#""version": "1.0alpha1""#);
    assert_ne!(respelled, text);
    std::fs::write(&lock, respelled).unwrap();
    let check = upgrade(&[
        "lock",
        manifest_arg,
        "--snapshot",
        snapshot_arg,
        "--facts",
        H200_FACTS,
        "--check",
        "--lock",
        lock.to_str().unwrap(),
    ]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );
}

/// See: the `init` round trip — a manifest `init --local` writes pins each release as
/// the environment spells it, and planning it changes nothing, also when the lock spells
/// the same releases otherwise (`cffi 2` for the installed `2.0.0`): no `upgrade cffi
/// 2.0.0 → 2`, `status` says the node matches, `plan --detailed-exitcode` exits 0.
#[test]
fn init_then_plan_is_all_no_op_whatever_the_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("env");
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output();
    if !made.as_ref().is_ok_and(|output| output.status.success()) {
        eprintln!("skipping: `python3 -m venv` is not available here: {made:?}");
        return;
    }
    let python = venv.join("bin/python3");
    let wheels = dir.path().join("wheels");
    std::fs::create_dir(&wheels).unwrap();
    for built in [
        support::wheel("cffi", "2.0.0", &[], None, &[], 0),
        support::wheel("crypt", "1.0", &["cffi>=2"], None, &[], 0),
        support::wheel("eggs", "1.0.0a1", &[], None, &[], 0),
        support::wheel("ham", "1.0.post0", &[], None, &[], 0),
        support::wheel("local", "1.0+ubuntu.1", &[], None, &[], 0),
    ] {
        std::fs::write(wheels.join(&built.filename), &built.bytes).unwrap();
    }
    let installed = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--disable-pip-version-check",
            "--find-links",
        ])
        .arg(&wheels)
        .args(["crypt", "eggs==1.0.0a1", "ham", "local"])
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );

    let manifest = dir.path().join("init.yaml");
    let init = command()
        .args(["init", "--local", "--python"])
        .arg(&python)
        .arg("-o")
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(init.status.success(), "{}{}", stdout(&init), stderr(&init));
    let text = std::fs::read_to_string(&manifest).unwrap();
    for pin in [
        "  crypt: \"==1.0\"",
        "  eggs: \"==1.0.0a1\"",
        "  ham: \"==1.0.post0\"",
        "  local: \"==1.0+ubuntu.1\"",
        "requirement: \"cffi==2.0.0\"",
    ] {
        assert!(text.contains(pin), "{pin} in\n{text}");
    }

    // The index spells the same releases otherwise than the environment does.
    let snapshot = snapshot(
        dir.path(),
        &[
            release("cffi", "2", "2", &[]),
            release("crypt", "1.0", "1.0", &["cffi>=2"]),
            release("eggs", "1.0a1", "1.0a1", &[]),
            release("ham", "1.0-post0", "1.0.post0", &[]),
            release("local", "1.0+UBUNTU-1", "1.0+ubuntu.1", &[]),
        ],
    );
    let manifest_arg = manifest.to_str().unwrap();
    let snapshot_arg = snapshot.to_str().unwrap();
    let lock = stdout(&upgrade_ok(&[
        "lock",
        manifest_arg,
        "--snapshot",
        snapshot_arg,
    ]));
    assert!(lock.contains("cffi==2  #"), "{lock}");
    assert!(lock.contains("eggs==1.0a1  #"), "{lock}");

    let plan = upgrade(&[
        "plan",
        manifest_arg,
        "--local",
        "--snapshot",
        snapshot_arg,
        "--detailed-exitcode",
    ]);
    let shown = stdout(&plan);
    assert_eq!(plan.status.code(), Some(0), "{shown}{}", stderr(&plan));
    assert!(
        shown.contains("0 to install, 0 to upgrade, 0 to downgrade, 0 to remove"),
        "{shown}"
    );
    assert!(shown.contains("no-op pip"), "{shown}");

    let status = upgrade(&[
        "status",
        manifest_arg,
        "--local",
        "--snapshot",
        snapshot_arg,
    ]);
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}{}",
        stdout(&status),
        stderr(&status)
    );
    assert!(stdout(&status).contains("matches"), "{}", stdout(&status));
}
