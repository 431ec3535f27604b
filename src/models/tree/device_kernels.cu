// The CUDA grower's kernels: histograms as integer sums with shared-memory atomics (so the
// order of addition cannot matter), split scans with the CPU's formulas (split_math.h) and its
// tie order (lowest missing side, then lowest threshold; features are compared on the host in
// order), partitions, leaf sums in fixed point; a batch of leaf splits takes a few launches.
#include <algorithm>
#include <cub/cub.cuh>

#include "core/portable_math.h"
#include "device/cuda_check.h"
#include "models/tree/device_kernels.h"

namespace tabforge::tree::kernels {
namespace {

constexpr int kThreads = 256;
// Rows one shared-memory histogram block sums: its 32-bit cells hold |gradient| <= 32767 times
// this, and 16-bit hessian halves times this, exactly.
constexpr std::int64_t kRowsPerBlock = 32768;
// Fewest rows a shared-memory histogram block takes (below it, zeroing and flushing dominate).
constexpr std::int64_t kMinRowsPerBlock = 2048;

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

// Histogram of split blockIdx.z's smaller child for the features of group g = blockIdx.y:
// [groups[2g], groups[2g + 1]), summed in shared memory. Block x takes a contiguous run of at
// most kRowsPerBlock rows, so its per-cell sums fit 32-bit words: the quantized gradient sum,
// the count, and the fixed-point hessian as two 16-bit halves (32-bit shared atomics are native;
// 64-bit ones are compare-and-swap loops). The nonzero cells are then added, in 64 bits, to the
// histogram: integer sums, so the order of addition cannot matter.
template <typename Bin>
__global__ void HistogramKernel(const Bin* bins, int stride, const std::int32_t* order,
                                const BatchSplit* splits, const GradientPair* pairs,
                                const int* groups, const std::int64_t* offsets) {
  extern __shared__ std::uint32_t words[];
  const BatchSplit& split = splits[blockIdx.z];
  std::int64_t begin = 0;
  std::int64_t count = 0;
  SmallerChild(split, begin, count);
  // A small leaf takes only the blocks it fills (a block costs a shared-memory zeroing and
  // flush), a large one spreads over the grid.
  std::int64_t rows_per_block = (count + gridDim.x - 1) / gridDim.x;
  if (rows_per_block < kMinRowsPerBlock) rows_per_block = kMinRowsPerBlock;
  const std::int64_t first_row = blockIdx.x * rows_per_block;
  if (first_row >= count) return;  // a small leaf: no rows for this block
  const std::int64_t rows = rows_per_block < count - first_row ? rows_per_block : count - first_row;
  const int first = groups[2 * blockIdx.y];
  const int last = groups[2 * blockIdx.y + 1];
  const int group_features = last - first;
  const std::int64_t base = offsets[first];
  const int cells = static_cast<int>(offsets[last] - base);
  for (int word = threadIdx.x; word < 4 * cells; word += blockDim.x) words[word] = 0;
  __syncthreads();
  const std::int32_t* block_rows = order + begin + first_row;
  auto add = [&](std::int32_t row, int feature, int cell_base) {
    const GradientPair pair = pairs[row];
    std::uint32_t* at = words + 4 * (cell_base + BinOf(bins, stride, row, feature));
    atomicAdd(at, static_cast<std::uint32_t>(pair.gradient));
    atomicAdd(at + 1, 1u);
    atomicAdd(at + 2, pair.hessian & 0xffffu);
    atomicAdd(at + 3, pair.hessian >> 16);
  };
  if (group_features <= static_cast<int>(blockDim.x)) {
    // Thread t takes feature t % group_features of every (blockDim.x / group_features)-th
    // row: consecutive threads read one row's consecutive bins, and no division is left in
    // the loop.
    const int rows_per_pass = static_cast<int>(blockDim.x) / group_features;
    const int row_lane = static_cast<int>(threadIdx.x) / group_features;
    const int feature = first + static_cast<int>(threadIdx.x) % group_features;
    if (row_lane < rows_per_pass) {
      const int cell_base = static_cast<int>(offsets[feature] - base);
      for (int position = row_lane; position < static_cast<int>(rows); position += rows_per_pass) {
        add(block_rows[position], feature, cell_base);
      }
    }
  } else {
    // More features than threads (narrow ones): items (row, feature) in turn.
    const int items = static_cast<int>(rows) * group_features;
    for (int item = static_cast<int>(threadIdx.x); item < items; item += blockDim.x) {
      const int position = item / group_features;
      const int feature = first + (item - position * group_features);
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
}

// The same for features too wide for shared memory (16-bit bins): straight into the histogram
// with 64-bit global atomics, over a grid-stride loop.
template <typename Bin>
__global__ void WideHistogramKernel(const Bin* bins, int stride, const std::int32_t* order,
                                    const BatchSplit* splits, const GradientPair* pairs,
                                    const int* groups, const std::int64_t* offsets) {
  const BatchSplit& split = splits[blockIdx.z];
  std::int64_t begin = 0;
  std::int64_t count = 0;
  SmallerChild(split, begin, count);
  const int first = groups[2 * blockIdx.y];
  const int last = groups[2 * blockIdx.y + 1];
  const int group_features = last - first;
  const std::int64_t items = count * group_features;
  Word* target = split.smaller;
  for (std::int64_t item = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; item < items;
       item += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t position = item / group_features;
    const int feature = first + static_cast<int>(item - position * group_features);
    const std::int32_t row = order[begin + position];
    const GradientPair pair = pairs[row];
    const std::int64_t cell = offsets[feature] + BinOf(bins, stride, row, feature);
    atomicAdd(&target[2 * cell],
              static_cast<Word>(static_cast<long long>(pair.gradient) * (1ll << 32) + 1));
    atomicAdd(&target[2 * cell + 1], static_cast<Word>(pair.hessian));
  }
}

// Zeroes each split's smaller histogram and sets its partition cursors (left rows are written
// from begin, right rows from begin + lefts).
__global__ void PrepareKernel(const BatchSplit* splits, std::int64_t words,
                              unsigned long long* cursors) {
  const BatchSplit& split = splits[blockIdx.y];
  for (std::int64_t at = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; at < words;
       at += std::int64_t(gridDim.x) * blockDim.x) {
    split.smaller[at] = 0;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    cursors[2 * blockIdx.y] = static_cast<unsigned long long>(split.begin);
    cursors[2 * blockIdx.y + 1] = static_cast<unsigned long long>(split.begin + split.lefts);
  }
}

// larger -= smaller for each split with a parent histogram.
__global__ void SubtractBatchKernel(const BatchSplit* splits, std::int64_t words) {
  const BatchSplit& split = splits[blockIdx.y];
  if (split.larger == nullptr) return;
  for (std::int64_t at = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; at < words;
       at += std::int64_t(gridDim.x) * blockDim.x) {
    split.larger[at] -= split.smaller[at];
  }
}

// The gain of sending `left` left and the rest right, or -inf when the split breaks a limit.
__device__ inline double SplitGain(long long left_packed, long long left_hessian,
                                   long long total_packed, long long total_hessian, double parent,
                                   const ScanParams& params, const LeafRegularization& reg) {
  const long long left_count = CellCount(left_packed);
  if (left_count < params.min_data_in_leaf) return -INFINITY;
  if (CellCount(total_packed) - left_count < params.min_data_in_leaf) return -INFINITY;
  const long long right_packed = total_packed - left_packed;
  const double left_h = double(left_hessian) * params.hessian_scale;
  const double right_h = double(total_hessian - left_hessian) * params.hessian_scale;
  if (left_h < params.min_sum_hessian_in_leaf || right_h < params.min_sum_hessian_in_leaf) {
    return -INFINITY;
  }
  return LeafGain(double(CellGradient(left_packed)) * params.gradient_scale, left_h, reg) +
         LeafGain(double(CellGradient(right_packed)) * params.gradient_scale, right_h, reg) -
         parent;
}

// Serial categorical scan (as TreeGrower::ScanCategorical), by one thread.
__device__ void ScanCategoricalDevice(const long long* cells, int num_bins, long long total_packed,
                                      long long total_hessian, const ScanParams& params,
                                      Candidate& best) {
  int used[kMaxCategoryBins];
  int used_count = 0;
  for (int bin = 0; bin < num_bins; ++bin) {
    if (CellCount(cells[2 * bin]) > 0) used[used_count++] = bin;
  }
  if (used_count < 2) return;
  const double total_g = double(CellGradient(total_packed)) * params.gradient_scale;
  const double total_h = double(total_hessian) * params.hessian_scale;
  auto consider = [&](const int* side, int side_count, const LeafRegularization& reg) {
    long long left_packed = 0;
    long long left_hessian = 0;
    for (int at = 0; at < side_count; ++at) {
      left_packed += cells[2 * side[at]];
      left_hessian += cells[2 * side[at] + 1];
    }
    const double parent = LeafGain(total_g, total_h, reg);
    const double gain =
        SplitGain(left_packed, left_hessian, total_packed, total_hessian, parent, params, reg);
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
    const double score = double(CellGradient(cells[2 * bin])) * params.gradient_scale /
                         (double(cells[2 * bin + 1]) * params.hessian_scale + params.cat_smooth);
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

// One warp per (leaf, feature): the best split of that feature for that leaf.
__global__ void ScanKernel(const ScanLeaf* leaves, int num_features, const std::int64_t* offsets,
                           const int* num_bins, const std::uint8_t* categorical,
                           const std::uint8_t* tried, ScanParams params, Candidate* out) {
  const int task = blockIdx.x;
  const int at = task / num_features;
  const int feature = task % num_features;
  const int lane = threadIdx.x;
  Candidate best;
  best.gain = -INFINITY;
  best.feature = -1;
  best.categorical = 0;
  best.default_left = 0;
  best.threshold_bin = 0;
  best.left_packed = 0;
  best.left_hessian = 0;
  for (int word = 0; word < kBitsetWords; ++word) best.bitset[word] = 0;
  const int bins = num_bins[feature];
  const ScanLeaf leaf = leaves[at];
  const long long* cells =
      reinterpret_cast<const long long*>(leaf.histogram) + 2 * offsets[feature];
  const long long total_packed = leaf.total_packed;
  const long long total_hessian = leaf.total_hessian;
  if (!tried[at * num_features + feature] || bins < 2) {
    if (lane == 0) out[task] = best;
    return;
  }
  if (categorical[feature]) {
    if (lane == 0) {
      ScanCategoricalDevice(cells, bins, total_packed, total_hessian, params, best);
      if (best.gain > -INFINITY) best.feature = feature;
      out[task] = best;
    }
    return;
  }
  const double parent = LeafGain(double(CellGradient(total_packed)) * params.gradient_scale,
                                 double(total_hessian) * params.hessian_scale, params.reg);
  const long long missing_packed = cells[2 * (bins - 1)];
  const long long missing_hessian = cells[2 * (bins - 1) + 1];
  const bool has_missing = CellCount(missing_packed) > 0;
  const int only =
      params.extra_trees ? ExtraTreesThreshold(params.seed, leaf.node_key, feature, bins) : -1;
  // Each lane's best: gain, then order key (missing side, threshold) for ties.
  double lane_gain = -INFINITY;
  int lane_key = 0x7fffffff;
  long long lane_packed = 0;
  long long lane_hessian = 0;
  for (int missing_left = 0; missing_left < (has_missing ? 2 : 1); ++missing_left) {
    long long carry_packed = missing_left ? missing_packed : 0;
    long long carry_hessian = missing_left ? missing_hessian : 0;
    const int last = missing_left || !has_missing ? bins - 3 : bins - 2;
    for (int tile = 0; tile <= last; tile += 32) {
      const int threshold = tile + lane;
      long long packed = threshold <= last ? cells[2 * threshold] : 0;
      long long hessian = threshold <= last ? cells[2 * threshold + 1] : 0;
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
      if (threshold > last) continue;
      if (only >= 0 && threshold != (only < last ? only : last)) continue;
      const double gain = SplitGain(left_packed, left_hessian, total_packed, total_hessian, parent,
                                    params, params.reg);
      const int key = missing_left * 65536 + threshold;
      if (gain > -INFINITY && (gain > lane_gain || (gain == lane_gain && key < lane_key))) {
        lane_gain = gain;
        lane_key = key;
        lane_packed = left_packed;
        lane_hessian = left_hessian;
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
  if (lane == 0) {
    if (lane_gain > -INFINITY) {
      best.gain = lane_gain;
      best.feature = feature;
      best.default_left = lane_key >= 65536;
      best.threshold_bin = lane_key % 65536;
      best.left_packed = lane_packed;
      best.left_hessian = lane_hessian;
    }
    out[task] = best;
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

// Split blockIdx.y's rows go to spare: left ones from begin, right ones from begin + lefts.
// Each pass of a block over blockDim.x rows takes its slots with one atomic per side (the
// warps' counts scanned in shared memory), not one per warp: the root of a large problem
// otherwise queues every warp of the grid on the same two counters.
template <typename Bin>
__global__ void PartitionKernel(const Bin* bins, int stride, const BatchSplit* splits,
                                const std::int32_t* order, std::int32_t* spare,
                                unsigned long long* cursors) {
  const BatchSplit& split = splits[blockIdx.y];
  if (!split.partition) return;
  constexpr int kWarps = kThreads / 32;
  __shared__ unsigned warp_lefts[kWarps];
  __shared__ unsigned warp_rights[kWarps];
  __shared__ unsigned long long bases[2];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const unsigned below = (1u << lane) - 1u;
  // The same trip count for every thread of the block (the barriers need it).
  for (std::int64_t start = split.begin + blockIdx.x * std::int64_t(blockDim.x); start < split.end;
       start += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t position = start + threadIdx.x;
    const bool present = position < split.end;
    const std::int32_t row = present ? order[position] : 0;
    const bool left = present && GoesLeft(bins, stride, split.rule, row);
    const unsigned lefts = __ballot_sync(0xffffffffu, left);
    const unsigned rights = __ballot_sync(0xffffffffu, present && !left);
    if (lane == 0) {
      warp_lefts[warp] = __popc(lefts);
      warp_rights[warp] = __popc(rights);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned left_total = 0;
      unsigned right_total = 0;
      for (int at = 0; at < kWarps; ++at) {
        const unsigned warp_left = warp_lefts[at];
        const unsigned warp_right = warp_rights[at];
        warp_lefts[at] = left_total;
        warp_rights[at] = right_total;
        left_total += warp_left;
        right_total += warp_right;
      }
      bases[0] = left_total != 0 ? atomicAdd(&cursors[2 * blockIdx.y], left_total) : 0;
      bases[1] = right_total != 0 ? atomicAdd(&cursors[2 * blockIdx.y + 1], right_total) : 0;
    }
    __syncthreads();
    if (present) {
      const std::int64_t at =
          left ? std::int64_t(bases[0] + warp_lefts[warp]) + __popc(lefts & below)
               : std::int64_t(bases[1] + warp_rights[warp]) + __popc(rights & below);
      spare[at] = row;
    }
    __syncthreads();  // the shared counts are rewritten by the next pass
  }
}

// Copies each partitioned range back from spare and checks that its sides have the sizes the
// split's sums say.
__global__ void CopyBackKernel(const BatchSplit* splits, const std::int32_t* spare,
                               std::int32_t* order, const unsigned long long* cursors, int* bad) {
  const BatchSplit& split = splits[blockIdx.y];
  if (!split.partition) return;
  if (blockIdx.x == 0 && threadIdx.x == 0 &&
      (cursors[2 * blockIdx.y] != static_cast<unsigned long long>(split.begin + split.lefts) ||
       cursors[2 * blockIdx.y + 1] != static_cast<unsigned long long>(split.end))) {
    *bad = 1;
  }
  for (std::int64_t at = split.begin + blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       at < split.end; at += std::int64_t(gridDim.x) * blockDim.x) {
    order[at] = spare[at];
  }
}

__global__ void SequenceKernel(std::int32_t* out, std::int64_t count) {
  for (std::int64_t at = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; at < count;
       at += std::int64_t(gridDim.x) * blockDim.x) {
    out[at] = static_cast<std::int32_t>(at);
  }
}

// Leaf l's sum of round(exact gradient * fixed) over positions [begins[l], ends[l]).
__global__ void LeafSumKernel(const std::int32_t* order, const std::int64_t* ranges,
                              const float* gradients, double fixed, long long* sums) {
  const int leaf = blockIdx.x;
  const std::int64_t begin = ranges[2 * leaf];
  const std::int64_t end = ranges[2 * leaf + 1];
  long long sum = 0;
  for (std::int64_t at = begin + threadIdx.x; at < end; at += blockDim.x) {
    sum += RoundToInteger(double(gradients[order[at]]) * fixed);
  }
  using Reduce = cub::BlockReduce<long long, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const long long total = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) sums[leaf] = total;
}

}  // namespace

void CheckLaunch(const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) device::ThrowCudaError(error, kernel, __FILE__, __LINE__);
}

void RunBatch(const DeviceBins& bins, const BatchSplit* splits, int count, std::int64_t widest,
              std::int32_t* order, std::int32_t* spare, unsigned long long* cursors, int* bad,
              const GradientPair* pairs, const HistogramGroups& groups, int max_blocks) {
  if (count == 0) return;
  const std::int64_t words = 2 * groups.total_bins;
  const unsigned batch = static_cast<unsigned>(count);
  PrepareKernel<<<dim3(static_cast<unsigned>(std::min(GridFor(words, 4), 64)), batch), kThreads>>>(
      splits, words, cursors);
  CheckLaunch("PrepareKernel");
  const dim3 rows_grid(static_cast<unsigned>(std::min(GridFor(widest, 4), max_blocks)), batch);
  if (bins.bins16 != nullptr) {
    PartitionKernel<std::uint16_t>
        <<<rows_grid, kThreads>>>(bins.bins16, bins.stride, splits, order, spare, cursors);
  } else {
    PartitionKernel<std::uint8_t>
        <<<rows_grid, kThreads>>>(bins.bins8, bins.stride, splits, order, spare, cursors);
  }
  CheckLaunch("PartitionKernel");
  CopyBackKernel<<<rows_grid, kThreads>>>(splits, spare, order, cursors, bad);
  CheckLaunch("CopyBackKernel");
  // The smaller child holds at most half its parent's rows; a shared-memory block takes at
  // most kRowsPerBlock of them (its 32-bit sums stay exact).
  const std::int64_t child_rows = widest / 2 + 1;
  if (groups.shared_count > 0) {
    const std::int64_t wanted = std::max<std::int64_t>(
        (child_rows * std::max(1, bins.stride / groups.shared_count) + 4095) / 4096, 1);
    const std::int64_t needed = (child_rows + kRowsPerBlock - 1) / kRowsPerBlock;
    const unsigned blocks = static_cast<unsigned>(
        std::clamp<std::int64_t>(std::min<std::int64_t>(wanted, max_blocks), needed, 65535));
    const dim3 grid(blocks, static_cast<unsigned>(groups.shared_count), batch);
    const std::size_t bytes =
        4 * sizeof(std::uint32_t) * static_cast<std::size_t>(groups.shared_cells);
    if (bins.bins16 != nullptr) {
      HistogramKernel<std::uint16_t><<<grid, kThreads, bytes>>>(
          bins.bins16, bins.stride, order, splits, pairs, groups.shared, groups.offsets);
    } else {
      HistogramKernel<std::uint8_t><<<grid, kThreads, bytes>>>(
          bins.bins8, bins.stride, order, splits, pairs, groups.shared, groups.offsets);
    }
    CheckLaunch("HistogramKernel");
  }
  if (groups.global_count > 0) {
    const unsigned blocks = static_cast<unsigned>(std::min(GridFor(child_rows, 8), max_blocks));
    const dim3 grid(blocks, static_cast<unsigned>(groups.global_count), batch);
    if (bins.bins16 != nullptr) {
      WideHistogramKernel<std::uint16_t><<<grid, kThreads>>>(
          bins.bins16, bins.stride, order, splits, pairs, groups.global, groups.offsets);
    } else {
      WideHistogramKernel<std::uint8_t><<<grid, kThreads>>>(bins.bins8, bins.stride, order, splits,
                                                            pairs, groups.global, groups.offsets);
    }
    CheckLaunch("WideHistogramKernel");
  }
  SubtractBatchKernel<<<dim3(static_cast<unsigned>(std::min(GridFor(words, 4), 64)), batch),
                        kThreads>>>(splits, words);
  CheckLaunch("SubtractBatchKernel");
}

void ScanSplits(const ScanLeaf* leaves, int leaf_count, int num_features,
                const std::int64_t* offsets, const int* num_bins, const std::uint8_t* categorical,
                const std::uint8_t* tried, const ScanParams& params, Candidate* out) {
  ScanKernel<<<leaf_count * num_features, 32>>>(leaves, num_features, offsets, num_bins,
                                                categorical, tried, params, out);
  CheckLaunch("ScanKernel");
}

void FillSequence(std::int32_t* order, std::int64_t count) {
  SequenceKernel<<<GridFor(count, 4), kThreads>>>(order, count);
  CheckLaunch("SequenceKernel");
}

void LeafGradientSums(const std::int32_t* order, const std::int64_t* ranges, int leaf_count,
                      const float* gradients, double fixed, long long* sums) {
  LeafSumKernel<<<leaf_count, kThreads>>>(order, ranges, gradients, fixed, sums);
  CheckLaunch("LeafSumKernel");
}

}  // namespace tabforge::tree::kernels
