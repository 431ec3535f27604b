// The CUDA grower's host side (CUDA builds only): device arrays, and best-first growth over
// batches of leaf splits run by the kernels of device_kernels.cu. Split candidates come back
// per feature and are compared on the host in feature order, as the CPU grower compares them.
#include "models/tree/device_grower.h"

#include <algorithm>
#include <cmath>

#include "device/cuda_check.h"
#include "models/tree/device_kernels.h"
#include "models/tree/grower_loop.h"

namespace tabforge::tree {
namespace {

using device::DeviceArray;
using device::Upload;
using kernels::Word;

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
  int slots = 0;                 // histograms held: two per leaf (see Grow)
  DeviceArray<Word> histograms;  // 2 words per cell
  DeviceArray<kernels::BatchSplit> batch;
  DeviceArray<kernels::ScanLeaf> scan_leaves;
  DeviceArray<std::uint8_t> tried;
  DeviceArray<kernels::Candidate> candidates;
  DeviceArray<unsigned long long> cursors;
  DeviceArray<int> bad_partition;
  DeviceArray<std::int64_t> ranges;
  DeviceArray<long long> leaf_sums;
  std::vector<std::pair<std::int64_t, std::int64_t>> leaf_ranges;

  Word* histogram(int slot) { return histograms.data() + 2 * std::size_t(slot) * total_bins; }

  kernels::HistogramGroups histogram_groups() const {
    kernels::HistogramGroups out;
    out.shared = shared_groups.data();
    out.shared_count = static_cast<int>(groups.shared.size() / 2);
    out.shared_cells = groups.shared_cells;
    out.global = global_groups.data();
    out.global_count = static_cast<int>(groups.global.size() / 2);
    out.offsets = offsets.data();
    out.total_bins = total_bins;
    return out;
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
  const std::size_t leaves = static_cast<std::size_t>(std::max(params.num_leaves, 2));
  s.slots = static_cast<int>(2 * leaves);
  s.histograms.Resize(2 * static_cast<std::size_t>(s.total_bins) * s.slots);
  s.batch.Resize(leaves);
  s.scan_leaves.Resize(2 * leaves);
  s.tried.Resize(2 * leaves * s.features);
  s.candidates.Resize(2 * leaves * s.features);
  s.cursors.Resize(2 * leaves);
  s.bad_partition.Resize(1);
  s.ranges.Resize(2 * leaves);
  s.leaf_sums.Resize(leaves);
}

DeviceTreeGrower::~DeviceTreeGrower() = default;

std::int64_t DeviceTreeGrower::EstimateBytes(const BinMatrix& bins, const BinMapper& mapper,
                                             const GrowerParams& params) {
  const HistogramLayout layout(mapper);
  const std::int64_t bin_bytes =
      static_cast<std::int64_t>(bins.bins8.size() + 2 * bins.bins16.size());
  // Bins, two row orders, two histograms per leaf, split candidates and small arrays.
  const std::int64_t leaves = std::max(params.num_leaves, 2);
  return bin_bytes + 8 * bins.num_rows + 32 * layout.total_bins() * leaves +
         2 * leaves * bins.num_features * std::int64_t(sizeof(kernels::Candidate)) +
         (std::int64_t(1) << 20);
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

// A leaf on the device: a range of the row order, and what it splits into once split.
struct DeviceLeaf {
  GrowingLeaf leaf;  // range, depth, sums, best split
  int slot = -1;     // its histogram
  int left = -1;     // children (device leaves), once split on the device
  int right = -1;
};

}  // namespace

// Grows the tree as the CPU's GrowLeafWise does, with fewer round trips: when the leaf chosen
// next has not been split on the device yet, every candidate leaf that may still be split
// (up to the leaves left to grow) is split in one batch, and the choices are replayed on the
// host in the CPU's order. A split made ahead and never chosen is simply not committed: its
// parent's range holds both children's rows. Node-level feature sampling and extremely
// randomized trees draw from node numbers known only when a split is committed, so they split
// one leaf per batch.
Tree DeviceTreeGrower::Grow(const std::int32_t* device_rows, std::int64_t num_rows,
                            const DeviceGradients& gradients,
                            const std::vector<std::uint8_t>& active, std::uint64_t seed) {
  State& s = *state_;
  const GrowerParams& params = s.params;
  const int features = s.features;
  const std::int64_t count = device_rows != nullptr ? num_rows : s.rows;
  if (device_rows != nullptr) {
    TFG_CUDA_CHECK(cudaMemcpyAsync(s.order.data(), device_rows, sizeof(std::int32_t) * count,
                                   cudaMemcpyDeviceToDevice));
  } else {
    kernels::FillSequence(s.order.data(), count);
  }
  TFG_CUDA_CHECK(cudaMemsetAsync(s.bad_partition.data(), 0, sizeof(int)));
  const bool ahead = params.feature_fraction_bynode >= 1.0 && !params.extra_trees;
  const kernels::HistogramGroups groups = s.histogram_groups();
  const int max_blocks = 4 * s.multiprocessors;
  kernels::ScanParams scan{};
  scan.min_data_in_leaf = params.min_data_in_leaf;
  scan.min_sum_hessian_in_leaf = params.min_sum_hessian_in_leaf;
  scan.reg = params.reg;
  scan.max_cat_to_onehot = params.max_cat_to_onehot;
  scan.max_cat_threshold = params.max_cat_threshold;
  scan.cat_smooth = params.cat_smooth;
  scan.cat_l2 = params.cat_l2;
  scan.min_data_per_group = params.min_data_per_group;
  scan.extra_trees = params.extra_trees ? 1 : 0;
  scan.gradient_scale = gradients.gradient_scale;
  scan.hessian_scale = gradients.hessian_scale;
  scan.seed = seed;

  std::vector<DeviceLeaf> device_leaves;
  int slots_used = 0;
  // Scans `ids` (device leaves with their histograms built) and sets their best splits.
  auto find_best = [&](const std::vector<int>& ids, const std::vector<std::uint64_t>& keys) {
    std::vector<kernels::ScanLeaf> descriptors;
    std::vector<std::uint8_t> tried(ids.size() * features, 0);
    for (std::size_t at = 0; at < ids.size(); ++at) {
      GrowingLeaf& leaf = device_leaves[ids[at]].leaf;
      leaf.best = LeafSplit{};
      descriptors.push_back({s.histogram(device_leaves[ids[at]].slot), leaf.total.packed,
                             leaf.total.hessian, keys[at]});
      if (!LeafSplittable(leaf, params)) continue;
      const std::vector<std::uint8_t> mask =
          NodeFeatureMask(active, params.feature_fraction_bynode, seed, keys[at]);
      std::copy(mask.begin(), mask.end(), tried.begin() + at * features);
    }
    TFG_CUDA_CHECK(cudaMemcpyAsync(s.scan_leaves.data(), descriptors.data(),
                                   descriptors.size() * sizeof(kernels::ScanLeaf),
                                   cudaMemcpyHostToDevice));
    TFG_CUDA_CHECK(
        cudaMemcpyAsync(s.tried.data(), tried.data(), tried.size(), cudaMemcpyHostToDevice));
    const int leaf_count = static_cast<int>(ids.size());
    kernels::ScanSplits(s.scan_leaves.data(), leaf_count, features, s.offsets.data(),
                        s.num_bins.data(), s.categorical.data(), s.tried.data(), scan,
                        s.candidates.data());
    std::vector<kernels::Candidate> found(static_cast<std::size_t>(leaf_count) * features);
    TFG_CUDA_CHECK(cudaMemcpy(found.data(), s.candidates.data(),
                              found.size() * sizeof(kernels::Candidate), cudaMemcpyDeviceToHost));
    for (std::size_t task = 0; task < found.size(); ++task) {
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
      KeepBetterSplit(split, params, device_leaves[ids[task / features]].leaf);
    }
  };
  // Splits device leaves `ids` on the device and finds their children's best splits.
  auto split_batch = [&](const std::vector<int>& ids, const std::vector<std::uint64_t>& keys) {
    std::vector<kernels::BatchSplit> splits;
    std::vector<int> children;
    std::int64_t widest = 1;
    for (int id : ids) {
      const GrowingLeaf parent = device_leaves[id].leaf;
      const LeafSplit& split = parent.best;
      const std::int64_t lefts = split.left.count();
      DeviceLeaf left;
      DeviceLeaf right;
      left.leaf.begin = parent.begin;
      left.leaf.end = parent.begin + lefts;
      right.leaf.begin = left.leaf.end;
      right.leaf.end = parent.end;
      left.leaf.depth = right.leaf.depth = parent.depth + 1;
      left.leaf.total = split.left;
      right.leaf.total = parent.total - split.left;
      const bool left_smaller = lefts <= parent.end - parent.begin - lefts;
      TFG_CHECK(slots_used < s.slots, "the CUDA grower ran out of its {} histograms", s.slots);
      const int fresh = slots_used++;
      (left_smaller ? left : right).slot = fresh;
      (left_smaller ? right : left).slot = device_leaves[id].slot;
      kernels::BatchSplit batch{};
      batch.begin = parent.begin;
      batch.end = parent.end;
      batch.lefts = lefts;
      batch.rule.feature = split.feature;
      batch.rule.threshold_bin = split.threshold_bin;
      batch.rule.missing_bin = s.mapper->feature(split.feature).missing_bin();
      batch.rule.default_left = split.default_left;
      batch.rule.categorical = split.categorical;
      for (std::size_t word = 0; word < split.left_bins.size() && word < kernels::kBitsetWords;
           ++word) {
        batch.rule.bitset[word] = split.left_bins[word];
      }
      batch.smaller = s.histogram(fresh);
      batch.larger = s.histogram(device_leaves[id].slot);
      batch.smaller_is_left = left_smaller ? 1 : 0;
      batch.partition = 1;
      splits.push_back(batch);
      widest = std::max(widest, parent.end - parent.begin);
      device_leaves[id].left = static_cast<int>(device_leaves.size());
      device_leaves.push_back(left);
      device_leaves[id].right = static_cast<int>(device_leaves.size());
      device_leaves.push_back(right);
      children.push_back(device_leaves[id].left);
      children.push_back(device_leaves[id].right);
    }
    TFG_CUDA_CHECK(cudaMemcpyAsync(s.batch.data(), splits.data(),
                                   splits.size() * sizeof(kernels::BatchSplit),
                                   cudaMemcpyHostToDevice));
    kernels::RunBatch(s.bins, s.batch.data(), static_cast<int>(splits.size()), widest,
                      s.order.data(), s.spare.data(), s.cursors.data(), s.bad_partition.data(),
                      gradients.pairs, groups, max_blocks);
    find_best(children, keys);
  };

  // The root: every row, its histogram built as a batch without partition.
  {
    DeviceLeaf root;
    root.leaf.end = count;
    root.slot = slots_used++;
    kernels::BatchSplit batch{};
    batch.end = count;
    batch.lefts = count;
    batch.smaller = s.histogram(root.slot);
    batch.smaller_is_left = 1;
    TFG_CUDA_CHECK(cudaMemcpyAsync(s.batch.data(), &batch, sizeof(batch), cudaMemcpyHostToDevice));
    kernels::RunBatch(s.bins, s.batch.data(), 1, std::max<std::int64_t>(count, 1), s.order.data(),
                      s.spare.data(), s.cursors.data(), s.bad_partition.data(), gradients.pairs,
                      groups, max_blocks);
    // Every row is in one bin of feature 0, so that feature's cells sum to the root's total.
    std::vector<HistogramBin> cells(static_cast<std::size_t>(s.mapper->feature(0).num_bins));
    TFG_CUDA_CHECK(cudaMemcpy(cells.data(), s.histogram(root.slot),
                              cells.size() * sizeof(HistogramBin), cudaMemcpyDeviceToHost));
    for (const HistogramBin& cell : cells) root.leaf.total += cell;
    device_leaves.push_back(root);
    find_best({0}, {0});
  }
  std::uint64_t nodes_made = 1;
  std::vector<int> tree_to_device = {0};  // tree leaf -> device leaf
  Tree tree(0.0);
  auto best_of = [&](int leaf) -> const LeafSplit& {
    return device_leaves[tree_to_device[leaf]].leaf.best;
  };
  while (tree.num_leaves() < params.num_leaves) {
    const int chosen = ChooseLeaf(tree.num_leaves(), best_of);
    if (chosen < 0) break;
    const int id = tree_to_device[chosen];
    if (device_leaves[id].left < 0) {
      std::vector<int> ids = {id};
      std::vector<std::uint64_t> keys = {nodes_made, nodes_made + 1};
      if (ahead) {
        // Every other leaf that may split, best first, up to the splits left to make.
        std::vector<int> others;
        for (int leaf = 0; leaf < tree.num_leaves(); ++leaf) {
          const int other = tree_to_device[leaf];
          if (leaf != chosen && best_of(leaf).valid() && device_leaves[other].left < 0) {
            others.push_back(leaf);
          }
        }
        std::stable_sort(others.begin(), others.end(),
                         [&](int a, int b) { return best_of(a).gain > best_of(b).gain; });
        const std::size_t room =
            static_cast<std::size_t>(params.num_leaves - tree.num_leaves()) - 1;
        for (std::size_t at = 0; at < others.size() && at < room; ++at) {
          ids.push_back(tree_to_device[others[at]]);
        }
        keys.assign(2 * ids.size(), 0);  // node keys are not read without node sampling
      }
      split_batch(ids, keys);
    }
    CommitSplit(tree, chosen, device_leaves[id].leaf.best, *s.mapper);
    tree_to_device[chosen] = device_leaves[id].left;
    tree_to_device.push_back(device_leaves[id].right);
    nodes_made += 2;
  }
  int bad = 0;
  TFG_CUDA_CHECK(cudaMemcpy(&bad, s.bad_partition.data(), sizeof(int), cudaMemcpyDeviceToHost));
  TFG_CHECK(bad == 0, "a device partition's sides disagree with its split's sums");

  // Leaf values from the exact gradients summed in fixed point, as the CPU grower does.
  const int num_leaves = tree.num_leaves();
  const double fixed = FixedPointScale(gradients.max_abs_gradient, count);
  std::vector<std::int64_t> ranges(2 * static_cast<std::size_t>(num_leaves));
  s.leaf_ranges.resize(static_cast<std::size_t>(num_leaves));
  for (int leaf = 0; leaf < num_leaves; ++leaf) {
    const GrowingLeaf& grown = device_leaves[tree_to_device[leaf]].leaf;
    ranges[2 * leaf] = grown.begin;
    ranges[2 * leaf + 1] = grown.end;
    s.leaf_ranges[leaf] = {grown.begin, grown.end};
  }
  TFG_CUDA_CHECK(cudaMemcpyAsync(s.ranges.data(), ranges.data(),
                                 ranges.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice));
  kernels::LeafGradientSums(s.order.data(), s.ranges.data(), num_leaves, gradients.exact_gradients,
                            fixed, s.leaf_sums.data());
  std::vector<long long> sums(static_cast<std::size_t>(num_leaves));
  TFG_CUDA_CHECK(cudaMemcpy(sums.data(), s.leaf_sums.data(), sums.size() * sizeof(long long),
                            cudaMemcpyDeviceToHost));
  std::vector<double>& leaf_values = tree.leaf_values();
  for (int leaf = 0; leaf < num_leaves; ++leaf) {
    const GrowingLeaf& grown = device_leaves[tree_to_device[leaf]].leaf;
    leaf_values[leaf] =
        LeafValue(double(sums[leaf]) / fixed, double(grown.total.hessian) * gradients.hessian_scale,
                  params.reg);
  }
  tree.Compact();
  return tree;
}

}  // namespace tabforge::tree
