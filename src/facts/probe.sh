# cuda-upgrade node probe: prints every fact the planner needs in one run.
#
# Usage: sh -s -- --python PATH [--library SONAME]... [--path PATH]... [--marker NAME]
#                 [--secrets-dir DIR]
#                 [--driver-version-file PATH] [--scope full|plan|step]  < probe.sh
#    or: sh -c "$(cat probe.sh)" cuda-upgrade-probe --python PATH ...
#
# Output is a sequence of sections, each one:
#   @@begin NAME[ ARGUMENT]@@
#   <stdout of the command, at most a bounded number of lines>
#   @@stderr@@                      (only when the command wrote to stderr)
#   <stderr, bounded>
#   @@end status=N@@                (N is the exit status, or `absent` when the tool is missing)
# A missing tool, interpreter or toolkit is a fact, never a failure of the probe:
# the script itself always exits 0.
#
# Every command reads from /dev/null: the script itself arrives on stdin (`sh -s`),
# and a command that read stdin would swallow the rest of it.
#
# `--scope plan` gathers what a plan needs and no more: no GPU processes (a launch checks
# its GPUs right before it starts), no `nvcc --version` where a version.json names the
# toolkit's update, and the interpreter's wheel tags from the script's own computation
# instead of importing `packaging`. `--scope step` (an apply's re-check before each
# change) is `plan` without the GPUs: `nvidia-smi` is not started, since no step changes
# what it reports. `full` (the default) is what `upgrade probe` shows.
#
# Cost: a converged node's apply is this script and little else, so it starts few
# processes. Sections print through one `awk` each (or none), the slow queries
# (`nvidia-smi`, the interpreter) run in the background while the rest is read, and
# the interpreter starts once, without `site` (`-S`), and reads what it needs itself.

LC_ALL=C
export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin:/usr/local/cuda/bin"
export PATH

python=""
marker="cuda-upgrade managed block"
driver_version_file=""
scope=full
libraries=""
paths=""
secrets_dir=/etc/cuda-upgrade/secrets
secrets_dir_given=""
while [ "$#" -gt 0 ]; do
    # A flag without its value ends the list; `shift 2` would stop the script.
    if [ "$#" -lt 2 ]; then
        break
    fi
    case "$1" in
        --python) python="$2"; shift 2 ;;
        --library) libraries="$libraries
$2"; shift 2 ;;
        --path) paths="$paths
$2"; shift 2 ;;
        --marker) marker="$2"; shift 2 ;;
        --secrets-dir) secrets_dir="$2"; secrets_dir_given="$2"; shift 2 ;;
        --driver-version-file) driver_version_file="$2"; shift 2 ;;
        --scope) scope="$2"; shift 2 ;;
        *) shift ;;
    esac
done

scratch="$(mktemp -d 2>/dev/null)" || scratch=""
if [ -z "$scratch" ]; then
    scratch="${TMPDIR:-/tmp}/cuda-upgrade-probe.$$"
    mkdir -p "$scratch" || exit 0
fi
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM

# section LIMIT NAME ARGUMENT OUT ERR: prints one section from a command's output files,
# with the exit status in `status`: the first LIMIT lines of OUT, then the first 4000
# bytes of ERR (a missing final newline added). One `awk`, none when both are empty.
section() {
    if [ -n "$3" ]; then
        printf '@@begin %s %s@@\n' "$2" "$3"
    else
        printf '@@begin %s@@\n' "$2"
    fi
    if [ -s "$4" ] || [ -s "$5" ]; then
        body "$1" "$4" "$5"
    fi
    printf '@@end status=%s@@\n' "$status"
}

# body LIMIT OUT ERR: a section's text, see `section`.
body() {
    awk -v limit="$1" '
        FILENAME == ARGV[1] { if (FNR <= limit) print; next }
        FNR == 1 { print "@@stderr@@" }
        bytes < 4000 { print substr($0, 1, 4000 - bytes); bytes += length($0) + 1 }
    ' "$2" "$3"
}

# emit LIMIT NAME ARGUMENT -- COMMAND...: runs COMMAND and prints it as one section.
emit() {
    limit="$1"; name="$2"; argument="$3"; shift 4
    "$@" </dev/null >"$scratch/out" 2>"$scratch/err"
    status=$?
    section "$limit" "$name" "$argument" "$scratch/out" "$scratch/err"
}

# emit_file LIMIT NAME ARGUMENT FILE: a readable file as one section, without a `cat`
# (files under /proc report no size, so the body is always read).
emit_file() {
    if [ -n "$3" ]; then
        printf '@@begin %s %s@@\n' "$2" "$3"
    else
        printf '@@begin %s@@\n' "$2"
    fi
    body "$1" "$4" /dev/null
    status=$?
    printf '@@end status=%s@@\n' "$status"
}

# background NAME COMMAND...: starts COMMAND now, its output kept for `collect NAME`.
background() {
    name="$1"; shift
    "$@" </dev/null >"$scratch/$name.out" 2>"$scratch/$name.err" &
    eval "pid_$name=\$!"
}

# collect LIMIT NAME SECTION ARGUMENT: waits for the command `background NAME` started and
# prints it as section SECTION.
collect() {
    eval "wait \"\$pid_$2\""
    status=$?
    section "$1" "$3" "$4" "$scratch/$2.out" "$scratch/$2.err"
}

# absent NAME ARGUMENT: a section for a tool or file that is not there.
absent() {
    if [ -n "$2" ]; then
        printf '@@begin %s %s@@\n@@end status=absent@@\n' "$1" "$2"
    else
        printf '@@begin %s@@\n@@end status=absent@@\n' "$1"
    fi
}

have() {
    command -v "$1" >/dev/null 2>&1
}

# bounded COMMAND...: runs COMMAND for at most 120 s where `timeout` exists, so that a
# hung `nvidia-smi` (a GPU fallen off the bus) cannot hang the probe; status 124 then.
bounded() {
    if have timeout; then
        timeout 120 "$@"
    else
        "$@"
    fi
}

printf '@@cuda-upgrade-probe 1@@\n'

# lines KEY TEXT: `KEY\tLINE` for each non-empty line of TEXT, without a subshell.
lines() {
    lines_ifs=$IFS
    IFS='
'
    set -f
    for line in $2; do
        [ -n "$line" ] && printf '%s\t%s\n' "$1" "$line"
    done
    set +f
    IFS=$lines_ifs
    return 0
}

probe_arguments() {
    printf 'python\t%s\n' "$python"
    printf 'marker\t%s\n' "$marker"
    lines library "$libraries"
    lines path "$paths"
    printf 'driver-version-file\t%s\n' "$driver_version_file"
    printf 'secrets-dir\t%s\n' "$secrets_dir_given"
    [ "$scope" = full ] || printf 'scope\t%s\n' "$scope"
    return 0
}
emit 100 arguments "" -- probe_arguments

# The target interpreter: one Python program prints everything as one JSON object. It
# starts without `site` (`-S`: no `.pth` imports, no `sitecustomize` run, which cost a
# torch environment most of its start) and builds the same `sys.path` itself; it reads
# each distribution's metadata directly instead of importing `importlib.metadata`.
# See: https://docs.python.org/3/library/site.html
python_facts() {
    bounded "$python" -S - "$scope" <<'PYTHON'
import os, sys

scope = sys.argv[1] if len(sys.argv) > 1 else "full"
facts = {}
facts["executable"] = sys.executable
facts["version"] = sys.version.split()[0]
facts["implementation"] = sys.implementation.name

# What `site.main()` does to `sys.path`, without running the `import` lines of `.pth`
# files: the virtual environment's prefix, the user's and the environment's site
# directories, and the directories their `.pth` files name.
# `sys.path[0]`, the program's own directory (`''` for a program on stdin), is added
# after `site` runs: set it aside meanwhile, as `site` never sees it.
first = sys.path.pop(0) if sys.path and sys.path[0] == "" else None
site_packages = None
try:
    import site

    def addpackage(sitedir, name, known_paths):
        try:
            with open(os.path.join(sitedir, name), "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            return known_paths
        for line in text.splitlines():
            if not line.strip() or line.startswith("#") or line.startswith(("import ", "import\t")):
                continue
            directory, case = site.makepath(sitedir, line.rstrip())
            if case not in known_paths and os.path.exists(directory):
                sys.path.append(directory)
                known_paths.add(case)
        return known_paths

    site.addpackage = addpackage
    known = site.removeduppaths()
    known = site.venv(known)
    if site.ENABLE_USER_SITE is None:
        site.ENABLE_USER_SITE = site.check_enableusersite()
    known = site.addusersitepackages(known)
    site.addsitepackages(known)
    site_packages = list(site.getsitepackages())
except Exception:
    pass
if first is not None:
    sys.path.insert(0, first)
if site_packages is None:
    import sysconfig
    site_packages = [sysconfig.get_paths()["purelib"]]
facts["prefix"] = sys.prefix
facts["base_prefix"] = getattr(sys, "base_prefix", sys.prefix)
facts["path"] = [entry for entry in sys.path if entry]
facts["site_packages"] = site_packages
facts["machine"] = os.uname().machine
try:
    facts["glibc"] = os.confstr("CS_GNU_LIBC_VERSION")
except (AttributeError, ValueError, OSError):
    facts["glibc"] = None


def fallback_tags():
    # Like pip's packaging.tags.sys_tags for CPython on glibc Linux.
    # See: https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/
    major, minor = sys.version_info[0], sys.version_info[1]
    machine = facts["machine"]
    platforms = []
    glibc = (facts["glibc"] or "").split()
    release = glibc[1].split(".") if len(glibc) == 2 and glibc[0] == "glibc" else []
    if len(release) >= 2 and release[0] == "2" and release[1].isdigit():
        # See: https://peps.python.org/pep-0600/ (manylinux_2_17 is the oldest for x86_64 and aarch64)
        oldest = 17 if machine in ("x86_64", "aarch64", "ppc64le", "s390x") else 5
        for glibc_minor in range(int(release[1]), oldest - 1, -1):
            platforms.append("manylinux_2_%d_%s" % (glibc_minor, machine))
            # See: https://peps.python.org/pep-0600/#legacy-manylinux-tags
            legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
            if glibc_minor in legacy:
                platforms.append("%s_%s" % (legacy[glibc_minor], machine))
    platforms.append("linux_%s" % machine)
    tags = []
    if sys.implementation.name == "cpython":
        interpreter = "cp%d%d" % (major, minor)
        abis = [interpreter, "abi3", "none"]
        for abi in abis:
            for name in platforms:
                tags.append("%s-%s-%s" % (interpreter, abi, name))
        for older in range(minor - 1, 1, -1):
            for name in platforms:
                tags.append("cp%d%d-abi3-%s" % (major, older, name))
    for name in platforms:
        tags.append("py%d%d-none-%s" % (major, minor, name))
        tags.append("py%d-none-%s" % (major, name))
    for older in range(minor - 1, -1, -1):
        for name in platforms:
            tags.append("py%d%d-none-%s" % (major, older, name))
    if sys.implementation.name == "cpython":
        tags.append("cp%d%d-none-any" % (major, minor))
    tags.append("py%d%d-none-any" % (major, minor))
    tags.append("py%d-none-any" % major)
    for older in range(minor - 1, -1, -1):
        tags.append("py%d%d-none-any" % (major, older))
    return tags


# `--scope plan` needs no tags from `packaging` (planning computes its own): the import
# alone costs more than the rest of this program.
tags_module = None
facts["tags_source"] = "fallback"
if scope == "full":
    try:
        from packaging import tags as tags_module
        facts["tags_source"] = "packaging"
    except Exception:
        try:
            from pip._vendor.packaging import tags as tags_module
            facts["tags_source"] = "pip"
        except Exception:
            tags_module = None
if tags_module is not None:
    try:
        facts["tags"] = [str(tag) for tag in tags_module.sys_tags()]
    except Exception:
        facts["tags_source"] = "fallback"
        facts["tags"] = fallback_tags()
else:
    facts["tags"] = fallback_tags()

from importlib.machinery import PathFinder


def find_spec(name):
    try:
        return PathFinder.find_spec(name)
    except Exception:
        return None


# `site` imports the first `sitecustomize` on `sys.path` at start-up.
spec = find_spec("sitecustomize")
sitecustomize = {"origin": None, "imported": spec is not None, "text": None, "shadowed": []}
if spec is not None and spec.origin:
    sitecustomize["origin"] = spec.origin
    # The file a write really changes: the origin may be a symlink (Debian and Ubuntu
    # link /usr/lib/python3.X/sitecustomize.py into /etc/python3.X/).
    try:
        sitecustomize["real_path"] = os.path.realpath(spec.origin)
        status = os.stat(sitecustomize["real_path"])
        sitecustomize["mode"] = status.st_mode & 0o7777
        sitecustomize["uid"] = status.st_uid
        sitecustomize["gid"] = status.st_gid
    except OSError:
        pass
    try:
        with open(spec.origin, "r", encoding="utf-8", errors="replace") as handle:
            sitecustomize["text"] = handle.read(262144)
    except OSError:
        pass
for directory in facts["site_packages"]:
    candidate = os.path.join(directory, "sitecustomize.py")
    if os.path.isfile(candidate) and candidate != sitecustomize["origin"]:
        sitecustomize["shadowed"].append(candidate)
facts["sitecustomize"] = sitecustomize

# The env step's start-up hook (a .pth file) in the environment's first site-packages.
env_hook = {"path": None, "text": None}
if facts["site_packages"]:
    env_hook["path"] = os.path.join(facts["site_packages"][0], "cuda_upgrade_env.pth")
    try:
        with open(env_hook["path"], "r", encoding="utf-8", errors="replace") as handle:
            env_hook["text"] = handle.read(262144)
    except OSError:
        pass
facts["env_hook"] = env_hook


def read_text(directory, name):
    try:
        with open(os.path.join(directory, name), "r", encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def headers(text):
    # The metadata's header lines (folded ones joined), up to the first blank line: the
    # email parser behind `importlib.metadata` costs most of this program on an
    # environment of a few hundred packages.
    found = []
    for line in (text or "").splitlines():
        if not line.strip():
            break
        if line[:1] in (" ", "\t") and found:
            found[-1][1] += " " + line.strip()
            continue
        key, separator, value = line.partition(":")
        if separator:
            found.append([key.strip().lower(), value.strip()])
    return found


def metadata_directories():
    # The `*.dist-info` and `*.egg-info` directories of every `sys.path` entry, as
    # `importlib.metadata.distributions()` finds them.
    for entry in sys.path:
        root = entry or "."
        try:
            children = os.listdir(root)
        except OSError:
            continue
        is_egg = root.lower().endswith(".egg")
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")) or (is_egg and low == "egg-info"):
                yield os.path.join(root, child)


distributions = []
torch_metadata = None
for directory in metadata_directories():
    text = read_text(directory, "METADATA") or read_text(directory, "PKG-INFO") or ""
    fields = headers(text)
    name = next((value for key, value in fields if key == "name"), None)
    version = next((value for key, value in fields if key == "version"), None)
    if not name:
        continue
    # PEP 610: how it was installed (a URL, a VCS checkout, editable), as pip freeze
    # reads it; none for an install from an index.
    distributions.append([name, version, read_text(directory, "direct_url.json")])
    if torch_metadata is None and name.lower() == "torch":
        torch_metadata = (version, [value for key, value in fields if key == "requires-dist"])
facts["distributions"] = sorted(distributions, key=lambda d: (d[0], d[1] or "", d[2] or ""))[:4000]

torch = None
spec = find_spec("torch")
if spec is not None and spec.submodule_search_locations:
    location = list(spec.submodule_search_locations)[0]
    torch = {"location": location, "version_py": None, "requires": None, "metadata_version": None}
    try:
        with open(os.path.join(location, "version.py"), "r", encoding="utf-8", errors="replace") as handle:
            torch["version_py"] = handle.read(8192)
    except OSError:
        pass
    if torch_metadata is not None:
        torch["metadata_version"] = torch_metadata[0]
        torch["requires"] = torch_metadata[1][:400]
facts["torch"] = torch

import json

json.dump(facts, sys.stdout, sort_keys=True)
sys.stdout.write("\n")
PYTHON
}
# The slow queries start first and run while the rest is read; their sections come last.
gpu_fields=index,name,driver_version,compute_cap,memory.total,memory.used,uuid
if [ "$scope" != step ] && have nvidia-smi; then
    background gpus bounded nvidia-smi --query-gpu="$gpu_fields" --format=csv,noheader,nounits
    if [ "$scope" = full ]; then
        background apps bounded nvidia-smi \
            --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv
    fi
fi
# A bare name such as `python3` is looked up on PATH, as a shell would.
case "$python" in
    */*) ;;
    ?*) python="$(command -v "$python" 2>/dev/null || printf '%s' "$python")" ;;
esac
if [ -n "$python" ] && [ -x "$python" ]; then
    background python python_facts
fi

# Installed toolkits: every /usr/local/cuda* entry and what it resolves to.
toolkit_links() {
    for candidate in /usr/local/cuda /usr/local/cuda-*; do
        [ -d "$candidate" ] || continue
        printf '%s\t%s\n' "$candidate" "$(readlink -f "$candidate")"
    done
    return 0
}
emit 64 toolkits "" -- toolkit_links
# toolkit_packages PREFIX: which package manager answered (`manager dpkg` or `manager rpm`),
# the packages that own files under PREFIX (`owner` lines) and every installed package of
# its line, e.g. cuda-*-13-0 and lib*-13-0 for /usr/local/cuda-13.0 (`package` lines:
# name, version, status; dpkg's known-but-not-installed ones left out). dpkg answers where
# it owns files under PREFIX, else rpm where it does, else whichever of the two exists.
# NVIDIA's deb and rpm packages carry no version.json; their meta packages' version
# (cuda-toolkit-13-0 or cuda-compiler-13-0 13.0.2-1) names the update; the rpm ones have
# the same names and VERSION-RELEASE, e.g. cuda-compiler-12-4-12.4.1-1.x86_64.rpm.
# See: https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html ("Meta Packages";
# rpm names and versions: manifests/rules/cuda-updates.yaml, `rpm_source`)
toolkit_series() {
    series=${1%/}
    series=${series##*/}
    case $series in cuda-[0-9]*.[0-9]*) ;; *) return 0 ;; esac
    series=${series#cuda-}
    case ${series%%.*}/${series#*.} in
        */*[!0-9]* | *[!0-9]*/* | /* | */) return 0 ;;
    esac
    printf '%s-%s\n' "${series%%.*}" "${series#*.}"
}
# toolkit_dpkg_line SERIES: whether dpkg may know a package of the line SERIES (e.g.
# 13-0): dpkg keeps a file list for every package it has not purged, so a line with none
# (a runfile's toolkit) has no owner and no package `dpkg-query -W` would list. Without
# dpkg's info directory, dpkg-query is asked.
toolkit_dpkg_line() {
    [ -d /var/lib/dpkg/info ] || return 0
    for list in /var/lib/dpkg/info/cuda-*-"$1".list /var/lib/dpkg/info/cuda-*-"$1":*.list \
        /var/lib/dpkg/info/cuda-"$1".list /var/lib/dpkg/info/cuda-"$1":*.list \
        /var/lib/dpkg/info/cuda-*-"$1"-*.list \
        /var/lib/dpkg/info/lib*-"$1".list /var/lib/dpkg/info/lib*-"$1":*.list; do
        [ -e "$list" ] && return 0
    done
    return 1
}
# The packages of PREFIX's line (the names `toolkit_dpkg_packages` lists, e.g.
# cuda-nvcc-13-0 or libcublas-13-0:amd64) whose file list names PREFIX, as `dpkg-query -S
# PREFIX` would answer for them (a pattern starting with `/` matches the path exactly):
# read from those packages' own file lists (`info/NAME[:ARCH].list`, one path a line),
# every package's where PREFIX names no line; dpkg-query where there are no lists.
# See: https://man7.org/linux/man-pages/man1/dpkg-query.1.html ("--search")
toolkit_dpkg_owners() {
    if [ -d /var/lib/dpkg/info ]; then
        toolkit_series=$(toolkit_series "$1")
        toolkit_prefix=$1
        info=/var/lib/dpkg/info
        if [ -n "$toolkit_series" ]; then
            toolkit_dpkg_line "$toolkit_series" || return 0
            set -- "$info"/cuda-*-"$toolkit_series".list "$info"/cuda-*-"$toolkit_series":*.list \
                "$info"/cuda-"$toolkit_series".list "$info"/cuda-"$toolkit_series":*.list \
                "$info"/cuda-*-"$toolkit_series"-*.list \
                "$info"/lib*-"$toolkit_series".list "$info"/lib*-"$toolkit_series":*.list
        else
            set -- "$info"/*.list
        fi
        grep -lxF -- "$toolkit_prefix" "$@" 2>/dev/null | sed -n 's|^.*/||; s|\.list$||p'
    else
        dpkg-query -S -- "$1" 2>/dev/null | sed -n '/^diversion/d; s/: .*$//p' | tr ',' '\n'
    fi | awk '{ gsub(/ /, "") } $0 != "" { print "owner\t" $0 }'
    return 0
}
toolkit_dpkg_packages() {
    toolkit_series=$(toolkit_series "$1")
    if [ -n "$toolkit_series" ] && toolkit_dpkg_line "$toolkit_series"; then
        dpkg-query -W -f='package\t${Package}\t${Version}\t${db:Status-Abbrev}\n' \
            -- "cuda-*-$toolkit_series" "cuda-$toolkit_series" "cuda-*-$toolkit_series-*" \
            "lib*-$toolkit_series" 2>/dev/null |
            awk -F '\t' 'substr($4, 2, 1) != "n"'
    fi
    return 0
}
# rpm's database holds installed packages only (status `installed`). Owners: what owns
# PREFIX itself (`rpm -qf`, which prints `file ... is not owned by any package` on stdout
# otherwise) and the packages of the line with a file under PREFIX (rpm need not own the
# directory; `%{=NAME}` repeats the name for each file of the `[...]` iteration).
# See: https://rpm-software-management.github.io/rpm/man/rpm.8.html and
# https://rpm-software-management.github.io/rpm/manual/queryformat.html
toolkit_rpm_owners() {
    toolkit_series=$(toolkit_series "$1")
    {
        rpm -qf --qf 'owner\t%{NAME}\n' -- "$1" 2>/dev/null
        if [ -n "$toolkit_series" ]; then
            rpm -qa --qf '[%{=NAME}\t%{FILENAMES}\n]' -- "cuda-*-$toolkit_series" \
                "cuda-$toolkit_series" "cuda-*-$toolkit_series-*" "lib*-$toolkit_series" \
                2>/dev/null |
                toolkit_prefix="$1" awk -F '\t' \
                    'index($2, ENVIRON["toolkit_prefix"] "/") == 1 { print "owner\t" $1 }'
        fi
    } | awk -F '\t' '$1 == "owner" && NF == 2' | sort -u
    return 0
}
toolkit_rpm_packages() {
    toolkit_series=$(toolkit_series "$1")
    if [ -n "$toolkit_series" ]; then
        rpm -qa --qf 'package\t%{NAME}\t%|EPOCH?{%{EPOCH}:}|%{VERSION}-%{RELEASE}\tinstalled\n' \
            -- "cuda-*-$toolkit_series" "cuda-$toolkit_series" "cuda-*-$toolkit_series-*" \
            "lib*-$toolkit_series" 2>/dev/null
    fi
    return 0
}
# Whether rpm has a database with anything in it (Debian's `rpm` package, installed beside
# dpkg to build or inspect rpms, has none): one `rpm --eval` instead of three queries.
rpm_database() {
    rpm_dbpath=$(rpm --eval '%{_dbpath}' 2>/dev/null)
    [ -n "$rpm_dbpath" ] && [ -d "$rpm_dbpath" ] || return 1
    set -- "$rpm_dbpath"/*
    [ -e "$1" ]
}
toolkit_packages() {
    toolkit_owners=""
    if have dpkg-query; then
        toolkit_owners=$(toolkit_dpkg_owners "$1")
    fi
    if [ -z "$toolkit_owners" ] && have rpm && { ! have dpkg-query || rpm_database; }; then
        toolkit_owners=$(toolkit_rpm_owners "$1")
        if [ -n "$toolkit_owners" ] || ! have dpkg-query; then
            printf 'manager\trpm\n'
            [ -n "$toolkit_owners" ] && printf '%s\n' "$toolkit_owners"
            toolkit_rpm_packages "$1"
            return 0
        fi
    fi
    printf 'manager\tdpkg\n'
    [ -n "$toolkit_owners" ] && printf '%s\n' "$toolkit_owners"
    toolkit_dpkg_packages "$1"
    return 0
}
cut -f 2 "$scratch/out" 2>/dev/null | sort -u >"$scratch/prefixes"
while IFS= read -r prefix; do
    [ -n "$prefix" ] || continue
    if [ -r "$prefix/version.json" ]; then
        emit_file 200 toolkit-version-json "$prefix" "$prefix/version.json"
    else
        absent toolkit-version-json "$prefix"
    fi
    if [ -r "$prefix/version.txt" ]; then
        emit_file 5 toolkit-version-txt "$prefix" "$prefix/version.txt"
    else
        absent toolkit-version-txt "$prefix"
    fi
    if [ -x "$prefix/bin/nvcc" ]; then
        # A plan reads nvcc's build only where no version.json names the update.
        if [ "$scope" = full ] || [ ! -r "$prefix/version.json" ]; then
            emit 10 toolkit-nvcc "$prefix" -- bounded "$prefix/bin/nvcc" --version
        fi
    else
        absent toolkit-nvcc "$prefix"
    fi
    if have dpkg-query || have rpm; then
        emit 400 toolkit-packages "$prefix" -- toolkit_packages "$prefix"
    else
        absent toolkit-packages "$prefix"
    fi
done <"$scratch/prefixes"
# The package tools on the node, e.g. `apt-get` and `dpkg-query`, or `rpm` and `dnf`.
toolkit_package_tools() {
    for tool in apt-get dpkg-query rpm dnf yum zypper; do
        have "$tool" && printf '%s\n' "$tool"
    done
    return 0
}
emit 10 toolkit-package-tools "" -- toolkit_package_tools

# resolve FILE...: `FILE\tREAL` for each FILE, REAL as `readlink -f` prints it (empty when
# it cannot): one `readlink` for all of them where it takes several operands and
# resolves each, else one each.
resolve() {
    if [ "$#" -gt 1 ] && readlink -f -- "$@" >"$scratch/real" 2>/dev/null; then
        for file in "$@"; do
            IFS= read -r real || real=""
            printf '%s\t%s\n' "$file" "$real"
        done <"$scratch/real"
        return 0
    fi
    for file in "$@"; do
        printf '%s\t%s\n' "$file" "$(readlink -f -- "$file" 2>/dev/null)"
    done
    return 0
}

# Shared libraries: the loader cache for the expected libraries and CUDA's, and the
# real files they point to (the file names carry the full versions).
ldconfig_lines() {
    set -- -e libcudnn -e libnccl -e libnvrtc -e libcudart -e libcublas -e libcuda.so
    lines_ifs=$IFS
    IFS='
'
    set -f
    for library in $libraries; do
        set -- "$@" -e "$library"
    done
    set +f
    IFS=$lines_ifs
    ldconfig -p >"$scratch/ldconfig" || return $?
    grep -F "$@" -- "$scratch/ldconfig"
    return 0
}
if have ldconfig; then
    emit 400 ldconfig "" -- ldconfig_lines
    sed -n 's/^.* => //p' "$scratch/out" 2>/dev/null | sort -u >"$scratch/libraries"
    library_files() {
        set --
        while IFS= read -r library; do
            set -- "$@" "$library"
        done <"$scratch/libraries"
        resolve "$@"
    }
    emit 400 library-files "" -- library_files
else
    absent ldconfig ""
    absent library-files ""
fi

# The loader's configuration, each file's first 50 lines (read by the shell itself).
ld_so_conf() {
    for file in /etc/ld.so.conf /etc/ld.so.conf.d/*; do
        [ -f "$file" ] || continue
        printf '==> %s <==\n' "$file"
        count=0
        while [ "$count" -lt 50 ] && { IFS= read -r line || [ -n "$line" ]; }; do
            printf '%s\n' "$line"
            count=$((count + 1))
            line=""
        done <"$file"
    done
    return 0
}
emit 600 ld-so-conf "" -- ld_so_conf

# Paths the manifest names (library directories): where each really leads, so that
# `/usr/local/cuda/...` and `/usr/local/cuda-13.0/...` are compared as one directory.
real_paths() {
    set --
    lines_ifs=$IFS
    IFS='
'
    set -f
    for path in $paths; do
        set -- "$@" "$path"
    done
    set +f
    IFS=$lines_ifs
    resolve "$@"
}
emit 200 paths "" -- real_paths

# The root-only files that hold secret values of the env step: owner, mode and digest,
# never the content.
secret_files() {
    for file in "$secrets_dir"/*; do
        [ -f "$file" ] || continue
        printf '%s\t%s\t%s\n' "$file" "$(stat -c '%u %g %a' -- "$file")" \
            "$(sha256sum -- "$file" | cut -d ' ' -f 1)"
    done
    return 0
}
emit 100 secret-files "" -- secret_files

# parent PATH: sets `parent` to what `dirname PATH` prints, without a process.
parent() {
    case "$1" in
        */*) parent=${1%/*}; [ -n "$parent" ] || parent=/ ;;
        *) parent=. ;;
    esac
}

# Free space where the upgrade writes: one `df` for all the paths (one each should that
# one fail).
disk_space() {
    venv=/
    if [ -n "$python" ]; then
        # The environment's prefix, or its nearest existing parent on a fresh node.
        parent "$python"
        parent "$parent"
        venv=$parent
        while [ ! -e "$venv" ] && [ "$venv" != "/" ] && [ "$venv" != "." ]; do
            parent "$venv"
            venv=$parent
        done
    fi
    set --
    for path in / /usr/local "$venv" /tmp; do
        [ -e "$path" ] && set -- "$@" "$path"
    done
    if df -Pk -- "$@" >"$scratch/df" 2>/dev/null; then
        {
            IFS= read -r header
            for path in "$@"; do
                IFS= read -r line || line=""
                printf '%s\t%s\n' "$path" "$line"
            done
        } <"$scratch/df"
        return 0
    fi
    for path in "$@"; do
        printf '%s\t%s\n' "$path" "$(df -Pk "$path" 2>/dev/null | tail -n 1)"
    done
    return 0
}
emit 10 disk "" -- disk_space

if [ -r /etc/os-release ]; then
    emit_file 40 os-release "" /etc/os-release
else
    absent os-release ""
fi
emit 2 uname "" -- uname -srm

# What `upgrade apply` recorded about source installs: one JSON document a line.
install_records() {
    for record in /var/lib/cuda-upgrade/records/*.json; do
        [ -f "$record" ] && tr -d '\n' < "$record" && printf '\n'
    done
    return 0
}
emit 200 install-records "" -- install_records

# The journal's last line: an apply that was cut off (a start with no end) is closed by
# the next apply even when nothing is left to change.
journal_tail() {
    [ -f /var/lib/cuda-upgrade/journal.jsonl ] || return 0
    tail -n 1 -- /var/lib/cuda-upgrade/journal.jsonl
}
emit 1 journal-tail "" -- journal_tail

# What the background queries found, collected last so that the reading above hides
# their time.
if [ -n "$python" ] && [ -x "$python" ]; then
    # The installed packages come from the interpreter's own report (each
    # distribution's metadata and direct_url.json, what `pip freeze` reads, without
    # pip's half-second start).
    collect 10 python python "$python"
else
    absent python "$python"
fi

# GPUs and the processes that hold them (not between steps).
if [ "$scope" = step ]; then
    :
elif have nvidia-smi; then
    collect 256 gpus nvidia-smi-gpus ""
    if [ "$status" != 0 ]; then
        # Drivers before compute_cap was queryable still answer the rest.
        emit 256 nvidia-smi-gpus-without-capability "" -- bounded nvidia-smi \
            --query-gpu=index,name,driver_version,memory.total,memory.used,uuid \
            --format=csv,noheader,nounits
    fi
    if [ "$scope" = full ]; then
        collect 1024 apps nvidia-smi-compute-apps ""
    fi
else
    absent nvidia-smi-gpus ""
    absent nvidia-smi-compute-apps ""
fi

# The kernel driver's version.
if [ -n "$driver_version_file" ]; then
    if [ -r "$driver_version_file" ]; then
        emit_file 20 driver "$driver_version_file" "$driver_version_file"
    else
        absent driver "$driver_version_file"
    fi
elif [ -r /proc/driver/nvidia/version ]; then
    emit_file 20 driver /proc/driver/nvidia/version /proc/driver/nvidia/version
elif [ -r /sys/module/nvidia/version ]; then
    emit_file 20 driver /sys/module/nvidia/version /sys/module/nvidia/version
else
    absent driver ""
fi

exit 0
