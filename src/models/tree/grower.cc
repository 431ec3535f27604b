#include "models/tree/grower.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/random.h"

namespace tabforge::tree {

struct TreeGrower::Split {
  double gain = -std::numeric_limits<double>::infinity();
  int feature = -1;
  bool categorical = false;
  bool default_left = false;
  int threshold_bin = 0;
  std::vector<std::uint32_t> left_bins;  // categorical: bitset of bins going left
  HistogramBin left;                     // sums of the rows going left
  bool valid() const { return feature >= 0; }
};

struct TreeGrower::Leaf {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  int depth = 0;
  HistogramBin total;
  Split best;
};

namespace {

constexpr std::uint64_t kNodeFeatureStream = 0x6e6f6465;  // "node"

double Real(std::int64_t sum, double scale) { return double(sum) * scale; }

bool SetBit(std::vector<std::uint32_t>& bits, int bin) {
  const std::size_t word = static_cast<std::size_t>(bin / 32);
  if (bits.size() <= word) bits.resize(word + 1, 0);
  bits[word] |= 1u << (bin % 32);
  return true;
}

bool TestBit(const std::vector<std::uint32_t>& bits, int bin) {
  const std::size_t word = static_cast<std::size_t>(bin / 32);
  return word < bits.size() && ((bits[word] >> (bin % 32)) & 1u);
}

}  // namespace

double FixedPointScale(double max_abs, std::int64_t rows) {
  const int exponent =
      62 - static_cast<int>(std::ceil(std::log2(max_abs * (double(rows) + 1) + 1)));
  return std::ldexp(1.0, std::min(exponent, 48));
}

TreeGrower::TreeGrower(const BinMatrix& bins, const BinMapper& mapper, const GrowerParams& params,
                       int threads)
    : bins_(bins), mapper_(mapper), params_(params), threads_(threads), layout_(mapper) {
  pool_.resize(static_cast<std::size_t>(layout_.total_bins()) *
               static_cast<std::size_t>(std::max(params_.num_leaves, 1)));
}

void TreeGrower::ScanNumeric(int feature, const HistogramBin* histogram, const HistogramBin& total,
                             const QuantizedGradients& gradients, Split& best) const {
  const int num_bins = mapper_.feature(feature).num_bins;
  if (num_bins < 2) return;
  const HistogramBin& missing = histogram[num_bins - 1];
  const double g_scale = gradients.gradient_scale;
  const double h_scale = gradients.hessian_scale;
  const double parent =
      LeafGain(Real(total.gradient, g_scale), Real(total.hessian, h_scale), params_.reg);
  for (int missing_left = 0; missing_left < (missing.count > 0 ? 2 : 1); ++missing_left) {
    HistogramBin left = missing_left ? missing : HistogramBin{};
    // With missing values on the right, "all values left" is a split too.
    const int last = missing_left || missing.count == 0 ? num_bins - 3 : num_bins - 2;
    for (int threshold = 0; threshold <= last; ++threshold) {
      left.gradient += histogram[threshold].gradient;
      left.hessian += histogram[threshold].hessian;
      left.count += histogram[threshold].count;
      const std::int64_t right_count = total.count - left.count;
      if (left.count < params_.min_data_in_leaf) continue;
      if (right_count < params_.min_data_in_leaf) break;
      const double left_g = Real(left.gradient, g_scale);
      const double left_h = Real(left.hessian, h_scale);
      const double right_g = Real(total.gradient - left.gradient, g_scale);
      const double right_h = Real(total.hessian - left.hessian, h_scale);
      if (left_h < params_.min_sum_hessian_in_leaf || right_h < params_.min_sum_hessian_in_leaf) {
        continue;
      }
      const double gain =
          LeafGain(left_g, left_h, params_.reg) + LeafGain(right_g, right_h, params_.reg) - parent;
      if (gain > best.gain) {
        best.gain = gain;
        best.feature = feature;
        best.categorical = false;
        best.default_left = missing_left;
        best.threshold_bin = threshold;
        best.left = left;
      }
    }
  }
}

void TreeGrower::ScanCategorical(int feature, const HistogramBin* histogram,
                                 const HistogramBin& total, const QuantizedGradients& gradients,
                                 Split& best) const {
  const int num_bins = mapper_.feature(feature).num_bins;
  const double g_scale = gradients.gradient_scale;
  const double h_scale = gradients.hessian_scale;
  std::vector<int> used;
  for (int bin = 0; bin < num_bins; ++bin) {
    if (histogram[bin].count > 0) used.push_back(bin);
  }
  if (used.size() < 2) return;
  auto consider = [&](const std::vector<int>& left_side, const LeafRegularization& reg) {
    HistogramBin left;
    for (int bin : left_side) {
      left.gradient += histogram[bin].gradient;
      left.hessian += histogram[bin].hessian;
      left.count += histogram[bin].count;
    }
    if (left.count < params_.min_data_in_leaf ||
        total.count - left.count < params_.min_data_in_leaf) {
      return;
    }
    const double left_h = Real(left.hessian, h_scale);
    const double right_h = Real(total.hessian - left.hessian, h_scale);
    if (left_h < params_.min_sum_hessian_in_leaf || right_h < params_.min_sum_hessian_in_leaf) {
      return;
    }
    const double gain = LeafGain(Real(left.gradient, g_scale), left_h, reg) +
                        LeafGain(Real(total.gradient - left.gradient, g_scale), right_h, reg) -
                        LeafGain(Real(total.gradient, g_scale), Real(total.hessian, h_scale), reg);
    if (gain > best.gain) {
      best.gain = gain;
      best.feature = feature;
      best.categorical = true;
      best.left = left;
      best.left_bins.clear();
      for (int bin : left_side) SetBit(best.left_bins, bin);
    }
  };
  if (static_cast<int>(used.size()) <= params_.max_cat_to_onehot) {
    for (int bin : used) consider({bin}, params_.reg);
    return;
  }
  // Many-vs-many: order the well-populated categories by G / (H + cat_smooth) and try every
  // prefix (from either end) of up to max_cat_threshold categories.
  std::vector<int> candidates;
  for (int bin : used) {
    if (histogram[bin].count >= params_.min_data_per_group) candidates.push_back(bin);
  }
  if (candidates.size() < 2) return;
  auto score = [&](int bin) {
    return Real(histogram[bin].gradient, g_scale) /
           (Real(histogram[bin].hessian, h_scale) + params_.cat_smooth);
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int a, int b) { return score(a) < score(b); });
  LeafRegularization reg = params_.reg;
  reg.lambda_l2 += params_.cat_l2;
  const int limit =
      std::min<int>(params_.max_cat_threshold, static_cast<int>(candidates.size()) - 1);
  for (int from_end = 0; from_end < 2; ++from_end) {
    std::vector<int> left_side;
    for (int taken = 0; taken < limit; ++taken) {
      left_side.push_back(from_end ? candidates[candidates.size() - 1 - taken] : candidates[taken]);
      std::vector<int> sorted_side = left_side;
      std::sort(sorted_side.begin(), sorted_side.end());
      consider(sorted_side, reg);
    }
  }
}

void TreeGrower::FindBestSplit(Leaf& leaf, const HistogramBin* histogram,
                               const QuantizedGradients& gradients,
                               const std::vector<std::uint8_t>& active, std::uint64_t seed,
                               std::uint64_t node_key) {
  leaf.best = Split{};
  if (params_.max_depth > 0 && leaf.depth >= params_.max_depth) return;
  if (leaf.end - leaf.begin < 2 * params_.min_data_in_leaf) return;
  const int features = mapper_.num_features();
  std::vector<std::uint8_t> tried = active;
  if (params_.feature_fraction_bynode < 1.0) {
    // Keep the ceil(fraction * active) features with the smallest keys for this node.
    std::vector<std::pair<double, int>> keys;
    for (int feature = 0; feature < features; ++feature) {
      if (active[feature])
        keys.push_back({RandomUniform(seed, kNodeFeatureStream ^ node_key, feature), feature});
    }
    std::sort(keys.begin(), keys.end());
    const auto keep =
        static_cast<std::size_t>(std::ceil(params_.feature_fraction_bynode * double(keys.size())));
    std::fill(tried.begin(), tried.end(), 0);
    for (std::size_t index = 0; index < keep && index < keys.size(); ++index) {
      tried[keys[index].second] = 1;
    }
  }
  std::vector<Split> per_feature(static_cast<std::size_t>(features));
  // Scanning is cheap next to histograms: a parallel region pays off only on wide, large leaves
  // (and small regions are costly when other fits share the cores).
  const bool parallel = features >= 32 && leaf.end - leaf.begin >= 20000;
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1) if (parallel)
  for (int feature = 0; feature < features; ++feature) {
    if (!tried[feature]) continue;
    const HistogramBin* feature_histogram = histogram + layout_.offsets[feature];
    if (mapper_.feature(feature).categorical) {
      ScanCategorical(feature, feature_histogram, leaf.total, gradients, per_feature[feature]);
    } else {
      ScanNumeric(feature, feature_histogram, leaf.total, gradients, per_feature[feature]);
    }
  }
  for (Split& split : per_feature) {
    if (split.valid() && split.gain > params_.min_gain_to_split && split.gain > leaf.best.gain) {
      leaf.best = std::move(split);
    }
  }
}

Tree TreeGrower::Grow(const std::vector<std::int32_t>& rows, const QuantizedGradients& gradients,
                      const std::vector<std::uint8_t>& active, std::uint64_t seed,
                      std::vector<std::int32_t>* leaf_of_row) {
  const std::int64_t total_bins = layout_.total_bins();
  auto slot = [&](int leaf) { return pool_.data() + static_cast<std::size_t>(leaf) * total_bins; };
  order_ = rows;
  std::vector<Leaf> leaves(1);
  leaves[0].begin = 0;
  leaves[0].end = static_cast<std::int64_t>(order_.size());
  for (std::int32_t row : order_) {
    leaves[0].total.gradient += gradients.gradients[row];
    leaves[0].total.hessian += gradients.hessians[row];
    leaves[0].total.count += 1;
  }
  BuildHistogram(bins_, layout_, active, order_.data(), leaves[0].end, gradients.gradients,
                 gradients.hessians, slot(0), threads_);
  std::uint64_t nodes_made = 0;
  FindBestSplit(leaves[0], slot(0), gradients, active, seed, nodes_made++);
  Tree tree(0.0);
  std::vector<std::int32_t> right_rows;
  while (tree.num_leaves() < params_.num_leaves) {
    int chosen = -1;
    for (int leaf = 0; leaf < static_cast<int>(leaves.size()); ++leaf) {
      if (leaves[leaf].best.valid() &&
          (chosen < 0 || leaves[leaf].best.gain > leaves[chosen].best.gain)) {
        chosen = leaf;
      }
    }
    if (chosen < 0) break;
    Split split = std::move(leaves[chosen].best);
    const FeatureBins& feature_bins = mapper_.feature(split.feature);
    TreeNode node;
    node.feature = split.feature;
    node.categorical = split.categorical;
    node.default_left = split.default_left;
    node.threshold_bin = static_cast<std::uint16_t>(split.threshold_bin);
    node.missing_bin = static_cast<std::uint16_t>(feature_bins.missing_bin());
    node.gain = split.gain;
    if (!split.categorical) node.threshold = feature_bins.upper_bounds[split.threshold_bin];
    const int new_leaf = tree.SplitLeaf(chosen, node, split.left_bins);

    // Stable partition of the leaf's rows: left ones stay in front, in order.
    Leaf& parent = leaves[chosen];
    const std::int64_t begin = parent.begin;
    const std::int64_t end = parent.end;
    std::int64_t write = begin;
    right_rows.clear();
    for (std::int64_t index = begin; index < end; ++index) {
      const std::int32_t row = order_[index];
      const int bin = bins_.Bin(split.feature, row);
      const bool left = split.categorical         ? TestBit(split.left_bins, bin)
                        : bin == node.missing_bin ? split.default_left
                                                  : bin <= split.threshold_bin;
      if (left) {
        order_[write++] = row;
      } else {
        right_rows.push_back(row);
      }
    }
    std::copy(right_rows.begin(), right_rows.end(), order_.begin() + write);

    Leaf right;
    right.begin = write;
    right.end = end;
    right.depth = parent.depth + 1;
    right.total.gradient = parent.total.gradient - split.left.gradient;
    right.total.hessian = parent.total.hessian - split.left.hessian;
    right.total.count = parent.total.count - split.left.count;
    parent.end = write;
    parent.depth += 1;
    parent.total = split.left;
    // The smaller child's histogram is built; the larger one is the parent's minus it.
    const bool left_smaller = parent.end - parent.begin <= right.end - right.begin;
    const Leaf& smaller = left_smaller ? parent : right;
    BuildHistogram(bins_, layout_, active, order_.data() + smaller.begin,
                   smaller.end - smaller.begin, gradients.gradients, gradients.hessians,
                   slot(new_leaf), threads_);
    SubtractHistogram(slot(chosen), slot(new_leaf), slot(chosen), total_bins);
    if (left_smaller) std::swap_ranges(slot(chosen), slot(chosen) + total_bins, slot(new_leaf));
    leaves.push_back(right);
    FindBestSplit(leaves[chosen], slot(chosen), gradients, active, seed, nodes_made++);
    FindBestSplit(leaves[new_leaf], slot(new_leaf), gradients, active, seed, nodes_made++);
  }

  // Leaf values from the exact gradients, summed in fixed point so the sum does not depend on
  // the order of the rows; the hessian sums are exact already.
  const double gradient_fixed =
      FixedPointScale(gradients.max_abs_gradient, static_cast<std::int64_t>(order_.size()));
  for (int leaf = 0; leaf < tree.num_leaves(); ++leaf) {
    std::int64_t sum_gradient = 0;
    for (std::int64_t index = leaves[leaf].begin; index < leaves[leaf].end; ++index) {
      const std::int32_t row = order_[index];
      sum_gradient += std::llround(double(gradients.exact_gradients[row]) * gradient_fixed);
      if (leaf_of_row != nullptr) (*leaf_of_row)[row] = leaf;
    }
    tree.leaf_values()[leaf] =
        LeafValue(double(sum_gradient) / gradient_fixed,
                  Real(leaves[leaf].total.hessian, gradients.hessian_scale), params_.reg);
  }
  return tree;
}

}  // namespace tabforge::tree
