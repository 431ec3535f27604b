// The batch grower's work items and the CUDA kernels that do them (forest_kernels.cu), called by
// the CUDA forest device (forest_cuda.cc). Plain C++17 (the kernels' dialect): device pointers,
// sizes and POD parameters only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "models/forest/forest_split.h"

struct CUstream_st;

namespace tabforge::forest::kernels {

using Stream = CUstream_st*;  // cudaStream_t: every launch goes on its device's stream

// A node to evaluate: rows [begin, end) of its tree's slot of the row order.
struct BatchNode {
  long long begin;
  long long end;
  std::uint64_t key;
  int slot;
  int depth;
};

// A node to split: its rows [begin, end) are partitioned in place, the rows going left first
// (in order), then the others (in order).
struct BatchSplit {
  long long begin;
  long long end;
  long long left_rows;  // the split's count, checked against the partition's
  int slot;
  int feature;
  int categorical;
  int threshold_bin;  // numeric: bins <= it go left
  int missing_bin;
  int default_left;
  long long bits_begin;  // categorical: bit b of words [bits_begin, ...) set = bin b goes left
  int bits_words;        // 0 for a numeric split
};

// A node's outcome: its status (NodeStatus) and chosen cut.
struct NodeOutcome {
  FeatureCut cut;
  int status;
};

// The trees' fixed inputs on the device.
struct DeviceRows {
  // Column-major bins, one of the two set: feature f's bin of row r at f * rows + r (every
  // kernel reads one feature of a node's rows, which lie in ascending order).
  const std::uint8_t* bins8;
  const std::uint16_t* bins16;
  const std::int32_t* classes;    // classification
  const long long* target_units;  // regression: targets in units (QuantizeTargets)
  long long rows;
  const FeatureInfo* features;  // per feature (bin_lows point into device memory)
  int max_bins;
};

// The slots' per-tree state: weights[slot * rows + row] (bootstrap counts) and the slot's row
// order order[slot * rows + i], i < slot_rows[slot], with each row's tag beside it in tags (its
// bootstrap count in the low 32 bits, its class in the high 32; partitions move both, so a
// node's rows read their counts and classes in order instead of gathering them); per slot the
// randomness keys.
struct DeviceTrees {
  std::uint32_t* weights;
  std::int32_t* order;
  std::uint64_t* tags;
  std::int32_t* spare;        // partition scratch, as large as order
  std::uint64_t* spare_tags;  // and as large as tags
  const std::uint64_t* order_keys;
  const std::uint64_t* threshold_keys;
};

// Draws the bootstraps of trees first_tree .. first_tree + slots - 1 (`draws` rows each, or
// every row once when `draws` is 0) into the slots' weights and row orders (ascending distinct
// rows); slot_rows[slot] receives their count.
void StartTrees(const DeviceRows& data, const DeviceTrees& trees, int slots,
                std::uint64_t first_tree, std::uint64_t seed, long long draws, long long* slot_rows,
                Stream stream);

// Dynamic shared memory of a node-feature block: the histogram of `max_bins` bins (of `width`
// classes, or of a weight and a target sum for regression) and the feature order's scratch of
// `features` entries.
std::size_t EvaluateSharedBytes(int max_bins, int width, int features, bool regression);

// The node-feature block's static shared memory (on the current device), which the dynamic
// part shares a block's limit with.
std::size_t EvaluateStaticSharedBytes();

// The most rows of a node that EvaluateNodes takes as small (a warp per feature instead of a
// block), a power of two from 32 to 256, for features of at most `max_bins` bins; 0 when none are
// (extremely randomized trees, or too many classes or features for the warps' scratch).
int SmallNodeRows(const SplitRules& rules, int max_bins);

// For each node and each position [first_position, first_position + positions) of its feature
// order: the feature's histogram and best cut into cuts[node * positions + at] (and the cut's
// bin words into cut_bits); the position-0 pass writes the node's class sums (sums[node * width
// + k]); then each node's cuts are combined into outcomes[node] and out_bits[node * words ..].
// The first `small_count` nodes have at most `small_rows` (SmallNodeRows) rows each.
void EvaluateNodes(const DeviceRows& data, const DeviceTrees& trees, const SplitRules& rules,
                   const BatchNode* nodes, int node_count, int small_count, int small_rows,
                   int first_position, int positions, FeatureCut* cuts, std::uint32_t* cut_bits,
                   int words, double* sums, NodeOutcome* outcomes, std::uint32_t* out_bits,
                   Stream stream);

// A part of a large split's rows, [begin, end), partitioned by a block of its own.
struct PartitionChunk {
  long long begin;
  long long end;
  int split;  // index into the splits
};

// A large split's chunks: [first_chunk, first_chunk + chunks) of the chunk list, in row order.
struct LargeSplit {
  int split;
  int first_chunk;
  int chunks;
};

// Splits of at most this many rows are partitioned by a warp each.
constexpr long long kWarpSplitRows = 64;
// Splits of more than two of these go in chunks of it (PartitionChunk), several blocks at once;
// the others by a block each.
constexpr long long kPartitionChunkRows = 8192;

// How the splits of a PartitionNodes call are shared out (indices into its splits; device
// memory).
struct PartitionLists {
  const int* small;  // a warp each
  int small_count;
  const int* whole;  // a block each
  int whole_count;
  const PartitionChunk* chunks;  // a block per chunk of the large splits
  int chunk_count;
  const LargeSplit* large;
  int large_count;
  long long* chunk_lefts;  // scratch, a count per chunk
};

// Partitions each split's rows (BatchSplit) as `lists` shares them out. left_counts[i] receives
// the rows split i sent left.
void PartitionNodes(const DeviceRows& data, const DeviceTrees& trees, const BatchSplit* splits,
                    const std::uint32_t* bits, const PartitionLists& lists, long long* left_counts,
                    Stream stream);

}  // namespace tabforge::forest::kernels
