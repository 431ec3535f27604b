// The CUDA grower's row kernels: a batch's partitions, its smaller children's histograms as
// integer sums with shared-memory atomics (so the order of addition cannot matter), the
// parent-minus-child subtractions, and the root's sums. Each reads its work items from
// the growth state the previous selection wrote (device_select.cu), so its launch shape is fixed.
#include <type_traits>

#include "device/cuda_check.h"
#include "models/tree/device_common.cuh"

namespace tabforge::tree::kernels {
namespace {

// A histogram block's pending splits and its feature group [first, last) (blockIdx.y of the
// launch's groups).
struct BlockGroup {
  int count;
  int first;
  int last;
};

__device__ inline BlockGroup GroupOfBlock(const GrowContext& context, const int* groups) {
  return {context.state->batch_count, groups[2 * blockIdx.y], groups[2 * blockIdx.y + 1]};
}

// Row r's cells of features [first, first + 4) (first a multiple of 4) as one aligned load.
static_assert(kFeaturesPerThread == 4 && kSlabFeatures == 4, "FourBins loads four cells");
__device__ inline void FourBins(const std::uint8_t* bins, int stride, std::int32_t row, int first,
                                int* out) {
  const std::uint32_t word = __ldg(reinterpret_cast<const std::uint32_t*>(
      bins + static_cast<std::size_t>(row) * stride + first));
  for (int j = 0; j < 4; ++j) out[j] = static_cast<int>((word >> (8 * j)) & 0xffu);
}
__device__ inline void FourBins(const std::uint16_t* bins, int stride, std::int32_t row, int first,
                                int* out) {
  const uint2 word =
      __ldg(reinterpret_cast<const uint2*>(bins + static_cast<std::size_t>(row) * stride + first));
  out[0] = static_cast<int>(word.x & 0xffffu);
  out[1] = static_cast<int>(word.x >> 16);
  out[2] = static_cast<int>(word.y & 0xffffu);
  out[3] = static_cast<int>(word.y >> 16);
}

// Adds a row's gradient pair to the shared-memory cell `at` of a block's sums (four planes of
// `cells` words: gradient, count, hessian's low and high 16 bits; see HistogramKernel).
__device__ inline void AddToCell(std::uint32_t* at, int cells, const GradientPair& pair) {
  atomicAdd(at, static_cast<std::uint32_t>(pair.gradient));
  atomicAdd(at + cells, 1u);
  atomicAdd(at + 2 * cells, pair.hessian & 0xffffu);
  atomicAdd(at + 3 * cells, pair.hessian >> 16);
}

// Histograms of the batch's smaller children for the features of group g = blockIdx.y:
// [groups[2g], groups[2g + 1]), summed in shared memory. A work item is a contiguous run of at
// most kRowsPerBlock rows of one child (or, for a child of at most kSlabChildRows rows, a slab:
// the group's features in one aligned word of 4 of a run of at most kSlabRows rows). A block
// sums at most kRowsPerBlock rows (one slab, or consecutive chunks of one child) before it
// flushes, so its per-cell sums fit 32-bit words: the quantized gradient sum, the count, and the
// fixed-point hessian as two 16-bit halves (32-bit shared atomics are native; 64-bit ones are
// compare-and-swap loops). The four sums are four planes of `cells` words, not four
// neighbouring words of a cell: a warp's atomics on random cells then spread over all 32 banks
// instead of the 8 that words of one kind would share. The nonzero cells are then added, in 64
// bits, to the histogram: integer sums, so the order of addition cannot matter.
template <typename Bin>
__global__ void __launch_bounds__(kHistogramThreads, 2)
    HistogramKernel(GrowContext context, const Bin* bins) {
  extern __shared__ std::uint32_t words[];
  WaitForPrevious();
  const BlockGroup group = GroupOfBlock(context, context.groups.shared);
  if (group.count == 0) return;  // a batch queued after the tree is complete
  const int count = group.count;
  const int chunks = context.state->histogram_chunks;
  const int stride = context.bins.stride;
  const std::int64_t* offsets = context.groups.offsets;
  const int first = group.first;
  const int last = group.last;
  const int group_features = last - first;
  const std::int64_t base = offsets[first];
  const int cells = static_cast<int>(offsets[last] - base);
  // Adds the block's sums of cells [low, high) to the split's histogram (nonzero ones only).
  auto flush = [&](Word* histogram, int low, int high) {
    Word* out = histogram + 2 * base;
    for (int cell = low + static_cast<int>(threadIdx.x); cell < high; cell += blockDim.x) {
      const std::uint32_t* at = words + cell;
      const std::uint32_t cell_count = at[cells];
      if (cell_count == 0) continue;
      const long long gradient = static_cast<std::int32_t>(at[0]);
      atomicAdd(&out[2 * cell], static_cast<Word>(gradient * (1ll << 32) + cell_count));
      atomicAdd(&out[2 * cell + 1],
                static_cast<Word>(at[2 * cells]) + (static_cast<Word>(at[3 * cells]) << 16));
    }
  };
  auto zero = [&](int low, int high) {
    if (low == 0 && high == cells) {
      for (int word = threadIdx.x; word < 4 * cells; word += blockDim.x) words[word] = 0;
      return;
    }
    const int width = high - low;
    for (int at = threadIdx.x; at < 4 * width; at += blockDim.x) {
      const int plane = at / width;
      words[plane * cells + low + (at - plane * width)] = 0;
    }
  };
  // Block b takes items [b * per, (b + 1) * per), per = ceil(chunks / blocks): consecutive
  // chunks of one split mostly fall to the same block, whose sums stay in the shared cells (up to
  // kRowsPerBlock rows, the bound that keeps them exact) and are flushed once, not once a chunk.
  // With no more items than blocks, block b takes item b: the first blocks work, the rest exit.
  const int per = (chunks + static_cast<int>(gridDim.x) - 1) / static_cast<int>(gridDim.x);
  const int item_begin =
      static_cast<int>(blockIdx.x) * per < chunks ? static_cast<int>(blockIdx.x) * per : chunks;
  const int item_end = item_begin + per < chunks ? item_begin + per : chunks;
  int open = -1;  // the split whose chunk sums the shared cells hold (block-uniform)
  std::int64_t open_rows = 0;
  auto close = [&] {
    if (open < 0) return;
    __syncthreads();
    flush(context.batch[open].smaller, 0, cells);
    __syncthreads();  // the shared cells are zeroed for the next item
    open = -1;
  };
  for (int item = item_begin; item < item_end; ++item) {
    const int s = SplitOfItem(context.histogram_prefix, count, item);
    const BatchSplit& split = context.batch[s];
    std::int64_t begin = 0;
    std::int64_t child_rows = 0;
    SmallerChild(split, begin, child_rows);
    const std::int32_t* child = context.order + begin;
    const std::int64_t chunk_rows = context.histogram_rows[s];
    if (chunk_rows == 0) {
      close();
      // A slab: the group's features in the item's aligned word of 4, of one run of kSlabRows
      // of the child's rows.
      const int runs = static_cast<int>((child_rows + kSlabRows - 1) / kSlabRows);
      const int local = item - context.histogram_prefix[s];
      const int slab = local / runs;
      const int run = local - slab * runs;
      const int word_first = (first / kSlabFeatures + slab) * kSlabFeatures;
      const int slab_first = word_first > first ? word_first : first;
      const int slab_last = word_first + kSlabFeatures < last ? word_first + kSlabFeatures : last;
      if (slab_first >= slab_last) continue;  // past this group's features (the same for all)
      const int low = static_cast<int>(offsets[slab_first] - base);
      const int high = static_cast<int>(offsets[slab_last] - base);
      zero(low, high);
      int cell_base[kSlabFeatures];
      for (int j = 0; j < kSlabFeatures; ++j) {
        const int feature = word_first + j;
        cell_base[j] = feature >= slab_first && feature < slab_last
                           ? static_cast<int>(offsets[feature] - base)
                           : -1;
      }
      __syncthreads();
      auto add_row = [&](const GradientPair& pair, const int* row_bins) {
        for (int j = 0; j < kSlabFeatures; ++j) {
          if (cell_base[j] < 0) continue;
          AddToCell(words + cell_base[j] + row_bins[j], cells, pair);
        }
      };
      constexpr int kInFlight = kHistogramRowsInFlight;
      const std::int64_t run_first = static_cast<std::int64_t>(run) * kSlabRows;
      const int rows =
          static_cast<int>(kSlabRows < child_rows - run_first ? kSlabRows : child_rows - run_first);
      const std::int32_t* run_rows = child + run_first;
      const int step = static_cast<int>(blockDim.x);
      int position = static_cast<int>(threadIdx.x);
      for (; position + (kInFlight - 1) * step < rows; position += kInFlight * step) {
        GradientPair pair[kInFlight];
        int row_bins[kInFlight][kSlabFeatures];
        for (int k = 0; k < kInFlight; ++k) {
          const std::int32_t row = run_rows[position + k * step];
          pair[k] = context.pairs[row];
          FourBins(bins, stride, row, word_first, row_bins[k]);
        }
        for (int k = 0; k < kInFlight; ++k) add_row(pair[k], row_bins[k]);
      }
      for (; position < rows; position += step) {
        const std::int32_t row = run_rows[position];
        int row_bins[kSlabFeatures];
        FourBins(bins, stride, row, word_first, row_bins);
        add_row(context.pairs[row], row_bins);
      }
      __syncthreads();
      flush(split.smaller, low, high);
      __syncthreads();  // the shared cells are zeroed for the next item
      continue;
    }
    const std::int64_t first_row = std::int64_t(item - context.histogram_prefix[s]) * chunk_rows;
    const std::int64_t rows =
        chunk_rows < child_rows - first_row ? chunk_rows : child_rows - first_row;
    if (open != s || open_rows + rows > kRowsPerBlock) {
      close();
      zero(0, cells);
      __syncthreads();
      open = s;
      open_rows = 0;
    }
    open_rows += rows;
    const std::int32_t* block_rows = child + first_row;
    auto add = [&](std::int32_t row, int feature, int cell_base) {
      const GradientPair pair = context.pairs[row];
      AddToCell(words + cell_base + BinOf(bins, stride, row, feature), cells, pair);
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
            AddToCell(words + cell_base[j] + row_bins[j], cells, pair);
          }
        };
        // A thread's cells of a row: one aligned word when its first feature is a multiple
        // of 4 (the device rows are padded to a multiple of 4 cells), else cell by cell.
        const bool whole_word = first_feature % kFeaturesPerThread == 0;
        auto load_bins = [&](std::int32_t row, int* row_bins) {
          if (whole_word) {
            FourBins(bins, stride, row, first_feature, row_bins);
          } else {
            for (int j = 0; j < kFeaturesPerThread; ++j) {
              const int feature = j < features_here ? first_feature + j : first_feature;
              row_bins[j] = BinOf(bins, stride, row, feature);
            }
          }
        };
        // kHistogramRowsInFlight rows' loads are issued before any of their atomics.
        constexpr int kInFlight = kHistogramRowsInFlight;
        int position = row_lane;
        for (; position + (kInFlight - 1) * rows_per_pass < static_cast<int>(rows);
             position += kInFlight * rows_per_pass) {
          std::int32_t row[kInFlight];
          GradientPair pair[kInFlight];
          int row_bins[kInFlight][kFeaturesPerThread];
          for (int k = 0; k < kInFlight; ++k) row[k] = block_rows[position + k * rows_per_pass];
          for (int k = 0; k < kInFlight; ++k) {
            pair[k] = context.pairs[row[k]];
            load_bins(row[k], row_bins[k]);
          }
          for (int k = 0; k < kInFlight; ++k) add_row(row[k], pair[k], row_bins[k]);
        }
        for (; position < static_cast<int>(rows); position += rows_per_pass) {
          const std::int32_t row = block_rows[position];
          const GradientPair pair = context.pairs[row];
          int row_bins[kFeaturesPerThread];
          load_bins(row, row_bins);
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
  }
  close();
}

// The same for features too wide for shared memory (16-bit bins): straight into the histogram
// with 64-bit global atomics, in chunks of kWideRows rows.
template <typename Bin>
__global__ void WideHistogramKernel(GrowContext context, const Bin* bins) {
  WaitForPrevious();
  const BlockGroup group = GroupOfBlock(context, context.groups.global);
  if (group.count == 0) return;  // a batch queued after the tree is complete
  const int group_features = group.last - group.first;
  for (int item = blockIdx.x; item < context.state->wide_chunks; item += gridDim.x) {
    const int s = SplitOfItem(context.wide_prefix, group.count, item);
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
      const int feature = group.first + static_cast<int>(at - position * group_features);
      const std::int32_t row = context.order[begin + first_row + position];
      const GradientPair pair = context.pairs[row];
      const std::int64_t cell =
          context.groups.offsets[feature] + BinOf(bins, context.bins.stride, row, feature);
      atomicAdd(&split.smaller[2 * cell],
                static_cast<Word>(static_cast<long long>(pair.gradient) * (1ll << 32) + 1));
      atomicAdd(&split.smaller[2 * cell + 1], static_cast<Word>(pair.hessian));
    }
  }
}

// Whether a row goes left at a split (the CPU's Partition rule), from the column-major cells.
template <typename Bin>
__device__ inline bool GoesLeft(const Bin* columns, std::int64_t rows, const SplitRule& rule,
                                std::int32_t row) {
  const int bin = columns[rule.feature * rows + row];
  if (rule.categorical) {
    return bin < kMaxCategoryBins && ((rule.bitset[bin / 32] >> (bin % 32)) & 1u);
  }
  return bin == rule.missing_bin ? rule.default_left : bin <= rule.threshold_bin;
}

// The batch's rows go to the other half of the row order: a split's left ones from target,
// right ones from target + lefts.
// A work item is kPartitionRows positions of one split, kRowsPerThread per thread (their loads
// all in flight before any is needed); it takes its slots with one atomic per side (the warps'
// counts scanned in shared memory): the root of a large problem otherwise queues every warp of
// the grid on the same two counters. Within a side the order is not kept (nothing downstream
// depends on the order of a leaf's rows: every sum is an integer).
template <typename Bin>
__global__ void PartitionKernel(GrowContext context, const Bin* columns) {
  WaitForPrevious();
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
      left[k] = present[k] && GoesLeft(columns, context.bins.rows, split.rule, row[k]);
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
        context.order[next_left + __popc(lefts[k] & below)] = row[k];
      } else if (present[k]) {
        context.order[next_right + __popc(rights[k] & below)] = row[k];
      }
      next_left += __popc(lefts[k]);
      next_right += __popc(rights[k]);
    }
    __syncthreads();  // the shared counts are rewritten by the next item
  }
}

// After the histograms: each split's parent histogram becomes its larger child's
// (larger -= smaller).
__global__ void FinishKernel(GrowContext context) {
  WaitForPrevious();
  const int count = context.state->batch_count;
  if (count == 0) return;  // a batch queued after the tree is complete
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
  WaitForPrevious();
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

// Calls launch(cells) with the bin matrix's 8- or 16-bit cells (one kernel instantiation each).
template <typename Launch>
void ForCellWidth(const DeviceBins& bins, Launch launch) {
  if (bins.bins16 != nullptr) {
    launch(bins.bins16);
  } else {
    launch(bins.bins8);
  }
}

}  // namespace

void LaunchPartition(const GrowContext& context, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(context.max_blocks);
  if (context.bins.columns16 != nullptr) {
    PartitionKernel<<<blocks, kThreads, 0, stream>>>(context, context.bins.columns16);
  } else {
    PartitionKernel<<<blocks, kThreads, 0, stream>>>(context, context.bins.columns8);
  }
  CheckLaunch("PartitionKernel");
}

int SharedHistogramCells() {
  int device = 0;
  int per_block = 0;
  int per_multiprocessor = 0;
  int reserved = 0;
  TFG_CUDA_CHECK(cudaGetDevice(&device));
  TFG_CUDA_CHECK(
      cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  TFG_CUDA_CHECK(cudaDeviceGetAttribute(&per_multiprocessor,
                                        cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  TFG_CUDA_CHECK(
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  constexpr int kCellBytes = 4 * sizeof(std::uint32_t);
  const int bytes =
      std::max(std::min(per_block, per_multiprocessor / 2 - reserved), kSharedCells * kCellBytes);
  const int cells = bytes / kCellBytes;
  TFG_CUDA_CHECK(cudaFuncSetAttribute(HistogramKernel<std::uint8_t>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      cells * kCellBytes));
  TFG_CUDA_CHECK(cudaFuncSetAttribute(HistogramKernel<std::uint16_t>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      cells * kCellBytes));
  return cells;
}

void LaunchHistograms(const GrowContext& context, cudaStream_t stream) {
  const HistogramGroups& groups = context.groups;
  if (groups.shared_count > 0) {
    const dim3 grid(static_cast<unsigned>(context.max_blocks),
                    static_cast<unsigned>(groups.shared_count));
    const std::size_t bytes =
        4 * sizeof(std::uint32_t) * static_cast<std::size_t>(groups.shared_cells);
    ForCellWidth(context.bins, [&](const auto* bins) {
      using Bin = std::remove_cv_t<std::remove_pointer_t<decltype(bins)>>;
      LaunchAfter(context, "HistogramKernel", HistogramKernel<Bin>, grid, dim3(kHistogramThreads),
                  bytes, stream, context, bins);
    });
  }
  if (groups.global_count > 0) {
    const dim3 grid(static_cast<unsigned>(context.max_blocks),
                    static_cast<unsigned>(groups.global_count));
    ForCellWidth(context.bins, [&](const auto* bins) {
      using Bin = std::remove_cv_t<std::remove_pointer_t<decltype(bins)>>;
      LaunchAfter(context, "WideHistogramKernel", WideHistogramKernel<Bin>, grid, dim3(kThreads), 0,
                  stream, context, bins);
    });
  }
}

void LaunchFinish(const GrowContext& context, cudaStream_t stream) {
  LaunchAfter(context, "FinishKernel", FinishKernel,
              dim3(static_cast<unsigned>(context.max_blocks)), dim3(kThreads), 0, stream, context);
}

void LaunchRootTotal(const GrowContext& context, cudaStream_t stream) {
  LaunchAfter(context, "RootTotalKernel", RootTotalKernel, dim3(1), dim3(32), 0, stream, context);
}

}  // namespace tabforge::tree::kernels
