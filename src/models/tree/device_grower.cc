// The CUDA grower's host side (CUDA builds only): device arrays, and the data work of the
// shared leaf-wise loop (grower_loop.h) done by the kernels of device_kernels.cu. Every leaf
// keeps its own histogram on the device; split candidates come back per feature and are
// compared on the host in feature order, as the CPU grower compares them.
#include "models/tree/device_grower.h"

#include <algorithm>
#include <cmath>

#include "device/cuda_check.h"
#include "models/tree/device_kernels.h"
#include "models/tree/grower_loop.h"

namespace tabforge::tree {
namespace {

using device::DeviceArray;
using kernels::Word;

template <typename T>
void Upload(DeviceArray<T>& target, const T* source, std::size_t count) {
  target.Resize(count);
  if (count > 0) {
    TFG_CUDA_CHECK(cudaMemcpy(target.data(), source, count * sizeof(T), cudaMemcpyHostToDevice));
  }
}

// Feature groups for histogram launches, as (first, last) feature pairs: runs of features whose
// cells fit a block's shared memory, and single features too wide for it (16-bit bins), summed
// with global atomics.
struct FeatureGroups {
  std::vector<int> shared;  // first0, last0, first1, last1, ...
  std::vector<int> global;
  int shared_cells = 0;  // most cells of a shared group
};

FeatureGroups GroupFeatures(const std::vector<std::int64_t>& offsets, int cells) {
  FeatureGroups groups;
  const int features = static_cast<int>(offsets.size()) - 1;
  std::int64_t open_cells = -1;  // cells of the open shared group; -1: none open
  for (int feature = 0; feature < features; ++feature) {
    const std::int64_t width = offsets[feature + 1] - offsets[feature];
    if (width > cells) {
      groups.global.insert(groups.global.end(), {feature, feature + 1});
      open_cells = -1;
      continue;
    }
    if (open_cells < 0 || open_cells + width > cells) {
      groups.shared.insert(groups.shared.end(), {feature, feature + 1});
      open_cells = width;
    } else {
      groups.shared.back() = feature + 1;
      open_cells += width;
    }
    groups.shared_cells = std::max<int>(groups.shared_cells, static_cast<int>(open_cells));
  }
  return groups;
}

}  // namespace

struct DeviceTreeGrower::State {
  const BinMapper* mapper = nullptr;
  GrowerParams params;
  std::int64_t rows = 0;
  int features = 0;
  std::int64_t total_bins = 0;
  int multiprocessors = 1;
  FeatureGroups groups;
  kernels::DeviceBins bins;
  DeviceArray<int> shared_groups;
  DeviceArray<int> global_groups;
  DeviceArray<std::uint8_t> bins8;
  DeviceArray<std::uint16_t> bins16;
  DeviceArray<std::int64_t> offsets;
  DeviceArray<int> num_bins;
  DeviceArray<std::uint8_t> categorical;
  DeviceArray<std::int32_t> order;
  DeviceArray<std::int32_t> spare;
  DeviceArray<Word> histograms;  // one per leaf, 2 words per cell
  DeviceArray<std::uint8_t> tried;
  DeviceArray<kernels::Candidate> candidates;
  DeviceArray<std::int64_t> ranges;
  DeviceArray<long long> leaf_sums;
  DeviceArray<int> rights;
  DeviceArray<std::uint8_t> scratch;
  std::vector<std::pair<std::int64_t, std::int64_t>> leaf_ranges;

  Word* histogram(int leaf) { return histograms.data() + 2 * std::size_t(leaf) * total_bins; }

  void BuildHistogram(int leaf, std::int64_t begin, std::int64_t count, const GradientPair* pairs) {
    kernels::BuildHistogram(bins, order.data(), begin, count, pairs, shared_groups.data(),
                            static_cast<int>(groups.shared.size() / 2), groups.shared_cells,
                            global_groups.data(), static_cast<int>(groups.global.size() / 2),
                            offsets.data(), total_bins, 4 * multiprocessors, histogram(leaf));
  }
};

DeviceTreeGrower::DeviceTreeGrower(const BinMatrix& bins, const BinMapper& mapper,
                                   const GrowerParams& params)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.mapper = &mapper;
  s.params = params;
  s.rows = bins.num_rows;
  s.features = bins.num_features;
  if (s.features < 1) throw NotSupported("the CUDA grower needs at least one binned feature");
  const HistogramLayout layout(mapper);
  s.total_bins = layout.total_bins();
  int ordinal = 0;
  TFG_CUDA_CHECK(cudaGetDevice(&ordinal));
  TFG_CUDA_CHECK(
      cudaDeviceGetAttribute(&s.multiprocessors, cudaDevAttrMultiProcessorCount, ordinal));
  s.groups = GroupFeatures(layout.offsets, kernels::kSharedCells);
  Upload(s.shared_groups, s.groups.shared.data(), s.groups.shared.size());
  Upload(s.global_groups, s.groups.global.data(), s.groups.global.size());
  s.bins.stride = s.features;
  if (bins.wide()) {
    Upload(s.bins16, bins.bins16.data(), bins.bins16.size());
    s.bins.bins16 = s.bins16.data();
  } else {
    Upload(s.bins8, bins.bins8.data(), bins.bins8.size());
    s.bins.bins8 = s.bins8.data();
  }
  Upload(s.offsets, layout.offsets.data(), layout.offsets.size());
  std::vector<int> num_bins(static_cast<std::size_t>(s.features));
  std::vector<std::uint8_t> categorical(static_cast<std::size_t>(s.features));
  for (int feature = 0; feature < s.features; ++feature) {
    num_bins[feature] = mapper.feature(feature).num_bins;
    categorical[feature] = mapper.feature(feature).categorical;
    if (categorical[feature] && num_bins[feature] > kernels::kMaxCategoryBins) {
      throw NotSupported(fmt::format(
          "the CUDA grower takes categorical features of at most {} bins; feature {} has {}",
          kernels::kMaxCategoryBins, feature, num_bins[feature]));
    }
  }
  Upload(s.num_bins, num_bins.data(), num_bins.size());
  Upload(s.categorical, categorical.data(), categorical.size());
  s.order.Resize(static_cast<std::size_t>(s.rows));
  s.spare.Resize(static_cast<std::size_t>(s.rows));
  s.histograms.Resize(2 * static_cast<std::size_t>(s.total_bins) * params.num_leaves);
  s.tried.Resize(2 * static_cast<std::size_t>(s.features));
  s.candidates.Resize(2 * static_cast<std::size_t>(s.features));
  s.ranges.Resize(2 * static_cast<std::size_t>(params.num_leaves));
  s.leaf_sums.Resize(static_cast<std::size_t>(params.num_leaves));
  s.rights.Resize(static_cast<std::size_t>(std::max(params.num_leaves, 1)));
  s.scratch.Resize(kernels::PartitionScratchBytes(s.rows));
}

DeviceTreeGrower::~DeviceTreeGrower() = default;

std::int64_t DeviceTreeGrower::EstimateBytes(const BinMatrix& bins, const BinMapper& mapper,
                                             const GrowerParams& params) {
  const HistogramLayout layout(mapper);
  const std::int64_t bin_bytes =
      static_cast<std::int64_t>(bins.bins8.size() + 2 * bins.bins16.size());
  // Bins, two row orders, one histogram per leaf, partition scratch and small arrays.
  return bin_bytes + 8 * bins.num_rows + 16 * layout.total_bins() * params.num_leaves +
         bins.num_rows / 4 + (std::int64_t(1) << 20);
}

const std::int32_t* DeviceTreeGrower::device_order() const { return state_->order.data(); }

const std::vector<std::pair<std::int64_t, std::int64_t>>& DeviceTreeGrower::leaf_ranges() const {
  return state_->leaf_ranges;
}

const void* DeviceTreeGrower::device_bins() const {
  return state_->bins.bins16 != nullptr ? static_cast<const void*>(state_->bins.bins16)
                                        : static_cast<const void*>(state_->bins.bins8);
}

namespace {

// The CUDA grower's data work for the shared loop.
struct DeviceGrowerOps {
  DeviceTreeGrower::State& s;
  const DeviceGradients& gradients;
  const std::vector<std::uint8_t>& active;
  std::uint64_t seed;
  std::int64_t count;
  std::vector<int> expected_rights = {};  // per partition, in order

  std::int64_t RowCount() const { return count; }

  HistogramBin Start() {
    s.BuildHistogram(0, 0, count, gradients.pairs);
    // Every row is in one bin of feature 0, so that feature's cells sum to the leaf's total.
    std::vector<HistogramBin> cells(static_cast<std::size_t>(s.mapper->feature(0).num_bins));
    TFG_CUDA_CHECK(cudaMemcpy(cells.data(), s.histogram(0), cells.size() * sizeof(HistogramBin),
                              cudaMemcpyDeviceToHost));
    HistogramBin total;
    for (const HistogramBin& cell : cells) total += cell;
    return total;
  }

  void FindBestSplits(GrowingLeaf* const* leaves, const int* ids, const std::uint64_t* keys,
                      int leaf_count) {
    const int features = s.features;
    std::vector<std::uint8_t> tried(static_cast<std::size_t>(leaf_count) * features, 0);
    kernels::ScanLeaves scan{};
    bool any = false;
    for (int at = 0; at < leaf_count; ++at) {
      GrowingLeaf& leaf = *leaves[at];
      leaf.best = LeafSplit{};
      scan.histogram[at] = s.histogram(ids[at]);
      scan.total_packed[at] = leaf.total.packed;
      scan.total_hessian[at] = leaf.total.hessian;
      scan.node_key[at] = keys[at];
      if (!LeafSplittable(leaf, s.params)) continue;
      const std::vector<std::uint8_t> mask =
          NodeFeatureMask(active, s.params.feature_fraction_bynode, seed, keys[at]);
      std::copy(mask.begin(), mask.end(), tried.begin() + std::size_t(at) * features);
      any = true;
    }
    if (!any) return;
    TFG_CUDA_CHECK(
        cudaMemcpyAsync(s.tried.data(), tried.data(), tried.size(), cudaMemcpyHostToDevice));
    kernels::ScanParams params{};
    params.min_data_in_leaf = s.params.min_data_in_leaf;
    params.min_sum_hessian_in_leaf = s.params.min_sum_hessian_in_leaf;
    params.reg = s.params.reg;
    params.max_cat_to_onehot = s.params.max_cat_to_onehot;
    params.max_cat_threshold = s.params.max_cat_threshold;
    params.cat_smooth = s.params.cat_smooth;
    params.cat_l2 = s.params.cat_l2;
    params.min_data_per_group = s.params.min_data_per_group;
    params.extra_trees = s.params.extra_trees ? 1 : 0;
    params.gradient_scale = gradients.gradient_scale;
    params.hessian_scale = gradients.hessian_scale;
    params.seed = seed;
    kernels::ScanSplits(scan, leaf_count, features, s.offsets.data(), s.num_bins.data(),
                        s.categorical.data(), s.tried.data(), params, s.candidates.data());
    const int tasks = leaf_count * features;
    std::vector<kernels::Candidate> found(static_cast<std::size_t>(tasks));
    TFG_CUDA_CHECK(cudaMemcpy(found.data(), s.candidates.data(),
                              found.size() * sizeof(kernels::Candidate), cudaMemcpyDeviceToHost));
    for (int task = 0; task < tasks; ++task) {
      const kernels::Candidate& candidate = found[task];
      LeafSplit split;
      if (candidate.feature >= 0) {
        split.gain = candidate.gain;
        split.feature = candidate.feature;
        split.categorical = candidate.categorical != 0;
        split.default_left = candidate.default_left != 0;
        split.threshold_bin = candidate.threshold_bin;
        split.left.packed = candidate.left_packed;
        split.left.hessian = candidate.left_hessian;
        if (split.categorical) {
          // The CPU's bitset ends at the word of the highest bin going left.
          int words = kernels::kBitsetWords;
          while (words > 0 && candidate.bitset[words - 1] == 0) --words;
          split.left_bins.assign(candidate.bitset, candidate.bitset + words);
        }
      }
      KeepBetterSplit(split, s.params, *leaves[task / features]);
    }
  }

  std::int64_t Partition(const LeafSplit& split, int missing_bin, std::int64_t begin,
                         std::int64_t end) {
    kernels::SplitRule rule{};
    rule.feature = split.feature;
    rule.threshold_bin = split.threshold_bin;
    rule.missing_bin = missing_bin;
    rule.default_left = split.default_left;
    rule.categorical = split.categorical;
    for (std::size_t word = 0; word < split.left_bins.size() && word < kernels::kBitsetWords;
         ++word) {
      rule.bitset[word] = split.left_bins[word];
    }
    // The right side's count is checked once the tree is done (no wait per split here): the
    // two runs see every row once, so it checks the left side too.
    const int at = static_cast<int>(expected_rights.size());
    expected_rights.push_back(static_cast<int>(end - begin - split.left.count()));
    kernels::StablePartition(s.bins, rule, s.order.data() + begin, s.spare.data() + begin,
                             end - begin, split.left.count(), s.rights.data() + at,
                             s.scratch.data(), s.scratch.size());
    return begin + split.left.count();
  }

  // Throws InternalError when a partition's sides disagree with its split's sums.
  void CheckPartitions() const {
    if (expected_rights.empty()) return;
    std::vector<int> rights(expected_rights.size());
    TFG_CUDA_CHECK(cudaMemcpy(rights.data(), s.rights.data(), rights.size() * sizeof(int),
                              cudaMemcpyDeviceToHost));
    for (std::size_t at = 0; at < rights.size(); ++at) {
      TFG_CHECK(rights[at] == expected_rights[at],
                "device partition {} sent {} rows right, the split's sums say {}", at, rights[at],
                expected_rights[at]);
    }
  }

  void ChildHistograms(int chosen, int new_leaf, bool left_smaller,
                       const std::vector<GrowingLeaf>& leaves) {
    // Leaf `chosen` holds the parent's histogram; the smaller child is built from rows and the
    // larger one is the parent's minus it.
    const int smaller = left_smaller ? chosen : new_leaf;
    const int larger = left_smaller ? new_leaf : chosen;
    if (larger == new_leaf) {
      TFG_CUDA_CHECK(cudaMemcpyAsync(s.histogram(new_leaf), s.histogram(chosen),
                                     2 * sizeof(Word) * s.total_bins, cudaMemcpyDeviceToDevice));
    }
    const GrowingLeaf& small = leaves[smaller];
    s.BuildHistogram(smaller, small.begin, small.end - small.begin, gradients.pairs);
    kernels::SubtractHistogram(s.histogram(larger), s.histogram(smaller), s.total_bins);
  }

  void Release(int /*leaf*/) {}
};

}  // namespace

Tree DeviceTreeGrower::Grow(const std::int32_t* device_rows, std::int64_t num_rows,
                            const DeviceGradients& gradients,
                            const std::vector<std::uint8_t>& active, std::uint64_t seed) {
  State& s = *state_;
  const std::int64_t count = device_rows != nullptr ? num_rows : s.rows;
  if (device_rows != nullptr) {
    TFG_CUDA_CHECK(cudaMemcpyAsync(s.order.data(), device_rows, sizeof(std::int32_t) * count,
                                   cudaMemcpyDeviceToDevice));
  } else {
    kernels::FillSequence(s.order.data(), count);
  }
  DeviceGrowerOps ops{s, gradients, active, seed, count};
  std::vector<GrowingLeaf> leaves;
  Tree tree = GrowLeafWise(ops, s.params, *s.mapper, leaves);
  ops.CheckPartitions();

  // Leaf values from the exact gradients summed in fixed point, as the CPU grower does.
  const int num_leaves = tree.num_leaves();
  const double fixed = FixedPointScale(gradients.max_abs_gradient, count);
  std::vector<std::int64_t> ranges(2 * static_cast<std::size_t>(num_leaves));
  s.leaf_ranges.resize(static_cast<std::size_t>(num_leaves));
  for (int leaf = 0; leaf < num_leaves; ++leaf) {
    ranges[2 * leaf] = leaves[leaf].begin;
    ranges[2 * leaf + 1] = leaves[leaf].end;
    s.leaf_ranges[leaf] = {leaves[leaf].begin, leaves[leaf].end};
  }
  TFG_CUDA_CHECK(cudaMemcpyAsync(s.ranges.data(), ranges.data(),
                                 ranges.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice));
  kernels::LeafGradientSums(s.order.data(), s.ranges.data(), num_leaves,
                            gradients.exact_gradients, fixed, s.leaf_sums.data());
  std::vector<long long> sums(static_cast<std::size_t>(num_leaves));
  TFG_CUDA_CHECK(cudaMemcpy(sums.data(), s.leaf_sums.data(), sums.size() * sizeof(long long),
                            cudaMemcpyDeviceToHost));
  std::vector<double>& leaf_values = tree.leaf_values();
  for (int leaf = 0; leaf < num_leaves; ++leaf) {
    leaf_values[leaf] =
        LeafValue(double(sums[leaf]) / fixed,
                  double(leaves[leaf].total.hessian) * gradients.hessian_scale, s.params.reg);
  }
  return tree;
}

}  // namespace tabforge::tree
