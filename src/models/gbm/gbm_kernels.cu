// The GBM's kernels: the per-row functions of gbm_objective.h over device rows, so the GPU
// computes the CPU's bits.
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cub/cub.cuh>

#include "device/cuda_check.h"
#include "models/gbm/gbm_kernels.h"
#include "models/tree/device_common.cuh"

namespace tabforge::gbm::kernels {
namespace {

constexpr int kThreads = 256;

int GridFor(std::int64_t items) {
  return static_cast<int>(std::clamp<std::int64_t>((items + kThreads - 1) / kThreads, 1, 1 << 20));
}

void CheckLaunch(const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) device::ThrowCudaError(error, kernel, __FILE__, __LINE__);
}

// Blocks of the kernels that also take the largest |gradient|: enough to fill the device, few
// enough that their one atomic each costs nothing.
constexpr int kMaxAbsBlocks = 1024;
static_assert(kThreads % 32 == 0, "BlockMaxAbs folds whole warps");

// Folds `local` (|gradient| as ordered bits: for non-negative floats, integer order is float
// order) over the block into `max_bits` with one atomic, so the maximum does not depend on the
// order of the rows. Every thread of the block (kThreads of them) calls it.
__device__ inline void BlockMaxAbs(unsigned int local, unsigned int* max_bits) {
  __shared__ unsigned int warp_max[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    local = max(local, __shfl_down_sync(0xffffffffu, local, offset));
  }
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (lane == 0) warp_max[warp] = local;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int other = 1; other < kThreads / 32; ++other) local = max(local, warp_max[other]);
    atomicMax(max_bits, local);
  }
}

__global__ void GradientKernel(RowGradientParams objective, const float* scores,
                               const double* labels, const double* weights, float* gradients,
                               std::uint32_t* class_hessians, tree::GradientPair* pairs,
                               std::int64_t rows, unsigned int* max_bits) {
  unsigned int local = 0;
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; row < rows;
       row += std::int64_t(gridDim.x) * blockDim.x) {
    const double w = weights != nullptr ? weights[row] : 1.0;
    if (objective.outputs > 1) {
      RowGradients(objective, scores + row * objective.outputs, labels[row], w, gradients + row,
                   class_hessians + row, rows, nullptr);
    } else {
      float gradient = 0;
      RowGradients(objective, scores + row, labels[row], w, &gradient, &pairs[row].hessian, rows,
                   nullptr);
      gradients[row] = gradient;
      local = max(local, __float_as_uint(fabsf(gradient)));
    }
  }
  if (objective.outputs == 1) BlockMaxAbs(local, max_bits);
}

__global__ void MaxAbsKernel(const float* gradients, std::int64_t rows, unsigned int* max_bits) {
  unsigned int local = 0;
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; row < rows;
       row += std::int64_t(gridDim.x) * blockDim.x) {
    local = max(local, __float_as_uint(fabsf(gradients[row])));
  }
  BlockMaxAbs(local, max_bits);
}

__global__ void ScalesKernel(const unsigned int* max_bits, std::int64_t level, double hessian_fixed,
                             RoundScales* scales) {
  const double max_gradient = __uint_as_float(*max_bits);
  scales->gradient_scale = max_gradient > 0 ? max_gradient / double(level) : 1.0;
  scales->hessian_scale = 1.0 / hessian_fixed;
  scales->max_abs_gradient = max_gradient;
}

__global__ void QuantizeKernel(const float* gradients, const std::uint32_t* class_hessians,
                               const RoundScales* scales, std::int64_t level, std::uint64_t seed,
                               std::uint64_t stream, tree::GradientPair* pairs, std::int64_t rows) {
  const double scale = scales->gradient_scale;
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; row < rows;
       row += std::int64_t(gridDim.x) * blockDim.x) {
    pairs[row].gradient = QuantizeGradient(gradients[row], scale, level, seed, stream, row);
    if (class_hessians != nullptr) pairs[row].hessian = class_hessians[row];
  }
}

__global__ void BagKernel(std::uint64_t seed, std::uint64_t stream, double fraction,
                          std::uint8_t* in_bag, std::int64_t rows) {
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; row < rows;
       row += std::int64_t(gridDim.x) * blockDim.x) {
    in_bag[row] = RandomUniform(seed, stream, row) < fraction;
  }
}

// Adds each leaf's value to the scores of its rows (positions [begin, end) of `order`).
// Work items are chunks of kLeafChunk positions of one leaf (chunks[l]: leaf l's first).
__global__ void LeafScoreKernel(const std::int32_t* order, const long long* ranges,
                                const int* chunks, const int* leaf_counts, const double* values,
                                double learning_rate, float* scores, int outputs, int output) {
  const int leaf_count = *leaf_counts;
  const int items = chunks[leaf_count];
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const tree::kernels::LeafChunk chunk =
        tree::kernels::LeafChunkOf(ranges, chunks, leaf_count, item);
    const double value = values[chunk.leaf] * learning_rate;
    for (std::int64_t at = chunk.begin + threadIdx.x; at < chunk.end; at += blockDim.x) {
      float& score = scores[std::int64_t(order[at]) * outputs + output];
      score = AddToScore(score, value);
    }
  }
}

// Rows out of the bag: routed through the tree by their bins, then scored.
template <typename Bin>
__global__ void OutOfBagKernel(const Bin* bins, int stride, const std::uint8_t* in_bag,
                               const RouteNode* nodes, const std::uint32_t* bitsets,
                               const double* values, float* scores, int outputs, int output,
                               std::int64_t rows) {
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; row < rows;
       row += std::int64_t(gridDim.x) * blockDim.x) {
    if (in_bag[row]) continue;
    int at = 0;
    while (at >= 0) {
      const RouteNode node = nodes[at];
      const int bin = bins[static_cast<std::size_t>(row) * stride + node.feature];
      bool left;
      if (node.categorical) {
        const int word = node.bitset_begin + bin / 32;
        left = word < node.bitset_end && ((bitsets[word] >> (bin % 32)) & 1u);
      } else {
        left = bin == node.missing_bin ? node.default_left != 0 : bin <= node.threshold_bin;
      }
      at = left ? node.left : node.right;
    }
    float& score = scores[row * outputs + output];
    score = AddToScore(score, values[~at]);
  }
}

__global__ void InitScoresKernel(float* scores, const float* init, int outputs,
                                 std::int64_t count) {
  for (std::int64_t at = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; at < count;
       at += std::int64_t(gridDim.x) * blockDim.x) {
    scores[at] = init[at % outputs];
  }
}

}  // namespace

void ComputeGradients(const RowGradientParams& objective, const float* scores, const double* labels,
                      const double* weights, float* gradients, std::uint32_t* class_hessians,
                      tree::GradientPair* pairs, std::int64_t rows, unsigned int* max_bits) {
  TFG_CUDA_CHECK(cudaMemsetAsync(max_bits, 0, sizeof(unsigned int)));
  GradientKernel<<<std::min(GridFor(rows), kMaxAbsBlocks), kThreads>>>(
      objective, scores, labels, weights, gradients, class_hessians, pairs, rows, max_bits);
  CheckLaunch("GradientKernel");
}

void MaxAbsGradient(const float* gradients, std::int64_t rows, unsigned int* max_bits) {
  TFG_CUDA_CHECK(cudaMemsetAsync(max_bits, 0, sizeof(unsigned int)));
  MaxAbsKernel<<<std::min(GridFor(rows), kMaxAbsBlocks), kThreads>>>(gradients, rows, max_bits);
  CheckLaunch("MaxAbsKernel");
}

void ComputeScales(const unsigned int* max_bits, std::int64_t level, double hessian_fixed,
                   RoundScales* scales) {
  ScalesKernel<<<1, 1>>>(max_bits, level, hessian_fixed, scales);
  CheckLaunch("ScalesKernel");
}

void Quantize(const float* gradients, const std::uint32_t* class_hessians,
              const RoundScales* scales, std::int64_t level, std::uint64_t seed,
              std::uint64_t stream, tree::GradientPair* pairs, std::int64_t rows) {
  QuantizeKernel<<<GridFor(rows), kThreads>>>(gradients, class_hessians, scales, level, seed,
                                              stream, pairs, rows);
  CheckLaunch("QuantizeKernel");
}

std::size_t BagScratchBytes(std::int64_t rows) {
  std::size_t bytes = 0;
  TFG_CUDA_CHECK(cub::DeviceSelect::Flagged(
      nullptr, bytes, thrust::counting_iterator<std::int32_t>(0),
      static_cast<const std::uint8_t*>(nullptr), static_cast<std::int32_t*>(nullptr),
      static_cast<int*>(nullptr), static_cast<int>(rows)));
  return std::max<std::size_t>(bytes, 1);
}

void DrawBag(std::uint64_t seed, std::uint64_t stream, double fraction, std::uint8_t* in_bag,
             std::int32_t* bag, int* bag_count, std::int64_t rows, void* scratch,
             std::size_t scratch_bytes) {
  BagKernel<<<GridFor(rows), kThreads>>>(seed, stream, fraction, in_bag, rows);
  CheckLaunch("BagKernel");
  TFG_CUDA_CHECK(cub::DeviceSelect::Flagged(scratch, scratch_bytes,
                                            thrust::counting_iterator<std::int32_t>(0), in_bag, bag,
                                            bag_count, static_cast<int>(rows)));
}

void AddLeafScores(const std::int32_t* order, const long long* ranges, const int* chunks,
                   const int* leaf_count, int most_leaves, std::int64_t rows, const double* values,
                   double learning_rate, float* scores, int outputs, int output) {
  const std::int64_t items = rows / tree::kernels::kLeafChunk + most_leaves;
  const int blocks = static_cast<int>(std::clamp<std::int64_t>(items, 1, 2048));
  LeafScoreKernel<<<blocks, kThreads>>>(order, ranges, chunks, leaf_count, values, learning_rate,
                                        scores, outputs, output);
  CheckLaunch("LeafScoreKernel");
}

void AddOutOfBagScores(const std::uint8_t* bins8, const std::uint16_t* bins16, int stride,
                       const std::uint8_t* in_bag, const RouteNode* nodes,
                       const std::uint32_t* bitsets, const double* values, float* scores,
                       int outputs, int output, std::int64_t rows) {
  if (bins16 != nullptr) {
    OutOfBagKernel<std::uint16_t><<<GridFor(rows), kThreads>>>(
        bins16, stride, in_bag, nodes, bitsets, values, scores, outputs, output, rows);
  } else {
    OutOfBagKernel<std::uint8_t><<<GridFor(rows), kThreads>>>(
        bins8, stride, in_bag, nodes, bitsets, values, scores, outputs, output, rows);
  }
  CheckLaunch("OutOfBagKernel");
}

void InitScores(float* scores, const float* init, int outputs, std::int64_t count) {
  InitScoresKernel<<<GridFor(count), kThreads>>>(scores, init, outputs, count);
  CheckLaunch("InitScoresKernel");
}

}  // namespace tabforge::gbm::kernels
