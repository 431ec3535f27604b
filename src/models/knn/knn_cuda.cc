// The CUDA neighbour search (CUDA builds only; knn_no_cuda.cc answers in CPU-only ones).
// The reference rows and their norms stay on the device; queries go up a block at a time.
// Rows of up to kernels::kMaxFusedDims values are searched by one fused kernel: each thread
// holds a query in registers and computes its distances to tiles of references in shared
// memory, keeping its lists as it goes, so no product matrix passes through device memory (a
// product with 28 columns is bound by writing and reading that matrix, not by arithmetic).
// Wider rows take cuBLAS products of a query block with a tile of references, and a selection
// kernel merges each tile into the lists.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "device/cublas_handle.h"
#include "device/cuda_check.h"
#include "device/cuda_device.h"
#include "models/knn/knn_kernels.h"
#include "models/knn/knn_search.h"

namespace tabforge::knn {

using device::CheckCublas;
using device::CublasHandle;
using device::DeviceArray;

namespace {

// Lists per query for a fused search of `count` queries: enough blocks to fill the device
// several times over, each list searching an equal run of the references.
int FusedParts(std::int64_t count, int multiprocessors) {
  const std::int64_t query_blocks = (count + kernels::kFusedThreads - 1) / kernels::kFusedThreads;
  const std::int64_t wanted = (8 * std::int64_t(std::max(multiprocessors, 1)) + query_blocks - 1) /
                              std::max<std::int64_t>(query_blocks, 1);
  return static_cast<int>(std::clamp<std::int64_t>(wanted, 1, kernels::kMaxListParts));
}

}  // namespace

bool DeviceNearestNeighbors(const std::vector<float>& reference, std::int64_t references,
                            const std::vector<float>& query, std::int64_t queries, int dims, int k,
                            bool skip_self, int device_id, double memory_fraction,
                            std::vector<std::int32_t>& indices, std::vector<float>& distances,
                            std::string& why, std::string& device_name) {
  const device::CudaDeviceInfo info = device::QueryCudaDevice(device_id);
  if (!info.usable) {
    why = info.problem;
    return false;
  }
  // Rows up to kMaxFusedDims wide are searched by one fused kernel (distances and lists without
  // a product matrix in memory); wider ones by cuBLAS products over tiles and a selection.
  const bool fused = dims <= kernels::kMaxFusedDims;
  if (!fused && !device::CublasUnavailable().empty()) {
    why = device::CublasUnavailable();
    return false;
  }
  const std::int64_t available = skip_self ? references - 1 : references;
  const int keep =
      static_cast<int>(std::min<std::int64_t>(k, std::max<std::int64_t>(available, 0)));
  if (keep > kMaxDeviceNeighbors) {
    why =
        fmt::format("n_neighbors {} is above the {} the GPU search keeps", k, kMaxDeviceNeighbors);
    return false;
  }
  if (dims == 0 || keep == 0 || queries == 0) {
    why = "nothing to search";
    return false;
  }
  // Memory: the references and their norms, then a query block (rows, norms, lists) and, for
  // products, a tile of dots, as large as the cap allows.
  const auto budget = static_cast<std::int64_t>(double(info.free_bytes) * memory_fraction);
  const std::int64_t reference_bytes = references * (std::int64_t(dims) + 1) * 4;
  std::int64_t block = std::min<std::int64_t>(queries, 131072);
  std::int64_t tile = fused ? 0 : std::min<std::int64_t>(references, 32768);
  auto parts_for = [&](std::int64_t count) {
    return fused ? FusedParts(count, info.multiprocessors) : kernels::kListParts;
  };
  auto need = [&]() {
    return reference_bytes +
           block *
               (std::int64_t(dims) + 1 +
                2 * keep * ((fused ? kernels::kMaxListParts : kernels::kListParts) + 1)) *
               4 +
           block * tile * 4;
  };
  while (need() > budget && (block > 1024 || tile > 1024)) {
    if (tile >= block) {
      tile = std::max<std::int64_t>(1024, tile / 2);
    } else {
      block = std::max<std::int64_t>(1024, block / 2);
    }
  }
  if (need() > budget) {
    why = fmt::format(
        "the {} reference rows need {:.1f} GB, more than the {:.1f} GB allowed ({} "
        "of the free memory)",
        references, double(need()) / 1e9, double(budget) / 1e9, memory_fraction);
    return false;
  }
  TFG_CUDA_CHECK(cudaSetDevice(device_id));
  device_name = fmt::format("cuda:{} {}", device_id, info.name);
  std::optional<CublasHandle> cublas;
  if (!fused) {
    cublas.emplace();
    CheckCublas(device::Cublas().set_math_mode(cublas->get(), CUBLAS_PEDANTIC_MATH),
                "cublasSetMathMode");
  }
  DeviceArray<float> d_reference, d_reference_norms(static_cast<std::size_t>(references));
  device::Upload(d_reference, reference.data(), reference.size());
  kernels::SquaredNorms(d_reference.data(), references, dims, d_reference_norms.data());
  // The lists of the largest block, or of the last (fewer queries, perhaps more parts).
  const std::int64_t last_count = queries - ((queries - 1) / block) * block;
  const std::int64_t list_cells =
      keep * std::max(block * parts_for(block), last_count * parts_for(last_count));
  DeviceArray<float> d_query(static_cast<std::size_t>(block * dims));
  DeviceArray<float> d_query_norms(static_cast<std::size_t>(block));
  DeviceArray<float> d_dots(static_cast<std::size_t>(block * tile));
  DeviceArray<float> d_part(static_cast<std::size_t>(list_cells));
  DeviceArray<std::int32_t> d_part_index(static_cast<std::size_t>(list_cells));
  DeviceArray<float> d_best(static_cast<std::size_t>(block * keep));
  DeviceArray<std::int32_t> d_best_index(static_cast<std::size_t>(block * keep));
  indices.assign(static_cast<std::size_t>(queries * keep), -1);
  distances.assign(static_cast<std::size_t>(queries * keep), 0.0f);
  const float one = 1.0f, zero = 0.0f;
  for (std::int64_t first = 0; first < queries; first += block) {
    const std::int64_t count = std::min(block, queries - first);
    const int parts = parts_for(count);
    TFG_CUDA_CHECK(cudaMemcpy(d_query.data(), query.data() + first * dims,
                              static_cast<std::size_t>(count * dims) * sizeof(float),
                              cudaMemcpyHostToDevice));
    kernels::SquaredNorms(d_query.data(), count, dims, d_query_norms.data());
    if (fused) {
      kernels::FusedSearch(d_query.data(), count, dims, d_query_norms.data(), d_reference.data(),
                           d_reference_norms.data(), references, first, skip_self, keep, parts,
                           d_part.data(), d_part_index.data());
    } else {
      kernels::ResetNeighbors(count * parts, keep, d_part.data(), d_part_index.data());
      for (std::int64_t start = 0; start < references; start += tile) {
        const std::int64_t width = std::min(tile, references - start);
        // dots (count x width, column-major) = Q^T R: both are row-major rows, that is
        // column-major dims x rows.
        CheckCublas(
            device::Cublas().sgemm(cublas->get(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(count),
                                   static_cast<int>(width), dims, &one, d_query.data(), dims,
                                   d_reference.data() + start * dims, dims, &zero, d_dots.data(),
                                   static_cast<int>(count)),
            "cublasSgemm");
        kernels::SelectNeighbors(d_dots.data(), count, width, d_query_norms.data(),
                                 d_reference_norms.data() + start, start, first, skip_self, keep,
                                 d_part.data(), d_part_index.data());
      }
    }
    kernels::MergeNeighbors(d_part.data(), d_part_index.data(), count, keep, parts, d_best.data(),
                            d_best_index.data());
    TFG_CUDA_CHECK(cudaMemcpy(indices.data() + first * keep, d_best_index.data(),
                              static_cast<std::size_t>(count * keep) * sizeof(std::int32_t),
                              cudaMemcpyDeviceToHost));
    TFG_CUDA_CHECK(cudaMemcpy(distances.data() + first * keep, d_best.data(),
                              static_cast<std::size_t>(count * keep) * sizeof(float),
                              cudaMemcpyDeviceToHost));
  }
  return true;
}

}  // namespace tabforge::knn
