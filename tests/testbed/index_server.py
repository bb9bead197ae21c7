#!/usr/bin/env python3
"""Package index server of the testbed (stdlib only).

Serves the fixture wheels built by fixtures/build.py as two indexes, and the
CUDA runfiles:

    /default/simple/                 PEP 503 HTML or PEP 691 JSON (Accept header,
    /default/simple/<project>/       or ?format=<content type>)
    /default/files/<wheel>           the wheel; links carry #sha256=...
    /default/files/<wheel>.metadata  PEP 658/714 core metadata
    /cu130/simple/...  /cu130/files/...   the same for the "cu130" index
    /files/<runfile>                 CUDA runfiles; /files/<runfile>.sha256 too
    /apt/<file>                      the flat apt repository (Release, Packages[.gz], *.deb)
    /fixtures.json                   every file with its sha256

Usage: index_server.py --root FIXTURES [--bind ADDR] [--port N] [--port-file F]
Port 0 picks a free port; the chosen one is written to --port-file.
"""

import argparse
import hashlib
import html
import http.server
import json
import os
import re
import signal
import sys
import threading
import urllib.parse
import zipfile
from pathlib import Path

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
TEXT_HTML = "text/html"
API_VERSION = "1.1"
INDEXES = ("default", "cu130")


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


class Index:
    """One index: project name -> list of file records."""

    def __init__(self, name, directory):
        self.name = name
        self.directory = directory
        self.projects = {}
        self.metadata = {}
        for path in sorted(directory.glob("*.whl")):
            data = path.read_bytes()
            with zipfile.ZipFile(path) as archive:
                meta_name = next(n for n in archive.namelist()
                                 if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
                metadata = archive.read(meta_name)
            fields = {}
            for line in metadata.decode().splitlines():
                if not line:
                    break
                key, _, value = line.partition(": ")
                fields.setdefault(key, value)
            project = normalize(fields["Name"])
            record = {
                "filename": path.name,
                "sha256": sha256_bytes(data),
                "size": len(data),
                "requires_python": fields.get("Requires-Python"),
                "metadata_sha256": sha256_bytes(metadata),
                "version": fields["Version"],
                "display_name": fields["Name"],
            }
            self.projects.setdefault(project, []).append(record)
            self.metadata[path.name] = metadata


def negotiate(accept, query_format):
    """Pick the response type like PyPI does (PEP 691); None means 406."""
    if query_format:
        return query_format if query_format in (JSON_TYPE, HTML_TYPE, TEXT_HTML) else None
    if not accept:
        return TEXT_HTML
    choices = []
    for position, part in enumerate(accept.split(",")):
        pieces = [piece.strip() for piece in part.split(";")]
        media = pieces[0].lower()
        quality = 1.0
        for parameter in pieces[1:]:
            if parameter.startswith("q="):
                try:
                    quality = float(parameter[2:])
                except ValueError:
                    quality = 0.0
        if media in ("*/*", "application/*", "text/*"):
            media = TEXT_HTML if media != "application/*" else JSON_TYPE
        if media in (JSON_TYPE, HTML_TYPE, TEXT_HTML, "application/vnd.pypi.simple.latest+json",
                     "application/vnd.pypi.simple.latest+html") and quality > 0:
            media = media.replace("latest", "v1")
            choices.append((-quality, position, media))
    if not choices:
        return None
    return sorted(choices)[0][2]


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, root):
        self.root = root
        self.indexes = {name: Index(name, root / "wheels" / name) for name in INDEXES}
        self.files = {path.name: path for path in (root / "files").glob("*") if path.is_file()}
        # What was served (bodies only), for benchmarks: `GET /_stats`.
        self.stats_lock = threading.Lock()
        self.bytes_served = 0
        self.requests_served = 0
        super().__init__(address, Handler)

    def count(self, size):
        with self.stats_lock:
            self.bytes_served += size
            self.requests_served += 1


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "testbed-index/1.0"
    protocol_version = "HTTP/1.1"

    def do_HEAD(self):  # noqa: N802
        self.handle_request(head=True)

    def do_GET(self):  # noqa: N802
        self.handle_request(head=False)

    def handle_request(self, head):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        parts = [urllib.parse.unquote(part) for part in url.path.split("/")]
        # parts[0] is "" because the path starts with "/".
        if url.path == "/_stats":
            with self.server.stats_lock:
                stats = {"bytes": self.server.bytes_served, "requests": self.server.requests_served}
            return self.send_bytes(200, json.dumps(stats).encode(), "application/json", head,
                                   counted=False)
        if url.path == "/fixtures.json":
            return self.send_bytes(200, (self.server.root / "fixtures.json").read_bytes(),
                                   "application/json", head)
        if len(parts) == 3 and parts[1] == "files":
            return self.send_file(parts[2], head)
        # The flat apt repository (`deb [trusted=yes] http://HOST:8080/apt ./`); apt asks
        # for /apt/./Release, /apt/./Packages.gz, /apt/./NAME.deb.
        apt = [part for part in parts[2:] if part not in ("", ".")]
        if len(parts) >= 3 and parts[1] == "apt" and len(apt) == 1:
            path = self.server.root / "apt" / apt[0]
            if "/" not in apt[0] and not apt[0].startswith(".") and path.is_file():
                return self.send_bytes(200, path.read_bytes(), "application/octet-stream", head)
        if len(parts) >= 3 and parts[1] in self.server.indexes:
            index = self.server.indexes[parts[1]]
            if parts[2] == "simple":
                return self.simple(index, parts[3:], url, query, head)
            if parts[2] == "files" and len(parts) == 4:
                return self.index_file(index, parts[3], head)
        return self.send_bytes(404, b"Not Found\n", "text/plain", head)

    def simple(self, index, rest, url, query, head):
        if not url.path.endswith("/"):
            return self.redirect(url.path + "/")
        rest = [part for part in rest if part]
        media = negotiate(self.headers.get("Accept"), (query.get("format") or [None])[0])
        if media is None:
            return self.send_bytes(406, b"Not Acceptable\n", "text/plain", head)
        if not rest:
            return self.root_page(index, media, head)
        if len(rest) != 1:
            return self.send_bytes(404, b"Not Found\n", "text/plain", head)
        project = normalize(rest[0])
        if project != rest[0]:
            return self.redirect(f"/{index.name}/simple/{project}/")
        if project not in index.projects:
            return self.send_bytes(404, b"Not Found\n", "text/plain", head)
        return self.project_page(index, project, media, head)

    def root_page(self, index, media, head):
        names = sorted(index.projects)
        if media == JSON_TYPE:
            body = {"meta": {"api-version": API_VERSION},
                    "projects": [{"name": name} for name in names]}
            return self.send_bytes(200, json.dumps(body).encode(), JSON_TYPE, head)
        lines = ["<!DOCTYPE html>", "<html>", "  <head>",
                 '    <meta name="pypi:repository-version" content="1.1">',
                 "    <title>Simple index</title>", "  </head>", "  <body>"]
        lines += [f'    <a href="{name}/">{name}</a><br/>' for name in names]
        lines += ["  </body>", "</html>", ""]
        return self.send_bytes(200, "\n".join(lines).encode(), media, head)

    def project_page(self, index, project, media, head):
        records = index.projects[project]
        if media == JSON_TYPE:
            files = []
            for record in records:
                entry = {
                    "filename": record["filename"],
                    "url": f"../../files/{urllib.parse.quote(record['filename'])}",
                    "hashes": {"sha256": record["sha256"]},
                    "requires-python": record["requires_python"],
                    "core-metadata": {"sha256": record["metadata_sha256"]},
                    "dist-info-metadata": {"sha256": record["metadata_sha256"]},
                    "size": record["size"],
                    "yanked": False,
                }
                files.append(entry)
            versions = sorted({record["version"] for record in records})
            body = {"meta": {"api-version": API_VERSION}, "name": project,
                    "versions": versions, "files": files}
            return self.send_bytes(200, json.dumps(body).encode(), JSON_TYPE, head)
        lines = ["<!DOCTYPE html>", "<html>", "  <head>",
                 '    <meta name="pypi:repository-version" content="1.1">',
                 f"    <title>Links for {project}</title>", "  </head>", "  <body>",
                 f"    <h1>Links for {project}</h1>"]
        for record in records:
            href = f"../../files/{urllib.parse.quote(record['filename'])}#sha256={record['sha256']}"
            attributes = f'href="{href}"'
            if record["requires_python"]:
                attributes += f' data-requires-python="{html.escape(record["requires_python"])}"'
            meta = f"sha256={record['metadata_sha256']}"
            attributes += f' data-dist-info-metadata="{meta}" data-core-metadata="{meta}"'
            lines.append(f"    <a {attributes}>{html.escape(record['filename'])}</a><br/>")
        lines += ["  </body>", "</html>", ""]
        return self.send_bytes(200, "\n".join(lines).encode(), media, head)

    def index_file(self, index, name, head):
        if name.endswith(".metadata") and name[: -len(".metadata")] in index.metadata:
            return self.send_bytes(200, index.metadata[name[: -len(".metadata")]],
                                   "application/octet-stream", head)
        path = index.directory / name
        if "/" in name or not name.endswith(".whl") or not path.is_file():
            return self.send_bytes(404, b"Not Found\n", "text/plain", head)
        return self.send_bytes(200, path.read_bytes(), "application/octet-stream", head)

    def send_file(self, name, head):
        if name.endswith(".sha256") and name[: -len(".sha256")] in self.server.files:
            target = name[: -len(".sha256")]
            digest = hashlib.sha256(self.server.files[target].read_bytes()).hexdigest()
            return self.send_bytes(200, f"{digest}  {target}\n".encode(), "text/plain", head)
        if name not in self.server.files:
            return self.send_bytes(404, b"Not Found\n", "text/plain", head)
        return self.send_bytes(200, self.server.files[name].read_bytes(),
                               "application/octet-stream", head)

    def redirect(self, location):
        self.send_response(301)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def send_bytes(self, status, body, content_type, head, counted=True):
        if counted:
            self.server.count(0 if head else len(body))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if content_type in (JSON_TYPE, HTML_TYPE, TEXT_HTML):
            self.send_header("Vary", "Accept")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002
        sys.stderr.write(f"{self.client_address[0]} {format % args}\n")
        sys.stderr.flush()


def main(argv):
    parser = argparse.ArgumentParser(description="testbed package index server")
    parser.add_argument("--root", required=True, type=Path, help="fixtures directory")
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path)
    args = parser.parse_args(argv)
    server = Server((args.bind, args.port), args.root.resolve())
    if args.port_file:
        temporary = args.port_file.with_suffix(".tmp")
        temporary.write_text(f"{server.server_address[1]}\n")
        os.replace(temporary, args.port_file)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()
    server.server_close()


if __name__ == "__main__":
    main(sys.argv[1:])
