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

// The leaves of one scan (at most two).
struct ScanLeaves {
  const Word* histogram[2];
  long long total_packed[2];
  long long total_hessian[2];
  std::uint64_t node_key[2];
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

// Histogram of rows order[begin, begin + count) into `histogram` (zeroed first) for the feature
// groups listed as (first, last) pairs: `shared_groups` summed in shared memory (at most
// `shared_cells` cells each), `global_groups` straight in global memory.
void BuildHistogram(const DeviceBins& bins, const std::int32_t* order, std::int64_t begin,
                    std::int64_t count, const GradientPair* pairs, const int* shared_groups,
                    int shared_group_count, int shared_cells, const int* global_groups,
                    int global_group_count, const std::int64_t* offsets, std::int64_t total_bins,
                    int max_blocks, Word* histogram);

// larger -= smaller over `total_bins` cells.
void SubtractHistogram(Word* larger, const Word* smaller, std::int64_t total_bins);

// Best split of each (leaf, feature) into out[leaf * num_features + feature].
void ScanSplits(const ScanLeaves& leaves, int leaf_count, int num_features,
                const std::int64_t* offsets, const int* num_bins, const std::uint8_t* categorical,
                const std::uint8_t* tried, const ScanParams& params, Candidate* out);

// Scratch bytes StablePartition needs for up to `rows` rows.
std::size_t PartitionScratchBytes(std::int64_t rows);

// Stable partition of order[0, count) by `rule`: left rows, then right rows, each in their
// order, through `spare`; writes the number of right rows to *rights (device).
void StablePartition(const DeviceBins& bins, const SplitRule& rule, std::int32_t* order,
                     std::int32_t* spare, std::int64_t count, std::int64_t lefts, int* rights,
                     void* scratch, std::size_t scratch_bytes);

// order[i] = i for i < count.
void FillSequence(std::int32_t* order, std::int64_t count);

// sums[l] = sum over positions [ranges[2l], ranges[2l + 1]) of llround(gradient[order] * fixed).
void LeafGradientSums(const std::int32_t* order, const std::int64_t* ranges, int leaf_count,
                      const float* gradients, double fixed, long long* sums);

// Throws CudaError when the last launch failed.
void CheckLaunch(const char* kernel);

}  // namespace tabforge::tree::kernels
