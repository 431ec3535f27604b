// The batch forest grower's kernels (declared in forest_kernels.h). A node's feature is
// evaluated by one block: its rows' bins and bootstrap counts accumulate into a histogram in
// shared memory (whole numbers, so in any order) and the bins holding rows are listed (a deep
// node's few rows use few of a feature's up to 1023 bins). Block scans turn their sums into
// cumulative ones, from which each thread weighs its share of the cuts (forest_split.h's
// CandidateCut, as the host batch device does) and a block reduction keeps the CPU's choice.
// Extremely randomized trees draw their one cut in thread 0. Partitions are stable: a block
// scan numbers each side's rows.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "device/cuda_check.h"
#include "models/forest/forest_kernels.h"

namespace tabforge::forest::kernels {
namespace {

constexpr int kScanThreads = 512;
constexpr int kWarpSplitsPerBlock = 8;
constexpr int kEvalThreads = 256;
// A node of at most this many rows a thread of the split search holds them in registers.
constexpr int kSparseRowsPerThread = 4;
constexpr int kSmallThreads = 128;  // 4 warps, each its own (node, position)
// The most shared memory a block of small nodes takes (many classes or features need more; their
// nodes go to the block per node).
constexpr std::size_t kSmallBlockBytes = 48 * 1024;
// The most rows of a node a warp evaluates (fewer when the scratch would pass kSmallBlockBytes).
constexpr int kSmallMaxRows = 256;
// The split search's blocks an SM must be able to hold (the registers are budgeted for them): 4
// (1,024 threads, all a Turing SM holds). More, with fewer registers, spill in the row loop, and
// its gathers wait on the spills: at 6 a block (40 registers) it was slower on an H100.
constexpr int kEvalBlocksPerSm = 4;
// A small node's bins in use as bits: up to 2048 bins.
constexpr int kBitmapWords = 64;

__device__ int BinAt(const DeviceRows& data, std::int32_t row, int feature) {
  const std::size_t at = static_cast<std::size_t>(feature) * data.rows + row;
  return data.bins8 != nullptr ? data.bins8[at] : data.bins16[at];
}

__global__ void FillWeights(std::uint32_t* weights, long long count, std::uint32_t value) {
  for (long long at = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; at < count;
       at += static_cast<long long>(gridDim.x) * blockDim.x) {
    weights[at] = value;
  }
}

__global__ void DrawBootstraps(std::uint32_t* weights, long long rows, int slots,
                               std::uint64_t first_tree, std::uint64_t seed, long long draws) {
  const long long total = draws * slots;
  for (long long at = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; at < total;
       at += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long slot = at / draws;
    const long long draw = at - slot * draws;
    const std::uint64_t stream = kBootstrapStream ^ Mix64(first_tree + std::uint64_t(slot));
    const std::uint64_t row = RandomBelow(seed, stream, std::uint64_t(draw), std::uint64_t(rows));
    atomicAdd(&weights[slot * rows + static_cast<long long>(row)], 1u);
  }
}

// A row's tag: its bootstrap count and its class (0 for regression).
__device__ std::uint64_t RowTag(std::uint32_t weight, int row_class) {
  return static_cast<std::uint64_t>(weight) |
         (static_cast<std::uint64_t>(static_cast<std::uint32_t>(row_class)) << 32);
}

__device__ std::uint32_t TagWeight(std::uint64_t tag) { return static_cast<std::uint32_t>(tag); }

__device__ int TagClass(std::uint64_t tag) { return static_cast<int>(tag >> 32); }

// One block per slot: the rows drawn at least once, ascending, with their tags.
__global__ void __launch_bounds__(kScanThreads)
    CompactRows(const std::uint32_t* weights, const std::int32_t* classes, std::int32_t* order,
                std::uint64_t* tags, long long rows, long long* slot_rows) {
  using Scan = cub::BlockScan<int, kScanThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ long long base;
  const long long slot = blockIdx.x;
  if (threadIdx.x == 0) base = 0;
  __syncthreads();
  for (long long first = 0; first < rows; first += kScanThreads) {
    const long long row = first + threadIdx.x;
    const std::uint32_t weight = row < rows ? weights[slot * rows + row] : 0u;
    const int drawn = weight > 0 ? 1 : 0;
    int offset = 0, total = 0;
    Scan(scan).ExclusiveSum(drawn, offset, total);
    if (drawn) {
      const long long at = slot * rows + base + offset;
      order[at] = static_cast<std::int32_t>(row);
      tags[at] = RowTag(weight, classes != nullptr ? classes[row] : 0);
    }
    __syncthreads();
    if (threadIdx.x == 0) base += total;
    __syncthreads();
  }
  if (threadIdx.x == 0) slot_rows[slot] = base;
}

// The sum of `value` over this lane and the warp's lanes below it (every lane takes part).
template <typename T>
__device__ T WarpInclusiveSum(T value) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (int shift = 1; shift < 32; shift <<= 1) {
    const T below = __shfl_up_sync(0xffffffffu, value, shift);
    if (lane >= shift) value += below;
  }
  return value;
}

// One warp lists the bins whose bits are set in `bitmap` (`words` words), ascending, into
// `used_bins`, and returns their number (in every lane). With `ranks_before`, it also records
// each word's count of bits in the words before it (a bin's rank among the bins in use is then
// that plus the bits below it in its word).
__device__ int ListBitmap(const std::uint32_t* bitmap, int words, int* used_bins,
                          int* ranks_before) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  int base = 0;
  for (int first = 0; first < words; first += 32) {
    const int word = first + lane;
    std::uint32_t bits = word < words ? bitmap[word] : 0u;
    const int own = __popc(bits);
    const int through = WarpInclusiveSum(own);  // bins in words up to this lane's
    int at = base + through - own;
    if (ranks_before != nullptr && word < words) ranks_before[word] = at;
    while (bits != 0u) {
      used_bins[at++] = word * 32 + __ffs(static_cast<int>(bits)) - 1;
      bits &= bits - 1u;
    }
    base += __shfl_sync(0xffffffffu, through, 31);
  }
  return base;
}

// Adds row `row` (its tag `tag`) to histogram cell `cell`: its bootstrap count to its class's
// count (regression: to the weight, and its weighted target units to the value) and one to the
// cell's distinct rows. Regression also widens [lowest, highest] to the row's target (`seen`:
// whether any row has set them yet).
__device__ void AddRowToCell(const DeviceRows& data, int width, bool regression,
                             std::uint32_t* counts, long long* values, std::uint32_t* bin_rows,
                             std::int32_t row, std::uint64_t tag, int cell, long long& lowest,
                             long long& highest, bool& seen) {
  const std::uint32_t weight = TagWeight(tag);
  if (regression) {
    const long long units = data.target_units[row];
    atomicAdd(&counts[cell], weight);
    // Two's-complement sums: unsigned adds give the signed total.
    atomicAdd(reinterpret_cast<unsigned long long*>(&values[cell]),
              static_cast<unsigned long long>(static_cast<long long>(weight) * units));
    lowest = seen && lowest < units ? lowest : units;
    highest = seen && highest > units ? highest : units;
    seen = true;
  } else {
    atomicAdd(&counts[cell * width + TagClass(tag)], weight);
  }
  atomicAdd(&bin_rows[cell], 1u);
}

// A histogram channel's cell of bin `bin`: a class's or the weight's count (channel <
// count_width), the target units (regression), or the distinct rows (the last).
__device__ long long ChannelCell(const std::uint32_t* counts, const long long* values,
                                 const std::uint32_t* bin_rows, int channel, int bin,
                                 int count_width, bool regression) {
  if (channel < count_width) return counts[bin * count_width + channel];
  if (channel == count_width && regression) return values[bin];
  return bin_rows[bin];
}

__device__ void SetChannelCell(std::uint32_t* counts, long long* values, std::uint32_t* bin_rows,
                               int channel, int bin, int count_width, bool regression,
                               long long sum) {
  if (channel < count_width) {
    counts[bin * count_width + channel] = static_cast<std::uint32_t>(sum);
  } else if (channel == count_width && regression) {
    values[bin] = sum;
  } else {
    bin_rows[bin] = static_cast<std::uint32_t>(sum);
  }
}

// Turns the histogram cells of the `used` bins in use into cumulative sums over them, channel
// by channel. Every sum is whole, so any order of adding gives the same cells. At most 32 bins
// (most nodes of deep trees): warp 0's shuffles, no block barrier but the last. More: a run of
// bins a thread and one block scan per channel.
__device__ void Accumulate(std::uint32_t* counts, long long* values, std::uint32_t* bin_rows,
                           const int* used_bins, int used, int count_width, bool regression) {
  using CellScan = cub::BlockScan<long long, kEvalThreads>;
  __shared__ typename CellScan::TempStorage scan;
  const int channels = count_width + (regression ? 1 : 0) + 1;
  if (used <= 32) {
    if (threadIdx.x < 32) {
      const int lane = static_cast<int>(threadIdx.x);
      const bool in_use = lane < used;
      const int bin = in_use ? used_bins[lane] : 0;
      for (int channel = 0; channel < channels; ++channel) {
        const long long sum = WarpInclusiveSum(
            in_use ? ChannelCell(counts, values, bin_rows, channel, bin, count_width, regression)
                   : 0);
        if (in_use)
          SetChannelCell(counts, values, bin_rows, channel, bin, count_width, regression, sum);
      }
    }
    __syncthreads();
    return;
  }
  // Each thread takes a run of neighbouring bins in use: it sums them, one block scan per
  // channel gives the sum before the run, and the thread writes the run's cumulative cells.
  const int per_thread = (used + kEvalThreads - 1) / kEvalThreads;
  const int first = static_cast<int>(threadIdx.x) * per_thread;
  const int last = min(first + per_thread, used);
  for (int channel = 0; channel < channels; ++channel) {
    long long run = 0;
    for (int at = first; at < last; ++at) {
      run += ChannelCell(counts, values, bin_rows, channel, used_bins[at], count_width, regression);
    }
    long long before = 0;
    CellScan(scan).ExclusiveSum(run, before);
    for (int at = first; at < last; ++at) {
      const int bin = used_bins[at];
      before += ChannelCell(counts, values, bin_rows, channel, bin, count_width, regression);
      SetChannelCell(counts, values, bin_rows, channel, bin, count_width, regression, before);
    }
    __syncthreads();  // before the scan's storage is used again
  }
}

// Whether cut a (improvement, candidate) beats cut b: the larger improvement, ties to the earlier
// candidate (the serial search's strict comparison).
__device__ bool BetterCut(double a, int a_at, double b, int b_at) {
  return a > b || (a == b && a_at < b_at);
}

// The warp's first best cut (see FirstBest); lane 0 receives it.
__device__ void WarpFirstBest(double& improvement, int& candidate, long long& left_rows) {
  for (int shift = 16; shift > 0; shift >>= 1) {
    const double other = __shfl_down_sync(0xffffffffu, improvement, shift);
    const int other_at = __shfl_down_sync(0xffffffffu, candidate, shift);
    const long long other_rows = __shfl_down_sync(0xffffffffu, left_rows, shift);
    if (BetterCut(other, other_at, improvement, candidate)) {
      improvement = other;
      candidate = other_at;
      left_rows = other_rows;
    }
  }
}

// The block's first best cut (BetterCut's order). Thread 0 receives it.
__device__ void FirstBest(double& improvement, int& candidate, long long& left_rows) {
  constexpr int kWarps = kEvalThreads / 32;
  __shared__ double warp_improvement[kWarps];
  __shared__ int warp_candidate[kWarps];
  __shared__ long long warp_left_rows[kWarps];
  WarpFirstBest(improvement, candidate, left_rows);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x % 32 == 0) {
    warp_improvement[warp] = improvement;
    warp_candidate[warp] = candidate;
    warp_left_rows[warp] = left_rows;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int other = 1; other < kWarps; ++other) {
    if (BetterCut(warp_improvement[other], warp_candidate[other], improvement, candidate)) {
      improvement = warp_improvement[other];
      candidate = warp_candidate[other];
      left_rows = warp_left_rows[other];
    }
  }
}

// Block (node, position): the histogram of the feature at that position and its best cut. A
// node that may not be split is marked by left_rows -1 in its position-0 cut.
__global__ void __launch_bounds__(kEvalThreads, kEvalBlocksPerSm)
    EvaluateFeature(DeviceRows data, DeviceTrees trees, SplitRules rules, const BatchNode* nodes,
                    int first_position, int positions, FeatureCut* cuts, std::uint32_t* cut_bits,
                    int words, double* sums) {
  extern __shared__ long long shared_cells[];
  const int width = rules.width;
  const bool regression = rules.criterion == kCriterionSquaredError;
  const int count_width = regression ? 1 : width;
  // Regression target sums first (8-byte cells), then counts, distinct rows, the order scratch,
  // the bins in use.
  long long* values = shared_cells;
  std::uint32_t* counts =
      reinterpret_cast<std::uint32_t*>(values + (regression ? data.max_bins : 0));
  std::uint32_t* bin_rows = counts + data.max_bins * count_width;
  int* order = reinterpret_cast<int*>(bin_rows + data.max_bins);  // features (thread 0)
  int* used_bins = order + rules.features;
  using BinScan = cub::BlockScan<int, kEvalThreads>;
  __shared__ typename BinScan::TempStorage bin_scan;
  __shared__ int used;
  __shared__ int feature;
  __shared__ long long lowest, highest;  // regression: the node's smallest and largest target
  // A node's positions are neighbouring blocks: they run at about the same time and read the
  // same rows, whose bins of all features lie together, mostly from the L2 cache.
  const long long item = blockIdx.x;  // node_at * positions + position
  const int node_at = static_cast<int>(item / positions);
  const int position = static_cast<int>(item - static_cast<long long>(node_at) * positions);
  const BatchNode node = nodes[node_at];
  const long long base = static_cast<long long>(node.slot) * data.rows;
  const std::int32_t* rows = trees.order + base;
  const std::uint64_t* tags = trees.tags + base;
  if (threadIdx.x == 0) {
    feature = FeatureAtPosition(trees.order_keys[node.slot], node.key, first_position + position,
                                rules.features, order);
    if (regression) lowest = highest = data.target_units[rows[node.begin]];
    used = 0;
  }
  const long long count = node.end - node.begin;
  // A node of at most kSparseRowsPerThread rows a thread (most nodes the warps leave) holds its
  // rows in registers, clears only its own bins' cells and lists its bins from a bit per bin; a
  // larger one clears the whole histogram and lists its bins by scanning them.
  const int bitmap_words = (data.max_bins + 31) / 32;
  const bool small = count <= kSparseRowsPerThread * kEvalThreads && bitmap_words <= kBitmapWords;
  __shared__ std::uint32_t bitmap[kBitmapWords];
  if (small) {
    for (int word = threadIdx.x; word < bitmap_words; word += blockDim.x) bitmap[word] = 0;
  } else {
    for (int at = threadIdx.x; at < data.max_bins * (count_width + 1); at += blockDim.x) {
      counts[at] = 0;
    }
    if (regression) {
      for (int at = threadIdx.x; at < data.max_bins; at += blockDim.x) values[at] = 0;
    }
  }
  __syncthreads();
  const int feature_index = feature;
  const FeatureInfo info = data.features[feature_index];
  long long my_lowest = 0, my_highest = 0;  // regression: this thread's target range
  bool seen = false;
  auto add_row = [&](std::int32_t row, std::uint64_t tag, int bin) {
    AddRowToCell(data, width, regression, counts, values, bin_rows, row, tag, bin, my_lowest,
                 my_highest, seen);
  };
  if (small) {
    std::int32_t held_rows[kSparseRowsPerThread];
    std::uint64_t held_tags[kSparseRowsPerThread];
    int held_bins[kSparseRowsPerThread];
#pragma unroll
    for (int held = 0; held < kSparseRowsPerThread; ++held) {
      const long long at = node.begin + threadIdx.x + held * kEvalThreads;
      held_bins[held] = -1;
      if (at < node.end) {
        held_rows[held] = rows[at];
        held_tags[held] = tags[at];
        const int bin = BinAt(data, held_rows[held], feature_index);
        held_bins[held] = bin;
        for (int k = 0; k < count_width; ++k) counts[bin * count_width + k] = 0;
        if (regression) values[bin] = 0;
        bin_rows[bin] = 0;
        atomicOr(&bitmap[bin / 32], 1u << (bin % 32));
      }
    }
    // The serial search of extremely randomized trees reads the missing bin's rows.
    if (threadIdx.x == 0) bin_rows[info.num_bins - 1] = 0;
    __syncthreads();
#pragma unroll
    for (int held = 0; held < kSparseRowsPerThread; ++held) {
      if (held_bins[held] >= 0) add_row(held_rows[held], held_tags[held], held_bins[held]);
    }
  } else {
    for (long long at = node.begin + threadIdx.x; at < node.end; at += blockDim.x) {
      const std::int32_t row = rows[at];
      add_row(row, tags[at], BinAt(data, row, feature_index));
    }
  }
  if (regression && seen) {
    // One update of the node's range per thread, not per row.
    atomicMin(&lowest, my_lowest);
    atomicMax(&highest, my_highest);
  }
  __syncthreads();
  // The bins holding rows, ascending.
  if (small) {
    if (threadIdx.x < 32) {
      const int listed = ListBitmap(bitmap, bitmap_words, used_bins, nullptr);
      if (threadIdx.x == 0) used = listed;
    }
  } else {
    // Each thread takes a run of neighbouring bins: one block scan numbers them all.
    const int per_thread = (info.num_bins + kEvalThreads - 1) / kEvalThreads;
    const int first = static_cast<int>(threadIdx.x) * per_thread;
    const int last = min(first + per_thread, info.num_bins);
    int mine = 0;
    for (int bin = first; bin < last; ++bin) mine += bin_rows[bin] != 0 ? 1 : 0;
    int offset = 0, total = 0;
    BinScan(bin_scan).ExclusiveSum(mine, offset, total);
    for (int bin = first; bin < last; ++bin) {
      if (bin_rows[bin] != 0) used_bins[offset++] = bin;
    }
    if (threadIdx.x == 0) used = total;
  }
  __syncthreads();
  const Histogram histogram{counts, values, bin_rows};
  // Every forest but extremely randomized trees weighs all cuts: from cumulative sums, a thread
  // per cut.
  const bool cumulative = !rules.extra_trees;
  if (cumulative) Accumulate(counts, values, bin_rows, used_bins, used, count_width, regression);
  __shared__ double parent[kMaxBatchClasses];
  __shared__ double parent_score;
  __shared__ int splittable;
  FeatureCut& cut = cuts[item];
  std::uint32_t* bits = cut_bits + item * words;
  if (threadIdx.x == 0) {
    const bool constant = regression && lowest == highest;
    if (cumulative) {
      CumulativeTotals(rules, histogram, used_bins, used, parent);
      splittable = SplittableNode(rules, parent, count, node.depth, constant) ? 1 : 0;
    } else {
      splittable =
          NodeSplittable(rules, histogram, used_bins, used, count, node.depth, constant, parent)
              ? 1
              : 0;
    }
    if (first_position == 0 && position == 0) {
      for (int k = 0; k < width; ++k) sums[node_at * static_cast<long long>(width) + k] = parent[k];
    }
    parent_score = SplitScore(rules, parent);
  }
  for (int word = threadIdx.x; word < words; word += blockDim.x) bits[word] = 0;
  __syncthreads();
  FeatureCut best;
  StartFeatureCut(info, feature_index, best);
  if (!splittable) {
    if (threadIdx.x == 0) {
      best.categorical = 0;
      best.left_rows = -1;
      cut = best;
    }
    return;
  }
  if (cumulative) {
    const CutPlan plan = PlanCuts(info, used_bins, used);
    // At most 32 cuts (most nodes of deep trees): warp 0 weighs them and the others are done.
    const bool one_warp = plan.candidates <= 32;
    if (one_warp && threadIdx.x >= 32) return;
    double my_improvement = kNoCut;
    int my_candidate = plan.candidates;  // none
    long long my_left_rows = 0;
    for (int candidate = threadIdx.x; candidate < plan.candidates; candidate += blockDim.x) {
      double improvement = 0;
      long long left_rows = 0;
      if (CandidateCut(rules, histogram, used_bins, used, plan, count, parent, parent_score,
                       candidate, improvement, left_rows) &&
          improvement > my_improvement) {
        my_improvement = improvement;
        my_candidate = candidate;
        my_left_rows = left_rows;
      }
    }
    if (one_warp) {
      WarpFirstBest(my_improvement, my_candidate, my_left_rows);
    } else {
      FirstBest(my_improvement, my_candidate, my_left_rows);
    }
    if (threadIdx.x != 0) return;
    if (my_improvement > kNoCut) {
      SetCandidateCut(info, used_bins, plan, my_candidate, my_improvement, my_left_rows, best);
    }
  } else {
    if (threadIdx.x != 0) return;
    ExtraTreesCut(rules, info, feature_index, histogram, used_bins, used, count, parent,
                  parent_score, trees.threshold_keys[node.slot], node.key, best);
  }
  if (best.categorical && best.improvement > kNoCut) {
    for (int at = 0; at < used && used_bins[at] <= best.cut_bin; ++at) {
      bits[used_bins[at] / 32] |= 1u << (used_bins[at] % 32);
    }
  }
  cut = best;
}

// A small node's per-warp scratch, in bytes, for nodes of up to `rows` rows: its cumulative
// histogram over the bins in use (indexed by their rank, not by bin), their bins, the ranks
// themselves, a bit per bin and a count of bits per word (past 32 rows), its class sums and the
// feature order's scratch.
__host__ __device__ std::size_t SmallWarpBytes(int rows, int width, int features, bool regression) {
  const int count_width = regression ? 1 : width;
  const std::size_t bytes = (regression ? sizeof(long long) * rows : 0) + sizeof(double) * width +
                            sizeof(std::uint32_t) * (rows * (count_width + 1)) +
                            sizeof(int) * (2 * rows + 2 * kBitmapWords + features);
  return (bytes + 7) / 8 * 8;
}

// A warp per (node, position) for nodes of at most `max_rows` rows (most nodes of deep trees,
// which a block of kEvalThreads threads would leave mostly idle, waiting at its barriers). The
// histogram is kept by the rank of each bin among the bins in use, so it takes `max_rows` cells
// whatever the feature's bins. Up to 32 rows, a row per lane: lanes holding the same bin are
// matched and ranked among themselves. More: a bit per bin in use, and a bin's rank is the
// count of bits below it. The same cumulative sums, cuts and tie rule as EvaluateFeature
// (CandidateCut reads the cells through the ranks, PlanCuts and SetCandidateCut through the
// bins), so the same cut.
__global__ void __launch_bounds__(kSmallThreads)
    EvaluateSmallFeature(DeviceRows data, DeviceTrees trees, SplitRules rules,
                         const BatchNode* nodes, int node_count, int max_rows, int first_position,
                         int positions, FeatureCut* cuts, std::uint32_t* cut_bits, int words,
                         double* sums) {
  extern __shared__ long long small_shared[];
  const int width = rules.width;
  const bool regression = rules.criterion == kCriterionSquaredError;
  const int count_width = regression ? 1 : width;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const long long item = blockIdx.x * static_cast<long long>(kSmallThreads / 32) + threadIdx.x / 32;
  if (item >= static_cast<long long>(node_count) * positions) return;
  const int node_at = static_cast<int>(item / positions);
  const int position = static_cast<int>(item - static_cast<long long>(node_at) * positions);
  char* scratch = reinterpret_cast<char*>(small_shared) +
                  (threadIdx.x / 32) * SmallWarpBytes(max_rows, width, rules.features, regression);
  long long* values = reinterpret_cast<long long*>(scratch);
  double* parent =
      reinterpret_cast<double*>(scratch + (regression ? sizeof(long long) * max_rows : 0));
  std::uint32_t* counts = reinterpret_cast<std::uint32_t*>(parent + width);
  std::uint32_t* bin_rows = counts + max_rows * count_width;
  int* used_bins = reinterpret_cast<int*>(bin_rows + max_rows);
  int* ranks = used_bins + max_rows;
  std::uint32_t* bitmap = reinterpret_cast<std::uint32_t*>(ranks + max_rows);
  int* ranks_before = reinterpret_cast<int*>(bitmap + kBitmapWords);  // bits in earlier words
  int* order = ranks_before + kBitmapWords;
  const BatchNode node = nodes[node_at];
  const long long base = static_cast<long long>(node.slot) * data.rows;
  const std::int32_t* node_rows = trees.order + base + node.begin;
  const std::uint64_t* node_tags = trees.tags + base + node.begin;
  const int count = static_cast<int>(node.end - node.begin);
  int feature = 0;
  if (lane == 0) {
    feature = FeatureAtPosition(trees.order_keys[node.slot], node.key, first_position + position,
                                rules.features, order);
  }
  feature = __shfl_sync(0xffffffffu, feature, 0);
  const FeatureInfo info = data.features[feature];
  int used = 0;
  // Regression: the node's targets all one value (its smallest and largest, lane by lane).
  long long lowest = 0, highest = 0;
  bool seen = false;
  auto add_row = [&](std::int32_t row, std::uint64_t tag, int rank) {
    AddRowToCell(data, width, regression, counts, values, bin_rows, row, tag, rank, lowest, highest,
                 seen);
  };
  auto clear_cells = [&]() {
    for (int at = lane; at < used; at += 32) {
      for (int k = 0; k < count_width; ++k) counts[at * count_width + k] = 0;
      bin_rows[at] = 0;
      if (regression) values[at] = 0;
      ranks[at] = at;
    }
    __syncwarp();
  };
  if (count <= 32) {
    const bool in = lane < count;
    std::int32_t row = 0;
    std::uint64_t tag = 0;
    int bin = -1 - lane;  // lanes past the rows match no other
    if (in) {
      row = node_rows[lane];
      tag = node_tags[lane];
      bin = BinAt(data, row, feature);
    }
    const unsigned same = __match_any_sync(0xffffffffu, bin);
    const unsigned leaders =
        __ballot_sync(0xffffffffu, in && __ffs(static_cast<int>(same)) - 1 == lane);
    used = __popc(leaders);
    int rank = 0;
    for (unsigned rest = leaders; rest != 0u; rest &= rest - 1u) {  // the same loop in every lane
      const int other_bin = __shfl_sync(0xffffffffu, bin, __ffs(static_cast<int>(rest)) - 1);
      rank += other_bin < bin ? 1 : 0;
    }
    clear_cells();
    if (in) {
      if (((leaders >> lane) & 1u) != 0u) used_bins[rank] = bin;
      add_row(row, tag, rank);
    }
  } else {
    const int bitmap_words = (info.num_bins + 31) / 32;
    for (int word = lane; word < bitmap_words; word += 32) bitmap[word] = 0;
    __syncwarp();
    for (int at = lane; at < count; at += 32) {
      const int bin = BinAt(data, node_rows[at], feature);
      atomicOr(&bitmap[bin / 32], 1u << (bin % 32));
    }
    __syncwarp();
    // The bins in use, ascending, and each word's count of bits before it.
    used = ListBitmap(bitmap, bitmap_words, used_bins, ranks_before);
    __syncwarp();
    clear_cells();
    for (int at = lane; at < count; at += 32) {
      const std::int32_t row = node_rows[at];
      const int bin = BinAt(data, row, feature);
      const int rank =
          ranks_before[bin / 32] + __popc(bitmap[bin / 32] & ((1u << (bin % 32)) - 1u));
      add_row(row, node_tags[at], rank);
    }
  }
  bool constant = false;
  if (regression) {
    // Lanes without rows take another lane's values (every lane of a node past 32 rows has some).
    const int source = __ffs(static_cast<int>(__ballot_sync(0xffffffffu, seen))) - 1;
    const long long any = __shfl_sync(0xffffffffu, lowest, source);
    if (!seen) lowest = highest = any;
    for (int shift = 16; shift > 0; shift >>= 1) {
      const long long other_low = __shfl_xor_sync(0xffffffffu, lowest, shift);
      const long long other_high = __shfl_xor_sync(0xffffffffu, highest, shift);
      lowest = other_low < lowest ? other_low : lowest;
      highest = other_high > highest ? other_high : highest;
    }
    constant = lowest == highest;
  }
  __syncwarp();
  // Cumulative sums over the ranks, channel by channel, 32 ranks at a time.
  const int channels = count_width + (regression ? 1 : 0) + 1;
  for (int channel = 0; channel < channels; ++channel) {
    long long carry = 0;
    for (int first = 0; first < used; first += 32) {
      const int at = first + lane;
      const long long sum = WarpInclusiveSum(
          at < used ? ChannelCell(counts, values, bin_rows, channel, at, count_width, regression)
                    : 0);
      if (at < used) {
        SetChannelCell(counts, values, bin_rows, channel, at, count_width, regression, sum + carry);
      }
      carry += __shfl_sync(0xffffffffu, sum, 31);
    }
  }
  __syncwarp();
  const Histogram histogram{counts, values, bin_rows};
  const long long slot = static_cast<long long>(node_at) * positions + position;
  FeatureCut& cut = cuts[slot];
  std::uint32_t* bits = cut_bits + slot * words;
  int splittable = 0;
  double parent_score = 0;
  if (lane == 0) {
    CumulativeTotals(rules, histogram, ranks, used, parent);
    splittable = SplittableNode(rules, parent, count, node.depth, constant) ? 1 : 0;
    if (first_position == 0 && position == 0) {
      for (int k = 0; k < width; ++k) sums[node_at * static_cast<long long>(width) + k] = parent[k];
    }
    parent_score = SplitScore(rules, parent);
  }
  splittable = __shfl_sync(0xffffffffu, splittable, 0);
  parent_score = __shfl_sync(0xffffffffu, parent_score, 0);
  for (int word = lane; word < words; word += 32) bits[word] = 0;
  __syncwarp();
  FeatureCut best;
  StartFeatureCut(info, feature, best);
  if (!splittable) {
    if (lane == 0) {
      best.categorical = 0;
      best.left_rows = -1;
      cut = best;
    }
    return;
  }
  const CutPlan plan = PlanCuts(info, used_bins, used);
  double my_improvement = kNoCut;
  int my_candidate = plan.candidates;  // none
  long long my_left_rows = 0;
  for (int candidate = lane; candidate < plan.candidates; candidate += 32) {
    double improvement = 0;
    long long left_rows = 0;
    if (CandidateCut(rules, histogram, ranks, used, plan, count, parent, parent_score, candidate,
                     improvement, left_rows) &&
        improvement > my_improvement) {
      my_improvement = improvement;
      my_candidate = candidate;
      my_left_rows = left_rows;
    }
  }
  WarpFirstBest(my_improvement, my_candidate, my_left_rows);
  if (lane != 0) return;
  if (my_improvement > kNoCut) {
    SetCandidateCut(info, used_bins, plan, my_candidate, my_improvement, my_left_rows, best);
  }
  if (best.categorical && best.improvement > kNoCut) {
    for (int at = 0; at < used && used_bins[at] <= best.cut_bin; ++at) {
      bits[used_bins[at] / 32] |= 1u << (used_bins[at] % 32);
    }
  }
  cut = best;
}

__global__ void CombineNodeCuts(const FeatureCut* cuts, const std::uint32_t* cut_bits, int words,
                                int node_count, int positions, int first_valid_only,
                                int more_remain, NodeOutcome* outcomes, std::uint32_t* out_bits) {
  const int node = blockIdx.x * blockDim.x + threadIdx.x;
  if (node >= node_count) return;
  const FeatureCut* node_cuts = cuts + static_cast<long long>(node) * positions;
  NodeOutcome outcome;
  outcome.cut = node_cuts[0];
  int chosen = -1;
  if (node_cuts[0].left_rows < 0) {
    outcome.status = kNodeLeaf;
  } else {
    outcome.status =
        CombineCuts(node_cuts, positions, first_valid_only != 0, more_remain != 0, &chosen);
    if (chosen >= 0) outcome.cut = node_cuts[chosen];
  }
  outcomes[node] = outcome;
  std::uint32_t* bits = out_bits + static_cast<long long>(node) * words;
  const std::uint32_t* from =
      cut_bits + (static_cast<long long>(node) * positions + (chosen >= 0 ? chosen : 0)) * words;
  for (int word = 0; word < words; ++word) bits[word] = chosen >= 0 ? from[word] : 0u;
}

// Whether a row of bin `bin` goes to the split's left child.
__device__ int GoesLeft(const BatchSplit& split, const std::uint32_t* bits, int bin) {
  if (split.categorical) {
    return bin / 32 < split.bits_words && ((bits[split.bits_begin + bin / 32] >> (bin % 32)) & 1u);
  }
  return bin == split.missing_bin ? split.default_left : bin <= split.threshold_bin;
}

// Moves the row at position `at` of the split (`row`, read from the slot's order) and its tag to
// its place in the slot's scratch: the rows going left first, in order, then the others;
// `lefts_to_here` of the split's rows before it go left.
__device__ void PlaceRow(const DeviceTrees& trees, long long base, const BatchSplit& split,
                         long long at, std::int32_t row, int left, long long lefts_to_here) {
  const long long target = left
                               ? split.begin + lefts_to_here
                               : split.begin + split.left_rows + (at - split.begin - lefts_to_here);
  if (target >= split.begin && target < split.end) {
    trees.spare[base + target] = row;
    trees.spare_tags[base + target] = trees.tags[base + at];
  }
}

// Writes the split's rows at [first, last) to their places in the scratch (tags beside them), a
// block scan numbering each side's rows; `lefts_before` rows of the split before `first` go
// left. Returns (in every thread) the rows of the range that go left.
__device__ long long PartitionRange(const DeviceRows& data, const DeviceTrees& trees,
                                    const BatchSplit& split, const std::uint32_t* bits,
                                    long long first, long long last, long long lefts_before) {
  using Scan = cub::BlockScan<int, kScanThreads>;
  __shared__ typename Scan::TempStorage scan;
  const long long base = static_cast<long long>(split.slot) * data.rows;
  const std::int32_t* order = trees.order + base;
  long long lefts = 0;
  for (long long tile = first; tile < last; tile += kScanThreads) {
    const long long at = tile + threadIdx.x;
    int left = 0;
    std::int32_t row = 0;
    if (at < last) {
      row = order[at];
      left = GoesLeft(split, bits, BinAt(data, row, split.feature));
    }
    int offset = 0, total = 0;
    Scan(scan).ExclusiveSum(left, offset, total);
    if (at < last) PlaceRow(trees, base, split, at, row, left, lefts_before + lefts + offset);
    lefts += total;
    __syncthreads();  // before the scan's storage is used again
  }
  return lefts;
}

// Copies rows [first, last) of a slot's scratch back to its order, tags beside them: thread
// `thread` of `threads` takes every threads-th.
__device__ void CopyBack(const DeviceTrees& trees, long long base, long long first, long long last,
                         int thread, int threads) {
  for (long long at = first + thread; at < last; at += threads) {
    trees.order[base + at] = trees.spare[base + at];
    trees.tags[base + at] = trees.spare_tags[base + at];
  }
}

// A warp per split of `which` (indices into splits), kWarpSplitsPerBlock a block: the rows of
// a small split, 32 at a time, each side's numbered by a ballot.
__global__ void __launch_bounds__(32 * kWarpSplitsPerBlock)
    PartitionSmallSplits(DeviceRows data, DeviceTrees trees, const BatchSplit* splits,
                         const int* which, int count, const std::uint32_t* bits,
                         long long* left_counts) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int at_split = static_cast<int>(blockIdx.x) * kWarpSplitsPerBlock + threadIdx.x / 32;
  if (at_split >= count) return;
  const int index = which[at_split];
  const BatchSplit split = splits[index];
  const long long base = static_cast<long long>(split.slot) * data.rows;
  const std::int32_t* order = trees.order + base;
  long long lefts = 0;
  const unsigned below = (1u << lane) - 1u;
  for (long long tile = split.begin; tile < split.end; tile += 32) {
    const long long at = tile + lane;
    const bool in = at < split.end;
    std::int32_t row = 0;
    int left = 0;
    if (in) {
      row = order[at];
      left = GoesLeft(split, bits, BinAt(data, row, split.feature));
    }
    const unsigned lefts_here = __ballot_sync(0xffffffffu, left != 0);
    if (in) PlaceRow(trees, base, split, at, row, left, lefts + __popc(lefts_here & below));
    lefts += __popc(lefts_here);
  }
  __syncwarp();  // every write to the scratch before it is read back
  CopyBack(trees, base, split.begin, split.end, lane, 32);
  if (lane == 0) left_counts[index] = lefts;
}

// One block per split of `which` (indices into splits): the whole split's rows.
__global__ void __launch_bounds__(kScanThreads)
    PartitionSplit(DeviceRows data, DeviceTrees trees, const BatchSplit* splits, const int* which,
                   const std::uint32_t* bits, long long* left_counts) {
  const int index = which[blockIdx.x];
  const BatchSplit split = splits[index];
  const long long lefts = PartitionRange(data, trees, split, bits, split.begin, split.end, 0);
  __syncthreads();  // every write to the scratch before it is read back
  CopyBack(trees, static_cast<long long>(split.slot) * data.rows, split.begin, split.end,
           static_cast<int>(threadIdx.x), kScanThreads);
  if (threadIdx.x == 0) left_counts[index] = lefts;
}

// Large splits go in chunks of rows, a block each: their rows going left are counted, each
// chunk's count of lefts before it found by a scan over its split's chunks, and then each
// chunk's rows are placed as PartitionSplit places them.
__global__ void __launch_bounds__(kScanThreads)
    CountChunkLefts(DeviceRows data, DeviceTrees trees, const BatchSplit* splits,
                    const PartitionChunk* chunks, const std::uint32_t* bits,
                    long long* chunk_lefts) {
  using Reduce = cub::BlockReduce<int, kScanThreads>;
  __shared__ typename Reduce::TempStorage reduce;
  const PartitionChunk chunk = chunks[blockIdx.x];
  const BatchSplit split = splits[chunk.split];
  const std::int32_t* order = trees.order + static_cast<long long>(split.slot) * data.rows;
  int lefts = 0;  // a chunk holds fewer rows than an int counts
  for (long long at = chunk.begin + threadIdx.x; at < chunk.end; at += kScanThreads) {
    lefts += GoesLeft(split, bits, BinAt(data, order[at], split.feature));
  }
  const int total = Reduce(reduce).Sum(lefts);
  if (threadIdx.x == 0) chunk_lefts[blockIdx.x] = total;
}

// One block per large split: its chunks' counts become counts of lefts before each chunk, and
// their total the split's.
__global__ void __launch_bounds__(kScanThreads)
    ScanChunkLefts(const LargeSplit* large, long long* chunk_lefts, long long* left_counts) {
  using Scan = cub::BlockScan<long long, kScanThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ long long carry;
  const LargeSplit split = large[blockIdx.x];
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int tile = 0; tile < split.chunks; tile += kScanThreads) {
    const int at = tile + static_cast<int>(threadIdx.x);
    const long long count = at < split.chunks ? chunk_lefts[split.first_chunk + at] : 0;
    long long before = 0, total = 0;
    Scan(scan).ExclusiveSum(count, before, total);
    if (at < split.chunks) chunk_lefts[split.first_chunk + at] = carry + before;
    __syncthreads();
    if (threadIdx.x == 0) carry += total;
    __syncthreads();
  }
  if (threadIdx.x == 0) left_counts[split.split] = carry;
}

__global__ void __launch_bounds__(kScanThreads)
    PlaceChunk(DeviceRows data, DeviceTrees trees, const BatchSplit* splits,
               const PartitionChunk* chunks, const std::uint32_t* bits,
               const long long* lefts_before) {
  const PartitionChunk chunk = chunks[blockIdx.x];
  const BatchSplit split = splits[chunk.split];
  PartitionRange(data, trees, split, bits, chunk.begin, chunk.end, lefts_before[blockIdx.x]);
}

__global__ void __launch_bounds__(kScanThreads)
    CopyChunkBack(DeviceRows data, DeviceTrees trees, const BatchSplit* splits,
                  const PartitionChunk* chunks) {
  const PartitionChunk chunk = chunks[blockIdx.x];
  CopyBack(trees, static_cast<long long>(splits[chunk.split].slot) * data.rows, chunk.begin,
           chunk.end, static_cast<int>(threadIdx.x), kScanThreads);
}

int GridFor(long long count, int threads) {
  const long long blocks = (count + threads - 1) / threads;
  return static_cast<int>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace

void StartTrees(const DeviceRows& data, const DeviceTrees& trees, int slots,
                std::uint64_t first_tree, std::uint64_t seed, long long draws, long long* slot_rows,
                Stream stream) {
  const long long cells = data.rows * slots;
  if (draws > 0) {
    FillWeights<<<GridFor(cells, 256), 256, 0, stream>>>(trees.weights, cells, 0u);
    DrawBootstraps<<<GridFor(draws * slots, 256), 256, 0, stream>>>(trees.weights, data.rows, slots,
                                                                    first_tree, seed, draws);
  } else {
    FillWeights<<<GridFor(cells, 256), 256, 0, stream>>>(trees.weights, cells, 1u);
  }
  TFG_CUDA_CHECK(cudaGetLastError());
  CompactRows<<<slots, kScanThreads, 0, stream>>>(trees.weights, data.classes, trees.order,
                                                  trees.tags, data.rows, slot_rows);
  TFG_CUDA_CHECK(cudaGetLastError());
}

std::size_t EvaluateSharedBytes(int max_bins, int width, int features, bool regression) {
  const std::size_t cells = static_cast<std::size_t>(max_bins);
  const std::size_t histogram = regression ? cells * (sizeof(long long) + 2 * sizeof(std::uint32_t))
                                           : cells * (width + 1) * sizeof(std::uint32_t);
  // The feature order's scratch and the bins in use.
  return histogram + (static_cast<std::size_t>(features) + cells) * sizeof(int);
}

std::size_t EvaluateStaticSharedBytes() {
  cudaFuncAttributes attributes{};
  TFG_CUDA_CHECK(cudaFuncGetAttributes(&attributes, EvaluateFeature));
  return attributes.sharedSizeBytes;
}

namespace {

// The nodes of more than SmallNodeRows rows: a block per (node, position).
void EvaluateLarge(const DeviceRows& data, const DeviceTrees& trees, const SplitRules& rules,
                   const BatchNode* nodes, int node_count, int first_position, int positions,
                   FeatureCut* cuts, std::uint32_t* cut_bits, int words, double* sums,
                   Stream stream) {
  const std::size_t shared = EvaluateSharedBytes(data.max_bins, rules.width, rules.features,
                                                 rules.criterion == kCriterionSquaredError);
  // Set on the current device for every launch: the attribute is per device and cheap to set,
  // and with it the dynamic part may go past 48 KiB less the block's static part.
  TFG_CUDA_CHECK(cudaFuncSetAttribute(EvaluateFeature, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared)));
  // Blocks are short and many: room for as many as the registers allow.
  TFG_CUDA_CHECK(cudaFuncSetAttribute(EvaluateFeature,
                                      cudaFuncAttributePreferredSharedMemoryCarveout,
                                      static_cast<int>(cudaSharedmemCarveoutMaxShared)));
  const auto blocks = static_cast<unsigned>(static_cast<long long>(node_count) * positions);
  EvaluateFeature<<<blocks, kEvalThreads, shared, stream>>>(
      data, trees, rules, nodes, first_position, positions, cuts, cut_bits, words, sums);
  TFG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

int SmallNodeRows(const SplitRules& rules, int max_bins) {
  // Past 32 rows the bins in use are found from a bit per bin: at most kBitmapWords words.
  if (rules.extra_trees) return 0;
  const bool regression = rules.criterion == kCriterionSquaredError;
  for (int rows = kSmallMaxRows; rows >= 32; rows /= 2) {
    if (rows > 32 && max_bins > 32 * kBitmapWords) continue;
    const std::size_t block =
        (kSmallThreads / 32) * SmallWarpBytes(rows, rules.width, rules.features, regression);
    if (block <= kSmallBlockBytes) return rows;
  }
  return 0;
}

void EvaluateNodes(const DeviceRows& data, const DeviceTrees& trees, const SplitRules& rules,
                   const BatchNode* nodes, int node_count, int small_count, int small_rows,
                   int first_position, int positions, FeatureCut* cuts, std::uint32_t* cut_bits,
                   int words, double* sums, NodeOutcome* outcomes, std::uint32_t* out_bits,
                   Stream stream) {
  if (node_count == 0) return;
  if (small_count > 0) {
    const bool regression = rules.criterion == kCriterionSquaredError;
    const std::size_t block_bytes =
        (kSmallThreads / 32) * SmallWarpBytes(small_rows, rules.width, rules.features, regression);
    TFG_CUDA_CHECK(cudaFuncSetAttribute(EvaluateSmallFeature,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(block_bytes)));
    const long long items = static_cast<long long>(small_count) * positions;
    const auto blocks =
        static_cast<unsigned>((items + kSmallThreads / 32 - 1) / (kSmallThreads / 32));
    EvaluateSmallFeature<<<blocks, kSmallThreads, block_bytes, stream>>>(
        data, trees, rules, nodes, small_count, small_rows, first_position, positions, cuts,
        cut_bits, words, sums);
    TFG_CUDA_CHECK(cudaGetLastError());
  }
  const int large_count = node_count - small_count;
  if (large_count > 0) {
    const long long skipped = static_cast<long long>(small_count) * positions;
    EvaluateLarge(
        data, trees, rules, nodes + small_count, large_count, first_position, positions,
        cuts + skipped, cut_bits + skipped * words, words,
        first_position == 0 ? sums + static_cast<long long>(small_count) * rules.width : sums,
        stream);
  }
  CombineNodeCuts<<<(node_count + 127) / 128, 128, 0, stream>>>(
      cuts, cut_bits, words, node_count, positions, first_position > 0 ? 1 : 0,
      first_position + positions < rules.features ? 1 : 0, outcomes, out_bits);
  TFG_CUDA_CHECK(cudaGetLastError());
}

void PartitionNodes(const DeviceRows& data, const DeviceTrees& trees, const BatchSplit* splits,
                    const std::uint32_t* bits, const PartitionLists& lists, long long* left_counts,
                    Stream stream) {
  const int* small = lists.small;
  const int small_count = lists.small_count;
  const int* whole = lists.whole;
  const int whole_count = lists.whole_count;
  const PartitionChunk* chunks = lists.chunks;
  const int chunk_count = lists.chunk_count;
  const LargeSplit* large = lists.large;
  const int large_count = lists.large_count;
  long long* chunk_lefts = lists.chunk_lefts;
  if (small_count > 0) {
    PartitionSmallSplits<<<(small_count + kWarpSplitsPerBlock - 1) / kWarpSplitsPerBlock,
                           32 * kWarpSplitsPerBlock, 0, stream>>>(data, trees, splits, small,
                                                                  small_count, bits, left_counts);
    TFG_CUDA_CHECK(cudaGetLastError());
  }
  if (whole_count > 0) {
    PartitionSplit<<<whole_count, kScanThreads, 0, stream>>>(data, trees, splits, whole, bits,
                                                             left_counts);
    TFG_CUDA_CHECK(cudaGetLastError());
  }
  if (chunk_count > 0) {
    CountChunkLefts<<<chunk_count, kScanThreads, 0, stream>>>(data, trees, splits, chunks, bits,
                                                              chunk_lefts);
    ScanChunkLefts<<<large_count, kScanThreads, 0, stream>>>(large, chunk_lefts, left_counts);
    PlaceChunk<<<chunk_count, kScanThreads, 0, stream>>>(data, trees, splits, chunks, bits,
                                                         chunk_lefts);
    CopyChunkBack<<<chunk_count, kScanThreads, 0, stream>>>(data, trees, splits, chunks);
    TFG_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace tabforge::forest::kernels
