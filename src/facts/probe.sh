# cuda-upgrade node probe: prints every fact the planner needs in one run.
#
# Usage: sh -s -- --python PATH [--library SONAME]... [--path PATH]... [--marker NAME]
#                 [--secrets-dir DIR]
#                 [--driver-version-file PATH]  < probe.sh
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

LC_ALL=C
export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin:/usr/local/cuda/bin"
export PATH

python=""
marker="cuda-upgrade managed block"
driver_version_file=""
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

# emit LIMIT NAME ARGUMENT -- COMMAND...: runs COMMAND and prints it as one section.
emit() {
    limit="$1"; name="$2"; argument="$3"; shift 4
    if [ -n "$argument" ]; then
        printf '@@begin %s %s@@\n' "$name" "$argument"
    else
        printf '@@begin %s@@\n' "$name"
    fi
    "$@" </dev/null >"$scratch/out" 2>"$scratch/err"
    status=$?
    head -n "$limit" "$scratch/out"
    if [ -s "$scratch/out" ] && [ "$(tail -c 1 "$scratch/out" | wc -l)" -eq 0 ]; then
        printf '\n'
    fi
    if [ -s "$scratch/err" ]; then
        printf '@@stderr@@\n'
        head -c 4000 "$scratch/err"
        if [ "$(tail -c 1 "$scratch/err" | wc -l)" -eq 0 ]; then
            printf '\n'
        fi
    fi
    printf '@@end status=%s@@\n' "$status"
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

probe_arguments() {
    printf 'python\t%s\n' "$python"
    printf 'marker\t%s\n' "$marker"
    printf '%s\n' "$libraries" | while IFS= read -r library; do
        [ -n "$library" ] && printf 'library\t%s\n' "$library"
    done
    printf '%s\n' "$paths" | while IFS= read -r path; do
        [ -n "$path" ] && printf 'path\t%s\n' "$path"
    done
    printf 'driver-version-file\t%s\n' "$driver_version_file"
    printf 'secrets-dir\t%s\n' "$secrets_dir_given"
    return 0
}
emit 100 arguments "" -- probe_arguments

# GPUs and the processes that hold them.
if have nvidia-smi; then
    emit 256 nvidia-smi-gpus "" -- bounded nvidia-smi \
        --query-gpu=index,name,driver_version,compute_cap,memory.total,memory.used,uuid \
        --format=csv,noheader,nounits
    if [ "$status" != 0 ]; then
        # Drivers before compute_cap was queryable still answer the rest.
        emit 256 nvidia-smi-gpus-without-capability "" -- bounded nvidia-smi \
            --query-gpu=index,name,driver_version,memory.total,memory.used,uuid \
            --format=csv,noheader,nounits
    fi
    emit 1024 nvidia-smi-compute-apps "" -- bounded nvidia-smi \
        --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv
else
    absent nvidia-smi-gpus ""
    absent nvidia-smi-compute-apps ""
fi

# The kernel driver's version.
if [ -n "$driver_version_file" ]; then
    if [ -r "$driver_version_file" ]; then
        emit 20 driver "$driver_version_file" -- cat "$driver_version_file"
    else
        absent driver "$driver_version_file"
    fi
elif [ -r /proc/driver/nvidia/version ]; then
    emit 20 driver /proc/driver/nvidia/version -- cat /proc/driver/nvidia/version
elif [ -r /sys/module/nvidia/version ]; then
    emit 20 driver /sys/module/nvidia/version -- cat /sys/module/nvidia/version
else
    absent driver ""
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
    basename -- "$1" | sed -n 's/^cuda-\([0-9][0-9]*\)\.\([0-9][0-9]*\)$/\1-\2/p'
}
# The packages whose file list names PREFIX, as `dpkg-query -S PREFIX` answers (a pattern
# starting with `/` matches the path exactly): read from dpkg's own file lists
# (`info/NAME[:ARCH].list`, one path a line) where they are, which costs a fraction of
# dpkg-query's read of the whole database.
# See: https://man7.org/linux/man-pages/man1/dpkg-query.1.html ("--search")
toolkit_dpkg_owners() {
    if [ -d /var/lib/dpkg/info ]; then
        grep -lxF -- "$1" /var/lib/dpkg/info/*.list 2>/dev/null |
            sed -n 's|^.*/||; s|\.list$||p'
    else
        dpkg-query -S -- "$1" 2>/dev/null | sed -n '/^diversion/d; s/: .*$//p' | tr ',' '\n'
    fi | while IFS= read -r owner; do
        owner=$(printf '%s' "$owner" | tr -d ' ')
        [ -n "$owner" ] && printf 'owner\t%s\n' "$owner"
    done
    return 0
}
toolkit_dpkg_packages() {
    toolkit_series=$(toolkit_series "$1")
    if [ -n "$toolkit_series" ]; then
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
toolkit_packages() {
    toolkit_owners=""
    if have dpkg-query; then
        toolkit_owners=$(toolkit_dpkg_owners "$1")
    fi
    if [ -z "$toolkit_owners" ] && have rpm; then
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
        emit 200 toolkit-version-json "$prefix" -- cat "$prefix/version.json"
    else
        absent toolkit-version-json "$prefix"
    fi
    if [ -r "$prefix/version.txt" ]; then
        emit 5 toolkit-version-txt "$prefix" -- cat "$prefix/version.txt"
    else
        absent toolkit-version-txt "$prefix"
    fi
    if [ -x "$prefix/bin/nvcc" ]; then
        emit 10 toolkit-nvcc "$prefix" -- bounded "$prefix/bin/nvcc" --version
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

# The target interpreter: one Python program prints everything as one JSON object.
python_facts() {
    bounded "$python" - <<'PYTHON'
import json, os, platform, re, sys, sysconfig

facts = {}
facts["executable"] = sys.executable
facts["version"] = platform.python_version()
facts["implementation"] = sys.implementation.name
facts["prefix"] = sys.prefix
facts["base_prefix"] = getattr(sys, "base_prefix", sys.prefix)
facts["path"] = [entry for entry in sys.path if entry]
try:
    import site
    facts["site_packages"] = list(site.getsitepackages())
except Exception:
    facts["site_packages"] = [sysconfig.get_paths()["purelib"]]
facts["machine"] = platform.machine()
try:
    facts["glibc"] = os.confstr("CS_GNU_LIBC_VERSION")
except (AttributeError, ValueError, OSError):
    facts["glibc"] = None


def fallback_tags():
    # Like pip's packaging.tags.sys_tags for CPython on glibc Linux.
    # See: https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/
    major, minor = sys.version_info[0], sys.version_info[1]
    machine = platform.machine()
    platforms = []
    glibc = facts["glibc"]
    match = re.match(r"glibc (\d+)\.(\d+)", glibc or "")
    if match and match.group(1) == "2":
        # See: https://peps.python.org/pep-0600/ (manylinux_2_17 is the oldest for x86_64 and aarch64)
        oldest = 17 if machine in ("x86_64", "aarch64", "ppc64le", "s390x") else 5
        for glibc_minor in range(int(match.group(2)), oldest - 1, -1):
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


tags_module = None
facts["tags_source"] = "fallback"
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

import importlib.util

sitecustomize = {"origin": None, "imported": "sitecustomize" in sys.modules, "text": None, "shadowed": []}
try:
    spec = importlib.util.find_spec("sitecustomize")
except Exception:
    spec = None
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

torch = None
try:
    spec = importlib.util.find_spec("torch")
except Exception:
    spec = None
if spec is not None and spec.submodule_search_locations:
    location = list(spec.submodule_search_locations)[0]
    torch = {"location": location, "version_py": None, "requires": None, "metadata_version": None}
    try:
        with open(os.path.join(location, "version.py"), "r", encoding="utf-8", errors="replace") as handle:
            torch["version_py"] = handle.read(8192)
    except OSError:
        pass
    try:
        import importlib.metadata as metadata
        distribution = metadata.distribution("torch")
        torch["metadata_version"] = distribution.version
        torch["requires"] = list(distribution.requires or [])[:400]
    except Exception:
        pass
facts["torch"] = torch

def name_and_version(distribution):
    # Name and Version from the metadata's header lines: the email parser behind
    # `distribution.metadata` (read again by `.version`) costs most of this program on
    # an environment of a few hundred packages.
    text = distribution.read_text("METADATA") or distribution.read_text("PKG-INFO") or ""
    found = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, separator, value = line.partition(":")
        key = key.strip().lower()
        if separator and key in ("name", "version") and key not in found:
            found[key] = value.strip()
            if len(found) == 2:
                break
    return found.get("name"), found.get("version")


distributions = []
try:
    import importlib.metadata as metadata
    for distribution in metadata.distributions():
        name, version = name_and_version(distribution)
        if name:
            # PEP 610: how it was installed (a URL, a VCS checkout, editable), as pip
            # freeze reads it; none for an install from an index.
            try:
                direct_url = distribution.read_text("direct_url.json")
            except Exception:
                direct_url = None
            distributions.append([name, version, direct_url])
except Exception:
    pass
facts["distributions"] = sorted(distributions)[:4000]

json.dump(facts, sys.stdout, sort_keys=True)
sys.stdout.write("\n")
PYTHON
}
# A bare name such as `python3` is looked up on PATH, as a shell would.
case "$python" in
    */*) ;;
    ?*) python="$(command -v "$python" 2>/dev/null || printf '%s' "$python")" ;;
esac
if [ -n "$python" ] && [ -x "$python" ]; then
    # The installed packages come from the interpreter's own report (importlib.metadata
    # and each distribution's direct_url.json, what `pip freeze` reads, without pip's
    # half-second start).
    emit 10 python "$python" -- python_facts
else
    absent python "$python"
fi

# Shared libraries: the loader cache for the expected libraries and CUDA's, and the
# real files they point to (the file names carry the full versions).
ldconfig_lines() {
    printf '%s\n' "$libraries" | while IFS= read -r library; do
        [ -n "$library" ] && printf '%s\n' "$library"
    done >"$scratch/patterns"
    for library in libcudnn libnccl libnvrtc libcudart libcublas libcuda.so; do
        printf '%s\n' "$library" >>"$scratch/patterns"
    done
    ldconfig -p >"$scratch/ldconfig" || return $?
    grep -F -f "$scratch/patterns" "$scratch/ldconfig"
    return 0
}
if have ldconfig; then
    emit 400 ldconfig "" -- ldconfig_lines
    sed -n 's/^.* => //p' "$scratch/out" 2>/dev/null | sort -u >"$scratch/libraries"
    library_files() {
        while IFS= read -r library; do
            printf '%s\t%s\n' "$library" "$(readlink -f "$library")"
        done <"$scratch/libraries"
        return 0
    }
    emit 400 library-files "" -- library_files
else
    absent ldconfig ""
    absent library-files ""
fi

ld_so_conf() {
    for file in /etc/ld.so.conf /etc/ld.so.conf.d/*; do
        [ -f "$file" ] || continue
        printf '==> %s <==\n' "$file"
        head -n 50 "$file"
    done
    return 0
}
emit 600 ld-so-conf "" -- ld_so_conf

# Paths the manifest names (library directories): where each really leads, so that
# `/usr/local/cuda/...` and `/usr/local/cuda-13.0/...` are compared as one directory.
real_paths() {
    printf '%s\n' "$paths" | while IFS= read -r path; do
        [ -n "$path" ] || continue
        printf '%s\t%s\n' "$path" "$(readlink -f -- "$path" 2>/dev/null)"
    done
    return 0
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

# Free space where the upgrade writes.
disk_space() {
    venv=/
    if [ -n "$python" ]; then
        # The environment's prefix, or its nearest existing parent on a fresh node.
        venv="$(dirname "$(dirname "$python")")"
        while [ ! -e "$venv" ] && [ "$venv" != "/" ] && [ "$venv" != "." ]; do
            venv="$(dirname "$venv")"
        done
    fi
    for path in / /usr/local "$venv" /tmp; do
        [ -e "$path" ] || continue
        printf '%s\t%s\n' "$path" "$(df -Pk "$path" 2>/dev/null | tail -n 1)"
    done
    return 0
}
emit 10 disk "" -- disk_space

if [ -r /etc/os-release ]; then
    emit 40 os-release "" -- cat /etc/os-release
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

exit 0
