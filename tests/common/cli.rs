//! The `upgrade` binary as the CLI tests run it (from the repository root, stdin
//! closed), and the small manifests and snapshots they hand it for the H200 fixture's venv.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly at the first surprise"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The facts of the H200 fixture node (its venv `/opt/torch/.venv` has torch 2.11.0).
pub const H200_FACTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/facts/h200.facts.json"
);

/// The seed manifest.
pub const SEED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/manifests/sglang-0.5.9-cu130.yaml"
);

/// `upgrade`, to be given its arguments, run in `dir` with stdin closed.
pub fn command_in(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_upgrade"));
    command.current_dir(dir).stdin(Stdio::null());
    command
}

/// `upgrade`, to be given its arguments, run from the repository root with stdin closed.
pub fn command() -> Command {
    command_in(Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// `upgrade ARGS` from the repository root.
pub fn upgrade(args: &[&str]) -> Output {
    command().args(args).output().expect("run upgrade")
}

/// `upgrade ARGS` from the repository root, which must exit 0.
pub fn upgrade_ok(args: &[&str]) -> Output {
    let output = upgrade(args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "upgrade {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `upgrade ARGS` run in `dir`.
pub fn upgrade_in(dir: &Path, args: &[&str]) -> Output {
    command_in(dir).args(args).output().expect("run upgrade")
}

/// `upgrade VERB MANIFEST --facts (the H200's) ARGS…` from the repository root.
pub fn on_h200(verb: &str, manifest: &Path, args: &[&str]) -> Output {
    let mut all = vec![verb, manifest.to_str().unwrap(), "--facts", H200_FACTS];
    all.extend_from_slice(args);
    upgrade(&all)
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8 stdout")
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("utf-8 stderr")
}

/// `DIR/NAME.yaml`: a manifest for the H200's venv (`/opt/torch/.venv`), `extra`
/// appended right after its `target.glibc` line.
pub fn venv_manifest(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "schema: 1\nname: {name}\nupgrade: \">=0.1\"\ntarget:\n  python: /opt/torch/.venv/bin/python3\n  python_version: \"3.12\"\n  glibc: \"2.39\"\n{extra}"
        ),
    )
    .unwrap();
    path
}

/// `DIR/NAME.json`: a snapshot of index `local` offering these releases of torch, each
/// hashed.
pub fn torch_snapshot(dir: &Path, name: &str, versions: &[&str]) -> PathBuf {
    let releases: Vec<String> = versions
        .iter()
        .enumerate()
        .map(|(n, version)| {
            format!(
                r#"{{"version": "{version}", "requires_dist": [], "files": [{{"filename": "torch-{version}-cp312-cp312-manylinux_2_28_x86_64.whl", "sha256": "{}"}}]}}"#,
                format!("{n:02x}").repeat(32)
            )
        })
        .collect();
    let path = dir.join(format!("{name}.json"));
    std::fs::write(
        &path,
        format!(
            r#"{{"schema": 1, "recorded": "2026-12-03", "how": "by hand, for a test",
  "universe": {{"indexes": [{{"name": "local", "packages": {{"torch": [{}]}}}}]}}}}"#,
            releases.join(", ")
        ),
    )
    .unwrap();
    path
}

/// The interpreter of the tool environment `name` under the target directory, with
/// `package` (e.g. `uv==0.13.9`) from the Python index (`scripts/tool-venv`).
pub fn tool_python(name: &str, package: &str) -> PathBuf {
    let tools = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("tools")
        .join(name);
    let setup = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/tool-venv"))
        .arg(&tools)
        .arg(package)
        .output()
        .unwrap();
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    PathBuf::from(String::from_utf8(setup.stdout).unwrap().trim())
}

/// uv from the Python index (`uv==0.13.9`), in a tool environment under the target
/// directory.
pub fn uv() -> PathBuf {
    tool_python("uv", "uv==0.13.9").with_file_name("uv")
}
