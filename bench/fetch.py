#!/usr/bin/env python3
"""Who downloads the stack: `--fetch node` against `--fetch controller` on testbed fleets.

    bench/fetch.py [--nodes 1,4,8,16] [--modes node,controller,controller-uv]
                   [--upgrade target/release/upgrade] [--uv PATH]

(root: the testbed's namespaces). For each fleet size and mode it brings up a fresh
`cuda12.8` testbed (tests/testbed/up), prepares the seed manifest's testbed overlay as
bench/fleet.py does, and times one full upgrade

    upgrade apply --yes MANIFEST -i INVENTORY --parallel N --ssh-config F --snapshot S
                  --no-verify --format json --fetch MODE

reading the bytes the testbed's index server served during that apply from its
`/_stats` counter (response bodies: project pages, metadata, wheels and the runfile).
In `node` mode every node clones the fixture SGLang from its own copy
(`file:///opt/fixtures/sglang`, put there before the clock starts), as bench/fleet.py
does; in `controller` mode the repository lives only on the controller and nodes get a
git bundle of the pinned tag. So the git side serves nothing over the network in either
mode, and the index counter is the whole download. `controller-uv` is `controller` with
`--installer uv`: the controller's uv (`--uv`, default the one `scripts/tool-venv`
installs under target/) installs, removes and checks the packages instead of each node's
pip.

Results: the `## Fetch once` section of bench/RESULTS.md (replaced, the rest kept) and
the JSON of every run on stdout.
"""

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fleet  # noqa: E402  (the same testbed helpers as the fleet benchmark)

ROOT = fleet.ROOT


def stats(state):
    """The index server's counters: bytes of bodies served and requests."""
    base = state["indexes"]["default"].split("/default/simple/")[0]
    with urllib.request.urlopen(f"{base}/_stats", timeout=10) as answer:
        return json.loads(answer.read())


PHASE = re.compile(r"^\[\s*([0-9.]+)s\] (\S+?)(?::| —|$)")
# Log lines that end a node's run (its result line starts with one of them).
RESULTS = ("converged", "unchanged", "failed", "refused", "unreachable", "blocked", "skipped")


def phases(log_dir):
    """Where each node's time went, from its log in the run directory: seconds from each
    phase's line (`connecting`, `probing`, then each step: `toolkit`, `pip`, `source`…)
    to the next, up to the node's result line; the mean and the largest over the nodes."""
    per_phase = {}
    for log in sorted(Path(log_dir).glob("*.log")):
        marks = []
        for line in log.read_text().splitlines():
            match = PHASE.match(line)
            if not match:
                continue
            marks.append((float(match.group(1)), match.group(2)))
            if match.group(2) in RESULTS:
                break
        for (at, name), (until, _) in zip(marks, marks[1:]):
            per_phase.setdefault(name, []).append(until - at)
    return {name: {"mean": sum(values) / len(values), "max": max(values)}
            for name, values in per_phase.items()}


def cpu_seconds():
    """Busy and total CPU time of the whole machine so far (/proc/stat: every core; idle
    and iowait are not busy). Every testbed node is a namespace of this machine, so the
    busy time over an apply is what the controller and all its nodes used together."""
    with open("/proc/stat", encoding="utf-8") as handle:
        ticks = [int(field) for field in handle.readline().split()[1:]]
    per_second = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - ticks[3] - ticks[4]) / per_second, sum(ticks) / per_second


def reap_orphans():
    """Wait for every exited process left to this one as their subreaper (see
    `main`), so that its CPU time counts in `RUSAGE_CHILDREN`."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def controller_manifest(manifest, repo):
    """The overlay with the repository on the controller instead of on each node."""
    text = Path(manifest).read_text().replace(f"file://{fleet.NODE_REPOSITORY}", f"file://{repo}")
    path = Path(manifest).with_name("overlay-controller.yaml")
    path.write_text(text)
    return path


def one(size, mode, work, upgrade, uv):
    directory = Path(work) / f"testbed-{size}-{mode}"
    state = fleet.testbed_up(size, directory)
    try:
        run_dir = Path(work) / f"{size}-{mode}"
        manifest, snapshot = fleet.prepare(state, run_dir, upgrade)
        fetch, _, installer = mode.partition("-")
        if fetch == "controller":
            manifest = controller_manifest(manifest, run_dir / "sglang")
        extra = ["--installer", "uv", "--uv", uv] if installer == "uv" else []
        env = fleet.upgrade_env(state, run_dir)
        before = stats(state)
        reap_orphans()
        busy_before, _ = cpu_seconds()
        controller_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        result = fleet.run([upgrade, "apply", "--yes", manifest, "-i", run_dir / "inventory.yml",
                            "--parallel", size, "--ssh-config", state["ssh_config"],
                            "--snapshot", snapshot, "--no-verify", "--format", "json",
                            "--fetch", fetch, "--run-dir", run_dir / "run", *extra],
                           env=env, check=False)
        seconds = time.monotonic() - started
        busy = cpu_seconds()[0] - busy_before
        # The ssh masters have left by now (`upgrade` closes them); reaped here, they count.
        reap_orphans()
        controller_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # `upgrade` and its processes: its ssh masters, git, pip on the controller.
        controller = (controller_after.ru_utime + controller_after.ru_stime
                      - controller_before.ru_utime - controller_before.ru_stime)
        after = stats(state)
        outcomes = fleet.parse_outcomes(result.stdout) if result.stdout.strip() else []
        ok = (result.returncode == 0 and len(outcomes) == size
              and all(outcome.get("ok") for outcome in outcomes))
        if not ok:
            fleet.log(result.stdout[-2000:] + result.stderr[-2000:])
        entry = {"nodes": size, "mode": mode, "seconds": seconds, "ok": ok,
                 "cpu_seconds": busy, "controller_cpu_seconds": controller,
                 "cores": os.cpu_count(),
                 "bytes": after["bytes"] - before["bytes"],
                 "requests": after["requests"] - before["requests"],
                 "phases": phases(run_dir / "run")}
        fleet.log(f"  {size} node(s), {mode}: {seconds:.2f} s, "
                  f"{entry['bytes'] / 1e6:.2f} MB in {entry['requests']} requests, ok={ok}")
        return entry
    finally:
        fleet.testbed_down(directory)


def report(entries, arguments, info, upgrade_version):
    by = {(entry["nodes"], entry["mode"]): entry for entry in entries}
    sizes = sorted({entry["nodes"] for entry in entries})
    lines = ["## Fetch once", "",
             "Who downloads the stack (issue 17): a full upgrade of fresh `cuda12.8` testbed "
             "fleets to the seed manifest's overlay, `--fetch node` (each node's pip and the "
             "runfile step fetch for themselves) against `--fetch controller` (the controller "
             "downloads each locked file once, checks its sha256 and sends each node what it "
             "lacks; the source comes as a git bundle), and `controller-uv`: `--fetch controller "
             "--installer uv` (the controller's uv, sent to each node, installs instead of its "
             "pip). Bytes: response bodies the testbed's "
             "index server served during the apply (its `/_stats` counter). Reproduce (root):", "",
             "```sh",
             "cargo build --release",
             f"bench/fetch.py --nodes {','.join(map(str, sizes))} --modes {','.join(arguments.modes)}",
             "```", "",
             f"Measured {time.strftime('%Y-%m-%d')} on {info['cpu']}, {info['cores']} cores, "
             f"{info['memory_gib']} GiB, load average at start {info['load'][0]:.1f}; "
             f"{upgrade_version}; one run each.", "",
             "| nodes | mode | full upgrade (s) | CPU used (s) | of it the controller's (s) "
             "| CPU per node (s) | CPU floor (s) | index bytes served (MB) | requests | ok |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for size in sizes:
        for mode in arguments.modes:
            entry = by.get((size, mode))
            if entry:
                lines.append(f"| {size} | `{mode}` | {entry['seconds']:.2f} | "
                             f"{entry['cpu_seconds']:.2f} | {entry['controller_cpu_seconds']:.2f} | "
                             f"{entry['cpu_seconds'] / size:.2f} | "
                             f"{entry['cpu_seconds'] / entry['cores']:.2f} | "
                             f"{entry['bytes'] / 1e6:.2f} | {entry['requests']} | {entry['ok']} |")
    lines += ["", "CPU used: busy time of the whole machine during the apply (`/proc/stat`, all "
              "cores): the controller and every node together, since each node is a namespace "
              "of this machine. Of it the controller's: `upgrade` and every process it started "
              "(its ssh masters, git, pip), from `getrusage`; the rest ran on the nodes. "
              "CPU floor: the CPU used over the machine's cores, the shortest wall time any "
              "scheduling could reach."]
    names = []
    for entry in entries:
        names += [name for name in entry.get("phases", {}) if name not in names]
    lines += ["", "Where a node's time goes: seconds from each phase's line in the node's log "
              "to the next (`connecting`, `probing`, then each step), mean over the fleet's "
              "nodes (largest in brackets).", "",
              "| nodes | mode | " + " | ".join(names) + " |",
              "| --- | --- | " + " | ".join("---" for _ in names) + " |"]
    for size in sizes:
        for mode in arguments.modes:
            entry = by.get((size, mode))
            if entry:
                cells = []
                for name in names:
                    phase = entry.get("phases", {}).get(name)
                    cells.append(f"{phase['mean']:.2f} ({phase['max']:.2f})" if phase else "")
                lines.append(f"| {size} | `{mode}` | " + " | ".join(cells) + " |")
    lines += ["", "Ratios (one run each):", ""]
    for mode in arguments.modes:
        first = by.get((sizes[0], mode))
        for size in sizes[1:]:
            entry = by.get((size, mode))
            if first and entry and first["bytes"] and first["seconds"]:
                lines.append(f"- `{mode}`, {size} nodes / {sizes[0]} node: bytes "
                             f"**{entry['bytes'] / first['bytes']:.2f}×**, time "
                             f"**{entry['seconds'] / first['seconds']:.2f}×**; the {size}-node "
                             f"run took {entry['seconds'] / (entry['cpu_seconds'] / entry['cores']):.2f}× "
                             f"its CPU floor, and {size} nodes at {first['cores']} cores cannot "
                             f"go below {entry['cpu_seconds'] / entry['cores'] / first['seconds']:.2f}× "
                             f"one node's time without using less CPU per node")
    lines += ["", "Targets (issue 17): with `--fetch controller`, bytes served for 16 nodes at "
              "most 1.1× those for one node, and a full upgrade of 16 nodes at most 3× one "
              "node's time on this 2-core machine.", ""]
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="1,4,8,16",
                        type=lambda text: [int(part) for part in text.split(",")])
    parser.add_argument("--modes", default="node,controller", type=lambda text: text.split(","))
    parser.add_argument("--upgrade", default=str(ROOT / "target" / "release" / "upgrade"))
    parser.add_argument("--uv", help="the uv `controller-uv` sends (default: scripts/tool-venv's)")
    parser.add_argument("--work")
    parser.add_argument("--results", default=str(ROOT / "bench" / "RESULTS.md"))
    parser.add_argument("--no-write", action="store_true", help="print, do not touch RESULTS.md")
    arguments = parser.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("bench/fetch.py needs root (the testbed's namespaces)")
    upgrade = Path(arguments.upgrade).resolve()
    if not upgrade.exists():
        sys.exit(f"{upgrade} is missing: cargo build --release")
    # The ssh masters `upgrade` starts leave it (`ssh -f`): as their subreaper this
    # process gets them back when they end, and counts their CPU as the controller's.
    import ctypes
    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    info = fleet.machine()
    upgrade_version = fleet.run([upgrade, "--version"], check=False).stdout.splitlines()[0]
    work = Path(arguments.work or tempfile.mkdtemp(prefix="fetch-bench-")).resolve()
    uv = arguments.uv
    if uv is None and any(mode.endswith("-uv") for mode in arguments.modes):
        python = fleet.run([ROOT / "scripts" / "tool-venv", ROOT / "target" / "tools" / "uv",
                            "uv==0.13.9"]).stdout.strip()
        uv = str(Path(python).with_name("uv"))
    entries = []
    for size in arguments.nodes:
        for mode in arguments.modes:
            entries.append(one(size, mode, work, upgrade, uv))
    print(json.dumps(entries, indent=1))
    if not arguments.no_write:
        fleet.write_section(arguments.results, report(entries, arguments, info, upgrade_version))


if __name__ == "__main__":
    main(sys.argv[1:])
