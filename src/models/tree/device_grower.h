// The CUDA twin of TreeGrower (grower.h): the bin matrix lives on the device, and histograms,
// split scans, partitions and leaf sums run there, driven by the leaf-wise loop the CPU grower
// uses (grower_loop.h), so the trees are the same. Only built with CUDA; callers reach it
// through the GBM's CUDA rounds.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/tree/binning.h"
#include "models/tree/grower.h"
#include "models/tree/tree.h"

namespace tabforge::tree {

// A round's gradients as they sit on the device (the pointers are device memory).
struct DeviceGradients {
  const GradientPair* pairs = nullptr;     // by row
  const float* exact_gradients = nullptr;  // by row
  double gradient_scale = 1;               // quantized gradient * scale ~ gradient
  double hessian_scale = 1;                // fixed hessian * scale ~ hessian
  double max_abs_gradient = 1;
};

class DeviceTreeGrower {
 public:
  // Uploads `bins` to the current CUDA device; borrows `mapper`. Throws CudaError.
  DeviceTreeGrower(const BinMatrix& bins, const BinMapper& mapper, const GrowerParams& params);
  ~DeviceTreeGrower();
  DeviceTreeGrower(const DeviceTreeGrower&) = delete;
  DeviceTreeGrower& operator=(const DeviceTreeGrower&) = delete;

  // Device bytes a grower for this shape takes (bin matrix, row orders, histograms, scratch).
  static std::int64_t EstimateBytes(const BinMatrix& bins, const BinMapper& mapper,
                                    const GrowerParams& params);

  // Grows a tree on the first `num_rows` rows listed in `device_rows` (device memory; null:
  // every row), as TreeGrower::Grow does: the same tree, leaf values unscaled.
  Tree Grow(const std::int32_t* device_rows, std::int64_t num_rows,
            const DeviceGradients& gradients, const std::vector<std::uint8_t>& active,
            std::uint64_t seed);

  // Device memory: the positions of the last tree's rows, grouped by leaf, and each leaf's
  // [begin, end) within it (host vector).
  const std::int32_t* device_order() const;
  const std::vector<std::pair<std::int64_t, std::int64_t>>& leaf_ranges() const;
  // The bin matrix on the device (row-major, 8- or 16-bit cells as on the host).
  const void* device_bins() const;

  struct State;  // device arrays (device_grower.cc)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace tabforge::tree
