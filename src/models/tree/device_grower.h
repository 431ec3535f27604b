// The CUDA twin of TreeGrower (grower.h): the bin matrix lives on the device, and histograms,
// split scans, partitions and leaf sums run there, driven by the leaf-wise loop the CPU grower
// uses (grower_loop.h), so the trees are the same. Only built with CUDA; callers reach it
// through the GBM's CUDA rounds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "models/tree/binning.h"
#include "models/tree/grower.h"
#include "models/tree/tree.h"

namespace tabforge::tree {

namespace kernels {
struct RoundScales;
}

// A round's gradients as they sit on the device (the pointers are device memory; the scales
// are written there by the caller's kernels, so no scalar of the round visits the host).
struct DeviceGradients {
  const GradientPair* pairs = nullptr;     // by row
  const float* exact_gradients = nullptr;  // by row
  const kernels::RoundScales* scales = nullptr;
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
  // every row), as TreeGrower::Grow does: the same tree, leaf values unscaled. The pointers of
  // `gradients` should stay the same from tree to tree (the batch graph holds them).
  // `on_grown`, when given, is called once the device has grown the tree and queued its leaf
  // values, before the host rebuilds the tree from the device's records: work it queues on the
  // default stream over the tree's rows and leaf values (device_order and the others below,
  // device_leaf_count for the count) runs while the host does that.
  Tree Grow(const std::int32_t* device_rows, std::int64_t num_rows,
            const DeviceGradients& gradients, const std::vector<std::uint8_t>& active,
            std::uint64_t seed, const std::function<void()>& on_grown = {});

  // The last tree's rows on the device: positions grouped by leaf (device_order: two halves of
  // the grower's rows, a leaf's range in one of them; positions outside the tree leaves'
  // ranges hold nothing meaningful), leaf l's [begin, end) as device_leaf_ranges()[2l, 2l + 1],
  // and its unscaled leaf values.
  const std::int32_t* device_order() const;
  const long long* device_leaf_ranges() const;
  const double* device_leaf_values() const;
  // The last tree's leaf count, on the device (at most GrowerParams::num_leaves).
  const int* device_leaf_count() const;
  // A work list over the last tree's rows: leaf l's first item of kernels::kLeafChunk positions
  // (num_leaves + 1 entries, the last the total), on the device.
  const int* device_leaf_chunks() const;
  // Batches of leaf splits run so far, over every tree grown (the root's included).
  std::int64_t batches_run() const;
  // Bytes the histogram builds of every tree grown read: per row read, its bin cells, and its
  // position in the row order and gradient pair once per feature group (the histogram
  // kernels' effective traffic).
  std::int64_t histogram_bytes() const;
  // Rows the histogram builds read for splits made ahead that no tree used.
  std::int64_t unused_split_rows() const;
  // The bin matrix on the device: row-major, 8- or 16-bit cells as on the host, rows
  // device_bin_stride() cells apart (padded so that four features' cells load as one word).
  const void* device_bins() const;
  int device_bin_stride() const;

  struct State;  // device arrays (device_grower.cc)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace tabforge::tree
