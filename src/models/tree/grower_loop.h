// Leaf-wise growth, shared by the CPU grower (grower.cc) and the CUDA grower
// (device_grower.cc): which leaf splits next (LeafQueue), how a split enters the tree
// (CommitSplit), which split of a leaf is best (KeepBetterSplit). GrowLeafWise is the CPU's
// loop over its data work; the CUDA grower splits batches of leaves ahead and replays the same
// choices, so both grow the same tree from the same integer sums.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.h"
#include "models/tree/binning.h"
#include "models/tree/grower.h"
#include "models/tree/histogram.h"
#include "models/tree/tree.h"

namespace tabforge::tree {

// The best split found for a leaf.
struct LeafSplit {
  double gain = -std::numeric_limits<double>::infinity();
  int feature = -1;
  bool categorical = false;
  bool default_left = false;
  int threshold_bin = 0;
  std::vector<std::uint32_t> left_bins;  // categorical: bitset of bins going left
  HistogramBin left;                     // sums of the rows going left
  bool valid() const { return feature >= 0; }
};

// A leaf of the tree being grown: its rows are positions [begin, end) of the backend's row
// order (merged rows take one position for all their members; total.count() counts rows).
struct GrowingLeaf {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  int depth = 0;
  HistogramBin total;
  LeafSplit best;
};

// Whether a leaf may be split at all (depth and size limits).
inline bool LeafSplittable(const GrowingLeaf& leaf, const GrowerParams& params) {
  return (params.max_depth <= 0 || leaf.depth < params.max_depth) &&
         leaf.total.count() >= 2 * params.min_data_in_leaf;
}

// Picks, among per-feature candidates (features in order), the leaf's best split: features in
// order, so ties go to the lowest feature whatever the thread count or device.
inline void KeepBetterSplit(LeafSplit& candidate, const GrowerParams& params, GrowingLeaf& leaf) {
  if (candidate.valid() && candidate.gain > params.min_gain_to_split &&
      candidate.gain > leaf.best.gain) {
    leaf.best = std::move(candidate);
  }
}

// The leaf best-first growth splits next: the largest gain among the leaves with a valid split,
// ties to the lowest leaf index. Kept in a heap: each leaf's best split is offered once, when
// the leaf is made, so a tree of n leaves costs O(n log n), not a scan of every leaf per split.
class LeafQueue {
 public:
  // Offers `leaf` with its best split; a leaf without a valid split is never chosen.
  void Offer(int leaf, const LeafSplit& split) {
    if (!split.valid()) return;
    heap_.push_back({split.gain, leaf});
    std::push_heap(heap_.begin(), heap_.end(), Below);
  }
  // The leaf to split next, taken off the queue; -1 when none is left.
  int Pop() {
    if (heap_.empty()) return -1;
    std::pop_heap(heap_.begin(), heap_.end(), Below);
    const int leaf = heap_.back().leaf;
    heap_.pop_back();
    return leaf;
  }

 private:
  struct Entry {
    double gain;
    int leaf;
  };
  // Heap order: the top has the largest gain and, among equal gains, the lowest leaf.
  static bool Below(const Entry& a, const Entry& b) {
    return a.gain < b.gain || (a.gain == b.gain && a.leaf > b.leaf);
  }
  std::vector<Entry> heap_;
};

// Adds `split` of tree leaf `leaf` to the tree; returns the new (right) leaf's index.
inline int CommitSplit(Tree& tree, int leaf, const LeafSplit& split, const BinMapper& mapper) {
  const FeatureBins& feature_bins = mapper.feature(split.feature);
  TreeNode node;
  node.feature = split.feature;
  node.categorical = split.categorical;
  node.default_left = split.default_left;
  node.threshold_bin = static_cast<std::uint16_t>(split.threshold_bin);
  node.missing_bin = static_cast<std::uint16_t>(feature_bins.missing_bin());
  node.gain = split.gain;
  if (!split.categorical) node.threshold = feature_bins.upper_bounds[split.threshold_bin];
  return tree.SplitLeaf(leaf, node, split.left_bins);
}

// Grows one tree. `Ops` provides:
//   HistogramBin Start()                       root histogram into leaf 0's; returns the sums
//   std::int64_t RowCount()                    positions in the row order (rows, or merged rows)
//   std::int64_t CountRows(begin, end)         rows at positions [begin, end)
//   void FindBestSplits(GrowingLeaf* const* leaves, const int* ids, const std::uint64_t* keys,
//                       int count)             sets each leaf's best split from its histogram
//   std::int64_t Partition(const LeafSplit&, int missing_bin, std::int64_t begin,
//                          std::int64_t end)   stable partition; returns the left end
//   void ChildHistograms(int parent, int new_leaf, bool left_smaller,
//                        const std::vector<GrowingLeaf>& leaves)
//                                              histograms of the split's two children
//   void Release(int leaf)                     the leaf will not be split: drop its histogram
template <typename Ops>
Tree GrowLeafWise(Ops& ops, const GrowerParams& params, const BinMapper& mapper,
                  std::vector<GrowingLeaf>& leaves) {
  leaves.assign(1, GrowingLeaf{});
  leaves[0].end = ops.RowCount();
  leaves[0].total = ops.Start();
  std::uint64_t nodes_made = 0;
  {
    GrowingLeaf* root = &leaves[0];
    const int id = 0;
    const std::uint64_t key = nodes_made++;
    ops.FindBestSplits(&root, &id, &key, 1);
  }
  LeafQueue queue;
  queue.Offer(0, leaves[0].best);
  Tree tree(0.0);
  while (tree.num_leaves() < params.num_leaves) {
    const int chosen = queue.Pop();
    if (chosen < 0) break;
    LeafSplit split = std::move(leaves[chosen].best);
    leaves[chosen].best = LeafSplit{};
    const int new_leaf = CommitSplit(tree, chosen, split, mapper);
    const int missing_bin = mapper.feature(split.feature).missing_bin();

    GrowingLeaf& parent = leaves[chosen];
    const std::int64_t left_end = ops.Partition(split, missing_bin, parent.begin, parent.end);
    const std::int64_t lefts = ops.CountRows(parent.begin, left_end);
    TFG_CHECK(lefts == split.left.count(), "partition sent {} rows left, the split's sums say {}",
              lefts, split.left.count());
    GrowingLeaf right;
    right.begin = left_end;
    right.end = parent.end;
    right.depth = parent.depth + 1;
    right.total = parent.total - split.left;
    parent.end = left_end;
    parent.depth += 1;
    parent.total = split.left;
    const bool left_smaller = parent.end - parent.begin <= right.end - right.begin;
    leaves.push_back(right);
    ops.ChildHistograms(chosen, new_leaf, left_smaller, leaves);
    GrowingLeaf* children[2] = {&leaves[chosen], &leaves[new_leaf]};
    const int ids[2] = {chosen, new_leaf};
    const std::uint64_t keys[2] = {nodes_made, nodes_made + 1};
    nodes_made += 2;
    ops.FindBestSplits(children, ids, keys, 2);
    // A leaf that cannot split never needs its histogram again.
    for (int leaf : {chosen, new_leaf}) {
      queue.Offer(leaf, leaves[leaf].best);
      if (!leaves[leaf].best.valid()) ops.Release(leaf);
    }
  }
  return tree;
}

}  // namespace tabforge::tree
