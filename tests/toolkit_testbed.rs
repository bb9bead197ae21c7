//! `toolkit.installer: apt` end to end on testbed nodes, with Debian's real `apt` and
//! `dpkg` and the testbed's apt repository of packages shaped like NVIDIA's
//! (`tests/testbed/fixtures/debs.py`): a node without a toolkit gets CUDA 13.0.1 in one
//! apply (meta package pinned, alternatives, ld.so.conf.d, no `version.json`), a second
//! apply is a no-op identified by the meta package, an older update is upgraded by apt
//! and a newer one is explained, never downgraded; on the H200-shaped `ubuntu` persona an
//! apt toolkit that is the manifest's update is adopted and the runfile is refused with
//! what to do.
//!
//! Needs root (the testbed's namespaces); without it every test says why it is skipped
//! and passes.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::stack::{RUNFILE_13, json_report, overlay_files, text, work_dir};
use common::testbed::{Testbed, skip};

const PREFIX: &str = "/usr/local/cuda-13.0";

/// A manifest with only a toolkit (the node's own interpreter as target).
fn manifest(dir: &Path, name: &str, toolkit: &str) -> PathBuf {
    let text = format!(
        "schema: 1\nname: {name}\nupgrade: \">=0.1\"\ntarget:\n  python: /root/.pyenv/versions/3.11.7/bin/python3\n  python_version: \"3.11\"\ntoolkit:\n{toolkit}"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn apt_manifest(dir: &Path, version: &str) -> PathBuf {
    manifest(
        dir,
        &format!("apt-{version}"),
        &format!(
            "  version: \"{version}\"\n  prefix: {PREFIX}\n  installer: apt\n  package: cuda-toolkit-13-0\n"
        ),
    )
}

fn upgrade(
    testbed: &Testbed,
    verb: &str,
    manifest: &Path,
    node: &str,
) -> (Output, serde_json::Value) {
    let ssh_config = testbed.ssh_config().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_upgrade"))
        .args([
            verb,
            manifest.to_str().unwrap(),
            "--host",
            node,
            "--ssh-config",
            &ssh_config,
            "--format",
            "json",
        ])
        .args((verb == "apply").then_some("--yes"))
        .env("XDG_CACHE_HOME", testbed.dir().join("controller-cache"))
        .output()
        .unwrap();
    let report = json_report(&output);
    (output, report)
}

/// The toolkit step of an apply or plan report.
fn toolkit_step(report: &serde_json::Value) -> serde_json::Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["kind"] == "toolkit")
        .cloned()
        .ok_or_else(|| format!("no toolkit step in {report:#}"))
        .unwrap()
}

/// What the node shows of the toolkit: the meta package, the alternatives link, nvcc,
/// the loader's view of libnvrtc and libcudart, and that there is no version.json.
fn node_toolkit(testbed: &Testbed, node: &str) -> String {
    testbed
        .ssh_ok(
            node,
            "dpkg-query -W -f='${Package} ${Version}\\n' cuda-toolkit-13-0 cuda-cudart-13-0; \
             readlink /usr/local/cuda /etc/alternatives/cuda; \
             /usr/local/cuda/bin/nvcc --version | grep release; \
             ldconfig -p | grep -E 'libnvrtc.so.13 |libcudart.so.13 '; \
             test -e /usr/local/cuda-13.0/version.json || echo no-version.json",
        )
        .unwrap()
}

/// See: issue "Real nodes, first time", B: a node without the toolkit gets it from the
/// apt repository in one apply; a second apply is a no-op; an older update is upgraded;
/// a newer one is explained.
#[test]
fn apt_installs_the_toolkit_then_is_a_no_op_and_upgrades_an_older_update() {
    if skip("apt_installs_the_toolkit_then_is_a_no_op_and_upgrades_an_older_update") {
        return;
    }
    let testbed = Testbed::up(&["fresh"]).unwrap();
    // CUDA 13.0.2 needs driver 580.95.05 (rules/cuda-driver.yaml); `fresh` has 580.82.07.
    testbed.stage("node0", &["driver", "580.159.04"]).unwrap();
    let work = work_dir("toolkit-apt");
    let first = apt_manifest(&work, "13.0.1");

    let started = std::time::Instant::now();
    let (output, report) = upgrade(&testbed, "apply", &first, "node0");
    assert!(output.status.success(), "{}", text(&output));
    let step = toolkit_step(&report);
    assert_eq!(step["outcome"], "applied", "{report:#}");
    eprintln!("first apply (apt install) took {:?}", started.elapsed());
    let shown = node_toolkit(&testbed, "node0");
    for line in [
        "cuda-toolkit-13-0 13.0.1-1",
        // `>=` dependencies: apt takes the newest component of the line.
        "cuda-cudart-13-0 13.0.96-1",
        "/etc/alternatives/cuda",
        PREFIX,
        "Cuda compilation tools, release 13.0, V13.0.88",
        "libnvrtc.so.13 (libc6,x86-64) => /usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13",
        "no-version.json",
    ] {
        assert!(
            shown.lines().any(|l| l.trim() == line),
            "`{line}` not in:\n{shown}"
        );
    }

    // Converged: a no-op identified by the meta package, one round trip, no file changed.
    let before = overlay_files(&testbed, "node0");
    let started = std::time::Instant::now();
    let (output, report) = upgrade(&testbed, "apply", &first, "node0");
    assert!(output.status.success(), "{}", text(&output));
    let step = toolkit_step(&report);
    assert_eq!(step["outcome"], "no-op", "{report:#}");
    assert_eq!(
        step["reason"],
        "`/usr/local/cuda-13.0` holds CUDA 13.0.1 (identified by its apt meta package (dpkg): cuda-toolkit-13-0 13.0.1-1)"
    );
    assert_eq!(report["round_trips"], 1, "{report:#}");
    eprintln!("no-op apply took {:?}", started.elapsed());
    assert_eq!(
        before,
        overlay_files(&testbed, "node0"),
        "the no-op apply changed files"
    );

    // An older update is upgraded by apt, pinned.
    let second = apt_manifest(&work, "13.0.2");
    let (output, report) = upgrade(&testbed, "plan", &second, "node0");
    assert!(output.status.success(), "{}", text(&output));
    let step = toolkit_step(&report);
    assert_eq!(step["blocked"], serde_json::Value::Null, "{report:#}");
    assert_eq!(
        step["commands"][1],
        "env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -- cuda-toolkit-13-0=13.0.2-1"
    );
    let (output, report) = upgrade(&testbed, "apply", &second, "node0");
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(toolkit_step(&report)["outcome"], "applied", "{report:#}");
    let shown = node_toolkit(&testbed, "node0");
    assert!(shown.contains("cuda-toolkit-13-0 13.0.2-1\n"), "{shown}");

    // Back to 13.0.1 would be a downgrade: explained, nothing run.
    let before = overlay_files(&testbed, "node0");
    let (output, report) = upgrade(&testbed, "apply", &first, "node0");
    assert!(!output.status.success(), "{}", text(&output));
    let all = text(&output);
    assert!(
        all.contains("holds CUDA 13.0.2 (identified by its apt meta package (dpkg): cuda-toolkit-13-0 13.0.2-1), newer than the manifest's CUDA 13.0.1; apt is not asked to downgrade"),
        "{all}\n{report:#}"
    );
    assert_eq!(
        before,
        overlay_files(&testbed, "node0"),
        "a refused apply changed files"
    );
}

/// See: issue "Real nodes, first time", A: on an H200-shaped node (NVIDIA's apt
/// packages, no version.json) a toolkit that is the manifest's update is adopted; the
/// runfile is not run over it, and the plan says which update it is, how that is known
/// and what to do.
#[test]
fn an_apt_toolkit_is_adopted_and_the_runfile_is_refused_with_what_to_do() {
    if skip("an_apt_toolkit_is_adopted_and_the_runfile_is_refused_with_what_to_do") {
        return;
    }
    let testbed = Testbed::up(&["ubuntu"]).unwrap();
    let work = work_dir("toolkit-adopt");
    let before = overlay_files(&testbed, "node0");

    // The manifest's update, whatever its installer: a no-op.
    let (runfile_url, runfile_sha) = testbed.runfile(RUNFILE_13).unwrap();
    // NVIDIA's 13.0.2 runfile by name (`validate` refuses a version its URL contradicts);
    // never fetched: the apt-installed 13.0.2 is adopted as it is.
    let url_13_0_2 = runfile_url.replace(RUNFILE_13, "cuda_13.0.2_580.95.05_linux.run");
    let adopt_runfile = manifest(
        &work,
        "runfile-13.0.2",
        &format!(
            "  version: \"13.0.2\"\n  prefix: {PREFIX}\n  installer: runfile\n  source:\n    url: {url_13_0_2}\n    sha256: {runfile_sha}\n"
        ),
    );
    for manifest in [apt_manifest(&work, "13.0.2"), adopt_runfile] {
        let (output, report) = upgrade(&testbed, "apply", &manifest, "node0");
        assert!(output.status.success(), "{}", text(&output));
        let step = toolkit_step(&report);
        assert_eq!(step["outcome"], "no-op", "{report:#}");
        assert_eq!(
            step["reason"],
            "`/usr/local/cuda-13.0` holds CUDA 13.0.2 (identified by its apt meta package (dpkg): cuda-toolkit-13-0 13.0.2-1)"
        );
    }

    // Another update with the runfile: refused, with the way to adopt or move aside.
    let runfile = manifest(
        &work,
        "runfile-13.0.1",
        &format!(
            "  version: \"13.0.1\"\n  prefix: {PREFIX}\n  installer: runfile\n  source:\n    url: {runfile_url}\n    sha256: {runfile_sha}\n"
        ),
    );
    let (output, report) = upgrade(&testbed, "plan", &runfile, "node0");
    // A blocked step fails the plan (exit 1); the plan is still printed.
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let blocked = toolkit_step(&report)["blocked"]
        .as_str()
        .unwrap()
        .to_string();
    for part in [
        "`/usr/local/cuda-13.0` holds CUDA 13.0.2 (identified by its apt meta package (dpkg): cuda-toolkit-13-0 13.0.2-1), installed from NVIDIA's apt packages (",
        "cuda-toolkit-13-0 13.0.2-1",
        "the runfile is not run over a package-managed toolkit",
        "set `toolkit.installer: apt`, `toolkit.package: cuda-toolkit-13-0` and `toolkit.version: \"13.0.2\"`",
        "another `toolkit.prefix`, e.g. `/usr/local/cuda-13.0.1`",
    ] {
        assert!(blocked.contains(part), "`{part}` not in: {blocked}");
    }
    let (output, _) = upgrade(&testbed, "apply", &runfile, "node0");
    assert!(!output.status.success(), "{}", text(&output));
    assert!(
        testbed
            .ssh_ok("node0", "ls /var/tmp/cuda-upgrade 2>/dev/null | wc -l")
            .unwrap()
            .trim()
            == "0",
        "the refused apply staged the runfile"
    );
    assert_eq!(
        before,
        overlay_files(&testbed, "node0"),
        "adopting changed files"
    );
}
