// The forest's randomness keys and the split search of one feature from its per-bin sums, shared
// by the batch grower's host loops (forest_batch.cc) and its CUDA kernels (forest_kernels.cu).
// They follow ForestTreeGrower's TryFeature and TryExtraTrees cut for cut, so both grow
// the same trees: class sums are whole bootstrap counts, exact in any order, and the scores are
// computed by the same operations in the same order. Plain C++17 (the kernels' dialect).
#pragma once

#include <cstdint>
#include <limits>

#include "core/host_device.h"
#include "core/random.h"

namespace tabforge::forest::kernels {

inline constexpr std::uint64_t kFeatureOrderStream = 0x666f7264;  // "ford"
inline constexpr std::uint64_t kThresholdStream = 0x74687264;     // "thrd"
inline constexpr std::uint64_t kBootstrapStream = 0x626f6f74;     // "boot"

// A node's key names it by its path from the root (key 0), so the randomness of a node does
// not depend on the order in which nodes are grown (depth-first, best-first or level by level).
TFG_HOST_DEVICE inline std::uint64_t ChildNodeKey(std::uint64_t parent, int side) {
  return Mix64(parent * 2 + 1 + std::uint64_t(side));
}

// The feature tried at `position` of a node's random order (Fisher-Yates, drawn as far as
// needed): `order` holds `features` entries of scratch.
TFG_HOST_DEVICE inline int FeatureAtPosition(std::uint64_t order_key, std::uint64_t node_key,
                                             int position, int features, int* order) {
  for (int feature = 0; feature < features; ++feature) order[feature] = feature;
  for (int at = 0; at <= position; ++at) {
    const std::uint64_t pick = at + KeyedBelow(order_key, node_key * 65537 + std::uint64_t(at),
                                               std::uint64_t(features - at));
    const int swapped = order[at];
    order[at] = order[pick];
    order[pick] = swapped;
  }
  return order[position];
}

enum SplitCriterion : int { kCriterionGini = 0, kCriterionEntropy = 1, kCriterionSquaredError = 2 };

// The most classes the batch grower handles (its scratch lives in registers and shared memory).
inline constexpr int kMaxBatchClasses = 64;
inline constexpr double kNoCut = -std::numeric_limits<double>::infinity();

// How every node is split (TreeSpec's fields).
struct SplitRules {
  int criterion;
  int width;  // classes; 2 for regression (weight, weighted target)
  int features;
  int features_per_node;
  int max_depth;  // 0: none
  long long min_samples_split;
  long long min_samples_leaf;
  int extra_trees;
  // criterion entropy: xlogx[n] = n * log(n) for whole n (0 at 0), the host's std::log, so the
  // device's scores are the host's bits.
  const double* xlogx;
  // Regression: targets are whole multiples of `value_unit` (QuantizeTargets), so their weighted
  // sums are exact in any order; a bin's sum comes as a count of units.
  double value_unit;
};

// One feature's bins as the search reads them.
struct FeatureInfo {
  int num_bins;
  int categorical;
  const double* bin_lows;  // numeric: value bin b's smallest training value (BinLowestValues)
};

// The best cut of one feature (improvement -infinity: none).
struct FeatureCut {
  double improvement;
  long long left_rows;  // distinct rows going left
  int feature;
  int threshold_bin;  // numeric: bins <= it go left
  int categorical;    // then the bins in use up to cut_bin go left
  int cut_bin;
  int default_left;  // numeric: missing values go left
};

// A classification score summed class by class (Gini: the sum of squares; entropy: of n log n),
// so that a cut's two sides can be scored in one pass over the classes without arrays (which
// the kernels would keep in local memory). Each sum takes the same operations in the same order
// as a pass over an array of sums would.
struct ClassScore {
  double total = 0;
  double terms = 0;

  TFG_HOST_DEVICE void Add(const SplitRules& rules, double sum) {
    if (rules.criterion == kCriterionGini) {
      total += sum;
      terms += sum * sum;
    } else {
      if (sum > 0) terms += rules.xlogx[static_cast<long long>(sum)];
      total += sum;
    }
  }

  TFG_HOST_DEVICE double Score(const SplitRules& rules) const {
    if (rules.criterion == kCriterionGini) return total > 0 ? terms / total : 0.0;
    return total > 0 ? terms - rules.xlogx[static_cast<long long>(total)] : 0.0;
  }
};

// Squared error's score of a side with weight `weight` and weighted target sum `sum`.
TFG_HOST_DEVICE inline double SquaredErrorScore(double weight, double sum) {
  return weight > 0 ? sum * sum / weight : 0.0;
}

TFG_HOST_DEVICE inline double SplitScore(const SplitRules& rules, const double* sums) {
  if (rules.criterion == kCriterionSquaredError) return SquaredErrorScore(sums[0], sums[1]);
  ClassScore score;
  for (int k = 0; k < rules.width; ++k) score.Add(rules, sums[k]);
  return score.Score(rules);
}

// A node's histogram of one feature: per bin the distinct rows, and the weighted rows of each
// class (classification, counts[bin * width + k]) or the bootstrap weight (counts[bin]) and the
// weighted target in value units (values[bin]; regression).
struct Histogram {
  const std::uint32_t* counts;
  const long long* values;
  const std::uint32_t* rows;
};

// Adds bin `bin`'s sums to `sums` (width values).
TFG_HOST_DEVICE inline void AddBin(const SplitRules& rules, const Histogram& histogram, int bin,
                                   double* sums) {
  if (rules.criterion == kCriterionSquaredError) {
    sums[0] += double(histogram.counts[bin]);
    sums[1] += double(histogram.values[bin]) * rules.value_unit;
    return;
  }
  for (int k = 0; k < rules.width; ++k) sums[k] += double(histogram.counts[bin * rules.width + k]);
}

// How much a cut with left sums `left` improves on its node (ForestTreeGrower::Keep's measure).
TFG_HOST_DEVICE inline double CutImprovement(const SplitRules& rules, const double* left,
                                             const double* parent, double parent_score) {
  if (rules.criterion == kCriterionSquaredError) {
    return SquaredErrorScore(left[0], left[1]) +
           SquaredErrorScore(parent[0] - left[0], parent[1] - left[1]) - parent_score;
  }
  ClassScore left_score, right_score;
  for (int k = 0; k < rules.width; ++k) {
    left_score.Add(rules, left[k]);
    right_score.Add(rules, parent[k] - left[k]);
  }
  return left_score.Score(rules) + right_score.Score(rules) - parent_score;
}

// ForestTreeGrower::Keep: the cut with left sums `left` replaces `best` when it improves more.
TFG_HOST_DEVICE inline bool KeepCut(const SplitRules& rules, const double* left,
                                    long long left_rows, const double* parent, double parent_score,
                                    FeatureCut& best) {
  const double improvement = CutImprovement(rules, left, parent, parent_score);
  if (!(improvement > best.improvement)) return false;
  best.improvement = improvement;
  best.left_rows = left_rows;
  return true;
}

// Whether a node with sums `parent` may be split (ForestTreeGrower::FindSplit's checks before
// the features); regression nodes whose targets are all one value (`constant`) are not split.
TFG_HOST_DEVICE inline bool SplittableNode(const SplitRules& rules, const double* parent,
                                           long long count, int depth, bool constant) {
  if (count < rules.min_samples_split || count < 2 * rules.min_samples_leaf) return false;
  if (rules.max_depth > 0 && depth >= rules.max_depth) return false;
  if (rules.criterion == kCriterionSquaredError) return !constant;
  double total = 0, largest = 0;
  for (int k = 0; k < rules.width; ++k) {
    total += parent[k];
    largest = parent[k] > largest ? parent[k] : largest;
  }
  return largest < total;
}

// The node's sums and whether it may be split, from any feature's histogram and its bins in
// use (`used_bins`: the `used` bins holding rows, ascending), every row being in one of them.
// `parent` receives the sums (empty bins add nothing: their sums are zeros).
TFG_HOST_DEVICE inline bool NodeSplittable(const SplitRules& rules, const Histogram& histogram,
                                           const int* used_bins, int used, long long count,
                                           int depth, bool constant, double* parent) {
  for (int k = 0; k < rules.width; ++k) parent[k] = 0;
  for (int at = 0; at < used; ++at) AddBin(rules, histogram, used_bins[at], parent);
  return SplittableNode(rules, parent, count, depth, constant);
}

// Extremely randomized trees: the bin a threshold drawn between bins low_bin and high_bin's
// smallest values (`lows`, rising with the bins) cuts after: the first bin in [low_bin,
// high_bin - 1) whose next bin's smallest value reaches the draw. A std::lower_bound without
// branches (the draw makes every comparison a coin toss).
TFG_HOST_DEVICE inline int DrawnCutBin(const double* lows, int low_bin, int high_bin,
                                       double drawn) {
  const double* bounds = lows + 1;
  long long first = low_bin;
  long long length = high_bin - 1 - low_bin;
  if (length <= 16) {
    // Deep nodes span few bins: the bounds below the drawn value, counted.
    long long below = 0;
    for (long long at = 0; at < length; ++at) below += bounds[first + at] < drawn ? 1 : 0;
    return static_cast<int>(first + below);
  }
  while (length > 0) {
    const long long half = length / 2;
    const long long above = bounds[first + half] < drawn ? 1 : 0;  // used arithmetically
    first += above * (half + 1);
    length = half + above * (length - 2 * half - 1);
  }
  return static_cast<int>(first);
}

// Extremely randomized trees: whether a node's missing values of `feature` go left, drawn as
// scikit-learn draws it (a coin toss, not the better side); `counter` is the threshold draw's.
TFG_HOST_DEVICE inline bool MissingGoLeft(std::uint64_t threshold_key, std::uint64_t counter) {
  return KeyedBelow(threshold_key, ~counter, 2) != 0;
}

// A feature's cut before any is weighed: no improvement.
TFG_HOST_DEVICE inline void StartFeatureCut(const FeatureInfo& info, int feature,
                                            FeatureCut& best) {
  best.improvement = kNoCut;
  best.feature = feature;
  best.categorical = info.categorical;
  best.default_left = 0;
  best.threshold_bin = 0;
  best.cut_bin = 0;
  best.left_rows = 0;
}

// The split search from cumulative sums, which the kernels run with a thread per cut (the CPU's
// TryFeature visits the cuts one after another). A cumulative histogram holds at each bin in
// use the sums over the bins in use up to it (the other bins are not read). Its sums are the
// same whole numbers the serial search adds up, so every cut gets the same sums, the same
// improvement and, taking the first best in TryFeature's order, the same winner.

// The node's sums from a cumulative histogram (NodeSplittable's `parent`): those of its last
// bin in use.
TFG_HOST_DEVICE inline void CumulativeTotals(const SplitRules& rules, const Histogram& cumulative,
                                             const int* used_bins, int used, double* parent) {
  const int last = used_bins[used - 1];
  if (rules.criterion == kCriterionSquaredError) {
    parent[0] = double(cumulative.counts[last]);
    parent[1] = double(cumulative.values[last]) * rules.value_unit;
    return;
  }
  for (int k = 0; k < rules.width; ++k)
    parent[k] = double(cumulative.counts[last * rules.width + k]);
}

// TryFeature's cuts of one feature (not extremely randomized trees), numbered in its order:
// cut c of side s (missing values right, then left) is number s * (last + 1) + c.
struct CutPlan {
  int values;      // bins in use holding values (a numeric feature's missing bin set aside)
  int last;        // the last cut
  int candidates;  // cuts numbered (some are skipped: CandidateCut)
};

TFG_HOST_DEVICE inline CutPlan PlanCuts(const FeatureInfo& info, const int* used_bins, int used) {
  CutPlan plan{0, -1, 0};
  if (used < 2) return plan;
  // The missing bin is the last bin; it holds rows exactly when it is the last in use.
  const bool has_missing = !info.categorical && used_bins[used - 1] == info.num_bins - 1;
  plan.values = has_missing ? used - 1 : used;
  plan.last = has_missing ? plan.values - 1 : plan.values - 2;
  plan.candidates = (has_missing ? 2 : 1) * (plan.last + 1);
  return plan;
}

// Cut `candidate` of `plan`: false when TryFeature does not weigh it (the missing values
// joining every value, or a side under min_samples_leaf); else its improvement and left rows.
TFG_HOST_DEVICE inline bool CandidateCut(const SplitRules& rules, const Histogram& cumulative,
                                         const int* used_bins, int used, const CutPlan& plan,
                                         long long count, const double* parent, double parent_score,
                                         int candidate, double& improvement, long long& left_rows) {
  const int missing_left = candidate / (plan.last + 1);
  const int cut = candidate - missing_left * (plan.last + 1);
  if (missing_left && cut == plan.values - 1) return false;
  const int bin = used_bins[cut];
  // With the missing values left, the missing bin's own sums: its cumulative ones less those of
  // the last value bin.
  const int missing = used_bins[used - 1];
  const int before = used_bins[plan.values - 1];
  left_rows = static_cast<long long>(cumulative.rows[bin]);
  if (missing_left) {
    left_rows += static_cast<long long>(cumulative.rows[missing]) - cumulative.rows[before];
  }
  if (left_rows < rules.min_samples_leaf || count - left_rows < rules.min_samples_leaf) {
    return false;
  }
  // CutImprovement's operations, the left sums made and both sides scored in one pass.
  if (rules.criterion == kCriterionSquaredError) {
    long long weight = cumulative.counts[bin];
    long long units = cumulative.values[bin];
    if (missing_left) {
      weight += static_cast<long long>(cumulative.counts[missing]) - cumulative.counts[before];
      units += cumulative.values[missing] - cumulative.values[before];
    }
    const double left_weight = double(weight);
    const double left_sum = double(units) * rules.value_unit;
    improvement = SquaredErrorScore(left_weight, left_sum) +
                  SquaredErrorScore(parent[0] - left_weight, parent[1] - left_sum) - parent_score;
  } else {
    const int width = rules.width;
    ClassScore left, right;
    for (int k = 0; k < width; ++k) {
      long long sum = cumulative.counts[bin * width + k];
      if (missing_left) {
        sum += static_cast<long long>(cumulative.counts[missing * width + k]) -
               cumulative.counts[before * width + k];
      }
      left.Add(rules, double(sum));
      right.Add(rules, parent[k] - double(sum));
    }
    improvement = left.Score(rules) + right.Score(rules) - parent_score;
  }
  return improvement > kNoCut;
}

// Sets `best` (started by StartFeatureCut) to cut `candidate` of `plan` as TryFeature records
// it.
TFG_HOST_DEVICE inline void SetCandidateCut(const FeatureInfo& info, const int* used_bins,
                                            const CutPlan& plan, int candidate, double improvement,
                                            long long left_rows, FeatureCut& best) {
  const int missing_left = candidate / (plan.last + 1);
  const int cut = candidate - missing_left * (plan.last + 1);
  const int bin = used_bins[cut];
  best.improvement = improvement;
  best.left_rows = left_rows;
  best.default_left = missing_left;
  best.cut_bin = bin;
  if (info.categorical) {
    best.threshold_bin = 0;
  } else if (cut + 1 < plan.values) {
    const int next = used_bins[cut + 1];  // the next bin holding values
    const int midway = (bin + next - 1) / 2;
    best.threshold_bin = midway > bin ? midway : bin;
  } else {
    best.threshold_bin = bin;
  }
}

// Extremely randomized trees' cut among a node's categories (a category's bin is its rank in
// sorted order): a threshold drawn uniformly between the node's smallest and largest bin, as
// scikit-learn draws one between a node's smallest and largest ordinal code, so a cut across
// categories absent from the node is likelier. Returns the largest bin on the left (below
// `high_bin`, which always goes right; `low_bin` < `high_bin`).
TFG_HOST_DEVICE inline int DrawnCategoryBin(int low_bin, int high_bin, double uniform) {
  const double drawn = low_bin + (high_bin - low_bin) * uniform;
  const int bin = static_cast<int>(drawn);  // drawn >= 0: the floor
  return bin < high_bin ? bin : high_bin - 1;
}

// DrawnCategoryBin for the node's categories `used_bins` (ascending, `used` >= 2 of them): the
// index of the last one on the left.
TFG_HOST_DEVICE inline int DrawnCategoryCut(const int* used_bins, int used, double uniform) {
  const int threshold = DrawnCategoryBin(used_bins[0], used_bins[used - 1], uniform);
  int cut = 0;
  while (used_bins[cut + 1] <= threshold) ++cut;
  return cut;
}

// Extremely randomized trees: the one cut of `feature` drawn from `threshold_key` as the CPU
// grower draws it, on a node of `count` distinct rows from its histogram (counts[bin * width +
// k] the weighted rows of class k, rows[bin] the distinct rows); `used_bins` lists the `used`
// bins holding rows, ascending. Returns whether the feature varies in the node. (The other
// forests weigh every cut: CandidateCut.)
TFG_HOST_DEVICE inline bool ExtraTreesCut(const SplitRules& rules, const FeatureInfo& info,
                                          int feature, const Histogram& histogram,
                                          const int* used_bins, int used, long long count,
                                          const double* parent, double parent_score,
                                          std::uint64_t threshold_key, std::uint64_t node_key,
                                          FeatureCut& best) {
  const int width = rules.width;
  const int num_bins = info.num_bins;
  const int missing_bin = num_bins - 1;
  const std::uint32_t* rows = histogram.rows;
  const std::uint64_t counter = node_key * 4099 + std::uint64_t(feature);
  double left[kMaxBatchClasses];
  StartFeatureCut(info, feature, best);
  if (!info.categorical) {
    // TryExtraTrees: one threshold drawn between the node's smallest and largest value.
    const long long missing_rows = rows[missing_bin];
    const int value_used = missing_rows > 0 ? used - 1 : used;  // the missing bin comes last
    // One value with missing ones is not constant here (scikit-learn's RandomSplitter).
    if (value_used <= 0) return false;
    const int low_bin = used_bins[0];
    const int high_bin = used_bins[value_used - 1];
    if (low_bin == high_bin && missing_rows == 0) return false;
    int threshold = high_bin;
    if (low_bin < high_bin) {
      const double low = info.bin_lows[low_bin];
      const double high = info.bin_lows[high_bin];
      const double drawn = low + (high - low) * KeyedUniform(threshold_key, counter);
      threshold = DrawnCutBin(info.bin_lows, low_bin, high_bin, drawn);
    }
    long long left_rows = 0;
    for (int k = 0; k < width; ++k) left[k] = 0;
    for (int at = 0; at < value_used && used_bins[at] <= threshold; ++at) {
      left_rows += rows[used_bins[at]];
      AddBin(rules, histogram, used_bins[at], left);
    }
    // Missing values go to a side drawn at random; without any, rows missing at prediction
    // follow the larger side (scikit-learn's rules).
    int missing_left = 0;
    if (missing_rows > 0) {
      missing_left = MissingGoLeft(threshold_key, counter) ? 1 : 0;
      if (missing_left) {
        AddBin(rules, histogram, missing_bin, left);
        left_rows += missing_rows;
      }
    } else {
      missing_left = left_rows > count - left_rows ? 1 : 0;
    }
    if (left_rows >= rules.min_samples_leaf && count - left_rows >= rules.min_samples_leaf &&
        KeepCut(rules, left, left_rows, parent, parent_score, best)) {
      best.threshold_bin = threshold;
      best.default_left = missing_left;
    }
    return true;
  }
  // A categorical feature: one of TryFeature's cuts between its categories in bin order, drawn
  // (DrawnCategoryCut).
  if (used < 2) return false;
  const CutPlan plan = PlanCuts(info, used_bins, used);
  const int cut = DrawnCategoryCut(used_bins, used, KeyedUniform(threshold_key, counter));
  for (int k = 0; k < width; ++k) left[k] = 0;
  long long left_rows = 0;
  for (int at = 0; at <= cut; ++at) {
    AddBin(rules, histogram, used_bins[at], left);
    left_rows += rows[used_bins[at]];
  }
  if (left_rows >= rules.min_samples_leaf && count - left_rows >= rules.min_samples_leaf &&
      KeepCut(rules, left, left_rows, parent, parent_score, best)) {
    SetCandidateCut(info, used_bins, plan, cut, best.improvement, left_rows, best);
  }
  return true;
}

// A node's outcome from its features' cuts.
enum NodeStatus : int {
  kNodeLeaf = 0,      // may not be split (size, depth, purity)
  kNodeSplit = 1,     // `cut` is its split
  kNodeNoSplit = 2,   // every feature needed was tried, none gave a valid split
  kNodeNeedsMore = 3  // the first features_per_node gave none; the rest must be tried
};

// Combines a node's cuts of positions [first, first + positions) of its feature order in order,
// the earlier winning ties (ForestTreeGrower's shared best). The first pass covers positions
// [0, features_per_node); when it finds nothing, the CPU goes on one feature at a time until a
// valid split turns up, which the second pass (`first_valid_only`, the remaining positions)
// reproduces by taking the first valid cut.
TFG_HOST_DEVICE inline int CombineCuts(const FeatureCut* cuts, int positions, bool first_valid_only,
                                       bool more_remain, int* chosen) {
  *chosen = -1;
  double best = kNoCut;
  for (int at = 0; at < positions; ++at) {
    if (cuts[at].improvement > best) {
      best = cuts[at].improvement;
      *chosen = at;
      if (first_valid_only) break;
    }
  }
  if (*chosen >= 0) return kNodeSplit;
  return more_remain ? kNodeNeedsMore : kNodeNoSplit;
}

}  // namespace tabforge::forest::kernels
