// The CUDA grower's kernels (device_rows.cu, device_select.cu, device_scan.cuh), called by its host
// side (device_grower.cc).
// Plain C++17 (the kernels' dialect): device pointers, sizes and POD parameter blocks only.
//
// A tree grows on the device without the host: each batch of leaf splits (partitions,
// histograms, split scans) ends with a selection kernel that replays the best-first choices
// made so far and writes the next batch's descriptors, so the host only queues batches (one
// captured graph each) until the device says the tree is complete, then reads the tree back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "models/tree/grow_order.h"
#include "models/tree/histogram.h"
#include "models/tree/split_math.h"

struct CUstream_st;

namespace tabforge::tree::kernels {

using Stream = CUstream_st*;      // cudaStream_t
using Word = unsigned long long;  // histograms on the device: 2 words per cell (packed, hessian)

// Categorical features with more bins than this are trained on the CPU (the device scan keeps
// a category list per thread).
inline constexpr int kMaxCategoryBins = 256;
inline constexpr int kBitsetWords = kMaxCategoryBins / 32;
// The most leaves per tree (the selection keeps its view of every device leaf in shared memory:
// SelectionBytes).
inline constexpr int kMaxLeaves = 1024;
// Histograms held per tree leaf: each split, made for the tree or ahead of it, takes one, so
// the slots beyond the first per leaf bound the splits made ahead that a tree never takes.
// Where the selection's shared memory for that many does not fit (many leaves), a grower holds
// one fewer, down to 2 per leaf, where it splits ahead only the tree's leaves.
inline constexpr int kSlotsPerLeaf = 4;
// A smaller child of at most kSlabChildRows rows is summed by slabs instead of chunks of rows
// of all features: a work item takes kSlabFeatures features (one aligned word of each row's
// bins) of a run of at most kSlabRows of its rows, so a small batch spreads over more blocks,
// each with a short chain of loads and few cells to zero and flush.
inline constexpr int kSlabFeatures = 4;
inline constexpr std::int64_t kSlabChildRows = 8192;
inline constexpr std::int64_t kSlabRows = 2048;
inline constexpr std::int64_t kSlabRunsPerChild = (kSlabChildRows + kSlabRows - 1) / kSlabRows;
// Most histogram work items of slabs in one batch: the grower sums small children by slabs only
// where num_leaves times a child's most slab items stays within this.
inline constexpr int kMaxSlabItems = 1 << 21;
// Histogram cells one block sums in shared memory (16 bytes each; 48 KB, every GPU's default).
// SharedHistogramCells gives more where the device lets a block opt in to more.
inline constexpr int kSharedCells = 48 * 1024 / 16;

// Why a device growth stopped early (GrowState::error).
inline constexpr int kGrowOutOfSlots = 1;    // more splits made ahead than histograms held
inline constexpr int kGrowBadPartition = 2;  // a partition's sides disagree with its sums

// The split parameters the scan reads (GrowerParams' scalars).
struct ScanParams {
  std::int64_t min_data_in_leaf;
  double min_sum_hessian_in_leaf;
  double min_gain_to_split;
  LeafRegularization reg;
  int max_cat_to_onehot;
  int max_cat_threshold;
  double cat_smooth;
  double cat_l2;
  std::int64_t min_data_per_group;
  int extra_trees;
  int max_depth;
  double feature_fraction_bynode;
};

// A round's scales on the device (written by the caller's kernels before the tree grows).
struct RoundScales {
  double gradient_scale;    // quantized gradient * scale ~ gradient
  double hessian_scale;     // fixed hessian * scale ~ hessian
  double max_abs_gradient;  // bound of the exact gradients
};

// A leaf of the tree being grown: positions [begin, end) of the row order (within one of its
// halves), its sums, and its best split (feature < 0: none). Device leaves are never removed: a
// split made ahead and never chosen is simply not replayed into the tree.
struct GrowLeaf {
  long long begin;
  long long end;
  long long total_packed;
  long long total_hessian;
  unsigned long long node_key;
  double gain;
  long long left_packed;
  long long left_hessian;
  int depth;
  int slot;  // its histogram
  int left;  // device leaves of its split, once made; -1 before
  int right;
  int feature;
  int categorical;
  int default_left;
  int threshold_bin;
  std::uint32_t bitset[kBitsetWords];  // categorical: bins going left
};

// What the selection reads of each device leaf, kept apart from the leaf records so that it
// loads them all in a few wide reads: the gain of its best split (-inf: none), whether the tree
// has taken that split, the children of the split once made (-1 before), and the suffix minima
// of the split gains on the path from the root to its parent (grow_order.h), by which the
// selection ranks the leaves to split ahead.
struct LeafBrief {
  double gain;
  float minima[kPathMinima];
  int minima_count;  // the sequence's length (more than kPathMinima: only the first are kept)
  int taken;
  int left;
  int right;
};

// The growth's scalars on the device.
struct GrowState {
  unsigned long long nodes_made;  // node keys handed out (the CPU loop's counter)
  unsigned long long seed;        // the tree's seed
  long long count;                // rows in the tree
  int tree_leaves;                // leaves of the tree replayed so far
  int device_leaves;              // GrowLeaf records used
  int slots_used;                 // histograms used
  int batch_count;                // splits of the batch being run (0: none)
  int scan_count;                 // leaves whose best splits the batch finds
  int done;                       // the tree is complete
  int error;                      // kGrow*; 0 when none
  int selections;                 // selections run since the tree started
  unsigned int scans_finished;    // blocks of the scan launch done (the last one selects)
  int partition_chunks;           // work items of the batch's kernels
  int histogram_chunks;
  int wide_chunks;
  int ranked_count;  // open leaves in ranked_keys / ranked_ids
};

// What the host polls (mapped host memory, written by the selection kernel).
struct HostStatus {
  int done;
  int completed;  // selections run since the tree started
};

// Positions of one work item over a finished tree's leaves (leaf sums, score updates).
inline constexpr int kLeafChunk = 2048;

// Thresholds of one feature one scan work item takes. With 255 bins, 128 (two items a feature)
// took 500 rounds of 255 leaves on an H100 in 1.21 s at 1M rows and 3.67 s at 10M, against
// 1.31 / 3.78 s with 64 and 1.51 / 3.98 s with 32 (bench/results/2026-12-07-session20.md): fewer
// items fit one wave of the scan launch's warps, each summing fewer cells below its chunk.
inline constexpr int kScanChunk = 128;

// One scan work item's best split (feature < 0: none).
struct ScanCandidate {
  double gain;
  int feature;
  int categorical;
  int default_left;
  int threshold_bin;
  long long left_packed;
  long long left_hessian;
  std::uint32_t bitset[kBitsetWords];
};

// A split as the partition reads it.
struct SplitRule {
  int feature;
  int threshold_bin;
  int missing_bin;
  bool default_left;
  bool categorical;
  std::uint32_t bitset[kBitsetWords];
};

// The bin matrix on the device: row-major, 8- or 16-bit cells (a histogram reads every feature
// of a row: one sector), and the same cells column by column, feature f's bin of row r at
// f * rows + r (a partition reads one feature of a leaf's rows: those of a large leaf share
// sectors in this layout, where row-major cells take a sector each).
struct DeviceBins {
  const std::uint8_t* bins8 = nullptr;
  const std::uint16_t* bins16 = nullptr;
  int stride = 0;  // cells per row: the features, padded by PaddedStride
  const std::uint8_t* columns8 = nullptr;
  const std::uint16_t* columns16 = nullptr;
  std::int64_t rows = 0;  // cells per column
};

// Cells per device row for `features` features: a multiple of 4, so that the cells of four
// features from a multiple of 4 on are one aligned 32- or 64-bit word.
inline int PaddedStride(int features) { return (features + 3) / 4 * 4; }

// One leaf split of a batch: its rows order[begin, end) are partitioned by `rule` into the
// other half of the row order (GrowContext::half), order[target, target + lefts) going left and
// the rest after them; the smaller child's histogram is built from its rows and the parent's
// histogram becomes the larger child's by subtraction. The root is a "split" without
// partition whose smaller child is all its rows (target == begin).
struct BatchSplit {
  std::int64_t begin;
  std::int64_t end;
  std::int64_t target;
  std::int64_t lefts;
  SplitRule rule;
  Word* smaller;  // histogram built from rows (zeroed first)
  Word* larger;   // the parent's histogram, becoming the larger child's (null: root)
  int smaller_is_left;
  int partition;  // 0: no partition (the root)
};

// Feature groups for histogram launches, as (first, last) feature pairs on the device.
struct HistogramGroups {
  const int* shared = nullptr;  // groups summed in shared memory
  int shared_count = 0;
  int shared_cells = 0;         // most cells of one
  const int* global = nullptr;  // single wide features summed in global memory
  int global_count = 0;
  const std::int64_t* offsets = nullptr;  // the histogram layout
  std::int64_t total_bins = 0;
};

// Everything the growth kernels read, by value (a captured graph replays the same values; what
// changes per tree lives in device memory).
struct GrowContext {
  DeviceBins bins;
  HistogramGroups groups;
  int num_features = 0;
  const int* num_bins = nullptr;
  const int* missing_bins = nullptr;
  const std::uint8_t* categorical = nullptr;
  const std::uint8_t* active = nullptr;  // the tree's features
  const GradientPair* pairs = nullptr;
  const RoundScales* scales = nullptr;
  ScanParams scan{};
  int num_leaves = 0;
  int ahead = 0;  // split every leaf that may split in each batch (no node-level randomness)
  GrowState* state = nullptr;
  HostStatus* host = nullptr;  // device address of the mapped status
  GrowLeaf* leaves = nullptr;
  LeafBrief* briefs = nullptr;  // leaf_capacity, beside leaves
  int leaf_capacity = 0;
  int* tree_to_device = nullptr;     // num_leaves
  long long* tree_ranges = nullptr;  // 2 * num_leaves: tree leaves' ranges once done
  int* leaf_prefix = nullptr;        // num_leaves + 1: first kLeafChunk item of each tree leaf
  long long* leaf_sums = nullptr;    // num_leaves: fixed-point gradient sums of tree leaves
  // leaf_capacity (+ 1): once done, the ranges of device leaves copied to their tree leaf's half
  // and a work list over them (as tree_ranges and leaf_prefix).
  long long* repair_ranges = nullptr;
  int* repair_prefix = nullptr;
  BatchSplit* batch = nullptr;          // num_leaves
  int* scan_ids = nullptr;              // 2 * num_leaves
  int* partition_prefix = nullptr;      // num_leaves + 1
  int* histogram_prefix = nullptr;      // num_leaves + 1
  long long* histogram_rows = nullptr;  // num_leaves: rows per histogram chunk (0: slabs)
  // Slabs of 4 features of the widest shared-memory feature group: a small child's histogram
  // takes this many work items per run of kSlabRows of its rows (0: small children are chunked
  // as large ones).
  int histogram_slabs = 0;
  int* wide_prefix = nullptr;  // num_leaves + 1
  // The row positions: two halves of `half` positions. A leaf's rows are a range of one half;
  // a split's children take the same range of the other (so nothing is copied back).
  std::int32_t* order = nullptr;
  std::int64_t half = 0;
  unsigned long long* cursors = nullptr;  // 2 * num_leaves
  Word* histograms = nullptr;
  int slots = 0;
  int max_blocks = 1;  // blocks of the row-parallel kernels
  // Whether a batch's kernels after its first are launched as dependent launches (compute
  // capability 9.0 and above; see LaunchAfter).
  int dependent_launch = 0;
  int scan_blocks = 1;                  // blocks of the scan and selection
  int scan_chunks = 1;                  // work items per feature: the most thresholds / kScanChunk
  ScanCandidate* candidates = nullptr;  // 2 * num_leaves * num_features * scan_chunks
  unsigned int* leaf_scans = nullptr;   // 2 * num_leaves: items done per leaf (zero between)
  // num_leaves each: the best open leaves' keys and device leaves in best-first order, as the
  // last selection left them (when splitting ahead; at most its `remaining`, below num_leaves).
  RankKey* ranked_keys = nullptr;
  int* ranked_ids = nullptr;
};

// Queues the root: its histogram, sums and best split, and the first batch. `count` rows are
// order[0, count) (set by the caller); every histogram slot is zero (set by the caller: each
// slot is used once per tree, so nothing zeroes them between batches).
void EnqueueRoot(const GrowContext& context, std::int64_t count, std::uint64_t seed, Stream stream);

// Queues one batch: the splits the last selection chose, their children's histograms and best
// splits, and the next selection. A batch queued after the tree is complete does nothing.
void EnqueueBatch(const GrowContext& context, Stream stream);

// Once the tree is complete: the tree leaves' ranges made whole again where splits made ahead
// wrote over them (RepairKernel), then values[l] = the value of tree leaf l from its rows'
// exact gradients, summed in fixed point as the CPU grower sums them.
void EnqueueLeafValues(const GrowContext& context, const float* exact_gradients, double* values,
                       Stream stream);

// order[i] = i for i < count.
void FillSequence(std::int32_t* order, std::int64_t count, Stream stream);

// columns[f * rows + r] = bins[r * stride + f] for every row r < rows and feature f < features
// (device arrays).
void FillColumns(const std::uint8_t* bins, int stride, std::int64_t rows, int features,
                 std::uint8_t* columns, Stream stream);
void FillColumns(const std::uint16_t* bins, int stride, std::int64_t rows, int features,
                 std::uint16_t* columns, Stream stream);

// Histogram cells one block of the histogram kernel may sum in shared memory on the current
// device: as many as two blocks per multiprocessor leave room for (at least kSharedCells), so
// most feature sets are one group and each row is read once per histogram. Lets the kernel use
// that much (call before launching or capturing it).
int SharedHistogramCells();

// Dynamic shared memory of the scan-and-select launch for trees of `num_leaves` leaves and
// `leaf_capacity` device leaves.
std::size_t SelectionBytes(int num_leaves, int leaf_capacity);

// Whether the device gives a block SelectionBytes of shared memory.
bool SelectionFits(int num_leaves, int leaf_capacity);

// Lets the scan-and-select launch use SelectionBytes (call before launching or capturing it)
// and returns how many of its blocks fit on one multiprocessor: 0 when the device cannot give a
// block that much shared memory.
int PrepareSelection(int num_leaves, int leaf_capacity);

// Throws CudaError when the last launch failed.
void CheckLaunch(const char* kernel);

}  // namespace tabforge::tree::kernels
