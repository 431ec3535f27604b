#!/usr/bin/env bash
# bench/families_peers.py on two pinned cores of another machine (the GPU machine: quiet, where
# this build machine's timings are not), from a folder made by ../shared/tools/device-pack with
# family_bench in it and the datasets copied to datasets/ beside it:
#
#   bash bench/peers_on_two_cores.sh PACKED_DIR [FAMILIES] [DATASETS]
#
# FAMILIES defaults to XT,RF and DATASETS to adult,california. Needs python3 with numpy, pandas
# and scikit-learn there. Writes the JSON lines to $OUT/peers.jsonl when OUT is set, and prints
# the summary lines.
set -uo pipefail
dir=$(cd "${1:?usage: peers_on_two_cores.sh PACKED_DIR [FAMILIES] [DATASETS]}" && pwd)
families=${2:-XT,RF}
datasets=${3:-adult,california}
here=$(cd "$(dirname "$0")" && pwd)
export TABFORGE_DATASETS_DIR=$dir/datasets
# families_peers.py runs BUILD/bench/family_bench: a wrapper calling the packed one.
mkdir -p "$dir/build/bench"
printf '#!/bin/sh\nexec "%s/run" family_bench "$@"\n' "$dir" >"$dir/build/bench/family_bench"
chmod +x "$dir/build/bench/family_bench"
pin=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ]; then pin=(taskset -c 2,3); fi
lscpu | grep -E "Model name"
python3 -c "import sklearn; print('scikit-learn', sklearn.__version__)"
"${pin[@]}" python3 "$here/families_peers.py" --build "$dir/build" --datasets "$datasets" \
  --families "$families" --seed 0 --repeat 5 --out "${OUT:-/tmp}/peers.jsonl" 2>&1 |
  grep -v '^{"family"\|^{"tool"'
