//! `plan` and `apply` as a reviewer reads them: exit codes that tell the truth, a
//! package diff that shows every downgrade and removal, and an apply that asks.
//!
//! See: issue 19 — each test here failed before it: a blocked plan exited 0, the
//! summary had no blocked count, removals were counted as `0 to remove`, a downgrade
//! hid inside "and 133 more", and apply changed a node without asking.
mod common;

use std::path::Path;
use std::process::Output;

use common::cli::{H200_FACTS, SEED, command, on_h200, stderr, stdout, upgrade, venv_manifest};

/// A snapshot with one release of torch, 2.9.1, hashed: the H200's venv has 2.11.0.
fn torch_snapshot(dir: &Path) -> std::path::PathBuf {
    common::cli::torch_snapshot(dir, "snapshot", &["2.9.1"])
}

/// `plan MANIFEST --facts H200 --snapshot SNAPSHOT EXTRA…`.
fn plan_on_h200(manifest: &Path, snapshot: &Path, extra: &[&str]) -> Output {
    let snapshot = snapshot.display().to_string();
    let mut args = vec!["--snapshot", snapshot.as_str()];
    args.extend_from_slice(extra);
    on_h200("plan", manifest, &args)
}

const TORCH_ONLY: &str = "indexes:\n  - name: local\n    url: http://127.0.0.1:9/simple/\npackages:\n  torch: \"==2.9.1\"\n";

/// The README's main job: two blocked steps (the toolkit over one installed by other
/// means, torchaudio's missing sha256). The plan is printed, counts them, and exits 1.
#[test]
fn a_blocked_plan_fails_and_counts_its_blocked_steps() {
    let output = upgrade(&["plan", SEED, "--facts", H200_FACTS]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}{}", stderr(&output));
    assert!(
        text.lines()
            .next()
            .unwrap()
            .ends_with("0 unchanged, 2 blocked"),
        "{text}"
    );
    assert!(
        text.contains("blocked: 2 steps (toolkit, pip): `apply` refuses this node"),
        "{text}"
    );
    let output = upgrade(&["plan", SEED, "--facts", H200_FACTS, "--format", "json"]);
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["summary"]["blocked"], 2, "{json}");
    assert_eq!(json["summary"]["packages"]["install"], 168, "{json}");
    // A blocked plan is an error for `--detailed-exitcode` too, never "changes".
    let output = upgrade(&["plan", SEED, "--facts", H200_FACTS, "--detailed-exitcode"]);
    assert_eq!(output.status.code(), Some(1));
}

/// Terraform's contract: 0 nothing to do, 2 changes, 1 error.
#[test]
fn detailed_exitcode_tells_nothing_to_do_from_changes() {
    let dir = tempfile::tempdir().unwrap();
    let converged = venv_manifest(dir.path(), "converged", "");
    let plan = |manifest: &Path, detailed: bool| {
        let mut args = vec!["plan", manifest.to_str().unwrap(), "--facts", H200_FACTS];
        if detailed {
            args.push("--detailed-exitcode");
        }
        upgrade(&args)
    };
    assert_eq!(plan(&converged, true).status.code(), Some(0));
    let changes = venv_manifest(
        dir.path(),
        "changes",
        "env:\n  CUDA_HOME: /usr/local/cuda-13.0\n",
    );
    let output = plan(&changes, true);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert_eq!(plan(&changes, false).status.code(), Some(0));
    let missing = dir.path().join("missing.yaml");
    // An error is 1 with `--detailed-exitcode` (2 means changes), 2 without it.
    assert_eq!(plan(&missing, true).status.code(), Some(1));
    assert_eq!(plan(&missing, false).status.code(), Some(2));
}

/// See: issue 17 — `plan --fetch controller` shows what `apply --fetch controller` does:
/// the file sent from the controller and pip installing without an index.
#[test]
fn plan_shows_what_the_controller_sends() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = venv_manifest(dir.path(), "sent", TORCH_ONLY);
    let snapshot = torch_snapshot(dir.path());
    let plan = |fetch: &str| {
        let output = plan_on_h200(&manifest, &snapshot, &["--fetch", fetch]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output)
    };
    let sent = plan("controller");
    assert!(
        sent.contains("send torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl from index `local`")
            && sent.contains("fetched once on the controller")
            && sent.contains("--no-index --find-links /var/tmp/cuda-upgrade/wheels"),
        "{sent}"
    );
    let fetched = plan("node");
    assert!(
        !fetched.contains("fetched once on the controller") && !fetched.contains("--no-index"),
        "{fetched}"
    );
}

/// `--installer uv` shows the controller's uv sent and run; a uv that cannot be read, is
/// no executable, or is built for another machine than the node's is refused with its
/// path, before anything is planned.
#[test]
fn plan_with_uv_sends_it_and_refuses_a_binary_no_node_can_run() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = venv_manifest(dir.path(), "uv", TORCH_ONLY);
    let snapshot = torch_snapshot(dir.path());
    let plan = |uv: &Path| {
        let uv = uv.display().to_string();
        plan_on_h200(&manifest, &snapshot, &["--installer", "uv", "--uv", &uv])
    };
    // Any x86_64 executable stands for uv here: the plan only names it.
    let output = plan(Path::new(env!("CARGO_BIN_EXE_upgrade")));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("/var/lib/cuda-upgrade/tools/uv")
            && text.contains("/var/lib/cuda-upgrade/tools/uv pip install --python"),
        "{text}"
    );
    let missing = dir.path().join("missing-uv");
    let output = plan(&missing);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("cannot read the uv binary {}", missing.display())),
        "{}",
        stderr(&output)
    );
    let script = dir.path().join("uv-script");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let output = plan(&script);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is not a Linux executable"),
        "{}",
        stderr(&output)
    );
    // A 64-bit ELF header for aarch64: the H200 node is x86_64.
    let mut header = vec![0u8; 64];
    header[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    header[16] = 2;
    header[18] = 0xb7;
    header[20] = 1;
    header[52] = 64;
    let arm = dir.path().join("uv-aarch64");
    std::fs::write(&arm, header).unwrap();
    let output = plan(&arm);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is built for aarch64 and the node is x86_64"),
        "{}",
        stderr(&output)
    );
}

/// The venv holds torch 2.11.0 and 195 other packages; the lock names torch 2.9.1 only.
/// The header counts every removal, the downgrade is listed by name, and JSON carries
/// every list in full.
#[test]
fn downgrades_and_removals_are_always_shown() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = venv_manifest(dir.path(), "downgrade", TORCH_ONLY);
    let snapshot = torch_snapshot(dir.path());
    let plan = |extra: &[&str]| plan_on_h200(&manifest, &snapshot, extra);
    let output = plan(&[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    assert!(
        text.contains("  packages: 0 to install, 0 to upgrade, 1 to downgrade, 193 to remove\n"),
        "{text}"
    );
    assert!(
        text.contains("    downgrade torch 2.11.0 → 2.9.1\n"),
        "{text}"
    );
    assert!(text.contains("    remove    absl-py 2.5.0\n"), "{text}");
    assert!(
        text.contains("… and 173 more to remove (`-v` lists every package)"),
        "{text}"
    );
    assert!(!text.contains("and 133 more"), "{text}");
    let verbose = stdout(&plan(&["-v"]));
    assert_eq!(
        verbose.matches("\n    remove    ").count(),
        193,
        "{verbose}"
    );
    assert!(!verbose.contains("more to remove"), "{verbose}");

    let json: serde_json::Value =
        serde_json::from_slice(&plan(&["--format", "json"]).stdout).unwrap();
    assert_eq!(json["summary"]["packages"]["remove"], 193, "{json}");
    assert_eq!(json["summary"]["packages"]["downgrade"], 1, "{json}");
    assert_eq!(json["packages"]["remove"].as_array().unwrap().len(), 193);
    assert_eq!(
        json["packages"]["downgrade"][0],
        serde_json::json!({"name": "torch", "from": "2.11.0", "to": "2.9.1"})
    );
    // Tooling stays: pip is never removed.
    assert!(
        !json["packages"]["remove"]
            .as_array()
            .unwrap()
            .iter()
            .any(|change| change["name"] == "pip"),
        "{json}"
    );
}

/// `target.keep_unlocked_packages: true` keeps what the lock does not name.
#[test]
fn a_manifest_can_keep_unlocked_packages() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = venv_manifest(
        dir.path(),
        "keep",
        &format!("  keep_unlocked_packages: true\n{TORCH_ONLY}"),
    );
    let snapshot = torch_snapshot(dir.path());
    let output = plan_on_h200(&manifest, &snapshot, &["--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["summary"]["packages"]["remove"], 0, "{json}");
    assert_eq!(json["summary"]["packages"]["downgrade"], 1, "{json}");
}

/// See: issue 19 — the env step reached every interpreter of the node: by default the
/// variables now go into the target venv's own `.pth` start-up file, never into the
/// system `sitecustomize.py`, and a value the process has wins unless `override`.
#[test]
fn env_goes_to_the_target_environment_only() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = venv_manifest(
        dir.path(),
        "scoped",
        "env:\n  CUDA_HOME: /usr/local/cuda-13.0\n  NCCL_DEBUG:\n    value: WARN\n    override: true\n",
    );
    let output = on_h200("plan", &manifest, &[]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    assert!(
        text.contains("rewrite the managed block of /opt/torch/.venv/lib/python3.12/site-packages/cuda_upgrade_env.pth"),
        "{text}"
    );
    assert!(
        !text.contains("/usr/lib/python3.12/sitecustomize.py"),
        "{text}"
    );
    assert!(
        text.contains(r#"import os; os.environ.setdefault("CUDA_HOME", "/usr/local/cuda-13.0")"#),
        "{text}"
    );
    assert!(
        text.contains(r#"import os; os.environ["NCCL_DEBUG"] = "WARN""#),
        "{text}"
    );
    // The interpreter-wide file stays possible, asked for by name.
    let wide = venv_manifest(
        dir.path(),
        "wide",
        "  env_scope: interpreter\nenv:\n  CUDA_HOME: /usr/local/cuda-13.0\n",
    );
    let text = stdout(&on_h200("plan", &wide, &[]));
    assert!(
        text.contains("rewrite the managed block of /usr/lib/python3.12/sitecustomize.py"),
        "{text}"
    );
}

/// See: issue 19 — node facts that do not fit the manifest were planned without a word:
/// a GPU outside `target.gpu_arch`, every GPU busy while the launch wants idle ones,
/// facts probed for another interpreter. Each is a located warning now.
#[test]
fn plan_warns_about_facts_that_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let mut facts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(H200_FACTS).unwrap()).unwrap();
    let uuid = facts["gpus"][0]["uuid"].clone();
    facts["gpus"][0]["processes"] = serde_json::json!([
        {"gpu_uuid": uuid, "pid": 433, "process_name": "python3", "used_memory_mib": 8710}
    ]);
    let busy = dir.path().join("busy.facts.json");
    std::fs::write(&busy, facts.to_string()).unwrap();
    let manifest = venv_manifest(
        dir.path(),
        "misfit",
        "  gpu_arch: [sm_100]\nverify:\n  launch: /opt/torch/.venv/bin/python3 -m http.server\n  log: /tmp/misfit.log\n  ready: Serving\n  timeout: 1m\n",
    );
    let output = upgrade(&[
        "plan",
        manifest.to_str().unwrap(),
        "--facts",
        busy.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let warnings = json["warnings"].to_string();
    assert!(
        warnings.contains("GPU 0 (NVIDIA H200, sm_90) is not in `target.gpu_arch` [sm_100]"),
        "{warnings}"
    );
    assert!(
        warnings.contains("every GPU is in use (1 compute process)"),
        "{warnings}"
    );

    let other = dir.path().join("other.yaml");
    std::fs::write(
        &other,
        "schema: 1\nname: other\nupgrade: \">=0.1\"\ntarget:\n  python: /opt/other/.venv/bin/python3\n  base_python: /usr/bin/python3\n",
    )
    .unwrap();
    let output = on_h200("plan", &other, &[]);
    let text = stdout(&output);
    assert!(
        text.contains("  warning: the facts were probed for `/opt/torch/.venv/bin/python3`, not for the manifest's `target.python` `/opt/other/.venv/bin/python3`"),
        "{text}{}",
        stderr(&output)
    );
}

/// See: issue 19 — `plan` failed when a secret's variable was unset on the controller,
/// though it only shows `***`. It plans and says what `apply` will need.
#[test]
fn plan_needs_no_secret_values() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = venv_manifest(
        dir.path(),
        "secret",
        "env:\n  HF_TOKEN:\n    from_env: CUDA_UPGRADE_TEST_NEVER_SET_TOKEN\n",
    );
    let output = command()
        .args(["plan", manifest.to_str().unwrap(), "--facts", H200_FACTS])
        .env_remove("CUDA_UPGRADE_TEST_NEVER_SET_TOKEN")
        .output()
        .unwrap();
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    assert!(
        text.contains("warning: `CUDA_UPGRADE_TEST_NEVER_SET_TOKEN` is not set on this controller"),
        "{text}"
    );
}

/// `apply` never changes a node unasked: without a terminal to ask on and without
/// `--yes` it refuses before it connects, naming the flag.
#[test]
fn apply_without_a_terminal_refuses_without_yes() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = venv_manifest(dir.path(), "asks", "");
    let output = upgrade(&[
        "apply",
        manifest.to_str().unwrap(),
        "--host",
        "node-that-is-never-reached",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("stdin is not a terminal"), "{text}");
    assert!(text.contains("pass `--yes`"), "{text}");
    // The fleet form refuses the same way, before any node is probed.
    let inventory = dir.path().join("inventory.yml");
    std::fs::write(
        &inventory,
        "all:\n  hosts:\n    node-that-is-never-reached: {}\n",
    )
    .unwrap();
    let runs = dir.path().join("runs");
    let output = upgrade(&[
        "apply",
        manifest.to_str().unwrap(),
        "-i",
        inventory.to_str().unwrap(),
        "--run-dir",
        runs.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("pass `--yes`"),
        "{}",
        stderr(&output)
    );
}

/// See: issue 19 — `plan --format json` and `status --format json` printed nothing on
/// stdout when they failed; a machine reading stdout now always gets an object.
#[test]
fn json_on_every_failure() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = venv_manifest(
        dir.path(),
        "impossible",
        "indexes:\n  - name: local\n    url: http://127.0.0.1:9/simple/\npackages:\n  torch: \"==9.9.9\"\n",
    );
    let snapshot = torch_snapshot(dir.path());
    let output = plan_on_h200(&manifest, &snapshot, &["--format", "json"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["ok"], false, "{json}");
    assert_eq!(json["exit"], 3, "{json}");
    assert!(json["report"].is_object(), "{json}");
    let missing = dir.path().join("missing.yaml");
    for verb in [
        vec!["plan", missing.to_str().unwrap(), "--facts", H200_FACTS],
        vec!["status", missing.to_str().unwrap(), "--local"],
    ] {
        let mut args = verb.clone();
        args.extend(["--format", "json"]);
        let output = upgrade(&args);
        assert_eq!(output.status.code(), Some(2), "{verb:?}");
        let json: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|error| panic!("{verb:?}: {error}: {}", stdout(&output)));
        assert_eq!(json["ok"], false);
        assert!(
            json["error"].as_str().unwrap().contains("missing.yaml"),
            "{json}"
        );
    }
}

/// See: issue 33 — a host whose `cuda_upgrade_fetch` names no fetch mode is refused by
/// `plan -i` as by `apply -i`, with the same cause, before either reaches it: the plan
/// no longer plans it as `--fetch node`.
#[test]
fn plan_and_apply_refuse_an_invalid_fetch_variable_alike() {
    let dir = tempfile::tempdir().unwrap();
    let inventory = dir.path().join("inventory.yml");
    // `.invalid` resolves nowhere: a host that is reached would be unreachable instead.
    std::fs::write(
        &inventory,
        "all:\n  hosts:\n    node0.invalid:\n      cuda_upgrade_fetch: \"nightly\\nALL\"\n",
    )
    .unwrap();
    let inventory = inventory.to_str().unwrap();
    let run = |verb: &[&str]| {
        let mut args = verb.to_vec();
        args.extend_from_slice(&[SEED, "-i", inventory, "--format", "json"]);
        let output = upgrade(&args);
        let report: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|error| panic!("{error}: {}{}", stdout(&output), stderr(&output)));
        (output, report["nodes"][0].clone())
    };
    let (plan, planned) = run(&["plan"]);
    assert_eq!(plan.status.code(), Some(1), "{planned:#}");
    assert_eq!(planned["state"], "blocked", "{planned:#}");
    let (apply, applied) = run(&["apply", "--yes"]);
    assert_eq!(apply.status.code(), Some(1), "{applied:#}");
    assert_eq!(applied["result"], "refused", "{applied:#}");
    let cause = applied["cause"].as_str().unwrap();
    assert_eq!(planned["cause"].as_str().unwrap(), cause);
    assert!(
        cause.contains(
            "`cuda_upgrade_fetch` of `node0.invalid`: `nightly\\nALL` is not a fetch mode"
        ),
        "{cause}"
    );
}
