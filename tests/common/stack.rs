//! The seed stack on testbed nodes: the fixture SGLang repository, the seed manifest laid
//! over the testbed's runfile, indexes and repository, and running `upgrade` against it.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::testbed::Testbed;

pub const RUNFILE_13: &str = "cuda_13.0.1_580.82.07_linux.run";

/// A git repository holding the fixture SGLang at tag `v0.5.9`, on the controller.
pub fn sglang_repository(root: &Path) -> PathBuf {
    let repo = root.join("sglang");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sglang-source/python");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testbed/fixtures/py/sglang");
    std::fs::create_dir_all(repo.join("python/sglang")).unwrap();
    for file in ["pyproject.toml", "backend.py"] {
        std::fs::copy(source.join(file), repo.join("python").join(file)).unwrap();
    }
    for entry in std::fs::read_dir(server).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "py") {
            std::fs::copy(
                &path,
                repo.join("python/sglang").join(path.file_name().unwrap()),
            )
            .unwrap();
        }
    }
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=fixture",
                "-c",
                "user.email=fixture@example.invalid",
            ])
            .args(args)
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "SGLang v0.5.9 (fixture)"]);
    git(&["tag", "v0.5.9"]);
    repo
}

/// Where nodes find the fixture repository: copied into each node's own `/opt` (an
/// overlay), since the controller's paths may lie under `/tmp`, which nodes do not share.
pub const NODE_REPOSITORY: &str = "/opt/fixtures/sglang";

/// Copy the repository to `node` over ssh (tar through the connection).
pub fn install_repository(testbed: &Testbed, repo: &Path, node: &str) {
    let ssh_config = testbed.ssh_config().unwrap();
    let script = format!(
        "tar -C {} -cf - . | ssh -F {ssh_config} {node} 'rm -rf {NODE_REPOSITORY} && mkdir -p {NODE_REPOSITORY} && tar -xf - -C {NODE_REPOSITORY}'",
        repo.display()
    );
    let status = Command::new("sh").arg("-c").arg(&script).status().unwrap();
    assert!(status.success(), "{script}");
}

/// The seed manifest with the testbed's runfile, indexes, repository and log path.
pub fn overlay(testbed: &Testbed, dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let seed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/sglang-0.5.9-cu130.yaml"),
    )
    .unwrap();
    let (runfile_url, runfile_sha) = testbed.runfile(RUNFILE_13).unwrap();
    let cu130 = testbed.index("cu130").unwrap();
    let mut text = seed
        .replace(
            "https://developer.download.nvidia.com/compute/cuda/13.0.1/local_installers/cuda_13.0.1_580.82.07_linux.run",
            &runfile_url,
        )
        .replace("4c7ac59d1f41d67be27d140a4622801738ad71088570a0facfd6ec878a4c4100", &runfile_sha)
        .replace("https://download.pytorch.org/whl/cu130", &cu130)
        .replace("https://docs.sglang.ai/whl/cu130/", &cu130)
        .replace("https://github.com/sgl-project/sglang", &format!("file://{NODE_REPOSITORY}"))
        .replace("patches/sglang-0.5.9-flashinfer-0.6.4.patch", "patches/flashinfer-0.6.4.patch")
        .replace("python_version: \"3.12\"", "python_version: \"3.11\"")
        // These tests follow the block into the interpreter's symlinked sitecustomize.py;
        // the default scope (the environment's .pth) is tested in tests/steps_local.rs.
        .replace("  base_python: /usr/bin/python3\n", "  base_python: /usr/bin/python3\n  env_scope: interpreter\n")
        // The node's /tmp is private: the log stays out of the overlays compared below.
        .replace("/data/logs/cuda13_baseline.log", "/tmp/sglang/cuda13_baseline.log");
    // The fixture indexes carry no torchvision or torchaudio.
    for package in ["torchvision", "torchaudio"] {
        let header = format!("  {package}:");
        let mut skipping = false;
        text = text
            .lines()
            .filter(|line| {
                if *line == header {
                    skipping = true;
                    return false;
                }
                if skipping && line.starts_with("    ") {
                    return false;
                }
                skipping = false;
                true
            })
            .map(|line| format!("{line}\n"))
            .collect();
    }
    let text = edit(text);
    std::fs::create_dir_all(dir.join("patches")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sglang-source/flashinfer-0.6.4.patch"),
        dir.join("patches/flashinfer-0.6.4.patch"),
    )
    .unwrap();
    let path = dir.join("overlay.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A testbed of these personas (`node0` gets the first; `flags` go to `up`), the fixture
/// repository on every node, the seed overlay (`edit`ed) written in `work`, and its
/// snapshot.
pub fn seeded_testbed(
    personas: &[&str],
    flags: &[&str],
    work: &Path,
    edit: impl Fn(String) -> String,
) -> (Testbed, PathBuf, PathBuf) {
    let testbed = Testbed::up_with(personas, flags).unwrap();
    let repo = sglang_repository(work);
    for node in 0..personas.len() {
        install_repository(&testbed, &repo, &format!("node{node}"));
    }
    let manifest = overlay(&testbed, work, edit);
    let snapshot = snapshot(&testbed, &manifest);
    (testbed, manifest, snapshot)
}

/// `upgrade`, to be given its arguments, with the testbed's Python index as pip's and the
/// controller's cache in the testbed's directory.
pub fn upgrade_command(testbed: &Testbed) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_upgrade"));
    command
        .env("PIP_INDEX_URL", testbed.index("default").unwrap())
        .env("XDG_CACHE_HOME", testbed.dir().join("controller-cache"));
    command
}

pub fn upgrade(testbed: &Testbed, args: &[&str]) -> Output {
    upgrade_command(testbed).args(args).output().unwrap()
}

/// `upgrade VERB FILE --host NODE --ssh-config (the testbed's) ARGS…`.
pub fn on_host(testbed: &Testbed, verb: &str, file: &Path, node: &str, args: &[&str]) -> Output {
    let ssh_config = testbed.ssh_config().unwrap();
    let mut all = vec![
        verb,
        file.to_str().unwrap(),
        "--host",
        node,
        "--ssh-config",
        &ssh_config,
    ];
    all.extend_from_slice(args);
    upgrade(testbed, &all)
}

/// `upgrade apply --yes MANIFEST -i INVENTORY --ssh-config (the testbed's) --format json
/// ARGS…` and its report.
pub fn apply_inventory(
    testbed: &Testbed,
    manifest: &Path,
    inventory: &Path,
    args: &[&str],
) -> (Output, serde_json::Value) {
    let ssh_config = testbed.ssh_config().unwrap();
    let mut all = vec![
        "apply",
        "--yes",
        manifest.to_str().unwrap(),
        "-i",
        inventory.to_str().unwrap(),
        "--ssh-config",
        &ssh_config,
        "--format",
        "json",
    ];
    all.extend_from_slice(args);
    let output = upgrade(testbed, &all);
    let report = json_report(&output);
    (output, report)
}

/// The kinds of the steps an apply report says were applied, in order.
pub fn applied_steps(report: &serde_json::Value) -> Vec<&str> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["outcome"] == "applied")
        .map(|step| step["kind"].as_str().unwrap())
        .collect()
}

/// Whether every step of an apply report is a no-op or only checked.
pub fn changed_nothing(report: &serde_json::Value) -> bool {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|step| step["outcome"] == "no-op" || step["outcome"] == "checked")
}

/// The JSON report on `output`'s stdout (`null` when there is none).
pub fn json_report(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null)
}

pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn snapshot(testbed: &Testbed, manifest: &Path) -> PathBuf {
    snapshot_to(testbed, manifest, &manifest.with_extension("snapshot.json"))
}

/// An index snapshot of `manifest`'s indexes for Python 3.11, written to `out`.
pub fn snapshot_to(testbed: &Testbed, manifest: &Path, out: &Path) -> PathBuf {
    let output = upgrade(
        testbed,
        &[
            "index",
            "snapshot",
            manifest.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--python-version",
            "3.11",
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    out.to_path_buf()
}

/// Every file under a node's overlay upper directories, with its digest.
pub fn overlay_files(testbed: &Testbed, node: &str) -> Vec<(String, String)> {
    let upper = testbed.dir().join("nodes").join(node).join("upper");
    let output = Command::new("sh")
        .arg("-c")
        .arg("cd \"$1\" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum")
        .arg("files")
        .arg(&upper)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            line.split_once("  ")
                .map(|(digest, path)| (path.to_string(), digest.to_string()))
        })
        .collect()
}

/// The entry of `host` in a fleet report's `nodes`.
pub fn node<'a>(report: &'a serde_json::Value, host: &str) -> &'a serde_json::Value {
    let found = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|node| node["host"] == host);
    assert!(found.is_some(), "no `{host}` in {report:#}");
    found.unwrap()
}

pub fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
