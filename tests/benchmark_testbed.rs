//! The workload before and after (issue 35): an apply that changes a node measures the
//! manifest's benchmark before its first change and after its steps, on `ubuntu`
//! persona testbed nodes. The benchmark is a small script on the node that prints a
//! figure from a file, or from a variable the manifest's env block sets; a figure worse
//! than the baseline beyond the tolerance fails the node, `--rollback-on-failure` undoes
//! it, and `verify --benchmark` reads the baseline figure again. A fleet apply carries
//! the results into `summary.json`.
//!
//! Needs root (the testbed's namespaces); without it every test says why it is
//! skipped and passes.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::{Path, PathBuf};

use common::stack::{apply_inventory, json_report, node, on_host, text, work_dir};
use common::testbed::{Testbed, skip};

const PYTHON: &str = "/opt/torch/.venv/bin/python3";

/// The node's benchmark: the figure from `BENCH_FIGURE` when the interpreter has it (the
/// env block sets it at start-up), else from `/root/bench-figure`.
const SCRIPT: &str = "import os\nfigure = os.environ.get('BENCH_FIGURE') or open('/root/bench-figure').read().strip()\nprint('warming up')\nprint(f'output throughput: {figure} tok/s')\n";

/// A manifest with `env` lines and the benchmark.
fn manifest(dir: &Path, name: &str, env: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "schema: 1\nname: bench-smoke\ntarget:\n  python: {PYTHON}\n  gpu_arch: [sm_90]\n\
             env:\n{env}\
             benchmark:\n  command: [{PYTHON}, /root/bench.py]\n  pattern: 'output throughput: ([0-9.]+) tok/s'\n  \
             name: output throughput\n  unit: tok/s\n  better: higher\n  tolerance: 5%\n  timeout: 60s\n"
        ),
    )
    .unwrap();
    path
}

fn install_benchmark(testbed: &Testbed, node: &str) {
    testbed
        .ssh_ok(
            node,
            &format!(
                "printf '%s' {} > /root/bench.py && echo 89.5 > /root/bench-figure",
                cuda_upgrade::shell::quote(SCRIPT)
            ),
        )
        .unwrap();
}

fn figure(reading: &serde_json::Value) -> f64 {
    assert_eq!(reading["outcome"], "figure", "{reading:#}");
    reading["value"].as_f64().unwrap()
}

/// See: issue 35, parts 2 and 3: (a) a change that leaves the figure passes with both
/// figures in the report and the journal; (b) an env change that makes it worse fails
/// the node with the cause, the rollback restores the env block and `verify
/// --benchmark` reads the baseline again; (c) a fleet's summary carries the results, and
/// a converged node runs no benchmark.
#[test]
fn the_benchmark_gates_an_apply_and_a_rollback_restores_its_figure() {
    if skip("the_benchmark_gates_an_apply_and_a_rollback_restores_its_figure") {
        return;
    }
    let testbed = Testbed::up(&["ubuntu", "ubuntu"]).unwrap();
    let work = work_dir("benchmark");
    for host in ["node0", "node1"] {
        install_benchmark(&testbed, host);
    }
    let steady = manifest(&work, "steady.yaml", "  CUDA_HOME: /usr/local/cuda-13.0\n");
    let slower = manifest(
        &work,
        "slower.yaml",
        "  CUDA_HOME: /usr/local/cuda-13.0\n  BENCH_FIGURE: '84.0'\n",
    );

    // (a) A change that leaves the figure as it was.
    let output = on_host(
        &testbed,
        "apply",
        &steady,
        "node0",
        &["--yes", "--format", "json"],
    );
    let report = json_report(&output);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(report["ok"], true, "{report:#}");
    let benchmark = &report["benchmark"];
    assert_eq!(figure(&benchmark["baseline"]), 89.5, "{report:#}");
    assert_eq!(figure(&benchmark["after"]), 89.5, "{report:#}");
    assert_eq!(benchmark["verdict"], "passed", "{report:#}");
    let journal = testbed
        .ssh_ok("node0", "cat /var/lib/cuda-upgrade/journal.jsonl")
        .unwrap();
    let phases: Vec<String> = journal
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["event"] == "benchmark")
        .map(|entry| entry["benchmark"]["phase"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(phases, ["baseline", "after"], "{journal}");

    // (b) The env block makes the workload slower: the gate fails the node, the
    // rollback takes the variable away again.
    let output = on_host(
        &testbed,
        "apply",
        &slower,
        "node0",
        &["--yes", "--rollback-on-failure", "--format", "json"],
    );
    let report = json_report(&output);
    assert!(!output.status.success(), "{}", text(&output));
    assert_eq!(report["ok"], false, "{report:#}");
    let benchmark = &report["benchmark"];
    assert_eq!(benchmark["verdict"], "regressed", "{report:#}");
    assert_eq!(figure(&benchmark["after"]), 84.0, "{report:#}");
    assert_eq!(
        benchmark["cause"],
        "output throughput 84.0 tok/s is 6.1 % below the 89.5 tok/s baseline (tolerance 5 %)",
        "{report:#}"
    );
    assert_eq!(report["rollback"]["ok"], true, "{report:#}");
    let seen = testbed
        .ssh_ok(
            "node0",
            &format!("{PYTHON} -c 'import os; print(os.environ.get(\"BENCH_FIGURE\"), os.environ.get(\"CUDA_HOME\"))'"),
        )
        .unwrap();
    assert_eq!(seen.trim(), "None /usr/local/cuda-13.0", "{seen}");
    let output = on_host(&testbed, "verify", &slower, "node0", &["--benchmark"]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("89.5 tok/s baseline, 89.5 tok/s after — passed"),
        "{said}"
    );

    // (c) A fleet: node0 already matches `steady` (no benchmark), node1 changes.
    let inventory = work.join("inventory.yml");
    std::fs::write(
        &inventory,
        "all:\n  children:\n    gpu:\n      hosts:\n        node[0:1]:\n",
    )
    .unwrap();
    let run_dir = work.join("run");
    let (output, report) = apply_inventory(
        &testbed,
        &steady,
        &inventory,
        &["--run-dir", run_dir.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        node(&report, "node0").get("benchmark").is_none(),
        "{report:#}"
    );
    assert_eq!(node(&report, "node1")["benchmark"]["verdict"], "passed");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    let node1 = node(&summary, "node1");
    assert_eq!(figure(&node1["benchmark"]["baseline"]), 89.5, "{summary:#}");
    assert_eq!(figure(&node1["benchmark"]["after"]), 89.5, "{summary:#}");
}
