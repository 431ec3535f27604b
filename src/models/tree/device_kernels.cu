// The CUDA grower's kernels: histograms as integer sums with shared-memory atomics (so the
// order of addition cannot matter), split scans with the CPU's formulas (split_math.h) and its
// tie order, partitions, leaf sums in fixed point, and the selection that replays the CPU's
// best-first choices (grower_loop.h) on the device. Every kernel of a batch reads its work from
// the growth state the previous selection wrote, so a batch has fixed launch shapes and can be
// replayed as one captured graph.
#include <algorithm>
#include <cub/cub.cuh>

#include "core/portable_math.h"
#include "core/random.h"
#include "device/cuda_check.h"
#include "models/tree/device_kernels.h"

namespace tabforge::tree::kernels {
namespace {

constexpr int kThreads = 256;
// Rows one shared-memory histogram chunk sums. Its 32-bit cells stay exact: a row's quantized
// gradient is at most MaxGradientLevel(rows) = (2^31 - 1) / rows in magnitude, and 16-bit
// hessian halves times this fit 32 bits.
constexpr std::int64_t kRowsPerBlock = 32768;
// Fewest rows a shared-memory histogram chunk takes (below it, zeroing and flushing dominate).
constexpr std::int64_t kMinRowsPerBlock = 2048;
// Rows of one chunk of the global-memory histogram.
constexpr std::int64_t kWideRows = 2048;
// Thresholds one scan work item (a warp) takes, as tiles of 32 loaded at once.
constexpr int kScanTiles = kScanChunk / 32;
constexpr int kSelectThreads = kThreads;  // the scan's blocks select too
constexpr int kSplitsPerThread = (kMaxLeaves + kSelectThreads - 1) / kSelectThreads;
// Features one histogram thread takes of each row it reads.
constexpr int kFeaturesPerThread = 4;
// Positions of one partition work item: kRowsPerThread per thread.
constexpr int kRowsPerThread = 4;
constexpr std::int64_t kPartitionRows = kRowsPerThread * kThreads;

static_assert(sizeof(HistogramBin) == 16, "a histogram cell is two 64-bit words");
static_assert(sizeof(GradientPair) == 8, "a gradient pair is two 32-bit words");

int GridFor(std::int64_t items, int per_thread = 1) {
  const std::int64_t blocks =
      (items + std::int64_t(kThreads) * per_thread - 1) / (std::int64_t(kThreads) * per_thread);
  return static_cast<int>(std::clamp<std::int64_t>(blocks, 1, 65535));
}

__device__ inline long long CellCount(long long packed) {
  return static_cast<long long>(static_cast<unsigned long long>(packed) & 0xffffffffull);
}
__device__ inline long long CellGradient(long long packed) {
  return (packed - CellCount(packed)) / (1ll << 32);
}

// Row r's bin of feature f, 8- or 16-bit cells.
template <typename Bin>
__device__ inline int BinOf(const Bin* bins, int stride, std::int64_t row, int feature) {
  return bins[static_cast<std::size_t>(row) * stride + feature];
}

// The smaller child of a batch split: positions [begin, begin + count) of the row order.
__device__ inline void SmallerChild(const BatchSplit& split, std::int64_t& begin,
                                    std::int64_t& count) {
  begin = split.smaller_is_left ? split.begin : split.begin + split.lefts;
  count = split.smaller_is_left ? split.lefts : split.end - split.begin - split.lefts;
}

// The split of the batch whose work items include `item`: the last s < count with
// prefix[s] <= item (prefix: each split's first item).
__device__ inline int SplitOfItem(const int* prefix, int count, int item) {
  int low = 0;
  int high = count - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    if (prefix[middle] <= item) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  return low;
}

__device__ inline Word* HistogramOf(const GrowContext& context, int slot) {
  return context.histograms + 2 * std::size_t(slot) * context.groups.total_bins;
}

// Histograms of the batch's smaller children for the features of group g = blockIdx.y:
// [groups[2g], groups[2g + 1]), summed in shared memory. A work item is a contiguous run of at
// most kRowsPerBlock rows of one child, so its per-cell sums fit 32-bit words: the quantized
// gradient sum, the count, and the fixed-point hessian as two 16-bit halves (32-bit shared
// atomics are native; 64-bit ones are compare-and-swap loops). The nonzero cells are then
// added, in 64 bits, to the histogram: integer sums, so the order of addition cannot matter.
template <typename Bin>
__global__ void HistogramKernel(GrowContext context, const Bin* bins) {
  extern __shared__ std::uint32_t words[];
  const GrowState& state = *context.state;
  const int count = state.batch_count;
  if (count == 0) return;  // a batch queued after the tree is complete
  const int chunks = state.histogram_chunks;
  const int stride = context.bins.stride;
  const std::int64_t* offsets = context.groups.offsets;
  const int first = context.groups.shared[2 * blockIdx.y];
  const int last = context.groups.shared[2 * blockIdx.y + 1];
  const int group_features = last - first;
  const std::int64_t base = offsets[first];
  const int cells = static_cast<int>(offsets[last] - base);
  for (int item = blockIdx.x; item < chunks; item += gridDim.x) {
    const int s = SplitOfItem(context.histogram_prefix, count, item);
    const BatchSplit& split = context.batch[s];
    std::int64_t begin = 0;
    std::int64_t child_rows = 0;
    SmallerChild(split, begin, child_rows);
    const std::int64_t chunk_rows = context.histogram_rows[s];
    const std::int64_t first_row = std::int64_t(item - context.histogram_prefix[s]) * chunk_rows;
    const std::int64_t rows =
        chunk_rows < child_rows - first_row ? chunk_rows : child_rows - first_row;
    for (int word = threadIdx.x; word < 4 * cells; word += blockDim.x) words[word] = 0;
    __syncthreads();
    // A partitioned split's rows are still in spare (copied back after the histograms).
    const std::int32_t* block_rows =
        (split.partition ? context.spare : context.order) + begin + first_row;
    auto add = [&](std::int32_t row, int feature, int cell_base) {
      const GradientPair pair = context.pairs[row];
      std::uint32_t* at = words + 4 * (cell_base + BinOf(bins, stride, row, feature));
      atomicAdd(at, static_cast<std::uint32_t>(pair.gradient));
      atomicAdd(at + 1, 1u);
      atomicAdd(at + 2, pair.hessian & 0xffffu);
      atomicAdd(at + 3, pair.hessian >> 16);
    };
    if (group_features <= static_cast<int>(blockDim.x)) {
      // Thread t takes kFeaturesPerThread consecutive features of the group (slot t % slots)
      // of every rows_per_pass-th row: one row and gradient load serve several features, and
      // two rows' loads are in flight before any atomic waits on them (the loop is bound by
      // memory latency, not by the atomics).
      const int slots = (group_features + kFeaturesPerThread - 1) / kFeaturesPerThread;
      const int rows_per_pass = static_cast<int>(blockDim.x) / slots;
      const int row_lane = static_cast<int>(threadIdx.x) / slots;
      const int first_feature =
          first + (static_cast<int>(threadIdx.x) % slots) * kFeaturesPerThread;
      const int features_here =
          last - first_feature < kFeaturesPerThread ? last - first_feature : kFeaturesPerThread;
      if (row_lane < rows_per_pass) {
        int cell_base[kFeaturesPerThread];
        for (int j = 0; j < kFeaturesPerThread; ++j) {
          cell_base[j] =
              j < features_here ? static_cast<int>(offsets[first_feature + j] - base) : 0;
        }
        auto add_row = [&](std::int32_t row, const GradientPair& pair, const int* row_bins) {
          for (int j = 0; j < kFeaturesPerThread; ++j) {
            if (j >= features_here) break;
            std::uint32_t* at = words + 4 * (cell_base[j] + row_bins[j]);
            atomicAdd(at, static_cast<std::uint32_t>(pair.gradient));
            atomicAdd(at + 1, 1u);
            atomicAdd(at + 2, pair.hessian & 0xffffu);
            atomicAdd(at + 3, pair.hessian >> 16);
          }
        };
        int position = row_lane;
        for (; position + rows_per_pass < static_cast<int>(rows); position += 2 * rows_per_pass) {
          const std::int32_t row0 = block_rows[position];
          const std::int32_t row1 = block_rows[position + rows_per_pass];
          const GradientPair pair0 = context.pairs[row0];
          const GradientPair pair1 = context.pairs[row1];
          int bins0[kFeaturesPerThread];
          int bins1[kFeaturesPerThread];
          for (int j = 0; j < kFeaturesPerThread; ++j) {
            const int feature = j < features_here ? first_feature + j : first_feature;
            bins0[j] = BinOf(bins, stride, row0, feature);
            bins1[j] = BinOf(bins, stride, row1, feature);
          }
          add_row(row0, pair0, bins0);
          add_row(row1, pair1, bins1);
        }
        for (; position < static_cast<int>(rows); position += rows_per_pass) {
          const std::int32_t row = block_rows[position];
          const GradientPair pair = context.pairs[row];
          int row_bins[kFeaturesPerThread];
          for (int j = 0; j < kFeaturesPerThread; ++j) {
            const int feature = j < features_here ? first_feature + j : first_feature;
            row_bins[j] = BinOf(bins, stride, row, feature);
          }
          add_row(row, pair, row_bins);
        }
      }
    } else {
      // More features than threads (narrow ones): items (row, feature) in turn.
      const int items = static_cast<int>(rows) * group_features;
      for (int at = static_cast<int>(threadIdx.x); at < items; at += blockDim.x) {
        const int position = at / group_features;
        const int feature = first + (at - position * group_features);
        add(block_rows[position], feature, static_cast<int>(offsets[feature] - base));
      }
    }
    __syncthreads();
    Word* out = split.smaller + 2 * base;
    for (int cell = threadIdx.x; cell < cells; cell += blockDim.x) {
      const std::uint32_t* at = words + 4 * cell;
      if (at[1] == 0) continue;
      const long long gradient = static_cast<std::int32_t>(at[0]);
      atomicAdd(&out[2 * cell], static_cast<Word>(gradient * (1ll << 32) + at[1]));
      atomicAdd(&out[2 * cell + 1], static_cast<Word>(at[2]) + (static_cast<Word>(at[3]) << 16));
    }
    __syncthreads();  // the shared cells are zeroed for the next item
  }
}

// The same for features too wide for shared memory (16-bit bins): straight into the histogram
// with 64-bit global atomics, in chunks of kWideRows rows.
template <typename Bin>
__global__ void WideHistogramKernel(GrowContext context, const Bin* bins) {
  const GrowState& state = *context.state;
  const int count = state.batch_count;
  if (count == 0) return;  // a batch queued after the tree is complete
  const int chunks = state.wide_chunks;
  const int stride = context.bins.stride;
  const std::int64_t* offsets = context.groups.offsets;
  const int first = context.groups.global[2 * blockIdx.y];
  const int last = context.groups.global[2 * blockIdx.y + 1];
  const int group_features = last - first;
  for (int item = blockIdx.x; item < chunks; item += gridDim.x) {
    const int s = SplitOfItem(context.wide_prefix, count, item);
    const BatchSplit& split = context.batch[s];
    std::int64_t begin = 0;
    std::int64_t child_rows = 0;
    SmallerChild(split, begin, child_rows);
    const std::int64_t first_row = std::int64_t(item - context.wide_prefix[s]) * kWideRows;
    const std::int64_t rows =
        kWideRows < child_rows - first_row ? kWideRows : child_rows - first_row;
    const std::int64_t items = rows * group_features;
    for (std::int64_t at = threadIdx.x; at < items; at += blockDim.x) {
      const std::int64_t position = at / group_features;
      const int feature = first + static_cast<int>(at - position * group_features);
      const std::int32_t row =
          (split.partition ? context.spare : context.order)[begin + first_row + position];
      const GradientPair pair = context.pairs[row];
      const std::int64_t cell = offsets[feature] + BinOf(bins, stride, row, feature);
      atomicAdd(&split.smaller[2 * cell],
                static_cast<Word>(static_cast<long long>(pair.gradient) * (1ll << 32) + 1));
      atomicAdd(&split.smaller[2 * cell + 1], static_cast<Word>(pair.hessian));
    }
  }
}

// Whether a row goes left at a split (the CPU's Partition rule).
template <typename Bin>
__device__ inline bool GoesLeft(const Bin* bins, int stride, const SplitRule& rule,
                                std::int32_t row) {
  const int bin = BinOf(bins, stride, row, rule.feature);
  if (rule.categorical) {
    return bin < kMaxCategoryBins && ((rule.bitset[bin / 32] >> (bin % 32)) & 1u);
  }
  return bin == rule.missing_bin ? rule.default_left : bin <= rule.threshold_bin;
}

// The batch's rows go to spare: a split's left ones from begin, right ones from begin + lefts.
// A work item is kPartitionRows positions of one split, kRowsPerThread per thread (their loads
// all in flight before any is needed); it takes its slots with one atomic per side (the warps'
// counts scanned in shared memory): the root of a large problem otherwise queues every warp of
// the grid on the same two counters. Within a side the order is not kept (nothing downstream
// depends on the order of a leaf's rows: every sum is an integer).
template <typename Bin>
__global__ void PartitionKernel(GrowContext context, const Bin* bins) {
  const int count = context.state->batch_count;
  if (count == 0) return;  // a batch queued after the tree is complete
  const int chunks = context.state->partition_chunks;
  constexpr int kWarps = kThreads / 32;
  __shared__ unsigned warp_lefts[kWarps];
  __shared__ unsigned warp_rights[kWarps];
  __shared__ unsigned long long bases[2];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const unsigned below = (1u << lane) - 1u;
  for (int item = blockIdx.x; item < chunks; item += gridDim.x) {
    const int s = SplitOfItem(context.partition_prefix, count, item);
    const BatchSplit& split = context.batch[s];
    const std::int64_t start =
        split.begin + std::int64_t(item - context.partition_prefix[s]) * kPartitionRows;
    std::int32_t row[kRowsPerThread];
    bool present[kRowsPerThread];
    bool left[kRowsPerThread];
    for (int k = 0; k < kRowsPerThread; ++k) {
      const std::int64_t position = start + k * kThreads + threadIdx.x;
      present[k] = position < split.end;
      row[k] = present[k] ? context.order[position] : 0;
    }
    for (int k = 0; k < kRowsPerThread; ++k) {
      left[k] = present[k] && GoesLeft(bins, context.bins.stride, split.rule, row[k]);
    }
    unsigned lefts[kRowsPerThread];
    unsigned rights[kRowsPerThread];
    unsigned warp_left = 0;
    unsigned warp_right = 0;
    for (int k = 0; k < kRowsPerThread; ++k) {
      lefts[k] = __ballot_sync(0xffffffffu, left[k]);
      rights[k] = __ballot_sync(0xffffffffu, present[k] && !left[k]);
      warp_left += __popc(lefts[k]);
      warp_right += __popc(rights[k]);
    }
    if (lane == 0) {
      warp_lefts[warp] = warp_left;
      warp_rights[warp] = warp_right;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned left_total = 0;
      unsigned right_total = 0;
      for (int at = 0; at < kWarps; ++at) {
        const unsigned warp_left_count = warp_lefts[at];
        const unsigned warp_right_count = warp_rights[at];
        warp_lefts[at] = left_total;
        warp_rights[at] = right_total;
        left_total += warp_left_count;
        right_total += warp_right_count;
      }
      bases[0] = left_total != 0 ? atomicAdd(&context.cursors[2 * s], left_total) : 0;
      bases[1] = right_total != 0 ? atomicAdd(&context.cursors[2 * s + 1], right_total) : 0;
    }
    __syncthreads();
    std::int64_t next_left = std::int64_t(bases[0] + warp_lefts[warp]);
    std::int64_t next_right = std::int64_t(bases[1] + warp_rights[warp]);
    for (int k = 0; k < kRowsPerThread; ++k) {
      if (left[k]) {
        context.spare[next_left + __popc(lefts[k] & below)] = row[k];
      } else if (present[k]) {
        context.spare[next_right + __popc(rights[k] & below)] = row[k];
      }
      next_left += __popc(lefts[k]);
      next_right += __popc(rights[k]);
    }
    __syncthreads();  // the shared counts are rewritten by the next item
  }
}

// After the histograms: each partitioned range goes back from spare to the row order, and
// each split's parent histogram becomes its larger child's (larger -= smaller).
__global__ void FinishKernel(GrowContext context) {
  const int count = context.state->batch_count;
  if (count == 0) return;  // a batch queued after the tree is complete
  const int chunks = context.state->partition_chunks;
  for (int item = blockIdx.x; item < chunks; item += gridDim.x) {
    const int s = SplitOfItem(context.partition_prefix, count, item);
    const BatchSplit& split = context.batch[s];
    const std::int64_t start =
        split.begin + std::int64_t(item - context.partition_prefix[s]) * kPartitionRows;
    for (int k = 0; k < kRowsPerThread; ++k) {
      const std::int64_t at = start + k * kThreads + threadIdx.x;
      if (at < split.end) context.order[at] = context.spare[at];
    }
  }
  const std::int64_t words = 2 * context.groups.total_bins;
  const std::int64_t items = words * count;
  for (std::int64_t item = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; item < items;
       item += std::int64_t(gridDim.x) * blockDim.x) {
    const BatchSplit& split = context.batch[item / words];
    if (split.larger == nullptr) continue;
    const std::int64_t at = item % words;
    split.larger[at] -= split.smaller[at];
  }
}

// The root's sums: every row is in one bin of feature 0, so that feature's cells sum to them.
__global__ void RootTotalKernel(GrowContext context) {
  const long long* cells = reinterpret_cast<const long long*>(HistogramOf(context, 0));
  long long packed = 0;
  long long hessian = 0;
  for (int bin = threadIdx.x; bin < context.num_bins[0]; bin += 32) {
    packed += cells[2 * bin];
    hessian += cells[2 * bin + 1];
  }
  for (int shift = 16; shift > 0; shift >>= 1) {
    packed += __shfl_down_sync(0xffffffffu, packed, shift);
    hessian += __shfl_down_sync(0xffffffffu, hessian, shift);
  }
  if (threadIdx.x == 0) {
    context.leaves[0].total_packed = packed;
    context.leaves[0].total_hessian = hessian;
  }
}

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
  GrowLeaf& leaf = context.leaves[context.scan_ids[at]];
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

// A leaf record with no split yet.
__device__ inline void OpenLeaf(GrowLeaf& leaf, long long begin, long long end, long long packed,
                                long long hessian, int depth, int slot,
                                unsigned long long node_key) {
  leaf.begin = begin;
  leaf.end = end;
  leaf.total_packed = packed;
  leaf.total_hessian = hessian;
  leaf.node_key = node_key;
  leaf.gain = -INFINITY;
  leaf.left_packed = 0;
  leaf.left_hessian = 0;
  leaf.depth = depth;
  leaf.slot = slot;
  leaf.left = -1;
  leaf.right = -1;
  leaf.feature = -1;
  leaf.categorical = 0;
  leaf.default_left = 0;
  leaf.threshold_bin = 0;
  for (int word = 0; word < kBitsetWords; ++word) leaf.bitset[word] = 0;
}

// Work items of a split for the batch kernels.
struct SplitItems {
  int partition;
  int histogram;
  int wide;
};

__device__ inline SplitItems SplitWork(const GrowContext& context, const BatchSplit& split,
                                       int at) {
  std::int64_t begin = 0;
  std::int64_t rows = 0;
  SmallerChild(split, begin, rows);
  const std::int64_t spread = (rows + context.max_blocks - 1) / context.max_blocks;
  const std::int64_t chunk_rows = spread < kMinRowsPerBlock
                                      ? kMinRowsPerBlock
                                      : (spread > kRowsPerBlock ? kRowsPerBlock : spread);
  context.histogram_rows[at] = chunk_rows;
  SplitItems items;
  items.partition =
      split.partition
          ? static_cast<int>((split.end - split.begin + kPartitionRows - 1) / kPartitionRows)
          : 0;
  items.histogram = static_cast<int>((rows + chunk_rows - 1) / chunk_rows);
  items.wide = static_cast<int>((rows + kWideRows - 1) / kWideRows);
  return items;
}

__device__ inline unsigned long long PackItems(const SplitItems& items) {
  return static_cast<unsigned long long>(items.partition) |
         (static_cast<unsigned long long>(items.histogram) << 22) |
         (static_cast<unsigned long long>(items.wide) << 43);
}
__device__ inline SplitItems UnpackItems(unsigned long long packed) {
  return {static_cast<int>(packed & ((1ull << 22) - 1)),
          static_cast<int>((packed >> 22) & ((1ull << 21) - 1)), static_cast<int>(packed >> 43)};
}

// Each split's first work item (prefix[at]) and the batch's totals (prefix[count]).
__device__ inline void SetWork(const GrowContext& context, int at, const SplitItems& first) {
  context.partition_prefix[at] = first.partition;
  context.histogram_prefix[at] = first.histogram;
  context.wide_prefix[at] = first.wide;
}
__device__ inline void SetWorkTotals(const GrowContext& context, int count,
                                     const SplitItems& total) {
  SetWork(context, count, total);
  GrowState& state = *context.state;
  state.partition_chunks = total.partition;
  state.histogram_chunks = total.histogram;
  state.wide_chunks = total.wide;
}

// Tells the host whether the tree is complete and how many selections have run (`counted`: this
// one ran a real batch's selection; those queued after the tree is complete do not count): both
// words in one 64-bit store, so the host never sees one without the other.
__device__ inline void PostStatus(const GrowContext& context, bool counted = true) {
  GrowState& state = *context.state;
  if (counted) state.selections += 1;
  const unsigned long long word =
      static_cast<unsigned int>(state.done) |
      (static_cast<unsigned long long>(static_cast<unsigned int>(state.selections)) << 32);
  *reinterpret_cast<volatile unsigned long long*>(context.host) = word;
}

__global__ void RootKernel(GrowContext context, long long count, unsigned long long seed) {
  GrowState& state = *context.state;
  state.nodes_made = 1;  // the root took key 0
  state.seed = seed;
  state.count = count;
  state.tree_leaves = 1;
  state.device_leaves = 1;
  state.slots_used = 1;
  state.batch_count = 1;
  state.scan_count = 1;
  state.done = 0;
  state.error = 0;
  state.selections = 0;
  state.scans_finished = 0;
  OpenLeaf(context.leaves[0], 0, count, 0, 0, 0, 0, 0);
  context.tree_to_device[0] = 0;
  context.scan_ids[0] = 0;
  BatchSplit root{};
  root.begin = 0;
  root.end = count;
  root.lefts = count;
  root.smaller = HistogramOf(context, 0);
  root.larger = nullptr;
  root.smaller_is_left = 1;
  root.partition = 0;
  context.batch[0] = root;
  const SplitItems items = SplitWork(context, root, 0);
  SetWork(context, 0, SplitItems{0, 0, 0});
  SetWorkTotals(context, 1, items);
  context.cursors[0] = 0;
  context.cursors[1] = static_cast<unsigned long long>(count);
}

// The selection's view of one tree leaf, in shared memory: the gain of its device leaf's best
// split (-inf: none) and, once that leaf is split, its children and their gains (children of
// a split not yet in the tree have no children of their own).
struct TreeLeafView {
  double gain;
  double left_gain;
  double right_gain;
  int id;
  int left;
  int right;
};

// The selection's shared memory (the views, the batch's parents, a block scan's storage and a few
// words) fits the 48 KB every GPU gives a block without opting in.
static_assert(sizeof(TreeLeafView) * kMaxLeaves + sizeof(int) * kMaxLeaves + 2048 <= 48 * 1024,
              "the selection's shared memory");

// Reads of leaf records in the selection go through L2 (__ldcg): the scans of other blocks of
// the same launch wrote them.
__device__ inline double SplitGainOf(const GrowLeaf* leaf) {
  return __ldcg(&leaf->feature) >= 0 ? __ldcg(&leaf->gain) : -INFINITY;
}

__device__ inline GrowLeaf LoadLeaf(const GrowLeaf* leaf) {
  static_assert(sizeof(GrowLeaf) % 8 == 0, "a leaf record is whole 64-bit words");
  GrowLeaf copy;
  const unsigned long long* from = reinterpret_cast<const unsigned long long*>(leaf);
  unsigned long long* to = reinterpret_cast<unsigned long long*>(&copy);
  for (int word = 0; word < int(sizeof(GrowLeaf) / 8); ++word) to[word] = __ldcg(from + word);
  return copy;
}

// After a batch: checks its partitions, replays the best-first choices the CPU loop makes
// (ChooseLeaf, then commit) as far as the splits made so far allow, and either marks the tree
// complete or writes the next batch: the leaf chosen next, and (ahead) every other leaf that
// may split, best first, up to the splits left to make. The replay runs on a copy of the tree
// leaves in shared memory (dynamic: a TreeLeafView per leaf).
__device__ void Select(const GrowContext& context) {
  extern __shared__ TreeLeafView views[];
  __shared__ int parents[kMaxLeaves];  // the batch's splits: the device leaves they split
  __shared__ int chosen_leaf;
  __shared__ int batch_size;
  __shared__ int tree_leaves;
  __shared__ int bad_partition;
  GrowState& state = *context.state;
  const int lane = threadIdx.x % 32;
  if (state.done) {
    if (threadIdx.x == 0) PostStatus(context, false);
    return;
  }
  if (threadIdx.x == 0) bad_partition = 0;
  __syncthreads();
  for (int s = threadIdx.x; s < state.batch_count; s += blockDim.x) {
    const BatchSplit& split = context.batch[s];
    if (split.partition &&
        (context.cursors[2 * s] != static_cast<unsigned long long>(split.begin + split.lefts) ||
         context.cursors[2 * s + 1] != static_cast<unsigned long long>(split.end))) {
      bad_partition = 1;
    }
  }
  const int start_leaves = state.tree_leaves;
  for (int leaf = threadIdx.x; leaf < start_leaves; leaf += blockDim.x) {
    TreeLeafView view;
    view.id = context.tree_to_device[leaf];
    const GrowLeaf* record = context.leaves + view.id;
    view.gain = SplitGainOf(record);
    view.left = __ldcg(&record->left);
    view.right = __ldcg(&record->right);
    view.left_gain = view.left >= 0 ? SplitGainOf(context.leaves + view.left) : -INFINITY;
    view.right_gain = view.right >= 0 ? SplitGainOf(context.leaves + view.right) : -INFINITY;
    views[leaf] = view;
  }
  __syncthreads();
  const bool failed = bad_partition != 0;
  if (threadIdx.x == 0 && failed) state.error = kGrowBadPartition;
  if (threadIdx.x < 32) {
    int leaves = start_leaves;
    int chosen = -1;
    while (!failed && leaves < context.num_leaves) {
      double best_gain = -INFINITY;
      int best = -1;
      for (int leaf = lane; leaf < leaves; leaf += 32) {
        const double gain = views[leaf].gain;
        if (gain > -INFINITY && (best < 0 || gain > best_gain)) {
          best_gain = gain;
          best = leaf;
        }
      }
      for (int shift = 16; shift > 0; shift >>= 1) {
        const double other_gain = __shfl_down_sync(0xffffffffu, best_gain, shift);
        const int other = __shfl_down_sync(0xffffffffu, best, shift);
        if (other >= 0 &&
            (best < 0 || other_gain > best_gain || (other_gain == best_gain && other < best))) {
          best_gain = other_gain;
          best = other;
        }
      }
      chosen = __shfl_sync(0xffffffffu, best, 0);
      if (chosen < 0) break;
      if (views[chosen].left < 0) break;  // not split yet: the next batch splits it
      __syncwarp();
      if (lane == 0) {
        const TreeLeafView parent = views[chosen];
        TreeLeafView left_view{parent.left_gain, -INFINITY, -INFINITY, parent.left, -1, -1};
        TreeLeafView right_view{parent.right_gain, -INFINITY, -INFINITY, parent.right, -1, -1};
        views[chosen] = left_view;
        views[leaves] = right_view;
      }
      __syncwarp();
      ++leaves;
      chosen = -1;
    }
    if (lane == 0) {
      chosen_leaf = failed ? -1 : chosen;
      tree_leaves = leaves;
      state.tree_leaves = leaves;
      state.nodes_made += 2 * static_cast<unsigned long long>(leaves - start_leaves);
    }
  }
  __syncthreads();
  const int chosen = chosen_leaf;
  const int leaves = tree_leaves;
  for (int leaf = threadIdx.x; leaf < leaves; leaf += blockDim.x) {
    context.tree_to_device[leaf] = views[leaf].id;
  }
  using Scan = cub::BlockScan<unsigned long long, kSelectThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  if (chosen < 0) {
    // The tree leaves' ranges and a work list over their rows (chunks of kLeafChunk
    // positions: leaf_prefix[l] is leaf l's first) for the leaf values and score updates.
    unsigned long long leaf_chunks[kSplitsPerThread];
    for (int k = 0; k < kSplitsPerThread; ++k) {
      const int leaf = static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
      leaf_chunks[k] = 0;
      if (leaf >= leaves) continue;
      const GrowLeaf* record = context.leaves + views[leaf].id;
      const long long begin = __ldcg(&record->begin);
      const long long end = __ldcg(&record->end);
      context.tree_ranges[2 * leaf] = begin;
      context.tree_ranges[2 * leaf + 1] = end;
      context.leaf_sums[leaf] = 0;
      leaf_chunks[k] = static_cast<unsigned long long>((end - begin + kLeafChunk - 1) / kLeafChunk);
    }
    unsigned long long total_chunks = 0;
    Scan(scan_storage).ExclusiveSum(leaf_chunks, leaf_chunks, total_chunks);
    for (int k = 0; k < kSplitsPerThread; ++k) {
      const int leaf = static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
      if (leaf < leaves) context.leaf_prefix[leaf] = static_cast<int>(leaf_chunks[k]);
    }
    if (threadIdx.x == 0) {
      context.leaf_prefix[leaves] = static_cast<int>(total_chunks);
      state.done = 1;
      state.batch_count = 0;
      state.scan_count = 0;
      state.partition_chunks = 0;
      state.histogram_chunks = 0;
      state.wide_chunks = 0;
      PostStatus(context);
    }
    return;
  }
  // The batch: the chosen leaf first, then (ahead) the others by gain, ties to the lower leaf.
  if (threadIdx.x == 0) {
    batch_size = 1;
    parents[0] = views[chosen].id;
  }
  if (context.ahead) {
    // Each leaf's gain if it may join the batch (-inf if not), in the views' left_gain (the
    // replay is done with it), then its rank among those: best first, ties to the lower leaf.
    for (int leaf = threadIdx.x; leaf < leaves; leaf += blockDim.x) {
      TreeLeafView& view = views[leaf];
      view.left_gain = leaf != chosen && view.left < 0 ? view.gain : -INFINITY;
    }
    __syncthreads();
    const int room = context.num_leaves - leaves - 1;
    for (int leaf = threadIdx.x; leaf < leaves; leaf += blockDim.x) {
      const double gain = views[leaf].left_gain;
      if (!(gain > -INFINITY)) continue;
      int rank = 0;
#pragma unroll 8
      for (int other = 0; other < leaves; ++other) {
        const double rival = views[other].left_gain;
        rank += rival > gain || (rival == gain && other < leaf);
      }
      if (rank < room) {
        parents[1 + rank] = views[leaf].id;
        atomicAdd(&batch_size, 1);
      }
    }
  }
  __syncthreads();
  const int count = batch_size;
  if (state.slots_used + count > context.slots ||
      state.device_leaves + 2 * count > context.leaf_capacity) {
    if (threadIdx.x == 0) {
      state.error = kGrowOutOfSlots;
      context.leaf_prefix[leaves] = 0;  // no leaf work: the host reports the error
      state.done = 1;
      state.batch_count = 0;
      state.scan_count = 0;
      SetWorkTotals(context, 0, SplitItems{0, 0, 0});
      PostStatus(context);
    }
    return;
  }
  const int first_leaf = state.device_leaves;
  const int first_slot = state.slots_used;
  const unsigned long long nodes = state.nodes_made;
  // Thread t makes splits [t * kSplitsPerThread, (t + 1) * kSplitsPerThread): blocked, so the
  // block's prefix sums give each split its first work items in split order.
  // Work items packed as partition | histogram << 22 | wide << 43 (each total stays below its
  // field: rows are int32 indices), so one block scan serves all three.
  unsigned long long packed_items[kSplitsPerThread];
  for (int k = 0; k < kSplitsPerThread; ++k) {
    const int at = static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
    packed_items[k] = 0;
    if (at >= count) continue;
    const int id = parents[at];
    const GrowLeaf parent = LoadLeaf(context.leaves + id);
    const long long lefts = CellCount(parent.left_packed);
    const long long rights = parent.end - parent.begin - lefts;
    const int left = first_leaf + 2 * at;
    const int right = left + 1;
    const bool left_smaller = lefts <= rights;
    const int fresh = first_slot + at;
    const unsigned long long left_key = context.ahead ? 0 : nodes;
    const unsigned long long right_key = context.ahead ? 0 : nodes + 1;
    OpenLeaf(context.leaves[left], parent.begin, parent.begin + lefts, parent.left_packed,
             parent.left_hessian, parent.depth + 1, left_smaller ? fresh : parent.slot, left_key);
    OpenLeaf(context.leaves[right], parent.begin + lefts, parent.end,
             parent.total_packed - parent.left_packed, parent.total_hessian - parent.left_hessian,
             parent.depth + 1, left_smaller ? parent.slot : fresh, right_key);
    BatchSplit split{};
    split.begin = parent.begin;
    split.end = parent.end;
    split.lefts = lefts;
    split.rule.feature = parent.feature;
    split.rule.threshold_bin = parent.threshold_bin;
    split.rule.missing_bin = context.missing_bins[parent.feature];
    split.rule.default_left = parent.default_left != 0;
    split.rule.categorical = parent.categorical != 0;
    for (int word = 0; word < kBitsetWords; ++word) split.rule.bitset[word] = parent.bitset[word];
    split.smaller = HistogramOf(context, fresh);
    split.larger = HistogramOf(context, parent.slot);
    split.smaller_is_left = left_smaller ? 1 : 0;
    split.partition = 1;
    context.batch[at] = split;
    context.cursors[2 * at] = static_cast<unsigned long long>(split.begin);
    context.cursors[2 * at + 1] = static_cast<unsigned long long>(split.begin + split.lefts);
    context.leaves[id].left = left;
    context.leaves[id].right = right;
    context.scan_ids[2 * at] = left;
    context.scan_ids[2 * at + 1] = right;
    const SplitItems items = SplitWork(context, split, at);
    packed_items[k] = PackItems(items);
  }
  unsigned long long packed_total = 0;
  Scan(scan_storage).ExclusiveSum(packed_items, packed_items, packed_total);
  for (int k = 0; k < kSplitsPerThread; ++k) {
    const int at = static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
    if (at < count) SetWork(context, at, UnpackItems(packed_items[k]));
  }
  const SplitItems total = UnpackItems(packed_total);
  if (threadIdx.x == 0) {
    SetWorkTotals(context, count, total);
    state.device_leaves = first_leaf + 2 * count;
    state.slots_used = first_slot + count;
    state.batch_count = count;
    state.scan_count = 2 * count;
    PostStatus(context);
  }
}

// The batch's leaves' best splits, then, in the last block to finish, the selection. Work
// items are (leaf, feature, chunk of kScanChunk thresholds), one per warp: a batch of a few
// leaves still spreads over the whole device. The last warp to finish a leaf's items reduces
// them to the leaf's best split.
__global__ void __launch_bounds__(kThreads) ScanSelectKernel(GrowContext context) {
  __shared__ bool last_block;
  GrowState& state = *context.state;
  const int per_leaf = context.num_features * context.scan_chunks;
  const long long items = static_cast<long long>(state.scan_count) * per_leaf;
  const int lane = threadIdx.x % 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  for (long long item = static_cast<long long>(blockIdx.x) * warps + threadIdx.x / 32; item < items;
       item += static_cast<long long>(gridDim.x) * warps) {
    const int at = static_cast<int>(item / per_leaf);
    const int rest = static_cast<int>(item - static_cast<long long>(at) * per_leaf);
    const int feature = rest / context.scan_chunks;
    const int chunk = rest - feature * context.scan_chunks;
    FeatureSplit* leaf_candidates = context.candidates + static_cast<long long>(at) * per_leaf;
    ScanItem(context, at, feature, chunk, leaf_candidates + rest);
    bool last_item = false;
    if (lane == 0) {
      __threadfence();  // the candidate before the count
      last_item = atomicAdd(&context.leaf_scans[at], 1u) == static_cast<unsigned>(per_leaf - 1);
    }
    last_item = __shfl_sync(0xffffffffu, last_item, 0);
    if (last_item) {
      __threadfence();
      __syncwarp();  // the whole warp reads the candidates after lane 0 saw the count
      ReduceLeaf(context, at, leaf_candidates, per_leaf);
      if (lane == 0) context.leaf_scans[at] = 0;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();  // this block's records before its count
    last_block = atomicAdd(&state.scans_finished, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  if (threadIdx.x == 0) state.scans_finished = 0;
  Select(context);
}

// The tree leaves' sums of their rows' exact gradients in fixed point at the CPU grower's
// scale: work items are chunks of kLeafChunk positions of one leaf (leaf_prefix), each adding
// its integer sum to the leaf's.
__global__ void LeafSumKernel(GrowContext context, const float* gradients) {
  const GrowState& state = *context.state;
  const int leaves = state.tree_leaves;
  const int chunks = context.leaf_prefix[leaves];
  const double fixed = FixedPointScale(context.scales->max_abs_gradient, state.count);
  using Reduce = cub::BlockReduce<long long, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  for (int item = blockIdx.x; item < chunks; item += gridDim.x) {
    const int leaf = SplitOfItem(context.leaf_prefix, leaves, item);
    const std::int64_t begin =
        context.tree_ranges[2 * leaf] + std::int64_t(item - context.leaf_prefix[leaf]) * kLeafChunk;
    const std::int64_t end = begin + kLeafChunk < context.tree_ranges[2 * leaf + 1]
                                 ? begin + kLeafChunk
                                 : context.tree_ranges[2 * leaf + 1];
    long long sum = 0;
    for (std::int64_t at = begin + threadIdx.x; at < end; at += blockDim.x) {
      sum += RoundToInteger(double(gradients[context.order[at]]) * fixed);
    }
    const long long total = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) {
      atomicAdd(reinterpret_cast<unsigned long long*>(&context.leaf_sums[leaf]),
                static_cast<unsigned long long>(total));
    }
    __syncthreads();  // the reduction's storage is reused by the next item
  }
}

// values[l] = tree leaf l's value from its sums.
__global__ void LeafValueKernel(GrowContext context, double* values) {
  const GrowState& state = *context.state;
  const double fixed = FixedPointScale(context.scales->max_abs_gradient, state.count);
  for (int leaf = blockIdx.x * blockDim.x + threadIdx.x; leaf < state.tree_leaves;
       leaf += gridDim.x * blockDim.x) {
    const GrowLeaf& record = context.leaves[context.tree_to_device[leaf]];
    values[leaf] =
        LeafValue(double(context.leaf_sums[leaf]) / fixed,
                  double(record.total_hessian) * context.scales->hessian_scale, context.scan.reg);
  }
}

__global__ void SequenceKernel(std::int32_t* out, std::int64_t count) {
  for (std::int64_t at = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; at < count;
       at += std::int64_t(gridDim.x) * blockDim.x) {
    out[at] = static_cast<std::int32_t>(at);
  }
}

// The kernels after the partition: histograms, the copy back and subtraction (or the root's
// sums), the scans and the selection.
void EnqueueHistogramsAndSelection(const GrowContext& context, bool root, cudaStream_t stream) {
  const HistogramGroups& groups = context.groups;
  const DeviceBins& bins = context.bins;
  if (groups.shared_count > 0) {
    const dim3 grid(static_cast<unsigned>(context.max_blocks),
                    static_cast<unsigned>(groups.shared_count));
    const std::size_t bytes =
        4 * sizeof(std::uint32_t) * static_cast<std::size_t>(groups.shared_cells);
    if (bins.bins16 != nullptr) {
      HistogramKernel<std::uint16_t><<<grid, kThreads, bytes, stream>>>(context, bins.bins16);
    } else {
      HistogramKernel<std::uint8_t><<<grid, kThreads, bytes, stream>>>(context, bins.bins8);
    }
    CheckLaunch("HistogramKernel");
  }
  if (groups.global_count > 0) {
    const dim3 grid(static_cast<unsigned>(context.max_blocks),
                    static_cast<unsigned>(groups.global_count));
    if (bins.bins16 != nullptr) {
      WideHistogramKernel<std::uint16_t><<<grid, kThreads, 0, stream>>>(context, bins.bins16);
    } else {
      WideHistogramKernel<std::uint8_t><<<grid, kThreads, 0, stream>>>(context, bins.bins8);
    }
    CheckLaunch("WideHistogramKernel");
  }
  if (root) {
    RootTotalKernel<<<1, 32, 0, stream>>>(context);
    CheckLaunch("RootTotalKernel");
  } else {
    FinishKernel<<<static_cast<unsigned>(context.max_blocks), kThreads, 0, stream>>>(context);
    CheckLaunch("FinishKernel");
  }
  const std::size_t select_bytes =
      static_cast<std::size_t>(context.num_leaves) * sizeof(TreeLeafView);
  ScanSelectKernel<<<static_cast<unsigned>(context.scan_blocks), kSelectThreads, select_bytes,
                     stream>>>(context);
  CheckLaunch("ScanSelectKernel");
}

}  // namespace

void CheckLaunch(const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) device::ThrowCudaError(error, kernel, __FILE__, __LINE__);
}

void EnqueueRoot(const GrowContext& context, std::int64_t count, std::uint64_t seed,
                 Stream stream) {
  RootKernel<<<1, 1, 0, stream>>>(context, count, seed);
  CheckLaunch("RootKernel");
  EnqueueHistogramsAndSelection(context, true, stream);
}

void EnqueueBatch(const GrowContext& context, Stream stream) {
  const DeviceBins& bins = context.bins;
  const unsigned blocks = static_cast<unsigned>(context.max_blocks);
  if (bins.bins16 != nullptr) {
    PartitionKernel<std::uint16_t><<<blocks, kThreads, 0, stream>>>(context, bins.bins16);
  } else {
    PartitionKernel<std::uint8_t><<<blocks, kThreads, 0, stream>>>(context, bins.bins8);
  }
  CheckLaunch("PartitionKernel");
  EnqueueHistogramsAndSelection(context, false, stream);
}

void EnqueueLeafValues(const GrowContext& context, const float* exact_gradients, double* values,
                       Stream stream) {
  LeafSumKernel<<<static_cast<unsigned>(context.max_blocks), kThreads, 0, stream>>>(
      context, exact_gradients);
  CheckLaunch("LeafSumKernel");
  LeafValueKernel<<<static_cast<unsigned>((context.num_leaves + kThreads - 1) / kThreads), kThreads,
                    0, stream>>>(context, values);
  CheckLaunch("LeafValueKernel");
}

void FillSequence(std::int32_t* order, std::int64_t count, Stream stream) {
  SequenceKernel<<<GridFor(count, 4), kThreads, 0, stream>>>(order, count);
  CheckLaunch("SequenceKernel");
}

}  // namespace tabforge::tree::kernels
