// The split scan of the CUDA grower (included by device_select.cu, whose scan-and-select launch
// runs it): the CPU's formulas (split_math.h) and tie order for numeric and categorical
// features, one warp per (leaf, feature, kScanChunk thresholds) work item, and the reduction of
// a leaf's candidates to its best split.
#pragma once

#include "core/random.h"
#include "models/tree/device_common.cuh"

namespace tabforge::tree::kernels {
namespace {

// The parameters of one scan: the tree's scales with the split limits.
struct ScanArgs {
  const ScanParams& params;
  double gradient_scale;
  double hessian_scale;
};

using FeatureSplit = ScanCandidate;

__device__ inline void ClearSplit(FeatureSplit& split) {
  split.gain = -INFINITY;
  split.feature = -1;
  split.categorical = 0;
  split.default_left = 0;
  split.threshold_bin = 0;
  split.left_packed = 0;
  split.left_hessian = 0;
  for (int word = 0; word < kBitsetWords; ++word) split.bitset[word] = 0;
}

// The gain of sending `left` left and the rest right, or -inf when the split breaks a limit.
__device__ inline double SplitGain(long long left_packed, long long left_hessian,
                                   long long total_packed, long long total_hessian, double parent,
                                   const ScanArgs& args, const LeafRegularization& reg) {
  const ScanParams& params = args.params;
  const long long left_count = CellCount(left_packed);
  if (left_count < params.min_data_in_leaf) return -INFINITY;
  if (CellCount(total_packed) - left_count < params.min_data_in_leaf) return -INFINITY;
  const long long right_packed = total_packed - left_packed;
  const double left_h = double(left_hessian) * args.hessian_scale;
  const double right_h = double(total_hessian - left_hessian) * args.hessian_scale;
  if (left_h < params.min_sum_hessian_in_leaf || right_h < params.min_sum_hessian_in_leaf) {
    return -INFINITY;
  }
  return LeafGain(double(CellGradient(left_packed)) * args.gradient_scale, left_h, reg) +
         LeafGain(double(CellGradient(right_packed)) * args.gradient_scale, right_h, reg) - parent;
}

// Serial categorical scan (as TreeGrower::ScanCategorical), by one thread.
__device__ void ScanCategoricalDevice(const long long* cells, int num_bins, long long total_packed,
                                      long long total_hessian, const ScanArgs& args,
                                      FeatureSplit& best) {
  const ScanParams& params = args.params;
  int used[kMaxCategoryBins];
  int used_count = 0;
  for (int bin = 0; bin < num_bins; ++bin) {
    if (CellCount(cells[2 * bin]) > 0) used[used_count++] = bin;
  }
  if (used_count < 2) return;
  const double total_g = double(CellGradient(total_packed)) * args.gradient_scale;
  const double total_h = double(total_hessian) * args.hessian_scale;
  auto consider = [&](const int* side, int side_count, const LeafRegularization& reg) {
    long long left_packed = 0;
    long long left_hessian = 0;
    for (int at = 0; at < side_count; ++at) {
      left_packed += cells[2 * side[at]];
      left_hessian += cells[2 * side[at] + 1];
    }
    const double parent = LeafGain(total_g, total_h, reg);
    const double gain =
        SplitGain(left_packed, left_hessian, total_packed, total_hessian, parent, args, reg);
    if (gain > best.gain) {
      best.gain = gain;
      best.categorical = 1;
      best.default_left = 0;
      best.threshold_bin = 0;
      best.left_packed = left_packed;
      best.left_hessian = left_hessian;
      for (int word = 0; word < kBitsetWords; ++word) best.bitset[word] = 0;
      for (int at = 0; at < side_count; ++at) {
        best.bitset[side[at] / 32] |= 1u << (side[at] % 32);
      }
    }
  };
  if (used_count <= params.max_cat_to_onehot) {
    for (int at = 0; at < used_count; ++at) consider(&used[at], 1, params.reg);
    return;
  }
  int candidates[kMaxCategoryBins];
  double scores[kMaxCategoryBins];
  int candidate_count = 0;
  for (int at = 0; at < used_count; ++at) {
    const int bin = used[at];
    if (CellCount(cells[2 * bin]) < params.min_data_per_group) continue;
    const double score = double(CellGradient(cells[2 * bin])) * args.gradient_scale /
                         (double(cells[2 * bin + 1]) * args.hessian_scale + params.cat_smooth);
    // Stable insertion by score (the CPU's stable_sort).
    int slot = candidate_count++;
    while (slot > 0 && score < scores[slot - 1]) {
      candidates[slot] = candidates[slot - 1];
      scores[slot] = scores[slot - 1];
      --slot;
    }
    candidates[slot] = bin;
    scores[slot] = score;
  }
  if (candidate_count < 2) return;
  LeafRegularization reg = params.reg;
  reg.lambda_l2 += params.cat_l2;
  const int limit = params.max_cat_threshold < candidate_count - 1 ? params.max_cat_threshold
                                                                   : candidate_count - 1;
  int side[kMaxCategoryBins];
  for (int from_end = 0; from_end < 2; ++from_end) {
    for (int taken = 0; taken < limit; ++taken) {
      side[taken] = from_end ? candidates[candidate_count - 1 - taken] : candidates[taken];
      consider(side, taken + 1, reg);
    }
  }
}

// Whether node `node_key` tries `feature` under node-level sampling (NodeFeatureMask): the
// ceil(fraction * active) active features with the smallest keys, ties to the lower feature.
// Computed by a whole warp; every lane gets the answer.
__device__ bool NodeTries(const GrowContext& context, std::uint64_t seed, std::uint64_t node_key,
                          int feature) {
  const double fraction = context.scan.feature_fraction_bynode;
  if (fraction >= 1.0) return true;
  const std::uint64_t stream = kNodeFeatureStream ^ node_key;
  const double key = RandomUniform(seed, stream, feature);
  int active = 0;
  int below = 0;
  for (int other = threadIdx.x % 32; other < context.num_features; other += 32) {
    if (!context.active[other]) continue;
    ++active;
    const double other_key = RandomUniform(seed, stream, other);
    if (other_key < key || (other_key == key && other < feature)) ++below;
  }
  for (int shift = 16; shift > 0; shift >>= 1) {
    active += __shfl_xor_sync(0xffffffffu, active, shift);
    below += __shfl_xor_sync(0xffffffffu, below, shift);
  }
  return below < static_cast<int>(ceil(fraction * double(active)));
}

// The best numeric split of one feature for one leaf, by a warp (lane 0 holds the answer):
// thresholds in tiles of 32 with prefix sums by shuffles; ties go to the lowest missing side,
// then the lowest threshold, as on the CPU.
__device__ void ScanNumericDevice(const long long* cells, int bins, long long total_packed,
                                  long long total_hessian, int only, int first_threshold,
                                  const ScanArgs& args, FeatureSplit& best) {
  const int lane = threadIdx.x % 32;
  const double parent = LeafGain(double(CellGradient(total_packed)) * args.gradient_scale,
                                 double(total_hessian) * args.hessian_scale, args.params.reg);
  const long long missing_packed = cells[2 * (bins - 1)];
  const long long missing_hessian = cells[2 * (bins - 1) + 1];
  const bool has_missing = CellCount(missing_packed) > 0;
  double lane_gain = -INFINITY;
  int lane_key = 0x7fffffff;
  long long lane_packed = 0;
  long long lane_hessian = 0;
  // One pass of prefix sums serves both sides of the missing bin: with missing rows going
  // right, threshold t sends cells [0, t] left (t <= last_right); going left, the missing cell
  // too (t <= bins - 3). Candidates are ordered by gain, then key (missing side, threshold),
  // whatever order they are met in.
  const int last_right = has_missing ? bins - 2 : bins - 3;
  const int last_left = has_missing ? bins - 3 : -1;
  const int only_right = only < last_right ? only : last_right;
  const int only_left = only < last_left ? only : last_left;
  auto consider = [&](long long left_packed, long long left_hessian, int key) {
    const double gain = SplitGain(left_packed, left_hessian, total_packed, total_hessian, parent,
                                  args, args.params.reg);
    if (gain > -INFINITY && (gain > lane_gain || (gain == lane_gain && key < lane_key))) {
      lane_gain = gain;
      lane_key = key;
      lane_packed = left_packed;
      lane_hessian = left_hessian;
    }
  };
  // The cells below the chunk, summed by the warp.
  long long carry_packed = 0;
  long long carry_hessian = 0;
  for (int bin = lane; bin < first_threshold; bin += 32) {
    carry_packed += cells[2 * bin];
    carry_hessian += cells[2 * bin + 1];
  }
  for (int shift = 16; shift > 0; shift >>= 1) {
    carry_packed += __shfl_xor_sync(0xffffffffu, carry_packed, shift);
    carry_hessian += __shfl_xor_sync(0xffffffffu, carry_hessian, shift);
  }
  const int chunk_end = first_threshold + kScanChunk - 1 < last_right
                            ? first_threshold + kScanChunk - 1
                            : last_right;  // the chunk's last threshold
  for (int group = first_threshold; group <= chunk_end; group += 32 * kScanTiles) {
    // The group's cells are loaded before any is scanned (the loads overlap).
    long long tile_packed[kScanTiles];
    long long tile_hessian[kScanTiles];
    for (int tile = 0; tile < kScanTiles; ++tile) {
      const int threshold = group + 32 * tile + lane;
      tile_packed[tile] = threshold <= chunk_end ? cells[2 * threshold] : 0;
      tile_hessian[tile] = threshold <= chunk_end ? cells[2 * threshold + 1] : 0;
    }
    for (int tile = 0; tile < kScanTiles; ++tile) {
      const int threshold = group + 32 * tile + lane;
      long long packed = tile_packed[tile];
      long long hessian = tile_hessian[tile];
      for (int shift = 1; shift < 32; shift <<= 1) {
        const long long up_packed = __shfl_up_sync(0xffffffffu, packed, shift);
        const long long up_hessian = __shfl_up_sync(0xffffffffu, hessian, shift);
        if (lane >= shift) {
          packed += up_packed;
          hessian += up_hessian;
        }
      }
      const long long left_packed = carry_packed + packed;
      const long long left_hessian = carry_hessian + hessian;
      carry_packed += __shfl_sync(0xffffffffu, packed, 31);
      carry_hessian += __shfl_sync(0xffffffffu, hessian, 31);
      if (threshold > chunk_end) continue;
      if (threshold <= last_right && (only < 0 || threshold == only_right)) {
        consider(left_packed, left_hessian, threshold);
      }
      if (threshold <= last_left && (only < 0 || threshold == only_left)) {
        consider(missing_packed + left_packed, missing_hessian + left_hessian, 65536 + threshold);
      }
    }
  }
  for (int shift = 16; shift > 0; shift >>= 1) {
    const double other_gain = __shfl_down_sync(0xffffffffu, lane_gain, shift);
    const int other_key = __shfl_down_sync(0xffffffffu, lane_key, shift);
    const long long other_packed = __shfl_down_sync(0xffffffffu, lane_packed, shift);
    const long long other_hessian = __shfl_down_sync(0xffffffffu, lane_hessian, shift);
    if (other_gain > lane_gain || (other_gain == lane_gain && other_key < lane_key)) {
      lane_gain = other_gain;
      lane_key = other_key;
      lane_packed = other_packed;
      lane_hessian = other_hessian;
    }
  }
  if (lane == 0 && lane_gain > -INFINITY) {
    best.gain = lane_gain;
    best.default_left = lane_key >= 65536;
    best.threshold_bin = lane_key % 65536;
    best.left_packed = lane_packed;
    best.left_hessian = lane_hessian;
  }
}

// One work item of the scan, by a warp: thresholds [chunk * kScanChunk, + kScanChunk) of
// `feature` for leaf scan_ids[at] (a categorical feature's whole scan in chunk 0). Lane 0
// writes the best candidate to `out` (feature < 0: none).
__device__ void ScanItem(const GrowContext& context, int at, int feature, int chunk,
                         FeatureSplit* out) {
  const GrowState& state = *context.state;
  const GrowLeaf& leaf = context.leaves[context.scan_ids[at]];
  const ScanParams& params = context.scan;
  const int lane = threadIdx.x % 32;
  FeatureSplit found;
  ClearSplit(found);
  const long long total_packed = leaf.total_packed;
  const long long total_hessian = leaf.total_hessian;
  const int bins = context.num_bins[feature];
  const bool categorical = context.categorical[feature] != 0;
  const bool splittable = (params.max_depth <= 0 || leaf.depth < params.max_depth) &&
                          CellCount(total_packed) >= 2 * params.min_data_in_leaf;
  const bool tried = splittable && context.active[feature] && bins >= 2 &&
                     (categorical ? chunk == 0 : chunk * kScanChunk <= bins - 2);
  if (tried && NodeTries(context, state.seed, leaf.node_key, feature)) {
    const ScanArgs args{params, context.scales->gradient_scale, context.scales->hessian_scale};
    const long long* cells = reinterpret_cast<const long long*>(HistogramOf(context, leaf.slot)) +
                             2 * context.groups.offsets[feature];
    if (categorical) {
      if (lane == 0) ScanCategoricalDevice(cells, bins, total_packed, total_hessian, args, found);
    } else {
      const int only =
          params.extra_trees ? ExtraTreesThreshold(state.seed, leaf.node_key, feature, bins) : -1;
      ScanNumericDevice(cells, bins, total_packed, total_hessian, only, chunk * kScanChunk, args,
                        found);
    }
    if (found.gain > -INFINITY) found.feature = feature;
  }
  if (lane == 0) *out = found;
}

// The leaf's best split from its `count` candidates (written by other warps: read through L2),
// by a warp: the largest gain, then the lowest feature (the CPU compares features in order),
// then the lowest key (missing side, threshold: its scan's tie order); kept only above
// min_gain_to_split (KeepBetterSplit's rule).
__device__ void ReduceLeaf(const GrowContext& context, int at, const FeatureSplit* candidates,
                           int count) {
  const int lane = threadIdx.x % 32;
  int best = -1;
  double best_gain = -INFINITY;
  int best_feature = 0x7fffffff;
  int best_key = 0x7fffffff;
  for (int index = lane; index < count; index += 32) {
    const FeatureSplit* candidate = candidates + index;
    const int feature = __ldcg(&candidate->feature);
    if (feature < 0) continue;
    const double gain = __ldcg(&candidate->gain);
    const int key = __ldcg(&candidate->categorical) ? 0
                                                    : __ldcg(&candidate->default_left) * 65536 +
                                                          __ldcg(&candidate->threshold_bin);
    if (best < 0 || gain > best_gain ||
        (gain == best_gain &&
         (feature < best_feature || (feature == best_feature && key < best_key)))) {
      best = index;
      best_gain = gain;
      best_feature = feature;
      best_key = key;
    }
  }
  for (int shift = 16; shift > 0; shift >>= 1) {
    const int other = __shfl_down_sync(0xffffffffu, best, shift);
    const double other_gain = __shfl_down_sync(0xffffffffu, best_gain, shift);
    const int other_feature = __shfl_down_sync(0xffffffffu, best_feature, shift);
    const int other_key = __shfl_down_sync(0xffffffffu, best_key, shift);
    if (other >= 0 &&
        (best < 0 || other_gain > best_gain ||
         (other_gain == best_gain && (other_feature < best_feature ||
                                      (other_feature == best_feature && other_key < best_key))))) {
      best = other;
      best_gain = other_gain;
      best_feature = other_feature;
      best_key = other_key;
    }
  }
  if (lane != 0 || best < 0 || !(best_gain > context.scan.min_gain_to_split)) return;
  const unsigned long long* from = reinterpret_cast<const unsigned long long*>(candidates + best);
  FeatureSplit chosen;
  unsigned long long* to = reinterpret_cast<unsigned long long*>(&chosen);
  for (int word = 0; word < int(sizeof(FeatureSplit) / 8); ++word) to[word] = __ldcg(from + word);
  const int id = context.scan_ids[at];
  GrowLeaf& leaf = context.leaves[id];
  context.briefs[id].gain = chosen.gain;
  leaf.gain = chosen.gain;
  leaf.feature = chosen.feature;
  leaf.categorical = chosen.categorical;
  leaf.default_left = chosen.default_left;
  leaf.threshold_bin = chosen.threshold_bin;
  leaf.left_packed = chosen.left_packed;
  leaf.left_hessian = chosen.left_hessian;
  for (int word = 0; word < kBitsetWords; ++word) leaf.bitset[word] = chosen.bitset[word];
  __threadfence();  // the record before the block's count (ScanSelectKernel)
}

}  // namespace
}  // namespace tabforge::tree::kernels
