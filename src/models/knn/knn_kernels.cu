#include <cuda_runtime.h>

#include <type_traits>

#include "core/error.h"
#include "device/cuda_check.h"
#include "models/knn/knn_kernels.h"
#include "models/knn/knn_list.h"
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
    const float value = SquaredDistance(norm, reference_norm, dot);
    if (!(value < worst)) return;
    InsertNeighbor(distance, index, k, value, candidate);
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

// The fused search: query q (one per thread, its row in registers, padded with zeros to kDims)
// against part blockIdx.y of the references, read a tile of kFusedTile rows at a time into
// shared memory, where every thread reads the same row (a broadcast). The dot product is
// summed in dimension order with fused multiply-adds; the distance and list are as in
// SelectKernel. Lists are part-major, as SelectKernel keeps them.
constexpr int kFusedTile = 64;

template <int kDims, int kMax>
__global__ void __launch_bounds__(kFusedThreads)
    FusedSearchKernel(const float* query_rows, std::int64_t queries, int dims,
                      const float* query_norms, const float* reference,
                      const float* reference_norms, std::int64_t references,
                      std::int64_t first_query, bool skip_self, int k, float* part_distances,
                      std::int32_t* part_indices) {
  static_assert(kDims % 4 == 0, "rows are read as float4");
  __shared__ float4 tile[kFusedTile * kDims / 4];
  __shared__ float tile_norms[kFusedTile];
  const std::int64_t query = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  const bool active = query < queries;
  float row[kDims];
#pragma unroll
  for (int d = 0; d < kDims; ++d) row[d] = active && d < dims ? query_rows[query * dims + d] : 0.0f;
  const std::int64_t span = (references + gridDim.y - 1) / gridDim.y;
  const std::int64_t first = blockIdx.y * span;
  const std::int64_t last = first + span < references ? first + span : references;
  float distance[kMax];
  std::int32_t index[kMax];
  for (int slot = 0; slot < k; ++slot) {
    distance[slot] = __int_as_float(0x7f800000);  // +infinity
    index[slot] = -1;
  }
  const float norm = active ? query_norms[query] : 0.0f;
  const std::int64_t self = first_query + query;
  float worst = distance[k - 1];
  float* flat = reinterpret_cast<float*>(tile);
  for (std::int64_t start = first; start < last; start += kFusedTile) {
    const int rows = last - start < kFusedTile ? static_cast<int>(last - start) : kFusedTile;
    __syncthreads();  // the previous tile is read
    for (int at = threadIdx.x; at < kFusedTile * kDims; at += blockDim.x) {
      const int r = at / kDims;
      const int d = at - r * kDims;
      flat[at] = r < rows && d < dims ? reference[(start + r) * dims + d] : 0.0f;
    }
    for (int r = threadIdx.x; r < kFusedTile; r += blockDim.x) {
      tile_norms[r] = r < rows ? reference_norms[start + r] : 0.0f;
    }
    __syncthreads();
    if (!active) continue;
    for (int r = 0; r < rows; ++r) {
      float dot = 0.0f;
#pragma unroll
      for (int d4 = 0; d4 < kDims / 4; ++d4) {
        const float4 v = tile[r * (kDims / 4) + d4];
        dot = __fmaf_rn(row[4 * d4], v.x, dot);
        dot = __fmaf_rn(row[4 * d4 + 1], v.y, dot);
        dot = __fmaf_rn(row[4 * d4 + 2], v.z, dot);
        dot = __fmaf_rn(row[4 * d4 + 3], v.w, dot);
      }
      const std::int64_t candidate = start + r;
      if (skip_self && candidate == self) continue;
      const float value = SquaredDistance(norm, tile_norms[r], dot);
      if (!(value < worst)) continue;
      InsertNeighbor(distance, index, k, value, candidate);
      worst = distance[k - 1];
    }
  }
  if (!active) return;
  part_distances += (blockIdx.y * queries + query) * k;
  part_indices += (blockIdx.y * queries + query) * k;
  for (int slot = 0; slot < k; ++slot) {
    part_distances[slot] = distance[slot];
    part_indices[slot] = index[slot];
  }
}

// Query q's k nearest from its `parts` lists (each ascending by distance, ties to the lower
// reference): the k smallest by (distance, reference), which is what one list fed every
// candidate in reference order keeps. Empty slots (index -1, distance +infinity) come last.
__global__ void MergeKernel(const float* part_distances, const std::int32_t* part_indices,
                            std::int64_t queries, int k, int parts, float* best_distances,
                            std::int32_t* best_indices) {
  const std::int64_t query = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (query >= queries) return;
  int head[kMaxListParts];
  for (int part = 0; part < parts; ++part) head[part] = 0;
  for (int slot = 0; slot < k; ++slot) {
    int chosen = -1;
    float chosen_distance = 0;
    unsigned chosen_index = 0;
    for (int part = 0; part < parts; ++part) {
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
                    std::int64_t queries, int k, int parts, float* best_distances,
                    std::int32_t* best_indices) {
  if (queries == 0) return;
  TFG_CHECK(parts >= 1 && parts <= kMaxListParts, "{} neighbour lists per query (1 to {})", parts,
            kMaxListParts);
  MergeKernel<<<Blocks(queries), kThreads>>>(part_distances, part_indices, queries, k, parts,
                                             best_distances, best_indices);
  TFG_CUDA_CHECK(cudaGetLastError());
}

namespace {

template <int kDims>
void LaunchFused(const dim3& grid, const float* query_rows, std::int64_t queries, int dims,
                 const float* query_norms, const float* reference, const float* reference_norms,
                 std::int64_t references, std::int64_t first_query, bool skip_self, int k,
                 float* part_distances, std::int32_t* part_indices) {
  if (k <= 16) {
    FusedSearchKernel<kDims, 16><<<grid, kFusedThreads>>>(
        query_rows, queries, dims, query_norms, reference, reference_norms, references, first_query,
        skip_self, k, part_distances, part_indices);
  } else {
    FusedSearchKernel<kDims, kMaxDeviceNeighbors><<<grid, kFusedThreads>>>(
        query_rows, queries, dims, query_norms, reference, reference_norms, references, first_query,
        skip_self, k, part_distances, part_indices);
  }
}

}  // namespace

void FusedSearch(const float* query_rows, std::int64_t queries, int dims, const float* query_norms,
                 const float* reference, const float* reference_norms, std::int64_t references,
                 std::int64_t first_query, bool skip_self, int k, int parts, float* part_distances,
                 std::int32_t* part_indices) {
  if (queries == 0) return;
  TFG_CHECK(dims >= 1 && dims <= kMaxFusedDims, "the fused search takes 1 to {} columns, not {}",
            kMaxFusedDims, dims);
  TFG_CHECK(parts >= 1 && parts <= kMaxListParts, "{} neighbour lists per query (1 to {})", parts,
            kMaxListParts);
  const dim3 grid(static_cast<unsigned>((queries + kFusedThreads - 1) / kFusedThreads),
                  static_cast<unsigned>(parts));
  // The query row lives in registers: its padded width is a compile-time size.
  auto launch = [&](auto width) {
    LaunchFused<decltype(width)::value>(grid, query_rows, queries, dims, query_norms, reference,
                                        reference_norms, references, first_query, skip_self, k,
                                        part_distances, part_indices);
  };
  if (dims <= 8) {
    launch(std::integral_constant<int, 8>{});
  } else if (dims <= 16) {
    launch(std::integral_constant<int, 16>{});
  } else if (dims <= 32) {
    launch(std::integral_constant<int, 32>{});
  } else if (dims <= 48) {
    launch(std::integral_constant<int, 48>{});
  } else {
    launch(std::integral_constant<int, kMaxFusedDims>{});
  }
  TFG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tabforge::knn::kernels
