#!/usr/bin/env python3
"""One hung node in a fleet: do the others finish as fast as with none hung?

    bench/hung.py [--nodes 8] [--bound 60] [--runs 1] [--fetch node]
                  [--upgrade target/release/upgrade]

(root: the testbed's namespaces). For each run it brings up two fresh `cuda12.8`
testbeds of `--nodes` nodes and times one full upgrade of each to the seed manifest's
testbed overlay (prepared as bench/fleet.py prepares it),

    upgrade apply --yes MANIFEST -i INVENTORY --parallel N --ssh-config F --snapshot S
                  --no-verify --fetch MODE --command-timeout BOUND --run-dir DIR

once with every node healthy and once with the last node's `nvidia-smi` replaced by one
that never returns (a GPU fallen off the bus), which the apply gives up on after its
bound. The healthy nodes are the same in both (every node but the last); their times
are each node's `seconds` in the run's summary.json (from its probe's start to its
result), and the run's wall time is the whole command's.

Target (issue 17): with one node hung, the others finish as fast as with none hung
(within 20 %). Results: the `## One node hung` section of bench/RESULTS.md (replaced,
the rest kept) and the JSON of every run on stdout.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fleet  # noqa: E402  (the same testbed helpers as the fleet benchmark)

ROOT = fleet.ROOT
HANG = "printf '%s\\n' '#!/bin/sh' 'exec sleep 3600' > /usr/local/bin/nvidia-smi"


def one(size, hung, work, upgrade, bound, fetch, index):
    label = "hung" if hung else "none"
    directory = Path(work) / f"testbed-{index}-{label}"
    state = fleet.testbed_up(size, directory)
    try:
        run_dir = Path(work) / f"{index}-{label}"
        manifest, snapshot = fleet.prepare(state, run_dir, upgrade)
        names = [node["name"] for node in state["nodes"]]
        if hung:
            fleet.ssh(state, names[-1], HANG)
        env = fleet.upgrade_env(state, run_dir)
        started = time.monotonic()
        result = fleet.run([upgrade, "apply", "--yes", manifest, "-i", run_dir / "inventory.yml",
                            "--parallel", size, "--ssh-config", state["ssh_config"],
                            "--snapshot", snapshot, "--no-verify", "--format", "json",
                            "--fetch", fetch, "--command-timeout", f"{bound}s",
                            "--run-dir", run_dir / "run"],
                           env=env, check=False, timeout=bound * 4 + 600)
        seconds = time.monotonic() - started
        summary = json.loads((run_dir / "run" / "summary.json").read_text())
        by_name = {node["host"]: node for node in summary["nodes"]}
        healthy = [by_name[name] for name in names[:-1]]
        last = by_name[names[-1]]
        ok = all(node["result"] in ("converged", "unchanged") for node in healthy) and (
            last["result"] == ("unreachable" if hung else "converged"))
        if not ok:
            fleet.log(result.stdout[-2000:] + result.stderr[-2000:])
        times = [node["seconds"] for node in healthy]
        entry = {"nodes": size, "hung": hung, "run": index, "seconds": seconds, "ok": ok,
                 "healthy_seconds": times, "last": {"result": last["result"],
                                                     "seconds": last["seconds"]}}
        fleet.log(f"  run {index}, {label}: healthy nodes {min(times):.2f}–{max(times):.2f} s, "
                  f"last node {last['result']} at {last['seconds']:.1f} s, run {seconds:.1f} s, ok={ok}")
        return entry
    finally:
        fleet.testbed_down(directory)


def report(entries, arguments, info, upgrade_version):
    none = [entry for entry in entries if not entry["hung"]]
    hung = [entry for entry in entries if entry["hung"]]
    slowest = lambda group: statistics.median(max(e["healthy_seconds"]) for e in group)
    mean = lambda group: statistics.median(statistics.mean(e["healthy_seconds"]) for e in group)
    wall = lambda group: statistics.median(e["seconds"] for e in group)
    size = arguments.nodes
    lines = ["## One node hung", "",
             f"A full upgrade of fresh {size}-node `cuda12.8` testbed fleets to the seed "
             "manifest's overlay, with every node healthy and with the last node's "
             "`nvidia-smi` never returning (a GPU fallen off the bus); the apply gives up on "
             f"that node after its bound (`--command-timeout {arguments.bound}s`). The "
             f"healthy {size - 1} are the same nodes in both; their times are each node's "
             "`seconds` in summary.json (probe start to result). Reproduce (root):", "",
             "```sh",
             "cargo build --release",
             f"bench/hung.py --nodes {size} --bound {arguments.bound} --runs {arguments.runs} "
             f"--fetch {arguments.fetch}",
             "```", "",
             f"Measured {time.strftime('%Y-%m-%d')} on {info['cpu']}, {info['cores']} cores, "
             f"{info['memory_gib']} GiB, load average at start {info['load'][0]:.1f}; "
             f"{upgrade_version}; `--fetch {arguments.fetch}`; {arguments.runs} run(s) each, "
             "medians.", "",
             f"| fleet | slowest of the {size - 1} healthy (s) | their mean (s) "
             "| the last node | whole run (s) | ok |",
             "| --- | --- | --- | --- | --- | --- |"]
    for label, group in (("none hung", none), ("last node hung", hung)):
        if not group:
            continue
        last = group[0]["last"]
        lines.append(f"| {label} | {slowest(group):.2f} | {mean(group):.2f} | "
                     f"{last['result']} at {last['seconds']:.1f} s | {wall(group):.2f} | "
                     f"{all(e['ok'] for e in group)} |")
    if none and hung:
        lines += ["", f"With one node hung, the healthy {size - 1} finish in "
                  f"**{slowest(hung) / slowest(none):.2f}×** the time they take with none "
                  f"hung (slowest node; **{mean(hung) / mean(none):.2f}×** on their mean). "
                  "Target (issue 17): within 20 % (0.80–1.20×)."]
    return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--bound", type=int, default=60,
                        help="seconds before the apply gives up on a command (the hung node)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--fetch", default="node", choices=["node", "controller"])
    parser.add_argument("--upgrade", default=str(ROOT / "target" / "release" / "upgrade"))
    parser.add_argument("--work")
    parser.add_argument("--results", default=str(ROOT / "bench" / "RESULTS.md"))
    parser.add_argument("--no-write", action="store_true", help="print, do not touch RESULTS.md")
    arguments = parser.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("bench/hung.py needs root (the testbed's namespaces)")
    if arguments.nodes < 2:
        sys.exit("--nodes: at least 2 (one hung, the others healthy)")
    upgrade = Path(arguments.upgrade).resolve()
    if not upgrade.exists():
        sys.exit(f"{upgrade} is missing: cargo build --release")
    info = fleet.machine()
    upgrade_version = fleet.run([upgrade, "--version"], check=False).stdout.splitlines()[0]
    work = Path(arguments.work or tempfile.mkdtemp(prefix="hung-bench-")).resolve()
    entries = []
    for index in range(arguments.runs):
        # Alternate which goes first, so that neither always meets a cold cache.
        for hung in ((False, True) if index % 2 == 0 else (True, False)):
            entries.append(one(arguments.nodes, hung, work, upgrade, arguments.bound,
                               arguments.fetch, index))
    print(json.dumps(entries, indent=1))
    if not arguments.no_write:
        fleet.write_section(arguments.results, report(entries, arguments, info, upgrade_version))


if __name__ == "__main__":
    main(sys.argv[1:])
