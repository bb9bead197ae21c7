#!/usr/bin/env python3
"""Where the probe's time goes: runs the probe script on this machine as the local
transport does (`sh -s -- ARGUMENTS` with the script on standard input), stamps each line
of its output as it arrives, and prints each section's wall time (from the end of the
section before to its own end: the time its command and its printing took), the
median over the runs.

Sections whose command runs in the background (the newer script starts `nvidia-smi` and
the interpreter first) show the time spent waiting for it where it is collected.

Usage:
    bench/probe_sections.py [--script FILE] [--runs N] [--json OUT] -- PROBE ARGUMENTS...

e.g. `bench/probe_sections.py --runs 7 -- --python /opt/torch/.venv/bin/python3
--library libnvrtc.so.13 --scope plan`. FILE defaults to this checkout's
`src/facts/probe.sh`; give an older script (`git show REV:src/facts/probe.sh`) to compare.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def one_run(script, arguments):
    """One probe run: [(section, seconds)] in output order, with `(start)` (until the
    header) and `(exit)` (after the last section) around them, and the total."""
    started = time.perf_counter()
    process = subprocess.Popen(
        ["sh", "-s", "--", *arguments],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    process.stdin.write(script)
    process.stdin.close()
    spans = []
    last = started
    current = None
    for raw in iter(process.stdout.readline, b""):
        now = time.perf_counter()
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if line.startswith("@@cuda-upgrade-probe "):
            spans.append(("(start)", now - last))
            last = now
        elif line.startswith("@@begin ") and line.endswith("@@"):
            current = line[len("@@begin ") : -2].split(" ", 1)[0]
        elif line.startswith("@@end ") and current is not None:
            spans.append((current, now - last))
            last = now
            current = None
    process.wait()
    finished = time.perf_counter()
    spans.append(("(exit)", finished - last))
    return spans, finished - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", default=os.path.join(HERE, "..", "src", "facts", "probe.sh"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", help="also write every run's spans here")
    parser.add_argument("arguments", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    arguments = options.arguments[1:] if options.arguments[:1] == ["--"] else options.arguments
    with open(options.script, "rb") as handle:
        script = handle.read()

    runs = [one_run(script, arguments) for _ in range(options.runs)]
    order = []
    per_section = {}
    for spans, _ in runs:
        seen = {}
        for name, seconds in spans:
            seen[name] = seen.get(name, 0.0) + seconds
            if name not in order:
                order.append(name)
        for name, seconds in seen.items():
            per_section.setdefault(name, []).append(seconds)
    totals = [total for _, total in runs]

    print("probe script: %s (%d runs)" % (options.script, len(runs)))
    print("%-40s %10s %10s %10s" % ("section", "median ms", "min ms", "max ms"))
    for name in order:
        values = per_section[name]
        print(
            "%-40s %10.1f %10.1f %10.1f"
            % (name, statistics.median(values) * 1e3, min(values) * 1e3, max(values) * 1e3)
        )
    print(
        "%-40s %10.1f %10.1f %10.1f"
        % ("total", statistics.median(totals) * 1e3, min(totals) * 1e3, max(totals) * 1e3)
    )
    if options.json:
        with open(options.json, "w") as handle:
            json.dump({"script": options.script, "runs": runs}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
