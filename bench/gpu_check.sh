#!/usr/bin/env bash
# The GPU checks and benchmarks of the CUDA backends, run on a GPU machine from a folder made by
# ../shared/tools/device-pack (its `run` wrapper, bin/ with gbm_cuda_test, forest_cuda_test,
# tree_cuda_test, knn_cuda_test, linear_cuda_test, gbm_bench, family_bench, copy_bandwidth and
# optionally gbm_bench_base: an older gbm_bench timed in the same call) with the datasets copied
# to datasets/ beside it:
#
#   bash bench/gpu_check.sh PACKED_DIR [--quick]
#
# --quick leaves out the GBM's 16-thread CPU run and the Nsight Compute profiles (about half the
# time).
#
# Prints the GPU, the parity tests' lines, RF on the GPU against the CPU with 16 threads (1M
# synthetic rows, 300 trees, 100k test rows; same model hash expected; the GPU's device note
# gives rounds, node evaluations and seconds per phase), RF on the GPU at 255 bins, GBM
# training on 1M and 10M synthetic rows (500 rounds, 255 leaves; base and current binaries
# alternately), XGBoost's GPU trainer on the same rows (bench/gbm_peers_gpu.py, depth-8 trees;
# only where its Python package is installed), the GPU against the CPU backend with 16 threads
# (10M rows, 50 rounds, same model hash expected; predict_seconds: the 2.5M test rows on the GPU
# for a CUDA model, on the CPU for the other), KNN on the GPU against the CPU (1M references, 100k queries; the GPU's prediction
# twice: the first pays one-off set-up; the CUDA context itself is started while the data is
# made), the device's copy bandwidth, the histogram kernels' effective bandwidth (Nsight
# Compute, 10M rows, 20 rounds) and the kernels' times in the middle of a 1M-row training.
set -uo pipefail
dir=${1:?usage: gpu_check.sh PACKED_DIR [--quick]}
quick=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
cd "$dir" || exit 2
export TABFORGE_DATASETS_DIR=$PWD/datasets
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for test in gbm_cuda_test forest_cuda_test tree_cuda_test knn_cuda_test linear_cuda_test; do
  timeout 300 ./run "$test" 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is"
done
rf_fields='"roc_auc":[0-9.]*\|"cuda_wait_seconds":[0-9.]*\|"fit_seconds":[0-9.]*\|"device":"[^"]*"\|"device_note":"[^"]*"\|"model_sha256":"[0-9a-f]\{12\}'
for run in "1 {}" "0 {}" "1 {\"max_bin\":255}"; do
  gpus=${run%% *}
  echo "== RF gpus=$gpus params=${run#* } $(timeout 200 ./run family_bench --family RF \
    --synthetic 1000000,28,0 --test-rows 100000 --threads 16 --gpus $gpus --params "${run#* }" \
    2>&1 | tail -1 | grep -o "$rf_fields" | paste -sd' ')"
done
fields='"train_seconds":[0-9.]*\|"predict_seconds":[0-9.]*\|"upload_seconds":[0-9.]*\|"bin_seconds":[0-9.]*\|"device_batches":[0-9]*\|"roc_auc":[0-9.]*\|"model_sha256":"[0-9a-f]\{12\}\|"device":"[^"]*"\|rror.*'
benches=gbm_bench
[ -x bin/gbm_bench_base ] && benches="gbm_bench_base gbm_bench"
params='{"num_leaves":255,"num_iterations":500}'
for repeat in 1 2; do
  for bench in $benches; do
    echo "== $bench 1M $(timeout 120 ./run "$bench" --synthetic 1000000,28,0 --device cuda \
      --params "$params" 2>&1 | grep -o "$fields" | paste -sd' ')"
  done
done
for bench in $benches; do
  echo "== $bench 10M $(timeout 200 ./run "$bench" --synthetic 10000000,28,0 --device cuda \
    --params "$params" 2>&1 | grep -o "$fields" | paste -sd' ')"
done
# XGBoost's GPU trainer on the same rows, where the Python package is installed.
if python3 -c "import xgboost" 2>/dev/null; then
  timeout 400 python3 "$here/gbm_peers_gpu.py" --bench "./run gbm_bench" \
    --rows 1000000,10000000 --rounds 500 --repeat 2 --shapes depthwise 2>&1
fi
short='{"num_leaves":255,"num_iterations":50}'
devices="cuda cpu"
[ "$quick" = --quick ] && devices=cuda
for device in $devices; do
  echo "== gbm_bench 10M 50 rounds $device $(timeout 300 ./run gbm_bench --synthetic \
    10000000,28,0 --device $device --threads 16 --params "$short" 2>&1 | grep -o "$fields" |
    paste -sd' ')"
done
for gpus in 1 0; do
  echo "== KNN gpus=$gpus $(timeout 200 ./run family_bench --family KNN --params \
    '{"n_neighbors":10}' --synthetic 1000000,28,0 --test-rows 100000 --threads 16 \
    --gpus $gpus --predict-repeats $((1 + gpus)) 2>&1 | tail -1 | grep -o '"roc_auc":[0-9.]*\|"fit_seconds":[0-9.]*\|"predict_seconds":[0-9.]*\|"predict_best_seconds":[0-9.]*\|"device":"[^"]*"' | paste -sd' ')"
done
[ -x bin/copy_bandwidth ] && ./run copy_bandwidth
if [ "$quick" != --quick ] && command -v ncu >/dev/null; then
  timeout 200 python3 "$here/cuda_kernel_times.py" --top 4 -- ./run gbm_bench \
    --synthetic 10000000,28,0 --device cuda --params '{"num_leaves":255,"num_iterations":20}'
  # Batches in the middle of training (about tree 250 of 500: some 17,000 batches of four
  # kernels), where a batch holds a few leaves.
  timeout 240 python3 "$here/cuda_kernel_times.py" --top 4 --launch-skip 34000 \
    --launch-count 1200 -- ./run gbm_bench --synthetic 1000000,28,0 --device cuda \
    --params '{"num_leaves":255,"num_iterations":500}'
fi
