#!/bin/sh
# Bounded cost of loading hostile manifests (issue 9): times and peak memory of
# `upgrade validate` on generated files. Not a test: it reports, it does not judge.
#
#   bench/hostile-cost.sh [UPGRADE_BINARY]
#
# Default binary: target/release/upgrade (build it with `cargo build --release`).
# Each line: the case, the file size, wall seconds, peak resident memory (KiB) and the
# exit status (2 = refused with located errors, as expected for most cases).
set -eu
upgrade=${1:-target/release/upgrade}
dir=$(mktemp -d)
trap 'rm -rf -- "$dir"' EXIT
header='schema: 1
name: bench
target: { python: /opt/ml-env/bin/python3 }
'
python3 - "$dir" "$header" <<'PYTHON'
import sys
dir, header = sys.argv[1], sys.argv[2]
def write(name, body):
    with open(f"{dir}/{name}.yaml", "w") as out:
        out.write(header + body)
write("env-50k-keys", "env:\n" + "".join(f"  K{i}: v\n" for i in range(50_000)))
write("env-100k-keys", "env:\n" + "".join(f"  K{i}: v\n" for i in range(100_000)))
write("env-100k-duplicate-keys", "env:\n" + "  K: v\n" * 100_000)
write("indexes-100k", "indexes:\n" + "".join(f"  - {{ name: i{i}, url: 'https://h/{i}' }}\n" for i in range(100_000)))
write("sequence-15mb", "description: [" + "1," * 7_800_000 + "1]\n")
write("sequence-50mb", "description: [" + "1," * 26_000_000 + "1]\n")
write("long-unknown-key-8mb", "x" * 8_000_000 + ": 1\n")
write("nesting-1m", "description: " + "[" * 1_000_000 + "]" * 1_000_000 + "\n")
PYTHON
printf '%-26s %10s %8s %10s %4s\n' case bytes seconds peak_kib exit
for file in "$dir"/*.yaml; do
    name=$(basename "$file" .yaml)
    bytes=$(wc -c < "$file")
    start=$(date +%s.%N)
    status=0
    /usr/bin/time -f '%M' -o "$dir/rss" "$upgrade" validate "$file" > /dev/null 2>&1 || status=$?
    end=$(date +%s.%N)
    printf '%-26s %10s %8.2f %10s %4s\n' "$name" "$bytes" "$(echo "$end - $start" | bc)" "$(tail -n 1 "$dir/rss")" "$status"
done
