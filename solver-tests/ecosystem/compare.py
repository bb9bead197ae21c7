#!/usr/bin/env python3
"""Real ML stacks, ours against `uv pip compile`, live against the Python index.

Every directory beside this script is one stack: `plain.yaml` (no system toolkit) and
`toolkit.yaml` (the same packages with a system CUDA toolkit). For each stack this
script, with cold caches (a fresh empty cache directory for every run):

- runs `upgrade lock MANIFEST --live` (release build) for both manifests, timed;
- runs `uv pip compile` of the manifest's packages for the same interpreter and platform
  (CPython 3.12, `x86_64-manylinux_2_35`), timed;
- checks that uv accepts our `==` pins as a complete, consistent set: `uv pip compile` of
  our pins must return exactly them;
- with `--record`: records the index responses the resolution read with
  `upgrade index snapshot MANIFEST --live` (`snapshot-plain.json`, `snapshot-toolkit.json`)
  and what uv answered (`uv.json`), so `cargo test --test ecosystem` replays the
  comparison offline;
- writes every number to `target/ecosystem/results.json` and, with `--results FILE`,
  the section `## Real stacks against uv` of FILE (bench/RESULTS.md).

uv, PyYAML and packaging are installed from the Python index into `target/ecosystem/venv`
with pip. uv talks to the index pip is configured with (`PIP_INDEX_URL` / `pip config`,
read at run time by bench/resolve.py's helpers). Usage:

    solver-tests/ecosystem/compare.py [--record] [--results bench/RESULTS.md] [STACK...]
    solver-tests/ecosystem/compare.py --stacks-dir target/my-stacks      # stacks of your own
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import resolve as bench  # noqa: E402  (uv_index_arguments, uv_interpreter_arguments, uv_environment)

WORK = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "ecosystem"
VENV = WORK / "venv"
VARIANTS = ("plain", "toolkit")
PLATFORM = ["--python-version", "3.12", "--python-platform", "x86_64-manylinux_2_35"]
HEADING = "## Real stacks against uv"


def venv_tools():
    """uv, and the venv's interpreter that has PyYAML and packaging."""
    python = VENV / "bin" / "python"
    if not (VENV / "bin" / "uv").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "--quiet", "uv", "pyyaml", "packaging"], check=True)
    return VENV / "bin" / "uv", python


def ours_binary():
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    subprocess.run(["cargo", "build", "--locked", "--quiet", "--release", "--bin", "upgrade"], cwd=ROOT, check=True)
    return target / "release" / "upgrade"


def requirements_of(manifest):
    """The manifest's packages as PEP 508 requirements, e.g. `jax[cuda12]`."""
    import yaml

    document = yaml.safe_load(manifest.read_text())
    requirements = []
    for name, entry in (document.get("packages") or {}).items():
        if isinstance(entry, str):
            version, extras = entry, []
        else:
            version, extras = entry.get("version", ""), entry.get("extras", [])
        extra = f"[{','.join(extras)}]" if extras else ""
        requirements.append(f"{name}{extra}{version}")
    return requirements


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def canonical(version):
    from packaging.version import Version

    return str(Version(version))


def redacted(text):
    """`text` without hosts or this machine's paths: an error recorded in uv.json names
    neither (a build's output may name another index's host)."""
    text = re.sub(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"`<>]+", "<url>", text)
    return text.replace(str(WORK), "<work>").replace(str(ROOT), "<root>")


def run_timed(command, environment, timeout):
    start = time.perf_counter()
    try:
        result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        code, stderr = result.returncode, result.stderr
    except subprocess.TimeoutExpired:
        code, stderr = None, f"timed out after {timeout} s"
    return time.perf_counter() - start, code, stderr


def uv_compile(uv, requirements, cache, output, environment, timeout):
    """Seconds, the pins {name: version} or None, and the error text."""
    source = output.with_suffix(".in")
    source.write_text("".join(f"{line}\n" for line in requirements))
    command = [str(uv), "pip", "compile", str(source), *PLATFORM, *bench.uv_interpreter_arguments(),
               "--cache-dir", str(cache), "--native-tls",
               "--quiet", "--no-header", "--no-annotate", "-o", str(output)] + bench.uv_index_arguments()
    seconds, code, stderr = run_timed(command, environment, timeout)
    if code != 0:
        return seconds, None, redacted(stderr.strip())[-2000:]
    pins = {}
    for line in output.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[normalize(name.split("[")[0])] = canonical(version.split(";")[0].strip())
    return seconds, pins, ""


def ours_lock(ours, manifest, cache, output, timeout):
    command = [str(ours), "lock", str(manifest), "--live", "--cache-dir", str(cache), "--pip-python", sys.executable,
               "--format", "json", "-o", str(output)]
    seconds, code, stderr = run_timed(command, None, timeout)
    if code != 0:
        return seconds, None, f"exit {code}: {stderr.strip()[-3000:]}"
    packages = json.loads(output.read_text())["packages"]
    return seconds, packages, stderr.strip().splitlines()[-1] if stderr.strip() else ""


def top_level(pins, names):
    return {name: pins.get(name) for name in names}


def pins_text(pins):
    return ", ".join(f"{name} {version or '—'}" for name, version in pins.items())


def compare_stack(stack, tools, options, scratch):
    uv, ours, environment = tools
    # Relative to the repository root, which every command runs in: recordings name no machine's paths.
    manifests = {variant: (stack / f"{variant}.yaml").relative_to(ROOT) for variant in VARIANTS}
    requirements = requirements_of(ROOT / manifests["plain"])
    names = [normalize(re.split(r"[\[<>=!~ ;]", line, maxsplit=1)[0]) for line in requirements]
    uv_cache = scratch / f"{stack.name}-uv-cache"
    recorded_uv = stack / "uv.json"
    if options.ours_only and recorded_uv.exists():
        answer = json.loads(recorded_uv.read_text())
        uv_seconds, uv_pins, uv_error = answer["seconds"], answer["all"], answer["error"] or ""
    else:
        uv_seconds, uv_pins, uv_error = uv_compile(uv, requirements, uv_cache, scratch / f"{stack.name}-uv.txt",
                                                   environment, options.timeout)
    # The check of our pins is not timed: one uv cache kept for every check.
    check_cache = WORK / "uv-check-cache"
    result = {"stack": stack.name, "requirements": requirements,
              "uv": {"seconds": round(uv_seconds, 2), "error": uv_error,
                     "top_level": top_level(uv_pins, names) if uv_pins else None},
              "ours": {}}
    for variant, manifest in manifests.items():
        cache = scratch / f"{stack.name}-{variant}-cache"
        seconds, packages, note = ours_lock(ours, manifest, cache, scratch / f"{stack.name}-{variant}.json",
                                            options.timeout)
        entry = {"seconds": round(seconds, 2), "note": note, "top_level": None, "uv_accepts": None}
        if packages is not None:
            pins = {normalize(p["name"]): canonical(p["version"]) for p in packages}
            entry["top_level"] = top_level(pins, names)
            lines = [f"{p['name']}{'[' + ','.join(p['extras']) + ']' if p.get('extras') else ''}=={p['version']}"
                     for p in packages]
            _, accepted, error = uv_compile(uv, lines, check_cache, scratch / f"{stack.name}-{variant}-check.txt",
                                            environment, options.timeout)
            if accepted is None:
                entry["uv_accepts"] = False
                entry["uv_check"] = error[-600:]
            else:
                extra = sorted(set(accepted) - set(pins))
                changed = sorted(n for n in pins if accepted.get(n) != pins[n])
                entry["uv_accepts"] = not extra and not changed
                if extra or changed:
                    entry["uv_check"] = f"uv adds {extra}, changes or drops {changed}"
        entry["agrees"] = entry["top_level"] is not None and entry["top_level"] == result["uv"]["top_level"]
        if options.record:
            snapshot = (stack / f"snapshot-{variant}.json").relative_to(ROOT)
            command = [str(ours), "index", "snapshot", str(manifest), "--live", "--cache-dir", str(cache),
                       "--python", sys.executable, "-o", str(snapshot)]
            recorded = subprocess.run(command, capture_output=True, text=True, timeout=options.timeout, cwd=ROOT)
            entry["snapshot"] = (ROOT / snapshot).exists()
            if not entry["snapshot"]:
                print(f"  {stack.name}/{variant}: no snapshot: {recorded.stderr.strip()[-500:]}", file=sys.stderr)
        shutil.rmtree(cache, ignore_errors=True)
        result["ours"][variant] = entry
    shutil.rmtree(uv_cache, ignore_errors=True)
    if options.record and not (options.ours_only and recorded_uv.exists()):
        record = {"recorded": datetime.date.today().isoformat(), "uv_version": options.uv_version,
                  "seconds": round(uv_seconds, 2),
                  "requirements": requirements, "platform": " ".join(PLATFORM),
                  "top_level": result["uv"]["top_level"], "error": uv_error or None,
                  "all": uv_pins}
        (stack / "uv.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return result


def cell(entry, uv_top):
    if entry["top_level"] is None:
        return "unresolvable" if entry["note"].startswith("exit 3") else "error"
    text = "= uv" if entry["top_level"] == uv_top else pins_text(entry["top_level"])
    if entry["uv_accepts"] is False:
        text += " (uv refuses the pins)"
    return text


def table(results, uv_version):
    lines = [HEADING, "",
             f"`solver-tests/ecosystem/compare.py` on {datetime.date.today().isoformat()}: each stack live against the "
             f"Python index with cold caches (a fresh empty cache for every run), ours (`upgrade lock --live`, "
             f"release build) without and with a system toolkit, against `uv pip compile` ({uv_version}) for "
             f"CPython 3.12 on `x86_64-manylinux_2_35`; one run each. \"= uv\" means the same top-level pins. "
             f"The offline replay is `cargo test --test ecosystem`; known differences are listed in "
             f"`solver-tests/ecosystem/differences.yaml`.", "",
             "| stack | uv: top-level pins | uv s | ours, no toolkit | s | ours, toolkit | s |",
             "| --- | --- | ---: | --- | ---: | --- | ---: |"]
    totals = {"uv": 0.0, "plain": 0.0, "toolkit": 0.0}
    agree = {"plain": 0, "toolkit": 0}
    accepted = {"plain": 0, "toolkit": 0}
    for result in results:
        uv_top = result["uv"]["top_level"]
        uv_text = pins_text(uv_top) if uv_top else "fails"
        totals["uv"] += result["uv"]["seconds"]
        row = [result["stack"], uv_text, f"{result['uv']['seconds']:.1f}"]
        for variant in VARIANTS:
            entry = result["ours"][variant]
            totals[variant] += entry["seconds"]
            agree[variant] += bool(entry["agrees"])
            accepted[variant] += bool(entry["uv_accepts"])
            row += [cell(entry, uv_top), f"{entry['seconds']:.1f}"]
        lines.append("| " + " | ".join(row) + " |")
    count = len(results)
    lines.append(f"| **total** ({count} stacks) | | **{totals['uv']:.1f}** | {agree['plain']}/{count} = uv | "
                 f"**{totals['plain']:.1f}** | {agree['toolkit']}/{count} = uv | **{totals['toolkit']:.1f}** |")
    lines += ["", f"Totals: uv {totals['uv']:.1f} s; ours {totals['plain']:.1f} s without a toolkit "
              f"({agree['plain']}/{count} top-level pins equal uv's, uv accepts our pins in {accepted['plain']}), "
              f"{totals['toolkit']:.1f} s with one ({agree['toolkit']}/{count}, accepted in {accepted['toolkit']}).",
              ""]
    return "\n".join(lines)


def write_section(path, text):
    content = path.read_text() if path.exists() else ""
    start = content.find(HEADING)
    if start < 0:
        content = content.rstrip("\n") + "\n\n" + text
    else:
        following = content.find("\n## ", start + len(HEADING))
        rest = content[following + 1:] if following >= 0 else ""
        content = content[:start] + text + ("\n" + rest if rest else "")
    path.write_text(content)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("stacks", nargs="*", help="stack directories to run (default: all)")
    parser.add_argument("--skip", action="append", default=[], help="a stack not to run (its last results are kept)")
    parser.add_argument("--record", action="store_true", help="write snapshots and uv.json beside the manifests")
    parser.add_argument("--results", type=Path, help="write the table into this file, e.g. bench/RESULTS.md")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for one command")
    parser.add_argument("--ours-only", action="store_true",
                        help="reuse uv's recorded answers and seconds (uv.json) instead of running uv again")
    parser.add_argument("--binary", type=Path, help="our binary (default: cargo build --release)")
    parser.add_argument("--stacks-dir", type=Path, default=HERE,
                        help="where the stack directories are (default: beside this script); one inside the "
                             "repository, e.g. under target/, to try stacks without adding them")
    options = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    uv, python = venv_tools()
    if Path(sys.prefix).resolve() != VENV.resolve():
        # PyYAML and packaging live in the venv: run again from there.
        os.execv(str(python), [str(python), __file__] + sys.argv[1:])
    ours = options.binary.resolve() if options.binary else ours_binary()
    options.uv_version = subprocess.run([str(uv), "--version"], capture_output=True, text=True).stdout.strip()
    environment = bench.uv_environment()
    stacks_dir = options.stacks_dir.resolve()
    stacks = sorted(path for path in stacks_dir.iterdir() if (path / "plain.yaml").exists())
    if options.stacks:
        stacks = [path for path in stacks if path.name in options.stacks]
    stacks = [path for path in stacks if path.name not in options.skip]
    # Results are kept per stack across runs: a run of some stacks updates theirs.
    results_file = WORK / ("results.json" if stacks_dir == HERE else f"results-{stacks_dir.name}.json")
    kept = {result["stack"]: result for result in json.loads(results_file.read_text())} \
        if results_file.exists() else {}
    scratch = Path(tempfile.mkdtemp(prefix="ecosystem-", dir=WORK))
    results = []
    try:
        for stack in stacks:
            result = compare_stack(stack, (uv, ours, environment), options, scratch)
            result["run"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            results.append(result)
            kept[result["stack"]] = result
            results_file.write_text(json.dumps(sorted(kept.values(), key=lambda r: r["stack"]), indent=1) + "\n")
            plain, toolkit = result["ours"]["plain"], result["ours"]["toolkit"]
            print(f"{stack.name:24} uv {result['uv']['seconds']:6.1f} s {pins_text(result['uv']['top_level'] or {})}"
                  f" | ours {plain['seconds']:5.1f} s {cell(plain, result['uv']['top_level'])}"
                  f" | toolkit {toolkit['seconds']:5.1f} s {cell(toolkit, result['uv']['top_level'])}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    present = {path.name for path in stacks_dir.iterdir() if (path / "plain.yaml").exists()}
    text = table([kept[name] for name in sorted(kept) if name in present], options.uv_version)
    print(text)
    if options.results:
        write_section(options.results, text)


if __name__ == "__main__":
    main()
