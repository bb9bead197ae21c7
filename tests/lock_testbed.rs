//! `apply -i INVENTORY --lock FILE` on a testbed fleet: every node installs exactly the
//! lock (no resolution), and each node is refused, unchanged, when the lock was made
//! from an edited manifest or assumes a driver the node lacks.
//!
//! See: issue 19 — `apply` took no lock. Needs root (the testbed's namespaces); without
//! it the test says why it is skipped and passes.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::Path;
use std::process::Output;

use common::stack::{
    apply_inventory, node, overlay_files, seeded_testbed, text, upgrade, work_dir,
};
use common::testbed::{Testbed, skip};

/// Both nodes of the fleet `report` refused, each saying `reason`.
fn assert_refused(report: &serde_json::Value, reason: &str) {
    for host in ["node0", "node1"] {
        let node = node(report, host);
        assert_eq!(node["result"], "refused", "{node:#}");
        assert!(node.to_string().contains(reason), "{node:#}");
    }
}

fn apply_locked(
    testbed: &Testbed,
    manifest: &Path,
    lock: &Path,
    inventory: &Path,
    run_dir: &Path,
) -> (Output, serde_json::Value) {
    apply_inventory(
        testbed,
        manifest,
        inventory,
        &[
            "--lock",
            lock.to_str().unwrap(),
            "--no-verify",
            "--run-dir",
            run_dir.to_str().unwrap(),
        ],
    )
}

#[test]
fn a_fleet_installs_exactly_the_lock_and_refuses_one_that_does_not_fit() {
    if skip("a_fleet_installs_exactly_the_lock_and_refuses_one_that_does_not_fit") {
        return;
    }
    let work = work_dir("lock-fleet");
    let (testbed, manifest, snapshot) =
        seeded_testbed(&["cuda12.8", "cuda12.8"], &[], &work, |text| text);
    let ssh_config = testbed.ssh_config().unwrap();
    // The lock, from node0's facts and the snapshot.
    let probe = upgrade(
        &testbed,
        &[
            "probe",
            "--host",
            "node0",
            "--ssh-config",
            &ssh_config,
            "--manifest",
            manifest.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert!(probe.status.success(), "{}", text(&probe));
    let facts = work.join("node0.facts.json");
    std::fs::write(&facts, &probe.stdout).unwrap();
    let lock = work.join("overlay.lock.json");
    let output = upgrade(
        &testbed,
        &[
            "lock",
            manifest.to_str().unwrap(),
            "--facts",
            facts.to_str().unwrap(),
            "--snapshot",
            snapshot.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            lock.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    let inventory = work.join("inventory.yml");
    std::fs::write(&inventory, "all:\n  hosts:\n    node0:\n    node1:\n").unwrap();

    // A lock that assumes a newer driver than the nodes have: each node refused, unchanged.
    let mut newer: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    newer["assumed"]["driver"] = serde_json::json!("999.99.99");
    let newer_path = work.join("newer.lock.json");
    std::fs::write(&newer_path, newer.to_string()).unwrap();
    // What the tool could change (the probe's own `rpm` database aside).
    let changeable = |node: &str| {
        overlay_files(&testbed, node)
            .into_iter()
            .filter(|(path, _)| !path.starts_with("./root/.rpmdb/"))
            .collect::<Vec<_>>()
    };
    let before = changeable("node1");
    let (output, report) = apply_locked(
        &testbed,
        &manifest,
        &newer_path,
        &inventory,
        &work.join("run-newer"),
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_refused(
        &report,
        "driver: the lock was resolved for NVIDIA driver 999.99.99",
    );
    assert_eq!(changeable("node1"), before);

    // The lock as made: both nodes converge to exactly it (torch from the lock).
    let (output, report) =
        apply_locked(&testbed, &manifest, &lock, &inventory, &work.join("run-ok"));
    assert!(output.status.success(), "{}", text(&output));
    for host in ["node0", "node1"] {
        assert_eq!(node(&report, host)["result"], "converged", "{report:#}");
        let freeze = testbed.ssh_ok(host, "/opt/ml-env/bin/pip freeze").unwrap();
        assert!(freeze.contains("torch==2.9.1+cu130"), "{host}: {freeze}");
    }

    // A comment edit changes nothing the lock depends on: every node stays converged.
    let mut edited = std::fs::read_to_string(&manifest).unwrap();
    edited.push_str("# edited after locking\n");
    std::fs::write(&manifest, &edited).unwrap();
    let (output, _) = apply_locked(
        &testbed,
        &manifest,
        &lock,
        &inventory,
        &work.join("run-comment"),
    );
    assert!(output.status.success(), "{}", text(&output));
    // A changed pin stales it: refused on every node, naming the change.
    let pinned = edited.replace("    version: \"==2.9.1+cu130\"", "    version: \">=2.9.1\"");
    assert_ne!(pinned, edited, "the overlay manifest pins torch");
    std::fs::write(&manifest, &pinned).unwrap();
    let (output, report) = apply_locked(
        &testbed,
        &manifest,
        &lock,
        &inventory,
        &work.join("run-edited"),
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_refused(
        &report,
        "package torch: ==2.9.1+cu130 from pytorch-cu130 → >=2.9.1 from pytorch-cu130",
    );
    testbed.down().unwrap();
}
