// The CUDA neighbour search (CUDA builds only; knn_no_cuda.cc answers in CPU-only ones).
// The reference rows and their norms stay on the device; queries go up a block at a time, each
// block's distances to a tile of references come from one cuBLAS product, and a selection
// kernel merges the tile into each query's list.
#include <fmt/format.h>

#include <algorithm>

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
  if (!device::CublasUnavailable().empty()) {
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
  // Memory: the references and their norms, then a query block (rows, norms, lists) and a
  // tile of dots, as large as the cap allows.
  const auto budget = static_cast<std::int64_t>(double(info.free_bytes) * memory_fraction);
  const std::int64_t reference_bytes = references * (std::int64_t(dims) + 1) * 4;
  // One thread per query in the selection kernel: large blocks keep the whole GPU busy.
  std::int64_t block = std::min<std::int64_t>(queries, 131072);
  std::int64_t tile = std::min<std::int64_t>(references, 32768);
  auto need = [&]() {
    return reference_bytes +
           block * (std::int64_t(dims) + 1 + 2 * keep * (kernels::kListParts + 1)) * 4 +
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
  CublasHandle cublas;
  CheckCublas(device::Cublas().set_math_mode(cublas.get(), CUBLAS_PEDANTIC_MATH),
              "cublasSetMathMode");
  DeviceArray<float> d_reference, d_reference_norms(static_cast<std::size_t>(references));
  device::Upload(d_reference, reference.data(), reference.size());
  kernels::SquaredNorms(d_reference.data(), references, dims, d_reference_norms.data());
  DeviceArray<float> d_query(static_cast<std::size_t>(block * dims));
  DeviceArray<float> d_query_norms(static_cast<std::size_t>(block));
  DeviceArray<float> d_dots(static_cast<std::size_t>(block * tile));
  DeviceArray<float> d_part(static_cast<std::size_t>(block * keep * kernels::kListParts));
  DeviceArray<std::int32_t> d_part_index(
      static_cast<std::size_t>(block * keep * kernels::kListParts));
  DeviceArray<float> d_best(static_cast<std::size_t>(block * keep));
  DeviceArray<std::int32_t> d_best_index(static_cast<std::size_t>(block * keep));
  indices.assign(static_cast<std::size_t>(queries * keep), -1);
  distances.assign(static_cast<std::size_t>(queries * keep), 0.0f);
  const float one = 1.0f, zero = 0.0f;
  for (std::int64_t first = 0; first < queries; first += block) {
    const std::int64_t count = std::min(block, queries - first);
    TFG_CUDA_CHECK(cudaMemcpy(d_query.data(), query.data() + first * dims,
                              static_cast<std::size_t>(count * dims) * sizeof(float),
                              cudaMemcpyHostToDevice));
    kernels::SquaredNorms(d_query.data(), count, dims, d_query_norms.data());
    kernels::ResetNeighbors(count * kernels::kListParts, keep, d_part.data(), d_part_index.data());
    for (std::int64_t start = 0; start < references; start += tile) {
      const std::int64_t width = std::min(tile, references - start);
      // dots (count x width, column-major) = Q^T R: both are row-major rows, that is
      // column-major dims x rows.
      CheckCublas(
          device::Cublas().sgemm(cublas.get(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(count),
                                 static_cast<int>(width), dims, &one, d_query.data(), dims,
                                 d_reference.data() + start * dims, dims, &zero, d_dots.data(),
                                 static_cast<int>(count)),
          "cublasSgemm");
      kernels::SelectNeighbors(d_dots.data(), count, width, d_query_norms.data(),
                               d_reference_norms.data() + start, start, first, skip_self, keep,
                               d_part.data(), d_part_index.data());
    }
    kernels::MergeNeighbors(d_part.data(), d_part_index.data(), count, keep, d_best.data(),
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
