#!/usr/bin/env python3
"""Fleet benchmark: `upgrade apply` against `ansible-playbook` on testbed nodes.

    bench/fleet.py [--nodes 1,4,8,16] [--runs 3] [--upgrade target/release/upgrade]
                   [--contenders upgrade,ansible]

(root: the testbed's namespaces). For each fleet size it brings up fresh `cuda12.8`
testbeds (tests/testbed/up) and times, alternating which contender goes first:

- a full upgrade to the seed manifest (a testbed overlay of
  manifests/sglang-0.5.9-cu130.yaml: the testbed's runfile, indexes and a git copy of
  the fixture SGLang) and a no-op re-apply on the converged nodes, with
  `upgrade apply MANIFEST -i INVENTORY --ssh-config F --format json --no-verify`
  (per-host `--host` runs in parallel where this `upgrade` has no `-i`);
- the same with `ansible-playbook bench/ansible/upgrade-steps.yml`, which does the
  same steps by hand: the same runfile, the same wheels with `pip install --no-deps`
  (the files of upgrade's own lock), the same git checkout and patch of SGLang, the
  same ld.so.conf.d file and ldconfig, the same sitecustomize block;
- a bare `ssh node true` per node (one node, and all nodes at once).

Round trips per node: `upgrade` reports its own (`round_trips` in the JSON). For
Ansible, `ansible_ssh_executable` is a wrapper that logs each `ssh`/`sftp`/`scp`
process Ansible starts; every one is at least one round trip over the multiplexed
connection (ControlPersist), so the count per node is a lower bound.

ansible-core is installed with pip, by name, from the index pip is configured with,
into target/tmp/ansible-venv (shared with tests/ansible_testbed.rs), unless
`ansible-playbook` is given with --ansible-playbook. Results: a `## Fleet` section
of bench/RESULTS.md (replaced, the rest of the file kept) and JSON with every run.

`bench/fleet.py prepare --testbed DIR --out DIR` writes the overlay manifest, the
snapshot and the inventory for one running testbed and copies the SGLang repository
to its nodes (what examples/ansible/README.md uses against the testbed).
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "manifests" / "sglang-0.5.9-cu130.yaml"
RUNFILE_13 = "cuda_13.0.1_580.82.07_linux.run"
NODE_REPOSITORY = "/opt/fixtures/sglang"
NODE_PYTHON = "/root/.pyenv/versions/3.11.7/bin/python3"
ANSIBLE_VENV = ROOT / "target" / "tmp" / "ansible-venv"
FIXTURES = ROOT / "target" / "tmp" / "testbed-fixtures"
STEPS_PLAYBOOK = ROOT / "bench" / "ansible" / "upgrade-steps.yml"
COMMAND_BOUND = 900  # seconds any one command of the benchmark may take


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(argv, *, check=True, env=None, cwd=None, timeout=COMMAND_BOUND, capture=True):
    result = subprocess.run([str(a) for a in argv], env=env, cwd=cwd, timeout=timeout,
                            capture_output=capture, text=True, stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise RuntimeError(f"`{' '.join(map(str, argv))}` exited {result.returncode}\n"
                           f"{result.stdout}\n{result.stderr}")
    return result


# --- the testbed ----------------------------------------------------------------------

def testbed_up(count, directory):
    run([ROOT / "tests" / "testbed" / "up", count, "--persona", "cuda12.8", "--dir", directory,
         "--fixtures", FIXTURES, "--owner-pid", os.getpid()])
    return json.loads((Path(directory) / "testbed.json").read_text())


def testbed_down(directory):
    run([ROOT / "tests" / "testbed" / "down", "--dir", directory], check=False)


def runfile(state, name):
    for entry in state["runfiles"]:
        if entry["file"] == name:
            return entry["url"], entry["sha256"]
    raise KeyError(name)


def overlay_text(state):
    """The seed manifest with the testbed's runfile, indexes and repository: the same
    substitutions as tests/common/seed.rs, by key rather than by value."""
    runfile_url, runfile_sha = runfile(state, RUNFILE_13)
    cu130 = state["indexes"]["cu130"]
    out = []
    section = None
    skipping = False
    for line in SEED.read_text().splitlines():
        if re.match(r"^[a-z_]+:", line):
            section = line.split(":", 1)[0]
        # The fixture indexes carry no torchvision or torchaudio.
        if line in ("  torchvision:", "  torchaudio:"):
            skipping = True
            continue
        if skipping and line.startswith("    "):
            continue
        skipping = False
        stripped = line.strip()
        indent = line[: len(line) - len(line.lstrip())]
        if section == "toolkit" and stripped.startswith("url: "):
            line = f"{indent}url: {runfile_url}"
        elif section == "toolkit" and stripped.startswith("sha256: "):
            line = f"{indent}sha256: {runfile_sha}"
        elif section == "indexes" and stripped.startswith("url: "):
            line = f"{indent}url: {cu130}"
        elif section == "packages" and stripped.startswith("git: "):
            line = f"{indent}git: file://{NODE_REPOSITORY}"
        elif section == "packages" and stripped.startswith("patches: "):
            line = f"{indent}patches: [patches/flashinfer-0.6.4.patch]"
        elif section == "target" and stripped.startswith("python_version: "):
            line = f'{indent}python_version: "3.11"'
        elif section == "verify" and stripped.startswith("log: "):
            line = f"{indent}log: /tmp/sglang/cuda13_baseline.log"
        out.append(line)
    return "\n".join(out) + "\n"


def sglang_repository(work):
    """A git repository holding the fixture SGLang at tag v0.5.9."""
    repo = Path(work) / "sglang"
    if repo.exists():
        shutil.rmtree(repo)
    (repo / "python" / "sglang").mkdir(parents=True)
    source = ROOT / "tests" / "fixtures" / "sglang-source" / "python"
    for name in ("pyproject.toml", "backend.py"):
        shutil.copy(source / name, repo / "python" / name)
    for path in (ROOT / "tests" / "testbed" / "fixtures" / "py" / "sglang").glob("*.py"):
        shutil.copy(path, repo / "python" / "sglang" / path.name)
    git = ["git", "-c", "user.name=fixture", "-c", "user.email=fixture@example.invalid"]
    run(git + ["init", "-q"], cwd=repo)
    run(git + ["add", "-A"], cwd=repo)
    run(git + ["commit", "-qm", "SGLang v0.5.9 (fixture)"], cwd=repo)
    run(git + ["tag", "v0.5.9"], cwd=repo)
    return repo


def install_repository(state, repo, node):
    script = (f"tar -C {repo} -cf - . | ssh -F {state['ssh_config']} {node} "
              f"'rm -rf {NODE_REPOSITORY} && mkdir -p {NODE_REPOSITORY} && tar -xf - -C {NODE_REPOSITORY}'")
    run(["sh", "-c", script])


def upgrade_env(state, work):
    env = dict(os.environ)
    env["PIP_INDEX_URL"] = state["indexes"]["default"]
    env["XDG_CACHE_HOME"] = str(Path(work) / "controller-cache")
    return env


def write_inventory(state, path):
    lines = ["all:", "  hosts:"]
    for node in state["nodes"]:
        lines.append(f"    {node['name']}: {{}}")
    lines += ["  vars:",
              f"    ansible_python_interpreter: {NODE_PYTHON}",
              f"    ansible_ssh_common_args: -F {state['ssh_config']}",
              # The nodes have no sudo; the playbook's `become` goes through su (root to root).
              "    ansible_become_method: ansible.builtin.su"]
    Path(path).write_text("\n".join(lines) + "\n")


def prepare(state, work, upgrade):
    """Overlay manifest, patch, snapshot, inventory; the repository on every node."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    manifest = work / "overlay.yaml"
    manifest.write_text(overlay_text(state))
    (work / "patches").mkdir(exist_ok=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "sglang-source" / "flashinfer-0.6.4.patch",
                work / "patches" / "flashinfer-0.6.4.patch")
    snapshot = work / "snapshot.json"
    run([upgrade, "index", "snapshot", manifest, "-o", snapshot, "--python-version", "3.11"],
        env=upgrade_env(state, work))
    repo = sglang_repository(work)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda node: install_repository(state, repo, node["name"]), state["nodes"]))
    write_inventory(state, work / "inventory.yml")
    return manifest, snapshot


def main_prepare(arguments):
    state = json.loads((Path(arguments.testbed) / "testbed.json").read_text())
    manifest, snapshot = prepare(state, arguments.out, arguments.upgrade)
    print(json.dumps({"manifest": str(manifest), "snapshot": str(snapshot),
                      "inventory": str(Path(arguments.out) / "inventory.yml"),
                      "ssh_config": state["ssh_config"]}, indent=1))


# --- contenders -----------------------------------------------------------------------

def ssh(state, node, script):
    return run(["ssh", "-F", state["ssh_config"], node, "--", script]).stdout


def normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def reference(upgrade, work):
    """What the hand-written playbook needs that only upgrade knows: the lock's wheels,
    what it removes, the ld.so.conf.d file and the sitecustomize block, read from a
    reference node converged by `upgrade apply`."""
    directory = Path(work) / "reference-testbed"
    state = testbed_up(1, directory)
    try:
        manifest, snapshot = prepare(state, Path(work) / "reference", upgrade)
        env = upgrade_env(state, Path(work) / "reference")
        lock = json.loads(run([upgrade, "lock", manifest, "--snapshot", snapshot, "--format", "json"],
                              env=env).stdout)
        before = ssh(state, "node0", "/opt/ml-env/bin/python3 -m pip list --format=json --disable-pip-version-check")
        run([upgrade, "apply", "--yes", manifest, "--host", "node0", "--ssh-config", state["ssh_config"],
             "--snapshot", snapshot, "--no-verify", "--format", "json"], env=env)
        conf = ssh(state, "node0", "cat /etc/ld.so.conf.d/cuda-13-0.conf")
        site = ssh(state, "node0", f"cat {SITECUSTOMIZE}")
    finally:
        testbed_down(directory)
    begin, end = "# >>> cuda-upgrade managed block >>>\n", "# <<< cuda-upgrade managed block <<<"
    block = site[site.index(begin) + len(begin):site.index(end)].rstrip("\n")
    locked = {normalized(p["name"]) for p in lock["packages"]}
    remove = sorted(p["name"] for p in json.loads(before)
                    if normalized(p["name"]) not in locked | {"pip", "setuptools", "wheel"})
    pins = {}
    for package in lock["packages"]:
        if package.get("source") == "index":
            pins.setdefault(package["index"], []).append(f"{package['name']}=={package['version']}")
    return {"pins": pins, "remove": remove, "ldconfig": conf, "block": block}


SITECUSTOMIZE = "/root/.pyenv/versions/3.11.7/lib/python3.11/sitecustomize.py"


def steps_vars(state, work, ref):
    """`-e @vars.json` of bench/ansible/upgrade-steps.yml for one testbed."""
    url, sha = runfile(state, RUNFILE_13)
    index_url = {"default": state["indexes"]["default"]}
    wheels = [{"url": index_url.get(name, state["indexes"]["cu130"]), "pins": pins}
              for name, pins in sorted(ref["pins"].items())]
    return {
        "bench_toolkit_prefix": "/usr/local/cuda-13.0",
        "bench_runfile_url": url,
        "bench_runfile_sha256": sha,
        "bench_python": "/opt/ml-env/bin/python3",
        "bench_pip": "/opt/ml-env/bin/pip",
        "bench_wheels": wheels,
        "bench_remove": ref["remove"],
        "bench_source_url": f"file://{NODE_REPOSITORY}",
        "bench_source_rev": "v0.5.9",
        "bench_source_subdirectory": "python",
        "bench_source_patch": str(Path(work) / "patches" / "flashinfer-0.6.4.patch"),
        "bench_source_checkout": "/var/lib/fleet-bench/src/sglang",
        "bench_source_marker": "/var/lib/fleet-bench/src/sglang.done",
        "bench_ldconfig_file": "/etc/ld.so.conf.d/cuda-13-0.conf",
        "bench_ldconfig_content": ref["ldconfig"],
        "bench_sitecustomize": SITECUSTOMIZE,
        "bench_block": ref["block"],
    }


def wrappers(directory):
    """`ssh`, `sftp` and `scp` that log each start (one line: program and arguments)
    to $FLEET_SSH_LOG and run the real program."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for program in ("ssh", "sftp", "scp"):
        real = shutil.which(program, path="/usr/bin:/bin")
        path = directory / program
        path.write_text("#!/bin/sh\n"
                        f"printf '{program} %s\\n' \"$(printf '%s ' \"$@\" | tr '\\n' ' ' | cut -c1-3000)\" >> \"$FLEET_SSH_LOG\"\n"
                        f"exec {real} \"$@\"\n")
        path.chmod(0o755)
    return directory


def ssh_starts(log_file, nodes):
    """Processes started per node, from the wrappers' log."""
    counts = {node: 0 for node in nodes}
    if Path(log_file).exists():
        for line in Path(log_file).read_text().splitlines():
            tokens = set(line.split())
            for node in nodes:
                if node in tokens:
                    counts[node] += 1
                    break
    return counts


def contender_env(state, work, log_file, wrapper_dir):
    env = upgrade_env(state, work)
    env["PATH"] = f"{wrapper_dir}:{env['PATH']}"
    env["FLEET_SSH_LOG"] = str(log_file)
    return env


def supports_inventory(upgrade):
    text = run([upgrade, "apply", "--help"], check=False).stdout
    return "--inventory" in text


def parse_outcomes(text):
    """Outcomes from `upgrade apply --format json`: one object, a list, an object with
    `nodes`/`outcomes`, or one object a line."""
    text = text.strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]
    if isinstance(value, list):
        return value
    for key in ("nodes", "outcomes", "hosts"):
        if isinstance(value.get(key), list):
            return value[key]
        if isinstance(value.get(key), dict):
            return [dict(v, node=k) for k, v in value[key].items()]
    return [value]


def run_upgrade(state, work, manifest, snapshot, upgrade, use_inventory, log_file, wrapper_dir):
    nodes = [node["name"] for node in state["nodes"]]
    env = contender_env(state, work, log_file, wrapper_dir)
    common = ["--ssh-config", state["ssh_config"], "--snapshot", snapshot, "--no-verify", "--format", "json"]
    started = time.monotonic()
    if use_inventory:
        result = run([upgrade, "apply", "--yes", manifest, "-i", Path(work) / "inventory.yml",
                      "--parallel", len(nodes)] + common, env=env, check=False)
        seconds = time.monotonic() - started
        outcomes = parse_outcomes(result.stdout)
        ok = result.returncode == 0
    else:
        def one(node):
            result = run([upgrade, "apply", "--yes", manifest, "--host", node] + common, env=env, check=False)
            outcome = parse_outcomes(result.stdout)[0] if result.stdout.strip() else {"ok": False}
            outcome["node"] = node
            return result.returncode, outcome
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            results = list(pool.map(one, nodes))
        seconds = time.monotonic() - started
        outcomes = [outcome for _, outcome in results]
        ok = all(code == 0 for code, _ in results)
    ok = ok and len(outcomes) == len(nodes) and all(o.get("ok") for o in outcomes)
    applied = sum(1 for o in outcomes for s in o.get("steps", []) if s.get("outcome") == "applied")
    return {"seconds": seconds, "ok": ok, "applied_steps": applied,
            "round_trips": [o.get("round_trips") for o in outcomes],
            "ssh_starts": list(ssh_starts(log_file, nodes).values())}


def run_ansible(state, work, playbook_binary, log_file, wrapper_dir):
    nodes = [node["name"] for node in state["nodes"]]
    env = contender_env(state, work, log_file, wrapper_dir)
    env.update({"ANSIBLE_PIPELINING": "True", "ANSIBLE_HOME": str(Path(work) / "ansible-home"),
                "ANSIBLE_LOCAL_TEMP": str(Path(work) / "ansible-tmp"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_SSH_CONTROL_PATH_DIR": str(Path(work) / "cp"),
                "ANSIBLE_FORKS": str(len(nodes))})
    env.pop("PIP_INDEX_URL", None)
    started = time.monotonic()
    result = run([playbook_binary, "-i", Path(work) / "inventory.yml", STEPS_PLAYBOOK,
                  "-e", f"@{Path(work) / 'steps-vars.json'}"], env=env, check=False)
    seconds = time.monotonic() - started
    changed = sum(int(m) for m in re.findall(r"changed=(\d+)", result.stdout.split("PLAY RECAP")[-1]))
    if result.returncode != 0:
        log(result.stdout[-3000:])
    return {"seconds": seconds, "ok": result.returncode == 0, "changed_tasks": changed,
            "ssh_starts": list(ssh_starts(log_file, nodes).values())}


def bare_ssh(state):
    """`ssh node true`: one node five times (median), and every node at once."""
    singles = []
    for _ in range(5):
        started = time.monotonic()
        run(["/usr/bin/ssh", "-F", state["ssh_config"], state["nodes"][0]["name"], "true"])
        singles.append(time.monotonic() - started)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(state["nodes"])) as pool:
        list(pool.map(lambda node: run(["/usr/bin/ssh", "-F", state["ssh_config"], node["name"], "true"]),
                      state["nodes"]))
    return {"one": statistics.median(singles), "all": time.monotonic() - started}


def ansible_playbook_binary(given):
    if given:
        return Path(given)
    binary = ANSIBLE_VENV / "bin" / "ansible-playbook"
    if not binary.exists():
        log(f"installing ansible-core into {ANSIBLE_VENV}")
        run([sys.executable, "-m", "venv", ANSIBLE_VENV])
        run([ANSIBLE_VENV / "bin" / "python3", "-m", "pip", "install", "--quiet", "ansible-core"])
    return binary


def one_round(size, contender, work, upgrade, ref, playbook_binary, use_inventory, wrapper_dir):
    """A fresh testbed of `size` nodes: prepare, full upgrade, no-op re-apply."""
    directory = Path(work) / "testbed"
    state = testbed_up(size, directory)
    try:
        manifest, snapshot = prepare(state, work, upgrade)
        if contender == "ansible":
            (Path(work) / "steps-vars.json").write_text(json.dumps(steps_vars(state, work, ref)))
        baseline = bare_ssh(state)
        results = {"baseline": baseline}
        for phase in ("full", "noop"):
            log_file = Path(work) / f"ssh-{contender}-{phase}.log"
            if log_file.exists():
                log_file.unlink()
            if contender == "upgrade":
                results[phase] = run_upgrade(state, work, manifest, snapshot, upgrade, use_inventory,
                                             log_file, wrapper_dir)
            else:
                results[phase] = run_ansible(state, work, playbook_binary, log_file, wrapper_dir)
            log(f"  {size} node(s) {contender} {phase}: {results[phase]['seconds']:.2f} s "
                f"ok={results[phase]['ok']}")
        torch = ssh(state, state["nodes"][-1]["name"],
                    "/opt/ml-env/bin/python3 -c 'import torch; print(torch.__version__)'").strip()
        results["torch"] = torch
        return results
    finally:
        testbed_down(directory)
def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def machine():
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    memory = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal"):
            memory = int(line.split()[1]) // (1024 * 1024)
    ssh_version = run(["ssh", "-V"], check=False).stderr.strip()
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory,
            "kernel": platform.release(), "load": os.getloadavg(), "openssh": ssh_version}


def fmt(value, digits=2):
    return "–" if value is None else f"{value:.{digits}f}"


def report(summary, arguments, info, ansible_version, upgrade_version, use_inventory):
    lines = ["## Fleet", "",
             "`upgrade apply` against `ansible-playbook` on `cuda12.8` testbed nodes, each run on "
             "fresh nodes: a full upgrade to the seed manifest (testbed overlay), then a no-op "
             "re-apply; contenders alternate, medians of the runs. Reproduce (root):", "",
             "```sh",
             "cargo build --release",
             f"bench/fleet.py --nodes {','.join(map(str, summary))} --runs {arguments.runs}",
             "```", "",
             f"Measured {time.strftime('%Y-%m-%d')} on {info['cpu']}, {info['cores']} cores, "
             f"{info['memory_gib']} GiB, Linux {info['kernel']}, load average at start "
             f"{info['load'][0]:.1f} (other builds shared the machine); {info['openssh']}; "
             f"{upgrade_version}; ansible-core {ansible_version} (forks = nodes, SSH pipelining, "
             "ControlPersist, no fact gathering).", "",
             "- `upgrade`: `upgrade apply MANIFEST "
             + ("-i INVENTORY --parallel N" if use_inventory else "--host NODE` per node in parallel (this build has no `-i`); `")
             + "--ssh-config F --snapshot S --no-verify --format json` (release build).",
             "- Ansible: [`bench/ansible/upgrade-steps.yml`](ansible/upgrade-steps.yml), the same "
             "steps by hand: the same runfile and flags, the lock's wheels with `pip install "
             "--no-deps` and the same removals, the same SGLang checkout, patch and `--no-deps` "
             "install, the same ld.so.conf.d file and ldconfig, the same sitecustomize block "
             "(`blockinfile`).",
             "- Round trips per node: `upgrade`'s own count (`round_trips`: commands on the node; "
             "one SSH connection, multiplexed). Ansible: `ssh`/`sftp`/`scp` processes it starts "
             "per node (logged by wrappers first on `PATH`); each is at least one round trip over "
             "its multiplexed connection, so this is a lower bound.",
             "- `ssh true`: a bare `ssh -F ssh_config node true` (new connection): one node "
             "(median of 5), and every node at once.", "",
             "| nodes | runs | `upgrade` full (s) | Ansible full (s) | `upgrade` no-op (s) | Ansible no-op (s) "
             "| `ssh true` one / all (s) | round trips per node, full / no-op: `upgrade` | Ansible (ssh starts) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for size, row in summary.items():
        lines.append(
            f"| {size} | {row['runs']} | {fmt(row['upgrade_full'])} | {fmt(row['ansible_full'])} "
            f"| {fmt(row['upgrade_noop'])} | {fmt(row['ansible_noop'])} "
            f"| {fmt(row['ssh_one'])} / {fmt(row['ssh_all'])} "
            f"| {fmt(row['upgrade_rt_full'], 0)} / {fmt(row['upgrade_rt_noop'], 0)} "
            f"| {fmt(row['ansible_rt_full'], 0)} / {fmt(row['ansible_rt_noop'], 0)} |")
    lines += ["", "Ratios (medians):", ""]
    sizes = list(summary)
    for size, row in summary.items():
        parts = []
        if row["ansible_noop"] and row["upgrade_noop"]:
            parts.append(f"no-op: Ansible / `upgrade` **{row['ansible_noop'] / row['upgrade_noop']:.1f}×**")
            parts.append(f"`upgrade` no-op / `ssh true` all nodes **{row['upgrade_noop'] / row['ssh_all']:.2f}×** "
                         f"(one node's `ssh true`: {row['upgrade_noop'] / row['ssh_one']:.2f}×)")
        if row["ansible_full"] and row["upgrade_full"]:
            parts.append(f"full: Ansible / `upgrade` **{row['ansible_full'] / row['upgrade_full']:.1f}×**")
        first = summary[sizes[0]]
        if sizes[0] == 1 and size != 1 and row["upgrade_full"] and first["upgrade_full"]:
            parts.append(f"`upgrade` full {size} nodes / 1 node **{row['upgrade_full'] / first['upgrade_full']:.2f}×**")
        lines.append(f"- {size} node(s): " + "; ".join(parts))
    lines += ["", "Targets (issue 10): a no-op re-apply of 8 nodes at least 10× faster than Ansible "
              "and at most 1.5× a bare `ssh node true`; a full upgrade of 16 nodes at most 2× one "
              "node's time.", ""]
    return "\n".join(lines)


def write_section(path, section):
    """Put `section` (its first line is its `## ` heading) in place of the section of that
    heading in the results file at `path`, or at its end; the rest of the file is kept."""
    path = Path(path)
    text = path.read_text() if path.exists() else "# Benchmark results\n\n"
    heading = section.splitlines()[0]
    match = re.search(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", text, flags=re.S | re.M)
    if match:
        text = text[:match.start()] + section.rstrip("\n") + "\n\n" + text[match.end():]
    else:
        text = text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    path.write_text(text.rstrip("\n") + "\n")


def main_bench(arguments):
    if os.geteuid() != 0:
        sys.exit("bench/fleet.py needs root (the testbed's namespaces)")
    upgrade = Path(arguments.upgrade).resolve()
    if not upgrade.exists():
        sys.exit(f"{upgrade} is missing: cargo build --release")
    contenders = arguments.contenders
    playbook_binary, ansible_version = None, "not run"
    if "ansible" in contenders:
        playbook_binary = ansible_playbook_binary(arguments.ansible_playbook)
        ansible_version = run([playbook_binary, "--version"]).stdout.split("[core ")[1].split("]")[0]
    upgrade_version = run([upgrade, "--version"], check=False).stdout.strip() or "upgrade"
    use_inventory = supports_inventory(upgrade)
    info = machine()
    work = Path(arguments.work or tempfile.mkdtemp(prefix="fleet-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"work directory {work}; `-i` {'supported' if use_inventory else 'not supported: per-host runs'}")
    wrapper_dir = wrappers(work / "wrappers")
    # What the hand-written playbook needs; upgrade alone needs none of it.
    ref = reference(upgrade, work) if "ansible" in contenders else None
    runs = {}
    deadline = time.monotonic() + arguments.max_minutes * 60
    for size in arguments.nodes:
        runs[size] = []
        for repetition in range(arguments.runs):
            order = ["upgrade", "ansible"] if repetition % 2 == 0 else ["ansible", "upgrade"]
            order = [contender for contender in order if contender in contenders]
            entry = {}
            for contender in order:
                if time.monotonic() > deadline:
                    log("--max-minutes reached; stopping")
                    break
                entry[contender] = one_round(size, contender, work / f"{size}-{repetition}-{contender}",
                                             upgrade, ref, playbook_binary, use_inventory, wrapper_dir)
            if entry:
                runs[size].append(entry)
    (work / "runs.json").write_text(json.dumps(runs, indent=1))
    for earlier in arguments.include or []:
        for size, entries in json.loads(Path(earlier).read_text()).items():
            runs.setdefault(int(size), []).extend(entries)
    runs = dict(sorted(runs.items()))
    summary = {}
    for size, entries in runs.items():
        def values(contender, phase, key="seconds", reduce=None):
            out = []
            for entry in entries:
                if contender in entry and entry[contender][phase]["ok"]:
                    value = entry[contender][phase][key]
                    out.append(reduce(value) if reduce else value)
            return out
        baselines = [e[c]["baseline"] for e in entries for c in e]
        summary[size] = {
            "runs": len(entries),
            "upgrade_full": median(values("upgrade", "full")),
            "ansible_full": median(values("ansible", "full")),
            "upgrade_noop": median(values("upgrade", "noop")),
            "ansible_noop": median(values("ansible", "noop")),
            "ssh_one": median([b["one"] for b in baselines]),
            "ssh_all": median([b["all"] for b in baselines]),
            "upgrade_rt_full": median(values("upgrade", "full", "round_trips", median)),
            "upgrade_rt_noop": median(values("upgrade", "noop", "round_trips", median)),
            "ansible_rt_full": median(values("ansible", "full", "ssh_starts", median)),
            "ansible_rt_noop": median(values("ansible", "noop", "ssh_starts", median)),
        }
        if not summary[size]["runs"]:
            del summary[size]
    section = report(summary, arguments, info, ansible_version, upgrade_version, use_inventory)
    print(section)
    write_section(arguments.results, section)
    log(f"runs: {work / 'runs.json'}; section written to {arguments.results}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=lambda text: [int(n) for n in text.split(",")],
                        default=[1, 4, 8, 16], help="fleet sizes, e.g. 1,4,8,16")
    parser.add_argument("--runs", type=int, default=3, help="runs per size and contender")
    parser.add_argument("--upgrade", default=str(ROOT / "target" / "release" / "upgrade"))
    parser.add_argument("--ansible-playbook", help="an ansible-playbook to use instead of installing one")
    parser.add_argument("--contenders", type=lambda text: text.split(","), default=["upgrade", "ansible"],
                        help="who runs, e.g. `upgrade` alone for its no-op against `ssh true`")
    parser.add_argument("--results", default=str(ROOT / "bench" / "RESULTS.md"))
    parser.add_argument("--work", help="a directory for testbeds and logs (default: a new one in /tmp)")
    parser.add_argument("--max-minutes", type=float, default=120,
                        help="start no new round after this long")
    parser.add_argument("--include", action="append", metavar="RUNS_JSON",
                        help="add the runs of an earlier invocation (its runs.json) to the figures")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("prepare", help="overlay manifest, snapshot, inventory for a running testbed")
    p.add_argument("--testbed", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--upgrade", default=str(ROOT / "target" / "debug" / "upgrade"))
    arguments = parser.parse_args()
    if arguments.command == "prepare":
        main_prepare(arguments)
    else:
        main_bench(arguments)


if __name__ == "__main__":
    main()
