#!/usr/bin/env python3
"""Record exact releases from the index pip is configured with, reduced to plain data.

For each `name==version` line of REQUIREMENTS, asks pip (its own configuration decides
which index) for the wheel it would install on CPython PYTHON / Linux x86_64 with glibc
up to 2.35, without installing or downloading the wheel itself (`pip install --dry-run
--report`, PEP 658 metadata), and writes one record per release: name, version,
requires_python, requires_dist, file name and sha256. URLs are dropped: only file names
and hashes are kept.

Usage: record.py REQUIREMENTS PYTHON OUTPUT.json
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def platforms():
    tags = [f"manylinux_2_{minor}_x86_64" for minor in range(35, 4, -1)]
    tags += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
    arguments = []
    for tag in tags:
        arguments += ["--platform", tag]
    return arguments


def record(requirements, python):
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [
            sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps",
            "--ignore-installed", "--quiet", "--report", str(report),
            "--only-binary=:all:", "--python-version", python,
            "--target", str(Path(scratch) / "target"), *platforms(), *requirements,
        ]
        subprocess.run(command, check=True)
        installs = json.loads(report.read_text())["install"]
    records = []
    for item in installs:
        metadata = item["metadata"]
        info = item["download_info"]
        digest = info.get("archive_info", {}).get("hash", "")
        records.append({
            "name": metadata["name"],
            "version": metadata["version"],
            "requires_python": metadata.get("requires_python"),
            "requires_dist": metadata.get("requires_dist") or [],
            "file": info["url"].rsplit("/", 1)[-1],
            "sha256": digest.split("=", 1)[1] if digest.startswith("sha256=") else None,
        })
    return records


def main():
    requirements_file, python, output = sys.argv[1:4]
    requirements = [
        line.strip() for line in Path(requirements_file).read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    records = []
    failed = []
    # One pip call for all; on failure, one call each so a single missing wheel
    # (an sdist-only release) does not lose the others.
    try:
        records = record(requirements, python)
    except subprocess.CalledProcessError:
        for requirement in requirements:
            try:
                records += record([requirement], python)
            except subprocess.CalledProcessError:
                failed.append(requirement)
    records.sort(key=lambda record: (record["name"].lower(), record["version"]))
    Path(output).write_text(json.dumps({
        "how": f"solver-tests/snapshot/record.py (pip install --dry-run --no-deps --report, CPython {python}, linux x86_64, glibc <= 2.35, pip's configured index); URLs reduced to file names",
        "failed": failed,
        "packages": records,
    }, indent=1) + "\n")


if __name__ == "__main__":
    main()
