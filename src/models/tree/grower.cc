#include "models/tree/grower.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/portable_math.h"
#include "core/random.h"
#include "models/tree/grower_loop.h"

#if defined(__GNUC__) || defined(__clang__)
#define TFG_PREFETCH(address) __builtin_prefetch(address)
#else
#define TFG_PREFETCH(address) ((void)(address))
#endif

namespace tabforge::tree {

namespace {

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

TreeGrower::TreeGrower(const BinMatrix& bins, const BinMapper& mapper, const GrowerParams& params,
                       int threads)
    : bins_(bins), mapper_(mapper), params_(params), threads_(threads), layout_(mapper) {
  const std::int64_t histogram_bytes =
      std::max<std::int64_t>(layout_.total_bins(), 1) * std::int64_t(sizeof(HistogramBin));
  const std::int64_t wanted = params_.histogram_pool_bytes > 0
                                  ? params_.histogram_pool_bytes / histogram_bytes
                                  : std::int64_t(params_.num_leaves);
  max_slots_ =
      static_cast<int>(std::clamp<std::int64_t>(wanted, 2, std::max(params_.num_leaves, 2)));
  pool_.resize(static_cast<std::size_t>(layout_.total_bins()) * max_slots_);
  profile_ = BinProfile::Analyze(bins_, layout_);
}

void TreeGrower::ScanNumeric(int feature, const HistogramBin* histogram, const HistogramBin& total,
                             const QuantizedGradients& gradients, int only_threshold,
                             LeafSplit& best) const {
  const int num_bins = mapper_.feature(feature).num_bins;
  if (num_bins < 2) return;
  const HistogramBin& missing = histogram[num_bins - 1];
  const double g_scale = gradients.gradient_scale;
  const double h_scale = gradients.hessian_scale;
  const double parent =
      LeafGain(Real(total.gradient(), g_scale), Real(total.hessian, h_scale), params_.reg);
  const std::int64_t missing_count = missing.count();
  const std::int64_t total_count = total.count();
  const bool l2_only = params_.reg.lambda_l1 == 0 && params_.reg.max_delta_step == 0;
  auto gain_of = [&](double sum_gradient, double sum_hessian) {
    return l2_only ? LeafGainL2(sum_gradient, sum_hessian, params_.reg.lambda_l2)
                   : LeafGain(sum_gradient, sum_hessian, params_.reg);
  };
  for (int missing_left = 0; missing_left < (missing_count > 0 ? 2 : 1); ++missing_left) {
    HistogramBin left = missing_left ? missing : HistogramBin{};
    // With missing values on the right, "all values left" is a split too.
    const int last = missing_left || missing_count == 0 ? num_bins - 3 : num_bins - 2;
    for (int threshold = 0; threshold <= last; ++threshold) {
      if (only_threshold >= 0) {
        left += histogram[threshold];
        if (threshold != std::min(only_threshold, last)) continue;
      } else {
        // An empty bin leaves the split as the threshold before it, which already had its
        // chance (only strictly better gains replace the best).
        if (histogram[threshold].count() == 0) continue;
        left += histogram[threshold];
      }
      const std::int64_t left_count = left.count();
      if (left_count < params_.min_data_in_leaf) continue;
      if (total_count - left_count < params_.min_data_in_leaf) break;
      const HistogramBin right = total - left;
      const double left_h = Real(left.hessian, h_scale);
      const double right_h = Real(right.hessian, h_scale);
      if (left_h < params_.min_sum_hessian_in_leaf || right_h < params_.min_sum_hessian_in_leaf) {
        continue;
      }
      const double gain = gain_of(Real(left.gradient(), g_scale), left_h) +
                          gain_of(Real(right.gradient(), g_scale), right_h) - parent;
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
                                 LeafSplit& best) const {
  const int num_bins = mapper_.feature(feature).num_bins;
  const double g_scale = gradients.gradient_scale;
  const double h_scale = gradients.hessian_scale;
  std::vector<int> used;
  for (int bin = 0; bin < num_bins; ++bin) {
    if (histogram[bin].count() > 0) used.push_back(bin);
  }
  if (used.size() < 2) return;
  auto consider = [&](const std::vector<int>& left_side, const LeafRegularization& reg) {
    HistogramBin left;
    for (int bin : left_side) left += histogram[bin];
    if (left.count() < params_.min_data_in_leaf ||
        total.count() - left.count() < params_.min_data_in_leaf) {
      return;
    }
    const HistogramBin right = total - left;
    const double left_h = Real(left.hessian, h_scale);
    const double right_h = Real(right.hessian, h_scale);
    if (left_h < params_.min_sum_hessian_in_leaf || right_h < params_.min_sum_hessian_in_leaf) {
      return;
    }
    const double gain =
        LeafGain(Real(left.gradient(), g_scale), left_h, reg) +
        LeafGain(Real(right.gradient(), g_scale), right_h, reg) -
        LeafGain(Real(total.gradient(), g_scale), Real(total.hessian, h_scale), reg);
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
    if (histogram[bin].count() >= params_.min_data_per_group) candidates.push_back(bin);
  }
  if (candidates.size() < 2) return;
  auto score = [&](int bin) {
    return Real(histogram[bin].gradient(), g_scale) /
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

std::vector<std::uint8_t> NodeFeatureMask(const std::vector<std::uint8_t>& active, double fraction,
                                          std::uint64_t seed, std::uint64_t node_key) {
  if (fraction >= 1.0) return active;
  // Keep the ceil(fraction * active) features with the smallest keys for this node.
  const int features = static_cast<int>(active.size());
  std::vector<std::pair<double, int>> keys;
  for (int feature = 0; feature < features; ++feature) {
    if (active[feature])
      keys.push_back({RandomUniform(seed, kNodeFeatureStream ^ node_key, feature), feature});
  }
  std::sort(keys.begin(), keys.end());
  const auto keep = static_cast<std::size_t>(std::ceil(fraction * double(keys.size())));
  std::vector<std::uint8_t> tried(active.size(), 0);
  for (std::size_t index = 0; index < keep && index < keys.size(); ++index) {
    tried[keys[index].second] = 1;
  }
  return tried;
}

void TreeGrower::FindBestSplits(GrowingLeaf* const* leaves, const HistogramBin* const* histograms,
                                const std::uint64_t* node_keys, int count,
                                const QuantizedGradients& gradients,
                                const std::vector<std::uint8_t>& active, std::uint64_t seed) {
  const int features = mapper_.num_features();
  std::vector<std::vector<std::uint8_t>> tried(static_cast<std::size_t>(count));
  std::int64_t rows = 0;
  for (int at = 0; at < count; ++at) {
    GrowingLeaf& leaf = *leaves[at];
    leaf.best = LeafSplit{};
    if (LeafSplittable(leaf, params_)) {
      tried[at] = NodeFeatureMask(active, params_.feature_fraction_bynode, seed, node_keys[at]);
      rows += leaf.end - leaf.begin;
    }
  }
  std::vector<LeafSplit> candidates(static_cast<std::size_t>(count) * features);
  // The (leaf, feature) scans are independent; a parallel region pays off once the leaves
  // hold enough rows (small regions are costly when other fits share the cores).
  const int tasks = count * features;
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1) if (rows >= 1024)
  for (int task = 0; task < tasks; ++task) {
    const int at = task / features;
    const int feature = task % features;
    if (tried[at].empty() || !tried[at][feature]) continue;
    const HistogramBin* feature_histogram = histograms[at] + layout_.offsets[feature];
    LeafSplit& candidate = candidates[task];
    if (mapper_.feature(feature).categorical) {
      ScanCategorical(feature, feature_histogram, leaves[at]->total, gradients, candidate);
    } else {
      // Extremely randomized trees try one threshold per (node, feature), drawn uniformly.
      const int only_threshold =
          params_.extra_trees
              ? ExtraTreesThreshold(seed, node_keys[at], feature, mapper_.feature(feature).num_bins)
              : -1;
      ScanNumeric(feature, feature_histogram, leaves[at]->total, gradients, only_threshold,
                  candidate);
    }
  }
  for (int task = 0; task < tasks; ++task) {
    KeepBetterSplit(candidates[task], params_, *leaves[task / features]);
  }
}

std::int64_t TreeGrower::Partition(const LeafSplit& split, int missing_bin, std::int64_t begin,
                                   std::int64_t end) {
  // Stable: left rows stay in front and right rows follow, each in their order (rows in
  // ascending order keep the histogram passes' reads of the bin matrix close together). The
  // spare buffer holds half the rows: a longer range is partitioned as two halves, whose
  // middle blocks (the first half's rights, the second half's lefts) then swap places.
  const std::int64_t spare_rows = static_cast<std::int64_t>(spare_.size());
  if (end - begin <= spare_rows) return PartitionRange(split, missing_bin, begin, end);
  const std::int64_t middle = begin + (end - begin) / 2;
  const std::int64_t first_lefts_end = PartitionRange(split, missing_bin, begin, middle);
  const std::int64_t second_lefts_end = PartitionRange(split, missing_bin, middle, end);
  // [first lefts | first rights | second lefts | second rights]: the smaller middle block
  // waits in the spare buffer while the other one moves.
  std::int32_t* order = order_.data();
  std::int32_t* spare = spare_.data();
  const std::int64_t rights = middle - first_lefts_end;
  const std::int64_t lefts = second_lefts_end - middle;
  if (rights <= lefts) {
    std::copy(order + first_lefts_end, order + middle, spare);
    std::copy(order + middle, order + second_lefts_end, order + first_lefts_end);
    std::copy(spare, spare + rights, order + first_lefts_end + lefts);
  } else {
    std::copy(order + middle, order + second_lefts_end, spare);
    std::copy_backward(order + first_lefts_end, order + middle, order + second_lefts_end);
    std::copy(spare, spare + lefts, order + first_lefts_end);
  }
  return first_lefts_end + lefts;
}

std::int64_t TreeGrower::PartitionRange(const LeafSplit& split, int missing_bin, std::int64_t begin,
                                        std::int64_t end) {
  // One pass per chunk classifies its rows, compacting the left ones in place and writing the
  // right ones to the spare buffer at the chunk's own offsets (from the range's start); then
  // the chunks' left blocks slide down into one run and their right blocks are copied back
  // behind it. Large ranges take one chunk per thread.
  // Which side each bin of the split feature goes to, looked up per row.
  const int num_bins = mapper_.feature(split.feature).num_bins;
  side_.assign(static_cast<std::size_t>(num_bins), 0);
  for (int bin = 0; bin < num_bins; ++bin) {
    side_[bin] = split.categorical    ? TestBit(split.left_bins, bin)
                 : bin == missing_bin ? split.default_left
                                      : bin <= split.threshold_bin;
  }
  const std::uint8_t* side = side_.data();
  const std::size_t stride = static_cast<std::size_t>(bins_.num_features);
  const std::uint8_t* narrow = bins_.wide() ? nullptr : bins_.bins8.data() + split.feature;
  const std::uint16_t* wide = bins_.wide() ? bins_.bins16.data() + split.feature : nullptr;
  // The rows of a leaf are ascending but scattered: fetch their bins ahead.
  constexpr std::int64_t kPrefetchDistance = 32;
  std::int32_t* order = order_.data();
  std::int32_t* spare = spare_.data();  // position p's slot is spare[p - begin]
  // Classifies [first, stop): returns how many rows go left (now at [first, first + lefts));
  // the right ones are at spare[first - begin, first - begin + (stop - first - lefts)).
  auto classify = [&](std::int64_t first, std::int64_t stop) {
    std::int64_t left_write = first;
    std::int64_t right_write = first;
    auto run = [&](auto bin_of) {
      for (std::int64_t index = first; index < stop; ++index) {
        if (index + kPrefetchDistance < stop) {
          TFG_PREFETCH(&bin_of(order[index + kPrefetchDistance]));
        }
        const std::int32_t row = order[index];
        const std::uint8_t left = side[bin_of(row)];
        order[left_write] = row;
        spare[right_write - begin] = row;
        left_write += left;
        right_write += 1 - left;
      }
    };
    if (narrow != nullptr) {
      run([&](std::int32_t row) -> const std::uint8_t& {
        return narrow[static_cast<std::size_t>(row) * stride];
      });
    } else {
      run([&](std::int32_t row) -> const std::uint16_t& {
        return wide[static_cast<std::size_t>(row) * stride];
      });
    }
    return left_write - first;
  };
  constexpr std::int64_t kRowsPerThread = 2048;
  const std::int64_t count = end - begin;
  const int chunks =
      static_cast<int>(std::clamp<std::int64_t>(count / kRowsPerThread, 1, std::max(threads_, 1)));
  if (chunks == 1) {
    const std::int64_t lefts = classify(begin, end);
    std::copy(spare, spare + (end - begin - lefts), order + begin + lefts);
    return begin + lefts;
  }
  std::vector<std::int64_t> lefts(static_cast<std::size_t>(chunks) + 1, 0);
  auto chunk_begin = [&](int chunk) { return begin + count * chunk / chunks; };
#pragma omp parallel num_threads(chunks)
  {
#pragma omp for schedule(static, 1)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      lefts[chunk + 1] = classify(chunk_begin(chunk), chunk_begin(chunk + 1));
    }
#pragma omp single
    {
      // Chunk c's left block moves down to begin + (lefts of the chunks before it), never past
      // its own start, so sliding the blocks in chunk order overwrites nothing still needed.
      for (int chunk = 0; chunk < chunks; ++chunk) {
        const std::int64_t first = chunk_begin(chunk);
        std::copy(order + first, order + first + lefts[chunk + 1], order + begin + lefts[chunk]);
        lefts[chunk + 1] += lefts[chunk];
      }
    }
#pragma omp for schedule(static, 1)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      const std::int64_t first = chunk_begin(chunk);
      const std::int64_t rights =
          chunk_begin(chunk + 1) - first - (lefts[chunk + 1] - lefts[chunk]);
      // Rights before this chunk: its start's offset minus the lefts before it.
      const std::int64_t destination = begin + lefts[chunks] + (first - begin - lefts[chunk]);
      std::copy(spare + (first - begin), spare + (first - begin + rights), order + destination);
    }
  }
  return begin + lefts[chunks];
}

// The CPU's data work for the shared loop. Leaf l's histogram lives in pool slot slot_of[l]
// (-1: none). The larger child takes over its parent's slot, so no histogram is copied. When
// the pool is full, the histogram of the leaf least likely to be split next (smallest best
// gain) is dropped; that leaf's children are then both built from rows. Histograms are exact
// either way, so the pool's size changes the time, never the tree.
struct CpuGrowerOps {
  CpuGrowerOps(TreeGrower& grower_, const QuantizedGradients& gradients_,
               const std::vector<std::uint8_t>& active_, std::uint64_t seed_)
      : grower(grower_), gradients(gradients_), active(active_), seed(seed_) {}

  TreeGrower& grower;
  const QuantizedGradients& gradients;
  const std::vector<std::uint8_t>& active;
  std::uint64_t seed;
  HistogramSource source;
  std::vector<int> slot_of = std::vector<int>(1, 0);
  std::vector<int> free_slots;

  HistogramBin* slot(int leaf) {
    return grower.pool_.data() +
           static_cast<std::size_t>(slot_of[leaf]) * grower.layout_.total_bins();
  }
  std::int64_t RowCount() const { return static_cast<std::int64_t>(grower.order_.size()); }
  // Rows at positions [begin, end) of the order (merged rows count their members).
  std::int64_t CountRows(std::int64_t begin, std::int64_t end) const {
    if (gradients.cells == nullptr) return end - begin;
    std::int64_t rows = 0;
    for (std::int64_t at = begin; at < end; ++at) {
      rows += gradients.cells[grower.order_[at]].count();
    }
    return rows;
  }
  void Build(std::int64_t begin, std::int64_t end, const HistogramBin& total, HistogramBin* out) {
    const std::int32_t* rows = grower.order_.data() + begin;
    if (gradients.cells != nullptr) {
      BuildHistogram(source, rows, end - begin, gradients.cells, total, out, grower.scratch_,
                     grower.threads_);
    } else {
      BuildHistogram(source, rows, end - begin, gradients.pairs, total, out, grower.scratch_,
                     grower.threads_);
    }
  }
  HistogramBin Start() {
    for (int at = grower.max_slots_ - 1; at >= 1; --at) free_slots.push_back(at);
    HistogramBin total;
    if (gradients.cells != nullptr) {
      for (std::int32_t row : grower.order_) total += gradients.cells[row];
    } else {
      for (std::int32_t row : grower.order_) total += gradients.pairs[row].Cell();
    }
    Build(0, RowCount(), total, slot(0));
    return total;
  }
  void FindBestSplits(GrowingLeaf* const* leaves, const int* ids, const std::uint64_t* keys,
                      int count) {
    const HistogramBin* histograms[2] = {slot(ids[0]), count > 1 ? slot(ids[1]) : nullptr};
    grower.FindBestSplits(leaves, histograms, keys, count, gradients, active, seed);
  }
  std::int64_t Partition(const LeafSplit& split, int missing_bin, std::int64_t begin,
                         std::int64_t end) {
    return grower.Partition(split, missing_bin, begin, end);
  }
  void ChildHistograms(int chosen, int new_leaf, bool left_smaller,
                       const std::vector<GrowingLeaf>& leaves) {
    slot_of.push_back(-1);  // the new (right) leaf
    auto acquire = [&]() {
      if (free_slots.empty()) {
        int victim = -1;
        for (int leaf = 0; leaf < static_cast<int>(slot_of.size()); ++leaf) {
          if (leaf == chosen || leaf == new_leaf || slot_of[leaf] < 0) continue;
          if (victim < 0 || leaves[leaf].best.gain < leaves[victim].best.gain) victim = leaf;
        }
        TFG_CHECK(victim >= 0, "histogram pool of {} slots has none to free", grower.max_slots_);
        free_slots.push_back(slot_of[victim]);
        slot_of[victim] = -1;
      }
      const int taken = free_slots.back();
      free_slots.pop_back();
      return taken;
    };
    const int smaller_leaf = left_smaller ? chosen : new_leaf;
    const int larger_leaf = left_smaller ? new_leaf : chosen;
    const GrowingLeaf& smaller = leaves[smaller_leaf];
    const GrowingLeaf& larger = leaves[larger_leaf];
    const int parent_slot = slot_of[chosen];
    slot_of[chosen] = -1;
    if (parent_slot >= 0) {
      // The smaller child is built into a free slot; the larger child keeps the parent's and
      // becomes the parent's minus the smaller's.
      slot_of[larger_leaf] = parent_slot;
      slot_of[smaller_leaf] = acquire();
      Build(smaller.begin, smaller.end, smaller.total, slot(smaller_leaf));
      SubtractHistogram(slot(larger_leaf), slot(smaller_leaf), slot(larger_leaf),
                        grower.layout_.total_bins());
    } else {
      slot_of[smaller_leaf] = acquire();
      slot_of[larger_leaf] = acquire();
      Build(smaller.begin, smaller.end, smaller.total, slot(smaller_leaf));
      Build(larger.begin, larger.end, larger.total, slot(larger_leaf));
    }
  }
  void Release(int leaf) {
    free_slots.push_back(slot_of[leaf]);
    slot_of[leaf] = -1;
  }
};

Tree TreeGrower::Grow(const std::vector<std::int32_t>* rows, const QuantizedGradients& gradients,
                      const std::vector<std::uint8_t>& active, std::uint64_t seed) {
  CpuGrowerOps ops(*this, gradients, active, seed);
  ops.source.bins = &bins_;
  ops.source.layout = &layout_;
  ops.source.profile = &profile_;
  for (int feature = 0; feature < static_cast<int>(active.size()); ++feature) {
    if (!active[feature] || !profile_.splittable[feature]) continue;
    (profile_.most_frequent[feature] >= 0 ? ops.source.sparse_features : ops.source.dense_features)
        .push_back(feature);
  }
  if (rows != nullptr) {
    order_ = *rows;
  } else {
    order_.resize(static_cast<std::size_t>(bins_.num_rows));
    std::iota(order_.begin(), order_.end(), 0);
  }
  spare_.resize((order_.size() + 1) / 2);
  std::vector<GrowingLeaf> leaves;
  Tree tree = GrowLeafWise(ops, params_, mapper_, leaves);

  // Leaf values from the exact gradients, summed in fixed point so the sum does not depend on
  // the order of the rows; the hessian sums are exact already.
  const bool merged = gradients.cells != nullptr;
  const double gradient_fixed = merged ? gradients.gradient_fixed
                                       : FixedPointScale(gradients.max_abs_gradient,
                                                         static_cast<std::int64_t>(order_.size()));
  const int num_leaves = tree.num_leaves();
  std::vector<double>& leaf_values = tree.leaf_values();
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1) if (order_.size() >= 65536)
  for (int leaf = 0; leaf < num_leaves; ++leaf) {
    std::int64_t sum_gradient = 0;
    for (std::int64_t index = leaves[leaf].begin; index < leaves[leaf].end; ++index) {
      const std::int32_t row = order_[index];
      sum_gradient += merged
                          ? gradients.fixed_gradients[row]
                          : RoundToInteger(double(gradients.exact_gradients[row]) * gradient_fixed);
    }
    leaf_values[leaf] =
        LeafValue(double(sum_gradient) / gradient_fixed,
                  Real(leaves[leaf].total.hessian, gradients.hessian_scale), params_.reg);
  }
  leaf_ranges_.resize(static_cast<std::size_t>(num_leaves));
  for (int leaf = 0; leaf < num_leaves; ++leaf) {
    leaf_ranges_[leaf] = {leaves[leaf].begin, leaves[leaf].end};
  }
  tree.Compact();
  return tree;
}

}  // namespace tabforge::tree
