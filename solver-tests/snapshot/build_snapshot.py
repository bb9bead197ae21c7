#!/usr/bin/env python3
"""Build manifests/snapshots/sglang-0.5.9-cu130.json from recorded and transcribed data.

Inputs, all in this directory or `reference/` beside it:
- `reference/sglang-0.5.9-closure.pypi.json`, `reference/seed-pins.pypi.json`: the
  default index's metadata and CPython 3.11 files (PyPI's JSON API, file names and
  sha256 only);
- `default-cp312.json`, `cu13-cp312.json`: the same releases' CPython 3.12 files and the
  CUDA 13 wheels torch+cu130 needs, recorded with `record.py`;
- `transcribed.json`: the PyTorch cu130 and sgl-kernel cu130 releases, from documented
  facts, each with its provenance; a file there is a name, {"filename", "sha256"} (the
  sha256 taken from public pins of that exact file, named in the provenance), or
  {"filename", "sha256_from": "reference/PAGE.html"}: the digest that the copied index
  page publishes for that file name in its `#sha256=` fragment;
- `reference/sgl-kernel-cu130-index.html`: sgl-kernel's CUDA 13 index page. A page that
  lists one file name more than once (a re-upload under the same URL) counts only its
  last listing, the upload the URL serves now; `upgrade`'s page reader does the same.

Output: the `Snapshot` format (schema 1): index names, file names, sha256, never a URL.
Usage: build_snapshot.py [OUTPUT]  (run from anywhere; Python standard library only)
"""

import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
REFERENCE = HERE / "reference"


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class _Links(HTMLParser):
    """Collects (file name, sha256) from the `<a href="…#sha256=…">` links of a page."""

    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        if tag != "a":
            return
        href = dict(attrs).get("href") or ""
        url = urlsplit(href)
        if url.fragment.startswith("sha256="):
            filename = unquote(url.path.rsplit("/", 1)[-1])
            self.links.append((filename, url.fragment[len("sha256="):].lower()))


def index_page_digests(path):
    """File name -> sha256 of a PEP 503 page; a name listed again replaces its earlier
    listing (the URL serves the last upload only)."""
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    digests = {}
    for filename, sha256 in parser.links:
        digests[filename] = sha256
    return digests


def resolve_file(file):
    """A transcribed file entry with `sha256_from` turned into {"filename", "sha256"}."""
    if not isinstance(file, dict) or "sha256_from" not in file:
        return file
    digests = index_page_digests(HERE / file["sha256_from"])
    if file["filename"] not in digests:
        sys.exit(f"{file['sha256_from']} does not list {file['filename']}")
    return {"filename": file["filename"], "sha256": digests[file["filename"]]}


def add(index, record, provenance=None):
    name = normalize(record["name"])
    releases = index.setdefault(name, [])
    release = next((r for r in releases if r["version"] == record["version"]), None)
    if release is None:
        release = {
            "version": record["version"],
            "requires_dist": record["requires_dist"],
            "requires_python": record.get("requires_python"),
            "files": [],
        }
        if provenance:
            release["provenance"] = provenance
        releases.append(release)
    files = record["files"] if "files" in record else [record["file"]]
    for file in files:
        # A file is a name (sharing the record's sha256, if any) or {"filename", "sha256"}.
        if isinstance(file, dict):
            filename, sha256 = file["filename"], file.get("sha256")
        else:
            filename, sha256 = file, record.get("sha256")
        if all(existing["filename"] != filename for existing in release["files"]):
            release["files"].append({"filename": filename, "sha256": sha256})


def main():
    output = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "manifests/snapshots/sglang-0.5.9-cu130.json"
    default = {}
    for name in ("sglang-0.5.9-closure.pypi.json", "seed-pins.pypi.json"):
        for record in json.loads((REFERENCE / name).read_text())["packages"]:
            add(default, record)
    for name in ("default-cp312.json", "cu13-cp312.json"):
        recorded = json.loads((HERE / name).read_text())
        provenance = None
        if name.startswith("cu13"):
            provenance = "recorded: record.py cu13-pins.txt 3.12 (the CUDA 13.0 wheels PyTorch's release/2.9 build matrix pins for torch+cu130)"
        for record in recorded["packages"]:
            add(default, record, provenance)
    transcribed = json.loads((HERE / "transcribed.json").read_text())
    indexes = []
    for index_name in ("pytorch-cu130", "sgl-cu130"):
        packages = {}
        for record in transcribed["indexes"][index_name]:
            record = dict(record, files=[resolve_file(file) for file in record["files"]])
            add(packages, record, record["provenance"])
        indexes.append({"name": index_name, "packages": dict(sorted(packages.items()))})
    indexes.append({"name": "default", "packages": dict(sorted(default.items()))})
    for index in indexes:
        for releases in index["packages"].values():
            releases.sort(key=lambda release: release["version"])
            for release in releases:
                release["files"].sort(key=lambda file: file["filename"])
    snapshot = {
        "schema": 1,
        "recorded": "2026-12-02",
        "how": "solver-tests/snapshot/build_snapshot.py: default index from solver-tests/snapshot/reference/ (CPython 3.11 files) and record.py (CPython 3.12 files, CUDA 13 wheels); pytorch-cu130 and sgl-cu130 transcribed (see each release's provenance)",
        "universe": {"indexes": indexes},
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(snapshot, indent=1) + "\n")


if __name__ == "__main__":
    main()
