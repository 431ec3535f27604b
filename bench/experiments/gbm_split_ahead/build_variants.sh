#!/usr/bin/env bash
# Builds the CUDA grower's pending variants on top of the working tree's HEAD, packs them for a
# GPU machine and writes the command that times them:
#
#   bash bench/experiments/gbm_split_ahead/build_variants.sh [BUILD_DIR] [PACK_DIR]
#       (defaults build/ci and device-pack; BUILD_DIR must be configured for sm_90)
#
# Variants (gbm_bench each; gbm_cuda_test for pdl and rows512):
#   main      HEAD as it is
#   pdl       programmatic_launch.patch (a batch's kernels scheduled while the one before
#             finishes)
#   rows512   HEAD with kMinRowsPerBlock 512
#   deep33    HEAD with kDeepAheadPercent 33
# Then on the GPU machine: `bash PACK_DIR/time_variants.sh` (run's carry: PACK_DIR). The source
# tree is restored to HEAD afterwards; it must have no changes to src/ before.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=${1:-build/ci}
pack=${2:-device-pack}
cd "$root"
if ! git diff --quiet -- src; then
  echo "build_variants: src/ has changes; commit or stash them first" >&2
  exit 2
fi
bins=$(mktemp -d)
restore() { git checkout -q -- src; }
trap restore EXIT

compile() {  # NAME [TEST]: builds and keeps gbm_bench (and gbm_cuda_test) as NAME
  cmake --build "$build" -j2 --target gbm_bench gbm_cuda_test >/dev/null
  cp "$build/bench/gbm_bench" "$bins/$1"
  if [ "${2:-}" = test ]; then cp "$build/tests/models/gbm/gbm_cuda_test" "$bins/test_$1"; fi
  echo "built $1"
}
set_constant() {  # FILE NAME VALUE
  sed -i -E "s/($2 = )[0-9]+;/\\1$3;/" "$1"
  grep -q "$2 = $3;" "$1" || { echo "build_variants: $2 not set in $1" >&2; exit 1; }
}

compile main
git apply "$here/programmatic_launch.patch"
compile pdl test
git checkout -q -- src
set_constant src/models/tree/device_common.cuh kMinRowsPerBlock 512
compile rows512 test
git checkout -q -- src
set_constant src/models/tree/device_select.cu kDeepAheadPercent 33
compile deep33

"$root/../shared/tools/device-pack" "$pack" "$bins"/* >/dev/null
mkdir -p "$pack/datasets"
for name in adult_train adult_test letter california_housing; do
  cp "$root/../shared/datasets/$name.csv.gz" "$pack/datasets/"
done
cp "$root/../shared/datasets/manifest.json" "$pack/datasets/"
cat >"$pack/time_variants.sh" <<'EOF'
#!/usr/bin/env bash
# Times the variants on the GPU machine (1M rows, 10M rows, 1M rows again) and runs the tests of
# pdl and rows512; everything printed also goes to $OUT/log.txt.
set -uo pipefail
cd "$(dirname "$0")"
export TABFORGE_DATASETS_DIR=$PWD/datasets
log=${OUT:-.}/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$log"
fields='"train_seconds":[0-9.]*\|"device_batches":[0-9]*\|"roc_auc":[0-9.]*\|"model_sha256":"[0-9a-f]\{12\}\|rror.*'
params='{"num_leaves":255,"num_iterations":500}'
round() {
  for variant in main pdl rows512 deep33; do
    result=$(timeout 100 ./run "$variant" --synthetic "$1,28,0" --device cuda --params "$params" \
      2>&1 | grep -o "$fields" | paste -sd' ')
    echo "== $variant $1 $result" | tee -a "$log"
  done
}
run_test() {
  echo "## $1" | tee -a "$log"
  timeout 150 ./run "$1" 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is" |
    tee -a "$log"
}
round 1000000
run_test test_pdl
round 10000000
run_test test_rows512
round 1000000
EOF
chmod +x "$pack/time_variants.sh"
echo "packed into $pack; on the GPU machine: bash $pack/time_variants.sh"
