// The GPU predictor's kernel (see gbm_predict_kernels.h): one thread scores one row through
// every tree in order (ScoreRow), adding the same doubles in the same order as GbmModel's CPU
// loop.
#include <cuda_runtime.h>

#include "device/cuda_check.h"
#include "models/gbm/gbm_predict_kernels.h"

namespace tabforge::gbm::kernels {
namespace {

constexpr int kThreads = 128;

template <int kOutputs>
__global__ void __launch_bounds__(kThreads)
    PredictKernel(DeviceForest forest, const float* numeric, const std::int32_t* codes,
                  std::int64_t rows, int outputs, const double* init, double* raw) {
  const std::int64_t row = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  double sums[kOutputs];
  ScoreRow(forest, numeric, codes, rows, row, outputs, init, sums);
  for (int output = 0; output < outputs; ++output) raw[row * outputs + output] = sums[output];
}

}  // namespace

void Predict(const DeviceForest& forest, const float* numeric, const std::int32_t* codes,
             std::int64_t rows, int outputs, const double* init, double* raw) {
  if (rows == 0) return;
  const auto blocks = static_cast<unsigned>((rows + kThreads - 1) / kThreads);
  if (outputs == 1) {
    PredictKernel<1><<<blocks, kThreads>>>(forest, numeric, codes, rows, outputs, init, raw);
  } else if (outputs <= 8) {
    PredictKernel<8><<<blocks, kThreads>>>(forest, numeric, codes, rows, outputs, init, raw);
  } else {
    PredictKernel<kMaxPredictOutputs>
        <<<blocks, kThreads>>>(forest, numeric, codes, rows, outputs, init, raw);
  }
  TFG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tabforge::gbm::kernels
