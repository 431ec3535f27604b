#include <cuda_runtime.h>

#include "device/cuda_check.h"
#include "models/knn/knn_kernels.h"
#include "models/knn/knn_search.h"

namespace tabforge::knn::kernels {
namespace {

constexpr int kThreads = 256;

int Blocks(std::int64_t count) { return static_cast<int>((count + kThreads - 1) / kThreads); }

__global__ void SquaredNormsKernel(const float* rows, std::int64_t count, int dims, float* out) {
  const std::int64_t row = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (row >= count) return;
  float sum = 0;
  for (int d = 0; d < dims; ++d) {
    const float value = rows[row * dims + d];
    sum += value * value;
  }
  out[row] = sum;
}

__global__ void ResetKernel(std::int64_t cells, float* best_distances, std::int32_t* best_indices) {
  const std::int64_t at = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (at >= cells) return;
  best_distances[at] = __int_as_float(0x7f800000);  // +infinity
  best_indices[at] = -1;
}

// One thread per query: its list lives in registers/local memory while it reads the tile's
// column of dots (consecutive queries read consecutive addresses).
template <int kMax>
__global__ void SelectKernel(const float* dots, std::int64_t queries, std::int64_t width,
                             const float* query_norms, const float* reference_norms,
                             std::int64_t first_reference, std::int64_t first_query, bool skip_self,
                             int k, float* best_distances, std::int32_t* best_indices) {
  const std::int64_t query = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (query >= queries) return;
  float distance[kMax];
  std::int32_t index[kMax];
  for (int slot = 0; slot < k; ++slot) {
    distance[slot] = best_distances[query * k + slot];
    index[slot] = best_indices[query * k + slot];
  }
  const float norm = query_norms[query];
  const std::int64_t self = first_query + query;
  for (std::int64_t column = 0; column < width; ++column) {
    const std::int64_t candidate = first_reference + column;
    if (skip_self && candidate == self) continue;
    // The CPU's formula: |q|^2 + |r|^2 - 2 q.r, clamped at 0.
    float value = norm + reference_norms[column];
    value = value - 2.0f * dots[query + column * queries];
    value = value > 0.0f ? value : 0.0f;
    if (!(value < distance[k - 1])) continue;
    int slot = k - 1;
    while (slot > 0 && value < distance[slot - 1]) {
      distance[slot] = distance[slot - 1];
      index[slot] = index[slot - 1];
      --slot;
    }
    distance[slot] = value;
    index[slot] = static_cast<std::int32_t>(candidate);
  }
  for (int slot = 0; slot < k; ++slot) {
    best_distances[query * k + slot] = distance[slot];
    best_indices[query * k + slot] = index[slot];
  }
}

}  // namespace

void SquaredNorms(const float* rows, std::int64_t count, int dims, float* out) {
  if (count == 0) return;
  SquaredNormsKernel<<<Blocks(count), kThreads>>>(rows, count, dims, out);
  TFG_CUDA_CHECK(cudaGetLastError());
}

void ResetNeighbors(std::int64_t queries, int k, float* best_distances,
                    std::int32_t* best_indices) {
  const std::int64_t cells = queries * k;
  if (cells == 0) return;
  ResetKernel<<<Blocks(cells), kThreads>>>(cells, best_distances, best_indices);
  TFG_CUDA_CHECK(cudaGetLastError());
}

void SelectNeighbors(const float* dots, std::int64_t queries, std::int64_t width,
                     const float* query_norms, const float* reference_norms,
                     std::int64_t first_reference, std::int64_t first_query, bool skip_self, int k,
                     float* best_distances, std::int32_t* best_indices) {
  if (queries == 0 || width == 0) return;
  // Short lists get a small register array.
  if (k <= 16) {
    SelectKernel<16><<<Blocks(queries), kThreads>>>(dots, queries, width, query_norms,
                                                    reference_norms, first_reference, first_query,
                                                    skip_self, k, best_distances, best_indices);
  } else {
    SelectKernel<kMaxDeviceNeighbors><<<Blocks(queries), kThreads>>>(
        dots, queries, width, query_norms, reference_norms, first_reference, first_query, skip_self,
        k, best_distances, best_indices);
  }
  TFG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tabforge::knn::kernels
