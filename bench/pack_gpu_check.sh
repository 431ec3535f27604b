#!/usr/bin/env bash
# Packs what bench/gpu_check.sh runs on a GPU machine, from a build for sm_90 (cmake --preset
# ci), and the XGBoost wheel its peer comparison needs there (the machine has no network):
#
#   bash bench/pack_gpu_check.sh [BUILD_DIR] [PACK_DIR]      (defaults build/ci, device-pack/g)
#
# Builds the targets, packs them with ../shared/tools/device-pack, copies the datasets the GPU
# tests read, compresses the binaries (xz; PACK_DIR/unpack.sh undoes it) and, unless
# .whl/xgb.tar.xz exists, downloads XGBoost's manylinux wheel (built with CUDA), strips its
# library and packs it there. The run's carry is then [PACK_DIR, ".whl/xgb.tar.xz"] (about 60 MB
# of the 64 MB allowed) and its command, from the working tree's root:
#   bash PACK_DIR/unpack.sh && PYTHONPATH=/tmp/site bash bench/gpu_check.sh PACK_DIR
set -euo pipefail
build=${1:-build/ci}
pack=${2:-device-pack/g}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
targets=(gbm_cuda_test forest_cuda_test tree_cuda_test knn_cuda_test linear_cuda_test gbm_bench
         family_bench copy_bandwidth)
cmake --build "$build" -j2 --target "${targets[@]}" >/dev/null
../shared/tools/device-pack "$pack" \
  "$build"/tests/models/{gbm/gbm_cuda_test,forest/forest_cuda_test,tree/tree_cuda_test} \
  "$build"/tests/models/{knn/knn_cuda_test,linear/linear_cuda_test} \
  "$build"/bench/{gbm_bench,family_bench,copy_bandwidth} >/dev/null
datasets=${TABFORGE_DATASETS_DIR:-../shared/datasets}
mkdir -p "$pack/datasets"
for file in adult_train.csv.gz adult_test.csv.gz letter.csv.gz california_housing.csv.gz \
  manifest.json; do
  cp "$datasets/$file" "$pack/datasets/"
done
xz -T2 -6 "$pack"/bin/* "$pack"/lib/*
cat >"$pack/unpack.sh" <<'UNPACK'
#!/usr/bin/env bash
# Decompresses the packed binaries beside this script, and XGBoost's package (WHEEL_TAR, default
# .whl/xgb.tar.xz from the working directory) into /tmp/site.
#   bash PACK_DIR/unpack.sh [WHEEL_TAR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for file in "$here"/bin/*.xz "$here"/lib/*.xz; do
  if [ -e "$file" ]; then xz -d -T4 "$file"; fi
done
chmod +x "$here"/bin/* "$here/run"
wheel=${1:-.whl/xgb.tar.xz}
if [ -f "$wheel" ]; then mkdir -p /tmp/site && tar -C /tmp/site -xJf "$wheel"; fi
echo "unpacked; for XGBoost: export PYTHONPATH=/tmp/site"
UNPACK
if [ ! -f .whl/xgb.tar.xz ]; then
  mkdir -p .whl/site
  python3 -m pip download -q xgboost==3.4.1 --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.12 -d .whl
  (cd .whl/site && unzip -q -o ../xgboost-3.4.1-py3-none-manylinux_2_28_x86_64.whl)
  strip --strip-unneeded .whl/site/xgboost/lib/libxgboost.so
  tar -C .whl/site -cf - . | xz -9 -T2 >.whl/xgb.tar.xz
fi
du -sh "$pack" .whl/xgb.tar.xz
