# What `upgrade init` reads from the target interpreter, beyond the probe's facts: each
# installed distribution's requirements (to find the top-level ones), its PEP 610
# `direct_url.json`, pip's configured indexes, and the env step's managed block.
# Prints one JSON object on stdout. Arguments: the file holding the managed block
# (the interpreter's `sitecustomize.py`, or an empty string) and the block's marker,
# e.g. `cuda-upgrade managed block`.
import ast
import json
import re
import subprocess
import sys

try:
    from importlib import metadata
except ImportError:  # Python < 3.8
    metadata = None

try:
    from pip._vendor.packaging.requirements import Requirement
except Exception:  # pip missing or too old: names only, every requirement counts
    Requirement = None


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def required_names(dist):
    names = []
    for line in dist.requires or []:
        if Requirement is not None:
            try:
                requirement = Requirement(line)
                if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                    continue
                names.append(normalize(requirement.name))
                continue
            except Exception:
                pass
        if "extra ==" in line or "extra==" in line:
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if match:
            names.append(normalize(match.group(1)))
    return sorted(set(names))


def distributions():
    found = {}
    if metadata is None:
        return []
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        key = normalize(name)
        if key in found:
            continue
        direct_url = dist.read_text("direct_url.json")
        installer = dist.read_text("INSTALLER")
        found[key] = {
            "name": key,
            "version": dist.version,
            "requires": required_names(dist),
            "direct_url": json.loads(direct_url) if direct_url else None,
            "installer": installer.strip() if installer else None,
        }
    return [found[key] for key in sorted(found)]


def pip_indexes():
    try:
        output = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            universal_newlines=True,
            timeout=60,
        ).stdout
    except Exception:
        return {"index_url": None, "extra_index_urls": []}
    index_url = None
    extra = []
    for line in output.splitlines():
        key, _, value = line.partition("=")
        value = value.strip().strip("'\"")
        if key.endswith(".index-url"):
            index_url = value
        elif key.endswith(".extra-index-url"):
            extra.extend(value.split())
    return {"index_url": index_url, "extra_index_urls": extra}


def managed_block(path, marker):
    if not path or not marker:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, ValueError):
        return None
    begin = text.find("# >>> " + marker + " >>>")
    end = text.find("# <<< " + marker + " <<<")
    if begin < 0 or end < begin:
        return None
    block = text[begin:end]
    name = None
    header = re.search(r"for manifest (.*); edits inside", block)
    if header:
        try:
            name = ast.literal_eval(header.group(1))
        except Exception:
            name = None
    variables = []
    for line in block.splitlines():
        match = re.match(r"_cuda_upgrade_os\.environ\[(.*)\] = (.*)$", line)
        if match:
            try:
                variables.append([ast.literal_eval(match.group(1)), ast.literal_eval(match.group(2))])
            except Exception:
                continue
    secrets = []
    secret_line = re.search(r"# Secret values \((.*)\) live in", block)
    if secret_line:
        try:
            value = ast.literal_eval("[" + secret_line.group(1) + "]")
            secrets = [str(item) for item in value]
        except Exception:
            secrets = []
    return {"manifest": name, "variables": variables, "secrets": secrets}


json.dump(
    {
        "distributions": distributions(),
        "pip": pip_indexes(),
        "managed_block": managed_block(
            sys.argv[1] if len(sys.argv) > 1 else "",
            sys.argv[2] if len(sys.argv) > 2 else "",
        ),
    },
    sys.stdout,
)
