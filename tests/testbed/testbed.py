#!/usr/bin/env python3
"""The cuda-upgrade testbed: real sshd "GPU nodes" on this machine.

    testbed.py up N [--persona P | --personas P0,P1,...] [--slurm] [--dir DIR] [--fixtures DIR]
    testbed.py down [--dir DIR] [--keep-files] | down --sweep
    testbed.py status [--dir DIR]
    testbed.py stage NODE busy [--gpus 0,1] [--mib 8710] [--pid 433] [--name python3]
    testbed.py stage NODE idle | cudnn-mismatch | cudnn-ok | driver VERSION
    testbed.py ssh NODE [COMMAND...]
    testbed.py fixtures [--fixtures DIR]      (build only; no root needed)

Each node is Debian's /usr/sbin/sshd running in its own network namespace
(a veth on the testbed's bridge, address 10.200.<id>.<10+i>/24) and its own
mount and UTS namespaces, with overlays over /etc, /usr/local, /opt, /root
(pyenv's interpreter and its site-packages), /var and /usr/lib/x86_64-linux-gnu. All
state lives in the
testbed directory (--dir, else $TESTBED_DIR, else tests/testbed/.state/default);
`down` needs nothing else. Needs root.
"""

import argparse
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE_INIT = HERE / "node-init.sh"
INDEX_SERVER = HERE / "index_server.py"
BUILD_FIXTURES = HERE / "fixtures" / "build.py"
PERSONA_SETUP = HERE / "fixtures" / "node" / "persona-setup.sh"
NODE_FILES = HERE / "fixtures" / "node"
PERSONAS = json.loads((HERE / "personas.json").read_text())
REGISTRY = Path("/run/cuda-upgrade-testbed")
NODE_PYTHON = os.environ.get("TESTBED_NODE_PYTHON", "/root/.pyenv/versions/3.11.7/bin/python3")
# The fixtures need only some Python with its headers; nodes need NODE_PYTHON.
BUILD_PYTHON = NODE_PYTHON if os.access(NODE_PYTHON, os.X_OK) else sys.executable
OVERLAYS = ("etc", "usr_local", "opt", "root", "var", "usr_lib")
INDEX_PORT = 8080
SUBNETS = range(1, 251)
MAX_NODES = 200
BUS_IDS = ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
           "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"]


class TestbedError(Exception):
    pass


def log(message):
    print(f"testbed: {message}", file=sys.stderr, flush=True)


def run(command, check=True, **kwargs):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kwargs)
    if check and result.returncode != 0:
        raise TestbedError(f"`{' '.join(map(str, command))}` failed ({result.returncode}): "
                           f"{result.stderr.strip()}")
    return result


@contextlib.contextmanager
def locked(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write(path, text, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    temporary.chmod(mode)
    os.replace(temporary, path)


# --- processes, identified by pid + start time so a recycled pid is never killed

def start_time(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def same_process(record):
    return record and record.get("pid") and start_time(record["pid"]) == record.get("start")


def process_record(pid):
    return {"pid": pid, "start": start_time(pid)}


def terminate(pids, grace=3.0):
    """SIGTERM the given pids, then SIGKILL what is left after `grace` seconds."""
    pids = [pid for pid in pids if start_time(pid) is not None]
    starts = {pid: start_time(pid) for pid in pids}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        pids = [pid for pid in pids if start_time(pid) == starts[pid] and not zombie(pid)]
        if not pids:
            return
        time.sleep(0.05)
    for pid in pids:
        if start_time(pid) == starts[pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def netns_pids(netns):
    result = run(["ip", "netns", "pids", netns], check=False)
    if result.returncode != 0:
        return []
    return [int(pid) for pid in result.stdout.split()]


def netns_exists(netns):
    return (Path("/run/netns") / netns).exists()


def link_exists(name):
    return run(["ip", "link", "show", "dev", name], check=False).returncode == 0


# --- Slurm (`up --slurm`): the host is the controller, each node a Slurm node

SLURM_PACKAGES = {"/usr/sbin/slurmctld": "slurmctld", "/usr/sbin/slurmd": "slurmd",
                  "/usr/sbin/munged": "munge", "/usr/bin/scontrol": "slurm-client"}
SLURMD_PORT = 6818

# Runs inside a node's network, mount and UTS namespaces (nsenter into its sshd). `ip netns
# exec` gave the node a fresh /sys without the cgroup mounts slurmd 22.05 insists on
# reading, so the node gets the hybrid layout's tmpfs with the freezer and name=systemd
# hierarchies; then the node's own munged (socket in the node's private /run, the
# testbed's key), then slurmd as the node's Slurm node, in the foreground.
NODE_SLURM = r"""
set -eu
name=$1 run=$2
if ! mountpoint -q /sys/fs/cgroup; then
    mount -t tmpfs -o mode=755 testbed-cgroup /sys/fs/cgroup
    mkdir -p /sys/fs/cgroup/freezer /sys/fs/cgroup/systemd
    mount -t cgroup -o freezer testbed-cgroup /sys/fs/cgroup/freezer
    mount -t cgroup -o none,name=systemd testbed-cgroup /sys/fs/cgroup/systemd
fi
mkdir -p "$run" /var/spool/cuda-upgrade-testbed-slurmd /var/log
chmod 755 "$run"
munged -F --force --socket="$run/munge.socket" --key-file=/etc/testbed/slurm/munge.key \
    --pid-file="$run/munged.pid" --log-file=/var/log/cuda-upgrade-testbed-munged.log \
    --seed-file="$run/munged.seed" &
tries=0
while [ ! -S "$run/munge.socket" ] && [ "$tries" -lt 100 ]; do sleep 0.05; tries=$((tries + 1)); done
export SLURM_CONF=/etc/testbed/slurm/slurm.conf
exec slurmd -D -N "$name"
"""


def ensure_slurm():
    missing = sorted({package for path, package in SLURM_PACKAGES.items() if not Path(path).exists()})
    if not missing:
        return
    with locked(REGISTRY / "apt.lock"):
        missing = sorted({package for path, package in SLURM_PACKAGES.items()
                          if not Path(path).exists()})
        if not missing:
            return
        log(f"installing {' '.join(missing)} (apt-get)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env)


def slurm_run_dir(subnet):
    """The munge socket's directory: the same path on the host and inside each node (whose
    /run is its own), so one slurm.conf serves both."""
    return REGISTRY / f"slurm-{subnet}"


def slurm_conf(state, directory):
    slurm = state["slurm"]
    host = socket.gethostname().split(".")[0]
    lines = [
        "# slurm.conf of a cuda-upgrade testbed (tests/testbed/testbed.py): the host is the",
        "# controller, each node a Slurm node; simple plugins, no accounting, no cgroups.",
        f"ClusterName=cutb{state['subnet']}",
        f"SlurmctldHost={host}({state['host_ip']})",
        f"SlurmctldPort={slurm['port']}",
        f"SlurmdPort={SLURMD_PORT}",
        "AuthType=auth/munge", "CredType=cred/munge",
        f"AuthInfo=socket={slurm_run_dir(state['subnet']) / 'munge.socket'}",
        "SlurmUser=root", "SlurmdUser=root",
        f"StateSaveLocation={directory / 'slurm' / 'state'}",
        "SlurmdSpoolDir=/var/spool/cuda-upgrade-testbed-slurmd",
        f"SlurmctldPidFile={directory / 'slurm' / 'slurmctld.pid'}",
        f"SlurmdPidFile={slurm_run_dir(state['subnet']) / 'slurmd.pid'}",
        f"SlurmctldLogFile={directory / 'slurm' / 'slurmctld.log'}",
        "SlurmdLogFile=/var/log/cuda-upgrade-testbed-slurmd.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none", "MpiDefault=none", "SwitchType=switch/none",
        "SchedulerType=sched/builtin", "SelectType=select/linear",
        "SlurmdParameters=config_overrides", "ReturnToService=2", "SlurmdTimeout=300",
        "InactiveLimit=0", "KillWait=2", "MinJobAge=30",
    ]
    for node in state["nodes"]:
        lines.append(f"NodeName={node['name']} NodeAddr={node['ip']} CPUs=1 RealMemory=100 "
                     "State=UNKNOWN")
    lines.append("PartitionName=testbed Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def prepare_slurm(directory, state):
    """Write the controller's files (key, slurm.conf, cgroup.conf) into DIR/slurm."""
    slurm_dir = directory / "slurm"
    (slurm_dir / "state").mkdir(parents=True, exist_ok=True)
    slurm_dir.chmod(0o700)
    key = slurm_dir / "munge.key"
    if not key.exists():
        write(key, "", 0o600)
        key.write_bytes(os.urandom(1024))
    write(slurm_dir / "slurm.conf", slurm_conf(state, directory))
    write(slurm_dir / "cgroup.conf", "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n")


def node_slurm_files(directory, node):
    """The node's copy of the testbed's slurm.conf and munge key, in its /etc/testbed/slurm."""
    target = Path(node["dir"]) / "upper" / "etc" / "testbed" / "slurm"
    target.mkdir(parents=True, exist_ok=True)
    target.chmod(0o700)
    for name, mode in (("slurm.conf", 0o644), ("cgroup.conf", 0o644), ("munge.key", 0o600)):
        shutil.copy(directory / "slurm" / name, target / name)
        (target / name).chmod(mode)


def start_slurm(directory, state):
    """munged and slurmctld on the host, munged and slurmd in every node; waits (bounded)
    until every node is idle."""
    slurm = state["slurm"]
    slurm_dir = directory / "slurm"
    run_dir = slurm_run_dir(state["subnet"])
    run_dir.mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o755)
    socket_path = run_dir / "munge.socket"
    with open(slurm_dir / "munged.out", "ab") as output:
        munged = subprocess.Popen(
            ["munged", "-F", "--force", f"--socket={socket_path}",
             f"--key-file={slurm_dir / 'munge.key'}", f"--pid-file={run_dir / 'munged.pid'}",
             f"--log-file={slurm_dir / 'munged.log'}", f"--seed-file={run_dir / 'munged.seed'}"],
            stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True)
    slurm["munged"] = process_record(munged.pid)
    save_state(directory, state)
    deadline = time.monotonic() + 10
    while not socket_path.exists():
        if munged.poll() is not None or time.monotonic() > deadline:
            raise TestbedError(f"munged did not start; see {slurm_dir / 'munged.out'}")
        time.sleep(0.02)
    env = dict(os.environ, SLURM_CONF=slurm["conf"])
    with open(slurm_dir / "slurmctld.out", "ab") as output:
        controller = subprocess.Popen(
            ["slurmctld", "-D", "-f", slurm["conf"]], env=env, stdin=subprocess.DEVNULL,
            stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    slurm["slurmctld"] = process_record(controller.pid)
    save_state(directory, state)
    registry_update(state["subnet"], processes=[state["index_server"], slurm["munged"],
                                                slurm["slurmctld"]])
    for node in state["nodes"]:
        with open(Path(node["dir"]) / "slurmd.out", "ab") as output:
            process = subprocess.Popen(
                ["nsenter", "--target", str(node["sshd"]["pid"]), "--net", "--mount", "--uts",
                 "--", "/bin/sh", "-c", NODE_SLURM, "sh", node["name"], str(run_dir)],
                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                start_new_session=True)
        node["slurmd"] = process_record(process.pid)
    save_state(directory, state)
    deadline = time.monotonic() + 45
    names = [node["name"] for node in state["nodes"]]
    while True:
        result = run(["sinfo", "--noheader", "--Node", "--format=%N %t"], check=False, env=env)
        states = dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)
        if all(states.get(name) == "idle" for name in names):
            return
        if controller.poll() is not None:
            raise TestbedError(f"slurmctld exited; see {slurm_dir / 'slurmctld.log'}")
        if time.monotonic() > deadline:
            raise TestbedError(f"Slurm nodes not idle within 45 s ({states or result.stderr.strip()}); "
                               f"see {slurm_dir / 'slurmctld.log'} and each node's slurmd.out")
        time.sleep(0.2)


def slurm_port(subnet):
    """slurmctld listens on every address of the host: one port per testbed."""
    return 16800 + subnet


# --- fixtures and persona templates

def ensure_sshd():
    if Path("/usr/sbin/sshd").exists():
        return
    with locked(REGISTRY / "apt.lock"):
        if Path("/usr/sbin/sshd").exists():
            return
        log("installing openssh-server (apt-get)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "openssh-server"], env=env)


def ensure_fixtures(fixtures):
    fixtures.parent.mkdir(parents=True, exist_ok=True)
    with locked(fixtures.parent / (fixtures.name + ".lock")):
        run([BUILD_PYTHON, str(BUILD_FIXTURES), "--out", str(fixtures)])
    return json.loads((fixtures / "fixtures.json").read_text())


def ensure_template(fixtures, stack):
    template = fixtures / "personas" / stack
    if (template / "done").exists():
        return template
    with locked(fixtures.parent / (fixtures.name + ".lock")):
        if (template / "done").exists():
            return template
        log(f"building persona stack `{stack}` (once per fixture build)")
        staging = template.with_name(stack + ".building")
        if staging.exists():
            shutil.rmtree(staging)
        for name in OVERLAYS:
            (staging / "upper" / name).mkdir(parents=True)
            (staging / "work" / name).mkdir(parents=True)
        run(["unshare", "--mount", "--propagation", "private", "/bin/bash", str(NODE_INIT),
             str(staging), "run", "/bin/bash", str(PERSONA_SETUP), stack, str(fixtures)])
        shutil.rmtree(staging / "work")
        if template.exists():
            shutil.rmtree(template)
        os.replace(staging, template)
        (template / "done").write_text("ok\n")
    return template


# --- subnet allocation (one /24 per testbed, 10.200.<id>.0/24)

def used_subnets():
    result = run(["ip", "-4", "-o", "addr", "show"], check=False)
    used = set()
    for line in result.stdout.splitlines():
        for word in line.split():
            if word.startswith("10.200."):
                with contextlib.suppress(ValueError, IndexError):
                    used.add(int(word.split(".")[2]))
    return used


def allocate_subnet(directory):
    REGISTRY.mkdir(parents=True, exist_ok=True)
    with locked(REGISTRY / "registry.lock"):
        sweep_stale()
        taken = used_subnets()
        for subnet in SUBNETS:
            entry = REGISTRY / f"net-{subnet}.json"
            if entry.exists() or subnet in taken:
                continue
            # The creating `up` is recorded so that a concurrent `up` does not take this
            # entry for a stale one before its testbed.json exists.
            record = {"dir": str(directory), "subnet": subnet, "creator": process_record(os.getpid())}
            write(entry, json.dumps(record) + "\n")
            return subnet
    raise TestbedError("no free testbed subnet in 10.200.1-250.0/24")


def registry_update(subnet, **fields):
    entry = REGISTRY / f"net-{subnet}.json"
    data = json.loads(entry.read_text())
    data.update(fields)
    write(entry, json.dumps(data) + "\n")


def sweep_stale():
    """Clean up after testbeds whose directory is gone (a crash plus rm -rf)."""
    for entry in sorted(REGISTRY.glob("net-*.json")):
        try:
            data = json.loads(entry.read_text())
        except (OSError, ValueError):
            continue
        state_file = Path(data["dir"]) / "testbed.json"
        owned = False
        if state_file.exists():
            with contextlib.suppress(OSError, ValueError):
                owned = json.loads(state_file.read_text()).get("subnet") == data["subnet"]
        owner = data.get("owner")
        if not owned and same_process(data.get("creator")):
            continue  # still being brought up by a live `up`
        if owned:
            if not owner or same_process(owner):
                continue
            log(f"sweeping testbed {data['dir']}: its owner process {owner['pid']} is gone")
            teardown(Path(data["dir"]))
            if not entry.exists():
                continue
        log(f"sweeping stale testbed subnet {data['subnet']} (was {data['dir']})")
        prefix = f"cutb{data['subnet']}"
        namespaces = run(["ip", "netns", "list"], check=False).stdout.split()
        ours = [name for name in namespaces if name.startswith(prefix + "n")]
        pids = [pid for name in ours for pid in netns_pids(name)]
        for record in data.get("processes", []):
            if same_process(record):
                pids.append(record["pid"])
        terminate(pids)
        shutil.rmtree(slurm_run_dir(data["subnet"]), ignore_errors=True)
        for name in ours:
            run(["ip", "netns", "del", name], check=False)
        if not entry.exists():
            continue
        links = run(["ip", "-o", "link", "show"], check=False).stdout.splitlines()
        for line in links:
            name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
            if name.startswith(prefix + "v") or name == prefix + "br":
                run(["ip", "link", "del", name], check=False)
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()


# --- state

def state_path(directory):
    return directory / "testbed.json"


def load_state(directory):
    path = state_path(directory)
    if not path.exists():
        return None
    return json.loads(path.read_text())


def save_state(directory, state):
    write(state_path(directory), json.dumps(state, indent=1) + "\n")


# --- nodes

def gpu_uuid(seed):
    digest = hashlib.sha256(seed.encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def nvrm_text(persona, driver):
    module = persona["kernel_module"]
    if module == "nixbld":
        return (f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {driver}  Release Build  "
                "(nixbld@)  \nGCC version:  gcc version 15.3.0 (GCC) \n")
    if module == "proprietary":
        return (f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  "
                "Wed Aug 20 00:00:00 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1) \n")
    return (f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {driver}  Release Build  "
            "(dvs-builder@U22-I3-AF03-09-1)  Wed Aug 20 00:00:00 UTC 2025\n"
            "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1) \n")


def gpus_json(persona, seed):
    model = PERSONAS["gpu_models"][persona["gpu_model"]]
    count = persona["gpu_count"]
    gpus = []
    for index in range(count):
        bus = "00000000:00:06.0" if count == 1 else BUS_IDS[index % len(BUS_IDS)]
        gpu = dict(model, index=index, uuid=gpu_uuid(f"{seed}/{index}"), pci_bus_id=bus)
        gpus.append(gpu)
    return {"cuda_version": persona["cuda_version"], "gpus": gpus}


def sshd_config(ip):
    return f"""# sshd of a cuda-upgrade testbed node
Port 22
ListenAddress {ip}
HostKey /etc/testbed/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AuthorizedKeysFile /etc/testbed/ssh/authorized_keys
StrictModes yes
PrintMotd no
PrintLastLog no
UseDNS no
PidFile none
MaxStartups 64:30:128
AcceptEnv LANG LC_*
Subsystem sftp /usr/lib/openssh/sftp-server
"""


# (overlay, path inside it) of every directory cuda-upgrade writes on a node; /run is a
# tmpfs of the node's own already.
# Each with the mode the tool gives it when it makes it: the staging
# directory is private (root-only, 0700).
TOOL_DIRS = (("var", "lib/cuda-upgrade", 0o755), ("var", "tmp/cuda-upgrade", 0o700),
             ("etc", "cuda-upgrade", 0o755), ("root", ".cache/cuda-upgrade", 0o755),
             ("root", ".config/cuda-upgrade", 0o755))


def hide_lower(directory, mode):
    """Make `directory` of a node's upper layer opaque: the node sees only what it holds."""
    if not directory.is_dir():
        directory.mkdir(parents=True)
        directory.chmod(mode)
    os.setxattr(directory, "trusted.overlay.opaque", b"y")


def prepare_node(state, node, template, client_pub):
    node_dir = Path(node["dir"])
    upper = node_dir / "upper"
    for name in OVERLAYS:
        (upper / name).mkdir(parents=True, exist_ok=True)
        (node_dir / "work" / name).mkdir(parents=True, exist_ok=True)
    # The tool's own directories start empty whatever the host (or the persona's stack)
    # holds: an opaque directory in the node's layer hides every layer below it.
    for name, path, mode in TOOL_DIRS:
        hide_lower(upper / name / path, mode)
    # The persona's software stack is a shared read-only overlay layer.
    write(node_dir / "template", f"{template}\n" if template is not None else "")
    tmp = node_dir / "tmp"
    tmp.mkdir(exist_ok=True)
    tmp.chmod(0o1777)
    write(node_dir / "hostname", node["name"] + "\n")
    persona = PERSONAS["personas"][node["persona"]]
    etc = upper / "etc"
    ssh = etc / "testbed" / "ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    for directory in (etc / "testbed", ssh):
        directory.chmod(0o755)
    key = ssh / "ssh_host_ed25519_key"
    if not key.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{node['name']}@testbed",
             "-f", str(key)])
    write(ssh / "sshd_config", sshd_config(node["ip"]))
    write(ssh / "authorized_keys", client_pub, 0o600)
    write(etc / "testbed" / "gpus.json",
          json.dumps(gpus_json(persona, f"{state['subnet']}/{node['name']}"), indent=1) + "\n")
    write(etc / "testbed" / "proc-driver" / "nvidia" / "version", nvrm_text(persona, persona["driver"]))
    link = etc / "testbed" / "driver-version"
    if not link.is_symlink():
        link.symlink_to("proc-driver/nvidia/version")
    (etc / "testbed" / "compute-apps.d").mkdir(exist_ok=True)
    write(etc / "testbed" / "persona", node["persona"] + "\n")
    write(etc / "testbed" / "node.json", json.dumps({
        "name": node["name"], "ip": node["ip"], "persona": node["persona"],
        "host_ip": state["host_ip"], "indexes": state["indexes"],
    }, indent=1) + "\n")
    # apt: only the testbed's own repository (NVIDIA-shaped CUDA packages), unsigned; the
    # host's sources are hidden (overlay whiteouts), so apt on a node never looks beyond
    # the testbed.
    for source in [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]:
        hidden = etc / source.relative_to("/etc")
        if source.exists() and not hidden.exists() and not hidden.is_symlink():
            hidden.parent.mkdir(parents=True, exist_ok=True)
            os.mknod(hidden, stat.S_IFCHR | 0o600, os.makedev(0, 0))
    write(etc / "apt" / "sources.list.d" / "cuda-upgrade-testbed.list", (
        "# testbed node: the testbed's apt repository (tests/testbed/fixtures/debs.py)\n"
        f"deb [trusted=yes] {state['indexes']['apt']} ./\n"))
    write(etc / "pip.conf", (
        "# testbed node: only the testbed's own index\n[global]\n"
        f"index-url = {state['indexes']['default']}\n"
        f"trusted-host = {state['host_ip']}\n"
        "no-cache-dir = true\ndisable-pip-version-check = true\ntimeout = 10\nretries = 1\n"))
    smi = upper / "usr_local" / "bin" / "nvidia-smi"
    smi.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(NODE_FILES / "nvidia-smi", smi)
    smi.chmod(0o755)
    shutil.copy(NODE_FILES / "bashrc", upper / "root" / ".bashrc")


def start_node(state, node):
    """Create the node's namespace and veth, then start its sshd."""
    netns, veth = node["netns"], node["veth"]
    run(["ip", "netns", "add", netns])
    run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns])
    run(["ip", "link", "set", veth, "master", state["bridge"], "up"])
    run(["ip", "-n", netns, "addr", "add", f"{node['ip']}/24", "dev", "eth0"])
    run(["ip", "-n", netns, "link", "set", "eth0", "up"])
    run(["ip", "-n", netns, "link", "set", "lo", "up"])
    node_dir = Path(node["dir"])
    with open(node_dir / "sshd.log", "ab") as output:
        process = subprocess.Popen(
            ["ip", "netns", "exec", netns, "unshare", "--mount", "--uts", "--propagation",
             "private", "/bin/bash", str(NODE_INIT), str(node_dir), "sshd"],
            stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True)
    return process


def wait_banner(ip, process, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise TestbedError(f"sshd of {ip} exited with {process.returncode}")
        try:
            with socket.create_connection((ip, 22), timeout=0.5) as connection:
                if connection.recv(8).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        time.sleep(0.02)
    raise TestbedError(f"sshd of {ip} did not answer within {timeout} s")


def write_client_files(directory, state, host_keys):
    ssh = directory / "ssh"
    lines = ["# ssh_config of a cuda-upgrade testbed: ssh -F THIS_FILE node0", ""]
    known = []
    for node in state["nodes"]:
        lines += [f"Host {node['name']}", f"  HostName {node['ip']}", "  User root", "  Port 22",
                  f"  IdentityFile {ssh / 'id_ed25519'}", "  IdentitiesOnly yes",
                  f"  UserKnownHostsFile {ssh / 'known_hosts'}", "  GlobalKnownHostsFile /dev/null",
                  "  StrictHostKeyChecking yes", "  BatchMode yes", "  ConnectTimeout 5",
                  "  LogLevel ERROR", ""]
        known.append(f"{node['name']},{node['ip']} {host_keys[node['name']]}")
    write(ssh / "ssh_config", "\n".join(lines))
    write(ssh / "known_hosts", "\n".join(known) + "\n")


def cmd_up(args):
    started = time.monotonic()
    directory = Path(args.dir).resolve()
    count = args.count
    if not 1 <= count <= MAX_NODES:
        raise TestbedError(f"node count must be 1..{MAX_NODES}")
    personas = args.personas.split(",") if args.personas else [args.persona]
    if len(personas) == 1:
        personas = personas * count
    if len(personas) != count:
        raise TestbedError(f"--personas lists {len(personas)} personas for {count} nodes")
    for item in args.persona_per_node:
        index, _, persona = item.partition("=")
        if not index.isdigit() or int(index) >= count or not persona:
            raise TestbedError(f"--persona-per-node wants I=PERSONA with I < {count}, got `{item}`")
        personas[int(index)] = persona
    for persona in personas:
        if persona not in PERSONAS["personas"]:
            raise TestbedError(f"unknown persona `{persona}` (known: "
                               f"{', '.join(PERSONAS['personas'])})")
    existing = load_state(directory)
    if existing and existing.get("status") == "up":
        raise TestbedError(f"a testbed is already up in {directory}; run down first")
    if existing and existing.get("status") != "down":
        log(f"cleaning up an interrupted start in {directory}")
        teardown(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # Nodes always start from their persona, never from a previous run's files.
    shutil.rmtree(directory / "nodes", ignore_errors=True)
    ensure_sshd()
    if args.slurm:
        ensure_slurm()
    fixtures = Path(args.fixtures).resolve()
    manifest = ensure_fixtures(fixtures)
    stacks = sorted({PERSONAS["personas"][persona]["stack"] for persona in personas})
    templates = {stack: None if stack == "none" else ensure_template(fixtures, stack)
                 for stack in stacks}
    prepared = time.monotonic()

    subnet = allocate_subnet(directory)
    prefix = f"cutb{subnet}"
    host_ip = f"10.200.{subnet}.1"
    base = f"http://{host_ip}:{INDEX_PORT}"
    state = {
        "version": 1, "status": "starting", "dir": str(directory), "subnet": subnet,
        "cidr": f"10.200.{subnet}.0/24", "host_ip": host_ip, "bridge": f"{prefix}br",
        "fixtures": str(fixtures),
        "indexes": {"default": f"{base}/default/simple/", "cu130": f"{base}/cu130/simple/",
                    "files": f"{base}/files/", "apt": f"{base}/apt"},
        "runfiles": [dict(entry, url=f"{base}/files/{entry['file']}")
                     for entry in manifest["runfiles"]],
        "ssh_config": str(directory / "ssh" / "ssh_config"),
        "known_hosts": str(directory / "ssh" / "known_hosts"),
        "identity": str(directory / "ssh" / "id_ed25519"),
        "index_server": None,
        "slurm": {"conf": str(directory / "slurm" / "slurm.conf"), "port": slurm_port(subnet),
                  "munged": None, "slurmctld": None} if args.slurm else None,
        "owner": process_record(args.owner_pid) if args.owner_pid else None,
        "nodes": [{"name": f"node{i}", "ip": f"10.200.{subnet}.{10 + i}", "netns": f"{prefix}n{i}",
                   "veth": f"{prefix}v{i}", "persona": personas[i],
                   "dir": str(directory / "nodes" / f"node{i}"), "sshd": None}
                  for i in range(count)],
    }
    save_state(directory, state)
    try:
        bring_up(directory, state, templates)
    except BaseException:
        log("startup failed; tearing down")
        teardown(directory, keep_files=True)
        raise
    state["status"] = "up"
    state["startup_seconds"] = round(time.monotonic() - started, 2)
    state["node_startup_seconds"] = round(time.monotonic() - prepared, 2)
    save_state(directory, state)
    if args.json:
        print(json.dumps(state, indent=1))
    else:
        print(f"testbed up: {count} node(s) in {state['startup_seconds']} s "
              f"(nodes {state['node_startup_seconds']} s), subnet {state['cidr']}")
        print(f"  ssh -F {state['ssh_config']} node0")
        print(f"  default index: {state['indexes']['default']}")
        print(f"  cu130 index:   {state['indexes']['cu130']}")
        for entry in state["runfiles"]:
            print(f"  runfile: {entry['url']} sha256={entry['sha256']}")
        if state["slurm"]:
            print(f"  slurm: SLURM_CONF={state['slurm']['conf']} sinfo")
        print(f"  down: {HERE / 'down'} --dir {directory}")


def bring_up(directory, state, templates):
    ssh = directory / "ssh"
    ssh.mkdir(exist_ok=True)
    identity = ssh / "id_ed25519"
    if not identity.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "testbed-client", "-f", str(identity)])
    client_pub = (ssh / "id_ed25519.pub").read_text()
    bridge = state["bridge"]
    run(["ip", "link", "add", bridge, "type", "bridge"])
    run(["ip", "addr", "add", f"{state['host_ip']}/24", "dev", bridge])
    run(["ip", "link", "set", bridge, "up"])
    index_log = open(directory / "index.log", "ab")
    port_file = directory / "index.port"
    with contextlib.suppress(FileNotFoundError):
        port_file.unlink()
    server = subprocess.Popen(
        [BUILD_PYTHON, str(INDEX_SERVER), "--root", state["fixtures"], "--bind", state["host_ip"],
         "--port", str(INDEX_PORT), "--port-file", str(port_file)],
        stdin=subprocess.DEVNULL, stdout=index_log, stderr=subprocess.STDOUT, start_new_session=True)
    index_log.close()
    state["index_server"] = process_record(server.pid)
    save_state(directory, state)
    registry_update(state["subnet"], processes=[state["index_server"]], owner=state["owner"])

    if state.get("slurm"):
        prepare_slurm(directory, state)

    def prepare(node):
        stack = PERSONAS["personas"][node["persona"]]["stack"]
        prepare_node(state, node, templates[stack], client_pub)
        if state.get("slurm"):
            node_slurm_files(directory, node)

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(prepare, state["nodes"]))
    processes = {}
    for node in state["nodes"]:
        processes[node["name"]] = start_node(state, node)
        node["sshd"] = process_record(processes[node["name"]].pid)
    save_state(directory, state)
    deadline = time.monotonic() + 10
    while not port_file.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            raise TestbedError(f"index server did not start; see {directory / 'index.log'}")
        time.sleep(0.02)
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda node: wait_banner(node["ip"], processes[node["name"]]), state["nodes"]))
    host_keys = {}
    for node in state["nodes"]:
        pub = Path(node["dir"]) / "upper" / "etc" / "testbed" / "ssh" / "ssh_host_ed25519_key.pub"
        host_keys[node["name"]] = " ".join(pub.read_text().split()[:2])
    write_client_files(directory, state, host_keys)
    if state.get("slurm"):
        start_slurm(directory, state)


def teardown(directory, keep_files=False):
    state = load_state(directory)
    if state is None:
        return False
    pids = []
    for node in state["nodes"]:
        if netns_exists(node["netns"]):
            pids += netns_pids(node["netns"])
        if same_process(node.get("sshd")):
            pids.append(node["sshd"]["pid"])
    if same_process(state.get("index_server")):
        pids.append(state["index_server"]["pid"])
    slurm = state.get("slurm") or {}
    for name in ("slurmctld", "munged"):
        if same_process(slurm.get(name)):
            pids.append(slurm[name]["pid"])
    terminate(sorted(set(pids)))
    if slurm:
        shutil.rmtree(slurm_run_dir(state["subnet"]), ignore_errors=True)
    for node in state["nodes"]:
        if netns_exists(node["netns"]):
            run(["ip", "netns", "del", node["netns"]], check=False)
        if link_exists(node["veth"]):
            run(["ip", "link", "del", node["veth"]], check=False)
    if link_exists(state["bridge"]):
        run(["ip", "link", "del", state["bridge"]], check=False)
    entry = REGISTRY / f"net-{state['subnet']}.json"
    with contextlib.suppress(OSError, ValueError):
        if json.loads(entry.read_text()).get("dir") == state["dir"]:
            entry.unlink()
    if not keep_files:
        shutil.rmtree(directory / "nodes", ignore_errors=True)
    state["status"] = "down"
    save_state(directory, state)
    return True


def cmd_down(args):
    if args.sweep:
        REGISTRY.mkdir(parents=True, exist_ok=True)
        with locked(REGISTRY / "registry.lock"):
            sweep_stale()
        return
    directory = Path(args.dir).resolve()
    if not teardown(directory, keep_files=args.keep_files):
        log(f"no testbed state in {directory}; nothing to do")


def node_of(state, name):
    for node in state["nodes"]:
        if node["name"] == name:
            return node
    raise TestbedError(f"no node `{name}` in this testbed")


def in_node(state, name, command, data=None):
    node = node_of(state, name)
    if not same_process(node.get("sshd")):
        raise TestbedError(f"{name} is not running")
    return run(["nsenter", "--target", str(node["sshd"]["pid"]), "--mount", "--", *command],
               input=data)


def cmd_stage(args):
    state = require_up(args)
    apps_file = "/etc/testbed/compute-apps.d/staged.json"
    if args.what == "busy":
        gpus = [int(item) for item in args.gpus.split(",")]
        apps = [{"gpu_index": gpu, "pid": args.pid, "process_name": args.name,
                 "used_memory_mib": args.mib} for gpu in gpus]
        in_node(state, args.node, ["/bin/sh", "-c", 'cat > "$1"', "sh", apps_file],
                json.dumps({"apps": apps}) + "\n")
    elif args.what == "idle":
        in_node(state, args.node, ["/bin/sh", "-c", 'rm -f /etc/testbed/compute-apps.d/*.json'])
    elif args.what == "cudnn-mismatch":
        in_node(state, args.node, ["/bin/sh", "-c", "echo staged > /etc/testbed/cudnn-mismatch"])
    elif args.what == "cudnn-ok":
        in_node(state, args.node, ["/bin/rm", "-f", "/etc/testbed/cudnn-mismatch"])
    elif args.what == "driver":
        if not args.value:
            raise TestbedError("stage driver needs a version, e.g. 570.172.08")
        node = node_of(state, args.node)
        text = nvrm_text(PERSONAS["personas"][node["persona"]], args.value)
        in_node(state, args.node, ["/bin/sh", "-c", 'cat > "$1"', "sh",
                                   "/etc/testbed/proc-driver/nvidia/version"], text)


def require_up(args):
    state = load_state(Path(args.dir).resolve())
    if not state or state.get("status") != "up":
        raise TestbedError(f"no testbed is up in {Path(args.dir).resolve()}")
    return state


def cmd_status(args):
    state = load_state(Path(args.dir).resolve())
    if not state:
        raise TestbedError(f"no testbed state in {Path(args.dir).resolve()}")
    for node in state["nodes"]:
        node["running"] = bool(same_process(node.get("sshd")))
    state["index_running"] = bool(same_process(state.get("index_server")))
    print(json.dumps(state, indent=1))


def cmd_fixtures(args):
    fixtures = Path(args.fixtures).resolve()
    manifest = ensure_fixtures(fixtures)
    print(json.dumps({"fixtures": str(fixtures), "runfiles": manifest["runfiles"]}, indent=1))


def cmd_ssh(args):
    state = require_up(args)
    os.execvp("ssh", ["ssh", "-F", state["ssh_config"], args.node, *args.command])


def main(argv):
    default_dir = os.environ.get("TESTBED_DIR", str(HERE / ".state" / "default"))
    default_fixtures = os.environ.get("TESTBED_FIXTURES", str(HERE / ".state" / "fixtures"))
    parser = argparse.ArgumentParser(prog="testbed", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=default_dir, help="testbed state directory")
    commands = parser.add_subparsers(dest="verb", required=True)
    up = commands.add_parser("up", help="start N nodes")
    up.add_argument("count", type=int)
    up.add_argument("--persona", default="cuda12.8", help="persona of every node")
    up.add_argument("--personas", help="comma-separated persona per node (node0 first)")
    up.add_argument("--persona-per-node", action="append", default=[], metavar="I=PERSONA",
                    help="persona of node I (repeatable), e.g. 2=old-driver")
    up.add_argument("--fixtures", default=default_fixtures, help="fixture build directory")
    up.add_argument("--json", action="store_true", help="print the state as JSON")
    up.add_argument("--slurm", action="store_true",
                    help="run Slurm: slurmctld on the host, slurmd in every node")
    up.add_argument("--owner-pid", type=int,
                    help="tear this testbed down at the next up/sweep once this process is gone")
    up.add_argument("--dir", default=argparse.SUPPRESS)
    down = commands.add_parser("down", help="stop everything this testbed started")
    down.add_argument("--sweep", action="store_true", help="clean up testbeds whose dir is gone")
    down.add_argument("--keep-files", action="store_true", help="keep the nodes' overlay files")
    down.add_argument("--dir", default=argparse.SUPPRESS)
    status = commands.add_parser("status", help="print the state as JSON")
    status.add_argument("--dir", default=argparse.SUPPRESS)
    stage = commands.add_parser("stage", help="stage a condition on a node")
    stage.add_argument("node")
    stage.add_argument("what", choices=["busy", "idle", "cudnn-mismatch", "cudnn-ok", "driver"])
    stage.add_argument("value", nargs="?")
    stage.add_argument("--gpus", default="0")
    stage.add_argument("--mib", type=int, default=8710)
    stage.add_argument("--pid", type=int, default=433)
    stage.add_argument("--name", default="python3")
    stage.add_argument("--dir", default=argparse.SUPPRESS)
    fixtures = commands.add_parser("fixtures", help="build the fixtures (no root needed)")
    fixtures.add_argument("--fixtures", default=default_fixtures, help="fixture build directory")
    fixtures.add_argument("--dir", default=argparse.SUPPRESS)
    ssh = commands.add_parser("ssh", help="ssh into a node with the testbed's ssh_config")
    ssh.add_argument("node")
    ssh.add_argument("command", nargs=argparse.REMAINDER)
    ssh.add_argument("--dir", default=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.verb != "fixtures" and os.geteuid() != 0:
        raise TestbedError("the testbed needs root (network and mount namespaces)")
    handlers = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "stage": cmd_stage,
                "ssh": cmd_ssh, "fixtures": cmd_fixtures}
    handlers[args.verb](args)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except TestbedError as error:
        log(f"error: {error}")
        sys.exit(1)
