//! The `lock` verb through the binary: offline on the embedded snapshot, exit 3 with a
//! report naming the cause when the manifest cannot be resolved.

use std::path::Path;
use std::process::Command;

fn upgrade(arguments: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_upgrade"))
        .args(arguments)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn lock_of_the_shipped_manifest_pins_the_cu130_stack() {
    let (code, stdout, stderr) = upgrade(&[
        "lock",
        "manifests/sglang-0.5.9-cu130.yaml",
        "--format",
        "json",
        "-o",
        "-",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let lock: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let packages = lock["packages"].as_array().unwrap();
    let find = |name: &str| {
        packages
            .iter()
            .find(|package| package["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    assert_eq!(find("torch")["version"], "2.9.1+cu130");
    assert_eq!(find("torch")["index"], "pytorch-cu130");
    assert_eq!(find("sgl-kernel")["version"], "0.3.21+cu130");
    assert_eq!(find("flashinfer-python")["version"], "0.6.4");
    assert_eq!(find("flashinfer-cubin")["version"], "0.6.4");
    assert_eq!(find("sglang")["source"], "git");
    assert!(
        packages
            .iter()
            .all(|package| !package["name"].as_str().unwrap().ends_with("-cu12"))
    );
    assert_eq!(lock["assumed"]["toolkit"], "13.0.1");
}

#[test]
fn unresolvable_manifest_exits_3_with_the_cause() {
    let (code, _, stderr) = upgrade(&[
        "lock",
        "solver-tests/scenarios/torch-2.10-with-sgl-kernel-0.3.21/manifest.yaml",
        "--snapshot",
        "manifests/snapshots/sglang-0.5.9-cu130.json",
        "-o",
        "-",
    ]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.starts_with("error: Failed to resolve"), "{stderr}");
    assert!(
        stderr.contains("was built against `torch==2.9.1`"),
        "{stderr}"
    );
    assert!(stderr.contains("\nhint: "), "{stderr}");
    // A report this short reads the same with `--verbose`.
    let (code, _, verbose) = upgrade(&[
        "lock",
        "-v",
        "solver-tests/scenarios/torch-2.10-with-sgl-kernel-0.3.21/manifest.yaml",
        "--snapshot",
        "manifests/snapshots/sglang-0.5.9-cu130.json",
        "-o",
        "-",
    ]);
    assert_eq!(code, 3, "{verbose}");
    assert_eq!(verbose, stderr);
}

/// `--find-links DIR` adds an open index of local files: a package the snapshot misses
/// resolves from it, and the lock names the `find-links` index.
#[test]
fn lock_reads_a_find_links_directory() {
    let manifest = "solver-tests/scenarios/vllm-snapshot-miss/manifest.yaml";
    // On the embedded snapshot's file, which misses vllm (without a source flag the
    // manifest, whose packages the snapshot does not record, would resolve live).
    let snapshot = "manifests/snapshots/sglang-0.5.9-cu130.json";
    let (code, _, stderr) = upgrade(&["lock", manifest, "--snapshot", snapshot, "-o", "-"]);
    assert_eq!(code, 3, "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let wheel = super::support::wheel("vllm", "0.0.1", &["packaging"], None, &[], 0);
    fs_err::write(dir.path().join(&wheel.filename), &wheel.bytes).unwrap();
    let dir_text = dir.path().display().to_string();
    let (code, stdout, stderr) = upgrade(&["lock", manifest, "--find-links", &dir_text, "-o", "-"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("vllm==0.0.1  # find-links: vllm-0.0.1-py3-none-any.whl"),
        "{stdout}"
    );
    assert!(stdout.contains("packaging=="), "{stdout}");
}
