#!/usr/bin/env bash
# The benchmark gate on a real GPU node (one with a torch venv in /opt/torch/.venv), as
# root: `UPGRADE=path/to/upgrade OUT=dir bench/gpu-gate/run.sh`. A first apply (an env
# change the benchmark does not read) passes with its baseline and after; a second apply is converged (no
# benchmark); an apply that sets BENCH_DTYPE=float32 (read by the script) fails the
# gate and --rollback-on-failure restores the node; verify --benchmark shows the figure
# back; status shows the last baseline and result.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
U="$(realpath "${UPGRADE:-$here/../../target/release/upgrade}")"
OUT="${OUT:-/tmp/gpu-gate}"
cd "$here"
mkdir -p "$OUT"
cp matmul_bench.py /root/matmul_bench.py
export HOME=/root XDG_CACHE_HOME=/tmp/cu-cache NO_COLOR=1
step() { echo; echo "\$ $*"; "$@"; echo "[exit $?]"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
step "$U" --version
step "$U" plan manifest.yaml --local
echo; echo "\$ upgrade apply manifest.yaml --local --yes --format json"
"$U" apply manifest.yaml --local --yes --format json > "$OUT/apply-first.json" 2> "$OUT/apply-first.stderr"
echo "[exit $?]"; cat "$OUT/apply-first.stderr"; python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({k: d.get(k) for k in ("node","ok","benchmark","lock")}, indent=1))' "$OUT/apply-first.json"
step "$U" apply manifest.yaml --local --yes
step "$U" plan slower.yaml --local
step "$U" apply slower.yaml --local --yes --rollback-on-failure
step /opt/torch/.venv/bin/python3 -c 'import os; print("BENCH_DTYPE =", os.environ.get("BENCH_DTYPE"), "CUDA_MODULE_LOADING =", os.environ.get("CUDA_MODULE_LOADING"))'
step "$U" verify manifest.yaml --local --benchmark
step "$U" status manifest.yaml --local
tail -n 12 /var/lib/cuda-upgrade/journal.jsonl > "$OUT/journal-tail.jsonl" 2>/dev/null
true
