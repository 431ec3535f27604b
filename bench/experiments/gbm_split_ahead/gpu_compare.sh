#!/usr/bin/env bash
# Runs on a GPU machine from a folder made by ../shared/tools/device-pack holding gbm_cuda_test
# and gbm_bench of the current tree and gbm_bench_base (a base build's, renamed), with the datasets
# the GBM tests read copied to datasets/ beside them:
#
#   bash gpu_compare.sh PACKED_DIR
#
# Prints the GBM parity tests, then training times, batches, unused split rows and model hashes
# of the base and the current build, alternated (1M rows twice, 10M once; 500 rounds of 255 leaves).
set -uo pipefail
cd "${1:?usage: gpu_compare.sh PACKED_DIR}" || exit 2
export TABFORGE_DATASETS_DIR=$PWD/datasets
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 ./run gbm_cuda_test 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is"
fields='"train_seconds":[0-9.]*\|"device_batches":[0-9]*\|"device_unused_split_rows":[0-9]*\|"roc_auc":[0-9.]*\|"model_sha256":"[0-9a-f]\{12\}\|rror.*'
params='{"num_leaves":255,"num_iterations":500}'
for rows in 1000000 1000000 10000000; do
  for bench in gbm_bench_base gbm_bench; do
    echo "== $bench $rows $(timeout 150 ./run "$bench" --synthetic "$rows,28,0" --device cuda \
      --params "$params" 2>&1 | grep -o "$fields" | paste -sd' ')"
  done
done
