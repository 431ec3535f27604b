// Leaf-wise (best-first) growth of one tree from quantized gradients, as LightGBM grows them:
// repeatedly split the leaf whose best split gains most, building the histogram of the smaller
// child and subtracting it from the parent's for the larger. Split choice uses the quantized
// integer sums; leaf values are then renewed from the exact gradients summed in fixed point,
// so the tree is the same whatever the thread count.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/tree/binning.h"
#include "models/tree/histogram.h"
#include "models/tree/split_math.h"
#include "models/tree/tree.h"

namespace tabforge::tree {

struct LeafSplit;
struct GrowingLeaf;

struct GrowerParams {
  int num_leaves = 31;                    // leaves per tree, at most
  int max_depth = -1;                     // depth limit; <= 0 means none
  std::int64_t min_data_in_leaf = 20;     // rows per leaf, at least
  double min_sum_hessian_in_leaf = 1e-3;  // hessian sum per leaf, at least
  double min_gain_to_split = 0;           // a split must gain more than this
  LeafRegularization reg;                 // lambda_l1, lambda_l2, max_delta_step
  double feature_fraction_bynode = 1;     // features tried per node, as a fraction
  int max_cat_to_onehot = 4;              // categorical: one-vs-rest up to this many categories
  int max_cat_threshold = 32;             // categorical: most categories on the left side
  double cat_smooth = 10;                 // categorical: smoothing of the G/H ordering
  double cat_l2 = 10;                     // categorical: extra L2 on categorical splits
  std::int64_t min_data_per_group = 100;  // categorical: rows per category considered
  std::int64_t histogram_pool_bytes = 0;  // histograms kept at once, in bytes; 0 = one per leaf
  bool extra_trees = false;               // numeric splits at one random threshold per feature
};

// The gradients of one round, for one output, one histogram pair per row: gradients quantized
// to a few integer levels with stochastic rounding (gradient ~ quantized * gradient_scale),
// hessians in 64-bit fixed point (hessian ~ fixed * hessian_scale). Quantized hessians made the
// min_sum_hessian_in_leaf check noisy where hessians are tiny (confident multiclass rows) and let
// leaves with almost no curvature take huge values; fixed point keeps them exact and the sums
// order-independent.
struct QuantizedGradients {
  const GradientPair* pairs = nullptr;  // by row
  double gradient_scale = 1;
  double hessian_scale = 1;
  const float* exact_gradients = nullptr;  // for renewing leaf values
  double max_abs_gradient = 1;             // bound of the exact gradients (fixed-point range)

  // Merged rows (RowGroups): each row of the bin matrix stands for the rows merged into it.
  // Its cell holds their summed pairs (count: how many are in the tree) in place of `pairs`,
  // and `fixed_gradients` their exact gradients summed in fixed point at `gradient_fixed` (the
  // scale FixedPointScale gives for the bound and the rows they stand for) in place of
  // `exact_gradients`.
  const HistogramBin* cells = nullptr;
  const std::int64_t* fixed_gradients = nullptr;
  double gradient_fixed = 0;
};

// The features node `node_key` may split on: `active`, thinned to ceil(fraction * active) by
// keys drawn from (seed, node) (feature_fraction_bynode).
std::vector<std::uint8_t> NodeFeatureMask(const std::vector<std::uint8_t>& active, double fraction,
                                          std::uint64_t seed, std::uint64_t node_key);

class TreeGrower {
 public:
  // Borrows `bins` and `mapper` for the grower's lifetime.
  TreeGrower(const BinMatrix& bins, const BinMapper& mapper, const GrowerParams& params,
             int threads);

  // Grows a tree on `rows` (the round's bag; null: every row of the bin matrix) using the
  // features whose `active` flag is set; node-level feature sampling is keyed by (seed, node).
  // Leaf values are the unscaled optimal values (the caller applies the learning rate).
  Tree Grow(const std::vector<std::int32_t>* rows, const QuantizedGradients& gradients,
            const std::vector<std::uint8_t>& active, std::uint64_t seed);

  // The rows of leaf `leaf` of the last tree grown (valid until the next Grow).
  std::span<const std::int32_t> LeafRows(int leaf) const {
    return {order_.data() + leaf_ranges_[leaf].first,
            static_cast<std::size_t>(leaf_ranges_[leaf].second - leaf_ranges_[leaf].first)};
  }

 private:
  friend struct CpuGrowerOps;
  // Sets each leaf's best split from its histogram (node keys drive node-level sampling).
  void FindBestSplits(GrowingLeaf* const* leaves, const HistogramBin* const* histograms,
                      const std::uint64_t* node_keys, int count,
                      const QuantizedGradients& gradients, const std::vector<std::uint8_t>& active,
                      std::uint64_t seed);
  // `only_threshold` >= 0 limits the scan to that threshold bin (extremely randomized trees).
  void ScanNumeric(int feature, const HistogramBin* histogram, const HistogramBin& total,
                   const QuantizedGradients& gradients, int only_threshold, LeafSplit& best) const;
  void ScanCategorical(int feature, const HistogramBin* histogram, const HistogramBin& total,
                       const QuantizedGradients& gradients, LeafSplit& best) const;

  const BinMatrix& bins_;
  const BinMapper& mapper_;
  GrowerParams params_;
  int threads_;
  HistogramLayout layout_;
  // Partitions the rows at positions [begin, end) of order_ by `split`, stably; returns the
  // end of the left ones. PartitionRange does it for ranges no longer than spare_.
  std::int64_t Partition(const LeafSplit& split, int missing_bin, std::int64_t begin,
                         std::int64_t end);
  std::int64_t PartitionRange(const LeafSplit& split, int missing_bin, std::int64_t begin,
                              std::int64_t end);

  int max_slots_ = 2;                // histograms the pool holds
  std::vector<HistogramBin> pool_;   // max_slots_ histograms, reused across trees
  HistogramScratch scratch_;         // partial histograms of parallel builds
  std::vector<std::int32_t> order_;  // rows grouped by leaf
  std::vector<std::pair<std::int64_t, std::int64_t>> leaf_ranges_;  // last tree: [begin, end)
  std::vector<std::int32_t> spare_;  // partition buffer, half as long as order_
  std::vector<std::uint8_t> side_;   // partition: each bin's side
  BinProfile profile_;               // splittable and sparse features
};

}  // namespace tabforge::tree
