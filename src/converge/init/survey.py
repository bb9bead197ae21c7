# What `upgrade init` reads from the target interpreter, beyond the probe's facts: each
# installed distribution's requirements (to find the top-level ones), its PEP 610
# `direct_url.json`, pip's configured indexes, and the env step's managed block.
# Prints one JSON object on stdout. Arguments: the file holding the managed block
# (the interpreter's `sitecustomize.py`, or an empty string) and the block's marker,
# e.g. `cuda-upgrade managed block`.
#
# It runs isolated and without `site` (`python -I -S`): no `.pth` file, `sitecustomize`
# or `usercustomize` of the node's environment runs, and no `PYTHON*` variable counts.
# The environment's site directories are put on `sys.path` here instead: `sysconfig`'s
# purelib and platlib of the environment's prefix (a virtual environment's own, read
# from its `pyvenv.cfg` as `site` would, and the base's when it includes the system's
# packages), and those `site.getsitepackages` names for it (e.g. Debian's
# `dist-packages`), which runs nothing under `-S`.
import ast
import json
import os
import re
import subprocess
import sys
import sysconfig


def environment_prefixes():
    """The prefixes whose site directories the interpreter sees, its own first, and
    whether it is a virtual environment."""
    executable_dir = os.path.dirname(os.path.abspath(sys.executable))
    prefix = os.path.dirname(executable_dir)
    for conf in (os.path.join(executable_dir, "pyvenv.cfg"), os.path.join(prefix, "pyvenv.cfg")):
        if not os.path.isfile(conf):
            continue
        system = False
        try:
            with open(conf, encoding="utf-8") as handle:
                for line in handle:
                    key, separator, value = line.partition("=")
                    if separator and key.strip().lower() == "include-system-site-packages":
                        system = value.strip().lower() == "true"
        except (OSError, ValueError):
            pass
        return ([prefix, sys.prefix] if system else [prefix]), True
    return [sys.prefix], False


PREFIXES, VIRTUAL = environment_prefixes()
if VIRTUAL:
    # What `site` does for a virtual environment, which pip reads (its `pip.conf`).
    sys.prefix = sys.exec_prefix = PREFIXES[0]


def site_directories(prefixes, virtual):
    found = []
    for number, prefix in enumerate(prefixes):
        own = {"base": prefix, "platbase": prefix}
        # A virtual environment's own directories follow `posix_prefix` whatever the
        # distribution's default scheme (`posix_local` on Debian) would say.
        scheme = "posix_prefix" if virtual and number == 0 and os.name == "posix" else None
        try:
            if scheme:
                paths = sysconfig.get_paths(scheme, vars=own)
            else:
                paths = sysconfig.get_paths(vars=own)
            found.extend([paths.get("purelib"), paths.get("platlib")])
        except Exception:
            pass
        try:
            import site  # under -S importing it runs nothing

            found.extend(site.getsitepackages([prefix]))
        except Exception:
            pass
    unique = []
    for directory in found:
        if directory and directory not in unique and os.path.isdir(directory):
            unique.append(directory)
    return unique


SITE_DIRECTORIES = site_directories(PREFIXES, VIRTUAL)
for _directory in SITE_DIRECTORIES:
    if _directory not in sys.path:
        sys.path.append(_directory)

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


# pip itself runs as this survey does: isolated, without `site`, with the same prefix
# and site directories.
PIP_CONFIG_LIST = (
    "import runpy, sys\n"
    "sys.prefix = sys.exec_prefix = sys.argv[1]\n"
    "sys.path.extend(sys.argv[2:])\n"
    "sys.argv = ['pip', 'config', 'list']\n"
    "runpy.run_module('pip', run_name='__main__', alter_sys=True)\n"
)


def pip_indexes():
    try:
        output = subprocess.run(
            [sys.executable, "-I", "-S", "-c", PIP_CONFIG_LIST, sys.prefix] + SITE_DIRECTORIES,
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
