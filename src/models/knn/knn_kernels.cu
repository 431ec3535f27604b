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

// One thread per (query, part): part blockIdx.y of the tile's columns goes into that part's
// list, which lives in registers/local memory meanwhile (consecutive queries read consecutive
// addresses). Lists are part-major: part p's are at p * queries * k.
template <int kMax>
__global__ void SelectKernel(const float* dots, std::int64_t queries, std::int64_t width,
                             const float* query_norms, const float* reference_norms,
                             std::int64_t first_reference, std::int64_t first_query, bool skip_self,
                             int k, float* best_distances, std::int32_t* best_indices) {
  const std::int64_t query = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (query >= queries) return;
  const std::int64_t span = (width + kListParts - 1) / kListParts;
  const std::int64_t first_column = blockIdx.y * span;
  const std::int64_t last_column = first_column + span < width ? first_column + span : width;
  best_distances += blockIdx.y * queries * k;
  best_indices += blockIdx.y * queries * k;
  float distance[kMax];
  std::int32_t index[kMax];
  for (int slot = 0; slot < k; ++slot) {
    distance[slot] = best_distances[query * k + slot];
    index[slot] = best_indices[query * k + slot];
  }
  const float norm = query_norms[query];
  const std::int64_t self = first_query + query;
  float worst = distance[k - 1];
  auto consider = [&](std::int64_t column, float dot, float reference_norm) {
    const std::int64_t candidate = first_reference + column;
    if (skip_self && candidate == self) return;
    // The CPU's formula: |q|^2 + |r|^2 - 2 q.r, clamped at 0.
    float value = norm + reference_norm;
    value = value - 2.0f * dot;
    value = value > 0.0f ? value : 0.0f;
    if (!(value < worst)) return;
    int slot = k - 1;
    while (slot > 0 && value < distance[slot - 1]) {
      distance[slot] = distance[slot - 1];
      index[slot] = index[slot - 1];
      --slot;
    }
    distance[slot] = value;
    index[slot] = static_cast<std::int32_t>(candidate);
    worst = distance[k - 1];
  };
  // kAhead columns' loads are issued before any is compared: the loop is bound by the latency
  // of its reads, and the dots are read once (streaming loads).
  constexpr int kAhead = 8;
  std::int64_t column = first_column;
  for (; column + kAhead <= last_column; column += kAhead) {
    float dot[kAhead];
    float reference_norm[kAhead];
#pragma unroll
    for (int j = 0; j < kAhead; ++j) {
      dot[j] = __ldcs(dots + query + (column + j) * queries);
      reference_norm[j] = __ldg(reference_norms + column + j);
    }
#pragma unroll
    for (int j = 0; j < kAhead; ++j) consider(column + j, dot[j], reference_norm[j]);
  }
  for (; column < last_column; ++column) {
    consider(column, __ldcs(dots + query + column * queries), __ldg(reference_norms + column));
  }
  for (int slot = 0; slot < k; ++slot) {
    best_distances[query * k + slot] = distance[slot];
    best_indices[query * k + slot] = index[slot];
  }
}

// Query q's k nearest from its kListParts lists (each ascending by distance, ties to the lower
// reference): the k smallest by (distance, reference), which is what one list fed every
// candidate in reference order keeps. Empty slots (index -1, distance +infinity) come last.
__global__ void MergeKernel(const float* part_distances, const std::int32_t* part_indices,
                            std::int64_t queries, int k, float* best_distances,
                            std::int32_t* best_indices) {
  const std::int64_t query = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (query >= queries) return;
  int head[kListParts];
  for (int part = 0; part < kListParts; ++part) head[part] = 0;
  for (int slot = 0; slot < k; ++slot) {
    int chosen = -1;
    float chosen_distance = 0;
    unsigned chosen_index = 0;
    for (int part = 0; part < kListParts; ++part) {
      if (head[part] >= k) continue;
      const std::int64_t at = (part * queries + query) * k + head[part];
      const float distance = part_distances[at];
      const auto index = static_cast<unsigned>(part_indices[at]);  // -1 sorts last
      if (chosen < 0 || distance < chosen_distance ||
          (distance == chosen_distance && index < chosen_index)) {
        chosen = part;
        chosen_distance = distance;
        chosen_index = index;
      }
    }
    best_distances[query * k + slot] = chosen_distance;
    best_indices[query * k + slot] = static_cast<std::int32_t>(chosen_index);
    ++head[chosen];
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
  const dim3 grid(static_cast<unsigned>(Blocks(queries)), kListParts);
  if (k <= 16) {
    SelectKernel<16><<<grid, kThreads>>>(dots, queries, width, query_norms, reference_norms,
                                         first_reference, first_query, skip_self, k, best_distances,
                                         best_indices);
  } else {
    SelectKernel<kMaxDeviceNeighbors>
        <<<grid, kThreads>>>(dots, queries, width, query_norms, reference_norms, first_reference,
                             first_query, skip_self, k, best_distances, best_indices);
  }
  TFG_CUDA_CHECK(cudaGetLastError());
}

void MergeNeighbors(const float* part_distances, const std::int32_t* part_indices,
                    std::int64_t queries, int k, float* best_distances,
                    std::int32_t* best_indices) {
  if (queries == 0) return;
  MergeKernel<<<Blocks(queries), kThreads>>>(part_distances, part_indices, queries, k,
                                             best_distances, best_indices);
  TFG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tabforge::knn::kernels
