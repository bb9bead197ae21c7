//! `upgrade diff` compares the locks beside two manifests of a stack the embedded
//! snapshot does not record: locked package changes, one note for a side without a
//! lock, a digest change on the same file flagged, and no network or pip used.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::cli::{stderr, stdout, upgrade_in};

/// A snapshot of index `local`: torch `2.8.0+cu128` and `2.9.1+cu130`, numpy `2.0.0`,
/// none of which the embedded snapshot records on an index of that name.
const SNAPSHOT: &str = r#"{"schema": 1, "recorded": "2026-12-03", "how": "by hand, for a test",
  "universe": {"indexes": [{"name": "local", "packages": {
    "torch": [
      {"version": "2.8.0+cu128", "requires_dist": [], "requires_python": ">=3.9", "files": [
        {"filename": "torch-2.8.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl", "sha256": "1111111111111111111111111111111111111111111111111111111111111111"}]},
      {"version": "2.9.1+cu130", "requires_dist": [], "requires_python": ">=3.10", "files": [
        {"filename": "torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", "sha256": "2222222222222222222222222222222222222222222222222222222222222222"}]}],
    "numpy": [
      {"version": "2.0.0", "requires_dist": [], "requires_python": ">=3.9", "files": [
        {"filename": "numpy-2.0.0-cp312-cp312-manylinux_2_28_x86_64.whl", "sha256": "3333333333333333333333333333333333333333333333333333333333333333"}]}]
  }}]}}
"#;

fn manifest(packages: &str) -> String {
    format!(
        "schema: 1\nname: demo\ntarget:\n  python: /opt/demo/bin/python3\n  python_version: \"3.12\"\n  glibc: \"2.39\"\n  driver: \"580.82.07\"\nindexes:\n  - name: local\n    url: http://127.0.0.1:9/simple/\npackages:\n{packages}"
    )
}

const OLD: &str = "  torch: \"==2.8.0+cu128\"\n";
const NEW: &str = "  torch: \"==2.9.1+cu130\"\n  numpy: \"==2.0.0\"\n";

fn git(repo: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// `m.yaml` with `packages` and its lock `m.lock.json`, written by `upgrade lock` on
/// the test snapshot and read back through `Lock::from_json`.
fn write_locked(repo: &Path, packages: &str) {
    std::fs::write(repo.join("m.yaml"), manifest(packages)).unwrap();
    let _ = std::fs::remove_file(repo.join("m.lock.json"));
    let output = upgrade_in(
        repo,
        &[
            "lock",
            "m.yaml",
            "--snapshot",
            "../snapshot.json",
            "--format",
            "json",
            "-o",
            "m.lock.json",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = std::fs::read_to_string(repo.join("m.lock.json")).unwrap();
    cuda_upgrade::resolve::Lock::from_json(&text).unwrap();
}

/// A temporary directory holding `snapshot.json` and the git repository `repo/`, whose
/// one commit has the old manifest and its lock; the work tree has the new ones.
fn two_revisions() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("snapshot.json"), SNAPSHOT).unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    write_locked(&repo, OLD);
    git(&repo, &["add", "m.yaml", "m.lock.json"]);
    git(&repo, &["commit", "-qm", "old"]);
    write_locked(&repo, NEW);
    (dir, repo)
}

fn json(output: &Output) -> serde_json::Value {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    serde_json::from_str(&stdout(output)).unwrap()
}

fn entries<'a>(diff: &'a serde_json::Value, section: &str) -> Vec<&'a serde_json::Value> {
    diff["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["section"] == section)
        .collect()
}

#[test]
fn diff_compares_the_locks_of_two_revisions() {
    let (_dir, repo) = two_revisions();
    let output = upgrade_in(&repo, &["diff", "HEAD:m.yaml", "m.yaml"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("Resolution (locked closure, offline)\n  + numpy: 2.0.0 (local)\n  ~ torch: 2.8.0+cu128 (local) → 2.9.1+cu130 (local) (upgrade, variant change: +cu128 → +cu130)\n"),
        "{text}"
    );
    assert!(!text.contains("note:"), "{text}");
    assert!(!text.contains("Hazards"), "{text}");
    assert!(!text.contains("cannot be resolved"), "{text}");

    let markdown = stdout(&upgrade_in(
        &repo,
        &["diff", "HEAD:m.yaml", "m.yaml", "--format", "markdown"],
    ));
    assert!(
        markdown.contains("- **changed** `torch`: `2.8.0+cu128 (local)` → `2.9.1+cu130 (local)` — *upgrade, variant change: +cu128 → +cu130*"),
        "{markdown}"
    );
    assert!(
        markdown.contains("- **added** `numpy`: `2.0.0 (local)`"),
        "{markdown}"
    );

    let diff = json(&upgrade_in(
        &repo,
        &["diff", "HEAD:m.yaml", "m.yaml", "--format", "json"],
    ));
    assert_eq!(diff["notes"], serde_json::json!([]));
    let resolution = entries(&diff, "resolution");
    assert_eq!(resolution.len(), 2, "{diff:#}");
    assert_eq!(resolution[1]["subject"], "torch");
    assert_eq!(
        resolution[1]["direction"]["kind"],
        "upgrade_and_variant_change"
    );
    assert!(entries(&diff, "hazards").is_empty(), "{diff:#}");

    // The other way round: a downgrade, numpy removed.
    git(&repo, &["add", "m.yaml", "m.lock.json"]);
    git(&repo, &["commit", "-qm", "new"]);
    let back = stdout(&upgrade_in(
        &repo,
        &["diff", "HEAD:m.yaml", "HEAD~1:m.yaml"],
    ));
    assert!(back.contains("  - numpy: 2.0.0 (local)\n"), "{back}");
    assert!(
        back.contains("(downgrade, variant change: +cu130 → +cu128)"),
        "{back}"
    );
}

#[test]
fn a_side_without_a_lock_is_one_note_and_no_hazard() {
    let (_dir, repo) = two_revisions();
    std::fs::remove_file(repo.join("m.lock.json")).unwrap();
    for format in ["text", "markdown", "json"] {
        let output = upgrade_in(
            &repo,
            &["diff", "HEAD:m.yaml", "m.yaml", "--format", format],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let text = stdout(&output);
        assert_eq!(
            text.matches("no lock beside").count(),
            1,
            "{format}: {text}"
        );
        assert!(
            !text.contains("Hazards") && !text.contains("hazards"),
            "{format}: {text}"
        );
        assert!(!text.contains("cannot be resolved"), "{format}: {text}");
        assert!(!text.contains("--snapshot"), "{format}: {text}");
    }
    let text = stdout(&upgrade_in(&repo, &["diff", "HEAD:m.yaml", "m.yaml"]));
    assert!(
        text.contains("note: no lock beside `m.yaml`; `upgrade lock m.yaml` writes it (torch ==2.9.1+cu130 is not recorded in the embedded snapshot, so its locked closure is not compared)\n"),
        "{text}"
    );
    // Only the manifest's own changes are counted: torch changed, numpy added.
    assert!(
        text.ends_with("\n1 added, 1 changed, 0 removed\n"),
        "{text}"
    );

    let diff = json(&upgrade_in(
        &repo,
        &["diff", "HEAD:m.yaml", "m.yaml", "--format", "json"],
    ));
    assert_eq!(diff["notes"].as_array().unwrap().len(), 1, "{diff:#}");
    assert!(entries(&diff, "resolution").is_empty(), "{diff:#}");

    // The same at the old revision: the lock is looked up in git, not on disk.
    write_locked(&repo, NEW);
    git(&repo, &["rm", "-q", "--cached", "m.lock.json"]);
    git(&repo, &["commit", "-qm", "no lock"]);
    let text = stdout(&upgrade_in(&repo, &["diff", "HEAD:m.yaml", "m.yaml"]));
    assert!(
        text.contains("note: no lock beside `HEAD:m.yaml`; `upgrade lock m.yaml` writes it"),
        "{text}"
    );
}

#[test]
fn a_new_digest_for_the_same_file_is_a_hazard() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("snapshot.json"), SNAPSHOT).unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    write_locked(&repo, NEW);
    git(&repo, &["add", "m.yaml", "m.lock.json"]);
    git(&repo, &["commit", "-qm", "locked"]);
    let lock = repo.join("m.lock.json");
    let edited = std::fs::read_to_string(&lock)
        .unwrap()
        .replace(&"2".repeat(64), &"4".repeat(64));
    std::fs::write(&lock, edited).unwrap();

    let output = upgrade_in(&repo, &["diff", "HEAD:m.yaml", "m.yaml", "--exit-code"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    let file = "torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl";
    assert!(
        text.contains(&format!(
            "  ~ torch: {file} sha256:{} → {file} sha256:{}\n",
            "2".repeat(64),
            "4".repeat(64)
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Hazards\n  + torch: `{file}` has another sha256 than before\n"
        )),
        "{text}"
    );
    assert!(text.contains("the release was uploaded again or the lock was edited"));
    let diff = json(&upgrade_in(
        &repo,
        &["diff", "HEAD:m.yaml", "m.yaml", "--format", "json"],
    ));
    assert_eq!(entries(&diff, "hazards").len(), 1, "{diff:#}");

    // A comment keeps the lock fresh; a changed pin without a new lock stales it, and
    // the diff names the change.
    std::fs::write(repo.join("m.yaml"), manifest(&format!("{NEW}  # edited\n"))).unwrap();
    let text = stdout(&upgrade_in(&repo, &["diff", "HEAD:m.yaml", "m.yaml"]));
    assert!(!text.contains("is stale"), "{text}");
    std::fs::write(
        repo.join("m.yaml"),
        manifest(&NEW.replace("==2.0.0", ">=2.0")),
    )
    .unwrap();
    let text = stdout(&upgrade_in(&repo, &["diff", "HEAD:m.yaml", "m.yaml"]));
    assert!(
        text.contains("note: the lock beside `m.yaml` is stale (package numpy: ==2.0.0 → >=2.0); `upgrade lock m.yaml` refreshes it"),
        "{text}"
    );
}

#[test]
fn a_malformed_lock_is_an_error_naming_it() {
    let (_dir, repo) = two_revisions();
    std::fs::write(repo.join("m.lock.json"), "{\"schema\": 1,").unwrap();
    let output = upgrade_in(&repo, &["diff", "HEAD:m.yaml", "m.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("Failed to read lock `m.lock.json`"),
        "{}",
        stderr(&output)
    );

    std::fs::write(repo.join("m.lock.json"), "torch==2.9.1\n").unwrap();
    git(&repo, &["add", "m.lock.json"]);
    git(&repo, &["commit", "-qm", "text lock"]);
    let output = upgrade_in(&repo, &["diff", "HEAD:m.yaml", "HEAD~1:m.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("Failed to read lock `HEAD:m.lock.json`: it is not a JSON lock"),
        "{}",
        stderr(&output)
    );
}

/// Inside a network namespace with no route, and with a `PATH` whose `pip` and
/// `python` only record that they ran, the diff is the same.
#[test]
fn diff_needs_no_network_and_no_pip() {
    let (dir, repo) = two_revisions();
    if !Command::new("unshare")
        .args(["-rn", "true"])
        .status()
        .is_ok_and(|status| status.success())
    {
        eprintln!("skipped: `unshare -rn` is not permitted here");
        return;
    }
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let ran = dir.path().join("ran");
    for tool in ["pip", "pip3", "python", "python3", "uv"] {
        let script = bin.join(tool);
        std::fs::write(
            &script,
            format!("#!/bin/sh\necho {tool} >> '{}'\nexit 1\n", ran.display()),
        )
        .unwrap();
        let mut permissions = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&script, permissions).unwrap();
    }
    let which = |tool: &str| {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        String::from_utf8(found.stdout).unwrap().trim().to_string()
    };
    std::os::unix::fs::symlink(which("git"), bin.join("git")).unwrap();

    let expected = stdout(&upgrade_in(&repo, &["diff", "HEAD:m.yaml", "m.yaml"]));
    // By its full path: the child's `PATH` is the one the program is looked up on.
    let isolated = Command::new(which("unshare"))
        .arg("-rn")
        .arg(env!("CARGO_BIN_EXE_upgrade"))
        .args(["diff", "HEAD:m.yaml", "m.yaml"])
        .current_dir(&repo)
        .env("PATH", &bin)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(isolated.status.code(), Some(0), "{}", stderr(&isolated));
    assert_eq!(stdout(&isolated), expected);
    assert!(!ran.exists(), "ran: {:?}", std::fs::read_to_string(&ran));
}
