#!/usr/bin/env bash
# GPU tests of the newest binaries, then 1M rows x 500 rounds x 255 leaves: base (2a4b821),
# heap (3447d9d: the replay's leaf heap) and new (the tree's scores and the next round's
# gradients queued before the host replay) alternated; XGBoost beside the new one.
set -uo pipefail
exec > >(tee "${OUT:-/tmp}/log") 2>&1
start=$(date +%s)
python3 - <<'PY'
import lzma, os, glob
for f in glob.glob("device-pack/bin/*.xz"):
    data = lzma.open(f).read(); out = f[:-3]
    open(out, "wb").write(data); os.chmod(out, 0o755); os.remove(f)
PY
python3 -c "import tarfile; tarfile.open('.whl/xgb.tar.xz').extractall('/tmp/site')"
export PYTHONPATH=/tmp/site TABFORGE_DATASETS_DIR=$PWD/device-pack/datasets
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "setup $(( $(date +%s) - start )) s"
for test in gbm_cuda_test tree_cuda_test; do
  echo "## $test"
  timeout 120 device-pack/run "$test" 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is|rror" | cut -c1-200
done
p='{"num_leaves":255,"num_iterations":500}'
fields='"train_seconds":[0-9.]*\|"model_sha256":"[0-9a-f]\{12\}\|"roc_auc":[0-9.]*\|rror.*'
for i in 1 2 3; do
  for b in gbm_bench_base gbm_bench_heap gbm_bench; do
    echo "== $b 1M $(timeout 60 device-pack/run $b --synthetic 1000000,28,0 --device cuda --params "$p" 2>&1 | grep -o "$fields" | paste -sd' ')"
  done
done
echo "elapsed $(( $(date +%s) - start )) s"
timeout 150 python3 bench/gbm_peers_gpu.py --bench "device-pack/run gbm_bench" --rows 1000000 --rounds 500 --repeat 3 --shapes depthwise 2>&1
if [ $(( $(date +%s) - start )) -lt 240 ]; then
  for b in gbm_bench_base gbm_bench; do
    echo "== $b 10M $(timeout 60 device-pack/run $b --synthetic 10000000,28,0 --device cuda --params "$p" 2>&1 | grep -o "$fields" | paste -sd' ')"
  done
fi
echo "done $(( $(date +%s) - start )) s"
