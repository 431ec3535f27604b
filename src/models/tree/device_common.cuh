// Pieces the CUDA grower's kernel files share (device_rows.cu, device_select.cu): launch
// shapes, cell accessors, warp reductions, the lookups of a batch's work items, and the
// launchers of device_rows.cu that the entry points of device_select.cu call. CUDA-only (.cu
// files).
#pragma once

#include <algorithm>
#include <cstdint>

#include "device/cuda_check.h"
#include "models/tree/device_kernels.h"

namespace tabforge::tree::kernels {

inline constexpr int kThreads = 256;
// Threads of a histogram block: two such blocks per multiprocessor (SharedHistogramCells sizes
// their shared memory for two) fill its register file at 64 registers a thread, which the
// kernel's launch bounds ask for (it compiles without spills).
inline constexpr int kHistogramThreads = 512;
// Rows one shared-memory histogram chunk sums. Its 32-bit cells stay exact: a row's quantized
// gradient is at most MaxGradientLevel(rows) = (2^31 - 1) / rows in magnitude, and 16-bit
// hessian halves times this fit 32 bits.
inline constexpr std::int64_t kRowsPerBlock = 32768;
// Fewest rows a shared-memory histogram chunk takes (below it, zeroing and flushing dominate).
inline constexpr std::int64_t kMinRowsPerBlock = 2048;
// Rows of one chunk of the global-memory histogram.
inline constexpr std::int64_t kWideRows = 2048;
// Thresholds one scan work item (a warp) takes, as tiles of 32 loaded at once.
inline constexpr int kScanTiles = kScanChunk / 32;
inline constexpr int kSelectThreads = kThreads;  // the scan's blocks select too
inline constexpr int kSplitsPerThread = (kMaxLeaves + kSelectThreads - 1) / kSelectThreads;
// Features one histogram thread takes of each row it reads.
inline constexpr int kFeaturesPerThread = 4;
// Rows whose loads a histogram thread has in flight before it adds them (4 was no faster on
// an H100: 1M rows 2.95 s against 2.92 s, 10M 5.08 s against 5.05 s).
inline constexpr int kHistogramRowsInFlight = 2;
// Positions of one partition work item: kRowsPerThread per thread.
inline constexpr int kRowsPerThread = 4;
inline constexpr std::int64_t kPartitionRows = kRowsPerThread * kThreads;

static_assert(sizeof(HistogramBin) == 16, "a histogram cell is two 64-bit words");
static_assert(sizeof(GradientPair) == 8, "a gradient pair is two 32-bit words");

// Over a warp: the index of the largest key, the lowest index among equal keys; -1 where every
// key is zero (none).
__device__ inline int WarpArgMax(unsigned long long key, int index) {
#if __CUDA_ARCH__ >= 800
  const unsigned high = __reduce_max_sync(0xffffffffu, static_cast<unsigned>(key >> 32));
  const unsigned low = __reduce_max_sync(
      0xffffffffu, static_cast<unsigned>(key >> 32) == high ? static_cast<unsigned>(key) : 0u);
  const bool top =
      key != 0 && static_cast<unsigned>(key >> 32) == high && static_cast<unsigned>(key) == low;
  return static_cast<int>(
      __reduce_min_sync(0xffffffffu, top ? static_cast<unsigned>(index) : 0xffffffffu));
#else
  for (int shift = 16; shift > 0; shift >>= 1) {
    const unsigned long long other_key = __shfl_down_sync(0xffffffffu, key, shift);
    const int other = __shfl_down_sync(0xffffffffu, index, shift);
    if (other_key > key || (other_key == key && other_key != 0 && other < index)) {
      key = other_key;
      index = other;
    }
  }
  return __shfl_sync(0xffffffffu, key != 0 ? index : -1, 0);
#endif
}

// Programmatic dependent launch (compute capability 9.0 and above): a kernel launched by
// LaunchAfter is launched while the kernel ahead of it in the stream is still running, so its
// launch overlaps that kernel's end; it calls WaitForPrevious before it touches global memory,
// which returns once that kernel is complete and its writes are visible. (None of the kernels
// lets its successor start before it ends: blocks resident early, waiting, made a batch slower.)
// WaitForPrevious is a no-op on older devices and for a kernel launched the ordinary way.
__device__ inline void WaitForPrevious() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Launches kernel<<<grid, block, shared, stream>>>(args...), as a dependent launch where
// context.dependent_launch says the device supports it; `name` names the kernel in errors.
template <typename... Params, typename... Args>
void LaunchAfter(const GrowContext& context, const char* name, void (*kernel)(Params...), dim3 grid,
                 dim3 block, std::size_t shared, cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = context.dependent_launch != 0 ? 1 : 0;
  const cudaError_t error = cudaLaunchKernelEx(&config, kernel, args...);
  if (error != cudaSuccess) {
    cudaGetLastError();  // reported here, not by a later check
    device::ThrowCudaError(error, name, __FILE__, __LINE__);
  }
}

inline int GridFor(std::int64_t items, int per_thread = 1) {
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

// Position `at` of one half of the row order (GrowContext::half) in the other half.
__device__ inline long long OtherHalf(long long at, long long half) {
  return at < half ? at + half : at - half;
}

// The smaller child of a batch split: positions [begin, begin + count) of the row order.
__device__ inline void SmallerChild(const BatchSplit& split, std::int64_t& begin,
                                    std::int64_t& count) {
  begin = split.smaller_is_left ? split.target : split.target + split.lefts;
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

// Work item `item` of a finished tree's leaf work list (chunks[l]: tree leaf l's first item,
// ranges[2l, 2l + 1): its positions): the leaf, and positions [begin, end) of at most
// kLeafChunk.
struct LeafChunk {
  int leaf;
  std::int64_t begin;
  std::int64_t end;
};

__device__ inline LeafChunk LeafChunkOf(const long long* ranges, const int* chunks, int leaves,
                                        int item) {
  LeafChunk chunk;
  chunk.leaf = SplitOfItem(chunks, leaves, item);
  chunk.begin = ranges[2 * chunk.leaf] + std::int64_t(item - chunks[chunk.leaf]) * kLeafChunk;
  const std::int64_t leaf_end = ranges[2 * chunk.leaf + 1];
  chunk.end = chunk.begin + kLeafChunk < leaf_end ? chunk.begin + kLeafChunk : leaf_end;
  return chunk;
}

// device_rows.cu's launchers (each checks its launch).
// The batch's partitions (rows to the other half of the row order).
void LaunchPartition(const GrowContext& context, cudaStream_t stream);
// The batch's smaller children's histograms (shared-memory and wide groups).
void LaunchHistograms(const GrowContext& context, cudaStream_t stream);
// The parent-minus-child subtractions.
void LaunchFinish(const GrowContext& context, cudaStream_t stream);
// The root's sums from its histogram.
void LaunchRootTotal(const GrowContext& context, cudaStream_t stream);

}  // namespace tabforge::tree::kernels
