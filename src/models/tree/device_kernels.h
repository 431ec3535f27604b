// The CUDA grower's kernels (device_kernels.cu), called by its host side (device_grower.cc).
// Plain C++17 (the kernels' dialect): device pointers, sizes and POD parameter blocks only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "models/tree/histogram.h"
#include "models/tree/split_math.h"

namespace tabforge::tree::kernels {

using Word = unsigned long long;  // histograms on the device: 2 words per cell (packed, hessian)

// Categorical features with more bins than this are trained on the CPU (the device scan keeps
// a category list per thread).
inline constexpr int kMaxCategoryBins = 256;
inline constexpr int kBitsetWords = kMaxCategoryBins / 32;
// Histogram cells one block sums in shared memory (16 bytes each; 48 KB, every GPU's default).
inline constexpr int kSharedCells = 48 * 1024 / 16;

// The split parameters the scan reads (GrowerParams' scalars and the round's scales).
struct ScanParams {
  std::int64_t min_data_in_leaf;
  double min_sum_hessian_in_leaf;
  LeafRegularization reg;
  int max_cat_to_onehot;
  int max_cat_threshold;
  double cat_smooth;
  double cat_l2;
  std::int64_t min_data_per_group;
  int extra_trees;
  double gradient_scale;
  double hessian_scale;
  std::uint64_t seed;
};

// One (leaf, feature) scan's best split; feature < 0 when there is none.
struct Candidate {
  double gain;
  int feature;
  int categorical;
  int default_left;
  int threshold_bin;
  long long left_packed;
  long long left_hessian;
  std::uint32_t bitset[kBitsetWords];
};

// One leaf to scan: its histogram and sums (and node key, for node-level sampling).
struct ScanLeaf {
  const Word* histogram;
  long long total_packed;
  long long total_hessian;
  std::uint64_t node_key;
};

// A split as the partition reads it.
struct SplitRule {
  int feature;
  int threshold_bin;
  int missing_bin;
  bool default_left;
  bool categorical;
  std::uint32_t bitset[kBitsetWords];
};

// The bin matrix on the device: row-major, 8- or 16-bit cells.
struct DeviceBins {
  const std::uint8_t* bins8 = nullptr;
  const std::uint16_t* bins16 = nullptr;
  int stride = 0;  // features per row
};

// One leaf split of a batch: its rows order[begin, end) are partitioned by `rule` (lefts of
// them go left), the smaller child's histogram is built from its rows and the parent's
// histogram becomes the larger child's by subtraction. The root is a "split" without
// partition whose smaller child is all its rows.
struct BatchSplit {
  std::int64_t begin;
  std::int64_t end;
  std::int64_t lefts;
  SplitRule rule;
  Word* smaller;  // histogram built from rows (zeroed first)
  Word* larger;   // the parent's histogram, becoming the larger child's (null: root)
  int smaller_is_left;
  int partition;  // 0: no partition (the root)
};

// Feature groups for histogram launches, as (first, last) feature pairs on the device.
struct HistogramGroups {
  const int* shared = nullptr;  // groups summed in shared memory
  int shared_count = 0;
  int shared_cells = 0;         // most cells of one
  const int* global = nullptr;  // single wide features summed in global memory
  int global_count = 0;
  const std::int64_t* offsets = nullptr;  // the histogram layout
  std::int64_t total_bins = 0;
};

// Runs a batch of `count` splits (descriptors in device memory): partitions (unstable within
// each side; nothing downstream depends on the order of a leaf's rows, every sum being an
// integer), histograms and subtractions, with `widest` the most rows of one leaf. A partition
// whose sides disagree with its `lefts` sets *bad (device) to 1. `cursors` holds 2 * count.
void RunBatch(const DeviceBins& bins, const BatchSplit* splits, int count, std::int64_t widest,
              std::int32_t* order, std::int32_t* spare, unsigned long long* cursors, int* bad,
              const GradientPair* pairs, const HistogramGroups& groups, int max_blocks);

// Best split of each (leaf, feature) into out[leaf * num_features + feature]; `leaves` and
// `tried` (leaf_count * num_features flags) are device memory.
void ScanSplits(const ScanLeaf* leaves, int leaf_count, int num_features,
                const std::int64_t* offsets, const int* num_bins, const std::uint8_t* categorical,
                const std::uint8_t* tried, const ScanParams& params, Candidate* out);

// order[i] = i for i < count.
void FillSequence(std::int32_t* order, std::int64_t count);

// sums[l] = sum over positions [ranges[2l], ranges[2l + 1]) of llround(gradient[order] * fixed).
void LeafGradientSums(const std::int32_t* order, const std::int64_t* ranges, int leaf_count,
                      const float* gradients, double fixed, long long* sums);

// Throws CudaError when the last launch failed.
void CheckLaunch(const char* kernel);

}  // namespace tabforge::tree::kernels
