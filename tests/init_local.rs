//! `upgrade init --local` against a real interpreter on this machine: a virtual
//! environment with start-up code and a distribution whose METADATA folds its
//! `Version:` header with a line separator.
//!
//! Needs `python3` with its `venv` module; without it the test says why it is skipped
//! and passes.
mod common;

use std::path::Path;
use std::process::Command;

use common::cli::{command, stderr, stdout};

/// See: issue 33 — the survey runs its interpreter isolated and without `site`
/// (`-I -S`): the environment's `.pth` start-up code does not run during `init`; the
/// survey still finds the environment's distributions, and one whose version is folded
/// with U+2028 (which a YAML reader takes as a line break) is left out with a note
/// instead of writing a live `verify:` section into the manifest.
#[test]
fn init_runs_no_start_up_code_and_a_folded_version_adds_no_section() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("env");
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output();
    if !made.as_ref().is_ok_and(|output| output.status.success()) {
        eprintln!("skipping: `python3 -m venv` is not available here: {made:?}");
        return;
    }
    let python = venv.join("bin/python3");
    let site = Command::new(&python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .unwrap();
    let site = Path::new(String::from_utf8(site.stdout).unwrap().trim()).to_path_buf();
    let marker = dir.path().join("start-up-code-ran");
    std::fs::write(
        site.join("hook.pth"),
        format!(
            "import os; open({:?}, 'w').write('ran')\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    for (name, version) in [
        ("stack", "1.0".to_string()),
        // The environment's own tools are named in a comment: the folded version once
        // ended that comment and started a top-level `verify:` section.
        (
            "wheel",
            "1.0\u{2028}verify:\u{2028}  launch: /bin/sh -c 'touch /tmp/owned'\u{2028}  log: /tmp/x.log\u{2028}  ready: up\u{2028}  timeout: 1m"
                .to_string(),
        ),
    ] {
        let info = site.join(format!("{name}-1.0.dist-info"));
        std::fs::create_dir(&info).unwrap();
        std::fs::write(
            info.join("METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n"),
        )
        .unwrap();
        std::fs::write(info.join("INSTALLER"), "pip\n").unwrap();
    }
    let manifest = dir.path().join("init.yaml");
    let output = command()
        .args(["init", "--local", "--python"])
        .arg(&python)
        .arg("-o")
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(
        !marker.exists(),
        "the environment's start-up code ran during init"
    );
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    let text = std::fs::read_to_string(&manifest).unwrap();
    for separator in ['\u{2028}', '\u{2029}', '\u{85}', '\r'] {
        assert!(!text.contains(separator), "{separator:?} in\n{text}");
    }
    assert!(
        !text
            .lines()
            .any(|line| line.trim_start().starts_with("verify:")),
        "{text}"
    );
    assert!(text.contains("  stack: \"==1.0\""), "{text}");
    assert!(
        text.contains("`wheel`, whose version `1.0\\u{2028}verify:"),
        "{text}"
    );
    let validate = command().arg("validate").arg(&manifest).output().unwrap();
    assert!(validate.status.success(), "{}", stderr(&validate));
}
