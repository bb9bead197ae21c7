//! `upgrade plan` and `upgrade apply` over SSH on testbed nodes (issue 5): a
//! `cuda12.8` persona node is upgraded to the seed manifest (the testbed's runfile,
//! indexes, git repository and fixture server substituted by a test overlay of
//! `manifests/sglang-0.5.9-cu130.yaml`) and verified; a second apply changes no file
//! under the node's overlays; the seed's failures surface with their cause.
//!
//! Needs root (the testbed's namespaces); without it every test says why it is
//! skipped and passes.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::stack::{
    applied_steps, changed_nothing, install_repository, json_report, on_host, overlay,
    overlay_files, seeded_testbed, sglang_repository, snapshot, text, upgrade, work_dir,
};
use common::testbed::{Testbed, skip};

fn apply(
    testbed: &Testbed,
    manifest: &Path,
    snapshot: &Path,
    node: &str,
) -> (Output, serde_json::Value) {
    let output = on_host(
        testbed,
        "apply",
        manifest,
        node,
        &[
            "--yes",
            "--snapshot",
            snapshot.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    let report = json_report(&output);
    (output, report)
}

/// See: issue 5, "Done when": upgrade, verify, re-apply as a no-op, plan changes nothing.
#[test]
fn cuda12_8_node_converges_to_the_seed_stack_and_stays_converged() {
    if skip("cuda12_8_node_converges_to_the_seed_stack_and_stays_converged") {
        return;
    }
    let work = work_dir("apply-converge");
    let (testbed, manifest, snapshot) = seeded_testbed(&["cuda12.8"], &[], &work, |text| text);

    let (output, report) = apply(&testbed, &manifest, &snapshot, "node0");
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["verification"]["outcome"], "ready", "{report:#}");
    let applied = applied_steps(&report);
    assert_eq!(
        applied,
        ["toolkit", "pip", "source", "ldconfig", "env"],
        "{report:#}"
    );
    let freeze = testbed
        .ssh_ok("node0", "/opt/ml-env/bin/pip freeze")
        .unwrap();
    assert!(freeze.contains("torch==2.9.1+cu130"), "{freeze}");
    assert!(freeze.contains("sgl-kernel==0.3.21+cu130"), "{freeze}");
    assert!(freeze.contains("flashinfer-python==0.6.4"), "{freeze}");
    assert!(!freeze.contains("-cu12=="), "{freeze}");

    // A second apply mutates nothing and reports every step as a no-op.
    let before = overlay_files(&testbed, "node0");
    let (output, report) = apply(&testbed, &manifest, &snapshot, "node0");
    assert!(output.status.success(), "{}", text(&output));
    assert!(changed_nothing(&report), "{report:#}");
    assert_eq!(report["verification"]["outcome"], "ready", "{report:#}");
    assert_eq!(
        before,
        overlay_files(&testbed, "node0"),
        "a converged apply changed files"
    );

    // `plan` shows the same and changes nothing either.
    let plan = on_host(
        &testbed,
        "plan",
        &manifest,
        "node0",
        &["--snapshot", snapshot.to_str().unwrap()],
    );
    assert!(plan.status.success(), "{}", text(&plan));
    assert!(
        text(&plan).contains("node0: 0 to create, 0 to change, 0 to remove, 6 unchanged"),
        "{}",
        text(&plan)
    );
    assert_eq!(
        before,
        overlay_files(&testbed, "node0"),
        "plan changed files"
    );

    // A no-op apply makes one round trip for facts and none for its no-op steps (the
    // node lock is taken only when there is work).
    let output = on_host(
        &testbed,
        "apply",
        &manifest,
        "node0",
        &[
            "--yes",
            "--snapshot",
            snapshot.to_str().unwrap(),
            "--no-verify",
            "--format",
            "json",
        ],
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["round_trips"], 1, "{report:#}");

    // Host keys: strict by default, so an unknown node is refused; recorded on request.
    let ssh_config = testbed.ssh_config().unwrap();
    let known_hosts = work.join("known_hosts");
    std::fs::write(&known_hosts, "").unwrap();
    let probe = |extra: &[&str]| {
        let mut args = vec![
            "probe",
            "--host",
            "node0",
            "--ssh-config",
            &ssh_config,
            "--known-hosts",
            known_hosts.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        upgrade(&testbed, &args)
    };
    let refused = probe(&[]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("Failed to connect to `node0`"),
        "{}",
        text(&refused)
    );
    let accepted = probe(&["--accept-new-host-keys"]);
    assert!(accepted.status.success(), "{}", text(&accepted));
    assert!(
        std::fs::read_to_string(&known_hosts)
            .unwrap()
            .contains("ssh-ed25519")
    );

    // A saved plan replays while the node is unchanged, and is refused once it changed.
    let saved = work.join("plan.json");
    let output = on_host(
        &testbed,
        "plan",
        &manifest,
        "node0",
        &[
            "--snapshot",
            snapshot.to_str().unwrap(),
            "-o",
            saved.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    let replay = || {
        on_host(
            &testbed,
            "apply",
            &saved,
            "node0",
            &["--yes", "--no-verify"],
        )
    };
    let output = replay();
    assert!(output.status.success(), "{}", text(&output));
    testbed.stage("node0", &["driver", "580.95.05"]).unwrap();
    let output = replay();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("Refusing plan"), "{}", text(&output));
}

/// See: issue 5 — without the env step the cuDNN check fails, without the ldconfig
/// step `libnvrtc.so.13` is missing, and busy GPUs are refused with the holder named.
#[test]
fn the_seed_failures_surface_with_their_cause() {
    if skip("the_seed_failures_surface_with_their_cause") {
        return;
    }
    let testbed = Testbed::up(&["cuda12.8", "cuda12.8", "cuda12.8", "cuda12.8"]).unwrap();
    let work = work_dir("apply-failures");
    let repo = sglang_repository(&work);
    for node in ["node0", "node1", "node2", "node3"] {
        install_repository(&testbed, &repo, node);
    }
    let without = |section: &'static str| {
        move |text: String| {
            let start = text.find(&format!("\n{section}:\n")).unwrap() + 1;
            let end = text[start..]
                .find("\n\n")
                .map_or(text.len(), |offset| start + offset + 1);
            let mut text = text;
            text.replace_range(start..end, "");
            text
        }
    };

    // node0: staged with a cuDNN mismatch, and no env section.
    testbed.stage("node0", &["cudnn-mismatch"]).unwrap();
    let dir = work.join("no-env");
    let manifest = overlay(&testbed, &dir, without("env"));
    let snap = snapshot(&testbed, &manifest);
    let (output, report) = apply(&testbed, &manifest, &snap, "node0");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_eq!(report["verification"]["outcome"], "failed", "{report:#}");
    let lines = report["verification"]["last_lines"].to_string();
    assert!(
        lines.contains("Traceback") && lines.contains("cuDNN"),
        "{report:#}"
    );

    // node1: no ldconfig section.
    let dir = work.join("no-ldconfig");
    let manifest = overlay(&testbed, &dir, without("ldconfig"));
    let snap = snapshot(&testbed, &manifest);
    let (output, report) = apply(&testbed, &manifest, &snap, "node1");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        report["verification"]["last_lines"]
            .to_string()
            .contains("libnvrtc.so.13"),
        "{report:#}"
    );

    // node2: a process holds the GPUs.
    testbed.stage("node2", &["busy"]).unwrap();
    let dir = work.join("busy");
    let manifest = overlay(&testbed, &dir, |text| text);
    let snap = snapshot(&testbed, &manifest);
    let (output, report) = apply(&testbed, &manifest, &snap, "node2");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_eq!(report["verification"]["outcome"], "refused", "{report:#}");
    let holders = report["verification"]["holders"]
        .as_array()
        .expect("holders");
    assert!(!holders.is_empty(), "{report:#}");
    assert!(
        report["verification"]["reason"]
            .as_str()
            .unwrap()
            .contains("pid"),
        "{report:#}"
    );

    // node3: shell metacharacters, quotes and `$(…)` in every string field that reaches
    // the node run nothing (control characters are refused by validation).
    let hostile = |tag: &str| {
        format!(
            "x'\"; touch /tmp/pwned-{tag}; echo \"$(touch /tmp/pwned-{tag}-sub)`touch /tmp/pwned-{tag}-tick` next"
        )
    };
    let yaml = |value: String| serde_json::to_string(&value).unwrap();
    let dir = work.join("hostile");
    let manifest = overlay(&testbed, &dir, |text| {
        text.replace(
            "  NCCL_DEBUG: WARN\n",
            &format!(
                "  NCCL_DEBUG: WARN\n  HOSTILE: {}\n  HOSTILE_SECRET: {{ value: {}, secret: true }}\n",
                yaml(hostile("env")),
                yaml(hostile("secret"))
            ),
        )
        .replace(
            "ready: The server is fired up",
            &format!("ready: {}", yaml(format!("The server is fired up{}", hostile("ready")))),
        )
        .replace("fail: [Traceback]", &format!("fail: [Traceback, {}]", yaml(hostile("fail"))))
        // The ready pattern never appears: give up early.
        .replace("timeout: 10m", "timeout: 15s")
        .replace(
            "    - /usr/local/cuda-13.0/targets/x86_64-linux/lib\n",
            &format!(
                "    - /usr/local/cuda-13.0/targets/x86_64-linux/lib\n    - {}\n",
                yaml(format!("/opt/{}", hostile("ldpath")))
            ),
        )
    });
    let snap = snapshot(&testbed, &manifest);
    let (output, _) = apply(&testbed, &manifest, &snap, "node3");
    let shown = text(&output);
    assert!(
        !shown.contains("pwned-secret"),
        "a secret value was shown: {shown}"
    );
    let canaries = testbed
        .ssh_ok("node3", "ls /tmp | grep -c pwned || true")
        .unwrap();
    assert_eq!(
        canaries.trim(),
        "0",
        "something was executed on the node: {shown}"
    );
    let host = Command::new("sh")
        .arg("-c")
        .arg("ls /tmp | grep -c pwned || true")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&host.stdout).trim(),
        "0",
        "something was executed on the host"
    );
}

/// The only file on `node` that holds `secret` is the env step's root-only secrets file
/// (every file under `/etc /opt /root /var /usr/local /tmp` searched).
fn assert_secret_only_in_a_root_only_file(testbed: &Testbed, node: &str, secret: &str) {
    let script = format!(
        "grep -rlsF -- '{secret}' /etc /opt /root /var /usr/local /tmp 2>/dev/null | while read -r f; do stat -c '%a %U:%G %n' \"$f\"; done; true"
    );
    let output = testbed.ssh_ok(node, &script).unwrap();
    let holding: Vec<&str> = output.lines().collect();
    assert_eq!(holding.len(), 1, "{holding:?}");
    assert!(
        holding[0].starts_with("600 root:root /etc/cuda-upgrade/secrets/env-"),
        "{holding:?}"
    );
}

/// See: issue 8, "Done when": a `fresh` node (no toolkit, no environment; Debian's
/// symlinked `sitecustomize.py` in its base interpreter) converges to the seed stack in
/// one apply, its interpreter sees every variable, a second apply is all no-op, the
/// link stays a link to a 0644 file and no secret value is in a file others can read.
#[test]
fn fresh_node_converges_in_one_apply() {
    if skip("fresh_node_converges_in_one_apply") {
        return;
    }
    let testbed = Testbed::up(&["fresh"]).unwrap();
    let work = work_dir("apply-fresh");
    let repo = sglang_repository(&work);
    install_repository(&testbed, &repo, "node0");
    let secret = "hf_fresh_secret_value";
    let manifest = overlay(&testbed, &work, |text| {
        text.replace(
            "base_python: /usr/bin/python3",
            "base_python: /root/.pyenv/versions/3.11.7/bin/python3",
        )
        .replace(
            "  NCCL_DEBUG: WARN\n",
            &format!("  NCCL_DEBUG: WARN\n  HF_TOKEN: {{ value: {secret}, secret: true }}\n"),
        )
    });
    let snapshot = snapshot(&testbed, &manifest);

    let (output, report) = apply(&testbed, &manifest, &snapshot, "node0");
    assert!(output.status.success(), "{}", text(&output));
    assert!(!text(&output).contains(secret), "{}", text(&output));
    assert_eq!(report["verification"]["outcome"], "ready", "{report:#}");
    let applied = applied_steps(&report);
    assert_eq!(
        applied,
        ["python-env", "toolkit", "pip", "source", "ldconfig", "env"],
        "{report:#}"
    );

    // The new interpreter (root) sees every variable, the secret included.
    let seen = testbed
        .ssh_ok(
            "node0",
            "/opt/ml-env/bin/python3 -c 'import os; print(os.environ.get(\"CUDA_HOME\"), os.environ.get(\"NCCL_DEBUG\"), os.environ.get(\"SGLANG_DISABLE_CUDNN_CHECK\"), os.environ.get(\"HF_TOKEN\"))'",
        )
        .unwrap();
    assert_eq!(seen.trim(), format!("/usr/local/cuda-13.0 WARN 1 {secret}"));

    // Debian's layout survives: a link to a root-owned 0644 file holding the block.
    let stdlib = "/root/.pyenv/versions/3.11.7/lib/python3.11/sitecustomize.py";
    let layout = testbed
        .ssh_ok(
            "node0",
            &format!("stat -c '%F %N' {stdlib}; stat -c '%a %U:%G' /etc/python3.11/sitecustomize.py; grep -c 'cuda-upgrade managed block' /etc/python3.11/sitecustomize.py"),
        )
        .unwrap();
    assert_eq!(
        layout.trim(),
        format!("symbolic link '{stdlib}' -> '/etc/python3.11/sitecustomize.py'\n644 root:root\n2"),
    );
    assert_secret_only_in_a_root_only_file(&testbed, "node0", secret);
    let directory = testbed
        .ssh_ok(
            "node0",
            "stat -c '%a %U' /etc/cuda-upgrade/secrets /var/tmp/cuda-upgrade",
        )
        .unwrap();
    assert_eq!(directory.trim(), "700 root\n700 root");

    // A second apply is all no-op and changes no file.
    let before = overlay_files(&testbed, "node0");
    let (output, report) = apply(&testbed, &manifest, &snapshot, "node0");
    assert!(output.status.success(), "{}", text(&output));
    assert!(changed_nothing(&report), "{report:#}");
    assert_eq!(before, overlay_files(&testbed, "node0"));
}

/// See: issue 8, items 1 to 4, on the `ubuntu` persona shaped like the real H200: the
/// loader finds `libnvrtc.so.13` through `/usr/local/cuda/…` (a link to `cuda-13.0`
/// listed first by `000_cuda.conf`), which is the manifest's directory; the first apply
/// converges; rewritten files keep owner, group and mode; the stdlib
/// `sitecustomize.py` stays a link to a 0644 file; the secret stays root-only.
#[test]
fn ubuntu_node_converges_first_time_and_keeps_what_it_rewrites() {
    if skip("ubuntu_node_converges_first_time_and_keeps_what_it_rewrites") {
        return;
    }
    let testbed = Testbed::up(&["ubuntu"]).unwrap();
    let work = work_dir("apply-ubuntu");
    let secret = "hf_ubuntu_secret_value";
    let manifest = work.join("smoke.yaml");
    std::fs::write(
        &manifest,
        format!(
            "schema: 1\nname: ubuntu-smoke\ntarget:\n  python: /opt/torch/.venv/bin/python3\n  gpu_arch: [sm_90]\n  env_scope: interpreter\n\
             ldconfig:\n  file: /etc/ld.so.conf.d/zz-cuda-13-0-upgrade.conf\n  paths: [/usr/local/cuda-13.0/targets/x86_64-linux/lib]\n  expect: [libnvrtc.so.13]\n\
             env:\n  CUDA_HOME: /usr/local/cuda-13.0\n  HF_TOKEN: {{ value: {secret}, secret: true }}\n"
        ),
    )
    .unwrap();
    // An existing conf file with its own group and mode: the rewrite keeps both.
    testbed
        .ssh_ok(
            "node0",
            "printf '/opt/old\\n' > /etc/ld.so.conf.d/zz-cuda-13-0-upgrade.conf && chgrp adm /etc/ld.so.conf.d/zz-cuda-13-0-upgrade.conf && chmod 640 /etc/ld.so.conf.d/zz-cuda-13-0-upgrade.conf",
        )
        .unwrap();
    let run = || {
        let output = on_host(
            &testbed,
            "apply",
            &manifest,
            "node0",
            &["--yes", "--format", "json"],
        );
        let report = json_report(&output);
        (output, report)
    };
    let (output, report) = run();
    assert!(output.status.success(), "{}", text(&output));
    let outcomes: Vec<(&str, &str)> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["kind"] != "abi-check")
        .map(|step| {
            (
                step["kind"].as_str().unwrap(),
                step["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("python-env", "no-op"),
            ("ldconfig", "applied"),
            ("env", "applied")
        ],
        "{report:#}"
    );
    let kept = testbed
        .ssh_ok(
            "node0",
            "stat -c '%a %U:%G' /etc/ld.so.conf.d/zz-cuda-13-0-upgrade.conf; stat -c '%F' /root/.pyenv/versions/3.11.7/lib/python3.11/sitecustomize.py; stat -c '%a %U:%G' /etc/python3.11/sitecustomize.py; grep -c -e 'cuda-upgrade managed block' -e CUDA_HOME /etc/python3.11/sitecustomize.py",
        )
        .unwrap();
    assert_eq!(kept.trim(), "640 root:adm\nsymbolic link\n644 root:root\n3");
    // The journal: root-only, the run's start, each changed step with the files it
    // replaced and their before-images, and its end.
    let journal = testbed
        .ssh_ok(
            "node0",
            "stat -c '%a %U' /var/lib/cuda-upgrade/journal.jsonl; cat /var/lib/cuda-upgrade/journal.jsonl",
        )
        .unwrap();
    let (mode, lines) = journal.split_once('\n').unwrap();
    assert_eq!(mode, "600 root");
    let entries: Vec<serde_json::Value> = lines
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let events: Vec<String> = entries
        .iter()
        .map(|entry| {
            format!(
                "{}{}",
                entry["event"].as_str().unwrap(),
                entry["step"]["kind"]
                    .as_str()
                    .map(|kind| format!(":{kind}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        events,
        ["start", "step:ldconfig", "step:env", "end"],
        "{journal}"
    );
    assert_eq!(entries[3]["ok"], true);
    assert_eq!(
        entries[1]["written"][0]["real_path"],
        "/etc/ld.so.conf.d/zz-cuda-13-0-upgrade.conf"
    );
    assert!(entries[1]["written"][0]["before"].is_string(), "{journal}");
    let env_written: Vec<&str> = entries[2]["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| file["real_path"].as_str().unwrap())
        .collect();
    assert!(
        env_written.contains(&"/etc/python3.11/sitecustomize.py"),
        "{journal}"
    );
    assert_secret_only_in_a_root_only_file(&testbed, "node0", secret);
    let seen = testbed
        .ssh_ok(
            "node0",
            "/opt/torch/.venv/bin/python3 -c 'import os; print(os.environ.get(\"HF_TOKEN\"))'",
        )
        .unwrap();
    assert_eq!(seen.trim(), secret);

    let (output, report) = run();
    assert!(output.status.success(), "{}", text(&output));
    assert!(changed_nothing(&report), "{report:#}");

    // The node lock: an apply in progress elsewhere (its lock left on the node) refuses
    // a second one that has work to do, naming the holder; a holder on this controller
    // that no longer runs is called stale; `--break-lock` takes the node, and the lock
    // is given back.
    let lock = |holder: &str| {
        testbed
            .ssh_ok(
                "node0",
                &format!(
                    "rm -f /etc/ld.so.conf.d/zz-cuda-13-0-upgrade.conf && mkdir -p /run/cuda-upgrade/apply.lock && printf '%s\\n' '{holder}' > /run/cuda-upgrade/apply.lock/holder && echo other-token > /run/cuda-upgrade/apply.lock/token"
                ),
            )
            .unwrap()
    };
    lock(r#"{"controller":"other-controller","user":"ops","pid":4242,"started":1796240701}"#);
    let (output, _) = run();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("another apply holds it (user `ops` on `other-controller`, pid 4242, since 2026-12-02 19:45:01 UTC)"),
        "{}",
        text(&output)
    );
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    lock(&format!(
        r#"{{"controller":"{}","user":"ops","pid":4194303,"started":1796240701}}"#,
        here.trim()
    ));
    let (output, _) = run();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("the lock is stale"),
        "{}",
        text(&output)
    );
    let output = on_host(
        &testbed,
        "apply",
        &manifest,
        "node0",
        &["--yes", "--break-lock"],
    );
    assert!(output.status.success(), "{}", text(&output));
    let left = testbed
        .ssh_ok(
            "node0",
            "ls /run/cuda-upgrade/ | grep -c apply.lock || true",
        )
        .unwrap();
    assert_eq!(left.trim(), "0", "the lock was not given back");

    // `status`: the node matches the manifest, and its journal's last apply converged it.
    let status = |format: &str| {
        on_host(
            &testbed,
            "status",
            &manifest,
            "node0",
            &["--format", format],
        )
    };
    let output = status("text");
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("node0: matches `ubuntu-smoke`")
            && text(&output).contains("converged")
            && text(&output).contains("ldconfig applied"),
        "{}",
        text(&output)
    );
    testbed
        .ssh_ok("node0", "rm -f /etc/ld.so.conf.d/zz-cuda-13-0-upgrade.conf")
        .unwrap();
    let output = status("json");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["matches"], false);
    assert_eq!(report["pending"], serde_json::json!(["ldconfig"]));
    assert_eq!(report["last_run"]["ok"], true);
}
