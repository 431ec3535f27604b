#include <cuda_runtime.h>

#include <algorithm>

#include "device/cuda_check.h"
#include "models/linear/linear_kernels.h"

namespace tabforge::linear::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

// Each thread takes rows thread, thread + stride, ... in order; the block's sum is a fixed
// tree over its threads, so the partial sums do not depend on scheduling.
__global__ void RowLossKernel(LossKind loss, const double* scores, const double* labels,
                              std::int64_t rows, int outputs, double scale, double* residual,
                              double* partial) {
  __shared__ double sums[kThreads];
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  double total = 0;
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; row < rows;
       row += stride) {
    const double label = labels[row];
    if (loss == LossKind::kLogistic) {
      const double z = scores[row];
      const bool positive = label == 1;
      total += (z > 0 ? z + log1p(exp(-z)) : log1p(exp(z))) - (positive ? z : 0.0);
      residual[row] = (1.0 / (1.0 + exp(-z)) - (positive ? 1.0 : 0.0)) * scale;
    } else if (loss == LossKind::kSquared) {
      const double difference = scores[row] - label;
      total += 0.5 * difference * difference;
      residual[row] = difference * scale;
    } else {
      const int target = static_cast<int>(label);
      double top = scores[row];
      for (int k = 1; k < outputs; ++k) top = fmax(top, scores[row + k * rows]);
      double sum = 0;
      for (int k = 0; k < outputs; ++k) sum += exp(scores[row + k * rows] - top);
      total += top + log(sum) - scores[row + target * rows];
      for (int k = 0; k < outputs; ++k) {
        residual[row + k * rows] =
            (exp(scores[row + k * rows] - top) / sum - (k == target ? 1.0 : 0.0)) * scale;
      }
    }
  }
  sums[threadIdx.x] = total;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

}  // namespace

int RowLossBlocks(std::int64_t rows) {
  return static_cast<int>(
      std::clamp<std::int64_t>((rows + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

void RowLosses(LossKind loss, const double* scores, const double* labels, std::int64_t rows,
               int outputs, double scale, double* residual, double* partial) {
  RowLossKernel<<<RowLossBlocks(rows), kThreads>>>(loss, scores, labels, rows, outputs, scale,
                                                   residual, partial);
  TFG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tabforge::linear::kernels
