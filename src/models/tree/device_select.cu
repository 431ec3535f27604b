// The CUDA grower's selection and entry points: the scan-and-select launch whose last block
// replays the CPU's best-first choices (grower_loop.h) on the device and writes the next batch,
// the root's set-up, the leaf values of a finished tree, and the functions device_kernels.h
// declares. Every kernel of a batch reads its work from the growth state the previous
// selection wrote, so a batch has fixed launch shapes and can be replayed as one captured graph.
#include <cstddef>
#include <cub/cub.cuh>
#include <mutex>

#include "core/portable_math.h"
#include "device/cuda_check.h"
#include "models/tree/device_common.cuh"
#include "models/tree/device_scan.cuh"

namespace tabforge::tree::kernels {
namespace {

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

// LeafBrief::taken: a split the tree has taken; in the selection's copy also a tree leaf.
inline constexpr int kTaken = 1;
inline constexpr int kTreeLeaf = 2;

// The share (percent) of the splits a tree has left among which open leaves further down than
// its own leaves are split ahead: a wider share takes fewer batches, with more histograms of
// splits the tree never takes, which large leaves make dear. On an H100, 500 rounds of 255
// leaves with 4 histogram slots a leaf (bench/results/2026-12-07-session20.md): 33 % took
// 1.59 s at 1M rows and 3.96 s at 10M, 40 % 1.54 / 3.98 s, 50 % 1.51 / 4.08 s; 25 % with 3
// slots 1.65 / 4.01 s.
inline constexpr int kDeepAheadPercent = 40;

// A device leaf's brief when it is opened below a parent whose path minima, its own gain
// appended, are `minima` (`count` long).
__device__ inline LeafBrief OpenBrief(const float* minima, int count) {
  LeafBrief brief;
  brief.gain = -INFINITY;
  for (int at = 0; at < kPathMinima; ++at) brief.minima[at] = minima[at];
  brief.minima_count = count;
  brief.taken = 0;
  brief.left = -1;
  brief.right = -1;
  return brief;
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
  const bool slabs = context.histogram_slabs > 0 && rows <= kSlabChildRows;
  context.histogram_rows[at] = slabs ? 0 : chunk_rows;
  SplitItems items;
  items.partition =
      split.partition
          ? static_cast<int>((split.end - split.begin + kPartitionRows - 1) / kPartitionRows)
          : 0;
  items.histogram =
      static_cast<int>(slabs ? context.histogram_slabs * ((rows + kSlabRows - 1) / kSlabRows)
                             : (rows + chunk_rows - 1) / chunk_rows);
  items.wide = static_cast<int>((rows + kWideRows - 1) / kWideRows);
  return items;
}

// Work items packed as partition (22 bits) | histogram (22 bits) << 22 | wide (20 bits) << 44.
// With fewer than 2^31 rows, a batch's totals fit: partition items cover the parents' rows,
// at most 2^31 / kPartitionRows + kMaxLeaves; histogram and wide items the smaller children's,
// at most 2^30 / kMinRowsPerBlock + kMaxLeaves and 2^30 / kWideRows + kMaxLeaves, with at most
// kMaxSlabItems more for slabs (the grower uses slabs only within that bound).
static_assert((1ll << 31) / kPartitionRows + kMaxLeaves < (1ll << 22));
static_assert((1ll << 30) / kMinRowsPerBlock + kMaxLeaves + kMaxSlabItems < (1ll << 22));
static_assert((1ll << 30) / kWideRows + kMaxLeaves < (1ll << 20));
__device__ inline unsigned long long PackItems(const SplitItems& items) {
  return static_cast<unsigned long long>(items.partition) |
         (static_cast<unsigned long long>(items.histogram) << 22) |
         (static_cast<unsigned long long>(items.wide) << 44);
}
__device__ inline SplitItems UnpackItems(unsigned long long packed) {
  return {static_cast<int>(packed & ((1ull << 22) - 1)),
          static_cast<int>((packed >> 22) & ((1ull << 22) - 1)), static_cast<int>(packed >> 44)};
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
  state.ranked_count = 0;
  OpenLeaf(context.leaves[0], 0, count, 0, 0, 0, 0, 0);
  const float none[kPathMinima] = {};
  context.briefs[0] = OpenBrief(none, 0);
  context.tree_to_device[0] = 0;
  context.scan_ids[0] = 0;
  BatchSplit root{};
  root.begin = 0;
  root.end = count;
  root.target = 0;
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

// A device leaf as the selection keeps it in shared memory: its gain, its split's children, and
// whether the tree took its split (kTaken) or holds it as a leaf (kTreeLeaf).
struct SelectLeaf {
  double gain;
  short left;
  short right;
  short taken;
};
static_assert(2 * kSlotsPerLeaf * kMaxLeaves < 32768, "device leaves fit a SelectLeaf's shorts");

// The selection's shared memory (dynamic): its copy of every device leaf, the open leaves'
// ranking keys and ids as staged (RankedStage: the last selection's order, then the batch's new
// leaves), the staged entries taken since, the tree leaves' device leaves and gains, the best
// open leaves in order and the leaves split ahead by rank.
struct SelectMemory {
  SelectLeaf* leaves;  // leaf_capacity
  RankKey* keys;       // leaf_capacity (reused for the splits' items and ListRepairPieces)
  double* view_gains;  // num_leaves
  int* open_ids;       // leaf_capacity
  int* view_ids;       // num_leaves
  int* by_rank;        // num_leaves
  int* top_ids;        // num_leaves: the open leaves' device leaves in best-first order
  int* removed;        // num_leaves: staged entries (indices) the replay took
};

inline std::size_t SelectMemoryBytes(int num_leaves, int capacity) {
  return static_cast<std::size_t>(capacity) * (sizeof(RankKey) + sizeof(SelectLeaf) + sizeof(int)) +
         static_cast<std::size_t>(num_leaves) * (sizeof(double) + 4 * sizeof(int));
}

__device__ inline SelectMemory CarveSelectMemory(void* base, int num_leaves, int capacity) {
  static_assert(sizeof(SelectLeaf) % 8 == 0, "leaves keep the 64-bit words after them aligned");
  SelectMemory memory;
  memory.keys = static_cast<RankKey*>(base);
  memory.leaves = reinterpret_cast<SelectLeaf*>(memory.keys + capacity);
  memory.view_gains = reinterpret_cast<double*>(memory.leaves + capacity);
  memory.open_ids = reinterpret_cast<int*>(memory.view_gains + num_leaves);
  memory.view_ids = memory.open_ids + capacity;
  memory.by_rank = memory.view_ids + num_leaves;
  memory.top_ids = memory.by_rank + num_leaves;
  memory.removed = memory.top_ids + num_leaves;
  return memory;
}

// An open leaf's RankKey (grow_order.h) from its brief.
__device__ inline RankKey RankKeyOf(const LeafBrief& brief) {
  return MakeRankKey(brief.minima, brief.minima_count, static_cast<float>(brief.gain));
}

// Reads of leaf records and briefs in the selection go through L2 (__ldcg): the scans of other
// blocks of the same launch wrote them.
template <typename Record>
__device__ inline Record LoadThroughL2(const Record* record) {
  static_assert(sizeof(Record) % 8 == 0, "a record is whole 64-bit words");
  Record copy;
  const unsigned long long* from = reinterpret_cast<const unsigned long long*>(record);
  unsigned long long* to = reinterpret_cast<unsigned long long*>(&copy);
  for (int word = 0; word < int(sizeof(Record) / 8); ++word) to[word] = __ldcg(from + word);
  return copy;
}

using Scan = cub::BlockScan<unsigned long long, kSelectThreads>;

// Once the tree is complete (the selection's view of it in `memory`, its leaves marked
// kTreeLeaf): the pieces RepairKernel copies, as a work list over device leaves
// (repair_ranges, repair_prefix); returns its work items. A tree leaf's range holds its rows
// unless a split two levels below it was made ahead: its grandchildren's partitions wrote over
// the range (their half of the row order is its half). Its rows are then the ranges of the
// device leaves below it that have no children (pieces): those an even number of levels down
// lie in its half already, those an odd number down are copied across. Reuses memory.keys.
__device__ int ListRepairPieces(const GrowContext& context, const SelectMemory& memory,
                                int device_leaves, Scan::TempStorage& scan_storage) {
  GrowState& state = *context.state;
  int* parent_of = reinterpret_cast<int*>(memory.keys);
  for (int id = threadIdx.x; id < device_leaves; id += blockDim.x) {
    const SelectLeaf leaf = memory.leaves[id];
    if (leaf.left >= 0) {
      parent_of[leaf.left] = id;
      parent_of[leaf.right] = id;
    }
    if (id == 0) parent_of[0] = 0;  // no device leaf's child
  }
  __syncthreads();
  unsigned long long chunks_before = 0;  // work items of the rounds before
  for (int first = 0; first < device_leaves; first += kSelectThreads * kSplitsPerThread) {
    unsigned long long piece_chunks[kSplitsPerThread];
    for (int k = 0; k < kSplitsPerThread; ++k) {
      const int id = first + static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
      piece_chunks[k] = 0;
      if (id >= device_leaves || memory.leaves[id].left >= 0) continue;
      int owner = id;
      int levels = 0;
      while (memory.leaves[owner].taken != kTreeLeaf && levels < device_leaves) {
        owner = parent_of[owner];
        ++levels;
      }
      if (memory.leaves[owner].taken != kTreeLeaf) {
        state.error = kGrowBadPartition;  // a device leaf below no tree leaf: never expected
        continue;
      }
      if (levels % 2 == 0) continue;
      const SelectLeaf tree_leaf = memory.leaves[owner];
      if (memory.leaves[tree_leaf.left].left < 0 && memory.leaves[tree_leaf.right].left < 0) {
        continue;  // nothing two levels down: the tree leaf's range is whole
      }
      const GrowLeaf* record = context.leaves + id;
      const long long begin = __ldcg(&record->begin);
      const long long end = __ldcg(&record->end);
      context.repair_ranges[2 * id] = begin;
      context.repair_ranges[2 * id + 1] = end;
      piece_chunks[k] =
          static_cast<unsigned long long>((end - begin + kLeafChunk - 1) / kLeafChunk);
    }
    __syncthreads();  // the scan storage is used again
    unsigned long long round_chunks = 0;
    Scan(scan_storage).ExclusiveSum(piece_chunks, piece_chunks, round_chunks);
    for (int k = 0; k < kSplitsPerThread; ++k) {
      const int id = first + static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
      if (id < device_leaves) {
        context.repair_prefix[id] = static_cast<int>(chunks_before + piece_chunks[k]);
      }
    }
    chunks_before += round_chunks;
  }
  return static_cast<int>(chunks_before);
}

// After a batch: checks its partitions, replays the best-first choices the CPU loop makes
// (LeafQueue's choice, then commit) as far as the splits made so far allow, and either marks the
// tree complete or writes the next batch: the leaf chosen next and, ahead of need, open leaves that
// best-first growth may take: the tree's other leaves, and leaves further down (children of
// splits made ahead), up to the splits left to make. The replay runs on copies of the tree
// leaves and of every device leaf in shared memory.
//
// The open leaves (a split found and not taken) are kept in best-first order from one selection
// to the next (ranked_keys, ranked_ids): a selection drops those its replay took and places the
// batch's new leaves among the rest (StagedPlace), instead of sorting a few hundred keys.
//
// Best-first growth takes leaves in the order of RankKey, so the tree's remaining splits are
// among the open leaves' best `remaining` by that order, or below them. Splitting those ahead,
// however deep below the tree's leaves, lets a batch reach a generation further down every
// branch the tree may take: a tree needs about as many batches as it is deep, not one for each
// time the best leaf is a child made by the last batch.
__device__ void Select(const GrowContext& context) {
  extern __shared__ unsigned long long select_words[];
  const SelectMemory memory =
      CarveSelectMemory(select_words, context.num_leaves, context.leaf_capacity);
  __shared__ int parents[kMaxLeaves];  // the batch's splits: the device leaves they split
  __shared__ int chosen_leaf;
  __shared__ int batch_size;
  __shared__ int tree_leaves;
  __shared__ int bad_partition;
  __shared__ int fresh_count;
  __shared__ int removed_count;
  GrowState& state = *context.state;
  const int lane = threadIdx.x % 32;
  if (state.done) {
    if (threadIdx.x == 0) PostStatus(context, false);
    return;
  }
  if (threadIdx.x == 0) {
    bad_partition = 0;
    fresh_count = 0;
    removed_count = 0;
  }
  __syncthreads();
  for (int s = threadIdx.x; s < state.batch_count; s += blockDim.x) {
    const BatchSplit& split = context.batch[s];
    if (split.partition &&
        (context.cursors[2 * s] != static_cast<unsigned long long>(split.target + split.lefts) ||
         context.cursors[2 * s + 1] !=
             static_cast<unsigned long long>(split.target + split.end - split.begin))) {
      bad_partition = 1;
    }
  }
  const int device_leaves = state.device_leaves;
  // The last selection's open leaves in order, then the leaves this batch scanned (the newest
  // device leaves) that may split; every device leaf.
  const int old_count = context.ahead ? state.ranked_count : 0;
  const int first_scanned = device_leaves - state.scan_count;
  for (int at = threadIdx.x; at < old_count; at += blockDim.x) {
    memory.keys[at] = context.ranked_keys[at];
    memory.open_ids[at] = context.ranked_ids[at];
  }
  // A brief's gain, taken and children words, kBriefsInFlight leaves a thread at a time (their
  // loads all issued before any is used); the whole brief only for the scanned leaves.
  static_assert(offsetof(LeafBrief, gain) == 0 && offsetof(LeafBrief, taken) == 36 &&
                    offsetof(LeafBrief, left) == 40 && offsetof(LeafBrief, right) == 44,
                "the words the selection reads of a brief");
  constexpr int kBriefsInFlight = 4;
  for (int first_id = 0; first_id < device_leaves; first_id += kBriefsInFlight * blockDim.x) {
    unsigned long long words[kBriefsInFlight][3];
    for (int k = 0; k < kBriefsInFlight; ++k) {
      const int id = first_id + k * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
      if (id >= device_leaves) continue;
      const unsigned long long* from =
          reinterpret_cast<const unsigned long long*>(context.briefs + id);
      words[k][0] = __ldcg(from);
      words[k][1] = __ldcg(from + offsetof(LeafBrief, taken) / 8);
      words[k][2] = __ldcg(from + offsetof(LeafBrief, left) / 8);
    }
    for (int k = 0; k < kBriefsInFlight; ++k) {
      const int id = first_id + k * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
      if (id >= device_leaves) continue;
      const double gain = __longlong_as_double(static_cast<long long>(words[k][0]));
      const int taken = static_cast<int>(words[k][1] >> 32);
      memory.leaves[id] = SelectLeaf{gain, static_cast<short>(static_cast<int>(words[k][2])),
                                     static_cast<short>(static_cast<int>(words[k][2] >> 32)),
                                     static_cast<short>(taken)};
      if (context.ahead && id >= first_scanned && taken != kTaken && gain > -INFINITY) {
        const int at = old_count + atomicAdd(&fresh_count, 1);
        memory.open_ids[at] = id;
        memory.keys[at] = RankKeyOf(LoadThroughL2(context.briefs + id));
      }
    }
  }
  const int start_leaves = state.tree_leaves;
  for (int leaf = threadIdx.x; leaf < start_leaves; leaf += blockDim.x) {
    memory.view_ids[leaf] = context.tree_to_device[leaf];
  }
  __syncthreads();
  for (int leaf = threadIdx.x; leaf < start_leaves; leaf += blockDim.x) {
    memory.view_gains[leaf] = memory.leaves[memory.view_ids[leaf]].gain;
  }
  __syncthreads();
  const bool failed = bad_partition != 0;
  if (threadIdx.x == 0 && failed) state.error = kGrowBadPartition;
  if (threadIdx.x < 32) {
    int leaves = start_leaves;
    int chosen = -1;
    while (!failed && leaves < context.num_leaves) {
      // LeafQueue's rule: the largest gain, the lowest leaf among equal gains.
      double best_gain = -INFINITY;
      int best = -1;
      for (int leaf = lane; leaf < leaves; leaf += 32) {
        const double gain = memory.view_gains[leaf];
        if (gain > -INFINITY && (best < 0 || gain > best_gain)) {
          best_gain = gain;
          best = leaf;
        }
      }
      chosen = WarpArgMax(best < 0 ? 0 : OrderedGain(best_gain), best);
      if (chosen < 0) break;
      const int id = memory.view_ids[chosen];
      if (memory.leaves[id].left < 0) break;  // not split yet: the next batch splits it
      __syncwarp();
      if (lane == 0) {
        SelectLeaf& parent = memory.leaves[id];
        parent.taken = kTaken;
        context.briefs[id].taken = kTaken;
        memory.view_ids[chosen] = parent.left;
        memory.view_gains[chosen] = memory.leaves[parent.left].gain;
        memory.view_ids[leaves] = parent.right;
        memory.view_gains[leaves] = memory.leaves[parent.right].gain;
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
    context.tree_to_device[leaf] = memory.view_ids[leaf];
    memory.leaves[memory.view_ids[leaf]].taken = kTreeLeaf;  // in shared memory only
  }
  __syncthreads();
  __shared__ typename Scan::TempStorage scan_storage;
  if (chosen < 0) {
    // The tree leaves' ranges and a work list over their rows (chunks of kLeafChunk
    // positions: leaf_prefix[l] is leaf l's first) for the leaf values and score updates.
    unsigned long long leaf_chunks[kSplitsPerThread];
    for (int k = 0; k < kSplitsPerThread; ++k) {
      const int leaf = static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
      leaf_chunks[k] = 0;
      if (leaf >= leaves) continue;
      const GrowLeaf* record = context.leaves + memory.view_ids[leaf];
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
    const int repair_chunks = ListRepairPieces(context, memory, device_leaves, scan_storage);
    if (threadIdx.x == 0) {
      context.repair_prefix[device_leaves] = repair_chunks;
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
  // The batch: the chosen leaf first, then (ahead) the tree's other leaves that may be taken,
  // best first, then open leaves further down, best first. Every split the tree still makes may
  // need a histogram of its own, so splits ahead leave that many free; splits further down also
  // leave num_leaves free for those of tree leaves.
  const int chosen_id = memory.view_ids[chosen];
  if (threadIdx.x == 0) {
    batch_size = 1;
    parents[0] = chosen_id;
  }
  const int remaining = context.num_leaves - leaves;  // splits left, the chosen one's included
  const int free_slots = context.slots - state.slots_used - remaining;
  const int ahead_room = context.ahead ? min(remaining - 1, free_slots) : 0;
  const int deep_room = min(ahead_room, free_slots - context.num_leaves);
  // The open leaves in best-first order (RankKey, then device leaf): the staged entries less
  // those the replay took, each at its place; the best `remaining` are kept, for this
  // selection's ranks and the next one. Only those are ever split ahead: a later selection's
  // `remaining` is less by the splits taken since, a leaf rises by no more places than leaves
  // taken from before it, and a leaf's descendants come after it, so a leaf past them stays
  // past (the replay, by exact gains, may still take it as the chosen leaf).
  int open = 0;
  if (context.ahead) {
    for (int at = threadIdx.x; at < old_count; at += blockDim.x) {
      if (memory.leaves[memory.open_ids[at]].taken == kTaken) {
        memory.removed[atomicAdd(&removed_count, 1)] = at;
      }
    }
    __syncthreads();
    const RankedStage stage{memory.keys, memory.open_ids, old_count,
                            fresh_count, memory.removed,  removed_count};
    const int staged = old_count + stage.fresh;
    open = min(staged - stage.removed_count, remaining);
    for (int at = threadIdx.x; at < staged; at += blockDim.x) {
      const int id = memory.open_ids[at];
      if (at < old_count && memory.leaves[id].taken == kTaken) continue;
      const int place = StagedPlace(stage, at);
      if (place >= remaining) continue;
      context.ranked_keys[place] = memory.keys[at];
      context.ranked_ids[place] = id;
      memory.top_ids[place] = id;
    }
    if (threadIdx.x == 0) state.ranked_count = open;
    __syncthreads();
  }
  if (ahead_room > 0) {
    // An open leaf's rank is its place in the kept list.
    for (int rank = threadIdx.x; rank < remaining; rank += blockDim.x) memory.by_rank[rank] = -1;
    __syncthreads();
    for (int rank = threadIdx.x; rank < open; rank += blockDim.x) {
      const int id = memory.top_ids[rank];
      if (id == chosen_id || memory.leaves[id].left >= 0) continue;
      const bool tree_leaf = memory.leaves[id].taken == kTreeLeaf;
      if (!tree_leaf && deep_room <= 0) continue;
      // Leaves further down only from the best kDeepAheadPercent: they wait on splits not yet
      // taken, and a wider share buys fewer batches with histograms the tree never uses.
      if (rank < (tree_leaf ? remaining : remaining * kDeepAheadPercent / 100)) {
        memory.by_rank[rank] = id;
      }
    }
    __syncthreads();
    // Positions: tree leaves by rank, then leaves further down by rank (counted in the upper
    // half of one scan's words).
    constexpr unsigned long long kDeep = 1ull << 32;
    unsigned long long positions[kSplitsPerThread];
    for (int k = 0; k < kSplitsPerThread; ++k) {
      const int rank = static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
      const int id = rank < remaining ? memory.by_rank[rank] : -1;
      positions[k] = id < 0 ? 0 : (memory.leaves[id].taken == kTreeLeaf ? 1 : kDeep);
    }
    unsigned long long totals = 0;
    Scan(scan_storage).ExclusiveSum(positions, positions, totals);
    const int tree_ranked = min(static_cast<int>(totals & 0xffffffffull), ahead_room);
    const int deep_ranked =
        min(static_cast<int>(totals >> 32), max(0, min(deep_room, ahead_room - tree_ranked)));
    for (int k = 0; k < kSplitsPerThread; ++k) {
      const int rank = static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
      const int id = rank < remaining ? memory.by_rank[rank] : -1;
      if (id < 0) continue;
      const int before_tree = static_cast<int>(positions[k] & 0xffffffffull);
      const int before_deep = static_cast<int>(positions[k] >> 32);
      if (memory.leaves[id].taken == kTreeLeaf) {
        if (before_tree < tree_ranked) parents[1 + before_tree] = id;
      } else if (before_deep < deep_ranked) {
        parents[1 + tree_ranked + before_deep] = id;
      }
    }
    if (threadIdx.x == 0) batch_size = 1 + tree_ranked + deep_ranked;
  }
  __syncthreads();
  const int count = batch_size;
  if (state.slots_used + count > context.slots ||
      state.device_leaves + 2 * count > context.leaf_capacity) {
    if (threadIdx.x == 0) {
      state.error = kGrowOutOfSlots;
      context.leaf_prefix[leaves] = 0;  // no leaf work: the host reports the error
      context.repair_prefix[state.device_leaves] = 0;
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
  // Thread t makes splits t, t + blockDim.x, ... (a batch of a few splits takes as many
  // threads), leaving each split's work items packed (PackItems: each total stays below its
  // field, so one block scan serves all three) in shared memory, where the stage's keys were.
  unsigned long long* split_items = reinterpret_cast<unsigned long long*>(memory.keys);
  for (int at = threadIdx.x; at < count; at += blockDim.x) {
    const int id = parents[at];
    const GrowLeaf parent = LoadThroughL2(context.leaves + id);
    const long long lefts = CellCount(parent.left_packed);
    const long long rights = parent.end - parent.begin - lefts;
    const int left = first_leaf + 2 * at;
    const int right = left + 1;
    const bool left_smaller = lefts <= rights;
    const int fresh = first_slot + at;
    const unsigned long long left_key = context.ahead ? 0 : nodes;
    const unsigned long long right_key = context.ahead ? 0 : nodes + 1;
    // The children's rows go to the same range of the other half of the row order.
    const long long target = OtherHalf(parent.begin, context.half);
    OpenLeaf(context.leaves[left], target, target + lefts, parent.left_packed, parent.left_hessian,
             parent.depth + 1, left_smaller ? fresh : parent.slot, left_key);
    OpenLeaf(context.leaves[right], target + lefts, target + lefts + rights,
             parent.total_packed - parent.left_packed, parent.total_hessian - parent.left_hessian,
             parent.depth + 1, left_smaller ? parent.slot : fresh, right_key);
    const LeafBrief brief = LoadThroughL2(context.briefs + id);
    float minima[kPathMinima];
    for (int m = 0; m < kPathMinima; ++m) minima[m] = brief.minima[m];
    int minima_count = brief.minima_count;
    AppendMinimum(minima, minima_count, static_cast<float>(brief.gain));
    context.briefs[left] = OpenBrief(minima, minima_count);
    context.briefs[right] = OpenBrief(minima, minima_count);
    context.briefs[id].left = left;
    context.briefs[id].right = right;
    BatchSplit split{};
    split.begin = parent.begin;
    split.end = parent.end;
    split.target = target;
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
    context.cursors[2 * at] = static_cast<unsigned long long>(target);
    context.cursors[2 * at + 1] = static_cast<unsigned long long>(target + lefts);
    context.leaves[id].left = left;
    context.leaves[id].right = right;
    context.scan_ids[2 * at] = left;
    context.scan_ids[2 * at + 1] = right;
    const SplitItems items = SplitWork(context, split, at);
    split_items[at] = PackItems(items);
  }
  __syncthreads();
  // Blocked (thread t: splits [t * kSplitsPerThread, (t + 1) * kSplitsPerThread)), so the
  // block's prefix sums give each split its first work items in split order.
  unsigned long long packed_items[kSplitsPerThread];
  for (int k = 0; k < kSplitsPerThread; ++k) {
    const int at = static_cast<int>(threadIdx.x) * kSplitsPerThread + k;
    packed_items[k] = at < count ? split_items[at] : 0;
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
  WaitForPrevious();
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

// The kernels after the partition: histograms, the subtractions (or the root's sums), the
// scans and the selection.
void EnqueueHistogramsAndSelection(const GrowContext& context, bool root, cudaStream_t stream) {
  LaunchHistograms(context, stream);
  if (root) {
    LaunchRootTotal(context, stream);
  } else {
    LaunchFinish(context, stream);
  }
  const std::size_t select_bytes = SelectionBytes(context.num_leaves, context.leaf_capacity);
  LaunchAfter(context, "ScanSelectKernel", ScanSelectKernel,
              dim3(static_cast<unsigned>(context.scan_blocks)), dim3(kSelectThreads), select_bytes,
              stream, context);
}

}  // namespace

std::size_t SelectionBytes(int num_leaves, int leaf_capacity) {
  return SelectMemoryBytes(num_leaves, leaf_capacity);
}

namespace {

// The device's shared memory a block may opt in to, less the selection kernel's static share.
std::size_t SelectionLimit() {
  int device = 0;
  int optin = 0;
  TFG_CUDA_CHECK(cudaGetDevice(&device));
  TFG_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attributes{};
  TFG_CUDA_CHECK(cudaFuncGetAttributes(&attributes, ScanSelectKernel));
  return optin > static_cast<int>(attributes.sharedSizeBytes)
             ? static_cast<std::size_t>(optin) - attributes.sharedSizeBytes
             : 0;
}

}  // namespace

bool SelectionFits(int num_leaves, int leaf_capacity) {
  return SelectionBytes(num_leaves, leaf_capacity) <= SelectionLimit();
}

int PrepareSelection(int num_leaves, int leaf_capacity) {
  const std::size_t bytes = SelectionBytes(num_leaves, leaf_capacity);
  if (bytes > SelectionLimit()) return 0;
  // The limit belongs to the kernel, for every grower of the process: it only ever grows.
  static std::mutex mutex;
  static std::size_t allowed = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (bytes > allowed) {
      TFG_CUDA_CHECK(cudaFuncSetAttribute(
          ScanSelectKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
      allowed = bytes;
    }
  }
  int blocks = 0;
  TFG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, ScanSelectKernel,
                                                               kSelectThreads, bytes));
  return blocks;
}

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
  LaunchPartition(context, stream);
  EnqueueHistogramsAndSelection(context, false, stream);
}

}  // namespace tabforge::tree::kernels
