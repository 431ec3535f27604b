// The GPU predictor's kernel (see gbm_predict_kernels.h): one thread scores one row through
// every tree in order, adding the same doubles in the same order as GbmModel's CPU loop.
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
  for (int k = 0; k < outputs; ++k) sums[k] = init[k];
  int k = 0;
  for (int tree = 0; tree < forest.trees; ++tree) {
    std::int32_t at = forest.roots[tree];
    while (at >= 0) {
      const ForestNode node = forest.nodes[at];
      bool left;
      if (node.feature & kNodeCategorical) {
        const int c = (node.feature & kNodeFeatureMask) - forest.numeric_count;
        const std::int32_t code = codes[c * rows + row];
        const std::int32_t begin = forest.code_begin[c];
        const std::int32_t size = forest.code_begin[c + 1] - begin;
        const int bin =
            code < 0 || code >= size ? forest.other_bin[c] : int(forest.code_bins[begin + code]);
        const ForestCategories categories = forest.categories[node.payload];
        const std::int32_t word = categories.begin + bin / 32;
        left = word < categories.end && ((forest.bits[word] >> (bin % 32)) & 1u);
      } else {
        const float value = numeric[std::int64_t(node.feature & kNodeFeatureMask) * rows + row];
        left = isnan(value) ? (node.feature & kNodeDefaultLeft) != 0 : value <= node.threshold;
      }
      at = left ? node.left : node.right;
    }
    sums[k] += forest.leaves[~at];
    k = k + 1 == outputs ? 0 : k + 1;
  }
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
