#!/usr/bin/env python3
"""Benchmark: resolving the SGLang 0.5.9 closure, ours against `uv pip compile`, offline
and online with a cold cache and with a warm one.

Offline: `upgrade lock manifests/cuda12.8-baseline.yaml` on the embedded snapshot (the
default-index stack: torch 2.9.1, sgl-kernel 0.3.21, flashinfer 0.6.3, sglang 0.5.9,
CPython 3.12, manylinux_2_35 x86_64). uv: the same five requirements for the same
interpreter and platform, `--offline` from a cache warmed by one online run, once as
they are and once constrained to the snapshot's versions (the same universe as ours).

Online, cold cache: `upgrade lock … --live --cache-dir EMPTY` (live resolution against
the index pip is configured with) against `uv pip compile … --cache-dir EMPTY`, a fresh
empty cache directory for every run of each.

Online, warm cache: the same two commands, each with its own cache directory filled by
one run first, so what is left is revalidation, parsing and resolving.

Runs alternate in one invocation; medians and the ratios are printed.

uv is installed from the Python index into `bench/.venv` with pip, and talks to the
index pip is configured with: `PIP_INDEX_URL` / `pip config` are read at run time, never
written here. Usage: bench/resolve.py [--runs N] [--online-runs N] [--warm-runs N] [--profile dev|release]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "bench" / ".venv"
MANIFEST = ROOT / "manifests" / "cuda12.8-baseline.yaml"
REQUIREMENTS = ["torch==2.9.1", "sgl-kernel==0.3.21", "flashinfer-python==0.6.3", "flashinfer-cubin==0.6.3", "sglang==0.5.9"]


def pip_setting(environment_name, config_key):
    value = os.environ.get(environment_name)
    if value:
        return value
    result = subprocess.run([sys.executable, "-m", "pip", "config", "get", config_key],
                            capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else None


def uv_binary():
    uv = VENV / "bin" / "uv"
    if not uv.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "--quiet", "uv"], check=True)
    return uv


def uv_index_arguments():
    arguments = []
    index = pip_setting("PIP_INDEX_URL", "global.index-url")
    if index:
        arguments += ["--index-url", index]
    find_links = pip_setting("PIP_FIND_LINKS", "global.find-links")
    if find_links:
        for link in find_links.split():
            arguments += ["--find-links", link]
    return arguments


def uv_interpreter_arguments():
    """The interpreter uv builds sdists with: this one. Without `--python`, uv looks for a
    CPython 3.12 and tries to download one first, which costs seconds offline."""
    return ["--python", sys.executable, "--no-python-downloads"]


def uv_environment():
    environment = dict(os.environ)
    cert = pip_setting("PIP_CERT", "global.cert")
    if cert:
        environment["SSL_CERT_FILE"] = cert
    return environment


def ours_binary(profile):
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    command = ["cargo", "build", "--quiet", "--bin", "upgrade"]
    if profile == "release":
        command.append("--release")
    subprocess.run(command, cwd=ROOT, check=True)
    return target / ("release" if profile == "release" else "debug") / "upgrade"


def timed(command, environment=None):
    start = time.perf_counter()
    subprocess.run(command, check=True, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--online-runs", type=int, default=3)
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--profile", choices=["dev", "release"], default="dev")
    options = parser.parse_args()
    uv = uv_binary()
    ours = ours_binary(options.profile)
    scratch = Path(tempfile.mkdtemp(prefix="resolve-bench-"))
    try:
        requirements = scratch / "requirements.in"
        requirements.write_text("\n".join(REQUIREMENTS) + "\n")
        lock = scratch / "ours.json"
        subprocess.run([str(ours), "lock", str(MANIFEST), "--format", "json", "-o", str(lock)], check=True)
        pins = json.loads(lock.read_text())["packages"]
        constraints = scratch / "constraints.txt"
        constraints.write_text("".join(f"{p['name']}=={p['version']}\n" for p in pins))
        cache = scratch / "uv-cache"
        common = [str(uv), "pip", "compile", str(requirements), "--python-version", "3.12",
                  "--python-platform", "x86_64-manylinux_2_35", "--cache-dir", str(cache),
                  *uv_interpreter_arguments(), "--native-tls", "--quiet", "-o", str(scratch / "uv.txt")]
        environment = uv_environment()
        # Warm the cache online once (with and without the constraints).
        subprocess.run(common + uv_index_arguments(), check=True, env=environment)
        subprocess.run(common + uv_index_arguments() + ["-c", str(constraints)], check=True, env=environment)
        commands = {
            "ours": [str(ours), "lock", str(MANIFEST), "--format", "json", "-o", str(scratch / "ours-run.json")],
            "uv": common + ["--offline"],
            "uv (snapshot versions)": common + ["--offline", "-c", str(constraints)],
        }
        times = {name: [] for name in commands}
        for _ in range(options.runs):
            for name, command in commands.items():
                times[name].append(timed(command, environment))
        medians = {name: statistics.median(values) for name, values in times.items()}
        print(f"resolving the SGLang 0.5.9 closure ({len(pins)} packages), {options.runs} alternating runs each")
        for name, median in medians.items():
            print(f"  {name:24} median {median * 1000:8.1f} ms   min {min(times[name]) * 1000:8.1f} ms")
        print(f"  ours / uv (offline): {medians['ours'] / medians['uv']:.3f}")
        print(f"  ours / uv (offline, snapshot versions): {medians['ours'] / medians['uv (snapshot versions)']:.3f}")

        # Online, a fresh empty cache for every run of each contender.
        online = {"ours (live)": [], "uv (online)": []}
        live_lock = scratch / "ours-live.json"
        for run in range(options.online_runs):
            for name in online:
                cold = scratch / f"cold-{name.split()[0]}-{run}"
                if name == "ours (live)":
                    command = [str(ours), "lock", str(MANIFEST), "--live", "--cache-dir", str(cold),
                               "--pip-python", sys.executable, "--format", "json", "-o", str(live_lock)]
                else:
                    command = [str(uv), "pip", "compile", str(requirements), "--python-version", "3.12",
                               "--python-platform", "x86_64-manylinux_2_35", "--cache-dir", str(cold),
                               *uv_interpreter_arguments(), "--native-tls", "--quiet", "-o", str(scratch / "uv-online.txt")] + uv_index_arguments()
                online[name].append(timed(command, environment))
                shutil.rmtree(cold, ignore_errors=True)
        online_medians = {name: statistics.median(values) for name, values in online.items()}
        live_pins = json.loads(live_lock.read_text())["packages"]
        print(f"online with a cold cache ({len(live_pins)} packages locked live), {options.online_runs} alternating runs each")
        for name, median in online_medians.items():
            print(f"  {name:24} median {median:8.2f} s    min {min(online[name]):8.2f} s")
        print(f"  ours / uv (online, cold cache): {online_medians['ours (live)'] / online_medians['uv (online)']:.3f}")

        # Online, warm: one cache per contender, filled by one run first.
        if options.warm_runs:
            warm = {"ours (live, warm)": [], "uv (online, warm)": []}
            commands = {
                "ours (live, warm)": [str(ours), "lock", str(MANIFEST), "--live", "--cache-dir", str(scratch / "warm-ours"),
                                      "--pip-python", sys.executable, "--format", "json", "-o", str(live_lock)],
                "uv (online, warm)": [str(uv), "pip", "compile", str(requirements), "--python-version", "3.12",
                                      "--python-platform", "x86_64-manylinux_2_35", "--cache-dir", str(scratch / "warm-uv"),
                                      *uv_interpreter_arguments(), "--native-tls", "--quiet", "-o", str(scratch / "uv-warm.txt")] + uv_index_arguments(),
            }
            for command in commands.values():
                timed(command, environment)
            for _ in range(options.warm_runs):
                for name, command in commands.items():
                    warm[name].append(timed(command, environment))
            warm_medians = {name: statistics.median(values) for name, values in warm.items()}
            print(f"online with a warm cache, {options.warm_runs} alternating runs each")
            for name, median in warm_medians.items():
                print(f"  {name:24} median {median:8.2f} s    min {min(warm[name]):8.2f} s")
            print(f"  ours / uv (online, warm cache): {warm_medians['ours (live, warm)'] / warm_medians['uv (online, warm)']:.3f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
