//! A new user's own stack, one the embedded snapshot does not record, on a testbed node:
//! in a fresh git repository, `init` writes the node's manifest, `lock` resolves it live
//! against the testbed's index (its own cache, nothing of the machine's) and writes the
//! lock beside it, `plan` and `status` read that lock and find nothing to do, a comment
//! keeps it fresh, a changed pin stales it (`plan --locked` names the package), a new
//! lock is committed, and `diff REV:PATH PATH` shows the locked change with no route to
//! any network. The CI example's lock step and its diff command pass on that repository.
//!
//! Needs root (the testbed's namespaces and `unshare -n`); without it the test says why
//! it is skipped and passes.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::testbed::{Testbed, skip};

/// `upgrade` in `repo` with the controller's settings all inside `home`: its cache, its
/// `HOME`, pip's configuration (the testbed's default index), the testbed's ssh_config.
fn upgrade(testbed: &Testbed, repo: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_upgrade"))
        .args(args)
        .current_dir(repo)
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("UPGRADE_CACHE_DIR", home.join("upgrade-cache"))
        .env("UPGRADE_SSH_CONFIG", testbed.ssh_config().unwrap())
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_INDEX_URL", testbed.index("default").unwrap())
        .env_remove("UPGRADE_SNAPSHOT")
        .env_remove("UPGRADE_RULES")
        .env_remove("UPGRADE_INVENTORY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `git ARGS` in `repo`, which must succeed; its stdout.
fn git(repo: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", text(&output));
    stdout(&output).trim().to_string()
}

/// The `run:` block of the step named `name` in `examples/ci-diff.yml`.
fn ci_step(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci-diff.yml");
    let workflow: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let steps = workflow["jobs"]["diff"]["steps"].as_sequence().unwrap();
    let step = steps
        .iter()
        .find(|step| step["name"].as_str() == Some(name));
    assert!(step.is_some(), "examples/ci-diff.yml has no step `{name}`");
    step.unwrap()["run"].as_str().unwrap().to_string()
}

/// `bash -c SCRIPT` in `repo` inside a new network namespace (no route anywhere), with
/// `upgrade` first on `PATH` and `env` set.
fn in_no_network(repo: &Path, home: &Path, script: &str, env: &[(&str, &str)]) -> Output {
    let bin = home.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("upgrade");
    if !link.exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_upgrade"), &link).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("unshare")
        .args(["-n", "bash", "-c", script])
        .current_dir(repo)
        .env("PATH", path)
        .env("HOME", home)
        .env("UPGRADE_CACHE_DIR", home.join("upgrade-cache"))
        .env("PIP_CONFIG_FILE", "/dev/null")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The manifest with both flashinfer pins moved to 0.6.4 (the cubin follows
/// flashinfer-python, a rule), overriding sglang 0.5.9's own `==0.6.3`.
fn move_flashinfer(text: &str) -> String {
    let moved = text
        .replace(
            "\"flashinfer-python==0.6.3\"",
            "\"flashinfer-python==0.6.4\"",
        )
        .replace("\"flashinfer-cubin==0.6.3\"", "\"flashinfer-cubin==0.6.4\"");
    assert_ne!(moved, text, "no flashinfer pins in\n{text}");
    moved.replacen(
        "\nconstraints:\n",
        "\noverrides:\n  - {requirement: \"flashinfer-python==0.6.4\", reason: \"the fix we need\"}\n  - {requirement: \"flashinfer-cubin==0.6.4\", reason: \"follows flashinfer-python\"}\nconstraints:\n",
        1,
    )
}

#[test]
fn a_new_users_own_stack_from_init_to_a_reviewed_lock_change() {
    if skip("a_new_users_own_stack_from_init_to_a_reviewed_lock_change") {
        return;
    }
    let testbed = Testbed::up(&["cuda12.8"]).unwrap();
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let repo: PathBuf = work.path().join("repo");
    std::fs::create_dir_all(repo.join("manifests")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    git(&repo, &["init", "-q"]);
    let run = |args: &[&str]| upgrade(&testbed, &repo, &home, args);
    let manifest = "manifests/node.yaml";
    let node = ["--host", "node0"];

    let init = run(&[
        "init",
        "--host",
        "node0",
        "--python",
        "/opt/ml-env/bin/python3",
        "-o",
        manifest,
    ]);
    assert!(init.status.success(), "{}", text(&init));
    let written = std::fs::read_to_string(repo.join(manifest)).unwrap();
    assert!(
        written.contains(&testbed.index("default").unwrap()),
        "{written}"
    );

    // No source flag: the embedded snapshot does not record this stack, so it is
    // resolved live against the testbed's index, through this test's cache.
    let lock = run(&["lock", manifest]);
    assert_eq!(lock.status.code(), Some(0), "{}", text(&lock));
    assert!(
        stderr(&lock).contains(
            "resolved live: the embedded snapshot does not record this manifest's packages"
        ),
        "{}",
        stderr(&lock)
    );
    assert!(
        stdout(&lock)
            .contains("flashinfer-python==0.6.3  # node-default: flashinfer_python-0.6.3-"),
        "{}",
        stdout(&lock)
    );
    let lock_file = repo.join("manifests/node.lock.json");
    let lock_text = std::fs::read_to_string(&lock_file).unwrap();
    cuda_upgrade::resolve::Lock::from_json(&lock_text).unwrap();
    assert!(
        std::fs::read_dir(home.join("upgrade-cache"))
            .unwrap()
            .next()
            .is_some(),
        "the live resolution did not go through the test's cache"
    );

    let plan = run(&["plan", manifest, node[0], node[1], "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    assert!(
        stderr(&plan).contains("lock: manifests/node.lock.json (fresh)"),
        "{}",
        stderr(&plan)
    );
    assert!(
        stdout(&plan).contains("node0: 0 to create, 0 to change, 0 to remove"),
        "{}",
        stdout(&plan)
    );
    let status = run(&["status", manifest, node[0], node[1], "--detailed-exitcode"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status));
    assert!(
        stdout(&status).contains("node0: matches `node0-as-is`"),
        "{}",
        text(&status)
    );
    assert!(
        stderr(&status).contains("lock: manifests/node.lock.json (fresh)"),
        "{}",
        stderr(&status)
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "node0 as it is"]);
    let first = git(&repo, &["rev-parse", "HEAD"]);

    // A comment keeps the lock fresh.
    std::fs::write(
        repo.join(manifest),
        format!("{written}# reviewed: this is what node0 runs\n"),
    )
    .unwrap();
    let fresh = run(&["lock", manifest, "--locked"]);
    assert_eq!(fresh.status.code(), Some(0), "{}", text(&fresh));
    assert!(
        stdout(&fresh).contains("manifests/node.lock.json: fresh for `manifests/node.yaml`"),
        "{}",
        stdout(&fresh)
    );
    let plan = run(&[
        "plan",
        manifest,
        node[0],
        node[1],
        "--locked",
        "--detailed-exitcode",
    ]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));

    // A changed pin stales it: `--locked` refuses it, naming the package.
    let edited = move_flashinfer(&std::fs::read_to_string(repo.join(manifest)).unwrap());
    std::fs::write(repo.join(manifest), &edited).unwrap();
    let plan = run(&["plan", manifest, node[0], node[1], "--locked"]);
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    assert!(
        stderr(&plan).contains("Refusing lock `manifests/node.lock.json`: it is stale")
            && stderr(&plan)
                .contains("constraint `flashinfer-python==0.6.3` → `flashinfer-python==0.6.4`")
            && stderr(&plan).contains("`upgrade lock manifests/node.yaml` refreshes it"),
        "{}",
        stderr(&plan)
    );
    let stale = run(&["lock", manifest, "--locked"]);
    assert_eq!(stale.status.code(), Some(4), "{}", text(&stale));

    let relock = run(&["lock", manifest]);
    assert_eq!(relock.status.code(), Some(0), "{}", text(&relock));
    assert!(
        stdout(&relock).contains("flashinfer-cubin==0.6.4")
            && stdout(&relock).contains("flashinfer-python==0.6.4"),
        "{}",
        stdout(&relock)
    );
    let plan = run(&["plan", manifest, node[0], node[1], "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    assert!(
        stdout(&plan).contains("0 to install, 2 to upgrade, 0 to downgrade, 0 to remove"),
        "{}",
        stdout(&plan)
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "flashinfer 0.6.4"]);

    // The diff of the two revisions, from their locks, with no route to any network.
    let old = format!("{first}:{manifest}");
    let diff = in_no_network(&repo, &home, &format!("upgrade diff {old} {manifest}"), &[]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff));
    let shown = stdout(&diff);
    assert!(
        shown.contains("Resolution (locked closure, offline)\n  ~ flashinfer-cubin: 0.6.3 (node-default) → 0.6.4 (node-default) (upgrade)\n  ~ flashinfer-python: 0.6.3 (node-default) → 0.6.4 (node-default) (upgrade)\n"),
        "{shown}"
    );
    assert!(!shown.contains("note:"), "{shown}");

    // The CI example on this repository: every lock is committed and fresh …
    let lock_step = ci_step("Every manifest's lock is committed and fresh");
    let ci = in_no_network(&repo, &home, &lock_step, &[]);
    assert_eq!(ci.status.code(), Some(0), "{lock_step}\n{}", text(&ci));
    assert!(
        stdout(&ci).contains("manifests/node.lock.json: fresh for `manifests/node.yaml`"),
        "{}",
        text(&ci)
    );
    // … and the diff step's command for a changed manifest, against the first revision
    // as the base branch.
    let diff_step = ci_step("Diff changed manifests against the base branch");
    assert!(
        diff_step.contains(r#"upgrade diff "$base:$old" "$new" --format markdown >> diff.md"#),
        "{diff_step}"
    );
    git(&repo, &["update-ref", "refs/remotes/origin/main", &first]);
    let ci = in_no_network(&repo, &home, &diff_step, &[("GITHUB_BASE_REF", "main")]);
    assert_eq!(ci.status.code(), Some(0), "{diff_step}\n{}", text(&ci));
    let markdown = std::fs::read_to_string(repo.join("diff.md")).unwrap();
    assert!(
        markdown
            .contains("### Stack diff: `origin/main:manifests/node.yaml` → `manifests/node.yaml`"),
        "{markdown}"
    );
    assert!(
        markdown.contains("- **changed** `flashinfer-python`: `0.6.3 (node-default)` → `0.6.4 (node-default)` — *upgrade*"),
        "{markdown}"
    );
    assert!(
        markdown.contains("- **changed** `flashinfer-cubin`: `0.6.3 (node-default)` → `0.6.4 (node-default)` — *upgrade*"),
        "{markdown}"
    );
    // A stale lock fails the lock step, naming the change.
    std::fs::write(
        repo.join(manifest),
        edited.replace("\"torch==2.9.1\"", "\"torch>=2.9\""),
    )
    .unwrap();
    let ci = in_no_network(&repo, &home, &lock_step, &[]);
    assert_eq!(ci.status.code(), Some(4), "{}", text(&ci));
    assert!(stdout(&ci).contains("torch"), "{}", text(&ci));
}
