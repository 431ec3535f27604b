// The CUDA grower's kernels: histograms as integer sums with shared-memory atomics (so the
// order of addition cannot matter), split scans with the CPU's formulas (split_math.h) and its
// tie order (lowest missing side, then lowest threshold; features are compared on the host in
// order), stable partitions, leaf sums in fixed point.
#include <cub/cub.cuh>

#include <algorithm>

#include "device/cuda_check.h"
#include "models/tree/device_kernels.h"

namespace tabforge::tree::kernels {
namespace {

constexpr int kThreads = 256;

static_assert(sizeof(HistogramBin) == 16, "a histogram cell is two 64-bit words");
static_assert(sizeof(GradientPair) == 8, "a gradient pair is two 32-bit words");

int GridFor(std::int64_t items, int per_thread = 1) {
  const std::int64_t blocks = (items + std::int64_t(kThreads) * per_thread - 1) /
                              (std::int64_t(kThreads) * per_thread);
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

// Histogram of rows order[begin, begin + count) for the features of group g = blockIdx.y:
// [groups[2g], groups[2g + 1]). Each block sums its share of (row, feature) pairs into shared
// memory (or, for features too wide for it, straight into global memory) and adds the nonzero
// cells to the global histogram.
template <typename Bin, bool kShared>
__global__ void HistogramKernel(const Bin* bins, int stride, const std::int32_t* order,
                                std::int64_t begin, std::int64_t count, const GradientPair* pairs,
                                const int* groups, const std::int64_t* offsets, Word* histogram) {
  extern __shared__ Word shared[];
  const int first = groups[2 * blockIdx.y];
  const int last = groups[2 * blockIdx.y + 1];
  const int group_features = last - first;
  const std::int64_t base = offsets[first];
  const int cells = static_cast<int>(offsets[last] - base);
  Word* target = kShared ? shared : histogram + 2 * base;
  if (kShared) {
    for (int cell = threadIdx.x; cell < 2 * cells; cell += blockDim.x) shared[cell] = 0;
    __syncthreads();
  }
  const std::int64_t items = count * group_features;
  for (std::int64_t item = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; item < items;
       item += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t position = item / group_features;
    const int feature = first + static_cast<int>(item - position * group_features);
    const std::int64_t row = order[begin + position];
    const GradientPair pair = pairs[row];
    const int cell = static_cast<int>(offsets[feature] - base) + BinOf(bins, stride, row, feature);
    atomicAdd(&target[2 * cell],
              static_cast<Word>(static_cast<long long>(pair.gradient) * (1ll << 32) + 1));
    atomicAdd(&target[2 * cell + 1], static_cast<Word>(pair.hessian));
  }
  if (kShared) {
    __syncthreads();
    Word* out = histogram + 2 * base;
    for (int cell = threadIdx.x; cell < 2 * cells; cell += blockDim.x) {
      if (shared[cell] != 0) atomicAdd(&out[cell], shared[cell]);
    }
  }
}

__global__ void SubtractKernel(Word* larger, const Word* smaller, std::int64_t words) {
  for (std::int64_t at = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; at < words;
       at += std::int64_t(gridDim.x) * blockDim.x) {
    larger[at] -= smaller[at];
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
  const int limit =
      params.max_cat_threshold < candidate_count - 1 ? params.max_cat_threshold : candidate_count - 1;
  int side[kMaxCategoryBins];
  for (int from_end = 0; from_end < 2; ++from_end) {
    for (int taken = 0; taken < limit; ++taken) {
      side[taken] = from_end ? candidates[candidate_count - 1 - taken] : candidates[taken];
      consider(side, taken + 1, reg);
    }
  }
}

// One warp per (leaf, feature): the best split of that feature for that leaf.
__global__ void ScanKernel(ScanLeaves leaves, int num_features, const std::int64_t* offsets,
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
  const long long* cells =
      reinterpret_cast<const long long*>(leaves.histogram[at]) + 2 * offsets[feature];
  const long long total_packed = leaves.total_packed[at];
  const long long total_hessian = leaves.total_hessian[at];
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
  const int only = params.extra_trees
                       ? ExtraTreesThreshold(params.seed, leaves.node_key[at], feature, bins)
                       : -1;
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

// Whether a row goes left at a split (the CPU's Partition rule), or right when `invert`.
template <typename Bin>
struct GoesLeft {
  const Bin* bins;
  int stride;
  SplitRule rule;
  bool invert;
  __device__ bool operator()(std::int32_t row) const {
    const int bin = BinOf(bins, stride, row, rule.feature);
    bool left;
    if (rule.categorical) {
      left = bin < kMaxCategoryBins && ((rule.bitset[bin / 32] >> (bin % 32)) & 1u);
    } else {
      left = bin == rule.missing_bin ? rule.default_left : bin <= rule.threshold_bin;
    }
    return left != invert;
  }
};

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
    sum += llround(double(gradients[order[at]]) * fixed);
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

void BuildHistogram(const DeviceBins& bins, const std::int32_t* order, std::int64_t begin,
                    std::int64_t count, const GradientPair* pairs, const int* shared_groups,
                    int shared_group_count, int shared_cells, const int* global_groups,
                    int global_group_count, const std::int64_t* offsets, std::int64_t total_bins,
                    int max_blocks, Word* histogram) {
  TFG_CUDA_CHECK(cudaMemsetAsync(histogram, 0, 2 * sizeof(Word) * total_bins));
  if (count == 0) return;
  const int groups = shared_group_count + global_group_count;
  const std::int64_t per_group = count * std::max(1, bins.stride / std::max(1, groups));
  const int blocks = std::min(GridFor(per_group, 8), max_blocks);
  if (shared_group_count > 0) {
    const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(shared_group_count));
    const std::size_t bytes = 2 * sizeof(Word) * static_cast<std::size_t>(shared_cells);
    if (bins.bins16 != nullptr) {
      HistogramKernel<std::uint16_t, true><<<grid, kThreads, bytes>>>(
          bins.bins16, bins.stride, order, begin, count, pairs, shared_groups, offsets, histogram);
    } else {
      HistogramKernel<std::uint8_t, true><<<grid, kThreads, bytes>>>(
          bins.bins8, bins.stride, order, begin, count, pairs, shared_groups, offsets, histogram);
    }
    CheckLaunch("HistogramKernel");
  }
  if (global_group_count > 0) {
    const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(global_group_count));
    if (bins.bins16 != nullptr) {
      HistogramKernel<std::uint16_t, false><<<grid, kThreads>>>(
          bins.bins16, bins.stride, order, begin, count, pairs, global_groups, offsets, histogram);
    } else {
      HistogramKernel<std::uint8_t, false><<<grid, kThreads>>>(
          bins.bins8, bins.stride, order, begin, count, pairs, global_groups, offsets, histogram);
    }
    CheckLaunch("HistogramKernel (global)");
  }
}

void SubtractHistogram(Word* larger, const Word* smaller, std::int64_t total_bins) {
  const std::int64_t words = 2 * total_bins;
  SubtractKernel<<<GridFor(words, 4), kThreads>>>(larger, smaller, words);
  CheckLaunch("SubtractKernel");
}

void ScanSplits(const ScanLeaves& leaves, int leaf_count, int num_features,
                const std::int64_t* offsets, const int* num_bins, const std::uint8_t* categorical,
                const std::uint8_t* tried, const ScanParams& params, Candidate* out) {
  ScanKernel<<<leaf_count * num_features, 32>>>(leaves, num_features, offsets, num_bins,
                                                categorical, tried, params, out);
  CheckLaunch("ScanKernel");
}

std::size_t PartitionScratchBytes(std::int64_t rows) {
  std::size_t bytes = 0;
  GoesLeft<std::uint8_t> probe{};
  TFG_CUDA_CHECK(cub::DeviceSelect::If(nullptr, bytes, static_cast<const std::int32_t*>(nullptr),
                                       static_cast<std::int32_t*>(nullptr),
                                       static_cast<int*>(nullptr), static_cast<int>(rows), probe));
  return std::max<std::size_t>(bytes, 1);
}

void StablePartition(const DeviceBins& bins, const SplitRule& rule, std::int32_t* order,
                     std::int32_t* spare, std::int64_t count, std::int64_t lefts, int* rights,
                     void* scratch, std::size_t scratch_bytes) {
  auto run = [&](const auto* cells) {
    using Bin = std::remove_const_t<std::remove_pointer_t<decltype(cells)>>;
    GoesLeft<Bin> goes{cells, bins.stride, rule, false};
    std::size_t bytes = scratch_bytes;
    // The left rows first (into spare[0, lefts)), then the right ones behind them; the count
    // written last is the right side's.
    TFG_CUDA_CHECK(cub::DeviceSelect::If(scratch, bytes, order, spare, rights,
                                         static_cast<int>(count), goes));
    goes.invert = true;
    bytes = scratch_bytes;
    TFG_CUDA_CHECK(cub::DeviceSelect::If(scratch, bytes, order, spare + lefts, rights,
                                         static_cast<int>(count), goes));
  };
  if (bins.bins16 != nullptr) {
    run(bins.bins16);
  } else {
    run(bins.bins8);
  }
  TFG_CUDA_CHECK(cudaMemcpyAsync(order, spare, sizeof(std::int32_t) * count,
                                 cudaMemcpyDeviceToDevice));
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
