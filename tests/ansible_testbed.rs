//! `examples/ansible/site.yml` against testbed nodes (issue 10, item 9): Ansible copies
//! the `upgrade` binary, a testbed overlay of the seed manifest (with its patch and an
//! index snapshot) to two `cuda12.8` nodes, runs `upgrade apply --local --format json`
//! on each and collects the outcomes; both nodes converge (torch 2.9.1+cu130, the
//! verification launch ready), a second run changes nothing, and a node whose
//! verification is refused fails alone with its outcome collected.
//!
//! Needs root (the testbed's namespaces) and ansible-core, which is installed with pip,
//! by name, from the index pip is configured with into
//! `$CARGO_TARGET_TMPDIR/ansible-venv` when missing (kept for later runs). Without root,
//! or when pip cannot install it, the test says why it is skipped and passes.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::stack::{
    applied_steps, changed_nothing, install_repository, overlay, sglang_repository, snapshot_to,
    work_dir,
};
use common::testbed::{Run, Testbed, command_output_within, repo_root, skip};

/// How long installing ansible-core, or one playbook run, may take.
const BOUND: Duration = Duration::from_secs(480);

/// The interpreter Ansible's modules run with on the nodes.
const NODE_PYTHON: &str = "/root/.pyenv/versions/3.11.7/bin/python3";

/// `ansible-playbook` from the shared venv, installing ansible-core into it when
/// missing; `Err` says why it is not available.
fn ansible_playbook() -> Result<PathBuf, String> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ansible-venv");
    let playbook = venv.join("bin/ansible-playbook");
    let works = |path: &Path| {
        path.exists()
            && Command::new(path)
                .arg("--version")
                .output()
                .is_ok_and(|output| output.status.success())
    };
    if works(&playbook) {
        return Ok(playbook);
    }
    let _ = std::fs::remove_dir_all(&venv);
    let created = command_output_within(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        BOUND,
    )?;
    if !created.success() {
        return Err(format!("`python3 -m venv` failed\n{}", created.describe()));
    }
    let started = Instant::now();
    let installed = command_output_within(
        Command::new(venv.join("bin/python3")).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "ansible-core",
        ]),
        BOUND,
    )?;
    if !installed.success() || !works(&playbook) {
        let _ = std::fs::remove_dir_all(&venv);
        let tail: Vec<&str> = installed.stderr.lines().rev().take(3).collect();
        return Err(format!(
            "pip could not install ansible-core from its configured index: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    eprintln!(
        "installed ansible-core into {} in {:.1} s",
        venv.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(playbook)
}

/// The inventory of the testbed's nodes, in Ansible's YAML format.
fn inventory(testbed: &Testbed, nodes: &[&str], path: &Path) {
    let mut text = String::from("all:\n  hosts:\n");
    for node in nodes {
        text.push_str(&format!("    {node}: {{}}\n"));
    }
    text.push_str(&format!(
        "  vars:\n    ansible_python_interpreter: {NODE_PYTHON}\n    ansible_ssh_common_args: -F {}\n    # The nodes have no sudo: become goes through su (root to root).\n    ansible_become_method: ansible.builtin.su\n",
        testbed.ssh_config().unwrap()
    ));
    std::fs::write(path, text).unwrap();
}

/// The `PLAY RECAP` counter `name` (e.g. `changed`) of `host`.
fn recap(run: &Run, host: &str, name: &str) -> Option<u32> {
    let line = run
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("PLAY RECAP"))
        .find(|line| line.split_whitespace().next() == Some(host))?;
    line.split_whitespace().find_map(|field| {
        field
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
            .and_then(|value| value.parse().ok())
    })
}

fn outcome(dir: &Path, host: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(format!("{host}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// See: issue 10, item 9 — the playbook converges two nodes with the node-local unit,
/// collects their outcomes on the controller, a second run is all no-op, and a failing
/// node fails alone.
#[test]
fn playbook_converges_two_nodes_and_reruns_as_a_no_op() {
    if skip("playbook_converges_two_nodes_and_reruns_as_a_no_op") {
        return;
    }
    let started = Instant::now();
    let playbook = match ansible_playbook() {
        Ok(playbook) => playbook,
        Err(reason) => {
            let _ = writeln!(
                std::io::stderr(),
                "skipping playbook_converges_two_nodes_and_reruns_as_a_no_op: {reason}"
            );
            return;
        }
    };
    let nodes = ["node0", "node1"];
    let testbed = Testbed::up(&["cuda12.8", "cuda12.8"]).unwrap();
    let work = work_dir("ansible-site");
    let repo = sglang_repository(&work);
    for node in nodes {
        install_repository(&testbed, &repo, node);
    }
    let manifest = overlay(&testbed, &work.join("manifest"), |text| text);
    // An index snapshot of the overlay's indexes, so that every node resolves the same.
    let snapshot = snapshot_to(
        &testbed,
        &manifest,
        &manifest.with_file_name("snapshot.json"),
    );
    let inventory_file = work.join("inventory.yml");
    inventory(&testbed, &nodes, &inventory_file);
    // What an operator copies: a stripped binary (the debug build is 150 MB with symbols).
    let binary = work.join("upgrade");
    let stripped = Command::new("strip")
        .arg("-o")
        .arg(&binary)
        .arg(env!("CARGO_BIN_EXE_upgrade"))
        .status()
        .is_ok_and(|status| status.success());
    if !stripped {
        std::fs::copy(env!("CARGO_BIN_EXE_upgrade"), &binary).unwrap();
    }
    let outcomes = work.join("outcomes");
    let examples = repo_root().join("examples/ansible");
    let ansible = || {
        let began = Instant::now();
        let run = command_output_within(
            Command::new(&playbook)
                .arg("-i")
                .arg(&inventory_file)
                .arg(examples.join("site.yml"))
                .arg("-e")
                .arg(format!("upgrade_manifest={}", manifest.display()))
                .arg("-e")
                .arg(format!("upgrade_snapshot={}", snapshot.display()))
                .arg("-e")
                .arg(format!("upgrade_binary={}", binary.display()))
                .arg("-e")
                .arg(format!("upgrade_outcomes_dir={}", outcomes.display()))
                .current_dir(&examples)
                .env("ANSIBLE_CONFIG", examples.join("ansible.cfg"))
                .env("ANSIBLE_HOME", work.join("ansible-home"))
                .env("ANSIBLE_LOCAL_TEMP", work.join("ansible-tmp"))
                .env("ANSIBLE_NOCOLOR", "1"),
            BOUND,
        )
        .unwrap();
        eprintln!(
            "ansible-playbook site.yml: {:.1} s",
            began.elapsed().as_secs_f64()
        );
        run
    };

    let first = ansible();
    assert!(first.success(), "{}", first.describe());
    for node in nodes {
        let report = outcome(&outcomes, node);
        assert_eq!(report["ok"], true, "{report:#}");
        assert_eq!(report["node"], node, "{report:#}");
        assert_eq!(report["verification"]["outcome"], "ready", "{report:#}");
        let applied = applied_steps(&report);
        assert_eq!(
            applied,
            ["toolkit", "pip", "source", "ldconfig", "env"],
            "{report:#}"
        );
        assert!(
            recap(&first, node, "changed").is_some_and(|changed| changed > 0),
            "{}",
            first.stdout
        );
        let torch = testbed
            .ssh_ok(
                node,
                "/opt/ml-env/bin/python3 -c 'import torch; print(torch.__version__)'",
            )
            .unwrap();
        assert_eq!(torch.trim(), "2.9.1+cu130", "{node}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(outcomes.join("summary.json")).unwrap())
            .unwrap();
    for node in nodes {
        assert_eq!(summary[node]["ok"], true, "{summary:#}");
    }

    // The second run: nothing to copy, every step a no-op, no task changed.
    let second = ansible();
    assert!(second.success(), "{}", second.describe());
    for node in nodes {
        let report = outcome(&outcomes, node);
        assert_eq!(report["ok"], true, "{report:#}");
        assert!(changed_nothing(&report), "{report:#}");
        assert_eq!(
            recap(&second, node, "changed"),
            Some(0),
            "{}",
            second.stdout
        );
        assert_eq!(recap(&second, node, "failed"), Some(0), "{}", second.stdout);
    }
    // A node whose verification is refused (a process holds its GPUs) fails alone: its
    // outcome is kept and summarised, the other node stays converged.
    testbed.stage("node1", &["busy"]).unwrap();
    let third = ansible();
    assert!(!third.success(), "{}", third.describe());
    let report = outcome(&outcomes, "node1");
    assert_eq!(report["ok"], false, "{report:#}");
    assert_eq!(report["verification"]["outcome"], "refused", "{report:#}");
    assert_eq!(
        recap(&third, "node1", "failed"),
        Some(1),
        "{}",
        third.stdout
    );
    assert!(
        third.stdout.contains("node1 did not converge"),
        "{}",
        third.stdout
    );
    assert_eq!(outcome(&outcomes, "node0")["ok"], true);
    assert_eq!(
        recap(&third, "node0", "failed"),
        Some(0),
        "{}",
        third.stdout
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(outcomes.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["node0"]["ok"], true, "{summary:#}");
    assert_eq!(summary["node1"]["ok"], false, "{summary:#}");
    eprintln!(
        "playbook test: {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
}
