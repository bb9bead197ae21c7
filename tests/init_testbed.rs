//! `upgrade init` on every testbed persona (issue 20): the first manifest written from a
//! node validates, and `plan` of it on the same node changes nothing.
//!
//! Needs root (the testbed's namespaces); without it the test says why it is skipped
//! and passes.
mod common;

use common::stack::{snapshot, text, upgrade, work_dir};
use common::testbed::{Testbed, skip};

/// Every persona with the interpreter of its stack (`fresh` has none yet).
const PERSONAS: &[(&str, &str)] = &[
    ("cuda12.8", "/opt/ml-env/bin/python3"),
    ("fresh", "/opt/ml-env/bin/python3"),
    ("old-driver", "/opt/ml-env/bin/python3"),
    ("volta", "/opt/ml-env/bin/python3"),
    ("h200", "/opt/torch/.venv/bin/python3"),
    ("ubuntu", "/opt/torch/.venv/bin/python3"),
];

/// See: issue 20, "Done when": init → validate → plan on the same node, all no-op, on
/// every persona.
#[test]
fn init_round_trip_is_all_no_op_on_every_persona() {
    if skip("init_round_trip_is_all_no_op_on_every_persona") {
        return;
    }
    let personas: Vec<&str> = PERSONAS.iter().map(|(persona, _)| *persona).collect();
    let testbed = Testbed::up(&personas).unwrap();
    let ssh_config = testbed.ssh_config().unwrap();
    let dir = work_dir("init-round-trip");
    // A fresh node has no environment to describe: give it the empty one `apply` would
    // create (`python3 -m venv`), whose only distributions are pip's own.
    testbed
        .ssh_ok("node1", "python3 -m venv /opt/ml-env")
        .unwrap();
    for (number, (persona, python)) in PERSONAS.iter().enumerate() {
        let node = format!("node{number}");
        let manifest = dir.join(format!("{persona}.yaml"));
        let manifest_arg = manifest.to_str().unwrap();
        let init = upgrade(
            &testbed,
            &[
                "init",
                "--host",
                &node,
                "--ssh-config",
                &ssh_config,
                "--python",
                python,
                "-o",
                manifest_arg,
            ],
        );
        assert!(init.status.success(), "{persona}: {}", text(&init));
        let written = std::fs::read_to_string(&manifest).unwrap();
        assert!(written.contains("decide:"), "{persona}:\n{written}");

        let validate = upgrade(&testbed, &["validate", manifest_arg]);
        assert!(
            validate.status.success(),
            "{persona}: {}\n{written}",
            text(&validate)
        );

        let snapshot = snapshot(&testbed, &manifest);
        let plan = upgrade(
            &testbed,
            &[
                "plan",
                manifest_arg,
                "--host",
                &node,
                "--ssh-config",
                &ssh_config,
                "--snapshot",
                snapshot.to_str().unwrap(),
            ],
        );
        assert!(
            plan.status.success(),
            "{persona}: {}\n{written}",
            text(&plan)
        );
        assert!(
            text(&plan).contains(&format!("{node}: 0 to create, 0 to change, 0 to remove")),
            "{persona}: not all no-op\n{}\n{written}",
            text(&plan)
        );
    }
}
